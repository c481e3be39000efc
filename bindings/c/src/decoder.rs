//! `agentstream_decoder`: the sans-IO decoder (core `Decoder`) behind an opaque handle.

use std::cell::UnsafeCell;
use std::ffi::{c_char, c_void};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agentstream_core::{Agent, Decoder, DecoderOptions, OutputEvent};

use crate::error::{Error, ErrorKind, Result, agentstream_status, boundary, boundary_free, invalid, null};
use crate::handles::{Table, not_live_message};
use crate::util::{bytes_arg, give_string, out_arg, reset_out, str_arg, to_json};

/// Receives one item as UTF-8 JSON: `json` points to `len` bytes followed by a NUL byte (so it
/// can also be used as a C string; a `stdout`/`stderr` handler gets raw text instead, which
/// may hold a NUL: use `len`). The memory is borrowed: it is valid only until the callback
/// returns; copy what you keep. `user_data` is the pointer given with the callback.
///
/// A decoder's and a replay's callbacks run on the thread that called the function they were
/// given to; a session's handlers and a run's `on_event` on the run's delivery thread (see
/// `agentstream_session_start`). Callbacks must not unwind (a C++ exception or a Go panic must
/// be caught inside the callback).
#[allow(non_camel_case_types)]
pub type agentstream_event_cb = Option<unsafe extern "C" fn(user_data: *mut c_void, json: *const c_char, len: usize)>;

/// Destroys a `user_data` pointer whose ownership was given to the library (optional: NULL
/// when nothing needs freeing). Called exactly once, from the thread that frees the owner.
#[allow(non_camel_case_types)]
pub type agentstream_free_cb = Option<unsafe extern "C" fn(user_data: *mut c_void)>;

/// A stateful decoder of one harness's stdout (one run). Opaque; create with
/// `agentstream_decoder_new`, free with `agentstream_decoder_free`. The handle is a checked
/// number, never an address: a freed or foreign handle is refused with
/// `AGENTSTREAM_STATUS_INVALID_HANDLE`.
///
/// Not thread-safe: use one decoder from one thread at a time. Calling a decoder function on
/// the same decoder from inside one of its own callbacks, or from two threads at once, returns
/// `AGENTSTREAM_STATUS_BUSY`.
#[allow(non_camel_case_types)]
pub struct agentstream_decoder {
    _opaque: [u8; 0],
}

struct DecoderObj {
    busy: AtomicBool,
    freed: AtomicBool,
    inner: UnsafeCell<Inner>,
}

// SAFETY: `inner` is only reached through a Guard, and the busy flag admits one Guard at a time.
unsafe impl Send for DecoderObj {}
// SAFETY: as above.
unsafe impl Sync for DecoderObj {}

static DECODERS: Table<DecoderObj> = Table::new("agentstream_decoder");

struct Inner {
    decoder: Decoder,
    /// Reused serialization buffer for callbacks.
    scratch: Vec<u8>,
}

/// Exclusive access to a decoder for one call. Holds a reference, so a free during the call
/// (from a callback or another thread) takes effect when the call returns.
struct Guard {
    obj: Arc<DecoderObj>,
}

impl Guard {
    fn enter(handle: *mut agentstream_decoder) -> Result<Guard> {
        let obj = DECODERS.get(handle, "decoder")?;
        if obj.busy.swap(true, Ordering::Acquire) {
            return Err(Error::new(
                ErrorKind::Busy,
                "the decoder is busy: it was called from one of its own callbacks or from two threads at once",
            ));
        }
        Ok(Guard { obj })
    }

    fn inner(&mut self) -> &mut Inner {
        // SAFETY: the busy flag gives this guard exclusive access.
        unsafe { &mut *self.obj.inner.get() }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.obj.busy.store(false, Ordering::Release);
    }
}

fn parse_agent(name: &str) -> Result<Agent> {
    name.parse::<Agent>().map_err(|e| invalid(e.to_string()))
}

