//! [`RunStream`]: the sink and bounded buffer of one run.

use std::fmt;
use std::sync::Arc;

use super::backpressure::Backpressure;
use super::buffer::{Admitted, Buffer, Pressure};
use super::cancel::{CancelReason, CancellationToken};
use super::clock::Clock;
use super::envelope::Envelope;
use super::error::StreamError;
use super::item::{ChannelSet, Post, StreamItem};
use super::outcome::{RunKind, RunOutcome, RunRecord, TerminalContext};
use super::tool_calls::{OpenToolCall, ToolCallTracker};
use crate::hooks::TerminalFacts;
use crate::lifecycle::LifecycleEvent;
use crate::redact::{RedactionPolicy, Redactor};
use crate::usage::{UsageAccumulator, UsageTotals};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reader {
    /// Nobody attached (yet): await-only mode, items are numbered and discarded.
    Absent,
    Attached,
    /// The reader left; items are numbered and discarded, and no reader may attach again.
    Left,
}

/// The sink and bounded buffer of ONE run, for at most one reader. See the [module
/// docs](super) for the guarantees.
///
/// A plain state machine: every method takes `&mut self` (or `&self`), none blocks, sleeps or
/// does IO, and time comes only from the injected [`Clock`]. To share it between a producer
/// thread and a reader thread, put it behind a `Mutex`; the [`CancellationToken`] is the part
/// meant to be shared freely.
///
/// ```
/// use std::sync::Arc;
/// use agentstream_core::stream::*;
/// use agentstream_core::{OutputEvent, SessionUpdate};
///
/// let clock = ManualClock::new();
/// let mut run = RunStream::new(new_run_id(), Backpressure::default(), Arc::new(clock.clone())).unwrap();
/// run.attach_reader().unwrap();
/// run.post(StreamItem::Stdout("{\"type\":\"text\"}\n".into()));
/// run.post(StreamItem::Content(OutputEvent::new(SessionUpdate::message("Hello"))));
/// run.finish_at(RunOutcome::Completed, "2026-12-02T00:00:00.000Z");
/// let seqs: Vec<u64> = std::iter::from_fn(|| run.pop()).map(|e| e.sequence).collect();
/// assert_eq!(seqs, [0, 1, 2]); // the terminal is last, with the next number
/// assert!(run.is_drained());
/// ```
pub struct RunStream {
    run_id: Arc<str>,
    policy: Backpressure,
    clock: Arc<dyn Clock>,
    kind: RunKind,
    redaction: RedactionPolicy,
    redactor: Redactor,
    token: CancellationToken,
    reader: Reader,
    channels: ChannelSet,
    next_sequence: u64,
    buffer: Buffer,
    last_read_at: f64,
    nonempty_since: f64,
    stalled: bool,
    dropped_after_terminal: u64,
    refused_terminals: u64,
    /// The process ended by itself: cancels are refused from then on, and the cancellation
    /// that stands is the token's at that moment (`Some(None)`: none) — a caller's token
    /// cancelled later, directly, does not rewrite the outcome either.
    ended_on_its_own: Option<Option<CancelReason>>,
    settled: Option<RunOutcome>,
    pending_terminal: Option<Envelope>,
    record: Option<RunRecord>,
    usage: UsageAccumulator,
    tools: ToolCallTracker,
}

impl fmt::Debug for RunStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunStream")
            .field("run_id", &self.run_id)
            .field("kind", &self.kind)
            .field("policy", &self.policy)
            .field("reader", &self.reader)
            .field("next_sequence", &self.next_sequence)
            .field("pressure", &self.pressure())
            .field("outcome", &self.settled)
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

