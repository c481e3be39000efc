//! Decode throughput per agent and on a mixed corpus, side by side with the validate-only
//! floor over the same bytes: lines split with `memchr`, then
//! `serde_json::from_slice::<serde::de::IgnoredAny>` per non-empty line (the yardstick of
//! `../shared/bench/floor`, mode b; a trailing `\r` is cut as there).
//!
//! The corpora: `BENCH_CORPUS_DIR=DIR` reads `DIR/<agent>.jsonl` as built by
//! `../shared/bench/make_corpus.py DIR --size-mib 64` (the corpora the performance targets are
//! stated on); without it, one is generated in memory from the golden traces
//! (`tests/golden/<agent>/s*.input.jsonl`, repeated to about 4 MiB per agent). Nothing large is
//! committed. Besides criterion's own report, a summary table (MB/s, events/s, ratio to the
//! floor: the median of side-by-side pairs, alternating which goes first) is printed at the
//! end: that table is what goes into issue notes. `cargo bench -p agentstream-core --bench
//! decode` (`BENCH_AGENTS=codex,kimi` for a subset, `BENCH_SUMMARY_ONLY=1` for the table alone,
//! `BENCH_RUNS=N` pairs per agent, default 21).

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use agentstream_core::{Agent, Decoder};
use criterion::{Criterion, Throughput};
use serde::de::IgnoredAny;

const TARGET_BYTES: usize = 4 << 20;

fn corpus(agent: Agent) -> Vec<u8> {
    if let Some(dir) = std::env::var_os("BENCH_CORPUS_DIR") {
        let path = Path::new(&dir).join(format!("{}.jsonl", agent.name()));
        return std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden").join(agent.name());
    let mut one = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).collect();
    names.sort();
    for p in names {
        // Real captures only: hand-written edge cases are deliberately odd, not representative.
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".input.jsonl") && name.starts_with('s') {
            one.extend(std::fs::read(&p).unwrap());
        }
    }
    assert!(!one.is_empty(), "no traces for {agent}");
    let mut out = Vec::with_capacity(TARGET_BYTES + one.len());
    while out.len() < TARGET_BYTES {
        out.extend_from_slice(&one);
    }
    out
}

fn decode(agent: Agent, bytes: &[u8]) -> usize {
    let mut d = Decoder::new(agent);
    let mut events = Vec::new();
    let mut n = 0;
    // 64 KiB chunks, as a pipe would deliver them; each chunk's events are handed on (dropped
    // here) and the buffer reused, as the runner does with `feed_lines`.
    for chunk in bytes.chunks(64 * 1024) {
        d.feed_into(chunk, &mut events);
        n += events.len();
        events.clear();
    }
    n + d.finish().len()
}

/// The validate-only floor: `memchr` line splitting, then each non-empty line validated into
/// `IgnoredAny` (nothing built).
fn floor(bytes: &[u8]) -> usize {
    let mut n = 0;
    let mut start = 0;
    let mut validate = |mut line: &[u8]| {
        if let [rest @ .., b'\r'] = line {
            line = rest;
        }
        if !line.is_empty() && serde_json::from_slice::<IgnoredAny>(line).is_ok() {
            n += 1;
        }
    };
    for nl in memchr::memchr_iter(b'\n', bytes) {
        validate(&bytes[start..nl]);
        start = nl + 1;
    }
    validate(&bytes[start..]);
    n
}

/// `runs` timings of `decode` and `floor` over the same bytes, taken in pairs (one right after
/// the other): on a shared machine both halves of a pair see the same background load, so the
/// ratio within each pair is what is compared, and the median pair reported.
struct Pairs {
    /// (decode time, floor time) of each pair.
    times: Vec<(Duration, Duration)>,
    events: usize,
}

