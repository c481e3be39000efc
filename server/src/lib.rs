//! `agentstream serve`: coding-agent runs over HTTP, streamed with Server-Sent Events and
//! WebSocket, resumable by sequence, scoped by tenant, with a live run view.
//!
//! A client chooses a configured agent by name and gives a prompt (`POST /v1/runs`); the server
//! starts the harness through the core's runner and keeps the run's sequenced envelopes (the
//! same `{"runId","sequence","channel","event","coalesced"?}` lines `agentstream run --json`
//! prints) in a bounded per-run replay buffer. Any number of subscribers read them from any
//! resume point (`Last-Event-ID` / `?after=N`), without a gap or a duplicate, or get an explicit
//! gap notice when the point is older than the buffer. See `docs/server.md` for the API.
//!
//! # Layers
//!
//! * [`config`]: `serve.toml` (tenants, agents, limits, shutdown) and the embedded default.
//! * [`auth`]: token digests, constant-time tenant lookup.
//! * [`executor`]: the [`RunExecutor`](executor::RunExecutor) trait — where runs execute;
//!   [`local`] is the in-process one (the only user of the core's runner).
//! * [`log`]: the [`EventLog`](log::EventLog) trait — where envelopes are kept and replayed;
//!   [`MemoryLog`](log::MemoryLog) is the in-process one. [`frame`]: what subscribers get.
//! * [`registry`]: the [`RunRegistry`](registry::RunRegistry) trait — where run records live;
//!   [`MemoryRegistry`](registry::MemoryRegistry) is the in-process one.
//! * [`broker`]: [`RunBroker`], the tenant-scoped broker that connects an executor, a log and
//!   a registry (start, get, list, subscribe, cancel, limits, shutdown).
//! * [`http`]: the axum routes; [`view`]: the live run view and the offline HTML renderer.
//! * [`server`]: [`Server`]: bind, serve, shut down in order.
//!
//! Without NATS everything is in one process; with it (`serve --nats`, `agentstream worker`)
//! runs execute on workers and any instance starts, streams, resumes and cancels any run, with
//! the same broker, routes and view.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use agentstream_server::{ServeConfig, Server};
//! let mut config = ServeConfig::default();          // the seven harnesses, 127.0.0.1:8787
//! let token = config.ensure_tenant().expect("a new tenant"); // shown once
//! eprintln!("token: {token}");
//! let server = Server::bind(&config).await?;
//! let report = server.run(async { let _ = tokio::signal::ctrl_c().await; }).await?;
//! # let _ = report; Ok(()) }
//! ```

pub mod auth;
pub mod broker;
pub mod config;
pub mod executor;
pub mod frame;
pub mod http;
pub mod listen;
pub mod local;
pub mod log;
pub mod nats;
pub mod registry;
mod send_deadline;
pub mod server;
pub mod view;

pub use broker::{BrokerError, RunBroker, RunInfo, RunStatus};
pub use config::{ConfigError, ServeConfig};
pub use executor::RunRequest;
pub use server::{Server, ShutdownReport};