impl RunStream {
    /// A stream for the run `run_id` (see [`new_run_id`](super::new_run_id)) with a validated
    /// policy and an injected clock. A `run` (not a command), redaction on, its own token.
    pub fn new(run_id: impl Into<Arc<str>>, policy: Backpressure, clock: Arc<dyn Clock>) -> Result<Self, StreamError> {
        policy.validate()?;
        let now = clock.now();
        Ok(RunStream {
            run_id: run_id.into(),
            policy,
            clock,
            kind: RunKind::Run,
            redaction: RedactionPolicy::default(),
            redactor: Redactor::new(),
            token: CancellationToken::new(),
            reader: Reader::Absent,
            channels: ChannelSet::ALL,
            next_sequence: 0,
            buffer: Buffer::default(),
            last_read_at: now,
            nonempty_since: now,
            stalled: false,
            dropped_after_terminal: 0,
            refused_terminals: 0,
            ended_on_its_own: None,
            settled: None,
            pending_terminal: None,
            record: None,
            usage: UsageAccumulator::new(),
            tools: ToolCallTracker::new(),
        })
    }

    /// This stream for a run of `kind` (its terminal reasons are `run_*` or `command_*`).
    pub fn with_kind(mut self, kind: RunKind) -> Self {
        self.kind = kind;
        self
    }

    /// This stream with a redaction policy (default: on). Events decoded by a
    /// [`Decoder`](crate::Decoder) are masked there already; a stream fed by one (the runner,
    /// `replay`) turns its own masking off.
    pub fn with_redaction(mut self, policy: RedactionPolicy) -> Self {
        self.redaction = policy;
        self
    }

    /// This stream cancelled through the caller's own token (a token already cancelled makes
    /// the run cancelled before it starts).
    pub fn with_token(mut self, token: CancellationToken) -> Self {
        self.token = token;
        self
    }

    /// The run id.
    pub fn run_id(&self) -> &Arc<str> {
        &self.run_id
    }

    /// Run or command.
    pub fn kind(&self) -> RunKind {
        self.kind
    }

    /// The policy.
    pub fn backpressure(&self) -> &Backpressure {
        &self.policy
    }

    /// The run's cancellation token: the driver watches it to stop the harness; anyone may
    /// cancel through it. Prefer [`cancel`](Self::cancel), which also refuses once the run's
    /// outcome is recorded.
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    // -- the reader ------------------------------------------------------------------------

    /// Attach THE reader. Must happen before the first item is numbered (earlier items would
    /// be gone: without a reader items are numbered and discarded). A second attach, even
    /// after the first reader left, is an error: one reader, no replay.
    pub fn attach_reader(&mut self) -> Result<(), StreamError> {
        match self.reader {
            Reader::Attached | Reader::Left => Err(StreamError::ReaderAlreadyAttached),
            Reader::Absent if self.next_sequence > 0 => {
                Err(StreamError::ReaderAttachedLate { next_sequence: self.next_sequence })
            }
            Reader::Absent => {
                self.reader = Reader::Attached;
                self.last_read_at = self.clock.now();
                Ok(())
            }
        }
    }

    /// The reader leaves (an iterator dropped, a peer vanished): unread items are discarded,
    /// later items are numbered and discarded, and a run still going is cancelled with
    /// [`CancelReason::ReaderLeft`] — a run nobody watches still bills. Returns whether this
    /// cancelled the run (false after the outcome was recorded: leaving after natural
    /// completion cancels nothing).
    pub fn detach_reader(&mut self) -> bool {
        if self.reader != Reader::Attached {
            return false;
        }
        self.reader = Reader::Left;
        self.buffer.clear();
        self.pending_terminal = None;
        self.cancel(CancelReason::ReaderLeft)
    }

    /// Whether a reader is attached now.
    pub fn has_reader(&self) -> bool {
        self.reader == Reader::Attached
    }

    /// The channels the reader reads (default: all four). Items of the other channels are
    /// numbered, redacted and accounted like every item, then discarded instead of buffered —
    /// as for a run without a reader — so a reader that only wants `content` does not pay
    /// for buffering every raw line. The terminal item is always delivered. A change applies
    /// to items posted after it (buffered items stay).
    pub fn set_reader_channels(&mut self, channels: ChannelSet) {
        self.channels = channels;
    }

    /// This stream with the reader's channel set (see [`set_reader_channels`](Self::set_reader_channels)).
    pub fn with_reader_channels(mut self, channels: ChannelSet) -> Self {
        self.channels = channels;
        self
    }

