package agentstream

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/cgo"
	"sync"
	"time"
)

// Backpressure tunes the bounded buffer between a run and its reader (zero fields keep the
// defaults: 256 items, 8 MiB, 30 s). Above HighWater items or ByteBudget bytes, arriving text
// deltas merge into the newest buffered one (Envelope.Coalesced counts them; nothing else is
// merged or dropped); a reader that leaves items unread for StallSeconds cancels the run.
type Backpressure struct {
	HighWater    int
	ByteBudget   int
	StallSeconds float64
}

// RunOptions are the options of Run and Stream.
type RunOptions struct {
	// Prompt is the task for the agent.
	Prompt string
	// OnEvent receives the run's hook events (run.started, tool.started, …, exactly one
	// terminal: run.completed / run.failed / run.cancelled / run.stopped), in sequence order,
	// one at a time, from a goroutine that is not the caller's. A panic in it is reported in
	// RunResult.HandlerErrors; the run goes on.
	OnEvent func(AgentEvent)
	// Hooks makes Stream interleave hook deliveries (Delivery.Hook) with the items; implied
	// for Stream when OnEvent is set. Run ignores it (hooks go to OnEvent).
	Hooks bool
	// Timeout stops the run after this long (it ends "run_interrupted", hook "run.stopped").
	Timeout time.Duration
	// DisableRedaction turns off the masking of secrets in tool-call inputs (on by default;
	// answer text is never altered).
	DisableRedaction bool
	// IdempotentTools names tools whose calls in flight at a cancellation are safe to retry.
	IdempotentTools []string
	// Background marks a background run (terminal reasons run_background_*).
	Background bool
	// KillGrace is the SIGTERM→SIGKILL grace period of a cancellation (default 5 s).
	KillGrace time.Duration
	// Backpressure tunes the run's buffer.
	Backpressure Backpressure
}

// CommandOptions are the options of ExecuteCommand and StreamCommand: any program, streamed
// like a run (stdout/stderr and lifecycle "command_start" … "command_complete"/"_failed"/
// "_interrupted"; no content decoding).
type CommandOptions struct {
	// Command is the program and its arguments (not a shell string: use
	// []string{"sh", "-c", "…"} for one).
	Command []string
	// Cwd is the working directory (default: the session's, else the current one).
	Cwd string
	// Env is added to the environment.
	Env map[string]string
	// OnEvent, Hooks, Timeout, Background, KillGrace, Backpressure: as in RunOptions.
	OnEvent      func(AgentEvent)
	Hooks        bool
	Timeout      time.Duration
	Background   bool
	KillGrace    time.Duration
	Backpressure Backpressure
}

// RunState is how a run ended.
type RunState string

// Run states.
const (
	RunCompleted RunState = "completed"
	RunFailed    RunState = "failed"
	RunCancelled RunState = "cancelled"
)

// UsageTotals are a run's token totals (absent counters are nil, never 0).
type UsageTotals struct {
	PromptTokens     *uint64  `json:"prompt_tokens,omitempty"`
	CompletionTokens *uint64  `json:"completion_tokens,omitempty"`
	CachedTokens     *uint64  `json:"cached_tokens,omitempty"`
	CostUSD          *float64 `json:"cost_usd,omitempty"`
}

// Pressure are a run's backpressure statistics.
type Pressure struct {
	Buffered             uint64 `json:"buffered"`
	Bytes                uint64 `json:"bytes"`
	Peak                 uint64 `json:"peak"`
	PeakBytes            uint64 `json:"peak_bytes"`
	Coalesced            uint64 `json:"coalesced"`
	Oversize             uint64 `json:"oversize"`
	Stalled              bool   `json:"stalled"`
	DroppedAfterTerminal uint64 `json:"dropped_after_terminal"`
	RefusedTerminals     uint64 `json:"refused_terminals"`
}

// RunResult is the authoritative record of a finished run or command.
type RunResult struct {
	RunID string   `json:"run_id"`
	State RunState `json:"state"`
	// ExitCode is the process exit code, when it exited; Signal the signal that ended it.
	ExitCode *int `json:"exit_code,omitempty"`
	Signal   *int `json:"signal,omitempty"`
	// SessionID is the harness's session id, once seen.
	SessionID string      `json:"session_id,omitempty"`
	Usage     UsageTotals `json:"usage"`
	// FinalText is the final answer, only for a completed run (partial text is never an
	// answer).
	FinalText    string      `json:"final_text,omitempty"`
	Error        string      `json:"error,omitempty"`
	CancelReason string      `json:"cancel_reason,omitempty"`
	Pressure     Pressure    `json:"pressure"`
	Stats        DecodeStats `json:"stats"`
	// LastSequence is the sequence number of the terminal item.
	LastSequence uint64   `json:"last_sequence"`
	Diagnostics  []string `json:"diagnostics,omitempty"`
	DurationMS   uint64   `json:"duration_ms"`
	// HandlerErrors are the failures of the session's handlers and OnEvent during this run
	// (each a *HandlerFailure: the first failure of a handler, with the item it failed on).
	HandlerErrors []error `json:"-"`
}