fn new_decoder(agent: Agent, options: DecoderOptions) -> *mut agentstream_decoder {
    DECODERS.insert(DecoderObj {
        busy: AtomicBool::new(false),
        freed: AtomicBool::new(false),
        inner: UnsafeCell::new(Inner { decoder: Decoder::with_options(agent, options), scratch: Vec::new() }),
    })
}

/// Deliver each event to `cb`, one call per event, in order. Stops delivering (but keeps
/// decoding) once the owner asked for the decoder to be freed from inside a callback.
fn deliver(
    guard_free_requested: &dyn Fn() -> bool,
    scratch: &mut Vec<u8>,
    events: &mut Vec<OutputEvent>,
    cb: unsafe extern "C" fn(*mut c_void, *const c_char, usize),
    user_data: *mut c_void,
    failure: &mut Option<Error>,
) {
    for ev in events.drain(..) {
        if failure.is_some() || guard_free_requested() {
            continue;
        }
        scratch.clear();
        if let Err(e) = serde_json::to_writer(&mut *scratch, &ev) {
            *failure = Some(Error::new(ErrorKind::Internal, format!("serialization failed: {e}")));
            continue;
        }
        let len = scratch.len();
        scratch.push(0);
        // SAFETY: the callback contract: it reads len bytes (plus the NUL) during the call.
        unsafe { cb(user_data, scratch.as_ptr().cast(), len) };
    }
}

fn json_array(events: &[OutputEvent]) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(64 + events.len() * 256);
    out.push(b'[');
    for (i, ev) in events.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        serde_json::to_writer(&mut out, ev)
            .map_err(|e| Error::new(ErrorKind::Internal, format!("serialization failed: {e}")))?;
    }
    out.push(b']');
    Ok(out)
}

/// Create a decoder for `agent` (`"claude"`, `"codex"`, `"gemini"`, `"qwen"`, `"kimi"`,
/// `"opencode"`, `"droid"`; case-insensitive) with the default options (lines up to 16 MiB).
///
/// On success `*out` is a new decoder the caller frees with `agentstream_decoder_free`.
/// Errors: `NULL_ARGUMENT` (agent or out NULL), `INVALID_ARGUMENT` (unknown agent; the message
/// lists the valid names). On failure `*out` is set to NULL.
///
/// # Safety
/// `agent` must be NULL or a NUL-terminated string; `out` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_decoder_new(
    agent: *const c_char,
    out: *mut *mut agentstream_decoder,
) -> agentstream_status {
    // SAFETY: forwarded contract.
    unsafe { agentstream_decoder_new_with_options(agent, 0, out) }
}

/// Like `agentstream_decoder_new`, with the maximum line length in bytes: a longer line is
/// skipped, counted in the stats (`oversize_lines`) and reported as a diagnostic, so memory
/// stays bounded. `0` means the default (16 MiB).
///
/// # Safety
/// As `agentstream_decoder_new`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_decoder_new_with_options(
    agent: *const c_char,
    max_line_bytes: usize,
    out: *mut *mut agentstream_decoder,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out, "out") }?;
        *out = std::ptr::null_mut();
        // SAFETY: forwarded contract.
        let agent = parse_agent(unsafe { str_arg(agent, "agent") }?)?;
        let mut options = DecoderOptions::default();
        if max_line_bytes > 0 {
            options.max_line_bytes = max_line_bytes;
        }
        *out = new_decoder(agent, options);
        Ok(())
    })
}

