package agentstream

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
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

// The Go types against the generated JSON Schema of the core's types
// (core/schema/events.schema.json): same property names per type, same enum values, and
// every schema definition accounted for, so a change in the core fails here until the Go
// mirror follows.
func TestTypesMatchCoreSchema(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "core", "schema", "events.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Defs map[string]map[string]any `json:"$defs"`
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	defs := schema.Defs
	seen := map[string]bool{}

	var props func(def map[string]any) map[string]bool
	props = func(def map[string]any) map[string]bool {
		out := map[string]bool{}
		if p, ok := def["properties"].(map[string]any); ok {
			for k := range p {
				out[k] = true
			}
		}
		if ref, ok := def["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/$defs/")
			seen[name] = true
			for k := range props(defs[name]) {
				out[k] = true
			}
		}
		return out
	}
	tags := func(v any) map[string]bool {
		out := map[string]bool{}
		rt := reflect.TypeOf(v)
		for i := 0; i < rt.NumField(); i++ {
			if tag := rt.Field(i).Tag.Get("json"); tag != "" && tag != "-" {
				out[strings.Split(tag, ",")[0]] = true
			}
		}
		return out
	}
	same := func(what string, got, want map[string]bool) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Go has %v, schema has %v", what, keys(got), keys(want))
		}
	}
	variants := func(name string) []map[string]any {
		seen[name] = true
		var out []map[string]any
		for _, v := range defs[name]["oneOf"].([]any) {
			out = append(out, v.(map[string]any))
		}
		return out
	}
	constOf := func(v map[string]any, key string) string {
		if key == "" {
			return v["const"].(string)
		}
		return v["properties"].(map[string]any)[key].(map[string]any)["const"].(string)
	}

	// Structs.
	for name, v := range map[string]any{
		"OutputEvent": OutputEvent{}, "ToolCallLocation": ToolCallLocation{}, "PlanEntry": PlanEntry{},
		"TokenUsage": TokenUsage{}, "LifecycleEvent": LifecycleEvent{}, "DecodeStats": DecodeStats{},
	} {
		seen[name] = true
		same(name, tags(v), props(defs[name]))
	}
	// Unions flattened into one Go struct with a "type" discriminator.
	for name, v := range map[string]any{"ContentBlock": ContentBlock{}, "ToolCallContent": ToolCallContent{}} {
		union := map[string]bool{}
		for _, variant := range variants(name) {
			for k := range props(variant) {
				union[k] = true
			}
		}
		same(name, tags(v), union)
	}
	// SessionUpdate: one Go type per variant.
	goTypes := map[string]any{
		"agent_message_chunk": AgentMessageChunk{}, "agent_thought_chunk": AgentThoughtChunk{},
		"user_message_chunk": UserMessageChunk{}, "tool_call": ToolCall{}, "tool_call_update": ToolCallUpdate{},
		"plan": Plan{}, "error": AgentError{}, "usage": AgentUsage{},
	}
	for _, variant := range variants("SessionUpdate") {
		kind := constOf(variant, "sessionUpdate")
		goType, ok := goTypes[kind]
		if !ok {
			t.Errorf("SessionUpdate %q has no Go type", kind)
			continue
		}
		delete(goTypes, kind)
		p := props(variant)
		delete(p, "sessionUpdate")
		same("SessionUpdate "+kind, tags(goType), p)
	}
	if len(goTypes) > 0 {
		t.Errorf("Go types for kinds the schema does not have: %v", goTypes)
	}
	// String enums.
	enums := map[string][]string{
		"ToolKind": strs(ToolKindRead, ToolKindEdit, ToolKindDelete, ToolKindMove, ToolKindSearch, ToolKindExecute,
			ToolKindThink, ToolKindFetch, ToolKindSwitchMode, ToolKindOther),
		"ToolCallStatus":    strs(ToolCallPending, ToolCallInProgress, ToolCallCompleted, ToolCallFailed),
		"PlanEntryStatus":   strs(PlanEntryPending, PlanEntryInProgress, PlanEntryCompleted),
		"PlanEntryPriority": strs(PriorityHigh, PriorityMedium, PriorityLow),
		"UsageScope":        strs(UsageScopeCall, UsageScopeRun),
		"SandboxState": strs(SandboxStateBooting, SandboxStateError, SandboxStateReady, SandboxStateRunning,
			SandboxStatePaused, SandboxStateStopped),
		"AgentState": strs(AgentStateIdle, AgentStateRunning, AgentStateInterrupted, AgentStateError),
		"LifecycleReason": strs(ReasonBrowserReady, ReasonSandboxBoot, ReasonSandboxReady, ReasonSandboxConnected,
			ReasonSandboxPause, ReasonSandboxResume, ReasonSandboxKilled, ReasonSandboxError, ReasonRunStart,
			ReasonRunComplete, ReasonRunInterrupted, ReasonRunFailed, ReasonRunBackgroundComplete,
			ReasonRunBackgroundFailed, ReasonCommandStart, ReasonCommandComplete, ReasonCommandInterrupted,
			ReasonCommandFailed, ReasonCommandBackgroundComplete, ReasonCommandBackgroundFailed),
		"Agent": {"claude", "codex", "gemini", "qwen", "kimi", "opencode", "droid"},
	}
	for name, goValues := range enums {
		var schemaValues []string
		if list, ok := defs[name]["enum"].([]any); ok {
			seen[name] = true
			for _, v := range list {
				schemaValues = append(schemaValues, v.(string))
			}
		} else {
			for _, v := range variants(name) {
				schemaValues = append(schemaValues, constOf(v, ""))
			}
		}
		sort.Strings(schemaValues)
		sort.Strings(goValues)
		if !reflect.DeepEqual(goValues, schemaValues) {
			t.Errorf("%s: Go has %v, schema has %v", name, goValues, schemaValues)
		}
	}
	for name := range defs {
		if !seen[name] {
			t.Errorf("schema definition %s is not mirrored (or not checked) in Go", name)
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

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
