//! `agentstream_session`: the core's [`Client`] (the seed's `Evolve`) behind a checked handle —
//! one agent configuration, its subscriptions (with the C handler kept under each subscription
//! id), the harness conversation successive runs continue, and the controls. Starting runs is in
//! `run.rs`.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex, MutexGuard};

use agentstream_core::bridge::{AgentSpec, Client, Naming, SubscriptionId};
use agentstream_core::stream::SharedBudget;
use agentstream_core::{Agent, Channel};

use crate::budget::{BUDGETS, agentstream_budget};
use crate::callback::Handler;
use crate::decoder::{agentstream_event_cb, agentstream_free_cb};
use crate::error::{Error, ErrorKind, Result, agentstream_status, boundary, boundary_free, invalid};
use crate::handles::{Table, not_live_message};
use crate::util::{give_string, opt_str_arg, opt_text_arg, out_arg, put, reset_out, str_arg, to_json};

/// One configured agent, its subscriptions, and the runs started from it (one at a time): the
/// seed's `Evolve`. Opaque; create with `agentstream_session_new` or
/// `agentstream_session_new_json`, free with `agentstream_session_free`. Its functions may be
/// called from any thread. The handle is a checked number: a freed or foreign handle is refused
/// with `AGENTSTREAM_STATUS_INVALID_HANDLE`.
#[allow(non_camel_case_types)]
pub struct agentstream_session {
    _opaque: [u8; 0],
}

/// How validation messages spell option names (`agentstream_session_new_json`): as in the
/// JSON and C (`timeout_ms`), in camelCase (`timeoutMs`: Java, Kotlin, TypeScript) or in
/// PascalCase (`TimeoutMs`: Go, C#). A `uint32_t` in C.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum agentstream_naming {
    /// `timeout_ms` (C, the JSON form).
    Snake = 0,
    /// `timeoutMs`.
    Camel = 1,
    /// `TimeoutMs`.
    Pascal = 2,
}

pub(crate) struct SessionObj {
    pub(crate) client: Client,
    pub(crate) handlers: Arc<Handlers>,
    /// The byte allowance the session's runs share with other runs (`agentstream_session_set_budget`).
    budget: Mutex<Option<SharedBudget>>,
    /// Serializes the setters' read-modify-write of the configuration.
    configuring: Mutex<()>,
}

pub(crate) static SESSIONS: Table<SessionObj> = Table::new("agentstream_session");

/// The C handlers of a session, under their subscription ids. The core keeps the subscriptions
/// and their order (`Client::subscribers`); this only maps an id to the function to call. A
/// subscription without an entry here was made with `agentstream_session_subscribe` (the
/// caller pulls and dispatches itself).
#[derive(Default)]
pub(crate) struct Handlers {
    map: Mutex<BTreeMap<SubscriptionId, Arc<Handler>>>,
}

impl Handlers {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<SubscriptionId, Arc<Handler>>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The handlers of `ids`, in that order (ids without a C handler are skipped).
    pub(crate) fn of(&self, ids: &[SubscriptionId]) -> Vec<Arc<Handler>> {
        let map = self.lock();
        ids.iter().filter_map(|id| map.get(id).cloned()).collect()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    pub(crate) fn contains(&self, id: SubscriptionId) -> bool {
        self.lock().contains_key(&id)
    }

    /// Unregister `ids` and release their handlers (no call after this returns but the one this
    /// thread may be inside; each destructor runs once).
    fn release(&self, ids: &[SubscriptionId]) {
        let removed: Vec<_> = {
            let mut map = self.lock();
            ids.iter().filter_map(|id| map.remove(id)).collect()
        };
        for h in removed {
            h.release();
        }
    }

    fn release_all(&self) {
        let all = std::mem::take(&mut *self.lock());
        for h in all.into_values() {
            h.release();
        }
    }
}

impl SessionObj {
    fn new(client: Client) -> SessionObj {
        SessionObj {
            client,
            handlers: Arc::new(Handlers::default()),
            budget: Mutex::new(None),
            configuring: Mutex::new(()),
        }
    }

