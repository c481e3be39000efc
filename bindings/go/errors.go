package agentstream

// The error values, ONE per kind of the core's error table (core/src/error.rs; C statuses
// AGENTSTREAM_STATUS_<NAME> = the code). Everything table-derived lives in this file so it can be
// replaced by declarations generated from core/schema; TestErrorKindsAreTheCoreTable checks it
// against the linked library until then.

import "fmt"

// ErrorKind is what kind of failure a call reports: a stable snake_case name of the core's error
// table, the same in every language.
type ErrorKind string

// The ErrorKind values, in code order.
const (
	// ErrorKindHarnessNotFound: the harness executable could not be found.
	ErrorKindHarnessNotFound ErrorKind = "harness_not_found"
	// ErrorKindAlreadyRunning: a run is already going on in this client.
	ErrorKindAlreadyRunning ErrorKind = "already_running"
	// ErrorKindSpawnFailed: the harness was found but could not be started.
	ErrorKindSpawnFailed ErrorKind = "spawn_failed"
	// ErrorKindInvalidArgument: an argument is not valid (an unknown agent or channel name, a bad
	// option value: the message names the field).
	ErrorKindInvalidArgument ErrorKind = "invalid_argument"
	// ErrorKindCancelled: the run was cancelled.
	ErrorKindCancelled ErrorKind = "cancelled"
	// ErrorKindTimeout: the run went past its time limit.
	ErrorKindTimeout ErrorKind = "timeout"
	// ErrorKindDecodeLimit: input went past a configured decode limit.
	ErrorKindDecodeLimit ErrorKind = "decode_limit"
	// ErrorKindInternal: a bug in agentstream (an internal failure that is not a panic).
	ErrorKindInternal ErrorKind = "internal"
	// ErrorKindNotRunning: nothing is running (Pause or Resume without an active run).
	ErrorKindNotRunning ErrorKind = "not_running"
	// ErrorKindNullArgument: a required argument was missing.
	ErrorKindNullArgument ErrorKind = "null_argument"
	// ErrorKindInvalidHandle: an object that is not live (used after Close).
	ErrorKindInvalidHandle ErrorKind = "invalid_handle"
	// ErrorKindBusy: the object is in use by a call that has not returned.
	ErrorKindBusy ErrorKind = "busy"
	// ErrorKindBufferTooSmall: a buffer was too small for the text.
	ErrorKindBufferTooSmall ErrorKind = "buffer_too_small"
	// ErrorKindStillRunning: the run has not ended yet (its result exists once its terminal
	// event was delivered).
	ErrorKindStillRunning ErrorKind = "still_running"
	// ErrorKindPanic: a Rust panic was caught inside the library (a bug in agentstream).
	ErrorKindPanic ErrorKind = "panic"
	// ErrorKindCannotResume: the harness cannot continue a previous session, or the session to
	// continue is unknown.
	ErrorKindCannotResume ErrorKind = "cannot_resume"
	// ErrorKindUnsupported: not available on this platform.
	ErrorKindUnsupported ErrorKind = "unsupported"
)

// errorTable is the core's table: each kind with its stable code, in code order.
var errorTable = []struct {
	kind ErrorKind
	code int
}{
	{ErrorKindHarnessNotFound, 1001},
	{ErrorKindAlreadyRunning, 1002},
	{ErrorKindSpawnFailed, 1003},
	{ErrorKindInvalidArgument, 1004},
	{ErrorKindCancelled, 1005},
	{ErrorKindTimeout, 1006},
	{ErrorKindDecodeLimit, 1007},
	{ErrorKindInternal, 1008},
	{ErrorKindNotRunning, 1009},
	{ErrorKindNullArgument, 1010},
	{ErrorKindInvalidHandle, 1011},
	{ErrorKindBusy, 1012},
	{ErrorKindBufferTooSmall, 1013},
	{ErrorKindStillRunning, 1014},
	{ErrorKindPanic, 1015},
	{ErrorKindCannotResume, 1016},
	{ErrorKindUnsupported, 1017},
}

// ErrorKindValues returns every ErrorKind, in code order.
func ErrorKindValues() []ErrorKind {
	out := make([]ErrorKind, len(errorTable))
	for i, row := range errorTable {
		out[i] = row.kind
	}
	return out
}

// Code is the kind's stable number in the core's error table (1001, …; the C status): the same
// in every language. 0 for a kind this package does not know.
func (k ErrorKind) Code() int {
	for _, row := range errorTable {
		if row.kind == k {
			return row.code
		}
	}
	return 0
}

