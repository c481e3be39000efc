//! The seed's `LifecycleEvent`: sandbox and agent state transitions.
//!
//! For a local runner the "sandbox" is the local working environment (the process group the
//! harness runs in). The serde form is snake_case as in the seed's Python TypedDict; bindings
//! that want camelCase (Node) convert with [`crate::casing`].

use serde::{Deserialize, Serialize};

/// A sandbox/agent state transition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LifecycleEvent {
    /// The sandbox id (`null` for a local run without one: the seed's `str | None`).
    pub sandbox_id: Option<String>,
    /// Sandbox state after the transition.
    pub sandbox: SandboxState,
    /// Agent state after the transition.
    pub agent: AgentState,
    /// When it happened, ISO 8601 UTC.
    pub timestamp: String,
    /// Browser live-view facts (`live_url`, `session_id`, `session_tag`), for `browser_ready`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "Option<crate::schema::BrowserInfo>"))]
    pub browser: Option<std::collections::BTreeMap<String, String>>,
    /// Why it happened.
    pub reason: LifecycleReason,
}

impl LifecycleEvent {
    /// An event of the local environment (no sandbox id, no browser) stamped `timestamp`.
    pub fn local(
        reason: LifecycleReason,
        sandbox: SandboxState,
        agent: AgentState,
        timestamp: impl Into<String>,
    ) -> Self {
        LifecycleEvent { sandbox_id: None, sandbox, agent, timestamp: timestamp.into(), browser: None, reason }
    }
}

/// The sandbox (local environment) state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SandboxState {
    /// Being set up.
    Booting,
    /// Failed.
    Error,
    /// Ready for work.
    Ready,
    /// Running an operation.
    Running,
    /// Paused (SIGSTOP).
    Paused,
    /// Gone.
    Stopped,
}

/// The agent state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum AgentState {
    /// Nothing running.
    Idle,
    /// Running.
    Running,
    /// Stopped by an interrupt or cancellation.
    Interrupted,
    /// The last operation failed.
    Error,
}

/// Why a lifecycle event fired (the seed's full list).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum LifecycleReason {
    BrowserReady,
    SandboxBoot,
    SandboxReady,
    SandboxConnected,
    SandboxPause,
    SandboxResume,
    SandboxKilled,
    SandboxError,
    RunStart,
    RunComplete,
    RunInterrupted,
    RunFailed,
    RunBackgroundComplete,
    RunBackgroundFailed,
    CommandStart,
    CommandComplete,
    CommandInterrupted,
    CommandFailed,
    CommandBackgroundComplete,
    CommandBackgroundFailed,
}

impl LifecycleReason {
    /// True for the reasons that end an operation (exactly one per run or command).
    pub fn is_terminal(self) -> bool {
        use LifecycleReason::*;
        matches!(
            self,
            RunComplete
                | RunInterrupted
                | RunFailed
                | RunBackgroundComplete
                | RunBackgroundFailed
                | CommandComplete
                | CommandInterrupted
                | CommandFailed
                | CommandBackgroundComplete
                | CommandBackgroundFailed
        )
    }

    /// The wire name, e.g. `run_complete`.
    pub fn as_str(self) -> &'static str {
        use LifecycleReason::*;
        match self {
            BrowserReady => "browser_ready",
            SandboxBoot => "sandbox_boot",
            SandboxReady => "sandbox_ready",
            SandboxConnected => "sandbox_connected",
            SandboxPause => "sandbox_pause",
            SandboxResume => "sandbox_resume",
            SandboxKilled => "sandbox_killed",
            SandboxError => "sandbox_error",
            RunStart => "run_start",
            RunComplete => "run_complete",
            RunInterrupted => "run_interrupted",
            RunFailed => "run_failed",
            RunBackgroundComplete => "run_background_complete",
            RunBackgroundFailed => "run_background_failed",
            CommandStart => "command_start",
            CommandComplete => "command_complete",
            CommandInterrupted => "command_interrupted",
            CommandFailed => "command_failed",
            CommandBackgroundComplete => "command_background_complete",
            CommandBackgroundFailed => "command_background_failed",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_case_wire_form_with_null_sandbox_id() {
        let ev = LifecycleEvent {
            sandbox_id: None,
            sandbox: SandboxState::Ready,
            agent: AgentState::Idle,
            timestamp: "2026-12-02T00:00:00.000Z".into(),
            browser: None,
            reason: LifecycleReason::RunComplete,
        };
        assert_eq!(
            serde_json::to_string(&ev).unwrap(),
            r#"{"sandbox_id":null,"sandbox":"ready","agent":"idle","timestamp":"2026-12-02T00:00:00.000Z","reason":"run_complete"}"#
        );
        assert!(ev.reason.is_terminal());
        assert_eq!(ev.reason.as_str(), "run_complete");
    }
}
