package agentstream

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// RunOptions describe one run: a harness run (Prompt) or a command run (Command), and how to
// run it. Zero values mean the core's defaults. The core validates them; its messages name
// the fields as Go spells them (Prompt, Limits.StallMs for Limits.Stall, TimeoutMs for
// Timeout, …).
type RunOptions struct {
	// Prompt is the task for the agent (a harness run).
	Prompt string
	// Command is a command run instead (the seed's execute_command): the program and its
	// arguments, not a shell string (use []string{"sh", "-c", "…"} for one), streamed like a
	// run (stdout/stderr, lifecycle "command_start" … "command_complete"/"_failed"/
	// "_interrupted"; no content decoding). Give Prompt or Command, not both.
	Command []string
	// Model, Cwd and Env override the client's Config for this run only.
	Model string
	Cwd   string
	Env   map[string]string
	// Timeout stops the run after this long (it ends "run_interrupted", hook "run.stopped");
	// 0: no time limit. Whole milliseconds (rounded up); negative is an error.
	Timeout time.Duration
	// Background marks a background run (terminal reasons run_background_*): start it with
	// Client.Start and await its Run when you want the result.
	Background bool
	// OnEvent receives the run's hook events (run.started or run.resumed, tool.started, …,
	// exactly one terminal: run.completed / run.failed / run.cancelled / run.stopped), in
	// sequence order, after the item each was derived from, on the run's goroutine. An error
	// or panic is a handler failure (see Client.On).
	OnEvent func(AgentEvent) error
	// Hooks makes a Stream hand over hook events (Delivery.Hook) too; implied by OnEvent.
	Hooks bool
	// DisableRedaction turns off the masking of secrets in tool-call inputs (on by default;
	// answer text is never altered).
	DisableRedaction bool
	// Resume continues this harness session instead of the client's current one (harness runs
	// only; see Client.Session).
	Resume string
	// IdempotentTools names tools whose calls in flight at a cancellation are safe to retry.
	IdempotentTools []string
	// KillGrace is the SIGTERM→SIGKILL grace period of a cancellation (0: 5 s).
	KillGrace time.Duration
	// Limits bound what may wait unread for the reader.
	Limits Limits
}

// Limits of one run (zero fields keep the core's defaults: 256 events, 8 MiB, 30 s, 16 MiB).
// Above HighWater unread events or ByteBudget unread bytes, arriving text deltas merge into
// the newest buffered one (Envelope.Coalesced counts them; nothing else is merged or dropped);
// a reader that leaves events unread for Stall cancels the run; a harness stdout line longer
// than MaxLineBytes is skipped and reported.
type Limits struct {
	HighWater    int
	ByteBudget   int
	Stall        time.Duration
	MaxLineBytes int
}

// runRequest is the core's RunRequest in its JSON form.
type runRequest struct {
	Prompt          string            `json:"prompt,omitempty"`
	Command         []string          `json:"command,omitempty"`
	Model           string            `json:"model,omitempty"`
	Cwd             string            `json:"cwd,omitempty"`
	Env             map[string]string `json:"env,omitempty"`
	TimeoutMs       *uint64           `json:"timeout_ms,omitempty"`
	Background      bool              `json:"background,omitempty"`
	Hooks           bool              `json:"hooks,omitempty"`
	Redact          *bool             `json:"redact,omitempty"`
	Resume          string            `json:"resume,omitempty"`
	IdempotentTools []string          `json:"idempotent_tools,omitempty"`
	KillGraceMs     *uint64           `json:"kill_grace_ms,omitempty"`
	Limits          map[string]uint64 `json:"limits,omitempty"`
	Read            string            `json:"read,omitempty"`
}

// millis converts a duration option to whole milliseconds (rounded up, so a positive duration
// never becomes 0); nil for 0; an error naming the field for a negative one.
func millis(field string, d time.Duration) (*uint64, error) {
	switch {
	case d < 0:
		return nil, invalidArgument("%s must not be negative, got %v (leave it 0 for the default)", field, d)
	case d == 0:
		return nil, nil
	}
	ms := uint64((d + time.Millisecond - 1) / time.Millisecond)
	return &ms, nil
}

func count(field string, n int) (uint64, error) {
	if n < 0 {
		return 0, invalidArgument("%s must not be negative, got %d (leave it 0 for the default)", field, n)
	}
	return uint64(n), nil
}

