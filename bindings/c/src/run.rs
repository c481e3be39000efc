//! `agentstream_run`: one run or command, started through the ONE path of the core
//! (`Client::start(RunRequest)`), and read in one of two ways: delivered to C callbacks from a
//! thread of the library (the core's [`CallbackPump`]), or pulled by the caller in bounded
//! batches ([`Run::pull`]). Waiting, the result, cancelling, leaving and handler-failure counting
//! are the core's [`Run`].

use std::ffi::{c_char, c_void};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentstream_core::bridge::{
    BatchLimits, CallbackPump, Delivery, Dispatched, HandlerError, Pulled, ReadMode, Run, RunRequest,
};
use agentstream_core::runner::write_deliveries_json;
use agentstream_core::stream::StreamItem;

use crate::callback::Handler;
use crate::decoder::{agentstream_event_cb, agentstream_free_cb};
use crate::error::{Error, ErrorKind, Result, agentstream_status, boundary, boundary_free, invalid, null};
use crate::handles::{Table, not_live_message};
use crate::session::{Handlers, SESSIONS, SessionObj, agentstream_session};
use crate::util::{give_string, opt_str_arg, opt_text_arg, out_arg, put, reset_out, str_arg, to_json};

/// One run or command. Opaque; returned by `agentstream_session_start` (and its conveniences
/// `_start_run`, `_start_command`), freed with `agentstream_run_free`. Its functions may be
/// called from any thread. The handle is a checked number: a freed or foreign handle is refused
/// with `AGENTSTREAM_STATUS_INVALID_HANDLE`.
#[allow(non_camel_case_types)]
pub struct agentstream_run {
    _opaque: [u8; 0],
}

/// What `agentstream_run_next` / `agentstream_run_next_batch_json` produced (in `*out_kind`).
/// A `uint32_t` in C, like `agentstream_status`.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum agentstream_next {
    /// `*out_json` is one stream item: an envelope
    /// `{"runId","sequence","channel","event","coalesced"?}`.
    Item = 0,
    /// `*out_json` is one hook event `{"type","run_id","agent_id","timestamp","status",
    /// "sequence","details"?}` (runs with `"hooks": true`).
    Hook = 1,
    /// `*out_json` is a JSON array of tagged deliveries, `[{"item": …}, {"hook": …}, …]`, in
    /// order (`agentstream_run_next_batch_json`).
    Batch = 2,
    /// Nothing arrived within the timeout; the run goes on (`*out_json` is NULL, or `[]` for a
    /// batch).
    Timeout = 3,
    /// The stream is over: the terminal item (and its hooks) were delivered, or the run has no
    /// reader (`*out_json` is NULL, or `[]` for a batch).
    End = 4,
}

pub(crate) static RUNS: Table<RunObj> = Table::new("agentstream_run");

pub(crate) struct RunObj {
    run: Run,
    reading: Reading,
}

/// Who reads the run.
enum Reading {
    /// The caller, with `agentstream_run_next*` (or nobody: an await-only run ends at once).
    Caller,
    /// The core's callback pump, calling the session's C handlers and the run's `on_event`.
    Pump { pump: CallbackPump, on_event: Option<Arc<Handler>> },
}

/// Append the payload a C handler receives for `item` (the event's JSON, or the raw text of
/// stdout/stderr) and a NUL to `buf`.
fn item_payload(item: &StreamItem, buf: &mut Vec<u8>) -> serde_json::Result<()> {
    buf.clear();
    match item {
        StreamItem::Content(ev) => serde_json::to_writer(&mut *buf, ev)?,
        StreamItem::Lifecycle(ev) => serde_json::to_writer(&mut *buf, ev)?,
        StreamItem::Stdout(t) | StreamItem::Stderr(t) => buf.extend_from_slice(t.as_bytes()),
    }
    buf.push(0);
    Ok(())
}

/// What the pump hands each delivery to: the session's C handlers of the item's channel, in
/// the core's subscription order (looked up per delivery, so a handler added during the run gets
/// the rest of it), and the run's `on_event` for hook events.
struct Sink {
    client: agentstream_core::bridge::Client,
    handlers: Arc<Handlers>,
    on_event: Option<Arc<Handler>>,
    buf: Vec<u8>,
}

