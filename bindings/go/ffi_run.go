package agentstream

// The C side of sessions' configuration, runs, commands and replay. Like ffi.go, this file
// defines C helpers and so must not use //export (export.go holds the Go callbacks).

/*
#include <stdint.h>
#include <stdlib.h>
#include "agentstream.h"

extern void goAgentstreamHandler(void *user_data, char *json, size_t len);
extern void goAgentstreamRelease(void *user_data);

// h == 0: no on_event callback.
static uint32_t as_start_run(agentstream_session *s, const char *prompt, const char *opts, uintptr_t h,
                             agentstream_run **out) {
	if (h == 0) return agentstream_session_start_run(s, prompt, opts, NULL, NULL, NULL, out);
	return agentstream_session_start_run(s, prompt, opts, (agentstream_event_cb)goAgentstreamHandler, (void *)h,
	                                     (agentstream_free_cb)goAgentstreamRelease, out);
}

static uint32_t as_start_command(agentstream_session *s, char **argv, size_t argc, const char *opts, uintptr_t h,
                                 agentstream_run **out) {
	if (h == 0) return agentstream_session_start_command(s, (const char *const *)argv, argc, opts, NULL, NULL, NULL, out);
	return agentstream_session_start_command(s, (const char *const *)argv, argc, opts,
	                                         (agentstream_event_cb)goAgentstreamHandler, (void *)h,
	                                         (agentstream_free_cb)goAgentstreamRelease, out);
}
*/
import "C"

import (
	"unsafe"
)

type runPtr = *C.agentstream_run

// cstr returns a C copy of s (NULL for nil) and its release function.
func cstr(s *string) (*C.char, func()) {
	if s == nil {
		return nil, func() {}
	}
	p := C.CString(*s)
	return p, func() { C.free(unsafe.Pointer(p)) }
}

// ---- session configuration and control ----

func sessionSet(s sessionPtr, what string, value *string) error {
	v, release := cstr(value)
	defer release()
	return call(func() uint32 {
		switch what {
		case "bin":
			return uint32(C.agentstream_session_set_bin(s, v))
		case "cwd":
			return uint32(C.agentstream_session_set_cwd(s, v))
		case "model":
			return uint32(C.agentstream_session_set_model(s, v))
		default:
			return uint32(C.agentstream_session_set_agent_id(s, v))
		}
	})
}

func sessionSetEnv(s sessionPtr, name, value string) error {
	n, v := C.CString(name), C.CString(value)
	defer C.free(unsafe.Pointer(n))
	defer C.free(unsafe.Pointer(v))
	return call(func() uint32 { return uint32(C.agentstream_session_set_env(s, n, v)) })
}

func sessionAddArg(s sessionPtr, arg string) error {
	a := C.CString(arg)
	defer C.free(unsafe.Pointer(a))
	return call(func() uint32 { return uint32(C.agentstream_session_add_arg(s, a)) })
}

func sessionPause(s sessionPtr) error {
	return call(func() uint32 { return uint32(C.agentstream_session_pause(s)) })
}

func sessionResume(s sessionPtr) error {
	return call(func() uint32 { return uint32(C.agentstream_session_resume(s)) })
}

func sessionKill(s sessionPtr) error {
	return call(func() uint32 { return uint32(C.agentstream_session_kill(s)) })
}

func sessionInterrupt(s sessionPtr, reason string) error {
	r := C.CString(reason)
	defer C.free(unsafe.Pointer(r))
	return call(func() uint32 { return uint32(C.agentstream_session_interrupt(s, r)) })
}

// ---- runs ----

// runStart starts a harness run; h (0 for none) is the on_event handler's cgo.Handle, owned by
// the library on success.
func runStart(s sessionPtr, prompt string, options []byte, h uintptr) (runPtr, error) {
	p := C.CString(prompt)
	defer C.free(unsafe.Pointer(p))
	o := C.CString(string(options))
	defer C.free(unsafe.Pointer(o))
	var r runPtr
	err := call(func() uint32 { return uint32(C.as_start_run(s, p, o, C.uintptr_t(h), &r)) })
	return r, err
}

func commandStart(s sessionPtr, argv []string, options []byte, h uintptr) (runPtr, error) {
	n := len(argv)
	if n == 0 {
		n = 1 // a valid allocation; argc 0 is refused by the library
	}
	arr := (**C.char)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	defer C.free(unsafe.Pointer(arr))
	cargs := unsafe.Slice(arr, n)
	for i, a := range argv {
		cargs[i] = C.CString(a)
	}
	defer func() {
		for i := range argv {
			C.free(unsafe.Pointer(cargs[i]))
		}
	}()
	o := C.CString(string(options))
	defer C.free(unsafe.Pointer(o))
	var r runPtr
	err := call(func() uint32 {
		return uint32(C.as_start_command(s, arr, C.size_t(len(argv)), o, C.uintptr_t(h), &r))
	})
	return r, err
}

// runWait waits up to timeoutMs (negative: forever); StatusNotReady when it did not finish.
func runWait(r runPtr, timeoutMs int64) ([]byte, error) {
	var out *C.char
	var n C.size_t
	if err := call(func() uint32 { return uint32(C.agentstream_run_wait(r, C.int64_t(timeoutMs), &out, &n)) }); err != nil {
		return nil, err
	}
	return takeString(out, n), nil
}

// The agentstream_next values.
const (
	nextBatch   = uint32(C.AGENTSTREAM_NEXT_BATCH)
	nextTimeout = uint32(C.AGENTSTREAM_NEXT_TIMEOUT)
	nextEnd     = uint32(C.AGENTSTREAM_NEXT_END)
)

// runNextBatch pulls up to max deliveries as one tagged JSON array.
func runNextBatch(r runPtr, max int, timeoutMs int64) (uint32, []byte, error) {
	var out *C.char
	var n C.size_t
	var kind C.agentstream_next
	err := call(func() uint32 {
		return uint32(C.agentstream_run_next_batch_json(r, C.size_t(max), C.int64_t(timeoutMs), &kind, &out, &n))
	})
	if err != nil {
		return 0, nil, err
	}
	return uint32(kind), takeString(out, n), nil
}

func runCancel(r runPtr, reason string) error {
	c := C.CString(reason)
	defer C.free(unsafe.Pointer(c))
	return call(func() uint32 { return uint32(C.agentstream_run_cancel(r, c)) })
}

func runLeave(r runPtr) error {
	return call(func() uint32 { return uint32(C.agentstream_run_leave(r)) })
}

func runID(r runPtr) (string, error) {
	var out *C.char
	var n C.size_t
	err := call(func() uint32 { return uint32(C.agentstream_run_id(r, &out, &n)) })
	return string(takeString(out, n)), err
}

func runPressure(r runPtr) ([]byte, error) {
	var out *C.char
	var n C.size_t
	err := call(func() uint32 { return uint32(C.agentstream_run_pressure_json(r, &out, &n)) })
	return takeString(out, n), err
}

func runFree(r runPtr) {
	C.agentstream_run_free(r)
}

// ---- replay ----

func replayJSON(agent string, data []byte, options []byte) ([]byte, error) {
	a := C.CString(agent)
	defer C.free(unsafe.Pointer(a))
	o := C.CString(string(options))
	defer C.free(unsafe.Pointer(o))
	p, n := bytesArg(data)
	var out *C.char
	var on C.size_t
	err := call(func() uint32 { return uint32(C.agentstream_replay_json(a, p, n, o, &out, &on)) })
	if err != nil {
		return nil, err
	}
	return takeString(out, on), nil
}
