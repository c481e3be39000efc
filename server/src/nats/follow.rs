//! Reading a run's subject: one ordered consumer per run in this process, shared by every
//! subscriber here ([`Followers`]).
//!
//! A consumer per subscriber made NATS send a run once per subscriber over this process's one
//! connection: a hundred subscribers to a flood put more bytes in the server's queue for that
//! connection than it keeps (64 MiB), so the server closed it as a slow consumer, every stream
//! on the instance saw an outage, and consumers being created at that moment timed out (503).
//! Now the first subscriber of a run starts a shared follow; it keeps the messages it read (up to
//! `limits.replay_bytes`; see [`FollowBudget`] for `replay_bytes_total`), and every later
//! subscriber whose starting point it still holds reads them from memory. A follow reads only
//! while one of its subscribers waits for more: it goes at the pace of the fastest, and what a
//! slow client costs is bounded by those limits. A subscriber that starts before what its follow
//! holds, falls so far behind that what it needs was trimmed, or whose follow failed, reads on
//! from a consumer of its own, from where it is (until the connection to NATS comes back after
//! an outage: then every subscriber goes back to the shared follow).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::consumer::{DeliverPolicy, pull};
use bytes::Bytes;
use futures_util::StreamExt;
use tokio::sync::{Notify, oneshot, watch};

use super::Cluster;

/// Consumer errors in a row, while connected, after which a follow or a subscription gives up.
pub(crate) const MAX_CONSECUTIVE_ERRORS: u32 = 20;

/// One message of a run's subject.
#[derive(Debug)]
pub(crate) struct Message {
    /// Its stream sequence (`None`: its metadata did not say; JetStream always does, and such a
    /// message is delivered all the same).
    pub stream_seq: Option<u64>,
    pub headers: HeaderMap,
    pub payload: Bytes,
}

impl Message {
    /// What a consumer delivered.
    fn of(msg: &async_nats::jetstream::Message) -> Message {
        Message {
            stream_seq: msg.info().ok().map(|info| info.stream_sequence),
            headers: msg.headers.clone().unwrap_or_default(),
            payload: msg.payload.clone(),
        }
    }
}

/// What reading a subject gave.
pub(crate) enum Next {
    Message(Arc<Message>),
    /// The consumer failed this time (it may recover: try again after a pause).
    Error,
    /// Nothing more will come from this source; re-open from the last message taken.
    Reopen,
    /// The source ended.
    End,
}

/// Where a subscriber's messages come from.
pub(crate) enum Source {
    /// A consumer of its own.
    Own(Box<pull::Ordered>),
    /// This process's shared follow of the run.
    Shared(Attachment),
}

impl Source {
    /// The next message (waiting for it).
    pub async fn next(&mut self) -> Next {
        match self {
            Source::Own(messages) => match messages.next().await {
                Some(Ok(msg)) => Next::Message(Arc::new(Message::of(&msg))),
                Some(Err(_)) => Next::Error,
                None => Next::End,
            },
            Source::Shared(a) => a.next().await,
        }
    }
}

/// The stream sequence a delivery policy starts at (0: the subject's first message).
fn start_of(policy: DeliverPolicy) -> u64 {
    match policy {
        DeliverPolicy::ByStartSequence { start_sequence } => start_sequence,
        _ => 0,
    }
}

fn policy_from(start: u64) -> DeliverPolicy {
    if start == 0 { DeliverPolicy::All } else { DeliverPolicy::ByStartSequence { start_sequence: start } }
}

/// An ordered consumer of `subject` from `deliver_policy`.
pub(crate) async fn consume(
    cluster: &Cluster,
    subject: &str,
    deliver_policy: DeliverPolicy,
) -> Result<pull::Ordered, String> {
    let unavailable = |e: &dyn std::fmt::Display| format!("cannot follow the run's stream on NATS: {e}");
    let consumer = cluster
        .events
        .create_consumer(pull::OrderedConfig {
            filter_subject: subject.to_string(),
            deliver_policy,
            ..Default::default()
        })
        .await
        .map_err(|e| unavailable(&e))?;
    consumer.messages().await.map_err(|e| unavailable(&e))
}

/// What a process keeps of the runs it reads for its subscribers, in message payload bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowBudget {
    /// Of one run (`limits.replay_bytes`).
    pub per_run: usize,
    /// Of all runs together (`limits.replay_bytes_total`): over it, the oldest messages of the
    /// follows read from least recently go first, as the in-process log does (so runs that
    /// ended give way to runs still going); each follow keeps its newest message.
    pub total: usize,
}