    /// The channels the reader reads.
    pub fn reader_channels(&self) -> ChannelSet {
        self.channels
    }

    /// Read the next envelope: buffered items in order, then the terminal item, then `None`
    /// forever. `None` also means "nothing yet" while the run goes on ([`is_drained`] tells
    /// the two apart). A read resets the stall clock.
    ///
    /// [`is_drained`]: Self::is_drained
    pub fn pop(&mut self) -> Option<Envelope> {
        if self.reader != Reader::Attached {
            return None;
        }
        let env = self.buffer.pop().or_else(|| self.pending_terminal.take())?;
        self.last_read_at = self.clock.now();
        Some(env)
    }

    /// Read up to `max` envelopes, in order, handing each to `take`: [`pop`](Self::pop) `max`
    /// times, with the clock read once for all of them (one read). Returns how many were read.
    pub fn pop_up_to(&mut self, max: usize, mut take: impl FnMut(Envelope)) -> usize {
        if self.reader != Reader::Attached {
            return 0;
        }
        let mut n = 0;
        while n < max {
            let Some(env) = self.buffer.pop().or_else(|| self.pending_terminal.take()) else { break };
            take(env);
            n += 1;
        }
        if n > 0 {
            self.last_read_at = self.clock.now();
        }
        n
    }

    /// Read envelopes in order, handing each to `take`, until `max` were read or the next one
    /// would take the bytes read past `max_bytes` (item weights, as the budget counts them; the
    /// terminal item weighs nothing). The first envelope is always read, however heavy, so a
    /// reader always progresses. The clock is read once. Returns how many were read.
    pub fn pop_bounded(&mut self, max: usize, max_bytes: usize, mut take: impl FnMut(Envelope)) -> usize {
        if self.reader != Reader::Attached {
            return 0;
        }
        let (mut n, mut bytes) = (0, 0usize);
        while n < max {
            if n > 0 && self.buffer.front_weight().is_some_and(|w| bytes.saturating_add(w) > max_bytes) {
                break;
            }
            let env = match self.buffer.pop_weighed() {
                Some((env, weight)) => {
                    bytes = bytes.saturating_add(weight);
                    env
                }
                None => match self.pending_terminal.take() {
                    Some(env) => env,
                    None => break,
                },
            };
            take(env);
            n += 1;
        }
        if n > 0 {
            self.last_read_at = self.clock.now();
        }
        n
    }

    // -- the producer ----------------------------------------------------------------------

    /// Post one item. Returns its sequence number, or `None` when it was not numbered:
    ///
    /// * after the terminal item: dropped and counted in `dropped_after_terminal`;
    /// * a terminal lifecycle item (`run_complete`, …): refused and counted in
    ///   `refused_terminals` — the terminal is derived by [`finish`](Self::finish), never posted.
    ///
    /// Every numbered item takes the next number of ONE gapless sequence across the four
    /// channels, whether or not anybody reads. Before numbering, a content item's tool-call
    /// inputs are redacted (per the policy); its usage and tool calls are accounted. Then,
    /// with a reader that reads its channel ([`set_reader_channels`](Self::set_reader_channels)),
    /// the item is admitted to the buffer (merging under pressure, see
    /// [`buffer`](super::buffer)) and, when it was appended, the stall clock is checked (a
    /// merge changes nothing the stall depends on; a timer calling
    /// [`check_stall`](Self::check_stall) covers time passing); otherwise it is discarded.
    /// Never blocks, never fails.
    pub fn post(&mut self, item: StreamItem) -> Option<u64> {
        self.post_reading_clock(item, &mut None)
    }

    /// Post items in order, exactly as [`post`](Self::post) would one by one, reading the
    /// clock at most once (they arrive together: one chunk of the harness's output).
    /// [`Post::UnreadRaw`] numbers a raw line of a channel outside the reader's set without
    /// its text (the producer checked [`reader_channels`](Self::reader_channels); if the set
    /// changed since, the line is numbered and not delivered all the same).
    pub fn post_batch(&mut self, items: impl IntoIterator<Item = Post>) {
        let mut now = None;
        for p in items {
            match p {
                Post::Item(item) => {
                    self.post_reading_clock(item, &mut now);
                }
                Post::UnreadRaw => self.post_unread_raw(),
            }
        }
    }

