//! [`RunBroker`]: what the HTTP routes call, usable from Rust. Every operation is scoped to a
//! tenant: another tenant's run is indistinguishable from one that does not exist.
//!
//! The broker connects three seams: a [`RunExecutor`] (where runs execute), an [`EventLog`]
//! (where their envelopes are kept and replayed from) and a [`RunRegistry`] (where run records
//! live). For each run that executes in this process one pump task reads the run's output into
//! the log, its progress and result into the registry. Subscribers read the log, never the run,
//! so any number of them — and none — cost the run nothing. A run that executes elsewhere (a
//! worker of the cluster) is pumped there, into the same shared log and registry.
//!
//! Limits: runs running at once per tenant, subscribers per run (per process), finished runs
//! kept per tenant (the registry's); the replay buffer's size is the log's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentstream_core::runner::{FinalState, RunResult};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::auth::TenantId;
use crate::config::check_model;
use crate::executor::{
    CancelUnconfirmed, ExecRequest, Health, Placement, RunControl, RunExecutor, RunOutput, RunRequest, StartError,
};
use crate::frame::{Delivered, Frame, now_ms};
use crate::log::{EventLog, ReplayUsage, SubscribeError, Subscription};
use crate::registry::{ListPage, RegistryError, RunPage, RunRegistry};

/// Envelopes the pump moves per batch.
const PUMP_BATCH: usize = 256;

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Started, terminal envelope not yet delivered.
    Running,
    /// Ended well.
    Completed,
    /// Ended badly (non-zero exit, killed, harness error, output cut short).
    Failed,
    /// Cancelled (by a caller, a timeout, or shutdown).
    Cancelled,
}

impl RunStatus {
    /// The status of a run that ended in `state`.
    pub fn of(state: FinalState) -> Self {
        match state {
            FinalState::Completed => RunStatus::Completed,
            FinalState::Failed => RunStatus::Failed,
            FinalState::Cancelled => RunStatus::Cancelled,
        }
    }
}

/// What the API says about a run (`GET /v1/runs/{id}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunInfo {
    /// The run id (the `runId` of its envelopes).
    pub id: String,
    /// The agent's configured name.
    pub agent: String,
    /// The model asked for, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The harness session continued, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resume: Option<String>,
    /// The prompt.
    pub prompt: String,
    /// Where it is.
    pub status: RunStatus,
    /// When it started (ISO 8601 UTC).
    pub created_at: String,
    /// When its terminal envelope was delivered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
    /// The last sequence number delivered so far (absent before the first envelope).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_sequence: Option<u64>,
    /// The run's result, once ended (the core's `RunResult`: state, exit code, usage, final
    /// text, error, cancel reason, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<RunResult>,
    /// The worker that runs it, in a cluster (absent when runs execute in the server itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
}

/// Why a broker operation was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrokerError {
    /// No such run for this tenant (whether it does not exist or is another tenant's).
    NotFound,
    /// A request field is wrong.
    Invalid {
        /// The field.
        field: &'static str,
        /// What is wrong and what to send instead.
        message: String,
    },
    /// The tenant already has `limit` runs running.
    TooManyRuns {
        /// The limit.
        limit: usize,
    },
    /// The run already has `limit` subscribers.
    TooManySubscribers {
        /// The limit.
        limit: usize,
    },
    /// The tenant already has `limit` streams open, on all its runs together.
    TooManyStreams {
        /// The limit.
        limit: usize,
    },
    /// The agent could not be started.
    Unavailable(String),
    /// The server is shutting down: no new runs.
    ShuttingDown,
    /// Where runs execute or are recorded cannot be reached now (the cluster's messaging, or no
    /// worker took the run): what happened, for people.
    Backend(String),
    /// A cancel did not reach where the run executes (its worker did not confirm it): why, and
    /// whether trying again helps. The run goes on.
    CancelNotDelivered(String),
    /// A resume point beyond what the run has produced.
    AfterBeyondEnd {
        /// The requested point.
        after: u64,
        /// The run's last sequence so far.
        last: Option<u64>,
    },
    /// The subscriber already has the terminal envelope: nothing more will come.
    Complete,
}

