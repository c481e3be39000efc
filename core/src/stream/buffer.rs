//! The bounded, coalescing buffer between a run and its one reader, and its [`Pressure`]
//! statistics.
//!
//! Admission of an arriving item (decisions.md §3, evaluated BEFORE adding it):
//!
//! 1. Under pressure — `len >= high_water` OR `bytes >= byte_budget` — a text delta that can
//!    merge into the TAIL item (see [`coalesce`](super::coalesce)) is merged: the tail keeps its
//!    sequence, its `coalesced` grows by one, its text grows exactly. Only the tail is a merge
//!    target, so the numbers a merged envelope absorbs are always `sequence + 1 ..=
//!    sequence + coalesced` and a sequence checker can account for them. For the same reason
//!    an item numbered without being buffered (its channel is not read) closes the tail to
//!    merging until the next append.
//! 2. Otherwise the item is appended, whatever it is: nothing but text deltas ever merges,
//!    nothing is ever dropped, and the producer never waits. An item heavier than the whole
//!    budget is admitted and counted in `oversize` — dropping it could lose a tool call.
//!
//! What this bounds: below the marks items queue one by one; at a mark, a run of same-kind
//! deltas becomes ONE item that grows, instead of many. Admission never refuses, so what caps
//! the bytes is the producer: once the buffered bytes reach `byte_budget`
//! ([`RunStream::is_full`](super::RunStream::is_full)) the runner stops reading the harness's
//! pipes until the reader takes items (the harness blocks, as in a shell pipe); a reader that
//! leaves items unread for `stall_seconds` gets the run cancelled.

use std::collections::VecDeque;
use std::sync::Arc;

use super::backpressure::Backpressure;
use super::coalesce::try_merge;
use super::envelope::Envelope;
use super::item::StreamItem;
use super::weight::item_weight;

/// Live statistics of a run's buffer, readable at any time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Pressure {
    /// Items waiting unread now (the terminal item is not counted).
    pub buffered: usize,
    /// Bytes waiting unread now (each item's weight: the JSON length of its `event`).
    pub bytes: usize,
    /// The most items ever waiting at once.
    pub peak: usize,
    /// The most bytes ever waiting at once.
    pub peak_bytes: usize,
    /// Deltas merged into an earlier buffered delta (= the sum of delivered `coalesced`, when
    /// everything is read).
    pub coalesced: u64,
    /// Items admitted although each alone exceeded the whole byte budget.
    pub oversize: u64,
    /// Whether the run was cancelled because its reader stalled.
    pub stalled: bool,
    /// Items posted after the terminal item: dropped, never numbered.
    pub dropped_after_terminal: u64,
    /// Terminal lifecycle items posted as ordinary items: refused, never numbered (only
    /// [`RunStream::finish`](super::RunStream::finish) makes the terminal).
    pub refused_terminals: u64,
}

#[derive(Debug)]
struct Slot {
    env: Envelope,
    weight: usize,
}

/// What admission did with an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admitted {
    /// Queued as a new item.
    Appended,
    /// Merged into the tail delta.
    Merged,
}

/// A FIFO of slots in fixed-size chunks: a reader that falls far behind makes the queue long,
/// and one contiguous deque would then grow by doubling, copying every slot (a few hundred bytes
/// each) and touching fresh memory each time. Chunks never move; emptied chunks are kept for
/// reuse (up to `SPARE`), so a queue that fills and drains allocates nothing in the steady
/// state, and the reader's thread does not free what the producer's allocated.
#[derive(Debug, Default)]
struct Slots {
    chunks: VecDeque<VecDeque<Slot>>,
    len: usize,
    spare: Vec<VecDeque<Slot>>,
}

impl Slots {
    const CHUNK: usize = 64;
    const SPARE: usize = 64;

