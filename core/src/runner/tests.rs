//! The runner with a real child process: a shell script standing in for a harness prints a
//! golden trace (the fake harness binary lives in the CLI crate).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{AgentConfig, Delivery, Next, RunHandle, RunOptions, Session};
use crate::channel::Channel;
use crate::decode::{Agent, Decoder};
use crate::hooks::HookEvent;
use crate::scratch::Scratch;
use crate::stream::{ChannelSet, Envelope, StreamItem};

/// A "harness" that ignores its arguments and prints `trace`.
fn harness(dir: &Path, trace: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("harness.sh");
    std::fs::write(&script, format!("#!/bin/sh\nexec cat '{}'\n", trace.display())).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

fn golden(agent: &str, case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden").join(agent).join(format!("{case}.input.jsonl"))
}

fn drain(h: &RunHandle) -> (Vec<Envelope>, Vec<HookEvent>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let (mut items, mut hooks) = (Vec::new(), Vec::new());
    loop {
        assert!(Instant::now() < deadline, "run did not end");
        match h.next_blocking(Some(Duration::from_millis(200))) {
            Next::Item(Delivery::Item(e)) => items.push(e),
            Next::Item(Delivery::Hook(x)) => hooks.push(x),
            Next::Timeout => {}
            Next::End => break,
        }
    }
    (items, hooks)
}

/// Read everything in batches of up to 256, as the bindings do.
fn drain_batches(h: &RunHandle) -> (Vec<Envelope>, Vec<HookEvent>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let (mut items, mut hooks) = (Vec::new(), Vec::new());
    while !h.is_ended() {
        assert!(Instant::now() < deadline, "run did not end");
        for d in h.next_batch_blocking(256, Some(Duration::from_millis(200))) {
            match d {
                Delivery::Item(e) => items.push(e),
                Delivery::Hook(x) => hooks.push(x),
            }
        }
    }
    (items, hooks)
}

fn run(agent: Agent, trace: &Path, channels: ChannelSet, hooks: bool) -> (Vec<Envelope>, Vec<HookEvent>) {
    let scratch = Scratch::new();
    let dir = scratch.path();
    let mut config = AgentConfig::new(agent);
    config.bin = Some(harness(dir, trace));
    let mut options = RunOptions::new("p");
    options.channels = channels;
    options.hooks = hooks;
    let h = Session::new(config).start_run(options).unwrap();
    drain(&h)
}

fn strip_timestamps(items: &[Envelope]) -> Vec<(u64, u64, StreamItem)> {
    items
        .iter()
        .map(|e| {
            let mut item = e.item.clone();
            if let StreamItem::Lifecycle(l) = &mut item {
                l.timestamp.clear();
            }
            (e.sequence, e.coalesced, item)
        })
        .collect()
}

#[test]
fn a_content_reader_gets_the_same_content_with_the_same_numbers_and_the_terminal() {
    for (agent, case) in [(Agent::Claude, "s2-bash"), (Agent::Codex, "s3-read-edit"), (Agent::Gemini, "s1-text")] {
        let trace = golden(agent.name(), case);
        let (all, _) = run(agent, &trace, ChannelSet::ALL, false);
        let (content, _) = run(agent, &trace, ChannelSet::of([Channel::Content]), false);
        let want: Vec<_> = all.iter().filter(|e| e.channel() == Channel::Content || e.is_terminal()).cloned().collect();
        assert_eq!(strip_timestamps(&content), strip_timestamps(&want), "{agent:?} {case}");
        assert!(content.last().unwrap().is_terminal(), "the terminal is always delivered");
        let mut d = Decoder::new(agent);
        let mut events = d.feed(&std::fs::read(&trace).unwrap());
        events.extend(d.finish());
        assert_eq!(content.len(), events.len() + 1, "every event, none merged");
    }
}

#[test]
fn with_hooks_content_and_lifecycle_are_read_whatever_the_channels() {
    let trace = golden("claude", "s2-bash");
    let (all, hooks_all) = run(Agent::Claude, &trace, ChannelSet::ALL, true);
    let (some, hooks_some) = run(Agent::Claude, &trace, ChannelSet::of([Channel::Stderr]), true);
    let strip =
        |hs: &[HookEvent]| hs.iter().map(|h| (h.sequence, h.to_flat_snake()["type"].clone())).collect::<Vec<_>>();
    assert_eq!(strip(&hooks_some), strip(&hooks_all));
    assert!(!hooks_all.is_empty());
    let want: Vec<_> = all.iter().filter(|e| e.channel() != Channel::Stdout).cloned().collect();
    assert_eq!(strip_timestamps(&some), strip_timestamps(&want));
}

#[test]
fn set_channels_changes_what_is_buffered() {
    let scratch = Scratch::new();
    let dir = scratch.path();
    let mut config = AgentConfig::new(Agent::Claude);
    // Prints one line, waits for a file, prints another.
    let script = dir.join("harness.sh");
    let flag = dir.join("go");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho '{{\"type\":\"system\"}}'\nwhile [ ! -e '{}' ]; do sleep 0.01; done\necho '{{\"type\":\"system\"}}'\n",
            flag.display()
        ),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    config.bin = Some(script);
    let mut options = RunOptions::new("p");
    options.channels = ChannelSet::of([Channel::Content]);
    let h = Session::new(config).start_run(options).unwrap();
    assert_eq!(h.channels(), ChannelSet::of([Channel::Content]));
    // Wait until the first line was numbered (sandbox_ready is 0, run_start 1, the line 2).
    let deadline = Instant::now() + Duration::from_secs(10);
    while h.shared.stream.lock().unwrap().next_sequence() < 3 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(5));
    }
    h.set_channels(ChannelSet::of([Channel::Stdout]));
    std::fs::write(&flag, "").unwrap();
    let (items, _) = drain(&h);
    let got: Vec<_> = items.iter().map(|e| (e.sequence, e.channel())).collect();
    assert_eq!(got, [(3, Channel::Stdout), (4, Channel::Lifecycle)], "only the line printed after the change");
}

