//! A run's deliveries pulled through one plain C function, for a binding whose every uniffi call
//! leaves garbage behind: the Kotlin layer.
//!
//! Through JNA, each uniffi call allocates native memory for its call status and buffers, and
//! each piece registers with JNA's cleaner; an `async` call is woken from a library thread that
//! JNA attaches for the call. At 1,000 deliveries a second that is tens of thousands of cleaner
//! references a second and collections that walk them (a p99 of 2–3 ms, all garbage
//! collection). [`agentstream_uniffi_run_pull_routed`] takes and returns only numbers and a
//! caller-owned byte buffer, which JNA's direct mapping passes without allocating anything; the
//! caller waits in it on a thread of its own (a JVM I/O thread, already attached).
//!
//! The routing stays in the core: each item names the subscription ids of its listeners, in
//! the order to call them ([`write_routed_batch`]); the caller calls them and hands the
//! failures back ([`AgentRun::report_failures`], a uniffi call, made only when one failed).

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use agentstream_core::bridge::{BatchLimits, Delivery, Pulled, ReadMode, SubscriptionId};

use crate::run::{AgentRun, PerChannel};

/// [`agentstream_uniffi_run_pull_routed`]: nothing arrived within the timeout; pull again.
pub const PULL_TIMEOUT: i64 = -1;
/// The terminal event and its hook events were delivered: nothing more comes.
pub const PULL_END: i64 = -2;
/// The batch does not fit `capacity`: its size is in the first 8 bytes of `dst` (little-endian
/// `u64`); pull again with a buffer at least that large (the batch waits, nothing is lost).
pub const PULL_TOO_SMALL: i64 = -3;
/// Another call is reading the run (one reader at a time).
pub const PULL_BUSY: i64 = -4;
/// No run has this reader id (never issued, or the run was closed).
pub const PULL_UNKNOWN_READER: i64 = -5;
/// A bad argument: `dst` null or `capacity` under 8 bytes.
pub const PULL_BAD_ARGUMENT: i64 = -6;
/// A panic was caught (a bug in agentstream: please report it). Its message is in `dst`: its
/// length in the first 8 bytes (little-endian `u64`), then that many bytes of UTF-8 (cut to what
/// `capacity` holds).
pub const PULL_PANIC: i64 = -7;

/// The runs a reader id was issued for. Weak: closing a run's handle frees it (and cancels it,
/// when it has not ended) even if its id is still held by somebody.
fn readers() -> &'static Mutex<HashMap<u64, Weak<AgentRun>>> {
    static READERS: OnceLock<Mutex<HashMap<u64, Weak<AgentRun>>>> = OnceLock::new();
    READERS.get_or_init(Default::default)
}

static NEXT_READER: AtomicU64 = AtomicU64::new(1);

/// A new reader id for `run` (ids start at 1 and are never reused).
pub(crate) fn register(run: &Arc<AgentRun>) -> u64 {
    let id = NEXT_READER.fetch_add(1, Ordering::Relaxed);
    readers().lock().unwrap_or_else(|p| p.into_inner()).insert(id, Arc::downgrade(run));
    id
}

/// Forget reader `id` (its run is being dropped).
pub(crate) fn unregister(id: u64) {
    readers().lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
}

fn reader(id: u64) -> Option<Arc<AgentRun>> {
    readers().lock().unwrap_or_else(|p| p.into_inner()).get(&id).and_then(Weak::upgrade)
}

/// `batch` as one JSON array in delivery order: `{"item": <envelope>, "to": [<id>…]}` (the
/// subscription ids of the item's channel, in registration order) and `{"hook": <hook event>}`.
/// An item nobody listens to is left out, unless `every_item` (an iterated run: its reader
/// takes everything). Returns whether anything was written besides the brackets.
pub(crate) fn write_routed_batch(run: &AgentRun, batch: &[Delivery], every_item: bool, out: &mut Vec<u8>) -> bool {
    let mut subscribers: PerChannel<Vec<SubscriptionId>> = PerChannel::new();
    out.push(b'[');
    let mut written = false;
    for delivery in batch {
        let start = out.len();
        if written {
            out.push(b',');
        }
        let serialized = match delivery {
            Delivery::Item(env) => {
                let channel = env.channel();
                let ids = subscribers.get(channel, || run.subscribers(channel));
                if ids.is_empty() && !every_item {
                    out.truncate(start);
                    continue;
                }
                out.extend_from_slice(b"{\"item\":");
                serde_json::to_writer(&mut *out, env).and_then(|()| {
                    out.extend_from_slice(b",\"to\":");
                    serde_json::to_writer(&mut *out, ids)
                })
            }
            Delivery::Hook(hook) => {
                out.extend_from_slice(b"{\"hook\":");
                serde_json::to_writer(&mut *out, hook)
            }
        };
        if serialized.is_err() {
            out.truncate(start); // not reachable: envelopes and hooks always serialize
            continue;
        }
        out.push(b'}');
        written = true;
    }
    out.push(b']');
    written
}

