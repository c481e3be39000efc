//! Where a run's envelopes are kept and replayed from: the [`EventLog`] trait and its in-process
//! implementation, [`MemoryLog`].
//!
//! A run's log is appended by exactly one producer (the broker's pump of that run), in sequence
//! order, and ends with the terminal frame ([`EventLog::seal`] after it). Subscribers read it
//! from any resume point: the frames whose `sequence` is greater than `after`, then live ones as
//! they are appended, and their stream ends after the terminal frame.
//!
//! **Bounded, never silently lossy.** Each run keeps at most `replay_events` frames and
//! `replay_bytes` (each frame's JSON plus its bookkeeping,
//! [`FRAME_BOOKKEEPING_BYTES`](crate::frame::FRAME_BOOKKEEPING_BYTES)), and all runs together at
//! most `replay_bytes_total` (over it, the oldest frames of the runs appended to least recently
//! go first, so finished runs give way to running ones); each run's newest frame is always kept.
//! A resume point older than what is kept gets a [`Gap`] (`evicted`) first and then the oldest
//! kept frame onwards; a subscriber that falls so far behind that its next frame was evicted gets
//! a [`Gap`] (`too_slow`) and its stream ends. Nobody ever waits for a subscriber: appending
//! never blocks, so a slow reader never slows the run or the other subscribers.
//!
//! **Atomic hand-over from replay to live.** Subscribers do not have queues of their own: each
//! holds a cursor (the last sequence number it has) into the shared ring and a watch on the
//! log's version. Replayed and live frames come from the same ring under the same lock, so a
//! frame appended while a subscriber attaches is delivered exactly once.
//!
//! The cluster's log, [`JetStreamLog`](crate::nats::JetStreamLog), implements the same trait
//! over NATS JetStream: one subject per run, messages carrying contiguous ranges of envelope
//! sequence numbers, retention (age, bytes) instead of the ring.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio::sync::watch;

use crate::auth::TenantId;
use crate::frame::{Delivered, Frame, Gap, GapReason};

/// Why a subscription could not be opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubscribeError {
    /// No log for this run.
    UnknownRun,
    /// `after` is beyond the last sequence number the run has produced (`last`: none yet).
    AfterBeyondEnd {
        /// The requested resume point.
        after: u64,
        /// The run's last sequence number so far.
        last: Option<u64>,
    },
    /// The run has ended and the subscriber already has its terminal envelope: nothing to send.
    Complete,
    /// The log cannot be read now (its backend is unreachable).
    Unavailable(String),
}

/// A subscriber's view of one run's log.
#[async_trait]
pub trait Subscription: Send {
    /// Wait until something is ready, then append up to `max` deliveries to `out` (at least
    /// one). Returns false, appending nothing, once the stream is over (after the terminal
    /// frame, or after a `too_slow` gap). Cancel-safe: dropping the future loses nothing.
    async fn next_batch(&mut self, out: &mut Vec<Delivered>, max: usize) -> bool;
}

/// Where runs' envelopes are stored and replayed from. A run's log is written by the one process
/// that runs it (`create`, `append`, `seal`) and read by any (`subscribe`).
#[async_trait]
pub trait EventLog: Send + Sync + 'static {
    /// Make an empty log for a new run of `tenant`.
    async fn create(&self, tenant: &TenantId, run_id: &str);
    /// Append frames, in sequence order. A terminal frame ends the log (nothing after it).
    async fn append(&self, run_id: &str, frames: Vec<Frame>);
    /// No more frames will come (the producer has finished, with or without a terminal frame):
    /// subscribers' streams end once they have read everything.
    async fn seal(&self, run_id: &str);
    /// Read the run's stream after sequence `after` (`None`: from the start).
    async fn subscribe(
        &self,
        tenant: &TenantId,
        run_id: &str,
        after: Option<u64>,
    ) -> Result<Box<dyn Subscription>, SubscribeError>;
    /// [`EventLog::subscribe`] to a run whose record says it ended at sequence `last`. A log
    /// whose retention may have removed all of a run (the cluster's) answers from that: the
    /// missing numbers as a gap, and the end.
    async fn subscribe_ended(
        &self,
        tenant: &TenantId,
        run_id: &str,
        after: Option<u64>,
        last: u64,
    ) -> Result<Box<dyn Subscription>, SubscribeError> {
        let _ = last;
        self.subscribe(tenant, run_id, after).await
    }
    /// [`EventLog::subscribe`] to a running run whose record says it delivered up to
    /// `recorded` so far (the record may lag). A log whose retention may have removed all of a
    /// run while it runs (the cluster's) resumes a point up to that live: the numbers removed as
    /// a gap, then the envelopes to come — not a resume point it cannot find.
    async fn subscribe_running(
        &self,
        tenant: &TenantId,
        run_id: &str,
        after: Option<u64>,
        recorded: Option<u64>,
    ) -> Result<Box<dyn Subscription>, SubscribeError> {
        let _ = recorded;
        self.subscribe(tenant, run_id, after).await
    }
    /// The last sequence number the run's log covers so far (`None`: nothing yet, or unknown).
    async fn last_covered(&self, tenant: &TenantId, run_id: &str) -> Option<u64>;
    /// Forget a run (subscribers already attached read on until they finish).
    async fn remove(&self, run_id: &str);
    /// The server is going away: end the subscriptions that would otherwise wait for runs that
    /// do not end in this process (their clients resume elsewhere). Subscriptions to runs that
    /// end here are left to deliver their terminal envelopes.
    fn close(&self) {}
    /// What the log holds in this process's memory (`/healthz`: `replay`); `None` for a log
    /// kept elsewhere (the cluster's: its instances report their `follows` instead).
    fn usage(&self) -> Option<ReplayUsage> {
        None
    }
}

