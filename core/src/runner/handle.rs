//! [`RunHandle`]: the reader side of one operation.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::RunResult;
use crate::channel::Channel;
use crate::hooks::{HookDeriver, HookEvent, HookInput};
use crate::lifecycle::{AgentState, LifecycleEvent, LifecycleReason, SandboxState};
use crate::stream::{CancelReason, CancellationToken, ChannelSet, Envelope, Pressure, RunStream, StreamItem};

/// One thing a reader receives, in order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // deliveries are moved once each; boxing would cost an allocation per event
pub enum Delivery {
    /// A sequenced stream item (content, lifecycle, stdout or stderr).
    Item(Envelope),
    /// A hook event derived from the item delivered just before it.
    Hook(HookEvent),
}

/// What waiting for the stream found.
enum Wait {
    /// Something may be ready to take.
    Ready,
    /// The stream is over.
    End,
    /// The deadline passed.
    Timeout,
}

/// The result of a blocking read.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)]
pub enum Next {
    /// The next delivery.
    Item(Delivery),
    /// Nothing arrived within the timeout; the run goes on.
    Timeout,
    /// The stream is over (the terminal item was delivered).
    End,
}

/// How much one pulled batch may hold: at most `max_events` deliveries and, past the first,
/// about `max_bytes` bytes of events (their JSON length, as the byte budget counts them; hook
/// events derived from them ride along). A batch always holds at least one delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchLimits {
    /// The most deliveries in one batch (at least 1).
    pub max_events: usize,
    /// About the most bytes of events in one batch.
    pub max_bytes: usize,
}

impl BatchLimits {
    /// The default batch: 256 deliveries, 1 MiB.
    pub const DEFAULT: BatchLimits = BatchLimits { max_events: 256, max_bytes: 1 << 20 };

    /// At most `max_events` deliveries, bytes unbounded.
    pub fn events(max_events: usize) -> Self {
        BatchLimits { max_events, max_bytes: usize::MAX }
    }
}

impl Default for BatchLimits {
    fn default() -> Self {
        BatchLimits::DEFAULT
    }
}

/// What a run holds until it finishes ([`Shared::held_until_finished`]).
#[derive(Default)]
pub(crate) struct Held {
    pub values: Vec<Box<dyn std::any::Any + Send>>,
    /// The driver let go of everything: what comes later is dropped at once.
    pub released: bool,
}

impl Held {
    /// Let go of everything held, now and later (the driver, as the run finishes).
    pub fn release(held: &Mutex<Held>) {
        let values = {
            let mut h = held.lock().unwrap_or_else(|p| p.into_inner());
            h.released = true;
            std::mem::take(&mut h.values)
        };
        drop(values);
    }
}

pub(crate) struct Shared {
    pub run_id: String,
    pub stream: Mutex<RunStream>,
    /// The stream's reader channels ([`ChannelSet::bits`]), for the producer to check without
    /// the lock (written with the lock held, by [`RunHandle::set_channels`]).
    pub channels: AtomicU8,
    /// Whether hook events are derived (then content and lifecycle are always read).
    pub hooks: bool,
    pub readable: Condvar,
    /// Readers blocked on `readable` (changed only with the stream lock held, before waiting):
    /// a post wakes the condition variable only when somebody waits, so a run read by a busy
    /// reader makes no futex syscall per item.
    pub sleepers: AtomicUsize,
    pub readable_async: tokio::sync::Notify,
    pub cancel: CancellationToken,
    pub cancel_async: tokio::sync::Notify,
    /// Woken when the reader took items: a producer waiting for room checks again.
    pub room_async: tokio::sync::Notify,
    pub kill_now: AtomicBool,
    pub pgid: AtomicI32,
    pub result: Mutex<Option<RunResult>>,
    pub done: Condvar,
    pub done_async: tokio::sync::Notify,
    pub finished: AtomicBool,
    /// The process that started the run (its driver's threads are there: a child forked
    /// meanwhile has a copy of this handle that can never finish).
    pub started_in: u32,
    /// Whatever must live exactly as long as the run goes on (a budget's permit), and whether
    /// the driver let it go already: it does so before it publishes the result, so that one who
    /// sees the result finds the permit back ([`RunHandle::hold_until_finished`]).
    pub held_until_finished: Mutex<Held>,
    /// The reader was handed the terminal item and everything derived from it (readable
    /// without the reader lock, so waiting for it needs only the result lock).
    pub read_to_end: AtomicBool,
}

