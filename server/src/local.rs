//! [`LocalExecutor`]: runs harnesses as child processes of the server, through the core's
//! runner. This is the one module of the server that uses `agentstream_core::runner`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use agentstream_core::runner::{AgentConfig, Delivery, RunHandle, RunOptions, RunResult, Session, resume_args};
use agentstream_core::stream::Envelope;
use async_trait::async_trait;

use crate::config::AgentEntry;
use crate::executor::{ExecRequest, Execution, RunControl, RunExecutor, RunOutput, StartError};

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

    fn config(entry: &AgentEntry, request: &ExecRequest) -> AgentConfig {
        let mut config = AgentConfig::new(entry.harness);
        config.bin = Some(entry.bin.clone());
        config.model = request.request.model.clone().or_else(|| entry.model.clone());
        config.extra_args = entry.args.clone();
        if let Some(session) = &request.request.resume {
            config.extra_args.extend(resume_args(entry.harness, session));
        }
        config.cwd = entry.cwd.clone();
        config.env = entry.env.clone();
        config
    }
}

#[async_trait]
impl RunExecutor for LocalExecutor {
    fn agents(&self) -> Vec<String> {
        self.agents.keys().cloned().collect()
    }

    async fn start(&self, request: ExecRequest) -> Result<Execution, StartError> {
        let entry = self.agents.get(&request.request.agent).ok_or(StartError::UnknownAgent)?;
        let session = Session::new(Self::config(entry, &request));
        let mut options = RunOptions::new(request.request.prompt.clone());
        options.timeout = self.timeout;
        options.kill_grace = self.kill_grace;
        // Spawning (fork/exec, the run's driving thread) blocks: not on an async worker.
        let handle = tokio::task::spawn_blocking(move || session.start_run(options))
            .await
            .map_err(|e| StartError::Unavailable(format!("the run could not be started: {e}")))?
            .map_err(|e| StartError::Unavailable(e.message_with_advice()))?;
        Ok(Execution {
            run_id: handle.run_id().to_string(),
            control: Arc::new(LocalControl(handle.clone())),
            output: Box::new(LocalOutput(handle)),
        })
    }
}

struct LocalControl(RunHandle);

impl RunControl for LocalControl {
    fn cancel(&self, reason: &str) {
        self.0.cancel(reason);
    }
}

struct LocalOutput(RunHandle);

#[async_trait]
impl RunOutput for LocalOutput {
    async fn next_batch(&mut self, out: &mut Vec<Envelope>, max: usize) -> bool {
        // Wait for one, then take what else is ready under one lock.
        let Some(first) = self.0.next().await else { return false };
        let mut push = |d: Delivery| {
            if let Delivery::Item(env) = d {
                out.push(env);
            }
        };
        push(first);
        for d in self.0.try_next_batch(max.saturating_sub(1).max(1)) {
            push(d);
        }
        true
    }

    async fn finish(self: Box<Self>) -> RunResult {
        self.0.wait().await
    }
}
