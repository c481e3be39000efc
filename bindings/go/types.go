package agentstream

import (
	"encoding/json"
	"errors"
	"fmt"
)

// The event model: Go mirrors of the core's wire shapes (the seed's OutputEvent and its eight
// SessionUpdate variants, LifecycleEvent, the on_event hook AgentEvent, DecodeStats). JSON
// tags are the wire names (camelCase for content, snake_case for lifecycle and hooks).
//
// Optional fields are pointers (or nil slices/maps): nil means the harness did not print it,
// which the wire shape keeps apart from "" / 0 / [] / {}. The Get* accessors return the zero
// value for nil. Open objects (rawInput, rawOutput, extra, details) are decoded with
// json.Number for numbers, so re-encoding an event gives back the same JSON.

// OutputEvent is one parsed event on the "content" channel: a session update plus the facts of
// the wire line it came from.
type OutputEvent struct {
	// SessionID is the harness's session/thread id, stamped on every event once seen.
	SessionID *string `json:"sessionId,omitempty"`
	// Update is what happened: one of *AgentMessageChunk, *AgentThoughtChunk,
	// *UserMessageChunk, *ToolCall, *ToolCallUpdate, *Plan, *AgentError, *AgentUsage (or
	// *UnknownUpdate for a kind this package does not know yet). Use a type switch.
	Update SessionUpdate `json:"update"`
	// Timestamp is the harness's own clock for this line (ISO 8601).
	Timestamp *string `json:"timestamp,omitempty"`
	// Model is the model the harness named for this line.
	Model *string `json:"model,omitempty"`
	// MessageID is the harness's id for the LLM message this line belongs to.
	MessageID *string `json:"messageId,omitempty"`
	// ParentToolCallID is set on a subagent's lines: the parent tool call that delegated.
	ParentToolCallID *string `json:"parentToolCallId,omitempty"`
	// Extra holds other facts of the line, with the harness's own key names (e.g. stop_reason).
	Extra map[string]any `json:"extra,omitempty"`
}

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