    pub(crate) fn budget(&self) -> Option<SharedBudget> {
        self.budget.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Subscriptions without a C handler (made with `agentstream_session_subscribe`).
    pub(crate) fn bare_subscriptions(&self) -> Vec<SubscriptionId> {
        Channel::ALL
            .into_iter()
            .flat_map(|c| self.client.subscribers(c))
            .filter(|id| !self.handlers.contains(*id))
            .collect()
    }

    /// Change the configuration through the core (`Client::configure`: validated, refused with
    /// `ALREADY_RUNNING` while a run is active).
    fn reconfigure(&self, change: impl FnOnce(&mut AgentSpec)) -> Result<()> {
        let _one_at_a_time = self.configuring.lock().unwrap_or_else(|p| p.into_inner());
        let mut spec = self.client.spec();
        change(&mut spec);
        self.client.configure(spec)
    }
}

fn insert(client: Client) -> *mut agentstream_session {
    SESSIONS.insert(SessionObj::new(client))
}

/// Create a session for `agent` (`"claude"`, `"codex"`, `"gemini"`, `"qwen"`, `"kimi"`,
/// `"opencode"`, `"droid"`) with the default configuration: the harness's usual command on
/// PATH, the current directory, the inherited environment. Change it with the
/// `agentstream_session_set_*` functions, or create the session from a whole configuration with
/// `agentstream_session_new_json`. `*out` is freed with `agentstream_session_free`; NULL on
/// failure. Errors: `NULL_ARGUMENT`, `INVALID_ARGUMENT` (unknown agent; the message lists the
/// valid names).
///
/// # Safety
/// `agent` NULL or a NUL-terminated string; `out` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_new(
    agent: *const c_char,
    out: *mut *mut agentstream_session,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out, "out") }?;
        *out = std::ptr::null_mut();
        // SAFETY: forwarded contract.
        let agent = unsafe { str_arg(agent, "agent") }?;
        *out = insert(Client::new(AgentSpec::new(agent), Naming::Snake)?);
        Ok(())
    })
}

/// Create a session from a whole agent configuration (the seed's `AgentConfig`) as JSON:
/// `{"type": "claude", "agent_id"?, "bin"?, "model"?, "extra_args"?: [...], "cwd"?, "env"?:
/// {"NAME": "value"}}` — `type` is the agent (as for `agentstream_session_new`), `agent_id` the
/// id hook events report (default: the agent's name), `bin` the harness executable (a path or a
/// command on PATH), `model` the model to ask for, `extra_args` arguments after the streaming
/// flags and before the prompt, `cwd` the working directory, `env` variables added to the
/// inherited environment. Unknown keys are refused. The one-call constructor for hosts that
/// build JSON (Go, C#, Java).
///
/// `naming` (an `agentstream_naming` value, taken as a plain integer so any number is safe to
/// pass) chooses how validation messages spell option names, for this session's configuration
/// and its runs' options (`AGENTSTREAM_NAMING_SNAKE`: `timeout_ms`, as in the JSON). Errors: `NULL_ARGUMENT`, `INVALID_ARGUMENT` (bad JSON, an unknown key, an unknown
/// agent, an empty value: the message names the field), with `*out` NULL.
///
/// # Safety
/// `config_json` NULL or NUL-terminated; `out` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_new_json(
    config_json: *const c_char,
    naming: u32,
    out: *mut *mut agentstream_session,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out, "out") }?;
        *out = std::ptr::null_mut();
        // SAFETY: forwarded contract.
        let spec = AgentSpec::from_json(unsafe { str_arg(config_json, "config_json") }?)?;
        let naming = match naming {
            0 => Naming::Snake,
            1 => Naming::Camel,
            2 => Naming::Pascal,
            other => return Err(invalid(format!("naming must be 0 (snake), 1 (camel) or 2 (pascal), got {other}"))),
        };
        *out = insert(Client::new(spec, naming)?);
        Ok(())
    })
}

/// The session's agent name (e.g. `"claude"`): a static string, never freed; NULL for a handle
/// that is not a live session.
///
/// # Safety
/// None beyond passing any value: handles are checked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_agent(session: *const agentstream_session) -> *const c_char {
    // A plain catch_unwind rather than `boundary`: this must not reset the last error.
    std::panic::catch_unwind(|| match SESSIONS.get(session, "session") {
        Ok(s) => agent_name_ptr(s.client.agent()),
        Err(_) => std::ptr::null(),
    })
    .unwrap_or(std::ptr::null())
}

