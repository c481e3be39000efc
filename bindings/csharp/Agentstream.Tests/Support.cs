using System;
using System.Collections;
using System.Collections.Generic;
using System.Globalization;
using System.IO;
using System.Linq;
using System.Text;

namespace Agentstream.Tests
{
    /// <summary>A failed check.</summary>
    sealed class CheckFailed : Exception
    {
        public CheckFailed(string message) : base(message) { }
    }

    /// <summary>Assertions.</summary>
    static class Check
    {
        public static void True(bool condition, string what)
        {
            if (!condition)
            {
                throw new CheckFailed(what);
            }
        }

        public static void Equal<T>(T expected, T actual, string what)
        {
            if (!EqualityComparer<T>.Default.Equals(expected, actual))
            {
                throw new CheckFailed(what + ": expected " + Show(expected) + ", got " + Show(actual));
            }
        }

        static string Show(object o)
        {
            return o == null ? "null" : o is string ? "\"" + o + "\"" : o.ToString();
        }

        /// <summary>Runs <paramref name="action"/> and returns the exception of type T it threw.</summary>
        public static T Throws<T>(Action action, string what) where T : Exception
        {
            try
            {
                action();
            }
            catch (T e)
            {
                return e;
            }
            catch (Exception e)
            {
                throw new CheckFailed(what + ": expected a " + typeof(T).Name + ", got " + e.GetType().Name + ": " + e.Message);
            }
            throw new CheckFailed(what + ": expected a " + typeof(T).Name + ", nothing was thrown");
        }

        public static void Contains(string haystack, string needle, string what)
        {
            if (haystack == null || !haystack.Contains(needle))
            {
                throw new CheckFailed(what + ": \"" + needle + "\" not in \"" + haystack + "\"");
            }
        }

        /// <summary>Two JSON texts are equal as values (key order ignored, numbers by value).</summary>
        public static void JsonEqual(string expected, string actual, string what)
        {
            if (!Json.Equal(AgentstreamJson.Deserialize<object>(expected), AgentstreamJson.Deserialize<object>(actual)))
            {
                throw new CheckFailed(what + " differs:\n  expected " + Clip(expected) + "\n  got      " + Clip(actual));
            }
        }

        static string Clip(string s)
        {
            return s.Length > 2000 ? s.Substring(0, 2000) + "…" : s;
        }
    }

    /// <summary>Free JSON values (as AgentstreamJson reads them) compared and measured without recursion.</summary>
    static class Json
    {
        public static bool Equal(object a, object b)
        {
            var stack = new Stack<KeyValuePair<object, object>>();
            stack.Push(new KeyValuePair<object, object>(a, b));
            while (stack.Count > 0)
            {
                var pair = stack.Pop();
                object x = pair.Key, y = pair.Value;
                var mx = x as IDictionary<string, object>;
                var lx = x as IList<object>;
                if (mx != null)
                {
                    var my = y as IDictionary<string, object>;
                    if (my == null || my.Count != mx.Count)
                    {
                        return false;
                    }
                    foreach (var kv in mx)
                    {
                        object other;
                        if (!my.TryGetValue(kv.Key, out other))
                        {
                            return false;
                        }
                        stack.Push(new KeyValuePair<object, object>(kv.Value, other));
                    }
                }
                else if (lx != null)
                {
                    var ly = y as IList<object>;
                    if (ly == null || ly.Count != lx.Count)
                    {
                        return false;
                    }
                    for (int i = 0; i < lx.Count; i++)
                    {
                        stack.Push(new KeyValuePair<object, object>(lx[i], ly[i]));
                    }
                }
                else if (!ScalarEqual(x, y))
                {
                    return false;
                }
            }
            return true;
        }

        static bool ScalarEqual(object x, object y)
        {
            if (x == null || y == null)
            {
                return x == null && y == null;
            }
            if (IsNumber(x) && IsNumber(y))
            {
                if (x is double || y is double)
                {
                    return Convert.ToDouble(x, CultureInfo.InvariantCulture) == Convert.ToDouble(y, CultureInfo.InvariantCulture);
                }
                return Convert.ToDecimal(x, CultureInfo.InvariantCulture) == Convert.ToDecimal(y, CultureInfo.InvariantCulture);
            }
            return x.Equals(y);
        }

        static bool IsNumber(object o)
        {
            return o is long || o is ulong || o is double;
        }

        /// <summary>How many containers deep a value nests (an empty array is 1).</summary>
        public static int Depth(object value)
        {
            int depth = 0;
            while (true)
            {
                var list = value as IList<object>;
                var map = value as IDictionary<string, object>;
                if (list != null)
                {
                    depth++;
                    value = list.Count > 0 ? list[0] : null;
                }
                else if (map != null)
                {
                    depth++;
                    value = map.Count > 0 ? map.Values.First() : null;
                }
                else
                {
                    return depth;
                }
            }
        }
    }

