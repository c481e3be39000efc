//! The cluster backend: runs start, stream, resume and cancel from any `serve` instance while
//! they execute on `agentstream worker`s, over NATS JetStream (nats-server 2.11 or later; tested
//! with 2.15.3). The three seams of the broker, implemented on NATS:
//!
//! * [`JetStreamLog`] ([`EventLog`](crate::log::EventLog)): every run's envelopes on the subject
//!   `<prefix>.<tenant>.<run>.events` of the stream `<PREFIX>_EVENTS`, kept by age and bytes.
//! * [`NatsRegistry`] ([`RunRegistry`](crate::registry::RunRegistry)): run records (owner,
//!   tenant, status, result) in the key-value bucket `<prefix>-runs`; each worker holds a lease
//!   on each of its runs in `<prefix>-leases` (a key with its own TTL, renewed while it lives).
//! * [`NatsExecutor`] ([`RunExecutor`](crate::executor::RunExecutor)): a request goes to the
//!   work queue `<PREFIX>_WORK` (subject `<prefix>.work.<agent>`, one durable consumer per agent,
//!   each request to exactly one worker); the worker that takes it starts the harness and answers
//!   with the run's record. Cancelling is a request on `<prefix>.<tenant>.<run>.cancel`, which
//!   only the owning worker listens to.
//!
//! # The stream and resuming by sequence
//!
//! One JetStream message on a run's subject carries a contiguous range of the run's envelopes
//! (what the worker read from the run in one wake-up: one envelope when the run is quiet, up to
//! a few hundred under a flood), as JSON lines, with headers saying which sequence numbers it
//! covers ([`wire`]). The ranges of consecutive messages tile the run's sequence numbers from 0
//! to the terminal one, with no gap and no overlap: the worker publishes each message with
//! `Nats-Expected-Last-Subject-Sequence` set to the stream sequence of its previous message on
//! that subject, so a message lost, repeated or reordered is refused by the server instead of
//! stored — and so is a second terminal (the lease reaper's and the worker's race for it; one
//! wins). Because the ranges grow with the stream sequence, the message holding envelope N + 1 is
//! found by a binary search over the run's stream sequences with direct gets (O(log n) reads,
//! no scan), and a consumer starts there: that is how any instance resumes `after = N`.
//!
//! # Failure
//!
//! * A worker renews its leases every third of `lease_secs`. When it dies, its leases expire;
//!   every instance watches the lease bucket, and one of them (the first to append the terminal
//!   envelope) ends the run: `run_failed`, with the reason in the record's result. A sweep every
//!   lease period catches expiries nobody saw.
//! * A lost connection to NATS is reported on `/healthz` (`degraded`, 503) and to each open
//!   stream (an `event: notice`); streams resume where they stopped when it returns, and a
//!   worker publishes what its runs printed meanwhile.

mod executor;
mod follow;
mod log;
mod reaper;
mod registry;
pub mod wire;
mod worker;

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{self, kv, stream};
use tokio::sync::watch;

pub use executor::NatsExecutor;
pub use follow::{FollowBudget, FollowReport};
pub use log::{JetStreamLog, LostRun};
pub use registry::NatsRegistry;
pub use registry::WorkerPresence;
pub use worker::{Worker, WorkerReport, WorkerSettings};

/// The oldest nats-server this backend works with: key-value buckets as async-nats expects them
/// and per-key TTL (the leases) arrived in 2.11.
pub const MIN_SERVER_VERSION: (u64, u64) = (2, 11);

/// How to reach NATS and what to keep there (`[nats]` in serve.toml).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NatsSettings {
    /// The server(s): `nats://host:4222`, comma-separated for several.
    pub url: String,
    /// The root of every subject, stream and bucket name (default `agentstream`): several
    /// deployments can share one NATS with different prefixes.
    pub prefix: String,
    /// How long runs' envelopes and records are kept (default one day).
    pub retention_age: Duration,
    /// How many bytes of envelopes the events stream keeps, all runs together (default 1 GiB);
    /// the oldest messages go first.
    pub retention_bytes: u64,
    /// Replicas of the streams and buckets (in a NATS cluster; default 1).
    pub replicas: usize,
    /// A worker's lease on each of its runs (default 15 s): a run whose worker stops renewing
    /// it is ended as failed after this long.
    pub lease: Duration,
    /// How long `serve` waits for a worker to take a run request (default 30 s).
    pub start_timeout: Duration,
}

