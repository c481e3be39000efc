//! `NativeRun`: one started run of the core's bridge ([`Run`]) for JavaScript.
//!
//! Delivery model (the bridge's, the same for every binding): JavaScript PULLS.
//! `NativeRun.nextBatch(max)` returns a Promise of one JSON array string holding what is ready
//! (up to `max` deliveries and the bridge's byte bound: envelopes and hook events, in order), or
//! `null` once the stream is over; the wrapper `JSON.parse`s it and calls the handlers one at a
//! time, in order, before it asks for the next batch. No Rust thread ever calls into
//! JavaScript, the core's backpressure sees a reader exactly as fast as the handlers, and
//! nothing keeps Node's event loop alive except a pending promise: a run that is being read or
//! awaited (a `JsDeferred` holds a threadsafe function until it is settled).
//!
//! Which channels a run delivers, when its result is final, what dropping an unread run does
//! and how handler failures are counted are the bridge's rules; this module converts.
//!
//! When deliveries are ready the promise is settled at once; otherwise a task on the core's
//! runtime ([`runner::runtime`]) awaits the next batch ([`Run::pull_async`]: one wake-up per
//! batch, no wait to fill it). A panic in that task becomes a rejection (its `JoinHandle`
//! reports it), never a hang and never an abort.
//!
//! Shapes: envelopes in their wire form (`runId`, `sequence`, `channel`, `event`,
//! `coalesced`?) with the lifecycle event's keys camelCased (`sandboxId`); hook events flat
//! camelCase ([`HookEvent::to_flat_camel`](agentstream_core::HookEvent::to_flat_camel)); the run
//! result camelCased ([`camel_case_keys`]).

use std::future::Future;

use agentstream_core::Channel;
use agentstream_core::bridge::{BatchLimits, Delivery, HandlerError, Pulled, Run};
use agentstream_core::casing::camel_case_keys;
use agentstream_core::runner;
use agentstream_core::stream::Envelope;
use napi::bindgen_prelude::*;
use napi::{Env, JsDeferred};
use napi_derive::napi;

use crate::{Code, guard, internal, js_error};

type JsResult<T> = std::result::Result<T, String>;

pub(crate) fn to_camel_json<T: serde::Serialize>(value: &T) -> Result<String, Code> {
    let v = serde_json::to_value(value).map_err(internal)?;
    serde_json::to_string(&camel_case_keys(v)).map_err(internal)
}

/// Append one envelope in the TypeScript shape: the wire form, lifecycle keys camelCased.
pub(crate) fn write_envelope(out: &mut Vec<u8>, env: &Envelope) -> serde_json::Result<()> {
    if env.channel() == Channel::Lifecycle {
        let mut v = serde_json::to_value(env)?;
        if let Some(event) = v.get_mut("event") {
            *event = camel_case_keys(event.take());
        }
        serde_json::to_writer(out, &v)
    } else {
        serde_json::to_writer(out, env)
    }
}

/// A batch of deliveries as one JSON array: envelopes (they have `channel`) and hook events
/// (flat camelCase; they have `type` and no `channel`), in delivery order.
fn batch_json(batch: &[Delivery]) -> JsResult<String> {
    let mut out = Vec::with_capacity(batch.len() * 256);
    out.push(b'[');
    for (i, d) in batch.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match d {
            Delivery::Item(env) => write_envelope(&mut out, env),
            Delivery::Hook(hook) => serde_json::to_writer(&mut out, &hook.to_flat_camel()),
        }
        .map_err(|e| e.to_string())?;
    }
    out.push(b']');
    String::from_utf8(out).map_err(|e| e.to_string())
}

type Settle<T> = Box<dyn FnOnce(Env) -> napi::Result<T> + Send>;

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic payload".to_string())
}

/// Settle `deferred` with what `work` produces on the core's runtime; a panic in `work` (or an
/// `Err`) rejects it with an `INTERNAL` message instead.
fn settle_later<T, F>(deferred: JsDeferred<T, Settle<T>>, work: F)
where
    T: ToNapiValue + Send + 'static,
    F: Future<Output = JsResult<T>> + Send + 'static,
{
    let rt = runner::runtime();
    let task = rt.spawn(work);
    rt.spawn(async move {
        match task.await {
            Ok(Ok(value)) => deferred.resolve(Box::new(move |_| Ok(value))),
            Ok(Err(message)) => deferred.reject(napi::Error::from_reason(message)),
            Err(e) if e.is_panic() => {
                deferred.reject(napi::Error::from_reason(format!("panic: {}", panic_message(e.into_panic()))))
            }
            Err(e) => deferred.reject(napi::Error::from_reason(e.to_string())),
        }
    });
}

/// One started run: pull its deliveries, cancel it, read its result. Dropping the last
/// reference to a run that has a reader before its end cancels it (`reader_left`).
#[napi]
pub struct NativeRun {
    run: Run,
}

impl NativeRun {
    pub(crate) fn new(run: Run) -> Self {
        NativeRun { run }
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

    /// What is ready as a JSON array (up to `max` deliveries), as soon as at least one is;
    /// `null` once the stream is over (after the terminal item and its hook events).
    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn next_batch<'env>(&self, env: &'env Env, max: u32) -> napi::Result<Object<'env>> {
        let (deferred, promise) = env.create_deferred::<Option<String>, Settle<Option<String>>>()?;
        let limits = BatchLimits { max_events: (max as usize).max(1), ..BatchLimits::DEFAULT };
        let run = self.run.clone();
        let mut batch = Vec::new();
        // Ready now: settle at once, without a hop through the runtime.
        let ready = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run.try_pull(&mut batch, limits)));
        match ready {
            Ok(Pulled::Batch) => match batch_json(&batch) {
                Ok(json) => deferred.resolve(Box::new(move |_| Ok(Some(json)))),
                Err(e) => deferred.reject(napi::Error::from_reason(e)),
            },
            Ok(Pulled::End) => deferred.resolve(Box::new(|_| Ok(None))),
            Ok(Pulled::Timeout) => settle_later(deferred, async move {
                let mut batch = Vec::new();
                match run.pull_async(&mut batch, limits).await {
                    Pulled::End => Ok(None),
                    Pulled::Batch | Pulled::Timeout => batch_json(&batch).map(Some),
                }
            }),
            Err(p) => deferred.reject(napi::Error::from_reason(format!("panic: {}", panic_message(p)))),
        }
        Ok(promise)
    }

    /// Resolves once the run has ended for its reader (its terminal event was delivered; an
    /// await-only run: once it finished). Never reads the run itself.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn ended<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let (deferred, promise) = env.create_deferred::<(), Settle<()>>()?;
        let run = self.run.clone();
        settle_later(deferred, async move {
            run.handle().wait_ended_async().await;
            Ok(())
        });
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
            self.run.handle().reader_left();
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
    settle_later(deferred, async move {
        if !message.is_empty() {
            panic!("{message}");
        }
        Ok(String::new())
    });
    Ok(promise)
}
