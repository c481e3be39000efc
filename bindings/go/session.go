package agentstream

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/cgo"
	"sync"
)

// Config configures a Session (the seed's AgentConfig). Phase 1 uses Type; the other fields
// are kept for running the harness (Run/Stream, added with the process runner).
type Config struct {
	// Type is the agent: "claude", "codex", "gemini", "qwen", "kimi", "opencode" or "droid".
	Type string
	// AgentID names the agent in hook events (default: Type).
	AgentID string
	// Bin overrides the harness executable.
	Bin string
	// Model asks the harness for a model.
	Model string
	// ExtraArgs are appended to the harness's command line.
	ExtraArgs []string
	// Cwd is the harness's working directory.
	Cwd string
	// Env is added to the harness's environment.
	Env map[string]string
}

// Session is one configured agent and the handlers registered with On. Safe for concurrent
// use. Close it when done (a finalizer frees a forgotten one).
type Session struct {
	mu     sync.Mutex
	ptr    sessionPtr
	config Config
	// Handlers reach this, not the Session: a cgo.Handle is a GC root, and the Session must
	// stay collectable so its finalizer can release the handles.
	errs *handlerErrors
}

type handlerErrors struct {
	mu    sync.Mutex
	first error
}

func (h *handlerErrors) report(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.first == nil {
		h.first = err
	}
}

// New returns a Session for cfg.Type. An unknown agent is an *Error with
// StatusInvalidArgument whose message lists the valid names.
func New(cfg Config) (*Session, error) {
	p, err := sessionNew(cfg.Type)
	if err != nil {
		return nil, err
	}
	s := &Session{ptr: p, config: cfg, errs: &handlerErrors{}}
	runtime.SetFinalizer(s, (*Session).Close)
	return s, nil
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

// On registers handler for the channel name, which must be one of "content", "lifecycle",
// "stdout", "stderr"; any other name is an *Error (StatusInvalidArgument) whose message lists
// the four. The handler's type must match the channel:
//
//	"content"            func(agentstream.OutputEvent)
//	"lifecycle"          func(agentstream.LifecycleEvent)
//	"stdout", "stderr"   func(string)
//
// Handlers of a channel are called in registration order, one at a time. They will be called
// from a thread of the library during a run, so they must be safe to call from any goroutine.
// A handler that panics does not stop the run or the other handlers: the first such failure
// is kept and returned by HandlerError.
func (s *Session) On(name string, handler any) error {
	if err := ValidateChannel(name); err != nil {
		return err
	}
	entry, err := newHandlerEntry(s, Channel(name), handler)
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

// HandlerError returns the first failure of a handler (a panic, or an event it could not be
// given), or nil.
func (s *Session) HandlerError() error {
	s.errs.mu.Lock()
	defer s.errs.mu.Unlock()
	return s.errs.first
}

// Close frees the session and releases its handlers. Calling it again is a no-op.
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

// HandlerFailure is the error HandlerError reports: which channel's handler failed, on which
// item (its JSON, or the raw text for stdout/stderr), and why.
type HandlerFailure struct {
	Channel Channel
	Item    []byte
	Cause   any
}

func (f *HandlerFailure) Error() string {
	return fmt.Sprintf("agentstream: %s handler failed: %v (item: %.200s)", f.Channel, f.Cause, f.Item)
}

// handlerEntry is what a registered handler's cgo.Handle refers to.
type handlerEntry struct {
	errs      *handlerErrors
	channel   Channel
	content   func(OutputEvent)
	lifecycle func(LifecycleEvent)
	text      func(string)
}

func newHandlerEntry(s *Session, ch Channel, handler any) (*handlerEntry, error) {
	e := &handlerEntry{errs: s.errs, channel: ch}
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
			e.errs.report(&HandlerFailure{Channel: e.channel, Item: payload, Cause: r})
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
	}
}