#[test]
fn hooks_read_in_batches_match_the_replay() {
    let trace = golden("claude", "s3-read-edit");
    let scratch = Scratch::new();
    let dir = scratch.path();
    let mut config = AgentConfig::new(Agent::Claude);
    config.bin = Some(harness(dir, &trace));
    let mut options = RunOptions::new("p");
    options.hooks = true;
    let h = Session::new(config).start_run(options).unwrap();
    // Let the whole output arrive first, so that batches are full.
    let deadline = Instant::now() + Duration::from_secs(30);
    while h.result().is_none() {
        assert!(Instant::now() < deadline, "run did not end");
        std::thread::sleep(Duration::from_millis(5));
    }
    let (items, hooks) = drain_batches(&h);
    let replayed = crate::replay::replay(Agent::Claude, &std::fs::read(&trace).unwrap(), &Default::default());
    let strip = |hs: &[HookEvent]| {
        hs.iter()
            .map(|h| {
                let mut v = h.to_flat_snake();
                for k in ["run_id", "timestamp", "sequence", "last_sequence"] {
                    v.remove(k);
                }
                v
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&hooks), strip(&replayed.hooks));
    assert!(items.last().unwrap().is_terminal());
}

#[test]
fn a_panicking_driver_still_ends_the_run_failed_and_kills_the_harness() {
    use super::CommandOptions;
    use crate::lifecycle::LifecycleReason;
    let scratch = Scratch::new();
    let dir = scratch.path();
    let pid_file = dir.join("pid");
    // A command that would run for a minute: it says which process it is, then prints (the
    // driver panics on reading that).
    let script = format!("echo $$ > '{}'; echo ready; exec sleep 60", pid_file.display());
    let mut options = CommandOptions::new(vec!["sh".into(), "-c".into(), script]);
    options.env.push((super::driver::PANIC_FOR_TEST.to_string(), "1".to_string()));
    let session = Session::new(AgentConfig::new(Agent::Claude));
    let h = session.start_command(options).unwrap();
    let (items, _) = drain(&h);
    let last = items.last().expect("a terminal item");
    assert!(last.is_terminal(), "{last:?}");
    match &last.item {
        StreamItem::Lifecycle(l) => assert_eq!(l.reason, LifecycleReason::CommandFailed, "{l:?}"),
        other => panic!("terminal item {other:?}"),
    }
    let result = h.wait_timeout(Duration::from_secs(10)).expect("a result");
    assert_eq!(result.state, super::FinalState::Failed);
    assert!(result.error.as_deref().unwrap_or("").contains("internally"), "{result:?}");
    // The harness was killed well before its minute.
    let deadline = Instant::now() + Duration::from_secs(10);
    let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    while process_alive(pid) {
        assert!(Instant::now() < deadline, "the harness outlived its failed run");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The session is usable again.
    let again = session.start_command(CommandOptions::new(vec!["true".into()])).unwrap();
    assert_eq!(again.wait_timeout(Duration::from_secs(10)).map(|r| r.state), Some(super::FinalState::Completed));
}

/// Read `h`'s deliveries until a stdout line holding `text` (the command got that far).
fn read_until_stdout(h: &RunHandle, text: &str) {
    loop {
        match h.next_blocking(Some(Duration::from_secs(10))) {
            Next::Item(Delivery::Item(e)) if matches!(&e.item, StreamItem::Stdout(s) if s.contains(text)) => return,
            Next::Item(_) => {}
            other => panic!("the command ended, or printed no {text:?} in 10 s: {other:?}"),
        }
    }
}

/// Whether process `pid` still exists (and is not a zombie), read from /proc.
fn process_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'),
        Err(_) => false,
    }
}

