//! One example test per run-stream rule (decisions.md §1 §3 §4 §6, stream-semantics.md).

use std::collections::HashSet;
use std::sync::Arc;

use agentstream_core::stream::*;
use agentstream_core::{
    AgentState, Channel, LifecycleEvent, LifecycleReason, OutputEvent, SandboxState, SessionUpdate, TokenUsage,
    ToolCall, ToolCallStatus, ToolCallUpdate, ToolKind, UsageScope,
};
use serde_json::json;

const TS: &str = "2026-12-02T00:00:00.000Z";

fn stream(policy: Backpressure) -> (RunStream, ManualClock) {
    let clock = ManualClock::new();
    let s = RunStream::new("run_test", policy, Arc::new(clock.clone())).unwrap();
    (s, clock)
}

fn reading(policy: Backpressure) -> (RunStream, ManualClock) {
    let (mut s, c) = stream(policy);
    s.attach_reader().unwrap();
    (s, c)
}

fn msg(text: &str) -> StreamItem {
    StreamItem::Content(OutputEvent::new(SessionUpdate::message(text)))
}

fn tool_call(id: &str, name: &str, input: serde_json::Value) -> StreamItem {
    StreamItem::Content(OutputEvent::new(SessionUpdate::ToolCall(ToolCall {
        tool_call_id: id.into(),
        title: format!("{name} call"),
        tool_name: Some(name.into()),
        kind: ToolKind::Execute,
        status: ToolCallStatus::InProgress,
        raw_input: Some(input.into()),
        content: None,
        locations: None,
    })))
}

fn tool_done(id: &str) -> StreamItem {
    let mut u = ToolCallUpdate::new(id);
    u.status = Some(ToolCallStatus::Completed);
    StreamItem::Content(OutputEvent::new(SessionUpdate::ToolCallUpdate(u)))
}

fn lifecycle(reason: LifecycleReason) -> StreamItem {
    StreamItem::Lifecycle(LifecycleEvent {
        sandbox_id: None,
        sandbox: SandboxState::Running,
        agent: AgentState::Running,
        timestamp: TS.into(),
        browser: None,
        reason,
    })
}

fn drain(s: &mut RunStream) -> Vec<Envelope> {
    std::iter::from_fn(|| s.pop()).collect()
}

fn text_of(env: &Envelope) -> String {
    match &env.item {
        StreamItem::Content(ev) => match &ev.update {
            SessionUpdate::AgentMessageChunk { content } | SessionUpdate::AgentThoughtChunk { content } => {
                content.as_text().unwrap_or_default().to_string()
            }
            _ => String::new(),
        },
        StreamItem::Stdout(t) | StreamItem::Stderr(t) => t.clone(),
        StreamItem::Lifecycle(_) => String::new(),
    }
}

fn terminal_reason(env: &Envelope) -> LifecycleReason {
    assert!(env.is_terminal(), "{env:?}");
    env.item.as_lifecycle().unwrap().reason
}

// -- numbering ----------------------------------------------------------------------------