impl Shared {
    /// Post an item and wake readers; `None` when the stream is closed.
    pub fn post(&self, item: StreamItem) -> Option<u64> {
        let seq = self.stream.lock().expect("stream").post(item);
        // A reader that found nothing registered itself in `sleepers` while holding the stream
        // lock, so after our post (which took that lock) we see it and wake it.
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            self.readable.notify_all();
        }
        self.readable_async.notify_one();
        seq
    }

    /// Whether the reader reads `channel` (see [`RunHandle::set_channels`]).
    pub fn wants(&self, channel: Channel) -> bool {
        ChannelSet::from_bits(self.channels.load(Ordering::Relaxed)).contains(channel)
    }

    /// Post several items (one stdout chunk's worth) under a single stream lock and wake
    /// readers once, instead of locking and waking per item.
    ///
    /// While the reader is behind ([`RunStream::under_pressure`]) the batch's raw lines are
    /// numbered first, then its content events (each still after the line it came from, and
    /// in their order): the raw lines merge into one `stdout` item and the text deltas into one
    /// delta, where one line's raw item between two deltas would keep every delta apart.
    pub fn post_all(&self, items: &mut Posts) {
        if items.is_empty() {
            return;
        }
        {
            // RunStream::post_batch, without an iterator of posts (each a few hundred bytes)
            // between the batch and the buffer.
            let mut stream = self.stream.lock().expect("stream");
            let mut now = None;
            if stream.under_pressure() {
                for (before, item) in &mut items.items {
                    for _ in 0..std::mem::take(before) {
                        stream.post_unread_raw();
                    }
                    if matches!(item, StreamItem::Stdout(_)) {
                        let raw = std::mem::replace(item, StreamItem::Stdout(String::new()));
                        stream.post_reading_clock(raw, &mut now);
                        *before = u32::MAX; // posted
                    }
                }
                for _ in 0..std::mem::take(&mut items.unread) {
                    stream.post_unread_raw();
                }
                for (before, item) in items.items.drain(..) {
                    if before != u32::MAX {
                        stream.post_reading_clock(item, &mut now);
                    }
                }
            } else {
                for (before, item) in items.items.drain(..) {
                    for _ in 0..before {
                        stream.post_unread_raw();
                    }
                    stream.post_reading_clock(item, &mut now);
                }
                for _ in 0..std::mem::take(&mut items.unread) {
                    stream.post_unread_raw();
                }
            }
        }
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            self.readable.notify_all();
        }
        self.readable_async.notify_one();
    }

    pub fn wake_readers(&self) {
        self.readable.notify_all();
        self.readable_async.notify_one();
    }
}

/// Posts waiting to be handed to the stream, compactly: each item with the number of raw lines
/// nobody reads that are numbered just before it (those are counted, not stored: a post is a
/// few hundred bytes), and such lines after the last item.
#[derive(Debug, Default)]
pub(crate) struct Posts {
    items: Vec<(u32, StreamItem)>,
    unread: u32,
}

impl Posts {
    pub fn with_capacity(n: usize) -> Self {
        Posts { items: Vec::with_capacity(n), unread: 0 }
    }

    /// A raw line nobody reads (`Post::UnreadRaw`).
    pub fn unread_raw(&mut self) {
        self.unread += 1;
    }

    pub fn item(&mut self, item: StreamItem) {
        let before = std::mem::take(&mut self.unread);
        self.items.push((before, item));
    }

