//! [`JetStreamLog`]: the [`EventLog`] on the events stream (see the module doc of
//! [`crate::nats`] for the message format and how resuming finds its place).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::header::NATS_MESSAGE_ID;
use async_nats::jetstream::consumer::DeliverPolicy;
use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::message::PublishMessage;
use async_nats::jetstream::message::StreamMessage;
use async_nats::jetstream::stream::DirectGetErrorKind;
use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use tokio::sync::{mpsc, watch};

use super::Cluster;
use super::follow::{FollowBudget, Followers, MAX_CONSECUTIVE_ERRORS, Next, Source};
use super::wire::{self, Meta};
use crate::auth::TenantId;
use crate::frame::{Delivered, Frame, Gap, GapReason, Notice, NoticeReason};
use crate::log::{EventLog, NothingLeft, SubscribeError, Subscription};

/// The smallest message the writer packs (every NATS server accepts far more).
const MIN_MESSAGE_BYTES: usize = 1024;

/// A run this process was writing was ended by someone else (its lease expired and another
/// instance appended the terminal): the run must stop here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostRun {
    /// The tenant.
    pub tenant: TenantId,
    /// The run.
    pub run_id: String,
    /// Why, for the cancel reason.
    pub why: String,
}

/// The [`EventLog`] on NATS JetStream: appends go to the run's subject (from the one process
/// that runs it), subscriptions read that subject (from any process; the subscribers of one run
/// in one process share one ordered consumer: `server/src/nats/follow.rs`).
pub struct JetStreamLog {
    cluster: Arc<Cluster>,
    followers: Arc<Followers>,
    writers: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Writer>>>>,
    lost: Option<mpsc::UnboundedSender<LostRun>>,
    closing: watch::Sender<bool>,
}

struct Writer {
    tenant: TenantId,
    subject: String,
    /// The stream sequence of this run's last message (0: none yet).
    last_stream_seq: u64,
    /// Someone else ended the run: nothing more is appended.
    lost: bool,
}

/// The last message of a run's subject: where it is and what it holds.
#[derive(Debug, Clone)]
pub(crate) struct Tail {
    pub stream_seq: u64,
    pub meta: Meta,
    /// The message (a reaper reads the id and the reason of a terminal from it).
    pub message: StreamMessage,
}

/// Read the last message of `subject` (`None`: the subject has none).
pub(crate) async fn tail(cluster: &Cluster, subject: &str) -> Result<Option<Tail>, String> {
    match cluster.events.direct_get_last_for_subject(subject).await {
        Ok(message) => Ok(Meta::of(&message.headers).map(|meta| Tail { stream_seq: message.sequence, meta, message })),
        Err(e) if e.kind() == DirectGetErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("cannot read the run's stream from NATS: {e}")),
    }
}

impl JetStreamLog {
    /// A log on `cluster`'s events stream. `lost` hears of runs this process was writing that
    /// another instance ended (a worker passes it; a serve instance, which only reads, need not).
    /// `keep` bounds what this process keeps of the runs it reads for its subscribers.
    pub fn new(cluster: Arc<Cluster>, lost: Option<mpsc::UnboundedSender<LostRun>>, keep: FollowBudget) -> Self {
        let closing = watch::Sender::new(false);
        let followers = Arc::new(Followers::new(cluster.clone(), keep, closing.subscribe()));
        JetStreamLog { cluster, followers, writers: Mutex::default(), lost, closing }
    }

    /// The shared follows of this process's subscribers (for `/healthz`).
    pub(crate) fn followers(&self) -> Arc<Followers> {
        self.followers.clone()
    }

    fn writer(&self, run_id: &str) -> Option<Arc<tokio::sync::Mutex<Writer>>> {
        self.writers.lock().expect("writers").get(run_id).cloned()
    }

