//! [`Worker`]: `agentstream worker`. Takes run requests from the work queue (one durable
//! consumer per agent it runs, shared by every worker that runs it, so each request goes to one
//! worker), runs the harness through the core's bridge (the same [`LocalExecutor`] as a single
//! `serve`), publishes the run's envelopes to the events stream and its record to the runs
//! bucket, holds a lease on it, and answers cancel requests on the run's cancel subject.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::AckKind;
use async_nats::jetstream::consumer::{self, pull};
use async_nats::jetstream::stream::RetentionPolicy;
use bytes::Bytes;
use futures_util::StreamExt;
use tokio::sync::{Semaphore, mpsc, watch};

use super::log::{JetStreamLog, LostRun};
use super::registry::{NatsRegistry, WorkerPresence};
use super::wire::{self, WorkReply, WorkRequest};
use super::{Cluster, FollowBudget, NatsSettings};
use crate::auth::TenantId;
use crate::broker::{BrokerError, BrokerLimits, RunBroker};
use crate::config::{ServeConfig, ShutdownMode};
use crate::frame::now_ms;
use crate::local::LocalExecutor;
use crate::registry::RunRegistry;

/// How long one pull for a request waits at the server before asking again.
const PULL_EXPIRES: Duration = Duration::from_secs(5);
/// When a request arrives and every slot is taken, it goes back to the queue for this long.
const REQUEUE_DELAY: Duration = Duration::from_millis(100);

/// What `agentstream worker` needs beyond serve.toml's agents and limits (`[worker]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerSettings {
    /// Its id in the cluster (shown as a run's owner). Default: host name and process id.
    pub id: String,
    /// Runs it takes at once (default 8).
    pub max_runs: usize,
}

impl WorkerSettings {
    /// The defaults: `<host>-<pid>`, 8 runs at once.
    pub fn default_for_this_process() -> Self {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "worker".into());
        let id: String = format!("{host}-{}", std::process::id())
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' })
            .collect();
        WorkerSettings { id, max_runs: 8 }
    }
}

/// How a worker's shutdown went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerReport {
    /// Runs running when the signal came.
    pub running_at_signal: usize,
    /// Whether every run ended (terminal published, record written) before it returned.
    pub all_runs_ended: bool,
}

/// A connected worker; [`Worker::run`] works until a shutdown signal.
pub struct Worker {
    cluster: Arc<Cluster>,
    broker: RunBroker,
    registry: Arc<NatsRegistry>,
    settings: WorkerSettings,
    agents: Vec<String>,
    lost: mpsc::UnboundedReceiver<LostRun>,
    shutdown: crate::config::ShutdownPolicy,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker").field("id", &self.settings.id).field("agents", &self.agents).finish_non_exhaustive()
    }
}

