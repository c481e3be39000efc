//go:build !agentstream_dynamic

package agentstream

// Default: link the static library built in this repository (`make build-c`, i.e.
// `cargo build --release -p agentstream-c`), so test binaries and programs need no .so at run
// time. Build with `-tags agentstream_dynamic` to link a system libagentstream instead.

/*
#cgo CFLAGS: -I${SRCDIR}/../../include
#cgo LDFLAGS: ${SRCDIR}/../../target/release/libagentstream.a -lgcc_s -lutil -lrt -lpthread -lm -ldl
*/
import "C"