impl Pairs {
    fn measure(runs: usize, decode: &mut dyn FnMut() -> usize, floor: &mut dyn FnMut() -> usize) -> Pairs {
        let mut events = 0;
        let time = |f: &mut dyn FnMut() -> usize| {
            let t = Instant::now();
            let out = black_box(f());
            (t.elapsed(), out)
        };
        // Which half goes first alternates, so neither always runs on a warmer cache.
        let times = (0..runs)
            .map(|i| {
                if i % 2 == 0 {
                    let (td, n) = time(decode);
                    events = n;
                    (td, time(floor).0)
                } else {
                    let tf = time(floor).0;
                    let (td, n) = time(decode);
                    events = n;
                    (td, tf)
                }
            })
            .collect();
        Pairs { times, events }
    }

    /// The shortest decode and floor times.
    fn best(&self) -> (Duration, Duration) {
        let d = self.times.iter().map(|t| t.0).min().unwrap_or_default();
        let f = self.times.iter().map(|t| t.1).min().unwrap_or_default();
        (d, f)
    }

    /// One line of the summary table for `bytes` of input.
    fn print_row(&self, name: &str, bytes: usize) {
        let (td, tf) = self.best();
        let mb = bytes as f64 / 1e6;
        println!(
            "{:<10} {:>10.0} {:>12.0} {:>14.0} {:>8.2} {:>6.2}-{:.2}",
            name,
            mb / td.as_secs_f64(),
            mb / tf.as_secs_f64(),
            self.events as f64 / td.as_secs_f64(),
            self.ratio(0.5),
            self.ratio(0.25),
            self.ratio(0.75)
        );
    }

    /// Quantile `q` of the pairs' throughput ratio (floor time / decode time).
    fn ratio(&self, q: f64) -> f64 {
        quantile(self.times.iter().map(|(d, f)| f.as_secs_f64() / d.as_secs_f64()).collect(), q)
    }
}

fn quantile(mut values: Vec<f64>, q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(((values.len() - 1) as f64 * q).round() as usize).copied().unwrap_or(f64::NAN)
}

fn main() {
    // `BENCH_AGENTS=codex,gemini` limits the run (and the summary) to those agents.
    let only = std::env::var("BENCH_AGENTS").unwrap_or_default();
    let corpora: Vec<(Agent, Vec<u8>)> = Agent::ALL
        .iter()
        .filter(|a| only.is_empty() || only.split(',').any(|n| n.trim() == a.name()))
        .map(|a| (*a, corpus(*a)))
        .collect();
    let mut c = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(2)).configure_from_args();
    // `BENCH_SUMMARY_ONLY=1` skips criterion's runs: only the side-by-side table below.
    let criterion_runs = std::env::var_os("BENCH_SUMMARY_ONLY").is_none();
    for (agent, bytes) in corpora.iter().filter(|_| criterion_runs) {
        let mut g = c.benchmark_group(format!("decode/{agent}"));
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function("agentstream", |b| b.iter(|| decode(*agent, black_box(bytes))));
        g.bench_function("serde_json_validate_floor", |b| b.iter(|| floor(black_box(bytes))));
        g.finish();
    }
    c.final_summary();

    // MB/s and events/s from the best runs; the ratio is the median of side-by-side pairs
    // (p25–p75 shows the spread the machine's load left).
    println!(
        "\n{:<10} {:>10} {:>12} {:>14} {:>8} {:>12}",
        "agent", "MB/s", "floor MB/s", "events/s", "ratio", "p25-p75"
    );
    let runs: usize = std::env::var("BENCH_RUNS").ok().and_then(|n| n.parse().ok()).unwrap_or(21).max(1);
    let mut all = Vec::new();
    for (agent, bytes) in &corpora {
        let pairs = Pairs::measure(runs, &mut || decode(*agent, bytes), &mut || floor(bytes));
        pairs.print_row(agent.name(), bytes.len());
        all.push((bytes.len(), pairs));
    }
    // Mixed: every agent's corpus once, pair by pair.
    let mixed = Pairs {
        times: (0..runs)
            .map(|i| {
                all.iter().fold((Duration::ZERO, Duration::ZERO), |(d, f), (_, p)| (d + p.times[i].0, f + p.times[i].1))
            })
            .collect(),
        events: all.iter().map(|(_, p)| p.events).sum(),
    };
    mixed.print_row("mixed", all.iter().map(|(n, _)| *n).sum());
}