    fn len(&self) -> usize {
        self.len
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn push_back(&mut self, slot: Slot) {
        if self.chunks.back().is_none_or(|c| c.len() == Self::CHUNK) {
            let chunk = self.spare.pop().unwrap_or_else(|| VecDeque::with_capacity(Self::CHUNK));
            self.chunks.push_back(chunk);
        }
        if let Some(chunk) = self.chunks.back_mut() {
            chunk.push_back(slot);
            self.len += 1;
        }
    }

    fn front(&self) -> Option<&Slot> {
        self.chunks.front().and_then(VecDeque::front)
    }

    fn back_mut(&mut self) -> Option<&mut Slot> {
        self.chunks.back_mut().and_then(VecDeque::back_mut)
    }

    #[inline]
    fn pop_front(&mut self) -> Option<Slot> {
        let first = self.chunks.front_mut()?;
        let slot = first.pop_front()?;
        self.len -= 1;
        if first.is_empty() {
            if let Some(chunk) = self.chunks.pop_front() {
                if self.spare.len() < Self::SPARE {
                    self.spare.push(chunk);
                }
            }
        }
        Some(slot)
    }

    fn clear(&mut self) {
        self.chunks.clear();
        self.len = 0;
    }
}

/// The queue of unread envelopes with byte accounting.
#[derive(Debug, Default)]
pub(crate) struct Buffer {
    slots: Slots,
    bytes: usize,
    peak: usize,
    peak_bytes: usize,
    coalesced: u64,
    oversize: u64,
    /// An item was numbered after the tail without being buffered (the reader does not read
    /// its channel): the tail may not absorb later deltas, whose numbers would no longer
    /// follow its own.
    sealed: bool,
}

impl Buffer {
    /// Close the tail to merging until the next append (see `sealed`).
    pub(crate) fn seal_tail(&mut self) {
        self.sealed = true;
    }

    #[inline]
    pub(crate) fn admit(
        &mut self,
        policy: &Backpressure,
        run_id: &Arc<str>,
        sequence: u64,
        item: StreamItem,
    ) -> Admitted {
        let under_pressure = self.slots.len() >= policy.high_water || self.bytes >= policy.byte_budget;
        if under_pressure && !self.sealed {
            if let Some(tail) = self.slots.back_mut() {
                if let Some(added) = try_merge(&mut tail.env.item, &item) {
                    tail.env.coalesced += 1;
                    tail.weight += added;
                    self.bytes += added;
                    self.peak_bytes = self.peak_bytes.max(self.bytes);
                    self.coalesced += 1;
                    return Admitted::Merged;
                }
            }
        }
        let weight = item_weight(&item);
        if weight > policy.byte_budget {
            self.oversize += 1;
        }
        self.slots
            .push_back(Slot { env: Envelope { run_id: Arc::clone(run_id), sequence, coalesced: 0, item }, weight });
        self.bytes += weight;
        self.sealed = false;
        self.peak = self.peak.max(self.slots.len());
        self.peak_bytes = self.peak_bytes.max(self.bytes);
        Admitted::Appended
    }

    #[inline]
    pub(crate) fn pop(&mut self) -> Option<Envelope> {
        self.pop_weighed().map(|(env, _)| env)
    }

    /// The next envelope with its weight (the bytes it counted in the budget).
    #[inline]
    pub(crate) fn pop_weighed(&mut self) -> Option<(Envelope, usize)> {
        let slot = self.slots.pop_front()?;
        self.bytes -= slot.weight;
        Some((slot.env, slot.weight))
    }

    /// The weight of the next envelope, if any.
    pub(crate) fn front_weight(&self) -> Option<usize> {
        self.slots.front().map(|s| s.weight)
    }

    pub(crate) fn clear(&mut self) {
        self.slots.clear();
        self.bytes = 0;
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Fill the buffer's share of a [`Pressure`].
    pub(crate) fn pressure(&self) -> Pressure {
        Pressure {
            buffered: self.slots.len(),
            bytes: self.bytes,
            peak: self.peak,
            peak_bytes: self.peak_bytes,
            coalesced: self.coalesced,
            oversize: self.oversize,
            ..Pressure::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(n: u64) -> Slot {
        Slot { env: Envelope::new("r", n, StreamItem::Stdout(String::new())), weight: n as usize }
    }

    /// The chunked queue is a FIFO: same order, lengths and tails as a plain deque, across chunk
    /// boundaries, drains to empty and refills.
    #[test]
    fn chunked_slots_are_a_fifo() {
        let (mut q, mut model) = (Slots::default(), VecDeque::new());
        let mut next = 0u64;
        // A deterministic walk: bursts of pushes and pops of varying sizes.
        for round in 0..400u64 {
            for _ in 0..(round * 7919 % 150) {
                q.push_back(slot(next));
                model.push_back(next);
                next += 1;
            }
            assert_eq!(q.back_mut().map(|s| s.env.sequence), model.back().copied());
            for _ in 0..(round * 104729 % 170) {
                assert_eq!(q.pop_front().map(|s| s.env.sequence), model.pop_front());
            }
            assert_eq!((q.len(), q.is_empty()), (model.len(), model.is_empty()));
        }
        q.clear();
        assert!(q.is_empty() && q.pop_front().is_none() && q.back_mut().is_none());
        q.push_back(slot(1));
        assert_eq!(q.pop_front().map(|s| s.env.sequence), Some(1));
    }
}
