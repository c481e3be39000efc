//! Status codes, the thread-local last error, and the panic boundary every export goes through.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::ffi::c_char;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

/// The result of every fallible `agentstream_*` call. `AGENTSTREAM_STATUS_OK` (0) is success;
/// anything else is a failure whose message `agentstream_last_error_message` returns on the
/// same thread. The numbers are stable ABI: new codes are only ever appended.
///
/// In C the type is a `uint32_t` (so C#, Java and Go can declare it as a 32-bit unsigned
/// integer); the enum constants name its values.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum agentstream_status {
    /// Success.
    Ok = 0,
    /// A required pointer argument was NULL.
    NullArgument = 1,
    /// An argument had a bad value: an unknown agent or channel name (the message lists the
    /// valid names), text that is not UTF-8, a wrong combination.
    InvalidArgument = 2,
    /// `agentstream_last_error_message`: the buffer was too small; the message was truncated.
    BufferTooSmall = 3,
    /// The object is already in use: called from inside one of its own callbacks, or from two
    /// threads at once. Objects are not thread-safe; use each from one thread at a time.
    Busy = 4,
    /// An internal failure that is not a panic (e.g. an event that could not be serialized).
    Internal = 5,
    /// A Rust panic was caught at the boundary (a bug in agentstream: please report it). The
    /// object involved may be in an inconsistent state; free it.
    Panic = 6,
    /// The harness executable was not found (`bin`, or the harness's usual command on PATH).
    HarnessNotFound = 7,
    /// The session already has a run or command in progress (one operation at a time per
    /// session; use another session for parallel runs).
    AlreadyRunning = 8,
    /// The harness process could not be started.
    SpawnFailed = 9,
    /// The operation was cancelled.
    Cancelled = 10,
    /// The operation exceeded its time limit.
    Timeout = 11,
    /// Input went past a configured decode limit.
    DecodeLimit = 12,
    /// Nothing is running: `pause`, `resume` or `interrupt` without an active run.
    NotRunning = 13,
    /// The handle is not live: already freed, never returned by the library, or a handle of
    /// another type. Handles are checked numbers, never dereferenced, so this is an error
    /// rather than a crash.
    InvalidHandle = 14,
    /// `agentstream_run_wait`: the run did not finish within the timeout (not a failure of the
    /// run; wait again).
    NotReady = 15,
}

/// Every status, in numeric order (not exported to C: cbindgen would render it as a macro).
pub(crate) const ALL_STATUSES: [agentstream_status; 16] = [
    agentstream_status::Ok,
    agentstream_status::NullArgument,
    agentstream_status::InvalidArgument,
    agentstream_status::BufferTooSmall,
    agentstream_status::Busy,
    agentstream_status::Internal,
    agentstream_status::Panic,
    agentstream_status::HarnessNotFound,
    agentstream_status::AlreadyRunning,
    agentstream_status::SpawnFailed,
    agentstream_status::Cancelled,
    agentstream_status::Timeout,
    agentstream_status::DecodeLimit,
    agentstream_status::NotRunning,
    agentstream_status::InvalidHandle,
    agentstream_status::NotReady,
];

impl agentstream_status {
    /// The stable snake_case name (the error kind names shared with the other bindings).
    pub fn name(self) -> &'static str {
        self.name_nul().trim_end_matches('\0')
    }

    /// [`Self::name`] with a trailing NUL, for handing out to C.
    fn name_nul(self) -> &'static str {
        match self {
            agentstream_status::Ok => "ok\0",
            agentstream_status::NullArgument => "null_argument\0",
            agentstream_status::InvalidArgument => "invalid_argument\0",
            agentstream_status::BufferTooSmall => "buffer_too_small\0",
            agentstream_status::Busy => "busy\0",
            agentstream_status::Internal => "internal\0",
            agentstream_status::Panic => "panic\0",
            agentstream_status::HarnessNotFound => "harness_not_found\0",
            agentstream_status::AlreadyRunning => "already_running\0",
            agentstream_status::SpawnFailed => "spawn_failed\0",
            agentstream_status::Cancelled => "cancelled\0",
            agentstream_status::Timeout => "timeout\0",
            agentstream_status::DecodeLimit => "decode_limit\0",
            agentstream_status::NotRunning => "not_running\0",
            agentstream_status::InvalidHandle => "invalid_handle\0",
            agentstream_status::NotReady => "not_ready\0",
        }
    }

    /// The status with this number, if any.
    pub fn from_u32(n: u32) -> Option<Self> {
        ALL_STATUSES.into_iter().find(|s| *s as u32 == n)
    }
}

/// A failure to report: a status plus a message for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The status code returned to C.
    pub status: agentstream_status,
    /// The message `agentstream_last_error_message` returns.
    pub message: String,
}

