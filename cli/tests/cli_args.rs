//! The `agentstream` command's arguments and exit codes, through the real binary: bad values are
//! refused with a message (never a panic), a missing working directory is named as such, and
//! every way a run ends has its own documented exit code.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_agentstream");
const FAKE: &str = env!("CARGO_BIN_EXE_fake-harness");

fn golden(agent: &str, case: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden").join(agent).join(case).to_string_lossy().into_owned()
}

fn agentstream(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("AGENTSTREAM_FAKE_TRACE", golden("claude", "s1-text"))
        .output()
        .expect("agentstream")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn bad_timeouts_are_refused_with_a_message_not_a_panic() {
    for bad in ["inf", "1e20", "0", "nan", "-1", "-0", "soon", ""] {
        let out = agentstream(&["run", "--agent", "claude", "--bin", FAKE, "--timeout", bad, "--", "hi"]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--timeout {bad:?}: {err}");
        assert!(err.contains("--timeout"), "--timeout {bad:?} names the flag: {err}");
        assert!(!err.contains("panicked"), "--timeout {bad:?}: {err}");
    }
    let out = agentstream(&["run", "--agent", "claude", "--bin", FAKE, "--timeout", "0.5", "--", "hi"]);
    assert_eq!(out.status.code(), Some(0), "a fractional timeout is fine: {}", text(&out.stderr));
}

#[test]
fn a_missing_working_directory_is_reported_as_such() {
    for cmd in [
        vec!["run", "--agent", "claude", "--bin", FAKE, "--cwd", "/definitely/not/here", "--", "hi"],
        vec!["exec", "--cwd", "/definitely/not/here", "--", "true"],
    ] {
        let out = agentstream(&cmd);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(126), "{cmd:?}: {err}");
        assert!(err.contains("working directory /definitely/not/here does not exist"), "{err}");
        assert!(!err.contains("not found"), "not reported as a missing binary: {err}");
    }
    let out = agentstream(&["exec", "--", "/definitely/not/a-binary"]);
    assert_eq!(out.status.code(), Some(127), "{}", text(&out.stderr));
}

#[test]
fn exec_passes_the_commands_exit_code_through() {
    for (script, code) in
        [("exit 0", 0), ("exit 7", 7), ("exit 255", 255), ("kill -9 $$", 128 + 9), ("kill -15 $$", 143)]
    {
        let out = agentstream(&["exec", "--json", "--", "sh", "-c", script]);
        assert_eq!(out.status.code(), Some(code), "{script}: {}", text(&out.stderr));
    }
}

#[test]
fn a_timeout_exits_124_and_says_so_once() {
    let out = Command::new(BIN)
        .args(["run", "--agent", "claude", "--bin", FAKE, "--timeout", "1", "--", "hi"])
        .env("AGENTSTREAM_FAKE_TRACE", golden("claude", "s1-text"))
        .env("AGENTSTREAM_FAKE_HANG", "1")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let all = text(&out.stdout);
    assert_eq!(out.status.code(), Some(124), "{all}{}", text(&out.stderr));
    assert!(all.contains("the --timeout elapsed"), "{all}");
    assert!(!all.contains("cancelled: cancelled"), "{all}");
}

/// Start a hanging run with `--json` and wait for its first envelope (the run is going).
fn start_hanging_run() -> (Child, BufReader<std::process::ChildStdout>) {
    let mut child = Command::new(BIN)
        .args(["run", "--agent", "claude", "--bin", FAKE, "--json", "--", "hi"])
        .env("AGENTSTREAM_FAKE_TRACE", golden("claude", "s1-text"))
        .env("AGENTSTREAM_FAKE_HANG", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert!(line.contains("\"runId\""), "{line}");
    (child, out)
}

fn wait_with_deadline(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("agentstream did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_signal_to_agentstream_stops_the_run_with_128_plus_the_signal() {
    for (signal, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143), (libc::SIGHUP, 129)] {
        let (mut child, mut out) = start_hanging_run();
        // SAFETY: signalling our own child by pid.
        unsafe { libc::kill(child.id() as i32, signal) };
        let status = wait_with_deadline(&mut child, Duration::from_secs(20));
        assert_eq!(status.code(), Some(code), "signal {signal}");
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut rest);
        let terminal = rest.lines().last().unwrap_or_default();
        assert!(terminal.contains("run_interrupted"), "signal {signal}: the run ends interrupted: {terminal}");
    }
}