impl Sink {
    fn deliver(&mut self, delivery: &Delivery) -> Dispatched {
        let (targets, written) = match delivery {
            Delivery::Item(env) => {
                let targets = self.handlers.of(&self.client.subscribers(env.channel()));
                if targets.is_empty() {
                    return Dispatched::Ok;
                }
                (targets, item_payload(&env.item, &mut self.buf))
            }
            Delivery::Hook(hook) => {
                let Some(h) = self.on_event.clone() else { return Dispatched::Ok };
                self.buf.clear();
                let written = serde_json::to_writer(&mut self.buf, hook);
                self.buf.push(0);
                (vec![h], written)
            }
        };
        if let Err(e) = written {
            // Core types always serialize; if one did not, say so on the run (counted) rather
            // than hand the handlers half a payload.
            let sequence = match delivery {
                Delivery::Item(env) => env.sequence,
                Delivery::Hook(h) => h.sequence,
            };
            return Dispatched::Failed(vec![HandlerError {
                handler: u64::MAX,
                channel: "internal".into(),
                sequence,
                message: format!("agentstream: a delivery could not be serialized (a bug: please report it): {e}"),
            }]);
        }
        for h in targets {
            // C callbacks cannot report failures (they return nothing and must not unwind).
            h.call_nul(&self.buf);
        }
        Dispatched::Ok
    }
}

/// Start `request` on the session through the core's one path, and decide who reads it.
///
/// A run is delivered to C callbacks when it reads by handlers (`read` absent or "handlers")
/// and there is one to call (a handler from `agentstream_session_on`, or `on_event`); every
/// other run is the caller's to pull (or, with nothing to read, only awaited).
fn start(
    s: &SessionObj,
    mut request: RunRequest,
    on_event: agentstream_event_cb,
    user_data: *mut c_void,
    free_user_data: agentstream_free_cb,
) -> Result<*mut agentstream_run> {
    let on_event = match on_event {
        Some(_) => Some(Arc::new(Handler::new(on_event, user_data, free_user_data, "on_event")?)),
        None => None,
    };
    // From here on, a failure gives user_data back to the caller.
    let give_back = |e: Error| {
        if let Some(h) = &on_event {
            h.forget();
        }
        e
    };
    let pumped = match request.read {
        ReadMode::Iterate | ReadMode::AwaitOnly if on_event.is_some() => {
            return Err(give_back(invalid(
                "on_event must be NULL unless the run reads by handlers: a pulled run (\"read\": \"iterate\") \
                 interleaves its hook events with the items (set \"hooks\": true), and an await-only run delivers \
                 nothing",
            )));
        }
        ReadMode::Iterate | ReadMode::AwaitOnly => false,
        ReadMode::Handlers => {
            let has_c_handlers = !s.handlers.is_empty() || on_event.is_some();
            if has_c_handlers && !s.bare_subscriptions().is_empty() {
                return Err(give_back(invalid(
                    "the session has handlers from agentstream_session_on AND subscriptions from \
                     agentstream_session_subscribe: a run is either delivered to C callbacks or pulled by the caller; \
                     remove one kind (agentstream_session_off)",
                )));
            }
            if has_c_handlers && request.hooks && on_event.is_none() {
                return Err(give_back(invalid(
                    "\"hooks\": true in a run delivered to callbacks needs an on_event callback (or pull the run to \
                     read its hook events)",
                )));
            }
            if on_event.is_some() {
                request.hooks = true;
            }
            has_c_handlers
        }
    };
    request.budget = s.budget();
    let run = s.client.start(request).map_err(give_back)?;
    let reading = if pumped {
        let mut sink = Sink {
            client: s.client.clone(),
            handlers: s.handlers.clone(),
            on_event: on_event.clone(),
            buf: Vec::new(),
        };
        match CallbackPump::start(run.clone(), move |d| sink.deliver(d)) {
            Ok(pump) => Reading::Pump { pump, on_event },
            Err(e) => {
                run.cancel("agentstream: could not start the delivering thread");
                return Err(give_back(Error::new(ErrorKind::Internal, format!("could not start a thread: {e}"))));
            }
        }
    } else {
        Reading::Caller
    };
    Ok(RUNS.insert(RunObj { run, reading }))
}

