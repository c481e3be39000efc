//! [`LocalExecutor`]: runs harnesses as child processes of the server, through the core's
//! bridge (the one API every binding uses). This is the one module of the server that starts
//! runs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use agentstream_core::bridge::{
    AgentSpec, BatchLimits, Client, Delivery, MAX_MILLIS, Naming, ReadMode, Run, RunRequest as CoreRequest,
};
use agentstream_core::redact::Redactor;
use agentstream_core::runner::RunResult;
use agentstream_core::stream::Envelope;
use async_trait::async_trait;

use crate::config::AgentEntry;
use crate::executor::{ExecRequest, Execution, Placement, RunControl, RunExecutor, RunOutput, StartError};

/// Runs each request as a harness process (its own process group) on this machine.
pub struct LocalExecutor {
    agents: BTreeMap<String, AgentEntry>,
    timeout: Option<Duration>,
    kill_grace: Duration,
}

impl LocalExecutor {
    /// An executor for the configured `agents`. Runs are cancelled after `timeout` (if any);
    /// a cancelled harness gets SIGKILL `kill_grace` after SIGTERM.
    pub fn new(agents: BTreeMap<String, AgentEntry>, timeout: Option<Duration>, kill_grace: Duration) -> Self {
        LocalExecutor { agents, timeout, kill_grace }
    }

    /// The configured agent as the bridge's agent config.
    fn spec(entry: &AgentEntry) -> AgentSpec {
        let mut spec = AgentSpec::new(entry.harness.name());
        spec.bin = Some(entry.bin.to_string_lossy().into_owned());
        spec.model = entry.model.clone();
        spec.extra_args = entry.args.clone();
        spec.cwd = entry.cwd.as_ref().map(|c| c.to_string_lossy().into_owned());
        spec.env = entry.env.iter().cloned().collect();
        spec
    }

    /// The request as the bridge's run request: read as a whole stream by the broker.
    ///
    /// No stall limit: the broker's pump is the one reader, and it only stops reading while
    /// what it read cannot be stored — a worker's NATS outage, which the run must ride out for
    /// as long as `lease_secs` allows (the cluster ends it after that). Meanwhile the run's
    /// byte budget holds the harness, as a full pipe would.
    fn run_request(&self, request: &ExecRequest) -> CoreRequest {
        let mut run = CoreRequest::prompt(request.request.prompt.clone());
        run.model = request.request.model.clone();
        run.resume = request.request.resume.clone();
        run.read = ReadMode::Iterate;
        run.limits.stall_ms = MAX_MILLIS;
        run.timeout_ms = self.timeout.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX).max(1));
        run.kill_grace_ms = u64::try_from(self.kill_grace.as_millis()).unwrap_or(u64::MAX);
        run
    }
}

#[async_trait]
impl RunExecutor for LocalExecutor {
    fn agents(&self) -> Vec<String> {
        self.agents.keys().cloned().collect()
    }

    async fn start(&self, request: ExecRequest) -> Result<Execution, StartError> {
        let entry = self.agents.get(&request.request.agent).ok_or(StartError::UnknownAgent)?;
        let client =
            Client::new(Self::spec(entry), Naming::Snake).map_err(|e| StartError::Unavailable(e.to_string()))?;
        let run_request = self.run_request(&request);
        // Spawning (fork/exec, the run's driving thread) blocks: not on an async worker.
        let run = tokio::task::spawn_blocking(move || client.start(run_request))
            .await
            .map_err(|e| StartError::Unavailable(format!("the run could not be started: {e}")))?
            .map_err(|e| StartError::Unavailable(e.message_with_advice()))?;
        Ok(Execution {
            run_id: run.id().to_string(),
            control: Arc::new(LocalControl(run.clone())),
            placement: Placement::Local(Box::new(LocalOutput {
                run,
                batch: Vec::new(),
                raw_redactor: Redactor::new(),
            })),
        })
    }
}

struct LocalControl(Run);

impl RunControl for LocalControl {
    fn cancel(&self, reason: &str) {
        self.0.cancel(reason);
    }
}

struct LocalOutput {
    run: Run,
    batch: Vec<Delivery>,
    /// Masks the raw channels: their text leaves this process for every subscriber, the
    /// replay buffer and NATS (a library's own reader gets them verbatim; the server's clients
    /// are others). Content events are masked by the core already.
    raw_redactor: Redactor,
}

#[async_trait]
impl RunOutput for LocalOutput {
    async fn next_batch(&mut self, out: &mut Vec<Envelope>, max: usize) -> bool {
        // One wake-up per batch: what is ready when the pump wakes.
        self.batch.clear();
        let limits = BatchLimits { max_events: max.max(1), ..BatchLimits::DEFAULT };
        self.run.pull_async(&mut self.batch, limits).await;
        if self.batch.is_empty() {
            return false;
        }
        let mut batch = std::mem::take(&mut self.batch);
        for d in batch.drain(..) {
            if let Delivery::Item(mut env) = d {
                env.item.mask_raw(&mut self.raw_redactor);
                out.push(env);
            }
        }
        self.batch = batch;
        true
    }

    async fn finish(self: Box<Self>) -> RunResult {
        self.run.wait_async().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_runs_are_never_cancelled_as_stalled() {
        let executor = LocalExecutor::new(BTreeMap::new(), None, Duration::from_secs(1));
        let request = ExecRequest {
            tenant: "a".into(),
            request: crate::executor::RunRequest {
                agent: "claude".into(),
                prompt: "go".into(),
                model: None,
                resume: None,
            },
        };
        let run = executor.run_request(&request);
        // A pump blocked by a NATS outage of 30 s (the default stall limit) must not cancel it.
        assert_eq!(run.limits.stall_ms, MAX_MILLIS);
        run.validate(Naming::Snake).expect("the bridge accepts it");
    }
}
