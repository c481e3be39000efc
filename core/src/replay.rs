//! Replaying recorded harness output through the whole sans-IO pipeline — decoder, run stream,
//! terminal derivation and hook derivation — exactly as a live run would deliver it, minus the
//! process. Deterministic: a fixed timestamp and run id, so every binding can compare its
//! replay of a golden input with the same `<case>.hooks.jsonl` file.

use std::sync::Arc;

use crate::answer::AnswerTracker;
use crate::decode::{Agent, DecodeStats, Decoder, DecoderOptions};
use crate::event::OutputEvent;
use crate::hooks::{HookDeriver, HookEvent, HookInput};
use crate::lifecycle::{AgentState, LifecycleEvent, SandboxState};
use crate::redact::RedactionPolicy;
use crate::stream::{Backpressure, Envelope, ManualClock, RunEnd, RunOutcome, RunStream, StreamItem, derive_outcome};

/// Options of a replay.
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    /// The run id stamped on every item (default `replay`).
    pub run_id: String,
    /// The agent id on hook events (default: the agent's name).
    pub agent_id: Option<String>,
    /// The time stamped on lifecycle and hook events, in milliseconds since the Unix epoch
    /// (default 0, `1970-01-01T00:00:00.000Z`, so output is byte-for-byte reproducible).
    pub timestamp_ms: u64,
    /// Whether secret shapes in tool-call inputs are masked (default: on, as in a live run).
    pub redaction: RedactionPolicy,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            run_id: "replay".to_string(),
            agent_id: None,
            timestamp_ms: 0,
            redaction: RedactionPolicy::default(),
        }
    }
}

impl ReplayOptions {
    /// Set the timestamp from its ISO 8601 UTC text (`2026-01-01T00:00:00.000Z`; what every
    /// binding's `timestamp` option takes). Anything else is an `invalid_argument` error saying
    /// what is expected.
    pub fn with_timestamp(mut self, iso8601: &str) -> Result<Self, crate::Error> {
        self.timestamp_ms =
            crate::time::millis_from_iso8601(iso8601).and_then(|ms| u64::try_from(ms).ok()).ok_or_else(|| {
                crate::Error::new(
                    crate::ErrorKind::InvalidArgument,
                    format!(
                        "timestamp {iso8601:?} is not an ISO 8601 UTC time after 1970: write it like \
                         2026-01-01T00:00:00.000Z"
                    ),
                )
            })?;
        Ok(self)
    }
}

/// Everything a replayed run delivers. Serializes as
/// `{"items": [<envelope>…], "hooks": [<hook event>…], "outcome": {"state": …}, "stats": {…}}`
/// (envelopes in their wire form, hooks in the canonical C/Go form), for bindings that hand a
/// replay across a boundary as one JSON text.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Replay {
    /// The sequenced stream: `run_start`, each stdout line followed by its content events, the
    /// terminal lifecycle event last.
    pub items: Vec<Envelope>,
    /// The hook events derived from it, in order.
    pub hooks: Vec<HookEvent>,
    /// How the run ended (a clean end of input, judged like a process that exited 0: failed
    /// when the harness's end-of-run record is missing).
    pub outcome: RunOutcome,
    /// Decode statistics.
    pub stats: DecodeStats,
}

/// Post one decoded stdout line and its events: the raw line first (as printed; an oversize
/// line has no text to deliver), then each content event. Shared by the live runner.
pub fn post_line(
    post: &mut dyn FnMut(StreamItem),
    line: Option<&str>,
    events: &mut Vec<OutputEvent>,
    observe: &mut dyn FnMut(&OutputEvent),
) {
    if let Some(line) = line {
        post(StreamItem::Stdout(format!("{line}\n")));
    }
    for ev in events.drain(..) {
        observe(&ev);
        post(StreamItem::Content(ev));
    }
}

