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
    for bad in ["inf", "1e20", "0", "nan", "-1", "-0", "soon", "", "1e-10", "0.0009"] {
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

/// `agentstream ARGS` with stdout going to `stdout` (a file such as /dev/full) and stdin from
/// `stdin_file` (or nothing).
fn agentstream_to(args: &[&str], stdout: Stdio, stdin_file: Option<&str>) -> Output {
    let stdin = match stdin_file {
        Some(p) => Stdio::from(std::fs::File::open(p).unwrap()),
        None => Stdio::null(),
    };
    Command::new(BIN)
        .args(args)
        .env("AGENTSTREAM_FAKE_TRACE", golden("claude", "s2-bash"))
        .stdin(stdin)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .expect("agentstream")
}

fn dev_full() -> Stdio {
    Stdio::from(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap())
}

/// Stdout is a pipe whose reader has gone: every write fails with EPIPE.
fn closed_pipe() -> Stdio {
    let mut fds = [0; 2];
    // SAFETY: fds is valid for two ints; the read end is closed at once, the write end owned.
    unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        libc::close(fds[0]);
        Stdio::from(<std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fds[1]))
    }
}

#[test]
fn output_that_cannot_be_written_is_an_error_not_a_success_or_a_panic() {
    let input = format!("{}.input.jsonl", golden("claude", "s2-bash"));
    let run = ["run", "--agent", "claude", "--bin", FAKE, "--", "hi"];
    let cases: [(&str, Vec<&str>); 5] = [
        ("parse", vec!["parse", "--agent", "claude", input.as_str()]),
        ("run", run.to_vec()),
        ("exec", vec!["exec", "--", "seq", "1", "1000"]),
        ("demo", vec!["demo", "--agent", "claude", "--delay-ms", "0"]),
        ("token", vec!["token"]),
    ];
    for (name, args) in &cases {
        let full = agentstream_to(args, dev_full(), None);
        let err = text(&full.stderr);
        assert_eq!(full.status.code(), Some(1), "{name} > /dev/full: {err}");
        assert!(err.contains("cannot write to standard output") && err.contains("No space left"), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
        let closed = agentstream_to(args, closed_pipe(), None);
        let err = text(&closed.stderr);
        assert_eq!(closed.status.code(), Some(141), "{name} into a closed pipe: {err}");
        assert!(!err.contains("panicked") && !err.contains("cannot write"), "{name}: {err}");
    }
    let pid_dir = std::env::temp_dir();
    let left: Vec<_> = std::fs::read_dir(pid_dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("agentstream-demo-"))
        .filter(|e| {
            let pid =
                e.file_name().to_string_lossy().trim_start_matches("agentstream-demo-").parse::<i32>().unwrap_or(0);
            // SAFETY: kill with signal 0 only checks the process exists.
            pid > 0 && unsafe { libc::kill(pid, 0) } != 0
        })
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "demo folders of ended demos left behind: {left:?}");
}

#[test]
fn a_standard_error_that_cannot_be_written_changes_no_exit_code() {
    // parse's summary and run's diagnostics go to stderr: a full disk there is no panic (101).
    let input = format!("{}.input.jsonl", golden("claude", "s2-bash"));
    for (args, code) in [
        (vec!["parse", "--agent", "claude", input.as_str()], 0),
        (vec!["parse", "--agent", "kimi", "/nonexistent/file"], 1),
        (vec!["exec", "--", "sh", "-c", "exit 3"], 3),
    ] {
        let out = Command::new(BIN).args(&args).stdout(Stdio::null()).stderr(dev_full()).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?} 2>/dev/full");
    }
}