#[test]
fn a_reconfigured_session_runs_with_the_new_configuration_in_the_same_environment() {
    use super::CommandOptions;
    use crate::lifecycle::LifecycleReason;
    let lifecycle = |h: &RunHandle| -> (Vec<LifecycleReason>, String) {
        let (items, _) = drain(h);
        let mut stdout = String::new();
        let mut reasons = Vec::new();
        for e in items {
            match e.item {
                StreamItem::Lifecycle(l) => reasons.push(l.reason),
                StreamItem::Stdout(line) => stdout.push_str(&line),
                _ => {}
            }
        }
        (reasons, stdout)
    };
    let scratch = Scratch::new();
    let dir = scratch.path();
    let session = Session::new(AgentConfig::new(Agent::Claude));
    let pwd = || CommandOptions::new(vec!["pwd".into()]);
    let (first, _) = lifecycle(&session.start_command(pwd()).unwrap());
    assert_eq!(first, [LifecycleReason::SandboxReady, LifecycleReason::CommandStart, LifecycleReason::CommandComplete]);

    let mut config = session.config().clone();
    config.cwd = Some(dir.to_path_buf());
    let session = session.reconfigured(config).unwrap();
    let (second, printed) = lifecycle(&session.start_command(pwd()).unwrap());
    assert_eq!(second, [LifecycleReason::CommandStart, LifecycleReason::CommandComplete], "no second sandbox_ready");
    assert_eq!(Path::new(printed.trim()).canonicalize().unwrap(), dir.canonicalize().unwrap());

    // Not while an operation runs: that one keeps the configuration it started with.
    let running = session.start_command(CommandOptions::new(vec!["sleep".into(), "5".into()])).unwrap();
    let err = session.reconfigured(session.config().clone()).unwrap_err();
    assert_eq!(err.kind, crate::error::ErrorKind::AlreadyRunning);
    running.cancel("done");
    drain(&running);
}

/// A reader that got the terminal item can start the next operation at once (the session was
/// freed, and the result set, before the terminal item became readable).
#[test]
fn the_next_operation_can_start_as_soon_as_the_terminal_item_is_read() {
    let session = Session::new(AgentConfig::new(Agent::Claude));
    for _ in 0..30 {
        let h = session.start_command(super::CommandOptions::new(vec!["true".into()])).expect("the session is free");
        drain(&h);
        assert!(h.result().is_some(), "the result is there with the terminal item");
    }
}

#[test]
fn a_missing_harness_is_an_error_even_when_started_from_async_code() {
    // An async server starts runs on its runtime's workers: the failed start must not drop the
    // run's own runtime there (that would panic).
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let err = rt.block_on(async {
        let mut config = AgentConfig::new(Agent::Codex);
        config.bin = Some(PathBuf::from("/nonexistent/codex-not-installed"));
        tokio::spawn(async move { Session::new(config).start_run(RunOptions::new("x")).unwrap_err() }).await.unwrap()
    });
    assert_eq!(err.kind, crate::error::ErrorKind::HarnessNotFound);
}

