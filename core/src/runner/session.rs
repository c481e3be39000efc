//! A [`Session`]: one agent configuration, one operation at a time.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::argv::AgentConfig;
use super::driver::{self, Operation};
use super::handle::RunHandle;
use super::process::{signal_group, signals};
use crate::error::{Error, ErrorKind};
use crate::lifecycle::{AgentState, LifecycleEvent, LifecycleReason, SandboxState};
use crate::stream::{Backpressure, CancellationToken, ChannelSet};

/// Options of one harness run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The prompt.
    pub prompt: String,
    /// Cancel the run after this long (reported as a stop: `run.stopped`).
    pub timeout: Option<Duration>,
    /// The bounded buffer between the run and its reader.
    pub backpressure: Backpressure,
    /// Mask secret shapes in tool-call inputs (default true; answer text is never altered).
    pub redact: bool,
    /// Tools whose in-flight calls are safe to retry when the run is cancelled.
    pub idempotent_tools: HashSet<String>,
    /// Interleave `on_event` hook events with the stream items.
    pub hooks: bool,
    /// Attach a reader: items are buffered for `next()`. Without one (await-only), items are
    /// numbered and discarded, and only the result is kept.
    pub attach_reader: bool,
    /// The channels the reader reads (default all; see [`RunHandle::set_channels`]): items of
    /// the others are numbered and discarded instead of buffered, and raw lines nobody reads
    /// are never even copied.
    pub channels: ChannelSet,
    /// A background run (terminal reasons `run_background_*`).
    pub background: bool,
    /// Grace period between SIGTERM and SIGKILL when cancelling.
    pub kill_grace: Duration,
    /// The longest stdout line decoded (longer ones are skipped and reported).
    pub max_line_bytes: usize,
    /// The caller's own cancellation token: cancelling it cancels the run through the one
    /// cancellation path (the token's reason stands). Default: a token of the run's own.
    pub cancel_token: Option<CancellationToken>,
    /// Stop the run at this instant, like a timeout (with `timeout` too, whichever is first).
    pub deadline: Option<Instant>,
    /// Continue a harness session instead of starting a new conversation (the hooks then start
    /// with `run.resumed`).
    pub resume: Option<Resume>,
}

/// A harness session a run continues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resume {
    /// The harness's session id (as a previous run reported it).
    pub session_id: String,
    /// How the previous run of that session ended (`completed`, `failed`, `cancelled`), or
    /// `unknown`; reported as `previous_status` on `run.resumed`.
    pub previous_status: String,
}

impl RunOptions {
    /// Options for `prompt` with every default (reader attached, hooks off, redaction on).
    pub fn new(prompt: impl Into<String>) -> Self {
        RunOptions {
            prompt: prompt.into(),
            timeout: None,
            backpressure: Backpressure::default(),
            redact: true,
            idempotent_tools: HashSet::new(),
            hooks: false,
            attach_reader: true,
            channels: ChannelSet::ALL,
            background: false,
            kill_grace: Duration::from_secs(5),
            max_line_bytes: crate::framing::DEFAULT_MAX_LINE_BYTES,
            cancel_token: None,
            deadline: None,
            resume: None,
        }
    }
}

/// Options of one command run (`execute_command`): no content decoding, same lifecycle.
#[derive(Debug, Clone)]
pub struct CommandOptions {
    /// The program and its arguments (not a shell string: use `["sh", "-c", "…"]` for one).
    pub argv: Vec<String>,
    /// Working directory (default: the session's, else the current one).
    pub cwd: Option<PathBuf>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
    /// Cancel after this long.
    pub timeout: Option<Duration>,
    /// The bounded buffer between the run and its reader.
    pub backpressure: Backpressure,
    /// Interleave hook events.
    pub hooks: bool,
    /// Attach a reader (see [`RunOptions::attach_reader`]).
    pub attach_reader: bool,
    /// The channels the reader reads (see [`RunOptions::channels`]).
    pub channels: ChannelSet,
    /// A background command (terminal reasons `command_background_*`).
    pub background: bool,
    /// Grace period between SIGTERM and SIGKILL when cancelling.
    pub kill_grace: Duration,
    /// The caller's own cancellation token (see [`RunOptions::cancel_token`]).
    pub cancel_token: Option<CancellationToken>,
    /// Stop the command at this instant, like a timeout (see [`RunOptions::deadline`]).
    pub deadline: Option<Instant>,
    /// The longest stdout line delivered, in bytes; a longer one is skipped, counted in the
    /// result's `stats.oversize_lines` and named in its diagnostics.
    pub max_line_bytes: usize,
}

