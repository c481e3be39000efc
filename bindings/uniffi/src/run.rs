//! One started run ([`AgentRun`]): read by its listeners ([`AgentRun::dispatch`]) or pulled
//! as JSON batches ([`AgentRun::next_batch`]), cancelled, awaited — and the foreign listener
//! interfaces it calls.
//!
//! Listeners are called on the thread that reads the run: the caller's thread for the blocking
//! calls, the thread polling the future for the `async` ones (a Kotlin coroutine's, a Swift
//! task's), never a thread of the library. So a JVM never attaches a native thread per event,
//! the core's backpressure sees a reader exactly as fast as the listeners, and a listener may
//! call back into the library (a call that would wait for its own run is refused as `busy`).

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use agentstream_core::bridge::{BatchLimits, Client, Delivery, HandlerError, Pulled, Run, SubscriptionId};
use agentstream_core::runner::write_deliveries_json;
use agentstream_core::stream::{CancelReason, CancellationToken};
use agentstream_core::{Channel, ErrorKind};

use crate::error::{ListenerError, Result, error};
use crate::options::{NAMING, ReadMode};
use crate::runtime::in_core_runtime;

/// A listener of one channel, registered with `Evolve.on(channel, listener)`: called once per
/// item of that channel, in sequence order, never concurrently.
#[uniffi::export(with_foreign)]
pub trait ChannelListener: Send + Sync {
    /// One item: its envelope in the wire JSON form (`{"runId", "sequence", "channel",
    /// "event", "coalesced"?}`; `event` is an `OutputEvent` on `content`, a `LifecycleEvent` on
    /// `lifecycle`, the text on `stdout`/`stderr`). A failure is counted and the run goes on.
    fn on_item(&self, envelope_json: String) -> std::result::Result<(), ListenerError>;
}

/// The hook listener of one run (the seed's `on_event`): called once per hook event, in order.
#[uniffi::export(with_foreign)]
pub trait HookListener: Send + Sync {
    /// One hook event in its canonical JSON form (`{"type", "run_id", "agent_id",
    /// "timestamp", "status", "sequence", "details"?}`). A failure is counted and the run goes
    /// on.
    fn on_hook(&self, hook_json: String) -> std::result::Result<(), ListenerError>;
}

/// The handler id a run's hook listener is counted under (subscription ids start at 1).
pub(crate) const HOOK_LISTENER: u64 = 0;

/// A cancellation switch a caller creates before a run and may flip from any thread, before or
/// during the run: the run ends `run_interrupted` (reason `caller`). One token may serve
/// several runs.
#[derive(Debug, Default, uniffi::Object)]
pub struct CancelToken {
    token: CancellationToken,
}

#[uniffi::export]
impl CancelToken {
    /// A token not yet cancelled.
    #[uniffi::constructor]
    pub fn new() -> Arc<Self> {
        Arc::new(CancelToken::default())
    }

    /// Cancel with `reason`: true for the call that flipped the switch; later calls change
    /// nothing (the first reason stands).
    pub fn cancel(&self, reason: String) -> bool {
        self.token.cancel(CancelReason::caller(reason))
    }

    /// Whether it was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }
}

impl CancelToken {
    pub(crate) fn token(&self) -> CancellationToken {
        self.token.clone()
    }
}

/// A listener that failed, as the core counted it (`Run::handler_failed`).
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct HandlerFailure {
    /// The listener: its subscription id, or 0 for the run's hook listener.
    pub handler: u64,
    /// `content`, `lifecycle`, `stdout`, `stderr`, or `on_event` for the hook listener.
    pub channel: String,
    /// The sequence of the delivery it failed on.
    pub sequence: u64,
    /// What the listener reported (a Kotlin listener's stack trace).
    pub reason: String,
}

impl From<HandlerError> for HandlerFailure {
    fn from(e: HandlerError) -> Self {
        HandlerFailure { handler: e.handler, channel: e.channel, sequence: e.sequence, reason: e.message }
    }
}