impl std::fmt::Display for BrokerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BrokerError::NotFound => f.write_str("no such run"),
            BrokerError::Invalid { field, message } => write!(f, "{field}: {message}"),
            BrokerError::TooManyRuns { limit } => {
                write!(f, "this tenant already has {limit} runs running (limits.runs_per_tenant); wait for one to end")
            }
            BrokerError::TooManySubscribers { limit } => {
                write!(f, "this run already has {limit} open streams (limits.subscribers_per_run)")
            }
            BrokerError::TooManyStreams { limit } => write!(
                f,
                "this tenant already has {limit} streams open (limits.streams_per_tenant); close one before opening another"
            ),
            BrokerError::Unavailable(m) => write!(f, "the agent could not be started: {m}"),
            BrokerError::ShuttingDown => f.write_str("the server is shutting down and starts no new runs"),
            BrokerError::Backend(m) | BrokerError::CancelNotDelivered(m) => f.write_str(m),
            BrokerError::AfterBeyondEnd { after, last } => match last {
                Some(last) => write!(f, "resume point {after} is beyond the run's last sequence {last}"),
                None => write!(f, "resume point {after} is beyond the run's stream, which has no envelope yet"),
            },
            BrokerError::Complete => f.write_str("the stream already ended at or before that resume point"),
        }
    }
}

impl std::error::Error for BrokerError {}

/// Broker limits (see [`crate::config::Limits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BrokerLimits {
    /// Runs running at once per tenant.
    pub runs_per_tenant: usize,
    /// Subscribers per run.
    pub subscribers_per_run: usize,
    /// Subscribers of one tenant's runs together.
    pub streams_per_tenant: usize,
    /// Finished runs kept per tenant (by the in-process registry).
    pub finished_runs_kept: usize,
}

impl From<RegistryError> for BrokerError {
    fn from(e: RegistryError) -> Self {
        BrokerError::Backend(e.0)
    }
}

#[derive(Default)]
struct State {
    /// Runs being started, per tenant: counted against `runs_per_tenant` until recorded.
    starting: HashMap<TenantId, usize>,
    /// How to stop the runs that execute in this process (until their pump ends).
    local: HashMap<Arc<str>, Arc<dyn RunControl>>,
    /// Open streams per run, in this process.
    subscribers: HashMap<Arc<str>, Arc<AtomicUsize>>,
    /// Streams open per tenant, on all its runs.
    tenant_streams: HashMap<TenantId, Arc<AtomicUsize>>,
    /// Runs whose pump has not finished (all tenants), including ones still starting.
    live: usize,
}

struct Inner {
    executor: Arc<dyn RunExecutor>,
    log: Arc<dyn EventLog>,
    registry: Arc<dyn RunRegistry>,
    limits: BrokerLimits,
    accepting: AtomicBool,
    state: Mutex<State>,
    /// `live`, watched (shutdown waits for 0).
    idle: watch::Sender<usize>,
}

/// The run broker: start, look up, list, subscribe, cancel — each scoped to a tenant.
/// Cheap to clone (shared).
#[derive(Clone)]
pub struct RunBroker {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for RunBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunBroker").field("limits", &self.inner.limits).finish_non_exhaustive()
    }
}

impl RunBroker {
    /// A broker running runs on `executor`, keeping their envelopes in `log` and their records
    /// in `registry`.
    pub fn new(
        executor: Arc<dyn RunExecutor>,
        log: Arc<dyn EventLog>,
        registry: Arc<dyn RunRegistry>,
        limits: BrokerLimits,
    ) -> Self {
        RunBroker {
            inner: Arc::new(Inner {
                executor,
                log,
                registry,
                limits,
                accepting: AtomicBool::new(true),
                state: Mutex::new(State::default()),
                idle: watch::Sender::new(0),
            }),
        }
    }

    /// The agent names a request may use.
    pub fn agents(&self) -> Vec<String> {
        self.inner.executor.agents()
    }

