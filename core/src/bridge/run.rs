//! [`Run`]: one started run as every binding sees it — pulled in bounded batches, its result
//! final only once its terminal event was delivered, cancelled when it is dropped unread, and
//! counting its handlers' failures.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use super::options::ReadMode;
use crate::error::{Error, ErrorKind};
use crate::runner::{BatchLimits, Delivery, RunHandle, RunResult};
use crate::stream::{BudgetPermit, ChannelSet, Pressure, StreamItem};

/// The bit of hook deliveries in a [`Run`]'s delivery mask (the four channels use
/// [`ChannelSet::bits`]).
pub const HOOKS_BIT: u8 = 0b1_0000;

/// What a pull found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pulled {
    /// Deliveries were appended to the batch.
    Batch,
    /// Nothing arrived within the timeout; the run goes on.
    Timeout,
    /// The stream is over: the terminal event (and its hook events) were delivered.
    End,
}

/// A handler that failed on a delivery: which one (the binding's own id for it), on what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandlerError {
    /// The binding's id of the handler (a subscription id, or any stable number).
    pub handler: u64,
    /// `content`, `lifecycle`, `stdout`, `stderr` or `on_event`.
    pub channel: String,
    /// The sequence of the delivery it failed on.
    pub sequence: u64,
    /// The error's message (the binding formats its stack or traceback into it if it wants).
    pub message: String,
}

#[derive(Default)]
struct HandlerErrors {
    count: u64,
    reported: HashSet<u64>,
    first: Vec<HandlerError>,
}

pub(crate) struct RunInner {
    handle: RunHandle,
    read: ReadMode,
    attached: bool,
    /// The deliveries handed out: channel bits plus [`HOOKS_BIT`]. Items of other channels
    /// already buffered when the mask changed are skipped, never handed to nobody.
    mask: AtomicU8,
    handler_errors: Mutex<HandlerErrors>,
    skipped: AtomicU64,
    /// The caller stopped reading ([`Run::leave`]): waiting for the result drains the rest.
    left: AtomicBool,
    /// The permit of a shared budget, held until the run's terminal was delivered:
    /// [`Run::settle`] gives it back then (an await-only run's is held by its handle until it
    /// finishes).
    permit: Mutex<Option<BudgetPermit>>,
}

impl RunInner {
    /// The budget's permit, if still here, kept by the run itself until its process is done
    /// (its buffer lives as long).
    fn hand_permit_to_the_run(&self) {
        let permit = self.permit.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(p) = permit {
            self.handle.hold_until_finished(Box::new(p));
        }
    }
}

impl Drop for RunInner {
    fn drop(&mut self) {
        // Cancel-on-drop: a run whose reader goes away before the end is cancelled through the
        // one cancellation path (reason "reader left"), and what is buffered for it freed
        // (finished or not). An await-only run keeps going: nobody was reading it, its result
        // is what the caller may still want (a background run).
        if self.attached && !self.handle.is_ended() {
            self.handle.reader_gone();
        }
        self.hand_permit_to_the_run();
    }
}

/// One started run (or command). Cheap to clone; all clones share one reader position. When
/// the last clone of a run that has a reader is dropped before its terminal event was read, the
/// run is cancelled (reason `reader_left`).
#[derive(Clone)]
pub struct Run {
    pub(crate) inner: Arc<RunInner>,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run").field("id", &self.id()).field("read", &self.inner.read).finish_non_exhaustive()
    }
}

impl Run {
    pub(crate) fn new(
        handle: RunHandle,
        read: ReadMode,
        attached: bool,
        mask: u8,
        permit: Option<BudgetPermit>,
    ) -> Run {
        let permit = match permit {
            // Nobody reads an await-only run: its permit goes when its process is done.
            Some(p) if !attached => {
                handle.hold_until_finished(Box::new(p));
                None
            }
            p => p,
        };
        Run {
            inner: Arc::new(RunInner {
                handle,
                read,
                attached,
                mask: AtomicU8::new(mask),
                handler_errors: Mutex::new(HandlerErrors::default()),
                skipped: AtomicU64::new(0),
                left: AtomicBool::new(false),
                permit: Mutex::new(permit),
            }),
        }
    }

    pub(crate) fn downgrade(&self) -> Weak<RunInner> {
        Arc::downgrade(&self.inner)
    }

    pub(crate) fn upgrade(weak: &Weak<RunInner>) -> Option<Run> {
        weak.upgrade().map(|inner| Run { inner })
    }

    /// The run's id.
    pub fn id(&self) -> &str {
        self.inner.handle.run_id()
    }

    /// How the run is read.
    pub fn read_mode(&self) -> ReadMode {
        self.inner.read
    }

    /// Whether anything reads the run (false: await-only, nothing is buffered).
    pub fn has_reader(&self) -> bool {
        self.inner.attached
    }

