//! Properties of the run stream over arbitrary interleavings of producer posts (text deltas of
//! every kind, images, tool events, usage, plans, lifecycle, stdout/stderr), reads, cancels,
//! stall checks and clock advances.
//!
//! Every run is checked two ways:
//! * against a small REFERENCE MODEL written here from the contract text (decisions.md §3,
//!   stream-semantics §4 with our stall fix), independent of the implementation: same
//!   buffered items, same bytes (weights from `serde_json::to_string`, not from the crate's
//!   counting writer), same merges, same stall decisions, same delivered envelopes;
//! * by the end-to-end invariants: one gapless sequence (`SequenceCheck::missing() == 0` for a
//!   reader that reads everything), exactly one terminal and it is last, concatenated deltas
//!   per kind and attribution equal the produced text, no non-delta item lost or altered,
//!   `pressure.coalesced == Σ delivered coalesced`, exact byte accounting, and the admission
//!   bound: an item is appended while a mark is reached only if it could not merge into the
//!   tail, so below the marks bytes never exceed the budget by more than the one item that
//!   crossed it.
//!
//! Runs also vary the reader's channel set (items of other channels are numbered, accounted and
//! discarded, and close the tail to merging) and post through `post_batch` (raw lines of unread
//! channels as `Post::UnreadRaw`), which must behave exactly as posting one by one.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use agentstream_core::stream::*;
use agentstream_core::{
    AgentState, ContentBlock, ImageContent, LifecycleEvent, LifecycleReason, OutputEvent, PlanEntry, PlanEntryPriority,
    PlanEntryStatus, SandboxState, SessionUpdate, TokenUsage, ToolCall, ToolCallStatus, ToolCallUpdate, ToolKind,
    UsageScope,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Msg(u8, String),
    Thought(String),
    Image,
    User(String),
    Stdout(String),
    Stderr(String),
    ToolStart(u8),
    ToolEnd(u8),
    Usage(Option<u8>, u16),
    Plan,
    Lifecycle,
    Pop(u8),
    Advance(u16),
    CheckStall,
    Cancel(bool),
}

fn text() -> impl Strategy<Value = String> {
    "[ab\"\\\\\n\t\u{1}é😀]{0,5}"
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..3, text()).prop_map(|(a, t)| Op::Msg(a, t)),
        3 => text().prop_map(Op::Thought),
        1 => Just(Op::Image),
        1 => text().prop_map(Op::User),
        4 => text().prop_map(Op::Stdout),
        2 => text().prop_map(Op::Stderr),
        2 => (0u8..3).prop_map(Op::ToolStart),
        2 => (0u8..3).prop_map(Op::ToolEnd),
        1 => (proptest::option::of(0u8..2), 0u16..500).prop_map(|(m, p)| Op::Usage(m, p)),
        1 => Just(Op::Plan),
        1 => Just(Op::Lifecycle),
        5 => (1u8..4).prop_map(Op::Pop),
        3 => (0u16..200).prop_map(Op::Advance),
        1 => Just(Op::CheckStall),
        1 => any::<bool>().prop_map(Op::Cancel),
    ]
}

#[derive(Debug, Clone)]
enum Finish {
    Completed,
    Failed,
    Cancelled,
}