/// What one read of a run did.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct Batch {
    /// True once the terminal event and its hook events were delivered: nothing more comes.
    pub ended: bool,
    /// For `next_batch`: the deliveries as ONE JSON array of tagged deliveries,
    /// `[{"item": <envelope>}, {"hook": <hook event>}, …]` in delivery order (`[]` when
    /// nothing arrived in time or at the end). `null` for `dispatch`.
    pub deliveries_json: Option<String>,
    /// The FIRST failure of each listener that failed for the first time in this batch: the
    /// ones to report (later failures of the same listener are only counted).
    pub failures: Vec<HandlerFailure>,
}

/// What `Evolve.run` returns once the run has ended.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct RunFinished {
    /// The run result (`RunResult`) as JSON: `state`, `session_id`, `usage`,
    /// `handler_errors`, …
    pub result_json: String,
    /// The first failure of each listener that failed.
    pub failures: Vec<HandlerFailure>,
}

/// Channel listeners by subscription id, shared by a client and its runs.
pub(crate) type Listeners = Mutex<HashMap<SubscriptionId, Arc<dyn ChannelListener>>>;

/// The listeners of one channel, in registration order.
type Targets = Vec<(SubscriptionId, Arc<dyn ChannelListener>)>;

/// Something read once per channel per batch (the channel's subscribers), looked up by channel.
pub(crate) struct PerChannel<T>([Option<T>; 4]);

impl<T> PerChannel<T> {
    pub(crate) fn new() -> Self {
        PerChannel(Default::default())
    }

    /// `channel`'s value, made by `read` the first time it is asked for.
    pub(crate) fn get(&mut self, channel: Channel, read: impl FnOnce() -> T) -> &mut T {
        let slot = Channel::ALL.iter().position(|c| *c == channel).unwrap_or(0);
        self.0[slot].get_or_insert_with(read)
    }
}

thread_local! {
    /// The run whose listeners this thread is calling now (null otherwise).
    static DELIVERING: Cell<*const AgentRun> = const { Cell::new(std::ptr::null()) };
}

/// One started run. Dropping (closing) it before its end cancels it (reason `reader_left`),
/// unless nobody reads it (an await-only run goes on to its result).
#[derive(uniffi::Object)]
pub struct AgentRun {
    run: Run,
    client: Client,
    listeners: Arc<Listeners>,
    hook_listener: Option<Arc<dyn HookListener>>,
    /// Set while a call reads the run: one reader at a time.
    reading: AtomicBool,
    /// The id `agentstream_uniffi_run_pull_routed` knows this run by, once issued.
    routed_reader: OnceLock<u64>,
    /// A routed batch written but not yet handed over (it did not fit the caller's buffer).
    routed_pending: Mutex<Vec<u8>>,
}

impl std::fmt::Debug for AgentRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRun").field("id", &self.run.id()).finish_non_exhaustive()
    }
}

impl Drop for AgentRun {
    fn drop(&mut self) {
        if let Some(id) = self.routed_reader.get() {
            crate::routed::unregister(*id);
        }
    }
}

/// Leaves its run when dropped, unless emptied first (the run was read to its end).
struct LeaveUnlessDone(Option<Arc<AgentRun>>);

impl Drop for LeaveUnlessDone {
    fn drop(&mut self) {
        if let Some(run) = self.0.take() {
            run.run.leave();
        }
    }
}

/// Holds the run's reader slot for one read.
pub(crate) struct Reading<'a>(&'a AtomicBool);

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// Marks this thread as calling `run`'s listeners.
struct Delivering(*const AgentRun);

impl Delivering {
    fn enter(run: &AgentRun) -> Self {
        Delivering(DELIVERING.with(|d| d.replace(run)))
    }
}

impl Drop for Delivering {
    fn drop(&mut self) {
        DELIVERING.with(|d| d.set(self.0));
    }
}

fn timeout(timeout_ms: Option<i64>) -> Result<Option<Duration>> {
    let Some(ms) = timeout_ms else { return Ok(None) };
    let ms = u64::try_from(ms)
        .or_else(|_| agentstream_core::bridge::millis_from_f64(ms as f64, "timeout_ms", NAMING))
        .map_err(crate::AgentstreamError::from)?;
    Ok(Some(Duration::from_millis(ms)))
}

