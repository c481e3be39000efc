//! The backpressure policy of one run, and a byte allowance shared by many runs.
//!
//! See the [module docs of `stream`](super) for what the marks do. In short: the buffer holds
//! unread items; once it holds `high_water` items or `byte_budget` bytes, arriving text deltas
//! merge into a same-kind tail instead of queueing; a reader that leaves unread items waiting
//! longer than `stall_seconds` gets the run cancelled.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::error::StreamError;

/// Default `high_water`: 256 unread items.
pub const DEFAULT_HIGH_WATER: usize = 256;
/// Default `byte_budget`: 8 MiB of unread items.
pub const DEFAULT_BYTE_BUDGET: usize = 8 * 1024 * 1024;
/// Default `stall_seconds`: 30.
pub const DEFAULT_STALL_SECONDS: f64 = 30.0;

/// How much one run may buffer for its reader before text deltas start merging, and how long
/// a reader may leave items unread.
///
/// | field | default | means |
/// |---|---|---|
/// | `high_water` | 256 | unread items before deltas merge; 0 = merge from the first delta |
/// | `byte_budget` | 8 MiB | unread bytes (JSON length of each item's `event`) before deltas merge; > 0 |
/// | `stall_seconds` | 30.0 | how long unread items may wait before the run is cancelled; finite, > 0 |
///
/// The fields are public for convenience; [`RunStream::new`](super::RunStream::new) validates
/// them (see [`validate`](Self::validate)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backpressure {
    /// Unread items that may wait before arriving text deltas merge (0 = merge from the first).
    pub high_water: usize,
    /// Unread bytes that may wait before arriving text deltas merge (> 0).
    pub byte_budget: usize,
    /// Seconds unread items may wait before the run is cancelled as stalled (finite, > 0).
    pub stall_seconds: f64,
}

impl Default for Backpressure {
    fn default() -> Self {
        Backpressure {
            high_water: DEFAULT_HIGH_WATER,
            byte_budget: DEFAULT_BYTE_BUDGET,
            stall_seconds: DEFAULT_STALL_SECONDS,
        }
    }
}

impl Backpressure {
    /// A validated policy.
    pub fn new(high_water: usize, byte_budget: usize, stall_seconds: f64) -> Result<Self, StreamError> {
        let b = Backpressure { high_water, byte_budget, stall_seconds };
        b.validate()?;
        Ok(b)
    }

    /// Check the ranges: `byte_budget > 0`; `stall_seconds` finite and `> 0`. `high_water` may
    /// be anything, 0 included (merge from the first delta).
    pub fn validate(&self) -> Result<(), StreamError> {
        if self.byte_budget == 0 {
            return Err(StreamError::InvalidBackpressure {
                field: "byte_budget",
                value: "0".into(),
                rule: "must be greater than 0",
            });
        }
        if !(self.stall_seconds.is_finite() && self.stall_seconds > 0.0) {
            return Err(StreamError::InvalidBackpressure {
                field: "stall_seconds",
                value: self.stall_seconds.to_string(),
                rule: "must be a finite number greater than 0",
            });
        }
        Ok(())
    }

    /// This policy with another `high_water`.
    pub fn with_high_water(mut self, high_water: usize) -> Self {
        self.high_water = high_water;
        self
    }

    /// This policy with another `byte_budget` (validated when the stream is built).
    pub fn with_byte_budget(mut self, byte_budget: usize) -> Self {
        self.byte_budget = byte_budget;
        self
    }

    /// This policy with another `stall_seconds` (validated when the stream is built).
    pub fn with_stall_seconds(mut self, stall_seconds: f64) -> Self {
        self.stall_seconds = stall_seconds;
        self
    }

    /// Divide a process-wide allowance of `total_bytes` across `streams` concurrent runs:
    /// `byte_budget = floor(total_bytes / streams)`, the other fields default. A per-run bound
    /// multiplied by however many runs are in flight is not a bound on anything; this is.
    ///
    /// * `streams == 0` is [`StreamError::NoStreams`].
    /// * A quotient of 0 (`streams > total_bytes`) is raised to **1 byte**, the smallest valid
    ///   budget. Such a run is permanently over its byte mark: every text delta merges into a
    ///   same-kind tail, every other item is admitted and counted `oversize`. The run works;
    ///   only `budget × streams <= total_bytes` no longer holds, which is why it is documented
    ///   here rather than hidden. Size the total sensibly instead (64 MiB across 200 runs is
    ///   335 544 bytes each).
    pub fn shared(total_bytes: usize, streams: usize) -> Result<Self, StreamError> {
        if streams == 0 {
            return Err(StreamError::NoStreams);
        }
        Ok(Backpressure { byte_budget: (total_bytes / streams).max(1), ..Backpressure::default() })
    }
}

/// A byte allowance shared by at most `max_streams` concurrent runs.
///
/// [`Backpressure::shared`] only does the division; `SharedBudget` also holds the line on the
/// divisor: [`try_acquire`](Self::try_acquire) hands out at most `max_streams` permits at once,
/// each carrying the per-run policy, so `budget × runs in flight <= total_bytes` actually holds.
/// A permit is released when dropped. Thread-safe; clones share the count. The count is the
/// process's: a child forked while runs held permits starts from none (those runs are its
/// parent's, and their permits are given back in the parent only).
#[derive(Debug, Clone)]
pub struct SharedBudget {
    total_bytes: usize,
    max_streams: usize,
    per_run: Backpressure,
    active: Arc<Holders>,
}

/// The permits held, and by which process: its id in the high 32 bits, the count in the low.
#[derive(Debug, Default)]
struct Holders(AtomicU64);