impl FollowBudget {
    /// The budget `limits` set.
    pub fn of(limits: &crate::config::Limits) -> Self {
        FollowBudget { per_run: limits.replay_bytes, total: limits.replay_bytes_total }
    }
}

/// The bytes every follow of a process holds, together, and the follows that hold them.
struct Held {
    budget: FollowBudget,
    bytes: AtomicUsize,
    /// Of `bytes`, what a trim may drop: every follow's messages but its newest. Over the total
    /// with none (every follow down to its newest message) a trim has nothing to do, and skips
    /// the walk over every follow it would otherwise make for each message that arrives.
    droppable: AtomicUsize,
    /// Walks over the follows made by [`Held::trim_total`] (tests check when none is made).
    #[cfg(test)]
    walks: AtomicUsize,
    /// Every follow alive, by a number of its own (the subject map of [`Followers`] names only
    /// the newest follow of a subject; one that failed still holds bytes until its subscribers
    /// have moved on).
    follows: Mutex<LiveMap<u64, Follow>>,
    /// Counts follows made and messages pushed: a follow's `last_read` is this count at its
    /// newest message, so follows compare by how recently they read.
    clock: AtomicU64,
    /// Held by the one thread trimming to the total budget (others skip: it frees enough).
    trimming: Mutex<()>,
}

impl Held {
    fn new(budget: FollowBudget) -> Self {
        Held {
            budget,
            bytes: AtomicUsize::new(0),
            droppable: AtomicUsize::new(0),
            #[cfg(test)]
            walks: AtomicUsize::new(0),
            follows: Mutex::default(),
            clock: AtomicU64::new(0),
            trimming: Mutex::new(()),
        }
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Over the total budget: drop the oldest messages of the follows read from least recently
    /// until an eighth of the budget is free again (so that the next messages do not each sort
    /// every follow), keeping each follow's newest message. One follow's lock at a time, taken
    /// with none held: follows trimming each other cannot deadlock.
    fn trim_total(&self) {
        if self.bytes.load(Ordering::Relaxed) <= self.budget.total || self.droppable.load(Ordering::Relaxed) == 0 {
            return;
        }
        let Ok(_one_trimmer) = self.trimming.try_lock() else { return };
        #[cfg(test)]
        self.walks.fetch_add(1, Ordering::Relaxed);
        let target = crate::log::trim_target(self.budget.total);
        let mut follows = self.follows.lock().expect("follows").values();
        follows.sort_by_key(|f| f.last_read.load(Ordering::Relaxed));
        for follow in follows {
            if self.bytes.load(Ordering::Relaxed) <= target || self.droppable.load(Ordering::Relaxed) == 0 {
                break;
            }
            let trimmed =
                follow.state.lock().expect("follow").trim_while(|_| self.bytes.load(Ordering::Relaxed) > target);
            if trimmed {
                follow.news.send_modify(|n| *n = n.wrapping_add(1));
            }
        }
    }
}

/// What an instance holds of the runs it reads for its subscribers (`/healthz`: `backend.follows`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct FollowReport {
    /// Runs read for subscribers now (one shared consumer each).
    pub runs: usize,
    /// Message bytes held for them, in all.
    pub bytes: usize,
    /// What they may hold together (`replay_bytes_total`).
    pub max: usize,
}

/// This process's shared follows, one per run subject being read.
pub(crate) struct Followers {
    cluster: Arc<Cluster>,
    held: Arc<Held>,
    closing: watch::Receiver<bool>,
    follows: Mutex<LiveMap<String, Follow>>,
}

/// Weak references by key, whose dead entries are swept once the map has doubled since the
/// last sweep: opening a subscription costs the same with ten runs followed as with ten
/// thousand (a sweep on every open made each one walk them all).
struct LiveMap<K, T> {
    entries: HashMap<K, Weak<T>>,
    sweep_at: usize,
}

impl<K, T> Default for LiveMap<K, T> {
    fn default() -> Self {
        LiveMap { entries: HashMap::new(), sweep_at: Self::FIRST_SWEEP }
    }
}

impl<K, T> LiveMap<K, T> {
    const FIRST_SWEEP: usize = 64;
}

