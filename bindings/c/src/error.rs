//! Status codes (the core's error table), the thread-local last error, and the panic boundary
//! every export goes through.
//!
//! Failures inside the crate are the core's own [`agentstream_core::Error`]: the C status of a
//! failure IS its kind's code ([`ErrorKind::code`]), mapped in one place ([`status_of`]).

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::ffi::{CString, c_char};
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Once, OnceLock};

pub use agentstream_core::{Error, ErrorKind};

/// The result of every fallible `agentstream_*` call: `AGENTSTREAM_STATUS_OK` (0) is success;
/// any other value is the code of the core's error kind, with the same snake_case name
/// (`agentstream_status_name`) in every language. The failure's message (which says what to
/// fix) is read with `agentstream_last_error_message` on the same thread.
///
/// In C the type is a `uint32_t` (so C#, Java and Go declare it as a 32-bit unsigned integer);
/// the enum constants name its values. Codes are stable; new ones are only ever appended.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum agentstream_status {
    /// Success.
    Ok = 0,
    /// `harness_not_found`: the harness executable was not found (`bin`, or the harness's usual
    /// command on PATH).
    HarnessNotFound = 1001,
    /// `already_running`: the session already has a run or command going on (one at a time per
    /// session; use another session for parallel runs), or its configuration cannot change now.
    AlreadyRunning = 1002,
    /// `spawn_failed`: the harness was found but could not be started.
    SpawnFailed = 1003,
    /// `invalid_argument`: an argument had a bad value (an unknown agent or channel name, a bad
    /// option; the message names the field and what is allowed), or text that is not UTF-8.
    InvalidArgument = 1004,
    /// `cancelled`: reserved, not returned by this version (a cancelled run is still `OK` where
    /// its result is read: its `"state"` says `"cancelled"`).
    Cancelled = 1005,
    /// `timeout`: reserved, not returned by this version (a run that went past its time limit
    /// ends `"cancelled"` with `"cancel_kind": "timeout"`; a wait that did returns
    /// `STILL_RUNNING`).
    Timeout = 1006,
    /// `decode_limit`: reserved, not returned by this version (a line over the decode limit is
    /// skipped and counted in the stats' `oversize_lines`, with a diagnostic).
    DecodeLimit = 1007,
    /// `internal`: a failure inside agentstream that is not a panic (a bug: please report it).
    Internal = 1008,
    /// `not_running`: nothing is running (`pause` or `resume` without an active run).
    NotRunning = 1009,
    /// `null_argument`: a required pointer argument was NULL.
    NullArgument = 1010,
    /// `invalid_handle`: the handle is not live (already freed, never returned by the library,
    /// or a handle of another type). Handles are checked numbers, never dereferenced, so this
    /// is an error rather than a crash.
    InvalidHandle = 1011,
    /// `busy`: the object is in use by a call that has not returned: called from inside one of
    /// its own callbacks (e.g. `agentstream_run_wait` from the run's own callback), or a
    /// decoder from two threads at once.
    Busy = 1012,
    /// `buffer_too_small`: the caller's buffer was too small; the text was truncated.
    BufferTooSmall = 1013,
    /// `still_running`: the run has not ended yet (its result exists once its terminal event
    /// was delivered), or a wait ran out of time first (wait again).
    StillRunning = 1014,
    /// `panic`: a Rust panic was caught at the boundary (a bug in agentstream: please report
    /// it). The object involved may be in an inconsistent state; free it.
    Panic = 1015,
    /// `cannot_resume`: reserved, not returned by this version (every harness can continue a
    /// session; one it does not know ends the run `"failed"`, with the harness's message).
    CannotResume = 1016,
    /// `unsupported`: not available on this platform (starting a run off Unix).
    Unsupported = 1017,
}

/// Every status, in numeric order (not exported to C: cbindgen would render it as a macro).
pub(crate) const ALL_STATUSES: [agentstream_status; 18] = [
    agentstream_status::Ok,
    agentstream_status::HarnessNotFound,
    agentstream_status::AlreadyRunning,
    agentstream_status::SpawnFailed,
    agentstream_status::InvalidArgument,
    agentstream_status::Cancelled,
    agentstream_status::Timeout,
    agentstream_status::DecodeLimit,
    agentstream_status::Internal,
    agentstream_status::NotRunning,
    agentstream_status::NullArgument,
    agentstream_status::InvalidHandle,
    agentstream_status::Busy,
    agentstream_status::BufferTooSmall,
    agentstream_status::StillRunning,
    agentstream_status::Panic,
    agentstream_status::CannotResume,
    agentstream_status::Unsupported,
];

