//! `agentstream._native`: the pyo3 extension module behind the `agentstream` Python package.
//!
//! This crate only converts shapes and calls `agentstream-core`: events become dicts of their
//! serde form, so content events keep the seed's camelCase keys ([`convert`], a fast hand-written
//! path for the hot one), lifecycle events are snake_case and hook events use
//! `HookEvent::to_flat_snake` (both through pythonize). Errors are raised as the
//! Python classes of `agentstream.errors`, looked up by the core's `ErrorKind` name.
//!
//! Panic safety: every entry point runs inside [`guard`], which turns a Rust panic into
//! `agentstream.errors.InternalError` (an `AgentstreamError`) instead of pyo3's
//! `PanicException` (a `BaseException`); the panic message is not printed by the default hook.
//!
//! Threads: the decoder state sits behind a `Mutex` that is never held while re-acquiring the
//! GIL (large inputs are decoded inside `py.detach`, with the lock taken and released there), so
//! two Python threads sharing a decoder serialize instead of deadlocking.

mod client;
mod convert;
mod json;

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod run;
mod wake;

use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Mutex, MutexGuard, Once};

use agentstream_core::decode::OverlappedDecoder;
use agentstream_core::{
    Agent, Channel, DecodeStats, Decoder, DecoderOptions, Diagnostic, Error as CoreError, ErrorKind, HookEvent,
    LifecycleEvent, OutputEvent,
};
use pyo3::prelude::*;
use pyo3::sync::{MutexExt, PyOnceLock};
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use serde::Serialize;

// ---------------------------------------------------------------------------------------------
// Errors and panics
// ---------------------------------------------------------------------------------------------

thread_local! {
    /// Depth of [`guard`] calls on this thread: a panic inside one is reported as an exception,
    /// so the panic hook stays quiet and stores the message here instead.
    static GUARD_DEPTH: Cell<u32> = const { Cell::new(0) };
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

/// Chain a panic hook that is silent for panics inside [`guard`] (they become exceptions with
/// the message) and defers to the previous hook for every other panic in the process.
fn install_panic_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if GUARD_DEPTH.with(|d| d.get()) > 0 {
                let payload = info.payload();
                let msg = agentstream_core::error::panic_text(payload).unwrap_or("a panic with a non-text payload");
                let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
                LAST_PANIC.with(|p| *p.borrow_mut() = Some(format!("{msg}{at}")));
            } else {
                previous(info);
            }
        }));
    });
}

/// Run `f`; a Rust panic inside it becomes `InternalError` instead of crossing into Python.
fn guard<T>(py: Python<'_>, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    GUARD_DEPTH.with(|d| d.set(d.get() + 1));
    let result = catch_unwind(AssertUnwindSafe(f));
    GUARD_DEPTH.with(|d| d.set(d.get() - 1));
    match result {
        Ok(r) => r,
        Err(payload) => {
            // A panic on the core's decode helper thread was reported by the hook there and
            // raised again here: its message is the payload's.
            let msg = LAST_PANIC
                .with(|p| p.borrow_mut().take())
                .or_else(|| agentstream_core::error::panic_text(payload.as_ref()).map(str::to_string))
                .unwrap_or_else(|| "unknown panic".into());
            Err(raise(py, &CoreError::new(ErrorKind::Internal, format!("internal error in agentstream: {msg}"))))
        }
    }
}

static ERRORS_MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// `agentstream.errors`, where the exception classes are defined (in Python, so they can also
/// derive from `ValueError`, `TimeoutError`, ...).
fn errors_module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    Ok(ERRORS_MODULE.get_or_try_init(py, || py.import("agentstream.errors").map(Bound::unbind))?.bind(py))
}

/// An instance of `class` (looked up by name in `agentstream.errors`, else the class of
/// `err.kind`) carrying the core error's message with its advice.
fn raise_as(py: Python<'_>, class: Option<&str>, err: &CoreError) -> PyErr {
    raise_message(py, class, err.kind, &err.message_with_advice())
}

/// An instance of `class` (or of the class of `kind`) with exactly `message`.
fn raise_message(py: Python<'_>, class: Option<&str>, kind: ErrorKind, message: &str) -> PyErr {
    let cls = errors_module(py).and_then(|m| match class {
        Some(name) => m.getattr(name),
        None => m.getattr("_BY_KIND")?.get_item(kind.name()),
    });
    match cls.and_then(|c| c.call1((message,))) {
        Ok(instance) => PyErr::from_value(instance),
        Err(e) => e,
    }
}

