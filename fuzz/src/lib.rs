//! The checks behind agentstream's fuzz targets, shared by the libFuzzer targets
//! (`fuzz_targets/`, run with `cargo fuzz`) and the stable smoke test (`tests/smoke.rs`, which
//! runs them over the seed corpus and deterministic mutations of it).
//!
//! Every check panics (a finding) when an invariant breaks:
//!
//! * [`check_framing`]: line framing gives the same frames whatever the chunking, and no line
//!   is held past the limit.
//! * [`check_decoder`]: a decoder gives the same events (and statistics) for the whole input
//!   and for any chunking of it; every event is strict JSON; nothing panics (a decoder panic is
//!   contained to its line by the core, so it would show as a difference, not a crash).
//! * [`check_replay`]: the whole pipeline of a run: every envelope is read back by the
//!   product's own envelope reader, hook events are strict JSON, one terminal item, last.
//! * [`check_redaction`]: a secret of `tests/secrets/corpus.jsonl` in a tool call, among
//!   arbitrary text, is never delivered by any event or hook of the run.
//! * [`check_pre_scan`]: the secret pre-scan's needle search gives the verdict of judging every
//!   byte.
//! * [`check_repair_scan`]: a record's repair gives the exact pass's result although most
//!   records are judged clean at a first look.

use std::sync::LazyLock;

use agentstream_core::framing::{Frame, LineFramer};
use agentstream_core::replay::{ReplayOptions, replay};
use agentstream_core::stream::decode_envelope;
use agentstream_core::{Agent, Channel, DecodeStats, Decoder, OutputEvent};

/// A small deterministic generator (xorshift64*), seeded from the input itself so a finding
/// always reproduces from its input alone.
struct Rng(u64);

impl Rng {
    fn from(data: &[u8]) -> Rng {
        // FNV-1a over the input.
        let seed = data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3));
        Rng(seed | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// `data` cut into pieces of 1 byte up to a few KiB, mixed.
fn chunks(data: &[u8]) -> Vec<&[u8]> {
    let mut rng = Rng::from(data);
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let len = match rng.below(4) {
            0 => 1,
            1 => 1 + rng.below(8),
            2 => 1 + rng.below(256),
            _ => 1 + rng.below(8192),
        };
        let end = (at + len).min(data.len());
        out.push(&data[at..end]);
        at = end;
    }
    out
}

/// One frame, owned and independent of how the framer reported it.
#[derive(Debug, PartialEq, Eq)]
enum Framed {
    Line(Vec<u8>),
    Oversize { len: usize, terminated: bool },
}

fn frame_all(pieces: &[&[u8]], max: usize) -> Vec<Framed> {
    let mut framer = LineFramer::new(max);
    let mut out = Vec::new();
    let mut sink = |f: Frame<'_>| {
        out.push(match f {
            Frame::Line(bytes) => Framed::Line(bytes.to_vec()),
            Frame::Text(text) => Framed::Line(text.as_bytes().to_vec()),
            Frame::Oversize { len, terminated } => Framed::Oversize { len, terminated },
        })
    };
    for p in pieces {
        framer.push(p, &mut sink);
        // The limit, plus one byte: a '\r' before the newline does not count toward it.
        assert!(framer.buffered_bytes() <= max + 1, "a partial line held past the limit");
    }
    framer.finish(&mut sink);
    out
}

/// Line framing: the same frames for the whole input and any chunking, at a limit that makes
/// over-long lines common (or the default 16 MiB).
pub fn check_framing(data: &[u8]) {
    let mut rng = Rng::from(data);
    let max = if rng.below(4) == 0 { agentstream_core::framing::DEFAULT_MAX_LINE_BYTES } else { 1 + rng.below(64) };
    let whole = frame_all(&[data], max);
    let pieces = chunks(data);
    assert_eq!(whole, frame_all(&pieces, max), "frames depend on the chunking");
    for f in &whole {
        if let Framed::Line(bytes) = f {
            assert!(bytes.len() <= max, "a line over the limit was delivered");
            assert!(!bytes.contains(&b'\n'));
        }
    }
}

fn decode_all(agent: Agent, pieces: &[&[u8]]) -> (Vec<String>, DecodeStats) {
    let mut decoder = Decoder::new(agent);
    let mut events: Vec<OutputEvent> = Vec::new();
    for p in pieces {
        decoder.feed_into(p, &mut events);
    }
    events.extend(decoder.finish());
    (events.iter().map(OutputEvent::to_json).collect(), *decoder.stats())
}