/// The shared tail of the three start functions.
///
/// # Safety
/// `out_run` NULL or valid for a write.
unsafe fn start_with(
    session: *mut agentstream_session,
    out_run: *mut *mut agentstream_run,
    request: impl FnOnce() -> Result<RunRequest>,
    on_event: agentstream_event_cb,
    user_data: *mut c_void,
    free_user_data: agentstream_free_cb,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out_run, "out_run") }?;
        *out = std::ptr::null_mut();
        let s = SESSIONS.get(session, "session")?;
        *out = start(&s, request()?, on_event, user_data, free_user_data)?;
        Ok(())
    })
}

/// Options JSON without `prompt` or `command` (those are arguments of the convenience).
fn options_without_work(options_json: Option<&str>, work: &str) -> Result<RunRequest> {
    let request = match options_json {
        Some(text) if !text.trim().is_empty() => RunRequest::from_json(text)?,
        _ => RunRequest::default(),
    };
    for (key, present) in [("prompt", request.prompt.is_some()), ("command", request.command.is_some())] {
        if present {
            return Err(invalid(format!(
                "options_json must not contain \"{key}\": the {work} is an argument of this function (use \
                 agentstream_session_start to give the whole request as JSON)"
            )));
        }
    }
    Ok(request)
}

/// Start a run (`"prompt"`) or a command (`"command"`) described by `request_json`, the run
/// request as JSON (every key but one of `prompt`/`command` optional; an unknown key is
/// `INVALID_ARGUMENT`; validation messages name the bad field and what is allowed):
///
/// * `"prompt"`: the task for the harness (a harness run), or
/// * `"command"`: `["program", "arg", …]`, any program streamed like a run (`execute_command`:
///   stdout/stderr, lifecycle `command_start` … `command_complete`/`_failed`/`_interrupted`; no
///   content decoding; not a shell string: use `["sh", "-c", "…"]` for one).
/// * `"model"`, `"cwd"`, `"env"` (`{"NAME": "value"}`): override the session's configuration for
///   this run only.
/// * `"timeout_ms"` (> 0): stop the run after this long (it ends `run_interrupted`, hook
///   `run.stopped`). Absent: no time limit.
/// * `"background"` (bool, default false): a background run (terminal reasons
///   `run_background_*`).
/// * `"hooks"` (bool, default false): derive hook events (implied by `on_event`; a pulled run
///   interleaves them with the items).
/// * `"redact"` (bool, default true): mask secret shapes in everything derived from tool input.
/// * `"resume"`: continue this harness session instead of the session's current conversation
///   (harness runs only).
/// * `"idempotent_tools"` (`["tool", …]`): tools whose calls in flight at a cancellation are safe
///   to retry.
/// * `"kill_grace_ms"` (default 5000): SIGTERM→SIGKILL grace period when the run is cancelled.
/// * `"limits"`: `{"high_water"` (unread events before text deltas merge, default 256),
///   `"byte_budget"` (unread bytes, default 8 MiB, > 0), `"stall_ms"` (how long delivered
///   events may stay unread before the run is cancelled as stalled, default 30000, > 0),
///   `"max_line_bytes"` (the longest harness stdout line decoded, default 16 MiB, > 0)`}`.
/// * `"read"`: `"handlers"` (default), `"iterate"` or `"await_only"` (below).
///
/// A harness run continues the session's conversation (the session id the previous run
/// reported, or `agentstream_session_set_session_id`); its hook events then begin with
/// `run.resumed`. Returns once the process is spawned; `*out_run` is the run, freed with
/// `agentstream_run_free` (NULL on failure).
///
/// Delivery, decided here once:
/// * **callbacks**: with `"read": "handlers"` and a C callback to call (a handler from
///   `agentstream_session_on`, or `on_event`), the handlers of each item's channel and
///   `on_event` (hook events, canonical JSON; implies `"hooks": true`) are called from a thread
///   of the library, one at a time, in sequence order; the last call returns before
///   `agentstream_run_wait` reports the result. Only subscribed channels are buffered (the
///   others are numbered and dropped, so sequence numbers still count every item).
/// * **pulled by the caller** (`agentstream_run_next`, `_next_batch_json`): with
///   `"read": "iterate"` (every channel; `on_event` must be NULL and the session's handlers are
///   not called), or `"read": "handlers"` when the session's subscriptions were made with
///   `agentstream_session_subscribe` (only those channels; plus hook events with
///   `"hooks": true`). With backpressure: unread text deltas merge above the high-water mark,
///   and a reader that stops reading for `limits.stall_ms` cancels the run.
/// * **await only**: with nothing to deliver (no subscription, no hooks) or
///   `"read": "await_only"`, nothing is buffered; pulling reports END at once.
///
/// `on_event_user_data` is owned by the run from a successful call on, destroyed with
/// `on_event_free` (if not NULL) exactly once, after its last call (at `agentstream_run_free` at
/// the latest); on failure the caller keeps it.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_HANDLE`, `INVALID_ARGUMENT` (the request; `on_event` with a
/// pulled run; a session with both kinds of subscription), `HARNESS_NOT_FOUND`, `SPAWN_FAILED`,
/// `ALREADY_RUNNING` (one run at a time per session).
///
/// # Safety
/// `request_json` NULL or NUL-terminated; `on_event`/`on_event_free` valid functions or NULL;
/// `out_run` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_start(
    session: *mut agentstream_session,
    request_json: *const c_char,
    on_event: agentstream_event_cb,
    on_event_user_data: *mut c_void,
    on_event_free: agentstream_free_cb,
    out_run: *mut *mut agentstream_run,
) -> agentstream_status {
    // SAFETY: forwarded contract.
    let request = || RunRequest::from_json(unsafe { str_arg(request_json, "request_json") }?);
    // SAFETY: forwarded contract.
    unsafe { start_with(session, out_run, request, on_event, on_event_user_data, on_event_free) }
}

