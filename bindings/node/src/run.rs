//! `NativeRun`: one started run of the core's bridge ([`Run`]) for JavaScript.
//!
//! Delivery model (the bridge's, the same for every binding): JavaScript PULLS.
//! `NativeRun.nextBatch(max)` returns a Promise of one tape ([`crate::tape`]: `[text, words]`)
//! holding what is ready (up to `max` deliveries and the bridge's byte bound: envelopes and hook
//! events, in order), `null` once the stream is over, or `undefined` when a wait woke with
//! nothing to take (the wrapper asks again); the wrapper reads it
//! (`node/src/tape.ts`) and calls the handlers one at a time, in order, before it asks for the
//! next batch. No Rust thread ever calls into
//! JavaScript, the core's backpressure sees a reader exactly as fast as the handlers, and
//! nothing keeps Node's event loop alive except a pending promise: a run that is being read or
//! awaited (a `JsDeferred` holds a threadsafe function until it is settled).
//!
//! Which channels a run delivers, when its result is final, what dropping an unread run does
//! and how handler failures are counted are the bridge's rules; this module converts.
//!
//! When deliveries are ready the promise is settled at once; otherwise the core's wait
//! ([`Run::pull_async`]) is polled once with a waker of this module's ([`BatchWaiter`]): the
//! run's reader thread, posting the next deliveries, wakes it, which settles the promise, and
//! the JavaScript thread takes the batch — one wake-up per batch, no wait to fill it, no task in
//! between. A panic while waiting becomes a rejection, never a hang and never an abort. (Other
//! waits, `ended()`, are tasks on the core's runtime, [`runner::runtime`].)
//!
//! Shapes: envelopes in their wire form (`runId`, `sequence`, `channel`, `event`,
//! `coalesced`?) with the lifecycle event's keys camelCased (`sandboxId`); hook events flat
//! camelCase ([`HookEvent::to_flat_camel`](agentstream_core::HookEvent::to_flat_camel)); the run
//! result camelCased ([`camel_case_keys`]).

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::task::Poll;

use agentstream_core::bridge::{BatchLimits, Delivery, HandlerError, Pulled, Run};
use agentstream_core::casing::camel_case_keys;
use agentstream_core::runner;
use napi::bindgen_prelude::*;
use napi::{Env, JsDeferred};
use napi_derive::napi;

use crate::tape::{JsTape, Tape};
use crate::{Code, guard, internal, js_error};

type JsResult<T> = std::result::Result<T, String>;

pub(crate) fn to_camel_json<T: serde::Serialize>(value: &T) -> Result<String, Code> {
    let v = serde_json::to_value(value).map_err(internal)?;
    serde_json::to_string(&camel_case_keys(v)).map_err(internal)
}

type Settle<T> = Box<dyn FnOnce(Env) -> napi::Result<T> + Send>;

/// A caught panic as the error a promise is rejected with (`panic: <its message>`).
fn panic_error(payload: Box<dyn std::any::Any + Send>) -> napi::Error {
    let message = agentstream_core::error::panic_text(payload.as_ref()).unwrap_or("unknown panic payload");
    napi::Error::from_reason(format!("panic: {message}"))
}

/// Settle `deferred` with what `work` produces on the core's runtime, made a JavaScript value by
/// `to_js` on the JavaScript thread; a panic in `work` (or an `Err`) rejects it with an
/// `INTERNAL` message instead.
fn settle_later<T, V, F>(deferred: JsDeferred<T, Settle<T>>, work: F, to_js: fn(Env, V) -> napi::Result<T>)
where
    T: ToNapiValue + 'static,
    V: Send + 'static,
    F: Future<Output = JsResult<V>> + Send + 'static,
{
    let rt = runner::runtime();
    let task = rt.spawn(work);
    rt.spawn(async move {
        match task.await {
            Ok(Ok(value)) => deferred.resolve(Box::new(move |env| to_js(env, value))),
            Ok(Err(message)) => deferred.reject(napi::Error::from_reason(message)),
            Err(e) if e.is_panic() => deferred.reject(panic_error(e.into_panic())),
            Err(e) => deferred.reject(napi::Error::from_reason(e.to_string())),
        }
    });
}

/// The value as it is (for `settle_later`).
fn same<T>(_env: Env, value: T) -> napi::Result<T> {
    Ok(value)
}

/// A run's tape, written by whichever thread pulled the batch and read into JavaScript values
/// on the JavaScript thread. One pull at a time per run (the wrapper awaits each), so it is
/// never contended; its buffers are reused batch after batch.
type SharedTape = Arc<Mutex<Tape>>;

fn write_tape(tape: &SharedTape, batch: &[Delivery]) -> JsResult<()> {
    let mut tape = tape.lock().unwrap_or_else(|p| p.into_inner());
    tape.write_deliveries(batch)
        .map_err(|e| format!("internal error in agentstream: a delivery did not serialize: {e}"))
}

fn js_tape(env: Env, tape: SharedTape) -> napi::Result<JsTape> {
    JsTape::new(&env, &tape.lock().unwrap_or_else(|p| p.into_inner()))
}

