//! Stored callbacks (`agentstream_session_on` handlers, a run's `on_event`): a C function, its
//! `user_data` and an optional destructor, with the guarantees the header documents:
//!
//! * one call at a time per handler, and none after it was released: releasing waits for a call
//!   in flight on another thread to return;
//! * the destructor runs exactly once, after the last call: on the releasing thread, or, when a
//!   handler is released from inside its own call, on the delivering thread right after that
//!   call returns.

use std::cell::Cell;
use std::ffi::{c_char, c_void};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::decoder::{agentstream_event_cb, agentstream_free_cb};
use crate::error::{Result, null};

struct Callback {
    cb: unsafe extern "C" fn(*mut c_void, *const c_char, usize),
    user_data: *mut c_void,
    free_user_data: agentstream_free_cb,
}

impl Drop for Callback {
    fn drop(&mut self) {
        if let Some(free) = self.free_user_data {
            // SAFETY: ownership of user_data was given with this destructor; called once.
            unsafe { free(self.user_data) };
        }
    }
}

/// A registered callback.
pub(crate) struct Handler {
    slot: Mutex<Option<Callback>>,
    /// Released: no call starts any more.
    release_pending: AtomicBool,
    /// Released from inside its own call: the delivering thread destroys it when the call
    /// returns. Only then: a release from another thread destroys it on that thread (it waits
    /// for the call in flight), as the header promises.
    destroy_after_call: AtomicBool,
}

// SAFETY: the documented contract of every function taking a stored callback: `user_data` must
// be usable from any thread (runs deliver from their own thread); the library only passes it
// back to the caller's functions, one call at a time (the slot's mutex).
unsafe impl Send for Handler {}
// SAFETY: as above.
unsafe impl Sync for Handler {}

thread_local! {
    /// The handler whose callback this thread is running now (null when none).
    static CALLING: Cell<*const Handler> = const { Cell::new(std::ptr::null()) };
}

impl Handler {
    /// A handler for `cb` (NULL is `NULL_ARGUMENT`, reported as argument `arg`).
    pub fn new(
        cb: agentstream_event_cb,
        user_data: *mut c_void,
        free_user_data: agentstream_free_cb,
        arg: &str,
    ) -> Result<Handler> {
        let cb = cb.ok_or_else(|| null(arg))?;
        Ok(Handler {
            slot: Mutex::new(Some(Callback { cb, user_data, free_user_data })),
            release_pending: AtomicBool::new(false),
            destroy_after_call: AtomicBool::new(false),
        })
    }

    /// Call the handler with `payload` (the text, then a NUL byte: `payload.last() == Some(&0)`).
    /// Returns false when it is released (nothing was called).
    pub fn call_nul(&self, payload: &[u8]) -> bool {
        debug_assert_eq!(payload.last(), Some(&0));
        let called = {
            let guard = self.slot.lock().unwrap_or_else(|p| p.into_inner());
            match guard.as_ref() {
                Some(c) if !self.release_pending.load(Ordering::Acquire) => {
                    let previous = CALLING.with(|cur| cur.replace(self as *const Handler));
                    // SAFETY: the callback contract: it reads len bytes (plus the NUL) during
                    // the call and does not unwind.
                    unsafe { (c.cb)(c.user_data, payload.as_ptr().cast(), payload.len() - 1) };
                    CALLING.with(|cur| cur.set(previous));
                    true
                }
                _ => false,
            }
        };
        if self.destroy_after_call.load(Ordering::Acquire) {
            // Released from inside its own call: destroy now that the call has returned.
            self.take_and_destroy();
        }
        called
    }

    /// No call after this returns (except the one this thread is inside, if any); the
    /// destructor runs once the last call returned.
    pub fn release(&self) {
        let inside = CALLING.with(|cur| std::ptr::eq(cur.get(), self));
        if inside {
            self.destroy_after_call.store(true, Ordering::Release);
        }
        self.release_pending.store(true, Ordering::Release);
        if !inside {
            // Waits for a call in flight on another thread.
            self.take_and_destroy();
        }
    }

    /// Give `user_data` back to the caller (a call that took the handler failed): the
    /// destructor will not run, and the callback is never called.
    pub fn forget(&self) {
        if let Some(mut c) = self.slot.lock().unwrap_or_else(|p| p.into_inner()).take() {
            c.free_user_data = None;
        }
    }

    fn take_and_destroy(&self) {
        let taken = self.slot.lock().unwrap_or_else(|p| p.into_inner()).take();
        // The destructor runs outside the lock.
        drop(taken);
    }
}