    /// Check a request against the agents and the field rules (what `start` checks first).
    pub fn check(&self, request: &RunRequest) -> Result<(), BrokerError> {
        let agents = self.agents();
        if !agents.contains(&request.agent) {
            let offered =
                if agents.is_empty() { "no agent (no worker is connected)".to_string() } else { agents.join(", ") };
            return Err(BrokerError::Invalid {
                field: "agent",
                message: format!("unknown agent {:?}; this server runs: {offered}", request.agent),
            });
        }
        if request.prompt.trim().is_empty() {
            return Err(BrokerError::Invalid { field: "prompt", message: "the prompt is empty".into() });
        }
        if request.prompt.contains('\0') {
            // A prompt is passed on the harness's command line, where a NUL cannot be.
            return Err(BrokerError::Invalid {
                field: "prompt",
                message: "the prompt must not contain a NUL character (\\u0000)".into(),
            });
        }
        if let Some(model) = &request.model {
            check_model(model).map_err(|message| BrokerError::Invalid { field: "model", message })?;
        }
        if let Some(session) = &request.resume {
            let ok = !session.is_empty()
                && session.len() <= 200
                && !session.starts_with('-')
                && session.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'));
            if !ok {
                return Err(BrokerError::Invalid {
                    field: "resume",
                    message: "a session id is 1 to 200 letters, digits, '-', '_', '.' or ':', not starting with '-'"
                        .into(),
                });
            }
        }
        Ok(())
    }

    /// Start a run for `tenant`. The start completes even when the caller stops waiting (an
    /// HTTP client that hangs up drops this future): it runs on a task of its own, so the
    /// tenant's reservation is always given back and a run that started is always recorded and
    /// read (the client can find it in `GET /v1/runs`).
    pub async fn start(&self, tenant: &TenantId, request: RunRequest) -> Result<RunInfo, BrokerError> {
        let broker = self.clone();
        let tenant = tenant.clone();
        tokio::spawn(async move { broker.start_to_the_end(&tenant, request).await })
            .await
            .unwrap_or_else(|e| Err(BrokerError::Backend(format!("starting the run failed: {e}"))))
    }

    async fn start_to_the_end(&self, tenant: &TenantId, request: RunRequest) -> Result<RunInfo, BrokerError> {
        self.check(&request)?;
        let inner = &self.inner;
        {
            let mut st = inner.state.lock().expect("broker state");
            if !inner.accepting.load(Ordering::SeqCst) {
                return Err(BrokerError::ShuttingDown);
            }
            let starting = st.starting.get(tenant).copied().unwrap_or(0);
            if inner.registry.running(tenant) + starting >= inner.limits.runs_per_tenant {
                return Err(BrokerError::TooManyRuns { limit: inner.limits.runs_per_tenant });
            }
            *st.starting.entry(tenant.clone()).or_default() += 1;
            st.live += 1;
            inner.idle.send_replace(st.live);
        }
        let started = match inner.executor.start(ExecRequest { tenant: tenant.clone(), request: request.clone() }).await
        {
            Ok(started) => started,
            Err(e) => {
                self.started(tenant, None, false);
                return Err(match e {
                    StartError::UnknownAgent => {
                        BrokerError::Invalid { field: "agent", message: format!("unknown agent {:?}", request.agent) }
                    }
                    StartError::Unavailable(m) => BrokerError::Unavailable(m),
                    StartError::Backend(m) => BrokerError::Backend(m),
                });
            }
        };
        let output = match started.placement {
            Placement::Remote(info) => {
                // The worker recorded it; nothing to pump here.
                self.started(tenant, None, false);
                return Ok(*info);
            }
            Placement::Local(output) => output,
        };
        let run_id: Arc<str> = started.run_id.as_str().into();
        inner.log.create(tenant, &run_id).await;
        let info = RunInfo {
            id: started.run_id.clone(),
            agent: request.agent,
            model: request.model,
            resume: request.resume,
            prompt: request.prompt,
            status: RunStatus::Running,
            created_at: agentstream_core::time::now_iso8601(),
            ended_at: None,
            last_sequence: None,
            result: None,
            worker: None,
        };
        let recorded = inner.registry.insert(tenant, info).await;
        self.started(tenant, Some((run_id.clone(), started.control.clone())), true);
        if let Err(e) = &recorded {
            // Unrecorded, nobody could find or stop it: stop it now (the pump still reaps it).
            started.control.cancel(&format!("the run could not be recorded: {e}"));
        } else if !inner.accepting.load(Ordering::SeqCst) {
            // A run started while shutdown began is cancelled like the others.
            started.control.cancel("the server is shutting down");
        }
        let broker = self.clone();
        let pumped_for = tenant.clone();
        tokio::spawn(async move { broker.pump(run_id, pumped_for, output).await });
        Ok(recorded?)
    }