/// A decoder: identical events and statistics whole vs chunked; every event strict JSON.
pub fn check_decoder(agent: Agent, data: &[u8]) {
    let whole = decode_all(agent, &[data]);
    let chunked = decode_all(agent, &chunks(data));
    assert_eq!(whole, chunked, "{agent}: events depend on the chunking");
    for json in &whole.0 {
        if let Err(e) = serde_json::from_str::<serde_json::Value>(json) {
            panic!("{agent}: an event is not strict JSON ({e}): {json}");
        }
    }
}

/// The whole pipeline of a run (decoder, run stream, terminal, hooks) on the input, for the
/// harness its first byte picks: every envelope is read back by the product's own envelope
/// reader, every hook event is strict JSON, exactly one terminal item, last.
pub fn check_replay(data: &[u8]) {
    let Some((&pick, input)) = data.split_first() else { return };
    let agent = Agent::ALL[usize::from(pick) % Agent::ALL.len()];
    let r = replay(agent, input, &ReplayOptions::default());
    for env in &r.items {
        let json = env.to_json();
        if let Err(e) = decode_envelope(&json) {
            panic!("{agent}: the product cannot read its own envelope ({e}): {json}");
        }
    }
    assert_eq!(r.items.iter().filter(|e| e.is_terminal()).count(), 1, "{agent}: one terminal");
    assert!(r.items.last().is_some_and(|e| e.is_terminal()), "{agent}: the terminal is last");
    for hook in &r.hooks {
        let json = serde_json::to_string(hook).expect("hooks serialize");
        if let Err(e) = serde_json::from_str::<serde_json::Value>(&json) {
            panic!("{agent}: a hook event is not strict JSON ({e}): {json}");
        }
    }
}

/// One entry of the secret corpus.
pub struct Entry {
    pub text: String,
    pub secrets: Vec<String>,
}

/// `tests/secrets/corpus.jsonl`.
pub static CORPUS: LazyLock<Vec<Entry>> = LazyLock::new(|| {
    include_str!("../../tests/secrets/corpus.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("corpus line");
            Entry {
                text: v["text"].as_str().expect("text").to_string(),
                secrets: v["secrets"]
                    .as_array()
                    .expect("secrets")
                    .iter()
                    .map(|s| s.as_str().unwrap().to_string())
                    .collect(),
            }
        })
        .collect()
});

/// Each harness's recorded shell call (golden `s2-bash`) and the command in it that the
/// fuzzed text replaces (as `tests/secrets/make_traces.py` does).
const SHELL_CALLS: [(Agent, &str, &str); 7] = [
    (Agent::Claude, include_str!("../../tests/golden/claude/s2-bash.input.jsonl"), "ls -1"),
    (Agent::Codex, include_str!("../../tests/golden/codex/s2-bash.input.jsonl"), "echo hi"),
    (Agent::Gemini, include_str!("../../tests/golden/gemini/s2-bash.input.jsonl"), "ls -1"),
    (Agent::Qwen, include_str!("../../tests/golden/qwen/s2-bash.input.jsonl"), "ls -1"),
    (Agent::Kimi, include_str!("../../tests/golden/kimi/s2-bash.input.jsonl"), "echo hi"),
    (Agent::Opencode, include_str!("../../tests/golden/opencode/s2-bash.input.jsonl"), "echo hi"),
    (Agent::Droid, include_str!("../../tests/golden/droid/s2-bash.input.jsonl"), "echo hi"),
];

/// `text` as it appears inside a JSON string.
fn escaped(text: &str) -> String {
    let quoted = serde_json::to_string(text).expect("a string serializes");
    quoted[1..quoted.len() - 1].to_string()
}

/// The trace of `agent`'s shell call with `command` as the command it runs.
pub fn shell_call(agent: Agent, command: &str) -> String {
    let (_, trace, original) = SHELL_CALLS.iter().find(|(a, _, _)| *a == agent).expect("every agent");
    let mut out = trace.to_string();
    for (old, new) in [(escaped(original), escaped(command)), (escaped(&escaped(original)), escaped(&escaped(command)))]
    {
        out = out.replace(&old, &new);
    }
    out
}

/// The secret pre-scan: looking only near its needles gives the verdict of judging every byte,
/// on any bytes (the pre-scan decides which tool records are masked at all).
pub fn check_pre_scan(data: &[u8]) {
    let fast = agentstream_core::redact::may_hold_secrets(data);
    let exhaustive = agentstream_core::redact::may_hold_secrets_judging_every_byte(data);
    assert_eq!(fast, exhaustive, "the pre-scan's needle search disagrees with judging every byte on {data:?}");
}

