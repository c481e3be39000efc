//! [`Evolve`]: the seed's client object for Kotlin and Swift — the core's [`Client`] plus the
//! foreign listeners registered on it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use agentstream_core::Channel;
use agentstream_core::bridge::{Client, ClientStatus as CoreStatus};

use crate::error::Result;
use crate::options::{AgentConfig, NAMING, RunOptions};
use crate::run::{AgentRun, CancelToken, ChannelListener, HookListener, Listeners, RunFinished};

/// What `Evolve.status()` reports: the seed's `status()`. States are the wire names of the
/// generated `SandboxState`, `AgentState` and `RunState` enums.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct ClientStatus {
    /// The harness (`claude`, `codex`, …).
    pub agent: String,
    /// The local environment's state (`ready`, `running`, `paused`, `stopped`, …).
    pub sandbox: String,
    /// The agent's state (`idle`, `running`, `interrupted`, `error`).
    pub agent_state: String,
    /// Whether a run was ever started from this client.
    pub has_run: bool,
    /// The active run's id, while one runs.
    pub active_run_id: Option<String>,
    /// The harness session the next run continues (null: the next run starts a new one).
    pub session_id: Option<String>,
    /// How the last run ended (`completed`, `failed`, `cancelled`), once one did.
    pub last_status: Option<String>,
}

/// The wire name of a serde enum value (`"ready"`).
fn wire_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        other => format!("{other:?}"),
    }
}

impl From<CoreStatus> for ClientStatus {
    fn from(s: CoreStatus) -> Self {
        let CoreStatus { agent, sandbox, agent_state, has_run, active_run_id, session_id, last_status } = s;
        ClientStatus {
            agent,
            sandbox: wire_name(&sandbox),
            agent_state: wire_name(&agent_state),
            has_run,
            active_run_id,
            session_id,
            last_status: last_status.as_ref().map(wire_name),
        }
    }
}

/// One agent configuration and what the seed's `Evolve` does with it: listeners of the four
/// channels, runs (one at a time), the harness conversation successive runs continue, and the
/// controls. Thread-safe.
#[derive(uniffi::Object)]
pub struct Evolve {
    client: Client,
    listeners: Arc<Listeners>,
}

impl std::fmt::Debug for Evolve {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Evolve").field("client", &self.client).finish_non_exhaustive()
    }
}

#[uniffi::export]
impl Evolve {
    /// A client for `config` (validated: an unknown agent is an `InvalidArgument` error listing
    /// the agents).
    #[uniffi::constructor]
    pub fn new(config: AgentConfig) -> Result<Arc<Self>> {
        let client = Client::new(config.to_spec(), NAMING)?;
        Ok(Arc::new(Evolve { client, listeners: Arc::new(Mutex::new(HashMap::new())) }))
    }

    /// Replace the configuration for the next runs (same agent type). `AlreadyRunning` while
    /// a run is active.
    pub fn configure(&self, config: AgentConfig) -> Result<()> {
        Ok(self.client.configure(config.to_spec())?)
    }

    /// The harness's canonical name.
    pub fn agent(&self) -> String {
        self.client.agent().name().to_string()
    }

    /// Register `listener` for channel `channel` (`content`, `lifecycle`, `stdout`, `stderr`;
    /// any other name is an `InvalidArgument` error listing the four). Listeners of a channel
    /// are called in registration order. A run in progress delivers to it from its next batch
    /// (unless it started with no listener and no hooks: such a run is only awaited, and the
    /// next run delivers to it).
    /// Returns the subscription id (for `off_id`).
    pub fn on(&self, channel: String, listener: Arc<dyn ChannelListener>) -> Result<u64> {
        // Held across the registration so a run never sees the id without its listener.
        let mut listeners = self.listeners.lock().unwrap_or_else(|p| p.into_inner());
        let id = self.client.on(&channel)?;
        listeners.insert(id, listener);
        Ok(id)
    }

