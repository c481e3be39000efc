package agentstream

// Data types of the client API that are not (yet) generated from core/schema, in ONE file so
// they can be swapped for generated declarations: Status (the core's ClientStatus). The run
// result and its parts are generated (types_gen.go). Behaviour on these types (methods) lives
// elsewhere.

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
