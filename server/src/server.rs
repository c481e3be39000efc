//! [`Server`]: binds the listener, serves the API, and shuts down in order.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

use crate::auth::Tenants;
use crate::broker::{BrokerLimits, RunBroker};
use crate::config::{ServeConfig, ShutdownMode, ShutdownPolicy};
use crate::http::{AppState, router};
use crate::listen::{self, Connections};
use crate::local::LocalExecutor;
use crate::log::{MemoryLog, Retention};
use crate::nats::{Cluster, FollowBudget, JetStreamLog, NatsExecutor, NatsRegistry};
use crate::registry::MemoryRegistry;

/// After the last run ended, how long open streams get to deliver their terminal envelopes
/// before the server stops waiting for their connections.
const DELIVERY_GRACE: Duration = Duration::from_secs(5);

/// A bound server: in-process runs and in-memory logs, or — with `[nats]` — a member of a
/// cluster whose runs execute on workers. [`Server::run`] serves until a shutdown signal.
pub struct Server {
    listener: TcpListener,
    broker: RunBroker,
    state: AppState,
    shutdown: ShutdownPolicy,
    connections: Connections,
    timeouts: listen::Timeouts,
}

/// How a shutdown went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Runs still running when the signal came.
    pub running_at_signal: usize,
    /// Whether every run ended (harness processes reaped) before the server returned.
    pub all_runs_ended: bool,
    /// Whether every connection closed by itself (streams delivered their terminal envelopes).
    pub connections_closed: bool,
}

impl Server {
    /// Bind `config.listen` and build the broker: in-process, or on the cluster of
    /// `config.nats` (connecting to NATS, failing with what to fix when it cannot). Fails when
    /// the address cannot be bound or no tenant is configured (see
    /// [`ServeConfig::ensure_tenant`]).
    pub async fn bind(config: &ServeConfig) -> std::io::Result<Server> {
        if config.tenants.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "no tenant is configured: nobody could call the API (add a [[tenant]] or call ensure_tenant)",
            ));
        }
        let listener = TcpListener::bind(config.listen).await?;
        let limits = &config.limits;
        let broker_limits = BrokerLimits {
            runs_per_tenant: limits.runs_per_tenant,
            subscribers_per_run: limits.subscribers_per_run,
            streams_per_tenant: limits.streams_per_tenant,
            finished_runs_kept: limits.finished_runs_kept,
        };
        let broker = match &config.nats {
            None => {
                let executor =
                    LocalExecutor::new(config.agents.clone(), limits.run_timeout, config.shutdown.kill_grace);
                let log = MemoryLog::new(Retention::of(limits));
                RunBroker::new(
                    Arc::new(executor),
                    Arc::new(log),
                    Arc::new(MemoryRegistry::new(limits.finished_runs_kept)),
                    broker_limits,
                )
            }
            Some(nats) => {
                let cluster =
                    Cluster::connect(nats.clone(), "agentstream serve").await.map_err(std::io::Error::other)?;
                let registry = Arc::new(NatsRegistry::observer(cluster.clone()).await.map_err(std::io::Error::other)?);
                let log = JetStreamLog::new(cluster.clone(), None, FollowBudget::of(limits));
                let executor = NatsExecutor::new(cluster, registry.clone()).reporting(&log);
                RunBroker::new(Arc::new(executor), Arc::new(log), registry, broker_limits)
            }
        };
        let connections = Connections::new(limits.max_connections);
        let state = AppState::new(
            broker.clone(),
            Tenants::new(&config.tenants),
            limits.max_body_bytes,
            limits.body_timeout,
            limits.heartbeat,
            config.shutdown.kill_grace + Duration::from_secs(2),
            connections.clone(),
        );
        Ok(Server {
            listener,
            broker,
            state,
            shutdown: config.shutdown,
            connections,
            timeouts: listen::Timeouts { header: limits.header_timeout, send: limits.send_timeout },
        })
    }

    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().expect("a bound listener has an address")
    }

    /// The broker behind the routes.
    pub fn broker(&self) -> &RunBroker {
        &self.broker
    }

    /// A one-time sign-in code for the live view that gives `token`, the token of `tenant`:
    /// open `/#code=<code>` (see [`SignInLinks`](crate::auth::SignInLinks)).
    pub fn sign_in_code(&self, tenant: &str, token: &str) -> String {
        self.state.sign_in().add(tenant, token)
    }

    /// Serve until `signal` completes, then shut down: stop accepting connections and runs,
    /// end every run (or drain them, by [`ShutdownPolicy`]) so that each stream delivers its
    /// terminal envelope, wait for the harness processes, and return.
    pub async fn run(self, signal: impl Future<Output = ()> + Send + 'static) -> std::io::Result<ShutdownReport> {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let serve = listen::serve(self.listener, router(self.state), self.connections, self.timeouts, stop_rx);
        tokio::pin!(serve);
        tokio::select! {
            () = &mut serve => {
                return Ok(ShutdownReport { running_at_signal: 0, all_runs_ended: true, connections_closed: true });
            }
            _ = signal => {}
        }
        let broker = self.broker;
        broker.stop_accepting();
        let _ = stop_tx.send(true);
        let running_at_signal = broker.running();
        let policy = self.shutdown;
        let finish = async {
            if policy.mode == ShutdownMode::Drain && broker.wait_idle(policy.drain_timeout).await {
                return true;
            }
            broker.cancel_all("the server is shutting down");
            // The runner escalates to SIGKILL after the grace period, so this ends.
            broker.wait_idle(policy.kill_grace + Duration::from_secs(10)).await
        };
        // Keep serving the open connections while runs end: their streams carry the terminals.
        tokio::pin!(finish);
        let mut served = false;
        let all_runs_ended = loop {
            tokio::select! {
                ended = &mut finish => break ended,
                () = &mut serve, if !served => served = true,
            }
        };
        // Streams of runs on workers do not end here: end them (their clients resume on another
        // instance). Streams of this process's runs have their terminals by now.
        broker.close_streams();
        let connections_closed = served || tokio::time::timeout(DELIVERY_GRACE, &mut serve).await.is_ok();
        Ok(ShutdownReport { running_at_signal, all_runs_ended, connections_closed })
    }
}