/// Start a harness run of `prompt`: `agentstream_session_start` with `options_json` (NULL for
/// every default) as the request and `prompt` put in it. `options_json` takes every key of the
/// request but `"prompt"` and `"command"` (`INVALID_ARGUMENT`). The prompt is a plain argument,
/// so it needs no JSON escaping. Delivery, ownership and errors as `agentstream_session_start`.
///
/// # Safety
/// `prompt` NUL-terminated; the rest as `agentstream_session_start`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_start_run(
    session: *mut agentstream_session,
    prompt: *const c_char,
    options_json: *const c_char,
    on_event: agentstream_event_cb,
    on_event_user_data: *mut c_void,
    on_event_free: agentstream_free_cb,
    out_run: *mut *mut agentstream_run,
) -> agentstream_status {
    let request = || {
        // SAFETY: forwarded contract.
        let prompt = unsafe { str_arg(prompt, "prompt") }?;
        // SAFETY: forwarded contract.
        let mut request = options_without_work(unsafe { opt_str_arg(options_json, "options_json") }?, "prompt")?;
        request.prompt = Some(prompt.to_string());
        Ok(request)
    };
    // SAFETY: forwarded contract.
    unsafe { start_with(session, out_run, request, on_event, on_event_user_data, on_event_free) }
}

/// Start a command (`execute_command`): `argv[0..argc]` is the program and its arguments (not a
/// shell string: use `{"sh", "-c", "…"}` for one): `agentstream_session_start` with
/// `options_json` (NULL for every default) as the request and `"command"` put in it.
/// `options_json` takes every key of the request but `"prompt"`, `"command"` (and `"resume"`,
/// which only harness runs take). Delivery, ownership and errors as `agentstream_session_start`;
/// `INVALID_ARGUMENT` for `argc == 0`.
///
/// # Safety
/// `argv` valid for `argc` NUL-terminated strings; the rest as `agentstream_session_start`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_start_command(
    session: *mut agentstream_session,
    argv: *const *const c_char,
    argc: usize,
    options_json: *const c_char,
    on_event: agentstream_event_cb,
    on_event_user_data: *mut c_void,
    on_event_free: agentstream_free_cb,
    out_run: *mut *mut agentstream_run,
) -> agentstream_status {
    let request = || {
        if argv.is_null() && argc > 0 {
            return Err(null("argv"));
        }
        let mut args = Vec::with_capacity(argc);
        for i in 0..argc {
            // SAFETY: argv is valid for argc pointers per the contract.
            let p = unsafe { *argv.add(i) };
            // SAFETY: forwarded contract.
            args.push(unsafe { str_arg(p, &format!("argv[{i}]")) }?.to_string());
        }
        // SAFETY: forwarded contract.
        let mut request = options_without_work(unsafe { opt_str_arg(options_json, "options_json") }?, "command")?;
        request.command = Some(args);
        Ok(request)
    };
    // SAFETY: forwarded contract.
    unsafe { start_with(session, out_run, request, on_event, on_event_user_data, on_event_free) }
}