/// Redaction: the input chooses a harness and a corpus entry; the rest is arbitrary text put
/// on the lines before and after the entry in the command of a shell call. No secret of the
/// entry may be delivered by any event (redaction is on by default) or hook.
pub fn check_redaction(data: &[u8]) {
    if data.len() < 2 {
        return;
    }
    let agent = Agent::ALL[usize::from(data[0]) % Agent::ALL.len()];
    let entry = &CORPUS[usize::from(data[1]) % CORPUS.len()];
    let noise = String::from_utf8_lossy(&data[2..]);
    let mid = noise.char_indices().map(|(i, _)| i).nth(noise.chars().count() / 2).unwrap_or(noise.len());
    let (before, after) = noise.split_at(mid);
    // Noise that itself spells a secret is not a finding (the secret was not in the input).
    if CORPUS.iter().flat_map(|e| &e.secrets).any(|s| noise.contains(s.as_str())) {
        return;
    }
    let command = format!("{before}\n{}\n{after}", entry.text);
    let trace = shell_call(agent, &command);
    let leaked = |text: &str| {
        entry.secrets.iter().find(|s| text.contains(escaped(s).as_str()) || text.contains(s.as_str())).cloned()
    };
    for event in agentstream_core::parse(agent, trace.as_bytes()) {
        let json = event.to_json();
        if let Some(s) = leaked(&json) {
            panic!("{agent}: the secret {s:?} survived in an event: {json}");
        }
    }
    let r = replay(agent, trace.as_bytes(), &ReplayOptions::default());
    for env in r.items.iter().filter(|e| !matches!(e.channel(), Channel::Stdout | Channel::Stderr)) {
        let json = env.to_json();
        if let Some(s) = leaked(&json) {
            panic!("{agent}: the secret {s:?} survived in the run stream: {json}");
        }
    }
    for hook in &r.hooks {
        let json = serde_json::to_string(hook).expect("hooks serialize");
        if let Some(s) = leaked(&json) {
            panic!("{agent}: the secret {s:?} survived in a hook event: {json}");
        }
    }
}

/// The record repair's first look: a record it judges clean needs no repair by the exact pass,
/// so both give the same result — on every line of the input that is JSON (and on each of its
/// top-level members' values), and on JSON values built from the input's bytes, token by token
/// (deep nesting, long digit runs, exponents, surrogate escapes, filler that moves them across
/// the 32-byte blocks), four bytes to a value so that most hold one repair or none: a value
/// holding several is sent to the exact pass by any of them and would hide a missed one.
pub fn check_repair_scan(data: &[u8]) {
    use agentstream_core::RawJson;
    use agentstream_core::raw_json::DeepContainers;
    // One way of delivering deep containers is enough: the first look does not depend on it
    // (a record it does not clear takes the exact pass, whichever way).
    let same = |text: &str| {
        let Some(raw) = RawJson::from_text(text) else { return };
        let fast = raw.normalized(DeepContainers::AsText).map(|(r, n)| (r.get().to_string(), n));
        let exact = raw.normalized_by_exact_pass(DeepContainers::AsText).map(|(r, n)| (r.get().to_string(), n));
        assert_eq!(fast, exact, "the first look disagrees with the exact pass on {text:?}");
    };
    let text = String::from_utf8_lossy(data);
    for line in text.lines() {
        same(line);
        if let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(line) {
            for value in map.values() {
                same(&value.to_string());
            }
        }
    }
    for tokens in data.chunks(4) {
        same(&json_from_tokens(tokens));
    }
}

/// A JSON value built from `data`, one token per byte (what the low bits pick), brackets kept
/// balanced; the other bits size the token.
fn json_from_tokens(data: &[u8]) -> String {
    let mut out = String::from("[");
    let mut open: Vec<char> = vec![']'];
    let mut first = true;
    for &b in data {
        let size = usize::from(b >> 3);
        let value = match b & 7 {
            0 => {
                // 1 to 76 levels at once (past the repair's limit of 64 from one token).
                out.push_str(if first { "" } else { "," });
                for _ in 0..1 + (size / 2) * 5 {
                    if size % 2 == 0 {
                        out.push('[');
                    } else {
                        out.push_str("{\"k\":[");
                        open.push('}');
                    }
                    open.push(']');
                }
                first = true;
                continue;
            }
            1 if open.len() > 1 => {
                let close = open.pop().unwrap_or(']');
                out.push(close);
                if close == ']' && open.last() == Some(&'}') {
                    out.push(open.pop().unwrap_or('}'));
                }
                first = false;
                continue;
            }
            2 => "9".repeat(size * 11 + 1),
            3 => format!("1.5e{}", 300 + size),
            4 => format!("\"\\u{:04x}\"", 0xd7f0 + size * 9),
            5 => format!("\"{}\"", "abc d ".repeat(size)),
            6 => format!("-{size}.25E-{size}"),
            _ => "\"\\\\ud800\"".to_string(),
        };
        out.push_str(if first { "" } else { "," });
        out.push_str(&value);
        first = false;
    }
    while let Some(close) = open.pop() {
        out.push(close);
    }
    out
}
