//! [`NatsExecutor`]: the [`RunExecutor`] of a `serve` instance in a cluster. A run request goes
//! to the work queue; the worker that takes it starts the harness and answers with the run's
//! record (the run id is the core's, made on the worker).

use std::sync::Arc;
use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::message::PublishMessage;
use async_trait::async_trait;
use bytes::Bytes;
use futures_util::StreamExt;

use super::follow::Followers;
use super::log::JetStreamLog;
use super::registry::NatsRegistry;
use super::wire::{self, WorkReply, WorkRequest};
use super::{Cluster, redact_url};
use crate::auth::TenantId;
use crate::executor::{
    CancelUnconfirmed, ExecRequest, Execution, Health, Placement, RunControl, RunExecutor, StartError,
};
use crate::frame::now_ms;

/// Starts runs on workers through the work queue; stops them through their owner's cancel
/// subject.
pub struct NatsExecutor {
    cluster: Arc<Cluster>,
    registry: Arc<NatsRegistry>,
    /// The log's shared follows, reported in the health.
    followers: Option<Arc<Followers>>,
}

impl NatsExecutor {
    /// An executor on `cluster`, learning which agents the live workers run from `registry`.
    pub fn new(cluster: Arc<Cluster>, registry: Arc<NatsRegistry>) -> Self {
        NatsExecutor { cluster, registry, followers: None }
    }

    /// Report what `log` holds for this instance's subscribers in the health (`follows`).
    pub fn reporting(mut self, log: &JetStreamLog) -> Self {
        self.followers = Some(log.followers());
        self
    }

    /// Ask for a run and wait for a worker's answer.
    async fn ask(&self, request: &ExecRequest) -> Result<WorkReply, StartError> {
        let cluster = &self.cluster;
        let settings = &cluster.settings;
        let backend = |what: &str, e: &dyn std::fmt::Display| StartError::Backend(format!("{what}: {e}"));
        let inbox = cluster.client.new_inbox();
        let mut answers =
            cluster.client.subscribe(inbox.clone()).await.map_err(|e| backend("cannot wait for a worker", &e))?;
        // Both waits end at instants fixed now, with the request's deadline: a worker judges
        // whether it is late by the same clock reading (`deadline_ms` + `ANSWER_GRACE`).
        let asked = tokio::time::Instant::now();
        let work = WorkRequest {
            tenant: request.tenant.to_string(),
            agent: request.request.agent.clone(),
            prompt: request.request.prompt.clone(),
            model: request.request.model.clone(),
            resume: request.request.resume.clone(),
            deadline_ms: now_ms() + settings.start_timeout.as_millis() as u64,
        };
        let mut headers = HeaderMap::new();
        headers.insert(wire::REPLY, inbox.as_str());
        let publish = PublishMessage::build()
            .payload(Bytes::from(serde_json::to_vec(&work).expect("requests serialize")))
            .headers(headers);
        let queued = cluster
            .js
            .send_publish(settings.work_subject(&request.request.agent), publish)
            .await
            .map_err(|e| backend("cannot queue the run request", &e))?
            .await
            .map_err(|e| backend("cannot queue the run request", &e))?;
        let reply = match tokio::time::timeout_at(asked + settings.start_timeout, answers.next()).await {
            Ok(Some(m)) => m,
            Ok(None) => return Err(StartError::Backend("the connection to NATS closed".into())),
            Err(_) => {
                // Still queued: nobody took it; take it back. Already taken: the worker is
                // starting it, give it a moment more.
                if cluster.work.delete_message(queued.sequence).await.unwrap_or(false) {
                    let workers = self.registry.workers();
                    let with_agent = workers.iter().filter(|w| w.agents.contains(&request.request.agent)).count();
                    return Err(StartError::Backend(format!(
                        "no worker took the run request within {} s ({with_agent} live worker(s) run agent {:?}, \
                         all busy or unreachable)",
                        settings.start_timeout.as_secs(),
                        request.request.agent
                    )));
                }
                match tokio::time::timeout_at(asked + settings.start_timeout + wire::ANSWER_GRACE, answers.next()).await
                {
                    Ok(Some(m)) => m,
                    _ => {
                        // The client is told the run did not start: one the worker starts after
                        // all is cancelled, not left running with nobody to read or stop it.
                        let cluster = cluster.clone();
                        let tenant = request.tenant.clone();
                        tokio::spawn(async move {
                            let late = tokio::time::timeout(wire::LATE_ANSWER_WATCH, answers.next()).await;
                            let started = late.ok().flatten().and_then(|m| serde_json::from_slice(&m.payload).ok());
                            if let Some(WorkReply::Started(info)) = started {
                                NatsControl::new(cluster, &tenant, &info.id)
                                    .cancel("the serve instance had stopped waiting for the worker to start it");
                            }
                        });
                        return Err(StartError::Backend(
                            "a worker took the run request but did not answer in time".into(),
                        ));
                    }
                }
            }
        };
        serde_json::from_slice(&reply.payload)
            .map_err(|e| StartError::Backend(format!("a worker answered something unreadable: {e}")))
    }
}

