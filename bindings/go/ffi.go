package agentstream

// The C side of the decoder and what every call shares: small C helpers that pass a
// cgo.Handle as the callback's user_data (the cast from an integer to void* happens in C, so
// `go vet` has no unsafe.Pointer(uintptr) to flag), and the one place that turns a status into a
// Go error. This file must not use //export: a preamble of a file with //export may only
// declare C functions, not define them (see export.go for the Go callback). ffi_run.go has the
// client, run, budget and sequence-check calls.

/*
#include <stdint.h>
#include <stdlib.h>
#include "agentstream.h"

// Defined in Go (export.go).
extern void goAgentstreamDecoderEvent(void *user_data, char *json, size_t len);

static uint32_t as_decoder_feed(agentstream_decoder *d, const uint8_t *b, size_t n, uintptr_t h) {
	return agentstream_decoder_feed(d, b, n, (agentstream_event_cb)goAgentstreamDecoderEvent, (void *)h);
}

static uint32_t as_decoder_finish(agentstream_decoder *d, uintptr_t h) {
	return agentstream_decoder_finish(d, (agentstream_event_cb)goAgentstreamDecoderEvent, (void *)h);
}
*/
import "C"

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"
)

// Handle types usable from files without cgo.
type decoderPtr = *C.agentstream_decoder

// call runs one C call that returns a status and, on failure, reads the thread-local error
// message ON THE SAME OS THREAD: without LockOSThread the goroutine could move to another
// thread between the two cgo calls and read that thread's message.
func call(f func() uint32) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	st := f()
	if st == 0 {
		return nil
	}
	return errorOfStatus(st, lastErrorMessage())
}

// lastErrorMessage reads agentstream_last_error_message (caller holds the OS thread).
func lastErrorMessage() string {
	var n C.size_t
	C.agentstream_last_error_message(nil, 0, &n)
	buf := make([]byte, int(n)+1)
	C.agentstream_last_error_message((*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf)), &n)
	return string(buf[:int(n)])
}

// bytesArg returns a pointer/length pair for a Go byte slice (NULL for an empty one). The C
// side only reads it during the call and keeps nothing.
func bytesArg(b []byte) (*C.uint8_t, C.size_t) {
	if len(b) == 0 {
		return nil, 0
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0])), C.size_t(len(b))
}

// takeString copies an owned C string into Go memory and frees it.
func takeString(p *C.char, n C.size_t) []byte {
	if p == nil {
		return nil
	}
	b := copyBytes(unsafe.Pointer(p), n)
	C.agentstream_string_free(p)
	return b
}

// copyBytes copies n bytes from C memory into Go memory. (C.GoBytes takes an int32 length: a
// string of 2 GiB or more, a replay's JSON for instance, would be cut short or panic.)
func copyBytes(p unsafe.Pointer, n C.size_t) []byte {
	if n == 0 {
		return []byte{}
	}
	if uint64(n) > uint64(math.MaxInt) {
		panic(fmt.Sprintf("agentstream: a string of %d bytes does not fit in a Go slice", uint64(n)))
	}
	return append([]byte(nil), unsafe.Slice((*byte)(p), int(n))...)
}

// Version is the version of the linked libagentstream (agentstream_version()).
func Version() string {
	return C.GoString(C.agentstream_version())
}

// HeaderVersion is the AGENTSTREAM_VERSION macro of the header this package was compiled with.
const HeaderVersion = C.AGENTSTREAM_VERSION

// statusName is agentstream_status_name: "ok", the core error kind's name, or "unknown".
func statusName(status uint32) string {
	return C.GoString(C.agentstream_status_name(C.uint32_t(status)))
}

// ValidateChannel checks a channel name with the rule of Client.On: nil for "content",
// "lifecycle", "stdout" and "stderr"; otherwise an *Error (ErrInvalidArgument) whose message
// lists the four.
func ValidateChannel(name string) error {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return call(func() uint32 { return uint32(C.agentstream_channel_validate(cname)) })
}

// ---- decoder ----

func decoderNew(agent string, maxLineBytes int, redact bool) (*C.agentstream_decoder, error) {
	cagent := C.CString(agent)
	defer C.free(unsafe.Pointer(cagent))
	var d *C.agentstream_decoder
	err := call(func() uint32 {
		return uint32(C.agentstream_decoder_new_with_options(cagent, C.size_t(maxLineBytes), &d))
	})
	if err == nil && !redact {
		if err = call(func() uint32 { return uint32(C.agentstream_decoder_set_redact(d, C.bool(false))) }); err != nil {
			C.agentstream_decoder_free(d)
			return nil, err
		}
	}
	return d, err
}

// decoderJSON runs one of the *_json functions and returns the owned JSON it produced.
func decoderJSON(f func(out **C.char, n *C.size_t) C.agentstream_status) ([]byte, error) {
	var out *C.char
	var n C.size_t
	if err := call(func() uint32 { return uint32(f(&out, &n)) }); err != nil {
		return nil, err
	}
	return takeString(out, n), nil
}

func decoderFeedJSON(d *C.agentstream_decoder, data []byte) ([]byte, error) {
	p, n := bytesArg(data)
	return decoderJSON(func(out **C.char, on *C.size_t) C.agentstream_status {
		return C.agentstream_decoder_feed_json(d, p, n, out, on)
	})
}

func decoderFinishJSON(d *C.agentstream_decoder) ([]byte, error) {
	return decoderJSON(func(out **C.char, on *C.size_t) C.agentstream_status {
		return C.agentstream_decoder_finish_json(d, out, on)
	})
}

func decoderStatsJSON(d *C.agentstream_decoder) ([]byte, error) {
	return decoderJSON(func(out **C.char, on *C.size_t) C.agentstream_status {
		return C.agentstream_decoder_stats_json(d, out, on)
	})
}

func decoderDiagnosticsJSON(d *C.agentstream_decoder) ([]byte, error) {
	return decoderJSON(func(out **C.char, on *C.size_t) C.agentstream_status {
		return C.agentstream_decoder_take_diagnostics_json(d, out, on)
	})
}

func decoderSessionID(d *C.agentstream_decoder) ([]byte, error) {
	return decoderJSON(func(out **C.char, on *C.size_t) C.agentstream_status {
		return C.agentstream_decoder_session_id(d, out, on)
	})
}

func decoderFeedCallback(d *C.agentstream_decoder, data []byte, h uintptr) error {
	p, n := bytesArg(data)
	return call(func() uint32 { return uint32(C.as_decoder_feed(d, p, n, C.uintptr_t(h))) })
}

func decoderFinishCallback(d *C.agentstream_decoder, h uintptr) error {
	return call(func() uint32 { return uint32(C.as_decoder_finish(d, C.uintptr_t(h))) })
}

func decoderFree(d *C.agentstream_decoder) {
	C.agentstream_decoder_free(d)
}

// ---- test-only surface (used by the package tests; _test.go files cannot use cgo) ----

func testingPanic() error {
	return call(func() uint32 { return uint32(C.agentstream_testing_panic()) })
}
