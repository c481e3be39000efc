//! [`Client`]: the seed's `Evolve` object as every binding implements it — one agent
//! configuration, its channel subscriptions, one run at a time, the harness conversation that
//! successive runs continue, and the controls (pause, resume, interrupt, kill, status).

use std::sync::{Arc, Mutex, MutexGuard, Weak};

use serde::{Deserialize, Serialize};

use super::options::{AgentSpec, Naming, ReadMode, RunRequest, invalid};
use super::run::{HOOKS_BIT, Run, RunInner};
use crate::channel::Channel;
use crate::decode::Agent;
use crate::error::{Error, ErrorKind};
use crate::lifecycle::{AgentState, SandboxState};
use crate::runner::{AgentConfig, CommandOptions, FinalState, Resume, RunHandle, RunOptions, Session};
use crate::stream::ChannelSet;

/// A subscription made with [`Client::on`]: the binding keeps its handler under this id.
pub type SubscriptionId = u64;

/// What [`Client::status`] reports: the seed's `status()`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ClientStatus {
    /// The harness (`claude`, `codex`, …).
    pub agent: String,
    /// The local environment's state (`ready`, `running`, `paused`, `stopped`, …).
    pub sandbox: SandboxState,
    /// The agent's state (`idle`, `running`, `interrupted`, `error`).
    pub agent_state: AgentState,
    /// Whether a run was ever started from this client.
    pub has_run: bool,
    /// The active run's id, while one runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_run_id: Option<String>,
    /// The harness session the next run continues (absent: the next run starts a new one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// How the last run ended, once one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_status: Option<FinalState>,
}

struct Subscription {
    id: SubscriptionId,
    channel: Channel,
}

struct State {
    spec: AgentSpec,
    config: AgentConfig,
    session: Session,
    subscriptions: Vec<Subscription>,
    next_id: SubscriptionId,
    /// The run started last (weak: a dropped run must be able to cancel itself), and its core
    /// handle (which outlives it, for its result).
    last_run: Option<Weak<RunInner>>,
    last_handle: Option<RunHandle>,
    /// The harness conversation the next run continues.
    session_id: Option<String>,
    has_run: bool,
    last_status: Option<FinalState>,
    /// The session the last run belonged to (its `last_status` is that session's).
    last_session_id: Option<String>,
    /// The session the last run started was to continue (a run that fails before printing a
    /// session id still belongs to it).
    last_resumed: Option<String>,
    /// The run whose end was already folded into the conversation.
    settled_run: Option<String>,
}

/// One agent configuration and what the seed's `Evolve` does with it. Thread-safe; cheap to
/// clone (clones share everything).
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    naming: Naming,
    state: Mutex<State>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("agent", &self.agent()).finish_non_exhaustive()
    }
}