/// Replay `input` (a harness's recorded stdout) as `agent`.
pub fn replay(agent: Agent, input: &[u8], options: &ReplayOptions) -> Replay {
    let ts = crate::time::iso8601_from_millis(i64::try_from(options.timestamp_ms).unwrap_or(i64::MAX));
    // Everything is read at the end, so nothing may merge: marks that are never reached.
    let policy = Backpressure::default().with_high_water(usize::MAX).with_byte_budget(usize::MAX);
    // The decoder masks (per the options) where it emits; the stream need not mask again.
    let mut stream = RunStream::new(options.run_id.clone(), policy, Arc::new(ManualClock::new()))
        .expect("a valid policy")
        .with_redaction(RedactionPolicy::disabled());
    stream.attach_reader().expect("a fresh stream has no reader");
    let start =
        LifecycleEvent::local(stream.kind().start_reason(), SandboxState::Running, AgentState::Running, ts.clone());
    stream.post(StreamItem::Lifecycle(start));
    let mut decoder = Decoder::with_options(agent, DecoderOptions::default().with_redaction(options.redaction));
    let mut answer = AnswerTracker::default();
    {
        let mut post = |item| {
            stream.post(item);
        };
        decoder.feed_lines(input, &mut |line, events| post_line(&mut post, line, events, &mut |e| answer.observe(e)));
        decoder.finish_lines(&mut |line, events| post_line(&mut post, line, events, &mut |e| answer.observe(e)));
    }
    let end = RunEnd {
        truncated_mid_line: false,
        open_tool_calls: stream.open_tool_call_count(),
        fatal_error: answer.fatal_error().map(str::to_string),
        missing_final_result: decoder.missing_final_result().map(str::to_string),
        unrecognized_output: decoder.unrecognized_output(),
        no_output: decoder.stats().lines == decoder.stats().blank_lines,
        ..RunEnd::default()
    };
    let outcome = derive_outcome(&end);
    stream.finish(outcome, |ctx| ctx.default_event(ts.clone()));
    let facts = stream.terminal_facts();
    let agent_id = options.agent_id.clone().unwrap_or_else(|| agent.name().to_string());
    let mut deriver = HookDeriver::new(options.run_id.clone(), agent_id);
    let (mut items, mut hooks) = (Vec::new(), Vec::new());
    while let Some(env) = stream.pop() {
        let input = match &env.item {
            StreamItem::Content(ev) => HookInput::Content(ev),
            StreamItem::Lifecycle(l) => HookInput::Lifecycle(l, facts.as_ref().filter(|_| l.reason.is_terminal())),
            _ => HookInput::Raw,
        };
        deriver.observe(env.sequence, input, options.timestamp_ms, &mut hooks);
        items.push(env);
    }
    let outcome = stream.record().map(|r| r.outcome.clone()).unwrap_or(RunOutcome::Completed);
    Replay { items, hooks, outcome, stats: *decoder.stats() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_is_a_whole_run() {
        let input = b"{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n{\"type\":\"turn.started\"}\n{\"type\":\"turn.completed\"}\n";
        let r = replay(Agent::Codex, input, &ReplayOptions::default());
        assert!(matches!(&r.items[0].item, StreamItem::Lifecycle(l) if l.reason == crate::LifecycleReason::RunStart));
        assert!(r.items.last().unwrap().is_terminal());
        assert!(r.items.windows(2).all(|w| w[1].sequence == w[0].sequence + 1));
        assert_eq!(r.hooks.first().unwrap().event_type, "run.started");
        assert!(r.hooks.last().unwrap().is_terminal());
        assert_eq!(r.outcome, RunOutcome::Completed);
    }

    #[test]
    fn a_replay_without_the_end_of_run_record_failed() {
        let input = b"{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n{\"type\":\"turn.started\"}\n";
        let r = replay(Agent::Codex, input, &ReplayOptions::default());
        match &r.outcome {
            RunOutcome::Failed { error, detail } => {
                assert_eq!(error, "no_final_result");
                assert!(detail.contains("no `turn.completed` line"), "{detail}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(r.hooks.last().unwrap().event_type, "run.failed");
        // Kimi prints no such record: a clean end is a completed run.
        let kimi = replay(Agent::Kimi, b"{\"role\":\"assistant\",\"content\":\"Hi.\"}\n", &ReplayOptions::default());
        assert_eq!(kimi.outcome, RunOutcome::Completed);
    }

    #[test]
    fn the_timestamp_option_is_iso_8601_utc() {
        let options = ReplayOptions::default().with_timestamp("2026-01-01T00:00:00.000Z").unwrap();
        assert_eq!(options.timestamp_ms, 1_767_225_600_000);
        let r = replay(Agent::Codex, b"{\"type\":\"turn.completed\"}\n", &options);
        assert!(r.hooks.iter().all(|h| h.timestamp() == "2026-01-01T00:00:00.000Z"));
        assert!(matches!(&r.items[0].item, StreamItem::Lifecycle(l) if l.timestamp == "2026-01-01T00:00:00.000Z"));
        let err = ReplayOptions::default().with_timestamp("noon").unwrap_err();
        assert_eq!(err.kind, crate::ErrorKind::InvalidArgument);
        assert!(err.message.contains("2026-01-01T00:00:00.000Z"), "{}", err.message);
    }

    #[test]
    fn a_replay_serializes_as_items_hooks_outcome_and_stats() {
        let input = b"{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n{\"type\":\"turn.completed\"}\n";
        let r = replay(Agent::Codex, input, &ReplayOptions::default());
        let v = serde_json::to_value(&r).unwrap();
        let items = v["items"].as_array().unwrap();
        assert_eq!(items.len(), r.items.len());
        assert_eq!(items[0], serde_json::from_str::<serde_json::Value>(&r.items[0].to_json()).unwrap());
        assert_eq!(v["hooks"][0]["type"], "run.started");
        assert_eq!(v["outcome"]["state"], "completed");
        assert_eq!(v["stats"]["lines"], 2);
    }
}