/// Feed `len` bytes of the harness's stdout, at any chunking (a line may span calls). `cb` is
/// called once per event decoded from the lines these bytes complete, in order, before this
/// function returns, with the event as JSON in the exact seed `OutputEvent` shape.
///
/// `bytes` may be NULL when `len` is 0. Errors: `NULL_ARGUMENT` (decoder or cb NULL, or bytes
/// NULL with len > 0), `BUSY` (called from this decoder's own callback). Bad input lines are
/// never an error: they are counted in `agentstream_decoder_stats_json`. Feeding after
/// `agentstream_decoder_finish` decodes nothing.
///
/// # Safety
/// `decoder` NULL or live; `bytes` valid for `len` bytes; `cb` a valid function or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_decoder_feed(
    decoder: *mut agentstream_decoder,
    bytes: *const u8,
    len: usize,
    cb: agentstream_event_cb,
    user_data: *mut c_void,
) -> agentstream_status {
    boundary(|| {
        let mut guard = Guard::enter(decoder)?;
        let cb = cb.ok_or_else(|| null("cb"))?;
        // SAFETY: forwarded contract.
        let bytes = unsafe { bytes_arg(bytes, len, "bytes") }?;
        let obj = guard.obj.clone();
        let free_requested = move || obj.freed.load(Ordering::Acquire);
        let Inner { decoder, scratch } = guard.inner();
        let mut failure = None;
        decoder.feed_lines(bytes, &mut |_line, events| {
            deliver(&free_requested, scratch, events, cb, user_data, &mut failure)
        });
        failure.map_or(Ok(()), Err)
    })
}

/// Feed bytes like `agentstream_decoder_feed`, returning the events as ONE owned JSON array
/// (`[]` when none) in `*out_json` (length without the NUL in `*out_len`, which may be NULL).
/// Free it with `agentstream_string_free`. One call instead of one callback per event: the
/// cheapest way for hosts whose callbacks are costly (Go, Java).
///
/// On failure `*out_json` is NULL.
///
/// # Safety
/// As `agentstream_decoder_feed`; `out_json` valid for a write, `out_len` NULL or valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_decoder_feed_json(
    decoder: *mut agentstream_decoder,
    bytes: *const u8,
    len: usize,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        unsafe { reset_out(out_json, out_len) };
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out_json, "out_json") }?;
        let mut guard = Guard::enter(decoder)?;
        // SAFETY: forwarded contract.
        let bytes = unsafe { bytes_arg(bytes, len, "bytes") }?;
        let events = guard.inner().decoder.feed(bytes);
        // SAFETY: forwarded contract.
        unsafe { give_string(json_array(&events)?, out, out_len) }
    })
}

/// End of input: decode a final line that has no newline, then flush events held back until
/// the end (kimi's multi-line plain-text errors), calling `cb` once per event, in order.
/// Later feeds decode nothing; finishing twice delivers nothing the second time.
///
/// # Safety
/// As `agentstream_decoder_feed`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_decoder_finish(
    decoder: *mut agentstream_decoder,
    cb: agentstream_event_cb,
    user_data: *mut c_void,
) -> agentstream_status {
    boundary(|| {
        let mut guard = Guard::enter(decoder)?;
        let cb = cb.ok_or_else(|| null("cb"))?;
        let obj = guard.obj.clone();
        let free_requested = move || obj.freed.load(Ordering::Acquire);
        let Inner { decoder, scratch } = guard.inner();
        let mut failure = None;
        decoder
            .finish_lines(&mut |_line, events| deliver(&free_requested, scratch, events, cb, user_data, &mut failure));
        failure.map_or(Ok(()), Err)
    })
}

/// `agentstream_decoder_finish` returning the events as one owned JSON array, like
/// `agentstream_decoder_feed_json`.
///
/// # Safety
/// As `agentstream_decoder_feed_json`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_decoder_finish_json(
    decoder: *mut agentstream_decoder,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        unsafe { reset_out(out_json, out_len) };
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out_json, "out_json") }?;
        let mut guard = Guard::enter(decoder)?;
        let events = guard.inner().decoder.finish();
        // SAFETY: forwarded contract.
        unsafe { give_string(json_array(&events)?, out, out_len) }
    })
}

/// Whether this decoder masks secret shapes in tool-call inputs (and every field derived from
/// them) in the events it delivers from now on: `true` by default; `false` delivers them as
/// the harness printed them. Call it before the first feed for a whole run.
///
/// Errors: `NULL_ARGUMENT`, `BUSY` (called from this decoder's own callback).
///
/// # Safety
/// `decoder` NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_decoder_set_redact(
    decoder: *mut agentstream_decoder,
    redact: bool,
) -> agentstream_status {
    boundary(|| {
        let mut guard = Guard::enter(decoder)?;
        guard.inner().decoder.set_redaction(agentstream_core::RedactionPolicy { enabled: redact });
        Ok(())
    })
}