/// What `nextBatch` settles with: a tape, `null` at the end, `undefined` to call again.
enum NextBatch {
    Tape(JsTape),
    End,
    Again,
}

impl ToNapiValue for NextBatch {
    unsafe fn to_napi_value(env: napi::sys::napi_env, value: Self) -> napi::Result<napi::sys::napi_value> {
        // SAFETY: forwarded as napi-rs calls it (a live env on the JavaScript thread).
        unsafe {
            match value {
                NextBatch::Tape(tape) => JsTape::to_napi_value(env, tape),
                NextBatch::End => Null::to_napi_value(env, Null),
                NextBatch::Again => <()>::to_napi_value(env, ()),
            }
        }
    }
}

type Deferred = JsDeferred<NextBatch, Settle<NextBatch>>;

/// A pull's outcome as the promise's value (on the JavaScript thread): the batch as a tape,
/// `null` at the end, `undefined` when nothing was taken.
fn settled(env: Env, pulled: Pulled, batch: &[Delivery], tape: SharedTape) -> napi::Result<NextBatch> {
    match pulled {
        Pulled::Batch => {
            write_tape(&tape, batch).map_err(napi::Error::from_reason)?;
            js_tape(env, tape).map(NextBatch::Tape)
        }
        Pulled::End => Ok(NextBatch::End),
        Pulled::Timeout => Ok(NextBatch::Again),
    }
}

/// A pull that found nothing ready, waiting for the run's next deliveries without a task of
/// its own: the core's `pull_async` is polled once, on the JavaScript thread, with this as its
/// waker; the thread that posts the next deliveries (the run's reader) wakes it, which settles
/// the promise, and the JavaScript thread takes what is ready then. One wake-up from the reader
/// to JavaScript per batch, where a task on the core's runtime in between made two.
struct BatchWaiter {
    /// The promise and the pending pull, until the first wake-up takes them.
    waiting: Mutex<Option<(Deferred, PendingPull)>>,
    run: Run,
    tape: SharedTape,
    limits: BatchLimits,
}

/// The core's wait for the next batch, with what it took.
type PendingPull = std::pin::Pin<Box<dyn Future<Output = (Pulled, Vec<Delivery>)> + Send>>;

impl BatchWaiter {
    fn arm(deferred: Deferred, run: Run, tape: SharedTape, limits: BatchLimits) {
        let pull: PendingPull = {
            let run = run.clone();
            Box::pin(async move {
                let mut batch = Vec::new();
                let pulled = run.pull_async(&mut batch, limits).await;
                (pulled, batch)
            })
        };
        let waiter = Arc::new(BatchWaiter { waiting: Mutex::new(Some((deferred, pull))), run, tape, limits });
        let waker = std::task::Waker::from(waiter.clone());
        let mut cx = std::task::Context::from_waker(&waker);
        let polled = {
            // The core's waits recheck on a timer, which needs the runtime entered when polled.
            let _entered = runner::runtime().enter();
            let mut waiting = waiter.waiting.lock().unwrap_or_else(|p| p.into_inner());
            let Some((_, pull)) = waiting.as_mut() else { return }; // nothing wakes it before this poll
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pull.as_mut().poll(&mut cx)))
        };
        let ready = match polled {
            Ok(Poll::Pending) => return, // armed: the next post wakes it
            Ok(Poll::Ready(taken)) => Ok(taken),
            Err(panic) => Err(panic),
        };
        let Some((deferred, _)) = waiter.waiting.lock().unwrap_or_else(|p| p.into_inner()).take() else { return };
        match ready {
            // Deliveries arrived between the look and the wait: the pull took them; settle now.
            Ok((pulled, batch)) => {
                let tape = waiter.tape.clone();
                deferred.resolve(Box::new(move |env| settled(env, pulled, &batch, tape)));
            }
            Err(p) => deferred.reject(panic_error(p)),
        }
    }
}

impl std::task::Wake for BatchWaiter {
    fn wake(self: Arc<Self>) {
        let Some((deferred, pull)) = self.waiting.lock().unwrap_or_else(|p| p.into_inner()).take() else { return };
        let (run, tape, limits) = (self.run.clone(), self.tape.clone(), self.limits);
        deferred.resolve(Box::new(move |env| {
            // Never polled again: a pending pull has taken nothing.
            drop(pull);
            // A panic becomes a rejection here too, never an unwind into Node.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut batch = Vec::new();
                let pulled = run.try_pull(&mut batch, limits);
                settled(env, pulled, &batch, tape)
            }))
            .unwrap_or_else(|p| Err(panic_error(p)))
        }));
    }
}

/// One started run: pull its deliveries, cancel it, read its result. Dropping the last
/// reference to a run that has a reader before its end cancels it (`reader_left`).
#[napi]
pub struct NativeRun {
    run: Run,
    tape: SharedTape,
}

impl NativeRun {
    pub(crate) fn new(run: Run) -> Self {
        NativeRun { run, tape: SharedTape::default() }
    }
}

