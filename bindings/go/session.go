package agentstream

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/cgo"
	"sort"
	"sync"
)

// Config configures a Session (the seed's AgentConfig).
type Config struct {
	// Type is the agent: "claude", "codex", "gemini", "qwen", "kimi", "opencode" or "droid".
	Type string
	// AgentID names the agent in hook events (default: Type).
	AgentID string
	// Bin overrides the harness executable (a path, or a command name on PATH; default: the
	// harness's usual command).
	Bin string
	// Model asks the harness for a model (with the harness's own flag).
	Model string
	// ExtraArgs are added to the harness's command line (after its streaming flags, before the
	// prompt).
	ExtraArgs []string
	// Cwd is the harness's working directory (default: the current one).
	Cwd string
	// Env is added to (or overrides) the inherited environment of the harness.
	Env map[string]string
}

// Session is one configured agent, the handlers registered with On, and the runs started from
// it (one at a time). Safe for concurrent use. Close it when done (a finalizer frees a
// forgotten one).
type Session struct {
	mu     sync.Mutex
	ptr    sessionPtr
	config Config
	// Handlers reach this, not the Session: a cgo.Handle is a GC root, and the Session must
	// stay collectable so its finalizer can release the handles.
	errs *failures
}

// failures collects handler failures: the first failure of each handler, with a count of the
// ones after it, reset when a run starts.
type failures struct {
	mu    sync.Mutex
	list  []*HandlerFailure
	byKey map[any]*HandlerFailure
}

func (f *failures) report(key any, channel Channel, item []byte, cause any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if prev := f.byKey[key]; prev != nil {
		prev.Repeats++
		return
	}
	if f.byKey == nil {
		f.byKey = map[any]*HandlerFailure{}
	}
	hf := &HandlerFailure{Channel: channel, Item: append([]byte(nil), item...), Cause: cause}
	f.byKey[key] = hf
	f.list = append(f.list, hf)
}

// reset starts a new collection and returns what the previous one gathered.
func (f *failures) reset() []error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []error
	for _, hf := range f.list {
		out = append(out, hf)
	}
	f.list, f.byKey = nil, nil
	return out
}

func (f *failures) first() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.list) == 0 {
		return nil
	}
	return f.list[0]
}

// New returns a Session for cfg. An unknown agent is an *Error with StatusInvalidArgument
// whose message lists the valid names.
func New(cfg Config) (*Session, error) {
	p, err := sessionNew(cfg.Type)
	if err != nil {
		return nil, err
	}
	s := &Session{ptr: p, config: cfg, errs: &failures{}}
	runtime.SetFinalizer(s, (*Session).Close)
	if err := s.configure(cfg); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Session) configure(cfg Config) error {
	set := func(what, v string) error {
		if v == "" {
			return nil
		}
		return sessionSet(s.ptr, what, &v)
	}
	for _, kv := range [][2]string{{"bin", cfg.Bin}, {"cwd", cfg.Cwd}, {"model", cfg.Model}, {"agent_id", cfg.AgentID}} {
		if err := set(kv[0], kv[1]); err != nil {
			return err
		}
	}
	for _, a := range cfg.ExtraArgs {
		if err := sessionAddArg(s.ptr, a); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(cfg.Env))
	for k := range cfg.Env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if err := sessionSetEnv(s.ptr, k, cfg.Env[k]); err != nil {
			return err
		}
	}
	return nil
}

// Config returns the session's configuration.
func (s *Session) Config() Config { return s.config }

// Agent is the canonical agent name ("claude", ...).
func (s *Session) Agent() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ptr == nil {
		return ""
	}
	return sessionAgent(s.ptr)
}

// handle returns the C session, or ErrClosed.
func (s *Session) handle() (sessionPtr, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ptr == nil {
		return nil, ErrClosed
	}
	return s.ptr, nil
}

// On registers handler for the channel name, which must be one of "content", "lifecycle",
// "stdout", "stderr"; any other name is an *Error (StatusInvalidArgument) whose message lists
// the four. The handler's type must match the channel:
//
//	"content"            func(agentstream.OutputEvent)
//	"lifecycle"          func(agentstream.LifecycleEvent)
//	"stdout", "stderr"   func(string)
//
// During Run and ExecuteCommand the handlers are called from the run's own thread (so from a
// goroutine that is not the caller's: they must be safe for that), in sequence order, one at a
// time, never concurrently; handlers of one channel in registration order. A run uses the
// handlers registered when it started. A handler that panics does not stop the run or the
// other handlers: its first failure (with the item it failed on) is reported in
// RunResult.HandlerFailures. Stream does not call handlers: it hands the deliveries over.
func (s *Session) On(name string, handler any) error {
	if err := ValidateChannel(name); err != nil {
		return err
	}
	entry, err := newHandlerEntry(s.errs, Channel(name), handler)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ptr == nil {
		return ErrClosed
	}
	h := cgo.NewHandle(entry)
	if err := sessionOn(s.ptr, name, uintptr(h)); err != nil {
		h.Delete() // on failure the library took nothing
		return err
	}
	return nil
}

