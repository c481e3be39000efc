package agentstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// ---- golden replay: content AND hooks ----

// hookFromLine converts one line of a golden .hooks.jsonl file (the canonical snake_case shape)
// into the Go AgentEvent by hand, independently of the package's decoding, so a decoding bug
// cannot cancel itself out.
func hookFromLine(t *testing.T, line []byte) AgentEvent {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatalf("hook line %s: %v", line, err)
	}
	seq, err := strconv.ParseUint(string(m["sequence"].(json.Number)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	ev := AgentEvent{
		Type:      m["type"].(string),
		RunID:     m["run_id"].(string),
		AgentID:   m["agent_id"].(string),
		Timestamp: m["timestamp"].(string),
		Status:    HookStatus(m["status"].(string)),
		Sequence:  seq,
	}
	if det, ok := m["details"].(map[string]any); ok {
		ev.Details = det
	}
	return ev
}

func TestGoldenReplayContentAndHooks(t *testing.T) {
	for _, c := range goldenCases(t) {
		t.Run(c.Agent+"/"+c.Name, func(t *testing.T) {
			input, err := os.ReadFile(c.Input)
			if err != nil {
				t.Fatal(err)
			}
			r, err := ReplayWith(c.Agent, input, ReplayOptions{RunID: "golden"})
			if err != nil {
				t.Fatal(err)
			}
			want := jsonLines(t, c.sibling(".expected.jsonl"))
			var got [][]byte
			for i, env := range r.Items {
				if env.RunID != "golden" || env.Sequence != uint64(i) {
					t.Fatalf("item %d: run %q sequence %d", i, env.RunID, env.Sequence)
				}
				if env.Channel == ChannelContent {
					got = append(got, env.Event)
					// The typed view decodes it too.
					if _, err := env.Content(); err != nil {
						t.Fatalf("item %d: %v", i, err)
					}
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%d content events, expected %d", len(got), len(want))
			}
			for i := range got {
				if !jsonEqual(got[i], want[i]) {
					t.Fatalf("event %d:\n got      %s\n expected %s", i, got[i], want[i])
				}
			}
			last, err := r.Items[len(r.Items)-1].Lifecycle()
			if err != nil || !last.Reason.IsTerminal() {
				t.Fatalf("the last item is not the terminal: %v %v", last, err)
			}
			hooks := jsonLines(t, c.sibling(".hooks.jsonl"))
			if len(hooks) != len(r.Hooks) {
				t.Fatalf("%d hooks, expected %d", len(r.Hooks), len(hooks))
			}
			for i, line := range hooks {
				if w := hookFromLine(t, line); !reflect.DeepEqual(r.Hooks[i], w) {
					t.Fatalf("hook %d:\n got      %#v\n expected %#v", i, r.Hooks[i], w)
				}
			}
			if !r.Hooks[len(r.Hooks)-1].IsTerminal() {
				t.Fatal("the hook view does not end with a terminal")
			}
			if r.Outcome.State == "" || r.Stats.Bytes != uint64(len(input)) {
				t.Fatalf("outcome %+v stats %+v", r.Outcome, r.Stats)
			}
		})
	}
}

func TestReplayErrors(t *testing.T) {
	if _, err := Replay("cursor", nil); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "opencode") {
		t.Fatalf("%v", err)
	}
	r, err := Replay("codex", nil)
	if err != nil || len(r.Items) != 2 || r.Items[0].RunID != "replay" {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := ReplayWith("codex", nil, ReplayOptions{Timestamp: "noon"}); !errors.Is(err, ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "ISO 8601") {
		t.Fatalf("a timestamp that is not ISO 8601 UTC: %v", err)
	}
	// codex without `turn.completed`: the harness did not finish (decisions.md §1).
	if r.Outcome.State != "failed" || r.Outcome.Error != "no_final_result" {
		t.Fatalf("%+v", r.Outcome)
	}
}

// ---- real runs of the fake harness ----

func fakeHarness(t testing.TB) string {
	t.Helper()
	p := os.Getenv("AGENTSTREAM_FAKE_HARNESS")
	if p == "" {
		p = filepath.Join("..", "..", "target", "release", "fake-harness")
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("the fake harness %s is missing (cargo build --release -p agentstream-cli --bins, or set AGENTSTREAM_FAKE_HARNESS): %v", abs, err)
	}
	return abs
}

func fakeSession(t testing.TB, agent, traceCase string, env map[string]string) *Session {
	t.Helper()
	trace, err := filepath.Abs(filepath.Join(goldenDir, agent, traceCase))
	if err != nil {
		t.Fatal(err)
	}
	e := map[string]string{"AGENTSTREAM_FAKE_TRACE": trace}
	for k, v := range env {
		e[k] = v
	}
	s, err := New(Config{Type: agent, Bin: fakeHarness(t), Env: e})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// logEntry is one handler call, in call order.
type logEntry struct {
	ch        Channel // ChannelHook for OnEvent
	content   OutputEvent
	lifecycle LifecycleEvent
	text      string
	hook      AgentEvent
}

// recorder logs every handler call and checks they never overlap.
type recorder struct {
	mu      sync.Mutex
	entries []logEntry
	inside  atomic.Int32
	overlap atomic.Bool
}

func (r *recorder) add(e logEntry) {
	if r.inside.Add(1) > 1 {
		r.overlap.Store(true)
	}
	defer r.inside.Add(-1)
	r.mu.Lock()
	r.entries = append(r.entries, e)
	r.mu.Unlock()
}

func (r *recorder) attach(t testing.TB, s *Session) {
	t.Helper()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.On("content", func(ev OutputEvent) { r.add(logEntry{ch: ChannelContent, content: ev}) }))
	must(s.On("lifecycle", func(ev LifecycleEvent) { r.add(logEntry{ch: ChannelLifecycle, lifecycle: ev}) }))
	must(s.On("stdout", func(x string) { r.add(logEntry{ch: ChannelStdout, text: x}) }))
	must(s.On("stderr", func(x string) { r.add(logEntry{ch: ChannelStderr, text: x}) }))
}

func (r *recorder) onEvent(ev AgentEvent) { r.add(logEntry{ch: ChannelHook, hook: ev}) }

func (r *recorder) snapshot() []logEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]logEntry(nil), r.entries...)
}

