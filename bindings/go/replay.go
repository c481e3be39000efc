package agentstream

import (
	"encoding/json"
	"fmt"
)

// ReplayResult is everything a replayed run delivers.
type ReplayResult struct {
	// Items is the sequenced stream: run_start, each stdout line followed by its content
	// events, the terminal lifecycle event last.
	Items []Envelope `json:"items"`
	// Hooks are the hook events derived from it, in order.
	Hooks   []AgentEvent `json:"hooks"`
	Outcome RunOutcome   `json:"outcome"`
	Stats   DecodeStats  `json:"stats"`
}

// ReplayOptions are the options of ReplayWith.
type ReplayOptions struct {
	// RunID is stamped on every item and hook (default "replay").
	RunID string `json:"run_id,omitempty"`
	// AgentID is the hooks' agent id (default: the agent's name).
	AgentID string `json:"agent_id,omitempty"`
	// Timestamp of lifecycle and hook events (default "1970-01-01T00:00:00.000Z").
	Timestamp string `json:"timestamp,omitempty"`
	// DisableRedaction delivers tool-call inputs unmasked (masked by default, as in a run).
	DisableRedaction bool `json:"-"`
}

// replayOptionsJSON is ReplayOptions as the library reads them.
type replayOptionsJSON struct {
	ReplayOptions
	Redact *bool `json:"redact,omitempty"`
}

// Replay runs a recorded harness output (its stdout JSONL) through the whole pipeline without
// a process — decoder, run stream, terminal, hooks — deterministically. The golden
// tests/golden/<agent>/<case>.hooks.jsonl files are the Hooks of
// ReplayWith(agent, input, ReplayOptions{RunID: "golden"}).
func Replay(agent string, data []byte) (*ReplayResult, error) {
	return ReplayWith(agent, data, ReplayOptions{})
}

// ReplayWith is Replay with options.
func ReplayWith(agent string, data []byte, opts ReplayOptions) (*ReplayResult, error) {
	wire := replayOptionsJSON{ReplayOptions: opts}
	if opts.DisableRedaction {
		off := false
		wire.Redact = &off
	}
	options, err := json.Marshal(wire)
	if err != nil {
		return nil, err
	}
	out, err := replayJSON(agent, data, options)
	if err != nil {
		return nil, err
	}
	var r ReplayResult
	if err := unmarshalNumbers(out, &r); err != nil {
		return nil, fmt.Errorf("agentstream: replay: %w", err)
	}
	return &r, nil
}