    /// The core's handle (for Rust callers that want the runner's own API).
    pub fn handle(&self) -> &RunHandle {
        &self.inner.handle
    }

    /// The deliveries handed out: [`ChannelSet`] bits plus [`HOOKS_BIT`].
    pub fn mask(&self) -> u8 {
        self.inner.mask.load(Ordering::Acquire)
    }

    /// Subscriptions changed during the run: the run reads `channels` too from now on. A
    /// channel is never dropped while the run goes on, so that swapping a channel's only handler
    /// (`off`, then `on`) loses nothing in between; a channel without handlers costs only its
    /// deliveries. Iterated runs always read everything.
    pub(crate) fn set_channels(&self, channels: ChannelSet) {
        if self.inner.read != ReadMode::Handlers || !self.inner.attached {
            return;
        }
        let before = self.mask();
        let read = ChannelSet::from_bits(channels.bits() | before);
        if read.bits() == before & !HOOKS_BIT {
            return;
        }
        self.inner.mask.store(read.bits() | (before & HOOKS_BIT), Ordering::Release);
        self.inner.handle.set_channels(read);
    }

    /// Items skipped because their channel was no longer read when they were pulled.
    pub fn skipped(&self) -> u64 {
        self.inner.skipped.load(Ordering::Relaxed)
    }

    fn keep(&self, start: usize, out: &mut Vec<Delivery>) {
        let mask = self.mask();
        if mask == ChannelSet::ALL.bits() | HOOKS_BIT {
            return;
        }
        let before = out.len();
        let mut i = 0;
        out.retain(|d| {
            let keep = i < start
                || match d {
                    Delivery::Hook(_) => mask & HOOKS_BIT != 0,
                    // The terminal is always delivered: it ends the stream.
                    Delivery::Item(env) => env.item.is_terminal() || mask & channel_bit(&env.item) != 0,
                };
            i += 1;
            keep
        });
        self.inner.skipped.fetch_add((before - out.len()) as u64, Ordering::Relaxed);
    }

