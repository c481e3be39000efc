package agentstream

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A tool input nested a million levels deep (issue 24, item 1): Parse, a Decoder fed in chunks,
// Replay's hooks and a real run deliver it without an error or a crash, its containers past 64
// levels as {"$rawJson": "<their JSON text>"} (the core's limit; encoding/json alone stops at
// 10000 levels and failed the whole batch), or masked whole ("[redacted]") when redaction is on.

const deepLevels = 1_000_000
const maxDepth = 64

func deepLine() []byte {
	nested := strings.Repeat("[", deepLevels) + strings.Repeat("]", deepLevels)
	return []byte(`{"type":"assistant","session_id":"s","message":{"id":"m1","type":"message","role":"assistant","model":"x",` +
		`"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls","deep":` + nested + `}}]}}` + "\n")
}

func checkDeepInput(t *testing.T, raw any, masked bool) {
	t.Helper()
	m, ok := raw.(map[string]any)
	if !ok || m["command"] != "ls" {
		t.Fatalf("input %T", raw)
	}
	v := m["deep"]
	for i := 0; i < maxDepth-1; i++ {
		list, ok := v.([]any)
		if !ok || len(list) != 1 {
			t.Fatalf("level %d: %T", i, v)
		}
		v = list[0]
	}
	if masked {
		if v != "[redacted]" {
			t.Fatalf("the deep rest: %T %v, want it masked", v, v)
		}
		return
	}
	marker, ok := v.(map[string]any)
	text, _ := marker["$rawJson"].(string)
	if !ok || len(marker) != 1 || len(text) != 2*(deepLevels-maxDepth+1) {
		t.Fatalf("the deep rest: %T with %d keys, %d bytes of text", v, len(marker), len(text))
	}
}

func deepToolCall(t *testing.T, events []OutputEvent) *ToolCall {
	t.Helper()
	for _, e := range events {
		if c, ok := e.Update.(*ToolCall); ok {
			return c
		}
	}
	t.Fatal("no tool call")
	return nil
}

func TestAMillionLevelsDeepThroughParseDecoderAndReplay(t *testing.T) {
	line := deepLine()
	events, err := Parse("claude", line)
	if err != nil {
		t.Fatal(err)
	}
	checkDeepInput(t, deepToolCall(t, events).RawInput, true)
	events, err = ParseWithOptions("claude", line, DecoderOptions{DisableRedaction: true})
	if err != nil {
		t.Fatal(err)
	}
	checkDeepInput(t, deepToolCall(t, events).RawInput, false)

	d, err := NewDecoderWithOptions("claude", DecoderOptions{DisableRedaction: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var all []OutputEvent
	for i := 0; i < len(line); i += 65536 {
		evs, err := d.Feed(line[i:min(i+65536, len(line))])
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, evs...)
	}
	rest, err := d.Finish()
	if err != nil {
		t.Fatal(err)
	}
	checkDeepInput(t, deepToolCall(t, append(all, rest...)).RawInput, false)

	r, err := ReplayWith("claude", line, ReplayOptions{DisableRedaction: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range r.Hooks {
		if h.Type == "tool.started" {
			checkDeepInput(t, h.Details["arguments"], false)
			return
		}
	}
	t.Fatal("no tool.started hook")
}

func TestAMillionLevelsDeepThroughARealRun(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "deep.input.jsonl"), deepLine(), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Type: "claude", Bin: fakeHarness(t), Env: map[string]string{"AGENTSTREAM_FAKE_TRACE": filepath.Join(dir, "deep")}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var contents []OutputEvent
	if err := s.On("content", func(e OutputEvent) { contents = append(contents, e) }); err != nil {
		t.Fatal(err)
	}
	var arguments any
	res, err := s.Run(context.Background(), RunOptions{Prompt: "x", OnEvent: func(h AgentEvent) error {
		if h.Type == "tool.started" {
			arguments = h.Details["arguments"]
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.State != "completed" && res.State != "failed" {
		t.Fatalf("state %s", res.State)
	}
	checkDeepInput(t, deepToolCall(t, contents).RawInput, true)
	checkDeepInput(t, arguments, true)
}