impl<K: std::hash::Hash + Eq, T> LiveMap<K, T> {
    /// The live value of `key`.
    fn get<Q>(&self, key: &Q) -> Option<Arc<T>>
    where
        K: std::borrow::Borrow<Q>,
        Q: std::hash::Hash + Eq + ?Sized,
    {
        self.entries.get(key).and_then(Weak::upgrade)
    }

    /// Put `value` under `key` (replacing a dead or unusable one), sweeping the dead first when
    /// due.
    fn insert(&mut self, key: K, value: &Arc<T>) {
        if self.entries.len() >= self.sweep_at {
            self.entries.retain(|_, v| v.strong_count() > 0);
            self.sweep_at = (2 * self.entries.len()).max(Self::FIRST_SWEEP);
        }
        self.entries.insert(key, Arc::downgrade(value));
    }

    /// How many values are alive.
    fn live(&self) -> usize {
        self.entries.values().filter(|v| v.strong_count() > 0).count()
    }

    /// The values alive.
    fn values(&self) -> Vec<Arc<T>> {
        self.entries.values().filter_map(Weak::upgrade).collect()
    }
}

impl Followers {
    pub fn new(cluster: Arc<Cluster>, budget: FollowBudget, closing: watch::Receiver<bool>) -> Self {
        Followers { cluster, held: Arc::new(Held::new(budget)), closing, follows: Mutex::default() }
    }

    /// How many runs are followed and what they hold.
    pub fn report(&self) -> FollowReport {
        let runs = self.follows.lock().expect("follows").live();
        FollowReport { runs, bytes: self.held.bytes.load(Ordering::Relaxed), max: self.held.budget.total }
    }

    /// The messages of `subject` from `policy` on: with `share`, from the subject's shared
    /// follow when it has them (starting one if there is none); otherwise from a consumer of
    /// their own.
    pub async fn open(&self, subject: &str, policy: DeliverPolicy, share: bool) -> Result<Source, String> {
        let start = start_of(policy);
        let follow = if !share {
            None
        } else {
            let mut follows = self.follows.lock().expect("follows");
            match follows.get(subject) {
                Some(f) if f.usable() => f.covers(start).then_some(f),
                _ => {
                    let f =
                        Follow::start(self.cluster.clone(), subject, start, self.held.clone(), self.closing.clone());
                    follows.insert(subject.to_string(), &f);
                    Some(f)
                }
            }
        };
        let Some(follow) = follow else {
            return Ok(Source::Own(Box::new(consume(&self.cluster, subject, policy).await?)));
        };
        follow.started().await?;
        let attachment = Attachment { news: follow.news.subscribe(), follow, next_seq: start };
        Ok(Source::Shared(attachment))
    }
}

/// A run subject read once for every subscriber of this process.
struct Follow {
    state: Mutex<FollowState>,
    /// [`Held::clock`] when it was made or read its newest message.
    last_read: AtomicU64,
    /// Bumped on every change of `state`.
    news: watch::Sender<u64>,
    /// A subscriber has read everything the follow holds and waits for more.
    wanted: Arc<Notify>,
    /// Dropped with the last subscriber: tells the reading task to stop.
    _alive: oneshot::Sender<()>,
}

struct FollowState {
    /// Every message of the subject from this stream sequence on is in `messages` or is still
    /// to come (it moves up as old messages are trimmed).
    from: u64,
    /// With their stream sequences, in order.
    messages: VecDeque<(u64, Arc<Message>)>,
    bytes: usize,
    held: Arc<Held>,
    /// Subscribers that have read everything held and wait for more.
    waiting: usize,
    started: bool,
    /// Why the follow stopped reading (`None`: it reads on).
    failed: Option<String>,
}

impl Follow {
    fn start(
        cluster: Arc<Cluster>,
        subject: &str,
        start: u64,
        held: Arc<Held>,
        closing: watch::Receiver<bool>,
    ) -> Arc<Follow> {
        let (follow, gone) = Follow::new(start, held);
        let reader = Reader { follow: Arc::downgrade(&follow), wanted: follow.wanted.clone(), gone, cluster, closing };
        tokio::spawn(reader.read(subject.to_string(), start));
        follow
    }

