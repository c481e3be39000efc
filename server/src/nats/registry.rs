//! [`NatsRegistry`]: the [`RunRegistry`] on the key-value buckets `<prefix>-runs` (records) and
//! `<prefix>-leases` (a worker's leases on its runs, and its presence).
//!
//! Every process keeps an index of the records, fed by a watch on the runs bucket (so `list`
//! and the per-tenant running count cost no round trip) and of the live leases and workers,
//! fed by a watch on the leases bucket. A process that runs harnesses (a worker: the registry's
//! *owner* mode) writes the records of its runs, holds a lease on each (a key with its own TTL,
//! renewed every third of the lease) and announces itself (`worker.<id>`, also with a TTL, with
//! its agents). Every process reaps: a run whose lease expired is ended as failed (see
//! [`super::reaper`]).
//!
//! Records are written with compare-and-set on the key's revision, so a worker's late write
//! never overwrites the record a reaper finished.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentstream_core::runner::RunResult;
use async_nats::jetstream::kv::{self, Operation};
use async_nats::jetstream::message::PublishMessage;
use async_trait::async_trait;
use bytes::Bytes;
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, mpsc, watch};
use tokio::task::JoinHandle;

use super::log::LostRun;
use super::wire::StoredRun;
use super::{Cluster, reaper};
use crate::auth::TenantId;
use crate::broker::{RunInfo, RunStatus};
use crate::registry::{ListPage, RegistryError, RunPage, RunRegistry, page_of};

/// What a worker announces (the value of its presence key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerPresence {
    /// Its id.
    pub id: String,
    /// The agents it runs.
    pub agents: Vec<String>,
    /// How many runs it takes at once.
    pub max_runs: usize,
    /// How many it runs now.
    pub running: usize,
}

struct Indexed {
    tenant: TenantId,
    info: RunInfo,
    revision: u64,
}

#[derive(Default)]
struct Index {
    runs: HashMap<String, Indexed>,
    running: HashMap<TenantId, usize>,
    /// Live run leases, by record key (`<tenant>.<run>`).
    leases: HashSet<String>,
    /// Live workers, by id.
    workers: HashMap<String, WorkerPresence>,
    /// Running runs seen without a lease, since when (by record key).
    missing_since: HashMap<String, Instant>,
}

impl Index {
    fn upsert(&mut self, key_tenant: TenantId, info: RunInfo, revision: u64) {
        if let Some(old) = self.runs.get(&info.id) {
            if old.revision > revision {
                return; // a newer one is known
            }
            if old.info.status == RunStatus::Running {
                self.dec(&old.tenant.clone());
            }
        }
        if info.status == RunStatus::Running {
            *self.running.entry(key_tenant.clone()).or_default() += 1;
        }
        self.runs.insert(info.id.clone(), Indexed { tenant: key_tenant, info, revision });
    }

    fn remove(&mut self, run_id: &str) {
        if let Some(old) = self.runs.remove(run_id)
            && old.info.status == RunStatus::Running
        {
            self.dec(&old.tenant);
        }
    }

    fn dec(&mut self, tenant: &TenantId) {
        if let Some(n) = self.running.get_mut(tenant) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.running.remove(tenant);
            }
        }
    }
}

/// A run this process runs (owner mode).
struct Owned {
    tenant: TenantId,
    info: RunInfo,
    record_revision: u64,
    lease_revision: u64,
    /// Progress not yet written.
    dirty: bool,
    /// When the record was last written: it is written again before the runs bucket's age
    /// limit would remove it (a running run may print nothing for longer than that).
    written: tokio::time::Instant,
    /// Lost to a reaper: nothing more is written.
    lost: bool,
}

pub(super) struct Shared {
    pub(super) cluster: Arc<Cluster>,
    index: Mutex<Index>,
    /// Bumped on every index change.
    version: watch::Sender<u64>,
    /// The worker id, in owner mode.
    owner: Option<String>,
    owned: Mutex<HashMap<String, Owned>>,
    lost: Option<mpsc::UnboundedSender<LostRun>>,
    presence: Mutex<Option<WorkerPresence>>,
    /// Tells the lease keeper to publish now rather than at its next tick: a worker that
    /// announces itself is visible at once, not a third of a lease later.
    renew_now: Notify,
}