    pub fn len(&self) -> usize {
        self.items.len() + self.unread as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

struct ReaderState {
    deriver: Option<HookDeriver>,
    pending: VecDeque<Delivery>,
    ended: bool,
    pace: ReadPace,
}

/// How fast the reader gets through what it takes, so that a batch is never more than it can
/// handle well within the stall limit. The stall clock is reset only by a take: a reader that
/// takes 256 deliveries and spends 120 ms on each looks stalled after 30 s though it keeps up.
#[derive(Debug)]
struct ReadPace {
    /// The run's stall limit (fixed for the run).
    stall_seconds: f64,
    /// When the last take returned, and how much it handed out (0: it found nothing, so the
    /// reader then waited — which is not handling, and is not measured).
    handed_at: Option<Instant>,
    handed: usize,
    /// Seconds the reader spends per delivery: the last measurement, or half the one before
    /// when that is more (slower batches count at once, faster ones step by step). `None`
    /// until the first batch was handled.
    per_delivery: Option<f64>,
}

impl ReadPace {
    /// The share of the stall limit one batch may take at the reader's pace.
    const BATCH_SHARE_OF_STALL: f64 = 0.25;
    /// The first batch of a run, before any pace is known: small, so that even a slow reader
    /// handles it well within any stall limit; the next one is sized by its pace.
    const FIRST_BATCH: usize = 16;

    fn new(stall_seconds: f64) -> Self {
        ReadPace { stall_seconds, handed_at: None, handed: 0, per_delivery: None }
    }

    /// The most deliveries to hand out now (at least one): as many as the reader, at its
    /// pace, gets through in a quarter of the stall limit. Measures the pace first when the
    /// reader is back from handling the previous take's deliveries.
    fn cap(&mut self, now: Instant) -> usize {
        if let Some(at) = self.handed_at.filter(|_| self.handed > 0) {
            let measured = now.saturating_duration_since(at).as_secs_f64() / self.handed as f64;
            self.per_delivery = Some(self.per_delivery.map_or(measured, |before| measured.max(before / 2.0)));
        }
        match self.per_delivery {
            None => Self::FIRST_BATCH,
            Some(p) if p <= 0.0 => usize::MAX,
            Some(p) => {
                let fits = self.stall_seconds * Self::BATCH_SHARE_OF_STALL / p;
                if fits >= usize::MAX as f64 { usize::MAX } else { (fits as usize).max(1) }
            }
        }
    }

    fn record(&mut self, now: Instant, handed: usize) {
        self.handed_at = Some(now);
        self.handed = handed;
    }
}

/// One operation's handle. Cheap to clone; all clones share one reader position.
#[derive(Clone)]
pub struct RunHandle {
    pub(crate) shared: Arc<Shared>,
    reader: Arc<Mutex<ReaderState>>,
}

impl std::fmt::Debug for RunHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunHandle").field("run_id", &self.shared.run_id).finish_non_exhaustive()
    }
}

impl RunHandle {
    pub(crate) fn new(shared: Arc<Shared>, deriver: Option<HookDeriver>) -> Self {
        let stall_seconds = shared.stream.lock().expect("stream").backpressure().stall_seconds;
        RunHandle {
            shared,
            reader: Arc::new(Mutex::new(ReaderState {
                deriver,
                pending: VecDeque::new(),
                ended: false,
                pace: ReadPace::new(stall_seconds),
            })),
        }
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.shared.run_id
    }

    /// The harness's process group id (0 before spawn or for a finished run).
    pub fn pgid(&self) -> i32 {
        self.shared.pgid.load(Ordering::SeqCst)
    }

    /// True once the result is known.
    pub fn is_finished(&self) -> bool {
        self.shared.finished.load(Ordering::SeqCst)
    }

    /// Whether the run is going on in this process: not finished, and this process's — in a
    /// child forked while it went on it is the parent's run (its driver did not come along),
    /// which keeps nothing busy there.
    pub fn is_going_on_here(&self) -> bool {
        !self.is_finished() && self.shared.started_in == std::process::id()
    }

    /// Keep `value` until the run finishes (dropped then by its driver; at once when it has).
    pub(crate) fn hold_until_finished(&self, value: Box<dyn std::any::Any + Send>) {
        let mut held = self.shared.held_until_finished.lock().unwrap_or_else(|p| p.into_inner());
        if !held.released {
            held.values.push(value);
        }
    }