fn batch_limits(max_events: Option<i64>) -> Result<BatchLimits> {
    match max_events {
        None => Ok(BatchLimits::DEFAULT),
        Some(n) if n >= 1 => {
            Ok(BatchLimits { max_events: usize::try_from(n).unwrap_or(usize::MAX), ..BatchLimits::DEFAULT })
        }
        Some(n) => Err(error(ErrorKind::InvalidArgument, format!("maxEvents must be at least 1, got {n}"))),
    }
}

impl AgentRun {
    pub(crate) fn new(
        run: Run,
        client: Client,
        listeners: Arc<Listeners>,
        hook_listener: Option<Arc<dyn HookListener>>,
    ) -> Self {
        AgentRun {
            run,
            client,
            listeners,
            hook_listener,
            reading: AtomicBool::new(false),
            routed_reader: OnceLock::new(),
            routed_pending: Mutex::new(Vec::new()),
        }
    }

    /// The core's run.
    pub(crate) fn core(&self) -> &Run {
        &self.run
    }

    /// The subscription ids of `channel`, in registration order.
    pub(crate) fn subscribers(&self, channel: Channel) -> Vec<SubscriptionId> {
        self.client.subscribers(channel)
    }

    /// The routed batch waiting to be handed over (empty when none).
    pub(crate) fn routed_pending(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        self.routed_pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Take the run's reader slot for one read: `Busy` while another call (or a listener of
    /// this run, on this thread) reads it.
    pub(crate) fn reading(&self) -> Result<Reading<'_>> {
        if self.delivering_here() {
            return Err(error(
                ErrorKind::Busy,
                format!("run {} is being read by the listener calling this: it cannot read itself", self.run.id()),
            ));
        }
        if self.reading.swap(true, Ordering::AcqRel) {
            return Err(error(
                ErrorKind::Busy,
                format!("run {} is already being read by another call: read it from one place", self.run.id()),
            ));
        }
        Ok(Reading(&self.reading))
    }

    fn delivering_here(&self) -> bool {
        DELIVERING.with(|d| std::ptr::eq(d.get(), self))
    }

    /// The listeners of `channel`, in registration order.
    fn targets(&self, channel: Channel) -> Targets {
        let ids = self.client.subscribers(channel);
        let listeners = self.listeners.lock().unwrap_or_else(|p| p.into_inner());
        ids.into_iter().filter_map(|id| listeners.get(&id).map(|l| (id, l.clone()))).collect()
    }

    /// Hand `batch` to the listeners, in order; returns the first failures of listeners that
    /// failed for the first time. Subscriptions are read once per batch.
    fn deliver(&self, batch: &[Delivery]) -> Vec<HandlerFailure> {
        let _delivering = Delivering::enter(self);
        let mut targets: PerChannel<Targets> = PerChannel::new();
        let mut first = Vec::new();
        for delivery in batch {
            match delivery {
                Delivery::Item(env) => {
                    let channel = env.channel();
                    let listeners = targets.get(channel, || self.targets(channel));
                    if listeners.is_empty() {
                        continue;
                    }
                    let json = env.to_json();
                    for (id, listener) in listeners.iter() {
                        if let Err(e) = listener.on_item(json.clone()) {
                            self.failed(*id, channel.name(), env.sequence, e, &mut first);
                        }
                    }
                }
                Delivery::Hook(hook) => {
                    let Some(listener) = &self.hook_listener else { continue };
                    let json = match serde_json::to_string(hook) {
                        Ok(json) => json,
                        Err(e) => {
                            let reason = format!("agentstream: a hook event did not serialize (a bug): {e}");
                            self.failed(
                                HOOK_LISTENER,
                                "on_event",
                                hook.sequence,
                                ListenerError::Failed { reason },
                                &mut first,
                            );
                            continue;
                        }
                    };
                    if let Err(e) = listener.on_hook(json) {
                        self.failed(HOOK_LISTENER, "on_event", hook.sequence, e, &mut first);
                    }
                }
            }
        }
        first
    }