    /// Wait up to `timeout` (forever when `None`) for at least one delivery, then append to
    /// `out` what is ready within `limits` — one wake-up per batch, no fixed wait to fill it.
    pub fn pull(&self, out: &mut Vec<Delivery>, limits: BatchLimits, timeout: Option<Duration>) -> Pulled {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let start = out.len();
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            self.inner.handle.next_batch_into(out, limits, left);
            if out.len() > start {
                self.keep(start, out);
                if out.len() > start {
                    self.settle();
                    return Pulled::Batch;
                }
                continue; // everything was skipped: wait for more
            }
            if self.inner.handle.is_ended() || !self.inner.attached {
                self.settle();
                return Pulled::End;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Pulled::Timeout;
            }
        }
    }

    /// Append what is ready now, without waiting.
    pub fn try_pull(&self, out: &mut Vec<Delivery>, limits: BatchLimits) -> Pulled {
        let start = out.len();
        self.inner.handle.try_next_batch_into(out, limits);
        self.keep(start, out);
        if out.len() > start {
            self.settle();
            Pulled::Batch
        } else if self.inner.handle.is_ended() || !self.inner.attached {
            self.settle();
            Pulled::End
        } else {
            Pulled::Timeout
        }
    }

    /// [`pull`](Self::pull) for async callers: waits on the runtime, not on a thread.
    pub async fn pull_async(&self, out: &mut Vec<Delivery>, limits: BatchLimits) -> Pulled {
        loop {
            let start = out.len();
            self.inner.handle.next_batch_async(out, limits).await;
            if out.len() > start {
                self.keep(start, out);
                if out.len() > start {
                    self.settle();
                    return Pulled::Batch;
                }
                continue;
            }
            self.settle();
            return Pulled::End;
        }
    }

    /// Read and discard everything not yet read, to the end (awaiting an iterated run without
    /// iterating it: the stream drains itself). Handlers are not called.
    pub fn drain(&self) {
        let mut sink = Vec::new();
        loop {
            sink.clear();
            if self.pull(&mut sink, BatchLimits::DEFAULT, Some(Duration::from_millis(250))) == Pulled::End {
                return;
            }
        }
    }

    /// True once the terminal event was delivered to the reader (or, for an await-only run,
    /// once the run finished).
    pub fn is_ended(&self) -> bool {
        if self.inner.attached { self.inner.handle.is_ended() } else { self.inner.handle.result().is_some() }
    }

    /// The run's result: final only once its terminal event was delivered (for an await-only
    /// run, once it finished). Before that, a `still_running` error — never a partial record.
    pub fn result(&self) -> Result<RunResult, Error> {
        // The runner stores the result before a reader can take the terminal item.
        if self.is_ended() {
            if let Some(result) = self.inner.handle.result() {
                self.settle();
                return Ok(self.with_handler_errors(result));
            }
        }
        Err(Error::new(
            ErrorKind::StillRunning,
            format!("run {} is still running: its terminal event has not been delivered yet", self.id()),
        ))
    }

    /// Gives the budget's permit back once the run's terminal was delivered (a no-op before,
    /// and after the first).
    fn settle(&self) {
        if self.inner.attached && self.inner.handle.is_ended() {
            if let Ok(mut permit) = self.inner.permit.lock() {
                permit.take();
            }
        }
    }

    /// Wait up to `timeout` (forever when `None`) for the result. A run with a reader (its
    /// handlers, or the caller iterating it) ends for the wait when that reader got its terminal
    /// event: the wait never reads it, so a reader on another thread gets everything. Only a run
    /// whose reader said it stopped ([`Run::leave`], which cancels it) is drained here, its
    /// remaining events discarded — so a caller that stops iterating leaves first (or starts the
    /// run await-only when it wants only the result). A wait of zero only looks.
    /// `still_running` when the timeout passed first.
    pub fn wait(&self, timeout: Option<Duration>) -> Result<RunResult, Error> {
        let deadline = timeout.map(|t| Instant::now() + t);
        if timeout != Some(Duration::ZERO) && self.inner.attached {
            let mut sink = Vec::new();
            while !self.is_ended() {
                // In slices: a reader that leaves meanwhile hands the rest to this wait.
                let slice = Instant::now() + LOOK_AGAIN;
                let slice = deadline.map_or(slice, |d| d.min(slice));
                if self.inner.left.load(Ordering::SeqCst) {
                    sink.clear();
                    self.pull(&mut sink, BatchLimits::DEFAULT, Some(slice.saturating_duration_since(Instant::now())));
                } else {
                    self.inner.handle.wait_ended(Some(slice));
                }
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    break;
                }
            }
        }
        self.inner.handle.wait_ended(deadline);
        self.result()
    }

    /// [`wait`](Self::wait) for async callers (no timeout; drop the future to stop waiting).
    pub async fn wait_async(&self) -> RunResult {
        let mut sink = Vec::new();
        while self.inner.attached && !self.is_ended() {
            if self.inner.left.load(Ordering::SeqCst) {
                sink.clear();
                self.pull_async(&mut sink, BatchLimits::DEFAULT).await;
            } else {
                // Looking again now and then: a reader that leaves hands the rest to this wait.
                let _ = tokio::time::timeout(LOOK_AGAIN, self.inner.handle.wait_ended_async()).await;
            }
        }
        loop {
            self.inner.handle.wait_ended_async().await;
            if let Ok(r) = self.result() {
                return r;
            }
        }
    }

    /// The caller stops reading before the end (an iterator abandoned, a reader that failed):
    /// the run is cancelled through the one path (kind `reader_left`) unless it already ended,
    /// and waiting for its result ([`Run::wait`]) then discards what is still to come instead
    /// of waiting for a reader that will not come back. The deliveries still to come can be
    /// pulled meanwhile.
    pub fn leave(&self) {
        self.inner.left.store(true, Ordering::SeqCst);
        self.inner.handle.reader_left();
        // Nobody may read to the terminal now: the permit goes when the process is done.
        self.inner.hand_permit_to_the_run();
    }

    /// Cancel the run (first reason stands; later calls are no-ops): SIGTERM to the harness's
    /// process group, SIGKILL after the grace period; it ends `run_interrupted`.
    pub fn cancel(&self, reason: &str) {
        self.inner.handle.cancel(reason);
    }

    /// Live backpressure statistics.
    pub fn pressure(&self) -> Pressure {
        self.inner.handle.pressure()
    }

    /// Record that a handler failed on a delivery. Every failure is counted (the result's
    /// `handler_errors`); returns true for the FIRST failure of that handler — the one a
    /// binding reports with its stack or traceback (later ones are only counted).
    pub fn handler_failed(&self, error: HandlerError) -> bool {
        let mut errors = self.inner.handler_errors.lock().unwrap_or_else(|p| p.into_inner());
        errors.count += 1;
        let first = errors.reported.insert(error.handler);
        if first {
            errors.first.push(error);
        }
        first
    }

    /// Handler failures so far.
    pub fn handler_error_count(&self) -> u64 {
        self.inner.handler_errors.lock().unwrap_or_else(|p| p.into_inner()).count
    }

    /// The first failure of each handler that failed, in order.
    pub fn handler_errors(&self) -> Vec<HandlerError> {
        self.inner.handler_errors.lock().unwrap_or_else(|p| p.into_inner()).first.clone()
    }

    fn with_handler_errors(&self, mut result: RunResult) -> RunResult {
        result.handler_errors = self.handler_error_count();
        result
    }
}

/// How often a wait looks again whether the run's reader left.
const LOOK_AGAIN: Duration = Duration::from_millis(20);

fn channel_bit(item: &StreamItem) -> u8 {
    ChannelSet::NONE.with(item.channel()).bits()
}
