//! What the product writes, every JSON reader reads: numbers a harness printed near 2^64 never
//! wrap or panic (the value is left out and reported), lone surrogate escapes and numbers beyond
//! `f64` are repaired, and a record nested a million levels deep is delivered with its deep part
//! as text, never dropped. Checked through the decoder, the replayed run stream (its envelopes
//! read back by the product's own envelope reader) and serde_json, which refuses both repairs'
//! inputs.

use agentstream_core::raw_json::{MAX_DEPTH, RAW_JSON_MARKER};
use agentstream_core::replay::{ReplayOptions, replay};
use agentstream_core::stream::decode_envelope;
use agentstream_core::{Agent, Decoder, DecoderOptions, RedactionPolicy, SessionUpdate};
use serde_json::Value;

const MAX: u64 = u64::MAX;

fn claude_tool_use(input: &str) -> String {
    format!(
        r#"{{"type":"assistant","message":{{"id":"m1","type":"message","role":"assistant","model":"x","content":[{{"type":"tool_use","id":"t1","name":"Read","input":{input}}}],"usage":{{"input_tokens":{MAX},"cache_read_input_tokens":5,"output_tokens":1}}}},"session_id":"s"}}"#
    ) + "\n"
}

#[test]
fn numbers_near_two_to_the_64_are_left_out_and_reported_never_wrapped() {
    let line = claude_tool_use(&format!(r#"{{"file_path":"/x","offset":{MAX},"limit":5}}"#));
    let mut d = Decoder::new(Agent::Claude);
    let mut events = d.feed(line.as_bytes());
    events.extend(d.finish());
    let call = events.iter().find_map(|e| match &e.update {
        SessionUpdate::ToolCall(c) => Some(c),
        _ => None,
    });
    let call = call.expect("the tool call is decoded (an overflow used to panic the line away in debug builds)");
    assert_eq!(call.title, "Read /x", "no wrapped range in the title");
    let usage = events.iter().find_map(|e| match &e.update {
        SessionUpdate::Usage { usage, .. } => Some(usage),
        _ => None,
    });
    let usage = usage.expect("a usage update");
    assert_eq!(usage.prompt_tokens, None, "a prompt total past 2^64 is absent, not wrapped");
    assert_eq!(usage.completion_tokens, Some(1));
    let notes: Vec<String> = d.take_diagnostics().into_iter().map(|d| d.message).collect();
    assert!(notes.iter().any(|m| m.contains("prompt tokens does not fit 64 bits")), "{notes:?}");
    assert!(notes.iter().any(|m| m.contains("a read's last line does not fit 64 bits")), "{notes:?}");
}

#[test]
fn lone_surrogates_and_infinite_numbers_are_repaired_where_the_harness_printed_them() {
    let line = claude_tool_use(r#"{"file_path":"/x","note":"a\ud800b","\udc00":1,"n":1e999,"m":[-1E400]}"#);
    for (i, env) in replay(Agent::Claude, line.as_bytes(), &ReplayOptions::default()).items.iter().enumerate() {
        let text = env.to_json();
        // serde_json refuses a lone surrogate and a number beyond f64: this is the strict reader.
        let back: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("item {i} unreadable: {e}: {text}"));
        assert!(decode_envelope(&text).is_ok(), "the product reads back what it wrote: {text}");
        if let Some(input) = back["event"]["update"].get("rawInput") {
            assert_eq!(input["note"], "a\u{fffd}b");
            assert_eq!(input["\u{fffd}"], 1);
            assert_eq!(input["n"], Value::Null);
            assert_eq!(input["m"][0], Value::Null);
        }
    }
    let mut d = Decoder::new(Agent::Claude);
    let _ = d.feed(line.as_bytes());
    let notes: Vec<String> = d.take_diagnostics().into_iter().map(|d| d.message).collect();
    assert!(notes.iter().any(|m| m.contains("2 lone surrogate escape(s)") && m.contains("2 number(s)")), "{notes:?}");
}

/// The input's value at `deep`, `MAX_DEPTH - 1` single-item lists down.
fn deep_rest(input: &agentstream_core::RawJson) -> Value {
    let mut v = input.to_value();
    assert_eq!(v["file_path"], "/x");
    v = v["deep"].take();
    for _ in 1..MAX_DEPTH {
        v = v[0].take();
    }
    v
}

fn tool_input(events: &[agentstream_core::OutputEvent]) -> agentstream_core::RawJson {
    events
        .iter()
        .find_map(|e| match &e.update {
            SessionUpdate::ToolCall(c) => c.raw_input.clone(),
            _ => None,
        })
        .expect("the tool call's input")
}

#[test]
fn a_tool_input_a_million_levels_deep_is_delivered_with_its_deep_part_as_text_or_masked() {
    let depth = 1_000_000;
    let input = format!(r#"{{"file_path":"/x","deep":{}{}}}"#, "[".repeat(depth), "]".repeat(depth));
    let line = claude_tool_use(&input);
    // Redaction off: the deep rest as text.
    let options = DecoderOptions::default().with_redaction(RedactionPolicy::disabled());
    let mut d = Decoder::with_options(Agent::Claude, options);
    let rest = deep_rest(&tool_input(&d.feed(line.as_bytes())));
    let text = rest[RAW_JSON_MARKER].as_str().expect("the deep rest as text");
    assert_eq!(text.len(), 2 * (depth - (MAX_DEPTH - 1)));
    // Redaction on (the default): what is too deep to judge is masked whole (fail closed).
    let mut d = Decoder::new(Agent::Claude);
    assert_eq!(deep_rest(&tool_input(&d.feed(line.as_bytes()))), Value::String("[redacted]".into()));
    // The hook view's `arguments` is the input too (it was null past serde_json's limit).
    let r = replay(Agent::Claude, line.as_bytes(), &ReplayOptions::default());
    let started = r.hooks.iter().find(|h| h.event_type == "tool.started").expect("tool.started");
    assert_eq!(started.details["arguments"]["file_path"], "/x");
}
