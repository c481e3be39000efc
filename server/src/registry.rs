//! Where run records live: the [`RunRegistry`] trait and its in-process implementation,
//! [`MemoryRegistry`].
//!
//! A record is what `GET /v1/runs/{id}` answers ([`RunInfo`]) and who owns it (the tenant). The
//! broker writes the records of the runs it pumps (insert at start, progress, finish) and reads
//! any record, whoever wrote it: in one process that is the same map; in a cluster (see
//! [`crate::nats`]) the records live in a JetStream key-value bucket and every instance reads the
//! runs of every worker.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentstream_core::runner::RunResult;
use async_trait::async_trait;
use tokio::sync::watch;

use crate::auth::TenantId;
use crate::broker::{RunInfo, RunStatus};

/// A registry that could not be read or written (its backend is unreachable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryError(pub String);

impl std::fmt::Display for RegistryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RegistryError {}

/// The run records.
#[async_trait]
pub trait RunRegistry: Send + Sync + 'static {
    /// Record a run that just started here (status `running`). Returns the record as kept (a
    /// registry may add facts, such as the worker).
    async fn insert(&self, tenant: &TenantId, info: RunInfo) -> Result<RunInfo, RegistryError>;
    /// A run of `tenant` (`None`: no such run, or another tenant's).
    async fn get(&self, tenant: &TenantId, run_id: &str) -> Result<Option<RunInfo>, RegistryError>;
    /// One page of the runs of `tenant`, newest first, as listed (see [`page_of`]).
    async fn list(&self, tenant: &TenantId, page: &ListPage) -> Result<RunPage, RegistryError>;
    /// How many runs of `tenant` are running.
    fn running(&self, tenant: &TenantId) -> usize;
    /// How many runs are running (all tenants).
    fn running_total(&self) -> usize;
    /// A run started here delivered envelopes up to `last_sequence`.
    async fn progress(&self, tenant: &TenantId, run_id: &str, last_sequence: u64);
    /// A run started here ended with `result`. Returns the runs forgotten to make room (their
    /// logs can go too).
    async fn finish(&self, tenant: &TenantId, run_id: &str, result: RunResult) -> Vec<String>;
    /// Wait up to `timeout` until the run is no longer running; true if it ended.
    async fn wait_ended(&self, tenant: &TenantId, run_id: &str, timeout: Duration) -> bool;
}

/// The most runs one page of `GET /v1/runs` may ask for, and how many it gets by default.
pub const MAX_LIST_LIMIT: usize = 1000;
/// See [`MAX_LIST_LIMIT`].
pub const DEFAULT_LIST_LIMIT: usize = 100;
/// The longest prompt a listed run shows (bytes, cut on a character boundary); the whole one
/// is in `GET /v1/runs/{id}`.
pub const LISTED_PROMPT_BYTES: usize = 500;

/// Which page of a tenant's runs to list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPage {
    /// At most this many runs (1 to [`MAX_LIST_LIMIT`]).
    pub limit: usize,
    /// Only runs listed after this one (the previous page's [`RunPage::next`]).
    pub before: Option<ListCursor>,
}

impl Default for ListPage {
    fn default() -> Self {
        ListPage { limit: DEFAULT_LIST_LIMIT, before: None }
    }
}

/// A position in the newest-first order: a run's creation time and id. It stays valid when
/// that run is forgotten (the next page starts where it was).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListCursor {
    created_at: String,
    id: String,
}

impl ListCursor {
    fn of(info: &RunInfo) -> Self {
        ListCursor { created_at: info.created_at.clone(), id: info.id.clone() }
    }

    /// True when `info` is listed after (is older than) this position.
    fn is_before(&self, info: &RunInfo) -> bool {
        (info.created_at.as_str(), info.id.as_str()) < (self.created_at.as_str(), self.id.as_str())
    }
}

impl std::fmt::Display for ListCursor {
    /// `CREATED_AT~ID`: both are free of `~` (an ISO 8601 time; run ids are letters, digits,
    /// `_` and `-`), and every character is allowed in a query string as it is.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}~{}", self.created_at, self.id)
    }
}

impl std::str::FromStr for ListCursor {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, ()> {
        let (created_at, id) = s.split_once('~').ok_or(())?;
        let plain = |t: &str, extra: &[u8]| {
            !t.is_empty() && t.len() <= 128 && t.bytes().all(|b| b.is_ascii_alphanumeric() || extra.contains(&b))
        };
        if plain(created_at, b"-:.") && plain(id, b"_-") {
            Ok(ListCursor { created_at: created_at.to_string(), id: id.to_string() })
        } else {
            Err(())
        }
    }
}

/// One page of a tenant's runs.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPage {
    /// The runs, newest first, as listed: without `result` (it can be megabytes: `GET
    /// /v1/runs/{id}` has it), the prompt cut to [`LISTED_PROMPT_BYTES`].
    pub runs: Vec<ListedRun>,
    /// Where the next page starts, when there are more runs.
    pub next: Option<ListCursor>,
}

/// A run as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedRun {
    /// The run's record without its result, the prompt cut.
    pub info: RunInfo,
    /// True when the prompt was cut.
    pub prompt_cut: bool,
}