    /// A follow holding nothing yet from stream sequence `start` on, counted in `held`; the
    /// receiver is told when the follow goes (with its last subscriber).
    fn new(start: u64, held: Arc<Held>) -> (Arc<Follow>, oneshot::Receiver<()>) {
        let (alive, gone) = oneshot::channel();
        let id = held.tick();
        let follow = Arc::new(Follow {
            state: Mutex::new(FollowState {
                from: start,
                messages: VecDeque::new(),
                bytes: 0,
                held: held.clone(),
                waiting: 0,
                started: false,
                failed: None,
            }),
            last_read: AtomicU64::new(id),
            news: watch::Sender::new(0),
            wanted: Arc::new(Notify::new()),
            _alive: alive,
        });
        held.follows.lock().expect("follows").insert(id, &follow);
        (follow, gone)
    }

    /// Keep `message` (stream sequence `seq`), within the run's budget and then the total's.
    fn push(&self, seq: u64, message: Arc<Message>) {
        let held = {
            let mut state = self.state.lock().expect("follow");
            state.push(seq, message);
            self.last_read.store(state.held.tick(), Ordering::Relaxed);
            state.held.clone()
        };
        self.news.send_modify(|n| *n = n.wrapping_add(1));
        held.trim_total();
    }

    fn usable(&self) -> bool {
        self.state.lock().expect("follow").failed.is_none()
    }

    fn covers(&self, start: u64) -> bool {
        start >= self.state.lock().expect("follow").from
    }

    fn change(&self, f: impl FnOnce(&mut FollowState)) {
        f(&mut self.state.lock().expect("follow"));
        self.news.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Wait until the follow's consumer exists (or could not be created).
    async fn started(&self) -> Result<(), String> {
        let mut news = self.news.subscribe();
        loop {
            {
                let state = self.state.lock().expect("follow");
                if let Some(why) = &state.failed {
                    return Err(why.clone());
                }
                if state.started {
                    return Ok(());
                }
            }
            if news.changed().await.is_err() {
                return Err("cannot follow the run's stream on NATS: the follow stopped".into());
            }
        }
    }
}

impl FollowState {
    /// Keep `message`, dropping the oldest while the run holds more than its budget (the
    /// total's is [`Held::trim_total`]'s, after the lock is released).
    fn push(&mut self, stream_seq: u64, message: Arc<Message>) {
        let n = message.payload.len();
        if let Some((_, newest)) = self.messages.back() {
            // No longer the newest: a trim may drop it now.
            self.held.droppable.fetch_add(newest.payload.len(), Ordering::Relaxed);
        }
        self.bytes += n;
        self.held.bytes.fetch_add(n, Ordering::Relaxed);
        self.messages.push_back((stream_seq, message));
        let per_run = self.held.budget.per_run;
        self.trim_while(|bytes| bytes > per_run);
        // Over the total with only this follow's older messages to give (every other follow
        // down to its newest: the steady state once the budget is reached): they go here, under
        // the lock already held — what the walk over every follow would come to.
        if self.held.bytes.load(Ordering::Relaxed) > self.held.budget.total
            && self.held.droppable.load(Ordering::Relaxed) == self.droppable()
        {
            let held = Arc::clone(&self.held);
            let target = crate::log::trim_target(held.budget.total);
            self.trim_while(|_| held.bytes.load(Ordering::Relaxed) > target);
        }
    }

    /// What a trim may drop of this follow: its messages' bytes but the newest's.
    fn droppable(&self) -> usize {
        self.bytes - self.messages.back().map_or(0, |(_, m)| m.payload.len())
    }

