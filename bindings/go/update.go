package agentstream

// The session update kinds (their structs, SessionUpdateKind and the constructor by kind) are
// generated into types_gen.go; this file holds their hand-written methods: accessors, the
// decoding by kind, and the exact wire encoding of each.

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// GetToolName returns ToolName or "".
func (t *ToolCall) GetToolName() string { return deref(t.ToolName) }

// GetStatus returns Status or "".
func (t *ToolCallUpdate) GetStatus() ToolCallStatus {
	if t.Status == nil {
		return ""
	}
	return *t.Status
}

// GetTitle returns Title or "".
func (t *ToolCallUpdate) GetTitle() string { return deref(t.Title) }

// UnknownUpdate is an update of a kind this package does not know; Raw is its JSON.
type UnknownUpdate struct {
	Kind string
	Raw  json.RawMessage
}

// SessionUpdateKind returns the unknown discriminator.
func (u *UnknownUpdate) SessionUpdateKind() string { return u.Kind }

func (*UnknownUpdate) isSessionUpdate() {}

// IsWork reports whether an update is agent work: everything but "error" and "usage" (the
// seed's did_work rule).
func IsWork(u SessionUpdate) bool {
	switch u.(type) {
	case *AgentError, *AgentUsage, nil:
		return false
	}
	return true
}

// DidWork reports whether any event of the list is agent work.
func DidWork(events []OutputEvent) bool {
	for i := range events {
		if IsWork(events[i].Update) {
			return true
		}
	}
	return false
}

// UnmarshalSessionUpdate decodes one update by its sessionUpdate discriminator.
func UnmarshalSessionUpdate(data []byte) (SessionUpdate, error) {
	kind, ok := leadingKind(data)
	if !ok {
		var head struct {
			Kind *string `json:"sessionUpdate"`
		}
		if err := json.Unmarshal(data, &head); err != nil {
			return nil, err
		}
		if head.Kind == nil {
			return nil, fmt.Errorf("agentstream: update without sessionUpdate: %s", data)
		}
		kind = *head.Kind
	}
	// Only variants holding free JSON need its numbers kept exact (json.Number); the others
	// decode with the faster json.Unmarshal.
	u, exactNumbers := newSessionUpdate(kind)
	if u == nil {
		raw := make(json.RawMessage, len(data))
		copy(raw, data)
		return &UnknownUpdate{Kind: kind, Raw: raw}, nil
	}
	var err error
	if exactNumbers {
		err = unmarshalNumbers(data, u)
	} else {
		err = json.Unmarshal(data, u)
	}
	if err != nil {
		return nil, fmt.Errorf("agentstream: %s update: %w", kind, err)
	}
	return u, nil
}

// leadingKind reads the discriminator when it is the first key, as the library writes it
// (`{"sessionUpdate":"tool_call",...`), without a full scan.
func leadingKind(data []byte) (string, bool) {
	const prefix = `{"sessionUpdate":"`
	if !bytes.HasPrefix(data, []byte(prefix)) {
		return "", false
	}
	rest := data[len(prefix):]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || bytes.IndexByte(rest[:end], '\\') >= 0 {
		return "", false
	}
	return string(rest[:end]), true
}

func (u *AgentMessageChunk) MarshalJSON() ([]byte, error) {
	return marshalChunk(u.SessionUpdateKind(), u.Content)
}
func (u *AgentThoughtChunk) MarshalJSON() ([]byte, error) {
	return marshalChunk(u.SessionUpdateKind(), u.Content)
}
func (u *UserMessageChunk) MarshalJSON() ([]byte, error) {
	return marshalChunk(u.SessionUpdateKind(), u.Content)
}

func marshalChunk(kind string, c ContentBlock) ([]byte, error) {
	var o objWriter
	o.field("sessionUpdate", kind)
	o.field("content", c)
	return o.bytes()
}

// MarshalJSON writes the wire shape with its discriminator.
func (u *ToolCall) MarshalJSON() ([]byte, error) {
	var o objWriter
	o.field("sessionUpdate", u.SessionUpdateKind())
	o.field("toolCallId", u.ToolCallID)
	o.field("title", u.Title)
	o.optString("toolName", u.ToolName)
	o.field("kind", u.Kind)
	o.field("status", u.Status)
	if u.RawInput != nil {
		o.field("rawInput", u.RawInput)
	}
	if u.Content != nil {
		o.field("content", u.Content)
	}
	if u.Locations != nil {
		o.field("locations", u.Locations)
	}
	return o.bytes()
}

// MarshalJSON writes the wire shape with its discriminator.
func (u *ToolCallUpdate) MarshalJSON() ([]byte, error) {
	var o objWriter
	o.field("sessionUpdate", u.SessionUpdateKind())
	o.field("toolCallId", u.ToolCallID)
	if u.Status != nil {
		o.field("status", *u.Status)
	}
	o.optString("title", u.Title)
	if u.Content != nil {
		o.field("content", u.Content)
	}
	if u.Locations != nil {
		o.field("locations", u.Locations)
	}
	if u.RawOutput != nil {
		o.field("rawOutput", u.RawOutput)
	}
	return o.bytes()
}

// MarshalJSON writes the wire shape with its discriminator (entries always present).
func (u *Plan) MarshalJSON() ([]byte, error) {
	entries := u.Entries
	if entries == nil {
		entries = []PlanEntry{}
	}
	var o objWriter
	o.field("sessionUpdate", u.SessionUpdateKind())
	o.field("entries", entries)
	return o.bytes()
}

// MarshalJSON writes the wire shape with its discriminator.
func (u *AgentError) MarshalJSON() ([]byte, error) {
	var o objWriter
	o.field("sessionUpdate", u.SessionUpdateKind())
	o.field("message", u.Message)
	o.field("fatal", u.Fatal)
	return o.bytes()
}

// MarshalJSON writes the wire shape with its discriminator.
func (u *AgentUsage) MarshalJSON() ([]byte, error) {
	var o objWriter
	o.field("sessionUpdate", u.SessionUpdateKind())
	o.field("scope", u.Scope)
	o.field("usage", u.Usage)
	return o.bytes()
}

// MarshalJSON writes the raw JSON back.
func (u *UnknownUpdate) MarshalJSON() ([]byte, error) { return u.Raw, nil }
