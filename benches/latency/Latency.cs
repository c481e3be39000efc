using System;
using System.IO;
using System.Runtime.InteropServices;
using System.Text;
using Agentstream;

/// <summary>
/// The C# handler of the latency benchmark (benches/latency/run.py): one run of the paced emitter
/// with an On("content") handler, as a C# user writes it. The handler reads CLOCK_MONOTONIC first
/// (clock_gettime from libc: Mono's Stopwatch counts 100 ns ticks of its own), then the stamps
/// "@@&lt;line&gt;:&lt;ns&gt;;" in the event's text, and records now - stamp.
///
///   mono Latency.exe EMITTER OUT_FILE     writes "&lt;line&gt; &lt;latency ns&gt;" per stamp; prints "state &lt;state&gt;"
/// </summary>
static class Latency
{
    [StructLayout(LayoutKind.Sequential)]
    struct Timespec
    {
        public long Seconds;
        public long Nanoseconds;
    }

    const int ClockMonotonic = 1;

    [DllImport("libc", EntryPoint = "clock_gettime")]
    static extern int ClockGettime(int clock, out Timespec ts);

    static long MonotonicNs()
    {
        Timespec ts;
        ClockGettime(ClockMonotonic, out ts);
        return ts.Seconds * 1000000000L + ts.Nanoseconds;
    }

    static int Main(string[] args)
    {
        if (args.Length != 2)
        {
            Console.Error.WriteLine("usage: Latency.exe EMITTER OUT_FILE");
            return 2;
        }
        // One stamp per line the emitter prints (merged chunks keep every stamp).
        int capacity = int.Parse(Environment.GetEnvironmentVariable("AGENTSTREAM_LATENCY_LINES") ?? "3000");
        var lines = new long[capacity];
        var latencies = new long[capacity];
        int n = 0;
        RunResult result;
        using (var evolve = new Evolve(new AgentConfig { Type = "claude", Bin = args[0] }))
        {
            evolve.On("content", e =>
            {
                long now = MonotonicNs();
                var chunk = e.Content.Update as AgentMessageChunk;
                var text = chunk == null ? null : chunk.Content as TextContent;
                if (text == null) return;
                string s = text.Text;
                for (int at = s.IndexOf("@@", StringComparison.Ordinal); at >= 0; at = s.IndexOf("@@", at + 2, StringComparison.Ordinal))
                {
                    int colon = s.IndexOf(':', at), semi = s.IndexOf(';', colon);
                    lines[n] = long.Parse(s.Substring(at + 2, colon - at - 2));
                    latencies[n++] = now - long.Parse(s.Substring(colon + 1, semi - colon - 1));
                }
            });
            result = evolve.Run(new RunOptions { Prompt = "latency" });
        }
        var sb = new StringBuilder();
        for (int i = 0; i < n; i++) sb.Append(lines[i]).Append(' ').Append(latencies[i]).Append('\n');
        File.WriteAllText(args[1], sb.ToString());
        Console.WriteLine("state " + result.State.ToString().ToLowerInvariant());
        return 0;
    }
}