/// The [`RunRegistry`] on NATS key-value buckets. Dropping it stops its background tasks.
pub struct NatsRegistry {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for NatsRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NatsRegistry").field("owner", &self.shared.owner).finish_non_exhaustive()
    }
}

impl Drop for NatsRegistry {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

fn parse_key(key: &str) -> Option<(&str, &str)> {
    key.split_once('.')
}

impl NatsRegistry {
    /// A registry that reads (a `serve` instance). Returns once the index holds every record.
    pub async fn observer(cluster: Arc<Cluster>) -> Result<Self, String> {
        Self::start(cluster, None, None).await
    }

    /// A registry that also writes the records of the runs of worker `worker_id`, holds their
    /// leases, and reports runs it lost on `lost`.
    pub async fn owner(
        cluster: Arc<Cluster>,
        worker_id: String,
        lost: mpsc::UnboundedSender<LostRun>,
    ) -> Result<Self, String> {
        Self::start(cluster, Some(worker_id), Some(lost)).await
    }

    async fn start(
        cluster: Arc<Cluster>,
        owner: Option<String>,
        lost: Option<mpsc::UnboundedSender<LostRun>>,
    ) -> Result<Self, String> {
        let shared = Arc::new(Shared {
            cluster,
            index: Mutex::default(),
            version: watch::Sender::new(0),
            owner,
            owned: Mutex::default(),
            lost,
            presence: Mutex::new(None),
            renew_now: Notify::new(),
        });
        let mut tasks = Vec::new();
        let (runs_synced_tx, mut runs_synced) = watch::channel(false);
        let (leases_synced_tx, mut leases_synced) = watch::channel(false);
        tasks.push(tokio::spawn(watch_runs(shared.clone(), runs_synced_tx)));
        tasks.push(tokio::spawn(watch_leases(shared.clone(), leases_synced_tx)));
        tasks.push(tokio::spawn(sweep(shared.clone())));
        if shared.owner.is_some() {
            tasks.push(tokio::spawn(keep_leases(shared.clone())));
        }
        let registry = NatsRegistry { shared, tasks };
        // Serve nothing before the records and the workers are known (an agent would look
        // unknown, a run missing).
        let synced = async {
            let _ = runs_synced.wait_for(|s| *s).await;
            let _ = leases_synced.wait_for(|s| *s).await;
        };
        tokio::time::timeout(Duration::from_secs(30), synced)
            .await
            .map_err(|_| "timed out reading the run records and leases from NATS".to_string())?;
        Ok(registry)
    }

    /// The live workers (as they last announced themselves), by id.
    pub fn workers(&self) -> Vec<WorkerPresence> {
        let mut w: Vec<WorkerPresence> = self.shared.index.lock().expect("index").workers.values().cloned().collect();
        w.sort_by(|a, b| a.id.cmp(&b.id));
        w
    }

    /// Announce this worker (owner mode): its agents and load, renewed with the leases.
    pub fn announce(&self, presence: WorkerPresence) {
        *self.shared.presence.lock().expect("presence") = Some(presence);
        self.shared.renew_now.notify_one();
    }

    /// Stop announcing this worker and remove its presence key (at shutdown).
    pub async fn withdraw(&self) {
        let presence = self.shared.presence.lock().expect("presence").take();
        if let Some(p) = presence {
            let key = self.shared.cluster.settings.worker_key(&p.id);
            let _ = self.shared.cluster.leases.purge(key).await;
        }
    }
}

impl Shared {
    fn bump(&self) {
        self.version.send_modify(|v| *v += 1);
    }

    fn indexed(&self, tenant: &TenantId, run_id: &str) -> Option<RunInfo> {
        let index = self.index.lock().expect("index");
        index.runs.get(run_id).filter(|r| r.tenant == *tenant).map(|r| r.info.clone())
    }

