//go:build agentstream_dynamic

package agentstream

// With `-tags agentstream_dynamic`: link -lagentstream from the linker's search path; point
// at it with CGO_LDFLAGS="-L/path/to/lib -Wl,-rpath,/path/to/lib" (and CGO_CFLAGS="-I..." for
// a header installed elsewhere).

/*
#cgo CFLAGS: -I${SRCDIR}/../../include
#cgo LDFLAGS: -lagentstream
*/
import "C"
