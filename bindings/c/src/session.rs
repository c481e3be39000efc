//! `agentstream_session`: one configured agent (the seed's `AgentConfig`), the handlers
//! registered with `on(...)`, and the runs and commands started from it (one at a time).

use std::ffi::{c_char, c_void};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agentstream_core::runner::{AgentConfig, Session};
use agentstream_core::{Agent, Channel};

use crate::callback::Handler;
use crate::decoder::{agentstream_event_cb, agentstream_free_cb};
use crate::error::{Error, Result, agentstream_status, boundary};
use crate::handles::{Table, not_live_message};
use crate::util::{out_arg, str_arg};

/// One configured agent plus its `on(...)` handlers; starts runs and commands, one at a time.
/// Opaque; create with `agentstream_session_new`, free with `agentstream_session_free`. Its
/// functions may be called from any thread. The handle is a checked number: a freed or foreign
/// handle is refused with `AGENTSTREAM_STATUS_INVALID_HANDLE`.
#[allow(non_camel_case_types)]
pub struct agentstream_session {
    _opaque: [u8; 0],
}

pub(crate) struct SessionObj {
    agent: Agent,
    state: Mutex<State>,
    handlers: Mutex<Vec<(Channel, Arc<Handler>)>>,
}

struct State {
    config: AgentConfig,
    /// The core session, created from `config` at the first run; given the new configuration
    /// when it changes between runs (`Session::reconfigured`).
    core: Option<Session>,
}

pub(crate) static SESSIONS: Table<SessionObj> = Table::new("agentstream_session");

impl SessionObj {
    /// The handlers of `channel`, in registration order (a snapshot).
    pub(crate) fn handlers(&self, channel: Channel) -> Vec<Arc<Handler>> {
        self.all_handlers().into_iter().filter(|(c, _)| *c == channel).map(|(_, h)| h).collect()
    }

    /// Every handler with its channel, in registration order (a snapshot taken when a run
    /// starts: handlers registered later are called from the next run on).
    pub(crate) fn all_handlers(&self) -> Vec<(Channel, Arc<Handler>)> {
        self.handlers.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The core session (created on first use from the current configuration).
    pub(crate) fn core(&self) -> Session {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let config = st.config.clone();
        st.core.get_or_insert_with(|| Session::new(config)).clone()
    }

    /// The core session if one exists (nothing was ever started otherwise).
    fn existing_core(&self) -> Option<Session> {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).core.clone()
    }

    /// Change the configuration (only while nothing runs).
    fn configure(&self, what: &str, change: impl FnOnce(&mut AgentConfig)) -> Result<()> {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(active) = st.core.as_ref().and_then(Session::active) {
            return Err(Error::new(
                agentstream_status::AlreadyRunning,
                format!("cannot change {what} while a run is active ({}); wait for it to finish", active.run_id()),
            ));
        }
        change(&mut st.config);
        // The same environment with the new configuration (no second `sandbox_ready`).
        if let Some(core) = st.core.take() {
            st.core = Some(core.reconfigured(st.config.clone()).map_err(Error::from)?);
        }
        Ok(())
    }
}

pub(crate) fn parse_channel(name: &str) -> Result<Channel> {
    name.parse::<Channel>().map_err(|e| Error::invalid(e.to_string()))
}

/// Create a session for `agent` (the names of `agentstream_decoder_new`) with the default
/// configuration: the harness's usual command on PATH, the current directory, the inherited
/// environment. Change it with the `agentstream_session_set_*` functions. `*out` is freed with
/// `agentstream_session_free`; NULL on failure. Errors: `NULL_ARGUMENT`, `INVALID_ARGUMENT`
/// (unknown agent; the message lists the valid names).
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
        let name = unsafe { str_arg(agent, "agent") }?;
        let agent = name.parse::<Agent>().map_err(|e| Error::invalid(e.to_string()))?;
        *out = SESSIONS.insert(SessionObj {
            agent,
            state: Mutex::new(State { config: AgentConfig::new(agent), core: None }),
            handlers: Mutex::new(Vec::new()),
        });
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
        Ok(s) => agent_name_ptr(s.agent),
        Err(_) => std::ptr::null(),
    })
    .unwrap_or(std::ptr::null())
}