    /// A start is over: the tenant's reservation goes (the registry counts the run now), and
    /// the run is live here only if it executes here.
    fn started(&self, tenant: &TenantId, local: Option<(Arc<str>, Arc<dyn RunControl>)>, live: bool) {
        let mut st = self.inner.state.lock().expect("broker state");
        if let Some(n) = st.starting.get_mut(tenant) {
            *n -= 1;
            if *n == 0 {
                st.starting.remove(tenant);
            }
        }
        if let Some((id, control)) = local {
            st.local.insert(id, control);
        }
        if !live {
            st.live -= 1;
            self.inner.idle.send_replace(st.live);
        }
    }

    /// Move a run's output into the log, then record its result.
    async fn pump(self, run_id: Arc<str>, tenant: TenantId, mut output: Box<dyn RunOutput>) {
        let log = &self.inner.log;
        let registry = &self.inner.registry;
        let mut envelopes = Vec::with_capacity(PUMP_BATCH);
        while output.next_batch(&mut envelopes, PUMP_BATCH).await {
            let received = now_ms();
            let frames: Vec<Frame> = envelopes.drain(..).map(|e| Frame::of(&e, received)).collect();
            let Some(last) = frames.last().map(|f| f.last_covered) else { continue };
            log.append(&run_id, frames).await;
            registry.progress(&tenant, &run_id, last).await;
        }
        log.seal(&run_id).await;
        let result = output.finish().await;
        let forgotten = registry.finish(&tenant, &run_id, result).await;
        for id in forgotten {
            log.remove(&id).await;
        }
        let mut st = self.inner.state.lock().expect("broker state");
        st.local.remove(&run_id);
        st.live -= 1;
        self.inner.idle.send_replace(st.live);
    }

    /// A run of `tenant`.
    pub async fn get(&self, tenant: &TenantId, run_id: &str) -> Result<RunInfo, BrokerError> {
        let mut info = self.inner.registry.get(tenant, run_id).await?.ok_or(BrokerError::NotFound)?;
        if info.status == RunStatus::Running {
            // The registry may lag the log (a worker records its progress now and then).
            if let Some(last) = self.inner.log.last_covered(tenant, run_id).await {
                info.last_sequence = Some(info.last_sequence.map_or(last, |l| l.max(last)));
            }
        }
        Ok(info)
    }

    /// One page of the runs of `tenant` (running and kept finished ones), newest first.
    pub async fn list(&self, tenant: &TenantId, page: &ListPage) -> Result<RunPage, BrokerError> {
        Ok(self.inner.registry.list(tenant, page).await?)
    }