    /// Read a record from the bucket (not the index): `(stored, revision)`.
    pub(super) async fn read(&self, key: &str) -> Result<Option<(StoredRun, u64)>, String> {
        match self.cluster.runs.entry(key).await {
            Ok(Some(e)) if e.operation == Operation::Put => {
                Ok(serde_json::from_slice::<StoredRun>(&e.value).ok().map(|s| (s, e.revision)))
            }
            Ok(_) => Ok(None),
            Err(e) => Err(format!("cannot read the run record from NATS: {e}")),
        }
    }

    /// Write a record if its revision is still `revision`; the new revision, or `Ok(None)` when
    /// someone else wrote it since.
    pub(super) async fn write(&self, key: &str, stored: &StoredRun, revision: u64) -> Result<Option<u64>, String> {
        let value = Bytes::from(serde_json::to_vec(stored).expect("records serialize"));
        match self.cluster.runs.update(key, value, revision).await {
            Ok(rev) => {
                self.index.lock().expect("index").upsert(stored.tenant.as_str().into(), stored.run.clone(), rev);
                self.bump();
                Ok(Some(rev))
            }
            Err(e) if e.kind() == kv::UpdateErrorKind::WrongLastRevision => Ok(None),
            Err(e) => Err(format!("cannot write the run record to NATS: {e}")),
        }
    }

    fn report_lost(&self, tenant: &TenantId, run_id: &str, why: &str) {
        if let Some(lost) = &self.lost {
            let _ = lost.send(LostRun { tenant: tenant.clone(), run_id: run_id.to_string(), why: why.to_string() });
        }
    }