fn item_for(op: &Op, seq: u64) -> Option<StreamItem> {
    let content = |u: SessionUpdate| StreamItem::Content(OutputEvent::new(u));
    Some(match op {
        Op::Msg(attr, t) => {
            let mut ev = OutputEvent::new(SessionUpdate::message(t.clone()));
            ev.message_id = match attr {
                0 => None,
                1 => Some("m1".into()),
                _ => Some("m2".into()),
            };
            ev.timestamp = Some(format!("t{seq}").into()); // differs per piece: merging keeps the first
            StreamItem::Content(ev)
        }
        Op::Thought(t) => content(SessionUpdate::thought(t.clone())),
        Op::Image => content(SessionUpdate::AgentMessageChunk {
            content: ContentBlock::Image(ImageContent {
                data: "aGk=".into(),
                mime_type: "image/png".into(),
                uri: None,
            }),
        }),
        Op::User(t) => content(SessionUpdate::user_message(t.clone())),
        Op::Stdout(t) => StreamItem::Stdout(format!("{t}\n")),
        Op::Stderr(t) => StreamItem::Stderr(t.clone()),
        Op::ToolStart(n) => content(SessionUpdate::ToolCall(ToolCall {
            tool_call_id: format!("t{n}"),
            title: format!("tool {n}"),
            tool_name: Some(if *n == 0 { "Read".into() } else { "Bash".into() }),
            kind: ToolKind::Execute,
            status: ToolCallStatus::InProgress,
            raw_input: Some(serde_json::json!({"n": n}).into()),
            content: None,
            locations: None,
        })),
        Op::ToolEnd(n) => {
            let mut u = ToolCallUpdate::new(format!("t{n}"));
            u.status = Some(ToolCallStatus::Completed);
            content(SessionUpdate::ToolCallUpdate(u))
        }
        Op::Usage(m, p) => {
            let mut ev = OutputEvent::new(SessionUpdate::Usage {
                scope: UsageScope::Call,
                usage: TokenUsage { prompt_tokens: Some(*p as u64), ..Default::default() },
            });
            ev.message_id = m.map(|m| format!("m{m}").into());
            StreamItem::Content(ev)
        }
        Op::Plan => content(SessionUpdate::Plan {
            entries: vec![PlanEntry {
                content: "step".into(),
                status: PlanEntryStatus::Pending,
                priority: PlanEntryPriority::Medium,
            }],
        }),
        Op::Lifecycle => StreamItem::Lifecycle(LifecycleEvent {
            sandbox_id: None,
            sandbox: SandboxState::Paused,
            agent: AgentState::Running,
            timestamp: "t".into(),
            browser: None,
            reason: LifecycleReason::SandboxPause,
        }),
        _ => return None,
    })
}

/// The merge key of the model: kind + attribution (everything but the text and timestamp).
fn model_key(item: &StreamItem) -> Option<String> {
    match item {
        StreamItem::Stdout(_) => Some("stdout".into()),
        StreamItem::Stderr(_) => Some("stderr".into()),
        StreamItem::Content(ev) => {
            let kind = match &ev.update {
                SessionUpdate::AgentMessageChunk { content: ContentBlock::Text { .. } } => "message",
                SessionUpdate::AgentThoughtChunk { content: ContentBlock::Text { .. } } => "thought",
                _ => return None,
            };
            Some(format!(
                "{kind}|{:?}|{:?}|{:?}|{:?}|{:?}",
                ev.session_id, ev.message_id, ev.parent_tool_call_id, ev.model, ev.extra
            ))
        }
        StreamItem::Lifecycle(_) => None,
    }
}

fn text_mut(item: &mut StreamItem) -> &mut String {
    match item {
        StreamItem::Stdout(t) | StreamItem::Stderr(t) => t,
        StreamItem::Content(ev) => match &mut ev.update {
            SessionUpdate::AgentMessageChunk { content: ContentBlock::Text { text } }
            | SessionUpdate::AgentThoughtChunk { content: ContentBlock::Text { text } } => text,
            _ => unreachable!(),
        },
        StreamItem::Lifecycle(_) => unreachable!(),
    }
}

fn text_of(item: &StreamItem) -> Option<&str> {
    match item {
        StreamItem::Stdout(t) | StreamItem::Stderr(t) => Some(t),
        StreamItem::Content(ev) => match &ev.update {
            SessionUpdate::AgentMessageChunk { content: ContentBlock::Text { text } }
            | SessionUpdate::AgentThoughtChunk { content: ContentBlock::Text { text } } => Some(text),
            _ => None,
        },
        StreamItem::Lifecycle(_) => None,
    }
}

fn json_weight(item: &StreamItem) -> usize {
    match item {
        StreamItem::Content(ev) => serde_json::to_string(ev).unwrap().len(),
        StreamItem::Lifecycle(ev) => serde_json::to_string(ev).unwrap().len(),
        StreamItem::Stdout(t) | StreamItem::Stderr(t) => serde_json::to_string(t).unwrap().len(),
    }
}

/// The contract's admission rule, written independently of the crate.
#[derive(Default)]
struct Model {
    queue: VecDeque<Envelope>,
    bytes: usize,
    coalesced: u64,
    last_read: f64,
    nonempty_since: f64,
    /// An item was numbered and not buffered since the tail was appended.
    sealed: bool,
}