    fn failed(&self, handler: u64, channel: &str, sequence: u64, e: ListenerError, first: &mut Vec<HandlerFailure>) {
        let ListenerError::Failed { reason } = e;
        let error = HandlerError { handler, channel: channel.to_string(), sequence, message: reason };
        if self.run.handler_failed(error.clone()) {
            first.push(error.into());
        }
    }

    /// After a pull: deliver, and say whether the stream is over.
    fn finish_read(&self, pulled: Pulled, batch: &[Delivery], json: bool) -> Batch {
        let failures = if pulled == Pulled::Batch { self.deliver(batch) } else { Vec::new() };
        let deliveries_json = json.then(|| {
            let mut out = Vec::with_capacity(64 + batch.len() * 256);
            write_deliveries_json(batch, &mut out);
            String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
        });
        Batch { ended: pulled == Pulled::End || self.run.is_ended(), deliveries_json, failures }
    }

    fn not_from_a_listener(&self, what: &str) -> Result<()> {
        if self.delivering_here() {
            return Err(error(
                ErrorKind::Busy,
                format!(
                    "{what} was called from inside a listener of run {}: it would wait for itself (the run goes on when the listener returns)",
                    self.run.id()
                ),
            ));
        }
        Ok(())
    }

    fn result_to_json(result: &agentstream_core::bridge::RunResult) -> Result<String> {
        serde_json::to_string(result)
            .map_err(|e| error(ErrorKind::Internal, format!("the run result did not serialize: {e}")))
    }

    /// Read to the end, delivering to the listeners; the result and the first failures.
    pub(crate) async fn finish(self: Arc<Self>) -> Result<RunFinished> {
        // Dropped before the end (a cancelled coroutine): the run is left, which cancels it —
        // also a run nothing is delivered from (no listener), which no reader would stop.
        let mut leave = LeaveUnlessDone(Some(self.clone()));
        let mut failures = Vec::new();
        loop {
            let batch = self.clone().dispatch_async().await?;
            failures.extend(batch.failures);
            if batch.ended {
                break;
            }
        }
        let result_json = self.clone().wait_json_async().await?;
        leave.0 = None;
        Ok(RunFinished { result_json, failures })
    }
}

#[uniffi::export]
impl AgentRun {
    /// The run's id.
    pub fn id(&self) -> String {
        self.run.id().to_string()
    }

    /// How the run is read.
    pub fn read_mode(&self) -> ReadMode {
        self.run.read_mode().into()
    }

    /// Wait up to `timeout_ms` (forever when null) for the next batch and hand it to the
    /// listeners on THIS thread, in order. `ended` once the terminal event was delivered.
    pub fn dispatch(&self, timeout_ms: Option<i64>) -> Result<Batch> {
        let timeout = timeout(timeout_ms)?;
        let _reading = self.reading()?;
        let mut batch = Vec::new();
        let pulled = self.run.pull(&mut batch, BatchLimits::DEFAULT, timeout);
        Ok(self.finish_read(pulled, &batch, false))
    }

    /// [`dispatch`](Self::dispatch) without blocking a thread: the listeners are called on the
    /// thread that polls it. Cancelling it (a cancelled coroutine or task) loses nothing: a
    /// batch is taken and delivered within one poll.
    pub async fn dispatch_async(self: Arc<Self>) -> Result<Batch> {
        in_core_runtime(async move {
            let _reading = self.reading()?;
            let mut batch = Vec::new();
            let pulled = self.run.pull_async(&mut batch, BatchLimits::DEFAULT).await;
            Ok(self.finish_read(pulled, &batch, false))
        })
        .await
    }

    /// Wait up to `timeout_ms` (forever when null) for at least one delivery and return what is
    /// ready (at most `max_events`, default 256) as JSON (`deliveries_json`); the listeners of
    /// subscribed channels are called too. For a run started with `read = iterate`.
    pub fn next_batch(&self, max_events: Option<i64>, timeout_ms: Option<i64>) -> Result<Batch> {
        let limits = batch_limits(max_events)?;
        let timeout = timeout(timeout_ms)?;
        let _reading = self.reading()?;
        let mut batch = Vec::new();
        let pulled = self.run.pull(&mut batch, limits, timeout);
        Ok(self.finish_read(pulled, &batch, true))
    }

