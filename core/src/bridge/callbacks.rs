//! [`CallbackPump`]: the one adapter for languages that take deliveries as callbacks from a
//! thread of the library (the C ABI, and Go, C# and Java through it) rather than pulling them.
//! It is a reader like any other: a thread that pulls the run's batches and hands each
//! delivery, in order, one at a time, to the binding's sink (which marshals it and calls the
//! user's function).

use std::cell::Cell;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::run::{HandlerError, Pulled, Run};
use crate::runner::{BatchLimits, Delivery};

/// What the sink did with a delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dispatched {
    /// Every handler returned.
    Ok,
    /// Some handlers failed: each is counted on the run (and reported once per handler by the
    /// binding, if it can).
    Failed(Vec<HandlerError>),
}

struct Done {
    done: Mutex<bool>,
    cv: Condvar,
}

thread_local! {
    /// The pump whose thread this is (null elsewhere).
    static PUMPING: Cell<*const Done> = const { Cell::new(std::ptr::null()) };
}

/// A thread delivering one run to a sink. Dropping the pump does not stop it: the run's end
/// does (or cancelling the run).
pub struct CallbackPump {
    done: Arc<Done>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for CallbackPump {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallbackPump").field("done", &self.is_done()).finish()
    }
}

impl CallbackPump {
    /// Start a thread that pulls `run` to its end and hands every delivery to `sink`, in
    /// sequence order, one at a time. Failures the sink reports are counted on the run; a
    /// panic in the sink is counted as a failure of handler `u64::MAX` and the delivery goes on.
    pub fn start(run: Run, mut sink: impl FnMut(&Delivery) -> Dispatched + Send + 'static) -> std::io::Result<Self> {
        let done = Arc::new(Done { done: Mutex::new(false), cv: Condvar::new() });
        let thread_done = done.clone();
        let thread = std::thread::Builder::new().name("agentstream-callbacks".into()).spawn(move || {
            struct MarkDone(Arc<Done>);
            impl Drop for MarkDone {
                fn drop(&mut self) {
                    PUMPING.with(|p| p.set(std::ptr::null()));
                    *self.0.done.lock().unwrap_or_else(|p| p.into_inner()) = true;
                    self.0.cv.notify_all();
                }
            }
            PUMPING.with(|p| p.set(Arc::as_ptr(&thread_done)));
            let _mark = MarkDone(thread_done);
            let mut batch = Vec::new();
            loop {
                batch.clear();
                // A bounded wait, so a cancelled run whose end is near is noticed promptly.
                match run.pull(&mut batch, BatchLimits::DEFAULT, Some(Duration::from_millis(250))) {
                    Pulled::End => break,
                    Pulled::Timeout => continue,
                    Pulled::Batch => {}
                }
                for delivery in &batch {
                    let sequence = match delivery {
                        Delivery::Item(env) => env.sequence,
                        Delivery::Hook(h) => h.sequence,
                    };
                    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sink(delivery))) {
                        Ok(Dispatched::Ok) => {}
                        Ok(Dispatched::Failed(errors)) => {
                            for e in errors {
                                run.handler_failed(e);
                            }
                        }
                        Err(_) => {
                            run.handler_failed(HandlerError {
                                handler: u64::MAX,
                                channel: "internal".into(),
                                sequence,
                                message: "agentstream: delivering to the callbacks panicked (a bug: please report it)"
                                    .into(),
                            });
                        }
                    }
                }
            }
        })?;
        Ok(CallbackPump { done, thread: Mutex::new(Some(thread)) })
    }

    /// True when called from this pump's own thread (inside a callback): waiting for the pump
    /// there would wait for itself.
    pub fn on_this_thread(&self) -> bool {
        PUMPING.with(|p| std::ptr::eq(p.get(), Arc::as_ptr(&self.done)))
    }

    /// True when called from any pump's thread (inside some run's callback).
    pub fn on_a_pump_thread() -> bool {
        PUMPING.with(|p| !p.get().is_null())
    }

    /// Whether the last callback returned and the thread is ending.
    pub fn is_done(&self) -> bool {
        *self.done.done.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wait until the last callback returned (the run's end was delivered), up to `deadline`
    /// (forever when `None`); false when the deadline passed first. Returns false at once on
    /// the pump's own thread.
    pub fn wait_done(&self, deadline: Option<Instant>) -> bool {
        if self.on_this_thread() {
            return self.is_done();
        }
        let mut done = self.done.done.lock().unwrap_or_else(|p| p.into_inner());
        while !*done {
            let wait = match deadline {
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => left,
                    _ => return false,
                },
                None => Duration::from_secs(3600),
            };
            done = self.done.cv.wait_timeout(done, wait).unwrap_or_else(|p| p.into_inner()).0;
        }
        drop(done);
        self.join();
        true
    }

    /// Reclaim the finished thread (not from the thread itself).
    fn join(&self) {
        if self.on_this_thread() {
            return;
        }
        let thread = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(t) = thread {
            let _ = t.join();
        }
    }
}