impl Model {
    fn admit(&mut self, policy: &Backpressure, seq: u64, item: StreamItem, now: f64) {
        if self.queue.is_empty() {
            self.nonempty_since = now;
        }
        let under = self.queue.len() >= policy.high_water || self.bytes >= policy.byte_budget;
        if under && !self.sealed {
            if let Some(tail) = self.queue.back_mut() {
                if model_key(&item).is_some() && model_key(&item) == model_key(&tail.item) {
                    let before = json_weight(&tail.item);
                    let mut item = item;
                    text_mut(&mut tail.item).push_str(text_mut(&mut item));
                    tail.coalesced += 1;
                    self.coalesced += 1;
                    self.bytes += json_weight(&tail.item) - before;
                    return;
                }
            }
        }
        self.bytes += json_weight(&item);
        self.sealed = false;
        self.queue.push_back(Envelope { run_id: "run_prop".into(), sequence: seq, coalesced: 0, item });
    }

    fn stall_due(&self, policy: &Backpressure, now: f64) -> bool {
        !self.queue.is_empty() && now - self.last_read.max(self.nonempty_since) > policy.stall_seconds
    }
}

fn policy() -> impl Strategy<Value = Backpressure> {
    (0usize..6, 1usize..400, 1u32..40)
        .prop_map(|(hw, budget, stall)| Backpressure::new(hw, budget, stall as f64).unwrap())
}

fn channel_set() -> impl Strategy<Value = ChannelSet> {
    prop_oneof![
        3 => Just(ChannelSet::ALL),
        1 => (0u8..16).prop_map(ChannelSet::from_bits),
    ]
}

