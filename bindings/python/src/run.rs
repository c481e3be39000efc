//! Runs for Python: `Run` (one started run of the core's bridge, pulled in batches) and `Batch`
//! (pulled deliveries, converted as they are iterated), plus `replay`.
//!
//! Delivery model (the bridge's, one design for every binding): the Python side pulls BATCHES
//! of deliveries (`Run.pull`, which waits with the GIL released; `Run.try_pull`, which does not
//! wait) and dispatches them to its handlers itself, in order, one at a time. No Rust thread
//! ever calls into Python, so there is no per-event GIL hand-off (toolchain.md P3): one attach
//! per batch, on the thread that asked for it. A batch is what is ready when the reader wakes,
//! bounded in events and bytes ([`BatchLimits`]); there is no wait to fill it.
//!
//! Which channels are read, what a result is before the end, what dropping an unread run does
//! and how handler failures are counted are the bridge's ([`Run`]); this module converts.
//!
//! A pulled delivery is the tuple `(channel, payload, sequence, coalesced)`: `channel` is one of
//! the interned strings `content`, `lifecycle`, `stdout`, `stderr` or `hook`; `payload` is the
//! OutputEvent dict (camelCase), the LifecycleEvent dict (snake_case), the text, or the flat
//! snake_case hook dict.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentstream_core::bridge::{BatchLimits, Delivery, HandlerError, Run};
use agentstream_core::replay::{ReplayOptions, replay as core_replay};
use agentstream_core::stream::{Envelope, StreamItem};
use agentstream_core::{Error as CoreError, ErrorKind, HookEvent};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::convert;
use crate::wake::LoopWait;
use crate::{Input, guard, invalid_argument, parse_agent, raise, to_py};

/// A duration in milliseconds from Python (`None`: no limit); the number was checked by the
/// Python layer's types, its range here.
fn millis(py: Python<'_>, field: &str, value: Option<f64>) -> PyResult<Option<Duration>> {
    value
        .map(|v| {
            agentstream_core::bridge::millis_from_f64(v, field, agentstream_core::bridge::Naming::Snake)
                .map(Duration::from_millis)
                .map_err(|e| raise(py, &e))
        })
        .transpose()
}

// ---------------------------------------------------------------------------------------------
// Conversion of deliveries
// ---------------------------------------------------------------------------------------------

fn channel_str<'py>(py: Python<'py>, item: &StreamItem) -> &'py Bound<'py, PyString> {
    match item {
        StreamItem::Content(_) => intern!(py, "content"),
        StreamItem::Lifecycle(_) => intern!(py, "lifecycle"),
        StreamItem::Stdout(_) => intern!(py, "stdout"),
        StreamItem::Stderr(_) => intern!(py, "stderr"),
    }
}

fn item_payload<'py>(
    py: Python<'py>,
    item: &StreamItem,
    strings: &mut convert::Strings,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(match item {
        StreamItem::Content(ev) => convert::output_event(py, ev, strings)?,
        StreamItem::Lifecycle(l) => to_py(py, l)?,
        StreamItem::Stdout(t) | StreamItem::Stderr(t) => PyString::new(py, t).into_any(),
    })
}

/// The flat snake_case dict of a hook event (decisions.md §5; `HookEvent::to_flat_snake`).
fn hook_payload<'py>(py: Python<'py>, hook: &HookEvent, strings: &mut convert::Strings) -> PyResult<Bound<'py, PyAny>> {
    Ok(convert::object(py, &hook.to_flat_snake(), strings.keys())?.into_any())
}

/// A delivery's channel name, payload, sequence and coalesced count.
struct Parts<'py> {
    channel: Bound<'py, PyString>,
    payload: Bound<'py, PyAny>,
    sequence: u64,
    coalesced: u64,
}

fn delivery_parts<'py>(py: Python<'py>, d: &Delivery, strings: &mut convert::Strings) -> PyResult<Parts<'py>> {
    Ok(match d {
        Delivery::Item(env) => Parts {
            channel: channel_str(py, &env.item).clone(),
            payload: item_payload(py, &env.item, strings)?,
            sequence: env.sequence,
            coalesced: env.coalesced,
        },
        Delivery::Hook(h) => Parts {
            channel: intern!(py, "hook").clone(),
            payload: hook_payload(py, h, strings)?,
            sequence: h.sequence,
            coalesced: 0,
        },
    })
}