/// The exception for a core error, by its kind.
fn raise(py: Python<'_>, err: &CoreError) -> PyErr {
    raise_as(py, None, err)
}

fn invalid_agent(py: Python<'_>, e: agentstream_core::UnknownAgent) -> PyErr {
    raise_as(py, Some("InvalidAgentError"), &e.into())
}

fn invalid_channel(py: Python<'_>, e: agentstream_core::UnknownChannel) -> PyErr {
    raise_as(py, Some("InvalidChannelError"), &e.into())
}

fn invalid_argument(py: Python<'_>, message: impl Into<String>) -> PyErr {
    raise(py, &CoreError::new(ErrorKind::InvalidArgument, message))
}

// ---------------------------------------------------------------------------------------------
// Shapes
// ---------------------------------------------------------------------------------------------

/// The serde form of `value` as Python objects (dicts, lists, str, int, float, bool, None).
fn to_py<'py, T: Serialize + ?Sized>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    pythonize::pythonize(py, value).map_err(|e| {
        raise(
            py,
            &CoreError::new(ErrorKind::Internal, format!("internal error in agentstream: conversion failed: {e}")),
        )
    })
}

/// Append the dicts of `events` to `list` (the collector held off meanwhile).
fn append_events(list: &Bound<'_, PyList>, events: &[OutputEvent], strings: &mut convert::Strings) -> PyResult<()> {
    let py = list.py();
    let _gc = convert::GcPause::new(py);
    for ev in events {
        list.append(convert::output_event(py, ev, strings)?)?;
    }
    Ok(())
}

fn parse_agent(py: Python<'_>, name: &str) -> PyResult<Agent> {
    name.parse::<Agent>().map_err(|e| invalid_agent(py, e))
}

