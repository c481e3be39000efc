//! The run stream: one ordered, numbered, bounded stream per run (decisions.md §1 §3 §4).
//!
//! A run delivers [`StreamItem`]s on four channels — `content`, `lifecycle`, `stdout`,
//! `stderr` — through one [`RunStream`], which numbers them, buffers them for at most one
//! reader and ends them with exactly one terminal item. Everything here is sans-IO and
//! deterministic: no threads, no sleeping, time only from an injected [`Clock`].
//!
//! # Guarantees
//!
//! **One gapless sequence.** Every item posted before the end gets the next number of ONE
//! sequence from 0 across all four channels, whether or not anybody reads (stdout and stderr
//! strings consume numbers too). Numbers are never reused, skipped or renumbered. A reader sees
//! every number exactly once: as an envelope's `sequence`, or inside a merged delta's
//! `coalesced` count (the numbers `sequence + 1 ..= sequence + coalesced`). [`SequenceCheck`]
//! counts exactly that way, so a reader that reads everything sees `missing() == 0`.
//!
//! **Exactly one terminal item, last.** [`RunStream::finish`] derives it from the run's final
//! state ([`RunOutcome`], see [`derive_outcome`]): a lifecycle item whose reason is
//! `run_complete` / `run_failed` / `run_interrupted` (or `command_*`), numbered right after the
//! last item posted before it, delivered after every buffered item, never merged, outside the
//! budget. Items posted after it are dropped (and counted); a terminal posted as an ordinary
//! item is refused (and counted). Partial output is never a completed run: a non-zero exit, a
//! signal, a fatal error, output ending mid-line or mid tool call is Failed.
//!
//! **The producer never waits.** `post` never blocks and never fails. Without a reader
//! (await-only), items are numbered and discarded, never buffered; so are items of the
//! channels a reader said it does not read ([`RunStream::set_reader_channels`]; the terminal
//! item is always delivered).
//!
//! **Bounded by merging, nothing lost.** With a reader, unread items queue. Above either mark
//! ([`Backpressure`]: `high_water` items or `byte_budget` bytes, checked before adding), an
//! arriving text delta (message or thought text, stdout, stderr) merges into the tail item if
//! that is a delta of the same kind and attribution ([`coalesce`]); concatenation is exact.
//! Nothing else ever merges, nothing is ever dropped; an item heavier than the whole budget is
//! admitted and counted `oversize`. [`Pressure`] is readable at any time. The bytes are bounded
//! by the producer: [`RunStream::is_full`] says when `byte_budget` bytes wait, and the runner
//! then stops reading the harness until the reader catches up (see [`buffer`]).
//!
//! **A reader that stops reading stops the run.** The stall clock runs only while something
//! is unread: age = now − max(last read, when the buffer last went from empty to non-empty).
//! Past `stall_seconds` ([`RunStream::check_stall`], from a timer — [`RunStream::stall_deadline`]
//! says when — and at each post that appends an item) the run is cancelled with
//! [`CancelReason::Stalled`], once. A quiet run is not a stalled one; a reader
//! blocked on an empty buffer is not stalled.
//!
//! **One cancellation path.** A caller's stop, a reader leaving, a stall and a timeout all
//! cancel the run's [`CancellationToken`]. The first reason stands; later cancels are no-ops.
//! A stop racing natural completion gives one outcome: whichever the stream records first
//! ([`RunStream::settle`] / [`RunStream::finish`] vs the token) stands, and a recorded
//! outcome is never rewritten. Tool calls in flight at the end are tracked
//! ([`RunStream::open_tool_calls`]) and classified indeterminate or failed-and-retryable
//! ([`classify_interrupted`]).
//!
//! **Reconcilable end.** [`RunStream::record`] keeps the outcome, the last sequence before the
//! terminal, usage so far ([`crate::usage`]) and the open tool calls; [`RunRecord::terminal_facts`]
//! hands them to the hook layer.
//!
//! **Versions.** [`Envelope`] has one wire form (`runId`, `sequence`, `channel`, `event`,
//! `coalesced` when > 0); [`decode_envelope`] and the stream reader [`EnvelopeReader`] skip
//! (and count) lines that are not events — no kind, a kind of the wrong JSON type, a kind this
//! version does not know, `sequence`-only objects — and reject known kinds that do not parse,
//! naming the kind; the stream goes on either way.
//!
//! # Modules
//!
//! [`item`] (the four channels), [`envelope`] (numbered items and their wire form), [`wire`]
//! (version-tolerant decoding), [`run_id`], [`backpressure`] (policy and shared budget),
//! [`clock`], [`cancel`], [`coalesce`] (what merges), [`weight`] (bytes of an item),
//! [`buffer`] (admission and [`Pressure`]), [`outcome`] (outcome, terminal, record),
//! [`tool_calls`] (calls in flight), [`sequence`] ([`SequenceCheck`]), [`run`] ([`RunStream`]).

pub mod backpressure;
pub mod buffer;
pub mod cancel;
pub mod clock;
pub mod coalesce;
pub mod envelope;
pub mod error;
pub mod item;
pub mod outcome;
pub mod run;
pub mod run_id;
pub mod sequence;
pub mod tool_calls;
pub mod weight;
pub mod wire;

pub use backpressure::{
    Backpressure, BudgetPermit, DEFAULT_BYTE_BUDGET, DEFAULT_HIGH_WATER, DEFAULT_STALL_SECONDS, SharedBudget,
};
pub use buffer::Pressure;
pub use cancel::{CancelReason, CancellationToken};
pub use clock::{Clock, ManualClock, SystemClock};
pub use coalesce::{DeltaKind, delta_kind};
pub use envelope::Envelope;
pub use error::StreamError;
pub use item::{ChannelSet, EventRef, Post, StreamItem};
pub use outcome::{RunEnd, RunKind, RunOutcome, RunRecord, TerminalContext, derive_outcome};
pub use run::RunStream;
pub use run_id::new_run_id;
pub use sequence::SequenceCheck;
pub use tool_calls::{FinishedEarly, InterruptedToolCall, OpenToolCall, ToolCallTracker, classify_interrupted};
pub use weight::item_weight;
pub use wire::{EnvelopeLine, EnvelopeReader, EnvelopeStats, Skip, decode_envelope, read_envelope_line};
