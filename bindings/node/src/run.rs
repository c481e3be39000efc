//! The run API: the core's process runner ([`Session`], [`RunHandle`]) for JavaScript.
//!
//! Delivery model (the same for every binding): JavaScript PULLS. `NativeRun.nextBatch(max)`
//! returns a Promise of one JSON array string holding up to `max` deliveries (envelopes and hook
//! events, in order), or `null` once the stream is over; the wrapper `JSON.parse`s it and calls
//! the handlers one at a time, in order, before it asks for the next batch. So no Rust thread
//! ever calls into JavaScript, the core's backpressure sees a reader that is exactly as fast as
//! the handlers, and nothing keeps Node's event loop alive except a pending promise: a run that
//! is being read or awaited (a `JsDeferred` holds a threadsafe function until it is settled).
//!
//! When deliveries are ready the promise is settled at once; otherwise a task on the core's
//! runtime ([`runner::runtime`]) awaits the next one. A panic in that task becomes a rejection
//! (its `JoinHandle` reports it), never a hang and never an abort.
//!
//! Shapes: envelopes in their wire form (`runId`, `sequence`, `channel`, `event`,
//! `coalesced`?) with the lifecycle event's keys camelCased (`sandboxId`); hook events flat
//! camelCase ([`HookEvent::to_flat_camel`]); the run result camelCased
//! ([`camel_case_keys`]).

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use agentstream_core::Channel;
use agentstream_core::casing::camel_case_keys;
use agentstream_core::runner::{self, AgentConfig, CommandOptions, Delivery, RunHandle, RunOptions, Session};
use agentstream_core::stream::{Backpressure, ChannelSet, Envelope};
use napi::bindgen_prelude::*;
use napi::{Env, JsDeferred};
use napi_derive::napi;

use crate::{Code, guard, internal, invalid, js_error, parse_agent};

type JsResult<T> = std::result::Result<T, String>;

/// How to start a harness (the wrapper's `AgentConfig`, validated there).
#[napi(object)]
pub struct NativeAgentConfig {
    pub agent: String,
    pub agent_id: Option<String>,
    pub bin: Option<String>,
    pub model: Option<String>,
    pub extra_args: Option<Vec<String>>,
    pub cwd: Option<String>,
    pub env: Option<HashMap<String, String>>,
}

/// Options shared by runs and commands (milliseconds, and the core's backpressure marks).
#[napi(object)]
pub struct NativeRunOptions {
    /// The prompt (a harness run).
    pub prompt: Option<String>,
    /// The program and its arguments (a command run).
    pub argv: Option<Vec<String>>,
    /// Working directory of a command.
    pub cwd: Option<String>,
    /// Extra environment of a command.
    pub env: Option<HashMap<String, String>>,
    pub timeout_ms: Option<f64>,
    pub high_water: Option<f64>,
    pub byte_budget: Option<f64>,
    pub stall_seconds: Option<f64>,
    pub redact: Option<bool>,
    pub idempotent_tools: Option<Vec<String>>,
    /// Interleave hook events (`onEvent`).
    pub hooks: bool,
    /// Attach a reader (false = await-only).
    pub attach_reader: bool,
    pub background: Option<bool>,
    pub kill_grace_ms: Option<f64>,
}

/// `Number.MAX_SAFE_INTEGER`.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

fn count(value: f64, what: &str) -> Result<usize, Code> {
    if (0.0..=MAX_SAFE_INTEGER).contains(&value) && value.fract() == 0.0 {
        Ok(value as usize)
    } else {
        Err(invalid(format!("{what} must be a non-negative integer, got {value}")))
    }
}

fn millis(value: f64, what: &str) -> Result<Duration, Code> {
    if (0.0..MAX_SAFE_INTEGER).contains(&value) {
        Ok(Duration::from_secs_f64(value / 1000.0))
    } else {
        Err(invalid(format!("{what} must be a non-negative number of milliseconds, got {value}")))
    }
}

