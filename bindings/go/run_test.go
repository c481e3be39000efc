package agentstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
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

// fakeConfig is a Config whose harness is the fake one replaying tests/golden/<agent>/<case>.
func fakeConfig(t testing.TB, agent, traceCase string, env map[string]string) Config {
	t.Helper()
	trace, err := filepath.Abs(filepath.Join(goldenDir, agent, traceCase))
	if err != nil {
		t.Fatal(err)
	}
	e := map[string]string{"AGENTSTREAM_FAKE_TRACE": trace}
	for k, v := range env {
		e[k] = v
	}
	return Config{Type: agent, Bin: fakeHarness(t), Env: e}
}

func fakeClient(t testing.TB, agent, traceCase string, env map[string]string, opts ...Option) *Client {
	t.Helper()
	c, err := New(fakeConfig(t, agent, traceCase, env), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// commandClient is a client for command runs (a command needs no harness), closed when the
// test ends.
func commandClient(t testing.TB) *Client {
	t.Helper()
	c, err := New(Config{Type: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// logEntry is one handler call, in call order.
type logEntry struct {
	ch        Channel // ChannelHook for OnEvent
	content   OutputEvent
	lifecycle LifecycleEvent
	text      string
	hook      AgentEvent
}

// ChannelHook names OnEvent's calls in a recorder.
const ChannelHook Channel = "on_event"

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

func (r *recorder) attach(t testing.TB, c *Client) {
	t.Helper()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.On("content", func(ev OutputEvent) { r.add(logEntry{ch: ChannelContent, content: ev}) }))
	must(c.On("lifecycle", func(ev LifecycleEvent) { r.add(logEntry{ch: ChannelLifecycle, lifecycle: ev}) }))
	must(c.On("stdout", func(x string) { r.add(logEntry{ch: ChannelStdout, text: x}) }))
	must(c.On("stderr", func(x string) { r.add(logEntry{ch: ChannelStderr, text: x}) }))
}

func (r *recorder) onEvent(ev AgentEvent) error {
	r.add(logEntry{ch: ChannelHook, hook: ev})
	return nil
}

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

func (r *recorder) hooks() []AgentEvent {
	var out []AgentEvent
	for _, e := range r.snapshot() {
		if e.ch == ChannelHook {
			out = append(out, e.hook)
		}
	}
	return out
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
	c := fakeClient(t, "claude", "s2-bash", nil)
	var rec recorder
	rec.attach(t, c)
	res, err := c.Run(context.Background(), RunOptions{Prompt: "List the files", OnEvent: rec.onEvent})
	if err != nil {
		t.Fatal(err)
	}
	if res.State != RunCompleted || res.Err() != nil || res.FinalText == "" || res.SessionID != "66c0abf3-0bc5-46a7-8e73-4fef192280ea" {
		t.Fatalf("%+v", res)
	}
	if res.HandlerErrors != 0 || res.Duration() != time.Duration(res.DurationMS)*time.Millisecond {
		t.Fatal(res.HandlerErrors, res.Duration())
	}
	// The client's first run announces the environment (sandbox_ready) before run_start.
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
	hooks := rec.hooks()
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

// A Client nobody references any more while its run goes on (created in a helper, then only
// the Run kept) is not closed by the garbage collector before the run ends: its finalizer used
// to kill the run and drop its handlers.
func TestAForgottenClientKeepsItsRunGoing(t *testing.T) {
	var lines atomic.Int64
	start := func() *Run {
		c, err := New(fakeConfig(t, "claude", "s2-bash", map[string]string{"AGENTSTREAM_FAKE_DELAY_MS": "20"}))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.On("stdout", func(string) { lines.Add(1) }); err != nil {
			t.Fatal(err)
		}
		r, err := c.Start(context.Background(), RunOptions{Prompt: "x"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := start()
	for done := false; !done; {
		runtime.GC() // finalizers of unreachable objects are queued here, and run soon after
		select {
		case <-r.Done():
			done = true
		case <-time.After(10 * time.Millisecond):
		}
	}
	res, err := r.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	input, _ := os.ReadFile(filepath.Join(goldenDir, "claude", "s2-bash.input.jsonl"))
	want := int64(bytes.Count(input, []byte("\n")))
	if res.State != RunCompleted || lines.Load() != want {
		t.Fatalf("state %s (%s), %d of %d stdout lines", res.State, res.CancelReason, lines.Load(), want)
	}
}

// A handler that ends its goroutine (runtime.Goexit, as t.FailNow does) cancels the run, and
// Wait returns with an error that says so instead of panicking.
func TestAHandlerThatEndsTheDeliveringGoroutineLeavesTheRunWaitable(t *testing.T) {
	c := fakeClient(t, "claude", "s2-bash", map[string]string{"AGENTSTREAM_FAKE_DELAY_MS": "20"})
	var calls atomic.Int64
	if err := c.On("stdout", func(string) { calls.Add(1); runtime.Goexit() }); err != nil {
		t.Fatal(err)
	}
	r, err := c.Start(context.Background(), RunOptions{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := r.Wait(ctx)
	if err == nil || !strings.Contains(err.Error(), "Goexit") || calls.Load() != 1 {
		t.Fatalf("err %v, %d calls", err, calls.Load())
	}
	if res == nil || res.State != RunCancelled {
		t.Fatalf("the run's result: %+v", res)
	}
	// The client is free for the next run.
	if err := c.Off("stdout"); err != nil {
		t.Fatal(err)
	}
	next, err := c.Start(context.Background(), RunOptions{Prompt: "y"})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := next.Wait(ctx); err != nil || res.State != RunCompleted {
		t.Fatalf("%v %+v", err, res)
	}
}

// Timestamps read as time.Time: hooks and lifecycle events carry the core's UTC clock.
func TestTimestampsAreTimes(t *testing.T) {
	c := fakeClient(t, "claude", "s1-text", nil)
	var rec recorder
	rec.attach(t, c)
	before := time.Now().Add(-time.Second)
	if _, err := c.Run(context.Background(), RunOptions{Prompt: "x", OnEvent: rec.onEvent}); err != nil {
		t.Fatal(err)
	}
	after := time.Now().Add(time.Second)
	for _, e := range rec.snapshot() {
		var at time.Time
		switch e.ch {
		case ChannelHook:
			at = e.hook.Time()
		case ChannelLifecycle:
			at = e.lifecycle.Time()
		default:
			continue
		}
		if at.Before(before) || at.After(after) || at.Location() != time.UTC {
			t.Fatalf("%v is not the time of the run", at)
		}
	}
	var none OutputEvent
	if !none.Time().IsZero() || !(&AgentEvent{Timestamp: "yesterday"}).Time().IsZero() {
		t.Fatal("an absent or unreadable timestamp is the zero Time")
	}
}

func TestRunContextCancelCancelsTheRun(t *testing.T) {
	c := fakeClient(t, "claude", "s1-text", map[string]string{"AGENTSTREAM_FAKE_HANG": "1"})
	var rec recorder
	rec.attach(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	res, err := c.Run(ctx, RunOptions{Prompt: "x", OnEvent: rec.onEvent, KillGrace: 300 * time.Millisecond})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if res == nil || res.State != RunCancelled || !strings.Contains(res.CancelReason, "context canceled") || res.CancelKind != CancelKindCaller {
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
	if _, err := c.Run(ctx, RunOptions{Prompt: "x"}); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// A background run returns at once; its result is awaited later; Wait's own context cancels
// it when it runs out first.
func TestStartInTheBackgroundAndWait(t *testing.T) {
	c := fakeClient(t, "claude", "s2-bash", map[string]string{"AGENTSTREAM_FAKE_DELAY_MS": "20"})
	var rec recorder
	rec.attach(t, c)
	run, err := c.Start(context.Background(), RunOptions{Prompt: "x", Background: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Result(); !errors.Is(err, ErrStillRunning) {
		t.Fatal(err)
	}
	if st, err := c.Status(); err != nil || st.ActiveRunID != run.ID() || !st.HasRun || st.AgentState != AgentStateRunning {
		t.Fatalf("%+v %v", st, err)
	}
	if p, err := run.Pressure(); err != nil || p.Stalled {
		t.Fatalf("%+v %v", p, err)
	}
	<-run.Done()
	res, err := run.Wait(context.Background())
	if err != nil || res.State != RunCompleted || res.RunID != run.ID() {
		t.Fatalf("%+v %v", res, err)
	}
	if r2, err := run.Result(); err != nil || r2 != res {
		t.Fatal(err)
	}
	if got := rec.reasons(); got[len(got)-1] != ReasonRunBackgroundComplete {
		t.Fatal(got)
	}
	if p, err := run.Pressure(); err != nil || p != res.Pressure {
		t.Fatal(p, err)
	}
	run.Cancel("after the end: nothing") // no effect, no crash

	slow := fakeClient(t, "claude", "s1-text", map[string]string{"AGENTSTREAM_FAKE_HANG": "1"})
	run, err = slow.Start(context.Background(), RunOptions{Prompt: "x", KillGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err = run.Wait(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || res == nil || res.State != RunCancelled {
		t.Fatalf("%+v %v", res, err)
	}
}

// A handler that returns an error or panics is reported once per handler (with the panic's
// stack) and every failure is counted; the other handlers and the run go on.
func TestHandlerFailuresAreReportedOnceAndCounted(t *testing.T) {
	var mu sync.Mutex
	var reports []*HandlerError
	c := fakeClient(t, "claude", "s2-bash", nil, OnHandlerError(func(e *HandlerError) {
		mu.Lock()
		reports = append(reports, e)
		mu.Unlock()
	}))
	var contents, hooks atomic.Int32
	if err := c.On("content", func(OutputEvent) { panic("handler bug") }); err != nil {
		t.Fatal(err)
	}
	if err := c.On("content", func(OutputEvent) error { return errors.New("handler said no") }); err != nil {
		t.Fatal(err)
	}
	if err := c.On("content", func(OutputEvent) { contents.Add(1) }); err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(context.Background(), RunOptions{Prompt: "x", OnEvent: func(ev AgentEvent) error {
		hooks.Add(1)
		if ev.Type == "tool.started" {
			panic(errors.New("hook bug"))
		}
		return nil
	}})
	if err != nil || res.State != RunCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	want := len(jsonLines(t, filepath.Join(goldenDir, "claude", "s2-bash.expected.jsonl")))
	if int(contents.Load()) != want || hooks.Load() < 5 {
		t.Fatalf("the other handlers went on: %d contents (want %d), %d hooks", contents.Load(), want, hooks.Load())
	}
	if res.HandlerErrors != uint64(2*want+1) {
		t.Fatalf("%d handler errors counted, expected %d", res.HandlerErrors, 2*want+1)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reports) != 3 {
		t.Fatalf("%d reports: %v", len(reports), reports)
	}
	panicked, returned, hook := reports[0], reports[1], reports[2]
	if panicked.Channel != "content" || panicked.Panic != "handler bug" || !bytes.Contains(panicked.Stack, []byte("TestHandlerFailuresAreReportedOnceAndCounted")) ||
		panicked.RunID != res.RunID || !strings.Contains(panicked.Error(), "panicked") {
		t.Fatalf("%#v", panicked)
	}
	if returned.Err == nil || returned.Err.Error() != "handler said no" || returned.Stack != nil || returned.Sequence != panicked.Sequence {
		t.Fatalf("%#v", returned)
	}
	if hook.Channel != "on_event" || !strings.Contains(hook.Error(), "hook bug") || errors.Unwrap(hook) == nil {
		t.Fatalf("%#v", hook)
	}
}

// Without a hook, a failure goes to the log/slog default logger, with its stack.
func TestHandlerFailuresGoToSlogByDefault(t *testing.T) {
	var buf bytes.Buffer
	previous := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(previous)
	c := fakeClient(t, "claude", "s1-text", nil)
	if err := c.On("lifecycle", func(LifecycleEvent) { panic("lifecycle bug") }); err != nil {
		t.Fatal(err)
	}
	res, err := c.Run(context.Background(), RunOptions{Prompt: "x"})
	if err != nil || res.HandlerErrors != 3 { // sandbox_ready, run_start, run_complete
		t.Fatalf("%+v %v", res, err)
	}
	log := buf.String()
	if strings.Count(log, "agentstream: handler failed") != 1 || !strings.Contains(log, "lifecycle bug") || !strings.Contains(log, "goroutine") {
		t.Fatal(log)
	}
}

// A handler added during a run gets the rest of it; Off stops a handler during a run.
func TestHandlersChangeDuringARun(t *testing.T) {
	c := fakeClient(t, "gemini", "s2-bash", map[string]string{"AGENTSTREAM_FAKE_DELAY_MS": "40"}) // 12 stdout lines
	var contents, lines, afterOff atomic.Int32
	var off atomic.Bool
	if err := c.On("content", func(OutputEvent) {
		contents.Add(1)
		if off.Load() {
			afterOff.Add(1)
		}
	}); err != nil {
		t.Fatal(err)
	}
	run, err := c.Start(context.Background(), RunOptions{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	for contents.Load() < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	if err := c.On("stdout", func(string) { lines.Add(1) }); err != nil {
		t.Fatal(err)
	}
	for lines.Load() < 3 {
		time.Sleep(5 * time.Millisecond)
	}
	if err := c.Off("content"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // a call already started may finish
	off.Store(true)
	res, err := run.Wait(context.Background())
	if err != nil || res.State != RunCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	if n := lines.Load(); n < 3 || n >= 12 {
		t.Fatalf("%d stdout lines: expected the rest of the run", n)
	}
	if afterOff.Load() != 0 {
		t.Fatal("a removed handler was called")
	}
}

func TestRunHarnessKilledMidLineFails(t *testing.T) {
	c := fakeClient(t, "gemini", "s1-text", map[string]string{"AGENTSTREAM_FAKE_DIE_MID_LINE": "1"})
	var rec recorder
	rec.attach(t, c)
	res, err := c.Run(context.Background(), RunOptions{Prompt: "x"})
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
		c := fakeClient(t, agent, "e-no-final-result", map[string]string{"AGENTSTREAM_FAKE_EXIT": "0"})
		var rec recorder
		rec.attach(t, c)
		res, err := c.Run(context.Background(), RunOptions{Prompt: "x"})
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
	c := fakeClient(t, "claude", "s1-text", map[string]string{"AGENTSTREAM_FAKE_HANG": "1"})
	var rec recorder
	res, err := c.Run(context.Background(), RunOptions{Prompt: "x", Timeout: 400 * time.Millisecond, KillGrace: 200 * time.Millisecond,
		OnEvent: rec.onEvent})
	if err != nil || res.State != RunCancelled || res.CancelKind != CancelKindTimeout {
		t.Fatalf("%+v %v", res, err)
	}
	if hooks := rec.hooks(); hooks[len(hooks)-1].Type != "run.stopped" {
		t.Fatal(hooks[len(hooks)-1])
	}
}

// Options the wire form cannot carry are errors naming the field; the rest is validated by the
// core, whose messages spell the fields as Go does.
func TestBadRunOptionsNameTheField(t *testing.T) {
	c := fakeClient(t, "claude", "s1-text", nil)
	for _, bad := range []struct {
		opts RunOptions
		want string
	}{
		{RunOptions{Prompt: "x", Timeout: -time.Second}, "Timeout must not be negative"},
		{RunOptions{Prompt: "x", KillGrace: -1}, "KillGrace must not be negative"},
		{RunOptions{Prompt: "x", Limits: Limits{HighWater: -1}}, "Limits.HighWater must not be negative"},
		{RunOptions{Prompt: "x", Limits: Limits{Stall: -time.Millisecond}}, "Limits.Stall must not be negative"},
		{RunOptions{}, "Prompt is required (or Command for a command run)"},
		{RunOptions{Prompt: "x", Command: []string{"ls"}}, "give either Prompt (a harness run) or Command (a command run), not both"},
		{RunOptions{Prompt: "x", Env: map[string]string{"A=B": "1"}}, "Env has an invalid variable name"},
		{RunOptions{Prompt: "x", Resume: "-x"}, "Resume must not start with '-'"},
		{RunOptions{Prompt: "x", Model: "m\x00"}, "Model must not contain a NUL"},
		{RunOptions{Command: []string{"ls"}, Resume: "s"}, "Resume applies to harness runs only"},
	} {
		_, err := c.Run(context.Background(), bad.opts)
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), bad.want) {
			t.Fatalf("%+v: %v", bad.opts, err)
		}
	}
	// 1 ns is a whole millisecond, not "no limit".
	res, err := c.Run(context.Background(), RunOptions{Prompt: "x", Timeout: time.Nanosecond, KillGrace: time.Millisecond})
	if err != nil || res.State == RunFailed {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestPauseAndResume(t *testing.T) {
	c := fakeClient(t, "gemini", "s2-bash", map[string]string{"AGENTSTREAM_FAKE_DELAY_MS": "60"})
	if err := c.Pause(); !errors.Is(err, ErrNotRunning) {
		t.Fatal(err)
	}
	var rec recorder
	rec.attach(t, c)
	run, err := c.Start(context.Background(), RunOptions{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	if err := c.Pause(); err != nil {
		t.Fatal(err)
	}
	if st, _ := c.Status(); st.Sandbox != SandboxStatePaused {
		t.Fatalf("%+v", st)
	}
	time.Sleep(150 * time.Millisecond)
	before := rec.count(ChannelStdout)
	time.Sleep(400 * time.Millisecond)
	if during := rec.count(ChannelStdout); during != before || before >= 12 {
		t.Fatalf("output while paused: %d then %d", before, during)
	}
	if err := c.Resume(); err != nil {
		t.Fatal(err)
	}
	res, err := run.Wait(context.Background())
	if err != nil || res.State != RunCompleted || rec.count(ChannelStdout) != 12 {
		t.Fatalf("%+v %v", res, err)
	}
	want := []LifecycleReason{ReasonSandboxReady, ReasonRunStart, ReasonSandboxPause, ReasonSandboxResume, ReasonRunComplete}
	if got := rec.reasons(); !reflect.DeepEqual(got, want) {
		t.Fatal(got)
	}
}

func TestInterruptKillAndOneRunAtATime(t *testing.T) {
	c := fakeClient(t, "claude", "s1-text", map[string]string{"AGENTSTREAM_FAKE_HANG": "1"})
	if c.Interrupt() || c.Kill() {
		t.Fatal("nothing runs: nothing to interrupt or kill")
	}
	run, err := c.Start(context.Background(), RunOptions{Prompt: "x", KillGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(context.Background(), RunOptions{Prompt: "y"}); !errors.Is(err, ErrAlreadyRunning) {
		t.Fatal(err)
	}
	if !c.Interrupt() {
		t.Fatal("the run was interrupted")
	}
	res, err := run.Wait(context.Background())
	if err != nil || res.State != RunCancelled || !strings.Contains(res.CancelReason, "interrupted") {
		t.Fatalf("%+v %v", res, err)
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		if !c.Kill() {
			t.Error("the run was killed")
		}
	}()
	res, err = c.Run(context.Background(), RunOptions{Prompt: "x"})
	if err != nil || res.State != RunCancelled || res.Signal == nil || *res.Signal != 9 {
		t.Fatalf("%+v %v", res, err)
	}
	if st, err := c.Status(); err != nil || st.LastStatus != RunCancelled || st.ActiveRunID != "" {
		t.Fatalf("%+v %v", st, err)
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

// Successive runs continue the harness conversation; Session and SetSession read and choose it.
func TestMultiTurnConversation(t *testing.T) {
	argv := filepath.Join(t.TempDir(), "argv.json")
	c := fakeClient(t, "claude", "s2-bash", map[string]string{"AGENTSTREAM_FAKE_ARGV_FILE": argv})
	// The arguments of the harness's last start, joined (claude takes --resume=<id>).
	lastArgv := func() string {
		var out []string
		data, _ := os.ReadFile(argv)
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatal(err)
		}
		return strings.ReplaceAll(strings.Join(out, " "), "--resume=", "--resume ")
	}
	if id, err := c.Session(); err != nil || id != "" {
		t.Fatal(id, err)
	}
	turn := func(prompt string, opts RunOptions) string {
		t.Helper()
		var rec recorder
		opts.Prompt, opts.OnEvent = prompt, rec.onEvent
		res, err := c.Run(context.Background(), opts)
		if err != nil || res.State != RunCompleted {
			t.Fatalf("%+v %v", res, err)
		}
		return rec.hooks()[0].Type
	}
	if first := turn("first", RunOptions{}); first != "run.started" {
		t.Fatal(first)
	}
	session, err := c.Session()
	if err != nil || session != "66c0abf3-0bc5-46a7-8e73-4fef192280ea" {
		t.Fatal(session, err)
	}
	if first := turn("second", RunOptions{}); first != "run.resumed" || !strings.Contains(lastArgv(), "--resume "+session) {
		t.Fatal(first, lastArgv())
	}
	if err := c.SetSession(""); err != nil {
		t.Fatal(err)
	}
	if first := turn("fresh", RunOptions{}); first != "run.started" || strings.Contains(lastArgv(), "--resume") {
		t.Fatal(first, lastArgv())
	}
	if first := turn("explicit", RunOptions{Resume: "explicit-session"}); first != "run.resumed" ||
		!strings.Contains(lastArgv(), "--resume explicit-session") {
		t.Fatal(first, lastArgv())
	}
	if err := c.SetSession("abc\x00def"); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "NUL") {
		t.Fatalf("a session id with a NUL (C would read \"abc\"): %v", err)
	}
	if err := c.Off("content\x00x"); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "NUL") {
		t.Fatalf("a channel name with a NUL (C would read \"content\"): %v", err)
	}
	if err := c.SetSession("-rf"); !errors.Is(err, ErrInvalidArgument) {
		t.Fatal(err)
	}
	st, err := c.Status()
	if err != nil || st.Agent != "claude" || !st.HasRun || st.SessionID != session || st.LastStatus != RunCompleted {
		t.Fatalf("%+v %v", st, err)
	}
}

func TestCommandRun(t *testing.T) {
	c := commandClient(t)
	var rec recorder
	rec.attach(t, c)
	res, err := c.Run(context.Background(), RunOptions{
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
	if _, err := c.Run(context.Background(), RunOptions{Command: []string{}}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatal(err)
	}
	// Cwd and Env are this run's only.
	dir := t.TempDir()
	var out recorder
	if err := c.Off("stdout"); err != nil {
		t.Fatal(err)
	}
	if err := c.On("stdout", func(x string) { out.add(logEntry{ch: ChannelStdout, text: x}) }); err != nil {
		t.Fatal(err)
	}
	sh := []string{"sh", "-c", `pwd; echo "[$GREETING]"`}
	if _, err := c.Run(context.Background(), RunOptions{Command: sh, Cwd: dir}); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if got := out.text(ChannelStdout); got != real+"\n[]\n" && got != dir+"\n[]\n" {
		t.Fatalf("%q", got)
	}
}

// A budget shared by two clients admits one run at a time; the permit goes with the run.
func TestBudgetLimitsConcurrentRuns(t *testing.T) {
	if _, err := NewBudget(1<<20, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Fatal(err)
	}
	b, err := NewBudget(1<<20, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	hang := map[string]string{"AGENTSTREAM_FAKE_HANG": "1"}
	c1, c2 := fakeClient(t, "claude", "s1-text", hang), fakeClient(t, "claude", "s1-text", hang)
	for _, c := range []*Client{c1, c2} {
		if err := c.SetBudget(b); err != nil {
			t.Fatal(err)
		}
	}
	run, err := c1.Start(context.Background(), RunOptions{Prompt: "x", KillGrace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := b.Active(); err != nil || n != 1 {
		t.Fatal(n, err)
	}
	if _, err := c2.Start(context.Background(), RunOptions{Prompt: "x"}); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "permits") {
		t.Fatal(err)
	}
	run.Cancel("done")
	if _, err := run.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, _ := b.Active(); n != 0 {
		t.Fatalf("%d permits still held", n)
	}
	if err := c1.SetBudget(nil); err != nil {
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
			if d.Item.Sequence != next || d.Item.RunID != st.ID() {
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
	c := fakeClient(t, "claude", "s2-bash", nil)
	var handlerCalls, onEvents atomic.Int32
	_ = c.On("content", func(OutputEvent) { handlerCalls.Add(1) })
	st, err := c.Stream(context.Background(), RunOptions{Prompt: "x", OnEvent: func(AgentEvent) error { onEvents.Add(1); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	items, hooks := drain(t, st)
	res, err := st.Wait(context.Background())
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
	if hooks[0].Type != "run.started" || hooks[len(hooks)-1].Type != "run.completed" || int(onEvents.Load()) != len(hooks) {
		t.Fatalf("%s … %s, %d OnEvent calls", hooks[0].Type, hooks[len(hooks)-1].Type, onEvents.Load())
	}
	if handlerCalls.Load() != 0 {
		t.Fatal("Stream called an On handler")
	}
	// The consumer-side sequence check accepts every item once.
	check, _ := NewSequenceCheck()
	defer check.Close()
	for i := range items {
		if ok, _ := check.Accept(&items[i]); !ok {
			t.Fatalf("item %d refused", i)
		}
	}
	if missing, _ := check.Missing(); missing != 0 {
		t.Fatal(missing)
	}
	if err := st.Close(); err != nil { // after the end: nothing to do
		t.Fatal(err)
	}
}

func TestStreamContextCancelAndCloseCancelTheRun(t *testing.T) {
	for _, byClose := range []bool{false, true} {
		c := fakeClient(t, "claude", "s1-text", map[string]string{"AGENTSTREAM_FAKE_HANG": "1"})
		ctx, cancel := context.WithCancel(context.Background())
		st, err := c.Stream(ctx, RunOptions{Prompt: "x", KillGrace: 200 * time.Millisecond})
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
		res, err := st.Wait(context.Background())
		cancel()
		if res == nil || res.State != RunCancelled {
			t.Fatalf("%+v %v", res, err)
		}
		if byClose && (err != nil || res.CancelKind != CancelKindReaderLeft) {
			t.Fatalf("%v %q", err, res.CancelReason)
		}
		if !byClose && (!errors.Is(err, context.Canceled) || !strings.Contains(res.CancelReason, "context canceled")) {
			t.Fatalf("%v %q", err, res.CancelReason)
		}
	}
}

// An ended run's Wait gives its own outcome: not the error of a ctx that is done as well (a
// select picked either at random), nor the Start context's when that context ended only after
// something else (here the run's timeout) had stopped the run.
func TestWaitOnAnEndedRunReportsTheRunsOwnOutcome(t *testing.T) {
	c := fakeClient(t, "claude", "s1-text", nil)
	run, err := c.Start(context.Background(), RunOptions{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	<-run.Done()
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	for i := 0; i < 50; i++ {
		if res, err := run.Wait(expired); err != nil || res.State != RunCompleted {
			t.Fatalf("round %d: %+v %v", i, res, err)
		}
	}

	hanging := fakeClient(t, "claude", "s1-text", map[string]string{"AGENTSTREAM_FAKE_HANG": "1"})
	startCtx, cancelStart := context.WithCancel(context.Background())
	defer cancelStart()
	timed, err := hanging.Start(startCtx, RunOptions{Prompt: "x", Timeout: 300 * time.Millisecond, KillGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	<-timed.Done()
	cancelStart()
	res, err := timed.Wait(context.Background())
	if err != nil || res.State != RunCancelled || res.CancelKind != CancelKindTimeout {
		t.Fatalf("%+v %v", res, err)
	}
}

// Close stops a run that prints nothing more: it told the run only when the next delivery
// came, so Close waited for as long as the harness stayed quiet.
func TestStreamCloseStopsAQuietRun(t *testing.T) {
	c := fakeClient(t, "claude", "s1-text", map[string]string{"AGENTSTREAM_FAKE_HANG": "1"})
	st, err := c.Stream(context.Background(), RunOptions{Prompt: "x", KillGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// Read everything the trace prints, until the harness goes quiet.
	for quiet := false; !quiet; {
		select {
		case <-st.Deliveries():
		case <-time.After(time.Second):
			quiet = true
		}
	}
	closed := make(chan struct{})
	go func() {
		st.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not stop a quiet run")
	}
	res, err := st.Wait(context.Background())
	if err != nil || res.State != RunCancelled || res.CancelKind != CancelKindReaderLeft {
		t.Fatalf("%+v %v", res, err)
	}
}

// Waiting without reading discards what nobody read (the core drains an iterated run).
func TestStreamWaitWithoutReading(t *testing.T) {
	c := fakeClient(t, "claude", "s2-bash", nil)
	st, err := c.Stream(context.Background(), RunOptions{Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.Wait(context.Background())
	if err != nil || res.State != RunCompleted {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestStreamBackpressureCoalescesWithoutLosingText(t *testing.T) {
	c := fakeClient(t, "claude", "s1-text", map[string]string{"AGENTSTREAM_FAKE_FLOOD": "20000"})
	st, err := c.Stream(context.Background(), RunOptions{Prompt: "x", Limits: Limits{HighWater: 16}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // a slow reader: the flood piles up in the core buffer
	items, _ := drain(t, st)
	res, err := st.Wait(context.Background())
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

func TestStreamCommandAndClientClosedDuringARun(t *testing.T) {
	c := commandClient(t)
	st, err := c.Stream(context.Background(), RunOptions{Command: []string{"sh", "-c", "echo hi; sleep 30"}, KillGrace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	<-st.Deliveries() // sandbox_ready
	c.Close()         // kills the run; the stream still ends with its terminal
	items, _ := drainFrom(t, st, 1)
	res, err := st.Wait(context.Background())
	if err != nil || res.State != RunCancelled {
		t.Fatalf("%+v %v", res, err)
	}
	last, _ := items[len(items)-1].Lifecycle()
	if last.Reason != ReasonCommandInterrupted {
		t.Fatal(last.Reason)
	}
	if _, err := c.Run(context.Background(), RunOptions{Prompt: "x"}); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
	if err := c.Pause(); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
}

// A run's own handler that waits for it with a deadline gets its deadline back: the run cannot
// end while the handler waits, so Wait gives up after the kill grace (and 2 s) with ctx's error.
func TestWaitWithADeadlineFromTheRunsOwnHandlerReturns(t *testing.T) {
	c := fakeClient(t, "claude", "s1-text", map[string]string{"AGENTSTREAM_FAKE_HANG": "1"})
	var run *Run
	started := make(chan struct{})
	waited := make(chan error, 1)
	var once sync.Once
	if err := c.On("content", func(OutputEvent) {
		once.Do(func() {
			<-started
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			res, err := run.Wait(ctx)
			if res != nil {
				err = errors.New("a result while the run could not end")
			}
			waited <- err
		})
	}); err != nil {
		t.Fatal(err)
	}
	var err error
	run, err = c.Start(context.Background(), RunOptions{Prompt: "x", KillGrace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	close(started)
	select {
	case err := <-waited:
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not end within 2.1s of its cancel: one of its handler calls has not returned for") {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Wait from the run's own handler did not return")
	}
	res, err := run.Wait(context.Background())
	if err != nil || res.State != RunCancelled {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestStreamCloseFromItsOwnOnEventReturnsAndCancelsTheRun(t *testing.T) {
	c := fakeClient(t, "claude", "s1-text", map[string]string{"AGENTSTREAM_FAKE_HANG": "1"})
	var stream atomic.Pointer[Stream]
	closed := make(chan struct{})
	var once sync.Once
	st, err := c.Stream(context.Background(), RunOptions{
		Prompt:    "x",
		KillGrace: 200 * time.Millisecond,
		OnEvent: func(AgentEvent) error {
			if s := stream.Load(); s != nil {
				// On the goroutine that delivers: waiting for it here would wait for ever.
				once.Do(func() { _ = s.Close(); close(closed) })
			}
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	stream.Store(st)
	deadline := time.After(30 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-st.Deliveries():
		case <-deadline:
			t.Fatal("the channel never closed: Close from OnEvent hung")
		}
	}
	<-closed
	res, err := st.Wait(context.Background())
	if err != nil || res.State != RunCancelled || res.CancelKind != CancelKindReaderLeft {
		t.Fatalf("%+v %v", res, err)
	}
}

// A reason that is not UTF-8 (a Latin-1 file name, say) still cancels the run: its bad bytes
// become U+FFFD. The native call refused it, and Cancel has no error to say so: the run went on.
func TestCancelWithAReasonThatIsNotUTF8(t *testing.T) {
	c := fakeClient(t, "claude", "s1-text", map[string]string{"AGENTSTREAM_FAKE_HANG": "1"})
	run, err := c.Start(context.Background(), RunOptions{Prompt: "x", KillGrace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	run.Cancel("stop caf\xe9")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := run.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.State != RunCancelled || !strings.HasSuffix(res.CancelReason, ": stop caf\uFFFD") {
		t.Fatalf("%s %q", res.State, res.CancelReason)
	}
}