func (r *recorder) count(ch Channel) int {
	n := 0
	for _, e := range r.snapshot() {
		if e.ch == ch {
			n++
		}
	}
	return n
}

func (r *recorder) reasons() []LifecycleReason {
	var out []LifecycleReason
	for _, e := range r.snapshot() {
		if e.ch == ChannelLifecycle {
			out = append(out, e.lifecycle.Reason)
		}
	}
	return out
}

func (r *recorder) text(ch Channel) string {
	var b strings.Builder
	for _, e := range r.snapshot() {
		if e.ch == ch {
			b.WriteString(e.text)
		}
	}
	return b.String()
}

// oneTerminalLast: exactly one terminal lifecycle item, and no item after it.
func (r *recorder) oneTerminalLast(t *testing.T) {
	t.Helper()
	entries := r.snapshot()
	terminals, lastItem, terminalAt := 0, -1, -1
	for i, e := range entries {
		if e.ch == ChannelHook {
			continue
		}
		lastItem = i
		if e.ch == ChannelLifecycle && e.lifecycle.Reason.IsTerminal() {
			terminals++
			terminalAt = i
		}
	}
	if terminals != 1 || terminalAt != lastItem {
		t.Fatalf("%d terminal(s); terminal at %d, last item at %d", terminals, terminalAt, lastItem)
	}
	if r.overlap.Load() {
		t.Fatal("handlers were called concurrently")
	}
}