impl agentstream_status {
    /// The status with this number, if any.
    pub fn from_u32(n: u32) -> Option<Self> {
        ALL_STATUSES.into_iter().find(|s| *s as u32 == n)
    }

    /// The stable snake_case name: `ok`, or the core error kind's name.
    pub fn name(self) -> &'static str {
        match ErrorKind::from_code(self as u32) {
            Some(kind) => kind.name(),
            None => "ok",
        }
    }
}

/// THE mapping of the core's error kinds onto C statuses: the status is the kind's code (a test
/// checks that every kind has the constant of the same name and value).
pub fn status_of(kind: ErrorKind) -> agentstream_status {
    agentstream_status::from_u32(kind.code()).unwrap_or(agentstream_status::Internal)
}

/// Result type of the code inside a boundary.
pub type Result<T> = std::result::Result<T, Error>;

/// `null_argument` naming the argument.
pub fn null(arg: &str) -> Error {
    Error::new(ErrorKind::NullArgument, format!("argument `{arg}` must not be NULL"))
}

/// `invalid_argument`.
pub fn invalid(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}

thread_local! {
    /// The message of the last failed call on this thread ("" when none).
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
    /// How many boundaries this thread is inside (callbacks can re-enter the library).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// The message of a panic caught by our hook inside a boundary.
    static PANIC_MESSAGE: RefCell<Option<String>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

/// Install, once per process, a panic hook that stays quiet for panics inside our boundaries
/// (their message goes to the last error instead of stderr; toolchain pitfall C2) and hands
/// every other panic to the hook that was installed before.
fn install_quiet_panic_hook() {
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let inside = DEPTH.try_with(|d| d.get() > 0).unwrap_or(false);
            if !inside {
                previous(info);
                return;
            }
            let what = payload_text(info.payload());
            let message = match info.location() {
                Some(loc) => format!("{what} (at {}:{})", loc.file(), loc.line()),
                None => what,
            };
            let _ = PANIC_MESSAGE.try_with(|m| *m.borrow_mut() = Some(message));
        }));
    });
}

fn payload_text(payload: &(dyn Any + Send)) -> String {
    agentstream_core::error::panic_text(payload).unwrap_or("a panic without a message").to_string()
}

/// Set this thread's last error message.
pub fn set_last_error(message: &str) {
    LAST_ERROR.with(|e| {
        let mut e = e.borrow_mut();
        e.clear();
        e.push_str(message);
    });
}

/// This thread's last error message.
pub fn last_error() -> String {
    LAST_ERROR.with(|e| e.borrow().clone())
}

/// Run `f` behind the panic boundary: a returned error sets the last error (its message with
/// the kind's advice) and becomes its status; a panic is caught, its message goes to the last
/// error, and `PANIC` is returned; success clears the last error and returns `OK`.
pub fn boundary(f: impl FnOnce() -> Result<()>) -> agentstream_status {
    guarded(f, true)
}

/// [`boundary`] for the `_free` functions, which return no status: a success leaves the last
/// error alone (a C program frees its handles on the way out of a failed call, then reports the
/// call's error), a failure (a handle not live) or a panic is put there.
pub fn boundary_free(f: impl FnOnce() -> Result<()>) {
    let _ = guarded(f, false);
}

fn guarded(f: impl FnOnce() -> Result<()>, ok_clears: bool) -> agentstream_status {
    install_quiet_panic_hook();
    DEPTH.with(|d| d.set(d.get() + 1));
    let outcome = panic::catch_unwind(AssertUnwindSafe(f));
    DEPTH.with(|d| d.set(d.get() - 1));
    match outcome {
        Ok(Ok(())) => {
            if ok_clears {
                LAST_ERROR.with(|e| e.borrow_mut().clear());
            }
            agentstream_status::Ok
        }
        Ok(Err(e)) => {
            set_last_error(&e.message_with_advice());
            status_of(e.kind)
        }
        Err(payload) => {
            let caught = PANIC_MESSAGE.with(|m| m.borrow_mut().take());
            let what = caught.unwrap_or_else(|| payload_text(payload.as_ref()));
            // Dropping the payload could itself panic (a payload with a panicking Drop):
            // contain that too rather than unwind into C.
            let _ = panic::catch_unwind(AssertUnwindSafe(move || drop(payload)));
            set_last_error(&format!("panic in agentstream (a bug, please report it): {what}"));
            agentstream_status::Panic
        }
    }
}