fn run_case(
    policy: Backpressure,
    reader: bool,
    channels: ChannelSet,
    batched: bool,
    ops: Vec<Op>,
    finish: Finish,
) -> Result<(), TestCaseError> {
    let clock = ManualClock::new();
    let mut s = RunStream::new("run_prop", policy, Arc::new(clock.clone())).unwrap().with_reader_channels(channels);
    prop_assert_eq!(s.reader_channels(), channels);
    if reader {
        s.attach_reader().unwrap();
    }
    let read = |item: &StreamItem| reader && channels.contains(item.channel());
    let mut model = Model::default();
    let mut posted: Vec<(u64, StreamItem)> = Vec::new();
    let mut delivered: Vec<Envelope> = Vec::new();
    let mut first_cancel: Option<CancelReason> = None;
    let mut expect_stalled = false;

    let pop = |s: &mut RunStream, model: &mut Model, delivered: &mut Vec<Envelope>| -> Result<(), TestCaseError> {
        let before = s.pressure().bytes;
        let got = s.pop();
        prop_assert_eq!(got.as_ref(), model.queue.front());
        if let Some(env) = got {
            let w = json_weight(&env.item);
            prop_assert_eq!(before - s.pressure().bytes, w, "a pop frees exactly the popped item's weight");
            model.bytes -= w;
            model.queue.pop_front();
            model.last_read = clock.now();
            delivered.push(env);
        }
        Ok(())
    };

    for op in &ops {
        let now = clock.now();
        let seq = s.next_sequence();
        if let Some(item) = item_for(op, seq) {
            let before = s.pressure();
            let tail_key = model.queue.back().and_then(|t| model_key(&t.item));
            if batched {
                let raw = matches!(item, StreamItem::Stdout(_) | StreamItem::Stderr(_));
                s.post_batch([if raw && !channels.contains(item.channel()) {
                    Post::UnreadRaw
                } else {
                    item.clone().into()
                }]);
                prop_assert_eq!(s.next_sequence(), seq + 1, "posts are numbered in order");
            } else {
                prop_assert_eq!(s.post(item.clone()), Some(seq), "posts are numbered in order");
            }
            posted.push((seq, item.clone()));
            if reader && !read(&item) {
                model.sealed = true;
                prop_assert_eq!(s.pressure(), before, "an item of an unread channel is not buffered");
            }
            if read(&item) {
                let under = before.buffered >= policy.high_water || before.bytes >= policy.byte_budget;
                let mergeable = under && !model.sealed && model_key(&item).is_some() && model_key(&item) == tail_key;
                model.admit(&policy, seq, item.clone(), now);
                let after = s.pressure();
                if mergeable {
                    prop_assert_eq!(after.buffered, before.buffered, "an over-the-mark delta merges into its tail");
                } else {
                    prop_assert_eq!(after.buffered, before.buffered + 1, "anything else is appended");
                    if !under {
                        prop_assert!(after.bytes < policy.byte_budget + json_weight(&item));
                    }
                }
                // Admission checks the stall clock when it appends (a merge changes no stall state).
                if !mergeable && first_cancel.is_none() && model.stall_due(&policy, now) {
                    first_cancel = Some(CancelReason::Stalled);
                    expect_stalled = true;
                }
            }
        } else {
            match op {
                Op::Pop(n) if batched => {
                    // The batch read: the same envelopes as n pops, the same bytes freed.
                    let mut got = Vec::new();
                    let read = s.pop_up_to(*n as usize, |e| got.push(e));
                    prop_assert_eq!(read, got.len());
                    for env in got {
                        prop_assert_eq!(Some(&env), model.queue.front());
                        model.bytes -= json_weight(&env.item);
                        model.queue.pop_front();
                        model.last_read = clock.now();
                        delivered.push(env);
                    }
                    prop_assert_eq!(s.pressure().bytes, model.bytes);
                }
                Op::Pop(n) => {
                    for _ in 0..*n {
                        pop(&mut s, &mut model, &mut delivered)?;
                    }
                }
                Op::Advance(tenths) => clock.advance(*tenths as f64 / 10.0),
                Op::CheckStall => {
                    let due = reader && first_cancel.is_none() && model.stall_due(&policy, now);
                    let got = s.check_stall();
                    prop_assert_eq!(got.is_some(), due, "stall iff unread for more than stall_seconds");
                    if due {
                        first_cancel = Some(CancelReason::Stalled);
                        expect_stalled = true;
                    }
                }
                Op::Cancel(timeout) => {
                    let reason = if *timeout { CancelReason::Timeout } else { CancelReason::caller("stop") };
                    prop_assert_eq!(s.cancel(reason.clone()), first_cancel.is_none());
                    first_cancel.get_or_insert(reason);
                }
                _ => unreachable!(),
            }
        }
        let p = s.pressure();
        prop_assert_eq!(p.buffered, model.queue.len());
        prop_assert_eq!(p.bytes, model.bytes);
        prop_assert_eq!(p.coalesced, model.coalesced);
        prop_assert_eq!(p.stalled, expect_stalled);
        prop_assert_eq!(s.cancel_reason(), first_cancel.clone());
        if !reader {
            prop_assert_eq!((p.buffered, p.peak), (0, 0), "await-only never buffers");
        }
    }

    // The end.
    let n = s.next_sequence();
    prop_assert_eq!(n, posted.len() as u64);
    let outcome = match finish {
        Finish::Completed => RunOutcome::Completed,
        Finish::Failed => RunOutcome::failed("exit_status", "1"),
        Finish::Cancelled => RunOutcome::Cancelled { reason: CancelReason::caller("at the end") },
    };
    let expected = match (&first_cancel, &outcome) {
        (Some(r), _) => RunOutcome::Cancelled { reason: r.clone() },
        (None, o) => o.clone(),
    };
    let term = s.finish_at(outcome, "t").unwrap();
    prop_assert_eq!(term.sequence, n);
    prop_assert_eq!(s.post(StreamItem::Stdout("late\n".into())), None);
    prop_assert_eq!(s.pressure().dropped_after_terminal, 1);
    prop_assert_eq!(&s.record().unwrap().outcome, &expected);
    prop_assert_eq!(s.record().unwrap().last_sequence, n.checked_sub(1));
    prop_assert!(!s.cancel(CancelReason::Timeout), "a recorded outcome is never rewritten");

    if !reader {
        prop_assert!(s.pop().is_none() && s.is_drained());
        return Ok(());
    }
    loop {
        let len = delivered.len();
        if model.queue.is_empty() {
            let t = s.pop();
            prop_assert_eq!(t.as_ref(), Some(&term));
            delivered.push(t.unwrap());
            break;
        }
        pop(&mut s, &mut model, &mut delivered)?;
        prop_assert_eq!(delivered.len(), len + 1);
    }
    prop_assert!(s.pop().is_none() && s.is_drained());
    prop_assert_eq!(s.pressure().bytes, 0);

    // One gapless sequence, modulo coalescing (and the numbers of the channels not read).
    let mut check = SequenceCheck::new();
    for e in &delivered {
        prop_assert!(check.accept(e), "no late or duplicate envelope");
    }
    let unread = posted.iter().filter(|(_, i)| !read(i)).count() as u64;
    prop_assert_eq!(check.missing(), unread);
    prop_assert_eq!(check.next_expected(), n + 1);
    // Exactly one terminal, last.
    prop_assert_eq!(delivered.iter().filter(|e| e.is_terminal()).count(), 1);
    prop_assert!(delivered.last().unwrap().is_terminal());
    // Coalesced accounting.
    prop_assert_eq!(s.pressure().coalesced, delivered.iter().map(|e| e.coalesced).sum::<u64>());
    // Deltas reassemble exactly, per kind and attribution.
    let mut produced: BTreeMap<String, String> = BTreeMap::new();
    for (_, item) in posted.iter().filter(|(_, i)| read(i)) {
        if let Some(k) = model_key(item) {
            produced.entry(k).or_default().push_str(text_of(item).unwrap());
        }
    }
    let mut received: BTreeMap<String, String> = BTreeMap::new();
    for e in &delivered {
        if let Some(k) = model_key(&e.item) {
            received.entry(k).or_default().push_str(text_of(&e.item).unwrap());
        }
    }
    prop_assert_eq!(received, produced);
    // No non-delta item lost or altered, each with its own number.
    let want: Vec<(u64, &StreamItem)> =
        posted.iter().filter(|(_, i)| model_key(i).is_none() && read(i)).map(|(s, i)| (*s, i)).collect();
    let got: Vec<(u64, &StreamItem)> = delivered
        .iter()
        .filter(|e| model_key(&e.item).is_none() && !e.is_terminal())
        .map(|e| (e.sequence, &e.item))
        .collect();
    prop_assert_eq!(got, want);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_interleavings_keep_every_guarantee(
        policy in policy(),
        reader in prop::bool::weighted(0.85),
        channels in channel_set(),
        batched in any::<bool>(),
        ops in prop::collection::vec(op(), 0..120),
        finish in prop_oneof![Just(Finish::Completed), Just(Finish::Failed), Just(Finish::Cancelled)],
    ) {
        run_case(policy, reader, channels, batched, ops, finish)?;
    }

    /// A batch is exactly its items posted one by one: same numbers, merges, pressure and
    /// deliveries (the clock is read at most once, and a manual clock does not move meanwhile).
    #[test]
    fn a_batch_is_its_items_posted_one_by_one(
        policy in policy(),
        channels in channel_set(),
        chunks in prop::collection::vec(prop::collection::vec(op(), 0..12), 0..12),
    ) {
        let clock = ManualClock::new();
        let new = || {
            let mut s = RunStream::new("r", policy, Arc::new(clock.clone())).unwrap().with_reader_channels(channels);
            s.attach_reader().unwrap();
            s
        };
        let (mut one, mut batch) = (new(), new());
        for chunk in &chunks {
            let mut posts = Vec::new();
            for op in chunk {
                if let Some(item) = item_for(op, one.next_sequence()) {
                    let raw = matches!(item, StreamItem::Stdout(_) | StreamItem::Stderr(_));
                    posts.push(if raw && !channels.contains(item.channel()) { Post::UnreadRaw } else { item.clone().into() });
                    one.post(item);
                } else if let Op::Pop(n) = op {
                    // Reads happen between chunks: the batch side reads after its whole chunk.
                    for _ in 0..*n {
                        one.pop();
                    }
                    batch.post_batch(posts.drain(..));
                    for _ in 0..*n {
                        batch.pop();
                    }
                } else if let Op::Advance(t) = op {
                    batch.post_batch(posts.drain(..));
                    clock.advance(*t as f64 / 10.0);
                }
            }
            batch.post_batch(posts);
            prop_assert_eq!(one.next_sequence(), batch.next_sequence());
            prop_assert_eq!(one.pressure(), batch.pressure());
        }
        one.finish_at(RunOutcome::Completed, "t");
        batch.finish_at(RunOutcome::Completed, "t");
        let drain = |s: &mut RunStream| std::iter::from_fn(|| s.pop()).collect::<Vec<_>>();
        prop_assert_eq!(drain(&mut one), drain(&mut batch));
    }

    /// A flood of one kind of delta never holds more than `max(high_water, 1)` items.
    #[test]
    fn a_single_kind_flood_holds_at_most_high_water_items(
        policy in policy(),
        pieces in prop::collection::vec((text(), 0u8..8), 1..300),
    ) {
        let mut s = RunStream::new("r", policy, Arc::new(ManualClock::new())).unwrap();
        s.attach_reader().unwrap();
        let mut whole = String::new();
        let mut got = String::new();
        for (t, read) in &pieces {
            s.post(StreamItem::Stdout(t.clone()));
            whole.push_str(t);
            prop_assert!(s.pressure().buffered <= policy.high_water.max(1));
            if *read == 0 {
                if let Some(e) = s.pop() {
                    got.push_str(e.item.as_raw_text().unwrap());
                }
            }
        }
        while let Some(e) = s.pop() {
            got.push_str(e.item.as_raw_text().unwrap());
        }
        prop_assert_eq!(got, whole);
    }
}