    /// Follow the run at `subject` for a subscriber at `after`, its stream's last message being
    /// `last` (read by the caller: once per subscription).
    async fn follow(
        &self,
        subject: String,
        run_id: &str,
        after: Option<u64>,
        last: Option<Tail>,
    ) -> Result<Box<dyn Subscription>, SubscribeError> {
        let deliver_policy = match (after, last) {
            (None, _) => DeliverPolicy::All,
            (Some(after), None) => return Err(SubscribeError::AfterBeyondEnd { after, last: None }),
            (Some(after), Some(t)) if after > t.meta.last => {
                return Err(SubscribeError::AfterBeyondEnd { after, last: Some(t.meta.last) });
            }
            (Some(after), Some(t)) if t.meta.terminal && after >= t.meta.last => return Err(SubscribeError::Complete),
            // Everything so far: from the next message on.
            (Some(after), Some(t)) if after == t.meta.last => {
                DeliverPolicy::ByStartSequence { start_sequence: t.stream_seq + 1 }
            }
            (Some(after), Some(t)) => DeliverPolicy::ByStartSequence {
                start_sequence: find_start(&self.cluster, &subject, after, t)
                    .await
                    .map_err(SubscribeError::Unavailable)?,
            },
        };
        self.follow_from(subject, run_id, after, deliver_policy).await
    }

    /// Read `subject` from `deliver_policy` on, as a subscriber that has everything through
    /// `after`.
    async fn follow_from(
        &self,
        subject: String,
        run_id: &str,
        after: Option<u64>,
        deliver_policy: DeliverPolicy,
    ) -> Result<Box<dyn Subscription>, SubscribeError> {
        let source = self.followers.open(&subject, deliver_policy, true).await.map_err(SubscribeError::Unavailable)?;
        let mut connection = self.cluster.connection();
        connection.borrow_and_update();
        Ok(Box::new(JetStreamSubscription {
            followers: self.followers.clone(),
            subject,
            deliver_policy,
            last_stream_seq: None,
            refollow: false,
            share: true,
            run_id: run_id.to_string(),
            source,
            cursor: after,
            read_through: None,
            pending: VecDeque::new(),
            partial: None,
            done: false,
            connection,
            told_down: false,
            closing: self.closing.subscribe(),
            errors: 0,
        }))
    }

    /// Publish one message after the writer's last, retrying through outages.
    async fn publish(&self, run_id: &str, w: &mut Writer, msg: &wire::Outgoing) -> Published {
        let mut delay = Duration::from_millis(50);
        loop {
            let mut publish = PublishMessage::build()
                .payload(msg.payload.clone())
                .message_id(&msg.msg_id)
                .expected_last_subject_sequence(w.last_stream_seq);
            for (name, values) in msg.headers.iter() {
                for v in values {
                    publish = publish.header(name.clone(), v.clone());
                }
            }
            let sent = match self.cluster.js.send_publish(w.subject.clone(), publish).await {
                Ok(ack) => ack.await,
                Err(e) => Err(e),
            };
            match sent {
                Ok(ack) => {
                    w.last_stream_seq = ack.sequence;
                    return Published::Stored;
                }
                Err(e) if e.kind() == PublishErrorKind::WrongLastSequence => {
                    // Ours, stored before (its ack was lost), or someone else's?
                    match self.cluster.events.direct_get_last_for_subject(w.subject.as_str()).await {
                        Ok(m) if m.headers.get(NATS_MESSAGE_ID).is_some_and(|id| id.as_str() == msg.msg_id) => {
                            w.last_stream_seq = m.sequence;
                            return Published::Stored;
                        }
                        Ok(_) => {
                            w.lost = true;
                            if let Some(lost) = &self.lost {
                                let _ = lost.send(LostRun {
                                    tenant: w.tenant.clone(),
                                    run_id: run_id.to_string(),
                                    why: "another instance ended this run (this worker's lease on it had expired)"
                                        .into(),
                                });
                            }
                            return Published::Lost;
                        }
                        // Retention (the stream's age or byte limit) removed every message of
                        // the run: nobody else wrote since (a write would be there, newer than
                        // ours), so the run goes on in an empty subject.
                        Err(e) if e.kind() == DirectGetErrorKind::NotFound => {
                            w.last_stream_seq = 0;
                            continue;
                        }
                        Err(_) => {} // cannot tell now: retry
                    }
                }
                // Refused before sending (the server's max_payload is smaller than it was).
                Err(e) if e.kind() == PublishErrorKind::MaxPayloadExceeded => return Published::TooLarge,
                Err(_) => {} // no connection, timed out: retry
            }
            // Retry after a pause, or as soon as a lost connection is back.
            let mut connection = self.cluster.connection();
            if *connection.borrow_and_update() {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(2));
            } else {
                let _ = connection.wait_for(|up| *up).await;
                delay = Duration::from_millis(50);
            }
        }
    }
}

