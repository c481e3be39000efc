//! The process runner for Python: `Session` (one agent configuration) and `Run` (one operation's
//! reader), thin wrappers of `agentstream_core::runner`, plus `replay`.
//!
//! Delivery model (one design for every binding): the Python side pulls BATCHES of deliveries
//! (`Run.pull` with the GIL released while it waits, `Run.try_pull` without waiting) and
//! dispatches them to its handlers itself, in order, one at a time. No Rust thread ever calls
//! into Python, so there is no per-event GIL hand-off (toolchain.md P3): one attach per batch,
//! on the thread that asked for it.
//!
//! Items on channels nobody listens to are not buffered by the core (`RunOptions::channels`,
//! `RunHandle::set_channels`: they are still sequenced, and raw lines nobody reads are never
//! copied); any already buffered when the mask changes are skipped here, before any Python
//! object is built (the mask is the `channels` bit set of the run).
//!
//! A pulled delivery is the tuple `(channel, payload, sequence, coalesced)`: `channel` is one of
//! the interned strings `content`, `lifecycle`, `stdout`, `stderr` or `hook`; `payload` is the
//! OutputEvent dict (camelCase), the LifecycleEvent dict (snake_case), the text, or the flat
//! snake_case hook dict.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentstream_core::replay::{ReplayOptions, replay as core_replay};
use agentstream_core::runner::{AgentConfig, CommandOptions, Delivery, RunHandle, RunOptions, Session};
use agentstream_core::stream::{Backpressure, ChannelSet, Envelope, StreamItem};
use agentstream_core::{Channel, Error as CoreError, ErrorKind, HookEvent};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::convert;
use crate::{Input, guard, invalid_argument, parse_agent, raise, to_py};

/// Channel bits of [`PyRun::channels`].
pub const CONTENT: u8 = 1;
pub const LIFECYCLE: u8 = 2;
pub const STDOUT: u8 = 4;
pub const STDERR: u8 = 8;
pub const HOOKS: u8 = 16;
pub const ALL: u8 = CONTENT | LIFECYCLE | STDOUT | STDERR | HOOKS;

/// How long a pull that got a partial batch waits for more (`RunHandle::next_batch_lingering`):
/// the extra latency of a delivery is at most this, and a fast run is read in batches.
const LINGER: Duration = Duration::from_millis(1);

/// The core's reader channels for a mask: items of the other channels are then not even
/// buffered (the core keeps content and lifecycle when hooks are on: hooks derive from them).
fn core_channels(mask: u8) -> ChannelSet {
    [(CONTENT, Channel::Content), (LIFECYCLE, Channel::Lifecycle), (STDOUT, Channel::Stdout), (STDERR, Channel::Stderr)]
        .into_iter()
        .filter(|(b, _)| mask & b != 0)
        .fold(ChannelSet::NONE, |set, (_, c)| set.with(c))
}

fn bit(d: &Delivery) -> u8 {
    match d {
        Delivery::Hook(_) => HOOKS,
        Delivery::Item(env) => match env.item {
            StreamItem::Content(_) => CONTENT,
            StreamItem::Lifecycle(_) => LIFECYCLE,
            StreamItem::Stdout(_) => STDOUT,
            StreamItem::Stderr(_) => STDERR,
        },
    }
}

/// Seconds from Python (`None` = no limit) as a `Duration`; `what` names the argument.
fn seconds(py: Python<'_>, what: &str, value: Option<f64>) -> PyResult<Option<Duration>> {
    match value {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => Err(invalid_argument(py, format!("{what} must be a positive number of seconds, not {s}"))),
    }
}

