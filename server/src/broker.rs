//! [`RunBroker`]: the registry behind the HTTP routes, usable from Rust. Every operation is
//! scoped to a tenant: another tenant's run is indistinguishable from one that does not exist.
//!
//! The broker connects a [`RunExecutor`] (where runs execute) and an [`EventLog`] (where their
//! envelopes are kept and replayed from): for each started run one pump task reads the run's
//! output and appends it to the log, then records the result. Subscribers read the log, never
//! the run, so any number of them — and none — cost the run nothing.
//!
//! Limits: runs running at once per tenant, subscribers per run, finished runs kept per tenant
//! (the oldest finished run and its log are forgotten first); the replay buffer's size is the
//! log's.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentstream_core::runner::{FinalState, RunResult};
use async_trait::async_trait;
use serde::Serialize;
use tokio::sync::watch;

use crate::auth::TenantId;
use crate::config::check_model;
use crate::executor::{ExecRequest, RunControl, RunExecutor, RunOutput, RunRequest, StartError};
use crate::frame::{Delivered, Frame, now_ms};
use crate::log::{EventLog, SubscribeError, Subscription};

/// Envelopes the pump moves per batch.
const PUMP_BATCH: usize = 256;

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
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
    fn of(state: FinalState) -> Self {
        match state {
            FinalState::Completed => RunStatus::Completed,
            FinalState::Failed => RunStatus::Failed,
            FinalState::Cancelled => RunStatus::Cancelled,
        }
    }
}

/// What the API says about a run (`GET /v1/runs/{id}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    /// The agent could not be started.
    Unavailable(String),
    /// The server is shutting down: no new runs.
    ShuttingDown,
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
            BrokerError::Unavailable(m) => write!(f, "the agent could not be started: {m}"),
            BrokerError::ShuttingDown => f.write_str("the server is shutting down and starts no new runs"),
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
    /// Finished runs kept per tenant.
    pub finished_runs_kept: usize,
}

struct RunEntry {
    tenant: TenantId,
    info: RunInfo,
    control: Arc<dyn RunControl>,
    subscribers: Arc<AtomicUsize>,
    ended: watch::Receiver<bool>,
}

#[derive(Default)]
struct TenantState {
    running: usize,
    finished: VecDeque<Arc<str>>,
}

#[derive(Default)]
struct State {
    runs: HashMap<Arc<str>, RunEntry>,
    tenants: HashMap<TenantId, TenantState>,
    /// Runs whose pump has not finished (all tenants), including ones still starting.
    live: usize,
}

struct Inner {
    executor: Arc<dyn RunExecutor>,
    log: Arc<dyn EventLog>,
    limits: BrokerLimits,
    accepting: AtomicBool,
    state: Mutex<State>,
    /// `live`, watched (shutdown waits for 0).
    idle: watch::Sender<usize>,
}