    /// Read a run's stream after sequence `after` (`None`: from the start).
    pub async fn subscribe(
        &self,
        tenant: &TenantId,
        run_id: &str,
        after: Option<u64>,
    ) -> Result<BrokerSubscription, BrokerError> {
        let info = self.inner.registry.get(tenant, run_id).await?.ok_or(BrokerError::NotFound)?;
        let limits = &self.inner.limits;
        let slot = {
            let mut st = self.inner.state.lock().expect("broker state");
            let of_tenant = st.tenant_streams.entry(tenant.clone()).or_default().clone();
            if of_tenant.load(Ordering::SeqCst) >= limits.streams_per_tenant {
                return Err(BrokerError::TooManyStreams { limit: limits.streams_per_tenant });
            }
            let counter = st.subscribers.entry(run_id.into()).or_default().clone();
            if counter.fetch_add(1, Ordering::SeqCst) >= limits.subscribers_per_run {
                counter.fetch_sub(1, Ordering::SeqCst);
                return Err(BrokerError::TooManySubscribers { limit: limits.subscribers_per_run });
            }
            of_tenant.fetch_add(1, Ordering::SeqCst);
            SubscriberSlot {
                broker: self.inner.clone(),
                run_id: run_id.into(),
                counter,
                tenant: tenant.clone(),
                of_tenant,
            }
        };
        let log = &self.inner.log;
        let subscribed = match (info.status, info.last_sequence) {
            (RunStatus::Running, recorded) => log.subscribe_running(tenant, run_id, after, recorded).await,
            (_, Some(last)) => log.subscribe_ended(tenant, run_id, after, last).await,
            (_, None) => log.subscribe(tenant, run_id, after).await,
        };
        let inner = subscribed.map_err(|e| match e {
            SubscribeError::UnknownRun => BrokerError::NotFound,
            SubscribeError::AfterBeyondEnd { after, last } => BrokerError::AfterBeyondEnd { after, last },
            SubscribeError::Complete => BrokerError::Complete,
            SubscribeError::Unavailable(m) => BrokerError::Backend(m),
        })?;
        Ok(BrokerSubscription { inner, _slot: slot })
    }

    /// Cancel a run of `tenant` and wait (up to `wait`) for it to end. Idempotent: cancelling a
    /// run that ended changes nothing. Returns the run as it is then (still running when it did
    /// not end in time), or [`BrokerError::CancelNotDelivered`] when the run executes elsewhere
    /// and its worker did not confirm the cancel (with `wait` zero the cancel is sent, also while
    /// the cluster's messaging is unreachable, without waiting for a confirmation).
    pub async fn cancel(
        &self,
        tenant: &TenantId,
        run_id: &str,
        reason: &str,
        wait: Duration,
    ) -> Result<RunInfo, BrokerError> {
        let deadline = tokio::time::Instant::now() + wait;
        let left = || deadline.saturating_duration_since(tokio::time::Instant::now());
        let info = self.inner.registry.get(tenant, run_id).await?.ok_or(BrokerError::NotFound)?;
        let local = self.inner.state.lock().expect("broker state").local.get(run_id).cloned();
        match local {
            // Executing here: stop it even if its record says it ended (a worker whose lease
            // expired finds its run ended elsewhere, and must not leave the harness running).
            Some(control) => control.cancel(reason),
            None if info.status != RunStatus::Running => return Ok(info),
            None => match self.inner.executor.control(tenant, run_id) {
                Some(control) if wait.is_zero() => control.cancel(reason),
                Some(control) => {
                    if let Err(why) = control.cancel_confirmed(reason, left()).await {
                        // Its worker stops listening when the run ends, a moment before the
                        // record here says so: then there was nothing left to cancel.
                        if matches!(why, CancelUnconfirmed::NoListener(_)) {
                            self.inner.registry.wait_ended(tenant, run_id, left()).await;
                        }
                        return match self.inner.registry.get(tenant, run_id).await? {
                            Some(now) if now.status != RunStatus::Running => Ok(now),
                            _ => Err(BrokerError::CancelNotDelivered(why.message())),
                        };
                    }
                }
                None => {}
            },
        }
        if info.status != RunStatus::Running {
            return Ok(info);
        }
        self.inner.registry.wait_ended(tenant, run_id, left()).await;
        // Within the caller's wait: the log's view of a running run's progress is a nicety that
        // an outage must not hold up.
        match tokio::time::timeout(left().max(Duration::from_millis(100)), self.get(tenant, run_id)).await {
            Ok(got) => got,
            Err(_) => Ok(self.inner.registry.get(tenant, run_id).await?.unwrap_or(info)),
        }
    }

    /// Stop starting runs (requests get [`BrokerError::ShuttingDown`]).
    pub fn stop_accepting(&self) {
        self.inner.accepting.store(false, Ordering::SeqCst);
    }

    /// Whether new runs are accepted.
    pub fn is_accepting(&self) -> bool {
        self.inner.accepting.load(Ordering::SeqCst)
    }