/// The agent's name as a static C string (the core's registry keeps it NUL-terminated).
fn agent_name_ptr(agent: Agent) -> *const c_char {
    // The core's registry holds every name NUL-terminated, for as long as the program runs.
    agent.c_name().as_ptr()
}

/// Shared body of the string setters: `value` NULL restores the default.
///
/// # Safety
/// `value` NULL or NUL-terminated.
unsafe fn set_opt(
    session: *mut agentstream_session,
    value: *const c_char,
    apply: impl FnOnce(&mut AgentSpec, Option<String>),
) -> agentstream_status {
    boundary(|| {
        let s = SESSIONS.get(session, "session")?;
        // SAFETY: forwarded contract.
        let value = unsafe { opt_str_arg(value, "value") }?.map(str::to_string);
        s.reconfigure(|spec| apply(spec, value))
    })
}

/// Set the harness executable (`bin`): a path, or a command name looked up on PATH. NULL
/// restores the default (the harness's usual command: `claude`, `codex`, …). Takes effect at
/// the next run; the session's environment stays (no second `sandbox_ready`). Errors:
/// `NULL_ARGUMENT` (session), `INVALID_HANDLE`, `INVALID_ARGUMENT` (empty, not UTF-8),
/// `ALREADY_RUNNING` (the configuration cannot change while a run is active).
///
/// # Safety
/// `bin` NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_set_bin(
    session: *mut agentstream_session,
    bin: *const c_char,
) -> agentstream_status {
    // SAFETY: forwarded contract.
    unsafe { set_opt(session, bin, |spec, v| spec.bin = v) }
}

/// Set the harness's working directory (NULL: the current directory of the process). Errors
/// as `agentstream_session_set_bin`.
///
/// # Safety
/// `cwd` NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_set_cwd(
    session: *mut agentstream_session,
    cwd: *const c_char,
) -> agentstream_status {
    // SAFETY: forwarded contract.
    unsafe { set_opt(session, cwd, |spec, v| spec.cwd = v) }
}

/// Set the model to ask the harness for (passed with the harness's own flag; NULL: the
/// harness's default). A run's `"model"` overrides it for that run. Errors as
/// `agentstream_session_set_bin`.
///
/// # Safety
/// `model` NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_set_model(
    session: *mut agentstream_session,
    model: *const c_char,
) -> agentstream_status {
    // SAFETY: forwarded contract.
    unsafe { set_opt(session, model, |spec, v| spec.model = v) }
}

/// Set the agent id reported in hook events (`agent_id`; NULL: the agent's name). Errors as
/// `agentstream_session_set_bin`.
///
/// # Safety
/// `agent_id` NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_set_agent_id(
    session: *mut agentstream_session,
    agent_id: *const c_char,
) -> agentstream_status {
    // SAFETY: forwarded contract.
    unsafe { set_opt(session, agent_id, |spec, v| spec.agent_id = v) }
}

/// Add (or replace) one environment variable of the harness, on top of the inherited
/// environment. `value` NULL removes a variable set earlier. Errors as
/// `agentstream_session_set_bin`; `NULL_ARGUMENT` for a NULL `name`, `INVALID_ARGUMENT` for a
/// name that is empty or contains `=`.
///
/// # Safety
/// `name` and `value` NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_set_env(
    session: *mut agentstream_session,
    name: *const c_char,
    value: *const c_char,
) -> agentstream_status {
    boundary(|| {
        let s = SESSIONS.get(session, "session")?;
        // SAFETY: forwarded contract.
        let name = unsafe { str_arg(name, "name") }?.to_string();
        // SAFETY: forwarded contract.
        let value = unsafe { opt_str_arg(value, "value") }?.map(str::to_string);
        s.reconfigure(|spec| match value {
            Some(v) => {
                spec.env.insert(name, v);
            }
            None => {
                spec.env.remove(&name);
            }
        })
    })
}

/// Append one extra argument to the harness's command line (after the streaming flags, before
/// the prompt). Errors as `agentstream_session_set_bin`.
///
/// # Safety
/// `arg` NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_add_arg(
    session: *mut agentstream_session,
    arg: *const c_char,
) -> agentstream_status {
    boundary(|| {
        let s = SESSIONS.get(session, "session")?;
        // SAFETY: forwarded contract.
        let arg = unsafe { str_arg(arg, "arg") }?.to_string();
        s.reconfigure(|spec| spec.extra_args.push(arg))
    })
}