fn backpressure(
    py: Python<'_>,
    high_water: Option<usize>,
    byte_budget: Option<usize>,
    stall_seconds: Option<f64>,
) -> PyResult<Backpressure> {
    let mut b = Backpressure::default();
    if let Some(h) = high_water {
        b = b.with_high_water(h);
    }
    if let Some(n) = byte_budget {
        b = b.with_byte_budget(n);
    }
    if let Some(s) = stall_seconds {
        b = b.with_stall_seconds(s);
    }
    // The core's own rule and message (byte_budget > 0, stall_seconds finite and > 0).
    b.validate().map_err(|e| invalid_argument(py, format!("invalid backpressure: {e}")))?;
    Ok(b)
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
// Session
// ---------------------------------------------------------------------------------------------

/// One agent configuration; one operation at a time. See `agentstream.Evolve`.
#[pyclass(module = "agentstream._native", name = "Session", frozen)]
pub struct PySession {
    session: Session,
}

#[pymethods]
#[allow(clippy::too_many_arguments)] // Python keyword arguments
impl PySession {
    #[new]
    #[pyo3(signature = (agent, *, agent_id = None, bin = None, model = None, extra_args = Vec::new(), cwd = None, env = Vec::new()))]
    fn new(
        py: Python<'_>,
        agent: &str,
        agent_id: Option<String>,
        bin: Option<PathBuf>,
        model: Option<String>,
        extra_args: Vec<String>,
        cwd: Option<PathBuf>,
        env: Vec<(String, String)>,
    ) -> PyResult<Self> {
        guard(py, || {
            let mut config = AgentConfig::new(parse_agent(py, agent)?);
            config.agent_id = agent_id;
            config.bin = bin;
            config.model = model;
            config.extra_args = extra_args;
            config.cwd = cwd;
            config.env = env;
            Ok(PySession { session: Session::new(config) })
        })
    }

    /// Start a harness run; returns once the process is spawned.
    #[pyo3(signature = (prompt, *, timeout = None, high_water = None, byte_budget = None, stall_seconds = None,
        redact = true, idempotent_tools = Vec::new(), hooks = false, attach_reader = true, background = false,
        kill_grace = None, channels = ALL))]
    fn start_run(
        &self,
        py: Python<'_>,
        prompt: String,
        timeout: Option<f64>,
        high_water: Option<usize>,
        byte_budget: Option<usize>,
        stall_seconds: Option<f64>,
        redact: bool,
        idempotent_tools: Vec<String>,
        hooks: bool,
        attach_reader: bool,
        background: bool,
        kill_grace: Option<f64>,
        channels: u8,
    ) -> PyResult<PyRun> {
        guard(py, || {
            let mut options = RunOptions::new(prompt);
            options.timeout = seconds(py, "timeout", timeout)?;
            options.backpressure = backpressure(py, high_water, byte_budget, stall_seconds)?;
            options.redact = redact;
            options.idempotent_tools = idempotent_tools.into_iter().collect();
            options.hooks = hooks;
            options.attach_reader = attach_reader;
            options.channels = core_channels(channels);
            options.background = background;
            if let Some(g) = seconds(py, "kill_grace", kill_grace)? {
                options.kill_grace = g;
            }
            let session = self.session.clone();
            // Spawning forks and execs: not with the GIL held.
            let handle = py.detach(move || session.start_run(options)).map_err(|e| raise(py, &e))?;
            Ok(PyRun::new(handle, channels))
        })
    }

    /// Start any command (argv) with the same streaming and lifecycle (no content decoding).
    #[pyo3(signature = (argv, *, cwd = None, env = Vec::new(), timeout = None, high_water = None, byte_budget = None,
        stall_seconds = None, hooks = false, attach_reader = true, background = false, kill_grace = None,
        channels = ALL))]
    fn start_command(
        &self,
        py: Python<'_>,
        argv: Vec<String>,
        cwd: Option<PathBuf>,
        env: Vec<(String, String)>,
        timeout: Option<f64>,
        high_water: Option<usize>,
        byte_budget: Option<usize>,
        stall_seconds: Option<f64>,
        hooks: bool,
        attach_reader: bool,
        background: bool,
        kill_grace: Option<f64>,
        channels: u8,
    ) -> PyResult<PyRun> {
        guard(py, || {
            let mut options = CommandOptions::new(argv);
            options.cwd = cwd;
            options.env = env;
            options.timeout = seconds(py, "timeout", timeout)?;
            options.backpressure = backpressure(py, high_water, byte_budget, stall_seconds)?;
            options.hooks = hooks;
            options.attach_reader = attach_reader;
            options.channels = core_channels(channels);
            options.background = background;
            if let Some(g) = seconds(py, "kill_grace", kill_grace)? {
                options.kill_grace = g;
            }
            let session = self.session.clone();
            let handle = py.detach(move || session.start_command(options)).map_err(|e| raise(py, &e))?;
            Ok(PyRun::new(handle, channels))
        })
    }

    /// SIGSTOP the active operation's process group (lifecycle `sandbox_pause`).
    fn pause(&self, py: Python<'_>) -> PyResult<()> {
        guard(py, || self.session.pause().map_err(|e| raise(py, &e)))
    }

    /// SIGCONT a paused operation (lifecycle `sandbox_resume`).
    fn resume(&self, py: Python<'_>) -> PyResult<()> {
        guard(py, || self.session.resume().map_err(|e| raise(py, &e)))
    }

    /// SIGTERM, then SIGKILL after the grace period; the run ends `run_interrupted`.
    #[pyo3(signature = (reason = "interrupted by the caller"))]
    fn interrupt(&self, py: Python<'_>, reason: &str) -> PyResult<()> {
        guard(py, || self.session.interrupt(reason).map_err(|e| raise(py, &e)))
    }

    /// SIGKILL at once (lifecycle `sandbox_killed`, then `run_interrupted`); a no-op when idle.
    fn kill(&self, py: Python<'_>) -> PyResult<()> {
        guard(py, || self.session.kill().map_err(|e| raise(py, &e)))
    }

    /// The id of the operation going on, if any.
    #[getter]
    fn active_run_id(&self, py: Python<'_>) -> PyResult<Option<String>> {
        guard(py, || Ok(self.session.active().map(|h| h.run_id().to_string())))
    }

    /// The `sandbox_ready` lifecycle event describing the session now.
    fn ready_event<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        guard(py, || to_py(py, &self.session.ready_event()))
    }

    #[getter]
    fn agent(&self) -> &'static str {
        self.session.config().agent.name()
    }
}