    /// Live backpressure statistics.
    pub fn pressure(&self) -> Pressure {
        self.shared.stream.lock().expect("stream").pressure()
    }

    /// Cancel the run (first reason stands; later calls are no-ops). SIGTERM to the group, then
    /// SIGKILL after the grace period.
    pub fn cancel(&self, reason: &str) {
        self.cancel_with(CancelReason::Caller(reason.to_string()));
    }

    pub(crate) fn cancel_with(&self, reason: CancelReason) {
        // Through the stream: a stop racing completion never rewrites a recorded outcome.
        self.shared.stream.lock().expect("stream").cancel(reason);
        self.shared.cancel_async.notify_one();
    }

    /// Cancel and SIGKILL at once, without a grace period.
    pub(crate) fn kill_now(&self, reason: &str) {
        self.shared.kill_now.store(true, Ordering::SeqCst);
        self.cancel(reason);
    }

    /// The channels the reader reads from now on (the run's `channels` option at first). Items
    /// of the other channels are numbered and discarded, not buffered; raw lines nobody reads
    /// are not even copied. With hook events on, content and lifecycle are always read (hooks
    /// derive from them). The terminal item is always delivered. Already buffered items stay;
    /// the producer sees the change from its next chunk of output on.
    pub fn set_channels(&self, channels: ChannelSet) {
        let channels = super::driver::reader_channels(channels, self.shared.hooks);
        let mut stream = self.shared.stream.lock().expect("stream");
        stream.set_reader_channels(channels);
        self.shared.channels.store(channels.bits(), Ordering::Relaxed);
    }

    /// The channels the reader reads now.
    pub fn channels(&self) -> ChannelSet {
        self.shared.stream.lock().expect("stream").reader_channels()
    }

    /// The reader leaves early (an iterator dropped before the end): the run is cancelled
    /// through the same path, with reason "the reader left".
    pub fn reader_left(&self) {
        if !self.reader.lock().expect("reader").ended {
            self.cancel_with(CancelReason::ReaderLeft);
        }
    }

    /// The reader went away for good (its last handle dropped): the run is cancelled as by
    /// [`RunHandle::reader_left`], and what was buffered for the reader is freed now, since
    /// nobody can read it (it stayed until the session's next run, its budget permit already
    /// given back).
    pub(crate) fn reader_gone(&self) {
        if self.reader.lock().expect("reader").ended {
            return;
        }
        self.shared.stream.lock().expect("stream").detach_reader();
        // The driver may wait for the reader's room or for a cancel: either way it looks again.
        self.shared.cancel_async.notify_one();
        self.shared.room_async.notify_one();
    }

    pub(crate) fn post_lifecycle(&self, reason: LifecycleReason, sandbox: SandboxState, agent: AgentState) {
        self.shared.post(StreamItem::Lifecycle(LifecycleEvent::local(
            reason,
            sandbox,
            agent,
            crate::time::now_iso8601(),
        )));
    }

    /// Take what is ready without waiting (at most `max`). The envelopes are popped under ONE
    /// stream lock, so a reader that is behind takes a full batch for the price of one lock.
    pub fn try_next_batch(&self, max: usize) -> Vec<Delivery> {
        let mut out = Vec::new();
        self.take_ready(BatchLimits::events(max), &mut out);
        out
    }

    /// [`try_next_batch`](Self::try_next_batch) appending to `out`, bounded by `limits`.
    pub fn try_next_batch_into(&self, out: &mut Vec<Delivery>, limits: BatchLimits) {
        self.take_ready(limits, out);
    }