// request is the options as the core's run request; read is "" (handlers) or "iterate".
func (o RunOptions) request(read string) ([]byte, error) {
	r := runRequest{
		Prompt: o.Prompt, Command: o.Command, Model: o.Model, Cwd: o.Cwd, Env: o.Env,
		Background: o.Background, Hooks: o.Hooks || o.OnEvent != nil, Resume: o.Resume,
		IdempotentTools: o.IdempotentTools, Read: read,
	}
	var err error
	if r.TimeoutMs, err = millis("Timeout", o.Timeout); err != nil {
		return nil, err
	}
	if r.KillGraceMs, err = millis("KillGrace", o.KillGrace); err != nil {
		return nil, err
	}
	if o.DisableRedaction {
		off := false
		r.Redact = &off
	}
	limits := map[string]uint64{}
	for _, l := range []struct {
		key, field string
		n          int
	}{
		{"high_water", "Limits.HighWater", o.Limits.HighWater},
		{"byte_budget", "Limits.ByteBudget", o.Limits.ByteBudget},
		{"max_line_bytes", "Limits.MaxLineBytes", o.Limits.MaxLineBytes},
	} {
		n, err := count(l.field, l.n)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			limits[l.key] = n
		}
	}
	stall, err := millis("Limits.Stall", o.Limits.Stall)
	if err != nil {
		return nil, err
	}
	if stall != nil {
		limits["stall_ms"] = *stall
	}
	if len(limits) > 0 {
		r.Limits = limits
	}
	return json.Marshal(r)
}

// onEventHandler is the handler id OnEvent's failures are counted under (subscription ids are
// small numbers from 1).
const onEventHandler = math.MaxUint64 - 1

// Run is one started run (or command): its id, its result once it ended, and the controls.
// Its deliveries are dispatched to the client's handlers and OnEvent by a goroutine of its own
// until the end. Safe for concurrent use.
type Run struct {
	id string
	// The client that started the run, kept reachable while the run goes on (nil after): its
	// finalizer (a forgotten Client is closed) would otherwise kill the run and drop its
	// handlers.
	client  *Client
	ctx     context.Context
	subs    *subscriptions
	onEvent func(AgentEvent) error
	report  func(*HandlerError)

	mu  sync.Mutex
	ptr runPtr // nil once the run ended and its result was taken

	stopWatching func() bool
	// Set when the context given to Start ended during the run (its cancel may have come too
	// late to be the run's: the first reason stands).
	cancelledByCtx atomic.Bool
	done           chan struct{}
	result         *RunResult
	err            error
	// How long a cancelled run may take to end: its kill grace plus endSlack.
	endWithin time.Duration
	// When the handler call going on started (monotonic nanoseconds since runClock; 0: none):
	// a Wait after a cancel gives up only on a call that has not returned for all of endWithin.
	callStarted atomic.Int64
}

// runClock is the origin of Run.callStarted (time.Since reads the monotonic clock).
var runClock = time.Now()

// endSlack is what a cancelled run may take to end beyond its SIGTERM→SIGKILL grace: the
// process's exit and the delivery of what it printed.
const endSlack = 2 * time.Second

// Start starts a run and returns at once (the seed's background=True): a harness run of
// opts.Prompt, or a command run of opts.Command. The run continues the client's harness
// conversation when there is one (see Session; its hooks then begin with run.resumed).
// Cancelling ctx cancels the run (SIGTERM, then SIGKILL after the grace period). Await the
// result with Run.Wait. Errors: an *Error for a run that could not start (ErrHarnessNotFound,
// ErrAlreadyRunning: one run at a time per client, ErrInvalidArgument naming the bad option,
// ErrSpawnFailed), or ctx's error when it is already done.
func (c *Client) Start(ctx context.Context, opts RunOptions) (*Run, error) {
	r, err := c.start(ctx, opts, "")
	if err != nil {
		return nil, err
	}
	go r.deliver(nil)
	return r, nil
}

// Run runs to the end and returns the run's result (Start, then Wait). A run that failed or
// was cancelled is not an error here: read RunResult.State (or RunResult.Err); when ctx
// cancelled it, Run returns the result together with ctx's error (nil and that error when a
// handler call did not return after the cancel: see Wait).
func (c *Client) Run(ctx context.Context, opts RunOptions) (*RunResult, error) {
	r, err := c.Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	return r.Wait(ctx)
}

func (c *Client) start(ctx context.Context, opts RunOptions, read string) (*Run, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	request, err := opts.request(read)
	if err != nil {
		return nil, err
	}
	var p runPtr
	if err := c.with(func(s sessionPtr) error {
		var err error
		p, err = sessionStart(s, request)
		return err
	}); err != nil {
		return nil, err
	}
	id, _ := runID(p)
	grace := opts.KillGrace
	if grace <= 0 {
		grace = 5 * time.Second
	}
	r := &Run{
		id: id, client: c, ctx: ctx, subs: c.subs, onEvent: opts.OnEvent, report: c.reportFailure,
		ptr: p, done: make(chan struct{}), endWithin: grace + endSlack,
	}
	r.stopWatching = context.AfterFunc(ctx, func() {
		r.cancelledByCtx.Store(true)
		r.Cancel("context canceled: " + ctx.Err().Error())
	})
	return r, nil
}

