//! `agentstream_run`: one run or command started from a session, delivered either to callbacks
//! (the session's `on` handlers and the run's `on_event`, from the run's own thread) or to the
//! caller pulling it (`"iterate": true`: `agentstream_run_next`, `_next_batch_json`), and waited
//! for (`agentstream_run_wait`).

use std::cell::Cell;
use std::ffi::{c_char, c_void};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use agentstream_core::Channel;
use agentstream_core::runner::{
    CommandOptions, Delivery, Dispatcher, Next, RunHandle, RunOptions, RunResult, write_deliveries_json,
};
use agentstream_core::stream::{Backpressure, ChannelSet, StreamItem};
use serde::Deserialize;

use crate::callback::Handler;
use crate::decoder::{agentstream_event_cb, agentstream_free_cb};
use crate::error::{Error, Result, agentstream_status, boundary};
use crate::handles::{Table, not_live_message};
use crate::session::{SESSIONS, agentstream_session};
use crate::util::{give_string, json_options, out_arg, reset_out, str_arg, to_json};

/// One run or command. Opaque; returned by `agentstream_session_start_run` /
/// `agentstream_session_start_command`, freed with `agentstream_run_free`. Its functions may be
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
    /// "sequence","details"?}` (runs started with `"hooks": true`).
    Hook = 1,
    /// `*out_json` is a JSON array of tagged deliveries, `[{"item": …}, {"hook": …}, …]`, in
    /// order (`agentstream_run_next_batch_json`).
    Batch = 2,
    /// Nothing arrived within the timeout; the run goes on (`*out_json` is NULL, or `[]` for a
    /// batch).
    Timeout = 3,
    /// The stream is over: the terminal item (and its hooks) were delivered (`*out_json` is
    /// NULL, or `[]` for a batch).
    End = 4,
}

pub(crate) static RUNS: Table<RunObj> = Table::new("agentstream_run");

pub(crate) struct RunObj {
    handle: RunHandle,
    mode: Mode,
}

enum Mode {
    /// Nothing to deliver to: items are numbered and discarded, only the result is kept.
    AwaitOnly,
    /// The caller pulls.
    Pull,
    /// The run's own thread calls the handlers.
    Callbacks(Arc<Dispatch>),
}

/// The delivering thread of a callback-mode run.
struct Dispatch {
    on_event: Option<Arc<Handler>>,
    done: Mutex<bool>,
    done_cv: Condvar,
    thread: Mutex<Option<JoinHandle<()>>>,
}

thread_local! {
    /// The dispatch this thread delivers for (null elsewhere).
    static DISPATCHING: Cell<*const Dispatch> = const { Cell::new(std::ptr::null()) };
}

impl Dispatch {
    fn on_this_thread(self: &Arc<Self>) -> bool {
        DISPATCHING.with(|d| std::ptr::eq(d.get(), Arc::as_ptr(self)))
    }

    fn mark_done(&self) {
        *self.done.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.done_cv.notify_all();
    }

    fn is_done(&self) -> bool {
        *self.done.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wait until the last callback returned; false when `deadline` passed first.
    fn wait_done(&self, deadline: Option<Instant>) -> bool {
        let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        while !*done {
            let wait = match deadline {
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => left,
                    _ => return false,
                },
                None => Duration::from_secs(3600),
            };
            done = self.done_cv.wait_timeout(done, wait).unwrap_or_else(|p| p.into_inner()).0;
        }
        true
    }

