//! The test-only surface (`agentstream_testing_*`): exercised by every binding's test suite with
//! the same test names, never needed by applications.

use std::ffi::c_char;

use agentstream_core::Channel;

use crate::error::{Error, ErrorKind, agentstream_status, boundary};
use crate::session::{SESSIONS, agentstream_session};
use crate::util::{bytes_arg, str_arg};

/// TEST ONLY. Panics inside the library; returns `AGENTSTREAM_STATUS_PANIC` with the panic
/// message ("agentstream_testing_panic: deliberate panic") in the last error. Proves that no
/// panic crosses the boundary and that the default panic hook stays quiet.
#[unsafe(no_mangle)]
pub extern "C" fn agentstream_testing_panic() -> agentstream_status {
    boundary(|| panic!("agentstream_testing_panic: deliberate panic"))
}

/// TEST ONLY. Deliver `payload` (`len` bytes) `repeat` times to the handlers registered on
/// `session` for `channel` with `agentstream_session_on`, in registration order, as a run will: from a new Rust thread when
/// `from_thread` is nonzero (joined before returning), else on the calling thread. (A
/// `uint32_t` rather than `bool`: C# and JNA marshal C's 1-byte `bool` differently.)
/// `*out_delivered` (optional) receives the number of handler calls. Errors: `NULL_ARGUMENT`,
/// `INVALID_ARGUMENT` (channel name), `PANIC`.
///
/// # Safety
/// `channel` NULL or NUL-terminated; `payload` valid for `len` bytes;
/// `out_delivered` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_testing_session_emit(
    session: *const agentstream_session,
    channel: *const c_char,
    payload: *const u8,
    len: usize,
    repeat: usize,
    from_thread: u32,
    out_delivered: *mut usize,
) -> agentstream_status {
    boundary(|| {
        if !out_delivered.is_null() {
            // SAFETY: valid per the contract.
            unsafe { *out_delivered = 0 };
        }
        let s = SESSIONS.get(session, "session")?;
        // SAFETY: forwarded contract.
        let channel: Channel = unsafe { str_arg(channel, "channel") }?.parse()?;
        // SAFETY: forwarded contract.
        let mut bytes = unsafe { bytes_arg(payload, len, "payload") }?.to_vec();
        bytes.push(0);
        let handlers = s.handlers.of(&s.client.subscribers(channel));
        drop(s);
        let work = move || {
            let mut n = 0usize;
            for _ in 0..repeat {
                for h in &handlers {
                    if h.call_nul(&bytes) {
                        n += 1;
                    }
                }
            }
            n
        };
        let delivered = if from_thread != 0 {
            std::thread::Builder::new()
                .name("agentstream-testing".into())
                .spawn(work)
                .map_err(|e| Error::new(ErrorKind::Internal, format!("could not start a thread: {e}")))?
                .join()
                .map_err(|_| Error::new(ErrorKind::Panic, "the delivering thread panicked"))?
        } else {
            work()
        };
        if !out_delivered.is_null() {
            // SAFETY: valid per the contract.
            unsafe { *out_delivered = delivered };
        }
        Ok(())
    })
}
