//go:build agentstream_static

package agentstream

// linkedStatically says how this test binary links libagentstream.
const linkedStatically = true