    /// How many runs execute in this process (all tenants), counting those being started.
    pub fn running(&self) -> usize {
        *self.inner.idle.borrow()
    }

    /// How many runs are running wherever they execute (all tenants), as the registry knows.
    pub fn running_everywhere(&self) -> usize {
        self.inner.registry.running_total()
    }

    /// Whether runs can be started and followed now (the executor's view).
    pub fn health(&self) -> Health {
        self.inner.executor.health()
    }

    /// What the run log holds in this process's memory (`None` in a cluster).
    pub fn replay_usage(&self) -> Option<ReplayUsage> {
        self.inner.log.usage()
    }

    /// Cancel every run that executes in this process (all tenants) with `reason`. Runs on
    /// workers are theirs to end.
    pub fn cancel_all(&self, reason: &str) {
        let controls: Vec<Arc<dyn RunControl>> =
            self.inner.state.lock().expect("broker state").local.values().cloned().collect();
        for c in controls {
            c.cancel(reason);
        }
    }

    /// Wait up to `timeout` until no run executes in this process; true if none does.
    pub async fn wait_idle(&self, timeout: Duration) -> bool {
        let mut rx = self.inner.idle.subscribe();
        tokio::time::timeout(timeout, rx.wait_for(|live| *live == 0)).await.is_ok()
    }

    /// End the streams that wait for runs executing elsewhere (see [`EventLog::close`]).
    pub fn close_streams(&self) {
        self.inner.log.close();
    }
}

struct SubscriberSlot {
    broker: Arc<Inner>,
    run_id: Arc<str>,
    counter: Arc<AtomicUsize>,
    tenant: TenantId,
    of_tenant: Arc<AtomicUsize>,
}

impl Drop for SubscriberSlot {
    fn drop(&mut self) {
        let mut st = self.broker.state.lock().expect("broker state");
        if self.counter.fetch_sub(1, Ordering::SeqCst) == 1 {
            st.subscribers.remove(&self.run_id);
        }
        if self.of_tenant.fetch_sub(1, Ordering::SeqCst) == 1 {
            st.tenant_streams.remove(&self.tenant);
        }
    }
}

/// A subscription that holds one of its run's subscriber slots until dropped.
pub struct BrokerSubscription {
    inner: Box<dyn Subscription>,
    _slot: SubscriberSlot,
}

#[async_trait]
impl Subscription for BrokerSubscription {
    async fn next_batch(&mut self, out: &mut Vec<Delivered>, max: usize) -> bool {
        self.inner.next_batch(out, max).await
    }
}

#[cfg(test)]
mod tests {
    //! The broker over a scripted executor: the seams work without the runner or a process.
    use super::*;
    use crate::executor::{Execution, RunExecutor};
    use crate::log::{MemoryLog, Retention};
    use crate::registry::MemoryRegistry;
    use agentstream_core::lifecycle::{AgentState, LifecycleEvent, LifecycleReason, SandboxState};
    use agentstream_core::stream::{Envelope, StreamItem};

    /// Runs that deliver `lines` stdout envelopes and a terminal, or wait for a cancel; each
    /// takes `start_delay` to start.
    struct Scripted {
        lines: u64,
        hold: bool,
        start_delay: Duration,
    }

    struct ScriptedControl(tokio::sync::watch::Sender<bool>);

    impl RunControl for ScriptedControl {
        fn cancel(&self, _reason: &str) {
            self.0.send_replace(true);
        }
    }

    struct ScriptedOutput {
        id: String,
        next: u64,
        lines: u64,
        cancelled: tokio::sync::watch::Receiver<bool>,
        hold: bool,
        done: bool,
    }

    #[async_trait]
    impl RunOutput for ScriptedOutput {
        async fn next_batch(&mut self, out: &mut Vec<Envelope>, _max: usize) -> bool {
            if self.done {
                return false;
            }
            if self.next < self.lines {
                out.push(Envelope::new(self.id.as_str(), self.next, StreamItem::Stdout(format!("{}\n", self.next))));
                self.next += 1;
                return true;
            }
            if self.hold {
                let _ = self.cancelled.wait_for(|c| *c).await;
            }
            let reason =
                if *self.cancelled.borrow() { LifecycleReason::RunInterrupted } else { LifecycleReason::RunComplete };
            let end = LifecycleEvent::local(reason, SandboxState::Ready, AgentState::Idle, "t".to_string());
            out.push(Envelope::new(self.id.as_str(), self.next, StreamItem::Lifecycle(end)));
            self.done = true;
            true
        }