    /// Reclaim the finished thread (never from the thread itself).
    fn join(self: &Arc<Self>) {
        if self.on_this_thread() {
            return;
        }
        let t = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(t) = t {
            let _ = t.join();
        }
    }
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

/// Delivers one run to its handlers from its own thread, through the core's [`Dispatcher`]
/// (sequence order, one at a time, handlers of a channel in registration order).
fn dispatch_loop(handle: RunHandle, handlers: Vec<(Channel, Arc<Handler>)>, dispatch: Arc<Dispatch>) {
    struct Done(Arc<Dispatch>);
    impl Drop for Done {
        fn drop(&mut self) {
            DISPATCHING.with(|d| d.set(std::ptr::null()));
            self.0.mark_done();
        }
    }
    DISPATCHING.with(|d| d.set(Arc::as_ptr(&dispatch)));
    let _done = Done(dispatch.clone());
    let mut dispatcher = Dispatcher::new();
    for (channel, h) in handlers {
        let mut buf = Vec::with_capacity(1024);
        let registered = dispatcher.on(channel.name(), move |item| {
            item_payload(item, &mut buf).map_err(|e| e.to_string())?;
            h.call_nul(&buf);
            Ok(())
        });
        debug_assert!(registered.is_ok(), "a channel name always parses");
    }
    if let Some(h) = dispatch.on_event.clone() {
        let mut buf = Vec::with_capacity(1024);
        dispatcher.on_event(move |hook| {
            buf.clear();
            serde_json::to_writer(&mut buf, hook).map_err(|e| e.to_string())?;
            buf.push(0);
            h.call_nul(&buf);
            Ok(())
        });
    }
    // C callbacks cannot fail (they must not unwind), so there are no handler failures to
    // report. A panic here (a bug) must not leave waiters hanging: `_done` marks the end.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| dispatcher.drive(&handle)));
}

/// The options JSON of `agentstream_session_start_run`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct RunOptionsJson {
    iterate: bool,
    hooks: Option<bool>,
    timeout_ms: Option<u64>,
    redact: Option<bool>,
    idempotent_tools: Vec<String>,
    background: bool,
    kill_grace_ms: Option<u64>,
    high_water: Option<usize>,
    byte_budget: Option<usize>,
    stall_seconds: Option<f64>,
}

/// The options JSON of `agentstream_session_start_command`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct CommandOptionsJson {
    iterate: bool,
    hooks: Option<bool>,
    timeout_ms: Option<u64>,
    background: bool,
    kill_grace_ms: Option<u64>,
    high_water: Option<usize>,
    byte_budget: Option<usize>,
    stall_seconds: Option<f64>,
    cwd: Option<String>,
    env: std::collections::BTreeMap<String, String>,
}

fn backpressure(high_water: Option<usize>, byte_budget: Option<usize>, stall_seconds: Option<f64>) -> Backpressure {
    let mut b = Backpressure::default();
    if let Some(v) = high_water {
        b = b.with_high_water(v);
    }
    if let Some(v) = byte_budget {
        b = b.with_byte_budget(v);
    }
    if let Some(v) = stall_seconds {
        b = b.with_stall_seconds(v);
    }
    b
}

/// How the run will be read, decided from the options and the registered callbacks.
struct Plan {
    mode_pull: bool,
    hooks: bool,
    attach_reader: bool,
    handlers: Vec<(Channel, Arc<Handler>)>,
    on_event: Option<Arc<Handler>>,
    /// What the reader reads: a pulling caller everything, callbacks only their channels (the
    /// core numbers the rest and does not buffer it).
    channels: ChannelSet,
}

fn plan(
    iterate: bool,
    hooks: Option<bool>,
    handlers: Vec<(Channel, Arc<Handler>)>,
    on_event: agentstream_event_cb,
    on_event_user_data: *mut c_void,
    on_event_free: agentstream_free_cb,
) -> Result<Plan> {
    if iterate {
        if on_event.is_some() {
            return Err(Error::invalid(
                "on_event must be NULL with \"iterate\": true: a pulled run interleaves its hook events with the \
                 items (set \"hooks\": true)",
            ));
        }
        let hooks = hooks.unwrap_or(false);
        return Ok(Plan {
            mode_pull: true,
            hooks,
            attach_reader: true,
            handlers: Vec::new(),
            on_event: None,
            channels: ChannelSet::ALL,
        });
    }
    if hooks == Some(true) && on_event.is_none() {
        return Err(Error::invalid(
            "\"hooks\": true needs an on_event callback (or \"iterate\": true to pull the hook events)",
        ));
    }
    let on_event = match on_event {
        Some(_) => Some(Arc::new(Handler::new(on_event, on_event_user_data, on_event_free, "on_event")?)),
        None => None,
    };
    let attach_reader = !handlers.is_empty() || on_event.is_some();
    let channels = ChannelSet::of(handlers.iter().map(|(channel, _)| *channel));
    Ok(Plan { mode_pull: false, hooks: on_event.is_some(), attach_reader, handlers, on_event, channels })
}

