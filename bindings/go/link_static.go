//go:build agentstream_static

package agentstream

// With `-tags agentstream_static`: link libagentstream.a as agentstream-static.pc describes it,
// so programs and test binaries need no shared library at run time.

/*
#cgo pkg-config: agentstream-static
*/
import "C"
