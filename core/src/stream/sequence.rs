//! [`SequenceCheck`]: consumer-side gap detection.

use super::envelope::Envelope;

/// Tells a slow stream from a lossy one: counts sequence numbers a reader never received.
///
/// * `accept` rejects an envelope whose sequence is below the next expected one (late or
///   duplicate): it is never reordered into place, and `missing` is not decremented for it.
/// * A jump forward counts the skipped numbers as missing; the counter starts at 0, so a first
///   envelope with sequence 5 means 5 missing.
/// * A merged delta (`coalesced = c`) delivers its own number AND the `c` numbers it absorbed
///   (`sequence + 1 ..= sequence + c`), so merging under backpressure is never a false gap.
///
/// One checker per run; the run id is not checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SequenceCheck {
    next: u64,
    missing: u64,
    delivered: u64,
}

impl SequenceCheck {
    /// A checker expecting sequence 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Accept `env` if it is not late or a duplicate; returns whether it was accepted.
    pub fn accept(&mut self, env: &Envelope) -> bool {
        self.accept_numbers(env.sequence, env.coalesced)
    }

    /// [`accept`](Self::accept) on bare numbers: `sequence` plus `coalesced` absorbed numbers.
    pub fn accept_numbers(&mut self, sequence: u64, coalesced: u64) -> bool {
        if sequence < self.next {
            return false;
        }
        self.missing += sequence - self.next;
        self.next = sequence.saturating_add(coalesced).saturating_add(1);
        self.delivered += 1 + coalesced;
        true
    }

    /// Numbers skipped so far (never received, not accounted for by a merge).
    pub fn missing(&self) -> u64 {
        self.missing
    }

    /// The sequence number expected next.
    pub fn next_expected(&self) -> u64 {
        self.next
    }

    /// Numbers delivered so far, counting those absorbed by merges.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(seq: &[(u64, u64)]) -> (Vec<bool>, u64) {
        let mut c = SequenceCheck::new();
        let acc = seq.iter().map(|&(s, k)| c.accept_numbers(s, k)).collect();
        (acc, c.missing())
    }

    #[test]
    fn reference_cases() {
        assert_eq!(run(&[(0, 0), (1, 0), (2, 0)]), (vec![true, true, true], 0));
        assert_eq!(run(&[(0, 0), (3, 0)]), (vec![true, true], 2));
        assert_eq!(run(&[(1, 0), (0, 0)]), (vec![true, false], 1));
        assert_eq!(run(&[(0, 0), (0, 0)]), (vec![true, false], 0));
        assert_eq!(run(&[(5, 0)]), (vec![true], 5), "first event 5: five missing");
        // A late event filling a gap is rejected and the gap stays counted.
        assert_eq!(run(&[(0, 0), (2, 0), (1, 0)]), (vec![true, true, false], 1));
    }

    #[test]
    fn coalesced_numbers_count_as_delivered() {
        // 0 absorbed 1..=3; the next delivered is 4: no gap.
        assert_eq!(run(&[(0, 3), (4, 0)]), (vec![true, true], 0));
        // A number inside a merge arriving again is a duplicate.
        assert_eq!(run(&[(0, 3), (2, 0)]), (vec![true, false], 0));
        let mut c = SequenceCheck::new();
        c.accept_numbers(0, 3);
        c.accept_numbers(6, 0);
        assert_eq!((c.missing(), c.delivered(), c.next_expected()), (2, 5, 7));
    }
}
