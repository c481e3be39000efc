package agentstream

// Data types of the client API that are not (yet) generated from core/schema, in ONE file so
// they can be swapped for generated declarations: Status (the core's ClientStatus), and the run
// result with its parts (RunResult, RunState, UsageTotals, Pressure, CancelKind, CancelReason,
// RunOutcome), whose JSON tags are the core's wire names. Behaviour on these types (methods)
// lives elsewhere.

// Status is what Client.Status reports (the seed's status()).
type Status struct {
	// Agent is the harness ("claude", "codex", …).
	Agent string `json:"agent"`
	// Sandbox is the local environment's state ("ready", "running", "paused", "stopped", …).
	Sandbox SandboxState `json:"sandbox"`
	// AgentState is the agent's state ("idle", "running", "interrupted", "error").
	AgentState AgentState `json:"agent_state"`
	// HasRun is whether a run was ever started from this client.
	HasRun bool `json:"has_run"`
	// ActiveRunID is the active run's id while one runs ("" otherwise).
	ActiveRunID string `json:"active_run_id,omitempty"`
	// SessionID is the harness session the next run continues ("": a new one).
	SessionID string `json:"session_id,omitempty"`
	// LastStatus is how the last run ended, once one did ("" before).
	LastStatus RunState `json:"last_status,omitempty"`
}

// RunState is how a run ended.
type RunState string

// The RunState values.
const (
	// RunCompleted: the harness finished its work and exited 0.
	RunCompleted RunState = "completed"
	// RunFailed: non-zero exit, death by signal, a harness-reported fatal error, or output cut
	// mid-line.
	RunFailed RunState = "failed"
	// RunCancelled: cancelled (the caller, a context, a reader that left or stalled, a timeout,
	// an interrupt or a kill).
	RunCancelled RunState = "cancelled"
)

// UsageTotals are a run's token totals (absent counters are nil, never 0).
type UsageTotals struct {
	// PromptTokens: input tokens, including the cached and cache-written shares.
	PromptTokens *uint64 `json:"promptTokens,omitempty"`
	// CompletionTokens: output tokens.
	CompletionTokens *uint64 `json:"completionTokens,omitempty"`
	// CachedTokens: the cache-read share of PromptTokens.
	CachedTokens *uint64 `json:"cachedTokens,omitempty"`
	// CostUSD: cost in USD, only when the harness priced it.
	CostUSD *float64 `json:"costUsd,omitempty"`
}

// Pressure are a run's backpressure statistics.
type Pressure struct {
	// Buffered: items waiting unread now.
	Buffered uint64 `json:"buffered"`
	// Bytes: bytes waiting unread now.
	Bytes uint64 `json:"bytes"`
	// Peak: the most items ever waiting at once.
	Peak uint64 `json:"peak"`
	// PeakBytes: the most bytes ever waiting at once.
	PeakBytes uint64 `json:"peak_bytes"`
	// Coalesced: deltas merged into an earlier buffered delta.
	Coalesced uint64 `json:"coalesced"`
	// Oversize: items admitted although each alone exceeded the whole byte budget.
	Oversize uint64 `json:"oversize"`
	// Stalled: whether the run was cancelled because its reader stalled.
	Stalled bool `json:"stalled"`
	// DroppedAfterTerminal: items posted after the terminal item (dropped, never numbered).
	DroppedAfterTerminal uint64 `json:"dropped_after_terminal"`
	// RefusedTerminals: terminal items posted as ordinary items (refused, never numbered).
	RefusedTerminals uint64 `json:"refused_terminals"`
}

// RunResult is the authoritative record of a finished run or command.
type RunResult struct {
	// RunID is the run's id.
	RunID string `json:"run_id"`
	// State is how it ended.
	State RunState `json:"state"`
	// ExitCode is the process exit code, when it exited.
	ExitCode *int `json:"exit_code,omitempty"`
	// Signal is the signal that ended the process, when one did.
	Signal *int `json:"signal,omitempty"`
	// SessionID is the harness's session id, once seen (the next run of the client continues
	// it).
	SessionID string `json:"session_id,omitempty"`
	// Usage are the token totals.
	Usage UsageTotals `json:"usage"`
	// FinalText is the final answer, only for a completed run (partial text is never an
	// answer).
	FinalText string `json:"final_text,omitempty"`
	// Error says why it failed.
	Error string `json:"error,omitempty"`
	// CancelReason says why it was cancelled.
	CancelReason string `json:"cancel_reason,omitempty"`
	// CancelKind is the machine-readable kind of the cancellation.
	CancelKind CancelKind `json:"cancel_kind,omitempty"`
	// Pressure are the backpressure statistics at the end.
	Pressure Pressure `json:"pressure"`
	// Stats are the decode statistics of the harness's stdout.
	Stats DecodeStats `json:"stats"`
	// LastSequence is the sequence number of the terminal item.
	LastSequence uint64 `json:"last_sequence"`
	// Diagnostics are problems with the input (oversize lines, invalid UTF-8), for people.
	Diagnostics []string `json:"diagnostics,omitempty"`
	// DurationMS is the wall-clock duration in milliseconds (RunResult.Duration as a
	// time.Duration).
	DurationMS uint64 `json:"duration_ms"`
	// HandlerErrors counts the failures (returned errors and panics) of the client's handlers
	// and OnEvent on this run's deliveries; each failing handler was reported once.
	HandlerErrors uint64 `json:"handler_errors"`
}

// CancelKind is why a run was cancelled, machine-readable.
type CancelKind string

// The CancelKind values.
const (
	// CancelKindCaller: the caller asked (Cancel, a context, Interrupt, Kill).
	CancelKindCaller CancelKind = "caller"
	// CancelKindReaderLeft: the reader left before the run ended.
	CancelKindReaderLeft CancelKind = "reader_left"
	// CancelKindStalled: the reader held unread events for longer than the stall limit.
	CancelKindStalled CancelKind = "stalled"
	// CancelKindTimeout: the run exceeded its time limit.
	CancelKindTimeout CancelKind = "timeout"
)

// CancelReason says why a replayed run was cancelled: Kind (with Detail for "caller").
type CancelReason struct {
	Kind   CancelKind `json:"kind"`
	Detail string     `json:"detail,omitempty"`
}

// RunOutcome is how a replayed run ended: State "completed", "failed" (with Error, a short
// cause, and Detail) or "cancelled" (with Reason).
type RunOutcome struct {
	State  RunState      `json:"state"`
	Error  string        `json:"error,omitempty"`
	Detail string        `json:"detail,omitempty"`
	Reason *CancelReason `json:"reason,omitempty"`
}
