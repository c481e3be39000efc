package agentstream

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// Decoder throughput on the mixed corpus (every golden s* trace), events delivered to Go,
// side by side with a plain Go JSON normalizer over the same bytes (each line
// json.Unmarshal'ed into map[string]any and json.Marshal'ed back):
//
//	go test -run '^$' -bench . -benchtime 2s
//
// Each iteration decodes every trace with a fresh Decoder. Metrics: events/s, MB/s of input.

type benchTrace struct {
	agent string
	data  []byte
}

func benchCorpus(b *testing.B) ([]benchTrace, int) {
	paths, _ := filepath.Glob(filepath.Join(goldenDir, "*", "s*.input.jsonl"))
	sort.Strings(paths)
	var out []benchTrace
	total := 0
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, benchTrace{agent: filepath.Base(filepath.Dir(p)), data: data})
		total += len(data)
	}
	if len(out) == 0 {
		b.Skip("no traces")
	}
	return out, total
}

// report adds items/s (b.Elapsed needs Go 1.20; the module builds with older Go too).
func report(b *testing.B, start time.Time, items int, unit string, bytesPerOp int) {
	b.SetBytes(int64(bytesPerOp))
	if s := time.Since(start).Seconds(); s > 0 {
		b.ReportMetric(float64(items)/s, unit+"/s")
	}
}

// Feed returning []OutputEvent.
func BenchmarkDecoderFeed(b *testing.B) {
	corpus, total := benchCorpus(b)
	events := 0
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		for _, t := range corpus {
			d, _ := NewDecoder(t.agent)
			evs, _ := d.Feed(t.data)
			tail, _ := d.Finish()
			events += len(evs) + len(tail)
			d.Close()
		}
	}
	report(b, start, events, "events", total)
}

// The same through agentstream_decoder_feed_json: one JSON array per call, decoded with
// encoding/json.
func BenchmarkDecoderFeedJSONArray(b *testing.B) {
	corpus, total := benchCorpus(b)
	events := 0
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		for _, t := range corpus {
			d, _ := NewDecoder(t.agent)
			evs, _ := d.feedJSONArray(t.data)
			tail, _ := d.finishJSONArray()
			events += len(evs) + len(tail)
			d.Close()
		}
	}
	report(b, start, events, "events", total)
}

// FeedFunc: one callback from the library into Go per event, on the calling goroutine.
func BenchmarkDecoderFeedFunc(b *testing.B) {
	corpus, total := benchCorpus(b)
	events := 0
	count := func(OutputEvent) { events++ }
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		for _, t := range corpus {
			d, _ := NewDecoder(t.agent)
			_ = d.FeedFunc(t.data, count)
			_ = d.FinishFunc(count)
			d.Close()
		}
	}
	report(b, start, events, "events", total)
}

// The baseline: a plain Go JSON normalizer over the same lines.
func BenchmarkBaselineGoJSONNormalize(b *testing.B) {
	corpus, total := benchCorpus(b)
	lines := 0
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		for _, t := range corpus {
			for _, line := range bytes.Split(t.data, []byte("\n")) {
				if len(line) == 0 {
					continue
				}
				var v map[string]any
				if json.Unmarshal(line, &v) == nil {
					if _, err := json.Marshal(v); err == nil {
						lines++
					}
				}
			}
		}
	}
	report(b, start, lines, "lines", total)
}

// ---- the same corpus through REAL runs of the fake harness ----
//
// Each agent's s* traces are joined and repeated 100 times (about 5 MB of stdout in all) and
// played by the fake harness as a child process, one run per agent per iteration. The
// buffer's marks are raised so no text delta is merged: every content event is delivered.
// The time includes spawning the processes.

var noMerge = Limits{HighWater: 1_000_000_000, ByteBudget: 4_000_000_000, Stall: 600 * time.Second}

type runTrace struct {
	agent, prefix string
	bytes         int
}

func runCorpus(b *testing.B) []runTrace {
	corpus, _ := benchCorpus(b)
	dir := b.TempDir()
	byAgent := map[string]*bytes.Buffer{}
	var order []string
	for _, t := range corpus {
		if byAgent[t.agent] == nil {
			byAgent[t.agent] = &bytes.Buffer{}
			order = append(order, t.agent)
		}
	}
	for r := 0; r < 100; r++ {
		for _, t := range corpus {
			byAgent[t.agent].Write(t.data)
		}
	}
	var out []runTrace
	for _, a := range order {
		prefix := filepath.Join(dir, a)
		if err := os.WriteFile(prefix+".input.jsonl", byAgent[a].Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
		out = append(out, runTrace{agent: a, prefix: prefix, bytes: byAgent[a].Len()})
	}
	return out
}

func benchRuns(b *testing.B, run func(c *Client) int) {
	fake := fakeHarness(b)
	traces := runCorpus(b)
	total := 0
	for _, t := range traces {
		total += t.bytes
	}
	events := 0
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		for _, t := range traces {
			c, err := New(Config{Type: t.agent, Bin: fake, Env: map[string]string{"AGENTSTREAM_FAKE_TRACE": t.prefix}})
			if err != nil {
				b.Fatal(err)
			}
			events += run(c)
			c.Close()
		}
	}
	b.StopTimer()
	report(b, start, events, "events", total)
}

// Run with an On("content") handler: the run's goroutine pulls batches of what is ready (one
// cgo call and one JSON array per batch) and calls the handler with each decoded OutputEvent.
func BenchmarkRunHandler(b *testing.B) {
	benchRuns(b, func(c *Client) int {
		n := 0
		if err := c.On("content", func(OutputEvent) { n++ }); err != nil {
			b.Fatal(err)
		}
		res, err := c.Run(context.Background(), RunOptions{Prompt: "bench", Limits: noMerge})
		if err != nil || res.Pressure.Coalesced != 0 {
			b.Fatalf("%+v %v", res, err)
		}
		return n
	})
}

// Stream: a goroutine pulls batches (every channel) and hands them over a channel; the reader
// decodes each content event.
func BenchmarkRunStream(b *testing.B) {
	benchRuns(b, func(c *Client) int {
		st, err := c.Stream(context.Background(), RunOptions{Prompt: "bench", Limits: noMerge})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for d := range st.Deliveries() {
			if d.Item != nil && d.Item.Channel == ChannelContent {
				if _, err := d.Item.Content(); err != nil {
					b.Fatal(err)
				}
				n++
			}
		}
		if res, err := st.Wait(context.Background()); err != nil || res.Pressure.Coalesced != 0 {
			b.Fatalf("%+v %v", res, err)
		}
		return n
	})
}