impl Error {
    /// An error with `status`.
    pub fn new(status: agentstream_status, message: impl Into<String>) -> Self {
        Error { status, message: message.into() }
    }

    /// `NULL_ARGUMENT` naming the argument.
    pub fn null(arg: &str) -> Self {
        Error::new(agentstream_status::NullArgument, format!("argument `{arg}` must not be NULL"))
    }

    /// `INVALID_ARGUMENT`.
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::new(agentstream_status::InvalidArgument, message)
    }
}

impl From<agentstream_core::Error> for Error {
    /// The core's error kinds map one to one onto statuses (same snake_case names); the message
    /// carries the core's advice.
    fn from(e: agentstream_core::Error) -> Self {
        use agentstream_core::ErrorKind as K;
        let status = match e.kind {
            K::HarnessNotFound => agentstream_status::HarnessNotFound,
            K::AlreadyRunning => agentstream_status::AlreadyRunning,
            K::SpawnFailed => agentstream_status::SpawnFailed,
            K::InvalidArgument => agentstream_status::InvalidArgument,
            K::Cancelled => agentstream_status::Cancelled,
            K::Timeout => agentstream_status::Timeout,
            K::DecodeLimit => agentstream_status::DecodeLimit,
            K::Internal => agentstream_status::Internal,
            K::NotRunning => agentstream_status::NotRunning,
            K::NullArgument => agentstream_status::NullArgument,
            K::InvalidHandle => agentstream_status::InvalidHandle,
            K::Busy => agentstream_status::Busy,
            K::BufferTooSmall => agentstream_status::BufferTooSmall,
            K::StillRunning => agentstream_status::NotReady,
            K::Panic => agentstream_status::Panic,
            // Not reachable through this ABI yet (no resume option, runs only on Unix).
            K::CannotResume | K::Unsupported => agentstream_status::InvalidArgument,
        };
        Error::new(status, e.message_with_advice())
    }
}

/// Result type of the code inside a boundary.
pub type Result<T> = std::result::Result<T, Error>;

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
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string())
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

/// Run `f` behind the panic boundary: a returned error sets the last error and becomes its
/// status; a panic is caught, its message goes to the last error, and `PANIC` is returned;
/// success clears the last error and returns `OK`.
pub fn boundary(f: impl FnOnce() -> Result<()>) -> agentstream_status {
    install_quiet_panic_hook();
    DEPTH.with(|d| d.set(d.get() + 1));
    let outcome = panic::catch_unwind(AssertUnwindSafe(f));
    DEPTH.with(|d| d.set(d.get() - 1));
    match outcome {
        Ok(Ok(())) => {
            LAST_ERROR.with(|e| e.borrow_mut().clear());
            agentstream_status::Ok
        }
        Ok(Err(e)) => {
            set_last_error(&e.message);
            e.status
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

/// Like [`boundary`] for calls that cannot report a status (`_free` functions): a panic is
/// swallowed (its message still goes to the last error).
pub fn boundary_void(f: impl FnOnce()) {
    let _ = boundary(|| {
        f();
        Ok(())
    });
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
    let mut n = text.len().min(cap - 1);
    while !text.is_char_boundary(n) {
        n -= 1;
    }
    // SAFETY: buf is valid for cap bytes and n < cap.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = 0;
    }
    if n == text.len() { agentstream_status::Ok } else { agentstream_status::BufferTooSmall }
}

/// The name of a status code as a static NUL-terminated string.
pub fn status_name_ptr(status: u32) -> *const c_char {
    match agentstream_status::from_u32(status) {
        Some(s) => s.name_nul().as_ptr().cast(),
        None => c"unknown".as_ptr(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_snake_case_and_numbers_dense() {
        for (i, s) in ALL_STATUSES.into_iter().enumerate() {
            assert_eq!(s as u32, i as u32);
            assert_eq!(agentstream_status::from_u32(i as u32), Some(s));
            assert!(s.name().chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{}", s.name());
        }
        assert_eq!(agentstream_status::from_u32(999), None);
    }

    #[test]
    fn every_core_error_kind_has_the_status_of_the_same_name() {
        use agentstream_core::ErrorKind as K;
        for kind in agentstream_core::ErrorKind::ALL {
            let e: Error = agentstream_core::Error::new(kind, "x").into();
            if !matches!(kind, K::StillRunning | K::CannotResume | K::Unsupported) {
                assert_eq!(e.status.name(), kind.name());
            }
        }
    }

    #[test]
    fn boundary_sets_and_clears_the_last_error() {
        assert_eq!(boundary(|| Err(Error::invalid("nope"))), agentstream_status::InvalidArgument);
        assert_eq!(last_error(), "nope");
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