fn timeout_arg(timeout_ms: i64) -> Option<Duration> {
    (timeout_ms >= 0).then(|| Duration::from_millis(timeout_ms as u64))
}

impl RunObj {
    fn require_caller(&self) -> Result<()> {
        match self.reading {
            Reading::Caller => Ok(()),
            Reading::Pump { .. } => Err(invalid(
                "this run is delivered to callbacks: it cannot also be pulled (start it with \"read\": \"iterate\", or \
                 with subscriptions from agentstream_session_subscribe, to pull it)",
            )),
        }
    }

    /// Pull up to `limits` within `timeout` (None: forever).
    fn pull(&self, limits: BatchLimits, timeout: Option<Duration>) -> Result<(Pulled, Vec<Delivery>)> {
        self.require_caller()?;
        let mut batch = Vec::new();
        let pulled = self.run.pull(&mut batch, limits, timeout);
        Ok((pulled, batch))
    }

    fn wait(&self, timeout: Option<Duration>) -> Result<agentstream_core::bridge::RunResult> {
        match &self.reading {
            Reading::Caller => self.run.wait(timeout),
            Reading::Pump { pump, .. } => {
                if pump.on_this_thread() {
                    return Err(Error::new(
                        ErrorKind::Busy,
                        "agentstream_run_wait was called from one of the run's own callbacks: it would wait for itself",
                    ));
                }
                if !pump.wait_done(timeout.map(|t| Instant::now() + t)) {
                    return Err(Error::new(
                        ErrorKind::StillRunning,
                        format!(
                            "run {} has not ended within {} ms: wait again",
                            self.run.id(),
                            timeout.unwrap_or_default().as_millis()
                        ),
                    ));
                }
                self.run.result()
            }
        }
    }

    fn result(&self) -> Result<agentstream_core::bridge::RunResult> {
        if matches!(&self.reading, Reading::Pump { pump, .. } if !pump.is_done()) {
            return Err(Error::new(
                ErrorKind::StillRunning,
                format!("run {} is still running: its last callback has not returned yet", self.run.id()),
            ));
        }
        self.run.result()
    }
}

/// Wait for the run's result, up to `timeout_ms` milliseconds (negative: as long as it takes;
/// 0: just look). On `OK`, `*out_json` is the `RunResult` as an owned JSON object
/// (`{"run_id", "state": "completed"|"failed"|"cancelled", "exit_code"?, "signal"?,
/// "session_id"?, "usage", "final_text"?, "error"?, "cancel_reason"?, "cancel_kind"?,
/// "pressure", "stats", "last_sequence", "diagnostics"?, "duration_ms", "handler_errors"}`;
/// free with `agentstream_string_free`). A run delivered to callbacks has had its last callback
/// return by then. A run read with `"read": "iterate"` ends for the wait when its terminal was
/// pulled: the wait never pulls it, so a reader on another thread gets everything — unless the
/// caller said it stopped pulling (`agentstream_run_leave`, which cancels an unfinished run):
/// then the wait discards what is left. Stop iterating without leaving and a wait with a
/// negative timeout waits for ever (start the run `"read": "await_only"` to want only its
/// result); a wait of 0 only looks. A run pulled with subscriptions from
/// `agentstream_session_subscribe` must be pulled to its end. A run that failed or was cancelled
/// is still `OK` here: read `"state"`. `"handler_errors"` counts the handler failures reported
/// with `agentstream_run_handler_failed`.
///
/// Errors: `STILL_RUNNING` when the timeout passed first (wait again), `BUSY` when called from
/// one of the run's own callbacks, `NULL_ARGUMENT`, `INVALID_HANDLE`.
///
/// # Safety
/// `out_json` valid for a write; `out_len` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_run_wait(
    run: *mut agentstream_run,
    timeout_ms: i64,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        unsafe { reset_out(out_json, out_len) };
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out_json, "out_json") }?;
        let result = RUNS.get(run, "run")?.wait(timeout_arg(timeout_ms))?;
        // SAFETY: forwarded contract.
        unsafe { give_string(to_json(&result)?, out, out_len) }
    })
}