/// Register `cb` for `channel`, which must be one of `"content"`, `"lifecycle"`, `"stdout"`,
/// `"stderr"` (otherwise `INVALID_ARGUMENT`, and the message lists the four). In a run
/// delivered to callbacks (see `agentstream_session_start`), the handlers are called from the
/// run's own thread, in sequence order, one at a time (never concurrently), the handlers of one
/// channel in registration order. A handler registered while a run delivered to callbacks is
/// going on gets the rest of that run; a run that started with no handler and no `on_event` is
/// await-only, and a run the caller pulls is not delivered to callbacks: neither calls a
/// handler registered later (the next run does).
///
/// Payloads: `content` gets an `OutputEvent` as JSON, `lifecycle` a `LifecycleEvent` as JSON
/// (snake_case keys, as in the seed), `stdout`/`stderr` the raw text (UTF-8, not JSON-quoted;
/// `len` bytes, which may hold a NUL if the process printed one: use `len`, not `strlen`).
/// A stdout call carries one line with its newline — or several, when the handlers fell behind
/// and the buffer coalesced them (as a puller sees with `"coalesced"`). The handlers are the
/// run's reader: a handler that blocks longer than `limits.stall_ms` (30 s by default) while
/// output waits gets the run cancelled as stalled (`"cancel_kind": "stalled"`); raise the limit
/// for handlers that wait on people.
///
/// `*out_id` (optional: NULL) receives the subscription id, for `agentstream_session_off_id`.
///
/// Ownership: on success the session owns `user_data` and calls `free_user_data(user_data)`
/// (if not NULL) exactly once, after the handler's last call: when the handler is removed
/// (`agentstream_session_off`, `_off_id`) or the session is freed. On failure nothing is taken:
/// the caller still owns `user_data`. `user_data` must be usable from any thread.
///
/// # Safety
/// `channel` NULL or NUL-terminated; `cb`/`free_user_data` valid functions or NULL; `out_id`
/// NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_on(
    session: *mut agentstream_session,
    channel: *const c_char,
    cb: agentstream_event_cb,
    user_data: *mut c_void,
    free_user_data: agentstream_free_cb,
    out_id: *mut u64,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        unsafe { put(out_id, 0) };
        let s = SESSIONS.get(session, "session")?;
        // SAFETY: forwarded contract.
        let channel = unsafe { str_arg(channel, "channel") }?;
        let handler = Arc::new(Handler::new(cb, user_data, free_user_data, "cb")?);
        let id = match s.client.on(channel) {
            Ok(id) => id,
            Err(e) => {
                handler.forget(); // the caller keeps user_data
                return Err(e);
            }
        };
        s.handlers.lock().insert(id, handler);
        // SAFETY: forwarded contract.
        unsafe { put(out_id, id) };
        Ok(())
    })
}

/// Subscribe to `channel` WITHOUT a C handler: for hosts that pull the run and dispatch to their
/// own handlers (the Go binding does; C#, Java). The run then buffers the channel, and the
/// caller pulls it (`agentstream_run_next*`), calling its handlers in subscription-id order and
/// reporting their failures with `agentstream_run_handler_failed`. `*out_id` (required)
/// receives the subscription id. Names as `agentstream_session_on`.
///
/// A session's runs are either delivered to C callbacks or pulled: a run cannot start while the
/// session has both handlers from `agentstream_session_on` and subscriptions from this
/// function (`INVALID_ARGUMENT`).
///
/// # Safety
/// `channel` NULL or NUL-terminated; `out_id` valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_subscribe(
    session: *mut agentstream_session,
    channel: *const c_char,
    out_id: *mut u64,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out_id, "out_id") }?;
        *out = 0;
        let s = SESSIONS.get(session, "session")?;
        // SAFETY: forwarded contract.
        *out = s.client.on(unsafe { str_arg(channel, "channel") }?)?;
        Ok(())
    })
}

