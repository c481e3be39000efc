package agentstream

import (
	"errors"
	"fmt"
)

// Status is a libagentstream status code (agentstream_status in the C header). The numbers are
// stable; Status.String gives the snake_case name shared with the other bindings.
type Status uint32

// The status codes. StatusOK never appears in an *Error.
const (
	StatusOK              Status = 0
	StatusNullArgument    Status = 1
	StatusInvalidArgument Status = 2
	StatusBufferTooSmall  Status = 3
	StatusBusy            Status = 4
	StatusInternal        Status = 5
	StatusPanic           Status = 6
	StatusHarnessNotFound Status = 7
	StatusAlreadyRunning  Status = 8
	StatusSpawnFailed     Status = 9
	StatusCancelled       Status = 10
	StatusTimeout         Status = 11
	StatusDecodeLimit     Status = 12
	StatusNotRunning      Status = 13
	StatusInvalidHandle   Status = 14
	StatusNotReady        Status = 15
)

// String is the library's name for the status ("invalid_argument", "panic", ...).
func (s Status) String() string { return statusName(s) }

// Error is a failure reported by libagentstream: a status plus the library's message (for an
// unknown agent or channel name the message lists the valid names). Compare with errors.Is
// against the Err* sentinels:
//
//	if errors.Is(err, agentstream.ErrInvalidArgument) { ... }
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("agentstream: %s", e.Message)
}

// Is reports whether target is an *Error with the same status (so the Err* sentinels match any
// message).
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Status == e.Status
}

// Sentinels for errors.Is, one per status.
var (
	ErrNullArgument    = &Error{Status: StatusNullArgument, Message: "null argument"}
	ErrInvalidArgument = &Error{Status: StatusInvalidArgument, Message: "invalid argument"}
	ErrBusy            = &Error{Status: StatusBusy, Message: "busy"}
	ErrInternal        = &Error{Status: StatusInternal, Message: "internal error"}
	// ErrPanic: a Rust panic was caught inside the library (a bug; the object involved should
	// be closed).
	ErrPanic = &Error{Status: StatusPanic, Message: "panic"}
	// ErrHarnessNotFound: the harness executable (Config.Bin, or the harness's usual command on
	// PATH) was not found.
	ErrHarnessNotFound = &Error{Status: StatusHarnessNotFound, Message: "harness not found"}
	// ErrAlreadyRunning: the session already runs something (one operation at a time).
	ErrAlreadyRunning = &Error{Status: StatusAlreadyRunning, Message: "already running"}
	// ErrSpawnFailed: the harness could not be started.
	ErrSpawnFailed = &Error{Status: StatusSpawnFailed, Message: "spawn failed"}
	// ErrNotRunning: Pause, Resume or Interrupt without an active run.
	ErrNotRunning = &Error{Status: StatusNotRunning, Message: "not running"}
)

// ErrClosed is returned by methods of a Decoder or Session after Close.
var ErrClosed = errors.New("agentstream: use after Close")
