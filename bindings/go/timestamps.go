package agentstream

import "time"

// Timestamps as time.Time. The wire types keep the ISO 8601 text the core (or the harness)
// wrote; these read it.

// parseTimestamp reads an RFC 3339 timestamp; the zero Time when s is empty or not one.
func parseTimestamp(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// Time is when the hook fired (UTC).
func (e *AgentEvent) Time() time.Time { return parseTimestamp(e.Timestamp) }

// Time is when the lifecycle transition happened (UTC).
func (e *LifecycleEvent) Time() time.Time { return parseTimestamp(e.Timestamp) }

// Time is the harness's own clock for this line; the zero Time when the harness printed none
// (or not in RFC 3339).
func (e *OutputEvent) Time() time.Time {
	if e.Timestamp == nil {
		return time.Time{}
	}
	return parseTimestamp(*e.Timestamp)
}
