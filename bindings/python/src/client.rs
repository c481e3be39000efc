//! `Client`: the bridge's [`Client`] (the seed's `Evolve`) for Python, and `agent_spec`, the
//! core's validation of an `AgentConfig`.
//!
//! Every rule lives in the bridge: the agent configuration's and the run options' validation
//! (messages name fields in Python's spelling, [`Naming::Snake`]), the channel names, run vs.
//! command, await-only vs. read, the harness conversation successive runs continue, the
//! controls and `status()`. This module converts arguments and results, and maps errors to the
//! classes of `agentstream.errors`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use agentstream_core::Channel;
use agentstream_core::bridge::{AgentSpec, Client, Naming, ReadMode, RunNumbers, RunRequest, shell_command};
use pyo3::prelude::*;

use crate::run::PyRun;
use crate::{guard, invalid_argument, parse_agent, raise, raise_as, to_py};

const NAMING: Naming = Naming::Snake;

/// An `AgentConfig`'s fields as the bridge's [`AgentSpec`]; an unknown agent raises
/// `InvalidAgentError`, any other bad field the class of the core's error.
#[allow(clippy::too_many_arguments)] // Python keyword arguments
fn spec(
    py: Python<'_>,
    agent: String,
    agent_id: Option<String>,
    bin: Option<String>,
    model: Option<String>,
    extra_args: Vec<String>,
    cwd: Option<String>,
    env: BTreeMap<String, String>,
) -> PyResult<AgentSpec> {
    parse_agent(py, &agent)?;
    let spec = AgentSpec { agent, agent_id, bin, model, extra_args, cwd, env };
    spec.to_config(NAMING).map_err(|e| raise(py, &e))?;
    Ok(spec)
}

/// Validate an agent configuration (the core's rules); returns the canonical agent name.
#[pyfunction]
#[pyo3(signature = (agent, *, agent_id = None, bin = None, model = None, extra_args = Vec::new(), cwd = None,
    env = BTreeMap::new()))]
#[allow(clippy::too_many_arguments)]
pub fn agent_spec(
    py: Python<'_>,
    agent: String,
    agent_id: Option<String>,
    bin: Option<String>,
    model: Option<String>,
    extra_args: Vec<String>,
    cwd: Option<String>,
    env: BTreeMap<String, String>,
) -> PyResult<&'static str> {
    guard(py, || {
        let spec = spec(py, agent, agent_id, bin, model, extra_args, cwd, env)?;
        Ok(parse_agent(py, &spec.agent)?.name())
    })
}

fn channel(py: Python<'_>, name: &str) -> PyResult<Channel> {
    name.parse::<Channel>().map_err(|e| raise_as(py, Some("InvalidChannelError"), &e.into()))
}

fn read_mode(py: Python<'_>, read: &str) -> PyResult<ReadMode> {
    match read {
        "handlers" => Ok(ReadMode::Handlers),
        "iterate" => Ok(ReadMode::Iterate),
        "await_only" => Ok(ReadMode::AwaitOnly),
        other => Err(invalid_argument(py, format!("read must be handlers, iterate or await_only, not {other:?}"))),
    }
}

/// One agent configuration, its subscriptions, one run at a time (the bridge's `Client`).
#[pyclass(module = "agentstream._native", name = "Client", frozen)]
pub struct PyClient {
    client: Client,
    /// Counts subscription changes (`on`, `off`, `off_id`): a run's `Batch.call` stops after
    /// a handler that changed them, so that a handler removed is not called again.
    subscriptions: Arc<AtomicU64>,
}