fn register(handle: RunHandle, plan: Plan) -> Result<*mut agentstream_run> {
    let mode = if plan.mode_pull {
        Mode::Pull
    } else if !plan.attach_reader {
        Mode::AwaitOnly
    } else {
        let dispatch = Arc::new(Dispatch {
            on_event: plan.on_event,
            done: Mutex::new(false),
            done_cv: Condvar::new(),
            thread: Mutex::new(None),
        });
        let (h, d) = (handle.clone(), dispatch.clone());
        let handlers = plan.handlers;
        let spawned = std::thread::Builder::new()
            .name(format!("agentstream-{}", handle.run_id()))
            .spawn(move || dispatch_loop(h, handlers, d));
        match spawned {
            Ok(t) => *dispatch.thread.lock().unwrap_or_else(|p| p.into_inner()) = Some(t),
            Err(e) => {
                handle.cancel("agentstream: could not start the delivering thread");
                if let Some(h) = dispatch.on_event.as_ref() {
                    h.forget();
                }
                return Err(Error::new(agentstream_status::Internal, format!("could not start a thread: {e}")));
            }
        }
        Mode::Callbacks(dispatch)
    };
    Ok(RUNS.insert(RunObj { handle, mode }))
}

/// Start a harness run of `prompt` on the session's agent. Returns once the process is spawned;
/// `*out_run` is the run, freed with `agentstream_run_free` (NULL on failure).
///
/// `options_json` (NULL for every default) is a JSON object with any of:
/// `"iterate"` (bool, default false: see below), `"hooks"` (bool: interleave hook events when
/// iterating), `"timeout_ms"` (stop the run after this long: it ends `run_interrupted`, hook
/// `run.stopped`), `"redact"` (bool, default true: mask secrets in tool inputs),
/// `"idempotent_tools"` (array of tool names safe to retry), `"background"` (bool),
/// `"kill_grace_ms"` (SIGTERM→SIGKILL grace on cancel, default 5000), `"high_water"`,
/// `"byte_budget"`, `"stall_seconds"` (the backpressure buffer: defaults 256 items, 8 MiB, 30 s).
/// An unknown key is `INVALID_ARGUMENT` (the message lists the known ones).
///
/// Delivery, one of:
/// * callbacks (default): the session's `on` handlers (registered before this call) and
///   `on_event` (hook events, canonical JSON; NULL for none) are called from the run's own
///   thread, one at a time, in sequence order; the last call returns before
///   `agentstream_run_wait` reports the result. `on_event_user_data` is owned by the run from
///   a successful call on, destroyed with `on_event_free` (if not NULL) exactly once, after its
///   last call (at `agentstream_run_free` at the latest); on failure the caller keeps it. Only
///   the channels that have a handler are buffered (the others are numbered and dropped, so
///   sequence numbers still count every item). With no handler and no `on_event`, nothing is
///   buffered: the run is only awaited.
/// * `"iterate": true`: the caller pulls with `agentstream_run_next` or
///   `agentstream_run_next_batch_json` (with backpressure: unread text deltas merge above the
///   high-water mark, and a reader that stops reading for `stall_seconds` cancels the run);
///   `on_event` must be NULL and the session's handlers are not called.
///
/// Errors: `NULL_ARGUMENT`, `INVALID_HANDLE`, `INVALID_ARGUMENT` (options), `HARNESS_NOT_FOUND`,
/// `SPAWN_FAILED`, `ALREADY_RUNNING` (one operation at a time per session).
///
/// # Safety
/// `prompt` NUL-terminated; `options_json` NULL or NUL-terminated; `on_event`/`on_event_free`
/// valid functions or NULL; `out_run` valid for a write.
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
    boundary(|| {
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out_run, "out_run") }?;
        *out = std::ptr::null_mut();
        let s = SESSIONS.get(session, "session")?;
        // SAFETY: forwarded contract.
        let prompt = unsafe { str_arg(prompt, "prompt") }?;
        // SAFETY: forwarded contract.
        let o: RunOptionsJson = unsafe { json_options(options_json, "options_json") }?;
        let plan = plan(o.iterate, o.hooks, s.all_handlers(), on_event, on_event_user_data, on_event_free)?;
        let mut opts = RunOptions::new(prompt);
        opts.timeout = o.timeout_ms.map(Duration::from_millis);
        opts.backpressure = backpressure(o.high_water, o.byte_budget, o.stall_seconds);
        if let Some(r) = o.redact {
            opts.redact = r;
        }
        opts.idempotent_tools = o.idempotent_tools.into_iter().collect();
        opts.hooks = plan.hooks;
        opts.attach_reader = plan.attach_reader;
        opts.channels = plan.channels;
        opts.background = o.background;
        if let Some(ms) = o.kill_grace_ms {
            opts.kill_grace = Duration::from_millis(ms);
        }
        let on_event_handler = plan.on_event.clone();
        let started = s.core().start_run(opts);
        let handle = match started {
            Ok(h) => h,
            Err(e) => {
                // The caller keeps on_event_user_data on failure: do not run its destructor.
                if let Some(h) = on_event_handler {
                    h.forget();
                }
                return Err(e.into());
            }
        };
        *out = register(handle, plan)?;
        Ok(())
    })
}

