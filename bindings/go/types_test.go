package agentstream

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Every variant and edge of the event model (checked canonical against the core by
// `cargo test -p agentstream-c`): decoding into the Go types and encoding back is lossless.
func TestShapesRoundTrip(t *testing.T) {
	lines := jsonLines(t, filepath.Join("..", "c", "testdata", "shapes.jsonl"))
	if len(lines) < 15 {
		t.Fatalf("only %d shapes", len(lines))
	}
	kinds := map[string]bool{}
	for i, line := range lines {
		var ev OutputEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if _, unknown := ev.Update.(*UnknownUpdate); unknown {
			t.Fatalf("line %d: known kind decoded as unknown", i+1)
		}
		kinds[ev.Kind()] = true
		back := mustMarshal(t, ev)
		if !jsonEqual(back, line) {
			t.Fatalf("line %d: not lossless\n in  %s\n out %s", i+1, line, back)
		}
	}
	for _, k := range []string{"agent_message_chunk", "agent_thought_chunk", "user_message_chunk", "tool_call",
		"tool_call_update", "plan", "error", "usage"} {
		if !kinds[k] {
			t.Errorf("shapes.jsonl has no %s", k)
		}
	}
}

func TestTypedAccess(t *testing.T) {
	lines := jsonLines(t, filepath.Join("..", "c", "testdata", "shapes.jsonl"))
	var first, call, usage OutputEvent
	for _, pair := range []struct {
		line int
		ev   *OutputEvent
	}{{0, &first}, {4, &call}, {15, &usage}} {
		if err := json.Unmarshal(lines[pair.line], pair.ev); err != nil {
			t.Fatal(err)
		}
	}
	if first.GetSessionID() != "s-1" || first.GetMessageID() != "msg_1" || first.Extra["stop_reason"] != nil {
		t.Fatalf("envelope fields: %+v", first)
	}
	if m, ok := first.Update.(*AgentMessageChunk); !ok || !strings.HasPrefix(m.Content.Text, "héllo") {
		t.Fatalf("update %#v", first.Update)
	}
	tc, ok := call.Update.(*ToolCall)
	if !ok || tc.GetToolName() != "Bash" || tc.Kind != ToolKindExecute || tc.Status != ToolCallPending {
		t.Fatalf("tool call %#v", call.Update)
	}
	raw := tc.RawInput.(map[string]any)
	if raw["big"] != json.Number("12345678901234567890") {
		t.Fatalf("numbers in rawInput must stay exact: %#v", raw["big"])
	}
	if tc.Content[1].Type != "diff" || tc.Content[1].OldText != nil || *tc.Content[2].OldText != "old" {
		t.Fatalf("diffs %#v", tc.Content)
	}
	if *tc.Locations[0].Line != 3 || tc.Locations[1].Line != nil {
		t.Fatalf("locations %#v", tc.Locations)
	}
	u := usage.Update.(*AgentUsage)
	if u.Scope != UsageScopeCall || *u.Usage.PromptTokens != 150 || *u.Usage.CostUSD != 0.0123 || u.Usage.Extra["service_tier"] != "standard" {
		t.Fatalf("usage %#v", u)
	}
	if IsWork(u) || !IsWork(tc) || !DidWork([]OutputEvent{usage, call}) || DidWork([]OutputEvent{usage}) {
		t.Fatal("IsWork/DidWork")
	}
}

func TestUnknownUpdateKindIsKept(t *testing.T) {
	in := []byte(`{"update":{"sessionUpdate":"future_kind","x":[1,{"y":2}]},"model":"m"}`)
	var ev OutputEvent
	if err := json.Unmarshal(in, &ev); err != nil {
		t.Fatal(err)
	}
	if u, ok := ev.Update.(*UnknownUpdate); !ok || u.Kind != "future_kind" {
		t.Fatalf("%#v", ev.Update)
	}
	if out := mustMarshal(t, ev); !jsonEqual(out, in) {
		t.Fatalf("%s", out)
	}
	for _, bad := range []string{`{}`, `{"update":{}}`, `{"update":{"sessionUpdate":"tool_call","kind":7}}`, `[1]`} {
		if err := json.Unmarshal([]byte(bad), &ev); err == nil {
			t.Errorf("%s: expected an error", bad)
		}
	}
	if _, err := json.Marshal(OutputEvent{}); err == nil {
		t.Error("an OutputEvent without Update must not encode")
	}
}

func TestLifecycleAndHookShapes(t *testing.T) {
	for _, in := range []string{
		`{"sandbox_id":null,"sandbox":"ready","agent":"idle","timestamp":"2026-12-02T00:00:00.000Z","reason":"run_complete"}`,
		`{"sandbox_id":"sb","sandbox":"running","agent":"running","timestamp":"t","browser":{"live_url":"u","session_id":"s"},"reason":"browser_ready"}`,
	} {
		var ev LifecycleEvent
		if err := json.Unmarshal([]byte(in), &ev); err != nil {
			t.Fatal(err)
		}
		if out := mustMarshal(t, ev); !jsonEqual(out, []byte(in)) {
			t.Fatalf("lifecycle %s -> %s", in, out)
		}
	}
	var lc LifecycleEvent
	_ = json.Unmarshal([]byte(`{"sandbox_id":null,"sandbox":"stopped","agent":"error","timestamp":"t","reason":"run_failed"}`), &lc)
	if lc.SandboxID != nil || lc.Agent != AgentStateError || !lc.Reason.IsTerminal() || ReasonRunStart.IsTerminal() {
		t.Fatalf("%+v", lc)
	}

	in := `{"type":"tool.completed","run_id":"r1","agent_id":"claude","timestamp":"t","status":"running","sequence":7,"details":{"step_index":2,"tool_call_id":"c","output":"ok"}}`
	var h AgentEvent
	if err := json.Unmarshal([]byte(in), &h); err != nil {
		t.Fatal(err)
	}
	if h.Type != "tool.completed" || h.RunID != "r1" || h.AgentID != "claude" || h.Status != HookRunning ||
		h.Sequence != 7 || h.Details["step_index"] != json.Number("2") || h.IsTerminal() {
		t.Fatalf("%+v", h)
	}
	if out := mustMarshal(t, h); !jsonEqual(out, []byte(in)) {
		t.Fatalf("hook -> %s", out)
	}
	var env Envelope
	if err := json.Unmarshal([]byte(`{"runId":"r","sequence":3,"channel":"stdout","event":"line"}`), &env); err != nil {
		t.Fatal(err)
	}
	if s, err := env.Text(); err != nil || s != "line" {
		t.Fatal(s, err)
	}
	if _, err := env.Content(); err == nil {
		t.Fatal("a stdout envelope is not content")
	}
}

// The Go types are generated from the core's schema (types_gen.go, `make generate`; `make
// check-generated` fails when they are stale). What is checked here is that they take in what
// the library really sends: run results of real runs (completed, failed, timed out) and every
// golden replay's outcome, statistics and hooks decode with DisallowUnknownFields (a wire field
// the Go type lacks would be silently dropped otherwise) and encode back to the same JSON.
func TestGeneratedTypesTakeEveryWireField(t *testing.T) {
	strict := func(what string, data []byte, v any) {
		t.Helper()
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		dec.UseNumber()
		if err := dec.Decode(v); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, data)
		}
		if back := mustMarshal(t, v); !jsonEqual(back, data) {
			t.Fatalf("%s: not lossless\n in  %s\n out %s", what, data, back)
		}
	}
	cases := []struct {
		trace string
		env   map[string]string
		opts  RunOptions
		state RunState
	}{
		{"s2-bash", nil, RunOptions{Prompt: "x"}, RunCompleted},
		{"s1-text", map[string]string{"AGENTSTREAM_FAKE_EXIT": "3"}, RunOptions{Prompt: "x"}, RunFailed},
		{"s1-text", map[string]string{"AGENTSTREAM_FAKE_HANG": "1"},
			RunOptions{Prompt: "x", Timeout: 100 * time.Millisecond, KillGrace: 100 * time.Millisecond}, RunCancelled},
	}
	for _, c := range cases {
		client := fakeClient(t, "claude", c.trace, c.env)
		request, err := c.opts.request("")
		if err != nil {
			t.Fatal(err)
		}
		var r runPtr
		if err := client.with(func(s sessionPtr) error {
			var err error
			r, err = sessionStart(s, request)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		raw, err := runWait(r, -1)
		runFree(r)
		if err != nil {
			t.Fatal(err)
		}
		var res RunResult
		strict("run result "+string(c.state), raw, &res)
		if res.State != c.state {
			t.Fatalf("state %s, want %s: %s", res.State, c.state, raw)
		}
		if c.state == RunCompleted && (res.Usage.PromptTokens == nil || res.Usage.CostUSD == nil) {
			t.Fatalf("usage totals not decoded: %+v from %s", res.Usage, raw)
		}
		if c.state == RunCancelled && res.CancelKind != CancelKindTimeout {
			t.Fatalf("cancel kind %q: %s", res.CancelKind, raw)
		}
	}
	for _, gc := range goldenCases(t) {
		input, err := os.ReadFile(gc.Input)
		if err != nil {
			t.Fatal(err)
		}
		out, err := replayJSON(gc.Agent, input, []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		var parts struct {
			Outcome json.RawMessage   `json:"outcome"`
			Stats   json.RawMessage   `json:"stats"`
			Hooks   []json.RawMessage `json:"hooks"`
		}
		if err := json.Unmarshal(out, &parts); err != nil {
			t.Fatal(err)
		}
		strict(gc.Input+" outcome", parts.Outcome, new(RunOutcome))
		strict(gc.Input+" stats", parts.Stats, new(DecodeStats))
		for _, h := range parts.Hooks {
			strict(gc.Input+" hook", h, new(AgentEvent))
		}
	}
}

// The generated enums and the error table against the schema document itself.
func TestEnumsAndErrorTableMatchTheSchema(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "core", "schema", "events.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Defs   map[string]map[string]any `json:"$defs"`
		Errors []struct {
			Name   string `json:"name"`
			Code   int    `json:"code"`
			Advice string `json:"advice"`
		} `json:"x-errors"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	values := func(name string) []string {
		var out []string
		if list, ok := schema.Defs[name]["enum"].([]any); ok {
			for _, v := range list {
				out = append(out, v.(string))
			}
			return out
		}
		for _, v := range schema.Defs[name]["oneOf"].([]any) {
			out = append(out, v.(map[string]any)["const"].(string))
		}
		return out
	}
	for name, goValues := range map[string][]string{
		"Agent": strs(AgentValues()...), "Channel": strs(ChannelValues()...), "ToolKind": strs(ToolKindValues()...),
		"LifecycleReason": strs(LifecycleReasonValues()...), "RunState": strs(RunStateValues()...),
		"CancelKind": strs(CancelKindValues()...), "ErrorKind": strs(ErrorKindValues()...),
		"HookStatus": strs(HookStatusValues()...),
	} {
		if !reflect.DeepEqual(goValues, values(name)) {
			t.Errorf("%s: Go has %v, schema has %v", name, goValues, values(name))
		}
	}
	if len(schema.Errors) != len(ErrorKindValues()) {
		t.Fatalf("%d kinds in Go, %d in the schema", len(ErrorKindValues()), len(schema.Errors))
	}
	for i, row := range schema.Errors {
		k := ErrorKindValues()[i]
		if string(k) != row.Name || k.Code() != row.Code || k.Advice() != row.Advice {
			t.Errorf("error kind %d: Go %s/%d/%q, schema %+v", i, k, k.Code(), k.Advice(), row)
		}
		if back, ok := ErrorKindOfCode(row.Code); !ok || back != k {
			t.Errorf("ErrorKindOfCode(%d) = %s, %v", row.Code, back, ok)
		}
	}
}

func strs[T ~string](vs ...T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}
