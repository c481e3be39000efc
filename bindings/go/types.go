package agentstream

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Methods of the event model. The types themselves (the seed's OutputEvent and its eight
// SessionUpdate variants, LifecycleEvent, the on_event hook AgentEvent, the Envelope,
// DecodeStats, the run result, ...) are generated from the core's schema into types_gen.go
// (`make generate`); JSON tags are the wire names (camelCase for content, snake_case for
// lifecycle and hooks).
//
// Optional fields are pointers (or nil slices/maps): nil means the harness did not print it,
// which the wire shape keeps apart from "" / 0 / [] / {}. The Get* accessors return the zero
// value for nil. Open objects (rawInput, rawOutput, extra, details) are decoded with
// json.Number for numbers, so re-encoding an event gives back the same JSON.

// GetSessionID returns SessionID or "".
func (e *OutputEvent) GetSessionID() string { return deref(e.SessionID) }

// GetTimestamp returns Timestamp or "".
func (e *OutputEvent) GetTimestamp() string { return deref(e.Timestamp) }

// GetModel returns Model or "".
func (e *OutputEvent) GetModel() string { return deref(e.Model) }

// GetMessageID returns MessageID or "".
func (e *OutputEvent) GetMessageID() string { return deref(e.MessageID) }

// GetParentToolCallID returns ParentToolCallID or "".
func (e *OutputEvent) GetParentToolCallID() string { return deref(e.ParentToolCallID) }

// Kind is the update's sessionUpdate discriminator ("" when Update is nil).
func (e *OutputEvent) Kind() string {
	if e.Update == nil {
		return ""
	}
	return e.Update.SessionUpdateKind()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// MarshalJSON writes the exact wire shape.
func (e OutputEvent) MarshalJSON() ([]byte, error) {
	if e.Update == nil {
		return nil, errors.New("agentstream: OutputEvent.Update is nil")
	}
	var o objWriter
	o.optString("sessionId", e.SessionID)
	o.field("update", e.Update)
	o.optString("timestamp", e.Timestamp)
	o.optString("model", e.Model)
	o.optString("messageId", e.MessageID)
	o.optString("parentToolCallId", e.ParentToolCallID)
	if e.Extra != nil {
		o.field("extra", e.Extra)
	}
	return o.bytes()
}

// UnmarshalJSON reads the wire shape (numbers in open objects become json.Number).
func (e *OutputEvent) UnmarshalJSON(data []byte) error {
	var aux struct {
		SessionID        *string         `json:"sessionId"`
		Update           json.RawMessage `json:"update"`
		Timestamp        *string         `json:"timestamp"`
		Model            *string         `json:"model"`
		MessageID        *string         `json:"messageId"`
		ParentToolCallID *string         `json:"parentToolCallId"`
		Extra            json.RawMessage `json:"extra"`
	}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	if len(aux.Update) == 0 || string(aux.Update) == "null" {
		return errors.New("agentstream: OutputEvent without update")
	}
	u, err := UnmarshalSessionUpdate(aux.Update)
	if err != nil {
		return err
	}
	var extra map[string]any
	if len(aux.Extra) > 0 && string(aux.Extra) != "null" {
		if err := unmarshalNumbers(aux.Extra, &extra); err != nil {
			return err
		}
	}
	*e = OutputEvent{
		SessionID: aux.SessionID, Update: u, Timestamp: aux.Timestamp, Model: aux.Model,
		MessageID: aux.MessageID, ParentToolCallID: aux.ParentToolCallID, Extra: extra,
	}
	return nil
}

// TextBlock returns a "text" ContentBlock.
func TextBlock(text string) ContentBlock { return ContentBlock{Type: "text", Text: text} }

// MarshalJSON writes only the fields of the block's type.
func (c ContentBlock) MarshalJSON() ([]byte, error) {
	var o objWriter
	o.field("type", c.Type)
	switch c.Type {
	case "text":
		o.field("text", c.Text)
	case "image":
		o.field("data", c.Data)
		o.field("mimeType", c.MimeType)
		o.optString("uri", c.URI)
	default:
		if c.Text != "" {
			o.field("text", c.Text)
		}
		if c.Data != "" {
			o.field("data", c.Data)
		}
		if c.MimeType != "" {
			o.field("mimeType", c.MimeType)
		}
		o.optString("uri", c.URI)
	}
	return o.bytes()
}

// MarshalJSON writes only the fields of the item's type (a diff always has oldText, null for a
// new file).
func (c ToolCallContent) MarshalJSON() ([]byte, error) {
	var o objWriter
	o.field("type", c.Type)
	switch c.Type {
	case "diff":
		o.field("path", c.Path)
		o.field("oldText", c.OldText)
		o.field("newText", c.NewText)
	default:
		if c.Content != nil {
			o.field("content", c.Content)
		}
	}
	return o.bytes()
}

// MarshalJSON keeps an empty Extra ({}) apart from an absent one.
func (u TokenUsage) MarshalJSON() ([]byte, error) {
	var o objWriter
	if u.PromptTokens != nil {
		o.field("promptTokens", *u.PromptTokens)
	}
	if u.CompletionTokens != nil {
		o.field("completionTokens", *u.CompletionTokens)
	}
	if u.CachedTokens != nil {
		o.field("cachedTokens", *u.CachedTokens)
	}
	if u.CostUSD != nil {
		o.field("costUsd", *u.CostUSD)
	}
	if u.Extra != nil {
		o.field("extra", u.Extra)
	}
	return o.bytes()
}

// MarshalJSON writes the wire shape (sandbox_id always present, null when nil).
func (e LifecycleEvent) MarshalJSON() ([]byte, error) {
	var o objWriter
	o.field("sandbox_id", e.SandboxID)
	o.field("sandbox", e.Sandbox)
	o.field("agent", e.Agent)
	o.field("timestamp", e.Timestamp)
	if e.Browser != nil {
		o.field("browser", e.Browser)
	}
	o.field("reason", e.Reason)
	return o.bytes()
}

// IsTerminal reports whether the reason ends a run or command (exactly one per operation).
func (r LifecycleReason) IsTerminal() bool {
	switch r {
	case ReasonRunComplete, ReasonRunInterrupted, ReasonRunFailed, ReasonRunBackgroundComplete,
		ReasonRunBackgroundFailed, ReasonCommandComplete, ReasonCommandInterrupted, ReasonCommandFailed,
		ReasonCommandBackgroundComplete, ReasonCommandBackgroundFailed:
		return true
	}
	return false
}

// IsTerminal reports whether the hook ends the run's hook view.
func (e *AgentEvent) IsTerminal() bool {
	switch e.Type {
	case "run.completed", "run.failed", "run.cancelled", "run.stopped":
		return true
	}
	return false
}

// UnmarshalJSON reads the wire shape, numbers in Details as json.Number.
func (e *AgentEvent) UnmarshalJSON(data []byte) error {
	type plain AgentEvent
	var p plain
	if err := unmarshalNumbers(data, &p); err != nil {
		return err
	}
	*e = AgentEvent(p)
	return nil
}

// Content decodes Event for a "content" envelope.
func (e *Envelope) Content() (OutputEvent, error) {
	var ev OutputEvent
	if e.Channel != ChannelContent {
		return ev, fmt.Errorf("agentstream: envelope is on %q, not content", e.Channel)
	}
	err := ev.UnmarshalJSON(e.Event)
	return ev, err
}

// Lifecycle decodes Event for a "lifecycle" envelope.
func (e *Envelope) Lifecycle() (LifecycleEvent, error) {
	var ev LifecycleEvent
	if e.Channel != ChannelLifecycle {
		return ev, fmt.Errorf("agentstream: envelope is on %q, not lifecycle", e.Channel)
	}
	err := json.Unmarshal(e.Event, &ev)
	return ev, err
}

// Text decodes Event for a "stdout"/"stderr" envelope.
func (e *Envelope) Text() (string, error) {
	var s string
	if e.Channel != ChannelStdout && e.Channel != ChannelStderr {
		return s, fmt.Errorf("agentstream: envelope is on %q, not stdout/stderr", e.Channel)
	}
	err := json.Unmarshal(e.Event, &s)
	return s, err
}
