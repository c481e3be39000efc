//! Golden replay: every `tests/golden/<agent>/<case>.input.jsonl` decoded whole, byte by byte
//! and in seeded random chunks gives exactly `<case>.expected.jsonl` (one OutputEvent per line).
//!
//! The same inputs replayed through the whole pipeline (run stream + hook derivation, fixed run
//! id `golden` and timestamp) give exactly `<case>.hooks.jsonl`: the hook sequence every
//! binding must reproduce.
//!
//! To (re)write the expected files after a deliberate change: `UPDATE_GOLDEN=1 cargo test -p
//! agentstream-core --test golden`, then review the diff like code.

use std::path::{Path, PathBuf};

use agentstream_core::replay::{ReplayOptions, replay};
use agentstream_core::{Agent, Decoder, OutputEvent};

fn golden_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden")
}

/// Every (agent, case name, input path) under tests/golden.
fn cases() -> Vec<(Agent, String, PathBuf)> {
    let mut out = Vec::new();
    for agent in Agent::ALL {
        let dir = golden_root().join(agent.name());
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        // Every harness keeps its three real captures (the fake harness's scenarios).
        for capture in ["s1-text", "s2-bash", "s3-read-edit"] {
            let input = dir.join(format!("{capture}.input.jsonl"));
            assert!(input.exists(), "{} is missing", input.display());
        }
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(case) = name.strip_suffix(".input.jsonl") {
                out.push((agent, case.to_string(), entry.path()));
            }
        }
    }
    out.sort_by(|a, b| (a.0.name(), &a.1).cmp(&(b.0.name(), &b.1)));
    out
}

/// A tiny deterministic generator (xorshift64*) so chunkings are reproducible without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

fn decode_chunked(agent: Agent, input: &[u8], chunk_sizes: &mut dyn FnMut() -> usize) -> Vec<OutputEvent> {
    let mut d = Decoder::new(agent);
    let mut out = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        let n = chunk_sizes().clamp(1, rest.len());
        d.feed_into(&rest[..n], &mut out);
        rest = &rest[n..];
    }
    out.extend(d.finish());
    out
}

fn render(events: &[OutputEvent]) -> String {
    events.iter().map(|e| e.to_json() + "\n").collect()
}

#[test]
fn golden_cases_replay_identically_at_any_chunking() {
    let cases = cases();
    assert!(!cases.is_empty(), "no golden cases under {}", golden_root().display());
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut failures = Vec::new();
    for (agent, case, input_path) in &cases {
        let input = std::fs::read(input_path).unwrap();
        let whole = decode_chunked(*agent, &input, &mut || usize::MAX);
        let bytewise = decode_chunked(*agent, &input, &mut || 1);
        assert_eq!(render(&whole), render(&bytewise), "{agent}/{case}: byte-by-byte differs from whole");
        for seed in 1..=5u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let random = decode_chunked(*agent, &input, &mut || (rng.next() % 97) as usize + 1);
            assert_eq!(render(&whole), render(&random), "{agent}/{case}: random chunks (seed {seed}) differ");
        }
        let expected_path = input_path.with_file_name(format!("{case}.expected.jsonl"));
        let got = render(&whole);
        if update {
            std::fs::write(&expected_path, &got).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path)
            .unwrap_or_else(|_| panic!("{} is missing: run with UPDATE_GOLDEN=1", expected_path.display()));
        // Byte for byte: records kept as printed (kimi's `rawInput` with its spaces, key order,
        // numbers' digits) must stay so.
        if got != expected {
            failures.push(format!("{agent}/{case}"));
        }
    }
    assert!(failures.is_empty(), "golden output differs for {failures:?}; inspect with `agentstream parse`");
}

/// The options every language's golden hook replay uses.
fn golden_replay_options() -> ReplayOptions {
    ReplayOptions { run_id: "golden".into(), ..ReplayOptions::default() }
}

#[test]
fn golden_hooks_replay_identically() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut failures = Vec::new();
    for (agent, case, input_path) in cases() {
        let input = std::fs::read(&input_path).unwrap();
        let r = replay(agent, &input, &golden_replay_options());
        let got: String = r.hooks.iter().map(|h| serde_json::to_string(h).unwrap() + "\n").collect();
        let path = input_path.with_file_name(format!("{case}.hooks.jsonl"));
        if update {
            std::fs::write(&path, &got).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&path)
            .unwrap_or_else(|_| panic!("{} is missing: run with UPDATE_GOLDEN=1", path.display()));
        if got != expected {
            failures.push(format!("{agent}/{case}"));
        }
        let terminals = r.hooks.iter().filter(|h| h.is_terminal()).count();
        assert_eq!(terminals, 1, "{agent}/{case}: exactly one terminal hook");
        assert!(r.hooks.last().unwrap().is_terminal(), "{agent}/{case}: the terminal hook is last");
        assert!(r.hooks.windows(2).all(|w| w[0].sequence <= w[1].sequence), "{agent}/{case}: hooks in order");
        assert_tool_hooks_in_order(&format!("{agent}/{case}"), &r.hooks);
    }
    assert!(failures.is_empty(), "golden hooks differ for {failures:?}");
}

/// decisions.md §5, per call: at most one `tool.started`, before the call's one end
/// (`tool.completed`, `tool.failed` or `tool.indeterminate`), whatever order the harness printed.
fn assert_tool_hooks_in_order(case: &str, hooks: &[agentstream_core::HookEvent]) {
    let mut seen: std::collections::HashMap<String, (bool, bool)> = Default::default();
    for h in hooks {
        let Some(id) = h.details.get("tool_call_id").and_then(|v| v.as_str()) else { continue };
        let (started, ended) = seen.entry(id.to_string()).or_default();
        match h.event_type.as_str() {
            "tool.started" => {
                assert!(!*started && !*ended, "{case}: {id} started twice or after its end");
                *started = true;
            }
            "tool.completed" | "tool.failed" | "tool.indeterminate" => {
                assert!(!*ended, "{case}: {id} ended twice ({})", h.event_type);
                *ended = true;
            }
            _ => {}
        }
    }
}

#[test]
fn expected_events_are_valid_output_events() {
    for (agent, case, input_path) in cases() {
        let expected_path = input_path.with_file_name(format!("{case}.expected.jsonl"));
        let Ok(text) = std::fs::read_to_string(&expected_path) else { continue };
        for (i, line) in text.lines().enumerate() {
            let ev: OutputEvent = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{agent}/{case} line {}: not an OutputEvent: {e}", i + 1));
            let again: serde_json::Value = serde_json::from_str(&ev.to_json()).unwrap();
            let printed: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(again, printed, "{agent}/{case} line {}: an OutputEvent reads back as printed", i + 1);
        }
    }
}