// Err is nil for a completed run and a *RunError otherwise.
func (r *RunResult) Err() error {
	if r == nil || r.State == RunCompleted {
		return nil
	}
	msg := r.Error
	if r.State == RunCancelled {
		msg = r.CancelReason
	}
	return &RunError{State: r.State, Message: msg}
}

// RunError is RunResult.Err for a run that failed or was cancelled.
type RunError struct {
	State   RunState
	Message string
}

func (e *RunError) Error() string { return fmt.Sprintf("agentstream: run %s: %s", e.State, e.Message) }

func (o Backpressure) put(m map[string]any) {
	if o.HighWater > 0 {
		m["high_water"] = o.HighWater
	}
	if o.ByteBudget > 0 {
		m["byte_budget"] = o.ByteBudget
	}
	if o.StallSeconds > 0 {
		m["stall_seconds"] = o.StallSeconds
	}
}

func (o RunOptions) optionsJSON(iterate bool) ([]byte, error) {
	m := map[string]any{}
	if iterate {
		m["iterate"] = true
		if o.Hooks || o.OnEvent != nil {
			m["hooks"] = true
		}
	}
	if o.Timeout > 0 {
		m["timeout_ms"] = o.Timeout.Milliseconds()
	}
	if o.DisableRedaction {
		m["redact"] = false
	}
	if len(o.IdempotentTools) > 0 {
		m["idempotent_tools"] = o.IdempotentTools
	}
	if o.Background {
		m["background"] = true
	}
	if o.KillGrace > 0 {
		m["kill_grace_ms"] = o.KillGrace.Milliseconds()
	}
	o.Backpressure.put(m)
	return json.Marshal(m)
}

func (o CommandOptions) optionsJSON(iterate bool) ([]byte, error) {
	m := map[string]any{}
	if iterate {
		m["iterate"] = true
		if o.Hooks || o.OnEvent != nil {
			m["hooks"] = true
		}
	}
	if o.Cwd != "" {
		m["cwd"] = o.Cwd
	}
	if len(o.Env) > 0 {
		m["env"] = o.Env
	}
	if o.Timeout > 0 {
		m["timeout_ms"] = o.Timeout.Milliseconds()
	}
	if o.Background {
		m["background"] = true
	}
	if o.KillGrace > 0 {
		m["kill_grace_ms"] = o.KillGrace.Milliseconds()
	}
	o.Backpressure.put(m)
	return json.Marshal(m)
}

// hookHandle wraps OnEvent for the library (0 when there is none); the library owns the handle
// once a start succeeded.
func (s *Session) hookHandle(fn func(AgentEvent)) cgo.Handle {
	if fn == nil {
		return 0
	}
	return cgo.NewHandle(&handlerEntry{errs: s.errs, channel: ChannelHook, hook: fn})
}

// start runs begin (a runStart/commandStart closure) with the session's C handle.
func (s *Session) start(ctx context.Context, begin func(sessionPtr) (runPtr, error)) (runPtr, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := s.handle()
	if err != nil {
		return nil, err
	}
	s.errs.reset()
	return begin(p)
}

// Run runs the agent on opts.Prompt and returns the run's result once it ended and its last
// handler call returned. The session's On handlers and opts.OnEvent are called during the run
// (see On). Cancelling ctx cancels the run (SIGTERM, then SIGKILL after the grace period); Run
// then returns the cancelled run's result together with ctx's error. A run that failed or was
// cancelled otherwise is not an error here: read RunResult.State (or RunResult.Err). Errors:
// *Error for a run that could not start (ErrHarnessNotFound, ErrAlreadyRunning, …).
func (s *Session) Run(ctx context.Context, opts RunOptions) (*RunResult, error) {
	options, err := opts.optionsJSON(false)
	if err != nil {
		return nil, err
	}
	r, err := s.start(ctx, func(p sessionPtr) (runPtr, error) {
		h := s.hookHandle(opts.OnEvent)
		r, err := runStart(p, opts.Prompt, options, uintptr(h))
		if err != nil && h != 0 {
			h.Delete() // on failure the library took nothing
		}
		return r, err
	})
	if err != nil {
		return nil, err
	}
	return s.await(ctx, r)
}

