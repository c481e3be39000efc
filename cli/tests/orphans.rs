//! Nothing of a run's process tree outlives the run or its host: the harness, a child in its
//! process group and a child that left it (`setsid`) are all gone after the run ends by itself,
//! after a cancellation, and after the host — the `agentstream` command — is stopped by SIGINT,
//! SIGTERM, SIGHUP or killed outright with SIGKILL. And a harness that exits while a background
//! child keeps its stdout open ends the run with its own outcome, at once.
//!
//! Processes are counted by a marker in their environment (`/proc/<pid>/environ`), unique per
//! test, which the harness and its children inherit.
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentstream_core::Agent;
use agentstream_core::runner::{AgentConfig, FinalState, RunOptions, Session};

const BIN: &str = env!("CARGO_BIN_EXE_agentstream");
const FAKE: &str = env!("CARGO_BIN_EXE_fake-harness");
const MARK: &str = "AGENTSTREAM_TEST_MARK";

fn golden(agent: &str, case: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden").join(agent).join(case).to_string_lossy().into_owned()
}

fn unique_mark(what: &str) -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("{what}-{}-{nanos}", std::process::id())
}

/// Pids of the live processes whose environment holds `MARK=mark`.
fn marked(mark: &str) -> Vec<i32> {
    let needle = format!("{MARK}={mark}");
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else { continue };
        if environ.split(|b| *b == 0).any(|v| v == needle.as_bytes()) {
            out.push(pid);
        }
    }
    out
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_none_left(mark: &str, why: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = marked(mark);
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "{why}: processes left behind: {left:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn session(mark: &str, hang: bool) -> Session {
    let mut config = AgentConfig::new(Agent::Claude);
    config.bin = Some(PathBuf::from(FAKE));
    config.env = vec![
        ("AGENTSTREAM_FAKE_TRACE".into(), golden("claude", "s1-text")),
        ("AGENTSTREAM_FAKE_CHILDREN".into(), "1".into()),
        (MARK.into(), mark.into()),
    ];
    if hang {
        config.env.push(("AGENTSTREAM_FAKE_HANG".into(), "1".into()));
    }
    Session::new(config)
}

#[test]
fn a_run_ends_when_the_harness_exits_though_a_child_keeps_stdout_open() {
    for timeout in [None, Some(Duration::from_secs(2))] {
        let mark = unique_mark("exit-with-children");
        let mut options = RunOptions::new("x");
        options.timeout = timeout;
        let h = session(&mark, false).start_run(options).unwrap();
        // Before, the run waited for the children (with `setsid`, forever).
        let r = h.wait_timeout(Duration::from_secs(30)).expect("the run ends when the harness exits");
        assert_eq!(r.state, FinalState::Completed, "the harness's outcome (exit 0), timeout {timeout:?}: {r:?}");
        assert_eq!(r.exit_code, Some(0));
        assert_none_left(&mark, "after the run ended by itself");
    }
}

#[test]
fn a_cancelled_run_leaves_no_process_behind() {
    let mark = unique_mark("cancel");
    let h = session(&mark, true).start_run(RunOptions::new("x")).unwrap();
    wait_for("the harness and its two children", Duration::from_secs(20), || marked(&mark).len() >= 3);
    h.cancel("test");
    let r = h.wait_timeout(Duration::from_secs(30)).expect("the run ends");
    assert_eq!(r.state, FinalState::Cancelled);
    assert_none_left(&mark, "after a cancel");
}

#[test]
fn stopping_the_command_by_any_signal_leaves_no_process_behind() {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGKILL] {
        let mark = unique_mark("signal");
        let mut host = Command::new(BIN)
            .args(["run", "--agent", "claude", "--bin", FAKE, "--json", "--", "x"])
            .env("AGENTSTREAM_FAKE_TRACE", golden("claude", "s1-text"))
            .env("AGENTSTREAM_FAKE_HANG", "1")
            .env("AGENTSTREAM_FAKE_CHILDREN", "1")
            .env(MARK, &mark)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(host.stdout.take().unwrap());
        let mut first = String::new();
        out.read_line(&mut first).unwrap();
        // The host, the harness and its two children.
        wait_for("the whole tree", Duration::from_secs(20), || marked(&mark).len() >= 4);
        // SAFETY: signalling our own child by pid.
        unsafe { libc::kill(host.id() as i32, signal) };
        let deadline = Instant::now() + Duration::from_secs(30);
        while host.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "agentstream did not end after signal {signal}");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_none_left(&mark, &format!("after signal {signal} to the host"));
    }
}

#[test]
fn the_commands_runs_are_supervised_by_the_command_started_again_not_by_a_fork() {
    // The harness's parent is the supervisor: `agentstream --agentstream-supervisor-1` (the
    // program's own file exec'd, see core/src/runner/self_exec.rs), not a copy of this process.
    let script = "tr '\\0' ' ' < /proc/$PPID/cmdline; echo; cat /proc/$PPID/comm";
    let out = Command::new(BIN).args(["exec", "--", "sh", "-c", script]).stderr(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let cmdline = lines.next().unwrap_or_default();
    assert!(cmdline.ends_with("/agentstream --agentstream-supervisor-1 "), "{text}");
    assert_eq!(lines.next(), Some("agentstream-sup"), "{text}");
}