/// Bytes to decode: borrowed from `bytes`/`str` (both immutable), copied from anything else that
/// supports the buffer protocol (`bytearray`, `memoryview`, ...).
enum Input<'py> {
    Bytes(Bound<'py, PyBytes>),
    Str(Bound<'py, PyString>),
    Owned(Vec<u8>),
}

impl<'py> Input<'py> {
    fn from_py(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Self> {
        if let Ok(b) = data.cast::<PyBytes>() {
            return Ok(Input::Bytes(b.clone()));
        }
        if let Ok(s) = data.cast::<PyString>() {
            return Ok(match s.to_str() {
                Ok(_) => Input::Str(s.clone()),
                // Lone surrogates (`"\ud800"`) have no UTF-8: U+FFFD, as for invalid bytes.
                Err(_) => Input::Owned(s.to_string_lossy().into_owned().into_bytes()),
            });
        }
        // Copied: a mutable buffer could change while the GIL is released.
        if let Ok(buf) = pyo3::buffer::PyBuffer::<u8>::get(data) {
            return Ok(Input::Owned(buf.to_vec(py)?));
        }
        // A buffer of other items (`array.array("i")`, a memoryview of one): its bytes.
        let as_bytes = py
            .import("builtins")
            .and_then(|b| b.getattr("memoryview"))
            .and_then(|m| m.call1((data,)))
            .and_then(|view| view.call_method1("cast", ("B",)));
        match as_bytes.and_then(|view| pyo3::buffer::PyBuffer::<u8>::get(&view)) {
            Ok(buf) => Ok(Input::Owned(buf.to_vec(py)?)),
            Err(_) => Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "expected bytes, str or a bytes-like object, got {}",
                data.get_type().name()?
            ))),
        }
    }

    fn as_bytes(&self) -> PyResult<&[u8]> {
        Ok(match self {
            Input::Bytes(b) => b.as_bytes(),
            Input::Str(s) => s.to_str()?.as_bytes(),
            Input::Owned(v) => v,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Decoder
// ---------------------------------------------------------------------------------------------

struct State {
    decoder: OverlappedDecoder,
    diagnostics: Vec<Diagnostic>,
}

/// A stateful decoder for one harness's stdout. See `agentstream.Decoder`.
#[pyclass(module = "agentstream._native", name = "Decoder")]
struct PyDecoder {
    agent: Agent,
    raise_on_oversize: bool,
    state: Mutex<State>,
    /// Only used with the GIL held (conversion never releases it), so never contended.
    strings: Mutex<convert::Strings>,
}

impl PyDecoder {
    /// The decoder's state, waited for with the GIL released: a thread in an overlapped feed
    /// holds it while it builds events (with the GIL), so blocking on it with the GIL held
    /// could deadlock.
    fn lock(&self, py: Python<'_>) -> MutexGuard<'_, State> {
        // A panic while locked cannot leave the core decoder half-updated in a way that matters
        // more than the panic itself (already reported); keep serving.
        self.state.lock_py_attached(py).unwrap_or_else(|p| p.into_inner())
    }

    fn run<'py>(&self, py: Python<'py>, input: Option<&Input<'py>>) -> PyResult<Bound<'py, PyList>> {
        let bytes = match input {
            Some(i) => Some(i.as_bytes()?),
            None => None,
        };
        let mut state = self.lock(py);
        let mut held = self.strings.try_lock();
        let mut fresh;
        let strings = match held.as_deref_mut() {
            Ok(strings) => strings,
            Err(_) => {
                fresh = convert::Strings::default();
                &mut fresh
            }
        };
        let oversize_before = state.decoder.stats().oversize_lines;
        let list = PyList::empty(py);
        match bytes {
            Some(bytes) => {
                // A large input decodes on the core's helper thread, a piece at a time, while
                // this thread builds the previous piece's dicts; waiting for a piece (or, without
                // the helper, decoding a large input here) releases the GIL. A small one decodes
                // here, in one batch.
                let mut blocking = |section: &mut (dyn FnMut() + Send)| py.detach(section);
                state.decoder.feed_overlapped(bytes, &mut blocking, |events| append_events(&list, &events, strings))?;
            }
            None => append_events(&list, &state.decoder.finish(), strings)?,
        }
        let new_diags = state.decoder.take_diagnostics();
        state.diagnostics.extend(new_diags.iter().cloned());
        let oversize = state.decoder.stats().oversize_lines - oversize_before;
        drop(state);
        if self.raise_on_oversize && oversize > 0 {
            // The core reports an oversize line as a diagnostic that already says what to do.
            let diag = new_diags.iter().rev().find(|d| d.message.contains("max_line_bytes"));
            let (line, message) = match diag {
                Some(d) => (d.line, format!("line {}: {}", d.line, d.message)),
                None => (0, "a line was longer than max_line_bytes; raise max_line_bytes to decode it".to_string()),
            };
            let exc = raise_message(py, None, ErrorKind::DecodeLimit, &message);
            let value = exc.value(py);
            value.setattr("events", &list)?;
            value.setattr("line", line)?;
            return Err(exc);
        }
        Ok(list)
    }
}

#[pymethods]
impl PyDecoder {
    #[new]
    #[pyo3(signature = (agent, *, max_line_bytes = None, on_oversize = "skip", redact = true))]
    fn new(
        py: Python<'_>,
        agent: &str,
        max_line_bytes: Option<usize>,
        on_oversize: &str,
        redact: bool,
    ) -> PyResult<Self> {
        guard(py, || {
            let agent = parse_agent(py, agent)?;
            let mut options =
                DecoderOptions::default().with_redaction(agentstream_core::RedactionPolicy { enabled: redact });
            if let Some(n) = max_line_bytes {
                if n == 0 {
                    return Err(invalid_argument(py, "max_line_bytes must be at least 1"));
                }
                options.max_line_bytes = n;
            }
            let raise_on_oversize = match on_oversize {
                "skip" => false,
                "raise" => true,
                other => {
                    return Err(invalid_argument(
                        py,
                        format!("on_oversize must be \"skip\" or \"raise\", not {other:?}"),
                    ));
                }
            };
            Ok(PyDecoder {
                agent,
                raise_on_oversize,
                state: Mutex::new(State {
                    decoder: OverlappedDecoder::new(Decoder::with_options(agent, options)),
                    diagnostics: Vec::new(),
                }),
                strings: Mutex::new(convert::Strings::default()),
            })
        })
    }

    /// Feed a chunk of stdout; returns the events of every line it completed. A chunk of
    /// 32 KiB or more decodes on the core's decode helper thread while this thread builds the
    /// dicts (docs/python.md).
    fn feed<'py>(&self, py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        guard(py, || {
            let input = Input::from_py(py, data)?;
            self.run(py, Some(&input))
        })
    }

    /// End of input: decodes a final line without a newline and flushes held-back events.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        guard(py, || self.run(py, None))
    }

    #[getter]
    fn agent(&self) -> &'static str {
        self.agent.name()
    }

    #[getter]
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        guard(py, || {
            let stats: DecodeStats = *self.lock(py).decoder.stats();
            to_py(py, &stats)
        })
    }

    #[getter]
    fn diagnostics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        guard(py, || {
            let diags = self.lock(py).diagnostics.clone();
            to_py(py, &diags)
        })
    }

    #[getter]
    fn session_id(&self, py: Python<'_>) -> Option<String> {
        self.lock(py).decoder.session_id().map(str::to_string)
    }

    #[getter]
    fn has_partial_line(&self, py: Python<'_>) -> bool {
        self.lock(py).decoder.has_partial_line()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let state = self.lock(py);
        format!("<agentstream.Decoder agent={:?} {}>", self.agent.name(), state.decoder.stats().summary())
    }
}