impl CommandOptions {
    /// Options for `argv` with every default.
    pub fn new(argv: Vec<String>) -> Self {
        CommandOptions {
            argv,
            cwd: None,
            env: Vec::new(),
            timeout: None,
            backpressure: Backpressure::default(),
            hooks: false,
            attach_reader: true,
            channels: ChannelSet::ALL,
            background: false,
            kill_grace: Duration::from_secs(5),
            cancel_token: None,
            deadline: None,
            max_line_bytes: crate::framing::DEFAULT_MAX_LINE_BYTES,
        }
    }
}

pub(crate) struct SessionState {
    pub sandbox: SandboxState,
    pub agent: AgentState,
    pub active: Option<RunHandle>,
    pub paused: bool,
    /// Whether `sandbox_ready` was delivered yet (on the session's first operation).
    pub ready_announced: bool,
}

/// One agent configuration; runs one operation at a time. Cheap to clone (shared state).
#[derive(Clone)]
pub struct Session {
    config: Arc<AgentConfig>,
    state: Arc<Mutex<SessionState>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("agent", &self.config.agent).finish_non_exhaustive()
    }
}

impl Session {
    /// A session for `config`. The local environment is ready at once (`sandbox_ready`).
    pub fn new(config: AgentConfig) -> Self {
        Session {
            config: Arc::new(config),
            state: Arc::new(Mutex::new(SessionState {
                sandbox: SandboxState::Ready,
                agent: AgentState::Idle,
                active: None,
                paused: false,
                ready_announced: false,
            })),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// The same session (its environment, state and handles) with another configuration, for
    /// the next operation: a changed binary, model, directory or environment does not make a
    /// new environment, so `sandbox_ready` is not announced again. Errors with `AlreadyRunning`
    /// while an operation is active (it keeps the configuration it started with).
    pub fn reconfigured(&self, config: AgentConfig) -> Result<Session, Error> {
        drop(self.claim()?);
        Ok(Session { config: Arc::new(config), state: self.state.clone() })
    }

    /// The lifecycle event describing the session now (reason `sandbox_ready`), for callers
    /// that announce readiness before the first run.
    pub fn ready_event(&self) -> LifecycleEvent {
        let st = self.state.lock().expect("session state");
        LifecycleEvent::local(LifecycleReason::SandboxReady, st.sandbox, st.agent, crate::time::now_iso8601())
    }

    /// The sandbox and agent states now.
    pub fn states(&self) -> (SandboxState, AgentState) {
        let st = self.state.lock().expect("session state");
        (st.sandbox, st.agent)
    }

    /// The active operation, if any.
    pub fn active(&self) -> Option<RunHandle> {
        let st = self.state.lock().expect("session state");
        st.active.clone().filter(RunHandle::is_going_on_here)
    }

    fn claim(&self) -> Result<std::sync::MutexGuard<'_, SessionState>, Error> {
        let st = self.state.lock().expect("session state");
        if let Some(h) = st.active.as_ref().filter(|h| h.is_going_on_here()) {
            return Err(Error::new(
                ErrorKind::AlreadyRunning,
                format!("the agent is already running ({}); use another session for parallel runs", h.run_id()),
            ));
        }
        Ok(st)
    }

    /// Start a harness run. Returns once the process is spawned; drive it with the handle.
    pub fn start_run(&self, options: RunOptions) -> Result<RunHandle, Error> {
        self.start(Operation::Harness { config: self.config.clone(), options })
    }

    /// Start any command with the same streaming and lifecycle (no content decoding).
    pub fn start_command(&self, options: CommandOptions) -> Result<RunHandle, Error> {
        if options.argv.is_empty() {
            return Err(Error::new(ErrorKind::InvalidArgument, "execute_command needs a command: argv is empty"));
        }
        self.start(Operation::Command { config: self.config.clone(), options })
    }

    /// Start `op` once no run is active here; the session is then running it, unpaused.
    fn start(&self, op: Operation) -> Result<RunHandle, Error> {
        let mut st = self.claim()?;
        let handle = driver::start(op, self.state.clone(), !st.ready_announced)?;
        st.ready_announced = true;
        st.paused = false;
        st.active = Some(handle.clone());
        st.sandbox = SandboxState::Running;
        st.agent = AgentState::Running;
        Ok(handle)
    }

    fn active_or_err(&self, what: &str) -> Result<RunHandle, Error> {
        self.active().ok_or_else(|| Error::new(ErrorKind::NotRunning, format!("nothing to {what}: no run is active")))
    }

    /// Pause the active operation (SIGSTOP to its process group; lifecycle `sandbox_pause`).
    pub fn pause(&self) -> Result<(), Error> {
        let h = self.active_or_err("pause")?;
        {
            let mut st = self.state.lock().expect("session state");
            if st.paused {
                return Ok(());
            }
            if st.sandbox != SandboxState::Running {
                // The run is ending: its driver has already set the session's state after it
                // (a pause now would leave the session "paused" with nothing to resume).
                return Err(Error::new(ErrorKind::NotRunning, "nothing to pause: the run has ended"));
            }
            st.paused = true;
            st.sandbox = SandboxState::Paused;
        }
        signal_group(h.pgid(), signals::STOP);
        h.post_lifecycle(LifecycleReason::SandboxPause, SandboxState::Paused, AgentState::Running);
        Ok(())
    }

    /// Resume a paused operation (SIGCONT; lifecycle `sandbox_resume`).
    pub fn resume(&self) -> Result<(), Error> {
        let h = self.active_or_err("resume")?;
        self.continue_paused(&h, true);
        Ok(())
    }

    /// Interrupt the active operation: SIGTERM to the group, SIGKILL after the grace period;
    /// it ends `run_interrupted` with `reason`.
    pub fn interrupt(&self, reason: &str) -> Result<(), Error> {
        let h = self.active_or_err("interrupt")?;
        // A stopped process cannot act on SIGTERM: it is continued first, and the stream says so.
        self.continue_paused(&h, true);
        h.cancel(reason);
        Ok(())
    }

    /// Kill the active operation at once (SIGKILL; lifecycle `sandbox_killed`, then the
    /// terminal `run_interrupted`). Without an active operation this is a no-op. A run whose
    /// process had already exited by itself (its end not yet read) keeps its own outcome: its
    /// terminal follows `sandbox_killed` all the same.
    pub fn kill(&self) -> Result<(), Error> {
        let Some(h) = self.active() else { return Ok(()) };
        h.post_lifecycle(LifecycleReason::SandboxKilled, SandboxState::Stopped, AgentState::Interrupted);
        h.kill_now("killed");
        // SIGKILL ends a stopped process too; no `sandbox_resume`: it goes from paused to killed.
        self.continue_paused(&h, false);
        let mut st = self.state.lock().expect("session state");
        st.sandbox = SandboxState::Stopped;
        Ok(())
    }

    /// Continue `h`'s group if the session paused it; `announce` posts `sandbox_resume` (and
    /// sets the session running) before the SIGCONT, so output printed once continued is
    /// numbered after it.
    fn continue_paused(&self, h: &RunHandle, announce: bool) {
        {
            let mut st = self.state.lock().expect("session state");
            if !st.paused {
                return;
            }
            st.paused = false;
            if announce {
                st.sandbox = SandboxState::Running;
            }
        }
        if announce {
            h.post_lifecycle(LifecycleReason::SandboxResume, SandboxState::Running, AgentState::Running);
        }
        signal_group(h.pgid(), signals::CONT);
    }
}