impl Client {
    /// A client for `spec` (validated; errors name fields in `naming`'s spelling).
    pub fn new(spec: AgentSpec, naming: Naming) -> Result<Client, Error> {
        let config = spec.to_config(naming)?;
        let session = Session::new(config.clone());
        Ok(Client {
            inner: Arc::new(Inner {
                naming,
                state: Mutex::new(State {
                    spec,
                    config,
                    session,
                    subscriptions: Vec::new(),
                    next_id: 1,
                    last_run: None,
                    last_handle: None,
                    session_id: None,
                    has_run: false,
                    last_status: None,
                    last_session_id: None,
                    last_resumed: None,
                    settled_run: None,
                }),
            }),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The harness.
    pub fn agent(&self) -> Agent {
        self.state().config.agent
    }

    /// The configuration as given (after any [`configure`](Self::configure)).
    pub fn spec(&self) -> AgentSpec {
        self.state().spec.clone()
    }

    /// Replace the configuration for the next runs (the same environment: no second
    /// `sandbox_ready`). Refused with `already_running` while a run is active.
    pub fn configure(&self, spec: AgentSpec) -> Result<(), Error> {
        let config = spec.to_config(self.inner.naming)?;
        let mut st = self.state();
        if config.agent != st.config.agent {
            return Err(invalid(
                self.inner.naming,
                "type",
                format_args!("cannot change from {} to {}: create another client", st.config.agent, config.agent),
            ));
        }
        st.session = st.session.reconfigured(config.clone())?;
        st.config = config;
        st.spec = spec;
        Ok(())
    }

    // -- subscriptions --------------------------------------------------------------------

    /// Subscribe to channel `name` (`content`, `lifecycle`, `stdout`, `stderr`; any other name
    /// is an `invalid_argument` error listing the four). The binding keeps its handler under the
    /// returned id. A run in progress reads the channel from now on.
    pub fn on(&self, name: &str) -> Result<SubscriptionId, Error> {
        let channel: Channel = name.parse()?;
        let mut st = self.state();
        let id = st.next_id;
        st.next_id += 1;
        st.subscriptions.push(Subscription { id, channel });
        Self::channels_changed(&st);
        Ok(id)
    }

    /// Remove every subscription of channel `name` (an unknown name is an error, as for
    /// [`on`](Self::on)); returns their ids.
    pub fn off(&self, name: &str) -> Result<Vec<SubscriptionId>, Error> {
        let channel: Channel = name.parse()?;
        let mut st = self.state();
        let removed = st.subscriptions.iter().filter(|s| s.channel == channel).map(|s| s.id).collect();
        st.subscriptions.retain(|s| s.channel != channel);
        Self::channels_changed(&st);
        Ok(removed)
    }

    /// Remove one subscription; false when it was not there.
    pub fn off_id(&self, id: SubscriptionId) -> bool {
        let mut st = self.state();
        let before = st.subscriptions.len();
        st.subscriptions.retain(|s| s.id != id);
        let removed = st.subscriptions.len() != before;
        if removed {
            Self::channels_changed(&st);
        }
        removed
    }

    /// The subscriptions of `channel`, in registration order (handlers are called in this
    /// order).
    pub fn subscribers(&self, channel: Channel) -> Vec<SubscriptionId> {
        self.state().subscriptions.iter().filter(|s| s.channel == channel).map(|s| s.id).collect()
    }

    /// The channels somebody subscribed to.
    pub fn subscribed_channels(&self) -> ChannelSet {
        ChannelSet::of(self.state().subscriptions.iter().map(|s| s.channel))
    }

    fn channels_changed(st: &State) {
        if let Some(run) = st.last_run.as_ref().and_then(Run::upgrade) {
            run.set_channels(ChannelSet::of(st.subscriptions.iter().map(|s| s.channel)));
        }
    }

    // -- runs ------------------------------------------------------------------------------

    /// Start a run (`prompt`) or a command run (`command`), validated first (the error names
    /// the bad field). Returns once the process is spawned.
    ///
    /// A harness run continues the client's harness conversation when there is one (the
    /// session id the previous run reported, or [`set_session_id`](Self::set_session_id));
    /// `request.resume` chooses another; the continued run's hooks start with `run.resumed`.
    /// Per-run `model`, `cwd` and `env` apply to this run only.
    pub fn start(&self, request: RunRequest) -> Result<Run, Error> {
        request.validate(self.inner.naming)?;
        let mut st = self.state();
        Self::settle_last(&mut st);
        if let Some(active) = st.session.active() {
            let message = if active.shared.cancel.is_cancelled() {
                format!(
                    "the previous run ({}) was cancelled and is still stopping (its harness gets SIGKILL after the \
                     kill grace): wait for its result, or use another client",
                    active.run_id()
                )
            } else {
                format!("the agent is already running ({}); use another client for parallel runs", active.run_id())
            };
            return Err(Error::new(ErrorKind::AlreadyRunning, message));
        }
        let permit = match &request.budget {
            Some(budget) => Some(budget.try_acquire().ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "budget: every one of its {} permits is in use by a running run; wait for one to end or use a larger budget",
                        budget.max_streams()
                    ),
                )
            })?),
            None => None,
        };
        let mut backpressure = request.limits.backpressure();
        if let Some(p) = &permit {
            backpressure.byte_budget = p.backpressure().byte_budget;
        }
        let subscribed = ChannelSet::of(st.subscriptions.iter().map(|s| s.channel));
        let (attached, channels) = match request.read {
            ReadMode::Iterate => (true, ChannelSet::ALL),
            ReadMode::AwaitOnly => (false, ChannelSet::NONE),
            ReadMode::Handlers => (!subscribed.is_empty() || request.hooks, subscribed),
        };
        let hooks = request.hooks && attached;
        let mask = if request.read == ReadMode::Iterate { ChannelSet::ALL.bits() } else { channels.bits() }
            | if hooks { HOOKS_BIT } else { 0 };
        let config = Self::run_config(&st.config, &request);
        let session = if config == st.config { st.session.clone() } else { st.session.reconfigured(config)? };
        let mut resumed = None;
        let handle = match &request.command {
            Some(argv) => {
                let mut o = CommandOptions::new(argv.clone());
                o.timeout = request.timeout();
                o.deadline = request.deadline;
                o.cancel_token = request.cancel_token.clone();
                o.backpressure = backpressure;
                o.hooks = hooks;
                o.attach_reader = attached;
                o.channels = channels;
                o.background = request.background;
                o.kill_grace = std::time::Duration::from_millis(request.kill_grace_ms);
                o.max_line_bytes = usize::try_from(request.limits.max_line_bytes).unwrap_or(usize::MAX);
                session.start_command(o)?
            }
            None => {
                let mut o = RunOptions::new(request.prompt.clone().unwrap_or_default());
                o.resume = Self::resume_of(&st, &request);
                resumed = o.resume.as_ref().map(|r| r.session_id.clone());
                o.timeout = request.timeout();
                o.deadline = request.deadline;
                o.cancel_token = request.cancel_token.clone();
                o.backpressure = backpressure;
                o.redact = request.redact;
                o.idempotent_tools = request.idempotent_tools.iter().cloned().collect();
                o.hooks = hooks;
                o.attach_reader = attached;
                o.channels = channels;
                o.background = request.background;
                o.kill_grace = std::time::Duration::from_millis(request.kill_grace_ms);
                o.max_line_bytes = usize::try_from(request.limits.max_line_bytes).unwrap_or(usize::MAX);
                session.start_run(o)?
            }
        };
        st.last_handle = Some(handle.clone());
        st.last_resumed = resumed;
        let run = Run::new(handle, request.read, attached, mask, permit);
        st.last_run = Some(run.downgrade());
        st.has_run = true;
        Ok(run)
    }

    /// The session a harness run continues: the request's `resume`, else the client's current
    /// conversation (none: a new one). `previous_status` is the last run's state when that run
    /// belongs to the session continued, else `unknown`.
    fn resume_of(st: &State, request: &RunRequest) -> Option<Resume> {
        let session_id = request.resume.clone().or_else(|| st.session_id.clone())?;
        let previous_status = match (&st.last_status, &st.last_session_id) {
            (Some(state), Some(last)) if *last == session_id => final_state_name(*state).to_string(),
            _ => "unknown".to_string(),
        };
        Some(Resume { session_id, previous_status })
    }

    /// The configuration of one run: the client's, with the request's overrides.
    fn run_config(base: &AgentConfig, request: &RunRequest) -> AgentConfig {
        let mut config = base.clone();
        if let Some(model) = &request.model {
            config.model = Some(model.clone());
        }
        if let Some(cwd) = &request.cwd {
            config.cwd = Some(cwd.into());
        }
        for (k, v) in &request.env {
            config.env.retain(|(name, _)| name != k);
            config.env.push((k.clone(), v.clone()));
        }
        config
    }

    /// Fold the last run's end into the conversation (its session id, its final state), once.
    fn settle_last(st: &mut State) {
        let Some(result) = st.last_handle.as_ref().and_then(RunHandle::result) else { return };
        if st.settled_run.as_deref() == Some(result.run_id.as_str()) {
            return;
        }
        if let Some(id) = &result.session_id {
            st.session_id = Some(id.clone());
        }
        st.last_session_id = result.session_id.clone().or_else(|| st.last_resumed.clone());
        st.last_status = Some(result.state);
        st.settled_run = Some(result.run_id);
    }

    /// The active run, if one is going on.
    pub fn active_run(&self) -> Option<Run> {
        let st = self.state();
        st.last_run.as_ref().and_then(Run::upgrade).filter(|r| r.handle().is_going_on_here())
    }

    // -- controls --------------------------------------------------------------------------

    /// Pause the active run (SIGSTOP to its process group; lifecycle `sandbox_pause`). A
    /// `not_running` error when nothing runs.
    pub fn pause(&self) -> Result<(), Error> {
        let session = self.state().session.clone();
        session.pause()
    }

    /// Resume a paused run (SIGCONT; lifecycle `sandbox_resume`). A `not_running` error when
    /// nothing runs.
    pub fn resume(&self) -> Result<(), Error> {
        let session = self.state().session.clone();
        session.resume()
    }

    /// Interrupt the active run (SIGTERM, then SIGKILL after its grace period; it ends
    /// `run_interrupted` with `reason`). Returns whether anything was interrupted.
    pub fn interrupt(&self, reason: &str) -> bool {
        let session = self.state().session.clone();
        session.interrupt(reason).is_ok()
    }

    /// Kill the active run at once (SIGKILL; lifecycle `sandbox_killed`, then the terminal,
    /// `run_interrupted` unless the process had already exited by itself). Returns whether a
    /// run was active.
    pub fn kill(&self) -> bool {
        let session = self.state().session.clone();
        let active = session.active().is_some();
        let _ = session.kill();
        active
    }

    /// The sandbox and agent state, whether a run ever started, the active run and the
    /// conversation the next run continues.
    pub fn status(&self) -> ClientStatus {
        let mut st = self.state();
        Self::settle_last(&mut st);
        let (sandbox, agent_state) = st.session.states();
        ClientStatus {
            agent: st.config.agent.name().to_string(),
            sandbox,
            agent_state,
            has_run: st.has_run,
            active_run_id: st.session.active().map(|h| h.run_id().to_string()),
            session_id: st.session_id.clone(),
            last_status: st.last_status,
        }
    }

    /// The harness session the next run continues (the session id the last run reported, or
    /// the one set with [`set_session_id`](Self::set_session_id)); `None`: a new one.
    pub fn session_id(&self) -> Option<String> {
        let mut st = self.state();
        Self::settle_last(&mut st);
        st.session_id.clone()
    }

    /// Choose the harness session the next run continues (`None`: the next run starts a new
    /// conversation). A session id of another client's run is fine: it is the harness's.
    pub fn set_session_id(&self, session_id: Option<String>) -> Result<(), Error> {
        if let Some(id) = &session_id {
            super::options::check_session_id(self.inner.naming, "session_id", id)?;
        }
        let mut st = self.state();
        Self::settle_last(&mut st);
        st.session_id = session_id;
        Ok(())
    }
}

/// The snake_case name of a final state (`completed`, `failed`, `cancelled`).
fn final_state_name(state: FinalState) -> &'static str {
    match state {
        FinalState::Completed => "completed",
        FinalState::Failed => "failed",
        FinalState::Cancelled => "cancelled",
    }
}
