package agentstream

// The error values, ONE per kind of the core's error table (core/src/error.rs; C statuses
// AGENTSTREAM_STATUS_<NAME> = the code). Everything table-derived lives in this file so it can be
// replaced by declarations generated from core/schema; TestErrorKindsAreTheCoreTable checks it
// against the linked library until then.

import "fmt"

// ErrorKind, its constants, Code(), Advice(), ErrorKindValues() and ErrorKindOfCode() are
// generated from the core's error table (errors_gen.go, types_gen.go: `make generate`).

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
	// ErrCancelled: reserved, not returned by this version: a cancelled run is not an error,
	// its RunResult.State is RunCancelled.
	ErrCancelled = kindError(ErrorKindCancelled)
	// ErrTimeout: reserved, not returned by this version: a run past its time limit ends
	// RunCancelled with CancelKind "timeout".
	ErrTimeout = kindError(ErrorKindTimeout)
	// ErrDecodeLimit: reserved, not returned by this version: a line over the decode limit is
	// skipped and counted in DecodeStats.OversizeLines, with a diagnostic.
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
	// ErrCannotResume: reserved, not returned by this version: every harness can continue a
	// session; one it does not know ends the run RunFailed, with the harness's message.
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
