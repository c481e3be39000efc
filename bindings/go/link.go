//go:build !agentstream_static

package agentstream

// Default: link libagentstream.so as pkg-config describes it (agentstream.pc, installed by the
// release tarball or `make install`; PKG_CONFIG_PATH points at a prefix that is not the
// system's). A program then needs libagentstream.so.0 at run time (the loader's path, or
// LD_LIBRARY_PATH). Build with `-tags agentstream_static` to link the static library instead.

/*
#cgo pkg-config: agentstream
*/
import "C"