// ---------------------------------------------------------------------------------------------
// Functions
// ---------------------------------------------------------------------------------------------

/// Decode a whole recorded output at once.
#[pyfunction]
#[pyo3(signature = (agent, data, *, max_line_bytes = None, on_oversize = "skip", redact = true))]
fn parse<'py>(
    py: Python<'py>,
    agent: &str,
    data: &Bound<'py, PyAny>,
    max_line_bytes: Option<usize>,
    on_oversize: &str,
    redact: bool,
) -> PyResult<Bound<'py, PyList>> {
    let decoder = PyDecoder::new(py, agent, max_line_bytes, on_oversize, redact)?;
    guard(py, || {
        let input = Input::from_py(py, data)?;
        let list = decoder.run(py, Some(&input))?;
        let rest = decoder.run(py, None)?;
        for item in rest.iter() {
            list.append(item)?;
        }
        Ok(list)
    })
}

/// The canonical agent name for `name` (e.g. `claude-code` → `claude`); raises
/// `InvalidAgentError` listing the valid names.
#[pyfunction]
fn agent_name(py: Python<'_>, name: &str) -> PyResult<&'static str> {
    guard(py, || Ok(parse_agent(py, name)?.name()))
}

/// `name` if it is one of the four channels; raises `InvalidChannelError` (a `ValueError`)
/// with the core's message listing them.
#[pyfunction]
fn channel_name(py: Python<'_>, name: &str) -> PyResult<&'static str> {
    guard(py, || name.parse::<Channel>().map(|c| c.name()).map_err(|e| invalid_channel(py, e)))
}

/// The flat snake_case dict (decisions.md §5) of a hook event given in its canonical JSON form.
/// Used by the tests to pin the conversion phase 2 delivers to `on_event`.
#[pyfunction]
fn _hook_to_flat_snake<'py>(py: Python<'py>, canonical_json: &str) -> PyResult<Bound<'py, PyAny>> {
    guard(py, || {
        let hook: HookEvent =
            serde_json::from_str(canonical_json).map_err(|e| invalid_argument(py, format!("not a hook event: {e}")))?;
        to_py(py, &hook.to_flat_snake())
    })
}

/// The dict of a content event given as JSON (parsed into the core's `OutputEvent` first, so
/// the result is exactly what a decoder would deliver). Used by the tests to pin every shape.
#[pyfunction]
fn _output_event_from_json<'py>(py: Python<'py>, json: &str) -> PyResult<Bound<'py, PyAny>> {
    guard(py, || {
        let ev: OutputEvent =
            serde_json::from_str(json).map_err(|e| invalid_argument(py, format!("not an OutputEvent: {e}")))?;
        convert::output_event(py, &ev, &mut convert::Strings::default())
    })
}

/// The core's canonical JSON of a content event given as JSON (tests: key order of the dicts).
#[pyfunction]
fn _output_event_canonical_json(py: Python<'_>, json: &str) -> PyResult<String> {
    guard(py, || {
        let ev: OutputEvent =
            serde_json::from_str(json).map_err(|e| invalid_argument(py, format!("not an OutputEvent: {e}")))?;
        Ok(ev.to_json())
    })
}

/// The dict of a lifecycle event given as JSON (parsed into the core's `LifecycleEvent` first).
#[pyfunction]
fn _lifecycle_event_from_json<'py>(py: Python<'py>, json: &str) -> PyResult<Bound<'py, PyAny>> {
    guard(py, || {
        let ev: LifecycleEvent =
            serde_json::from_str(json).map_err(|e| invalid_argument(py, format!("not a LifecycleEvent: {e}")))?;
        to_py(py, &ev)
    })
}

