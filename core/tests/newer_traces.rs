//! Both generations of the real captures decode (`../shared/traces/` and the newest CLI
//! versions' `../shared/traces/newer/`, read in place). The golden replays pin what the decoder
//! gives for the newer captures; this checks what that output must SAY, as decisions.md §1 and
//! the wire notes state it, so a regeneration of the goldens cannot quietly accept a wrong answer.

mod common;

use std::path::Path;

use agentstream_core::replay::{ReplayOptions, replay};
use agentstream_core::{
    Agent, DecodeStats, Decoder, LifecycleReason, OutputEvent, RunOutcome, SessionUpdate, StreamItem, UsageScope,
};

const SCENARIOS: [&str; 3] = ["s1-text", "s2-bash", "s3-read-edit"];

fn decode(agent: Agent, path: &Path) -> (Vec<OutputEvent>, DecodeStats) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut decoder = Decoder::new(agent);
    let mut events = decoder.feed(&bytes);
    events.extend(decoder.finish());
    (events, *decoder.stats())
}

/// What a scenario's events say, whatever the CLI version: each event's kind (a tool call's
/// kind and status too) and the answer's text.
fn gist(events: &[OutputEvent]) -> (Vec<String>, String) {
    let mut kinds = Vec::new();
    let mut answer = String::new();
    for ev in events {
        let v = serde_json::to_value(&ev.update).unwrap();
        let mut kind = v["sessionUpdate"].as_str().unwrap().to_string();
        for key in ["kind", "status", "scope"] {
            if let Some(s) = v[key].as_str() {
                kind = format!("{kind}/{s}");
            }
        }
        kinds.push(kind);
        if let (SessionUpdate::AgentMessageChunk { content }, None) = (&ev.update, &ev.parent_tool_call_id) {
            answer.push_str(content.as_text().unwrap_or_default());
        }
    }
    (kinds, answer)
}

fn assert_clean(what: &str, stats: &DecodeStats) {
    assert!(stats.lines > 0 && stats.events > 0, "{what}: {stats:?}");
    assert_eq!(
        (stats.invalid_json, stats.non_object, stats.unknown_type, stats.unexpected_shape),
        (0, 0, 0, 0),
        "{what}: every line understood: {stats:?}"
    );
}

#[test]
fn both_generations_of_each_scenario_say_the_same() {
    let Some(traces) = common::shared("traces") else { return };
    for agent in [Agent::Claude, Agent::Qwen] {
        for scenario in SCENARIOS {
            let file = format!("{scenario}.stdout.jsonl");
            let (older, older_stats) = decode(agent, &traces.join(agent.name()).join(&file));
            let (newer, newer_stats) = decode(agent, &traces.join("newer").join(agent.name()).join(&file));
            assert_clean(&format!("{agent}/{scenario}"), &older_stats);
            assert_clean(&format!("{agent}/{scenario} (newer)"), &newer_stats);
            let (older_kinds, older_answer) = gist(&older);
            let (newer_kinds, newer_answer) = gist(&newer);
            assert_eq!(older_kinds, newer_kinds, "{agent}/{scenario}: the same events in the same order");
            assert!(!newer_answer.is_empty(), "{agent}/{scenario}: an answer");
            assert_eq!(older_answer, newer_answer, "{agent}/{scenario}: the same answer");
        }
    }
}

#[test]
fn a_background_subagents_second_result_is_the_same_run_with_a_running_total() {
    let Some(newer) = common::shared("traces/newer") else { return };
    let path = newer.join("claude/s8-subagent.stdout.jsonl");
    let bytes = std::fs::read(&path).unwrap();
    let (events, stats) = decode(Agent::Claude, &path);
    assert_clean("claude/s8-subagent", &stats);
    let results = String::from_utf8_lossy(&bytes)
        .lines()
        .filter(|l| serde_json::from_str::<serde_json::Value>(l).is_ok_and(|v| v["type"] == "result"))
        .count();
    assert_eq!(results, 2, "the capture prints two result lines");
    // Each result is the run's total so far: two `usage{scope: run}`, growing.
    let totals: Vec<_> = events
        .iter()
        .filter_map(|ev| match &ev.update {
            SessionUpdate::Usage { scope: UsageScope::Run, usage } => Some(usage.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(totals.len(), 2, "one run total per result line");
    let tokens = |u: &agentstream_core::TokenUsage| u.prompt_tokens.unwrap_or(0) + u.completion_tokens.unwrap_or(0);
    assert!(tokens(&totals[1]) > tokens(&totals[0]), "the second total includes the first: {totals:?}");
    // The subagent's lines carry the id of the call that launched it, a call of the main agent.
    let launched: Vec<&str> = events
        .iter()
        .filter_map(|ev| match &ev.update {
            SessionUpdate::ToolCall(call) if ev.parent_tool_call_id.is_none() => Some(call.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    let parents: Vec<&str> = events.iter().filter_map(|ev| ev.parent_tool_call_id.as_deref()).collect();
    assert!(!parents.is_empty(), "subagent events are attributed");
    assert!(parents.iter().all(|p| launched.contains(p)), "{parents:?} launched by {launched:?}");
    // One session, one run: a single terminal, last, completed; the second init opened nothing.
    let sessions: std::collections::BTreeSet<_> = events.iter().filter_map(|ev| ev.session_id.as_deref()).collect();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let run = replay(Agent::Claude, &bytes, &ReplayOptions::default());
    assert_eq!(run.outcome, RunOutcome::Completed);
    let terminals: Vec<_> = run.items.iter().filter(|e| e.is_terminal()).collect();
    assert_eq!(terminals.len(), 1);
    assert!(run.items.last().unwrap().is_terminal());
    assert!(matches!(&terminals[0].item, StreamItem::Lifecycle(l) if l.reason == LifecycleReason::RunComplete));
    assert_eq!(run.hooks.iter().filter(|h| h.is_terminal()).count(), 1);
}

#[test]
fn qwens_goal_state_line_is_understood_and_adds_nothing() {
    let Some(newer) = common::shared("traces/newer/qwen") else { return };
    for scenario in SCENARIOS {
        let path = newer.join(format!("{scenario}.stdout.jsonl"));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("goal_state"), "{scenario}: 0.24.4 prints its goal_state line");
        let (_, stats) = decode(Agent::Qwen, &path);
        assert_clean(&format!("qwen/{scenario} (newer)"), &stats);
    }
}

#[test]
fn the_golden_copies_of_the_newer_captures_are_the_captures() {
    let Some(newer) = common::shared("traces/newer") else { return };
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden");
    let mut compared = 0;
    for (agent, scenarios) in
        [("claude", &["s1-text", "s2-bash", "s3-read-edit", "s8-subagent"][..]), ("qwen", &SCENARIOS[..])]
    {
        for scenario in scenarios {
            let shared = std::fs::read(newer.join(agent).join(format!("{scenario}.stdout.jsonl"))).unwrap();
            let copy = std::fs::read(golden.join(agent).join(format!("{scenario}-newer.input.jsonl"))).unwrap();
            assert!(shared == copy, "tests/golden/{agent}/{scenario}-newer.input.jsonl differs from the capture");
            compared += 1;
        }
    }
    assert_eq!(compared, 7);
}
