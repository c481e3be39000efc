//! The bridge with real child processes: shell scripts stand in for harnesses (they print a
//! golden trace, or stall), so every rule a binding relies on is checked once, here.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;
use crate::channel::Channel;
use crate::error::ErrorKind;
use crate::scratch::Scratch;
use crate::stream::{CancellationToken, SequenceCheck, SharedBudget};

fn golden(agent: &str, case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden").join(agent).join(format!("{case}.input.jsonl"))
}

/// A client whose harness prints the claude `s2-bash` golden trace.
fn claude_client(scratch: &Scratch) -> Client {
    let mut spec = AgentSpec::new("claude");
    spec.bin = Some(scratch.script(&format!("exec cat '{}'", golden("claude", "s2-bash").display())));
    Client::new(spec, Naming::Snake).unwrap()
}

/// A client whose harness prints a line, then sleeps (until killed).
fn slow_client(scratch: &Scratch) -> Client {
    let mut spec = AgentSpec::new("codex");
    spec.bin = Some(scratch.script("echo '{\"type\":\"thread.started\",\"thread_id\":\"t1\"}'\nexec sleep 30"));
    Client::new(spec, Naming::Snake).unwrap()
}

/// `request` started as an iterated run of `client`.
fn start_iterated(client: &Client, mut request: RunRequest) -> Run {
    request.read = ReadMode::Iterate;
    client.start(request).unwrap()
}

fn pull_all(run: &Run) -> Vec<Delivery> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut all = Vec::new();
    loop {
        assert!(Instant::now() < deadline, "run did not end");
        match run.pull(&mut all, BatchLimits::DEFAULT, Some(Duration::from_millis(200))) {
            Pulled::End => return all,
            Pulled::Batch | Pulled::Timeout => {}
        }
    }
}

fn channels(deliveries: &[Delivery]) -> Vec<&'static str> {
    deliveries
        .iter()
        .map(|d| match d {
            Delivery::Item(env) => env.channel().name(),
            Delivery::Hook(_) => "hook",
        })
        .collect()
}

fn assert_gapless_with_one_terminal_last(deliveries: &[Delivery]) {
    let mut check = SequenceCheck::new();
    let items: Vec<_> =
        deliveries.iter().filter_map(|d| if let Delivery::Item(e) = d { Some(e) } else { None }).collect();
    for e in &items {
        assert!(check.accept(e), "in order, no duplicate: {}", e.sequence);
    }
    assert_eq!(items.iter().filter(|e| e.is_terminal()).count(), 1, "exactly one terminal");
    assert!(items.last().unwrap().is_terminal(), "terminal last");
}

#[test]
fn handlers_read_only_their_channels_and_the_terminal() {
    let scratch = Scratch::new();
    let client = claude_client(&scratch);
    client.on("content").unwrap();
    let run = client.start(RunRequest::prompt("hi")).unwrap();
    assert!(run.has_reader());
    let all = pull_all(&run);
    let seen = channels(&all);
    assert!(seen.contains(&"content"));
    assert!(!seen.contains(&"stdout") && !seen.contains(&"stderr"), "{seen:?}");
    assert_eq!(seen.last(), Some(&"lifecycle"), "the terminal is always delivered");
    let result = run.result().unwrap();
    assert_eq!(result.state, FinalState::Completed);
}

#[test]
fn no_handler_means_await_only() {
    let scratch = Scratch::new();
    let client = claude_client(&scratch);
    let run = client.start(RunRequest::prompt("hi")).unwrap();
    assert!(!run.has_reader());
    let result = run.wait(Some(Duration::from_secs(30))).unwrap();
    assert_eq!(result.state, FinalState::Completed);
    assert!(result.last_sequence > 0, "items were numbered though nobody read them");
    let mut out = Vec::new();
    assert_eq!(run.pull(&mut out, BatchLimits::DEFAULT, Some(Duration::ZERO)), Pulled::End);
    assert!(out.is_empty());
}