impl Worker {
    /// Connect to NATS (`nats`), set up the streams, buckets and consumers, and announce the
    /// agents of `config`.
    pub async fn connect(config: &ServeConfig, nats: NatsSettings, settings: WorkerSettings) -> Result<Worker, String> {
        if settings.max_runs == 0 {
            return Err("worker.max_runs must be at least 1".into());
        }
        if settings.id.is_empty() || !settings.id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
            return Err(format!("worker id {:?}: only letters, digits, '-' and '_'", settings.id));
        }
        let cluster = Cluster::connect(nats, &format!("agentstream worker {}", settings.id)).await?;
        let (lost_tx, lost) = mpsc::unbounded_channel();
        let registry = Arc::new(NatsRegistry::owner(cluster.clone(), settings.id.clone(), lost_tx.clone()).await?);
        let limits = &config.limits;
        let executor = LocalExecutor::new(config.agents.clone(), limits.run_timeout, config.shutdown.kill_grace);
        let log = JetStreamLog::new(cluster.clone(), Some(lost_tx), FollowBudget::of(limits));
        let broker = RunBroker::new(
            Arc::new(executor),
            Arc::new(log),
            registry.clone(),
            BrokerLimits {
                // Tenants' limits are the serve instances' (this registry counts the tenant's
                // runs on every worker); a worker's own limit is its capacity (`max_runs`).
                runs_per_tenant: usize::MAX,
                subscribers_per_run: 1,
                streams_per_tenant: 1,
                finished_runs_kept: 1,
            },
        );
        let agents: Vec<String> = config.agents.keys().cloned().collect();
        let worker = Worker { cluster, broker, registry, settings, agents, lost, shutdown: config.shutdown };
        worker.announce();
        Ok(worker)
    }

    /// Its id.
    pub fn id(&self) -> &str {
        &self.settings.id
    }

    /// The agents it runs.
    pub fn agents(&self) -> &[String] {
        &self.agents
    }

    /// The broker of its runs.
    pub fn broker(&self) -> &RunBroker {
        &self.broker
    }

    fn announce(&self) {
        self.registry.announce(WorkerPresence {
            id: self.settings.id.clone(),
            agents: self.agents.clone(),
            max_runs: self.settings.max_runs,
            running: 0,
        });
    }

    /// Take requests until `signal`, then stop taking them and end the runs in flight by the
    /// shutdown policy (cancel, or drain up to its timeout, then cancel), each with its terminal
    /// envelope published.
    pub async fn run(
        mut self,
        signal: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<WorkerReport, String> {
        let (stop_tx, stop) = watch::channel(false);
        let capacity = Arc::new(Semaphore::new(self.settings.max_runs));
        let mut takers = Vec::new();
        for agent in &self.agents {
            let consumer = self.consumer(agent).await?;
            takers.push(tokio::spawn(take(
                self.cluster.clone(),
                self.broker.clone(),
                self.registry.clone(),
                consumer,
                capacity.clone(),
                stop.clone(),
            )));
        }
        let broker = self.broker.clone();
        let lost_listener = tokio::spawn(async move {
            while let Some(lost) = self.lost.recv().await {
                let _ = broker.cancel(&lost.tenant, &lost.run_id, &lost.why, Duration::ZERO).await;
            }
        });
        signal.await;
        let _ = stop_tx.send(true);
        for t in &takers {
            t.abort();
        }
        self.registry.withdraw().await;
        let broker = &self.broker;
        broker.stop_accepting();
        let running_at_signal = broker.running();
        let policy = self.shutdown;
        if !(policy.mode == ShutdownMode::Drain && broker.wait_idle(policy.drain_timeout).await) {
            broker.cancel_all("the worker is shutting down");
        }
        let all_runs_ended = broker.wait_idle(policy.kill_grace + Duration::from_secs(10)).await;
        lost_listener.abort();
        let _ = self.cluster.client.flush().await;
        Ok(WorkerReport { running_at_signal, all_runs_ended })
    }

    /// The durable consumer of `agent`'s requests, shared by every worker that runs it (named
    /// by [`consumer_name`]).
    async fn consumer(&self, agent: &str) -> Result<consumer::Consumer<pull::Config>, String> {
        let settings = &self.cluster.settings;
        let info = self.cluster.work.cached_info();
        if info.config.retention != RetentionPolicy::WorkQueue {
            return Err(format!("the stream {} is not a work queue", settings.work_stream()));
        }
        let name = consumer_name(agent);
        self.cluster
            .work
            // Created, or updated to this version's settings.
            .create_consumer(pull::Config {
                durable_name: Some(name.clone()),
                description: Some(format!("agentstream workers running agent {agent:?}")),
                filter_subject: settings.work_subject(agent),
                ack_policy: consumer::AckPolicy::Explicit,
                ack_wait: Duration::from_secs(30),
                // Requests go back when a worker is full; the asking instance's deadline
                // ends a request nobody takes.
                max_deliver: -1,
                ..Default::default()
            })
            .await
            .map_err(|e| format!("cannot set up the work queue's consumer for agent {agent:?}: {e}"))
    }
}

