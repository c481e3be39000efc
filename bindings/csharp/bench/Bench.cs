// Events/s delivered to a C# handler on the mixed corpus (../shared/bench/make_corpus.py), as a
// ratio to a C callback (the one bindings/c/bench/bench.c measures: it counts each event and
// hashes every byte of its JSON) in the same process, on the same bytes, in alternating rounds.
//
//   mono Bench.exe <corpus dir with mixed.jsonl + mixed.segments.tsv> <fake-harness> [rounds]
//
// Two ways in:
//   decoder  the whole corpus through a Decoder, a fresh one per replay (segment), 64 KiB
//            chunks: "C callback" = agentstream_decoder_feed with the C callback; "C# Decoder" =
//            Decoder.Feed (one JSON array per chunk, read into the generated OutputEvent classes)
//            with a C# handler per event; "C# delegate" = agentstream_decoder_feed with a C#
//            delegate per event (reverse P/Invoke), each event read into an OutputEvent.
//   runs     each CLI's replays joined into one trace, played by the fake harness as a real
//            process, one run per CLI: "C on(content)" = agentstream_session_on with the C
//            callback (called from the library's thread); "C# On(content)" = Evolve.On + Run (the
//            package's delivery: batches pulled by a thread of the run, one library call per
//            batch); "C# delegate" = agentstream_session_on with a C# delegate called from the
//            library's thread. The buffer's marks are raised so no text delta is merged.
// Each mode's best round counts (the machine is shared and noisy).
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;
using Agentstream;

static class Bench
{
    const string Lib = "agentstream";

    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    delegate void EventCallback(IntPtr userData, IntPtr json, UIntPtr len);

    [DllImport(Lib)] static extern uint agentstream_decoder_new(byte[] agent, out IntPtr decoder);
    [DllImport(Lib)] static extern uint agentstream_decoder_feed(IntPtr decoder, IntPtr bytes, UIntPtr len, IntPtr callback, IntPtr userData);
    [DllImport(Lib)] static extern uint agentstream_decoder_finish(IntPtr decoder, IntPtr callback, IntPtr userData);
    [DllImport(Lib)] static extern void agentstream_decoder_free(IntPtr decoder);
    [DllImport(Lib)] static extern uint agentstream_session_new_json(byte[] config, uint naming, out IntPtr session);
    [DllImport(Lib)] static extern uint agentstream_session_on(IntPtr session, byte[] channel, IntPtr callback, IntPtr userData, IntPtr freeUserData, out ulong id);
    [DllImport(Lib)] static extern uint agentstream_session_start(IntPtr session, byte[] request, IntPtr onEvent, IntPtr userData, IntPtr free, out IntPtr run);
    [DllImport(Lib)] static extern uint agentstream_run_wait(IntPtr run, long timeoutMs, out IntPtr json, out UIntPtr len);
    [DllImport(Lib)] static extern void agentstream_string_free(IntPtr s);
    [DllImport(Lib)] static extern void agentstream_run_free(IntPtr run);
    [DllImport(Lib)] static extern void agentstream_session_free(IntPtr session);

    [DllImport("agentstream_bench_sink")] static extern IntPtr bench_sink_callback();
    [DllImport("agentstream_bench_sink")] static extern IntPtr bench_sink_new();
    [DllImport("agentstream_bench_sink")] static extern ulong bench_sink_events(IntPtr sink);
    [DllImport("agentstream_bench_sink")] static extern void bench_sink_free(IntPtr sink);

    sealed class Segment
    {
        public string Cli;
        public int Offset;
        public int Length;
    }

    static byte[] corpus;
    static List<Segment> segments;
    static string fakeHarness;
    static readonly Dictionary<string, string> runTraces = new Dictionary<string, string>();
    static readonly Dictionary<string, long> runBytes = new Dictionary<string, long>();

    // What the C# handlers do with each event: count it and look at its kind (the typed object is
    // already built by then).
    static long handled;
    static long kinds;

    static void Handle(OutputEvent e)
    {
        handled++;
        kinds += e.Update.SessionUpdateKind.Length;
    }

    static byte[] Z(string s)
    {
        return Encoding.UTF8.GetBytes(s + "\0");
    }

    static void Ok(uint status, string what)
    {
        if (status != 0)
        {
            throw new InvalidOperationException(what + " failed with status " + status);
        }
    }

    // ---- decoder passes: each returns the events delivered ----