/// The subscription to a run of which nothing is left to replay: a gap for the numbers after
/// the subscriber's, then the end.
pub(crate) struct NothingLeft(Option<Gap>);

impl NothingLeft {
    /// For a subscriber at `after` (`None`: the start) of a run that ended at `last`, `after`
    /// being before `last`.
    pub(crate) fn new(run_id: &str, after: Option<u64>, last: u64) -> Self {
        let missing = last - after.map_or(0, |a| a + 1) + 1;
        NothingLeft(Some(Gap::new(run_id, GapReason::Evicted, after, missing, None)))
    }
}

#[async_trait]
impl Subscription for NothingLeft {
    async fn next_batch(&mut self, out: &mut Vec<Delivered>, _max: usize) -> bool {
        match self.0.take() {
            Some(gap) => {
                out.push(Delivered::Gap(gap));
                true
            }
            None => false,
        }
    }
}

/// What an in-process log holds (`/healthz`: `replay`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ReplayUsage {
    /// Runs whose envelopes are kept (running, and finished ones not forgotten yet).
    pub runs: usize,
    /// Bytes kept by all of them, counted as `replay_bytes` counts them (JSON plus
    /// bookkeeping).
    pub bytes: usize,
    /// `replay_bytes_total`: over it, the runs idle longest give way.
    pub max: usize,
}

/// How much a [`MemoryLog`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Frames per run.
    pub events: usize,
    /// Bytes per run: each frame's JSON plus
    /// [`FRAME_BOOKKEEPING_BYTES`](crate::frame::FRAME_BOOKKEEPING_BYTES).
    pub bytes: usize,
    /// Bytes of all runs together, counted as [`Retention::bytes`].
    pub total_bytes: usize,
}

impl Retention {
    /// The retention `limits` set (`replay_events`, `replay_bytes`, `replay_bytes_total`).
    pub fn of(limits: &crate::config::Limits) -> Self {
        Retention { events: limits.replay_events, bytes: limits.replay_bytes, total_bytes: limits.replay_bytes_total }
    }
}

/// Over a total budget (`replay_bytes_total`), what giving way brings the bytes held down to:
/// seven eighths of it, so that the appends right after do not each sort every run. The
/// in-process log and the cluster's follows use the same rule.
pub(crate) fn trim_target(total_budget: usize) -> usize {
    total_budget - total_budget / 8
}

/// The in-process [`EventLog`]: one bounded ring of frames per run, all within one byte budget.
pub struct MemoryLog {
    retention: Retention,
    runs: Mutex<HashMap<Arc<str>, Arc<RunLog>>>,
    /// Bytes kept by every run together (JSON plus bookkeeping, see [`Frame::kept_bytes`]).
    total: AtomicUsize,
    /// Of `total`, what a trim may evict: every run's frames but its newest. Over the budget
    /// with none (every run down to its newest frame) a trim has nothing to do, and skips the
    /// walk over every run it would otherwise make on each append.
    evictable: AtomicUsize,
    /// Walks over the runs made by [`MemoryLog::trim_total`] (tests check when none is made).
    #[cfg(test)]
    walks: AtomicUsize,
    /// Orders appends: a run's `last_append` is this counter's value at its latest append.
    appends: AtomicU64,
    /// Held by the one append that trims the other runs; the others skip trimming meanwhile.
    trimming: Mutex<()>,
}