fn backpressure(o: &NativeRunOptions) -> Result<Backpressure, Code> {
    let mut b = Backpressure::default();
    if let Some(v) = o.high_water {
        b.high_water = count(v, "backpressure.highWater")?;
    }
    if let Some(v) = o.byte_budget {
        b.byte_budget = count(v, "backpressure.byteBudget")?;
    }
    if let Some(v) = o.stall_seconds {
        b.stall_seconds = v;
    }
    // The core's own rule (and message) for the marks.
    b.validate().map_err(|e| invalid(e.to_string()))?;
    Ok(b)
}

fn env_pairs(env: Option<HashMap<String, String>>) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = env.unwrap_or_default().into_iter().collect();
    pairs.sort();
    pairs
}

/// One agent configuration; one operation at a time (the core's [`Session`]).
#[napi]
pub struct NativeSession {
    inner: Session,
}

#[napi]
impl NativeSession {
    #[napi(constructor, catch_unwind)]
    pub fn new(config: NativeAgentConfig) -> Result<Self, Code> {
        guard(|| {
            let mut c = AgentConfig::new(parse_agent(&config.agent)?);
            c.agent_id = config.agent_id;
            c.bin = config.bin.map(PathBuf::from);
            c.model = config.model;
            c.extra_args = config.extra_args.unwrap_or_default();
            c.cwd = config.cwd.map(PathBuf::from);
            c.env = env_pairs(config.env);
            Ok(NativeSession { inner: Session::new(c) })
        })
    }

    /// Start a harness run with `options.prompt`. Throws `HARNESS_NOT_FOUND`,
    /// `ALREADY_RUNNING`, `SPAWN_FAILED` or `INVALID_ARGUMENT`.
    #[napi(catch_unwind)]
    pub fn start_run(&self, options: NativeRunOptions) -> Result<NativeRun, Code> {
        guard(|| {
            let prompt = options.prompt.clone().ok_or_else(|| invalid("run() needs a prompt"))?;
            let mut o = RunOptions::new(prompt);
            o.backpressure = backpressure(&options)?;
            if let Some(t) = options.timeout_ms {
                o.timeout = Some(millis(t, "timeout")?);
            }
            if let Some(g) = options.kill_grace_ms {
                o.kill_grace = millis(g, "killGrace")?;
            }
            o.redact = options.redact.unwrap_or(true);
            o.idempotent_tools = options.idempotent_tools.unwrap_or_default().into_iter().collect();
            o.hooks = options.hooks;
            o.attach_reader = options.attach_reader;
            o.background = options.background.unwrap_or(false);
            let handle = self.inner.start_run(o).map_err(js_error)?;
            Ok(NativeRun::new(handle))
        })
    }

    /// Start any command (`options.argv`) with the same streaming and lifecycle.
    #[napi(catch_unwind)]
    pub fn start_command(&self, options: NativeRunOptions) -> Result<NativeRun, Code> {
        guard(|| {
            let argv = options.argv.clone().ok_or_else(|| invalid("executeCommand() needs a command"))?;
            let mut o = CommandOptions::new(argv);
            o.backpressure = backpressure(&options)?;
            if let Some(t) = options.timeout_ms {
                o.timeout = Some(millis(t, "timeout")?);
            }
            if let Some(g) = options.kill_grace_ms {
                o.kill_grace = millis(g, "killGrace")?;
            }
            o.cwd = options.cwd.clone().map(PathBuf::from);
            o.env = env_pairs(options.env.clone());
            o.hooks = options.hooks;
            o.attach_reader = options.attach_reader;
            o.background = options.background.unwrap_or(false);
            let handle = self.inner.start_command(o).map_err(js_error)?;
            Ok(NativeRun::new(handle))
        })
    }

    /// Pause the active operation (SIGSTOP; lifecycle `sandbox_pause`). `NOT_RUNNING` without one.
    #[napi(catch_unwind)]
    pub fn pause(&self) -> Result<(), Code> {
        guard(|| self.inner.pause().map_err(js_error))
    }