impl NatsSettings {
    /// The defaults, for the server(s) at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        NatsSettings {
            url: url.into(),
            prefix: "agentstream".into(),
            retention_age: Duration::from_secs(24 * 3600),
            retention_bytes: 1 << 30,
            replicas: 1,
            lease: Duration::from_secs(15),
            start_timeout: Duration::from_secs(30),
        }
    }

    /// The events stream's name.
    pub fn events_stream(&self) -> String {
        format!("{}_EVENTS", self.prefix.to_ascii_uppercase().replace('-', "_"))
    }

    /// The work queue's name.
    pub fn work_stream(&self) -> String {
        format!("{}_WORK", self.prefix.to_ascii_uppercase().replace('-', "_"))
    }

    /// The run records' bucket.
    pub fn runs_bucket(&self) -> String {
        format!("{}-runs", self.prefix)
    }

    /// The leases' bucket.
    pub fn leases_bucket(&self) -> String {
        format!("{}-leases", self.prefix)
    }

    /// The subject of a run's envelopes.
    pub fn events_subject(&self, tenant: &str, run_id: &str) -> String {
        format!("{}.{}.{}.events", self.prefix, token(tenant), token(run_id))
    }

    /// The subject a run's owner answers cancel requests on.
    pub fn cancel_subject(&self, tenant: &str, run_id: &str) -> String {
        format!("{}.{}.{}.cancel", self.prefix, token(tenant), token(run_id))
    }

    /// The work-queue subject of an agent's requests.
    pub fn work_subject(&self, agent: &str) -> String {
        format!("{}.work.{}", self.prefix, token(agent))
    }

    /// A run record's key in the runs bucket.
    pub fn run_key(&self, tenant: &str, run_id: &str) -> String {
        format!("{}.{}", token(tenant), token(run_id))
    }

    /// A run lease's key in the leases bucket.
    pub fn lease_key(&self, tenant: &str, run_id: &str) -> String {
        format!("run.{}.{}", token(tenant), token(run_id))
    }

    /// A worker's presence key in the leases bucket.
    pub fn worker_key(&self, worker: &str) -> String {
        format!("worker.{}", token(worker))
    }

    /// Check the names: what a config error names.
    pub fn check(&self) -> Result<(), String> {
        if self.url.trim().is_empty() {
            return Err("url is empty; e.g. nats://127.0.0.1:4222".into());
        }
        let p = &self.prefix;
        if p.is_empty()
            || p.len() > 32
            || !p.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        {
            return Err(format!("prefix {p:?} must be 1 to 32 lower-case letters, digits, '-' or '_'"));
        }
        if self.lease < Duration::from_secs(1) {
            return Err("lease_secs must be at least 1 (NATS key TTLs count whole seconds)".into());
        }
        if self.replicas == 0 || self.replicas > 5 {
            return Err("replicas must be 1 to 5".into());
        }
        Ok(())
    }
}

/// A name as one subject token: tenant, agent and worker names may hold '.', which separates
/// tokens; it becomes '=', which no such name holds (so the mapping is one-to-one).
pub fn token(name: &str) -> String {
    name.replace('.', "=")
}

/// A connection to NATS with the streams and buckets the backend uses, created or updated to
/// the settings. Shared by the log, the registry, the executor and the worker of one process.
pub struct Cluster {
    /// The settings.
    pub settings: NatsSettings,
    /// The connection.
    pub client: async_nats::Client,
    /// JetStream over it.
    pub js: jetstream::Context,
    /// The events stream.
    pub events: stream::Stream,
    /// The work queue.
    pub work: stream::Stream,
    /// The run records.
    pub runs: kv::Store,
    /// The leases (per-key TTL).
    pub leases: kv::Store,
    connected: watch::Receiver<bool>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster").field("prefix", &self.settings.prefix).finish_non_exhaustive()
    }
}

