//! The native half of the `agentstream` npm package (napi-rs 3).
//!
//! This crate holds NO behaviour: it converts JavaScript values to the core's inputs and the
//! core's outputs to JavaScript values, and nothing else. Its JavaScript API is private; users
//! import the hand-written TypeScript wrapper in `node/src/`, which gives the idiomatic shapes.
//!
//! Conventions:
//! * Content events cross as ONE tape per call ([`tape`]: a string of every text of the batch
//!   and a `Uint32Array` saying how to cut it), which the wrapper reads into the events' objects
//!   (`node/src/tape.ts`): no JSON syntax to scan, and far fewer crossings than building objects
//!   through napi (measured by `benches/node_decode.mjs`). Everything else crosses as one JSON
//!   string per call (the `…Json` methods, `feed` for `Decoder.feedJson`), which the wrapper
//!   `JSON.parse`s: the serde form of the core types IS the wire shape.
//! * Errors carry `code` = the core's [`ErrorKind::code`] (`INVALID_ARGUMENT`, `INTERNAL`, …);
//!   the wrapper turns them into `TypeError` / `AgentStreamError`.
//! * No Rust panic crosses into Node: every export runs inside [`guard`] (and is marked
//!   `#[napi(catch_unwind)]` as well), and a panic becomes an `INTERNAL` error whose message
//!   names the panic and its location.

#![deny(clippy::all)]

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

use agentstream_core::casing::camel_case_keys;
mod client;
mod run;
mod tape;

/// The decoders allocate many small strings per line; mimalloc serves them several times
/// faster than glibc's malloc (a quarter of `feedTape`'s time on kimi's corpus went to malloc
/// and free). Only this addon's Rust allocations use it, never Node's own.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay` (mimalloc v2's option number; the crate names no constant).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Memory freed by the addon goes back to the system at once rather than 10 ms later: a slow
/// handler receiving large merged deltas frees a batch's buffers every few milliseconds, and the
/// delay alone kept 15–20 MiB more resident (the memory bound of docs/reliability.md).
#[napi_derive::module_init]
fn return_freed_memory_at_once() {
    // SAFETY: sets one integer option of this addon's allocator; no memory is touched.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) }
}

use agentstream_core::replay::{ReplayOptions, replay};
use agentstream_core::{Agent, Channel, Decoder, DecoderOptions, ErrorKind, HookEvent, OutputEvent, RedactionPolicy};
use napi::bindgen_prelude::*;
use napi_derive::napi;

/// The `code` of a JavaScript error thrown by this addon: the core's [`ErrorKind`] name in
/// SCREAMING_SNAKE_CASE (`INVALID_ARGUMENT`); the wrapper maps it to its error classes.
pub struct Code(String);

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// The JavaScript `code` of a kind: `invalid_argument` → `INVALID_ARGUMENT`.
fn js_code(kind: ErrorKind) -> String {
    kind.name().to_ascii_uppercase()
}

fn js_error(e: agentstream_core::Error) -> napi::Error<Code> {
    napi::Error::new(Code(js_code(e.kind)), e.message_with_advice())
}

fn invalid(message: impl Into<String>) -> napi::Error<Code> {
    js_error(agentstream_core::Error::new(ErrorKind::InvalidArgument, message))
}

fn internal(message: impl std::fmt::Display) -> napi::Error<Code> {
    js_error(agentstream_core::Error::new(ErrorKind::Internal, format!("internal error in agentstream: {message}")))
}

thread_local! {
    /// Where the last panic on this thread happened (filled by the quiet panic hook).
    static LAST_PANIC_LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Replace the default panic hook of this addon's copy of std: a caught panic becomes a
/// JavaScript error carrying the message and location, so nothing is printed to stderr.
fn install_quiet_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let location = info.location().map(|l| format!("{}:{}", l.file(), l.line()));
            LAST_PANIC_LOCATION.with(|cell| *cell.borrow_mut() = location);
        }));
    });
}

/// Run `f`; a panic inside becomes an `INTERNAL` error instead of unwinding into Node.
fn guard<T>(f: impl FnOnce() -> Result<T, Code>) -> Result<T, Code> {
    install_quiet_panic_hook();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => {
            let what = agentstream_core::error::panic_text(payload.as_ref()).unwrap_or("unknown panic payload");
            let at = LAST_PANIC_LOCATION.with(|cell| cell.borrow_mut().take());
            Err(internal(match at {
                Some(at) => format!("panic at {at}: {what}"),
                None => format!("panic: {what}"),
            }))
        }
    }
}