struct RunLog {
    run_id: Arc<str>,
    state: Mutex<LogState>,
    /// Bumped on every append and on seal; subscribers wait on it.
    version: watch::Sender<u64>,
    /// When this run was last appended to (see [`MemoryLog::appends`]).
    last_append: AtomicU64,
}

#[derive(Default)]
struct LogState {
    frames: VecDeque<Arc<Frame>>,
    bytes: usize,
    /// The last sequence number covered by an evicted frame.
    evicted_through: Option<u64>,
    /// The last sequence number covered by any frame.
    last_covered: Option<u64>,
    /// The terminal frame's sequence, once appended.
    terminal: Option<u64>,
    sealed: bool,
    /// Removed from the log ([`EventLog::remove`]): its bytes no longer count, and a trim that
    /// copied the run out before the removal leaves it alone.
    removed: bool,
}

impl MemoryLog {
    /// A log keeping `retention` of each run.
    pub fn new(retention: Retention) -> Self {
        assert!(
            retention.events > 0 && retention.bytes > 0 && retention.total_bytes > 0,
            "a replay buffer holds at least one frame"
        );
        MemoryLog {
            retention,
            runs: Mutex::new(HashMap::new()),
            total: AtomicUsize::new(0),
            evictable: AtomicUsize::new(0),
            #[cfg(test)]
            walks: AtomicUsize::new(0),
            appends: AtomicU64::new(0),
            trimming: Mutex::new(()),
        }
    }

    fn run(&self, run_id: &str) -> Option<Arc<RunLog>> {
        self.runs.lock().expect("log map").get(run_id).cloned()
    }

    /// Bytes kept by every run together: their frames' JSON plus
    /// [`FRAME_BOOKKEEPING_BYTES`](crate::frame::FRAME_BOOKKEEPING_BYTES) each.
    pub fn total_bytes(&self) -> usize {
        self.total.load(Ordering::Relaxed)
    }

    /// Over the total budget: evict the oldest frames of the runs appended to least recently
    /// until an eighth of the budget is free again (so that the next appends do not each sort
    /// every run), keeping each run's newest frame. One run's lock at a time: never two, so
    /// appends trimming each other cannot deadlock.
    fn trim_total(&self) {
        if self.evictable.load(Ordering::Relaxed) == 0 {
            return;
        }
        let Ok(_one_trimmer) = self.trimming.try_lock() else { return };
        #[cfg(test)]
        self.walks.fetch_add(1, Ordering::Relaxed);
        let runs: Vec<Arc<RunLog>> = self.runs.lock().expect("log map").values().cloned().collect();
        self.trim_runs(runs);
    }

    /// [`MemoryLog::trim_total`]'s walk over `runs`, a copy of the map taken without its lock
    /// held: a run in it may have been removed since (and is then left alone).
    fn trim_runs(&self, mut runs: Vec<Arc<RunLog>>) {
        let target = trim_target(self.retention.total_bytes);
        runs.sort_by_key(|r| r.last_append.load(Ordering::Relaxed));
        for log in runs {
            if self.total.load(Ordering::Relaxed) <= target || self.evictable.load(Ordering::Relaxed) == 0 {
                break;
            }
            let freed = self.give_way(&mut log.state.lock().expect("run log"), target);
            if freed > 0 {
                log.version.send_modify(|v| *v += 1);
            }
        }
    }
}

impl MemoryLog {
    /// Evict the oldest frames of the run `st` (its newest always stays) while all runs hold
    /// more than `target`, taking them off the total; the bytes freed. A removed run is left
    /// alone: its bytes no longer count.
    fn give_way(&self, st: &mut LogState, target: usize) -> usize {
        let mut freed = 0;
        while !st.removed && st.frames.len() > 1 && self.total.load(Ordering::Relaxed).saturating_sub(freed) > target {
            freed += st.evict_oldest();
        }
        self.total.fetch_sub(freed, Ordering::Relaxed);
        self.evictable.fetch_sub(freed, Ordering::Relaxed);
        freed
    }
}

impl LogState {
    /// What a trim may evict of this run: its frames' bytes but the newest's.
    fn evictable(&self) -> usize {
        self.bytes - self.frames.back().map_or(0, |f| f.kept_bytes())
    }

    /// Drop the oldest frame (there is one); its bytes.
    fn evict_oldest(&mut self) -> usize {
        let old = self.frames.pop_front().expect("non-empty");
        let freed = old.kept_bytes();
        self.bytes -= freed;
        self.evicted_through = Some(old.last_covered);
        freed
    }
}