impl Cluster {
    /// Connect (failing at once, with what to fix, when the server cannot be reached or is too
    /// old), then create or update the streams and buckets. After that the connection is
    /// re-established forever: an outage is reported, never fatal. `name` shows in the server's
    /// connection list.
    pub async fn connect(settings: NatsSettings, name: &str) -> Result<Arc<Cluster>, String> {
        settings.check()?;
        let (tx, connected) = watch::channel(true);
        let tx = Arc::new(tx);
        // The client sends only the credentials set on its options, never the URL's.
        let options = match url_credentials(&settings.url)? {
            Some(UrlCredentials::UserAndPassword(user, password)) => {
                async_nats::ConnectOptions::with_user_and_password(user, password)
            }
            Some(UrlCredentials::Token(token)) => async_nats::ConnectOptions::with_token(token),
            None => async_nats::ConnectOptions::new(),
        };
        let client = options
            .name(name)
            .connection_timeout(Duration::from_secs(5))
            .max_reconnects(None)
            .reconnect_delay_callback(|attempts| Duration::from_millis((attempts as u64 * 250).min(2_000)))
            .event_callback(move |event| {
                let tx = tx.clone();
                async move {
                    match event {
                        async_nats::Event::Connected => {
                            tx.send_replace(true);
                        }
                        async_nats::Event::Disconnected | async_nats::Event::Closed => {
                            tx.send_replace(false);
                        }
                        _ => {}
                    }
                }
            })
            .connect(settings.url.as_str())
            .await
            .map_err(|e| format!("cannot connect to NATS at {}: {e}", redact_url(&settings.url)))?;
        let info = client.server_info();
        if !version_at_least(&info.version, MIN_SERVER_VERSION) {
            return Err(format!(
                "nats-server {} is too old: agentstream needs {}.{} or later (key-value buckets, per-key TTL); \
                 tested with 2.15.3",
                info.version, MIN_SERVER_VERSION.0, MIN_SERVER_VERSION.1
            ));
        }
        if !info.jetstream {
            return Err(format!(
                "nats-server at {} runs without JetStream: start it with -js (and a store directory, -sd)",
                redact_url(&settings.url)
            ));
        }
        let js = jetstream::new(client.clone());
        let setup = |what: &str, e: &dyn std::fmt::Display| format!("cannot set up the {what} on NATS: {e}");
        js.create_or_update_stream(stream::Config {
            name: settings.events_stream(),
            description: Some("agentstream: every run's envelopes, one subject per run".into()),
            subjects: vec![format!("{}.*.*.events", settings.prefix)],
            max_age: settings.retention_age,
            max_bytes: i64::try_from(settings.retention_bytes).unwrap_or(i64::MAX),
            discard: stream::DiscardPolicy::Old,
            storage: stream::StorageType::File,
            num_replicas: settings.replicas,
            allow_direct: true,
            ..Default::default()
        })
        .await
        .map_err(|e| setup("events stream", &e))?;
        js.create_or_update_stream(stream::Config {
            name: settings.work_stream(),
            description: Some("agentstream: run requests, each taken by one worker".into()),
            subjects: vec![format!("{}.work.*", settings.prefix)],
            retention: stream::RetentionPolicy::WorkQueue,
            // A request nobody took in time was given up by its serve instance.
            max_age: (settings.start_timeout * 4).max(Duration::from_secs(60)),
            storage: stream::StorageType::File,
            num_replicas: settings.replicas,
            ..Default::default()
        })
        .await
        .map_err(|e| setup("work queue", &e))?;
        let runs = js
            .create_or_update_key_value(kv::Config {
                bucket: settings.runs_bucket(),
                description: "agentstream: run records (owner, tenant, status, result)".into(),
                history: 1,
                max_age: settings.retention_age,
                // A record that ages out leaves a marker, so every instance's index drops it too.
                limit_markers: Some(Duration::from_secs(3600)),
                storage: stream::StorageType::File,
                num_replicas: settings.replicas,
                ..Default::default()
            })
            .await
            .map_err(|e| setup("runs bucket", &e))?;
        let leases = js
            .create_or_update_key_value(kv::Config {
                bucket: settings.leases_bucket(),
                description: "agentstream: workers' leases on their runs (per-key TTL)".into(),
                history: 1,
                // Expired keys leave a marker (what the reapers watch for), kept this long.
                limit_markers: Some((settings.lease * 4).max(Duration::from_secs(60))),
                // Every live key is renewed each third of a lease: what is older is a released
                // lease's delete marker or a withdrawn worker's purge, which would otherwise stay
                // (and be replayed by every process that starts) for ever.
                max_age: (settings.lease * 4).max(Duration::from_secs(60)),
                storage: stream::StorageType::File,
                num_replicas: settings.replicas,
                ..Default::default()
            })
            .await
            .map_err(|e| setup("leases bucket", &e))?;
        let events = js.get_stream(settings.events_stream()).await.map_err(|e| setup("events stream", &e))?;
        let work = js.get_stream(settings.work_stream()).await.map_err(|e| setup("work queue", &e))?;
        Ok(Arc::new(Cluster { settings, client, js, events, work, runs, leases, connected }))
    }

    /// Whether the connection is up now.
    pub fn is_connected(&self) -> bool {
        *self.connected.borrow()
    }

    /// The connection state, watched.
    pub fn connection(&self) -> watch::Receiver<bool> {
        self.connected.clone()
    }

    /// The largest message the server accepts (its `max_payload`), less room for headers.
    pub fn max_message_bytes(&self) -> usize {
        self.client.server_info().max_payload.saturating_sub(4096).max(4096)
    }
}