/// One envelope as the Python dict `{run_id, sequence, channel, event, coalesced?}` (snake_case
/// `run_id`, like every other envelope-level key of the Python shapes).
fn envelope_dict<'py>(py: Python<'py>, env: &Envelope, strings: &mut convert::Strings) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item(intern!(py, "run_id"), &*env.run_id)?;
    d.set_item(intern!(py, "sequence"), env.sequence)?;
    d.set_item(intern!(py, "channel"), channel_str(py, &env.item))?;
    d.set_item(intern!(py, "event"), item_payload(py, &env.item, strings)?)?;
    if env.coalesced > 0 {
        d.set_item(intern!(py, "coalesced"), env.coalesced)?;
    }
    Ok(d)
}

// ---------------------------------------------------------------------------------------------
// Run
// ---------------------------------------------------------------------------------------------

/// One started run (the bridge's [`Run`]). Dropping the last reference to a run that has a
/// reader before its end cancels it (the bridge's rule, reason `reader_left`).
#[pyclass(module = "agentstream._native", name = "Run", frozen)]
pub struct PyRun {
    run: Run,
    /// Waits on an asyncio event loop (`wake_fd`, `pull_or_arm`).
    loop_wait: LoopWait,
    /// Strings shared between the events of this run (only used with the GIL held).
    strings: Arc<Mutex<convert::Strings>>,
    /// The client's count of subscription changes (see [`PyBatch::call`]).
    subscriptions: Arc<AtomicU64>,
}

impl PyRun {
    pub(crate) fn new(run: Run, subscriptions: Arc<AtomicU64>) -> Self {
        PyRun { run, loop_wait: LoopWait::default(), strings: Arc::default(), subscriptions }
    }

    fn batch(&self, deliveries: Vec<Delivery>) -> PyBatch {
        PyBatch {
            items: Mutex::new((deliveries, 0)),
            strings: Arc::clone(&self.strings),
            subscriptions: Arc::clone(&self.subscriptions),
        }
    }

    fn result_dict<'py>(
        &self,
        py: Python<'py>,
        result: Result<agentstream_core::bridge::RunResult, CoreError>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        match result {
            Ok(r) => to_py(py, &r).map(Some),
            Err(e) if e.kind == ErrorKind::StillRunning => Ok(None),
            Err(e) => Err(raise(py, &e)),
        }
    }
}

#[pymethods]
impl PyRun {
    #[getter]
    fn run_id(&self) -> &str {
        self.run.id()
    }

    /// Whether anything reads the run (false: await-only, nothing is buffered).
    #[getter]
    fn has_reader(&self) -> bool {
        self.run.has_reader()
    }

    /// Up to `max_events` deliveries that are ready now, without waiting.
    #[pyo3(signature = (max_events = 256))]
    fn try_pull(&self, py: Python<'_>, max_events: usize) -> PyResult<PyBatch> {
        guard(py, || {
            let mut batch = buffer(max_events);
            self.run.try_pull(&mut batch, limits(max_events));
            Ok(self.batch(batch))
        })
    }

    /// Wait up to `timeout_ms` (GIL released) for deliveries, then take what is ready (up to
    /// `max_events`). An empty batch means the time passed or the stream ended (see `ended`).
    #[pyo3(signature = (timeout_ms = 250.0, max_events = 256))]
    fn pull(&self, py: Python<'_>, timeout_ms: f64, max_events: usize) -> PyResult<PyBatch> {
        guard(py, || {
            let timeout = millis(py, "timeout_ms", Some(timeout_ms))?;
            let mut batch = buffer(max_events);
            let run = &self.run;
            py.detach(|| run.pull(&mut batch, limits(max_events), timeout));
            Ok(self.batch(batch))
        })
    }

    /// The descriptor an asyncio event loop watches (`loop.add_reader`) while `pull_or_arm` is
    /// armed: readable means "ask again". Owned by the run (closed with it).
    #[getter]
    fn wake_fd(&self, py: Python<'_>) -> PyResult<i32> {
        guard(py, || Ok(self.loop_wait.fd()?))
    }