/// Copy `text` into `buf` (capacity `cap`, NUL-terminated, truncated at a UTF-8 boundary) and
/// its full length into `out_len`. Returns `BUFFER_TOO_SMALL` when it did not fit.
///
/// # Safety
/// `buf` must be NULL or valid for `cap` bytes; `out_len` NULL or valid for a write.
pub unsafe fn copy_out(text: &str, buf: *mut c_char, cap: usize, out_len: *mut usize) -> agentstream_status {
    if !out_len.is_null() {
        // SAFETY: the caller passes a valid pointer or NULL.
        unsafe { *out_len = text.len() };
    }
    if buf.is_null() || cap == 0 {
        // Nothing can be written: a length query. Only an empty message "fits".
        return if text.is_empty() { agentstream_status::Ok } else { agentstream_status::BufferTooSmall };
    }
    let n = agentstream_core::char_boundary::floor(text, cap - 1);
    // SAFETY: buf is valid for cap bytes and n < cap.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = 0;
    }
    if n == text.len() { agentstream_status::Ok } else { agentstream_status::BufferTooSmall }
}

/// The name of a status code as a static NUL-terminated string (`"unknown"` for a number that
/// is not a status). The names are the core's, copied once for the life of the process.
pub fn status_name_ptr(status: u32) -> *const c_char {
    static NAMES: OnceLock<Vec<(u32, CString)>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        ALL_STATUSES
            .iter()
            .map(|&s| (s as u32, CString::new(s.name()).expect("status names have no NUL byte")))
            .collect()
    });
    names.iter().find(|(code, _)| *code == status).map_or(c"unknown".as_ptr(), |(_, name)| name.as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_core_error_kind_is_the_status_of_the_same_name_and_value() {
        let header = include_str!("../../../include/agentstream.h");
        for kind in ErrorKind::ALL {
            let status = status_of(kind);
            assert_eq!(status as u32, kind.code(), "{kind}");
            assert_eq!(status.name(), kind.name());
            let constant = format!("AGENTSTREAM_STATUS_{} = {},", kind.name().to_ascii_uppercase(), kind.code());
            assert!(header.contains(&constant), "the header lacks `{constant}` (make check-header)");
        }
        // Nothing but OK and the core's kinds.
        assert_eq!(ALL_STATUSES.len(), ErrorKind::ALL.len() + 1);
        assert_eq!(ALL_STATUSES[0], agentstream_status::Ok);
        assert!(header.contains("AGENTSTREAM_STATUS_OK = 0,"));
        assert!(!header.contains("NOT_READY"), "NOT_READY became STILL_RUNNING");
        assert_eq!(agentstream_status::from_u32(999), None);
    }

    #[test]
    fn status_names_are_the_core_names() {
        let name = |s: u32| unsafe { std::ffi::CStr::from_ptr(status_name_ptr(s)) }.to_str().unwrap();
        assert_eq!(name(0), "ok");
        for kind in ErrorKind::ALL {
            assert_eq!(name(kind.code()), kind.name());
        }
        assert_eq!(name(12345), "unknown");
    }

    #[test]
    fn boundary_sets_and_clears_the_last_error() {
        assert_eq!(boundary(|| Err(invalid("nope"))), agentstream_status::InvalidArgument);
        assert_eq!(last_error(), "nope");
        assert_eq!(boundary(|| Err(Error::new(ErrorKind::NotRunning, "idle"))), agentstream_status::NotRunning);
        assert_eq!(last_error(), format!("idle; {}", ErrorKind::NotRunning.advice()), "the core's advice is kept");
        assert_eq!(boundary(|| Ok(())), agentstream_status::Ok);
        assert_eq!(last_error(), "");
    }

    #[test]
    fn panics_become_a_status_with_the_message() {
        assert_eq!(boundary(|| panic!("boom {}", 42)), agentstream_status::Panic);
        let e = last_error();
        assert!(e.contains("boom 42"), "{e}");
        assert!(e.contains("error.rs"), "location kept: {e}");
        // A panic outside any boundary still reaches the previous hook (not silenced).
        assert!(std::panic::catch_unwind(|| panic!("outside")).is_err());
    }

    #[test]
    fn copy_out_truncates_at_char_boundaries() {
        let mut buf = [0 as c_char; 4];
        let mut len = 0usize;
        let st = unsafe { copy_out("aé€", buf.as_mut_ptr(), buf.len(), &mut len) };
        assert_eq!(st, agentstream_status::BufferTooSmall);
        assert_eq!(len, "aé€".len());
        let got = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }.to_str().unwrap();
        assert_eq!(got, "aé");
        let st = unsafe { copy_out("", buf.as_mut_ptr(), buf.len(), &mut len) };
        assert_eq!((st, len, buf[0]), (agentstream_status::Ok, 0, 0));
        let st = unsafe { copy_out("abc", std::ptr::null_mut(), 0, &mut len) };
        assert_eq!((st, len), (agentstream_status::BufferTooSmall, 3));
    }
}
