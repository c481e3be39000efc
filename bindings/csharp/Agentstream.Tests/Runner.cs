using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Linq;
using System.Reflection;
using System.Threading;
using System.Threading.Tasks;

namespace Agentstream.Tests
{
    /// <summary>Marks a test: a static method without parameters, returning void or a Task.</summary>
    [AttributeUsage(AttributeTargets.Method)]
    sealed class TestAttribute : Attribute
    {
    }

    /// <summary>
    /// The test runner: every [Test] method of this assembly (or those whose "Class.Method" name
    /// contains one of the arguments), one at a time, each with a time limit; prints one line per
    /// test and "C#: N passed, N failed"; the exit code is 1 when any failed.
    /// </summary>
    static class Runner
    {
        static readonly TimeSpan Limit = TimeSpan.FromMinutes(3);

        static int Main(string[] args)
        {
            var tests = typeof(Runner).Assembly.GetTypes()
                .SelectMany(t => t.GetMethods(BindingFlags.Static | BindingFlags.Public | BindingFlags.NonPublic))
                .Where(m => m.GetCustomAttributes(typeof(TestAttribute), false).Length > 0)
                .Select(m => new { Name = m.DeclaringType.Name + "." + m.Name, Method = m })
                .Where(t => args.Length == 0 || args.Any(a => t.Name.Contains(a)))
                .OrderBy(t => t.Name, StringComparer.Ordinal)
                .ToList();
            int passed = 0, failed = 0;
            var total = Stopwatch.StartNew();
            foreach (var t in tests)
            {
                var watch = Stopwatch.StartNew();
                Exception failure = null;
                var thread = new Thread(() =>
                {
                    try
                    {
                        var task = t.Method.Invoke(null, null) as Task;
                        if (task != null)
                        {
                            task.GetAwaiter().GetResult();
                        }
                    }
                    catch (TargetInvocationException e)
                    {
                        failure = e.InnerException;
                    }
                    catch (Exception e)
                    {
                        failure = e;
                    }
                }, 1024 * 1024); // 1 MiB, the .NET default on Windows: nothing may need a deep stack
                thread.Start();
                if (!thread.Join(Limit))
                {
                    Console.WriteLine("FAIL " + t.Name + ": still running after " + Limit.TotalSeconds + " s");
                    Console.WriteLine("C#: " + passed + " passed, " + (failed + 1) + " failed (stopped at a hung test)");
                    Console.Out.Flush();
                    Environment.Exit(1);
                }
                if (failure == null)
                {
                    passed++;
                    Console.WriteLine("ok   " + t.Name + " (" + watch.ElapsedMilliseconds + " ms)");
                }
                else
                {
                    failed++;
                    Console.WriteLine("FAIL " + t.Name + ": " + failure);
                }
            }
            Console.WriteLine("C#: " + passed + " passed, " + failed + " failed (" + total.Elapsed.TotalSeconds.ToString("0.0") + " s)");
            return failed == 0 && tests.Count > 0 ? 0 : 1;
        }
    }
}