/// The run's result as `agentstream_run_wait` gives it, without waiting: `STILL_RUNNING` until
/// the terminal event was delivered (and, for a run delivered to callbacks, the last callback
/// returned) — never a partial record.
///
/// # Safety
/// `out_json` valid for a write; `out_len` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_run_result_json(
    run: *mut agentstream_run,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        unsafe { reset_out(out_json, out_len) };
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out_json, "out_json") }?;
        let result = RUNS.get(run, "run")?.result()?;
        // SAFETY: forwarded contract.
        unsafe { give_string(to_json(&result)?, out, out_len) }
    })
}

/// Pull the next delivery of a run the caller reads (see `agentstream_session_start`), waiting
/// up to `timeout_ms` (negative: as long as it takes; 0: just look). `*out_kind` says what came
/// (`AGENTSTREAM_NEXT_ITEM` with an envelope in `*out_json`, `AGENTSTREAM_NEXT_HOOK` with a
/// hook event, `AGENTSTREAM_NEXT_TIMEOUT` or `AGENTSTREAM_NEXT_END` with `*out_json` NULL).
/// Owned JSON; free with `agentstream_string_free`. Deliveries come in sequence order, each
/// hook right after the item it was derived from; after the terminal item and its hooks, END
/// (at once for a run with no reader).
///
/// Errors: `INVALID_ARGUMENT` (the run is delivered to callbacks), `NULL_ARGUMENT`,
/// `INVALID_HANDLE`.
///
/// # Safety
/// `out_kind` and `out_json` valid for a write; `out_len` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_run_next(
    run: *mut agentstream_run,
    timeout_ms: i64,
    out_kind: *mut agentstream_next,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        unsafe { reset_out(out_json, out_len) };
        // SAFETY: forwarded contract.
        let kind = unsafe { out_arg(out_kind, "out_kind") }?;
        *kind = agentstream_next::End;
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out_json, "out_json") }?;
        let (pulled, batch) = RUNS.get(run, "run")?.pull(BatchLimits::events(1), timeout_arg(timeout_ms))?;
        match (pulled, batch.first()) {
            (Pulled::Batch, Some(Delivery::Item(env))) => {
                *kind = agentstream_next::Item;
                // SAFETY: forwarded contract.
                unsafe { give_string(to_json(env)?, out, out_len) }
            }
            (Pulled::Batch, Some(Delivery::Hook(hook))) => {
                *kind = agentstream_next::Hook;
                // SAFETY: forwarded contract.
                unsafe { give_string(to_json(hook)?, out, out_len) }
            }
            (Pulled::Timeout, _) => {
                *kind = agentstream_next::Timeout;
                Ok(())
            }
            _ => Ok(()),
        }
    })
}

