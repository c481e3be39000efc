//! Memory is bounded by bytes, not by time (decisions.md §3): with the reader paused or slow,
//! the runner stops reading the harness's pipes once the byte budget is buffered (the harness
//! blocks, as in a shell pipe) instead of growing. Measured as the growth of the peak resident
//! set (`VmHWM`, reset through `/proc/self/clear_refs`) of this process (the library case) and of
//! the `agentstream` command, which must stay under the budget (8 MiB) plus 64 MiB under the
//! three floods of issue 24:
//!
//! | flood | reader | scaled to |
//! |---|---|---|
//! | 1 GiB of stderr | paused | the same 1 GiB offered; the reader pauses 1 s, then the run is cancelled |
//! | 3×10^6 stdout lines | paused | the same 3×10^6 lines offered; 1 s pause, then cancelled |
//! | 500 MB of answer text | a handler taking 1 ms per event | the same 500 MB offered; 2 s of reading, then cancelled |
//!
//! Without the bound each of these grew past 1 GB within those seconds (the harness writes
//! hundreds of MB/s); with it the harness is blocked and the process stays flat. The floods are
//! offered in full and cut short by the cancel, which keeps the test to seconds.
//!
//! Also here: text deltas coalesce in a real run (each line's raw `stdout` item used to sit
//! between two deltas, so none ever merged), losing nothing.

// Printing is this file's report: clippy.toml's rule against prints is for the commands.
#![allow(clippy::disallowed_macros)]
#![cfg(target_os = "linux")]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentstream_core::runner::{AgentConfig, Delivery, FinalState, Next, RunHandle, RunOptions, Session};
use agentstream_core::stream::{Backpressure, SequenceCheck, StreamItem};
use agentstream_core::{Agent, SessionUpdate};

const BIN: &str = env!("CARGO_BIN_EXE_agentstream");
const FAKE: &str = env!("CARGO_BIN_EXE_fake-harness");
const BUDGET: usize = 8 * 1024 * 1024;
const SLACK: usize = 64 * 1024 * 1024;

#[path = "../src/fake_harness.rs"]
#[allow(dead_code)]
mod fake_harness;

fn golden(agent: &str, case: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden").join(agent).join(case).to_string_lossy().into_owned()
}

fn status_kib(pid: &str, field: &str) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Reset this process's peak RSS to its current RSS; returns the current RSS in bytes.
fn reset_peak() -> usize {
    std::fs::write("/proc/self/clear_refs", "5").expect("clear_refs (Linux 4.0+)");
    status_kib("self", "VmRSS:") * 1024
}

fn peak() -> usize {
    status_kib("self", "VmHWM:") * 1024
}

fn flood(env: &[(&str, String)]) -> Session {
    let mut config = AgentConfig::new(Agent::Claude);
    config.bin = Some(PathBuf::from(FAKE));
    config.env = env.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    config.env.push(("AGENTSTREAM_FAKE_TRACE".into(), golden("claude", "s1-text")));
    Session::new(config)
}

fn finish(h: &RunHandle) {
    h.reader_left();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !h.is_ended() && Instant::now() < deadline {
        let _ = h.next_batch_blocking(4096, Some(Duration::from_millis(100)));
    }
    let r = h.wait_timeout(Duration::from_secs(60)).expect("the run ends");
    assert_eq!(r.state, FinalState::Cancelled, "{r:?}");
}

fn assert_bounded(what: &str, before: usize) {
    let grew = peak().saturating_sub(before);
    eprintln!("{what}: peak RSS grew by {} MiB", grew / (1024 * 1024));
    assert!(grew < BUDGET + SLACK, "{what}: peak RSS grew by {} MiB (bound: budget 8 MiB + 64 MiB)", grew >> 20);
}