    /// Deliveries that are ready (up to `max_events`; an empty batch once the stream ended), or
    /// `None`: nothing is ready and the wait is armed, so `wake_fd` becomes readable when this
    /// should be called again. Never blocks. A wait left armed (its coroutine was cancelled)
    /// is the one the next call polls; nothing it takes is lost.
    #[pyo3(signature = (max_events = 256))]
    fn pull_or_arm(&self, py: Python<'_>, max_events: usize) -> PyResult<Option<PyBatch>> {
        guard(py, || {
            let taken = self.loop_wait.poll(&self.run, limits(max_events), || buffer(max_events))?;
            Ok(taken.map(|batch| self.batch(batch)))
        })
    }

    /// True once the terminal event (and its hook events) were pulled; for an await-only run,
    /// once it finished.
    #[getter]
    fn ended(&self, py: Python<'_>) -> PyResult<bool> {
        guard(py, || Ok(self.run.is_ended()))
    }

    /// True once the process ended and the result is known (the reader may still have
    /// deliveries to take).
    #[getter]
    fn finished(&self) -> bool {
        self.run.handle().is_finished()
    }

    /// Cancel the run (first reason stands; later calls are no-ops); kind `caller`.
    #[pyo3(signature = (reason = "cancelled by the caller"))]
    fn cancel(&self, py: Python<'_>, reason: &str) -> PyResult<()> {
        guard(py, || {
            self.run.cancel(reason);
            Ok(())
        })
    }

    /// The reader left before the end (an iterator abandoned early): cancels the run through the
    /// one path, kind `reader_left`; the deliveries still to come can be pulled.
    fn reader_left(&self, py: Python<'_>) -> PyResult<()> {
        guard(py, || {
            self.run.leave();
            Ok(())
        })
    }

    /// Live backpressure statistics.
    #[getter]
    fn pressure<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        guard(py, || to_py(py, &self.run.pressure()))
    }

    /// The result dict; `StillRunningError` until the terminal event was delivered.
    fn result<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        guard(py, || self.run.result().map_err(|e| raise(py, &e)).and_then(|r| to_py(py, &r)))
    }

    /// Wait (GIL released) up to `timeout_ms` (forever when None) for the result dict; `None`
    /// when the time passed first. An iterated run is drained here once its reader left
    /// (the bridge's `Run::wait`).
    #[pyo3(signature = (timeout_ms = None))]
    fn wait<'py>(&self, py: Python<'py>, timeout_ms: Option<f64>) -> PyResult<Option<Bound<'py, PyAny>>> {
        guard(py, || {
            let timeout = millis(py, "timeout_ms", timeout_ms)?;
            let run = &self.run;
            let result = py.detach(|| run.wait(timeout));
            self.result_dict(py, result)
        })
    }

    /// Wait (GIL released) up to `timeout_ms` for the process to end, whether or not its
    /// deliveries were read (after a cancel by a caller who stopped reading); whether it did.
    fn wait_finished(&self, py: Python<'_>, timeout_ms: f64) -> PyResult<bool> {
        guard(py, || {
            let timeout = millis(py, "timeout_ms", Some(timeout_ms))?.unwrap_or_default();
            let handle = self.run.handle();
            Ok(py.detach(|| handle.wait_timeout(timeout).is_some()))
        })
    }

    /// Record that handler `handler` (a subscription id, or 0 for `on_event`) raised on the
    /// delivery `sequence` of `channel`: counted into the result's `handler_errors`. True for
    /// that handler's FIRST failure on this run (the one to report with its traceback).
    fn handler_failed(
        &self,
        py: Python<'_>,
        handler: u64,
        channel: String,
        sequence: u64,
        message: String,
    ) -> PyResult<bool> {
        guard(py, || Ok(self.run.handler_failed(HandlerError { handler, channel, sequence, message })))
    }

    /// Handler failures so far.
    #[getter]
    fn handler_errors(&self) -> u64 {
        self.run.handler_error_count()
    }

    fn __repr__(&self) -> String {
        let state = if self.run.is_ended() { "ended" } else { "running" };
        format!("<agentstream._native.Run {} {state}>", self.run.id())
    }
}

