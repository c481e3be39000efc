package agentstream

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

// Config configures a Client (the seed's AgentConfig). Its JSON form is the core's.
type Config struct {
	// Type is the agent: "claude", "codex", "gemini", "qwen", "kimi", "opencode" or "droid".
	Type string `json:"type"`
	// AgentID names the agent in hook events (default: Type).
	AgentID string `json:"agent_id,omitempty"`
	// Bin overrides the harness executable (a path, or a command name on PATH; default: the
	// harness's usual command).
	Bin string `json:"bin,omitempty"`
	// Model asks the harness for a model (with the harness's own flag). RunOptions.Model
	// overrides it for one run.
	Model string `json:"model,omitempty"`
	// ExtraArgs are added to the harness's command line (after its streaming flags, before the
	// prompt).
	ExtraArgs []string `json:"extra_args,omitempty"`
	// Cwd is the harness's working directory (default: the current one).
	Cwd string `json:"cwd,omitempty"`
	// Env is added to (or overrides) the inherited environment of the harness.
	Env map[string]string `json:"env,omitempty"`
}

// Option configures a Client beyond its Config.
type Option func(*Client)

// OnHandlerError sets the hook that reports a handler's failure (an error it returned, or a
// panic, with the panicking goroutine's stack): called once per handler and run, for its FIRST
// failure; later failures of that handler are only counted (RunResult.HandlerErrors). It is
// called from the goroutine that delivers the run. The default logs the failure with the
// log/slog default logger at level Error (message "agentstream: handler failed").
func OnHandlerError(report func(*HandlerError)) Option {
	return func(c *Client) { c.reportFailure = report }
}

// Client is one configured agent, the handlers registered with On, and the runs started from
// it, one at a time (the seed's Evolve). Successive runs continue the harness conversation
// (see Session). Safe for concurrent use. Close it when done (a finalizer frees a forgotten
// one).
type Client struct {
	mu     sync.Mutex
	ptr    sessionPtr
	config Config
	// Runs reach the handlers through this. A run in progress keeps its Client reachable (a
	// forgotten Client is collected, and closed, only once no run of it goes on).
	subs          *subscriptions
	reportFailure func(*HandlerError)
}

// New returns a Client for cfg. A bad configuration (an unknown agent: the message lists the
// valid names; an empty value) is an *Error with ErrInvalidArgument naming the field.
func New(cfg Config, opts ...Option) (*Client, error) {
	config, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	p, err := sessionNewJSON(config)
	if err != nil {
		return nil, err
	}
	c := &Client{ptr: p, config: cfg, subs: &subscriptions{}, reportFailure: logHandlerError}
	for _, o := range opts {
		o(c)
	}
	runtime.SetFinalizer(c, (*Client).Close)
	return c, nil
}

// logHandlerError is the default failure report: the log/slog default logger.
func logHandlerError(e *HandlerError) {
	attrs := []any{"run_id", e.RunID, "channel", e.Channel, "sequence", e.Sequence, "error", e.Error()}
	if e.Stack != nil {
		attrs = append(attrs, "stack", string(e.Stack))
	}
	slog.Default().Error("agentstream: handler failed", attrs...)
}

// Config returns the client's configuration.
func (c *Client) Config() Config { return c.config }

// Agent is the canonical agent name ("claude", …; "" after Close).
func (c *Client) Agent() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ptr == nil {
		return ""
	}
	return sessionAgent(c.ptr)
}

// with runs f with the live C handle, or returns ErrClosed.
func (c *Client) with(f func(sessionPtr) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ptr == nil {
		return ErrClosed
	}
	return f(c.ptr)
}

// On registers handler for the channel name, which must be one of "content", "lifecycle",
// "stdout", "stderr"; any other name is an *Error (ErrInvalidArgument) whose message lists the
// four. The handler's type must match the channel, with or without an error result:
//
//	"content"            func(agentstream.OutputEvent) [error]
//	"lifecycle"          func(agentstream.LifecycleEvent) [error]
//	"stdout", "stderr"   func(string) [error]
//
// During a run the handlers are called from one goroutine that is not the caller's, in
// sequence order, one at a time, the handlers of a channel in registration order. A handler
// registered during a run gets the rest of it, unless the run started with no handler and no
// OnEvent (such a run is only awaited: the next run calls it). A handler that returns an error
// or panics does not stop the run or the other handlers: its first failure in a run is reported (see
// OnHandlerError) and every failure is counted in RunResult.HandlerErrors. Stream does not call
// these handlers: it hands every delivery over.
func (c *Client) On(name string, handler any) error {
	if err := ValidateChannel(name); err != nil {
		return err
	}
	entry, err := newHandlerEntry(Channel(name), handler)
	if err != nil {
		return err
	}
	return c.with(func(p sessionPtr) error {
		return c.subs.addSubscribed(entry, func() (uint64, error) { return sessionSubscribe(p, name) })
	})
}