#[test]
fn memory_stays_bounded_by_the_byte_budget_under_every_flood() {
    // Paused readers: nothing is read for 1 s while the harness offers its flood.
    for (what, env) in [
        ("1 GiB of stderr, reader paused", ("AGENTSTREAM_FAKE_FLOOD_STDERR", (1u64 << 30).to_string())),
        ("3x10^6 stdout lines, reader paused", ("AGENTSTREAM_FAKE_FLOOD", "3000000".to_string())),
    ] {
        let before = reset_peak();
        let h = flood(&[env]).start_run(RunOptions::new("x")).unwrap();
        std::thread::sleep(Duration::from_secs(1));
        assert!(h.pressure().bytes <= BUDGET + 4 * 1024 * 1024, "{what}: {:?}", h.pressure());
        assert_bounded(what, before);
        finish(&h);
    }

    // A slow handler: 1 ms per event for 2 s.
    let before = reset_peak();
    let h = flood(&[("AGENTSTREAM_FAKE_FLOOD_TEXT", "500000000".to_string())]).start_run(RunOptions::new("x")).unwrap();
    let until = Instant::now() + Duration::from_secs(2);
    let mut check = SequenceCheck::new();
    while Instant::now() < until {
        if let Next::Item(Delivery::Item(env)) = h.next_blocking(Some(Duration::from_millis(100))) {
            assert!(check.accept(&env));
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    assert_eq!(check.missing(), 0);
    assert_bounded("500 MB of answer text, 1 ms per event", before);
    finish(&h);
}

#[test]
fn the_command_stays_bounded_with_a_slow_consumer_of_its_output() {
    // `agentstream run --json` writing into a pipe nobody reads for 1 s, then read slowly for 1 s.
    for (flag, value) in [
        ("AGENTSTREAM_FAKE_FLOOD_STDERR", (1u64 << 30).to_string()),
        ("AGENTSTREAM_FAKE_FLOOD", "3000000".to_string()),
        ("AGENTSTREAM_FAKE_FLOOD_TEXT", "500000000".to_string()),
    ] {
        let mut cli = Command::new(BIN)
            .args(["run", "--agent", "claude", "--bin", FAKE, "--json", "--", "x"])
            .env("AGENTSTREAM_FAKE_TRACE", golden("claude", "s1-text"))
            .env(flag, &value)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let pid = cli.id().to_string();
        std::thread::sleep(Duration::from_millis(300));
        let baseline = status_kib(&pid, "VmRSS:") * 1024;
        std::thread::sleep(Duration::from_secs(1));
        let mut out = cli.stdout.take().unwrap();
        let mut buf = vec![0u8; 4096];
        let until = Instant::now() + Duration::from_secs(1);
        while Instant::now() < until {
            if out.read(&mut buf).unwrap_or(0) == 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let grew = (status_kib(&pid, "VmHWM:") * 1024).saturating_sub(baseline);
        eprintln!("agentstream run --json, {flag}: peak RSS grew by {} MiB", grew >> 20);
        // SAFETY: signalling our own child.
        unsafe { libc::kill(cli.id() as i32, libc::SIGTERM) };
        drop(out);
        let _ = cli.wait();
        assert!(grew < BUDGET + SLACK, "{flag}: the command's peak RSS grew by {} MiB", grew >> 20);
    }
}

#[test]
fn text_deltas_coalesce_in_a_real_run_and_reassemble_exactly() {
    let deltas = 20_000u64;
    let bytes = deltas * fake_harness::flood_text(0).len() as u64;
    let mut config = AgentConfig::new(Agent::Claude);
    config.bin = Some(PathBuf::from(FAKE));
    config.env = vec![("AGENTSTREAM_FAKE_FLOOD_TEXT".into(), bytes.to_string())];
    let mut options = RunOptions::new("x");
    options.backpressure = Backpressure::default().with_byte_budget(256 * 1024);
    let h = Session::new(config).start_run(options).unwrap();
    std::thread::sleep(Duration::from_millis(500)); // the reader falls behind
    let mut text = String::new();
    let mut check = SequenceCheck::new();
    let mut raw = String::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !h.is_ended() {
        assert!(Instant::now() < deadline, "the run ends");
        for d in h.next_batch_blocking(64, Some(Duration::from_millis(100))) {
            let Delivery::Item(env) = d else { continue };
            assert!(check.accept(&env), "in order, no duplicate");
            match &env.item {
                StreamItem::Content(ev) => {
                    if let SessionUpdate::AgentMessageChunk { content } = &ev.update {
                        text.push_str(content.as_text().unwrap_or_default());
                    }
                }
                StreamItem::Stdout(s) => raw.push_str(s),
                _ => {}
            }
        }
    }
    let r = h.wait_blocking();
    assert_eq!(check.missing(), 0, "merged numbers are accounted for");
    assert!(r.pressure.coalesced > 0, "deltas merged in a real run: {:?}", r.pressure);
    let want: String = (0..deltas).map(fake_harness::flood_text).collect();
    assert_eq!(text.len(), want.len());
    assert!(text == want, "the answer reassembles exactly");
    assert_eq!(raw.lines().count() as u64, deltas, "every raw line delivered");
}