/// How a publish ended.
enum Published {
    Stored,
    /// Someone else appended to the run's subject: the run is no longer this process's.
    Lost,
    /// Larger than the server accepts: nothing was sent.
    TooLarge,
}

#[async_trait]
impl EventLog for JetStreamLog {
    async fn create(&self, tenant: &TenantId, run_id: &str) {
        let writer = Writer {
            tenant: tenant.clone(),
            subject: self.cluster.settings.events_subject(tenant, run_id),
            last_stream_seq: 0,
            lost: false,
        };
        self.writers.lock().expect("writers").insert(run_id.to_string(), Arc::new(tokio::sync::Mutex::new(writer)));
    }

    async fn append(&self, run_id: &str, frames: Vec<Frame>) {
        let Some(writer) = self.writer(run_id) else { return };
        let mut w = writer.lock().await;
        if w.lost {
            return;
        }
        let mut max = self.cluster.max_message_bytes();
        let mut start = 0;
        'pack: while start < frames.len() {
            for msg in wire::pack(run_id, &frames[start..], max) {
                match self.publish(run_id, &mut w, &msg).await {
                    Published::Stored => {}
                    Published::Lost => return,
                    // Pack again from this message's first envelope, smaller (a split envelope
                    // starts over with part 1, which tells readers to drop the earlier parts).
                    Published::TooLarge if max > MIN_MESSAGE_BYTES => {
                        start = frames.iter().position(|f| f.sequence == msg.first).unwrap_or(start);
                        max /= 2;
                        continue 'pack;
                    }
                    Published::TooLarge => {
                        eprintln!("agentstream: run {run_id}: the NATS server refuses messages of {max} bytes");
                        return;
                    }
                }
            }
            break;
        }
    }

    async fn seal(&self, run_id: &str) {
        self.writers.lock().expect("writers").remove(run_id);
    }

    async fn subscribe(
        &self,
        tenant: &TenantId,
        run_id: &str,
        after: Option<u64>,
    ) -> Result<Box<dyn Subscription>, SubscribeError> {
        let subject = self.cluster.settings.events_subject(tenant, run_id);
        let last = tail(&self.cluster, &subject).await.map_err(SubscribeError::Unavailable)?;
        self.follow(subject, run_id, after, last).await
    }

    async fn subscribe_running(
        &self,
        tenant: &TenantId,
        run_id: &str,
        after: Option<u64>,
        recorded: Option<u64>,
    ) -> Result<Box<dyn Subscription>, SubscribeError> {
        let subject = self.cluster.settings.events_subject(tenant, run_id);
        match tail(&self.cluster, &subject).await.map_err(SubscribeError::Unavailable)? {
            // Retention removed every message of the run so far, up to a point its record
            // vouches for: follow what comes next, which starts with the numbers removed as a
            // gap (the subscription tells them from the first message it reads).
            None if after.is_some_and(|a| recorded.is_some_and(|r| a <= r)) => {
                self.follow_from(subject, run_id, after, DeliverPolicy::All).await
            }
            last => self.follow(subject, run_id, after, last).await,
        }
    }

    async fn subscribe_ended(
        &self,
        tenant: &TenantId,
        run_id: &str,
        after: Option<u64>,
        last: u64,
    ) -> Result<Box<dyn Subscription>, SubscribeError> {
        let subject = self.cluster.settings.events_subject(tenant, run_id);
        match tail(&self.cluster, &subject).await.map_err(SubscribeError::Unavailable)? {
            Some(t) => self.follow(subject, run_id, after, Some(t)).await,
            // Retention removed every message of the run.
            None => match after {
                Some(after) if after > last => Err(SubscribeError::AfterBeyondEnd { after, last: Some(last) }),
                Some(after) if after == last => Err(SubscribeError::Complete),
                _ => Ok(Box::new(NothingLeft::new(run_id, after, last))),
            },
        }
    }

    async fn last_covered(&self, tenant: &TenantId, run_id: &str) -> Option<u64> {
        let subject = self.cluster.settings.events_subject(tenant, run_id);
        tail(&self.cluster, &subject).await.ok().flatten().map(|t| t.meta.last)
    }

    async fn remove(&self, _run_id: &str) {
        // Retention (age, bytes) removes runs from the stream.
    }

    fn close(&self) {
        self.closing.send_replace(true);
    }
}