/// Take one agent's requests while there is capacity: wait for a free slot (without holding it,
/// so that every agent's taker gets its turn), pull one request, and hold a slot until its run
/// ends. A request that finds every slot taken by then goes back to the queue, for any worker.
async fn take(
    cluster: Arc<Cluster>,
    broker: RunBroker,
    registry: Arc<NatsRegistry>,
    consumer: consumer::Consumer<pull::Config>,
    capacity: Arc<Semaphore>,
    stop: watch::Receiver<bool>,
) {
    loop {
        match capacity.acquire().await {
            Ok(free) => drop(free),
            Err(_) => return,
        }
        if *stop.borrow() {
            return;
        }
        // Waits at the server until a request comes (or the pull expires), then returns with it.
        let batch = consumer.batch().max_messages(1).expires(PULL_EXPIRES).messages().await;
        let Ok(mut batch) = batch else {
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        };
        let message = match batch.next().await {
            Some(Ok(m)) => m,
            Some(Err(_)) => {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            None => continue, // nothing waiting: ask again
        };
        let Ok(slot) = capacity.clone().try_acquire_owned() else {
            let _ = message.ack_with(AckKind::Nak(Some(REQUEUE_DELAY))).await;
            continue;
        };
        let cluster = cluster.clone();
        let broker = broker.clone();
        let registry = registry.clone();
        tokio::spawn(async move {
            if let Some((tenant, run_id, cancels)) = handle(&cluster, &broker, message).await {
                // The slot is this run's until it ends.
                while !registry.wait_ended(&tenant, &run_id, Duration::from_secs(3600)).await {}
                if let Some(t) = cancels {
                    t.abort();
                }
            }
            drop(slot);
        });
    }
}

/// One request: check it, take it off the queue, start it, listen for its cancel requests,
/// answer. The started run and its cancel listener, if any.
async fn handle(
    cluster: &Cluster,
    broker: &RunBroker,
    message: async_nats::jetstream::Message,
) -> Option<(TenantId, String, Option<tokio::task::JoinHandle<()>>)> {
    let reply_to = message.headers.as_ref().and_then(|h| h.get(wire::REPLY)).map(|v| v.to_string());
    let request = match serde_json::from_slice::<WorkRequest>(&message.payload) {
        Ok(r) => r,
        Err(e) => {
            let _ = message.ack_with(AckKind::Term).await;
            answer(cluster, reply_to, refused("invalid", None, format!("unreadable run request: {e}"))).await;
            return None;
        }
    };
    if now_ms() > request.deadline_ms {
        // Its serve instance gave up on it: starting it now would make a run nobody asked for.
        let _ = message.ack().await;
        return None;
    }
    if !broker.is_accepting() {
        // Shutting down: back to the queue, for another worker.
        let _ = message.ack_with(AckKind::Nak(Some(REQUEUE_DELAY))).await;
        return None;
    }
    let tenant: TenantId = request.tenant.as_str().into();
    // A run nobody could stop must not start: first, check that cancel requests reach this
    // worker (NATS refuses the subscription when its permissions lack it).
    match cancel_probe(cluster, &tenant).await {
        CancelProbe::Heard => {}
        CancelProbe::Refused => {
            let _ = message.ack_with(AckKind::Term).await;
            answer(cluster, reply_to, refused("backend", None, CANNOT_HEAR_CANCELS.into())).await;
            return None;
        }
        CancelProbe::NoAnswer => {
            // NATS is slow or reconnecting: back to the queue, for this worker or another.
            let _ = message.ack_with(AckKind::Nak(Some(REQUEUE_DELAY))).await;
            return None;
        }
    }
    // Off the queue before starting: a run starts at most once, even if this worker dies now.
    if message.double_ack().await.is_err() {
        return None;
    }
    let reply = match broker.start(&tenant, request.run_request()).await {
        Ok(info) => {
            let run_id = info.id.clone();
            // Listening before answering: a cancel sent right after the start reaches us.
            let cancels = listen_for_cancel(cluster, broker, &tenant, &run_id).await;
            if let Some(why) = refusal_after_start(cancels.is_some(), now_ms(), request.deadline_ms) {
                let _ = broker.cancel(&tenant, &run_id, why, Duration::ZERO).await;
                answer(cluster, reply_to, refused("backend", None, why.to_string())).await;
            } else {
                answer(cluster, reply_to, WorkReply::Started(Box::new(info))).await;
            }
            return Some((tenant, run_id, cancels));
        }
        Err(BrokerError::Invalid { field, message }) => {
            refused(if field == "agent" { "unknown_agent" } else { "invalid" }, Some(field.to_string()), message)
        }
        Err(BrokerError::Unavailable(m)) => refused("unavailable", None, m),
        Err(e) => refused("backend", None, e.to_string()),
    };
    answer(cluster, reply_to, reply).await;
    None
}

/// Why a run this worker just started must be cancelled and refused, if it must: nobody could
/// cancel it (its cancel subscription failed), or it started past the time its serve instance
/// waits for the answer (`deadline_ms` + [`wire::ANSWER_GRACE`]; that client was told the run
/// did not start).
fn refusal_after_start(hears_cancels: bool, now_ms: u64, deadline_ms: u64) -> Option<&'static str> {
    if !hears_cancels {
        Some(CANNOT_HEAR_CANCELS)
    } else if now_ms > deadline_ms.saturating_add(wire::ANSWER_GRACE.as_millis() as u64) {
        Some(STARTED_TOO_LATE)
    } else {
        None
    }
}

/// What a worker says of a run it started after its serve instance stopped waiting.
const STARTED_TOO_LATE: &str = "the worker started the run after its serve instance had stopped waiting";

fn refused(kind: &str, field: Option<String>, message: String) -> WorkReply {
    WorkReply::Refused { kind: kind.into(), field, message }
}

async fn answer(cluster: &Cluster, reply_to: Option<String>, reply: WorkReply) {
    if let Some(subject) = reply_to {
        let body = Bytes::from(serde_json::to_vec(&reply).expect("replies serialize"));
        let _ = cluster.client.publish(subject, body).await;
        let _ = cluster.client.flush().await;
    }
}

/// What a worker that cannot receive cancel requests says when it refuses a run.
const CANNOT_HEAR_CANCELS: &str = "this worker cannot receive cancel requests on NATS: check its permissions (subscribe \
                                   and publish on agentstream.> and _INBOX.>)";