    /// [`Post::UnreadRaw`]: number a raw line nobody reads.
    pub(crate) fn post_unread_raw(&mut self) {
        if self.number().is_some() {
            self.buffer.seal_tail();
        }
    }

    /// The next number, or `None` (counted) once the terminal is numbered.
    fn number(&mut self) -> Option<u64> {
        if self.record.is_some() {
            self.dropped_after_terminal += 1;
            return None;
        }
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        Some(sequence)
    }

    /// [`post`](Self::post) with the clock read at most once per `now` (kept for the next post).
    #[inline]
    pub(crate) fn post_reading_clock(&mut self, item: StreamItem, now: &mut Option<f64>) -> Option<u64> {
        if self.record.is_none() && item.is_terminal() {
            self.refused_terminals += 1;
            return None;
        }
        let sequence = self.number()?;
        let mut item = item;
        if let StreamItem::Content(ev) = &mut item {
            if self.redaction.enabled {
                self.redactor.mask_event(ev);
            }
            self.usage.observe(ev);
            self.tools.observe(sequence, ev);
        }
        if self.reader == Reader::Attached && self.channels.contains(item.channel()) {
            let was_empty = self.buffer.is_empty();
            // A merge changes nothing the stall clock depends on (the buffer was already
            // non-empty and nobody read), so only an append reads the clock: the hot path of
            // a flood stays free of clock calls. Time passing is the timer's to notice.
            if self.buffer.admit(&self.policy, &self.run_id, sequence, item) == Admitted::Appended {
                let now = *now.get_or_insert_with(|| self.clock.now());
                if was_empty {
                    self.nonempty_since = now;
                }
                self.check_stall_at(now);
            }
        } else {
            self.buffer.seal_tail();
        }
        Some(sequence)
    }

    // -- pressure and stall ----------------------------------------------------------------

    /// True when the reader is behind: the buffer holds `high_water` items or `byte_budget`
    /// bytes (arriving text deltas merge now).
    pub fn under_pressure(&self) -> bool {
        self.reader == Reader::Attached
            && (self.buffer.len() >= self.policy.high_water || self.buffer.bytes() >= self.policy.byte_budget)
    }

    /// True when the buffered bytes reached `byte_budget`: a producer must stop producing (the
    /// runner stops reading the harness's pipes, so the harness blocks as in a shell pipe)
    /// until the reader catches up — memory is bounded by bytes (decisions.md §3). Never true
    /// without a reader (nothing is buffered then).
    pub fn is_full(&self) -> bool {
        self.reader == Reader::Attached && self.buffer.bytes() >= self.policy.byte_budget
    }

    /// Live statistics (any time, also after the run).
    pub fn pressure(&self) -> Pressure {
        Pressure {
            stalled: self.stalled,
            dropped_after_terminal: self.dropped_after_terminal,
            refused_terminals: self.refused_terminals,
            ..self.buffer.pressure()
        }
    }

    /// How long the oldest unread state has waited: `now − max(last read, when the buffer last
    /// went from empty to non-empty)`, or `None` when nothing waits (or no reader). The stall
    /// clock runs only while something is unread: a quiet run is not a stalled one.
    pub fn unread_age(&self) -> Option<f64> {
        (self.reader == Reader::Attached && !self.buffer.is_empty())
            .then(|| self.clock.now() - self.last_read_at.max(self.nonempty_since))
    }

    /// The clock instant after which [`check_stall`](Self::check_stall) would cancel the run,
    /// if nothing is read before it: for a driver's timer. `None` when no stall can happen
    /// now (nothing unread, no reader, outcome recorded, or already stalled).
    pub fn stall_deadline(&self) -> Option<f64> {
        self.stall_can_fire().then(|| self.last_read_at.max(self.nonempty_since) + self.policy.stall_seconds)
    }

    fn stall_can_fire(&self) -> bool {
        !self.stalled && self.reader == Reader::Attached && self.settled.is_none() && !self.buffer.is_empty()
    }

