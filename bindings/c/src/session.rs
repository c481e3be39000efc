//! `agentstream_session`: one configured agent and the handlers registered with `on(...)`.
//!
//! Phase 1 holds the agent and the handlers (the seed's `evolve.on(name, handler)` with the
//! four-names rule); running a harness (which will call the handlers, from a Rust thread) is
//! added with the core's process runner.

use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex};

use agentstream_core::{Agent, Channel};

use crate::decoder::{agentstream_event_cb, agentstream_free_cb};
use crate::error::{Error, Result, agentstream_status, boundary, boundary_void};
use crate::util::{out_arg, str_arg};

/// One configured agent plus its `on(...)` handlers. Opaque; create with
/// `agentstream_session_new`, free with `agentstream_session_free`. Its functions may be called
/// from any thread.
#[allow(non_camel_case_types)]
pub struct agentstream_session {
    agent: Agent,
    handlers: Mutex<Vec<(Channel, Arc<Handler>)>>,
}

/// A registered handler. The session owns `user_data` and destroys it exactly once when the
/// last reference goes (session freed, and any delivery in flight finished).
pub(crate) struct Handler {
    cb: unsafe extern "C" fn(*mut c_void, *const c_char, usize),
    user_data: *mut c_void,
    free_user_data: agentstream_free_cb,
}

// SAFETY: the documented contract of `agentstream_session_on`: user_data must be usable from
// any thread (handlers will be called from the runner's thread in phase 2).
unsafe impl Send for Handler {}
// SAFETY: as above; the library only passes the pointer back to the caller's functions.
unsafe impl Sync for Handler {}

impl Handler {
    /// Call the handler with one payload.
    pub(crate) fn call(&self, payload: &[u8]) {
        // The payload is NUL-terminated for C callers; copy only when it is not already.
        let mut owned;
        let bytes = if payload.last() == Some(&0) {
            payload
        } else {
            owned = Vec::with_capacity(payload.len() + 1);
            owned.extend_from_slice(payload);
            owned.push(0);
            &owned[..]
        };
        // SAFETY: the callback contract: it reads len bytes (plus the NUL) during the call.
        unsafe { (self.cb)(self.user_data, bytes.as_ptr().cast(), bytes.len() - 1) };
    }
}

impl Drop for Handler {
    fn drop(&mut self) {
        if let Some(free) = self.free_user_data {
            // SAFETY: ownership of user_data was given with this destructor.
            unsafe { free(self.user_data) };
        }
    }
}

impl agentstream_session {
    /// The handlers of `channel`, in registration order (a snapshot: the lock is not held
    /// while they run, so a handler may register another).
    pub(crate) fn handlers(&self, channel: Channel) -> Vec<Arc<Handler>> {
        let list = self.handlers.lock().unwrap_or_else(|p| p.into_inner());
        list.iter().filter(|(c, _)| *c == channel).map(|(_, h)| h.clone()).collect()
    }
}

pub(crate) fn parse_channel(name: &str) -> Result<Channel> {
    name.parse::<Channel>().map_err(|e| Error::invalid(e.to_string()))
}

/// Create a session for `agent` (the names of `agentstream_decoder_new`). `*out` is freed with
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
        *out = Box::into_raw(Box::new(agentstream_session { agent, handlers: Mutex::new(Vec::new()) }));
        Ok(())
    })
}

/// The session's agent name (e.g. `"claude"`): a static string, never freed; NULL for a NULL
/// session.
///
/// # Safety
/// `session` NULL or live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_agent(session: *const agentstream_session) -> *const c_char {
    // A plain catch_unwind rather than `boundary`: this must not reset the last error.
    std::panic::catch_unwind(|| {
        // SAFETY: live or NULL per the contract.
        match unsafe { session.as_ref() } {
            Some(s) => agent_name_ptr(s.agent),
            None => std::ptr::null(),
        }
    })
    .unwrap_or(std::ptr::null())
}

fn agent_name_ptr(agent: Agent) -> *const c_char {
    let s: &'static std::ffi::CStr = match agent {
        Agent::Claude => c"claude",
        Agent::Codex => c"codex",
        Agent::Gemini => c"gemini",
        Agent::Qwen => c"qwen",
        Agent::Kimi => c"kimi",
        Agent::Opencode => c"opencode",
        Agent::Droid => c"droid",
    };
    debug_assert_eq!(s.to_str().ok(), Some(agent.name()));
    s.as_ptr()
}

/// Register `cb` for `channel`, which must be one of `"content"`, `"lifecycle"`, `"stdout"`,
/// `"stderr"` (otherwise `INVALID_ARGUMENT`, and the message lists the four). Handlers of a
/// channel are called in registration order, one at a time, never concurrently for one run.
///
/// Payloads: `content` gets an `OutputEvent` as JSON, `lifecycle` a `LifecycleEvent` as JSON
/// (snake_case keys, as in the seed), `stdout`/`stderr` the raw text (UTF-8, not JSON-quoted).
///
/// Ownership: on success the session owns `user_data` and calls `free_user_data(user_data)`
/// (if not NULL) exactly once, when the session is freed. On failure nothing is taken: the
/// caller still owns `user_data`. `user_data` must be usable from any thread: handlers will be
/// called from the runner's thread.
///
/// # Safety
/// `session` NULL or live; `channel` NULL or NUL-terminated; `cb`/`free_user_data` valid
/// functions or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_on(
    session: *mut agentstream_session,
    channel: *const c_char,
    cb: agentstream_event_cb,
    user_data: *mut c_void,
    free_user_data: agentstream_free_cb,
) -> agentstream_status {
    boundary(|| {
        // SAFETY: live or NULL per the contract.
        let s = unsafe { session.as_ref() }.ok_or_else(|| Error::null("session"))?;
        // SAFETY: forwarded contract.
        let channel = parse_channel(unsafe { str_arg(channel, "channel") }?)?;
        let cb = cb.ok_or_else(|| Error::null("cb"))?;
        let handler = Arc::new(Handler { cb, user_data, free_user_data });
        s.handlers.lock().unwrap_or_else(|p| p.into_inner()).push((channel, handler));
        Ok(())
    })
}

/// Free a session and destroy every handler's `user_data` (see `agentstream_session_on`).
/// NULL is a no-op.
///
/// # Safety
/// `session` NULL or live; not used again afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn agentstream_session_free(session: *mut agentstream_session) {
    boundary_void(|| {
        if !session.is_null() {
            // SAFETY: created by Box::into_raw in agentstream_session_new.
            drop(unsafe { Box::from_raw(session) });
        }
    })
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