#[test]
fn token_refuses_a_tenant_name_serve_would_refuse() {
    let out = agentstream(&["token", "--tenant", "my tenant"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("may hold only letters"), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    let ok = agentstream(&["token", "--tenant", "team-a"]);
    assert_eq!(ok.status.code(), Some(0));
    assert!(text(&ok.stdout).contains("name = \"team-a\"\n"), "{}", text(&ok.stdout));
}

#[test]
fn view_masks_the_raw_lines_it_embeds_and_fails_on_foreign_input() {
    let dir = std::env::temp_dir().join(format!("agentstream-cli-view-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key = "sk-ant-api03-0123456789abcdefghijABCDEFGHIJ0123456789";
    let trace = dir.join("secret.jsonl");
    std::fs::write(
        &trace,
        format!(
            "{}\n{}\n",
            r#"{"type":"system","subtype":"init","session_id":"s1","model":"m"}"#,
            serde_json::json!({"type": "assistant", "session_id": "s1", "message": {"id": "m1", "role": "assistant",
                "model": "m", "content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                "input": {"command": format!("curl -H 'x-api-key: {key}' https://x")}}]}})
        ),
    )
    .unwrap();
    let page = dir.join("page.html");
    let trace_arg = trace.to_string_lossy().into_owned();
    let page_arg = page.to_string_lossy().into_owned();
    let out = agentstream(&["view", "--agent", "claude", "-o", &page_arg, &trace_arg]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("0123456789abcdefghij"), "a secret in the page");
    assert!(html.contains("[redacted]"));
    let raw = agentstream(&["view", "--agent", "claude", "--no-redact", "-o", &page_arg, &trace_arg]);
    assert_eq!(raw.status.code(), Some(0));
    assert!(std::fs::read_to_string(&page).unwrap().contains(key), "--no-redact keeps it");
    // Another harness's output decodes to nothing: said, and exit 1 (as parse), the page
    // written before left as it was.
    let before = std::fs::read(&page).unwrap();
    let foreign = agentstream(&["view", "--agent", "codex", "-o", &page_arg, &trace_arg]);
    assert_eq!(foreign.status.code(), Some(1), "{}", text(&foreign.stderr));
    assert!(text(&foreign.stderr).contains("nothing was decoded"), "{}", text(&foreign.stderr));
    assert_eq!(std::fs::read(&page).unwrap(), before, "a wrong --agent overwrote the page");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn exec_names_what_went_wrong_in_its_own_terms() {
    let out = agentstream(&["exec", "--", "/nonexistent/tool"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(127), "{err}");
    assert!(err.contains("/nonexistent/tool not found: check the command's name") && !err.contains("harness"), "{err}");
    let out = agentstream(&["exec", "--", ""]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("the program to start is empty"), "{}", text(&out.stderr));
    // A script whose interpreter is missing is not "not found".
    let dir = std::env::temp_dir().join(format!("agentstream-cli-interp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("tool.sh");
    std::fs::write(&script, "#!/nonexistent/interp\necho hi\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = agentstream(&["exec", "--", &script.to_string_lossy()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(126), "{err}");
    assert!(err.contains("the interpreter its `#!` line names was not found (/nonexistent/interp)"), "{err}");
    // Windows line endings on the `#!` line are named as such.
    let crlf = dir.join("crlf.sh");
    std::fs::write(&crlf, "#!/bin/sh\r\necho hi\r\n").unwrap();
    std::fs::set_permissions(&crlf, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = agentstream(&["exec", "--", &crlf.to_string_lossy()]);
    let err = text(&out.stderr);
    assert!(err.contains("CRLF line endings") && !err.contains("check that the harness"), "{err}");
    // A prompt longer than one argument may be is named, with the limit.
    let half = "a".repeat(100_000);
    let out = agentstream(&["run", "--agent", "claude", "--bin", "/bin/echo", "--", &half, &half]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(126), "{err}");
    assert!(err.contains("one of its arguments is 200002 bytes, and the system takes at most 131072"), "{err}");
    // A line over the limit is named, not dropped without a word.
    let out = agentstream(&[
        "exec",
        "--json",
        "--",
        "sh",
        "-c",
        "echo before; head -c 17000000 /dev/zero | tr '\\0' a; echo; echo after",
    ]);
    let err = text(&out.stderr);
    assert!(err.contains("stdout line 2: 17000000 bytes, over the line limit"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn max_line_bytes_bounds_run_and_exec_too_and_zero_is_refused() {
    let zero: [&[&str]; 3] = [
        &["parse", "--max-line-bytes", "0", "--agent", "claude", "-"],
        &["run", "--max-line-bytes", "0", "--agent", "claude", "--", "hi"],
        &["exec", "--max-line-bytes", "0", "--", "true"],
    ];
    for args in zero {
        let out = agentstream(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains("must be at least 1"), "{args:?}: {}", text(&out.stderr));
    }
    let out = agentstream(&["exec", "--max-line-bytes", "10", "--", "sh", "-c", "echo short; echo 0123456789abcdef"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("stdout line 2: 16 bytes, over the line limit of 10 bytes"), "{err}");
    let out = agentstream(&["run", "--agent", "claude", "--bin", FAKE, "--max-line-bytes", "64", "--", "hi"]);
    let err = text(&out.stderr);
    assert!(err.contains("stdout line 1: skipped a line of") && err.contains("raise max_line_bytes"), "{err}");
}

#[test]
fn parse_and_view_read_a_file_whose_name_is_not_utf8() {
    use std::os::unix::ffi::OsStrExt;
    let dir = std::env::temp_dir().join(format!("agentstream-cli-bytes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Linux file names are bytes: 0xff is no UTF-8 at all.
    let trace = dir.join(std::ffi::OsStr::from_bytes(b"tr\xffce.jsonl"));
    std::fs::copy(format!("{}.input.jsonl", golden("claude", "s1-text")), &trace).unwrap();
    let parsed = Command::new(BIN).args(["parse", "--agent", "claude"]).arg(&trace).output().unwrap();
    assert_eq!(parsed.status.code(), Some(0), "{}", text(&parsed.stderr));
    assert_eq!(text(&parsed.stdout).lines().count(), 3, "{}", text(&parsed.stdout));
    let page = dir.join("page.html");
    let viewed = Command::new(BIN).args(["view", "--agent", "claude", "-o"]).arg(&page).arg(&trace).output().unwrap();
    assert_eq!(viewed.status.code(), Some(0), "{}", text(&viewed.stderr));
    assert!(std::fs::read_to_string(&page).unwrap().contains("<title>tr\u{fffd}ce.jsonl"), "the title shows the name");
    let missing = Command::new(BIN)
        .args(["parse", "--agent", "claude"])
        .arg(dir.join(std::ffi::OsStr::from_bytes(b"gone\xff")))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        text(&missing.stderr).contains("cannot read") && text(&missing.stderr).contains("No such file"),
        "{}",
        text(&missing.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn exec_hooks_name_the_command_not_a_harness() {
    let out = agentstream(&["exec", "--hooks", "--", "/bin/sh", "-c", "echo hi"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let hooks: Vec<serde_json::Value> =
        text(&out.stdout).lines().map(|l| serde_json::from_str(l).expect("a hook event per line")).collect();
    assert!(hooks.len() >= 2, "{hooks:?}");
    for hook in &hooks {
        assert_eq!(hook["agent_id"], "sh", "{hook}");
    }
}
