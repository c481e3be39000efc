//! Decode throughput per agent and on a mixed corpus, side by side with a serde_json
//! validate-only floor over the same bytes (each line parsed into `IgnoredAny`).
//!
//! The corpus is generated in memory from the golden traces (`tests/golden/<agent>/*.input.jsonl`,
//! repeated to about 4 MiB per agent); nothing large is committed. Besides criterion's own
//! report, a summary table (MB/s, events/s, ratio to the floor) is printed at the end: that
//! table is what goes into issue notes. `cargo bench -p agentstream-core --bench decode`
//! (`BENCH_AGENTS=codex,kimi` for a subset, `BENCH_SUMMARY_ONLY=1` for the table alone).

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use agentstream_core::{Agent, Decoder};
use criterion::{Criterion, Throughput};
use serde::de::IgnoredAny;

const TARGET_BYTES: usize = 4 << 20;

fn corpus(agent: Agent) -> Vec<u8> {
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

fn floor(bytes: &[u8]) -> usize {
    let mut n = 0;
    for line in bytes.split(|b| *b == b'\n') {
        if !line.is_empty() && serde_json::from_slice::<IgnoredAny>(line).is_ok() {
            n += 1;
        }
    }
    n
}

/// Best (shortest) time of `runs` runs of each of `a` and `b`, run alternately: on a shared
/// machine both sides then see the same background load, so their ratio is what it measures.
fn best_of_each(runs: usize, a: &mut dyn FnMut() -> usize, b: &mut dyn FnMut() -> usize) -> [(Duration, usize); 2] {
    let mut best = [(Duration::MAX, 0); 2];
    let time = |slot: &mut (Duration, usize), f: &mut dyn FnMut() -> usize| {
        let t = Instant::now();
        let out = black_box(f());
        let took = t.elapsed();
        if took < slot.0 {
            *slot = (took, out);
        }
    };
    for _ in 0..runs {
        time(&mut best[0], a);
        time(&mut best[1], b);
    }
    best
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

    println!("\n{:<10} {:>10} {:>12} {:>14} {:>8}", "agent", "MB/s", "floor MB/s", "events/s", "ratio");
    let (mut total_bytes, mut total_decode, mut total_floor, mut total_events) =
        (0usize, Duration::ZERO, Duration::ZERO, 0usize);
    for (agent, bytes) in &corpora {
        let [(td, events), (tf, _)] = best_of_each(9, &mut || decode(*agent, bytes), &mut || floor(bytes));
        let mb = bytes.len() as f64 / 1e6;
        println!(
            "{:<10} {:>10.0} {:>12.0} {:>14.0} {:>8.2}",
            agent.name(),
            mb / td.as_secs_f64(),
            mb / tf.as_secs_f64(),
            events as f64 / td.as_secs_f64(),
            tf.as_secs_f64() / td.as_secs_f64()
        );
        total_bytes += bytes.len();
        total_decode += td;
        total_floor += tf;
        total_events += events;
    }
    let mb = total_bytes as f64 / 1e6;
    println!(
        "{:<10} {:>10.0} {:>12.0} {:>14.0} {:>8.2}",
        "mixed",
        mb / total_decode.as_secs_f64(),
        mb / total_floor.as_secs_f64(),
        total_events as f64 / total_decode.as_secs_f64(),
        total_floor.as_secs_f64() / total_decode.as_secs_f64()
    );
}