    /// Drop the oldest message while `over(bytes held of this run)` says so, keeping the newest;
    /// whether any went.
    fn trim_while(&mut self, mut over: impl FnMut(usize) -> bool) -> bool {
        let mut trimmed = false;
        while self.messages.len() > 1 && over(self.bytes) {
            let (seq, old) = self.messages.pop_front().expect("a message");
            self.bytes -= old.payload.len();
            self.held.bytes.fetch_sub(old.payload.len(), Ordering::Relaxed);
            self.held.droppable.fetch_sub(old.payload.len(), Ordering::Relaxed);
            self.from = seq + 1;
            trimmed = true;
        }
        trimmed
    }
}

impl Drop for FollowState {
    fn drop(&mut self) {
        self.held.bytes.fetch_sub(self.bytes, Ordering::Relaxed);
        self.held.droppable.fetch_sub(self.droppable(), Ordering::Relaxed);
    }
}

/// What the task reading a follow's subject holds (not the follow: it goes with its last
/// subscriber, and then the task ends).
struct Reader {
    follow: Weak<Follow>,
    wanted: Arc<Notify>,
    gone: oneshot::Receiver<()>,
    cluster: Arc<Cluster>,
    closing: watch::Receiver<bool>,
}

impl Reader {
    /// Read `subject` from `start` until the follow's last subscriber is gone.
    async fn read(self, subject: String, start: u64) {
        let Reader { follow, wanted, mut gone, cluster, mut closing } = self;
        let fail = |why: String| {
            if let Some(f) = follow.upgrade() {
                f.change(|s| s.failed = Some(why));
            }
        };
        let mut connection = cluster.connection();
        let mut up = *connection.borrow_and_update();
        let mut last: Option<u64> = None;
        let mut errors = 0u32;
        let mut messages: Option<pull::Ordered> = None;
        loop {
            if messages.is_none() {
                let policy = policy_from(last.map_or(start, |s| s + 1));
                tokio::select! {
                    made = consume(&cluster, &subject, policy) => match made {
                        Ok(m) => {
                            messages = Some(m);
                            let Some(f) = follow.upgrade() else { return };
                            f.change(|s| s.started = true);
                        }
                        // The subscribers that asked are told (a 503); later ones start a new follow.
                        Err(why) if last.is_none() => return fail(why),
                        Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
                    },
                    _ = &mut gone => return,
                    _ = closing.changed() => return fail("the server is closing".into()),
                }
                continue;
            }
            // Read on only while a subscriber waits for more: the fastest one sets the pace.
            let notified = wanted.notified();
            tokio::pin!(notified);
            // Registered before the count is read: a subscriber's call is not missed.
            notified.as_mut().enable();
            let Some(f) = follow.upgrade() else { return };
            let idle = f.state.lock().expect("follow").waiting == 0;
            drop(f); // not kept while waiting: the follow goes with its last subscriber
            if idle {
                tokio::select! {
                    _ = notified => {}
                    _ = &mut gone => return,
                    _ = closing.changed() => return fail("the server is closing".into()),
                }
                continue;
            }
            let consumer = messages.as_mut().expect("a consumer");
            tokio::select! {
                next = consumer.next() => match next {
                    Some(Ok(msg)) => {
                        errors = 0;
                        // Held messages are found by their place in the stream: one that does not
                        // say it cannot be held (never seen: JetStream always says), and the
                        // subscribers read on from consumers of their own, which deliver it.
                        let message = Message::of(&msg);
                        let Some(seq) = message.stream_seq else {
                            return fail("a message of the run's stream without its stream sequence".into());
                        };
                        last = Some(seq);
                        let Some(f) = follow.upgrade() else { return };
                        f.push(seq, Arc::new(message));
                    }
                    // The ordered consumer recreates itself across outages; errors that keep coming
                    // while connected are ones it cannot get past: the subscribers go on with their
                    // own consumers.
                    Some(Err(_)) => {
                        if up {
                            errors += 1;
                        }
                        if errors >= MAX_CONSECUTIVE_ERRORS {
                            return fail("the run's consumer keeps failing".into());
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    None => return fail("the run's consumer ended".into()),
                },
                _ = connection.changed() => {
                    let now = *connection.borrow_and_update();
                    if now && !up {
                        // Back after an outage: the old consumer may not have survived it (and
                        // would notice only after missing its heartbeats): a new one, from the next
                        // message.
                        messages = None;
                    }
                    up = now;
                }
                _ = &mut gone => return,
                _ = closing.changed() => return fail("the server is closing".into()),
            }
        }
    }
}

/// One subscriber's place in a shared follow.
pub(crate) struct Attachment {
    follow: Arc<Follow>,
    news: watch::Receiver<u64>,
    /// The stream sequence of the next message wanted (the first with this one or a later).
    next_seq: u64,
}

impl Attachment {
    async fn next(&mut self) -> Next {
        loop {
            // Marked seen before the state is read: a change after the read is not missed.
            self.news.borrow_and_update();
            {
                let state = self.follow.state.lock().expect("follow");
                if self.next_seq < state.from {
                    return Next::Reopen; // trimmed before this subscriber read it
                }
                let at = state.messages.partition_point(|(seq, _)| *seq < self.next_seq);
                if let Some((seq, m)) = state.messages.get(at) {
                    self.next_seq = seq + 1;
                    return Next::Message(m.clone());
                }
                if state.failed.is_some() {
                    return Next::Reopen;
                }
            }
            let _waiting = Waiting::new(&self.follow);
            if self.news.changed().await.is_err() {
                return Next::End;
            }
        }
    }
}

/// A subscriber counted as waiting for more while this lives (its wait may be dropped).
struct Waiting<'a>(&'a Follow);

impl<'a> Waiting<'a> {
    fn new(follow: &'a Follow) -> Self {
        follow.state.lock().expect("follow").waiting += 1;
        follow.wanted.notify_one();
        Waiting(follow)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.state.lock().expect("follow").waiting -= 1;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_live_map_sweeps_its_dead_once_it_has_doubled() {
        let mut map = super::LiveMap::<String, u32>::default();
        let kept: Vec<_> = (0..10).map(std::sync::Arc::new).collect();
        for (i, v) in kept.iter().enumerate() {
            map.insert(format!("kept{i}"), v);
        }
        for i in 0..54 {
            map.insert(format!("gone{i}"), &std::sync::Arc::new(i));
        }
        assert_eq!((map.entries.len(), map.live()), (64, 10), "no sweep before 64 entries");
        map.insert("new".to_string(), &kept[0]);
        assert_eq!(map.entries.len(), 11, "the 54 dead went at the 65th insert");
        assert_eq!(map.sweep_at, 64, "next sweep no sooner than the first");
        assert_eq!(map.get("kept3").as_deref(), Some(&3));
        assert_eq!(map.get("gone3"), None);
        // With many alive the next sweep waits for twice as many entries.
        let more: Vec<_> = (0..100).map(std::sync::Arc::new).collect();
        for (i, v) in more.iter().enumerate() {
            map.insert(format!("more{i}"), v);
        }
        assert_eq!(map.sweep_at, 128, "swept at 64 entries again, all alive: the next at twice that");
        assert_eq!(map.live(), 111);
    }

    use super::*;

    fn state(held: &Arc<Held>, from: u64) -> FollowState {
        FollowState {
            from,
            messages: VecDeque::new(),
            bytes: 0,
            held: held.clone(),
            waiting: 0,
            started: true,
            failed: None,
        }
    }

    fn message(stream_seq: u64, bytes: usize) -> Arc<Message> {
        let payload = Bytes::from(vec![b'x'; bytes]);
        Arc::new(Message { stream_seq: Some(stream_seq), headers: HeaderMap::new(), payload })
    }

    fn push(s: &mut FollowState, stream_seq: u64, bytes: usize) {
        s.push(stream_seq, message(stream_seq, bytes));
    }

    fn held(per_run: usize, total: usize) -> Arc<Held> {
        Arc::new(Held::new(FollowBudget { per_run, total }))
    }

    fn seqs(s: &FollowState) -> Vec<u64> {
        s.messages.iter().map(|(seq, _)| *seq).collect()
    }

    /// A follow's (stream sequences held, `from`).
    fn holds(f: &Follow) -> (Vec<u64>, u64) {
        let s = f.state.lock().unwrap();
        (seqs(&s), s.from)
    }

    #[test]
    fn a_follow_keeps_its_runs_budget_and_says_from_where_it_holds_everything() {
        let held = held(250, 10_000);
        let mut s = state(&held, 0);
        for (seq, bytes) in [(3, 100), (7, 100), (9, 100)] {
            push(&mut s, seq, bytes);
        }
        // 300 > 250: the oldest went, and a subscriber wanting stream sequence 3 must reopen.
        assert_eq!((seqs(&s), s.from, s.bytes), (vec![7, 9], 4, 200));
        assert_eq!(held.bytes.load(Ordering::Relaxed), 200);
        // One message larger than the budget is still kept: the newest always is.
        push(&mut s, 12, 1000);
        assert_eq!((seqs(&s), s.from), (vec![12], 10));
        drop(s);
        assert_eq!(held.bytes.load(Ordering::Relaxed), 0, "a follow that goes gives its bytes back");
    }

    #[test]
    fn over_the_total_budget_the_follows_read_from_least_recently_give_way_first() {
        let held = held(1000, 800);
        let (a, _a_gone) = Follow::new(0, held.clone());
        let (b, _b_gone) = Follow::new(0, held.clone());
        let (c, _c_gone) = Follow::new(0, held.clone());
        for seq in 1..=3 {
            a.push(seq, message(seq, 100));
        }
        for seq in 4..=6 {
            b.push(seq, message(seq, 100));
        }
        c.push(7, message(7, 100));
        c.push(8, message(8, 100));
        assert_eq!(held.bytes.load(Ordering::Relaxed), 800, "at the budget, nothing dropped");
        let news = *a.news.borrow();
        // 900 > 800: down to 700 (an eighth free), from a, which read least recently: not from
        // c, which pushed.
        c.push(9, message(9, 100));
        assert_eq!(held.bytes.load(Ordering::Relaxed), 700);
        assert_eq!(holds(&a), (vec![3], 3));
        assert_eq!(holds(&b), (vec![4, 5, 6], 0));
        assert_eq!(holds(&c), (vec![7, 8, 9], 0));
        assert_ne!(*a.news.borrow(), news, "a's subscribers are told, to reopen if they needed 1 or 2");
        // a keeps its newest message; then b gives way (900 at 11), then c itself (900 at 13).
        for seq in 10..=12 {
            c.push(seq, message(seq, 100));
        }
        assert_eq!(holds(&a), (vec![3], 3), "a's newest is kept");
        assert_eq!(holds(&b), (vec![6], 6));
        assert_eq!(holds(&c), (vec![7, 8, 9, 10, 11, 12], 0));
        assert_eq!(held.bytes.load(Ordering::Relaxed), 800);
        c.push(13, message(13, 100));
        assert_eq!((holds(&a), holds(&b)), ((vec![3], 3), (vec![6], 6)));
        assert_eq!(holds(&c), (vec![9, 10, 11, 12, 13], 9));
        assert_eq!(held.bytes.load(Ordering::Relaxed), 700);
        assert_eq!(held.droppable.load(Ordering::Relaxed), 400, "c's four oldest: a and b hold one each");
        // A follow that goes gives its bytes back, and is no longer trimmed.
        drop(a);
        assert_eq!(held.bytes.load(Ordering::Relaxed), 600);
        assert_eq!(held.follows.lock().unwrap().live(), 2);
        drop(c);
        assert_eq!((held.bytes.load(Ordering::Relaxed), held.droppable.load(Ordering::Relaxed)), (100, 0));
    }

    #[test]
    fn a_follow_that_holds_one_message_over_the_total_keeps_it() {
        let held = held(1000, 150);
        let (a, _a_gone) = Follow::new(0, held.clone());
        let (b, _b_gone) = Follow::new(0, held.clone());
        a.push(1, message(1, 100));
        b.push(2, message(2, 100));
        // Over the total with nothing more to drop: each follow keeps its newest.
        assert_eq!((holds(&a), holds(&b)), ((vec![1], 0), (vec![2], 0)));
        assert_eq!(held.bytes.load(Ordering::Relaxed), 200);
        b.push(3, message(3, 100));
        assert_eq!((holds(&a), holds(&b)), ((vec![1], 0), (vec![3], 3)));
    }

    #[test]
    fn over_the_total_with_every_follow_at_its_newest_message_a_trim_walks_nothing() {
        let held = held(1000, 150);
        let follows: Vec<_> = (0..4).map(|_| Follow::new(0, held.clone())).collect();
        for (i, (f, _)) in follows.iter().enumerate() {
            f.push(i as u64 + 1, message(i as u64 + 1, 100));
        }
        for seq in 5..50 {
            follows[seq as usize % 4].0.push(seq, message(seq, 100));
        }
        // Each push from the fifth put the follows over 150 bytes with one message to give —
        // the pushing follow's previous one, dropped right there under its lock: no walk.
        assert_eq!(held.bytes.load(Ordering::Relaxed), 400);
        assert_eq!(held.droppable.load(Ordering::Relaxed), 0);
        assert_eq!(held.walks.load(Ordering::Relaxed), 0, "the steady state walks nothing");
        let walks = held.walks.load(Ordering::Relaxed);
        // A message only over the total (nothing a trim may drop): no walk at all.
        let (late, _late_gone) = Follow::new(0, held.clone());
        late.push(50, message(50, 100));
        assert_eq!(held.walks.load(Ordering::Relaxed), walks);
        assert_eq!(held.bytes.load(Ordering::Relaxed), 500);
    }
}