/// Remove every subscription of `channel` (the seed's `off(name)`): their handlers are not
/// called after this returns (a call in flight on another thread is waited for; removed from
/// inside its own call, that handler's `user_data` is destroyed right after it returns).
/// `*out_removed` (optional) receives how many were removed (0 is not an error). An unknown
/// channel name is `INVALID_ARGUMENT`, as for `agentstream_session_on` (the message lists the
/// four).
///
/// # Safety
/// `channel` NULL or NUL-terminated; `out_removed` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_off(
    session: *mut agentstream_session,
    channel: *const c_char,
    out_removed: *mut usize,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        unsafe { put(out_removed, 0) };
        let s = SESSIONS.get(session, "session")?;
        // SAFETY: forwarded contract.
        let ids = s.client.off(unsafe { str_arg(channel, "channel") }?)?;
        s.handlers.release(&ids);
        // SAFETY: forwarded contract.
        unsafe { put(out_removed, ids.len()) };
        Ok(())
    })
}

/// Remove one subscription by its id (from `agentstream_session_on` or `_subscribe`), as
/// `agentstream_session_off` does. `*out_removed` (optional) is false when there was no such
/// subscription (not an error).
///
/// # Safety
/// `out_removed` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_off_id(
    session: *mut agentstream_session,
    id: u64,
    out_removed: *mut bool,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        unsafe { put(out_removed, false) };
        let s = SESSIONS.get(session, "session")?;
        let removed = s.client.off_id(id);
        s.handlers.release(&[id]);
        // SAFETY: forwarded contract.
        unsafe { put(out_removed, removed) };
        Ok(())
    })
}

/// The session's status as an owned JSON object (the seed's `status()`): `{"agent": "claude",
/// "sandbox": "ready"|"running"|"paused"|"stopped"|…, "agent_state":
/// "idle"|"running"|"interrupted"|"error", "has_run": bool, "active_run_id"?: "run_…" (while a
/// run is going on), "session_id"?: the harness session the next run continues, "last_status"?:
/// "completed"|"failed"|"cancelled" (how the last run ended)}`. Free with
/// `agentstream_string_free`.
///
/// # Safety
/// `out_json` valid for a write; `out_len` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_status_json(
    session: *mut agentstream_session,
    out_json: *mut *mut c_char,
    out_len: *mut usize,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        unsafe { reset_out(out_json, out_len) };
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out_json, "out_json") }?;
        let s = SESSIONS.get(session, "session")?;
        // SAFETY: forwarded contract.
        unsafe { give_string(to_json(&s.client.status())?, out, out_len) }
    })
}

/// The harness session (conversation) the next run continues, as an owned string in `*out`
/// (free with `agentstream_string_free`): the session id the last run reported, or the one set
/// with `agentstream_session_set_session_id`. `*out` is NULL (and the status OK) when there is
/// none: the next run starts a new conversation.
///
/// # Safety
/// `out` valid for a write; `out_len` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_session_id(
    session: *mut agentstream_session,
    out: *mut *mut c_char,
    out_len: *mut usize,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        unsafe { reset_out(out, out_len) };
        // SAFETY: forwarded contract.
        let out = unsafe { out_arg(out, "out") }?;
        let s = SESSIONS.get(session, "session")?;
        match s.client.session_id() {
            // SAFETY: forwarded contract.
            Some(id) => unsafe { give_string(id.into_bytes(), out, out_len) },
            None => Ok(()),
        }
    })
}

/// Choose the harness session the next run continues: a session id a run reported (of this
/// session or another), or NULL to start a new conversation with the next run. Successive runs
/// continue the conversation by default; a run's `"resume"` option chooses another for that run.
/// Errors: `INVALID_ARGUMENT` (empty, or starting with `-`).
///
/// # Safety
/// `session_id` NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_set_session_id(
    session: *mut agentstream_session,
    session_id: *const c_char,
) -> agentstream_status {
    boundary(|| {
        let s = SESSIONS.get(session, "session")?;
        // SAFETY: forwarded contract.
        let id = unsafe { opt_str_arg(session_id, "session_id") }?;
        s.client.set_session_id(id.map(str::to_string))
    })
}

/// Let the session's runs share `budget` (a byte allowance for a number of concurrent runs,
/// `agentstream_budget_new`) with every other run using it: each run takes one of its permits
/// for its lifetime, and its byte budget is the budget's per-run share. Starting a run when
/// every permit is taken is `INVALID_ARGUMENT` (the message says so). NULL removes it. The
/// session keeps the budget alive; freeing the budget handle does not detach it.
///
/// # Safety
/// None beyond passing any value: handles are checked (NULL `budget` detaches).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_set_budget(
    session: *mut agentstream_session,
    budget: *const agentstream_budget,
) -> agentstream_status {
    boundary(|| {
        let s = SESSIONS.get(session, "session")?;
        let budget = if budget.is_null() { None } else { Some((*BUDGETS.get(budget, "budget")?).clone()) };
        *s.budget.lock().unwrap_or_else(|p| p.into_inner()) = budget;
        Ok(())
    })
}

