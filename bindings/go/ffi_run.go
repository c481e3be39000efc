package agentstream

// The C side of clients (agentstream_session), runs, budgets, sequence checks and replay. Like
// ffi.go, this file calls C only; the Go package holds no run behaviour of its own.

/*
#include <stdint.h>
#include <stdlib.h>
#include "agentstream.h"
*/
import "C"

import (
	"unsafe"
)

// Handle types usable from files without cgo.
type (
	sessionPtr  = *C.agentstream_session
	runPtr      = *C.agentstream_run
	budgetPtr   = *C.agentstream_budget
	sequencePtr = *C.agentstream_sequence_check
)

// cstring returns a C copy of s and its release function.
func cstring(s string) (*C.char, func()) {
	p := C.CString(s)
	return p, func() { C.free(unsafe.Pointer(p)) }
}

// ownedString runs a call that returns an owned string (NULL: none) and copies it into Go.
func ownedString(f func(out **C.char, n *C.size_t) C.agentstream_status) ([]byte, error) {
	var out *C.char
	var n C.size_t
	if err := call(func() uint32 { return uint32(f(&out, &n)) }); err != nil {
		return nil, err
	}
	return takeString(out, n), nil
}

// ---- sessions (the core's Client) ----

// namingPascal: validation messages name fields the way Go spells them (TimeoutMs, Limits.StallMs).
const namingPascal = C.uint32_t(C.AGENTSTREAM_NAMING_PASCAL)

func sessionNewJSON(config []byte) (sessionPtr, error) {
	c, release := cstring(string(config))
	defer release()
	var s sessionPtr
	err := call(func() uint32 { return uint32(C.agentstream_session_new_json(c, namingPascal, &s)) })
	return s, err
}

func sessionAgent(s sessionPtr) string {
	return C.GoString(C.agentstream_session_agent(s))
}

// sessionSubscribe subscribes to a channel without a C handler: this package pulls each run and
// calls its handlers itself. Returns the subscription id.
func sessionSubscribe(s sessionPtr, channel string) (uint64, error) {
	c, release := cstring(channel)
	defer release()
	var id C.uint64_t
	err := call(func() uint32 { return uint32(C.agentstream_session_subscribe(s, c, &id)) })
	return uint64(id), err
}

func sessionOff(s sessionPtr, channel string) error {
	c, release := cstring(channel)
	defer release()
	return call(func() uint32 { return uint32(C.agentstream_session_off(s, c, nil)) })
}

func sessionStatusJSON(s sessionPtr) ([]byte, error) {
	return ownedString(func(out **C.char, n *C.size_t) C.agentstream_status {
		return C.agentstream_session_status_json(s, out, n)
	})
}

func sessionSessionID(s sessionPtr) ([]byte, error) {
	return ownedString(func(out **C.char, n *C.size_t) C.agentstream_status {
		return C.agentstream_session_session_id(s, out, n)
	})
}

// sessionSetSessionID: "" starts a new conversation with the next run.
func sessionSetSessionID(s sessionPtr, id string) error {
	if id == "" {
		return call(func() uint32 { return uint32(C.agentstream_session_set_session_id(s, nil)) })
	}
	c, release := cstring(id)
	defer release()
	return call(func() uint32 { return uint32(C.agentstream_session_set_session_id(s, c)) })
}

func sessionSetBudget(s sessionPtr, b budgetPtr) error {
	return call(func() uint32 { return uint32(C.agentstream_session_set_budget(s, b)) })
}

func sessionPause(s sessionPtr) error {
	return call(func() uint32 { return uint32(C.agentstream_session_pause(s)) })
}

func sessionResume(s sessionPtr) error {
	return call(func() uint32 { return uint32(C.agentstream_session_resume(s)) })
}

func sessionInterrupt(s sessionPtr, reason string) (bool, error) {
	c, release := cstring(reason)
	defer release()
	var did C.bool
	err := call(func() uint32 { return uint32(C.agentstream_session_interrupt(s, c, &did)) })
	return bool(did), err
}

func sessionKill(s sessionPtr) (bool, error) {
	var did C.bool
	err := call(func() uint32 { return uint32(C.agentstream_session_kill(s, &did)) })
	return bool(did), err
}

func sessionFree(s sessionPtr) {
	C.agentstream_session_free(s)
}

// ---- runs ----

// sessionStart starts a run from its request JSON (the core's RunRequest), read by this
// package (no C callback).
func sessionStart(s sessionPtr, request []byte) (runPtr, error) {
	c, release := cstring(string(request))
	defer release()
	var r runPtr
	err := call(func() uint32 { return uint32(C.agentstream_session_start(s, c, nil, nil, nil, &r)) })
	return r, err
}