        async fn finish(self: Box<Self>) -> RunResult {
            let state = if *self.cancelled.borrow() { "cancelled" } else { "completed" };
            serde_json::from_value(serde_json::json!({
                "run_id": self.id, "state": state, "usage": {}, "pressure": agentstream_core::stream::Pressure::default(),
                "stats": agentstream_core::DecodeStats::default(), "last_sequence": self.next, "duration_ms": 0
            }))
            .unwrap()
        }
    }

    #[async_trait]
    impl RunExecutor for Scripted {
        fn agents(&self) -> Vec<String> {
            vec!["script".into()]
        }

        async fn start(&self, _request: ExecRequest) -> Result<Execution, StartError> {
            tokio::time::sleep(self.start_delay).await;
            let id = agentstream_core::stream::new_run_id();
            let (tx, rx) = tokio::sync::watch::channel(false);
            Ok(Execution {
                run_id: id.clone(),
                control: Arc::new(ScriptedControl(tx)),
                placement: Placement::Local(Box::new(ScriptedOutput {
                    id,
                    next: 0,
                    lines: self.lines,
                    cancelled: rx,
                    hold: self.hold,
                    done: false,
                })),
            })
        }
    }

    fn broker(hold: bool) -> RunBroker {
        broker_starting_in(hold, Duration::ZERO)
    }

    fn broker_starting_in(hold: bool, start_delay: Duration) -> RunBroker {
        let limits =
            BrokerLimits { runs_per_tenant: 1, subscribers_per_run: 1, streams_per_tenant: 2, finished_runs_kept: 10 };
        broker_with(hold, start_delay, limits)
    }

    fn broker_with(hold: bool, start_delay: Duration, limits: BrokerLimits) -> RunBroker {
        RunBroker::new(
            Arc::new(Scripted { lines: 5, hold, start_delay }),
            Arc::new(MemoryLog::new(Retention { events: 100, bytes: 1 << 20, total_bytes: 1 << 30 })),
            Arc::new(MemoryRegistry::new(10)),
            limits,
        )
    }

    #[tokio::test]
    async fn one_tenant_cannot_open_more_streams_than_its_share() {
        let limits =
            BrokerLimits { runs_per_tenant: 4, subscribers_per_run: 4, streams_per_tenant: 2, finished_runs_kept: 10 };
        let b = broker_with(true, Duration::ZERO, limits);
        let (a, other): (TenantId, TenantId) = ("a".into(), "b".into());
        let (one, two) = (b.start(&a, request()).await.unwrap(), b.start(&a, request()).await.unwrap());
        let theirs = b.start(&other, request()).await.unwrap();
        let first = b.subscribe(&a, &one.id, None).await.unwrap();
        let _second = b.subscribe(&a, &two.id, None).await.unwrap();
        // The tenant's share is taken, on whichever of its runs: 429 with what to do.
        let refused = b.subscribe(&a, &one.id, None).await.err();
        assert_eq!(refused, Some(BrokerError::TooManyStreams { limit: 2 }));
        assert!(refused.unwrap().to_string().contains("limits.streams_per_tenant"));
        // Another tenant is not affected.
        let _their_stream = b.subscribe(&other, &theirs.id, None).await.unwrap();
        // A stream that closes gives its slot back.
        drop(first);
        let _again = b.subscribe(&a, &one.id, None).await.unwrap();
    }

    fn request() -> RunRequest {
        RunRequest { agent: "script".into(), prompt: "go".into(), model: None, resume: None }
    }

    async fn drain(mut sub: BrokerSubscription) -> Vec<u64> {
        let mut out = Vec::new();
        while sub.next_batch(&mut out, 10).await {}
        out.iter()
            .map(|d| match d {
                Delivered::Frame(f) => f.sequence,
                Delivered::Gap(_) | Delivered::Notice(_) => u64::MAX,
            })
            .collect()
    }

