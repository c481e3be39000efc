//! Where runs execute: the [`RunExecutor`] trait. The in-process implementation is
//! [`LocalExecutor`](crate::local::LocalExecutor) (the harness as a child process of the
//! server); a distributed one (workers taking run requests from a queue) implements the same
//! trait.

use std::sync::Arc;

use agentstream_core::runner::RunResult;
use agentstream_core::stream::Envelope;
use async_trait::async_trait;

use crate::auth::TenantId;

/// What a client asked for, checked: an agent by its configured name and a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunRequest {
    /// The configured agent's name (`[agents.<name>]`).
    pub agent: String,
    /// The prompt.
    pub prompt: String,
    /// The model, passed with the harness's own flag (default: the agent's configured one).
    pub model: Option<String>,
    /// A harness session id to continue (the `sessionId` of an earlier run's events).
    pub resume: Option<String>,
}

/// A request on its way to an executor: who asked, and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    /// The tenant the run belongs to.
    pub tenant: TenantId,
    /// The request.
    pub request: RunRequest,
}

/// Why a run did not start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartError {
    /// No agent of that name is configured.
    UnknownAgent,
    /// The agent is configured but cannot be started (binary missing, spawn failed, …).
    Unavailable(String),
}

/// Stops a run.
pub trait RunControl: Send + Sync {
    /// Cancel the run (first reason stands; later calls are no-ops): the harness's process
    /// group gets SIGTERM, then SIGKILL after the grace period, and the run ends with its
    /// terminal envelope (`run_interrupted`, cancel kind `caller`).
    fn cancel(&self, reason: &str);
}

/// A started run's output, read by exactly one reader (the broker's pump).
#[async_trait]
pub trait RunOutput: Send {
    /// Wait for the next envelopes and append up to `max` of them to `out`. Returns false,
    /// appending nothing, after the terminal envelope was handed out.
    async fn next_batch(&mut self, out: &mut Vec<Envelope>, max: usize) -> bool;
    /// The run's result (after the stream is over).
    async fn finish(self: Box<Self>) -> RunResult;
}

/// A run that started.
pub struct Execution {
    /// Its id (the `runId` of its envelopes).
    pub run_id: String,
    /// How to stop it.
    pub control: Arc<dyn RunControl>,
    /// Its stream.
    pub output: Box<dyn RunOutput>,
}

/// Where runs execute.
#[async_trait]
pub trait RunExecutor: Send + Sync + 'static {
    /// The agent names this executor can run.
    fn agents(&self) -> Vec<String>;
    /// Start a run.
    async fn start(&self, request: ExecRequest) -> Result<Execution, StartError>;
}