    /// Resume a paused operation (SIGCONT; lifecycle `sandbox_resume`).
    #[napi(catch_unwind)]
    pub fn resume(&self) -> Result<(), Code> {
        guard(|| self.inner.resume().map_err(js_error))
    }

    /// Interrupt the active operation (SIGTERM, SIGKILL after the grace period).
    #[napi(catch_unwind)]
    pub fn interrupt(&self, reason: String) -> Result<(), Code> {
        guard(|| self.inner.interrupt(&reason).map_err(js_error))
    }

    /// Kill the active operation at once (lifecycle `sandbox_killed`); a no-op without one.
    #[napi(catch_unwind)]
    pub fn kill(&self) -> Result<(), Code> {
        guard(|| self.inner.kill().map_err(js_error))
    }

    /// The run id of the active operation, if any.
    #[napi(getter, catch_unwind)]
    pub fn active_run_id(&self) -> Result<Option<String>, Code> {
        guard(|| Ok(self.inner.active().map(|h| h.run_id().to_string())))
    }

    /// The `sandbox_ready` lifecycle event describing the session now (camelCase JSON).
    #[napi(catch_unwind)]
    pub fn ready_event_json(&self) -> Result<String, Code> {
        guard(|| to_camel_json(&self.inner.ready_event()))
    }
}