#[test]
fn a_failed_exit_quotes_the_last_stderr_line_masked_and_shortened() {
    use super::CommandOptions;
    let session = Session::new(AgentConfig::new(Agent::Claude));
    let result = |script: &str| {
        let h = session.start_command(CommandOptions::new(vec!["sh".into(), "-c".into(), script.into()])).unwrap();
        drain(&h);
        h.wait_timeout(Duration::from_secs(10)).expect("a result").error.unwrap_or_default()
    };
    // What `#!/usr/bin/env node` prints when node is not on PATH, the reason for "status 127".
    let missing =
        result("echo starting >&2; echo \"/usr/bin/env: 'node': No such file or directory\" >&2; echo >&2; exit 127");
    assert_eq!(
        missing,
        "the process exited with status 127; its last stderr line: /usr/bin/env: 'node': No such file or directory"
    );
    let secret = result("echo 'auth failed for sk-ant-api03-0123456789abcdefghijABCDEFGHIJ0123456789' >&2; exit 1");
    assert!(!secret.contains("0123456789abcdefghij"), "{secret}");
    assert!(secret.contains("auth failed for"), "{secret}");
    let long = result("printf 'x%.0s' $(seq 1 1000) >&2; exit 2");
    assert!(long.ends_with(&format!("{}…", "x".repeat(240))), "{long}");
    // A secret the cut would halve is masked whole first: no piece of it is quoted.
    let straddling = result(
        "printf 'x%.0s' $(seq 1 205) >&2; echo ' Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123456789' >&2; exit 1",
    );
    assert!(!straddling.contains("abcdefghijkl"), "{straddling}");
    // A line printed in two writes a moment apart (handed on as two pieces) is quoted whole,
    // so a secret split between them is masked.
    let split = result("printf 'key sk-ant-api0' >&2; sleep 0.2; echo '3-Xy7Kq2Lm9Np4Rs6Tv8Wz1Ab3Cd5Ef' >&2; exit 1");
    assert!(split.ends_with("its last stderr line: key [redacted]"), "{split}");
    // Nothing on stderr: the status alone.
    assert_eq!(result("exit 3"), "the process exited with status 3");
}