// Off removes every handler of the channel name (the seed's off(name)); an unknown name is an
// *Error (ErrInvalidArgument) listing the four, as for On. No call of a removed handler starts
// after Off returns (one in progress on the run's goroutine may finish).
func (c *Client) Off(name string) error {
	if strings.IndexByte(name, 0) >= 0 {
		// C would read "content\x00x" as "content": its handlers would go natively, not here.
		return invalidArgument("channel name %q must not contain a NUL character", name)
	}
	return c.with(func(p sessionPtr) error {
		if err := sessionOff(p, name); err != nil {
			return err
		}
		c.subs.removeChannel(Channel(name))
		return nil
	})
}

// Status reports the client's state (the seed's status()): the sandbox and agent state,
// whether a run was ever started, the active run, the conversation the next run continues and
// how the last run ended.
func (c *Client) Status() (Status, error) {
	var st Status
	err := c.with(func(p sessionPtr) error {
		data, err := sessionStatusJSON(p)
		if err != nil {
			return err
		}
		return json.Unmarshal(data, &st)
	})
	return st, err
}

// Session is the harness session (conversation) the next run continues: the session id the
// last run reported, or the one given to SetSession; "" when the next run starts a new one.
func (c *Client) Session() (string, error) {
	var id string
	err := c.with(func(p sessionPtr) error {
		b, err := sessionSessionID(p)
		id = string(b)
		return err
	})
	return id, err
}

// SetSession chooses the harness session the next run continues: a session id a run reported
// (of this client or another), or "" to start a new conversation with the next run.
// RunOptions.Resume chooses another for one run.
func (c *Client) SetSession(id string) error {
	if strings.IndexByte(id, 0) >= 0 {
		// C would read the id only up to the NUL: another session than the one asked for.
		return invalidArgument("session id %q must not contain a NUL character", id)
	}
	return c.with(func(p sessionPtr) error { return sessionSetSessionID(p, id) })
}

// SetBudget lets the client's runs share b with every other run using it (nil: no budget):
// each run takes one of its permits for its lifetime; starting a run when every permit is
// taken is an ErrInvalidArgument error.
func (c *Client) SetBudget(b *Budget) error {
	return c.with(func(p sessionPtr) error {
		if b == nil {
			return sessionSetBudget(p, nil)
		}
		return b.with(func(bp budgetPtr) error { return sessionSetBudget(p, bp) })
	})
}

// Pause stops the active run's process group (SIGSTOP); the run delivers a "sandbox_pause"
// lifecycle event. ErrNotRunning when nothing runs.
func (c *Client) Pause() error {
	return c.with(sessionPause)
}

// Resume continues a paused run (SIGCONT; lifecycle "sandbox_resume"). ErrNotRunning when
// nothing runs.
func (c *Client) Resume() error {
	return c.with(sessionResume)
}

// Interrupt stops the active run: SIGTERM to its process group, SIGKILL after its grace period;
// it ends "run_interrupted". It reports whether anything was interrupted (false when nothing
// runs, or after Close).
func (c *Client) Interrupt() bool {
	did := false
	_ = c.with(func(p sessionPtr) error {
		var err error
		did, err = sessionInterrupt(p, "interrupted")
		return err
	})
	return did
}

// Kill ends the active run at once (SIGKILL; lifecycle "sandbox_killed", then
// "run_interrupted"). It reports whether anything was killed.
func (c *Client) Kill() bool {
	did := false
	_ = c.with(func(p sessionPtr) error {
		var err error
		did, err = sessionKill(p)
		return err
	})
	return did
}

// Close frees the client: an active run is killed (its Run still reports its result) and its On
// handlers are removed, as by Off (a call that was about to start may still happen, none after
// that); a run's OnEvent, a run option, still gets that run's last hook events. Calling it again
// is a no-op.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ptr != nil {
		c.subs.removeAll()
		sessionFree(c.ptr)
		c.ptr = nil
		runtime.SetFinalizer(c, nil)
	}
	return nil
}