/// What a worker's check that cancel requests reach it found.
enum CancelProbe {
    /// Its own listener answered.
    Heard,
    /// Nobody listens: NATS refused the subscription (it reports that to the client
    /// asynchronously, so only a request shows it).
    Refused,
    /// No answer in time: NATS is slow or reconnecting; try again later.
    NoAnswer,
}

/// Whether cancel requests for `tenant`'s runs reach this worker: a request on a cancel subject
/// of the tenant's that only this probe listens on (a random token: several workers probe at
/// once), answered by it.
async fn cancel_probe(cluster: &Cluster, tenant: &TenantId) -> CancelProbe {
    let inbox = cluster.client.new_inbox();
    let token = inbox.rsplit('.').next().unwrap_or(&inbox);
    let subject = cluster.settings.cancel_subject(tenant, &format!("probe_{token}"));
    let Ok(mut probes) = cluster.client.subscribe(subject.clone()).await else { return CancelProbe::Refused };
    let client = cluster.client.clone();
    let answering = tokio::spawn(async move {
        while let Some(probe) = probes.next().await {
            if let Some(reply) = probe.reply {
                let _ = client.publish(reply, Bytes::new()).await;
            }
        }
    });
    let asked = tokio::time::timeout(CANCEL_PROBE_WAIT, cluster.client.request(subject, Bytes::new())).await;
    answering.abort();
    match asked {
        Ok(Ok(_)) => CancelProbe::Heard,
        Ok(Err(e)) if e.kind() == async_nats::RequestErrorKind::NoResponders => CancelProbe::Refused,
        _ => CancelProbe::NoAnswer,
    }
}

/// How long a worker waits for its own probe's answer.
const CANCEL_PROBE_WAIT: Duration = Duration::from_secs(3);

/// Answer cancel requests for one run (on its subject, which carries its tenant); `None` when
/// the subscription failed.
async fn listen_for_cancel(
    cluster: &Cluster,
    broker: &RunBroker,
    tenant: &TenantId,
    run_id: &str,
) -> Option<tokio::task::JoinHandle<()>> {
    let subject = cluster.settings.cancel_subject(tenant, run_id);
    let mut requests = cluster.client.subscribe(subject).await.ok()?;
    let client = cluster.client.clone();
    let broker = broker.clone();
    let tenant = tenant.clone();
    let run_id = run_id.to_string();
    Some(tokio::spawn(async move {
        while let Some(request) = requests.next().await {
            let reason = serde_json::from_slice::<serde_json::Value>(&request.payload)
                .ok()
                .and_then(|v| v["reason"].as_str().map(str::to_string))
                .filter(|r| !r.trim().is_empty())
                .unwrap_or_else(|| "cancelled over the API".into());
            // The terminal envelope confirms it; the answer only says the worker heard.
            let _ = broker.cancel(&tenant, &run_id, &reason, Duration::ZERO).await;
            if let Some(reply) = request.reply {
                let _ = client.publish(reply, Bytes::from_static(b"{\"ok\":true}")).await;
            }
        }
    }))
}

/// The name of the work queue's consumer for `agent` (names are `[A-Za-z0-9._-]`): one name per
/// agent name, as a consumer name may not hold a `.`. `_` escapes itself and the dot (`_5F_`,
/// `_2E_`), so that `x.y` and `x_2E_y` get two consumers, not one that both would overwrite.
fn consumer_name(agent: &str) -> String {
    format!("work-{}", agent.replace('_', "_5F_").replace('.', "_2E_"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_started_past_its_answer_deadline_or_deaf_to_cancels_is_refused() {
        let grace = wire::ANSWER_GRACE.as_millis() as u64;
        let deadline = 1_000_000;
        assert_eq!(refusal_after_start(true, deadline, deadline), None);
        assert_eq!(refusal_after_start(true, deadline + grace, deadline), None, "serve still waits then");
        assert_eq!(refusal_after_start(true, deadline + grace + 1, deadline), Some(STARTED_TOO_LATE));
        assert_eq!(refusal_after_start(false, deadline, deadline), Some(CANNOT_HEAR_CANCELS));
        assert_eq!(refusal_after_start(false, deadline + grace + 1, deadline), Some(CANNOT_HEAR_CANCELS));
        assert_eq!(refusal_after_start(true, u64::MAX, u64::MAX), None, "no overflow");
    }

    #[test]
    fn every_agent_name_has_a_consumer_of_its_own() {
        let names = ["claude", "x.y", "x_2E_y", "x_y", "x_5F_y", "a.b_c"];
        let consumers: std::collections::HashSet<String> = names.iter().map(|n| consumer_name(n)).collect();
        assert_eq!(consumers.len(), names.len(), "{consumers:?}");
        assert!(consumers.iter().all(|c| !c.contains('.')));
        assert_eq!(consumer_name("claude"), "work-claude");
    }
}