/// The stream sequence of the run's first message that covers a number after `after`: a binary
/// search over stream sequences with direct gets (`tail` covers more than `after`).
async fn find_start(cluster: &Cluster, subject: &str, after: u64, tail: Tail) -> Result<u64, String> {
    let unavailable = |e: async_nats::jetstream::stream::DirectGetError| format!("cannot read the run's stream: {e}");
    let first = cluster.events.direct_get_first_for_subject(subject).await.map_err(unavailable)?;
    if Meta::of(&first.headers).is_none_or(|m| m.last > after) {
        return Ok(first.sequence);
    }
    // Invariant: the first message at or after `lo` covers nothing after `after`; the first at or
    // after `hi` does.
    let (mut lo, mut hi) = (first.sequence, tail.stream_seq);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        let m = cluster.events.direct_get_next_for_subject(subject, Some(mid)).await.map_err(unavailable)?;
        if Meta::of(&m.headers).is_none_or(|meta| meta.last > after) {
            hi = mid;
        } else {
            lo = m.sequence.max(mid);
        }
    }
    Ok(hi)
}

/// An envelope being reassembled from its parts.
struct Partial {
    first: u64,
    next_part: u32,
    headers: async_nats::HeaderMap,
    data: BytesMut,
}

struct JetStreamSubscription {
    followers: Arc<Followers>,
    subject: String,
    /// Where reading started (used again if the source must be re-opened before any message).
    deliver_policy: DeliverPolicy,
    /// The stream sequence of the last message taken.
    last_stream_seq: Option<u64>,
    /// Open the source again from `last_stream_seq`: the connection came back (an own consumer
    /// may not have survived, and would notice only after missing its heartbeats), or the
    /// shared follow no longer has what comes next.
    refollow: bool,
    /// Whether re-opening tries the shared follow: not after it left this subscriber behind or
    /// failed (its own consumer then), again once the connection is back (an outage makes every
    /// subscriber re-open at once: they should not each get a consumer).
    share: bool,
    run_id: String,
    source: Source,
    /// The last sequence number this subscriber has.
    cursor: Option<u64>,
    /// The last sequence number covered by what was read, delivered or skipped.
    read_through: Option<u64>,
    pending: VecDeque<Delivered>,
    partial: Option<Partial>,
    done: bool,
    connection: watch::Receiver<bool>,
    /// Whether the subscriber was told the connection is down (and not yet that it is back).
    told_down: bool,
    closing: watch::Receiver<bool>,
    /// Consumer errors in a row while connected.
    errors: u32,
}