    /// [`next_batch`](Self::next_batch) without blocking a thread (no timeout: cancel the
    /// caller's task to stop waiting; nothing is lost).
    pub async fn next_batch_async(self: Arc<Self>, max_events: Option<i64>) -> Result<Batch> {
        in_core_runtime(async move {
            let limits = batch_limits(max_events)?;
            let _reading = self.reading()?;
            let mut batch = Vec::new();
            let pulled = self.run.pull_async(&mut batch, limits).await;
            Ok(self.finish_read(pulled, &batch, true))
        })
        .await
    }

    /// The id to pull this run with through `agentstream_uniffi_run_pull_routed`, the plain C
    /// function for a binding whose uniffi calls are costly (see the `routed` module): each call
    /// returns the same id. The run keeps its own lifetime: closing this handle frees it, and
    /// the id then names no run.
    pub fn routed_reader(self: Arc<Self>) -> u64 {
        *self.routed_reader.get_or_init(|| crate::routed::register(&self))
    }

    /// Count the listener calls of pulled routed batches that failed (each one, on the run's
    /// `handler_errors`) and return the first failure of each listener that failed for the
    /// first time: the ones to report. `channel` names the item's channel, or `on_event` for
    /// the hook listener (handler 0).
    pub fn report_failures(&self, failures: Vec<HandlerFailure>) -> Vec<HandlerFailure> {
        let mut first = Vec::new();
        for f in failures {
            let error =
                HandlerError { handler: f.handler, channel: f.channel, sequence: f.sequence, message: f.reason };
            if self.run.handler_failed(error.clone()) {
                first.push(error.into());
            }
        }
        first
    }

    /// The result (`RunResult` JSON) once the terminal event was delivered; a `StillRunning`
    /// error before.
    pub fn result_json(&self) -> Result<String> {
        Self::result_to_json(&self.run.result()?)
    }

    /// Wait up to `timeout_ms` (forever when null) for the result (`RunResult` JSON). A run
    /// read by listeners waits for its reader to reach the terminal event; an iterated run is
    /// drained once its reader left (the core's `Run::wait`). `StillRunning` when
    /// the time ran out; `Busy` from inside a listener of this run.
    pub fn wait_json(&self, timeout_ms: Option<i64>) -> Result<String> {
        let timeout = timeout(timeout_ms)?;
        self.not_from_a_listener("wait")?;
        Self::result_to_json(&self.run.wait(timeout)?)
    }

    /// [`wait_json`](Self::wait_json) without blocking a thread.
    pub async fn wait_json_async(self: Arc<Self>) -> Result<String> {
        self.not_from_a_listener("wait")?;
        in_core_runtime(async move { Self::result_to_json(&self.run.wait_async().await) }).await
    }

    /// Cancel the run (SIGTERM to the harness's process group, SIGKILL after the grace
    /// period): it ends `run_interrupted` with `reason`. The first reason stands.
    pub fn cancel(&self, reason: String) {
        self.run.cancel(&reason);
    }

    /// True once the terminal event was delivered (an await-only run: once it finished).
    pub fn is_ended(&self) -> bool {
        self.run.is_ended()
    }

    /// Live backpressure statistics (`Pressure` JSON).
    pub fn pressure_json(&self) -> Result<String> {
        serde_json::to_string(&self.run.pressure())
            .map_err(|e| error(ErrorKind::Internal, format!("pressure did not serialize: {e}")))
    }

    /// The first failure of each listener that failed so far, in order.
    pub fn handler_failures(&self) -> Vec<HandlerFailure> {
        self.run.handler_errors().into_iter().map(Into::into).collect()
    }

    /// Listener failures so far (every one counted).
    pub fn handler_error_count(&self) -> u64 {
        self.run.handler_error_count()
    }
}
