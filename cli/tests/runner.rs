//! The process runner with REAL processes: the fake harness replays recorded traces and can be
//! told to fail, die mid-line, hang, ignore SIGTERM or flood its output.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agentstream_core::runner::{
    AgentConfig, CommandOptions, Delivery, FinalState, Next, RunHandle, RunOptions, Session,
};
use agentstream_core::stream::{Envelope, SequenceCheck, StreamItem};
use agentstream_core::{Agent, ErrorKind, HookEvent, LifecycleReason, SessionUpdate};

fn golden(agent: &str, case: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden").join(agent).join(case).to_string_lossy().into_owned()
}

fn fake(agent: Agent, env: &[(&str, String)]) -> Session {
    let mut config = AgentConfig::new(agent);
    config.bin = Some(PathBuf::from(env!("CARGO_BIN_EXE_fake-harness")));
    config.env = env.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    Session::new(config)
}

fn trace(agent: &str, case: &str) -> (&'static str, String) {
    ("AGENTSTREAM_FAKE_TRACE", golden(agent, case))
}

/// Read everything (with a safety deadline), returning items and hooks in delivery order.
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

/// The text of each stderr item, in order.
fn stderr_items(items: &[Envelope]) -> Vec<&str> {
    items
        .iter()
        .filter_map(|e| match &e.item {
            StreamItem::Stderr(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn lifecycle_reasons(items: &[Envelope]) -> Vec<LifecycleReason> {
    items
        .iter()
        .filter_map(|e| match &e.item {
            StreamItem::Lifecycle(l) => Some(l.reason),
            _ => None,
        })
        .collect()
}

fn assert_one_terminal_last_and_gapless(items: &[Envelope]) {
    let terminals =
        items.iter().filter(|e| matches!(&e.item, StreamItem::Lifecycle(l) if l.reason.is_terminal())).count();
    assert_eq!(terminals, 1, "exactly one terminal");
    assert!(
        matches!(&items.last().unwrap().item, StreamItem::Lifecycle(l) if l.reason.is_terminal()),
        "terminal is last"
    );
    let mut check = SequenceCheck::new();
    for e in items {
        assert!(check.accept(e), "sequence {} accepted", e.sequence);
    }
    assert_eq!(check.missing(), 0, "no gaps");
    assert_eq!(items[0].sequence, 0);
}

#[test]
fn a_replayed_trace_streams_lines_then_their_events_in_order() {
    let s = fake(Agent::Claude, &[trace("claude", "s2-bash")]);
    let mut opts = RunOptions::new("List the files");
    opts.hooks = true;
    let h = s.start_run(opts).unwrap();
    let (items, hooks) = drain(&h);
    let r = h.wait_blocking();
    assert_eq!(r.state, FinalState::Completed, "{r:?}");
    assert_eq!(lifecycle_reasons(&items)[..2], [LifecycleReason::SandboxReady, LifecycleReason::RunStart]);
    assert_eq!(lifecycle_reasons(&items).last(), Some(&LifecycleReason::RunComplete));
    assert_one_terminal_last_and_gapless(&items);
    // Every content event comes right after the stdout line it was decoded from.
    let mut last_was_stdout_or_content = false;
    for e in &items {
        if let StreamItem::Content(_) = e.item {
            assert!(last_was_stdout_or_content, "content at {} follows its line", e.sequence);
        }
        last_was_stdout_or_content = matches!(e.item, StreamItem::Stdout(_) | StreamItem::Content(_));
    }
    let stdout: String =
        items.iter().filter_map(|e| e.item.as_raw_text().filter(|_| matches!(e.item, StreamItem::Stdout(_)))).collect();
    assert_eq!(stdout, std::fs::read_to_string(golden("claude", "s2-bash.input.jsonl")).unwrap(), "stdout as printed");
    let stderr: String = stderr_items(&items).concat();
    assert_eq!(stderr, std::fs::read_to_string(golden("claude", "s2-bash.stderr.txt")).unwrap());
    assert_eq!(hooks.first().unwrap().event_type, "run.started");
    assert_eq!(hooks.last().unwrap().event_type, "run.completed");
    assert!(hooks.iter().any(|x| x.event_type == "tool.started"));
    assert!(hooks.windows(2).all(|w| w[0].sequence <= w[1].sequence), "hooks in sequence order");
    assert!(r.final_text.as_deref().is_some_and(|t| !t.is_empty()));
    assert_eq!(r.session_id.as_deref(), Some("66c0abf3-0bc5-46a7-8e73-4fef192280ea"));
}

#[test]
fn a_non_zero_exit_fails_the_run() {
    let s = fake(Agent::Codex, &[trace("codex", "s1-text"), ("AGENTSTREAM_FAKE_EXIT", "3".into())]);
    let h = s.start_run(RunOptions::new("x")).unwrap();
    let (items, _) = drain(&h);
    let r = h.wait_blocking();
    assert_eq!(r.state, FinalState::Failed);
    assert_eq!(r.exit_code, Some(3));
    assert!(r.final_text.is_none(), "partial text is never an answer");
    assert_eq!(lifecycle_reasons(&items).last(), Some(&LifecycleReason::RunFailed));
    assert_one_terminal_last_and_gapless(&items);
}

/// decisions.md §1: exit 0 without the harness's end-of-run record is not success; the
/// answer so far stays in the result.
#[test]
fn an_exit_0_without_the_final_result_fails_and_keeps_the_answer() {
    for agent in [Agent::Claude, Agent::Codex, Agent::Gemini, Agent::Qwen, Agent::Opencode, Agent::Droid] {
        let s = fake(agent, &[trace(agent.name(), "e-no-final-result"), ("AGENTSTREAM_FAKE_EXIT", "0".into())]);
        let mut opts = RunOptions::new("x");
        opts.hooks = true;
        let h = s.start_run(opts).unwrap();
        let (items, hooks) = drain(&h);
        let r = h.wait_blocking();
        assert_eq!(r.state, FinalState::Failed, "{agent}: {r:?}");
        assert_eq!(r.exit_code, Some(0), "{agent}");
        let error = r.error.as_deref().unwrap_or_default();
        assert!(error.contains("stopped without its final result"), "{agent}: {error}");
        assert!(r.final_text.as_deref().is_some_and(|t| !t.is_empty()), "{agent}: the partial answer is kept");
        assert_eq!(lifecycle_reasons(&items).last(), Some(&LifecycleReason::RunFailed), "{agent}");
        assert_eq!(hooks.last().unwrap().event_type, "run.failed", "{agent}");
        assert_one_terminal_last_and_gapless(&items);
    }
}

#[test]
fn a_harness_killed_mid_line_fails_after_its_partial_line_is_decoded() {
    let s = fake(Agent::Gemini, &[trace("gemini", "s1-text"), ("AGENTSTREAM_FAKE_DIE_MID_LINE", "1".into())]);
    let h = s.start_run(RunOptions::new("x")).unwrap();
    let (items, _) = drain(&h);
    let r = h.wait_blocking();
    assert_eq!(r.state, FinalState::Failed);
    assert_eq!(r.signal, Some(9));
    assert_one_terminal_last_and_gapless(&items);
    let last_stdout = items
        .iter()
        .rev()
        .find_map(|e| match &e.item {
            StreamItem::Stdout(t) => Some(t.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        last_stdout.starts_with("{\"type\":\"result\""),
        "the partial final line is delivered before the terminal: {last_stdout}"
    );
}

#[test]
fn cancel_terminates_the_group_and_escalates_to_sigkill() {
    for ignore_term in ["0", "1"] {
        let s = fake(
            Agent::Claude,
            &[
                trace("claude", "s1-text"),
                ("AGENTSTREAM_FAKE_HANG", "1".into()),
                ("AGENTSTREAM_FAKE_IGNORE_SIGTERM", ignore_term.into()),
            ],
        );
        let mut opts = RunOptions::new("x");
        opts.kill_grace = Duration::from_millis(300);
        opts.hooks = true;
        let h = s.start_run(opts).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        h.cancel("the client pressed stop");
        h.cancel("a second stop");
        let (items, hooks) = drain(&h);
        let r = h.wait_blocking();
        assert_eq!(r.state, FinalState::Cancelled);
        assert!(r.cancel_reason.as_deref().unwrap().contains("the client pressed stop"), "first reason stands: {r:?}");
        assert_eq!(r.signal, Some(if ignore_term == "1" { 9 } else { 15 }));
        assert_eq!(lifecycle_reasons(&items).last(), Some(&LifecycleReason::RunInterrupted));
        assert_one_terminal_last_and_gapless(&items);
        assert_eq!(hooks.last().unwrap().event_type, "run.cancelled");
    }
}

#[test]
fn a_timeout_stops_the_run() {
    let s = fake(Agent::Claude, &[trace("claude", "s1-text"), ("AGENTSTREAM_FAKE_HANG", "1".into())]);
    let mut opts = RunOptions::new("x");
    opts.timeout = Some(Duration::from_millis(400));
    opts.kill_grace = Duration::from_millis(200);
    opts.hooks = true;
    let h = s.start_run(opts).unwrap();
    let (_, hooks) = drain(&h);
    let r = h.wait_blocking();
    assert_eq!(r.state, FinalState::Cancelled);
    assert_eq!(r.cancel_kind.as_deref(), Some("timeout"), "{r:?}");
    assert_eq!(hooks.last().unwrap().event_type, "run.stopped");
}

#[test]
fn pause_and_resume_stop_and_continue_the_process() {
    let s = fake(Agent::Gemini, &[trace("gemini", "s2-bash"), ("AGENTSTREAM_FAKE_DELAY_MS", "60".into())]);
    let h = s.start_run(RunOptions::new("x")).unwrap();
    std::thread::sleep(Duration::from_millis(150));
    s.pause().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let before = h.try_next_batch(10_000);
    std::thread::sleep(Duration::from_millis(400));
    let during: Vec<_> = h.try_next_batch(10_000);
    assert!(
        during.iter().all(|d| !matches!(d, Delivery::Item(Envelope { item: StreamItem::Stdout(_), .. }))),
        "no output while paused"
    );
    s.resume().unwrap();
    let (rest, _) = drain(&h);
    assert_eq!(h.wait_blocking().state, FinalState::Completed);
    let all: Vec<Envelope> = before
        .into_iter()
        .chain(during)
        .filter_map(|d| if let Delivery::Item(e) = d { Some(e) } else { None })
        .chain(rest)
        .collect();
    let reasons = lifecycle_reasons(&all);
    assert!(
        reasons.contains(&LifecycleReason::SandboxPause) && reasons.contains(&LifecycleReason::SandboxResume),
        "{reasons:?}"
    );
    assert_one_terminal_last_and_gapless(&all);
}

#[test]
fn one_operation_at_a_time_and_a_clear_error_for_a_missing_harness() {
    let s = fake(Agent::Claude, &[trace("claude", "s1-text"), ("AGENTSTREAM_FAKE_HANG", "1".into())]);
    let h = s.start_run(RunOptions::new("x")).unwrap();
    let err = s.start_run(RunOptions::new("y")).unwrap_err();
    assert_eq!(err.kind, ErrorKind::AlreadyRunning);
    assert!(err.message.contains("already running"), "{err}");
    s.kill().unwrap();
    let (items, _) = drain(&h);
    assert!(lifecycle_reasons(&items).contains(&LifecycleReason::SandboxKilled));
    assert_one_terminal_last_and_gapless(&items);

    let mut config = AgentConfig::new(Agent::Codex);
    config.bin = Some(PathBuf::from("/nonexistent/codex-not-installed"));
    let err = Session::new(config).start_run(RunOptions::new("x")).unwrap_err();
    assert_eq!(err.kind, ErrorKind::HarnessNotFound);
    assert!(err.message.contains("not found"), "{err}");
}

#[test]
fn execute_command_streams_any_command_with_command_lifecycle() {
    let s = Session::new(AgentConfig::new(Agent::Claude));
    let cmd = vec!["sh".into(), "-c".into(), "echo one; echo oops >&2; printf 'two'; exit 4".into()];
    let h = s.start_command(CommandOptions::new(cmd)).unwrap();
    let (items, _) = drain(&h);
    let r = h.wait_blocking();
    assert_eq!(r.state, FinalState::Failed);
    assert_eq!(r.exit_code, Some(4));
    let reasons = lifecycle_reasons(&items);
    assert_eq!(reasons, [LifecycleReason::SandboxReady, LifecycleReason::CommandStart, LifecycleReason::CommandFailed]);
    let stdout: String = items
        .iter()
        .filter_map(|e| match &e.item {
            StreamItem::Stdout(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(stdout, "one\ntwo\n");
    assert!(items.iter().all(|e| !matches!(e.item, StreamItem::Content(_))), "commands are not decoded");
    assert_one_terminal_last_and_gapless(&items);
}

#[test]
fn a_stderr_line_written_in_pieces_arrives_whole_and_one_left_unfinished_arrives_anyway() {
    let s = Session::new(AgentConfig::new(Agent::Claude));
    // Two writes 10 ms apart make one line; then a line with no end for a second.
    let script = "import sys, time\n\
                  e = sys.stderr\n\
                  e.write('password='); e.flush(); time.sleep(0.01)\n\
                  e.write('hunter2\\nworking'); e.flush(); time.sleep(1)\n\
                  e.write(' done\\n'); e.flush()\n";
    let cmd = vec!["python3".into(), "-c".into(), script.into()];
    let h = s.start_command(CommandOptions::new(cmd)).unwrap();
    let (items, _) = drain(&h);
    assert_eq!(h.wait_blocking().state, FinalState::Completed);
    assert_eq!(stderr_items(&items), ["password=hunter2\n", "working", " done\n"]);
    assert_one_terminal_last_and_gapless(&items);
}

#[test]
fn a_flood_into_a_slow_reader_coalesces_without_losing_a_character() {
    let s = fake(Agent::Claude, &[trace("claude", "s1-text"), ("AGENTSTREAM_FAKE_FLOOD", "20000".into())]);
    let mut opts = RunOptions::new("x");
    opts.backpressure = opts.backpressure.with_high_water(16);
    let h = s.start_run(opts).unwrap();
    std::thread::sleep(Duration::from_millis(500)); // let the flood pile up unread
    let (items, _) = drain(&h);
    let r = h.wait_blocking();
    assert_eq!(r.state, FinalState::Completed, "{r:?}");
    let stdout: String = items
        .iter()
        .filter_map(|e| match &e.item {
            StreamItem::Stdout(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    let mut expected = std::fs::read_to_string(golden("claude", "s1-text.input.jsonl")).unwrap();
    for i in 0..20000 {
        expected.push_str(&format!("{{\"type\":\"flood\",\"n\":{i}}}\n"));
    }
    assert_eq!(stdout.len(), expected.len());
    assert_eq!(stdout, expected);
    assert!(r.pressure.coalesced > 0, "the slow reader saw merged deltas: {:?}", r.pressure);
    assert_one_terminal_last_and_gapless(&items);
    let _ = SessionUpdate::message("");
}

#[test]
fn a_reader_that_leaves_cancels_the_run() {
    let s = fake(Agent::Claude, &[trace("claude", "s1-text"), ("AGENTSTREAM_FAKE_HANG", "1".into())]);
    let mut opts = RunOptions::new("x");
    opts.kill_grace = Duration::from_millis(200);
    let h = s.start_run(opts).unwrap();
    let _first = h.next_blocking(Some(Duration::from_secs(5)));
    h.reader_left();
    let r = h.wait_timeout(Duration::from_secs(10)).expect("the run ended");
    assert_eq!(r.state, FinalState::Cancelled);
    assert!(r.cancel_reason.unwrap().contains("read"));
}

#[test]
fn on_handlers_get_every_channel_in_order_and_a_failing_handler_does_not_stop_the_run() {
    use agentstream_core::runner::Dispatcher;
    use std::sync::{Arc, Mutex};
    let s = fake(Agent::Qwen, &[trace("qwen", "s3-read-edit")]);
    let seen: Arc<Mutex<Vec<(String, u64)>>> = Arc::default();
    let mut d = Dispatcher::new();
    for channel in ["content", "lifecycle", "stdout", "stderr"] {
        let seen = seen.clone();
        d.on(channel, move |item| {
            seen.lock().unwrap().push((item.channel().name().to_string(), 0));
            Ok(())
        })
        .unwrap();
    }
    d.on("content", |_| Err("this handler always fails".into())).unwrap();
    let hooks = seen.clone();
    d.on_event(move |h| {
        hooks.lock().unwrap().push((h.event_type.clone(), h.sequence));
        Ok(())
    });
    let mut opts = RunOptions::new("x");
    opts.hooks = d.wants_hooks();
    let run = s.start_run(opts).unwrap();
    let (result, failures) = d.drive(&run);
    assert_eq!(result.state, FinalState::Completed);
    let seen = seen.lock().unwrap();
    let contents = seen.iter().filter(|(c, _)| c == "content").count();
    assert!(contents > 0);
    // The failing handler is reported once, with the event it first failed on (a handler that
    // fails on every event of a long run must not grow a list of millions); every failure is
    // counted in the result.
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(failures[0].channel == "content" && failures[0].event.contains("sessionUpdate"), "{failures:?}");
    assert_eq!(result.handler_errors, contents as u64);
    assert_eq!(seen.iter().filter(|(c, _)| c == "run.completed").count(), 1);
    assert!(seen.iter().any(|(c, _)| c == "stdout") && seen.iter().any(|(c, _)| c == "lifecycle"));
    // The same dispatcher driving another run reports and counts that run's failures.
    drop(seen);
    let mut opts = RunOptions::new("x");
    opts.hooks = d.wants_hooks();
    let (again, failures) = d.drive(&s.start_run(opts).unwrap());
    assert_eq!((failures.len(), again.handler_errors), (1, contents as u64), "{failures:?}");
}

#[test]
fn a_batch_reader_gets_every_delivery_in_batches() {
    let s = fake(Agent::Claude, &[trace("claude", "s2-bash"), ("AGENTSTREAM_FAKE_FLOOD", "3000".into())]);
    let mut opts = RunOptions::new("x");
    opts.hooks = true;
    let h = s.start_run(opts).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let (mut items, mut batches) = (Vec::new(), 0usize);
    while !h.is_ended() {
        assert!(Instant::now() < deadline, "run did not end");
        let batch = h.next_batch_blocking(256, Some(Duration::from_millis(200)));
        batches += usize::from(!batch.is_empty());
        items.extend(batch.into_iter().filter_map(|d| if let Delivery::Item(e) = d { Some(e) } else { None }));
    }
    assert_eq!(h.wait_blocking().state, FinalState::Completed);
    assert_one_terminal_last_and_gapless(&items);
    assert!(batches * 4 < items.len(), "{batches} batches for {} items", items.len());
}

/// Every harness gets a prompt that looks like an option as its prompt: the process receives
/// exactly the argv `harness_args` builds, with the prompt after the end of options (`--`) or
/// joined to its option (`--prompt=…`), never as an argument of its own before `--`.
#[test]
fn a_prompt_that_looks_like_an_option_reaches_every_harness_as_its_prompt() {
    let dir = std::env::temp_dir().join(format!("agentstream-argv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let argv_file = dir.join("argv.json");
    for agent in Agent::ALL {
        for prompt in ["--yolo", "--dangerously-skip-permissions", "-p", "-", "--", "-y --yolo", "--prompt=x"] {
            let s = fake(
                agent,
                &[trace(agent.name(), "s1-text"), ("AGENTSTREAM_FAKE_ARGV_FILE", argv_file.display().to_string())],
            );
            let h = s.start_run(RunOptions::new(prompt)).unwrap();
            let _ = drain(&h);
            assert_eq!(h.wait_blocking().state, FinalState::Completed, "{agent} {prompt:?}");
            let got: Vec<String> = serde_json::from_slice(&std::fs::read(&argv_file).unwrap()).unwrap();
            assert_eq!(got, agentstream_core::runner::harness_args(agent, prompt, None, &[]), "{agent}");
            match agent {
                Agent::Gemini | Agent::Qwen | Agent::Kimi => {
                    assert_eq!(got.last().unwrap(), &format!("--prompt={prompt}"), "{agent}: {got:?}")
                }
                _ => {
                    let end = got.iter().position(|a| a == "--").expect("an end of options");
                    assert_eq!(&got[end + 1..], [prompt.to_string()], "{agent}: {got:?}");
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The secret-shape corpus through every output path of the `agentstream` command: `parse`
/// (masked by default, `--no-redact` keeps them), and a real run of each harness's secret trace
/// printed as the sequenced stream (`--json`: every channel, the raw lines masked as the server
/// masks them; `--no-redact` keeps them), as hook events (`--hooks`) and as the human view.
#[test]
fn no_secret_from_the_corpus_survives_any_output_of_the_command() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/secrets");
    let mut secrets = Vec::new();
    for line in std::fs::read_to_string(dir.join("corpus.jsonl")).unwrap().lines().filter(|l| !l.is_empty()) {
        let entry: serde_json::Value = serde_json::from_str(line).unwrap();
        for s in entry["secrets"].as_array().unwrap() {
            let quoted = serde_json::to_string(s).unwrap();
            secrets.push(quoted[1..quoted.len() - 1].to_string());
        }
    }
    let bin = env!("CARGO_BIN_EXE_agentstream");
    let survivors = |text: &str| secrets.iter().filter(|s| text.contains(s.as_str())).cloned().collect::<Vec<_>>();
    for agent in Agent::ALL {
        let trace = dir.join("traces").join(agent.name());
        let input = format!("{}.input.jsonl", trace.display());
        let run = |args: &[&str]| {
            let out = std::process::Command::new(bin).args(args).output().unwrap();
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        assert_eq!(
            survivors(&run(&["parse", "--agent", agent.name(), &input])),
            Vec::<String>::new(),
            "{agent}: parse"
        );
        assert_eq!(
            survivors(&run(&["parse", "--no-redact", "--agent", agent.name(), &input])).len(),
            secrets.len(),
            "{agent}: parse --no-redact keeps every secret"
        );
        let fake = env!("CARGO_BIN_EXE_fake-harness");
        for view in ["--json", "--hooks", "--show-stderr"] {
            let out = std::process::Command::new(bin)
                .args(["run", "--agent", agent.name(), "--bin", fake, view, "--", "x"])
                .env("AGENTSTREAM_FAKE_TRACE", &trace)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("[redacted]"), "{agent} {view}");
            assert_eq!(survivors(&text), Vec::<String>::new(), "{agent}: run {view}");
        }
        let kept = std::process::Command::new(bin)
            .args(["run", "--agent", agent.name(), "--bin", fake, "--json", "--no-redact", "--", "x"])
            .env("AGENTSTREAM_FAKE_TRACE", &trace)
            .output()
            .unwrap();
        let raw_lines: String =
            String::from_utf8_lossy(&kept.stdout).lines().filter(|l| l.contains(r#""channel":"stdout""#)).collect();
        assert_eq!(survivors(&raw_lines).len(), secrets.len(), "{agent}: run --json --no-redact keeps the raw lines");
    }
    // A command printing every corpus text on stdout and stderr, shown as the human view.
    let texts: String = std::fs::read_to_string(dir.join("corpus.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["text"].as_str().unwrap().to_string() + "\n")
        .collect();
    let file = std::env::temp_dir().join(format!("agentstream-secret-texts-{}", std::process::id()));
    std::fs::write(&file, texts).unwrap();
    let script = format!("cat '{0}'; cat '{0}' >&2", file.display());
    for redact in [true, false] {
        let mut args = vec!["exec", "--show-stderr"];
        args.extend(if redact { vec![] } else { vec!["--no-redact"] });
        args.extend(["--", "sh", "-c", &script]);
        let out = std::process::Command::new(bin).args(&args).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        if redact {
            assert_eq!(survivors(&text), Vec::<String>::new(), "exec's human view");
        } else {
            assert_eq!(survivors(&text).len(), secrets.len(), "exec --no-redact keeps them:\n{text}");
        }
    }
    let _ = std::fs::remove_file(&file);
}

/// A harness that prints `stdout` (a file) with `cat` and exits 0.
fn printing(agent: Agent, dir: &Path, stdout: &[u8]) -> Session {
    let out = dir.join(format!("{}.out", agent.name()));
    std::fs::write(&out, stdout).unwrap();
    let script = dir.join(format!("{}.sh", agent.name()));
    std::fs::write(&script, format!("#!/bin/sh\ncat '{}'\n", out.display())).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut config = AgentConfig::new(agent);
    config.bin = Some(script);
    Session::new(config)
}

#[test]
fn a_whole_last_line_without_its_newline_completes_and_a_cut_one_fails() {
    let dir = std::env::temp_dir().join(format!("agentstream-last-line-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for agent in Agent::ALL {
        let input = std::fs::read(format!("{}.input.jsonl", golden(agent.name(), "s1-text"))).unwrap();
        let without_newline = input.strip_suffix(b"\n").unwrap();
        let whole = printing(agent, &dir, without_newline).start_run(RunOptions::new("x")).unwrap().wait_blocking();
        assert_eq!(whole.state, FinalState::Completed, "{agent}: {whole:?}");
        let cut = &without_newline[..without_newline.len() - 3];
        let cut = printing(agent, &dir, cut).start_run(RunOptions::new("x")).unwrap().wait_blocking();
        assert_eq!(cut.state, FinalState::Failed, "{agent}: {cut:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_capture_replays_through_a_real_process_with_its_stderr_and_exit_code() {
    let mut captures = 0;
    for agent in Agent::ALL {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden").join(agent.name());
        let mut metas: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().ends_with(".meta.json"))
            .collect();
        metas.sort();
        for meta_path in metas {
            let case = meta_path.file_name().unwrap().to_string_lossy().trim_end_matches(".meta.json").to_string();
            let meta: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
            let h = fake(agent, &[trace(agent.name(), &case)]).start_run(RunOptions::new("x")).unwrap();
            let (items, _) = drain(&h);
            let r = h.wait_blocking();
            let what = format!("{agent}/{case}");
            assert_one_terminal_last_and_gapless(&items);
            assert_eq!(r.exit_code.map(i64::from), meta["exit_code"].as_i64(), "{what}: the capture's exit code");
            let expected = if meta["exit_code"] == 0 { FinalState::Completed } else { FinalState::Failed };
            assert_eq!(r.state, expected, "{what}: {r:?}");
            let stderr: String = stderr_items(&items).concat();
            let printed = std::fs::read_to_string(dir.join(format!("{case}.stderr.txt"))).unwrap_or_default();
            assert_eq!(stderr, printed, "{what}: stderr as printed");
            captures += 1;
        }
    }
    assert!(captures >= 21, "every harness's captures: {captures}");
}
