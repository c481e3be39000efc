//! Soak: many concurrent runs of the fake harness for minutes, in one process, under one shared
//! byte budget — every event accounted for, memory flat. Run it with `scripts/soak.sh` (or
//! `make soak`):
//!
//! ```text
//! cargo run --release -p agentstream-cli --example soak -- [--runs 64] [--minutes 10] [--seconds S] [--budget-mib 64]
//! ```
//!
//! Each of `--runs` workers starts run after run (a permit of a [`SharedBudget`] each: the
//! budget is divided among them) of the fake harness replaying a real trace with tool calls
//! (claude `s3-read-edit`) followed by a flood of numbered answer text, and reads it — half the
//! workers quickly, half slowly (a pause per batch), so backpressure, merging and the byte bound
//! all engage. Per run it checks: the sequence is gapless (merged numbers accounted for),
//! exactly one terminal item, last, the run completed, every content event of the trace was
//! delivered, and the flood's text reassembles exactly (checked as it arrives, against one
//! shared copy of the expected text, so the soak itself holds no per-run text). It samples the
//! resident set of the process every `--sample-seconds` (default: a twelfth of the duration, at
//! most 10 s) while the runs go on. At the end it prints the totals, `lost` (events missing or
//! wrong: must be 0) and the samples, and exits 1 when anything was lost or memory was not flat:
//! the mean of the samples of the last quarter of the soak more than 32 MiB above the mean of
//! those of the quarter after the warm-up (the warm-up is the first quarter, at most a minute;
//! means, because the allocator's per-thread arenas make single samples wander by tens of MiB).

// Printing is this file's report: clippy.toml's rule against prints is for the commands.
#![allow(clippy::disallowed_macros)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use agentstream_core::runner::{AgentConfig, Delivery, FinalState, RunOptions, Session};
use agentstream_core::stream::{SequenceCheck, SharedBudget, StreamItem};
use agentstream_core::{Agent, SessionUpdate};

#[path = "../src/fake_harness.rs"]
#[allow(dead_code)]
mod fake_harness;

#[derive(Default)]
struct Totals {
    runs: AtomicU64,
    items: AtomicU64,
    numbers: AtomicU64,
    coalesced: AtomicU64,
    text_bytes: AtomicU64,
    lost: AtomicU64,
}

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

