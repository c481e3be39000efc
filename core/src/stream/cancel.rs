//! One cancellation path for every cause (decisions.md §4).
//!
//! A caller's stop, a reader that left, a reader that stalled and a timeout all end up as one
//! [`CancellationToken::cancel`] call carrying a [`CancelReason`]. The token is a one-way
//! switch: the first reason stands, later cancels are no-ops that return `false` and never
//! rewrite it — so a client sending stop twice gets one cancelled run and one explanation.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};

/// Why a run was cancelled. Serialized as `{"kind": "caller", "detail": "…"}`,
/// `{"kind": "reader_left"}`, `{"kind": "stalled"}` or `{"kind": "timeout"}`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum CancelReason {
    /// The caller asked, with its own explanation (e.g. "the client pressed stop").
    Caller(String),
    /// The reader left before the run ended (an iterator dropped, a peer vanished).
    ReaderLeft,
    /// The reader held unread events for longer than `stall_seconds`.
    Stalled,
    /// The run exceeded its time limit.
    Timeout,
}

impl CancelReason {
    /// A caller reason when the caller gave none: `Caller("no reason given")`.
    pub fn by_caller() -> Self {
        CancelReason::Caller("no reason given".to_string())
    }

    /// A caller reason with the given explanation.
    pub fn caller(detail: impl Into<String>) -> Self {
        CancelReason::Caller(detail.into())
    }

    /// The machine-readable kind: `caller`, `reader_left`, `stalled` or `timeout`.
    pub fn code(&self) -> &'static str {
        match self {
            CancelReason::Caller(_) => "caller",
            CancelReason::ReaderLeft => "reader_left",
            CancelReason::Stalled => "stalled",
            CancelReason::Timeout => "timeout",
        }
    }
}

impl fmt::Display for CancelReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CancelReason::Caller(detail) => write!(f, "cancelled by the caller: {detail}"),
            CancelReason::ReaderLeft => f.write_str("cancelled: the consumer stopped reading the stream (reader left)"),
            CancelReason::Stalled => {
                f.write_str("cancelled: the reader stopped reading; unread events waited longer than the stall limit (limits.stall_ms)")
            }
            CancelReason::Timeout => f.write_str("cancelled: the run exceeded its time limit"),
        }
    }
}

/// A function to call once when the token is cancelled (e.g. to wake a run's driver), and,
/// for one registered for something that may go first, whether that is still there.
struct Waker {
    wake: Box<dyn Fn() + Send + Sync>,
    alive: Option<Box<dyn Fn() -> bool + Send + Sync>>,
}

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    reason: Mutex<Option<CancelReason>>,
    wakers: Mutex<Vec<Waker>>,
}

impl fmt::Debug for Inner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancellationToken").field("cancelled", &self.cancelled.load(Ordering::Relaxed)).finish()
    }
}

/// A one-way, thread-safe cancellation switch. Clones share the switch.
///
/// ```
/// use agentstream_core::stream::{CancellationToken, CancelReason};
/// let token = CancellationToken::new();
/// assert!(token.cancel(CancelReason::caller("the client pressed stop")));
/// assert!(!token.cancel(CancelReason::Timeout)); // the first reason stands
/// assert_eq!(token.reason(), Some(CancelReason::caller("the client pressed stop")));
/// ```
#[derive(Debug, Clone, Default)]
pub struct CancellationToken {
    inner: Arc<Inner>,
}

impl CancellationToken {
    /// A token not yet cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Option<CancelReason>> {
        // A panic while holding this lock cannot leave the Option half-written.
        self.inner.reason.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Cancel with `reason`. True only for the call that flipped the switch; every later call
    /// is a no-op returning false, and the first reason stands.
    pub fn cancel(&self, reason: CancelReason) -> bool {
        let mut slot = self.lock();
        if slot.is_some() {
            return false;
        }
        *slot = Some(reason);
        self.inner.cancelled.store(true, Ordering::Release);
        drop(slot);
        let wakers = std::mem::take(&mut *self.inner.wakers.lock().unwrap_or_else(|e| e.into_inner()));
        for w in wakers {
            (w.wake)();
        }
        true
    }

    /// Call `wake` once when the token is cancelled (at once, on this thread, if it already
    /// is). Wakers run on the cancelling thread, after the reason is recorded: keep them short
    /// and non-blocking (a notification).
    pub fn on_cancel(&self, wake: impl Fn() + Send + Sync + 'static) {
        self.register(Waker { wake: Box::new(wake), alive: None });
    }