// The agentstream_next values of a batch that is not one.
const (
	nextTimeout = uint32(C.AGENTSTREAM_NEXT_TIMEOUT)
	nextEnd     = uint32(C.AGENTSTREAM_NEXT_END)
)

// runNextBatch pulls what is ready, up to maxEvents deliveries (0: the core's default limits),
// as one tagged JSON array, waiting up to timeoutMs for the first delivery.
func runNextBatch(r runPtr, maxEvents int, timeoutMs int64) (uint32, []byte, error) {
	var out *C.char
	var n C.size_t
	var kind C.agentstream_next
	err := call(func() uint32 {
		return uint32(C.agentstream_run_next_batch_json(r, C.size_t(maxEvents), 0, C.int64_t(timeoutMs), &kind, &out, &n))
	})
	if err != nil {
		return 0, nil, err
	}
	return uint32(kind), takeString(out, n), nil
}

// runWait waits up to timeoutMs (negative: as long as it takes) for the result JSON.
func runWait(r runPtr, timeoutMs int64) ([]byte, error) {
	return ownedString(func(out **C.char, n *C.size_t) C.agentstream_status {
		return C.agentstream_run_wait(r, C.int64_t(timeoutMs), out, n)
	})
}

func runCancel(r runPtr, reason string) error {
	c, release := cstring(reason)
	defer release()
	return call(func() uint32 { return uint32(C.agentstream_run_cancel(r, c)) })
}

func runLeave(r runPtr) error {
	return call(func() uint32 { return uint32(C.agentstream_run_leave(r)) })
}

// runHandlerFailed counts a handler failure on the run; true for that handler's first.
func runHandlerFailed(r runPtr, handler uint64, channel string, sequence uint64, message string) (bool, error) {
	ch, releaseChannel := cstring(channel)
	defer releaseChannel()
	msg, releaseMessage := cstring(message)
	defer releaseMessage()
	var first C.bool
	err := call(func() uint32 {
		return uint32(C.agentstream_run_handler_failed(r, C.uint64_t(handler), ch, C.uint64_t(sequence), msg, &first))
	})
	return bool(first), err
}

func runID(r runPtr) (string, error) {
	b, err := ownedString(func(out **C.char, n *C.size_t) C.agentstream_status { return C.agentstream_run_id(r, out, n) })
	return string(b), err
}

func runPressure(r runPtr) ([]byte, error) {
	return ownedString(func(out **C.char, n *C.size_t) C.agentstream_status {
		return C.agentstream_run_pressure_json(r, out, n)
	})
}

func runFree(r runPtr) {
	C.agentstream_run_free(r)
}

// ---- budgets and sequence checks ----

func budgetNew(totalBytes, maxRuns int) (budgetPtr, error) {
	var b budgetPtr
	err := call(func() uint32 { return uint32(C.agentstream_budget_new(C.size_t(totalBytes), C.size_t(maxRuns), &b)) })
	return b, err
}

func budgetActive(b budgetPtr) (int, error) {
	var n C.size_t
	err := call(func() uint32 { return uint32(C.agentstream_budget_active(b, &n)) })
	return int(n), err
}

func budgetFree(b budgetPtr) {
	C.agentstream_budget_free(b)
}

func sequenceCheckNew() (sequencePtr, error) {
	var c sequencePtr
	err := call(func() uint32 { return uint32(C.agentstream_sequence_check_new(&c)) })
	return c, err
}

func sequenceCheckAccept(c sequencePtr, sequence, coalesced uint64) (bool, error) {
	var ok C.bool
	err := call(func() uint32 {
		return uint32(C.agentstream_sequence_check_accept(c, C.uint64_t(sequence), C.uint64_t(coalesced), &ok))
	})
	return bool(ok), err
}

func sequenceCheckMissing(c sequencePtr) (uint64, error) {
	var n C.uint64_t
	err := call(func() uint32 { return uint32(C.agentstream_sequence_check_missing(c, &n)) })
	return uint64(n), err
}

func sequenceCheckFree(c sequencePtr) {
	C.agentstream_sequence_check_free(c)
}

// ---- replay ----

func replayJSON(agent string, data []byte, options []byte) ([]byte, error) {
	a, releaseAgent := cstring(agent)
	defer releaseAgent()
	o, releaseOptions := cstring(string(options))
	defer releaseOptions()
	p, n := bytesArg(data)
	return ownedString(func(out **C.char, on *C.size_t) C.agentstream_status {
		return C.agentstream_replay_json(a, p, n, o, out, on)
	})
}