/// Start a command (`execute_command`): `argv[0..argc]` is the program and its arguments (not a
/// shell string: use `{"sh", "-c", "…"}` for one), run with the session's environment, streamed
/// like a run (stdout/stderr, lifecycle `command_start` … `command_complete`/`_failed`/
/// `_interrupted`; no content decoding). `options_json` takes the keys of
/// `agentstream_session_start_run` that apply (`iterate`, `hooks`, `timeout_ms`, `background`,
/// `kill_grace_ms`, `high_water`, `byte_budget`, `stall_seconds`) plus `"cwd"` (string) and
/// `"env"` (object of strings). Delivery, ownership and errors as
/// `agentstream_session_start_run`; `INVALID_ARGUMENT` for `argc == 0`.
///
/// # Safety
/// `argv` valid for `argc` NUL-terminated strings; the rest as `agentstream_session_start_run`.
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
    boundary(|| {
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out_run, "out_run") }?;
        *out = std::ptr::null_mut();
        let s = SESSIONS.get(session, "session")?;
        if argc == 0 {
            return Err(Error::invalid("execute_command needs a command: argc is 0"));
        }
        if argv.is_null() {
            return Err(Error::null("argv"));
        }
        let mut args = Vec::with_capacity(argc);
        for i in 0..argc {
            // SAFETY: argv is valid for argc pointers per the contract.
            let p = unsafe { *argv.add(i) };
            // SAFETY: forwarded contract.
            args.push(unsafe { str_arg(p, &format!("argv[{i}]")) }?.to_string());
        }
        // SAFETY: forwarded contract.
        let o: CommandOptionsJson = unsafe { json_options(options_json, "options_json") }?;
        let plan = plan(o.iterate, o.hooks, s.all_handlers(), on_event, on_event_user_data, on_event_free)?;
        let mut opts = CommandOptions::new(args);
        opts.cwd = o.cwd.map(Into::into);
        opts.env = o.env.into_iter().collect();
        opts.timeout = o.timeout_ms.map(Duration::from_millis);
        opts.backpressure = backpressure(o.high_water, o.byte_budget, o.stall_seconds);
        opts.hooks = plan.hooks;
        opts.attach_reader = plan.attach_reader;
        opts.channels = plan.channels;
        opts.background = o.background;
        if let Some(ms) = o.kill_grace_ms {
            opts.kill_grace = Duration::from_millis(ms);
        }
        let on_event_handler = plan.on_event.clone();
        let handle = match s.core().start_command(opts) {
            Ok(h) => h,
            Err(e) => {
                if let Some(h) = on_event_handler {
                    h.forget();
                }
                return Err(e.into());
            }
        };
        *out = register(handle, plan)?;
        Ok(())
    })
}

fn timeout_arg(timeout_ms: i64) -> Option<Duration> {
    (timeout_ms >= 0).then(|| Duration::from_millis(timeout_ms as u64))
}

impl RunObj {
    fn require_pull(&self) -> Result<()> {
        match self.mode {
            Mode::Pull => Ok(()),
            _ => Err(Error::invalid(
                "this run delivers to callbacks (or is awaited only): start it with \"iterate\": true to pull its items",
            )),
        }
    }

    fn wait(&self, timeout: Option<Duration>) -> Result<Option<RunResult>> {
        let deadline = timeout.map(|t| Instant::now() + t);
        if let Mode::Callbacks(d) = &self.mode {
            if d.on_this_thread() {
                return Err(Error::new(
                    agentstream_status::Busy,
                    "agentstream_run_wait was called from one of the run's own callbacks: it would wait for itself",
                ));
            }
        }
        let result = match deadline {
            None => Some(self.handle.wait_blocking()),
            Some(d) => self.handle.wait_timeout(d.saturating_duration_since(Instant::now())),
        };
        let Some(result) = result else { return Ok(None) };
        if let Mode::Callbacks(d) = &self.mode {
            if !d.wait_done(deadline) {
                return Ok(None);
            }
            d.join();
        }
        Ok(Some(result))
    }
}