fn to_camel_json<T: serde::Serialize>(value: &T) -> Result<String, Code> {
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

/// Bits of the `mask` of `nextBatch`: which deliveries JavaScript wants serialized.
const MASK_CONTENT: u32 = 1;
const MASK_LIFECYCLE: u32 = 2;
const MASK_STDOUT: u32 = 4;
const MASK_STDERR: u32 = 8;
const MASK_HOOKS: u32 = 16;

/// The channels of `mask` (its hook bit is the binding's own: hook events are always derived).
fn mask_channels(mask: u32) -> ChannelSet {
    [(MASK_CONTENT, Channel::Content), (MASK_LIFECYCLE, Channel::Lifecycle), (MASK_STDOUT, Channel::Stdout)]
        .into_iter()
        .chain([(MASK_STDERR, Channel::Stderr)])
        .filter(|(bit, _)| mask & bit != 0)
        .fold(ChannelSet::NONE, |set, (_, channel)| set.with(channel))
}

fn wanted(d: &Delivery, mask: u32) -> bool {
    let bit = match d {
        Delivery::Item(env) => match env.channel() {
            Channel::Content => MASK_CONTENT,
            Channel::Lifecycle => MASK_LIFECYCLE,
            Channel::Stdout => MASK_STDOUT,
            Channel::Stderr => MASK_STDERR,
        },
        Delivery::Hook(_) => MASK_HOOKS,
    };
    mask & bit != 0
}

/// A batch of deliveries as one JSON array: envelopes (they have `channel`) and hook events
/// (flat camelCase; they have `type` and no `channel`), in delivery order. Deliveries outside
/// `mask` (channels nobody listens to) are read — the stream moves on — but not serialized.
fn batch_json(batch: &[Delivery], mask: u32) -> JsResult<String> {
    let mut out = Vec::with_capacity(batch.len() * 256);
    out.push(b'[');
    let mut first = true;
    for d in batch.iter().filter(|d| wanted(d, mask)) {
        if !first {
            out.push(b',');
        }
        first = false;
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

/// One operation: pull its deliveries, cancel it, await its result.
#[napi]
pub struct NativeRun {
    handle: RunHandle,
    /// The reader channels last given to the core ([`ChannelSet::bits`]), so a pull only takes
    /// the stream's lock to change them when the wrapper's listeners changed.
    channels: AtomicU8,
}

impl NativeRun {
    fn new(handle: RunHandle) -> Self {
        NativeRun { handle, channels: AtomicU8::new(ChannelSet::ALL.bits()) }
    }

    /// Tell the core which channels are read, so raw lines nobody listens to are not buffered
    /// (they are still numbered: sequences stay gapless for the channels that are read).
    fn read_channels(&self, mask: u32) {
        let set = mask_channels(mask);
        if self.channels.swap(set.bits(), Ordering::Relaxed) != set.bits() {
            self.handle.set_channels(set);
        }
    }
}

#[napi]
impl NativeRun {
    /// The run's id.
    #[napi(getter, catch_unwind)]
    pub fn run_id(&self) -> Result<String, Code> {
        guard(|| Ok(self.handle.run_id().to_string()))
    }

    /// Up to `max` deliveries as a JSON array, as soon as at least one is ready; `null` once the
    /// stream is over (after the terminal item and its hook events). `mask` selects what is
    /// serialized (bits: 1 content, 2 lifecycle, 4 stdout, 8 stderr, 16 hook events; default
    /// all): the others are consumed unseen, so the array may be empty (`"[]"`).
    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn next_batch<'env>(&self, env: &'env Env, max: u32, mask: Option<u32>) -> napi::Result<Object<'env>> {
        let mask = mask.unwrap_or(u32::MAX);
        if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.read_channels(mask))) {
            return Err(napi::Error::from_reason(format!("panic: {}", panic_message(p))));
        }
        let (deferred, promise) = env.create_deferred::<Option<String>, Settle<Option<String>>>()?;
        let max = (max as usize).max(1);
        let handle = self.handle.clone();
        // Ready now: settle at once, without a hop through the runtime.
        let ready = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handle.try_next_batch(max)));
        match ready {
            Ok(batch) if !batch.is_empty() => match batch_json(&batch, mask) {
                Ok(json) => deferred.resolve(Box::new(move |_| Ok(Some(json)))),
                Err(e) => deferred.reject(napi::Error::from_reason(e.to_string())),
            },
            Ok(_) => settle_later(deferred, async move {
                match handle.next().await {
                    None => Ok(None),
                    Some(first) => {
                        let mut batch = vec![first];
                        batch.extend(handle.try_next_batch(max - 1));
                        batch_json(&batch, mask).map(Some)
                    }
                }
            }),
            Err(p) => deferred.reject(napi::Error::from_reason(format!("panic: {}", panic_message(p)))),
        }
        Ok(promise)
    }

    /// The run's result (camelCase JSON), once it has finished. Resolves for every outcome:
    /// a failed or cancelled run is a result, not an error.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn wait<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let (deferred, promise) = env.create_deferred::<String, Settle<String>>()?;
        let handle = self.handle.clone();
        settle_later(deferred, async move { result_json(&handle.wait().await) });
        Ok(promise)
    }

    /// The result (camelCase JSON) if the run has finished, else `null`.
    #[napi(catch_unwind)]
    pub fn result_json(&self) -> Result<Option<String>, Code> {
        guard(|| self.handle.result().map(|r| result_json(&r).map_err(internal)).transpose())
    }

    /// Cancel the run (the first reason stands).
    #[napi(catch_unwind)]
    pub fn cancel(&self, reason: String) -> Result<(), Code> {
        guard(|| {
            self.handle.cancel(&reason);
            Ok(())
        })
    }

    /// The reader left early (`break` out of `for await`): cancels through the one path.
    #[napi(catch_unwind)]
    pub fn reader_left(&self) -> Result<(), Code> {
        guard(|| {
            self.handle.reader_left();
            Ok(())
        })
    }

    /// Live backpressure statistics (camelCase JSON).
    #[napi(catch_unwind)]
    pub fn pressure_json(&self) -> Result<String, Code> {
        guard(|| to_camel_json(&self.handle.pressure()))
    }

    /// True once the result is known.
    #[napi(getter, catch_unwind)]
    pub fn is_finished(&self) -> Result<bool, Code> {
        guard(|| Ok(self.handle.is_finished()))
    }
}

fn result_json(r: &runner::RunResult) -> JsResult<String> {
    let v = serde_json::to_value(r).map_err(|e| e.to_string())?;
    serde_json::to_string(&camel_case_keys(v)).map_err(|e| e.to_string())
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
