package agentstream

// Go functions called from C (the decoder's callback). Kept apart from ffi.go: a file with
// //export may only DECLARE C functions in its preamble.
//
// user_data is always a runtime/cgo.Handle: a C-held integer, never a Go pointer. The callback
// runs no user code (a Goexit or a panic must not unwind through the library's Rust frames):
// it only decodes the event; a panic doing that is parked and re-raised on the Go side once
// the library returned.

/*
#include <stddef.h>
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"
)

//export goAgentstreamDecoderEvent
func goAgentstreamDecoderEvent(userData unsafe.Pointer, data *C.char, n C.size_t) {
	st := cgo.Handle(uintptr(userData)).Value().(*feedState)
	if st.stopped {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			st.panicked, st.panicValue, st.stopped = true, r, true
		}
	}()
	// Copy: the JSON is borrowed from the library only for the duration of this call.
	var ev OutputEvent
	if err := ev.UnmarshalJSON(copyBytes(unsafe.Pointer(data), n)); err != nil {
		st.err, st.stopped = err, true
		return
	}
	st.events = append(st.events, ev)
}