// ExecuteCommand runs opts.Command with the session's environment, streamed to the session's
// handlers like a run, and returns its result (see Run).
func (s *Session) ExecuteCommand(ctx context.Context, opts CommandOptions) (*RunResult, error) {
	options, err := opts.optionsJSON(false)
	if err != nil {
		return nil, err
	}
	r, err := s.start(ctx, func(p sessionPtr) (runPtr, error) {
		h := s.hookHandle(opts.OnEvent)
		r, err := commandStart(p, opts.Command, options, uintptr(h))
		if err != nil && h != 0 {
			h.Delete()
		}
		return r, err
	})
	if err != nil {
		return nil, err
	}
	return s.await(ctx, r)
}

// await waits for a callback-mode run, cancelling it when ctx is done, then frees it.
func (s *Session) await(ctx context.Context, r runPtr) (*RunResult, error) {
	defer runFree(r)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			_ = runCancel(r, "context canceled: "+ctx.Err().Error())
		case <-done:
		}
	}()
	res, err := waitResult(r)
	if err != nil {
		return nil, err
	}
	res.HandlerErrors = s.errs.reset()
	if ctx.Err() != nil && res.State == RunCancelled {
		return res, ctx.Err()
	}
	return res, nil
}

func waitResult(r runPtr) (*RunResult, error) {
	data, err := runWait(r, -1)
	if err != nil {
		return nil, err
	}
	var res RunResult
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, fmt.Errorf("agentstream: run result: %w", err)
	}
	return &res, nil
}

// Delivery is one thing a Stream hands over, in order: a sequenced item of the run (Item), or
// a hook event derived from the item before it (Hook, with RunOptions.Hooks).
type Delivery struct {
	Item *Envelope
	Hook *AgentEvent
}

// Stream is a run read as a channel of deliveries. Read Deliveries until it is closed (after
// the terminal item and its hooks), then Result. Backpressure comes from the run's own buffer:
// a goroutine pulls batches from it only as fast as Deliveries is read; a reader that stops
// reading for Backpressure.StallSeconds (default 30 s) cancels the run. Cancelling ctx, or
// Close, cancels the run and closes the channel early. A Stream whose channel is abandoned
// unread keeps its goroutine waiting to hand over the next delivery: Close it (or cancel ctx).
type Stream struct {
	ch      chan Delivery
	run     runPtr
	runID   string
	onEvent func(AgentEvent)
	errs    *failures

	closeOnce sync.Once
	closing   chan struct{}
	finished  chan struct{}
	result    *RunResult
	err       error
}

// Stream starts a run like Run and returns at once; the run's items (and hook events, with
// opts.Hooks or opts.OnEvent) arrive on Deliveries. The session's On handlers are not called.
// OnEvent, if set, is called from the stream's goroutine for each hook event before it is
// handed over.
func (s *Session) Stream(ctx context.Context, opts RunOptions) (*Stream, error) {
	options, err := opts.optionsJSON(true)
	if err != nil {
		return nil, err
	}
	r, err := s.start(ctx, func(p sessionPtr) (runPtr, error) { return runStart(p, opts.Prompt, options, 0) })
	if err != nil {
		return nil, err
	}
	return s.stream(ctx, r, opts.OnEvent), nil
}

// StreamCommand is Stream for a command (see ExecuteCommand).
func (s *Session) StreamCommand(ctx context.Context, opts CommandOptions) (*Stream, error) {
	options, err := opts.optionsJSON(true)
	if err != nil {
		return nil, err
	}
	r, err := s.start(ctx, func(p sessionPtr) (runPtr, error) { return commandStart(p, opts.Command, options, 0) })
	if err != nil {
		return nil, err
	}
	return s.stream(ctx, r, opts.OnEvent), nil
}

func (s *Session) stream(ctx context.Context, r runPtr, onEvent func(AgentEvent)) *Stream {
	id, _ := runID(r)
	st := &Stream{
		ch: make(chan Delivery), run: r, runID: id, onEvent: onEvent, errs: s.errs,
		closing: make(chan struct{}), finished: make(chan struct{}),
	}
	go st.pump(ctx)
	return st
}

// Deliveries is the channel of deliveries, closed after the last one (or early, see Stream).
func (st *Stream) Deliveries() <-chan Delivery { return st.ch }

// RunID is the run's id.
func (st *Stream) RunID() string { return st.runID }

// Close stops reading: an unfinished run is cancelled (reason "reader left") and the channel is
// closed. Result still reports the run. Calling it again is a no-op.
func (st *Stream) Close() error {
	st.closeOnce.Do(func() { close(st.closing) })
	<-st.finished
	return nil
}

// Result waits for the run to end and returns its result (and ctx's error when ctx cancelled
// it). Deliveries nobody has read by then are discarded: read Deliveries to its end first to
// see them all.
func (st *Stream) Result() (*RunResult, error) {
	for range st.ch {
	}
	<-st.finished
	return st.result, st.err
}

