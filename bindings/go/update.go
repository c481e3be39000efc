package agentstream

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// SessionUpdate is what an OutputEvent reports: one of the eight seed variants below, told
// apart with a type switch (or SessionUpdateKind, the wire discriminator):
//
//	switch u := ev.Update.(type) {
//	case *agentstream.AgentMessageChunk:
//		fmt.Print(u.Content.Text)
//	case *agentstream.ToolCall:
//		fmt.Println(u.GetToolName(), u.Kind, u.Status)
//	}
//
// A kind this version of the package does not know arrives as *UnknownUpdate, which keeps
// the raw JSON.
type SessionUpdate interface {
	// SessionUpdateKind is the sessionUpdate discriminator, e.g. "tool_call".
	SessionUpdateKind() string
	isSessionUpdate()
}

// AgentMessageChunk is text or an image from the agent, in pieces.
type AgentMessageChunk struct {
	Content ContentBlock `json:"content"`
}

// AgentThoughtChunk is reasoning/thinking, in pieces.
type AgentThoughtChunk struct {
	Content ContentBlock `json:"content"`
}

// UserMessageChunk is the user's message echoed by the harness.
type UserMessageChunk struct {
	Content ContentBlock `json:"content"`
}

// ToolCall is a tool call starting (or announced).
type ToolCall struct {
	// ToolCallID matches later ToolCallUpdates.
	ToolCallID string `json:"toolCallId"`
	// Title is for people to read (not round-trippable: use ToolName).
	Title string `json:"title"`
	// ToolName is the harness-native tool name, verbatim (e.g. "Bash", "mcp__server__tool").
	ToolName *string        `json:"toolName,omitempty"`
	Kind     ToolKind       `json:"kind"`
	Status   ToolCallStatus `json:"status"`
	// RawInput is the tool input as the harness printed it.
	RawInput  any                `json:"rawInput,omitempty"`
	Content   []ToolCallContent  `json:"content,omitempty"`
	Locations []ToolCallLocation `json:"locations,omitempty"`
}

// GetToolName returns ToolName or "".
func (t *ToolCall) GetToolName() string { return deref(t.ToolName) }

// ToolCallUpdate is a tool call progressing or finishing (its call may not have been seen:
// handle out-of-order).
type ToolCallUpdate struct {
	ToolCallID string          `json:"toolCallId"`
	Status     *ToolCallStatus `json:"status,omitempty"`
	Title      *string         `json:"title,omitempty"`
	// Content is the result exactly as the harness sent it (never fenced or prefixed).
	Content   []ToolCallContent  `json:"content,omitempty"`
	Locations []ToolCallLocation `json:"locations,omitempty"`
	// RawOutput is the harness's own structured record of the result, verbatim (read an exit
	// code from here rather than from prose).
	RawOutput any `json:"rawOutput,omitempty"`
}

// GetStatus returns Status or "".
func (t *ToolCallUpdate) GetStatus() ToolCallStatus {
	if t.Status == nil {
		return ""
	}
	return *t.Status
}

// GetTitle returns Title or "".
func (t *ToolCallUpdate) GetTitle() string { return deref(t.Title) }

// Plan is the agent's todo list; each plan replaces the whole list.
type Plan struct {
	Entries []PlanEntry `json:"entries"`
}

// AgentError is a failure the HARNESS reported (sessionUpdate "error"). Not agent work.
type AgentError struct {
	// Message is the harness's own message, verbatim.
	Message string `json:"message"`
	// Fatal is true when the harness treated it as terminal for the turn.
	Fatal bool `json:"fatal"`
}

// AgentUsage is token accounting the HARNESS reported (sessionUpdate "usage"). Not agent work.
type AgentUsage struct {
	Scope UsageScope `json:"scope"`
	Usage TokenUsage `json:"usage"`
}

// UnknownUpdate is an update of a kind this package does not know; Raw is its JSON.
type UnknownUpdate struct {
	Kind string
	Raw  json.RawMessage
}

func (*AgentMessageChunk) SessionUpdateKind() string { return "agent_message_chunk" }
func (*AgentThoughtChunk) SessionUpdateKind() string { return "agent_thought_chunk" }
func (*UserMessageChunk) SessionUpdateKind() string  { return "user_message_chunk" }
func (*ToolCall) SessionUpdateKind() string          { return "tool_call" }
func (*ToolCallUpdate) SessionUpdateKind() string    { return "tool_call_update" }
func (*Plan) SessionUpdateKind() string              { return "plan" }
func (*AgentError) SessionUpdateKind() string        { return "error" }
func (*AgentUsage) SessionUpdateKind() string        { return "usage" }

// SessionUpdateKind returns the unknown discriminator.
func (u *UnknownUpdate) SessionUpdateKind() string { return u.Kind }

func (*AgentMessageChunk) isSessionUpdate() {}
func (*AgentThoughtChunk) isSessionUpdate() {}
func (*UserMessageChunk) isSessionUpdate()  {}
func (*ToolCall) isSessionUpdate()          {}
func (*ToolCallUpdate) isSessionUpdate()    {}
func (*Plan) isSessionUpdate()              {}
func (*AgentError) isSessionUpdate()        {}
func (*AgentUsage) isSessionUpdate()        {}
func (*UnknownUpdate) isSessionUpdate()     {}

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
	var u SessionUpdate
	// Only these variants hold open JSON values whose numbers must stay exact (json.Number);
	// the others decode with the faster json.Unmarshal.
	exactNumbers := false
	switch kind {
	case "agent_message_chunk":
		u = new(AgentMessageChunk)
	case "agent_thought_chunk":
		u = new(AgentThoughtChunk)
	case "user_message_chunk":
		u = new(UserMessageChunk)
	case "tool_call":
		u, exactNumbers = new(ToolCall), true
	case "tool_call_update":
		u, exactNumbers = new(ToolCallUpdate), true
	case "plan":
		u = new(Plan)
	case "error":
		u = new(AgentError)
	case "usage":
		u, exactNumbers = new(AgentUsage), true
	default:
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