fn main() {
    // Its runs' supervisors are this program exec'd again, as the `agentstream` command's are.
    agentstream_core::runner::supervise_if_asked();
    let runs = arg("--runs", 64) as usize;
    // `--seconds` (below) overrides `--minutes` for a quick try.
    let minutes = arg("--minutes", 10);
    let budget_mib = arg("--budget-mib", 64) as usize;
    let flood_deltas = arg("--flood-deltas", 20_000);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let fake = std::env::var_os("AGENTSTREAM_FAKE_HARNESS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo.join("target/release/fake-harness"));
    assert!(fake.exists(), "{} missing: cargo build --release -p agentstream-cli --bins", fake.display());
    let trace = repo.join("tests/golden/claude/s3-read-edit");
    // What each run must deliver: the trace's events that are not answer text, and the answer
    // text — the trace's, then the flood's — exactly.
    let (mut expected_other_events, mut expected_text) = (0u64, String::new());
    for line in std::fs::read_to_string(repo.join("tests/golden/claude/s3-read-edit.expected.jsonl")).unwrap().lines() {
        let ev: agentstream_core::OutputEvent = serde_json::from_str(line).expect("an expected event");
        match &ev.update {
            SessionUpdate::AgentMessageChunk { content } => {
                expected_text.push_str(content.as_text().unwrap_or_default())
            }
            _ => expected_other_events += 1,
        }
    }
    let flood_text: String = (0..flood_deltas).map(fake_harness::flood_text).collect();
    let flood_bytes = flood_text.len() as u64;
    expected_text.push_str(&flood_text);
    let seconds = arg("--seconds", minutes * 60);
    let sample_every = arg("--sample-seconds", (seconds / 12).clamp(1, 10));
    let warm_up = (seconds / 4).min(60);
    let expected_text = Arc::new(expected_text);

    let budget = SharedBudget::new(budget_mib << 20, runs).expect("a budget");
    let totals = Arc::new(Totals::default());
    let stop = Arc::new(AtomicBool::new(false));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    println!(
        "soak: {runs} concurrent runs for {seconds} s, shared budget {budget_mib} MiB ({} KiB per run); each run: claude s3-read-edit + {flood_deltas} text deltas ({} MB)",
        budget.per_run().byte_budget / 1024,
        flood_bytes / 1_000_000
    );

    let sampler = {
        let (stop, totals) = (stop.clone(), totals.clone());
        std::thread::spawn(move || {
            let start = Instant::now();
            let mut samples = Vec::new();
            // Only while the runs go on (not once the workers are winding down).
            while !stop.load(Ordering::SeqCst) && Instant::now() + Duration::from_secs(sample_every) <= deadline {
                std::thread::sleep(Duration::from_secs(sample_every));
                let s = (start.elapsed().as_secs(), rss_mib());
                println!(
                    "  t={:>4}s  rss={:>7.1} MiB  runs={:>6}  items={:>10}  lost={}",
                    s.0,
                    s.1,
                    totals.runs.load(Ordering::Relaxed),
                    totals.items.load(Ordering::Relaxed),
                    totals.lost.load(Ordering::Relaxed)
                );
                samples.push(s);
            }
            samples
        })
    };

    let workers: Vec<_> = (0..runs)
        .map(|w| {
            let (budget, totals, fake, trace, expected_text) =
                (budget.clone(), totals.clone(), fake.clone(), trace.clone(), expected_text.clone());
            std::thread::spawn(move || {
                let slow = w % 2 == 1;
                let mut config = AgentConfig::new(Agent::Claude);
                config.bin = Some(fake);
                config.env = vec![
                    ("AGENTSTREAM_FAKE_TRACE".into(), trace.display().to_string()),
                    ("AGENTSTREAM_FAKE_EXIT".into(), "0".into()),
                    ("AGENTSTREAM_FAKE_FLOOD_TEXT".into(), flood_bytes.to_string()),
                ];
                let session = Session::new(config);
                while Instant::now() < deadline {
                    let Some(permit) = budget.try_acquire() else {
                        std::thread::sleep(Duration::from_millis(10));
                        continue;
                    };
                    let mut options = RunOptions::new("soak");
                    options.backpressure = permit.backpressure();
                    let h = match session.start_run(options) {
                        Ok(h) => h,
                        Err(e) => {
                            eprintln!("worker {w}: cannot start: {e}");
                            totals.lost.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                    };
                    let (mut check, mut terminals, mut last_terminal) = (SequenceCheck::new(), 0, false);
                    // How far the answer text reassembled so far matches, or None once it did not.
                    let (mut text_at, mut other_events, mut items) = (Some(0usize), 0u64, 0u64);
                    while !h.is_ended() {
                        for d in h.next_batch_blocking(256, Some(Duration::from_millis(200))) {
                            let Delivery::Item(env) = d else { continue };
                            items += 1;
                            if !check.accept(&env) {
                                totals.lost.fetch_add(1, Ordering::Relaxed);
                            }
                            last_terminal = env.is_terminal();
                            terminals += usize::from(env.is_terminal());
                            if let StreamItem::Content(ev) = &env.item {
                                match &ev.update {
                                    SessionUpdate::AgentMessageChunk { content } => {
                                        let piece = content.as_text().unwrap_or_default();
                                        text_at = text_at.filter(|&at| expected_text[at..].starts_with(piece));
                                        text_at = text_at.map(|at| at + piece.len());
                                    }
                                    _ => other_events += 1,
                                }
                            }
                        }
                        if slow {
                            std::thread::sleep(Duration::from_millis(2));
                        }
                    }
                    let r = h.wait_blocking();
                    drop(permit);
                    let lost = check.missing()
                        + u64::from(terminals != 1 || !last_terminal)
                        + u64::from(r.state != FinalState::Completed)
                        + u64::from(other_events != expected_other_events)
                        + u64::from(text_at != Some(expected_text.len()));
                    if lost > 0 {
                        eprintln!(
                            "worker {w}: run {} lost {lost}: missing {}, terminals {terminals}, state {:?}, other events {other_events}/{expected_other_events}, text matched up to {text_at:?} of {} bytes",
                            r.run_id,
                            check.missing(),
                            r.state,
                            expected_text.len()
                        );
                    }
                    totals.lost.fetch_add(lost, Ordering::Relaxed);
                    totals.runs.fetch_add(1, Ordering::Relaxed);
                    totals.items.fetch_add(items, Ordering::Relaxed);
                    totals.numbers.fetch_add(check.delivered(), Ordering::Relaxed);
                    totals.coalesced.fetch_add(r.pressure.coalesced, Ordering::Relaxed);
                    totals.text_bytes.fetch_add(text_at.unwrap_or(0) as u64, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a worker");
    }
    stop.store(true, Ordering::SeqCst);
    let samples = sampler.join().expect("the sampler");

    let mean = |from: u64, to: u64| {
        let within: Vec<f64> = samples.iter().filter(|s| s.0 > from && s.0 <= to).map(|s| s.1).collect();
        within.iter().sum::<f64>() / within.len().max(1) as f64
    };
    let early = mean(warm_up, warm_up + seconds / 4);
    let late = mean(seconds - seconds / 4, seconds);
    let max = samples.iter().map(|s| s.1).fold(0.0, f64::max);
    let t = &totals;
    let lost = t.lost.load(Ordering::SeqCst);
    println!(
        "soak done: {} runs, {} envelopes delivering {} sequence numbers ({} merged), {:.1} GB of answer text reassembled, lost {lost}; rss: mean {early:.1} MiB after the warm-up ({warm_up}-{} s), mean {late:.1} MiB in the last quarter ({}-{seconds} s), max {max:.1} MiB",
        t.runs.load(Ordering::SeqCst),
        t.items.load(Ordering::SeqCst),
        t.numbers.load(Ordering::SeqCst),
        t.coalesced.load(Ordering::SeqCst),
        t.text_bytes.load(Ordering::SeqCst) as f64 / 1e9,
        warm_up + seconds / 4,
        seconds - seconds / 4,
    );
    if lost > 0 || late - early > 32.0 {
        eprintln!("soak FAILED: lost {lost} events, memory grew {:.1} MiB after the warm-up", late - early);
        std::process::exit(1);
    }
}