/// Pull what is ready of a run the caller reads, as ONE owned JSON array: waits up to
/// `timeout_ms` (negative: as long as it takes; 0: just look) for the first delivery, then
/// takes what is ready — at most `max_events` deliveries (0: 256) and about `max_bytes` bytes of
/// events (0: 1 MiB; a batch always holds at least one delivery) — with no fixed wait to fill
/// it. `*out_json` is always an owned array (free with `agentstream_string_free`) of tagged
/// deliveries in order, `[{"item": <envelope>}, {"hook": <hook event>}, …]`, and `*out_kind` is
/// `AGENTSTREAM_NEXT_BATCH` (non-empty), `AGENTSTREAM_NEXT_TIMEOUT` or `AGENTSTREAM_NEXT_END`
/// (both with `[]`). One call per batch: the cheapest way for hosts whose calls into C cost
/// (Go, Java, C#). Errors as `agentstream_run_next`.
///
/// # Safety
/// As `agentstream_run_next`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_run_next_batch_json(
    run: *mut agentstream_run,
    max_events: usize,
    max_bytes: usize,
    timeout_ms: i64,
    out_kind: *mut agentstream_next,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        unsafe { reset_out(out_json, out_len) };
        // SAFETY: forwarded contract.
        let kind = unsafe { out_arg(out_kind, "out_kind") }?;
        *kind = agentstream_next::End;
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out_json, "out_json") }?;
        let limits = BatchLimits {
            max_events: if max_events == 0 { BatchLimits::DEFAULT.max_events } else { max_events },
            max_bytes: if max_bytes == 0 { BatchLimits::DEFAULT.max_bytes } else { max_bytes },
        };
        let (pulled, batch) = RUNS.get(run, "run")?.pull(limits, timeout_arg(timeout_ms))?;
        *kind = match pulled {
            Pulled::Batch => agentstream_next::Batch,
            Pulled::Timeout => agentstream_next::Timeout,
            Pulled::End => agentstream_next::End,
        };
        let mut json = Vec::with_capacity(64 + batch.len() * 256);
        write_deliveries_json(&batch, &mut json);
        // SAFETY: forwarded contract.
        unsafe { give_string(json, out, out_len) }
    })
}

/// Cancel the run: SIGTERM to its process group, SIGKILL after the grace period; it ends
/// `run_interrupted` (hook `run.cancelled`) with `reason` (NULL: "cancelled"; bytes that are
/// not UTF-8 are replaced with U+FFFD, never refused). The first reason stands; cancelling
/// again, or after the run finished, does nothing and returns `OK`.
///
/// # Safety
/// `reason` NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_run_cancel(
    run: *mut agentstream_run,
    reason: *const c_char,
) -> agentstream_status {
    boundary(|| {
        let r = RUNS.get(run, "run")?;
        // SAFETY: forwarded contract.
        let reason = unsafe { opt_text_arg(reason) };
        r.run.cancel(reason.as_deref().unwrap_or("cancelled"));
        Ok(())
    })
}

/// The caller stops reading a run it pulls, before the end: the run is cancelled with reason
/// `reader_left`, through the same path as every other cancellation, and the handle stays valid
/// for `agentstream_run_wait` (which then discards what is still to come instead of waiting for
/// it to be pulled). After the end, or for a run delivered to callbacks, this does nothing. `agentstream_run_free` of an unfinished pulled run does the same.
///
/// # Safety
/// None beyond passing any value: handles are checked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_run_leave(run: *mut agentstream_run) -> agentstream_status {
    boundary(|| {
        let r = RUNS.get(run, "run")?;
        if matches!(r.reading, Reading::Caller) && r.run.has_reader() {
            r.run.leave();
        }
        Ok(())
    })
}

/// Report that the caller's handler `handler` failed on the delivery `sequence` of `channel`
/// (`"content"`, `"lifecycle"`, `"stdout"`, `"stderr"`, or `"on_event"` for a hook handler),
/// with `message` (NULL: none given; bytes that are not UTF-8 are replaced with U+FFFD, so a
/// failure is always counted): for hosts that pull and dispatch to their own handlers.
/// Every report is counted (the result's `"handler_errors"`); `*out_first` (optional) is true
/// only for the FIRST failure of that handler — the one to show with its stack or traceback
/// (later ones are only counted). `handler` is the subscription id, or any number the host
/// uses for a handler (e.g. for its hook handler), the same each time.
///
/// # Safety
/// `channel` and `message` NULL or NUL-terminated; `out_first` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_run_handler_failed(
    run: *mut agentstream_run,
    handler: u64,
    channel: *const c_char,
    sequence: u64,
    message: *const c_char,
    out_first: *mut bool,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        unsafe { put(out_first, false) };
        let r = RUNS.get(run, "run")?;
        // SAFETY: forwarded contract.
        let channel = unsafe { str_arg(channel, "channel") }?.to_string();
        // SAFETY: forwarded contract.
        let message = unsafe { opt_text_arg(message) }.map(String::from).unwrap_or_default();
        let first = r.run.handler_failed(HandlerError { handler, channel, sequence, message });
        // SAFETY: forwarded contract.
        unsafe { put(out_first, first) };
        Ok(())
    })
}

