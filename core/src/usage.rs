//! Per-run token and cost totals from the harness's `usage` updates.
//!
//! The rules are the seed's ("Harness-reported usage"):
//!
//! * A `call` usage repeats for every line of one LLM message (claude prints one line per
//!   content block, each with the message's running usage): keep the LAST one per `messageId`,
//!   then add across messages. A `call` usage without a `messageId` is its own call and counts.
//! * A `run` usage is the harness's own total for the whole run, not another call. It is kept
//!   separately and PREFERRED as the run's total: counter by counter, the run total's value
//!   when it reported that counter, else the sum over calls. If a harness prints several `run`
//!   usages, the last stands (each is a whole-run total, not an increment).
//! * A counter no usage reported stays absent (`None`), never 0 — "unknown" and "zero" differ.
//!
//! Usage is accounting, not work: whether a run did anything is
//! [`did_work`](crate::event::did_work), which ignores `usage` and `error` updates.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::event::{OutputEvent, SessionUpdate, SharedStr, TokenUsage, UsageScope};

/// Totals of a run. Serialized camelCase like [`TokenUsage`]; absent counters are omitted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct UsageTotals {
    /// Input tokens, including the cached and cache-written shares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// Output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// The cache-read share of `prompt_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// Cost in USD, only when the harness priced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

fn add_u64(a: &mut Option<u64>, b: Option<u64>) {
    if let Some(b) = b {
        *a = Some(a.unwrap_or(0).saturating_add(b));
    }
}

fn add_f64(a: &mut Option<f64>, b: Option<f64>) {
    if let Some(b) = b {
        *a = Some(a.unwrap_or(0.0) + b);
    }
}

impl UsageTotals {
    /// True when no counter was ever reported.
    pub fn is_empty(&self) -> bool {
        self.prompt_tokens.is_none()
            && self.completion_tokens.is_none()
            && self.cached_tokens.is_none()
            && self.cost_usd.is_none()
    }

    /// Add one usage's counters (absent stays absent).
    pub fn add(&mut self, u: &TokenUsage) {
        add_u64(&mut self.prompt_tokens, u.prompt_tokens);
        add_u64(&mut self.completion_tokens, u.completion_tokens);
        add_u64(&mut self.cached_tokens, u.cached_tokens);
        add_f64(&mut self.cost_usd, u.cost_usd);
    }

    /// Add another total's counters (absent stays absent).
    pub fn add_totals(&mut self, t: &UsageTotals) {
        add_u64(&mut self.prompt_tokens, t.prompt_tokens);
        add_u64(&mut self.completion_tokens, t.completion_tokens);
        add_u64(&mut self.cached_tokens, t.cached_tokens);
        add_f64(&mut self.cost_usd, t.cost_usd);
    }

    /// The counters of one usage.
    pub fn of(u: &TokenUsage) -> Self {
        let mut t = UsageTotals::default();
        t.add(u);
        t
    }

    /// This total's counters where it has them, `fallback`'s elsewhere.
    pub fn or(&self, fallback: &UsageTotals) -> UsageTotals {
        UsageTotals {
            prompt_tokens: self.prompt_tokens.or(fallback.prompt_tokens),
            completion_tokens: self.completion_tokens.or(fallback.completion_tokens),
            cached_tokens: self.cached_tokens.or(fallback.cached_tokens),
            cost_usd: self.cost_usd.or(fallback.cost_usd),
        }
    }

    /// As a JSON object (for the hook layer's `usage` detail); `None` when empty.
    pub fn to_json_value(&self) -> Option<serde_json::Value> {
        if self.is_empty() { None } else { serde_json::to_value(self).ok() }
    }
}

/// Accumulates one run's usage updates. Deterministic: sums run in first-seen order.
///
/// Only the counters are kept (not the harness's `extra` fields), and the message of the
/// previous call usage is checked before the index: consecutive lines of one message (claude
/// prints one per content block) cost a string comparison, not a hash and a clone.
#[derive(Debug, Clone, Default)]
pub struct UsageAccumulator {
    /// Last call usage per message id, in the order messages were first seen.
    per_message: Vec<(SharedStr, UsageTotals)>,
    index: HashMap<SharedStr, usize>,
    /// The entry of `per_message` updated last.
    last: usize,
    /// Calls without a message id, already summed.
    anonymous: UsageTotals,
    run: Option<UsageTotals>,
}