    #[tokio::test]
    async fn start_subscribe_and_results_are_scoped_to_the_tenant() {
        let b = broker(false);
        let (a, other): (TenantId, TenantId) = ("a".into(), "b".into());
        let info = b.start(&a, request()).await.unwrap();
        assert_eq!(info.status, RunStatus::Running);
        assert_eq!(b.get(&other, &info.id).await, Err(BrokerError::NotFound));
        assert!(b.list(&other, &ListPage::default()).await.unwrap().runs.is_empty());
        assert_eq!(b.subscribe(&other, &info.id, None).await.err(), Some(BrokerError::NotFound));
        let sub = b.subscribe(&a, &info.id, None).await.unwrap();
        assert_eq!(b.subscribe(&a, &info.id, None).await.err(), Some(BrokerError::TooManySubscribers { limit: 1 }));
        assert_eq!(drain(sub).await, [0, 1, 2, 3, 4, 5]);
        assert!(b.wait_idle(Duration::from_secs(5)).await);
        let done = b.get(&a, &info.id).await.unwrap();
        assert_eq!((done.status, done.last_sequence), (RunStatus::Completed, Some(5)));
        assert_eq!(drain(b.subscribe(&a, &info.id, Some(2)).await.unwrap()).await, [3, 4, 5], "the slot was freed");
        assert_eq!(b.subscribe(&a, &info.id, Some(5)).await.err(), Some(BrokerError::Complete));
    }

    #[tokio::test]
    async fn a_start_whose_caller_stops_waiting_completes_and_gives_the_reservation_back() {
        let b = broker_starting_in(true, Duration::from_millis(100));
        let a: TenantId = "a".into();
        // The caller hangs up while the run is starting (the HTTP handler's future is dropped).
        assert!(tokio::time::timeout(Duration::from_millis(10), b.start(&a, request())).await.is_err());
        tokio::time::sleep(Duration::from_millis(300)).await;
        // The run started all the same, and is recorded: the client can find and stop it.
        let runs = b.list(&a, &ListPage::default()).await.unwrap().runs;
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].info.status, RunStatus::Running);
        assert_eq!(b.running(), 1);
        let cancelled = b.cancel(&a, &runs[0].info.id, "stop", Duration::from_secs(5)).await.unwrap();
        assert_eq!(cancelled.status, RunStatus::Cancelled);
        assert_eq!(b.running(), 0);
        // The tenant's one slot is free again (it was held for ever by the dropped start).
        let again = b.start(&a, request()).await.unwrap();
        assert_eq!(again.status, RunStatus::Running);
    }

    #[tokio::test]
    async fn limits_cancel_and_shutdown() {
        let b = broker(true);
        let a: TenantId = "a".into();
        let bad = RunRequest { agent: "nope".into(), ..request() };
        assert!(matches!(b.start(&a, bad).await, Err(BrokerError::Invalid { field: "agent", .. })));
        let empty = RunRequest { prompt: " ".into(), ..request() };
        assert!(matches!(b.start(&a, empty).await, Err(BrokerError::Invalid { field: "prompt", .. })));
        let info = b.start(&a, request()).await.unwrap();
        assert_eq!(b.start(&a, request()).await.err(), Some(BrokerError::TooManyRuns { limit: 1 }));
        assert_eq!(b.running(), 1);
        assert_eq!(b.cancel(&"b".into(), &info.id, "no", Duration::from_millis(50)).await, Err(BrokerError::NotFound));
        assert_eq!(
            b.get(&a, &info.id).await.unwrap().status,
            RunStatus::Running,
            "another tenant's cancel is not applied"
        );
        let cancelled = b.cancel(&a, &info.id, "stop", Duration::from_secs(5)).await.unwrap();
        assert_eq!(cancelled.status, RunStatus::Cancelled);
        assert_eq!(b.running(), 0);
        b.stop_accepting();
        assert_eq!(b.start(&a, request()).await.err(), Some(BrokerError::ShuttingDown));
    }
}