#[pymethods]
impl PyClient {
    #[new]
    #[pyo3(signature = (agent, *, agent_id = None, bin = None, model = None, extra_args = Vec::new(), cwd = None,
        env = BTreeMap::new()))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        agent: String,
        agent_id: Option<String>,
        bin: Option<String>,
        model: Option<String>,
        extra_args: Vec<String>,
        cwd: Option<String>,
        env: BTreeMap<String, String>,
    ) -> PyResult<Self> {
        guard(py, || {
            let spec = spec(py, agent, agent_id, bin, model, extra_args, cwd, env)?;
            Ok(PyClient {
                client: Client::new(spec, NAMING).map_err(|e| raise(py, &e))?,
                subscriptions: Arc::default(),
            })
        })
    }

    /// The canonical agent name.
    #[getter]
    fn agent(&self) -> &'static str {
        self.client.agent().name()
    }

    /// Subscribe to channel `name`; returns the subscription id (the Python side keeps the
    /// handler under it). `InvalidChannelError` for any name but the four.
    fn on(&self, py: Python<'_>, name: &str) -> PyResult<u64> {
        guard(py, || {
            channel(py, name)?;
            let id = self.client.on(name).map_err(|e| raise(py, &e))?;
            self.subscriptions.fetch_add(1, Ordering::Relaxed);
            Ok(id)
        })
    }

    /// Remove every subscription of channel `name`; returns their ids. `InvalidChannelError` for
    /// an unknown name, as `on`.
    fn off(&self, py: Python<'_>, name: &str) -> PyResult<Vec<u64>> {
        guard(py, || {
            channel(py, name)?;
            let ids = self.client.off(name).map_err(|e| raise(py, &e))?;
            self.subscriptions.fetch_add(1, Ordering::Relaxed);
            Ok(ids)
        })
    }

    /// Remove one subscription; False when it was not there.
    fn off_id(&self, py: Python<'_>, id: u64) -> PyResult<bool> {
        guard(py, || {
            let removed = self.client.off_id(id);
            self.subscriptions.fetch_add(1, Ordering::Relaxed);
            Ok(removed)
        })
    }

    /// The subscription ids of channel `name`, in the order their handlers are called.
    fn subscribers(&self, py: Python<'_>, name: &str) -> PyResult<Vec<u64>> {
        guard(py, || Ok(self.client.subscribers(channel(py, name)?)))
    }

    /// Start a harness run (`prompt`) or a command run (`command`, an argv; or `shell`, a
    /// command line run through `sh -c`). Validated by the core first (the error names the bad
    /// field); returns once the process is spawned.
    #[pyo3(signature = (*, prompt = None, command = None, shell = None, model = None, cwd = None,
        env = BTreeMap::new(), timeout_ms = None, background = false, hooks = false, redact = true, resume = None,
        idempotent_tools = Vec::new(), kill_grace_ms = None, high_water = None, byte_budget = None, stall_ms = None,
        max_line_bytes = None, read = "handlers"))]
    #[allow(clippy::too_many_arguments)]
    fn start(
        &self,
        py: Python<'_>,
        prompt: Option<String>,
        command: Option<Vec<String>>,
        shell: Option<String>,
        model: Option<String>,
        cwd: Option<String>,
        env: BTreeMap<String, String>,
        timeout_ms: Option<f64>,
        background: bool,
        hooks: bool,
        redact: bool,
        resume: Option<String>,
        idempotent_tools: Vec<String>,
        kill_grace_ms: Option<f64>,
        high_water: Option<f64>,
        byte_budget: Option<f64>,
        stall_ms: Option<f64>,
        max_line_bytes: Option<f64>,
        read: &str,
    ) -> PyResult<PyRun> {
        guard(py, || {
            let command = match shell {
                Some(line) => Some(shell_command(&line, NAMING).map_err(|e| raise(py, &e))?),
                None => command,
            };
            let numbers = RunNumbers { timeout_ms, kill_grace_ms, high_water, byte_budget, stall_ms, max_line_bytes };
            let request = RunRequest {
                prompt,
                command,
                model,
                cwd,
                env,
                background,
                hooks,
                redact,
                resume,
                idempotent_tools,
                read: read_mode(py, read)?,
                ..RunRequest::default()
            }
            .with_numbers(numbers, NAMING)
            .map_err(|e| raise(py, &e))?;
            let client = &self.client;
            // Spawning forks and execs: not with the GIL held.
            let run = py.detach(|| client.start(request)).map_err(|e| raise(py, &e))?;
            Ok(PyRun::new(run, Arc::clone(&self.subscriptions)))
        })
    }

    /// SIGSTOP the active run's process group (lifecycle `sandbox_pause`); `NotRunningError`
    /// when nothing runs.
    fn pause(&self, py: Python<'_>) -> PyResult<()> {
        guard(py, || self.client.pause().map_err(|e| raise(py, &e)))
    }

    /// SIGCONT a paused run (lifecycle `sandbox_resume`); `NotRunningError` when nothing runs.
    fn resume(&self, py: Python<'_>) -> PyResult<()> {
        guard(py, || self.client.resume().map_err(|e| raise(py, &e)))
    }

    /// SIGTERM, then SIGKILL after the grace period; the run ends `run_interrupted`. Whether
    /// anything was interrupted.
    #[pyo3(signature = (reason = "interrupted by the caller"))]
    fn interrupt(&self, py: Python<'_>, reason: &str) -> PyResult<bool> {
        guard(py, || Ok(self.client.interrupt(reason)))
    }

    /// SIGKILL at once (lifecycle `sandbox_killed`, then `run_interrupted`). Whether anything
    /// was killed.
    fn kill(&self, py: Python<'_>) -> PyResult<bool> {
        guard(py, || Ok(self.client.kill()))
    }

    /// The bridge's `ClientStatus` as a dict.
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        guard(py, || to_py(py, &self.client.status()))
    }

    /// The id of the active run, if one is going on.
    #[getter]
    fn active_run_id(&self, py: Python<'_>) -> PyResult<Option<String>> {
        guard(py, || Ok(self.client.status().active_run_id))
    }

    /// The harness session the next run continues (None: a new conversation).
    fn session_id(&self, py: Python<'_>) -> PyResult<Option<String>> {
        guard(py, || Ok(self.client.session_id()))
    }

    /// Choose the harness session the next run continues (None: start a new conversation).
    #[pyo3(signature = (session_id))]
    fn set_session_id(&self, py: Python<'_>, session_id: Option<String>) -> PyResult<()> {
        guard(py, || self.client.set_session_id(session_id).map_err(|e| raise(py, &e)))
    }

    fn __repr__(&self) -> String {
        format!("<agentstream._native.Client agent={:?}>", self.client.agent().name())
    }
}