/// The page `page` of `runs` (one tenant's): sorted newest first, only the page's runs copied.
pub fn page_of<'a>(runs: impl Iterator<Item = &'a RunInfo>, page: &ListPage) -> RunPage {
    let mut order: Vec<&RunInfo> = runs.filter(|r| page.before.as_ref().is_none_or(|c| c.is_before(r))).collect();
    // Newest first; ids start with their creation time, so they break ties in order.
    order.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| b.id.cmp(&a.id)));
    let more = order.len() > page.limit;
    order.truncate(page.limit);
    let next = if more { order.last().map(|r| ListCursor::of(r)) } else { None };
    let runs = order
        .into_iter()
        .map(|r| {
            let prompt = agentstream_core::char_boundary::prefix(&r.prompt, LISTED_PROMPT_BYTES);
            let info = RunInfo {
                id: r.id.clone(),
                agent: r.agent.clone(),
                model: r.model.clone(),
                resume: r.resume.clone(),
                prompt: prompt.to_string(),
                status: r.status,
                created_at: r.created_at.clone(),
                ended_at: r.ended_at.clone(),
                last_sequence: r.last_sequence,
                result: None,
                worker: r.worker.clone(),
            };
            ListedRun { prompt_cut: prompt.len() < r.prompt.len(), info }
        })
        .collect();
    RunPage { runs, next }
}

/// The in-process [`RunRegistry`]: a map, with the newest `finished_runs_kept` finished runs of
/// each tenant kept (the oldest finished run is forgotten first).
pub struct MemoryRegistry {
    finished_runs_kept: usize,
    state: Mutex<State>,
    /// Bumped whenever a run ends; `wait_ended` watches it.
    ended: watch::Sender<u64>,
}

#[derive(Default)]
struct State {
    runs: HashMap<Arc<str>, (TenantId, RunInfo)>,
    tenants: HashMap<TenantId, TenantRuns>,
}

#[derive(Default)]
struct TenantRuns {
    running: usize,
    finished: VecDeque<Arc<str>>,
}

impl MemoryRegistry {
    /// A registry keeping `finished_runs_kept` finished runs per tenant.
    pub fn new(finished_runs_kept: usize) -> Self {
        MemoryRegistry { finished_runs_kept, state: Mutex::default(), ended: watch::Sender::new(0) }
    }

    fn status(&self, tenant: &TenantId, run_id: &str) -> Option<RunStatus> {
        let st = self.state.lock().expect("registry");
        st.runs.get(run_id).filter(|(t, _)| t == tenant).map(|(_, info)| info.status)
    }
}

#[async_trait]
impl RunRegistry for MemoryRegistry {
    async fn insert(&self, tenant: &TenantId, info: RunInfo) -> Result<RunInfo, RegistryError> {
        let mut st = self.state.lock().expect("registry");
        st.tenants.entry(tenant.clone()).or_default().running += 1;
        st.runs.insert(info.id.as_str().into(), (tenant.clone(), info.clone()));
        Ok(info)
    }

    async fn get(&self, tenant: &TenantId, run_id: &str) -> Result<Option<RunInfo>, RegistryError> {
        let st = self.state.lock().expect("registry");
        Ok(st.runs.get(run_id).filter(|(t, _)| t == tenant).map(|(_, info)| info.clone()))
    }

    async fn list(&self, tenant: &TenantId, page: &ListPage) -> Result<RunPage, RegistryError> {
        let st = self.state.lock().expect("registry");
        Ok(page_of(st.runs.values().filter(|(t, _)| t == tenant).map(|(_, info)| info), page))
    }

    fn running(&self, tenant: &TenantId) -> usize {
        self.state.lock().expect("registry").tenants.get(tenant).map_or(0, |t| t.running)
    }

    fn running_total(&self) -> usize {
        self.state.lock().expect("registry").tenants.values().map(|t| t.running).sum()
    }

    async fn progress(&self, _tenant: &TenantId, run_id: &str, last_sequence: u64) {
        if let Some((_, info)) = self.state.lock().expect("registry").runs.get_mut(run_id) {
            info.last_sequence = Some(last_sequence);
        }
    }

    async fn finish(&self, tenant: &TenantId, run_id: &str, result: RunResult) -> Vec<String> {
        let mut forgotten = Vec::new();
        {
            let mut st = self.state.lock().expect("registry");
            let st = &mut *st;
            let Some((_, info)) = st.runs.get_mut(run_id) else { return forgotten };
            if info.status != RunStatus::Running {
                return forgotten;
            }
            info.status = RunStatus::of(result.state);
            info.ended_at = Some(agentstream_core::time::now_iso8601());
            info.last_sequence = Some(result.last_sequence);
            info.result = Some(result);
            let id: Arc<str> = run_id.into();
            if let Some(t) = st.tenants.get_mut(tenant) {
                t.running -= 1;
                t.finished.push_back(id);
                while t.finished.len() > self.finished_runs_kept {
                    let old = t.finished.pop_front().expect("non-empty");
                    st.runs.remove(&old);
                    forgotten.push(old.to_string());
                }
            }
        }
        self.ended.send_modify(|v| *v += 1);
        forgotten
    }

    async fn wait_ended(&self, tenant: &TenantId, run_id: &str, timeout: Duration) -> bool {
        let mut rx = self.ended.subscribe();
        let ended = |this: &Self| this.status(tenant, run_id).is_none_or(|s| s != RunStatus::Running);
        tokio::time::timeout(timeout, async {
            loop {
                rx.borrow_and_update();
                if ended(self) {
                    return;
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        })
        .await
        .is_ok()
    }
}