#[napi]
impl NativeRun {
    /// The run's id.
    #[napi(getter, catch_unwind)]
    pub fn run_id(&self) -> Result<String, Code> {
        guard(|| Ok(self.run.id().to_string()))
    }

    /// Whether anything reads the run (false: await-only, nothing is buffered).
    #[napi(getter, catch_unwind)]
    pub fn has_reader(&self) -> Result<bool, Code> {
        guard(|| Ok(self.run.has_reader()))
    }

    /// What is ready as a tape `[text, words]` (up to `max` deliveries), as soon as at least
    /// one is; `null` once the stream is over (after the terminal item and its hook events);
    /// `undefined` when a wait woke with nothing to take (call again).
    #[napi(ts_return_type = "Promise<[string, Uint32Array] | null | undefined>")]
    pub fn next_batch<'env>(&self, env: &'env Env, max: u32) -> napi::Result<Object<'env>> {
        let (deferred, promise) = env.create_deferred::<NextBatch, Settle<NextBatch>>()?;
        let limits = BatchLimits { max_events: (max as usize).max(1), ..BatchLimits::DEFAULT };
        let run = self.run.clone();
        let tape = self.tape.clone();
        let mut batch = Vec::new();
        // Ready now: settle at once.
        let ready = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let pulled = run.try_pull(&mut batch, limits);
            if pulled == Pulled::Batch {
                write_tape(&tape, &batch)?;
            }
            Ok::<_, String>(pulled)
        }));
        match ready {
            Ok(Ok(Pulled::Batch)) => deferred.resolve(Box::new(move |env| js_tape(env, tape).map(NextBatch::Tape))),
            Ok(Ok(Pulled::End)) => deferred.resolve(Box::new(|_| Ok(NextBatch::End))),
            Ok(Ok(Pulled::Timeout)) => BatchWaiter::arm(deferred, run, tape, limits),
            Ok(Err(e)) => deferred.reject(napi::Error::from_reason(e)),
            Err(p) => deferred.reject(panic_error(p)),
        }
        Ok(promise)
    }

    /// Resolves once the run has ended for its reader (its terminal event was delivered; an
    /// await-only run: once it finished). Never reads the run itself.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn ended<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let (deferred, promise) = env.create_deferred::<(), Settle<()>>()?;
        let run = self.run.clone();
        settle_later(
            deferred,
            async move {
                run.handle().wait_ended_async().await;
                Ok(())
            },
            same,
        );
        Ok(promise)
    }

    /// The result (camelCase JSON): `STILL_RUNNING` until the terminal event was delivered.
    #[napi(catch_unwind)]
    pub fn result_json(&self) -> Result<String, Code> {
        guard(|| to_camel_json(&self.run.result().map_err(js_error)?))
    }

    /// Cancel the run (the first reason stands); kind `caller`.
    #[napi(catch_unwind)]
    pub fn cancel(&self, reason: String) -> Result<(), Code> {
        guard(|| {
            self.run.cancel(&reason);
            Ok(())
        })
    }

    /// The reader left early (`break` out of `for await`): cancels through the one path, kind
    /// `reader_left`; what is still to come can be pulled.
    #[napi(catch_unwind)]
    pub fn reader_left(&self) -> Result<(), Code> {
        guard(|| {
            self.run.leave();
            Ok(())
        })
    }

    /// Live backpressure statistics (camelCase JSON).
    #[napi(catch_unwind)]
    pub fn pressure_json(&self) -> Result<String, Code> {
        guard(|| to_camel_json(&self.run.pressure()))
    }

    /// Record that handler `handler` (a subscription id, or 0 for `onEvent`) threw on the
    /// delivery `sequence` of `channel`: counted into the result's `handlerErrors`. True for
    /// that handler's FIRST failure on this run (the one to report with its stack).
    #[napi(catch_unwind)]
    pub fn handler_failed(&self, handler: i64, channel: String, sequence: i64, message: String) -> Result<bool, Code> {
        guard(|| {
            let error = HandlerError {
                handler: u64::try_from(handler).unwrap_or_default(),
                channel,
                sequence: u64::try_from(sequence).unwrap_or_default(),
                message,
            };
            Ok(self.run.handler_failed(error))
        })
    }
}

/// Test only: a promise whose task panics on the core's runtime, to prove the panic becomes a
/// rejection (never a hang or an abort).
// (Unit-test builds compile napi's registration out, leaving the function unused there.)
#[cfg_attr(test, allow(dead_code))]
#[napi(js_name = "__testPanicAsync", ts_return_type = "Promise<string>")]
pub fn test_panic_async<'env>(env: &'env Env, message: String) -> napi::Result<Object<'env>> {
    let (deferred, promise) = env.create_deferred::<String, Settle<String>>()?;
    settle_later(
        deferred,
        async move {
            if !message.is_empty() {
                panic!("{message}");
            }
            Ok(String::new())
        },
        same,
    );
    Ok(promise)
}