#[async_trait]
impl EventLog for MemoryLog {
    async fn create(&self, _tenant: &TenantId, run_id: &str) {
        let id: Arc<str> = run_id.into();
        let log = Arc::new(RunLog {
            run_id: id.clone(),
            state: Mutex::default(),
            version: watch::Sender::new(0),
            last_append: AtomicU64::new(self.appends.fetch_add(1, Ordering::Relaxed)),
        });
        self.runs.lock().expect("log map").insert(id, log);
    }

    async fn append(&self, run_id: &str, frames: Vec<Frame>) {
        let Some(log) = self.run(run_id) else { return };
        log.last_append.store(self.appends.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
        {
            let mut st = log.state.lock().expect("run log");
            let evictable_before = st.evictable();
            let (mut added, mut evicted) = (0, 0);
            for frame in frames {
                if st.terminal.is_some() || st.sealed {
                    break; // nothing after the terminal
                }
                let kept = frame.kept_bytes();
                added += kept;
                st.bytes += kept;
                st.last_covered = Some(frame.last_covered);
                if frame.terminal {
                    st.terminal = Some(frame.sequence);
                }
                st.frames.push_back(Arc::new(frame));
                while st.frames.len() > 1
                    && (st.frames.len() > self.retention.events || st.bytes > self.retention.bytes)
                {
                    evicted += st.evict_oldest();
                }
            }
            // Counted under the run's lock, so that a trim (which takes it too) never subtracts
            // bytes the total does not hold yet.
            self.total.fetch_add(added, Ordering::Relaxed);
            self.total.fetch_sub(evicted, Ordering::Relaxed);
            self.evictable.fetch_add(st.evictable(), Ordering::Relaxed);
            self.evictable.fetch_sub(evictable_before, Ordering::Relaxed);
            // Over the total with only this run's older frames to give (every other run down to
            // its newest: the steady state once the budget is reached): they go here, under
            // the lock already held — what the walk over every run would come to.
            if self.total.load(Ordering::Relaxed) > self.retention.total_bytes
                && self.evictable.load(Ordering::Relaxed) == st.evictable()
            {
                self.give_way(&mut st, trim_target(self.retention.total_bytes));
            }
        }
        log.version.send_modify(|v| *v += 1);
        if self.total.load(Ordering::Relaxed) > self.retention.total_bytes {
            self.trim_total();
        }
    }

    async fn seal(&self, run_id: &str) {
        if let Some(log) = self.run(run_id) {
            log.state.lock().expect("run log").sealed = true;
            log.version.send_modify(|v| *v += 1);
        }
    }

    async fn subscribe(
        &self,
        _tenant: &TenantId,
        run_id: &str,
        after: Option<u64>,
    ) -> Result<Box<dyn Subscription>, SubscribeError> {
        let log = self.run(run_id).ok_or(SubscribeError::UnknownRun)?;
        if let Some(after) = after {
            let st = log.state.lock().expect("run log");
            // Beyond the end first: a number the run never produced is the client's mistake
            // even when the run has ended (as the cluster's log answers).
            if st.last_covered.is_none_or(|last| after > last) {
                return Err(SubscribeError::AfterBeyondEnd { after, last: st.last_covered });
            }
            if st.terminal.is_some_and(|t| after >= t) {
                return Err(SubscribeError::Complete);
            }
        }
        let rx = log.version.subscribe();
        Ok(Box::new(MemorySubscription { log, rx, cursor: after, attached: false, done: false }))
    }

    async fn last_covered(&self, _tenant: &TenantId, run_id: &str) -> Option<u64> {
        self.run(run_id)?.state.lock().expect("run log").last_covered
    }

    fn usage(&self) -> Option<ReplayUsage> {
        let runs = self.runs.lock().expect("log map").len();
        Some(ReplayUsage { runs, bytes: self.total_bytes(), max: self.retention.total_bytes })
    }

    async fn remove(&self, run_id: &str) {
        let removed = self.runs.lock().expect("log map").remove(run_id);
        if let Some(log) = removed {
            // Only finished runs are removed: sealed, so no append adds to them after this.
            let mut st = log.state.lock().expect("run log");
            // A subscriber still holding the log reads what is left; its bytes no longer count.
            self.total.fetch_sub(st.bytes, Ordering::Relaxed);
            self.evictable.fetch_sub(st.evictable(), Ordering::Relaxed);
            st.removed = true;
        }
    }
}

struct MemorySubscription {
    log: Arc<RunLog>,
    rx: watch::Receiver<u64>,
    /// The last sequence number this subscriber has (as an envelope or inside a coalesced one).
    cursor: Option<u64>,
    /// Whether the first read happened (a gap before it is a resume gap, after it a lag).
    attached: bool,
    done: bool,
}

impl MemorySubscription {
    /// Take what is ready; `None` when nothing is (and the stream is not over).
    fn take(&mut self, out: &mut Vec<Delivered>, max: usize) -> Option<bool> {
        let st = self.log.state.lock().expect("run log");
        let before = out.len();
        if let Some(evicted) = st.evicted_through
            && self.cursor.is_none_or(|c| c < evicted)
        {
            let missing = evicted - self.cursor.map_or(0, |c| c + 1) + 1;
            let (reason, resume_from) = if self.attached {
                self.done = true;
                (GapReason::TooSlow, None)
            } else {
                (GapReason::Evicted, st.frames.front().map(|f| f.sequence))
            };
            out.push(Delivered::Gap(Gap::new(&self.log.run_id, reason, self.cursor, missing, resume_from)));
            self.cursor = Some(evicted);
            if self.done {
                return Some(true);
            }
        }
        self.attached = true;
        let start = match self.cursor {
            None => 0,
            Some(c) => st.frames.partition_point(|f| f.sequence <= c),
        };
        for frame in st.frames.range(start..).take(max) {
            self.cursor = Some(frame.last_covered);
            out.push(Delivered::Frame(frame.clone()));
            if frame.terminal {
                self.done = true;
                break;
            }
        }
        if out.len() > before {
            return Some(true);
        }
        if st.sealed {
            self.done = true;
            return Some(false);
        }
        None
    }
}

#[async_trait]
impl Subscription for MemorySubscription {
    async fn next_batch(&mut self, out: &mut Vec<Delivered>, max: usize) -> bool {
        let max = max.max(1);
        loop {
            if self.done {
                return false;
            }
            // Mark the version seen BEFORE looking, so an append after the look wakes us.
            self.rx.borrow_and_update();
            if let Some(more) = self.take(out, max) {
                return more;
            }
            if self.rx.changed().await.is_err() {
                // The log itself is gone (cannot happen while we hold it); read what is left.
                if self.take(out, max).is_none() {
                    self.done = true;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_run_of_which_nothing_is_left_gives_one_gap_and_ends() {
        for (after, missing) in [(None, 11), (Some(3), 7), (Some(9), 1)] {
            let mut sub = NothingLeft::new("r", after, 10);
            let mut out = Vec::new();
            assert!(sub.next_batch(&mut out, 8).await);
            let [Delivered::Gap(gap)] = &out[..] else { panic!("{out:?}") };
            assert_eq!(
                (gap.reason, gap.after, gap.missing, gap.resume_from),
                (GapReason::Evicted, after, missing, None)
            );
            out.clear();
            assert!(!sub.next_batch(&mut out, 8).await && out.is_empty(), "then the end");
        }
    }
    use bytes::Bytes;

    use crate::frame::FRAME_BOOKKEEPING_BYTES;

    fn frame(seq: u64, coalesced: u64, terminal: bool) -> Frame {
        Frame {
            sequence: seq,
            last_covered: seq + coalesced,
            terminal,
            json: Bytes::from(format!("{{\"s\":{seq}}}")),
            received_ms: 0,
        }
    }

    fn t() -> TenantId {
        "tenant".into()
    }

    fn log(events: usize) -> MemoryLog {
        MemoryLog::new(Retention { events, bytes: 1 << 20, total_bytes: 1 << 30 })
    }

    async fn drain(sub: &mut Box<dyn Subscription>) -> Vec<Delivered> {
        let mut out = Vec::new();
        while sub.next_batch(&mut out, 3).await {}
        out
    }

    fn seqs(d: &[Delivered]) -> Vec<i64> {
        d.iter()
            .map(|x| match x {
                Delivered::Frame(f) => f.sequence as i64,
                Delivered::Gap(g) => -(g.missing as i64),
                Delivered::Notice(_) => i64::MIN,
            })
            .collect()
    }

    #[tokio::test]
    async fn replay_then_live_then_end() {
        let l = log(100);
        l.create(&t(), "r").await;
        l.append("r", vec![frame(0, 0, false), frame(1, 2, false)]).await;
        let mut from_start = l.subscribe(&t(), "r", None).await.unwrap();
        let mut after_one = l.subscribe(&t(), "r", Some(1)).await.unwrap();
        let live = tokio::spawn(async move { drain(&mut from_start).await });
        l.append("r", vec![frame(4, 0, false), frame(5, 0, true), frame(6, 0, false)]).await;
        l.seal("r").await;
        assert_eq!(seqs(&live.await.unwrap()), [0, 1, 4, 5], "nothing after the terminal");
        assert_eq!(seqs(&drain(&mut after_one).await), [4, 5], "the coalesced frame covers 1..=3");
        assert_eq!(l.subscribe(&t(), "r", Some(5)).await.err(), Some(SubscribeError::Complete));
        assert_eq!(
            l.subscribe(&t(), "r", Some(7)).await.err(),
            Some(SubscribeError::AfterBeyondEnd { after: 7, last: Some(5) }),
            "a number the run never produced"
        );
        assert_eq!(l.subscribe(&t(), "x", None).await.err(), Some(SubscribeError::UnknownRun));
    }

    #[tokio::test]
    async fn resume_points_beyond_the_end_are_refused() {
        let l = log(100);
        l.create(&t(), "r").await;
        assert_eq!(
            l.subscribe(&t(), "r", Some(0)).await.err(),
            Some(SubscribeError::AfterBeyondEnd { after: 0, last: None })
        );
        l.append("r", vec![frame(0, 1, false)]).await;
        assert!(l.subscribe(&t(), "r", Some(1)).await.is_ok());
        assert_eq!(
            l.subscribe(&t(), "r", Some(2)).await.err(),
            Some(SubscribeError::AfterBeyondEnd { after: 2, last: Some(1) })
        );
    }

    #[tokio::test]
    async fn an_evicted_resume_point_gets_a_gap_then_the_rest() {
        let l = log(3);
        l.create(&t(), "r").await;
        l.append("r", (0..10).map(|s| frame(s, 0, s == 9)).collect()).await;
        let mut sub = l.subscribe(&t(), "r", Some(2)).await.unwrap();
        let got = drain(&mut sub).await;
        let Delivered::Gap(g) = &got[0] else { panic!("{got:?}") };
        assert_eq!((g.reason, g.after, g.missing, g.resume_from), (GapReason::Evicted, Some(2), 4, Some(7)));
        assert_eq!(seqs(&got[1..]), [7, 8, 9]);
        let mut from_start = l.subscribe(&t(), "r", None).await.unwrap();
        let got = drain(&mut from_start).await;
        assert_eq!(seqs(&got), [-7, 7, 8, 9]);
        let mut kept = l.subscribe(&t(), "r", Some(6)).await.unwrap();
        assert_eq!(seqs(&drain(&mut kept).await), [7, 8, 9], "no gap when nothing is missing");
    }

    /// Resumed from the last number a merged envelope covers (its SSE id), a client that had it
    /// is told of no gap once it is evicted.
    #[tokio::test]
    async fn a_merged_envelope_evicted_after_it_was_read_leaves_no_gap() {
        let l = log(3);
        l.create(&t(), "r").await;
        l.append("r", vec![frame(0, 0, false), frame(1, 3, false)]).await;
        l.append("r", vec![frame(5, 0, false), frame(6, 0, false), frame(7, 0, true)]).await;
        let mut resumed = l.subscribe(&t(), "r", Some(4)).await.unwrap();
        assert_eq!(seqs(&drain(&mut resumed).await), [5, 6, 7]);
        // From the merged envelope's own number, its merged numbers can only be told missing.
        let mut from_its_sequence = l.subscribe(&t(), "r", Some(1)).await.unwrap();
        assert_eq!(seqs(&drain(&mut from_its_sequence).await), [-3, 5, 6, 7]);
    }

    #[tokio::test]
    async fn a_subscriber_that_falls_behind_is_told_and_dropped() {
        let l = log(4);
        l.create(&t(), "r").await;
        l.append("r", vec![frame(0, 0, false)]).await;
        let mut slow = l.subscribe(&t(), "r", None).await.unwrap();
        let mut out = Vec::new();
        assert!(slow.next_batch(&mut out, 1).await);
        // The run goes on without waiting for it.
        l.append("r", (1..20).map(|s| frame(s, 0, false)).collect()).await;
        out.clear();
        assert!(slow.next_batch(&mut out, 10).await);
        let Delivered::Gap(g) = &out[0] else { panic!("{out:?}") };
        assert_eq!((g.reason, g.after, g.missing, g.resume_from), (GapReason::TooSlow, Some(0), 15, None));
        out.clear();
        assert!(!slow.next_batch(&mut out, 10).await, "dropped");
        // A new subscription from the same point resumes with an explicit gap.
        let mut again = l.subscribe(&t(), "r", Some(0)).await.unwrap();
        out.clear();
        assert!(again.next_batch(&mut out, 10).await);
        assert_eq!(seqs(&out), [-15, 16, 17, 18, 19]);
    }

    #[tokio::test]
    async fn byte_budget_evicts_but_keeps_the_newest() {
        let l = MemoryLog::new(Retention { events: 100, bytes: 1, total_bytes: 1 << 30 });
        l.create(&t(), "r").await;
        l.append("r", vec![frame(0, 0, false), frame(1, 0, false)]).await;
        let mut sub = l.subscribe(&t(), "r", Some(0)).await.unwrap();
        let mut out = Vec::new();
        assert!(sub.next_batch(&mut out, 10).await);
        assert_eq!(seqs(&out), [1]);
    }

    /// What a subscriber from the start of `run` gets first.
    async fn kept(l: &MemoryLog, run: &str) -> Vec<i64> {
        let mut sub = l.subscribe(&t(), run, None).await.unwrap();
        let mut out = Vec::new();
        sub.next_batch(&mut out, 100).await;
        seqs(&out)
    }

    /// What a test frame of a sequence number under 10 (`{"s":N}`) costs the byte bounds.
    const SMALL: usize = 7 + FRAME_BOOKKEEPING_BYTES;

    #[test]
    fn the_bookkeeping_covers_at_least_the_ring_slot_and_the_shared_frame() {
        use std::mem::size_of;
        let arc_counts = 2 * size_of::<usize>();
        assert!(FRAME_BOOKKEEPING_BYTES >= size_of::<Arc<Frame>>() + arc_counts + size_of::<Frame>());
    }

    #[tokio::test]
    async fn the_byte_bounds_count_each_frames_bookkeeping() {
        // Ten frames' worth of bytes and no bound on the count: ten kept, however small the JSON.
        let l = MemoryLog::new(Retention { events: usize::MAX, bytes: 10 * SMALL, total_bytes: 1 << 30 });
        l.create(&t(), "r").await;
        l.append("r", (0..10).map(|s| frame(s, 0, false)).collect()).await;
        assert_eq!(l.total_bytes(), 10 * SMALL);
        assert_eq!(kept(&l, "r").await, (0..10).collect::<Vec<_>>());
        l.append("r", vec![frame(10, 0, false)]).await;
        assert_eq!(
            kept(&l, "r").await,
            [-2, 2, 3, 4, 5, 6, 7, 8, 9, 10],
            "two went to make room for one of 8 bytes of JSON"
        );
        assert_eq!(l.total_bytes(), 8 * SMALL + SMALL + 1);
    }

    #[tokio::test]
    async fn by_default_a_late_subscriber_gets_all_of_a_long_run_of_small_envelopes() {
        // 20,000 envelopes of 200 bytes (a flood of text deltas): well within 32 MiB with their
        // bookkeeping, so the count must not bind first (it did at 8192).
        let l = MemoryLog::new(Retention::of(&crate::config::Limits::default()));
        l.create(&t(), "r").await;
        let envelope = |seq: u64| Frame {
            sequence: seq,
            last_covered: seq,
            terminal: seq == 19_999,
            json: Bytes::from(format!("{{\"s\":{seq:<193}}}")),
            received_ms: 0,
        };
        l.append("r", (0..20_000).map(envelope).collect()).await;
        l.seal("r").await;
        let got = drain(&mut l.subscribe(&t(), "r", None).await.unwrap()).await;
        assert_eq!(seqs(&got), (0..20_000).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn the_total_budget_takes_from_the_run_appended_to_least_recently_first() {
        // A test frame costs SMALL = 135 bytes (136 from N = 10): room for eight; a trim frees
        // down to 1050 bytes (an eighth of the budget free).
        let l = MemoryLog::new(Retention { events: 100, bytes: 1 << 20, total_bytes: 8 * SMALL + 120 });
        for r in ["old", "new"] {
            l.create(&t(), r).await;
        }
        l.append("old", (0..6).map(|s| frame(s, 0, s == 5)).collect()).await;
        l.seal("old").await;
        l.append("new", (0..4).map(|s| frame(s, 0, false)).collect()).await;
        assert_eq!(l.total_bytes(), 7 * SMALL);
        assert_eq!(l.usage(), Some(ReplayUsage { runs: 2, bytes: 7 * SMALL, max: 8 * SMALL + 120 }));
        assert_eq!(kept(&l, "old").await, [-3, 3, 4, 5], "the finished run gave way, from its oldest");
        assert_eq!(kept(&l, "new").await, [0, 1, 2, 3], "the running one kept everything");
        // Over the budget again: the old run keeps at least its terminal, the new one gives way.
        l.append("new", (4..12).map(|s| frame(s, 0, false)).collect()).await;
        assert_eq!(l.total_bytes(), 5 * SMALL + 2 * (SMALL + 1));
        assert_eq!(kept(&l, "old").await, [-5, 5], "the newest frame (the terminal) always stays");
        assert_eq!(kept(&l, "new").await, [-6, 6, 7, 8, 9, 10, 11]);
        // Forgetting a run gives its bytes back.
        let before = l.total_bytes();
        l.remove("old").await;
        assert_eq!(l.total_bytes(), before - SMALL);
        l.seal("new").await;
        l.remove("new").await;
        assert_eq!(l.total_bytes(), 0);
        assert_eq!(l.usage(), Some(ReplayUsage { runs: 0, bytes: 0, max: 8 * SMALL + 120 }));
        assert_eq!(l.evictable.load(Ordering::Relaxed), 0);
    }

    #[tokio::test]
    async fn over_the_total_with_every_run_at_its_newest_frame_an_append_walks_nothing() {
        // Room for two frames; four runs of one frame each are over it with nothing to evict.
        let l = MemoryLog::new(Retention { events: 100, bytes: 1 << 20, total_bytes: 2 * SMALL });
        for (i, r) in ["a", "b", "c", "d"].into_iter().enumerate() {
            l.create(&t(), r).await;
            l.append(r, vec![frame(i as u64, 0, false)]).await;
        }
        assert_eq!((l.total_bytes(), l.evictable.load(Ordering::Relaxed)), (4 * SMALL, 0));
        assert_eq!(l.walks.load(Ordering::Relaxed), 0, "nothing could be evicted: no walk");
        // A second frame makes the first evictable, and only it: it goes at once, without a
        // walk over every run (the steady state once the budget is reached).
        l.append("a", vec![frame(4, 0, false)]).await;
        assert_eq!(l.walks.load(Ordering::Relaxed), 0);
        assert_eq!(kept(&l, "a").await, [-1, 4]);
        assert_eq!((l.total_bytes(), l.evictable.load(Ordering::Relaxed)), (4 * SMALL, 0));
    }

    #[tokio::test]
    #[expect(
        clippy::await_holding_lock,
        reason = "the append takes no lock a trim holds; the test holds it to stop one"
    )]
    async fn a_trim_leaves_alone_a_run_removed_after_it_copied_the_runs_out() {
        let l = MemoryLog::new(Retention { events: 100, bytes: 1 << 20, total_bytes: 5 * SMALL });
        for r in ["gone", "other", "kept"] {
            l.create(&t(), r).await;
        }
        l.append("gone", (0..2).map(|s| frame(s, 0, s == 1)).collect()).await;
        l.append("other", (0..2).map(|s| frame(s, 0, false)).collect()).await;
        // The copy a trim takes, then the removal that races it; the append over the budget
        // meanwhile finds the trim busy (and more than its own run to give: no trim in place).
        let copy: Vec<_> = l.runs.lock().unwrap().values().cloned().collect();
        l.seal("gone").await;
        l.remove("gone").await;
        {
            let _busy = l.trimming.lock().unwrap();
            l.append("kept", (0..4).map(|s| frame(s, 0, false)).collect()).await;
        }
        assert_eq!(l.total_bytes(), 6 * SMALL);
        let gone = copy.iter().find(|r| &*r.run_id == "gone").cloned().unwrap();
        l.trim_runs(copy);
        // The removed run, appended to least recently, was passed over (its bytes no longer
        // count: evicting from it would have subtracted them twice); then the others gave way,
        // least recently appended first, down to seven eighths of the budget.
        assert_eq!(l.total_bytes(), 4 * SMALL);
        assert_eq!(kept(&l, "other").await, [-1, 1]);
        assert_eq!(kept(&l, "kept").await, [-1, 1, 2, 3]);
        assert_eq!(gone.state.lock().unwrap().frames.len(), 2, "a subscriber holding it still reads all of it");
        let removed = l.runs.lock().unwrap().contains_key("gone");
        assert!(!removed);
    }

    #[tokio::test]
    async fn seal_without_terminal_ends_streams() {
        let l = log(10);
        l.create(&t(), "r").await;
        let mut sub = l.subscribe(&t(), "r", None).await.unwrap();
        let t = tokio::spawn(async move { drain(&mut sub).await });
        l.append("r", vec![frame(0, 0, false)]).await;
        l.seal("r").await;
        assert_eq!(seqs(&t.await.unwrap()), [0]);
    }
}