/// Wait for the run's result, up to `timeout_ms` milliseconds (negative: as long as it takes;
/// 0: just look). On `OK`, `*out_json` is the `RunResult` as an owned JSON object
/// (`{"run_id", "state": "completed"|"failed"|"cancelled", "exit_code"?, "signal"?,
/// "session_id"?, "usage", "final_text"?, "error"?, "cancel_reason"?, "pressure", "stats",
/// "last_sequence", "diagnostics"?, "duration_ms"}`; free with `agentstream_string_free`); in
/// callback mode the run's last callback has returned by then. A run that failed or was
/// cancelled is still `OK` here: read `"state"`.
///
/// Errors: `NOT_READY` when the timeout passed first (wait again), `BUSY` when called from one
/// of the run's own callbacks, `NULL_ARGUMENT`, `INVALID_HANDLE`.
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
        let r = RUNS.get(run, "run")?;
        match r.wait(timeout_arg(timeout_ms))? {
            // SAFETY: forwarded contract.
            Some(result) => unsafe { give_string(to_json(&result)?, out, out_len) },
            None => Err(Error::new(
                agentstream_status::NotReady,
                format!("the run has not finished within {timeout_ms} ms; wait again"),
            )),
        }
    })
}

/// Pull the next delivery of a run started with `"iterate": true`, waiting up to `timeout_ms`
/// (negative: as long as it takes; 0: just look). `*out_kind` says what came
/// (`AGENTSTREAM_NEXT_ITEM` with an envelope in `*out_json`, `AGENTSTREAM_NEXT_HOOK` with a
/// hook event, `AGENTSTREAM_NEXT_TIMEOUT` or `AGENTSTREAM_NEXT_END` with `*out_json` NULL).
/// Owned JSON; free with `agentstream_string_free`. Deliveries come in sequence order, each
/// hook right after the item it was derived from; after the terminal item and its hooks, END.
///
/// Errors: `INVALID_ARGUMENT` (the run was not started with `"iterate": true`), `NULL_ARGUMENT`,
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
        let r = RUNS.get(run, "run")?;
        r.require_pull()?;
        match r.handle.next_blocking(timeout_arg(timeout_ms)) {
            Next::Item(Delivery::Item(env)) => {
                *kind = agentstream_next::Item;
                // SAFETY: forwarded contract.
                unsafe { give_string(to_json(&env)?, out, out_len) }
            }
            Next::Item(Delivery::Hook(hook)) => {
                *kind = agentstream_next::Hook;
                // SAFETY: forwarded contract.
                unsafe { give_string(to_json(&hook)?, out, out_len) }
            }
            Next::Timeout => {
                *kind = agentstream_next::Timeout;
                Ok(())
            }
            Next::End => Ok(()),
        }
    })
}

/// Pull up to `max` deliveries at once (`0` means 256) of a run started with
/// `"iterate": true`: waits up to `timeout_ms` for the first, then takes what is ready.
/// `*out_json` is always an owned JSON array (free with `agentstream_string_free`) of tagged
/// deliveries in order, `[{"item": <envelope>}, {"hook": <hook event>}, …]`, and `*out_kind`
/// is `AGENTSTREAM_NEXT_BATCH` (non-empty), `AGENTSTREAM_NEXT_TIMEOUT` or `AGENTSTREAM_NEXT_END`
/// (both with `[]`). One call per batch: the cheapest way for hosts whose calls into C cost
/// (Go, Java, C#). Errors as `agentstream_run_next`.
///
/// # Safety
/// As `agentstream_run_next`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_run_next_batch_json(
    run: *mut agentstream_run,
    max: usize,
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
        let r = RUNS.get(run, "run")?;
        r.require_pull()?;
        let max = if max == 0 { 256 } else { max };
        let batch = match r.handle.next_blocking(timeout_arg(timeout_ms)) {
            Next::Item(first) => {
                *kind = agentstream_next::Batch;
                let mut batch = Vec::with_capacity(max.min(256));
                batch.push(first);
                batch.extend(r.handle.try_next_batch(max - 1));
                batch
            }
            Next::Timeout => {
                *kind = agentstream_next::Timeout;
                Vec::new()
            }
            Next::End => Vec::new(),
        };
        let mut json = Vec::with_capacity(64 + batch.len() * 256);
        write_deliveries_json(&batch, &mut json);
        // SAFETY: forwarded contract.
        unsafe { give_string(json, out, out_len) }
    })
}