/// Wait up to `timeout_ms` (negative: as long as it takes) for the next deliveries of the run
/// `reader` names (from `AgentRun::routed_reader`) and write them into `dst` as one routed
/// batch ([`write_routed_batch`]). Returns the batch's length in bytes (≥ 2), or one of the
/// negative `PULL_*` codes. A batch with nothing to deliver is not returned: the call waits on.
///
/// # Safety
/// `dst` must be valid for writes of `capacity` bytes for the duration of the call. The bytes
/// written are the caller's: nothing points into them afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_uniffi_run_pull_routed(
    reader: u64,
    timeout_ms: i64,
    dst: *mut u8,
    capacity: u64,
) -> i64 {
    if dst.is_null() || capacity < 8 {
        return PULL_BAD_ARGUMENT;
    }
    let Ok(capacity) = usize::try_from(capacity) else { return PULL_BAD_ARGUMENT };
    let pulled = catch_unwind(AssertUnwindSafe(|| {
        pull_routed(reader, timeout_ms, |batch| {
            if batch.len() > capacity {
                // SAFETY: capacity >= 8 was checked; the caller guarantees `dst` holds `capacity`.
                unsafe { std::ptr::copy_nonoverlapping((batch.len() as u64).to_le_bytes().as_ptr(), dst, 8) };
                return false;
            }
            // SAFETY: batch.len() <= capacity, which the caller guarantees `dst` holds; the batch
            // is the run's own buffer, never the caller's.
            unsafe { std::ptr::copy_nonoverlapping(batch.as_ptr(), dst, batch.len()) };
            true
        })
    }));
    pulled.unwrap_or_else(|payload| {
        let message = panic_message(payload.as_ref(), capacity - 8);
        // SAFETY: 8 + message.len() <= capacity, which the caller guarantees `dst` holds.
        unsafe {
            std::ptr::copy_nonoverlapping((message.len() as u64).to_le_bytes().as_ptr(), dst, 8);
            std::ptr::copy_nonoverlapping(message.as_ptr(), dst.add(8), message.len());
        }
        // A payload whose Drop panics must not unwind into the caller either.
        let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
        PULL_PANIC
    })
}

/// A caught panic's message, cut at a character boundary to at most `max` bytes.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send), max: usize) -> String {
    let text = agentstream_core::error::panic_text(payload).unwrap_or("a panic without a message");
    let mut message = String::new();
    agentstream_core::answer::push_within(&mut message, text, max);
    message
}

/// [`agentstream_uniffi_run_pull_routed`] without the raw pointer: `hand_over` gets the batch
/// and says whether it took it (false: it did not fit; the batch is kept for the next call).
pub(crate) fn pull_routed(reader_id: u64, timeout_ms: i64, hand_over: impl FnOnce(&[u8]) -> bool) -> i64 {
    let Some(run) = reader(reader_id) else { return PULL_UNKNOWN_READER };
    let Ok(_reading) = run.reading() else { return PULL_BUSY };
    let mut pending = run.routed_pending();
    if pending.is_empty() {
        let timeout = u64::try_from(timeout_ms).ok().map(Duration::from_millis);
        let deadline = timeout.map(|t| std::time::Instant::now() + t);
        let every_item = run.core().read_mode() == ReadMode::Iterate;
        let mut batch = Vec::new();
        loop {
            batch.clear();
            let left = deadline.map(|d| d.saturating_duration_since(std::time::Instant::now()));
            match run.core().pull(&mut batch, BatchLimits::DEFAULT, left) {
                Pulled::End => return PULL_END,
                Pulled::Timeout => return PULL_TIMEOUT,
                Pulled::Batch => {}
            }
            if write_routed_batch(&run, &batch, every_item, &mut pending) {
                break;
            }
            pending.clear(); // only items nobody listens to (the terminal, say): wait on
        }
    }
    let len = pending.len() as i64;
    if hand_over(&pending) {
        pending.clear();
        len
    } else {
        PULL_TOO_SMALL
    }
}