// ContentBlock is a piece of message content: Type "text" (Text) or "image" (Data, MimeType,
// URI).
type ContentBlock struct {
	Type string `json:"type"`
	// Text of a "text" block.
	Text string `json:"text,omitempty"`
	// Data is an image's base64 bytes ("" when only a URI is known).
	Data string `json:"data,omitempty"`
	// MimeType of an image, e.g. "image/png" ("" when unknown).
	MimeType string `json:"mimeType,omitempty"`
	// URI where an image lives, when it was referenced rather than inlined.
	URI *string `json:"uri,omitempty"`
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

// ToolCallContent is content attached to a tool call: Type "content" (Content) or "diff" (Path,
// OldText, NewText).
type ToolCallContent struct {
	Type string `json:"type"`
	// Content of a "content" item: the harness's result text exactly, or an image.
	Content *ContentBlock `json:"content,omitempty"`
	// Path of the file a "diff" changes.
	Path string `json:"path,omitempty"`
	// OldText before the change; nil for a new file (JSON null).
	OldText *string `json:"oldText"`
	// NewText after the change.
	NewText string `json:"newText,omitempty"`
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

// ToolCallLocation is a file a tool touches.
type ToolCallLocation struct {
	Path string  `json:"path"`
	Line *uint64 `json:"line,omitempty"`
}

// PlanEntry is one todo of a plan.
type PlanEntry struct {
	Content  string            `json:"content"`
	Status   PlanEntryStatus   `json:"status"`
	Priority PlanEntryPriority `json:"priority"`
}

// TokenUsage holds token counters with Harbor ATIF Metrics names; nil = not printed.
type TokenUsage struct {
	// PromptTokens is input INCLUDING the cached and cache-written shares.
	PromptTokens     *uint64 `json:"promptTokens,omitempty"`
	CompletionTokens *uint64 `json:"completionTokens,omitempty"`
	// CachedTokens is the cache-read share of PromptTokens.
	CachedTokens *uint64 `json:"cachedTokens,omitempty"`
	// CostUSD only when the harness priced it.
	CostUSD *float64 `json:"costUsd,omitempty"`
	// Extra holds the harness's other counters, its own key names verbatim.
	Extra map[string]any `json:"extra,omitempty"`
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

// ToolKind is the category of a tool.
type ToolKind string

// Tool kinds.
const (
	ToolKindRead       ToolKind = "read"
	ToolKindEdit       ToolKind = "edit"
	ToolKindDelete     ToolKind = "delete"
	ToolKindMove       ToolKind = "move"
	ToolKindSearch     ToolKind = "search"
	ToolKindExecute    ToolKind = "execute"
	ToolKindThink      ToolKind = "think"
	ToolKindFetch      ToolKind = "fetch"
	ToolKindSwitchMode ToolKind = "switch_mode"
	ToolKindOther      ToolKind = "other"
)

// ToolCallStatus is the status of a tool call.
type ToolCallStatus string

// Tool call statuses.
const (
	ToolCallPending    ToolCallStatus = "pending"
	ToolCallInProgress ToolCallStatus = "in_progress"
	ToolCallCompleted  ToolCallStatus = "completed"
	ToolCallFailed     ToolCallStatus = "failed"
)

// PlanEntryStatus is where a todo stands.
type PlanEntryStatus string

// Plan entry statuses.
const (
	PlanEntryPending    PlanEntryStatus = "pending"
	PlanEntryInProgress PlanEntryStatus = "in_progress"
	PlanEntryCompleted  PlanEntryStatus = "completed"
)

// PlanEntryPriority is how important a todo is.
type PlanEntryPriority string

// Plan entry priorities.
const (
	PriorityHigh   PlanEntryPriority = "high"
	PriorityMedium PlanEntryPriority = "medium"
	PriorityLow    PlanEntryPriority = "low"
)

// UsageScope says whether a usage update covers one LLM call or the whole run.
type UsageScope string

// Usage scopes.
const (
	// UsageScopeCall: one LLM inference (repeats per line of one message: keep the last per
	// MessageID, then add across messages).
	UsageScopeCall UsageScope = "call"
	// UsageScopeRun: the harness's own whole-run total.
	UsageScopeRun UsageScope = "run"
)

// LifecycleEvent is a sandbox/agent state transition on the "lifecycle" channel (snake_case
// keys, as in the seed).
type LifecycleEvent struct {
	// SandboxID is nil for a local run (JSON null).
	SandboxID *string      `json:"sandbox_id"`
	Sandbox   SandboxState `json:"sandbox"`
	Agent     AgentState   `json:"agent"`
	// Timestamp is ISO 8601 UTC.
	Timestamp string `json:"timestamp"`
	// Browser holds live_url/session_id/session_tag for "browser_ready".
	Browser map[string]string `json:"browser,omitempty"`
	Reason  LifecycleReason   `json:"reason"`
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

// SandboxState is the sandbox (local environment) state.
type SandboxState string

// Sandbox states.
const (
	SandboxStateBooting SandboxState = "booting"
	SandboxStateError   SandboxState = "error"
	SandboxStateReady   SandboxState = "ready"
	SandboxStateRunning SandboxState = "running"
	SandboxStatePaused  SandboxState = "paused"
	SandboxStateStopped SandboxState = "stopped"
)

// AgentState is the agent state.
type AgentState string

// Agent states.
const (
	AgentStateIdle        AgentState = "idle"
	AgentStateRunning     AgentState = "running"
	AgentStateInterrupted AgentState = "interrupted"
	AgentStateError       AgentState = "error"
)

// LifecycleReason is why a lifecycle event fired.
type LifecycleReason string

// Lifecycle reasons (the seed's full list).
const (
	ReasonBrowserReady              LifecycleReason = "browser_ready"
	ReasonSandboxBoot               LifecycleReason = "sandbox_boot"
	ReasonSandboxReady              LifecycleReason = "sandbox_ready"
	ReasonSandboxConnected          LifecycleReason = "sandbox_connected"
	ReasonSandboxPause              LifecycleReason = "sandbox_pause"
	ReasonSandboxResume             LifecycleReason = "sandbox_resume"
	ReasonSandboxKilled             LifecycleReason = "sandbox_killed"
	ReasonSandboxError              LifecycleReason = "sandbox_error"
	ReasonRunStart                  LifecycleReason = "run_start"
	ReasonRunComplete               LifecycleReason = "run_complete"
	ReasonRunInterrupted            LifecycleReason = "run_interrupted"
	ReasonRunFailed                 LifecycleReason = "run_failed"
	ReasonRunBackgroundComplete     LifecycleReason = "run_background_complete"
	ReasonRunBackgroundFailed       LifecycleReason = "run_background_failed"
	ReasonCommandStart              LifecycleReason = "command_start"
	ReasonCommandComplete           LifecycleReason = "command_complete"
	ReasonCommandInterrupted        LifecycleReason = "command_interrupted"
	ReasonCommandFailed             LifecycleReason = "command_failed"
	ReasonCommandBackgroundComplete LifecycleReason = "command_background_complete"
	ReasonCommandBackgroundFailed   LifecycleReason = "command_background_failed"
)

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

// AgentEvent is one on_event hook event (the Go shape of the hooks catalogue: Type, RunID,
// AgentID, Timestamp, Status, Details), derived from a run's stream.
type AgentEvent struct {
	// Type is the dotted event name, e.g. "tool.started".
	Type    string `json:"type"`
	RunID   string `json:"run_id"`
	AgentID string `json:"agent_id"`
	// Timestamp is ISO 8601 UTC.
	Timestamp string     `json:"timestamp"`
	Status    HookStatus `json:"status"`
	// Sequence is the sequence number of the stream item the hook was derived from.
	Sequence uint64 `json:"sequence"`
	// Details holds the event's facts, snake_case keys (numbers as json.Number).
	Details map[string]any `json:"details,omitempty"`
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

// HookStatus is the run's status when a hook fires.
type HookStatus string

// Hook statuses.
const (
	HookRunning   HookStatus = "running"
	HookCompleted HookStatus = "completed"
	HookFailed    HookStatus = "failed"
	HookCancelled HookStatus = "cancelled"
	HookStopped   HookStatus = "stopped"
)

// Channel names a delivery channel of a run (Session.On).
type Channel string

// The four channels; Session.On accepts no other name.
const (
	ChannelContent   Channel = "content"
	ChannelLifecycle Channel = "lifecycle"
	ChannelStdout    Channel = "stdout"
	ChannelStderr    Channel = "stderr"
)

// Envelope is one sequenced item of a run's stream (the iterator API of the runner): the
// run's id, its gapless sequence number, the channel, and the item itself (an OutputEvent, a
// LifecycleEvent, or the stdout/stderr text as a JSON string). Coalesced counts text deltas
// merged into this one under backpressure.
type Envelope struct {
	RunID     string          `json:"runId"`
	Sequence  uint64          `json:"sequence"`
	Channel   Channel         `json:"channel"`
	Event     json.RawMessage `json:"event"`
	Coalesced *uint64         `json:"coalesced,omitempty"`
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

// DecodeStats are a decoder's counters (bad lines are counted here, never raised).
type DecodeStats struct {
	Bytes            uint64 `json:"bytes"`
	Lines            uint64 `json:"lines"`
	Events           uint64 `json:"events"`
	BlankLines       uint64 `json:"blank_lines"`
	InvalidJSON      uint64 `json:"invalid_json"`
	NonObject        uint64 `json:"non_object"`
	UnknownType      uint64 `json:"unknown_type"`
	UnexpectedShape  uint64 `json:"unexpected_shape"`
	OversizeLines    uint64 `json:"oversize_lines"`
	InvalidUTF8Lines uint64 `json:"invalid_utf8_lines"`
}

// Diagnostic is a problem with the input worth telling a person about (the run goes on).
type Diagnostic struct {
	// Line is the 1-based line number in the input.
	Line    uint64 `json:"line"`
	Message string `json:"message"`
}