/// Cancel the run: SIGTERM to its process group, SIGKILL after the grace period; it ends
/// `run_interrupted` (hook `run.cancelled`) with `reason` (NULL: "no reason given"). The first
/// reason stands; cancelling again, or after the run finished, does nothing and returns `OK`.
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
        let reason = if reason.is_null() {
            "no reason given"
        } else {
            // SAFETY: forwarded contract.
            unsafe { str_arg(reason, "reason") }?
        };
        r.handle.cancel(reason);
        Ok(())
    })
}

/// The reader of a run started with `"iterate": true` leaves early (stops reading before the
/// end): the run is cancelled with reason `reader_left`, through the same path as every other
/// cancellation, and the handle stays valid for `agentstream_run_wait`. After the end (or for a
/// run that is not pulled) this does nothing. `agentstream_run_free` of an unfinished pulled
/// run does the same.
///
/// # Safety
/// None beyond passing any value: handles are checked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_run_leave(run: *mut agentstream_run) -> agentstream_status {
    boundary(|| {
        let r = RUNS.get(run, "run")?;
        if let Mode::Pull = r.mode {
            r.handle.reader_left();
        }
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
        unsafe { give_string(r.handle.run_id().as_bytes().to_vec(), out, out_len) }
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
        unsafe { give_string(to_json(&r.handle.pressure())?, out, out_len) }
    })
}

/// Free a run. A run that has not finished is cancelled ("the run handle was freed"; for a
/// pulled run: "reader left"). Its `on_event` is released: not called after this returns (a
/// call in flight on another thread is waited for; freed from inside its own `on_event`, the
/// destructor runs right after that call returns), and `on_event_free` runs exactly once. The
/// session's handlers stay registered and may still receive the rest of a cancelled run until
/// its terminal item. NULL is a no-op, and so is a handle that is not live (a second free: the
/// last error then says so).
///
/// # Safety
/// None beyond passing any value: handles are checked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_run_free(run: *mut agentstream_run) {
    let _ = boundary(|| {
        if run.is_null() {
            return Ok(());
        }
        let Some(r) = RUNS.remove(run) else {
            return Err(Error::new(
                agentstream_status::InvalidHandle,
                not_live_message("agentstream_run", run as usize),
            ));
        };
        match &r.mode {
            Mode::Pull => r.handle.reader_left(),
            Mode::AwaitOnly => {
                if !r.handle.is_finished() {
                    r.handle.cancel("the run handle was freed");
                }
            }
            Mode::Callbacks(d) => {
                if let Some(h) = d.on_event.as_ref() {
                    h.release();
                }
                if !r.handle.is_finished() {
                    r.handle.cancel("the run handle was freed");
                }
                if d.is_done() {
                    d.join();
                }
            }
        }
        Ok(())
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_reject_unknown_keys_with_the_known_ones_listed() {
        let e = serde_json::from_str::<RunOptionsJson>(r#"{"iterate": true, "timeout": 5}"#).unwrap_err().to_string();
        assert!(e.contains("timeout_ms") && e.contains("iterate"), "{e}");
        let o: RunOptionsJson = serde_json::from_str(r#"{"hooks": true, "high_water": 4}"#).unwrap();
        assert_eq!((o.hooks, o.high_water, o.iterate), (Some(true), Some(4), false));
        let c: CommandOptionsJson = serde_json::from_str(r#"{"env": {"A": "1"}, "cwd": "/tmp"}"#).unwrap();
        assert_eq!(c.env.get("A").map(String::as_str), Some("1"));
    }

    #[test]
    fn callbacks_read_only_their_channels_and_a_puller_reads_all() {
        unsafe extern "C" fn ignore(_: *mut c_void, _: *const c_char, _: usize) {}
        let handler = || Arc::new(Handler::new(Some(ignore), std::ptr::null_mut(), None, "cb").unwrap());
        let handlers = vec![(Channel::Content, handler()), (Channel::Stderr, handler()), (Channel::Content, handler())];
        let p = plan(false, None, handlers, None, std::ptr::null_mut(), None).unwrap();
        assert_eq!(p.channels, ChannelSet::of([Channel::Content, Channel::Stderr]));
        let p = plan(true, None, Vec::new(), None, std::ptr::null_mut(), None).unwrap();
        assert_eq!(p.channels, ChannelSet::ALL);
    }
}