/// The URL without credentials (user:password@ or a token@), for messages.
pub fn redact_url(url: &str) -> String {
    url.split(',')
        .map(|one| match (one.find("://"), one.rfind('@')) {
            (Some(scheme), Some(at)) if at > scheme => format!("{}://…@{}", &one[..scheme], &one[at + 1..]),
            (None, Some(at)) => format!("…@{}", &one[at + 1..]),
            _ => one.to_string(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// Credentials written in a NATS URL: `nats://user:password@host` or `nats://token@host`.
#[derive(Debug, PartialEq, Eq)]
enum UrlCredentials {
    UserAndPassword(String, String),
    Token(String),
}

/// The credentials of `url` (a comma-separated list of servers), percent-decoded; the same in
/// every URL that has some, or an error saying so.
fn url_credentials(url: &str) -> Result<Option<UrlCredentials>, String> {
    let mut found: Option<UrlCredentials> = None;
    for one in url.split(',').map(str::trim) {
        let rest = one.find("://").map_or(one, |at| &one[at + 3..]);
        let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
        let Some(at) = authority.rfind('@') else { continue };
        let userinfo = &authority[..at];
        let credentials = match userinfo.split_once(':') {
            Some((user, password)) => {
                UrlCredentials::UserAndPassword(percent_decoded(user)?, percent_decoded(password)?)
            }
            None => UrlCredentials::Token(percent_decoded(userinfo)?),
        };
        match &found {
            Some(earlier) if *earlier != credentials => {
                return Err(format!(
                    "the NATS URLs {} carry different credentials: give the same in each (one connection uses one)",
                    redact_url(url)
                ));
            }
            _ => found = Some(credentials),
        }
    }
    Ok(found)
}

/// `%XX` escapes decoded (a password may need them for `@`, `:` or `/`).
fn percent_decoded(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok());
            let Some(byte) = hex else {
                return Err("a NATS URL's credentials have a `%` that is not followed by two hex digits".into());
            };
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "a NATS URL's credentials are not UTF-8 once decoded".into())
}

fn version_at_least(version: &str, (major, minor): (u64, u64)) -> bool {
    let mut parts = version.trim_start_matches('v').split(['.', '-']).map(|p| p.parse::<u64>().unwrap_or(0));
    let (a, b) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (a, b) >= (major, minor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_read_from_the_url() {
        use UrlCredentials::*;
        let pair = |u: &str, p: &str| Ok(Some(UserAndPassword(u.into(), p.into())));
        assert_eq!(url_credentials("nats://127.0.0.1:4222"), Ok(None));
        assert_eq!(url_credentials("nats://serve:s3rve@127.0.0.1:4222"), pair("serve", "s3rve"));
        assert_eq!(url_credentials("tls://a%40b:p%3Aw%2Fd@host:4222/x"), pair("a@b", "p:w/d"));
        assert_eq!(url_credentials("nats://tok3n@host"), Ok(Some(Token("tok3n".into()))));
        assert_eq!(url_credentials("nats://u:p@a:1, nats://u:p@b:2,nats://c:3"), pair("u", "p"));
        let mixed = url_credentials("nats://u:p@a:1,nats://u:q@b:2").unwrap_err();
        assert!(mixed.contains("different credentials") && !mixed.contains(":p@") && !mixed.contains(":q@"), "{mixed}");
        assert!(url_credentials("nats://u:%zz@a").is_err());
    }

    #[test]
    fn names_and_subjects() {
        let s = NatsSettings::new("nats://127.0.0.1:4222");
        assert_eq!(s.events_stream(), "AGENTSTREAM_EVENTS");
        assert_eq!(s.events_subject("acme", "run_1"), "agentstream.acme.run_1.events");
        assert_eq!(s.events_subject("acme.eu", "run_1"), "agentstream.acme=eu.run_1.events", "one token");
        assert_eq!(s.cancel_subject("a", "run_1"), "agentstream.a.run_1.cancel");
        assert_eq!(s.work_subject("claude"), "agentstream.work.claude");
        assert_eq!(s.lease_key("a", "run_1"), "run.a.run_1");
        let mut bad = s.clone();
        bad.prefix = "Agent.Stream".into();
        assert!(bad.check().unwrap_err().contains("prefix"));
        bad = s.clone();
        bad.lease = Duration::from_millis(500);
        assert!(bad.check().unwrap_err().contains("lease_secs"));
        assert!(s.check().is_ok());
    }

    #[test]
    fn versions_and_redaction() {
        assert!(version_at_least("2.15.3", (2, 11)));
        assert!(version_at_least("v2.11.0-beta", (2, 11)));
        assert!(!version_at_least("2.9.10", (2, 11)));
        assert!(version_at_least("3.0.0", (2, 11)));
        assert_eq!(redact_url("nats://u:p@h:4222,nats://h2:4222"), "nats://…@h:4222,nats://h2:4222");
        assert_eq!(redact_url("tok@h:4222"), "…@h:4222");
    }
}