func (st *Stream) pump(ctx context.Context) {
	defer close(st.finished)
	defer runFree(st.run)
	stop := func(cancel func()) {
		cancel()
		close(st.ch)
		st.result, st.err = waitResult(st.run)
		if st.result != nil {
			st.result.HandlerErrors = st.errs.reset()
		}
	}
	leave := func() { _ = runLeave(st.run) }
	byCtx := func() { _ = runCancel(st.run, "context canceled: "+ctx.Err().Error()) }
	for {
		select {
		case <-ctx.Done():
			stop(byCtx)
			st.err = ctx.Err()
			return
		case <-st.closing:
			stop(leave)
			return
		default:
		}
		kind, data, err := runNextBatch(st.run, 256, 100)
		if err != nil {
			stop(func() { _ = runCancel(st.run, "agentstream: "+err.Error()) })
			st.err = err
			return
		}
		if kind == nextEnd {
			stop(func() {})
			return
		}
		if kind == nextTimeout {
			continue
		}
		batch, err := parseBatch(data)
		if err != nil {
			stop(func() { _ = runCancel(st.run, "agentstream: undecodable batch") })
			st.err = fmt.Errorf("agentstream: delivery batch: %w", err)
			return
		}
		for _, d := range batch {
			if d.Hook != nil && st.onEvent != nil {
				st.callOnEvent(*d.Hook)
			}
			select {
			case st.ch <- Delivery{Item: d.Item, Hook: d.Hook}:
			case <-ctx.Done():
				stop(byCtx)
				st.err = ctx.Err()
				return
			case <-st.closing:
				stop(leave)
				return
			}
		}
	}
}

func (st *Stream) callOnEvent(ev AgentEvent) {
	defer func() {
		if r := recover(); r != nil {
			item, _ := json.Marshal(ev)
			st.errs.report(&st.onEvent, ChannelHook, item, r)
		}
	}()
	st.onEvent(ev)
}

// CancelReason says why a run was cancelled: Kind "caller" (with Detail), "reader_left",
// "stalled" or "timeout".
type CancelReason struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail,omitempty"`
}

// RunOutcome is how a replayed run ended: State "completed", "failed" (with Error, a short
// cause, and Detail) or "cancelled" (with Reason).
type RunOutcome struct {
	State  RunState      `json:"state"`
	Error  string        `json:"error,omitempty"`
	Detail string        `json:"detail,omitempty"`
	Reason *CancelReason `json:"reason,omitempty"`
}

// ReplayResult is everything a replayed run delivers.
type ReplayResult struct {
	// Items is the sequenced stream: run_start, each stdout line followed by its content
	// events, the terminal lifecycle event last.
	Items []Envelope `json:"items"`
	// Hooks are the hook events derived from it, in order.
	Hooks   []AgentEvent `json:"hooks"`
	Outcome RunOutcome   `json:"outcome"`
	Stats   DecodeStats  `json:"stats"`
}

// ReplayOptions are the options of ReplayWith.
type ReplayOptions struct {
	// RunID is stamped on every item and hook (default "replay").
	RunID string
	// AgentID is the hooks' agent id (default: the agent's name).
	AgentID string
	// Timestamp of lifecycle and hook events (default "1970-01-01T00:00:00.000Z").
	Timestamp string
	// DisableRedaction delivers tool-call inputs unmasked (masked by default, as in a run).
	DisableRedaction bool
}

// Replay runs a recorded harness output (its stdout JSONL) through the whole pipeline without
// a process — decoder, run stream, terminal, hooks — deterministically. The golden
// tests/golden/<agent>/<case>.hooks.jsonl files are the Hooks of
// ReplayWith(agent, input, ReplayOptions{RunID: "golden"}).
func Replay(agent string, data []byte) (*ReplayResult, error) {
	return ReplayWith(agent, data, ReplayOptions{})
}

// ReplayWith is Replay with options.
func ReplayWith(agent string, data []byte, opts ReplayOptions) (*ReplayResult, error) {
	m := map[string]any{}
	if opts.DisableRedaction {
		m["redact"] = false
	}
	if opts.RunID != "" {
		m["run_id"] = opts.RunID
	}
	if opts.AgentID != "" {
		m["agent_id"] = opts.AgentID
	}
	if opts.Timestamp != "" {
		m["timestamp"] = opts.Timestamp
	}
	options, _ := json.Marshal(m)
	out, err := replayJSON(agent, data, options)
	if err != nil {
		return nil, err
	}
	var r ReplayResult
	if err := unmarshalNumbers(out, &r); err != nil {
		return nil, fmt.Errorf("agentstream: replay: %w", err)
	}
	return &r, nil
}