// ErrorKindOfCode is the kind with the stable number code, if any.
func ErrorKindOfCode(code int) (ErrorKind, bool) {
	for _, row := range errorTable {
		if row.code == code {
			return row.kind, true
		}
	}
	return "", false
}

// Error is a failure reported by the library: its kind and a message that says what to fix
// (for an unknown agent or channel name it lists the valid ones; for a bad option it names the
// field). Compare with errors.Is against the Err* values:
//
//	if errors.Is(err, agentstream.ErrHarnessNotFound) { ... }
type Error struct {
	Kind    ErrorKind
	Message string
}

func (e *Error) Error() string { return "agentstream: " + e.Message }

// Is reports whether target is an *Error of the same kind (so the Err* values match any
// message).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Kind == e.Kind
}

func kindError(kind ErrorKind) *Error {
	return &Error{Kind: kind, Message: string(kind)}
}

// The error values, one per kind, for errors.Is.
var (
	// ErrHarnessNotFound: the harness executable (Config.Bin, or the harness's usual command on
	// PATH) was not found.
	ErrHarnessNotFound = kindError(ErrorKindHarnessNotFound)
	// ErrAlreadyRunning: the client already runs something (one run at a time per client; use
	// another client for parallel runs).
	ErrAlreadyRunning = kindError(ErrorKindAlreadyRunning)
	// ErrSpawnFailed: the harness could not be started.
	ErrSpawnFailed = kindError(ErrorKindSpawnFailed)
	// ErrInvalidArgument: a bad argument; the message names it and what is allowed.
	ErrInvalidArgument = kindError(ErrorKindInvalidArgument)
	// ErrCancelled: the run was cancelled.
	ErrCancelled = kindError(ErrorKindCancelled)
	// ErrTimeout: the run went past its time limit.
	ErrTimeout = kindError(ErrorKindTimeout)
	// ErrDecodeLimit: input went past a decode limit.
	ErrDecodeLimit = kindError(ErrorKindDecodeLimit)
	// ErrInternal: a bug in agentstream.
	ErrInternal = kindError(ErrorKindInternal)
	// ErrNotRunning: Pause or Resume without an active run.
	ErrNotRunning = kindError(ErrorKindNotRunning)
	// ErrNullArgument: a required argument was missing.
	ErrNullArgument = kindError(ErrorKindNullArgument)
	// ErrInvalidHandle: an object used after Close (see also ErrClosed).
	ErrInvalidHandle = kindError(ErrorKindInvalidHandle)
	// ErrBusy: the object is in use by a call that has not returned (a Decoder called from its
	// own FeedFunc callback).
	ErrBusy = kindError(ErrorKindBusy)
	// ErrBufferTooSmall: a buffer was too small.
	ErrBufferTooSmall = kindError(ErrorKindBufferTooSmall)
	// ErrStillRunning: the run has not ended yet (Run.Result before the end).
	ErrStillRunning = kindError(ErrorKindStillRunning)
	// ErrPanic: a Rust panic was caught inside the library (a bug; close the object involved).
	ErrPanic = kindError(ErrorKindPanic)
	// ErrCannotResume: the harness cannot continue the session asked for.
	ErrCannotResume = kindError(ErrorKindCannotResume)
	// ErrUnsupported: not available on this platform.
	ErrUnsupported = kindError(ErrorKindUnsupported)
)

// ErrClosed is returned by the methods of a Decoder, Client, Budget or SequenceCheck after
// Close. It is an invalid_handle error: errors.Is(err, ErrInvalidHandle) holds too.
var ErrClosed = &Error{Kind: ErrorKindInvalidHandle, Message: "use after Close"}

// errorOfStatus is the error of a failed library call: its status is the kind's code.
func errorOfStatus(status uint32, message string) *Error {
	kind, ok := ErrorKindOfCode(int(status))
	if !ok {
		// A newer library than this package: keep its name for the kind.
		kind = ErrorKind(statusName(status))
	}
	return &Error{Kind: kind, Message: message}
}

// invalidArgument is a Go-side conversion failure (a Go value the wire form cannot carry, such
// as a negative duration), reported like the library's own.
func invalidArgument(format string, args ...any) *Error {
	return &Error{Kind: ErrorKindInvalidArgument, Message: fmt.Sprintf(format, args...)}
}
