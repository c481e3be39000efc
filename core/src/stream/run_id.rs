//! Run ids: unique, opaque strings, from `std` only.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A new run id: `run_` followed by 32 lowercase hex digits.
///
/// The digits are 12 of wall-clock milliseconds (so ids sort roughly by creation time), 4 of a
/// process-wide counter (distinct within one millisecond of one process), and 16 of bits from
/// std's per-process random hash keys mixed with the process id, the thread, the counter and
/// the nanoseconds (distinct across processes). Treat the id as opaque: its layout is not part
/// of the contract, only its uniqueness.
pub fn new_run_id() -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let millis = now.as_millis() as u64 & 0xFFFF_FFFF_FFFF;
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut h = RandomState::new().build_hasher();
    h.write_u64(count);
    h.write_u32(std::process::id());
    h.write_u128(now.as_nanos());
    std::hash::Hash::hash(&std::thread::current().id(), &mut h);
    format!("run_{millis:012x}{:04x}{:016x}", count & 0xFFFF, h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_unique_and_shaped() {
        let ids: HashSet<String> = (0..10_000).map(|_| new_run_id()).collect();
        assert_eq!(ids.len(), 10_000);
        for id in ids.iter().take(5) {
            assert!(id.starts_with("run_") && id.len() == 36, "{id}");
            assert!(id[4..].bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        }
        let across_threads: HashSet<String> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4).map(|_| s.spawn(|| (0..1000).map(|_| new_run_id()).collect::<Vec<_>>())).collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(across_threads.len(), 4000);
    }
}