impl UsageAccumulator {
    /// Nothing reported yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Accumulate every usage update of `events`.
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a OutputEvent>) -> Self {
        let mut acc = Self::new();
        for e in events {
            acc.observe(e);
        }
        acc
    }

    /// Observe one content event (anything but a `usage` update is ignored).
    pub fn observe(&mut self, ev: &OutputEvent) {
        let SessionUpdate::Usage { scope, usage } = &ev.update else { return };
        let counters = UsageTotals::of(usage);
        match (scope, &ev.message_id) {
            (UsageScope::Run, _) => self.run = Some(counters),
            (UsageScope::Call, Some(mid)) => {
                if let Some((last_mid, slot)) = self.per_message.get_mut(self.last) {
                    if last_mid == mid {
                        *slot = counters;
                        return;
                    }
                }
                match self.index.get(mid) {
                    Some(&i) => {
                        self.per_message[i].1 = counters;
                        self.last = i;
                    }
                    None => {
                        self.last = self.per_message.len();
                        self.index.insert(mid.clone(), self.last);
                        self.per_message.push((mid.clone(), counters));
                    }
                }
            }
            (UsageScope::Call, None) => self.anonymous.add_totals(&counters),
        }
    }

    /// The sum over calls (last per `messageId`, plus every call without one).
    pub fn calls_total(&self) -> UsageTotals {
        let mut t = UsageTotals::default();
        for (_, u) in &self.per_message {
            t.add_totals(u);
        }
        t.add_totals(&self.anonymous);
        t
    }

    /// The harness's own whole-run total, when it printed one (the last one).
    pub fn run_total(&self) -> Option<UsageTotals> {
        self.run.clone()
    }

    /// The run's totals: the harness's run total counter by counter, the calls' sum where it
    /// is silent.
    pub fn totals(&self) -> UsageTotals {
        match self.run_total() {
            Some(run) => run.or(&self.calls_total()),
            None => self.calls_total(),
        }
    }

    /// Number of distinct LLM messages with call usage (calls without an id not included).
    pub fn messages(&self) -> usize {
        self.per_message.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(scope: UsageScope, mid: Option<&str>, p: u64, c: Option<u64>, cost: Option<f64>) -> OutputEvent {
        let mut ev = OutputEvent::new(SessionUpdate::Usage {
            scope,
            usage: TokenUsage { prompt_tokens: Some(p), completion_tokens: c, cost_usd: cost, ..Default::default() },
        });
        ev.message_id = mid.map(SharedStr::from);
        ev
    }

    #[test]
    fn repeated_call_lines_count_once_per_message() {
        let evs = [
            usage(UsageScope::Call, Some("m1"), 100, Some(1), None),
            usage(UsageScope::Call, Some("m1"), 100, Some(5), None),
            usage(UsageScope::Call, Some("m2"), 200, Some(7), None),
            usage(UsageScope::Call, None, 10, None, None),
            usage(UsageScope::Call, None, 10, None, None),
            OutputEvent::new(SessionUpdate::message("not usage")),
        ];
        let acc = UsageAccumulator::from_events(&evs);
        let t = acc.totals();
        assert_eq!(t.prompt_tokens, Some(320));
        assert_eq!(t.completion_tokens, Some(12));
        assert_eq!(t.cached_tokens, None, "never reported stays absent");
        assert_eq!(t.cost_usd, None);
        assert_eq!(acc.messages(), 2);
        assert_eq!(acc.run_total(), None);
    }

    #[test]
    fn a_message_seen_again_after_another_keeps_its_last_usage() {
        let evs = [
            usage(UsageScope::Call, Some("m1"), 100, Some(1), None),
            usage(UsageScope::Call, Some("m2"), 200, Some(2), None),
            usage(UsageScope::Call, Some("m1"), 110, Some(3), Some(0.5)),
            usage(UsageScope::Call, Some("m2"), 220, Some(4), None),
            usage(UsageScope::Call, Some("m2"), 230, None, None),
        ];
        let acc = UsageAccumulator::from_events(&evs);
        let t = acc.totals();
        assert_eq!((t.prompt_tokens, t.completion_tokens, t.cost_usd), (Some(340), Some(3), Some(0.5)));
        assert_eq!(acc.messages(), 2);
    }

    #[test]
    fn the_run_total_is_preferred_counter_by_counter() {
        let evs = [
            usage(UsageScope::Call, Some("m1"), 100, Some(5), Some(0.01)),
            usage(UsageScope::Run, None, 150, None, None),
            usage(UsageScope::Run, None, 160, None, None),
        ];
        let acc = UsageAccumulator::from_events(&evs);
        assert_eq!(acc.calls_total().prompt_tokens, Some(100));
        assert_eq!(acc.run_total().unwrap().prompt_tokens, Some(160), "the last run total stands");
        let t = acc.totals();
        assert_eq!((t.prompt_tokens, t.completion_tokens, t.cost_usd), (Some(160), Some(5), Some(0.01)));
        assert_eq!(serde_json::to_string(&t).unwrap(), r#"{"promptTokens":160,"completionTokens":5,"costUsd":0.01}"#);
    }

    #[test]
    fn empty_is_empty() {
        let t = UsageAccumulator::new().totals();
        assert!(t.is_empty());
        assert_eq!(t.to_json_value(), None);
        assert_eq!(serde_json::to_string(&t).unwrap(), "{}");
    }
}
