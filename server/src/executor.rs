//! Where runs execute: the [`RunExecutor`] trait. The in-process implementation is
//! [`LocalExecutor`](crate::local::LocalExecutor) (the harness as a child process of the
//! server); the cluster's, [`NatsExecutor`](crate::nats::NatsExecutor), hands each request to a
//! worker through a JetStream work queue.

use std::sync::Arc;
use std::time::Duration;

use agentstream_core::runner::RunResult;
use agentstream_core::stream::Envelope;
use async_trait::async_trait;

use crate::auth::TenantId;
use crate::broker::RunInfo;

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
    /// Where runs execute cannot be reached (the cluster's messaging is down, no worker
    /// answered): nothing was started.
    Backend(String),
}

/// Stops a run.
#[async_trait]
pub trait RunControl: Send + Sync {
    /// Cancel the run (first reason stands; later calls are no-ops): the harness's process
    /// group gets SIGTERM, then SIGKILL after the grace period, and the run ends with its
    /// terminal envelope (`run_interrupted`, cancel kind `caller`).
    fn cancel(&self, reason: &str);

    /// Cancel the run and wait (up to `within`) until where it executes confirms that it heard:
    /// `Err` says why the cancel did not (or may not) reach it, so that a caller can tell "not
    /// heard" from "heard, not ended yet". A run in this process always hears at once.
    async fn cancel_confirmed(&self, reason: &str, within: Duration) -> Result<(), CancelUnconfirmed> {
        let _ = within;
        self.cancel(reason);
        Ok(())
    }
}

/// Why where a run executes did not confirm its cancel; each says so for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CancelUnconfirmed {
    /// Nothing was sent (the cluster's messaging is unreachable).
    NotSent(String),
    /// Nobody listens for the run's cancels: its worker is gone, or the run just ended (which
    /// its record shows a moment later).
    NoListener(String),
    /// Sent, not confirmed in time (it may still arrive).
    NoConfirmation(String),
}

impl CancelUnconfirmed {
    /// What happened, for people.
    pub fn message(self) -> String {
        match self {
            CancelUnconfirmed::NotSent(m) | CancelUnconfirmed::NoListener(m) | CancelUnconfirmed::NoConfirmation(m) => {
                m
            }
        }
    }
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

/// Where a started run executes, and so who records it.
pub enum Placement {
    /// In this process: the broker reads its stream into the log and records its progress and
    /// result in the registry.
    Local(Box<dyn RunOutput>),
    /// Elsewhere (a worker), which records the run itself in the shared log and registry; this
    /// is its record as it started.
    Remote(Box<RunInfo>),
}

/// A run that started.
pub struct Execution {
    /// Its id (the `runId` of its envelopes).
    pub run_id: String,
    /// How to stop it.
    pub control: Arc<dyn RunControl>,
    /// Where it runs.
    pub placement: Placement,
}

/// Whether an executor can start runs now, for `/healthz`.
#[derive(Debug, Clone, PartialEq)]
pub struct Health {
    /// False while runs cannot be started or followed (e.g. the cluster's messaging is down).
    pub ok: bool,
    /// What to show under `backend` in `/healthz` (absent for the in-process executor).
    pub detail: Option<serde_json::Value>,
}

/// Where runs execute.
#[async_trait]
pub trait RunExecutor: Send + Sync + 'static {
    /// The agent names this executor can run.
    fn agents(&self) -> Vec<String>;
    /// Start a run.
    async fn start(&self, request: ExecRequest) -> Result<Execution, StartError>;

    /// How to stop a run of `tenant` that this process did not start (a run on a worker,
    /// started through another instance). `None`: this executor only knows its own runs.
    fn control(&self, _tenant: &TenantId, _run_id: &str) -> Option<Arc<dyn RunControl>> {
        None
    }

    /// Whether runs can be started and followed now.
    fn health(&self) -> Health {
        Health { ok: true, detail: None }
    }
}