/// Events of `data` as the core's own JSON lines (the exact serde form), for the tests: the
/// dicts from `parse` must equal `json.loads` of these.
#[pyfunction]
fn _parse_json_lines(py: Python<'_>, agent: &str, data: &[u8]) -> PyResult<Vec<String>> {
    guard(py, || {
        let agent = parse_agent(py, agent)?;
        Ok(agentstream_core::parse(agent, data).iter().map(OutputEvent::to_json).collect())
    })
}

/// A harness record kept as JSON text (`rawInput`/`rawOutput`) as the Python objects events
/// carry (tests: the same as `json.loads`). `None` when `text` is not one JSON value.
#[pyfunction]
fn _raw_json_to_py<'py>(py: Python<'py>, text: String) -> PyResult<Bound<'py, PyAny>> {
    guard(py, || match agentstream_core::RawJson::from_text(text) {
        Some(raw) => json::to_py(py, raw.get(), &mut convert::Keys::default()),
        None => Ok(py.None().into_bound(py)),
    })
}

/// Decode `data` without building any Python object; returns the event count. The benchmark's
/// floor: what the conversion to dicts costs on top of decoding.
#[pyfunction]
fn _decode_count(py: Python<'_>, agent: &str, data: &[u8]) -> PyResult<usize> {
    guard(py, || {
        let agent = parse_agent(py, agent)?;
        Ok(py.detach(|| {
            let mut d = Decoder::new(agent);
            let mut n = 0;
            for chunk in data.chunks(64 * 1024) {
                n += d.feed(chunk).len();
            }
            n + d.finish().len()
        }))
    })
}

/// Panics on purpose inside the boundary (tests: a panic must become `InternalError`).
#[pyfunction]
#[pyo3(signature = (detached = false))]
fn _debug_panic(py: Python<'_>, detached: bool) -> PyResult<()> {
    guard(py, || {
        if detached {
            py.detach(|| -> () { panic!("deliberate panic (detached) for the tests") });
        }
        panic!("deliberate panic for the tests")
    })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    install_panic_hook();
    let py = m.py();
    m.add("__version__", agentstream_core::VERSION)?;
    m.add("AGENTS", PyTuple::new(py, Agent::ALL.iter().map(|a| a.name()))?)?;
    m.add("CHANNELS", PyTuple::new(py, Channel::ALL.iter().map(|c| c.name()))?)?;
    let kinds = PyDict::new(py);
    for k in ErrorKind::ALL {
        kinds.set_item(k.name(), (k.code(), k.advice()))?;
    }
    m.add("ERROR_KINDS", kinds)?;
    m.add_class::<PyDecoder>()?;
    m.add_class::<client::PyClient>()?;
    m.add_class::<run::PyRun>()?;
    m.add_class::<run::PyBatch>()?;
    m.add_function(wrap_pyfunction!(client::agent_spec, m)?)?;
    m.add_function(wrap_pyfunction!(run::replay, m)?)?;
    m.add_function(wrap_pyfunction!(run::_raise_error_kind, m)?)?;
    // The core's defaults, for the documentation of `Limits` (the core applies them).
    m.add("DEFAULT_LIMITS", to_py(py, &agentstream_core::bridge::Limits::default())?)?;
    m.add("DEFAULT_KILL_GRACE_MS", agentstream_core::bridge::DEFAULT_KILL_GRACE_MS)?;
    m.add_function(wrap_pyfunction!(parse, m)?)?;
    m.add_function(wrap_pyfunction!(agent_name, m)?)?;
    m.add_function(wrap_pyfunction!(channel_name, m)?)?;
    m.add_function(wrap_pyfunction!(_hook_to_flat_snake, m)?)?;
    m.add_function(wrap_pyfunction!(_parse_json_lines, m)?)?;
    m.add_function(wrap_pyfunction!(_output_event_from_json, m)?)?;
    m.add_function(wrap_pyfunction!(_output_event_canonical_json, m)?)?;
    m.add_function(wrap_pyfunction!(_lifecycle_event_from_json, m)?)?;
    m.add_function(wrap_pyfunction!(_decode_count, m)?)?;
    m.add_function(wrap_pyfunction!(_raw_json_to_py, m)?)?;
    m.add_function(wrap_pyfunction!(_debug_panic, m)?)?;
    Ok(())
}