/// Batches bounded in events (as asked) and in bytes (the bridge's default).
fn limits(max_events: usize) -> BatchLimits {
    BatchLimits { max_events: max_events.max(1), ..BatchLimits::DEFAULT }
}

/// Batch buffers handed back by dropped batches, for the next pulls of any run: a batch of
/// envelopes is tens of kilobytes, and allocating one per pull touched fresh memory each time
/// (page faults and zeroing showed as a few percent of a run's time).
static SPARE: Mutex<Vec<Vec<Delivery>>> = Mutex::new(Vec::new());

/// Buffers kept in [`SPARE`].
const SPARE_BUFFERS: usize = 8;

/// An empty buffer for a batch of up to `max` deliveries.
fn buffer(max: usize) -> Vec<Delivery> {
    SPARE.lock().ok().and_then(|mut s| s.pop()).unwrap_or_else(|| Vec::with_capacity(max.min(1024)))
}

/// Pulled deliveries, converted to Python one at a time as they are iterated.
///
/// Converting a whole batch up front would keep up to `max` events' dicts alive together until
/// the last handler ran, and every collection of Python's young generation would walk (and
/// promote) all of them; converted on demand, an event's objects are garbage as soon as its
/// handlers are done with it, as with any other source of events.
#[pyclass(module = "agentstream._native", name = "Batch", frozen)]
pub struct PyBatch {
    /// The deliveries and how many were iterated (converted in place, dropped all together
    /// once the last was: no delivery is moved).
    items: Mutex<(Vec<Delivery>, usize)>,
    strings: Arc<Mutex<convert::Strings>>,
    subscriptions: Arc<AtomicU64>,
}

#[pymethods]
impl PyBatch {
    /// Deliveries not iterated yet.
    fn __len__(&self) -> usize {
        self.items.lock().map(|i| i.0.len() - i.1).unwrap_or(0)
    }

    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// The next delivery as `(channel, payload, sequence, coalesced)`.
    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        guard(py, || {
            let Some(p) = self.take(py)? else { return Ok(None) };
            let items = [
                p.channel.into_any(),
                p.payload,
                p.sequence.into_pyobject(py)?.into_any(),
                p.coalesced.into_pyobject(py)?.into_any(),
            ];
            Ok(Some(PyTuple::new(py, items)?))
        })
    }

    /// Call the handlers of each delivery left, in order: `table[channel]` (a tuple of callables)
    /// with the payload, one after the other, as the Python dispatcher would, without building
    /// a tuple per delivery or running a Python loop. Stops at the first handler that returns
    /// something other than `None` (it may be an awaitable) or raises an `Exception`, or
    /// after a handler that subscribed or unsubscribed one (the table is stale then), and
    /// returns `(channel, payload, sequence, index, result, exception)` so that the caller
    /// finishes that delivery (from handler `index`) and calls again; `None` once the batch is
    /// done. A `BaseException` that is not an `Exception` propagates.
    fn call<'py>(&self, py: Python<'py>, table: &Bound<'py, PyDict>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        guard(py, || {
            let subscriptions = self.subscriptions.load(Ordering::Relaxed);
            while let Some(p) = self.take(py)? {
                let Some(handlers) = table.get_item(&p.channel)? else { continue };
                let handlers = handlers.cast_into::<PyTuple>()?;
                for (index, handler) in handlers.iter().enumerate() {
                    let (result, exception) = match handler.call1((&p.payload,)) {
                        Ok(r) if r.is_none() && self.subscriptions.load(Ordering::Relaxed) == subscriptions => continue,
                        Ok(r) if r.is_none() => (r, py.None().into_bound(py)),
                        Ok(r) => (r, py.None().into_bound(py)),
                        Err(e) if e.is_instance_of::<pyo3::exceptions::PyException>(py) => {
                            (py.None().into_bound(py), e.into_value(py).into_bound(py).into_any())
                        }
                        Err(e) => return Err(e),
                    };
                    let items = [
                        p.channel.into_any(),
                        p.payload,
                        p.sequence.into_pyobject(py)?.into_any(),
                        index.into_pyobject(py)?.into_any(),
                        result,
                        exception,
                    ];
                    return Ok(Some(PyTuple::new(py, items)?));
                }
            }
            Ok(None)
        })
    }

    fn __repr__(&self) -> String {
        format!("<agentstream._native.Batch of {} deliveries>", self.__len__())
    }
}