#[test]
fn a_failed_harness_runs_stderr_quote_masks_the_secrets_of_its_inputs() {
    let scratch = Scratch::new();
    let dir = scratch.path();
    // The tool input names it a password (masked and remembered); stderr then repeats the bare
    // value, which has no secret shape of its own.
    let call = r#"{"type":"assistant","session_id":"s","message":{"id":"m","model":"x","content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"login","password":"correcthorsebatterystaple"}}]}}"#;
    let trace = dir.join("trace.jsonl");
    std::fs::write(&trace, format!("{call}\n")).unwrap();
    let script = dir.join("harness.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\ncat '{}'\necho 'login failed: correcthorsebatterystaple' >&2\nexit 1\n", trace.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut config = AgentConfig::new(Agent::Claude);
    config.bin = Some(script);
    let run = |redact: bool| {
        let mut options = RunOptions::new("x");
        options.redact = redact;
        let h = Session::new(config.clone()).start_run(options).unwrap();
        drain(&h);
        h.wait_timeout(Duration::from_secs(10)).expect("a result").error.unwrap_or_default()
    };
    let masked = run(true);
    assert!(masked.ends_with("its last stderr line: login failed: [redacted]"), "{masked}");
    assert!(run(false).ends_with("login failed: correcthorsebatterystaple"), "redaction off keeps it");
}

#[test]
fn a_kill_during_an_interrupts_grace_period_kills_at_once() {
    use super::CommandOptions;
    // A command that ignores SIGTERM: the interrupt's grace period (30 s) would run out.
    let mut options = CommandOptions::new(vec!["sh".into(), "-c".into(), "trap '' TERM; echo ready; sleep 60".into()]);
    options.kill_grace = Duration::from_secs(30);
    let session = Session::new(AgentConfig::new(Agent::Claude));
    let h = session.start_command(options).unwrap();
    // The trap is set once it printed.
    read_until_stdout(&h, "ready");
    session.interrupt("stop").unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let killed_at = Instant::now();
    session.kill().unwrap();
    drain(&h);
    assert!(killed_at.elapsed() < Duration::from_secs(5), "killed at once, not after the 30 s grace period");
    let result = h.wait_timeout(Duration::from_secs(5)).expect("a result");
    assert_eq!((result.state, result.signal), (super::FinalState::Cancelled, Some(9)), "{result:?}");
}

#[test]
fn a_run_whose_supervisor_is_killed_fails_and_leaves_no_process_of_its_group() {
    use super::CommandOptions;
    let scratch = Scratch::new();
    let dir = scratch.path();
    let pid_file = dir.join("background");
    // A second process in the harness's group, besides the leader.
    let script = format!("sleep 60 & echo $! > '{}'; echo ready; sleep 60", pid_file.display());
    let session = Session::new(AgentConfig::new(Agent::Claude));
    let h = session.start_command(CommandOptions::new(vec!["sh".into(), "-c".into(), script])).unwrap();
    read_until_stdout(&h, "ready");
    // The supervisor is the leader's parent; killed from outside (as by the OOM killer).
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", h.pgid())).unwrap();
    let supervisor: i32 = stat.rsplit(')').next().unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
    // SAFETY: signalling a process of this test's own run.
    assert_eq!(unsafe { libc::kill(supervisor, libc::SIGKILL) }, 0);
    drain(&h);
    let result = h.wait_timeout(Duration::from_secs(10)).expect("a result");
    assert_eq!(result.state, super::FinalState::Failed, "not a clean exit: {result:?}");
    assert!(result.error.as_deref().unwrap_or("").contains("cannot be known"), "{result:?}");
    // The group is ended as soon as the supervisor is found gone: the background process held
    // the pipes open until the reader gave up ("still open 2.5s after its process tree was
    // ended", which had not been).
    assert!(result.diagnostics.is_empty(), "{:?}", result.diagnostics);
    let background: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while process_alive(background) {
        assert!(Instant::now() < deadline, "a process of the run's group outlived it");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_pause_racing_the_end_of_a_run_leaves_the_session_idle_and_the_next_pause_stops_its_run() {
    use super::CommandOptions;
    use crate::lifecycle::SandboxState;
    let session = Session::new(AgentConfig::new(Agent::Claude));
    for _ in 0..20 {
        let h = session.start_command(CommandOptions::new(vec!["true".into()])).unwrap();
        // Pause (and resume) until the run is over: some pauses land while it ends.
        while session.pause().is_ok() {
            let _ = session.resume();
        }
        drain(&h);
        h.wait_timeout(Duration::from_secs(10)).expect("a result");
        assert_ne!(session.states().0, SandboxState::Paused, "paused with nothing to resume");
    }
    let h = session.start_command(CommandOptions::new(vec!["sleep".into(), "5".into()])).unwrap();
    session.pause().unwrap();
    let state = |pid: i32| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        stat.rsplit(')').next().unwrap().split_whitespace().next().unwrap().to_string()
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while state(h.pgid()) != "T" {
        assert!(Instant::now() < deadline, "the next run's pause did not stop it");
        std::thread::sleep(Duration::from_millis(10));
    }
    session.kill().unwrap();
    drain(&h);
}

/// An interrupt continues a paused run before its SIGTERM, and the stream says so; a kill goes
/// from paused to killed without a resume.
#[test]
fn an_interrupt_of_a_paused_run_resumes_it_first_and_a_kill_does_not() {
    use super::CommandOptions;
    use crate::lifecycle::{LifecycleReason, SandboxState};
    let session = Session::new(AgentConfig::new(Agent::Claude));
    let reasons = |items: Vec<Envelope>| -> Vec<LifecycleReason> {
        let all = items.into_iter().filter_map(|e| match e.item {
            StreamItem::Lifecycle(l) => Some(l.reason),
            _ => None,
        });
        all.filter(|r| *r != LifecycleReason::SandboxReady && *r != LifecycleReason::CommandStart).collect()
    };
    let sleep = || CommandOptions::new(vec!["sleep".into(), "30".into()]);

    let h = session.start_command(sleep()).unwrap();
    session.pause().unwrap();
    session.interrupt("enough").unwrap();
    assert_ne!(session.states().0, SandboxState::Paused, "the interrupted run is no longer paused");
    let stopped = reasons(drain(&h).0);
    use LifecycleReason::{CommandInterrupted, SandboxKilled, SandboxPause, SandboxResume};
    assert_eq!(stopped, [SandboxPause, SandboxResume, CommandInterrupted]);

    let h = session.start_command(sleep()).unwrap();
    session.pause().unwrap();
    session.kill().unwrap();
    assert_eq!(reasons(drain(&h).0), [SandboxPause, SandboxKilled, CommandInterrupted]);
}

#[test]
fn a_cancel_after_the_process_ended_by_itself_does_not_make_the_run_cancelled() {
    use super::CommandOptions;
    let session = Session::new(AgentConfig::new(Agent::Claude));
    for round in 0..200 {
        let h = session.start_command(CommandOptions::new(vec!["true".into()])).unwrap();
        // Gone (reaped): whatever the driver has seen of it yet, no signal can reach it now.
        // (The group is read once: a finished run's is 0, and killpg(0) is this test's own.)
        let pgid = h.pgid();
        // SAFETY: probing a process group of this test's own run.
        while pgid > 0 && unsafe { libc::killpg(pgid, 0) } == 0 {
            std::hint::spin_loop();
        }
        h.cancel("too late");
        drain(&h);
        let result = h.wait_timeout(Duration::from_secs(10)).expect("a result");
        assert_eq!(result.state, super::FinalState::Completed, "round {round}: {result:?}");
    }
}