/// The decode statistics so far as an owned JSON object (`DecodeStats`: `bytes`, `lines`,
/// `events`, `blank_lines`, `invalid_json`, `non_object`, `unknown_type`, `unexpected_shape`,
/// `oversize_lines`, `invalid_utf8_lines`). Free with `agentstream_string_free`.
///
/// # Safety
/// As `agentstream_decoder_feed_json`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_decoder_stats_json(
    decoder: *mut agentstream_decoder,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        unsafe { reset_out(out_json, out_len) };
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out_json, "out_json") }?;
        let mut guard = Guard::enter(decoder)?;
        let json = to_json(guard.inner().decoder.stats())?;
        // SAFETY: forwarded contract.
        unsafe { give_string(json, out, out_len) }
    })
}

/// The diagnostics collected since the last call (over-long lines, invalid UTF-8), as an owned
/// JSON array of `{"line": <1-based line number>, "message": "..."}`; the call clears them.
/// Free with `agentstream_string_free`.
///
/// # Safety
/// As `agentstream_decoder_feed_json`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_decoder_take_diagnostics_json(
    decoder: *mut agentstream_decoder,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        unsafe { reset_out(out_json, out_len) };
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out_json, "out_json") }?;
        let mut guard = Guard::enter(decoder)?;
        let json = to_json(&guard.inner().decoder.take_diagnostics())?;
        // SAFETY: forwarded contract.
        unsafe { give_string(json, out, out_len) }
    })
}

/// The harness's session id once seen, as an owned string in `*out` (free with
/// `agentstream_string_free`); `*out` is NULL (and the status OK) while none was seen.
///
/// # Safety
/// As `agentstream_decoder_feed_json`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_decoder_session_id(
    decoder: *mut agentstream_decoder,
    out: *mut *mut c_char,
    out_len: *mut usize,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        unsafe { reset_out(out, out_len) };
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out, "out") }?;
        let mut guard = Guard::enter(decoder)?;
        match guard.inner().decoder.session_id() {
            // SAFETY: forwarded contract.
            Some(id) => unsafe { give_string(id.as_bytes().to_vec(), out, out_len) },
            None => Ok(()),
        }
    })
}