    /// Append to `out` what is ready, at most `limits.max_events` deliveries and (past the
    /// first) `limits.max_bytes` bytes of envelopes.
    fn take_ready(&self, limits: BatchLimits, out: &mut Vec<Delivery>) {
        if self.shared.read_to_end.load(Ordering::SeqCst) {
            return;
        }
        self.take_ready_inner(limits, out);
        let read_to_end = {
            let reader = self.reader.lock().expect("reader");
            reader.ended && reader.pending.is_empty()
        };
        if read_to_end {
            self.shared.read_to_end.store(true, Ordering::SeqCst);
            // Waiters for the end ([`wait_ended`](Self::wait_ended)) check under the result
            // lock: taking it before notifying means none of them misses this.
            drop(self.shared.result.lock().expect("result"));
            self.shared.done.notify_all();
            self.shared.done_async.notify_waiters();
        }
    }

    fn take_ready_inner(&self, limits: BatchLimits, out: &mut Vec<Delivery>) {
        let mut reader = self.reader.lock().expect("reader");
        let first = out.len();
        let cap = reader.pace.cap(Instant::now());
        self.take_ready_locked(&mut reader, limits.max_events.max(1).min(cap), limits.max_bytes, out);
        let handed = out.len() - first;
        reader.pace.record(Instant::now(), handed);
    }

    fn take_ready_locked(
        &self,
        reader: &mut ReaderState,
        max_events: usize,
        max_bytes: usize,
        out: &mut Vec<Delivery>,
    ) {
        let max = out.len() + max_events;
        while out.len() < max {
            match reader.pending.pop_front() {
                Some(d) => out.push(d),
                None => break,
            }
        }
        if out.len() >= max || reader.ended {
            return;
        }
        if reader.deriver.is_none() {
            // Without hooks a delivery is its envelope: popped straight into `out`.
            let mut stream = self.shared.stream.lock().expect("stream");
            out.reserve((max - out.len()).min(stream.pressure().buffered + 1));
            // The terminal is the last envelope there is: nothing follows it to over-take.
            let taken = stream.pop_bounded(max - out.len(), max_bytes, |env| {
                reader.ended |= env.is_terminal();
                out.push(Delivery::Item(env));
            });
            drop(stream);
            if taken > 0 {
                self.shared.room_async.notify_one();
            }
            return;
        }
        // Each envelope makes at least one delivery: pop no more than the batch still takes.
        let mut envs = Vec::new();
        let mut facts = None;
        {
            let mut stream = self.shared.stream.lock().expect("stream");
            envs.reserve((max - out.len()).min(stream.pressure().buffered + 1));
            let mut terminal = false;
            let taken = stream.pop_bounded(max - out.len(), max_bytes, |env| {
                terminal |= env.is_terminal();
                envs.push(env);
            });
            if terminal {
                facts = stream.terminal_facts();
            }
            if taken > 0 {
                self.shared.room_async.notify_one();
            }
        }
        for env in envs {
            let facts = if env.is_terminal() { facts.take() } else { None };
            Self::expand(reader, env, facts);
            while out.len() < max {
                match reader.pending.pop_front() {
                    Some(d) => out.push(d),
                    None => break,
                }
            }
        }
    }

    /// Queue an envelope and the hook events derived from it (`facts`: the run's terminal
    /// facts, for the terminal envelope).
    fn expand(reader: &mut ReaderState, env: Envelope, facts: Option<crate::hooks::TerminalFacts>) {
        let terminal = env.is_terminal();
        let mut hooks = Vec::new();
        if let Some(deriver) = reader.deriver.as_mut() {
            let ts = u64::try_from(crate::time::now_millis()).unwrap_or(0);
            let input = match &env.item {
                StreamItem::Content(ev) => HookInput::Content(ev),
                StreamItem::Lifecycle(l) => HookInput::Lifecycle(l, facts.as_ref()),
                _ => HookInput::Raw,
            };
            deriver.observe(env.sequence, input, ts, &mut hooks);
        }
        reader.pending.push_back(Delivery::Item(env));
        reader.pending.extend(hooks.into_iter().map(Delivery::Hook));
        if terminal {
            reader.ended = true;
        }
    }

    fn stream_over(&self) -> bool {
        let stream = self.shared.stream.lock().expect("stream");
        // Without a reader nothing is buffered: the stream is over once the run is.
        stream.is_drained() || (!stream.has_reader() && stream.is_closed())
    }