/// The run's id (e.g. `"run_…"`) as an owned string (free with `agentstream_string_free`).
///
/// # Safety
/// `out` valid for a write; `out_len` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_run_id(
    run: *mut agentstream_run,
    out: *mut *mut c_char,
    out_len: *mut usize,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        unsafe { reset_out(out, out_len) };
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out, "out") }?;
        let r = RUNS.get(run, "run")?;
        // SAFETY: forwarded contract.
        unsafe { give_string(r.run.id().as_bytes().to_vec(), out, out_len) }
    })
}

/// Live backpressure statistics as an owned JSON object (`buffered`, `bytes`, `peak`,
/// `peak_bytes`, `coalesced`, `oversize`, `stalled`, `dropped_after_terminal`,
/// `refused_terminals`). Free with `agentstream_string_free`.
///
/// # Safety
/// `out_json` valid for a write; `out_len` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_run_pressure_json(
    run: *mut agentstream_run,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        unsafe { reset_out(out_json, out_len) };
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out_json, "out_json") }?;
        let r = RUNS.get(run, "run")?;
        // SAFETY: forwarded contract.
        unsafe { give_string(to_json(&r.run.pressure())?, out, out_len) }
    })
}

/// Free a run handle. What happens to an unfinished run is the core's rule: a run the caller
/// pulls is cancelled (reason `reader_left`); a run delivered to callbacks goes on to its end,
/// still calling the session's handlers; an await-only run (a background run) goes on. Cancel
/// it first (`agentstream_run_cancel`) to stop it. The run's `on_event` is released: not called
/// after this returns (a call in flight on another thread is waited for; freed from inside its
/// own `on_event`, the destructor runs right after that call returns), and `on_event_free` runs
/// exactly once. NULL is a no-op, and so is a handle that is not live (a second free: the last
/// error then says so).
///
/// # Safety
/// None beyond passing any value: handles are checked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_run_free(run: *mut agentstream_run) {
    boundary_free(|| {
        if run.is_null() {
            return Ok(());
        }
        let Some(r) = RUNS.remove(run) else {
            return Err(Error::new(ErrorKind::InvalidHandle, not_live_message("agentstream_run", run as usize)));
        };
        if let Reading::Caller = r.reading {
            // Cancel-on-drop, said here: a call still blocked in `agentstream_run_next` on
            // another thread holds the run too, and would otherwise keep it going.
            if r.run.has_reader() && !r.run.is_ended() {
                r.run.leave();
            }
        }
        if let Reading::Pump { pump, on_event } = &r.reading {
            if let Some(h) = on_event {
                h.release();
            }
            if pump.is_done() {
                // Reclaim the finished thread now (it is not this one: is_done is false there).
                pump.wait_done(Some(Instant::now()));
            }
        }
        Ok(())
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_conveniences_refuse_the_work_in_their_options() {
        let e = options_without_work(Some(r#"{"prompt": "x"}"#), "prompt").unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
        assert!(e.message.contains("must not contain \"prompt\""), "{}", e.message);
        let e = options_without_work(Some(r#"{"command": ["ls"]}"#), "prompt").unwrap_err();
        assert!(e.message.contains("\"command\""), "{}", e.message);
        let r = options_without_work(Some(r#"{"read": "iterate", "limits": {"stall_ms": 5}}"#), "prompt").unwrap();
        assert_eq!((r.read, r.limits.stall_ms), (ReadMode::Iterate, 5));
        assert!(options_without_work(None, "command").unwrap().redact, "NULL options are the defaults");
        let e = options_without_work(Some(r#"{"timeout": 5}"#), "prompt").unwrap_err();
        assert!(e.message.contains("unknown field `timeout`"), "{}", e.message);
    }
}