#[test]
fn iterated_runs_see_everything_and_the_result_is_final_only_at_the_end() {
    let scratch = Scratch::new();
    let client = claude_client(&scratch);
    let mut request = RunRequest::prompt("hi");
    request.read = ReadMode::Iterate;
    request.hooks = true;
    let run = client.start(request).unwrap();
    // Read one batch, then ask: the terminal was not delivered yet.
    let mut first = Vec::new();
    assert_eq!(run.pull(&mut first, BatchLimits::events(1), Some(Duration::from_secs(10))), Pulled::Batch);
    assert_eq!(first.len(), 1);
    let e = run.result().unwrap_err();
    assert_eq!(e.kind, ErrorKind::StillRunning);
    assert!(e.message.contains("still running"), "{e}");
    // Even once the process is done, the result waits for the reader.
    assert!(run.handle().wait_timeout(Duration::from_secs(30)).is_some());
    assert_eq!(run.result().unwrap_err().kind, ErrorKind::StillRunning);
    let mut rest = pull_all(&run);
    first.append(&mut rest);
    let seen = channels(&first);
    for c in ["content", "lifecycle", "stdout", "hook"] {
        assert!(seen.contains(&c), "{c} in {seen:?}");
    }
    assert_gapless_with_one_terminal_last(&first);
    assert!(matches!(first.last(), Some(Delivery::Hook(h)) if h.event_type == "run.completed"));
    assert_eq!(run.result().unwrap().state, FinalState::Completed);
}

#[test]
fn a_wait_leaves_an_iterated_run_to_its_reader_until_the_reader_leaves() {
    let scratch = Scratch::new();
    let client = claude_client(&scratch);
    let run = start_iterated(&client, RunRequest::prompt("hi"));
    assert!(run.handle().wait_timeout(Duration::from_secs(30)).is_some(), "the harness is done");
    // Nobody read it: a wait does not read it either (a reader may still come).
    assert_eq!(run.wait(Some(Duration::from_millis(300))).unwrap_err().kind, ErrorKind::StillRunning);
    let mut first = Vec::new();
    assert_eq!(run.pull(&mut first, BatchLimits::events(1), Some(Duration::from_secs(1))), Pulled::Batch);
    // The caller says it stopped: the wait discards the rest.
    run.leave();
    let result = run.wait(Some(Duration::from_secs(30))).unwrap();
    assert_eq!(result.state, FinalState::Completed);
    assert!(run.is_ended());
}

#[test]
fn a_wait_of_zero_only_looks_at_an_iterated_run() {
    let scratch = Scratch::new();
    let client = claude_client(&scratch);
    let run = start_iterated(&client, RunRequest::prompt("hi"));
    let mut first = Vec::new();
    assert_eq!(run.pull(&mut first, BatchLimits::events(1), Some(Duration::from_secs(10))), Pulled::Batch);
    assert!(run.handle().wait_timeout(Duration::from_secs(30)).is_some());
    assert_eq!(run.wait(Some(Duration::ZERO)).unwrap_err().kind, ErrorKind::StillRunning);
    // Nothing was discarded by the look.
    first.append(&mut pull_all(&run));
    assert_gapless_with_one_terminal_last(&first);
}