/// Free a decoder. NULL is a no-op, and so is a handle that is not live (a second free: the
/// last error then says so). Called from inside one of the decoder's own callbacks, or while
/// another thread is inside a call on it, the memory is released when that call returns, and
/// no further events are delivered to that call's callback.
///
/// # Safety
/// None beyond passing any value: handles are checked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_decoder_free(decoder: *mut agentstream_decoder) {
    boundary_free(|| {
        if decoder.is_null() {
            return Ok(());
        }
        match DECODERS.remove(decoder) {
            Some(obj) => {
                obj.freed.store(true, Ordering::Release);
                Ok(())
            }
            None => {
                Err(Error::new(ErrorKind::InvalidHandle, not_live_message("agentstream_decoder", decoder as usize)))
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    unsafe extern "C" fn collect(user_data: *mut c_void, json: *const c_char, len: usize) {
        let v = unsafe { &mut *(user_data as *mut Vec<String>) };
        let s = unsafe { std::slice::from_raw_parts(json as *const u8, len) };
        assert_eq!(unsafe { *json.add(len) }, 0, "NUL-terminated");
        v.push(String::from_utf8(s.to_vec()).unwrap());
    }

    #[test]
    fn unknown_agent_lists_the_valid_names() {
        let mut d = std::ptr::null_mut();
        let st = unsafe { agentstream_decoder_new(c"cursor".as_ptr(), &mut d) };
        assert_eq!(st, agentstream_status::InvalidArgument);
        assert!(d.is_null());
        let e = crate::error::last_error();
        assert!(e.contains("claude, codex, gemini, qwen, kimi, opencode, droid"), "{e}");
    }

    #[test]
    fn callbacks_and_json_batches_agree_and_stats_count() {
        // Kimi turns plain-text stdout into `error` updates, so this exercises events even
        // while harness decoders are being written.
        let input = b"something failed\nbadly\n";
        let mut d = std::ptr::null_mut();
        assert_eq!(unsafe { agentstream_decoder_new(c"kimi".as_ptr(), &mut d) }, agentstream_status::Ok);
        let mut got: Vec<String> = Vec::new();
        let ud = &mut got as *mut Vec<String> as *mut c_void;
        for b in input {
            assert_eq!(unsafe { agentstream_decoder_feed(d, b, 1, Some(collect), ud) }, agentstream_status::Ok);
        }
        assert_eq!(unsafe { agentstream_decoder_finish(d, Some(collect), ud) }, agentstream_status::Ok);
        let expected: Vec<String> = agentstream_core::parse(Agent::Kimi, input).iter().map(|e| e.to_json()).collect();
        assert_eq!(got, expected);

        let mut s = std::ptr::null_mut();
        assert_eq!(unsafe { agentstream_decoder_stats_json(d, &mut s, std::ptr::null_mut()) }, agentstream_status::Ok);
        let stats: serde_json::Value = serde_json::from_str(unsafe { CStr::from_ptr(s) }.to_str().unwrap()).unwrap();
        assert_eq!(stats["bytes"], input.len());
        unsafe { crate::agentstream_string_free(s) };
        unsafe { agentstream_decoder_free(d) };

        let mut d = std::ptr::null_mut();
        assert_eq!(unsafe { agentstream_decoder_new(c"KIMI".as_ptr(), &mut d) }, agentstream_status::Ok);
        let (mut a, mut alen) = (std::ptr::null_mut(), 0usize);
        assert_eq!(
            unsafe { agentstream_decoder_feed_json(d, input.as_ptr(), input.len(), &mut a, &mut alen) },
            agentstream_status::Ok
        );
        let (mut b, mut blen) = (std::ptr::null_mut(), 0usize);
        assert_eq!(unsafe { agentstream_decoder_finish_json(d, &mut b, &mut blen) }, agentstream_status::Ok);
        let mut all: Vec<serde_json::Value> =
            serde_json::from_slice(unsafe { std::slice::from_raw_parts(a as *const u8, alen) }).unwrap();
        let tail: Vec<serde_json::Value> =
            serde_json::from_slice(unsafe { std::slice::from_raw_parts(b as *const u8, blen) }).unwrap();
        all.extend(tail);
        let want: Vec<serde_json::Value> = expected.iter().map(|s| serde_json::from_str(s).unwrap()).collect();
        assert_eq!(all, want);
        unsafe {
            crate::agentstream_string_free(a);
            crate::agentstream_string_free(b);
            agentstream_decoder_free(d);
        }
    }

    static REENTERED: AtomicBool = AtomicBool::new(false);

    unsafe extern "C" fn reenter(user_data: *mut c_void, _json: *const c_char, _len: usize) {
        REENTERED.store(true, Ordering::SeqCst);
        let d = user_data as *mut agentstream_decoder;
        let st = unsafe { agentstream_decoder_feed(d, b"x".as_ptr(), 1, Some(reenter), user_data) };
        assert_eq!(st, agentstream_status::Busy);
        // Free from inside the callback: deferred to the end of the outer call.
        unsafe { agentstream_decoder_free(d) };
    }

    #[test]
    fn reentrant_use_is_busy_and_free_from_a_callback_is_deferred() {
        let mut d = std::ptr::null_mut();
        assert_eq!(unsafe { agentstream_decoder_new(c"kimi".as_ptr(), &mut d) }, agentstream_status::Ok);
        let input = b"oops\n\n{\"x\":1}\nagain\n";
        let st = unsafe { agentstream_decoder_feed(d, input.as_ptr(), input.len(), Some(reenter), d.cast()) };
        assert_eq!(st, agentstream_status::Ok);
        if !REENTERED.load(Ordering::SeqCst) {
            // The kimi decoder produced no event for this input (decoders still being
            // written): nothing was deferred, free it here.
            unsafe { agentstream_decoder_free(d) };
        }
        // Otherwise `d` is gone now (ASan/valgrind in the C tests check the deferred free).
    }
}