// HandlerError returns the first failure of a handler since the last run started (a panic, or
// an event it could not be given), or nil.
func (s *Session) HandlerError() error { return s.errs.first() }

// Pause stops the active run's process group (SIGSTOP); the run delivers a "sandbox_pause"
// lifecycle event. ErrNotRunning when nothing runs.
func (s *Session) Pause() error {
	p, err := s.handle()
	if err != nil {
		return err
	}
	return sessionPause(p)
}

// Resume continues a paused run (SIGCONT; lifecycle "sandbox_resume"). ErrNotRunning when
// nothing runs.
func (s *Session) Resume() error {
	p, err := s.handle()
	if err != nil {
		return err
	}
	return sessionResume(p)
}

// Interrupt stops the active run: SIGTERM to its process group, SIGKILL after the grace
// period; it ends "run_interrupted" with reason. ErrNotRunning when nothing runs.
func (s *Session) Interrupt(reason string) error {
	p, err := s.handle()
	if err != nil {
		return err
	}
	return sessionInterrupt(p, reason)
}

// Kill ends the active run at once (SIGKILL; lifecycle "sandbox_killed", then
// "run_interrupted"). Without an active run it does nothing.
func (s *Session) Kill() error {
	p, err := s.handle()
	if err != nil {
		return err
	}
	return sessionKill(p)
}

// Close frees the session: an active run is killed (its Run/Stream still returns its result)
// and no handler is called after Close returns. Calling it again is a no-op.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ptr != nil {
		sessionFree(s.ptr)
		s.ptr = nil
		runtime.SetFinalizer(s, nil)
	}
	return nil
}

// HandlerFailure is a handler's failure: which channel's handler (ChannelHook for OnEvent), on
// which item (its JSON, or the raw text for stdout/stderr), why, and how many later calls of
// the same handler failed too.
type HandlerFailure struct {
	Channel Channel
	Item    []byte
	Cause   any
	Repeats int
}

func (f *HandlerFailure) Error() string {
	more := ""
	if f.Repeats > 0 {
		more = fmt.Sprintf(" (and %d more time(s))", f.Repeats)
	}
	return fmt.Sprintf("agentstream: %s handler failed: %v%s (item: %.200s)", f.Channel, f.Cause, more, f.Item)
}

// ChannelHook names the OnEvent handler in a HandlerFailure (it is not a channel of On).
const ChannelHook Channel = "on_event"

// handlerEntry is what a registered handler's cgo.Handle refers to.
type handlerEntry struct {
	errs      *failures
	channel   Channel
	content   func(OutputEvent)
	lifecycle func(LifecycleEvent)
	text      func(string)
	hook      func(AgentEvent)
}

func newHandlerEntry(errs *failures, ch Channel, handler any) (*handlerEntry, error) {
	e := &handlerEntry{errs: errs, channel: ch}
	switch ch {
	case ChannelContent:
		e.content, _ = handler.(func(OutputEvent))
	case ChannelLifecycle:
		e.lifecycle, _ = handler.(func(LifecycleEvent))
	case ChannelStdout, ChannelStderr:
		e.text, _ = handler.(func(string))
	}
	if e.content == nil && e.lifecycle == nil && e.text == nil {
		want := map[Channel]string{
			ChannelContent:   "func(agentstream.OutputEvent)",
			ChannelLifecycle: "func(agentstream.LifecycleEvent)",
			ChannelStdout:    "func(string)",
			ChannelStderr:    "func(string)",
		}[ch]
		return nil, &Error{
			Status:  StatusInvalidArgument,
			Message: fmt.Sprintf("a %q handler must be a %s, not %T", string(ch), want, handler),
		}
	}
	return e, nil
}

// deliver hands one payload to the handler; it never panics (see export.go).
func (e *handlerEntry) deliver(payload []byte) {
	defer func() {
		if r := recover(); r != nil {
			e.errs.report(e, e.channel, payload, r)
		}
	}()
	switch {
	case e.content != nil:
		var ev OutputEvent
		if err := ev.UnmarshalJSON(payload); err != nil {
			panic(err)
		}
		e.content(ev)
	case e.lifecycle != nil:
		var ev LifecycleEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			panic(err)
		}
		e.lifecycle(ev)
	case e.text != nil:
		e.text(string(payload))
	case e.hook != nil:
		var ev AgentEvent
		if err := ev.UnmarshalJSON(payload); err != nil {
			panic(err)
		}
		e.hook(ev)
	}
}
