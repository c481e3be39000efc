//! `serve.toml`: where the server listens, who may call it (tenants), what it may run (agents),
//! and its limits.
//!
//! ```toml
//! listen = "127.0.0.1:8787"
//!
//! [[tenant]]
//! name = "acme"
//! token_sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
//!
//! [agents.claude]                  # a client asks for "claude" and a prompt, nothing else
//! bin = "/usr/local/bin/claude"
//! args = ["--permission-mode", "acceptEdits"]
//! env = { CLAUDE_CONFIG_DIR = "/srv/claude" }
//! cwd = "/srv/work"
//!
//! [agents.reviewer]                # any name; `harness` says which CLI's output it prints
//! harness = "codex"
//! model = "gpt-5"
//!
//! [limits]
//! runs_per_tenant = 16
//!
//! [shutdown]
//! mode = "cancel"                  # or "drain"
//!
//! [nats]                           # runs on workers, any instance serves any run
//! url = "nats://127.0.0.1:4222"
//!
//! [worker]                         # for `agentstream worker`
//! max_runs = 8
//! ```
//!
//! Every table and key is optional. With no `[[tenant]]`, the server makes one tenant `local`
//! whose token it prints once at start ([`ServeConfig::ensure_tenant`]); with no `[agents]`, the
//! seven harnesses by their usual command names. Unknown keys are errors (a misspelt limit must
//! not silently keep its default). Tokens are never in the file: only their SHA-256, in hex.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agentstream_core::Agent;
use serde::Deserialize;

use crate::auth::{TokenDigest, new_token};
use crate::nats::{NatsSettings, WorkerSettings};

/// The default listen address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8787";

/// The whole configuration of `agentstream serve`.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Where to listen.
    pub listen: SocketAddr,
    /// Who may call the API.
    pub tenants: Vec<TenantConfig>,
    /// What a client may run, by name.
    pub agents: BTreeMap<String, AgentEntry>,
    /// Per-tenant, per-run and per-request limits.
    pub limits: Limits,
    /// What SIGTERM/SIGINT does to runs in flight.
    pub shutdown: ShutdownPolicy,
    /// The cluster (`[nats]`): with it, `serve` hands runs to workers and serves every run of
    /// the cluster; without it (the default), everything runs in this process.
    pub nats: Option<NatsSettings>,
    /// `agentstream worker`'s own settings (`[worker]`).
    pub worker: WorkerSettings,
}

/// One tenant: a name and the SHA-256 of its bearer token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantConfig {
    /// The tenant's name (appears in logs; never in another tenant's responses).
    pub name: String,
    /// SHA-256 of the bearer token.
    pub token_sha256: TokenDigest,
}

/// One agent a client may ask for: which harness and how to start it. Clients choose the name;
/// the binary, arguments, environment and directory are the operator's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentEntry {
    /// Which harness's output the binary prints (decides decoding and the headless flags).
    pub harness: Agent,
    /// The executable (default: the harness's usual command name, found on PATH).
    pub bin: PathBuf,
    /// Extra arguments, after the streaming flags and before the prompt.
    pub args: Vec<String>,
    /// Environment added to the server's own for the harness process.
    pub env: Vec<(String, String)>,
    /// Working directory of the harness (default: the server's).
    pub cwd: Option<PathBuf>,
    /// The model when the request names none.
    pub model: Option<String>,
}

impl AgentEntry {
    /// The harness with its usual command name and nothing else.
    pub fn default_for(harness: Agent) -> Self {
        AgentEntry {
            harness,
            bin: PathBuf::from(agentstream_core::runner::default_program(harness)),
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
            model: None,
        }
    }
}