// ---------------------------------------------------------------------------------------------
// Run
// ---------------------------------------------------------------------------------------------

/// The reader side of one operation.
#[pyclass(module = "agentstream._native", name = "Run", frozen)]
pub struct PyRun {
    handle: RunHandle,
    channels: AtomicU8,
    /// Strings shared between the events of this run (only used with the GIL held).
    strings: Arc<Mutex<convert::Strings>>,
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

impl PyRun {
    fn new(handle: RunHandle, channels: u8) -> Self {
        PyRun { handle, channels: AtomicU8::new(channels), strings: Arc::default() }
    }

    fn batch(&self, deliveries: Vec<Delivery>) -> PyBatch {
        PyBatch { items: Mutex::new((deliveries, 0)), strings: Arc::clone(&self.strings) }
    }
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
    /// something other than `None` (it may be an awaitable) or raises an `Exception`, and
    /// returns `(channel, payload, sequence, index, result, exception)` so that the caller
    /// finishes that delivery (from handler `index`) and calls again; `None` once the batch is
    /// done. A `BaseException` that is not an `Exception` propagates.
    fn call<'py>(&self, py: Python<'py>, table: &Bound<'py, PyDict>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        guard(py, || {
            while let Some(p) = self.take(py)? {
                let Some(handlers) = table.get_item(&p.channel)? else { continue };
                let handlers = handlers.cast_into::<PyTuple>()?;
                for (index, handler) in handlers.iter().enumerate() {
                    let (result, exception) = match handler.call1((&p.payload,)) {
                        Ok(r) if r.is_none() => continue,
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

#[pymethods]
impl PyRun {
    #[getter]
    fn run_id(&self) -> &str {
        self.handle.run_id()
    }

    /// The channel bit set: which deliveries `pull` returns. The core does not buffer items of
    /// the other channels (nor copy raw lines nobody reads); what is already buffered is skipped
    /// here unconverted.
    #[getter]
    fn get_channels(&self) -> u8 {
        self.channels.load(Ordering::Relaxed)
    }

    #[setter]
    fn set_channels(&self, mask: u8) {
        self.channels.store(mask, Ordering::Relaxed);
        self.handle.set_channels(core_channels(mask));
    }

    /// Up to `max` deliveries that are ready now, without waiting.
    #[pyo3(signature = (max = 256))]
    fn try_pull(&self, py: Python<'_>, max: usize) -> PyResult<PyBatch> {
        guard(py, || {
            let mask = self.channels.load(Ordering::Relaxed);
            let mut batch = buffer(max);
            self.handle.try_next_batch_into(&mut batch, max);
            batch.retain(|d| bit(d) & mask != 0);
            Ok(self.batch(batch))
        })
    }

    /// Wait up to `timeout` seconds (GIL released) for deliveries, then take up to `max`.
    /// An empty batch means the time passed or the stream ended (see `ended`).
    #[pyo3(signature = (max = 256, timeout = 0.25))]
    fn pull(&self, py: Python<'_>, max: usize, timeout: f64) -> PyResult<PyBatch> {
        guard(py, || {
            let timeout = seconds(py, "timeout", Some(timeout))?.unwrap_or_default();
            let mask = self.channels.load(Ordering::Relaxed);
            let handle = &self.handle;
            let mut batch = buffer(max);
            py.detach(|| {
                let deadline = Instant::now() + timeout;
                loop {
                    let left = deadline.saturating_duration_since(Instant::now());
                    handle.next_batch_into(&mut batch, max, Some(left), LINGER);
                    batch.retain(|d| bit(d) & mask != 0);
                    if !batch.is_empty() || handle.is_ended() || left.is_zero() {
                        return;
                    }
                }
            });
            Ok(self.batch(batch))
        })
    }

    /// True once the terminal item (and its hooks) were pulled.
    #[getter]
    fn ended(&self, py: Python<'_>) -> PyResult<bool> {
        guard(py, || Ok(self.handle.is_ended()))
    }

    /// True once the result is known.
    #[getter]
    fn finished(&self) -> bool {
        self.handle.is_finished()
    }

    /// Cancel the run (first reason stands; later calls are no-ops).
    #[pyo3(signature = (reason = "cancelled by the caller"))]
    fn cancel(&self, py: Python<'_>, reason: &str) -> PyResult<()> {
        guard(py, || {
            self.handle.cancel(reason);
            Ok(())
        })
    }

    /// The reader left before the end: cancels the run through the one path ("reader left").
    fn reader_left(&self, py: Python<'_>) -> PyResult<()> {
        guard(py, || {
            self.handle.reader_left();
            Ok(())
        })
    }

    /// Live backpressure statistics.
    #[getter]
    fn pressure<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        guard(py, || to_py(py, &self.handle.pressure()))
    }

    /// The result dict, if the run has finished.
    fn result<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        guard(py, || self.handle.result().map(|r| to_py(py, &r)).transpose())
    }

    /// Wait (GIL released) up to `timeout` seconds (forever when None) for the result dict.
    #[pyo3(signature = (timeout = None))]
    fn wait<'py>(&self, py: Python<'py>, timeout: Option<f64>) -> PyResult<Option<Bound<'py, PyAny>>> {
        guard(py, || {
            let timeout = match timeout {
                Some(t) if t <= 0.0 => Some(Duration::ZERO),
                other => seconds(py, "timeout", other)?,
            };
            let handle = &self.handle;
            let result = py.detach(|| match timeout {
                Some(t) => handle.wait_timeout(t),
                None => Some(handle.wait_blocking()),
            });
            result.map(|r| to_py(py, &r)).transpose()
        })
    }

    fn __repr__(&self) -> String {
        let state = if self.handle.is_finished() { "finished" } else { "running" };
        format!("<agentstream._native.Run {} {state}>", self.handle.run_id())
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
            options.timestamp = t;
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