#[async_trait]
impl RunExecutor for NatsExecutor {
    /// The agents of the live workers.
    fn agents(&self) -> Vec<String> {
        let mut agents: Vec<String> = self.registry.workers().into_iter().flat_map(|w| w.agents).collect();
        agents.sort();
        agents.dedup();
        agents
    }

    async fn start(&self, request: ExecRequest) -> Result<Execution, StartError> {
        if !self.cluster.is_connected() {
            return Err(StartError::Backend("the connection to NATS is down".into()));
        }
        match self.ask(&request).await? {
            WorkReply::Started(info) => Ok(Execution {
                run_id: info.id.clone(),
                control: Arc::new(NatsControl::new(self.cluster.clone(), &request.tenant, &info.id)),
                placement: Placement::Remote(info),
            }),
            WorkReply::Refused { kind, message, .. } => Err(match kind.as_str() {
                "unknown_agent" | "invalid" => StartError::UnknownAgent,
                "unavailable" => StartError::Unavailable(message),
                _ => StartError::Backend(message),
            }),
        }
    }

    fn control(&self, tenant: &TenantId, run_id: &str) -> Option<Arc<dyn RunControl>> {
        Some(Arc::new(NatsControl::new(self.cluster.clone(), tenant, run_id)))
    }

    fn health(&self) -> Health {
        let connected = self.cluster.is_connected();
        let workers = self.registry.workers();
        Health {
            ok: connected,
            detail: Some(serde_json::json!({
                "kind": "nats",
                "connected": connected,
                "url": redact_url(&self.cluster.settings.url),
                "workers": workers.len(),
                "agents": self.agents(),
                "follows": self.followers.as_ref().map(|f| f.report()),
            })),
        }
    }
}

/// Cancels a run on its worker: a request on the run's cancel subject, which carries the
/// tenant (another tenant's subject reaches nobody).
struct NatsControl {
    cluster: Arc<Cluster>,
    subject: String,
}

impl NatsControl {
    fn new(cluster: Arc<Cluster>, tenant: &str, run_id: &str) -> Self {
        let subject = cluster.settings.cancel_subject(tenant, run_id);
        NatsControl { cluster, subject }
    }
}

impl NatsControl {
    /// Send the cancel request and wait up to `within` for the worker's answer.
    async fn request(&self, reason: &str, within: Duration) -> Result<(), CancelUnconfirmed> {
        let body = Bytes::from(serde_json::to_vec(&serde_json::json!({"reason": reason})).expect("json"));
        match tokio::time::timeout(within, self.cluster.client.request(self.subject.clone(), body)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) if e.kind() == async_nats::RequestErrorKind::NoResponders => {
                Err(CancelUnconfirmed::NoListener(NO_WORKER_LISTENS.into()))
            }
            Ok(Err(e)) => Err(CancelUnconfirmed::NoConfirmation(format!(
                "the cancel request to the run's worker failed ({e}); cancelling again is safe"
            ))),
            Err(_) => Err(CancelUnconfirmed::NoConfirmation(format!(
                "the run's worker did not confirm the cancel within {:.1} s; it may still arrive, and cancelling \
                 again is safe",
                within.as_secs_f64()
            ))),
        }
    }
}

#[async_trait]
impl RunControl for NatsControl {
    fn cancel(&self, reason: &str) {
        let control = NatsControl { cluster: self.cluster.clone(), subject: self.subject.clone() };
        let reason = reason.to_string();
        // Nobody waits for an answer here (a WebSocket client's cancel, a late start's): sent
        // even while NATS is unreachable, when the client sends it on reconnecting. The broker
        // waits for the run's end itself; a worker that is gone is the reaper's.
        tokio::spawn(async move {
            let _ = control.request(&reason, Duration::from_secs(5)).await;
        });
    }

    async fn cancel_confirmed(&self, reason: &str, within: Duration) -> Result<(), CancelUnconfirmed> {
        // While disconnected the client would queue the request and send it once NATS is back,
        // long after the caller was told it failed: a cancel the caller gave up on must not
        // land later, so none is sent.
        if !self.cluster.is_connected() {
            return Err(CancelUnconfirmed::NotSent(CANCEL_NOT_SENT.into()));
        }
        self.request(reason, within).await
    }
}

/// Why a cancel was not sent while NATS is unreachable.
const CANCEL_NOT_SENT: &str =
    "NATS is unreachable, so the cancel was not sent to the run's worker: try again once /healthz is ok";

/// Why a cancel reached nobody: no worker listens on the run's cancel subject.
const NO_WORKER_LISTENS: &str = "no worker is listening for this run's cancel requests (its worker is gone or the run \
                                 just ended); the reaper ends its record once the worker's lease expires";