#[test]
fn one_gapless_sequence_across_the_four_channels_then_the_terminal() {
    let (mut s, _) = reading(Backpressure::default());
    let seqs = [
        s.post(lifecycle(LifecycleReason::RunStart)),
        s.post(StreamItem::Stdout("{\"type\":\"x\"}\n".into())),
        s.post(msg("Hi")),
        s.post(StreamItem::Stderr("warn".into())),
    ];
    assert_eq!(seqs, [Some(0), Some(1), Some(2), Some(3)]);
    let term = s.finish_at(RunOutcome::Completed, TS).unwrap();
    assert_eq!(term.sequence, 4);
    let got = drain(&mut s);
    assert_eq!(got.iter().map(|e| e.sequence).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
    assert_eq!(
        got.iter().map(|e| e.channel().name()).collect::<Vec<_>>(),
        ["lifecycle", "stdout", "content", "stderr", "lifecycle"]
    );
    assert_eq!(got[4], term);
    assert_eq!(terminal_reason(&term), LifecycleReason::RunComplete);
    assert_eq!(s.record().unwrap().last_sequence, Some(3));
    assert!(s.is_drained() && s.pop().is_none());
}

#[test]
fn a_reader_of_some_channels_gets_those_and_the_terminal_and_unread_items_close_the_tail() {
    // high_water 0: every delta merges into a same-kind tail, if it may.
    let (mut s, _) = reading(Backpressure::default().with_high_water(0));
    s.set_reader_channels(ChannelSet::of([Channel::Content]));
    assert_eq!(s.post(msg("a")), Some(0));
    assert_eq!(s.post(msg("b")), Some(1)); // merges into 0
    assert_eq!(s.post(StreamItem::Stdout("{}\n".into())), Some(2)); // numbered, not buffered
    assert_eq!(s.post(msg("c")), Some(3)); // may not merge: 2 lies between
    s.post_batch([Post::UnreadRaw, msg("d").into(), lifecycle(LifecycleReason::SandboxPause).into()]); // 4, 5, 6
    assert_eq!(s.pressure().buffered, 3);
    s.finish_at(RunOutcome::Completed, TS).unwrap(); // 7
    let got = drain(&mut s);
    let view: Vec<_> = got.iter().map(|e| (e.sequence, e.coalesced, text_of(e))).collect();
    assert_eq!(view, [(0, 1, "ab".into()), (3, 0, "c".into()), (5, 0, "d".into()), (7, 0, String::new())]);
    assert!(got[3].is_terminal(), "the terminal is delivered whatever the channels");
    let mut check = SequenceCheck::new();
    assert!(got.iter().all(|e| check.accept(e)));
    assert_eq!(check.missing(), 3, "the numbers of the unread items: 2, 4 and 6");
}

#[test]
fn await_only_numbers_and_discards() {
    let (mut s, clock) = stream(Backpressure::default().with_high_water(1));
    for i in 0..100 {
        assert_eq!(s.post(msg("x")), Some(i));
    }
    clock.advance(1000.0);
    assert_eq!(s.check_stall(), None, "await-only never stalls");
    let p = s.pressure();
    assert_eq!((p.buffered, p.peak, p.bytes, p.coalesced), (0, 0, 0, 0));
    assert!(s.pop().is_none());
    let term = s.finish_at(RunOutcome::Completed, TS).unwrap();
    assert_eq!(term.sequence, 100);
    assert!(s.pop().is_none() && s.is_drained());
}

#[test]
fn one_reader_attached_before_the_first_item() {
    let (mut s, _) = reading(Backpressure::default());
    assert_eq!(s.attach_reader(), Err(StreamError::ReaderAlreadyAttached));
    let (mut late, _) = stream(Backpressure::default());
    late.post(msg("x"));
    assert_eq!(late.attach_reader(), Err(StreamError::ReaderAttachedLate { next_sequence: 1 }));
    s.detach_reader();
    assert_eq!(s.attach_reader(), Err(StreamError::ReaderAlreadyAttached), "no replay");
}

#[test]
fn invalid_policy_is_rejected_at_construction() {
    let r = RunStream::new("r", Backpressure::default().with_byte_budget(0), Arc::new(ManualClock::new()));
    assert!(matches!(r, Err(StreamError::InvalidBackpressure { field: "byte_budget", .. })));
}

// -- the terminal -------------------------------------------------------------------------

#[test]
fn terminal_comes_after_everything_buffered() {
    let (mut s, _) = reading(Backpressure::default());
    s.post(msg("a"));
    s.post(msg("b"));
    s.finish_at(RunOutcome::failed("exit_status", "status 1"), TS);
    let got = drain(&mut s);
    assert_eq!(got.len(), 3);
    assert_eq!(terminal_reason(&got[2]), LifecycleReason::RunFailed);
    assert_eq!(got[2].item.as_lifecycle().unwrap().agent, AgentState::Error);
    assert_eq!(got[2].sequence, 2);
}

#[test]
fn post_after_terminal_is_dropped_and_counted_and_terminals_cannot_be_posted() {
    let (mut s, _) = reading(Backpressure::default());
    s.post(msg("a"));
    assert_eq!(s.post(lifecycle(LifecycleReason::RunComplete)), None, "a posted terminal is refused");
    assert_eq!(s.pressure().refused_terminals, 1);
    s.finish_at(RunOutcome::Completed, TS).unwrap();
    assert_eq!(s.finish_at(RunOutcome::Completed, TS), None, "exactly one terminal");
    assert_eq!(s.post(msg("late")), None);
    assert_eq!(s.post(lifecycle(LifecycleReason::RunComplete)), None);
    assert_eq!(s.pressure().dropped_after_terminal, 2);
    let got = drain(&mut s);
    assert_eq!(got.len(), 2);
    assert_eq!(got.iter().filter(|e| e.is_terminal()).count(), 1);
    assert!(got.last().unwrap().is_terminal());
}

#[test]
fn command_runs_end_with_command_reasons() {
    let (s, _) = reading(Backpressure::default());
    let mut s = s.with_kind(RunKind::Command);
    s.cancel(CancelReason::Timeout);
    let t = s.finish_at(RunOutcome::Completed, TS).unwrap();
    assert_eq!(terminal_reason(&t), LifecycleReason::CommandInterrupted);
    let built = s.finish(RunOutcome::Completed, |_| unreachable!("finished already"));
    assert!(built.is_none());
}

#[test]
fn the_builder_makes_the_event_but_the_stream_picks_the_reason() {
    let (mut s, _) = reading(Backpressure::default());
    s.post(msg("x"));
    let t = s
        .finish(RunOutcome::Completed, |ctx| {
            assert_eq!((ctx.sequence, ctx.last_sequence, ctx.reason), (1, Some(0), LifecycleReason::RunComplete));
            LifecycleEvent {
                sandbox_id: Some("sb-1".into()),
                sandbox: SandboxState::Stopped,
                agent: AgentState::Idle,
                timestamp: TS.into(),
                browser: None,
                reason: LifecycleReason::SandboxBoot, // overridden
            }
        })
        .unwrap();
    let ev = t.item.as_lifecycle().unwrap();
    assert_eq!(
        (ev.reason, ev.sandbox_id.as_deref(), ev.sandbox),
        (LifecycleReason::RunComplete, Some("sb-1"), SandboxState::Stopped)
    );
}

#[test]
fn a_run_ending_mid_line_or_mid_tool_call_is_failed() {
    let (mut s, _) = reading(Backpressure::default());
    s.post(tool_call("t1", "Bash", json!({"command": "ls"})));
    let end = RunEnd { exit_code: Some(0), open_tool_calls: s.open_tool_call_count(), ..Default::default() };
    let t = s.finish_at(derive_outcome(&end), TS).unwrap();
    assert_eq!(terminal_reason(&t), LifecycleReason::RunFailed);
    let end = RunEnd { exit_code: Some(0), truncated_mid_line: true, ..Default::default() };
    assert!(matches!(derive_outcome(&end), RunOutcome::Failed { .. }));
}

// -- coalescing ---------------------------------------------------------------------------

#[test]
fn high_water_zero_merges_from_the_first_delta() {
    let (mut s, _) = reading(Backpressure::default().with_high_water(0));
    let words: Vec<String> = (0..200).map(|i| format!("w{i} ")).collect();
    for w in &words {
        s.post(msg(w));
    }
    s.finish_at(RunOutcome::Completed, TS);
    let got = drain(&mut s);
    assert_eq!(got.len(), 2, "one delta carrying the whole answer, then the terminal");
    assert_eq!(text_of(&got[0]), words.concat());
    assert_eq!((got[0].sequence, got[0].coalesced), (0, 199));
    assert_eq!(got[1].sequence, 200);
    assert_eq!(s.pressure().coalesced, 199);
    let mut check = SequenceCheck::new();
    assert!(got.iter().all(|e| check.accept(e)));
    assert_eq!(check.missing(), 0, "merged numbers are not gaps");
    assert!(got[0].to_json().ends_with(",\"coalesced\":199}"));
}

#[test]
fn only_the_tail_merges_and_only_deltas() {
    let (mut s, _) = reading(Backpressure::default().with_high_water(1));
    s.post(msg("a")); // 0: appended (below the mark)
    s.post(msg("b")); // 1: merged into 0
    s.post(tool_call("t", "Read", json!({}))); // 2: never merged
    s.post(msg("c")); // 3: tail is a tool call: appended
    s.post(StreamItem::Stdout("o1\n".into())); // 4: tail is a message: appended
    s.post(StreamItem::Stdout("o2\n".into())); // 5: merged into 4
    s.post(StreamItem::Stderr("e".into())); // 6: appended
    s.post(tool_done("t")); // 7
    let got = drain(&mut s);
    let shape: Vec<(u64, u64, String)> = got.iter().map(|e| (e.sequence, e.coalesced, text_of(e))).collect();
    assert_eq!(
        shape,
        [
            (0, 1, "ab".to_string()),
            (2, 0, String::new()),
            (3, 0, "c".into()),
            (4, 1, "o1\no2\n".into()),
            (6, 0, "e".into()),
            (7, 0, String::new()),
        ]
    );
    assert_eq!(s.pressure().peak, 6, "non-deltas push past high_water by design");
}

#[test]
fn merging_keeps_attribution() {
    let (mut s, _) = reading(Backpressure::default().with_high_water(0));
    for (mid, t) in [("m1", "a"), ("m1", "b"), ("m2", "c"), ("m2", "d")] {
        let mut ev = OutputEvent::new(SessionUpdate::message(t));
        ev.message_id = Some(mid.into());
        s.post(StreamItem::Content(ev));
    }
    let got = drain(&mut s);
    let shape: Vec<(Option<&str>, String)> =
        got.iter().map(|e| (e.item.as_content().unwrap().message_id.as_deref(), text_of(e))).collect();
    assert_eq!(shape, [(Some("m1"), "ab".into()), (Some("m2"), "cd".into())]);
}

#[test]
fn byte_budget_is_a_mark_too() {
    let (mut s, _) = reading(Backpressure::default().with_byte_budget(100));
    s.post(StreamItem::Stdout("x".repeat(150))); // over the byte mark after this
    assert_eq!(s.pressure().oversize, 1);
    s.post(StreamItem::Stdout("y".into())); // merges although only 1 item waits
    assert_eq!(s.pressure().buffered, 1);
    assert_eq!(s.pressure().coalesced, 1);
}

#[test]
fn an_oversize_tool_call_is_admitted_and_counted() {
    let (mut s, _) = reading(Backpressure::default().with_byte_budget(2048).with_high_water(1));
    s.post(msg("before"));
    s.post(tool_call("big", "Write", json!({"content": "z".repeat(25_000)})));
    s.post(tool_done("big"));
    s.finish_at(RunOutcome::Completed, TS);
    let p = s.pressure();
    assert_eq!(p.oversize, 1);
    assert!(p.peak_bytes > 25_000);
    let got = drain(&mut s);
    assert_eq!(got.len(), 4, "start and finish both arrive");
    assert_eq!(s.pressure().bytes, 0);
}

#[test]
fn an_unpressured_run_reports_nothing() {
    let (mut s, _) = reading(Backpressure::default());
    for i in 0..10 {
        s.post(msg(&i.to_string()));
        s.pop();
    }
    let p = s.pressure();
    assert_eq!((p.coalesced, p.oversize, p.stalled, p.buffered, p.bytes), (0, 0, false, 0, 0));
}

#[test]
fn byte_accounting_is_exact() {
    let (mut s, _) = reading(Backpressure::default().with_high_water(2));
    for t in ["a\"", "\n\t\u{1}", "é€😀", "\\"] {
        s.post(msg(t));
        s.post(StreamItem::Stderr(t.into()));
    }
    let mut bytes = s.pressure().bytes;
    while let Some(e) = s.pop() {
        let now = s.pressure().bytes;
        assert_eq!(bytes - now, e.item.event_json().len());
        bytes = now;
    }
    assert_eq!(bytes, 0);
}

/// Pins a limit of tail-only coalescing (decisions.md §3): a harness whose stdout lines each
/// decode to one content event interleaves `stdout, content, stdout, content`, so under
/// pressure no tail is ever the same kind and nothing merges. Items queue one by one until the
/// reader reads or the stall clock cancels the run. Reported to the lead; if the contract
/// changes (merge past other-kind deltas), this test changes with it.
#[test]
fn interleaved_stdout_and_content_do_not_merge_under_tail_only_coalescing() {
    let (mut s, _) = reading(Backpressure::default().with_high_water(4));
    for i in 0..100 {
        s.post(StreamItem::Stdout(format!("{{\"n\":{i}}}\n")));
        s.post(msg("x"));
    }
    let p = s.pressure();
    assert_eq!((p.buffered, p.coalesced), (200, 0));
}

// -- the stall clock ----------------------------------------------------------------------

#[test]
fn a_quiet_run_is_not_stalled() {
    let (mut s, clock) = reading(Backpressure::default());
    clock.advance(120.0); // the reader waits on an empty buffer
    assert_eq!(s.check_stall(), None);
    assert_eq!(s.unread_age(), None);
    assert_eq!(s.stall_deadline(), None);
    s.post(msg("finally")); // the reference would call this stalled (120 s since the last read)
    assert_eq!(s.unread_age(), Some(0.0));
    assert!(!s.pressure().stalled && !s.token().is_cancelled());
    assert_eq!(s.stall_deadline(), Some(150.0));
}

#[test]
fn a_reader_that_stops_reading_stops_the_run_once() {
    let (mut s, clock) = reading(Backpressure::default());
    s.post(msg("one"));
    s.pop();
    s.post(tool_call("t1", "Bash", json!({"command": "sleep 120"})));
    clock.advance(30.0);
    assert_eq!(s.check_stall(), None, "exactly stall_seconds is not past it");
    clock.advance(0.5);
    assert_eq!(s.check_stall(), Some(CancelReason::Stalled));
    assert_eq!(s.check_stall(), None, "once");
    assert!(s.pressure().stalled);
    assert_eq!(s.token().reason(), Some(CancelReason::Stalled));
    assert!(s.token().reason().unwrap().to_string().contains("stopped reading"));
    // The harness is stopped; its last lines still arrive, then the terminal.
    s.post(StreamItem::Stderr("terminated".into()));
    let end = RunEnd { cancel: s.cancel_reason(), signal: Some(15), open_tool_calls: 1, ..Default::default() };
    let t = s.finish_at(derive_outcome(&end), TS).unwrap();
    assert_eq!(terminal_reason(&t), LifecycleReason::RunInterrupted);
    let rec = s.record().unwrap();
    assert_eq!(rec.outcome, RunOutcome::Cancelled { reason: CancelReason::Stalled });
    assert_eq!(rec.open_tool_calls.len(), 1);
    let facts = rec.terminal_facts();
    assert_eq!(facts.last_sequence, 2);
    assert!(facts.cancel_reason.unwrap().contains("stopped reading"));
}

#[test]
fn a_reader_back_within_the_window_is_not_stalled() {
    let (mut s, clock) = reading(Backpressure::default());
    for _ in 0..10 {
        s.post(msg("x"));
        s.post(msg("y"));
        clock.advance(10.0);
        assert_eq!(s.check_stall(), None);
        s.pop(); // one read every 20 s: slow (the buffer never empties) but back within 30 s
        clock.advance(10.0);
        assert_eq!(s.check_stall(), None);
    }
    assert_eq!(s.pressure().buffered, 10);
    clock.advance(20.5); // the last read was 10 s before the loop ended
    assert_eq!(s.check_stall(), Some(CancelReason::Stalled), "30.5 s since the last read");
}

#[test]
fn a_slow_reader_that_keeps_coming_back_completes() {
    let (mut s, clock) = reading(Backpressure::default());
    for _ in 0..10 {
        s.post(msg("x"));
        clock.advance(25.0);
        assert_eq!(s.check_stall(), None);
        s.pop();
    }
    s.finish_at(RunOutcome::Completed, TS);
    assert!(!s.pressure().stalled);
    assert_eq!(s.record().unwrap().outcome, RunOutcome::Completed);
}

#[test]
fn stall_is_also_checked_at_admission() {
    let (mut s, clock) = reading(Backpressure::default().with_stall_seconds(5.0));
    s.post(msg("unread"));
    clock.advance(6.0);
    s.post(msg("more"));
    assert!(s.pressure().stalled);
    assert_eq!(s.cancel_reason(), Some(CancelReason::Stalled));
}

#[test]
fn a_flood_that_only_merges_is_caught_by_the_timer() {
    let (mut s, clock) = reading(Backpressure::default().with_high_water(0));
    s.post(msg("a"));
    assert_eq!(s.stall_deadline(), Some(30.0));
    clock.advance(31.0);
    s.post(msg("b")); // merged: admission does not read the clock
    assert!(!s.pressure().stalled);
    assert_eq!(s.check_stall(), Some(CancelReason::Stalled), "the timer notices");
    assert_eq!(s.stall_deadline(), None);
}

#[test]
fn no_stall_after_the_outcome_is_recorded() {
    let (mut s, clock) = reading(Backpressure::default());
    s.post(msg("x"));
    s.settle(RunOutcome::Completed);
    clock.advance(100.0);
    assert_eq!(s.check_stall(), None);
    s.finish_at(RunOutcome::failed("ignored", "settled already"), TS);
    assert_eq!(s.record().unwrap().outcome, RunOutcome::Completed);
}

// -- cancellation -------------------------------------------------------------------------

#[test]
fn cancel_before_completion_wins() {
    let (mut s, _) = reading(Backpressure::default());
    s.post(msg("partial"));
    assert!(s.cancel(CancelReason::caller("the client pressed stop")));
    // The process then exits 0 anyway: the cancel was recorded first.
    let t = s.finish_at(RunOutcome::Completed, TS).unwrap();
    assert_eq!(terminal_reason(&t), LifecycleReason::RunInterrupted);
    assert_eq!(t.item.as_lifecycle().unwrap().agent, AgentState::Interrupted);
    assert_eq!(
        s.record().unwrap().outcome,
        RunOutcome::Cancelled { reason: CancelReason::caller("the client pressed stop") }
    );
}

#[test]
fn completion_before_cancel_wins() {
    let (mut s, _) = reading(Backpressure::default());
    s.post(msg("whole answer"));
    s.finish_at(RunOutcome::Completed, TS);
    assert!(!s.cancel(CancelReason::caller("too late")));
    assert!(!s.token().is_cancelled());
    assert_eq!(s.record().unwrap().outcome, RunOutcome::Completed);
    assert_eq!(s.cancel_reason(), None);
    let got = drain(&mut s);
    assert_eq!(got.iter().filter(|e| e.is_terminal()).count(), 1);
    assert_eq!(terminal_reason(got.last().unwrap()), LifecycleReason::RunComplete);
}

#[test]
fn a_callers_token_cancelled_after_the_process_ended_by_itself_changes_nothing() {
    // The caller's token is cancelled directly (not through RunStream::cancel) in the window
    // between the process's exit and the outcome being recorded: the run still completed.
    let (mut s, _) = reading(Backpressure::default());
    s.post(msg("whole answer"));
    s.ended_on_its_own();
    s.token().cancel(CancelReason::caller("the caller's token, too late"));
    assert_eq!(s.cancel_reason(), None);
    assert!(!s.is_cancelled());
    let t = s.finish_at(RunOutcome::Completed, TS).unwrap();
    assert_eq!(terminal_reason(&t), LifecycleReason::RunComplete);
    assert_eq!(s.record().unwrap().outcome, RunOutcome::Completed);
    // A cancellation that came before the end still stands.
    let (mut s, _) = reading(Backpressure::default());
    s.token().cancel(CancelReason::caller("in time"));
    s.ended_on_its_own();
    let t = s.finish_at(RunOutcome::Completed, TS).unwrap();
    assert_eq!(terminal_reason(&t), LifecycleReason::RunInterrupted);
}

#[test]
fn settle_then_cancel_then_finish_keeps_the_settled_outcome() {
    let (mut s, _) = reading(Backpressure::default());
    s.settle(RunOutcome::Completed);
    assert!(!s.cancel(CancelReason::Timeout));
    s.post(StreamItem::Stdout("trailing line\n".into()));
    let t = s.finish_at(RunOutcome::Completed, TS).unwrap();
    assert_eq!(terminal_reason(&t), LifecycleReason::RunComplete);
    assert_eq!(t.sequence, 1);
}

#[test]
fn double_cancel_keeps_the_first_reason() {
    let (mut s, _) = reading(Backpressure::default());
    assert!(s.cancel(CancelReason::caller("first")));
    assert!(!s.cancel(CancelReason::caller("second")));
    assert!(!s.cancel(CancelReason::Timeout));
    s.finish_at(RunOutcome::Cancelled { reason: CancelReason::caller("third") }, TS);
    assert_eq!(s.record().unwrap().outcome, RunOutcome::Cancelled { reason: CancelReason::caller("first") });
}

#[test]
fn the_callers_token_is_the_same_path() {
    let token = CancellationToken::new();
    let (s, _) = reading(Backpressure::default());
    let mut s = s.with_token(token.clone());
    s.post(msg("x"));
    assert!(token.cancel(CancelReason::caller("from another thread")));
    assert!(s.is_cancelled());
    assert!(!s.cancel(CancelReason::Timeout));
    let t = s.finish_at(RunOutcome::Completed, TS).unwrap();
    assert_eq!(terminal_reason(&t), LifecycleReason::RunInterrupted);
}

#[test]
fn a_timeout_is_a_stop_in_the_hook_facts() {
    let (mut s, _) = stream(Backpressure::default());
    s.cancel(CancelReason::Timeout);
    s.finish_at(RunOutcome::Completed, TS);
    assert!(s.terminal_facts().unwrap().stopped_by_timeout);
}

#[test]
fn a_reader_leaving_cancels_a_running_run_only() {
    let (mut s, _) = reading(Backpressure::default());
    s.post(msg("x"));
    assert!(s.detach_reader());
    assert_eq!(s.cancel_reason(), Some(CancelReason::ReaderLeft));
    assert_eq!(s.pressure().buffered, 0);
    assert_eq!(s.post(msg("still numbered")), Some(1));
    assert!(s.pop().is_none());
    let t = s.finish_at(RunOutcome::Completed, TS).unwrap();
    assert_eq!((t.sequence, terminal_reason(&t)), (2, LifecycleReason::RunInterrupted));

    let (mut done, _) = reading(Backpressure::default());
    done.finish_at(RunOutcome::Completed, TS);
    assert!(!done.detach_reader(), "leaving after completion cancels nothing");
    assert_eq!(done.record().unwrap().outcome, RunOutcome::Completed);
}

#[test]
fn tool_calls_in_flight_at_cancellation() {
    let (mut s, _) = reading(Backpressure::default());
    s.post(tool_call("t1", "Bash", json!({"command": "rm -rf build"})));
    s.post(tool_call("t2", "Read", json!({"path": "a"})));
    s.post(tool_call("t3", "Grep", json!({"pattern": "x"})));
    s.post(tool_done("t3"));
    s.cancel(CancelReason::by_caller());
    s.finish_at(RunOutcome::Completed, TS);
    let rec = s.record().unwrap();
    let idempotent: HashSet<String> = ["Read".to_string()].into();
    let fates: Vec<(&str, InterruptedToolCall)> = classify_interrupted(&rec.open_tool_calls, &idempotent)
        .into_iter()
        .map(|(c, f)| (c.tool_call_id.as_str(), f))
        .collect();
    assert_eq!(fates, [("t1", InterruptedToolCall::Indeterminate), ("t2", InterruptedToolCall::FailedRetryable)]);
    assert_eq!(rec.open_tool_calls[0].sequence, 0);
}

// -- usage, redaction, wire ---------------------------------------------------------------

fn usage(scope: UsageScope, mid: Option<&str>, prompt: u64, cost: Option<f64>) -> StreamItem {
    let mut ev = OutputEvent::new(SessionUpdate::Usage {
        scope,
        usage: TokenUsage { prompt_tokens: Some(prompt), cost_usd: cost, ..Default::default() },
    });
    ev.message_id = mid.map(Into::into);
    StreamItem::Content(ev)
}

#[test]
fn usage_so_far_is_on_the_record() {
    let (mut s, _) = stream(Backpressure::default());
    s.post(usage(UsageScope::Call, Some("m1"), 10, None));
    s.post(usage(UsageScope::Call, Some("m1"), 12, None));
    s.post(usage(UsageScope::Call, Some("m2"), 30, Some(0.5)));
    assert_eq!(s.usage().prompt_tokens, Some(42));
    s.cancel(CancelReason::by_caller());
    s.finish_at(RunOutcome::Completed, TS);
    let rec = s.record().unwrap();
    assert_eq!((rec.usage.prompt_tokens, rec.usage.cost_usd), (Some(42), Some(0.5)));
    assert_eq!(s.terminal_facts().unwrap().usage, Some(json!({"promptTokens": 42, "costUsd": 0.5})));

    let (mut r, _) = stream(Backpressure::default());
    r.post(usage(UsageScope::Call, Some("m1"), 10, None));
    r.post(usage(UsageScope::Run, None, 99, None));
    assert_eq!(r.usage().prompt_tokens, Some(99), "the harness's run total is preferred");
}

#[test]
fn tool_inputs_are_redacted_before_numbering_and_answers_never() {
    let (mut s, _) = reading(Backpressure::default());
    s.post(tool_call("t1", "Bash", json!({"token": "sk-live-01234567890abcdef"})));
    s.post(msg("write to ada@example.com"));
    s.post(msg("your key sk-live-01234567890abcdef is set"));
    let got = drain(&mut s);
    let wire = got[0].to_json();
    assert!(!wire.contains("sk-live") && wire.contains("[redacted]"), "{wire}");
    assert_eq!(text_of(&got[1]), "write to ada@example.com");
    assert_eq!(text_of(&got[2]), "your key sk-live-01234567890abcdef is set");

    let (s2, _) = reading(Backpressure::default());
    let mut s2 = s2.with_redaction(agentstream_core::RedactionPolicy::disabled());
    s2.post(tool_call("t1", "Bash", json!({"token": "sk-live-01234567890abcdef"})));
    assert!(s2.pop().unwrap().to_json().contains("sk-live-01234567890abcdef"));
}

#[test]
fn every_delivered_envelope_round_trips_through_the_tolerant_decoder() {
    let (mut s, _) = reading(Backpressure::default().with_high_water(2));
    s.post(lifecycle(LifecycleReason::RunStart));
    for i in 0..5 {
        s.post(msg(&format!("m{i}")));
    }
    s.post(StreamItem::Stdout("raw\n".into()));
    s.post(StreamItem::Stderr("err".into()));
    s.post(usage(UsageScope::Call, Some("m"), 1, None));
    s.finish_at(RunOutcome::Completed, TS);
    let got = drain(&mut s);
    assert!(got.iter().any(|e| e.coalesced > 0));
    for e in got {
        assert_eq!(decode_envelope(&e.to_json()).unwrap(), Some(e.clone()));
        let strict: Envelope = serde_json::from_str(&e.to_json()).unwrap();
        assert_eq!(strict, e);
    }
}

#[test]
fn shared_budget_sizes_every_run() {
    let budget = SharedBudget::new(64 * 1024 * 1024, 200).unwrap();
    let permit = budget.try_acquire().unwrap();
    let s = RunStream::new(new_run_id(), permit.backpressure(), Arc::new(SystemClock::new())).unwrap();
    assert_eq!(s.backpressure().byte_budget, 335_544);
    assert_eq!(Backpressure::shared(1, 0), Err(StreamError::NoStreams));
}

#[test]
fn the_stream_and_its_token_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<RunStream>();
    send_sync::<CancellationToken>();
    send_sync::<Envelope>();
    send_sync::<SharedBudget>();
}
