//! `agentstream_sequence_check`: the core's `SequenceCheck` behind a checked handle — a
//! consumer's check that the sequence numbers it receives are in order, without duplicates, and
//! tells how many went missing.

use std::sync::Mutex;

use agentstream_core::stream::SequenceCheck;

use crate::error::{Error, ErrorKind, agentstream_status, boundary, boundary_free};
use crate::handles::{Table, not_live_message};
use crate::util::out_arg;

/// A consumer-side check of a run's sequence numbers (for deliveries that crossed a queue, a
/// socket or a retry): accepts each number once and in order, and counts the numbers skipped.
/// Opaque; create with `agentstream_sequence_check_new`, free with
/// `agentstream_sequence_check_free`. Thread-safe (calls are serialized).
#[allow(non_camel_case_types)]
pub struct agentstream_sequence_check {
    _opaque: [u8; 0],
}

static CHECKS: Table<Mutex<SequenceCheck>> = Table::new("agentstream_sequence_check");

/// Create a check expecting sequence 0. `*out` is freed with `agentstream_sequence_check_free`.
///
/// # Safety
/// `out` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_sequence_check_new(
    out: *mut *mut agentstream_sequence_check,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out, "out") }?;
        *out = CHECKS.insert(Mutex::new(SequenceCheck::new()));
        Ok(())
    })
}

/// Offer an envelope's `sequence` and its `coalesced` count (0 when absent: the numbers its
/// merged deltas absorbed). `*out_accepted` is false for a late or duplicate number (drop that
/// delivery); a number past the expected one is accepted and the gap counted as missing.
///
/// # Safety
/// `out_accepted` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_sequence_check_accept(
    check: *mut agentstream_sequence_check,
    sequence: u64,
    coalesced: u64,
    out_accepted: *mut bool,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out_accepted, "out_accepted") }?;
        *out = false;
        let c = CHECKS.get(check, "check")?;
        *out = c.lock().unwrap_or_else(|p| p.into_inner()).accept_numbers(sequence, coalesced);
        Ok(())
    })
}

/// The numbers skipped so far (never received, not accounted for by a merge), in `*out_missing`.
///
/// # Safety
/// `out_missing` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_sequence_check_missing(
    check: *const agentstream_sequence_check,
    out_missing: *mut u64,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out_missing, "out_missing") }?;
        *out = CHECKS.get(check, "check")?.lock().unwrap_or_else(|p| p.into_inner()).missing();
        Ok(())
    })
}

/// Free a check. NULL is a no-op, and so is a handle that is not live.
///
/// # Safety
/// None beyond passing any value: handles are checked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_sequence_check_free(check: *mut agentstream_sequence_check) {
    boundary_free(|| {
        if check.is_null() || CHECKS.remove(check).is_some() {
            return Ok(());
        }
        Err(Error::new(ErrorKind::InvalidHandle, not_live_message("agentstream_sequence_check", check as usize)))
    });
}