/// Limits (all counts > 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted request body or WebSocket message from a client, in bytes (default
    /// 64 KiB).
    pub max_body_bytes: usize,
    /// Runs one tenant may have running at once (default 16).
    pub runs_per_tenant: usize,
    /// Streams (SSE or WebSocket) open on one run at once (default 256).
    pub subscribers_per_run: usize,
    /// Streams open at once on all of one tenant's runs (default: half of `max_connections`),
    /// so that one tenant cannot take every connection from the others.
    pub streams_per_tenant: usize,
    /// Envelopes kept per run for resuming (default: as many as `replay_bytes` can hold,
    /// [`events_held_by`], 262,144 for 32 MiB, so by default the bytes bind); older ones are
    /// evicted.
    pub replay_events: usize,
    /// Bytes kept per run for resuming (default 32 MiB): each envelope's JSON plus
    /// [`FRAME_BOOKKEEPING_BYTES`](crate::frame::FRAME_BOOKKEEPING_BYTES) for what keeping it
    /// costs besides, so that the bound is the memory the buffer takes.
    pub replay_bytes: usize,
    /// Bytes kept by all runs together, counted as `replay_bytes` (default 1 GiB, at least
    /// `replay_bytes`): over it, the oldest envelopes of the runs that went longest without a
    /// new one are evicted first (each run keeps its newest). Without `[nats]` only; a cluster
    /// has `[nats] retention_bytes`.
    pub replay_bytes_total: usize,
    /// Finished runs kept per tenant, with their replay buffers (default 256); the oldest
    /// finished run is forgotten first.
    pub finished_runs_kept: usize,
    /// Cancel a run after this long (default: never).
    pub run_timeout: Option<Duration>,
    /// A comment frame (SSE) or ping (WebSocket) after this long without an envelope
    /// (default 15 s), so proxies keep the connection and dead peers are noticed.
    pub heartbeat: Duration,
    /// Connections open at once (default 1024, or half the process's open-file limit when
    /// that is lower; `agentstream serve` first raises that limit to its hard limit, see
    /// `agentstream_core::runner::open_files`): each is a file descriptor, and the harnesses'
    /// pipes need theirs. Further connections wait in the listen backlog until one closes.
    pub max_connections: usize,
    /// How long a connection may take to send a request's line and headers, and how long an
    /// idle keep-alive connection is kept waiting for its next request (default 30 s).
    pub header_timeout: Duration,
    /// How long a request's body may take to arrive once its headers have (default 30 s; a
    /// `408 body_timeout` after it).
    pub body_timeout: Duration,
    /// How long the server waits for a client to take more of what it sends (a response, an
    /// SSE stream, WebSocket frames) before it closes the connection (default 30 s): a client
    /// that stops reading does not keep its connection.
    pub send_timeout: Duration,
}

/// The default of [`Limits::replay_bytes`] (32 MiB).
pub const DEFAULT_REPLAY_BYTES: usize = 32 * 1024 * 1024;

/// The default of [`Limits::replay_events`] for a `replay_bytes` of `bytes`: as many envelopes
/// as those bytes can hold at their bookkeeping alone, so that by default the bytes bind.
pub fn events_held_by(bytes: usize) -> usize {
    (bytes / crate::frame::FRAME_BOOKKEEPING_BYTES).max(1)
}

/// The default of [`Limits::max_connections`].
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// [`DEFAULT_MAX_CONNECTIONS`], or half the process's soft limit of open files when that is
/// lower (never below 16): the other half stays for the harnesses' pipes, logs and the
/// listener.
pub fn default_max_connections() -> usize {
    max_connections_for(agentstream_core::runner::open_files::open_file_limit())
}

/// The default of [`Limits::streams_per_tenant`] for `max_connections`: half of them, so that
/// one tenant cannot take every connection from the others.
pub fn streams_per_tenant_for(max_connections: usize) -> usize {
    max_connections.div_ceil(2)
}

/// [`default_max_connections`] for a soft open-file limit (`None`: unknown or unlimited).
fn max_connections_for(open_files: Option<u64>) -> usize {
    match open_files {
        None => DEFAULT_MAX_CONNECTIONS,
        Some(n) => DEFAULT_MAX_CONNECTIONS.min(usize::try_from(n / 2).unwrap_or(usize::MAX)).max(16),
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 64 * 1024,
            runs_per_tenant: 16,
            subscribers_per_run: 256,
            streams_per_tenant: streams_per_tenant_for(default_max_connections()),
            replay_events: events_held_by(DEFAULT_REPLAY_BYTES),
            replay_bytes: DEFAULT_REPLAY_BYTES,
            replay_bytes_total: 1024 * 1024 * 1024,
            finished_runs_kept: 256,
            run_timeout: None,
            heartbeat: Duration::from_secs(15),
            max_connections: default_max_connections(),
            header_timeout: Duration::from_secs(30),
            body_timeout: Duration::from_secs(30),
            send_timeout: Duration::from_secs(30),
        }
    }
}