    static long DecoderCallback(IntPtr callback, IntPtr userData, Func<long> delivered)
    {
        long before = delivered();
        var pin = GCHandle.Alloc(corpus, GCHandleType.Pinned);
        try
        {
            IntPtr basePtr = pin.AddrOfPinnedObject();
            foreach (var s in segments)
            {
                IntPtr d;
                Ok(agentstream_decoder_new(Z(s.Cli), out d), "decoder_new");
                for (int off = 0; off < s.Length; off += 65536)
                {
                    int n = Math.Min(65536, s.Length - off);
                    Ok(agentstream_decoder_feed(d, basePtr + s.Offset + off, (UIntPtr)(uint)n, callback, userData), "feed");
                }
                Ok(agentstream_decoder_finish(d, callback, userData), "finish");
                agentstream_decoder_free(d);
            }
        }
        finally
        {
            pin.Free();
        }
        return delivered() - before;
    }

    static long DecoderCSharp()
    {
        long before = handled;
        foreach (var s in segments)
        {
            using (var d = new Agentstream.Decoder(s.Cli))
            {
                for (int off = 0; off < s.Length; off += 65536)
                {
                    foreach (var e in d.Feed(corpus, s.Offset + off, Math.Min(65536, s.Length - off)))
                    {
                        Handle(e);
                    }
                }
                foreach (var e in d.Finish())
                {
                    Handle(e);
                }
            }
        }
        return handled - before;
    }

    static byte[] scratch = new byte[1 << 16];

    // A C# delegate as the library's callback: each event's JSON read into an OutputEvent.
    static void OnEventJson(IntPtr userData, IntPtr json, UIntPtr len)
    {
        try
        {
            int n = (int)len.ToUInt64();
            if (scratch.Length < n)
            {
                scratch = new byte[n * 2];
            }
            Marshal.Copy(json, scratch, 0, n);
            Handle(AgentstreamJson.Deserialize<OutputEvent>(scratch, 0, n));
        }
        catch (Exception)
        {
            // Never unwind into the library.
        }
    }

    static readonly EventCallback CSharpCallback = OnEventJson; // kept alive for the process

    // ---- run rounds: one run per CLI ----

    const string Limits = "\"limits\":{\"high_water\":1000000000,\"byte_budget\":4000000000,\"stall_ms\":600000}";

    static long RunsNative(IntPtr callback, IntPtr userData, Func<long> delivered)
    {
        long before = delivered();
        foreach (var kv in runTraces)
        {
            var config = "{\"type\":\"" + kv.Key + "\",\"bin\":" + AgentstreamJson.Serialize(fakeHarness) +
                ",\"env\":{\"AGENTSTREAM_FAKE_TRACE\":" + AgentstreamJson.Serialize(kv.Value) + "}}";
            IntPtr session, run, result;
            UIntPtr len;
            ulong id;
            Ok(agentstream_session_new_json(Z(config), 0, out session), "session_new_json");
            Ok(agentstream_session_on(session, Z("content"), callback, userData, IntPtr.Zero, out id), "session_on");
            Ok(agentstream_session_start(session, Z("{\"prompt\":\"bench\"," + Limits + "}"), IntPtr.Zero, IntPtr.Zero, IntPtr.Zero, out run), "start");
            Ok(agentstream_run_wait(run, -1, out result, out len), "run_wait");
            var text = Marshal.PtrToStringAnsi(result);
            agentstream_string_free(result);
            if (!text.Contains("\"coalesced\":0") || !text.Contains("\"state\":\"completed\""))
            {
                Console.Error.WriteLine("warning: " + text);
            }
            agentstream_run_free(run);
            agentstream_session_free(session);
        }
        return delivered() - before;
    }

    static long RunsCSharp()
    {
        long before = handled;
        foreach (var kv in runTraces)
        {
            var config = new AgentConfig { Type = kv.Key, Bin = fakeHarness, Env = new Dictionary<string, string> { { "AGENTSTREAM_FAKE_TRACE", kv.Value } } };
            using (var evolve = new Evolve(config))
            {
                evolve.On("content", e => Handle(e.Content));
                var result = evolve.Run(new RunOptions
                {
                    Prompt = "bench",
                    Limits = new RunLimits { HighWater = 1000000000, ByteBudget = 4000000000, Stall = TimeSpan.FromMinutes(10) },
                });
                if (result.State != RunState.Completed || result.Pressure.Coalesced != 0)
                {
                    Console.Error.WriteLine("warning: " + result);
                }
            }
        }
        return handled - before;
    }

    // ---- measurement ----