impl Drop for PyBatch {
    /// The buffer goes back to [`SPARE`] for a later pull (deliveries not taken are dropped).
    fn drop(&mut self) {
        if let Ok(items) = self.items.get_mut() {
            let mut buffer = std::mem::take(&mut items.0);
            buffer.clear();
            if let Ok(mut spare) = SPARE.lock() {
                if buffer.capacity() > 0 && spare.len() < SPARE_BUFFERS {
                    spare.push(buffer);
                }
            }
        }
    }
}

impl PyBatch {
    /// Convert the next delivery. The batch is locked only while converting (Python code may
    /// run then, e.g. a finalizer): another thread taking from the same batch meanwhile gets an
    /// error rather than waiting with the GIL held.
    fn take<'py>(&self, py: Python<'py>) -> PyResult<Option<Parts<'py>>> {
        let Ok(mut items) = self.items.try_lock() else {
            return Err(pyo3::exceptions::PyRuntimeError::new_err("a Batch is iterated by one thread at a time"));
        };
        let (deliveries, next) = &mut *items;
        let Some(d) = deliveries.get(*next) else { return Ok(None) };
        *next += 1;
        let mut fresh;
        let mut held = self.strings.try_lock();
        let strings = match held.as_deref_mut() {
            Ok(s) => s,
            Err(_) => {
                fresh = convert::Strings::default();
                &mut fresh
            }
        };
        let parts = delivery_parts(py, d, strings)?;
        if *next == deliveries.len() {
            // The Rust side of the batch, dropped once converted (the buffer goes back to the
            // run when the batch is dropped).
            deliveries.clear();
            *next = 0;
        }
        Ok(Some(parts))
    }
}

// ---------------------------------------------------------------------------------------------
// Replay
// ---------------------------------------------------------------------------------------------

/// The core's replay: recorded stdout through the whole pipeline (decoder, run stream,
/// terminal, hooks) without a process. Returns `{items, hooks, outcome, stats}`.
#[pyfunction]
#[pyo3(signature = (agent, data, *, run_id = None, agent_id = None, timestamp = None, redact = true))]
pub fn replay<'py>(
    py: Python<'py>,
    agent: &str,
    data: &Bound<'py, PyAny>,
    run_id: Option<String>,
    agent_id: Option<String>,
    timestamp: Option<String>,
    redact: bool,
) -> PyResult<Bound<'py, PyDict>> {
    guard(py, || {
        let agent = parse_agent(py, agent)?;
        let input = Input::from_py(py, data)?;
        let bytes = input.as_bytes()?;
        let mut options = ReplayOptions::default();
        if let Some(r) = run_id {
            options.run_id = r;
        }
        options.agent_id = agent_id;
        if let Some(t) = timestamp {
            options = options.with_timestamp(&t).map_err(|e| crate::raise(py, &e))?;
        }
        options.redaction = agentstream_core::RedactionPolicy { enabled: redact };
        let r = py.detach(|| core_replay(agent, bytes, &options));
        let mut strings = convert::Strings::default();
        let items = PyList::empty(py);
        for env in &r.items {
            items.append(envelope_dict(py, env, &mut strings)?)?;
        }
        let hooks = PyList::empty(py);
        for h in &r.hooks {
            hooks.append(hook_payload(py, h, &mut strings)?)?;
        }
        let out = PyDict::new(py);
        out.set_item("items", items)?;
        out.set_item("hooks", hooks)?;
        out.set_item("outcome", to_py(py, &r.outcome)?)?;
        out.set_item("stats", to_py(py, &r.stats)?)?;
        Ok(out)
    })
}

/// The exception class the core's error `kind` maps to, raised with `message` (tests: every
/// runner error kind has its class).
#[pyfunction]
pub fn _raise_error_kind(py: Python<'_>, kind: &str, message: &str) -> PyResult<()> {
    guard(py, || {
        let kind = ErrorKind::from_name(kind).ok_or_else(|| invalid_argument(py, format!("no error kind {kind:?}")))?;
        Err(raise(py, &CoreError::new(kind, message)))
    })
}