    /// Call `wake` with `target` once when the token is cancelled, if `target` is still there
    /// then (at once, on this thread, if the token already is cancelled). The registration
    /// goes with `target`: a token that outlives many runs (one shutdown token passed to every
    /// run of a process) keeps nothing of the runs that ended; [`on_cancel`](Self::on_cancel)
    /// keeps its waker until the token is cancelled.
    pub fn on_cancel_for<T: Send + Sync + 'static>(&self, target: &Arc<T>, wake: impl Fn(&T) + Send + Sync + 'static) {
        let weak = Arc::downgrade(target);
        let alive = weak.clone();
        self.register(Waker {
            wake: Box::new(move || {
                if let Some(t) = weak.upgrade() {
                    wake(&t);
                }
            }),
            alive: Some(Box::new(move || alive.strong_count() > 0)),
        });
    }

    fn register(&self, waker: Waker) {
        let mut wakers = self.inner.wakers.lock().unwrap_or_else(|e| e.into_inner());
        if self.is_cancelled() {
            drop(wakers);
            (waker.wake)();
            return;
        }
        // The registrations whose target went: each new one sweeps them away (so they are
        // never more than those alive, plus one).
        wakers.retain(|w| w.alive.as_ref().is_none_or(|alive| alive()));
        wakers.push(waker);
    }

    /// How many wakers are registered (tests).
    #[cfg(test)]
    fn waker_count(&self) -> usize {
        self.inner.wakers.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether the switch was flipped (lock-free).
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::Acquire)
    }

    /// The reason that flipped the switch, if any.
    pub fn reason(&self) -> Option<CancelReason> {
        self.lock().clone()
    }

    /// True when both handles share one switch.
    pub fn same_as(&self, other: &CancellationToken) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_that_outlives_many_runs_keeps_nothing_of_the_ended_ones() {
        let token = CancellationToken::new();
        let woken = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        for _ in 0..1000 {
            let run = Arc::new(woken.clone());
            token.on_cancel_for(&run, |w| {
                w.fetch_add(1, Ordering::SeqCst);
            });
        }
        // Every run ended (its target dropped): at most the last registration is left.
        assert!(token.waker_count() <= 1, "{}", token.waker_count());
        let live = Arc::new(woken.clone());
        token.on_cancel_for(&live, |w| {
            w.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(token.waker_count(), 1);
        token.cancel(CancelReason::caller("stop"));
        assert_eq!(woken.load(Ordering::SeqCst), 1, "only the live run is woken");
        // Registered after the cancel: woken at once.
        token.on_cancel_for(&live, |w| {
            w.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(woken.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn first_reason_stands_across_clones_and_threads() {
        let t = CancellationToken::new();
        assert!(!t.is_cancelled() && t.reason().is_none());
        let winners: usize = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8)
                .map(|i| {
                    let t = t.clone();
                    s.spawn(move || t.cancel(CancelReason::caller(format!("stop {i}"))) as usize)
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(winners, 1);
        assert!(t.is_cancelled());
        let first = t.reason().unwrap();
        assert!(!t.cancel(CancelReason::Stalled));
        assert_eq!(t.reason().unwrap(), first);
    }

    #[test]
    fn wakers_run_once_on_cancel_or_at_once_when_already_cancelled() {
        use std::sync::atomic::AtomicUsize;
        let t = CancellationToken::new();
        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        t.clone().on_cancel(move || {
            c.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        assert!(t.cancel(CancelReason::Timeout));
        assert!(!t.cancel(CancelReason::Stalled));
        assert_eq!(calls.load(Ordering::SeqCst), 1, "once, by the cancel that flipped the switch");
        let c = calls.clone();
        t.on_cancel(move || {
            c.fetch_add(10, Ordering::SeqCst);
        });
        assert_eq!(calls.load(Ordering::SeqCst), 11, "already cancelled: called at once");
    }

    #[test]
    fn reasons_display_and_serialize() {
        assert_eq!(CancelReason::by_caller().to_string(), "cancelled by the caller: no reason given");
        assert!(CancelReason::Stalled.to_string().contains("stopped reading"));
        assert!(CancelReason::ReaderLeft.to_string().contains("stopped reading"));
        assert_eq!(serde_json::to_string(&CancelReason::Stalled).unwrap(), r#"{"kind":"stalled"}"#);
        assert_eq!(serde_json::to_string(&CancelReason::caller("x")).unwrap(), r#"{"kind":"caller","detail":"x"}"#);
        assert_eq!(CancelReason::Timeout.code(), "timeout");
    }
}
