package agentstream

import (
	"encoding/json"
	"os"
	"testing"
)

// decodeChunked feeds input in chunks chosen by size() through Feed, then Finish.
func decodeChunked(t *testing.T, agent string, input []byte, size func() int) []OutputEvent {
	t.Helper()
	d, err := NewDecoder(agent)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var out []OutputEvent
	for rest := input; len(rest) > 0; {
		n := size()
		if n < 1 {
			n = 1
		}
		if n > len(rest) {
			n = len(rest)
		}
		evs, err := d.Feed(rest[:n])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, evs...)
		rest = rest[n:]
	}
	tail, err := d.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return append(out, tail...)
}

func marshalAll(t *testing.T, events []OutputEvent) [][]byte {
	out := make([][]byte, len(events))
	for i := range events {
		out[i] = mustMarshal(t, events[i])
	}
	return out
}

func sameJSONLists(t *testing.T, what string, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d events, expected %d", what, len(got), len(want))
	}
	for i := range got {
		if !jsonEqual(got[i], want[i]) {
			t.Fatalf("%s: event %d differs\n got      %s\n expected %s", what, i+1, got[i], want[i])
		}
	}
}

// Every golden case through the Go Decoder: whole, byte by byte, in seeded random chunks, and
// through FeedFunc; each event re-encoded by the Go types equals the expected line (so the
// types are lossless for everything the core emits).
func TestGoldenReplay(t *testing.T) {
	for _, c := range goldenCases(t) {
		c := c
		t.Run(c.Agent+"/"+c.Name, func(t *testing.T) {
			input, err := os.ReadFile(c.Input)
			if err != nil {
				t.Fatal(err)
			}
			want := jsonLines(t, c.sibling(".expected.jsonl"))

			whole := marshalAll(t, decodeChunked(t, c.Agent, input, func() int { return len(input) }))
			sameJSONLists(t, "whole", whole, want)
			sameJSONLists(t, "byte by byte", marshalAll(t, decodeChunked(t, c.Agent, input, func() int { return 1 })), want)
			for seed := uint64(1); seed <= 3; seed++ {
				r := rng(seed * 0x9E3779B97F4A7C15)
				got := decodeChunked(t, c.Agent, input, func() int { return int(r.next()%97) + 1 })
				sameJSONLists(t, "random chunks", marshalAll(t, got), want)
			}

			// The JSON-array path (agentstream_decoder_feed_json).
			da, err := NewDecoder(c.Agent)
			if err != nil {
				t.Fatal(err)
			}
			arr, err := da.feedJSONArray(input)
			if err != nil {
				t.Fatal(err)
			}
			arrTail, err := da.finishJSONArray()
			if err != nil {
				t.Fatal(err)
			}
			da.Close()
			sameJSONLists(t, "JSON array", marshalAll(t, append(arr, arrTail...)), want)

			// The callback path.
			d, err := NewDecoder(c.Agent)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			var viaFunc []OutputEvent
			collect := func(ev OutputEvent) { viaFunc = append(viaFunc, ev) }
			for i := 0; i < len(input); i += 13 {
				end := i + 13
				if end > len(input) {
					end = len(input)
				}
				if err := d.FeedFunc(input[i:end], collect); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.FinishFunc(collect); err != nil {
				t.Fatal(err)
			}
			sameJSONLists(t, "FeedFunc", marshalAll(t, viaFunc), want)

			stats, err := d.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if stats.Bytes != uint64(len(input)) || stats.Events != uint64(len(want)) {
				t.Fatalf("stats %+v: want %d bytes, %d events", stats, len(input), len(want))
			}

			parsed, err := Parse(c.Agent, input)
			if err != nil {
				t.Fatal(err)
			}
			sameJSONLists(t, "Parse", marshalAll(t, parsed), want)

			// Hook golden files (when present) decode losslessly into AgentEvent.
			for i, line := range jsonLines(t, c.sibling(".hooks.jsonl")) {
				var ev AgentEvent
				if err := json.Unmarshal(line, &ev); err != nil {
					t.Fatalf("hooks line %d: %v", i+1, err)
				}
				if back := mustMarshal(t, ev); !jsonEqual(back, line) {
					t.Fatalf("hooks line %d: %s re-encodes as %s", i+1, line, back)
				}
			}
		})
	}
}