// ---- handlers ----

// subscriptions are the client's handlers by channel, in registration order (the order of the
// core's subscription ids). Runs read them at each delivery, so handlers added during a run
// get the rest of it.
type subscriptions struct {
	mu        sync.RWMutex
	byChannel map[Channel][]*handlerEntry
}

// addSubscribed subscribes e natively and adds it, as one step for a run's delivering
// goroutine: a run reads a channel from the moment it is subscribed, and a delivery looked up
// between the two would miss the new handler.
func (s *subscriptions) addSubscribed(e *handlerEntry, subscribe func() (uint64, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, err := subscribe()
	if err != nil {
		return err
	}
	e.id = id
	if s.byChannel == nil {
		s.byChannel = map[Channel][]*handlerEntry{}
	}
	// A new slice: runs may be iterating the old one.
	s.byChannel[e.channel] = append(append([]*handlerEntry(nil), s.byChannel[e.channel]...), e)
	return nil
}

func (s *subscriptions) of(ch Channel) []*handlerEntry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.byChannel[ch]
}

func (s *subscriptions) removeChannel(ch Channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.byChannel[ch] {
		e.removed.Store(true)
	}
	delete(s.byChannel, ch)
}

func (s *subscriptions) removeAll() {
	for _, ch := range []Channel{ChannelContent, ChannelLifecycle, ChannelStdout, ChannelStderr} {
		s.removeChannel(ch)
	}
}

// handlerEntry is one registered handler: its subscription id and the typed function.
type handlerEntry struct {
	id        uint64
	channel   Channel
	removed   atomic.Bool
	content   func(OutputEvent) error
	lifecycle func(LifecycleEvent) error
	text      func(string) error
}

func newHandlerEntry(ch Channel, handler any) (*handlerEntry, error) {
	e := &handlerEntry{channel: ch}
	switch h := handler.(type) {
	case func(OutputEvent):
		if ch == ChannelContent && h != nil {
			e.content = func(ev OutputEvent) error { h(ev); return nil }
		}
	case func(OutputEvent) error:
		if ch == ChannelContent && h != nil {
			e.content = h
		}
	case func(LifecycleEvent):
		if ch == ChannelLifecycle && h != nil {
			e.lifecycle = func(ev LifecycleEvent) error { h(ev); return nil }
		}
	case func(LifecycleEvent) error:
		if ch == ChannelLifecycle && h != nil {
			e.lifecycle = h
		}
	case func(string):
		if (ch == ChannelStdout || ch == ChannelStderr) && h != nil {
			e.text = func(s string) error { h(s); return nil }
		}
	case func(string) error:
		if (ch == ChannelStdout || ch == ChannelStderr) && h != nil {
			e.text = h
		}
	}
	if e.content == nil && e.lifecycle == nil && e.text == nil {
		want := map[Channel]string{
			ChannelContent:   "func(agentstream.OutputEvent) or func(agentstream.OutputEvent) error",
			ChannelLifecycle: "func(agentstream.LifecycleEvent) or func(agentstream.LifecycleEvent) error",
			ChannelStdout:    "func(string) or func(string) error",
			ChannelStderr:    "func(string) or func(string) error",
		}[ch]
		return nil, invalidArgument("a %q handler must be a non-nil %s, not %T", string(ch), want, handler)
	}
	return e, nil
}

// HandlerError is a handler's failure on one delivery: an error it returned, or a panic.
type HandlerError struct {
	// RunID is the run it failed on.
	RunID string
	// Channel is the handler's channel ("content", "lifecycle", "stdout", "stderr"), or
	// "on_event" for RunOptions.OnEvent.
	Channel string
	// Sequence is the sequence number of the delivery it failed on.
	Sequence uint64
	// Err is the error the handler returned (nil when it panicked).
	Err error
	// Panic is the value the handler panicked with (nil when it returned an error).
	Panic any
	// Stack is the panicking goroutine's stack (nil for a returned error).
	Stack []byte
}

func (e *HandlerError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("agentstream: %s handler failed on sequence %d: %v", e.Channel, e.Sequence, e.Err)
	}
	return fmt.Sprintf("agentstream: %s handler panicked on sequence %d: %v", e.Channel, e.Sequence, e.Panic)
}

// Unwrap is the returned error (or the panic value, when it is an error).
func (e *HandlerError) Unwrap() error {
	if e.Err != nil {
		return e.Err
	}
	err, _ := e.Panic.(error)
	return err
}