// ID is the run's id ("run_…").
func (r *Run) ID() string { return r.id }

// Done is closed once the run ended and its last handler call returned.
func (r *Run) Done() <-chan struct{} { return r.done }

// Wait waits for the run's end and returns its result. When ctx is done first, the run is
// cancelled, and Wait returns its result with ctx's error; when the context given to Start
// cancelled the run, Wait returns that context's error with the result. After that cancel,
// one handler call that has not returned for the run's kill grace and 2 s more (one of the
// run's own handlers waiting for it can never see its end) makes Wait give up: it returns nil
// and an error wrapping ctx's, and Result gives the result once the run ended.
func (r *Run) Wait(ctx context.Context) (*RunResult, error) {
	// An ended run is its result, whatever ctx says (a select would pick either at random).
	select {
	case <-r.done:
		return r.ended()
	default:
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		r.Cancel("context canceled: " + ctx.Err().Error())
		timer := time.NewTimer(r.endWithin)
		defer timer.Stop()
	waiting:
		for {
			select {
			case <-r.done:
				break waiting
			case <-timer.C:
				// No call going on, or one that started less than endWithin ago: the run is
				// ending, only slowly; look again when that call would have taken endWithin.
				started := r.callStarted.Load()
				running := time.Duration(int64(time.Since(runClock)) - started)
				if started == 0 || running < r.endWithin {
					next := r.endWithin
					if started != 0 {
						next = r.endWithin - running
					}
					timer.Reset(next)
					continue
				}
				return nil, fmt.Errorf("run %s did not end within %s of its cancel: one of its handler calls has "+
					"not returned for %s (waiting for its own run? it cannot see the end); Result gives the "+
					"result once the run ended: %w", r.id, r.endWithin, running.Round(time.Millisecond), ctx.Err())
			}
		}
		if r.err == nil {
			return r.result, ctx.Err()
		}
	}
	return r.ended()
}

// ended is an ended run's result and error: the Start context's error when that context's
// cancel is what ended it (not when it ended after a Kill or a timeout had already stopped it).
func (r *Run) ended() (*RunResult, error) {
	if r.err == nil && r.result.State == RunCancelled && r.cancelledByCtx.Load() && r.ctx.Err() != nil &&
		strings.Contains(r.result.CancelReason, "context canceled: ") {
		return r.result, r.ctx.Err()
	}
	return r.result, r.err
}

// Result is the run's result once it ended (see Wait), without waiting: ErrStillRunning
// before.
func (r *Run) Result() (*RunResult, error) {
	select {
	case <-r.done:
		return r.result, r.err
	default:
		return nil, &Error{Kind: ErrorKindStillRunning, Message: fmt.Sprintf("run %s is still running: wait for it", r.id)}
	}
}

// Cancel cancels the run (SIGTERM to its process group, SIGKILL after the grace period; it
// ends "run_interrupted" with reason). The first reason stands; after the end it does nothing.
func (r *Run) Cancel(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ptr != nil {
		_ = runCancel(r.ptr, reason)
	}
}

// Pressure returns the run's live backpressure statistics (after the end: the final ones).
func (r *Run) Pressure() (Pressure, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ptr == nil {
		if r.result == nil {
			return Pressure{}, r.err
		}
		return r.result.Pressure, nil
	}
	var p Pressure
	data, err := runPressure(r.ptr)
	if err == nil {
		err = json.Unmarshal(data, &p)
	}
	return p, err
}

// deliver pulls the run to its end (one library call per batch of what is ready) and hands
// each delivery to handOver (nil: to the client's handlers and OnEvent), then takes the result
// and frees the run.
func (r *Run) deliver(handOver func(taggedDelivery) bool) {
	defer close(r.done)
	defer r.stopWatching()
	finished := false
	defer func() {
		if finished {
			return
		}
		// A handler ended this goroutine (runtime.Goexit, t.FailNow): the run is left (which
		// cancels it), then waited for and freed as usual, so that Wait returns.
		r.err = fmt.Errorf("agentstream: a handler of run %s ended the goroutine that delivers it "+
			"(runtime.Goexit or t.FailNow): the run was cancelled", r.id)
		_ = runLeave(r.ptr)
		r.finish()
	}()
	r.pull(handOver)
	r.finish()
	finished = true
}