    /// <summary>Where the repository's fixtures and the fake harness are.</summary>
    static class TestEnv
    {
        public static readonly string Repo = FindRepo();

        static string FindRepo()
        {
            foreach (var start in new[] { AppDomain.CurrentDomain.BaseDirectory, Directory.GetCurrentDirectory() })
            {
                for (var dir = new DirectoryInfo(start); dir != null; dir = dir.Parent)
                {
                    if (Directory.Exists(Path.Combine(dir.FullName, "tests", "golden")) && File.Exists(Path.Combine(dir.FullName, "Cargo.toml")))
                    {
                        return dir.FullName;
                    }
                }
            }
            throw new InvalidOperationException("cannot find the repository (tests/golden) above " + AppDomain.CurrentDomain.BaseDirectory);
        }

        public static string Golden
        {
            get { return Environment.GetEnvironmentVariable("AGENTSTREAM_GOLDEN") ?? Path.Combine(Repo, "tests", "golden"); }
        }

        /// <summary>The fake harness (target/release/fake-harness): replays a golden trace as a real process.</summary>
        public static string FakeHarness
        {
            get
            {
                var path = Environment.GetEnvironmentVariable("AGENTSTREAM_FAKE_HARNESS") ?? Path.Combine(Repo, "target", "release", "fake-harness");
                if (!File.Exists(path))
                {
                    throw new InvalidOperationException("no fake harness at " + path + ": run `cargo build --release -p agentstream-cli --bins` (make test-csharp does)");
                }
                return path;
            }
        }

        /// <summary>Every golden case: (agent, name, path prefix).</summary>
        public static IEnumerable<GoldenCase> GoldenCases()
        {
            var cases = Directory.GetDirectories(Golden)
                .SelectMany(dir => Directory.GetFiles(dir, "*.input.jsonl"))
                .OrderBy(p => p, StringComparer.Ordinal)
                .Select(p => new GoldenCase(p))
                .ToList();
            Check.True(cases.Count > 50, "golden cases found under " + Golden);
            return cases;
        }

        /// <summary>A config running the fake harness as <paramref name="agent"/>, replaying <paramref name="trace"/>.</summary>
        public static AgentConfig Fake(string agent, string trace, params string[] env)
        {
            var e = new Dictionary<string, string> { { "AGENTSTREAM_FAKE_TRACE", trace } };
            for (int i = 0; i + 1 < env.Length; i += 2)
            {
                e[env[i]] = env[i + 1];
            }
            return new AgentConfig { Type = agent, Bin = FakeHarness, Env = e };
        }

        public static string TempDir()
        {
            var dir = Path.Combine(Path.GetTempPath(), "agentstream-cs-" + Guid.NewGuid().ToString("N"));
            Directory.CreateDirectory(dir);
            return dir;
        }
    }

    sealed class GoldenCase
    {
        public GoldenCase(string input)
        {
            Input = input;
            Prefix = input.Substring(0, input.Length - ".input.jsonl".Length);
            Agent = Path.GetFileName(Path.GetDirectoryName(input));
            Name = Agent + "/" + Path.GetFileName(Prefix);
        }

        public string Input { get; private set; }
        public string Prefix { get; private set; }
        public string Agent { get; private set; }
        public string Name { get; private set; }

        /// <summary>Whether it is a real capture the fake harness replays with its stderr and exit code.</summary>
        public bool IsCapture
        {
            get { return File.Exists(Prefix + ".meta.json"); }
        }

        public byte[] InputBytes()
        {
            return File.ReadAllBytes(Input);
        }

        /// <summary>The non-blank lines of a JSONL file; a missing file fails the test (every golden
        /// case has its expected and hooks files).</summary>
        public static List<string> Lines(string path)
        {
            if (!File.Exists(path))
            {
                throw new InvalidOperationException(path + " is missing: every golden case has its expected and hooks files");
            }
            return File.ReadAllLines(path, Encoding.UTF8).Where(l => l.Trim().Length > 0).ToList();
        }

        public List<string> Expected()
        {
            return Lines(Prefix + ".expected.jsonl");
        }

        public List<string> Hooks()
        {
            return Lines(Prefix + ".hooks.jsonl");
        }
    }

    /// <summary>xorshift64* (the same generator as the Rust, C and Go tests) for reproducible chunkings.</summary>
    sealed class Rng
    {
        ulong x;

        public Rng(ulong seed)
        {
            x = seed;
        }

        public ulong Next()
        {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            return x * 0x2545F4914F6CDD1DUL;
        }
    }
}