func TestRunDeliversInSequenceOrderWithOneTerminal(t *testing.T) {
	s := fakeSession(t, "claude", "s2-bash", nil)
	var rec recorder
	rec.attach(t, s)
	res, err := s.Run(context.Background(), RunOptions{Prompt: "List the files", OnEvent: rec.onEvent})
	if err != nil {
		t.Fatal(err)
	}
	if res.State != RunCompleted || res.Err() != nil || res.FinalText == "" || res.SessionID != "66c0abf3-0bc5-46a7-8e73-4fef192280ea" {
		t.Fatalf("%+v", res)
	}
	if len(res.HandlerErrors) != 0 {
		t.Fatal(res.HandlerErrors)
	}
	// The session's first run announces the environment (sandbox_ready) before run_start.
	if got := rec.reasons(); !reflect.DeepEqual(got, []LifecycleReason{ReasonSandboxReady, ReasonRunStart, ReasonRunComplete}) {
		t.Fatal(got)
	}
	rec.oneTerminalLast(t)
	entries := rec.snapshot()
	// Sequence order: with a handler on every channel the n-th item call is sequence n-1 (no
	// merging: the reader keeps up); every hook refers to an item already delivered; every
	// content event follows its stdout line.
	items := 0
	var prev Channel
	for _, e := range entries {
		if e.ch == ChannelHook {
			if items == 0 || e.hook.Sequence > uint64(items-1) {
				t.Fatalf("hook %s (sequence %d) after %d items", e.hook.Type, e.hook.Sequence, items)
			}
			continue
		}
		if e.ch == ChannelContent && prev != ChannelStdout && prev != ChannelContent {
			t.Fatalf("content after %s", prev)
		}
		prev = e.ch
		items++
	}
	if uint64(items-1) != res.LastSequence {
		t.Fatalf("%d items, last sequence %d", items, res.LastSequence)
	}
	want := jsonLines(t, filepath.Join(goldenDir, "claude", "s2-bash.expected.jsonl"))
	var got [][]byte
	for _, e := range entries {
		if e.ch == ChannelContent {
			got = append(got, mustMarshal(t, e.content))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d content events, expected %d", len(got), len(want))
	}
	for i := range got {
		if !jsonEqual(got[i], want[i]) {
			t.Fatalf("event %d:\n got      %s\n expected %s", i, got[i], want[i])
		}
	}
	input, _ := os.ReadFile(filepath.Join(goldenDir, "claude", "s2-bash.input.jsonl"))
	stderr, _ := os.ReadFile(filepath.Join(goldenDir, "claude", "s2-bash.stderr.txt"))
	if rec.text(ChannelStdout) != string(input) || rec.text(ChannelStderr) != string(stderr) {
		t.Fatal("stdout/stderr differ from the trace")
	}
	// The hooks: the golden hook view (run id, timestamps and sequences differ in a live run).
	goldenHooks := jsonLines(t, filepath.Join(goldenDir, "claude", "s2-bash.hooks.jsonl"))
	var hooks []AgentEvent
	for _, e := range entries {
		if e.ch == ChannelHook {
			hooks = append(hooks, e.hook)
		}
	}
	if len(hooks) != len(goldenHooks) {
		t.Fatalf("%d hooks, expected %d", len(hooks), len(goldenHooks))
	}
	for i, line := range goldenHooks {
		w := hookFromLine(t, line)
		h := hooks[i]
		if h.Type != w.Type || h.Status != w.Status || h.AgentID != w.AgentID || !reflect.DeepEqual(h.Details, w.Details) || h.RunID != res.RunID {
			t.Fatalf("hook %d:\n got      %#v\n expected %#v", i, h, w)
		}
	}
}

func TestRunContextCancelCancelsTheRun(t *testing.T) {
	s := fakeSession(t, "claude", "s1-text", map[string]string{"AGENTSTREAM_FAKE_HANG": "1"})
	var rec recorder
	rec.attach(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	res, err := s.Run(ctx, RunOptions{Prompt: "x", OnEvent: rec.onEvent, KillGrace: 300 * time.Millisecond})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if res == nil || res.State != RunCancelled || !strings.Contains(res.CancelReason, "context canceled") {
		t.Fatalf("%+v", res)
	}
	if got := rec.reasons(); !reflect.DeepEqual(got, []LifecycleReason{ReasonSandboxReady, ReasonRunStart, ReasonRunInterrupted}) {
		t.Fatal(got)
	}
	rec.oneTerminalLast(t)
	entries := rec.snapshot()
	if last := entries[len(entries)-1]; last.ch != ChannelHook || last.hook.Type != "run.cancelled" {
		t.Fatalf("%+v", last)
	}
	// An already cancelled context starts nothing.
	if _, err := s.Run(ctx, RunOptions{Prompt: "x"}); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

func TestRunHandlerPanicIsReportedNotCrashing(t *testing.T) {
	s := fakeSession(t, "claude", "s2-bash", nil)
	var contents, hooks atomic.Int32
	if err := s.On("content", func(OutputEvent) { panic("handler bug") }); err != nil {
		t.Fatal(err)
	}
	if err := s.On("content", func(OutputEvent) { contents.Add(1) }); err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background(), RunOptions{Prompt: "x", OnEvent: func(ev AgentEvent) {
		hooks.Add(1)
		if ev.Type == "tool.started" {
			panic(errors.New("hook bug"))
		}
	}})
	if err != nil || res.State != RunCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	want := len(jsonLines(t, filepath.Join(goldenDir, "claude", "s2-bash.expected.jsonl")))
	if int(contents.Load()) != want || hooks.Load() < 5 {
		t.Fatalf("the other handlers went on: %d contents (want %d), %d hooks", contents.Load(), want, hooks.Load())
	}
	if len(res.HandlerErrors) != 2 {
		t.Fatalf("%v", res.HandlerErrors)
	}
	var hf *HandlerFailure
	if !errors.As(res.HandlerErrors[0], &hf) || hf.Channel != ChannelContent || hf.Cause != "handler bug" || hf.Repeats != want-1 || !bytes.Contains(hf.Item, []byte("sessionUpdate")) {
		t.Fatalf("%#v", res.HandlerErrors[0])
	}
	if !errors.As(res.HandlerErrors[1], &hf) || hf.Channel != ChannelHook || !bytes.Contains(hf.Item, []byte("tool.started")) {
		t.Fatalf("%#v", res.HandlerErrors[1])
	}
	if s.HandlerError() != nil {
		t.Fatal("the result took the failures")
	}
}

func TestRunHarnessKilledMidLineFails(t *testing.T) {
	s := fakeSession(t, "gemini", "s1-text", map[string]string{"AGENTSTREAM_FAKE_DIE_MID_LINE": "1"})
	var rec recorder
	rec.attach(t, s)
	res, err := s.Run(context.Background(), RunOptions{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if res.State != RunFailed || res.Signal == nil || *res.Signal != 9 || res.FinalText != "" || res.Err() == nil {
		t.Fatalf("%+v", res)
	}
	rec.oneTerminalLast(t)
	if got := rec.reasons(); !reflect.DeepEqual(got, []LifecycleReason{ReasonSandboxReady, ReasonRunStart, ReasonRunFailed}) {
		t.Fatal(got)
	}
	var last string
	for _, e := range rec.snapshot() {
		if e.ch == ChannelStdout {
			last = e.text
		}
	}
	if !strings.HasPrefix(last, `{"type":"result"`) {
		t.Fatalf("the partial last line is delivered before the terminal: %q", last)
	}
}

// decisions.md §1: exit 0 without the harness's end-of-run record is a failed run that keeps the
// answer so far.
func TestRunWithoutTheFinalResultFailsAndKeepsTheAnswer(t *testing.T) {
	for _, agent := range []string{"claude", "codex", "gemini", "qwen", "opencode", "droid"} {
		s := fakeSession(t, agent, "e-no-final-result", map[string]string{"AGENTSTREAM_FAKE_EXIT": "0"})
		var rec recorder
		rec.attach(t, s)
		res, err := s.Run(context.Background(), RunOptions{Prompt: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if res.State != RunFailed || res.ExitCode == nil || *res.ExitCode != 0 || res.FinalText == "" ||
			!strings.Contains(res.Error, "stopped without its final result") {
			t.Fatalf("%s: %+v", agent, res)
		}
		rec.oneTerminalLast(t)
		if got := rec.reasons(); got[len(got)-1] != ReasonRunFailed {
			t.Fatalf("%s: %v", agent, got)
		}
	}
}

func TestRunTimeoutStopsTheRun(t *testing.T) {
	s := fakeSession(t, "claude", "s1-text", map[string]string{"AGENTSTREAM_FAKE_HANG": "1"})
	var hooks []AgentEvent
	var mu sync.Mutex
	res, err := s.Run(context.Background(), RunOptions{Prompt: "x", Timeout: 400 * time.Millisecond, KillGrace: 200 * time.Millisecond,
		OnEvent: func(ev AgentEvent) { mu.Lock(); hooks = append(hooks, ev); mu.Unlock() }})
	if err != nil || res.State != RunCancelled {
		t.Fatalf("%+v %v", res, err)
	}
	if hooks[len(hooks)-1].Type != "run.stopped" {
		t.Fatal(hooks[len(hooks)-1])
	}
}

func TestPauseAndResume(t *testing.T) {
	s := fakeSession(t, "gemini", "s2-bash", map[string]string{"AGENTSTREAM_FAKE_DELAY_MS": "60"})
	if err := s.Pause(); !errors.Is(err, ErrNotRunning) {
		t.Fatal(err)
	}
	var rec recorder
	rec.attach(t, s)
	done := make(chan *RunResult)
	go func() {
		res, err := s.Run(context.Background(), RunOptions{Prompt: "x"})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	time.Sleep(150 * time.Millisecond)
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	before := rec.count(ChannelStdout)
	time.Sleep(400 * time.Millisecond)
	if during := rec.count(ChannelStdout); during != before || before >= 12 {
		t.Fatalf("output while paused: %d then %d", before, during)
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res == nil || res.State != RunCompleted || rec.count(ChannelStdout) != 12 {
		t.Fatalf("%+v", res)
	}
	want := []LifecycleReason{ReasonSandboxReady, ReasonRunStart, ReasonSandboxPause, ReasonSandboxResume, ReasonRunComplete}
	if got := rec.reasons(); !reflect.DeepEqual(got, want) {
		t.Fatal(got)
	}
}

func TestInterruptKillAndOneRunAtATime(t *testing.T) {
	s := fakeSession(t, "claude", "s1-text", map[string]string{"AGENTSTREAM_FAKE_HANG": "1"})
	st, err := s.Stream(context.Background(), RunOptions{Prompt: "x", KillGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(context.Background(), RunOptions{Prompt: "y"}); !errors.Is(err, ErrAlreadyRunning) {
		t.Fatal(err)
	}
	if err := s.Interrupt("enough"); err != nil {
		t.Fatal(err)
	}
	res, err := st.Result()
	if err != nil || res.State != RunCancelled || !strings.Contains(res.CancelReason, "enough") {
		t.Fatalf("%+v %v", res, err)
	}
	go func() { time.Sleep(200 * time.Millisecond); _ = s.Kill() }()
	res, err = s.Run(context.Background(), RunOptions{Prompt: "x"})
	if err != nil || res.State != RunCancelled || res.Signal == nil || *res.Signal != 9 {
		t.Fatalf("%+v %v", res, err)
	}

	missing, err := New(Config{Type: "codex", Bin: "/nonexistent/codex-not-installed"})
	if err != nil {
		t.Fatal(err)
	}
	defer missing.Close()
	if _, err := missing.Run(context.Background(), RunOptions{Prompt: "x"}); !errors.Is(err, ErrHarnessNotFound) || !strings.Contains(err.Error(), "not found") {
		t.Fatal(err)
	}
}

func TestExecuteCommand(t *testing.T) {
	s, err := New(Config{Type: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var rec recorder
	rec.attach(t, s)
	res, err := s.ExecuteCommand(context.Background(), CommandOptions{
		Command: []string{"sh", "-c", `echo one; echo "$GREETING" >&2; printf two; exit 4`},
		Env:     map[string]string{"GREETING": "oops"},
		OnEvent: rec.onEvent,
	})
	if err != nil || res.State != RunFailed || res.ExitCode == nil || *res.ExitCode != 4 {
		t.Fatalf("%+v %v", res, err)
	}
	if got := rec.reasons(); !reflect.DeepEqual(got, []LifecycleReason{ReasonSandboxReady, ReasonCommandStart, ReasonCommandFailed}) {
		t.Fatal(got)
	}
	if rec.text(ChannelStdout) != "one\ntwo\n" || rec.text(ChannelStderr) != "oops\n" || rec.count(ChannelContent) != 0 {
		t.Fatalf("%q %q", rec.text(ChannelStdout), rec.text(ChannelStderr))
	}
	rec.oneTerminalLast(t)
	if _, err := s.ExecuteCommand(context.Background(), CommandOptions{}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatal(err)
	}
}

// drain reads a stream to its end, checking the sequence.
func drain(t *testing.T, st *Stream) (items []Envelope, hooks []AgentEvent) {
	t.Helper()
	return drainFrom(t, st, 0)
}

// drainFrom reads the rest of a stream whose next item has sequence next.
func drainFrom(t *testing.T, st *Stream, next uint64) (items []Envelope, hooks []AgentEvent) {
	t.Helper()
	for d := range st.Deliveries() {
		switch {
		case d.Item != nil:
			if d.Item.Sequence != next || d.Item.RunID != st.RunID() {
				t.Fatalf("sequence %d, expected %d", d.Item.Sequence, next)
			}
			next++
			if d.Item.Coalesced != nil {
				next += *d.Item.Coalesced
			}
			items = append(items, *d.Item)
		case d.Hook != nil:
			if d.Hook.Sequence >= next {
				t.Fatalf("hook %s refers to %d before it was delivered", d.Hook.Type, d.Hook.Sequence)
			}
			hooks = append(hooks, *d.Hook)
		default:
			t.Fatal("an empty delivery")
		}
	}
	return items, hooks
}

func TestStreamPullsEverythingInOrder(t *testing.T) {
	s := fakeSession(t, "claude", "s2-bash", nil)
	var handlerCalls atomic.Int32
	_ = s.On("content", func(OutputEvent) { handlerCalls.Add(1) })
	st, err := s.Stream(context.Background(), RunOptions{Prompt: "x", Hooks: true})
	if err != nil {
		t.Fatal(err)
	}
	items, hooks := drain(t, st)
	res, err := st.Result()
	if err != nil || res.State != RunCompleted || res.LastSequence != items[len(items)-1].Sequence {
		t.Fatalf("%+v %v", res, err)
	}
	terminals := 0
	for _, it := range items {
		if it.Channel == ChannelLifecycle {
			if l, _ := it.Lifecycle(); l.Reason.IsTerminal() {
				terminals++
			}
		}
	}
	if last, _ := items[len(items)-1].Lifecycle(); terminals != 1 || last.Reason != ReasonRunComplete {
		t.Fatalf("%d terminals, last %v", terminals, last.Reason)
	}
	if hooks[0].Type != "run.started" || hooks[len(hooks)-1].Type != "run.completed" {
		t.Fatalf("%s … %s", hooks[0].Type, hooks[len(hooks)-1].Type)
	}
	if handlerCalls.Load() != 0 {
		t.Fatal("Stream called an On handler")
	}
	if err := st.Close(); err != nil { // after the end: nothing to do
		t.Fatal(err)
	}
}

func TestStreamContextCancelAndCloseCancelTheRun(t *testing.T) {
	for _, byClose := range []bool{false, true} {
		s := fakeSession(t, "claude", "s1-text", map[string]string{"AGENTSTREAM_FAKE_HANG": "1"})
		ctx, cancel := context.WithCancel(context.Background())
		st, err := s.Stream(ctx, RunOptions{Prompt: "x", KillGrace: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		<-st.Deliveries() // sandbox_ready
		if byClose {
			st.Close()
		} else {
			cancel()
		}
		for range st.Deliveries() {
		}
		res, err := st.Result()
		cancel()
		if res == nil || res.State != RunCancelled {
			t.Fatalf("%+v %v", res, err)
		}
		if byClose && (err != nil || !strings.Contains(res.CancelReason, "reader left")) {
			t.Fatalf("%v %q", err, res.CancelReason)
		}
		if !byClose && (!errors.Is(err, context.Canceled) || !strings.Contains(res.CancelReason, "context canceled")) {
			t.Fatalf("%v %q", err, res.CancelReason)
		}
	}
}

func TestStreamBackpressureCoalescesWithoutLosingText(t *testing.T) {
	s := fakeSession(t, "claude", "s1-text", map[string]string{"AGENTSTREAM_FAKE_FLOOD": "20000"})
	st, err := s.Stream(context.Background(), RunOptions{Prompt: "x", Backpressure: Backpressure{HighWater: 16}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // a slow reader: the flood piles up in the core buffer
	items, _ := drain(t, st)
	res, err := st.Result()
	if err != nil || res.State != RunCompleted || res.Pressure.Coalesced == 0 {
		t.Fatalf("%+v %v", res, err)
	}
	var out strings.Builder
	for _, it := range items {
		if it.Channel == ChannelStdout {
			x, _ := it.Text()
			out.WriteString(x)
		}
	}
	input, _ := os.ReadFile(filepath.Join(goldenDir, "claude", "s1-text.input.jsonl"))
	var want strings.Builder
	want.Write(input)
	for i := 0; i < 20000; i++ {
		want.WriteString(`{"type":"flood","n":` + strconv.Itoa(i) + "}\n")
	}
	if out.String() != want.String() {
		t.Fatalf("stdout differs: %d bytes, expected %d", out.Len(), want.Len())
	}
}

func TestStreamCommandAndSessionClosedDuringARun(t *testing.T) {
	s, err := New(Config{Type: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := s.StreamCommand(context.Background(), CommandOptions{Command: []string{"sh", "-c", "echo hi; sleep 30"}, KillGrace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	<-st.Deliveries() // sandbox_ready
	s.Close()         // kills the run; the stream still ends with its terminal
	items, _ := drainFrom(t, st, 1)
	res, err := st.Result()
	if err != nil || res.State != RunCancelled {
		t.Fatalf("%+v %v", res, err)
	}
	last, _ := items[len(items)-1].Lifecycle()
	if last.Reason != ReasonCommandInterrupted {
		t.Fatal(last.Reason)
	}
	if _, err := s.Run(context.Background(), RunOptions{Prompt: "x"}); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
	if err := s.Pause(); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
}