    sealed class Mode
    {
        public string Name;
        public string Group;
        public Func<long> Pass;
        public double Best; // events/s
        public long Events;
        public double Seconds = double.MaxValue;
    }

    static void Measure(Mode m)
    {
        var w = Stopwatch.StartNew();
        long events = m.Pass();
        double t = w.Elapsed.TotalSeconds;
        if (t < m.Seconds)
        {
            m.Seconds = t;
            m.Events = events;
            m.Best = events / t;
        }
    }

    static int Main(string[] args)
    {
        if (args.Length < 2)
        {
            Console.Error.WriteLine("usage: Bench.exe <corpus dir> <fake-harness> [rounds]");
            return 2;
        }
        string dir = args[0];
        fakeHarness = args[1];
        int rounds = args.Length > 2 ? int.Parse(args[2]) : 5;
        corpus = File.ReadAllBytes(Path.Combine(dir, "mixed.jsonl"));
        segments = File.ReadAllLines(Path.Combine(dir, "mixed.segments.tsv"))
            .Select(l => l.Split('\t'))
            .Where(f => f.Length >= 5 && f[0] != "cli")
            .Select(f => new Segment { Cli = f[0], Offset = int.Parse(f[3]), Length = int.Parse(f[4]) })
            .ToList();
        var runDir = Path.Combine(dir, "runs");
        Directory.CreateDirectory(runDir);
        foreach (var group in segments.GroupBy(s => s.Cli))
        {
            var prefix = Path.Combine(runDir, group.Key);
            using (var f = File.Create(prefix + ".input.jsonl"))
            {
                foreach (var s in group)
                {
                    f.Write(corpus, s.Offset, s.Length);
                }
                runBytes[group.Key] = f.Length;
            }
            runTraces[group.Key] = prefix;
        }

        IntPtr sink = bench_sink_new();
        IntPtr cCallback = bench_sink_callback();
        IntPtr csCallback = Marshal.GetFunctionPointerForDelegate(CSharpCallback);
        Func<long> sinkEvents = () => (long)bench_sink_events(sink);
        Func<long> handledEvents = () => handled;
        var modes = new List<Mode>
        {
            new Mode { Group = "decoder", Name = "C callback", Pass = () => DecoderCallback(cCallback, sink, sinkEvents) },
            new Mode { Group = "decoder", Name = "C# Decoder", Pass = DecoderCSharp },
            new Mode { Group = "decoder", Name = "C# delegate", Pass = () => DecoderCallback(csCallback, IntPtr.Zero, handledEvents) },
            new Mode { Group = "runs", Name = "C on(content)", Pass = () => RunsNative(cCallback, sink, sinkEvents) },
            new Mode { Group = "runs", Name = "C# On(content)", Pass = RunsCSharp },
            new Mode { Group = "runs", Name = "C# delegate", Pass = () => RunsNative(csCallback, IntPtr.Zero, handledEvents) },
        };
        Console.WriteLine("agentstream " + Library.Version + " C# bench (mono " + Environment.Version + "): mixed corpus " +
            corpus.Length + " bytes, " + segments.Count + " replays of " + runTraces.Count + " CLIs; " + rounds + " rounds, best counts");
        // Warm up (JIT, page cache), then alternate the modes round by round.
        foreach (var m in modes)
        {
            m.Pass();
        }
        for (int r = 0; r < rounds; r++)
        {
            var order = r % 2 == 0 ? modes : Enumerable.Reverse(modes).ToList();
            foreach (var m in order)
            {
                Measure(m);
            }
        }
        foreach (var group in modes.GroupBy(m => m.Group))
        {
            var reference = group.First();
            long bytes = group.Key == "decoder" ? corpus.Length : runBytes.Values.Sum();
            Console.WriteLine(group.Key + ":");
            foreach (var m in group)
            {
                Console.WriteLine(string.Format("  {0,-16} {1,10:0} event/s  {2,7:0.0} MB/s  {3,6:0} ns/event  ({4} events, {5:0.000} s)  {6:0.00}x {7}",
                    m.Name, m.Best, bytes / m.Seconds / 1e6, 1e9 / m.Best, m.Events, m.Seconds, m.Best / reference.Best, reference.Name));
            }
        }
        var csharp = modes.Where(m => m.Name.StartsWith("C# On") || m.Name == "C# Decoder");
        Console.WriteLine("ratio to the C callback (events/s): " + string.Join(", ", csharp.Select(m =>
            m.Group + " " + (m.Best / modes.First(x => x.Group == m.Group).Best).ToString("0.00") + "x")));
        bench_sink_free(sink);
        return 0;
    }
}