/// What happens to runs in flight on SIGTERM/SIGINT. New requests are refused either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownPolicy {
    /// Cancel at once (default) or let runs finish.
    pub mode: ShutdownMode,
    /// In `drain` mode, how long runs may take before they are cancelled (default 30 s).
    pub drain_timeout: Duration,
    /// Between SIGTERM and SIGKILL of a cancelled harness's process group (default 5 s).
    pub kill_grace: Duration,
}

impl Default for ShutdownPolicy {
    fn default() -> Self {
        ShutdownPolicy {
            mode: ShutdownMode::Cancel,
            drain_timeout: Duration::from_secs(30),
            kill_grace: Duration::from_secs(5),
        }
    }
}

/// See [`ShutdownPolicy::mode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShutdownMode {
    /// Cancel every run (each ends `run_interrupted`, reason `caller`).
    Cancel,
    /// Wait for runs to end on their own, up to `drain_timeout`, then cancel the rest.
    Drain,
}

/// A configuration that cannot be used, with what to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

// ---- the file's shape -------------------------------------------------------------------------

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    listen: Option<String>,
    #[serde(default)]
    tenant: Vec<FileTenant>,
    #[serde(default)]
    agents: BTreeMap<String, FileAgent>,
    #[serde(default)]
    limits: FileLimits,
    #[serde(default)]
    shutdown: FileShutdown,
    nats: Option<FileNats>,
    #[serde(default)]
    worker: FileWorker,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileNats {
    url: Option<String>,
    prefix: Option<String>,
    retention_secs: Option<f64>,
    retention_bytes: Option<u64>,
    replicas: Option<usize>,
    lease_secs: Option<f64>,
    start_timeout_secs: Option<f64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileWorker {
    id: Option<String>,
    max_runs: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTenant {
    name: String,
    token_sha256: String,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileAgent {
    harness: Option<String>,
    bin: Option<PathBuf>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    model: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileLimits {
    max_body_bytes: Option<usize>,
    runs_per_tenant: Option<usize>,
    subscribers_per_run: Option<usize>,
    streams_per_tenant: Option<usize>,
    replay_events: Option<usize>,
    replay_bytes: Option<usize>,
    replay_bytes_total: Option<usize>,
    finished_runs_kept: Option<usize>,
    run_timeout_secs: Option<f64>,
    heartbeat_secs: Option<f64>,
    max_connections: Option<usize>,
    header_timeout_secs: Option<f64>,
    body_timeout_secs: Option<f64>,
    send_timeout_secs: Option<f64>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileShutdown {
    mode: Option<ShutdownMode>,
    drain_timeout_secs: Option<f64>,
    kill_grace_secs: Option<f64>,
}

impl Default for ServeConfig {
    /// The embedded default: listen on [`DEFAULT_LISTEN`], the seven harnesses by their usual
    /// command names, default limits, no tenant yet (see [`ServeConfig::ensure_tenant`]).
    fn default() -> Self {
        ServeConfig {
            listen: DEFAULT_LISTEN.parse().expect("a valid default address"),
            tenants: Vec::new(),
            agents: Agent::ALL.iter().map(|a| (a.name().to_string(), AgentEntry::default_for(*a))).collect(),
            limits: Limits::default(),
            shutdown: ShutdownPolicy::default(),
            nats: None,
            worker: WorkerSettings::default_for_this_process(),
        }
    }
}

impl ServeConfig {
    /// Read and check a TOML file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("cannot read the config file {}: {e}", path.display())))?;
        Self::from_toml(&text).map_err(|e| ConfigError(format!("{}: {e}", path.display())))
    }

    /// Parse and check TOML text.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let file: FileConfig = toml::from_str(text).map_err(|e| ConfigError(e.to_string().trim_end().to_string()))?;
        let mut config = ServeConfig::default();
        if let Some(listen) = file.listen {
            config.listen = parse_listen(&listen).map_err(|e| ConfigError(format!("listen: {e}")))?;
        }
        for t in file.tenant {
            check_name(&t.name).map_err(|e| ConfigError(format!("[[tenant]] name {:?}: {e}", t.name)))?;
            let digest = TokenDigest::from_hex(&t.token_sha256).map_err(|e| {
                ConfigError(format!("[[tenant]] {:?}: token_sha256 {e} (the hex SHA-256 of the bearer token)", t.name))
            })?;
            if config.tenants.iter().any(|x| x.name == t.name) {
                return Err(ConfigError(format!("[[tenant]] {:?} is configured twice", t.name)));
            }
            if config.tenants.iter().any(|x| x.token_sha256 == digest) {
                return Err(ConfigError(format!("[[tenant]] {:?} has the same token as another tenant", t.name)));
            }
            config.tenants.push(TenantConfig { name: t.name, token_sha256: digest });
        }
        if !file.agents.is_empty() {
            config.agents.clear();
            for (name, a) in file.agents {
                let entry = agent_entry(&name, a).map_err(|e| ConfigError(format!("[agents.{name}] {e}")))?;
                config.agents.insert(name, entry);
            }
        }
        config.limits = limits(file.limits)?;
        let d = ShutdownPolicy::default();
        config.shutdown = ShutdownPolicy {
            mode: file.shutdown.mode.unwrap_or(d.mode),
            drain_timeout: seconds("shutdown.drain_timeout_secs", file.shutdown.drain_timeout_secs, true)?
                .unwrap_or(d.drain_timeout),
            kill_grace: seconds("shutdown.kill_grace_secs", file.shutdown.kill_grace_secs, true)?
                .unwrap_or(d.kill_grace),
        };
        if let Some(n) = file.nats {
            config.nats = Some(nats(n)?);
        }
        if let Some(id) = file.worker.id {
            config.worker.id = id;
        }
        if let Some(max_runs) = file.worker.max_runs {
            if max_runs == 0 {
                return Err(ConfigError("worker.max_runs must be at least 1".into()));
            }
            config.worker.max_runs = max_runs;
        }
        if !config.worker.id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            || config.worker.id.is_empty()
            || config.worker.id.len() > 64
        {
            return Err(ConfigError(format!(
                "worker.id {:?} must be 1 to 64 letters, digits, '-' or '_'",
                config.worker.id
            )));
        }
        Ok(config)
    }

    /// Use the cluster at `url` (`--nats`): the `[nats]` settings if any, with this URL.
    pub fn set_nats_url(&mut self, url: &str) -> Result<(), ConfigError> {
        let mut settings = self.nats.take().unwrap_or_else(|| NatsSettings::new(url));
        settings.url = url.to_string();
        settings.check().map_err(|e| ConfigError(format!("--nats: {e}")))?;
        self.nats = Some(settings);
        Ok(())
    }

    /// With no tenant configured, add the tenant `local` with a new random token and return
    /// that token (to be shown once: only its hash is kept). `None` when tenants are configured.
    pub fn ensure_tenant(&mut self) -> Option<String> {
        if !self.tenants.is_empty() {
            return None;
        }
        let token = new_token();
        self.tenants.push(TenantConfig { name: "local".into(), token_sha256: TokenDigest::of(&token) });
        Some(token)
    }
}

/// Parse a listen address (`host:port`, IPv6 in brackets).
pub fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    s.to_socket_addrs()
        .map_err(|e| format!("{s:?} is not an address to listen on (host:port): {e}"))?
        .next()
        .ok_or_else(|| format!("{s:?} resolves to no address"))
}

/// The rule for a tenant's or an agent entry's name: 1 to 64 of letters, digits, `-`, `_`, `.`
/// (what `agentstream token --tenant` checks before it prints an entry).
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 64 {
        return Err("must be 1 to 64 characters".into());
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')) {
        return Err("may hold only letters, digits, '-', '_' and '.'".into());
    }
    Ok(())
}

fn agent_entry(name: &str, a: FileAgent) -> Result<AgentEntry, String> {
    check_name(name).map_err(|e| format!("name: {e}"))?;
    let harness_name = a.harness.as_deref().unwrap_or(name);
    let harness: Agent = harness_name.parse().map_err(|_| match &a.harness {
        Some(h) => format!("harness {h:?} is not one of {}", agent_names()),
        None => format!("is not a harness name: add harness = one of {}", agent_names()),
    })?;
    let mut entry = AgentEntry::default_for(harness);
    if let Some(bin) = a.bin {
        if bin.as_os_str().is_empty() {
            return Err("bin is empty".into());
        }
        entry.bin = bin;
    }
    if let Some(model) = a.model {
        check_model(&model)?;
        entry.model = Some(model);
    }
    entry.args = a.args;
    entry.env = a.env.into_iter().collect();
    entry.cwd = a.cwd;
    Ok(entry)
}

/// A model name a harness flag may carry: not empty, not a flag, no control characters.
pub(crate) fn check_model(model: &str) -> Result<(), String> {
    if model.is_empty() || model.len() > 200 {
        return Err("model must be 1 to 200 characters".into());
    }
    if model.starts_with('-') || model.chars().any(char::is_control) {
        return Err("model must not start with '-' or hold control characters".into());
    }
    Ok(())
}

fn agent_names() -> String {
    Agent::ALL.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ")
}

fn limits(f: FileLimits) -> Result<Limits, ConfigError> {
    let d = Limits::default();
    let count = |name: &str, v: Option<usize>, default: usize| match v {
        Some(0) => Err(ConfigError(format!("limits.{name} must be at least 1"))),
        Some(n) => Ok(n),
        None => Ok(default),
    };
    let replay_bytes = count("replay_bytes", f.replay_bytes, d.replay_bytes)?;
    let max_connections = count("max_connections", f.max_connections, d.max_connections)?;
    let limits = Limits {
        max_body_bytes: count("max_body_bytes", f.max_body_bytes, d.max_body_bytes)?,
        runs_per_tenant: count("runs_per_tenant", f.runs_per_tenant, d.runs_per_tenant)?,
        subscribers_per_run: count("subscribers_per_run", f.subscribers_per_run, d.subscribers_per_run)?,
        streams_per_tenant: count("streams_per_tenant", f.streams_per_tenant, streams_per_tenant_for(max_connections))?,
        replay_events: count("replay_events", f.replay_events, events_held_by(replay_bytes))?,
        replay_bytes,
        replay_bytes_total: count("replay_bytes_total", f.replay_bytes_total, d.replay_bytes_total)?,
        finished_runs_kept: count("finished_runs_kept", f.finished_runs_kept, d.finished_runs_kept)?,
        run_timeout: seconds("limits.run_timeout_secs", f.run_timeout_secs, false)?,
        heartbeat: at_least(
            MIN_HEARTBEAT,
            "limits.heartbeat_secs",
            seconds("limits.heartbeat_secs", f.heartbeat_secs, false)?,
        )?
        .unwrap_or(d.heartbeat),
        max_connections,
        header_timeout: seconds("limits.header_timeout_secs", f.header_timeout_secs, false)?
            .unwrap_or(d.header_timeout),
        body_timeout: seconds("limits.body_timeout_secs", f.body_timeout_secs, false)?.unwrap_or(d.body_timeout),
        send_timeout: seconds("limits.send_timeout_secs", f.send_timeout_secs, false)?.unwrap_or(d.send_timeout),
    };
    if limits.replay_bytes_total < limits.replay_bytes {
        return Err(ConfigError(format!(
            "limits.replay_bytes_total = {} is less than limits.replay_bytes = {}: all runs together must have room \
             for one run's replay buffer (raise replay_bytes_total or lower replay_bytes)",
            limits.replay_bytes_total, limits.replay_bytes
        )));
    }
    Ok(limits)
}

fn nats(f: FileNats) -> Result<NatsSettings, ConfigError> {
    let Some(url) = f.url else {
        return Err(ConfigError(
            "[nats] needs url (e.g. url = \"nats://127.0.0.1:4222\"), or remove the table to run in one process".into(),
        ));
    };
    let mut n = NatsSettings::new(url);
    if let Some(prefix) = f.prefix {
        n.prefix = prefix;
    }
    if let Some(age) = seconds("nats.retention_secs", f.retention_secs, false)? {
        n.retention_age = age;
    }
    if let Some(bytes) = f.retention_bytes {
        if bytes < 1024 * 1024 {
            return Err(ConfigError("nats.retention_bytes must be at least 1048576 (1 MiB)".into()));
        }
        n.retention_bytes = bytes;
    }
    if let Some(replicas) = f.replicas {
        n.replicas = replicas;
    }
    if let Some(lease) = seconds("nats.lease_secs", f.lease_secs, false)? {
        n.lease = lease;
    }
    if let Some(t) = seconds("nats.start_timeout_secs", f.start_timeout_secs, false)? {
        n.start_timeout = t;
    }
    n.check().map_err(|e| ConfigError(format!("[nats] {e}")))?;
    Ok(n)
}

/// The shortest heartbeat: every open stream sends one, so one per microsecond would be a flood
/// the server makes itself.
const MIN_HEARTBEAT: Duration = Duration::from_millis(100);

/// `d`, unless it is shorter than `min`.
fn at_least(min: Duration, name: &str, d: Option<Duration>) -> Result<Option<Duration>, ConfigError> {
    match d {
        Some(d) if d < min => {
            Err(ConfigError(format!("{name} = {} must be at least {}", d.as_secs_f64(), min.as_secs_f64())))
        }
        d => Ok(d),
    }
}

fn seconds(name: &str, v: Option<f64>, zero_ok: bool) -> Result<Option<Duration>, ConfigError> {
    match v {
        None => Ok(None),
        Some(s) if s.is_finite() && (s > 0.0 || (zero_ok && s == 0.0)) && s < 1e9 => {
            Ok(Some(Duration::from_secs_f64(s)))
        }
        Some(s) => Err(ConfigError(format!(
            "{name} = {s} must be a number of seconds {}",
            if zero_ok { ">= 0" } else { "> 0" }
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HASH: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    #[test]
    fn empty_file_is_the_embedded_default() {
        let c = ServeConfig::from_toml("").unwrap();
        assert_eq!(c.listen.to_string(), DEFAULT_LISTEN);
        assert_eq!(c.agents.len(), 7);
        assert_eq!(c.agents["codex"].bin, PathBuf::from("codex"));
        assert!(c.tenants.is_empty());
        assert_eq!(c.limits, Limits::default());
        let mut c = c;
        let token = c.ensure_tenant().unwrap();
        assert_eq!(c.tenants[0].name, "local");
        assert_eq!(c.tenants[0].token_sha256, TokenDigest::of(&token));
        assert!(c.ensure_tenant().is_none(), "only once");
    }

    #[test]
    fn a_full_file() {
        let c = ServeConfig::from_toml(&format!(
            r#"
            listen = "127.0.0.1:0"
            [[tenant]]
            name = "acme"
            token_sha256 = "{HASH}"
            [agents.claude]
            bin = "/opt/claude"
            args = ["--x"]
            env = {{ A = "1" }}
            cwd = "/tmp"
            [agents.reviewer]
            harness = "codex"
            model = "gpt-5"
            [limits]
            runs_per_tenant = 2
            run_timeout_secs = 1.5
            max_connections = 10
            header_timeout_secs = 2
            body_timeout_secs = 0.5
            [shutdown]
            mode = "drain"
            drain_timeout_secs = 0
            "#
        ))
        .unwrap();
        assert_eq!(c.listen.port(), 0);
        assert_eq!(c.tenants[0].name, "acme");
        assert_eq!(c.agents.len(), 2);
        assert_eq!(c.agents["claude"].env, [("A".to_string(), "1".to_string())]);
        assert_eq!(c.agents["reviewer"].harness, Agent::Codex);
        assert_eq!(c.agents["reviewer"].bin, PathBuf::from("codex"));
        assert_eq!(c.limits.runs_per_tenant, 2);
        assert_eq!(c.limits.run_timeout, Some(Duration::from_millis(1500)));
        assert_eq!(c.limits.max_connections, 10);
        assert_eq!(c.limits.streams_per_tenant, 5, "half of max_connections unless set");
        assert_eq!(c.limits.header_timeout, Duration::from_secs(2));
        assert_eq!(c.limits.body_timeout, Duration::from_millis(500));
        assert_eq!(c.shutdown.mode, ShutdownMode::Drain);
        assert_eq!(c.shutdown.drain_timeout, Duration::ZERO);
        assert!(c.nats.is_none(), "one process unless [nats] says otherwise");
    }

    #[test]
    fn a_tenants_streams_are_set_or_half_the_connections() {
        let limits = |toml: &str| ServeConfig::from_toml(toml).unwrap().limits;
        assert_eq!(limits("[limits]\nstreams_per_tenant = 7").streams_per_tenant, 7);
        assert_eq!(limits("[limits]\nmax_connections = 101").streams_per_tenant, 51);
        assert_eq!(Limits::default().streams_per_tenant, streams_per_tenant_for(Limits::default().max_connections));
        assert_eq!((streams_per_tenant_for(1024), streams_per_tenant_for(101)), (512, 51));
    }

    #[test]
    fn the_replay_count_follows_the_replay_bytes_unless_set() {
        let limits = |toml: &str| ServeConfig::from_toml(toml).unwrap().limits;
        assert_eq!(Limits::default().replay_events, 262_144);
        let more = limits("[limits]\nreplay_bytes = 268435456");
        assert_eq!(more.replay_events, 2_097_152, "256 MiB at 128 bytes each");
        assert_eq!(limits("[limits]\nreplay_bytes = 100").replay_events, 1, "at least one");
        let both = limits("[limits]\nreplay_bytes = 268435456\nreplay_events = 50");
        assert_eq!((both.replay_bytes, both.replay_events), (268_435_456, 50), "as set");
    }

    #[test]
    fn connections_leave_half_the_open_files_to_the_harnesses() {
        assert_eq!(max_connections_for(None), DEFAULT_MAX_CONNECTIONS);
        assert_eq!(max_connections_for(Some(1_048_576)), DEFAULT_MAX_CONNECTIONS);
        assert_eq!(max_connections_for(Some(1024)), 512);
        assert_eq!(max_connections_for(Some(20)), 16, "never below 16");
        assert!(default_max_connections() >= 16);
    }

    #[test]
    fn the_cluster_tables() {
        let c = ServeConfig::from_toml(
            r#"
            [nats]
            url = "nats://10.0.0.5:4222"
            prefix = "team-a"
            retention_secs = 3600
            retention_bytes = 104857600
            lease_secs = 5
            [worker]
            id = "gpu-box-1"
            max_runs = 3
            "#,
        )
        .unwrap();
        let n = c.nats.unwrap();
        assert_eq!((n.url.as_str(), n.prefix.as_str()), ("nats://10.0.0.5:4222", "team-a"));
        assert_eq!(
            (n.retention_age, n.retention_bytes, n.lease),
            (Duration::from_secs(3600), 104_857_600, Duration::from_secs(5))
        );
        assert_eq!(n.start_timeout, Duration::from_secs(30), "default");
        assert_eq!((c.worker.id.as_str(), c.worker.max_runs), ("gpu-box-1", 3));
        let mut d = ServeConfig::default();
        d.set_nats_url("nats://127.0.0.1:4222").unwrap();
        assert_eq!(d.nats.unwrap().prefix, "agentstream");
    }

    #[test]
    fn mistakes_are_named() {
        let cases = [
            ("listen = 5", "listen"),
            ("listen = \"nowhere\"", "listen"),
            ("[limits]\nrun_per_tenant = 3", "run_per_tenant"),
            ("[limits]\nruns_per_tenant = 0", "runs_per_tenant"),
            ("[limits]\nheartbeat_secs = -1", "heartbeat_secs"),
            ("[limits]\nheartbeat_secs = 1e-12", "must be at least 0.1"),
            ("[limits]\nmax_connections = 0", "max_connections"),
            ("[limits]\nstreams_per_tenant = 0", "streams_per_tenant"),
            ("[limits]\nreplay_bytes = 2000\nreplay_bytes_total = 1000", "replay_bytes_total"),
            ("[limits]\nheader_timeout_secs = 0", "header_timeout_secs"),
            ("[limits]\nbody_timeout_secs = \"1\"", "body_timeout_secs"),
            ("[[tenant]]\nname = \"a\"\ntoken_sha256 = \"abc\"", "token_sha256"),
            ("[[tenant]]\nname = \"a b\"\ntoken_sha256 = \"abc\"", "name"),
            ("[agents.helper]\nbin = \"x\"", "harness"),
            ("[agents.x]\nharness = \"gpt\"", "harness"),
            ("[agents.claude]\nmodel = \"--yolo\"", "model"),
            ("[agents.claude]\nshell = true", "shell"),
            ("[shutdown]\nmode = \"never\"", "mode"),
            ("[nats]\nprefix = \"x\"", "url"),
            ("[nats]\nurl = \"nats://h\"\nprefix = \"A.B\"", "prefix"),
            ("[nats]\nurl = \"nats://h\"\nlease_secs = 0.5", "lease_secs"),
            ("[nats]\nurl = \"nats://h\"\nretention_bytes = 5", "retention_bytes"),
            ("[nats]\nurl = \"nats://h\"\nstream = \"X\"", "stream"),
            ("[worker]\nmax_runs = 0", "max_runs"),
            ("[worker]\nid = \"a b\"", "worker.id"),
        ];
        for (text, word) in cases {
            let e = ServeConfig::from_toml(text).unwrap_err().to_string();
            assert!(e.contains(word), "{text:?}: {e}");
        }
        let twice = format!(
            "[[tenant]]\nname = \"a\"\ntoken_sha256 = \"{HASH}\"\n[[tenant]]\nname = \"b\"\ntoken_sha256 = \"{HASH}\""
        );
        assert!(ServeConfig::from_toml(&twice).unwrap_err().to_string().contains("same token"));
    }
}