fn parse_agent(name: &str) -> Result<Agent, Code> {
    name.parse::<Agent>().map_err(|e| js_error(e.into()))
}

fn events_json(events: &[OutputEvent]) -> Result<String, Code> {
    let mut out = String::with_capacity(2 + events.len() * 256);
    out.push('[');
    for (i, event) in events.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        // serde_json's exact text, without its byte-by-byte string escaping.
        event.write_json(&mut out);
    }
    out.push(']');
    Ok(out)
}

/// The events as a tape for `node/src/tape.ts`: `[text, words]` ([`tape::Tape`]).
fn events_tape(env: &Env, tape: &mut tape::Tape, events: &[OutputEvent]) -> Result<tape::JsTape, Code> {
    tape.write_events(events);
    tape::JsTape::new(env, tape).map_err(|e| internal(e.reason))
}

/// The events as a tape whose words go into the reader's `words` when they fit
/// ([`tape::JsTape::reusing`]).
fn events_tape_into(
    env: &Env,
    tape: &mut tape::Tape,
    events: &[OutputEvent],
    words: &mut Uint32ArraySlice<'_>,
) -> Result<tape::JsTape, Code> {
    tape.write_events(events);
    // SAFETY: the slice is the typed array JavaScript passed to this call; no JavaScript runs
    // until it returns (this is the JavaScript thread), so nothing else reads or writes it
    // meanwhile, and it is not used after.
    let words = unsafe { words.as_mut() };
    tape::JsTape::reusing(env, tape, words).map_err(|e| internal(e.reason))
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<String, Code> {
    serde_json::to_string(value).map_err(internal)
}

/// The stateful decoder of one run (the core's `Decoder`). Events are returned as a JSON array.
#[napi]
pub struct NativeDecoder {
    inner: Decoder,
    tape: tape::Tape,
}

#[napi]
impl NativeDecoder {
    /// A decoder for `agent` (`claude`, `codex`, `gemini`, `qwen`, `kimi`, `opencode`, `droid`).
    /// `maxLineBytes` (default 16 MiB): longer lines are skipped and reported. `redact`
    /// (default true): mask secret shapes in tool-call inputs.
    #[napi(constructor, catch_unwind)]
    pub fn new(agent: String, max_line_bytes: Option<f64>, redact: Option<bool>) -> Result<Self, Code> {
        guard(|| {
            let agent = parse_agent(&agent)?;
            let mut options = DecoderOptions::default().with_redaction(RedactionPolicy::from_switch(redact));
            if let Some(max) = max_line_bytes {
                if !(max.is_finite() && max >= 1.0 && max.fract() == 0.0 && max <= usize::MAX as f64) {
                    return Err(invalid(format!("maxLineBytes must be a positive integer, got {max}")));
                }
                options.max_line_bytes = max as usize;
            }
            Ok(NativeDecoder { inner: Decoder::with_options(agent, options), tape: tape::Tape::default() })
        })
    }

    /// Feed bytes (a `Buffer` or `Uint8Array`); returns the JSON array of the events of every
    /// line they complete.
    #[napi(catch_unwind)]
    pub fn feed(&mut self, bytes: &[u8]) -> Result<String, Code> {
        guard(|| events_json(&self.inner.feed(bytes)))
    }

    /// Feed text (encoded as UTF-8); returns a JSON array like `feed`.
    #[napi(catch_unwind)]
    pub fn feed_string(&mut self, text: String) -> Result<String, Code> {
        guard(|| events_json(&self.inner.feed(text.as_bytes())))
    }

    /// Feed bytes; returns the events of every line they complete as a tape (read by
    /// `node/src/tape.ts`): its words are written into `words` when they fit before its last
    /// element, which then holds their count, and only the text is returned
    /// (`node/src/index.ts` keeps one such array per decoder); otherwise `[text, words]`.
    #[napi(catch_unwind, ts_return_type = "string | [string, Uint32Array]")]
    pub fn feed_tape_into(
        &mut self,
        env: &Env,
        bytes: &[u8],
        mut words: Uint32ArraySlice<'_>,
    ) -> Result<tape::JsTape, Code> {
        guard(|| events_tape_into(env, &mut self.tape, &self.inner.feed(bytes), &mut words))
    }

    /// Feed text (encoded as UTF-8); returns the events like `feedTapeInto`.
    #[napi(catch_unwind, ts_return_type = "string | [string, Uint32Array]")]
    pub fn feed_string_tape_into(
        &mut self,
        env: &Env,
        text: String,
        mut words: Uint32ArraySlice<'_>,
    ) -> Result<tape::JsTape, Code> {
        guard(|| events_tape_into(env, &mut self.tape, &self.inner.feed(text.as_bytes()), &mut words))
    }

    /// `finish` as a tape.
    #[napi(catch_unwind, ts_return_type = "[string, Uint32Array]")]
    pub fn finish_tape(&mut self, env: &Env) -> Result<tape::JsTape, Code> {
        guard(|| events_tape(env, &mut self.tape, &self.inner.finish()))
    }

    /// End of input: decodes a final line without a newline and flushes held-back events
    /// (JSON array). Later calls return `[]`.
    #[napi(catch_unwind)]
    pub fn finish(&mut self) -> Result<String, Code> {
        guard(|| events_json(&self.inner.finish()))
    }

    /// Decode statistics so far, as a JSON object (`DecodeStats`, camelCase keys).
    #[napi(catch_unwind)]
    pub fn stats_json(&self) -> Result<String, Code> {
        guard(|| {
            let value = serde_json::to_value(self.inner.stats()).map_err(|e| invalid(e.to_string()))?;
            to_json(&camel_case_keys(value))
        })
    }

    /// Diagnostics since the last call (oversize lines, invalid UTF-8), as a JSON array of
    /// `{line, message}`.
    #[napi(catch_unwind)]
    pub fn take_diagnostics_json(&mut self) -> Result<String, Code> {
        guard(|| to_json(&self.inner.take_diagnostics()))
    }

    /// The harness session id, once seen.
    #[napi(getter, catch_unwind)]
    pub fn session_id(&self) -> Result<Option<String>, Code> {
        guard(|| Ok(self.inner.session_id().map(str::to_string)))
    }

    /// The agent this decoder reads (its canonical name).
    #[napi(getter, catch_unwind)]
    pub fn agent(&self) -> Result<String, Code> {
        guard(|| Ok(self.inner.agent().name().to_string()))
    }

    /// True when bytes of an unfinished line are held.
    #[napi(getter, catch_unwind)]
    pub fn has_partial_line(&self) -> Result<bool, Code> {
        guard(|| Ok(self.inner.has_partial_line()))
    }
}

/// Every event of `bytes` decoded at once.
fn decode_all(agent: &str, bytes: &[u8], redact: Option<bool>) -> Result<Vec<OutputEvent>, Code> {
    let options = DecoderOptions::default().with_redaction(RedactionPolicy::from_switch(redact));
    Ok(agentstream_core::parse_with_options(parse_agent(agent)?, bytes, options))
}

/// Decode a whole recorded output (bytes) at once, as a tape `[text, words]` (read by
/// `node/src/tape.ts`). `redact` (default true): mask secret shapes in tool-call inputs.
#[napi(catch_unwind, ts_return_type = "[string, Uint32Array]")]
pub fn parse_tape(env: &Env, agent: String, bytes: &[u8], redact: Option<bool>) -> Result<tape::JsTape, Code> {
    guard(|| events_tape(env, &mut tape::Tape::default(), &decode_all(&agent, bytes, redact)?))
}

/// `parseTape` of a string.
#[napi(catch_unwind, ts_return_type = "[string, Uint32Array]")]
pub fn parse_string_tape(env: &Env, agent: String, text: String, redact: Option<bool>) -> Result<tape::JsTape, Code> {
    guard(|| events_tape(env, &mut tape::Tape::default(), &decode_all(&agent, text.as_bytes(), redact)?))
}

/// Whether JSON objects go on tapes by shape (`node/src/tape.ts` turns it off when the runtime
/// cannot compile the shapes' literals; see `tape::use_shapes`). Process-wide.
#[napi(catch_unwind)]
pub fn tape_shapes(on: bool) -> Result<(), Code> {
    guard(|| {
        tape::use_shapes(on);
        Ok(())
    })
}

/// Replay a recorded output through the whole sans-IO pipeline (decoder, run stream, terminal
/// and hook derivation), as a live run would deliver it. Returns JSON
/// `{"items": [Envelope…], "hooks": [HookEvent…], "outcome": RunOutcome, "stats": DecodeStats}`
/// in the TypeScript shapes: envelopes in their wire form with camelCase lifecycle events, hook
/// events flat camelCase, stats camelCase.
#[napi(catch_unwind)]
pub fn replay_json(
    agent: String,
    bytes: &[u8],
    run_id: Option<String>,
    agent_id: Option<String>,
    timestamp: Option<String>,
    redact: Option<bool>,
) -> Result<String, Code> {
    guard(|| {
        let agent = parse_agent(&agent)?;
        let mut options = ReplayOptions { redaction: RedactionPolicy::from_switch(redact), ..ReplayOptions::default() };
        if let Some(run_id) = run_id {
            options.run_id = run_id;
        }
        options.agent_id = agent_id;
        if let Some(ts) = timestamp {
            options = options.with_timestamp(&ts).map_err(js_error)?;
        }
        let r = replay(agent, bytes, &options);
        let items = r
            .items
            .iter()
            .map(|env| {
                let mut v = serde_json::to_value(env).map_err(internal)?;
                if env.channel() == Channel::Lifecycle {
                    if let Some(event) = v.get_mut("event") {
                        *event = camel_case_keys(event.take());
                    }
                }
                Ok(v)
            })
            .collect::<Result<Vec<_>, Code>>()?;
        let hooks: Vec<_> = r.hooks.iter().map(|h| serde_json::Value::Object(h.to_flat_camel())).collect();
        let outcome = camel_case_keys(serde_json::to_value(&r.outcome).map_err(internal)?);
        let stats = camel_case_keys(serde_json::to_value(r.stats).map_err(internal)?);
        to_json(&serde_json::json!({"items": items, "hooks": hooks, "outcome": outcome, "stats": stats}))
    })
}

/// Every agent name, in documentation order.
#[napi(catch_unwind)]
pub fn agent_names() -> Result<Vec<String>, Code> {
    guard(|| Ok(Agent::ALL.iter().map(|a| a.name().to_string()).collect()))
}

/// The four channel names, in documentation order.
#[napi(catch_unwind)]
pub fn channel_names() -> Result<Vec<String>, Code> {
    guard(|| Ok(Channel::ALL.iter().map(|c| c.name().to_string()).collect()))
}

/// The core's error table: JSON array of `{kind, code, number, advice}` (`invalid_argument`,
/// `INVALID_ARGUMENT`, 1004, …), in code order.
#[napi(catch_unwind)]
pub fn error_kinds_json() -> Result<String, Code> {
    guard(|| {
        let table: Vec<_> = ErrorKind::ALL
            .iter()
            .map(|k| serde_json::json!({"kind": k.name(), "code": js_code(*k), "number": k.code(), "advice": k.advice()}))
            .collect();
        to_json(&table)
    })
}

/// A canonical hook event (the core's `HookEvent` JSON: `type`, `run_id`, …, `details`) in the
/// TypeScript shape: flat, camelCase keys (`runId`, `stepIndex`, …), as JSON.
#[napi(catch_unwind)]
pub fn hook_to_camel_json(canonical_json: String) -> Result<String, Code> {
    guard(|| {
        let hook: HookEvent =
            serde_json::from_str(&canonical_json).map_err(|e| invalid(format!("not a hook event: {e}")))?;
        to_json(&hook.to_flat_camel())
    })
}

/// A lifecycle event in the core's JSON form (snake_case) in the TypeScript shape (camelCase
/// keys: `sandboxId`, `browser.liveUrl`, …), as JSON.
#[napi(catch_unwind)]
pub fn lifecycle_to_camel_json(core_json: String) -> Result<String, Code> {
    guard(|| {
        let event: agentstream_core::LifecycleEvent =
            serde_json::from_str(&core_json).map_err(|e| invalid(format!("not a lifecycle event: {e}")))?;
        let value = serde_json::to_value(&event).map_err(|e| invalid(e.to_string()))?;
        to_json(&camel_case_keys(value))
    })
}

/// The version of the core this addon was built from.
#[napi(catch_unwind)]
pub fn core_version() -> Result<String, Code> {
    guard(|| Ok(agentstream_core::VERSION.to_string()))
}

/// Test only: panics inside the guard, to prove a panic becomes an `INTERNAL` error and never
/// aborts the process.
#[napi(js_name = "__testPanic", catch_unwind)]
pub fn test_panic(message: String) -> Result<(), Code> {
    guard(|| panic!("{message}"))
}