    /// Remove every listener of `channel` (an unknown name is an error, as for `on`); returns
    /// their subscription ids.
    pub fn off(&self, channel: String) -> Result<Vec<u64>> {
        let mut listeners = self.listeners.lock().unwrap_or_else(|p| p.into_inner());
        let removed = self.client.off(&channel)?;
        for id in &removed {
            listeners.remove(id);
        }
        Ok(removed)
    }

    /// Remove one listener by its subscription id; false when it was not registered.
    pub fn off_id(&self, id: u64) -> bool {
        let mut listeners = self.listeners.lock().unwrap_or_else(|p| p.into_inner());
        listeners.remove(&id);
        self.client.off_id(id)
    }

    /// The subscription ids of `channel`, in the order its listeners are called.
    pub fn subscribers(&self, channel: String) -> Result<Vec<u64>> {
        let channel: Channel = channel.parse().map_err(agentstream_core::Error::from)?;
        Ok(self.client.subscribers(channel))
    }

    /// Start a run (`options.prompt`) or a command run (`options.command`); returns once the
    /// process is spawned. `on_event` is the run's hook listener (it turns `hooks` on);
    /// `cancel` a token that cancels the run when flipped. Read the run with `dispatch` (to
    /// the listeners) or `next_batch` (`read = iterate`). Errors: `InvalidArgument` (naming the
    /// field), `HarnessNotFound`, `AlreadyRunning`, `SpawnFailed`.
    pub fn start(
        &self,
        options: RunOptions,
        on_event: Option<Arc<dyn HookListener>>,
        cancel: Option<Arc<CancelToken>>,
    ) -> Result<Arc<AgentRun>> {
        let mut request = options.to_request(cancel.as_ref())?;
        request.hooks |= on_event.is_some();
        let run = self.client.start(request)?;
        Ok(Arc::new(AgentRun::new(run, self.client.clone(), self.listeners.clone(), on_event)))
    }

    /// Start a run, deliver it to the listeners until its end (on the thread polling this),
    /// and return its result with the first failure of each listener that failed. Dropping
    /// this future before its end (a cancelled Kotlin coroutine) cancels the run (reason
    /// `reader_left`); uniffi does not cancel it when a Swift task is cancelled: pass `cancel`
    /// (a [`CancelToken`]) or call `interrupt` for that.
    pub async fn run(
        &self,
        options: RunOptions,
        on_event: Option<Arc<dyn HookListener>>,
        cancel: Option<Arc<CancelToken>>,
    ) -> Result<RunFinished> {
        let run = self.start(options, on_event, cancel)?;
        run.finish().await
    }

    /// Pause the active run (SIGSTOP; lifecycle `sandbox_pause`). `NotRunning` when idle.
    pub fn pause(&self) -> Result<()> {
        Ok(self.client.pause()?)
    }

    /// Resume a paused run (SIGCONT; lifecycle `sandbox_resume`). `NotRunning` when idle.
    pub fn resume(&self) -> Result<()> {
        Ok(self.client.resume()?)
    }

    /// Interrupt the active run (SIGTERM, then SIGKILL after its grace period; it ends
    /// `run_interrupted` with `reason`). Whether anything was interrupted.
    pub fn interrupt(&self, reason: String) -> bool {
        self.client.interrupt(&reason)
    }

    /// Kill the active run at once (SIGKILL; lifecycle `sandbox_killed`, then the terminal).
    /// Whether anything was killed.
    pub fn kill(&self) -> bool {
        self.client.kill()
    }

    /// The sandbox and agent state, whether a run ever started, the active run and the
    /// conversation the next run continues.
    pub fn status(&self) -> ClientStatus {
        self.client.status().into()
    }

    /// The harness session the next run continues (null: a new one).
    pub fn session_id(&self) -> Option<String> {
        self.client.session_id()
    }

    /// Choose the harness session the next run continues (null: start a new conversation).
    pub fn set_session_id(&self, session_id: Option<String>) -> Result<()> {
        Ok(self.client.set_session_id(session_id)?)
    }
}