fn agent_name_ptr(agent: Agent) -> *const c_char {
    // The core's registry holds every name NUL-terminated, for as long as the program runs.
    agent.c_name().as_ptr()
}

/// Shared body of the string setters: `value` NULL resets to the default.
///
/// # Safety
/// `value` NULL or NUL-terminated.
unsafe fn set_opt(
    session: *mut agentstream_session,
    value: *const c_char,
    what: &str,
    apply: impl FnOnce(&mut AgentConfig, Option<String>),
) -> agentstream_status {
    boundary(|| {
        let s = SESSIONS.get(session, "session")?;
        let value = if value.is_null() {
            None
        } else {
            // SAFETY: forwarded contract.
            Some(unsafe { str_arg(value, "value") }?.to_string())
        };
        s.configure(what, |c| apply(c, value))
    })
}

/// Set the harness executable (`bin`): a path, or a command name looked up on PATH. NULL
/// restores the default (the harness's usual command: `claude`, `codex`, …). Takes effect at
/// the next run. Errors: `NULL_ARGUMENT` (session), `INVALID_HANDLE`, `INVALID_ARGUMENT` (not
/// UTF-8), `ALREADY_RUNNING` (the configuration cannot change while a run is active).
///
/// # Safety
/// `bin` NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_set_bin(
    session: *mut agentstream_session,
    bin: *const c_char,
) -> agentstream_status {
    // SAFETY: forwarded contract.
    unsafe { set_opt(session, bin, "bin", |c, v| c.bin = v.map(PathBuf::from)) }
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
    unsafe { set_opt(session, cwd, "cwd", |c, v| c.cwd = v.map(PathBuf::from)) }
}

/// Set the model to ask the harness for (passed with the harness's own flag; NULL: the
/// harness's default). Errors as `agentstream_session_set_bin`.
///
/// # Safety
/// `model` NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_set_model(
    session: *mut agentstream_session,
    model: *const c_char,
) -> agentstream_status {
    // SAFETY: forwarded contract.
    unsafe { set_opt(session, model, "model", |c, v| c.model = v) }
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
    unsafe { set_opt(session, agent_id, "agent_id", |c, v| c.agent_id = v) }
}

/// Add (or replace) one environment variable of the harness, on top of the inherited
/// environment. `value` NULL removes a variable set earlier with this function. Errors as
/// `agentstream_session_set_bin`; `NULL_ARGUMENT` for a NULL or empty-named `name`.
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
        if name.is_empty() || name.contains('=') {
            return Err(Error::invalid(format!(
                "environment variable name {name:?} must be non-empty and contain no '='"
            )));
        }
        let value = if value.is_null() {
            None
        } else {
            // SAFETY: forwarded contract.
            Some(unsafe { str_arg(value, "value") }?.to_string())
        };
        s.configure("env", |c| {
            c.env.retain(|(k, _)| *k != name);
            if let Some(v) = value {
                c.env.push((name, v));
            }
        })
    })
}

/// Append one extra argument to the harness's command line (placed after the streaming flags
/// and before the prompt). Errors as `agentstream_session_set_bin`.
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
        s.configure("extra_args", |c| c.extra_args.push(arg))
    })
}