impl Holders {
    /// The count of this process's permits in `word` (0 when another process wrote it).
    fn held_here(word: u64, pid: u32) -> u64 {
        if (word >> 32) as u32 == pid { word & u64::from(u32::MAX) } else { 0 }
    }

    fn count(&self) -> usize {
        Self::held_here(self.0.load(Ordering::Acquire), std::process::id()) as usize
    }

    /// One more permit of this process, if fewer than `max` are held; the process's id.
    fn take(&self, max: usize) -> Option<u32> {
        let pid = std::process::id();
        let max = u64::try_from(max).unwrap_or(u64::MAX).min(u64::from(u32::MAX));
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
                let n = Self::held_here(word, pid);
                (n < max).then_some((u64::from(pid) << 32) | (n + 1))
            })
            .ok()
            .map(|_| pid)
    }

    /// A permit of process `pid` given back (nothing when the count is another process's).
    fn give_back(&self, pid: u32) {
        let _ = self.0.fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
            let n = Self::held_here(word, pid);
            (n > 0).then_some((u64::from(pid) << 32) | (n - 1))
        });
    }
}

impl SharedBudget {
    /// An allowance of `total_bytes` for up to `max_streams` concurrent runs
    /// ([`StreamError::NoStreams`] when `max_streams == 0`).
    pub fn new(total_bytes: usize, max_streams: usize) -> Result<Self, StreamError> {
        let per_run = Backpressure::shared(total_bytes, max_streams)?;
        Ok(SharedBudget { total_bytes, max_streams, per_run, active: Arc::default() })
    }

    /// The whole allowance.
    pub fn total_bytes(&self) -> usize {
        self.total_bytes
    }

    /// The most runs that may hold a permit at once.
    pub fn max_streams(&self) -> usize {
        self.max_streams
    }

    /// The policy every permit carries (`byte_budget = total / max_streams`).
    pub fn per_run(&self) -> Backpressure {
        self.per_run
    }

    /// Permits held now (by this process).
    pub fn active(&self) -> usize {
        self.active.count()
    }

    /// A permit for one more run, or `None` when `max_streams` runs already hold one.
    pub fn try_acquire(&self) -> Option<BudgetPermit> {
        let pid = self.active.take(self.max_streams)?;
        Some(BudgetPermit { active: Arc::clone(&self.active), pid, policy: self.per_run })
    }
}

/// One run's share of a [`SharedBudget`]; released on drop.
#[derive(Debug)]
pub struct BudgetPermit {
    active: Arc<Holders>,
    /// The process that took it (a copy in a forked child gives nothing back).
    pid: u32,
    policy: Backpressure,
}

impl BudgetPermit {
    /// The per-run policy to build the run's stream with.
    pub fn backpressure(&self) -> Backpressure {
        self.policy
    }
}

impl Drop for BudgetPermit {
    fn drop(&mut self) {
        self.active.give_back(self.pid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_validation() {
        let d = Backpressure::default();
        assert_eq!((d.high_water, d.byte_budget, d.stall_seconds), (256, 8 * 1024 * 1024, 30.0));
        assert!(d.validate().is_ok());
        assert!(Backpressure::new(0, 1, 0.001).is_ok(), "high_water 0 is allowed");
        assert!(matches!(
            Backpressure::new(1, 0, 1.0),
            Err(StreamError::InvalidBackpressure { field: "byte_budget", .. })
        ));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                Backpressure::new(1, 1, bad),
                Err(StreamError::InvalidBackpressure { field: "stall_seconds", .. })
            ));
        }
    }

    #[test]
    fn shared_divides_and_rejects_zero_streams() {
        let b = Backpressure::shared(64 * 1024 * 1024, 200).unwrap();
        assert_eq!(b.byte_budget, 335_544);
        assert!(b.byte_budget * 200 <= 64 * 1024 * 1024);
        assert_eq!((b.high_water, b.stall_seconds), (256, 30.0));
        assert_eq!(Backpressure::shared(10, 3).unwrap().byte_budget, 3);
        assert_eq!(Backpressure::shared(5, 10).unwrap().byte_budget, 1, "budget 0 is raised to 1");
        assert_eq!(Backpressure::shared(10, 0), Err(StreamError::NoStreams));
        assert!(StreamError::NoStreams.to_string().contains("0 streams"));
    }

    #[test]
    fn shared_budget_permits_hold_the_divisor() {
        let s = SharedBudget::new(1000, 2).unwrap();
        let a = s.try_acquire().unwrap();
        let b = s.clone().try_acquire().unwrap();
        assert!(s.try_acquire().is_none());
        assert_eq!(s.active(), 2);
        assert_eq!(a.backpressure().byte_budget, 500);
        drop(b);
        assert_eq!(s.active(), 1);
        assert!(s.try_acquire().is_some());
        assert!(SharedBudget::new(1, 0).is_err());
    }

    #[cfg(all(unix, feature = "runner"))]
    #[test]
    fn a_forked_child_has_none_of_its_parents_permits() {
        let s = SharedBudget::new(1000, 1).unwrap();
        let held = s.try_acquire().unwrap();
        // SAFETY: the child only does atomic operations and getpid, then _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let none_held = s.active() == 0;
            let mine = s.try_acquire();
            let took = mine.is_some() && s.active() == 1;
            drop(held); // the parent's: gives nothing back here
            let kept = s.active() == 1;
            drop(mine);
            let code = if none_held && took && kept && s.active() == 0 { 0 } else { 1 };
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "the child saw its parent's permits");
        // The parent's count is its own still.
        assert_eq!(s.active(), 1);
        drop(held);
        assert_eq!(s.active(), 0);
    }
}