// pull takes the run's deliveries to its end (or until a reading error).
func (r *Run) pull(handOver func(taggedDelivery) bool) {
	for {
		kind, data, err := runNextBatch(r.ptr, 0, 250)
		if err == nil && kind == nextEnd {
			break
		}
		if err == nil && kind == nextTimeout {
			continue
		}
		var batch []taggedDelivery
		if err == nil {
			batch, err = parseBatch(data)
		}
		if err != nil { // a bug: stop reading, which cancels the run
			r.err = fmt.Errorf("agentstream: reading run %s: %w", r.id, err)
			_ = runLeave(r.ptr)
			break
		}
		for _, d := range batch {
			if handOver == nil {
				r.dispatch(d)
			} else if !handOver(d) {
				_ = runLeave(r.ptr) // the reader left: the run is cancelled, the rest discarded
				handOver = func(taggedDelivery) bool { return true }
			}
		}
	}
}

// finish takes the ended run's result and frees it.
func (r *Run) finish() {
	data, err := runWait(r.ptr, -1)
	var res RunResult
	if err == nil {
		err = json.Unmarshal(data, &res)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	runFree(r.ptr)
	r.ptr = nil
	r.client = nil // kept only while the run went on (a handler holding the Run must not keep the Client)
	if err != nil && r.err == nil {
		r.err = err
	}
	if err == nil {
		r.result = &res
	}
}

// dispatch calls the handlers of one delivery, in subscription order.
func (r *Run) dispatch(d taggedDelivery) {
	if d.Hook != nil {
		if r.onEvent != nil {
			hook := *d.Hook
			r.call(onEventHandler, "on_event", hook.Sequence, func() error { return r.onEvent(hook) })
		}
		return
	}
	env := d.Item
	entries := r.subs.of(env.Channel)
	if len(entries) == 0 {
		return
	}
	var invoke func(*handlerEntry) error
	switch env.Channel {
	case ChannelContent:
		ev, err := env.Content()
		invoke = func(e *handlerEntry) error { return orDecodeError(err, func() error { return e.content(ev) }) }
	case ChannelLifecycle:
		ev, err := env.Lifecycle()
		invoke = func(e *handlerEntry) error { return orDecodeError(err, func() error { return e.lifecycle(ev) }) }
	default:
		text, err := env.Text()
		invoke = func(e *handlerEntry) error { return orDecodeError(err, func() error { return e.text(text) }) }
	}
	for _, e := range entries {
		if e.removed.Load() {
			continue
		}
		r.call(e.id, string(env.Channel), env.Sequence, func() error { return invoke(e) })
	}
}

// orDecodeError is the delivery's decoding error (a bug: the core wrote it), else fn's.
func orDecodeError(decodeErr error, fn func() error) error {
	if decodeErr != nil {
		return fmt.Errorf("agentstream could not decode the delivery (a bug: please report it): %w", decodeErr)
	}
	return fn()
}

// call runs one handler; a returned error or a panic is counted on the run, and reported when
// it is that handler's first.
func (r *Run) call(handler uint64, channel string, sequence uint64, fn func() error) {
	// Never 0 while a call goes on (0 means none).
	r.callStarted.Store(max(int64(time.Since(runClock)), 1))
	failure := func() (failure *HandlerError) {
		defer func() {
			if p := recover(); p != nil {
				failure = &HandlerError{Panic: p, Stack: debug.Stack()}
			}
		}()
		if err := fn(); err != nil {
			return &HandlerError{Err: err}
		}
		return nil
	}()
	r.callStarted.Store(0)
	if failure == nil {
		return
	}
	failure.RunID, failure.Channel, failure.Sequence = r.id, channel, sequence
	first, err := runHandlerFailed(r.ptr, handler, channel, sequence, failure.Error())
	if err == nil && first && r.report != nil {
		func() {
			defer func() { _ = recover() }() // a failing report must not stop the run
			r.report(failure)
		}()
	}
}

// Err is nil for a completed run and a *RunError otherwise.
func (res *RunResult) Err() error {
	if res == nil || res.State == RunCompleted {
		return nil
	}
	msg := res.Error
	if res.State == RunCancelled {
		msg = res.CancelReason
	}
	return &RunError{State: res.State, Message: msg}
}

// Duration is the run's wall-clock duration.
func (res *RunResult) Duration() time.Duration {
	return time.Duration(res.DurationMS) * time.Millisecond
}

// RunError is RunResult.Err for a run that failed or was cancelled.
type RunError struct {
	State   RunState
	Message string
}

func (e *RunError) Error() string { return fmt.Sprintf("agentstream: run %s: %s", e.State, e.Message) }
