//! The injected clock: the run stream never reads the time itself.
//!
//! Everything time-dependent in the stream (the stall clock) asks a [`Clock`], so tests drive
//! time with a [`ManualClock`] and never sleep.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// A monotonic clock in seconds. Only differences between readings matter; the origin is the
/// implementation's choice. Must never go backwards.
pub trait Clock: Send + Sync {
    /// Seconds since the clock's origin.
    fn now(&self) -> f64;
}

/// The real monotonic clock ([`Instant`]); its origin is the moment it was created.
#[derive(Debug, Clone, Copy)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        SystemClock { origin: Instant::now() }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> f64 {
        self.origin.elapsed().as_secs_f64()
    }
}

/// A clock that moves only when told to. Clones share one time, so a test keeps a clone and
/// advances the clock a [`RunStream`](super::RunStream) holds.
///
/// It never goes backwards: [`advance`](Self::advance) ignores negative or non-finite steps and
/// [`set`](Self::set) ignores instants earlier than now.
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    bits: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock reading 0.0.
    pub fn new() -> Self {
        Self::default()
    }

    /// A clock reading `t` (0.0 when `t` is negative or not finite).
    pub fn at(t: f64) -> Self {
        let c = Self::new();
        c.set(t);
        c
    }

    /// Move forward by `seconds` (ignored unless finite and positive).
    pub fn advance(&self, seconds: f64) {
        if seconds.is_finite() && seconds > 0.0 {
            let _ = self
                .bits
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| Some((f64::from_bits(b) + seconds).to_bits()));
        }
    }

    /// Move to the instant `t` (ignored unless finite and later than now).
    pub fn set(&self, t: f64) {
        if t.is_finite() {
            let _ = self
                .bits
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| (t > f64::from_bits(b)).then_some(t.to_bits()));
        }
    }
}

impl Clock for ManualClock {
    fn now(&self) -> f64 {
        f64::from_bits(self.bits.load(Ordering::Acquire))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_is_shared_and_never_goes_back() {
        let c = ManualClock::new();
        let held = c.clone();
        c.advance(1.5);
        assert_eq!(held.now(), 1.5);
        c.advance(-3.0);
        c.advance(f64::NAN);
        c.set(1.0);
        assert_eq!(held.now(), 1.5);
        c.set(10.0);
        assert_eq!(held.now(), 10.0);
        assert_eq!(ManualClock::at(-1.0).now(), 0.0);
    }

    #[test]
    fn system_clock_is_monotonic() {
        let c = SystemClock::new();
        let a = c.now();
        assert!(c.now() >= a && a >= 0.0);
    }
}