    /// Cancel the run if its reader has left items unread for MORE than `stall_seconds`
    /// (see [`unread_age`](Self::unread_age)). Call it from a timer, e.g. at
    /// [`stall_deadline`](Self::stall_deadline) (a dead reader on a silent run, or on a flood
    /// that only merges, is otherwise not noticed); [`post`](Self::post) also calls it when it
    /// appends an item. Returns
    /// `Some(CancelReason::Stalled)` exactly once, when this check cancelled the run; `None`
    /// when it did not (not stalled, or the run was already cancelled or settled).
    pub fn check_stall(&mut self) -> Option<CancelReason> {
        let now = self.clock.now();
        self.check_stall_at(now)
    }

    fn check_stall_at(&mut self, now: f64) -> Option<CancelReason> {
        if !self.stall_can_fire() {
            return None;
        }
        let age = now - self.last_read_at.max(self.nonempty_since);
        if age > self.policy.stall_seconds && self.cancel(CancelReason::Stalled) {
            self.stalled = true;
            return Some(CancelReason::Stalled);
        }
        None
    }

    // -- cancellation and the end ----------------------------------------------------------

    /// Cancel the run with `reason`, through its token: the one path for every cause. True
    /// only when this call cancelled it; false when it was already cancelled (the first
    /// reason stands) or its outcome was already recorded (a stop racing completion never
    /// rewrites the outcome). Items still arriving (the harness's last lines) are numbered as
    /// usual until [`finish`](Self::finish).
    pub fn cancel(&mut self, reason: CancelReason) -> bool {
        if self.settled.is_some() || self.ended_on_its_own.is_some() {
            return false;
        }
        self.token.cancel(reason)
    }

    /// The run's process ended by itself (the driver saw it exit) while its last output is
    /// still being read: from now on [`cancel`](Self::cancel) is a no-op, so a stop racing the
    /// natural end (a timeout, a reader leaving during the last read) never rewrites the
    /// outcome, which is derived from how the process ended. A cancellation that came earlier
    /// still stands.
    pub fn ended_on_its_own(&mut self) {
        if self.ended_on_its_own.is_none() {
            self.ended_on_its_own = Some(self.token.reason());
        }
    }

    /// The run's process ended by itself before any cancellation reached it (the driver saw it
    /// exit before it signalled anything, or found no process left to signal): a cancellation
    /// already on the token, and any later one, changes nothing — unlike
    /// [`ended_on_its_own`](Self::ended_on_its_own), after which an earlier one stands. A no-op
    /// once either was called.
    pub fn ended_before_cancel(&mut self) {
        if self.ended_on_its_own.is_none() {
            self.ended_on_its_own = Some(None);
        }
    }

    /// The token's cancellation as it stands for this run: as it was when the process ended by
    /// itself, or as it is now.
    fn token_reason(&self) -> Option<CancelReason> {
        match &self.ended_on_its_own {
            Some(at_the_end) => at_the_end.clone(),
            None => self.token.reason(),
        }
    }

    /// Whether the run is cancelled (recorded as cancelled, or its token flipped before the
    /// outcome was recorded).
    pub fn is_cancelled(&self) -> bool {
        self.cancel_reason().is_some()
    }

    /// The reason that stands: the recorded outcome's, or the token's while none is recorded.
    pub fn cancel_reason(&self) -> Option<CancelReason> {
        match &self.settled {
            Some(outcome) => outcome.cancel_reason().cloned(),
            None => self.token_reason(),
        }
    }

    /// Record the run's final state without ending the stream yet (the driver knows how the
    /// process ended but still has trailing output to post). Whichever the stream records
    /// first stands: a cancellation already on the token wins over `outcome` (the outcome is
    /// then `Cancelled` with the token's first reason); once recorded, later cancels are
    /// no-ops and later `settle`/`finish` outcomes are ignored. A `Cancelled` outcome given
    /// here goes through the token too (one path). Returns the outcome that stands.
    pub fn settle(&mut self, outcome: RunOutcome) -> RunOutcome {
        if let Some(o) = &self.settled {
            return o.clone();
        }
        if let RunOutcome::Cancelled { reason } = &outcome {
            self.token.cancel(reason.clone());
        }
        let o = match self.token_reason() {
            Some(reason) => RunOutcome::Cancelled { reason },
            None => outcome,
        };
        self.settled = Some(o.clone());
        o
    }

