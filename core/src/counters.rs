//! Arithmetic on numbers a harness printed (token counts, read offsets and limits).
//!
//! A harness may print any integer up to `u64::MAX`; a sum or an offset past that must not wrap
//! (release builds) or panic (debug builds). Every such computation goes through [`add`] or
//! [`sum`]: checked, and when the result does not fit, the value is left out (a counter that
//! cannot be computed is absent, as one that was not printed is) and the loss is noted. The
//! decoder turns the notes of each line into a [`Diagnostic`](crate::decode::Diagnostic), so
//! nothing is dropped silently.

use std::cell::RefCell;

thread_local! {
    /// What could not be computed while decoding the current line on this thread.
    static OVERFLOWS: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

fn note(what: &'static str) {
    OVERFLOWS.with(|o| {
        let mut o = o.borrow_mut();
        // Bounded: one hostile line cannot make the note list grow without end.
        if o.len() < 64 {
            o.push(what);
        }
    });
}

/// `a + b`, or `None` (noted as `what`) when it does not fit 64 bits.
pub(crate) fn add(what: &'static str, a: u64, b: u64) -> Option<u64> {
    let sum = a.checked_add(b);
    if sum.is_none() {
        note(what);
    }
    sum
}

/// The sum of the parts that are present: `None` when none is, or (noted as `what`) when the
/// sum does not fit 64 bits.
pub(crate) fn sum(what: &'static str, parts: impl IntoIterator<Item = Option<u64>>) -> Option<u64> {
    let mut total: Option<u64> = None;
    for part in parts.into_iter().flatten() {
        total = Some(match total {
            None => part,
            Some(t) => add(what, t, part)?,
        });
    }
    total
}

/// What could not be computed since the last call on this thread (oldest first).
pub(crate) fn take_overflows() -> Vec<&'static str> {
    OVERFLOWS.with(|o| std::mem::take(&mut *o.borrow_mut()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflow_is_absent_and_noted_never_wrapped() {
        let _ = take_overflows();
        assert_eq!(sum("prompt tokens", [Some(1), None, Some(2)]), Some(3));
        assert_eq!(sum("prompt tokens", [None, None]), None);
        assert!(take_overflows().is_empty());
        assert_eq!(sum("prompt tokens", [Some(u64::MAX), Some(1)]), None);
        assert_eq!(add("a read's last line", u64::MAX - 1, 1), Some(u64::MAX));
        assert_eq!(add("a read's last line", u64::MAX, 1), None);
        assert_eq!(take_overflows(), ["prompt tokens", "a read's last line"]);
        assert!(take_overflows().is_empty());
    }
}