/// The run registry: start, look up, list, subscribe, cancel — each scoped to a tenant.
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
    /// A broker running runs on `executor` and keeping their envelopes in `log`.
    pub fn new(executor: Arc<dyn RunExecutor>, log: Arc<dyn EventLog>, limits: BrokerLimits) -> Self {
        RunBroker {
            inner: Arc::new(Inner {
                executor,
                log,
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
            return Err(BrokerError::Invalid {
                field: "agent",
                message: format!("unknown agent {:?}; this server runs: {}", request.agent, agents.join(", ")),
            });
        }
        if request.prompt.trim().is_empty() {
            return Err(BrokerError::Invalid { field: "prompt", message: "the prompt is empty".into() });
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

    /// Start a run for `tenant`.
    pub async fn start(&self, tenant: &TenantId, request: RunRequest) -> Result<RunInfo, BrokerError> {
        self.check(&request)?;
        let inner = &self.inner;
        {
            let mut st = inner.state.lock().expect("broker state");
            if !inner.accepting.load(Ordering::SeqCst) {
                return Err(BrokerError::ShuttingDown);
            }
            let t = st.tenants.entry(tenant.clone()).or_default();
            if t.running >= inner.limits.runs_per_tenant {
                return Err(BrokerError::TooManyRuns { limit: inner.limits.runs_per_tenant });
            }
            t.running += 1;
            st.live += 1;
            inner.idle.send_replace(st.live);
        }
        let started = inner
            .executor
            .start(ExecRequest { tenant: tenant.clone(), request: request.clone() })
            .await
            .map_err(|e| {
                self.release(tenant, None);
                match e {
                    StartError::UnknownAgent => {
                        BrokerError::Invalid { field: "agent", message: format!("unknown agent {:?}", request.agent) }
                    }
                    StartError::Unavailable(m) => BrokerError::Unavailable(m),
                }
            })?;
        let run_id: Arc<str> = started.run_id.as_str().into();
        inner.log.create(&run_id).await;
        let (ended_tx, ended_rx) = watch::channel(false);
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
        };
        inner.state.lock().expect("broker state").runs.insert(
            run_id.clone(),
            RunEntry {
                tenant: tenant.clone(),
                info: info.clone(),
                control: started.control.clone(),
                subscribers: Arc::new(AtomicUsize::new(0)),
                ended: ended_rx,
            },
        );
        // A run started while shutdown began is cancelled like the others.
        if !inner.accepting.load(Ordering::SeqCst) {
            started.control.cancel("the server is shutting down");
        }
        let broker = self.clone();
        let tenant = tenant.clone();
        tokio::spawn(async move { broker.pump(run_id, tenant, started.output, ended_tx).await });
        Ok(info)
    }

    /// Move a run's output into the log, then record its result.
    async fn pump(
        self,
        run_id: Arc<str>,
        tenant: TenantId,
        mut output: Box<dyn RunOutput>,
        ended: watch::Sender<bool>,
    ) {
        let log = &self.inner.log;
        let mut envelopes = Vec::with_capacity(PUMP_BATCH);
        while output.next_batch(&mut envelopes, PUMP_BATCH).await {
            let received = now_ms();
            let frames: Vec<Frame> = envelopes.drain(..).map(|e| Frame::of(&e, received)).collect();
            let Some(last) = frames.last().map(|f| f.last_covered) else { continue };
            log.append(&run_id, frames).await;
            if let Some(entry) = self.inner.state.lock().expect("broker state").runs.get_mut(&run_id) {
                entry.info.last_sequence = Some(last);
            }
        }
        log.seal(&run_id).await;
        let result = output.finish().await;
        {
            let mut st = self.inner.state.lock().expect("broker state");
            if let Some(entry) = st.runs.get_mut(&run_id) {
                entry.info.status = RunStatus::of(result.state);
                entry.info.ended_at = Some(agentstream_core::time::now_iso8601());
                entry.info.last_sequence = Some(result.last_sequence);
                entry.info.result = Some(result);
            }
        }
        let _ = ended.send(true);
        let forgotten = self.release(&tenant, Some(run_id));
        for id in forgotten {
            log.remove(&id).await;
        }
    }

    /// A run stopped running: free its tenant's slot, keep it among the finished runs, and
    /// return the finished runs to forget (over `finished_runs_kept`).
    fn release(&self, tenant: &TenantId, finished: Option<Arc<str>>) -> Vec<Arc<str>> {
        let mut forgotten = Vec::new();
        let mut st = self.inner.state.lock().expect("broker state");
        let st = &mut *st;
        if let Some(t) = st.tenants.get_mut(tenant) {
            t.running -= 1;
            if let Some(id) = finished {
                t.finished.push_back(id);
                while t.finished.len() > self.inner.limits.finished_runs_kept {
                    let old = t.finished.pop_front().expect("non-empty");
                    st.runs.remove(&old);
                    forgotten.push(old);
                }
            }
        }
        st.live -= 1;
        self.inner.idle.send_replace(st.live);
        forgotten
    }

    fn with_run<T>(&self, tenant: &TenantId, run_id: &str, f: impl FnOnce(&RunEntry) -> T) -> Result<T, BrokerError> {
        let st = self.inner.state.lock().expect("broker state");
        match st.runs.get(run_id) {
            Some(entry) if entry.tenant == *tenant => Ok(f(entry)),
            _ => Err(BrokerError::NotFound),
        }
    }

    /// A run of `tenant`.
    pub fn get(&self, tenant: &TenantId, run_id: &str) -> Result<RunInfo, BrokerError> {
        self.with_run(tenant, run_id, |e| e.info.clone())
    }

    /// The runs of `tenant` (running and kept finished ones), newest first.
    pub fn list(&self, tenant: &TenantId) -> Vec<RunInfo> {
        let st = self.inner.state.lock().expect("broker state");
        let mut runs: Vec<RunInfo> = st.runs.values().filter(|e| e.tenant == *tenant).map(|e| e.info.clone()).collect();
        // Ids start with their creation time, so they sort by it.
        runs.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| b.id.cmp(&a.id)));
        runs
    }

    /// Read a run's stream after sequence `after` (`None`: from the start).
    pub async fn subscribe(
        &self,
        tenant: &TenantId,
        run_id: &str,
        after: Option<u64>,
    ) -> Result<BrokerSubscription, BrokerError> {
        let limit = self.inner.limits.subscribers_per_run;
        let counter = self.with_run(tenant, run_id, |e| e.subscribers.clone())?;
        if counter.fetch_add(1, Ordering::SeqCst) >= limit {
            counter.fetch_sub(1, Ordering::SeqCst);
            return Err(BrokerError::TooManySubscribers { limit });
        }
        let guard = SubscriberSlot(counter);
        let inner = self.inner.log.subscribe(run_id, after).await.map_err(|e| match e {
            SubscribeError::UnknownRun => BrokerError::NotFound,
            SubscribeError::AfterBeyondEnd { after, last } => BrokerError::AfterBeyondEnd { after, last },
            SubscribeError::Complete => BrokerError::Complete,
        })?;
        Ok(BrokerSubscription { inner, _slot: guard })
    }

    /// Cancel a run of `tenant` and wait (up to `wait`) for it to end. Idempotent: cancelling a
    /// run that ended changes nothing. Returns the run as it is then.
    pub async fn cancel(
        &self,
        tenant: &TenantId,
        run_id: &str,
        reason: &str,
        wait: Duration,
    ) -> Result<RunInfo, BrokerError> {
        let (control, mut ended) = self.with_run(tenant, run_id, |e| (e.control.clone(), e.ended.clone()))?;
        if !*ended.borrow() {
            control.cancel(reason);
            let _ = tokio::time::timeout(wait, ended.wait_for(|done| *done)).await;
        }
        self.get(tenant, run_id)
    }

    /// Stop starting runs (requests get [`BrokerError::ShuttingDown`]).
    pub fn stop_accepting(&self) {
        self.inner.accepting.store(false, Ordering::SeqCst);
    }

    /// Whether new runs are accepted.
    pub fn is_accepting(&self) -> bool {
        self.inner.accepting.load(Ordering::SeqCst)
    }

    /// How many runs are running (all tenants).
    pub fn running(&self) -> usize {
        *self.inner.idle.borrow()
    }

    /// Cancel every running run (all tenants) with `reason`.
    pub fn cancel_all(&self, reason: &str) {
        let controls: Vec<Arc<dyn RunControl>> = {
            let st = self.inner.state.lock().expect("broker state");
            st.runs.values().filter(|e| !*e.ended.borrow()).map(|e| e.control.clone()).collect()
        };
        for c in controls {
            c.cancel(reason);
        }
    }

    /// Wait up to `timeout` until no run is running; true if none is.
    pub async fn wait_idle(&self, timeout: Duration) -> bool {
        let mut rx = self.inner.idle.subscribe();
        tokio::time::timeout(timeout, rx.wait_for(|live| *live == 0)).await.is_ok()
    }
}