    /// End the run: number exactly ONE terminal lifecycle item, LAST, after everything posted
    /// before it. The outcome is [`settle`](Self::settle)d first (so a cancellation recorded
    /// earlier stands); the stream picks the terminal reason from it and the run kind, and
    /// `build` makes the lifecycle event (states, timestamp; its `reason` is overridden).
    /// Returns the terminal envelope — the reader also gets it from [`pop`](Self::pop) after
    /// the buffer drains — or `None` when the run was already finished. The terminal is never
    /// merged and not subject to the budget. Afterwards [`record`](Self::record) has the
    /// outcome, `last_sequence`, usage and open tool calls.
    pub fn finish(
        &mut self,
        outcome: RunOutcome,
        build: impl FnOnce(&TerminalContext<'_>) -> LifecycleEvent,
    ) -> Option<Envelope> {
        if self.record.is_some() {
            return None;
        }
        let outcome = self.settle(outcome);
        let reason = outcome.terminal_reason(self.kind);
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        let last_sequence = sequence.checked_sub(1);
        let usage = self.usage.totals();
        let open_tool_calls = self.tools.open();
        let mut event = build(&TerminalContext {
            run_id: &self.run_id,
            kind: self.kind,
            reason,
            outcome: &outcome,
            sequence,
            last_sequence,
            usage: &usage,
            open_tool_calls: &open_tool_calls,
        });
        event.reason = reason;
        let env = Envelope::new(Arc::clone(&self.run_id), sequence, StreamItem::Lifecycle(event));
        self.record = Some(RunRecord { outcome, terminal_sequence: sequence, last_sequence, usage, open_tool_calls });
        if self.reader == Reader::Attached {
            self.pending_terminal = Some(env.clone());
        }
        Some(env)
    }

    /// [`finish`](Self::finish) with [`TerminalContext::default_event`] stamped `timestamp`.
    pub fn finish_at(&mut self, outcome: RunOutcome, timestamp: impl Into<String>) -> Option<Envelope> {
        let timestamp = timestamp.into();
        self.finish(outcome, |ctx| ctx.default_event(timestamp))
    }

    /// The recorded outcome, once [`settle`](Self::settle)d or finished.
    pub fn outcome(&self) -> Option<&RunOutcome> {
        self.settled.as_ref()
    }

    /// What the finished run left behind (after [`finish`](Self::finish)).
    pub fn record(&self) -> Option<&RunRecord> {
        self.record.as_ref()
    }

    /// The facts the hook layer needs for the terminal hook (after [`finish`](Self::finish)).
    pub fn terminal_facts(&self) -> Option<TerminalFacts> {
        self.record.as_ref().map(RunRecord::terminal_facts)
    }

    /// True once the terminal item is numbered: nothing more will be accepted.
    pub fn is_closed(&self) -> bool {
        self.record.is_some()
    }

    /// True once the run is closed and the reader has nothing left to read (always true after
    /// the end without a reader).
    pub fn is_drained(&self) -> bool {
        self.is_closed() && self.buffer.is_empty() && self.pending_terminal.is_none()
    }

    /// The number the next item would get (= items numbered so far).
    pub fn next_sequence(&self) -> u64 {
        self.next_sequence
    }

    /// Usage so far (the harness's run total preferred; see [`crate::usage`]).
    pub fn usage(&self) -> UsageTotals {
        self.usage.totals()
    }

    /// The usage accumulator itself (calls and run total separately).
    pub fn usage_accumulator(&self) -> &UsageAccumulator {
        &self.usage
    }

    /// Tool calls started and not finished, oldest first.
    pub fn open_tool_calls(&self) -> Vec<OpenToolCall> {
        self.tools.open()
    }

    /// How many tool calls are started and not finished.
    pub fn open_tool_call_count(&self) -> usize {
        self.tools.open_count()
    }
}