impl JetStreamSubscription {
    /// Turn one stream message into deliveries (in `pending`).
    fn take(&mut self, headers: &async_nats::HeaderMap, payload: Bytes) {
        let Some(meta) = Meta::of(headers) else { return };
        let whole = match meta.part {
            None => {
                self.partial = None; // an envelope whose last parts never came
                Some((headers.clone(), payload))
            }
            Some((k, n)) => {
                let continues = self.partial.as_ref().is_some_and(|p| p.first == meta.first && p.next_part == k);
                if k == 1 {
                    self.partial = Some(Partial {
                        first: meta.first,
                        next_part: 1,
                        headers: headers.clone(),
                        data: BytesMut::new(),
                    });
                } else if !continues {
                    self.partial = None;
                    return;
                }
                let p = self.partial.as_mut().expect("a partial envelope");
                p.data.extend_from_slice(&payload);
                p.next_part += 1;
                if k < n {
                    return;
                }
                let p = self.partial.take().expect("a partial envelope");
                Some((p.headers, p.data.freeze()))
            }
        };
        let Some((headers, payload)) = whole else { return };
        let Some(frames) = wire::unpack(&headers, &meta, &payload) else { return };
        for frame in frames {
            // Already had (the same rule as the in-process log: by the envelope's own number).
            if self.cursor.is_some_and(|c| frame.sequence <= c) {
                self.read_through = self.read_through.max(Some(frame.last_covered));
                continue;
            }
            let expected = self.cursor.max(self.read_through).map_or(0, |c| c + 1);
            if frame.sequence > expected {
                // Removed by retention before this subscriber read it.
                let missing = frame.sequence - expected;
                self.pending.push_back(Delivered::Gap(Gap::new(
                    &self.run_id,
                    GapReason::Evicted,
                    self.cursor,
                    missing,
                    Some(frame.sequence),
                )));
            }
            self.cursor = Some(frame.last_covered);
            self.read_through = self.cursor;
            let terminal = frame.terminal;
            self.pending.push_back(Delivered::Frame(Arc::new(frame)));
            if terminal {
                self.done = true;
                return;
            }
        }
    }
}

#[async_trait]
impl Subscription for JetStreamSubscription {
    async fn next_batch(&mut self, out: &mut Vec<Delivered>, max: usize) -> bool {
        let max = max.max(1);
        loop {
            if !self.pending.is_empty() {
                let n = self.pending.len().min(max);
                out.extend(self.pending.drain(..n));
                return true;
            }
            if self.done || *self.closing.borrow() {
                return false;
            }
            let up = *self.connection.borrow_and_update();
            if up == self.told_down {
                self.told_down = !up;
                self.refollow |= up;
                self.share |= up;
                let reason = if up { NoticeReason::BackendRestored } else { NoticeReason::BackendUnavailable };
                out.push(Delivered::Notice(Notice::new(&self.run_id, reason)));
                return true;
            }
            if self.refollow && !up {
                // Open again once the connection is back.
                tokio::select! {
                    _ = self.connection.changed() => {}
                    _ = self.closing.changed() => {}
                }
                continue;
            }
            if self.refollow {
                let from = match self.last_stream_seq {
                    Some(seq) => DeliverPolicy::ByStartSequence { start_sequence: seq + 1 },
                    None => self.deliver_policy,
                };
                match self.followers.open(&self.subject, from, self.share).await {
                    Ok(source) => {
                        self.source = source;
                        self.refollow = false;
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
                }
                continue;
            }
            tokio::select! {
                next = self.source.next() => match next {
                    Next::Message(msg) => {
                        self.errors = 0;
                        self.last_stream_seq = msg.stream_seq.or(self.last_stream_seq);
                        self.take(&msg.headers, msg.payload.clone());
                    }
                    Next::Reopen => {
                        self.refollow = true;
                        self.share = false;
                    }
                    // An own ordered consumer recreates itself across outages; errors that keep
                    // coming while connected are ones it cannot get past: end this stream (the
                    // client resumes, on this instance or another).
                    Next::Error => {
                        if *self.connection.borrow() {
                            self.errors += 1;
                        }
                        if self.errors >= MAX_CONSECUTIVE_ERRORS {
                            self.done = true;
                        } else {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                    }
                    Next::End => self.done = true,
                },
                _ = self.connection.changed() => {}
                _ = self.closing.changed() => {}
            }
        }
    }
}