/// Pause the active run or command: SIGSTOP to its process group; the run delivers a
/// `sandbox_pause` lifecycle event. Pausing a paused run does nothing. Errors: `NOT_RUNNING`
/// (nothing is active), `NULL_ARGUMENT`, `INVALID_HANDLE`.
///
/// # Safety
/// None beyond passing any value: handles are checked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_pause(session: *mut agentstream_session) -> agentstream_status {
    boundary(|| SESSIONS.get(session, "session")?.client.pause())
}

/// Resume a paused run (SIGCONT; lifecycle `sandbox_resume`). Errors as
/// `agentstream_session_pause`.
///
/// # Safety
/// None beyond passing any value: handles are checked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_resume(session: *mut agentstream_session) -> agentstream_status {
    boundary(|| SESSIONS.get(session, "session")?.client.resume())
}

/// Interrupt the active run: SIGTERM to its process group, SIGKILL after the run's grace
/// period; it ends `run_interrupted` with `reason` (NULL: "interrupted"; bytes that are not
/// UTF-8 are replaced with U+FFFD). `*out_interrupted`
/// (optional) says whether anything was interrupted: with no active run this does nothing and
/// is not an error.
///
/// # Safety
/// `reason` NULL or NUL-terminated; `out_interrupted` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_interrupt(
    session: *mut agentstream_session,
    reason: *const c_char,
    out_interrupted: *mut bool,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        unsafe { put(out_interrupted, false) };
        let s = SESSIONS.get(session, "session")?;
        // SAFETY: forwarded contract.
        let reason = unsafe { opt_text_arg(reason) };
        let interrupted = s.client.interrupt(reason.as_deref().unwrap_or("interrupted"));
        // SAFETY: forwarded contract.
        unsafe { put(out_interrupted, interrupted) };
        Ok(())
    })
}

/// Kill the active run at once (SIGKILL; lifecycle `sandbox_killed`, then the terminal
/// `run_interrupted`, or the run's own terminal when its process had already exited by itself).
/// `*out_killed` (optional) says whether a run was active: with none this does nothing and is
/// not an error.
///
/// # Safety
/// `out_killed` NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_kill(
    session: *mut agentstream_session,
    out_killed: *mut bool,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        unsafe { put(out_killed, false) };
        let killed = SESSIONS.get(session, "session")?.client.kill();
        // SAFETY: forwarded contract.
        unsafe { put(out_killed, killed) };
        Ok(())
    })
}

/// Free a session: kill its active run, if any (it ends `run_interrupted`; its run handle stays
/// valid until freed), and release every handler: no handler is called after this returns (a
/// call in flight on another thread is waited for), and each `free_user_data` runs exactly
/// once. Called from inside one of the session's own handlers, that handler's `user_data` is
/// destroyed right after it returns. NULL is a no-op, and so is a handle that is not live (a
/// second free: the last error then says so).
///
/// # Safety
/// None beyond passing any value: handles are checked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_free(session: *mut agentstream_session) {
    boundary_free(|| {
        if session.is_null() {
            return Ok(());
        }
        let Some(s) = SESSIONS.remove(session) else {
            return Err(Error::new(
                ErrorKind::InvalidHandle,
                not_live_message("agentstream_session", session as usize),
            ));
        };
        // Kill first: releasing the handlers waits for a callback in progress, and a callback
        // that takes long (or never returns) must not keep the harness alive.
        s.client.kill();
        s.handlers.release_all();
        Ok(())
    });
}

/// Check a channel name with the rule of `agentstream_session_on`: `OK` for `"content"`,
/// `"lifecycle"`, `"stdout"`, `"stderr"`; otherwise `INVALID_ARGUMENT` with a message listing
/// the four (`NULL_ARGUMENT` for NULL).
///
/// # Safety
/// `name` NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_channel_validate(name: *const c_char) -> agentstream_status {
    boundary(|| {
        // SAFETY: forwarded contract.
        unsafe { str_arg(name, "name") }?.parse::<Channel>()?;
        Ok(())
    })
}