#[test]
fn waiting_on_an_iterated_run_another_thread_reads_leaves_it_to_that_reader() {
    let client = Client::new(AgentSpec::new("codex"), Naming::Snake).unwrap();
    let script = "i=0; while [ $i -lt 40 ]; do echo \"line $i\"; i=$((i+1)); sleep 0.01; done";
    let run = start_iterated(&client, RunRequest::command(["sh", "-c", script]));
    let reader = {
        let run = run.clone();
        std::thread::spawn(move || {
            let mut all = Vec::new();
            // Slow, between pulls too: the waiter must not read in the gaps.
            while run.pull(&mut all, BatchLimits::events(2), None) != Pulled::End {
                std::thread::sleep(Duration::from_millis(15));
            }
            all
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    let result = run.wait(Some(Duration::from_secs(30))).unwrap();
    assert_eq!(result.state, FinalState::Completed);
    let all = reader.join().unwrap();
    assert_gapless_with_one_terminal_last(&all);
    let stdout = all.iter().filter(|d| matches!(d, Delivery::Item(e) if e.item.channel() == Channel::Stdout)).count();
    assert_eq!(stdout, 40);
}

#[test]
fn waiting_on_a_run_whose_subscribed_reader_left_drains_it() {
    let scratch = Scratch::new();
    let client = slow_client(&scratch);
    client.on("stdout").unwrap();
    let mut request = RunRequest::prompt("hi");
    request.kill_grace_ms = 100;
    let run = client.start(request).unwrap();
    assert!(run.has_reader());
    // The caller pulls one delivery, then stops reading (a reader that failed).
    let mut first = Vec::new();
    assert_eq!(run.pull(&mut first, BatchLimits::events(1), Some(Duration::from_secs(20))), Pulled::Batch);
    run.leave();
    // Before, this waited for a reader that would never come back.
    let result = run.wait(Some(Duration::from_secs(20))).expect("the wait ends");
    assert_eq!(result.state, FinalState::Cancelled);
    assert_eq!(result.cancel_kind.as_deref(), Some("reader_left"));
}

#[test]
fn batches_are_bounded_in_events_and_bytes() {
    let scratch = Scratch::new();
    let client = claude_client(&scratch);
    let run = start_iterated(&client, RunRequest::prompt("hi"));
    assert!(run.handle().wait_timeout(Duration::from_secs(30)).is_some(), "everything is buffered");
    let mut batch = Vec::new();
    assert_eq!(run.pull(&mut batch, BatchLimits { max_events: 3, max_bytes: usize::MAX }, None), Pulled::Batch);
    assert_eq!(batch.len(), 3);
    // One byte: each batch still holds one delivery (a reader always progresses).
    let mut count = 3;
    loop {
        batch.clear();
        match run.pull(&mut batch, BatchLimits { max_events: 256, max_bytes: 1 }, Some(Duration::from_secs(10))) {
            Pulled::Batch => {
                // One delivery per batch; the terminal (it weighs nothing) may ride along.
                let terminal = matches!(batch.last(), Some(Delivery::Item(e)) if e.is_terminal());
                assert!(batch.len() == 1 || (batch.len() == 2 && terminal), "{} deliveries", batch.len());
                count += batch.len();
            }
            Pulled::End => break,
            Pulled::Timeout => panic!("everything was ready"),
        }
    }
    assert_eq!(count as u64, run.result().unwrap().last_sequence + 1);
}

#[test]
fn dropping_an_unread_run_cancels_it() {
    let scratch = Scratch::new();
    let client = slow_client(&scratch);
    let mut request = RunRequest::prompt("hi");
    request.read = ReadMode::Iterate;
    request.kill_grace_ms = 100;
    let run = client.start(request).unwrap();
    let handle = run.handle().clone();
    drop(run);
    let result = handle.wait_timeout(Duration::from_secs(20)).expect("the run ended");
    assert_eq!(result.state, FinalState::Cancelled);
    assert_eq!(result.cancel_kind.as_deref(), Some("reader_left"));
}

#[test]
fn a_run_dropped_unread_frees_what_was_buffered_for_it() {
    let client = Client::new(AgentSpec::new("codex"), Naming::Snake).unwrap();
    // Lines the reader never takes; the run ends on its own before the drop.
    let mut request = RunRequest::command(["sh", "-c", "seq 1 20000"]);
    request.read = ReadMode::Iterate;
    let run = client.start(request).unwrap();
    let handle = run.handle().clone();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !handle.is_finished() || handle.pressure().bytes == 0 {
        assert!(std::time::Instant::now() < deadline, "the run did not end: {:?}", handle.pressure());
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(handle.pressure().bytes > 0, "something is buffered to free");
    drop(run);
    // Nobody can read it now: it is not kept (the session keeps the handle until its next run).
    assert_eq!((handle.pressure().buffered, handle.pressure().bytes), (0, 0), "{:?}", handle.pressure());
    assert_eq!(handle.wait_timeout(Duration::from_secs(5)).map(|r| r.state), Some(FinalState::Completed));
}

#[test]
fn a_callers_token_and_deadline_stop_the_run() {
    let scratch = Scratch::new();
    let client = slow_client(&scratch);
    let token = CancellationToken::new();
    let mut request = RunRequest::prompt("hi");
    request.cancel_token = Some(token.clone());
    request.kill_grace_ms = 100;
    let run = client.start(request).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    token.cancel(crate::stream::CancelReason::caller("the client pressed stop"));
    let result = run.wait(Some(Duration::from_secs(20))).unwrap();
    assert_eq!(result.state, FinalState::Cancelled);
    assert_eq!(result.cancel_kind.as_deref(), Some("caller"));
    assert!(result.cancel_reason.unwrap().contains("the client pressed stop"));

    let mut request = RunRequest::prompt("hi");
    request.deadline = Some(Instant::now() + Duration::from_millis(300));
    request.timeout_ms = Some(60_000);
    request.kill_grace_ms = 100;
    let started = Instant::now();
    let result = client.start(request).unwrap().wait(Some(Duration::from_secs(20))).unwrap();
    assert_eq!(result.cancel_kind.as_deref(), Some("timeout"), "the deadline came first");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn one_run_at_a_time_and_controls_report_what_they_did() {
    let scratch = Scratch::new();
    let client = slow_client(&scratch);
    assert!(!client.interrupt("nothing"), "interrupt when idle is not an error");
    assert!(!client.kill(), "nothing to kill");
    assert_eq!(client.status().sandbox, crate::lifecycle::SandboxState::Ready, "killing nothing stops nothing");
    assert_eq!(client.pause().unwrap_err().kind, ErrorKind::NotRunning);
    let status = client.status();
    assert!(!status.has_run && status.active_run_id.is_none());
    let mut request = RunRequest::prompt("hi");
    request.kill_grace_ms = 100;
    let run = client.start(request.clone()).unwrap();
    assert_eq!(client.start(request).unwrap_err().kind, ErrorKind::AlreadyRunning);
    let status = client.status();
    assert!(status.has_run);
    assert_eq!(status.active_run_id.as_deref(), Some(run.id()));
    client.pause().unwrap();
    client.resume().unwrap();
    assert!(client.interrupt("enough"));
    let result = run.wait(Some(Duration::from_secs(20))).unwrap();
    assert_eq!(result.state, FinalState::Cancelled);
    assert!(client.status().active_run_id.is_none());
    assert_eq!(client.status().last_status, Some(FinalState::Cancelled));
}

#[test]
fn starting_while_a_cancelled_run_is_still_stopping_says_so() {
    let client = Client::new(AgentSpec::new("codex"), Naming::Snake).unwrap();
    let mut slow_to_stop = RunRequest::command(["sh", "-c", "trap '' TERM; sleep 30"]);
    slow_to_stop.kill_grace_ms = 20_000;
    let run = client.start(slow_to_stop).unwrap();
    let again = RunRequest::command(["true"]);
    let busy = client.start(again.clone()).unwrap_err();
    assert!(busy.kind == ErrorKind::AlreadyRunning && busy.message.contains("already running"), "{busy}");
    run.cancel("enough");
    let stopping = client.start(again).unwrap_err();
    assert_eq!(stopping.kind, ErrorKind::AlreadyRunning);
    assert!(stopping.message.contains("still stopping") && stopping.message.contains(run.id()), "{stopping}");
    assert!(client.kill());
    assert_eq!(run.wait(Some(Duration::from_secs(20))).unwrap().state, FinalState::Cancelled);
}

#[test]
fn subscriptions_validate_names_and_follow_a_running_run() {
    let scratch = Scratch::new();
    let client = slow_client(&scratch);
    let e = client.on("message").unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    assert!(e.message.contains("\"content\", \"lifecycle\", \"stdout\" and \"stderr\""), "{e}");
    assert_eq!(client.off("nope").unwrap_err().kind, ErrorKind::InvalidArgument);
    let a = client.on("stdout").unwrap();
    let b = client.on("stdout").unwrap();
    assert_eq!(client.subscribers(Channel::Stdout), [a, b]);
    let mut request = RunRequest::prompt("hi");
    request.kill_grace_ms = 100;
    let run = client.start(request).unwrap();
    assert_eq!(run.mask(), crate::stream::ChannelSet::of([Channel::Stdout]).bits());
    client.on("lifecycle").unwrap();
    assert_eq!(run.mask(), crate::stream::ChannelSet::of([Channel::Stdout, Channel::Lifecycle]).bits());
    assert_eq!(client.off("stdout").unwrap(), [a, b]);
    assert!(!client.off_id(a));
    // A channel stays read while the run goes on (a handler swapped in later misses nothing).
    assert_eq!(run.mask(), crate::stream::ChannelSet::of([Channel::Stdout, Channel::Lifecycle]).bits());
    // The harness's one line still comes (the cancel waits for it: it would race the line).
    let mut all = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !channels(&all).contains(&"stdout") {
        assert!(Instant::now() < deadline, "the line did not come: {:?}", channels(&all));
        run.pull(&mut all, BatchLimits::DEFAULT, Some(Duration::from_millis(200)));
    }
    run.cancel("done");
    all.extend(pull_all(&run));
    assert_eq!(channels(&all).iter().filter(|c| **c == "stdout").count(), 1, "{:?}", channels(&all));
}

#[test]
fn swapping_a_channels_only_handler_during_a_run_loses_nothing() {
    let scratch = Scratch::new();
    let mut spec = AgentSpec::new("claude");
    spec.bin = Some(scratch.script("for i in $(seq 1 60); do echo \"{\\\"n\\\":$i}\"; sleep 0.005; done"));
    let client = Client::new(spec, Naming::Snake).unwrap();
    client.on("stdout").unwrap();
    let run = client.start(RunRequest::prompt("hi")).unwrap();
    let mut all = Vec::new();
    let stdout = |all: &[Delivery]| channels(all).iter().filter(|c| **c == "stdout").count();
    while stdout(&all) < 5 {
        run.pull(&mut all, BatchLimits::DEFAULT, Some(Duration::from_millis(200)));
    }
    // The only handler goes, and another comes a moment later.
    client.off("stdout").unwrap();
    std::thread::sleep(Duration::from_millis(60));
    client.on("stdout").unwrap();
    all.extend(pull_all(&run));
    assert_eq!(stdout(&all), 60, "every line, none lost in the swap");
    assert_gapless_with_one_terminal_last(&all);
}

#[test]
fn handler_failures_are_counted_and_reported_once_per_handler() {
    let scratch = Scratch::new();
    let client = claude_client(&scratch);
    let id = client.on("content").unwrap();
    let run = client.start(RunRequest::prompt("hi")).unwrap();
    let all = pull_all(&run);
    let mut firsts = 0;
    for d in &all {
        let Delivery::Item(env) = d else { continue };
        if env.channel() == Channel::Content {
            let error =
                HandlerError { handler: id, channel: "content".into(), sequence: env.sequence, message: "boom".into() };
            firsts += usize::from(run.handler_failed(error));
        }
    }
    assert_eq!(firsts, 1);
    let contents = all.iter().filter(|d| matches!(d, Delivery::Item(e) if e.channel() == Channel::Content)).count();
    assert_eq!(run.result().unwrap().handler_errors, contents as u64);
    assert_eq!(run.handler_errors().len(), 1);
}

#[test]
fn the_callback_pump_delivers_everything_in_order() {
    let scratch = Scratch::new();
    let client = claude_client(&scratch);
    client.on("stdout").unwrap();
    client.on("content").unwrap();
    let mut request = RunRequest::prompt("hi");
    request.hooks = true;
    let run = client.start(request).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink_seen = seen.clone();
    let pump = CallbackPump::start(run.clone(), move |d| {
        assert!(CallbackPump::on_a_pump_thread());
        sink_seen.lock().unwrap().push(d.clone());
        if matches!(d, Delivery::Hook(h) if h.event_type == "run.started") {
            panic!("a bug in a sink");
        }
        Dispatched::Ok
    })
    .unwrap();
    assert!(!pump.on_this_thread());
    assert!(pump.wait_done(Some(Instant::now() + Duration::from_secs(30))));
    let seen = seen.lock().unwrap();
    assert_gapless_with_one_terminal_last(&seen);
    let result = run.result().unwrap();
    assert_eq!(result.state, FinalState::Completed);
    assert_eq!(result.handler_errors, 1, "the panic was counted");
}

#[test]
fn a_shared_budget_limits_concurrent_runs_and_sets_their_byte_budget() {
    let scratch = Scratch::new();
    let client = slow_client(&scratch);
    let budget = SharedBudget::new(1 << 20, 1).unwrap();
    let mut request = RunRequest::prompt("hi");
    request.budget = Some(budget.clone());
    request.kill_grace_ms = 100;
    let run = client.start(request.clone()).unwrap();
    assert_eq!(budget.active(), 1);
    let other = slow_client(&Scratch::new());
    let e = other.start(request).unwrap_err();
    assert!(e.message.contains("permits"), "{e}");
    run.cancel("done");
    run.wait(Some(Duration::from_secs(20))).unwrap();
    assert_eq!(budget.active(), 0, "the permit is given back when the run ended, the handle still held");
    // The next run may start at once; one read to its end gives the permit back too.
    let mut iterated = RunRequest::command(["echo", "hi"]);
    iterated.budget = Some(budget.clone());
    iterated.read = ReadMode::Iterate;
    let next = client.start(iterated).unwrap();
    assert_eq!(budget.active(), 1);
    pull_all(&next);
    assert_eq!(budget.active(), 0);
    drop((run, next));
    assert_eq!(budget.active(), 0);
}

#[test]
fn bad_requests_name_the_field() {
    let scratch = Scratch::new();
    let client = claude_client(&scratch);
    let mut request = RunRequest::prompt("hi");
    request.limits.stall_ms = 0;
    let e = client.start(request).unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    assert!(e.message.starts_with("limits.stall_ms"), "{e}");
    let camel = Client::new(AgentSpec::new("claude"), Naming::Camel).unwrap();
    let mut request = RunRequest::prompt("hi");
    request.timeout_ms = Some(0);
    assert!(camel.start(request).unwrap_err().message.starts_with("timeoutMs"));
    let mut missing = AgentSpec::new("claude");
    missing.bin = Some("/nonexistent/claude".into());
    let e = Client::new(missing, Naming::Snake).unwrap().start(RunRequest::prompt("hi")).unwrap_err();
    assert_eq!(e.kind, ErrorKind::HarnessNotFound);
}

#[test]
fn per_run_overrides_apply_to_that_run_only() {
    let scratch = Scratch::new();
    let mut spec = AgentSpec::new("codex");
    spec.bin = Some(scratch.script("printf '%s\\n' \"$PWD\" \"$AGENTSTREAM_T\" \"$@\" >&2"));
    let client = Client::new(spec, Naming::Snake).unwrap();
    client.on("stderr").unwrap();
    let stderr = |request: RunRequest| -> String {
        let run = client.start(request).unwrap();
        pull_all(&run)
            .iter()
            .filter_map(|d| match d {
                Delivery::Item(e) => {
                    e.item.as_raw_text().filter(|_| e.channel() == Channel::Stderr).map(str::to_string)
                }
                _ => None,
            })
            .collect()
    };
    let mut request = RunRequest::prompt("p");
    request.model = Some("m-1".into());
    request.cwd = Some("/".into());
    request.env.insert("AGENTSTREAM_T".into(), "yes".into());
    let out = stderr(request);
    assert!(out.starts_with("/\nyes\n"), "{out}");
    assert!(out.contains("\n-m\nm-1\n"), "{out}");
    let out = stderr(RunRequest::prompt("p"));
    assert!(!out.contains("m-1") && !out.contains("yes"), "the next run has the client's config: {out}");
}

/// Pull `run` to its end, spending `per_delivery` on each stdout delivery; (stdout lines seen,
/// largest batch after the first).
fn read_slowly(run: &Run, per_delivery: Duration) -> (usize, usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let (mut lines, mut batch, mut largest, mut batches) = (0, Vec::new(), 0, 0);
    loop {
        assert!(Instant::now() < deadline, "run did not end");
        batch.clear();
        match run.pull(&mut batch, BatchLimits::DEFAULT, Some(Duration::from_millis(200))) {
            Pulled::End => return (lines, largest),
            Pulled::Timeout => continue,
            Pulled::Batch => {}
        }
        batches += 1;
        if batches > 1 {
            largest = largest.max(batch.len());
        }
        for d in &batch {
            let Delivery::Item(e) = d else { continue };
            if e.channel() == Channel::Stdout {
                // Lines merged under pressure still count one by one.
                lines += e.item.as_raw_text().map_or(0, |t| t.matches('\n').count());
                std::thread::sleep(per_delivery);
            }
        }
    }
}

/// The command run of `script` (`sh -c`), its stdout read by [`read_slowly`] at 10 ms a
/// delivery with a stall limit of 500 ms: (result, stdout lines, largest batch after the first).
fn slow_reader_of(script: &str) -> (crate::runner::RunResult, usize, usize) {
    let client = Client::new(AgentSpec::new("claude"), Naming::Snake).unwrap();
    client.on("stdout").unwrap();
    let mut request = RunRequest::command(["sh", "-c", script]);
    request.limits.stall_ms = 500;
    let run = client.start(request).unwrap();
    let (lines, largest) = read_slowly(&run, Duration::from_millis(10));
    (run.result().unwrap(), lines, largest)
}

#[test]
fn a_reader_that_keeps_up_slowly_is_never_taken_for_a_stalled_one() {
    // 300 lines, one every ~3 ms; the reader spends 10 ms on each delivery (3 s in all) with a
    // stall limit of 500 ms. Batches of up to 256 (the default) grew as the reader fell behind
    // until one took 2.5 s to handle: no take for that long, and the run was cancelled as
    // stalled. A batch is now no more than the reader gets through in a quarter of the limit.
    let (result, lines, largest) =
        slow_reader_of("i=0; while [ $i -lt 300 ]; do echo line $i; i=$((i+1)); sleep 0.003; done");
    assert_eq!(result.state, FinalState::Completed, "{:?} (largest batch {largest})", result.cancel_reason);
    assert_eq!(lines, 300);
    // 125 ms of handling fit; a slow machine measures the reader slower, never faster.
    assert!(largest <= 13, "batches fit a quarter of the stall limit at 10 ms each: {largest}");
}

#[test]
fn a_slow_reader_is_not_taken_for_a_stalled_one_after_waiting_for_a_burst() {
    // The reader handles a few lines, waits (nothing comes for a while), then 300 lines arrive
    // at once. A take after a wait must still be sized by the reader's pace: 256 at once took
    // 2.5 s to handle against the 500 ms limit.
    let (result, lines, largest) =
        slow_reader_of("echo a; echo b; echo c; sleep 1; i=0; while [ $i -lt 300 ]; do echo line $i; i=$((i+1)); done");
    assert_eq!(result.state, FinalState::Completed, "{:?} (largest batch {largest})", result.cancel_reason);
    assert_eq!(lines, 303);
    assert!(largest <= 16, "{largest}");
}

#[test]
fn a_command_line_over_the_limit_is_counted_and_named_not_dropped_silently() {
    let client = Client::new(AgentSpec::new("codex"), Naming::Snake).unwrap();
    let script = "head -c 3000 /dev/zero | tr '\\0' a; echo; echo small; head -c 5000 /dev/zero | tr '\\0' b";
    let mut request = RunRequest::command(["sh", "-c", script]);
    request.read = ReadMode::Iterate;
    request.limits.max_line_bytes = 1024;
    let run = client.start(request).unwrap();
    let stdout: Vec<String> = pull_all(&run)
        .iter()
        .filter_map(|d| match d {
            Delivery::Item(e) => match &e.item {
                crate::stream::StreamItem::Stdout(t) => Some(t.to_string()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(stdout, ["small\n"]);
    let result = run.result().unwrap();
    assert_eq!(result.stats.oversize_lines, 2);
    let diagnostics = result.diagnostics.join("\n");
    assert!(diagnostics.contains("stdout line 1: 3000 bytes, over the line limit of 1024 bytes"), "{diagnostics}");
    assert!(diagnostics.contains("stdout line 3: 5000 bytes"), "{diagnostics}");
}

#[test]
fn a_reader_on_another_thread_that_leaves_hands_the_rest_to_the_wait() {
    let client = Client::new(AgentSpec::new("codex"), Naming::Snake).unwrap();
    let script = "i=0; while [ $i -lt 40 ]; do echo \"line $i\"; i=$((i+1)); sleep 0.1; done";
    let mut request = RunRequest::command(["sh", "-c", script]);
    request.read = ReadMode::Iterate;
    request.kill_grace_ms = 100;
    let run = client.start(request).unwrap();
    let reader = {
        let run = run.clone();
        std::thread::spawn(move || {
            let mut first = Vec::new();
            let pulled = run.pull(&mut first, BatchLimits::events(1), Some(Duration::from_secs(10)));
            std::thread::sleep(Duration::from_millis(200));
            run.leave();
            pulled
        })
    };
    // Waiting while the reader reads, then left with the rest.
    let result = run.wait(Some(Duration::from_secs(30))).unwrap();
    assert_eq!(reader.join().unwrap(), Pulled::Batch);
    assert_eq!(result.state, FinalState::Cancelled, "{result:?}");
    assert_eq!(result.cancel_kind.as_deref(), Some("reader_left"));
}

#[test]
fn budget_permits_come_back_when_the_end_is_handed_out_or_an_unread_run_finishes() {
    let client = Client::new(AgentSpec::new("codex"), Naming::Snake).unwrap();
    let budget = SharedBudget::new(1 << 20, 1).unwrap();
    // An await-only run nobody waits for: back when its process is done.
    let mut quiet = RunRequest::command(["true"]);
    quiet.budget = Some(budget.clone());
    let unread = client.start(quiet).unwrap();
    assert!(!unread.has_reader());
    let deadline = Instant::now() + Duration::from_secs(10);
    while budget.active() != 0 {
        assert!(Instant::now() < deadline, "the permit of a finished await-only run stays taken");
        std::thread::sleep(Duration::from_millis(10));
    }
    // An iterated run: back with the batch that holds its terminal, before any later pull.
    let mut iterated = RunRequest::command(["echo", "hi"]);
    iterated.budget = Some(budget.clone());
    iterated.read = ReadMode::Iterate;
    let run = client.start(iterated).unwrap();
    let mut batch = Vec::new();
    loop {
        batch.clear();
        assert_eq!(run.pull(&mut batch, BatchLimits::DEFAULT, Some(Duration::from_secs(10))), Pulled::Batch);
        if batch.iter().any(|d| matches!(d, Delivery::Item(e) if e.item.is_terminal())) {
            break;
        }
    }
    assert_eq!(budget.active(), 0);
    // A reader that leaves and keeps the handle: back when the process is done.
    let mut left = RunRequest::command(["sleep", "30"]);
    left.budget = Some(budget.clone());
    left.read = ReadMode::Iterate;
    left.kill_grace_ms = 100;
    let abandoned = client.start(left).unwrap();
    abandoned.leave();
    let deadline = Instant::now() + Duration::from_secs(10);
    while budget.active() != 0 {
        assert!(Instant::now() < deadline, "the permit of a run whose reader left stays taken");
        std::thread::sleep(Duration::from_millis(10));
    }
    drop((unread, run, abandoned));
}

#[test]
fn a_resumed_run_that_failed_before_naming_its_session_is_that_sessions_previous_status() {
    let scratch = Scratch::new();
    let mut spec = AgentSpec::new("claude");
    // `FAIL` set: the harness dies before it prints anything (no session id in its output).
    spec.bin = Some(scratch.script(&format!(
        "if [ -n \"$FAIL\" ]; then exit 1; fi\nexec cat '{}'",
        golden("claude", "s2-bash").display()
    )));
    let client = Client::new(spec, Naming::Snake).unwrap();
    let previous_status = |fail: bool| {
        let mut request = RunRequest::prompt("hi");
        request.hooks = true;
        if fail {
            request.env.insert("FAIL".into(), "1".into());
        }
        let run = start_iterated(&client, request);
        let first_hook = pull_all(&run).into_iter().find_map(|d| match d {
            Delivery::Hook(h) => Some(h),
            Delivery::Item(_) => None,
        });
        let hook = first_hook.expect("a first hook");
        (hook.event_type.clone(), hook.details.get("previous_status").and_then(|v| v.as_str()).map(str::to_string))
    };
    assert_eq!(previous_status(false), ("run.started".into(), None));
    assert_eq!(previous_status(true), ("run.resumed".into(), Some("completed".into())));
    // The failed run printed no session id, but it was that session's run.
    assert_eq!(previous_status(false), ("run.resumed".into(), Some("failed".into())));
    assert_eq!(previous_status(false), ("run.resumed".into(), Some("completed".into())));
}