    /// Running runs without a lease for longer than a lease period (the sweep's candidates).
    fn orphans(&self) -> Vec<String> {
        let lease = self.cluster.settings.lease;
        let now = Instant::now();
        let owned: HashSet<String> = self.owned.lock().expect("owned").keys().cloned().collect();
        let mut index = self.index.lock().expect("index");
        let index = &mut *index;
        let running: Vec<String> = index
            .runs
            .values()
            .filter(|r| r.info.status == RunStatus::Running && !owned.contains(&r.info.id))
            .map(|r| self.cluster.settings.run_key(&r.tenant, &r.info.id))
            .collect();
        index.missing_since.retain(|k, _| running.contains(k));
        let mut due = Vec::new();
        for key in running {
            if index.leases.contains(&key) {
                index.missing_since.remove(&key);
            } else {
                let since = *index.missing_since.entry(key.clone()).or_insert(now);
                if now.duration_since(since) > lease {
                    due.push(key);
                }
            }
        }
        due
    }
}

/// The next entry of a watch; `None` when the watch broke or when the connection came back
/// after an outage (the watch's consumer may not have survived it, and would only notice after
/// missing its heartbeats): the caller re-creates the watch from the last revision seen.
async fn next_entry(watch: &mut kv::Watch, connection: &mut watch::Receiver<bool>) -> Option<kv::Entry> {
    loop {
        tokio::select! {
            entry = watch.next() => return entry.and_then(Result::ok),
            changed = connection.changed() => {
                if changed.is_err() {
                    return watch.next().await.and_then(Result::ok);
                }
                if *connection.borrow_and_update() {
                    return None;
                }
            }
        }
    }
}

/// Keep the index of records current: a watch on the runs bucket, re-established from the last
/// revision seen whenever it breaks.
/// Whether a bucket holds nothing (a watch of it delivers nothing to be synced by).
async fn bucket_is_empty(shared: &Shared, bucket: &str) -> bool {
    match shared.cluster.js.get_stream(format!("KV_{bucket}")).await {
        Ok(s) => s.cached_info().state.messages == 0,
        Err(_) => false,
    }
}

async fn watch_runs(shared: Arc<Shared>, synced: watch::Sender<bool>) {
    let bucket = shared.cluster.settings.runs_bucket();
    let mut from: Option<u64> = None;
    let mut connection = shared.cluster.connection();
    loop {
        let empty = bucket_is_empty(&shared, &bucket).await;
        let watch = match from {
            None => shared.cluster.runs.watch_with_history(">").await, // the current values, then changes
            Some(rev) => shared.cluster.runs.watch_all_from_revision(rev + 1).await,
        };
        let Ok(mut watch) = watch else {
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        };
        if empty {
            synced.send_replace(true);
        }
        connection.borrow_and_update();
        while let Some(entry) = next_entry(&mut watch, &mut connection).await {
            from = Some(entry.revision);
            if let Some((_, run_id)) = parse_key(&entry.key) {
                let mut index = shared.index.lock().expect("index");
                match entry.operation {
                    Operation::Put => {
                        if let Ok(stored) = serde_json::from_slice::<StoredRun>(&entry.value) {
                            index.upsert(stored.tenant.as_str().into(), stored.run, entry.revision);
                        }
                    }
                    Operation::Delete | Operation::Purge => index.remove(run_id),
                }
            }
            shared.bump();
            if entry.seen_current {
                synced.send_replace(true);
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Keep the index of leases and workers current; a run lease that expires sends a reaper.
async fn watch_leases(shared: Arc<Shared>, synced: watch::Sender<bool>) {
    let bucket = shared.cluster.settings.leases_bucket();
    let mut from: Option<u64> = None;
    let mut connection = shared.cluster.connection();
    loop {
        let empty = bucket_is_empty(&shared, &bucket).await;
        let watch = match from {
            None => shared.cluster.leases.watch_with_history(">").await,
            Some(rev) => shared.cluster.leases.watch_all_from_revision(rev + 1).await,
        };
        let Ok(mut watch) = watch else {
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        };
        if empty {
            synced.send_replace(true);
        }
        connection.borrow_and_update();
        while let Some(entry) = next_entry(&mut watch, &mut connection).await {
            from = Some(entry.revision);
            if entry.seen_current {
                synced.send_replace(true);
            }
            let expired = {
                let mut index = shared.index.lock().expect("index");
                match (entry.key.split_once('.'), entry.operation) {
                    (Some(("run", key)), Operation::Put) => {
                        index.leases.insert(key.to_string());
                        index.missing_since.remove(key);
                        None
                    }
                    (Some(("run", key)), op) => {
                        index.leases.remove(key);
                        // Expired (a TTL marker), not released by its worker at the run's end.
                        (op == Operation::Purge).then(|| key.to_string())
                    }
                    (Some(("worker", id)), Operation::Put) => {
                        if let Ok(p) = serde_json::from_slice::<WorkerPresence>(&entry.value) {
                            index.workers.insert(id.to_string(), p);
                        }
                        None
                    }
                    (Some(("worker", id)), _) => {
                        index.workers.remove(id);
                        None
                    }
                    _ => None,
                }
            };
            shared.bump();
            if let Some(key) = expired {
                let running = parse_key(&key).is_some_and(|(_, run_id)| {
                    let index = shared.index.lock().expect("index");
                    index.runs.get(run_id).is_some_and(|r| r.info.status == RunStatus::Running)
                });
                if running {
                    tokio::spawn(reaper::reap(shared.clone(), key));
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Every lease period: reap running runs whose lease has been missing that long (an expiry
/// nobody saw, e.g. while every instance was down).
async fn sweep(shared: Arc<Shared>) {
    let period = shared.cluster.settings.lease;
    loop {
        tokio::time::sleep(period).await;
        for key in shared.orphans() {
            tokio::spawn(reaper::reap(shared.clone(), key));
        }
    }
}

/// Owner mode: renew the leases of this process's runs and its presence every third of the
/// lease, and write their progress.
async fn keep_leases(shared: Arc<Shared>) {
    let lease = shared.cluster.settings.lease;
    let mut tick = tokio::time::interval(lease / 3);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = shared.renew_now.notified() => {}
        }
        if !shared.cluster.is_connected() {
            continue;
        }
        let presence = shared.presence.lock().expect("presence").clone();
        if let Some(mut p) = presence {
            p.running = shared.owned.lock().expect("owned").len();
            let key = shared.cluster.settings.worker_key(&p.id);
            let body = Bytes::from(serde_json::to_vec(&p).expect("presence serializes"));
            let publish = PublishMessage::build().payload(body).ttl(lease);
            if let Ok(ack) =
                shared.cluster.js.send_publish(format!("{}{key}", shared.cluster.leases.prefix), publish).await
            {
                let _ = ack.await;
            }
        }
        // Records written longer ago than half the runs bucket's age limit are written again.
        let retention = shared.cluster.settings.retention_age;
        let aging = |written: tokio::time::Instant| !retention.is_zero() && written.elapsed() >= retention / 2;
        let runs: Vec<(String, TenantId, u64, bool)> = shared
            .owned
            .lock()
            .expect("owned")
            .iter()
            .filter(|(_, o)| !o.lost)
            .map(|(id, o)| (id.clone(), o.tenant.clone(), o.lease_revision, o.dirty || aging(o.written)))
            .collect();
        for (run_id, tenant, lease_revision, dirty) in runs {
            renew(&shared, &tenant, &run_id, lease_revision).await;
            if dirty {
                write_progress(&shared, &tenant, &run_id).await;
            }
        }
    }
}

async fn renew(shared: &Shared, tenant: &TenantId, run_id: &str, revision: u64) {
    let settings = &shared.cluster.settings;
    let owner = shared.owner.clone().unwrap_or_default();
    let subject = format!("{}{}", shared.cluster.leases.prefix, settings.lease_key(tenant, run_id));
    let publish = PublishMessage::build()
        .payload(Bytes::from(owner))
        .expected_last_subject_sequence(revision)
        .ttl(settings.lease);
    let result = match shared.cluster.js.send_publish(subject, publish).await {
        Ok(ack) => ack.await,
        Err(e) => Err(e),
    };
    match result {
        Ok(ack) => {
            if let Some(o) = shared.owned.lock().expect("owned").get_mut(run_id) {
                o.lease_revision = ack.sequence;
            }
        }
        Err(e) if e.kind() == async_nats::jetstream::context::PublishErrorKind::WrongLastSequence => {
            // It expired (or was taken): the run is no longer ours to write.
            if let Some(o) = shared.owned.lock().expect("owned").get_mut(run_id) {
                o.lost = true;
            }
            shared.report_lost(tenant, run_id, "this worker's lease on the run expired before it could renew it");
        }
        Err(_) => {} // no connection: the next tick tries again
    }
}

async fn write_progress(shared: &Shared, tenant: &TenantId, run_id: &str) {
    let Some((stored, revision)) = ({
        let mut owned = shared.owned.lock().expect("owned");
        owned.get_mut(run_id).map(|o| {
            o.dirty = false;
            (
                StoredRun {
                    tenant: o.tenant.to_string(),
                    owner: shared.owner.clone().unwrap_or_default(),
                    run: o.info.clone(),
                },
                o.record_revision,
            )
        })
    }) else {
        return;
    };
    let key = shared.cluster.settings.run_key(tenant, run_id);
    match shared.write(&key, &stored, revision).await {
        Ok(Some(rev)) => {
            if let Some(o) = shared.owned.lock().expect("owned").get_mut(run_id) {
                o.record_revision = rev;
                o.written = tokio::time::Instant::now();
            }
        }
        Ok(None) => {
            if let Some(o) = shared.owned.lock().expect("owned").get_mut(run_id) {
                o.lost = true;
            }
            shared.report_lost(tenant, run_id, "another instance ended this run");
        }
        Err(_) => {
            if let Some(o) = shared.owned.lock().expect("owned").get_mut(run_id) {
                o.dirty = true;
            }
        }
    }
}

#[async_trait]
impl RunRegistry for NatsRegistry {
    async fn insert(&self, tenant: &TenantId, mut info: RunInfo) -> Result<RunInfo, RegistryError> {
        let shared = &self.shared;
        let Some(owner) = shared.owner.clone() else {
            return Err(RegistryError("this instance only reads run records; runs execute on workers".into()));
        };
        info.worker = Some(owner.clone());
        let settings = &shared.cluster.settings;
        let lease_key = settings.lease_key(tenant, &info.id);
        let lease_revision = shared
            .cluster
            .leases
            .create_with_ttl(&lease_key, Bytes::from(owner.clone()), settings.lease)
            .await
            .map_err(|e| RegistryError(format!("cannot take the run's lease on NATS: {e}")))?;
        let key = settings.run_key(tenant, &info.id);
        let stored = StoredRun { tenant: tenant.to_string(), owner, run: info.clone() };
        let value = Bytes::from(serde_json::to_vec(&stored).expect("records serialize"));
        let record_revision = match shared.cluster.runs.create(&key, value).await {
            Ok(rev) => rev,
            Err(e) => {
                let _ = shared.cluster.leases.delete(&lease_key).await;
                return Err(RegistryError(format!("cannot record the run on NATS: {e}")));
            }
        };
        shared.owned.lock().expect("owned").insert(
            info.id.clone(),
            Owned {
                tenant: tenant.clone(),
                info: info.clone(),
                record_revision,
                lease_revision,
                dirty: false,
                written: tokio::time::Instant::now(),
                lost: false,
            },
        );
        shared.index.lock().expect("index").upsert(tenant.clone(), info.clone(), record_revision);
        shared.bump();
        Ok(info)
    }

    async fn get(&self, tenant: &TenantId, run_id: &str) -> Result<Option<RunInfo>, RegistryError> {
        if let Some(info) = self.shared.indexed(tenant, run_id) {
            return Ok(Some(info));
        }
        // Not seen yet (the watch lags a write by a moment): ask the bucket.
        let key = self.shared.cluster.settings.run_key(tenant, run_id);
        let found = self.shared.read(&key).await.map_err(RegistryError)?;
        Ok(found.filter(|(s, _)| s.tenant == **tenant && s.run.id == run_id).map(|(s, rev)| {
            self.shared.index.lock().expect("index").upsert(tenant.clone(), s.run.clone(), rev);
            s.run
        }))
    }

    async fn list(&self, tenant: &TenantId, page: &ListPage) -> Result<RunPage, RegistryError> {
        let index = self.shared.index.lock().expect("index");
        Ok(page_of(index.runs.values().filter(|r| r.tenant == *tenant).map(|r| &r.info), page))
    }

    fn running(&self, tenant: &TenantId) -> usize {
        self.shared.index.lock().expect("index").running.get(tenant).copied().unwrap_or(0)
    }

    fn running_total(&self) -> usize {
        self.shared.index.lock().expect("index").running.values().sum()
    }

    async fn progress(&self, _tenant: &TenantId, run_id: &str, last_sequence: u64) {
        if let Some(o) = self.shared.owned.lock().expect("owned").get_mut(run_id) {
            o.info.last_sequence = Some(last_sequence);
            o.dirty = true;
        }
    }

    async fn finish(&self, tenant: &TenantId, run_id: &str, result: RunResult) -> Vec<String> {
        let shared = &self.shared;
        let Some(owned) = shared.owned.lock().expect("owned").remove(run_id) else { return Vec::new() };
        let settings = &shared.cluster.settings;
        let key = settings.run_key(tenant, run_id);
        let mut info = owned.info;
        info.status = RunStatus::of(result.state);
        info.ended_at = Some(agentstream_core::time::now_iso8601());
        info.last_sequence = Some(result.last_sequence);
        info.result = Some(result);
        let stored =
            StoredRun { tenant: tenant.to_string(), owner: shared.owner.clone().unwrap_or_default(), run: info };
        let mut revision = owned.record_revision;
        let mut delay = Duration::from_millis(50);
        if !owned.lost {
            loop {
                match shared.write(&key, &stored, revision).await {
                    Ok(Some(_)) => break,
                    Ok(None) => match shared.read(&key).await {
                        // Our own progress write whose answer was lost: write over it.
                        Ok(Some((s, rev))) if s.run.status == RunStatus::Running && s.owner == stored.owner => {
                            revision = rev;
                        }
                        Ok(_) => break, // finished by a reaper: its record stands
                        Err(_) => {}
                    },
                    Err(_) => {}
                }
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(2));
            }
        }
        let _ = shared.cluster.leases.delete(settings.lease_key(tenant, run_id)).await;
        shared.bump();
        Vec::new()
    }

    async fn wait_ended(&self, tenant: &TenantId, run_id: &str, timeout: Duration) -> bool {
        let mut rx = self.shared.version.subscribe();
        tokio::time::timeout(timeout, async {
            loop {
                rx.borrow_and_update();
                let running = self.shared.indexed(tenant, run_id).is_some_and(|i| i.status == RunStatus::Running);
                if !running {
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