    /// Wait up to `timeout` (forever when `None`) for the next delivery.
    pub fn next_blocking(&self, timeout: Option<Duration>) -> Next {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            if let Some(d) = self.try_next_batch(1).pop() {
                return Next::Item(d);
            }
            match self.wait_ready(deadline) {
                Wait::Ready => {}
                Wait::End => return Next::End,
                Wait::Timeout => return Next::Timeout,
            }
        }
    }

    /// Block until something may be ready to take (`Ready`), the stream is over (`End`) or
    /// `deadline` passed (`Timeout`); wakes at least every 250 ms.
    fn wait_ready(&self, deadline: Option<Instant>) -> Wait {
        if self.reader.lock().expect("reader").ended || self.stream_over() {
            return Wait::End;
        }
        let guard = self.shared.stream.lock().expect("stream");
        if guard.pressure().buffered > 0 || (guard.is_closed() && !guard.is_drained()) {
            return Wait::Ready;
        }
        let wait = match deadline {
            Some(d) => {
                let now = Instant::now();
                if now >= d {
                    return Wait::Timeout;
                }
                (d - now).min(Duration::from_millis(250))
            }
            None => Duration::from_millis(250),
        };
        self.shared.sleepers.fetch_add(1, Ordering::SeqCst);
        let waited = self.shared.readable.wait_timeout(guard, wait);
        self.shared.sleepers.fetch_sub(1, Ordering::SeqCst);
        let _ = waited.expect("stream");
        Wait::Ready
    }

    /// Wait up to `timeout` for at least one delivery, then take up to `max` that are ready.
    /// An empty batch means the timeout passed; check [`RunHandle::is_ended`].
    pub fn next_batch_blocking(&self, max: usize, timeout: Option<Duration>) -> Vec<Delivery> {
        let mut out = Vec::new();
        self.next_batch_into(&mut out, BatchLimits::events(max), timeout);
        out
    }

    /// Wait up to `timeout` (forever when `None`) for at least one delivery, then append to
    /// `out` what is ready, within `limits`. No lingering: a batch is what is ready when the
    /// reader wakes (the producer posts one chunk of harness output at a time, so a fast run is
    /// read in batches anyway, and a slow one is read with no added latency). Appends nothing
    /// when the timeout passed or the stream is over.
    pub fn next_batch_into(&self, out: &mut Vec<Delivery>, limits: BatchLimits, timeout: Option<Duration>) {
        let start = out.len();
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            self.take_ready(limits, out);
            if out.len() > start {
                return;
            }
            match self.wait_ready(deadline) {
                Wait::Ready => {}
                Wait::End | Wait::Timeout => return,
            }
        }
    }

    /// Wait (asynchronously) for at least one delivery, then append to `out` what is ready
    /// within `limits`. Appends nothing once the stream is over.
    pub async fn next_batch_async(&self, out: &mut Vec<Delivery>, limits: BatchLimits) {
        let start = out.len();
        loop {
            let notified = self.shared.readable_async.notified();
            self.take_ready(limits, out);
            if out.len() > start {
                return;
            }
            if self.reader.lock().expect("reader").ended || self.stream_over() {
                return;
            }
            let _ = tokio::time::timeout(Duration::from_millis(250), notified).await;
        }
    }

    /// True once the terminal item (and its hooks) were handed out.
    pub fn is_ended(&self) -> bool {
        let reader = self.reader.lock().expect("reader");
        reader.ended && reader.pending.is_empty()
    }

    /// The next delivery, or `None` at the end of the stream.
    pub async fn next(&self) -> Option<Delivery> {
        loop {
            let notified = self.shared.readable_async.notified();
            if let Some(d) = self.try_next_batch(1).pop() {
                return Some(d);
            }
            if self.reader.lock().expect("reader").ended || self.stream_over() {
                return None;
            }
            let _ = tokio::time::timeout(Duration::from_millis(250), notified).await;
        }
    }

    /// Wait for the result (blocking the thread).
    pub fn wait_blocking(&self) -> RunResult {
        let mut guard = self.shared.result.lock().expect("result");
        loop {
            if let Some(r) = guard.as_ref() {
                return r.clone();
            }
            guard = self.shared.done.wait_timeout(guard, Duration::from_millis(250)).expect("result").0;
        }
    }

    /// Wait up to `timeout` for the result.
    pub fn wait_timeout(&self, timeout: Duration) -> Option<RunResult> {
        let deadline = Instant::now() + timeout;
        let mut guard = self.shared.result.lock().expect("result");
        loop {
            if let Some(r) = guard.as_ref() {
                return Some(r.clone());
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            guard = self.shared.done.wait_timeout(guard, deadline - now).expect("result").0;
        }
    }

    /// Wait for the result.
    pub async fn wait(&self) -> RunResult {
        loop {
            let notified = self.shared.done_async.notified();
            if let Some(r) = self.shared.result.lock().expect("result").as_ref() {
                return r.clone();
            }
            let _ = tokio::time::timeout(Duration::from_millis(250), notified).await;
        }
    }

    /// Wait until the run has finished AND its reader was handed the terminal item (for a run
    /// without a reader: until it finished), up to `deadline` (forever when `None`). Returns
    /// whether that happened.
    pub fn wait_ended(&self, deadline: Option<Instant>) -> bool {
        let attached = self.shared.stream.lock().expect("stream").has_reader();
        let mut guard = self.shared.result.lock().expect("result");
        loop {
            if guard.is_some() && (!attached || self.shared.read_to_end.load(Ordering::SeqCst)) {
                return true;
            }
            let wait = match deadline {
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => left.min(Duration::from_millis(250)),
                    _ => return false,
                },
                None => Duration::from_millis(250),
            };
            guard = self.shared.done.wait_timeout(guard, wait).expect("result").0;
        }
    }

    /// [`wait_ended`](Self::wait_ended) for async callers, without a deadline.
    pub async fn wait_ended_async(&self) {
        let attached = self.shared.stream.lock().expect("stream").has_reader();
        loop {
            let notified = self.shared.done_async.notified();
            let read_to_end = self.shared.read_to_end.load(Ordering::SeqCst);
            if self.shared.result.lock().expect("result").is_some() && (!attached || read_to_end) {
                return;
            }
            let _ = tokio::time::timeout(Duration::from_millis(250), notified).await;
        }
    }

    /// The result, if the run has finished.
    pub fn result(&self) -> Option<RunResult> {
        self.shared.result.lock().expect("result").clone()
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::ReadPace;

    #[test]
    fn a_batch_is_what_the_reader_handles_in_a_quarter_of_the_stall_limit() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut pace = ReadPace::new(30.0);
        // Nothing measured yet: a small first batch.
        assert_eq!(pace.cap(at(0)), ReadPace::FIRST_BATCH);
        pace.record(at(0), 16);
        // 16 deliveries handled in 1.92 s (120 ms each): 62 fit in 7.5 s.
        assert_eq!(pace.cap(at(1920)), 62);
        pace.record(at(1920), 62);
        // The reader is back, finds nothing and waits 10 s: the wait is not measured, and the
        // burst after it is still sized by the reader's pace (not 256 at once).
        assert_eq!(pace.cap(at(1920 + 62 * 120)), 62);
        pace.record(at(1920 + 62 * 120), 0);
        assert_eq!(pace.cap(at(20_000)), 62);
        pace.record(at(20_000), 62);
        // Faster now (1 ms each): the estimate halves per batch (twice the batch), then follows.
        assert!((124..=125).contains(&pace.cap(at(20_062))));
        // One delivery took longer than the whole limit: still one at a time.
        let mut slow = ReadPace::new(30.0);
        slow.record(at(0), 1);
        assert_eq!(slow.cap(at(100_000)), 1);
        // A fast reader (1 µs each) is not held back.
        let mut fast = ReadPace::new(30.0);
        fast.record(t0, 256);
        assert!(fast.cap(t0 + Duration::from_micros(256)) > 1_000_000);
    }
}