/// Register `cb` for `channel`, which must be one of `"content"`, `"lifecycle"`, `"stdout"`,
/// `"stderr"` (otherwise `INVALID_ARGUMENT`, and the message lists the four). During a run
/// started without `"iterate": true`, the handlers are called from the run's own thread, in
/// sequence order, one at a time (never concurrently), handlers of one channel in registration
/// order. A run uses the handlers registered when it started.
///
/// Payloads: `content` gets an `OutputEvent` as JSON, `lifecycle` a `LifecycleEvent` as JSON
/// (snake_case keys, as in the seed), `stdout`/`stderr` the raw text (UTF-8, not JSON-quoted;
/// one stdout line with its newline per call).
///
/// Ownership: on success the session owns `user_data` and calls `free_user_data(user_data)`
/// (if not NULL) exactly once, after the handler's last call: when the session is freed. On
/// failure nothing is taken: the caller still owns `user_data`. `user_data` must be usable
/// from any thread.
///
/// # Safety
/// `channel` NULL or NUL-terminated; `cb`/`free_user_data` valid functions or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_on(
    session: *mut agentstream_session,
    channel: *const c_char,
    cb: agentstream_event_cb,
    user_data: *mut c_void,
    free_user_data: agentstream_free_cb,
) -> agentstream_status {
    boundary(|| {
        let s = SESSIONS.get(session, "session")?;
        // SAFETY: forwarded contract.
        let channel = parse_channel(unsafe { str_arg(channel, "channel") }?)?;
        let handler = Arc::new(Handler::new(cb, user_data, free_user_data, "cb")?);
        s.handlers.lock().unwrap_or_else(|p| p.into_inner()).push((channel, handler));
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
    boundary(|| Ok(SESSIONS.get(session, "session")?.core().pause()?))
}

/// Resume a paused run (SIGCONT; lifecycle `sandbox_resume`). Errors as
/// `agentstream_session_pause`.
///
/// # Safety
/// None beyond passing any value: handles are checked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_resume(session: *mut agentstream_session) -> agentstream_status {
    boundary(|| Ok(SESSIONS.get(session, "session")?.core().resume()?))
}

/// Interrupt the active run: SIGTERM to its process group, SIGKILL after the run's grace
/// period; it ends `run_interrupted` with `reason` (NULL: "interrupted"). Errors as
/// `agentstream_session_pause`.
///
/// # Safety
/// `reason` NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_interrupt(
    session: *mut agentstream_session,
    reason: *const c_char,
) -> agentstream_status {
    boundary(|| {
        let s = SESSIONS.get(session, "session")?;
        let reason = if reason.is_null() {
            "interrupted"
        } else {
            // SAFETY: forwarded contract.
            unsafe { str_arg(reason, "reason") }?
        };
        Ok(s.core().interrupt(reason)?)
    })
}

/// Kill the active run at once (SIGKILL; lifecycle `sandbox_killed`, then the terminal
/// `run_interrupted`). Without an active run this does nothing and returns `OK`.
///
/// # Safety
/// None beyond passing any value: handles are checked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_kill(session: *mut agentstream_session) -> agentstream_status {
    boundary(|| {
        let s = SESSIONS.get(session, "session")?;
        match s.existing_core() {
            Some(core) => Ok(core.kill()?),
            None => Ok(()),
        }
    })
}

/// Free a session: kill its active run, if any (it ends `run_interrupted`; its run handle stays
/// valid until freed), and release every handler: no handler is called after this returns
/// (a call in flight on another thread is waited for), and each `free_user_data` runs exactly
/// once. Called from inside one of the session's own handlers, that handler's `user_data` is
/// destroyed right after it returns. NULL is a no-op, and so is a handle that is not live (a
/// second free: the last error then says so).
///
/// # Safety
/// None beyond passing any value: handles are checked.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_free(session: *mut agentstream_session) {
    let _ = boundary(|| {
        if session.is_null() {
            return Ok(());
        }
        let Some(s) = SESSIONS.remove(session) else {
            return Err(Error::new(
                agentstream_status::InvalidHandle,
                not_live_message("agentstream_session", session as usize),
            ));
        };
        let handlers = std::mem::take(&mut *s.handlers.lock().unwrap_or_else(|p| p.into_inner()));
        for (_, h) in &handlers {
            h.release();
        }
        if let Some(core) = s.existing_core() {
            let _ = core.kill();
        }
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
        parse_channel(unsafe { str_arg(name, "name") }?).map(|_| ())
    })
}