struct SubscriberSlot(Arc<AtomicUsize>);

impl Drop for SubscriberSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
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
    use agentstream_core::lifecycle::{AgentState, LifecycleEvent, LifecycleReason, SandboxState};
    use agentstream_core::stream::{Envelope, StreamItem};

    /// Runs that deliver `lines` stdout envelopes and a terminal, or wait for a cancel.
    struct Scripted {
        lines: u64,
        hold: bool,
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
            let id = agentstream_core::stream::new_run_id();
            let (tx, rx) = tokio::sync::watch::channel(false);
            Ok(Execution {
                run_id: id.clone(),
                control: Arc::new(ScriptedControl(tx)),
                output: Box::new(ScriptedOutput {
                    id,
                    next: 0,
                    lines: self.lines,
                    cancelled: rx,
                    hold: self.hold,
                    done: false,
                }),
            })
        }
    }

    fn broker(hold: bool) -> RunBroker {
        RunBroker::new(
            Arc::new(Scripted { lines: 5, hold }),
            Arc::new(MemoryLog::new(Retention { events: 100, bytes: 1 << 20 })),
            BrokerLimits { runs_per_tenant: 1, subscribers_per_run: 1, finished_runs_kept: 10 },
        )
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
                Delivered::Gap(_) => u64::MAX,
            })
            .collect()
    }

    #[tokio::test]
    async fn start_subscribe_and_results_are_scoped_to_the_tenant() {
        let b = broker(false);
        let (a, other): (TenantId, TenantId) = ("a".into(), "b".into());
        let info = b.start(&a, request()).await.unwrap();
        assert_eq!(info.status, RunStatus::Running);
        assert_eq!(b.get(&other, &info.id), Err(BrokerError::NotFound));
        assert!(b.list(&other).is_empty());
        assert_eq!(b.subscribe(&other, &info.id, None).await.err(), Some(BrokerError::NotFound));
        let sub = b.subscribe(&a, &info.id, None).await.unwrap();
        assert_eq!(b.subscribe(&a, &info.id, None).await.err(), Some(BrokerError::TooManySubscribers { limit: 1 }));
        assert_eq!(drain(sub).await, [0, 1, 2, 3, 4, 5]);
        assert!(b.wait_idle(Duration::from_secs(5)).await);
        let done = b.get(&a, &info.id).unwrap();
        assert_eq!((done.status, done.last_sequence), (RunStatus::Completed, Some(5)));
        assert_eq!(drain(b.subscribe(&a, &info.id, Some(2)).await.unwrap()).await, [3, 4, 5], "the slot was freed");
        assert_eq!(b.subscribe(&a, &info.id, Some(5)).await.err(), Some(BrokerError::Complete));
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
        assert_eq!(b.get(&a, &info.id).unwrap().status, RunStatus::Running, "another tenant's cancel is not applied");
        let cancelled = b.cancel(&a, &info.id, "stop", Duration::from_secs(5)).await.unwrap();
        assert_eq!(cancelled.status, RunStatus::Cancelled);
        assert_eq!(b.running(), 0);
        b.stop_accepting();
        assert_eq!(b.start(&a, request()).await.err(), Some(BrokerError::ShuttingDown));
    }
}
