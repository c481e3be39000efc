//! The driving task of one operation: moves bytes and time between the child process and the
//! sans-IO core (decoder, run stream). All decisions about events live in the core.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;

use super::argv::AgentConfig;
use super::handle::{Held, Posts, RunHandle, Shared};
use super::harness::Harness;
use super::process::{ensure_supported, exit_parts, signal_group, signals};
use super::session::{CommandOptions, RunOptions, SessionState};
use super::{FinalState, RunResult};
use crate::answer::AnswerTracker;
use crate::channel::Channel;
use crate::decode::{Decoder, DecoderOptions};
use crate::error::{Error, ErrorKind};
use crate::event::OutputEvent;
use crate::framing::{Frame, LineAlignedText, LineFramer};
use crate::hooks::HookDeriver;
use crate::lifecycle::{AgentState, LifecycleEvent, LifecycleReason, SandboxState};
use crate::redact::RedactionPolicy;
use crate::stream::{
    Backpressure, CancelReason, CancellationToken, ChannelSet, RunEnd, RunKind, RunOutcome, RunStream, StreamItem,
    SystemClock, derive_outcome, new_run_id,
};

pub(crate) enum Operation {
    Harness { config: Arc<AgentConfig>, options: RunOptions },
    Command { config: Arc<AgentConfig>, options: CommandOptions },
}

struct Plan {
    program: std::ffi::OsString,
    args: Vec<String>,
    cwd: Option<std::path::PathBuf>,
    env: Vec<(String, String)>,
    timeout: Option<Duration>,
    backpressure: Backpressure,
    hooks: bool,
    attach_reader: bool,
    channels: ChannelSet,
    background: bool,
    kill_grace: Duration,
    idempotent: Vec<String>,
    cancel_token: Option<CancellationToken>,
    /// The previous run's status, when this run continues a harness session.
    resumed: Option<String>,
    decoder: Option<Decoder>,
    /// The longest raw stdout line of a command (a harness's decoder has its own).
    max_line_bytes: usize,
    agent_id: String,
    /// The posts of one stdout chunk (kept to reuse its allocation).
    batch: Posts,
}

fn plan(op: Operation) -> Plan {
    match op {
        Operation::Harness { config, options } => Plan {
            program: config.program(),
            args: config.args_resuming(&options.prompt, options.resume.as_ref().map(|r| r.session_id.as_str())),
            cwd: config.cwd.clone(),
            env: config.env.clone(),
            timeout: earliest(options.timeout, options.deadline),
            backpressure: options.backpressure,
            hooks: options.hooks,
            attach_reader: options.attach_reader,
            channels: options.channels,
            background: options.background,
            kill_grace: options.kill_grace,
            idempotent: options.idempotent_tools.into_iter().collect(),
            cancel_token: options.cancel_token,
            resumed: options.resume.map(|r| r.previous_status),
            decoder: Some(Decoder::with_options(
                config.agent,
                DecoderOptions::default()
                    .with_max_line_bytes(options.max_line_bytes)
                    .with_redaction(RedactionPolicy { enabled: options.redact }),
            )),
            max_line_bytes: options.max_line_bytes,
            agent_id: config.agent_id(),
            batch: Posts::with_capacity(BATCH + 8),
        },
        Operation::Command { config, options } => {
            let mut env = config.env.clone();
            env.extend(options.env);
            Plan {
                program: options.argv[0].clone().into(),
                args: options.argv[1..].to_vec(),
                cwd: options.cwd.or_else(|| config.cwd.clone()),
                env,
                timeout: earliest(options.timeout, options.deadline),
                backpressure: options.backpressure,
                hooks: options.hooks,
                attach_reader: options.attach_reader,
                channels: options.channels,
                background: options.background,
                kill_grace: options.kill_grace,
                idempotent: Vec::new(),
                cancel_token: options.cancel_token,
                resumed: None,
                decoder: None,
                max_line_bytes: options.max_line_bytes,
                agent_id: config.agent_id(),
                batch: Posts::with_capacity(BATCH + 8),
            }
        }
    }
}

/// A missing working directory is reported as such: spawning would fail with "not found",
/// which reads as if the harness were missing.
fn check_cwd(cwd: Option<&std::path::Path>) -> Result<(), Error> {
    let Some(cwd) = cwd else { return Ok(()) };
    match std::fs::metadata(cwd) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(Error::new(
            ErrorKind::SpawnFailed,
            format!("the working directory {} is not a directory", cwd.display()),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(Error::new(ErrorKind::SpawnFailed, format!("the working directory {} does not exist", cwd.display())))
        }
        Err(e) => Err(Error::new(
            ErrorKind::SpawnFailed,
            format!("the working directory {} cannot be used: {e}", cwd.display()),
        )),
    }
}

/// The sooner of a time limit and a deadline, as a time limit from now (a deadline already
/// past stops the run at once).
fn earliest(timeout: Option<Duration>, deadline: Option<Instant>) -> Option<Duration> {
    let until_deadline = deadline.map(|d| d.saturating_duration_since(Instant::now()));
    match (timeout, until_deadline) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn lifecycle(reason: LifecycleReason, sandbox: SandboxState, agent: AgentState) -> LifecycleEvent {
    LifecycleEvent::local(reason, sandbox, agent, crate::time::now_iso8601())
}

/// Spawn the process and the task that drives it. The session's first operation announces the
/// local environment first (`sandbox_ready`), then `run_start` / `command_start`.
pub(crate) fn start(
    op: Operation,
    session: Arc<Mutex<SessionState>>,
    announce_ready: bool,
) -> Result<RunHandle, Error> {
    ensure_supported()?;
    let started_at = Instant::now();
    let plan = plan(op);
    check_cwd(plan.cwd.as_deref())?;
    let command_run = plan.decoder.is_none();
    let run_id = new_run_id();
    let kind = match (command_run, plan.background) {
        (false, false) => RunKind::Run,
        (false, true) => RunKind::BackgroundRun,
        (true, false) => RunKind::Command,
        (true, true) => RunKind::BackgroundCommand,
    };
    // A caller's token is the run's token: its cancel is the run's cancel (one path).
    let token = plan.cancel_token.clone().unwrap_or_default();
    let mut stream = RunStream::new(run_id.clone(), plan.backpressure, Arc::new(SystemClock::new()))
        .map_err(|e| Error::new(ErrorKind::InvalidArgument, format!("invalid backpressure: {e}")))?
        .with_kind(kind)
        // The decoder masks tool inputs (per the run's option) where it emits them.
        .with_redaction(RedactionPolicy::disabled())
        .with_token(token.clone());
    let channels = reader_channels(plan.channels, plan.hooks);
    stream.set_reader_channels(channels);
    if plan.attach_reader {
        stream.attach_reader().map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))?;
    }
    let shared = Arc::new(Shared {
        run_id: run_id.clone(),
        stream: Mutex::new(stream),
        channels: std::sync::atomic::AtomicU8::new(channels.bits()),
        hooks: plan.hooks,
        readable: Condvar::new(),
        sleepers: std::sync::atomic::AtomicUsize::new(0),
        readable_async: tokio::sync::Notify::new(),
        cancel: token,
        cancel_async: tokio::sync::Notify::new(),
        room_async: tokio::sync::Notify::new(),
        kill_now: AtomicBool::new(false),
        pgid: AtomicI32::new(0),
        result: Mutex::new(None),
        done: Condvar::new(),
        done_async: tokio::sync::Notify::new(),
        finished: AtomicBool::new(false),
        started_in: std::process::id(),
        held_until_finished: Mutex::new(Held::default()),
        read_to_end: AtomicBool::new(false),
    });
    // A caller's token may be cancelled from anywhere: wake the driver when it is (for as long
    // as the run is there: a token that outlives the run keeps nothing of it).
    shared.cancel.on_cancel_for(&shared, |shared| shared.cancel_async.notify_one());
    let deriver = plan.hooks.then(|| {
        let deriver =
            HookDeriver::new(run_id.clone(), plan.agent_id.clone()).with_idempotent_tools(plan.idempotent.clone());
        match &plan.resumed {
            Some(previous) => deriver.resuming(previous.clone()),
            None => deriver,
        }
    });
    let handle = RunHandle::new(shared.clone(), deriver);

    // Each operation is driven by its own thread and single-threaded runtime: the task then never
    // migrates between the shared runtime's workers (each move left the decoder's working set in
    // the other core's cache), and concurrent runs decode in parallel. The child's pipes belong
    // to this runtime, so it is entered to spawn.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::new(ErrorKind::SpawnFailed, format!("cannot start the runner: {e}")))?;
    let child = {
        let _enter = rt.enter();
        Harness::spawn(&plan.program, &plan.args, plan.cwd.as_deref(), &plan.env)
    };
    let child = match child {
        Ok(child) => child,
        Err(e) => {
            // Dropping a runtime blocks, which panics when the caller is itself on a runtime (an
            // async server starting a run): let this one go without waiting (it has no task).
            rt.shutdown_background();
            return Err(e);
        }
    };
    shared.pgid.store(child.pid, Ordering::SeqCst);
    // The caller holds the session lock (it claimed the session) and marks it running.
    if announce_ready {
        shared.post(StreamItem::Lifecycle(lifecycle(
            LifecycleReason::SandboxReady,
            SandboxState::Ready,
            AgentState::Idle,
        )));
    }
    shared.post(StreamItem::Lifecycle(lifecycle(kind.start_reason(), SandboxState::Running, AgentState::Running)));
    let (driver_shared, driver_session) = (shared.clone(), session.clone());
    std::thread::Builder::new()
        .name("agentstream-run".into())
        .spawn(move || {
            let driven = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                rt.block_on(drive(driver_shared, plan, child, driver_session))
            }));
            // A bug that panics the driving task must not leave readers and waiters hanging
            // forever: the run ends as failed (internal error) with its terminal item.
            if driven.is_err() {
                end_after_driver_panic(&shared, &session, started_at);
            }
        })
        // Not started: the closure (and with it the child, killed on drop) is gone.
        .map_err(|e| Error::new(ErrorKind::SpawnFailed, format!("cannot start the runner thread: {e}")))?;
    Ok(handle)
}

/// Finish a run whose driving task panicked: terminal `run_failed`, a failed result.
fn end_after_driver_panic(shared: &Shared, session: &Mutex<SessionState>, started: Instant) {
    shared.stream.clear_poison();
    shared.result.clear_poison();
    session.clear_poison();
    signal_group(shared.pgid.load(Ordering::SeqCst), signals::KILL);
    let detail = "the agentstream runner failed internally (a bug: please report it); the harness was killed";
    // Locked until the result is stored, as at a normal end (see `drive`).
    let mut stream = shared.stream.lock().unwrap_or_else(|e| e.into_inner());
    let (record, pressure) = {
        stream.finish(RunOutcome::failed("internal", detail), |ctx| ctx.default_event(crate::time::now_iso8601()));
        (stream.record().cloned(), stream.pressure())
    };
    if let Ok(mut st) = session.lock() {
        st.agent = AgentState::Error;
        if st.sandbox != SandboxState::Stopped {
            st.sandbox = SandboxState::Ready;
        }
        st.paused = false;
    }
    let result = RunResult {
        run_id: shared.run_id.clone(),
        state: FinalState::Failed,
        exit_code: None,
        signal: None,
        session_id: None,
        usage: record.as_ref().map(|r| r.usage.clone()).unwrap_or_default(),
        final_text: None,
        error: Some(detail.to_string()),
        cancel_reason: None,
        cancel_kind: None,
        pressure,
        stats: Default::default(),
        last_sequence: record.map(|r| r.terminal_sequence).unwrap_or(0),
        diagnostics: Vec::new(),
        duration_ms: started.elapsed().as_millis() as u64,
        handler_errors: 0,
    };
    Held::release(&shared.held_until_finished);
    let mut slot = shared.result.lock().unwrap_or_else(|e| e.into_inner());
    if slot.is_none() {
        *slot = Some(result);
    }
    drop(slot);
    shared.pgid.store(0, Ordering::SeqCst);
    shared.finished.store(true, Ordering::SeqCst);
    drop(stream);
    shared.done.notify_all();
    shared.done_async.notify_waiters();
    shared.wake_readers();
}

/// What the result needs beyond the stream's own record: the answer text, the first fatal
/// harness error, and diagnostics about the input.
#[derive(Default)]
struct Accounting {
    answer: AnswerTracker,
    diagnostics: Vec<String>,
    diagnostics_not_kept: u64,
    /// A command's stdout lines so far, and those skipped for their length.
    raw_lines: u64,
    raw_oversize: u64,
    /// The end of stderr (its last [`STDERR_TAIL_KEPT`] bytes, across pieces: a line may come in
    /// two): a failed exit's message quotes its last line (`/usr/bin/env: 'node': No such file
    /// or directory` says more than "status 127"), masked and shortened at the end
    /// ([`stderr_excerpt`]).
    stderr_tail: String,
}

/// How much of the end of stderr is kept, in bytes (masking needs the whole of a secret, so
/// more than is quoted).
const STDERR_TAIL_KEPT: usize = 4096;

/// The most of a stderr line a failure message quotes, in characters.
const STDERR_EXCERPT_CHARS: usize = 240;

/// The last non-blank line of `text`.
fn last_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).rfind(|l| !l.is_empty())
}

/// What a failure message quotes of the last stderr line: masked first — as a harness run
/// masks tool inputs (its decoder: with the secrets its inputs held, or not at all when its
/// `redact` is off), or by secret shape (a command, which has no such option) — then without
/// control characters, cut to [`STDERR_EXCERPT_CHARS`].
fn stderr_excerpt(line: &str, plan: &mut Plan) -> String {
    let masked = match plan.decoder.as_mut() {
        Some(decoder) => decoder.mask_printed_text(line),
        None => crate::redact::Redactor::new().mask_raw_text(line),
    };
    let mut printable = masked.chars().filter(|c| !c.is_control());
    let mut excerpt: String = printable.by_ref().take(STDERR_EXCERPT_CHARS).collect();
    if printable.next().is_some() {
        excerpt.push('…');
    }
    excerpt
}

/// Unit tests only: a run whose environment sets this variable panics its driving task at
/// its first stdout bytes, to test that such a bug still ends the run (see
/// `end_after_driver_panic`).
#[cfg(test)]
pub(super) const PANIC_FOR_TEST: &str = "AGENTSTREAM_TEST_DRIVER_PANIC";

/// After the harness leader exited, how long its output may take to end (what it printed is
/// still in the pipes) before whatever is left of its process tree — a background child that
/// kept stdout open — is killed.
const EXIT_DRAIN: Duration = Duration::from_millis(500);

/// After the tree was ended, how long to keep reading before giving the pipes up (only a
/// process outside the tree, which was handed the pipe, could still hold them).
const GIVE_UP: Duration = Duration::from_secs(2);

/// The longest a partial stderr line is held back waiting for its line end (see
/// [`LineAlignedText`]): a program that writes a line in several writes is read whole, and a
/// prompt or progress text without one still arrives promptly.
const STDERR_PARTIAL_WAIT: Duration = Duration::from_millis(50);

/// Hand on stderr text (to the decoder's error reading, and as an item when there is some).
fn post_stderr(shared: &Shared, plan: &mut Plan, acct: &mut Accounting, text: String) {
    if let Some(decoder) = plan.decoder.as_mut() {
        decoder.observe_stderr(&text);
    }
    acct.stderr_tail.push_str(&text);
    crate::tail::keep_last(&mut acct.stderr_tail, STDERR_TAIL_KEPT);
    if !text.is_empty() {
        shared.post(StreamItem::Stderr(text));
    }
}

async fn drive(shared: Arc<Shared>, mut plan: Plan, mut child: Harness, session: Arc<Mutex<SessionState>>) {
    let started = Instant::now();
    let mut acct = Accounting::default();
    let mut raw_framer = LineFramer::new(plan.max_line_bytes);
    let mut err_text = LineAlignedText::default();
    // When the partial stderr line held back is handed on if no line end comes first.
    let mut err_partial_due: Option<tokio::time::Instant> = None;
    let mut out_buf = vec![0u8; 64 * 1024];
    let mut err_buf = vec![0u8; 16 * 1024];
    let (mut out_open, mut err_open) = (true, true);
    let deadline = plan.timeout.map(|t| tokio::time::Instant::now() + t);
    let mut kill_at: Option<tokio::time::Instant> = None;
    // Set once SIGKILL went to the group: a kill asked for during a cancel's grace period is
    // acted on at once, not at the grace period's end.
    let mut killed = false;
    let mut stall_tick = tokio::time::interval(Duration::from_millis(500));
    stall_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // `Some` once the leader exited (`Some(None)`: how is unknown).
    let mut exit_status: Option<Option<std::process::ExitStatus>> = None;
    let mut drain_until: Option<tokio::time::Instant> = None;
    let mut give_up_at: Option<tokio::time::Instant> = None;
    // Set once the tree was ended: nothing can write to the pipes any more, so what is left in
    // them (a pipe's capacity at most) is read whatever the budget.
    let mut tree_ended = false;

    // The run ends when the harness exits: its output is read to the end (a short, bounded
    // drain), leftover descendants are killed, and the outcome is the harness's.
    let Harness { stdout, stderr, tree, .. } = &mut child;
    while exit_status.is_none() || out_open || err_open {
        let running = exit_status.is_none();
        // Memory is bounded by bytes: with the reader's buffer full, the pipes are not read
        // until it takes items (the harness blocks writing, as into a shell pipe); the stall
        // clock still cancels a reader that never comes back.
        let throttled = !tree_ended && shared.stream.lock().expect("stream").is_full();
        if throttled {
            // Waiting for room is not the pipes staying open: the give-up clock waits too.
            if let Some(at) = give_up_at.as_mut() {
                *at = tokio::time::Instant::now() + GIVE_UP;
            }
        }
        tokio::select! {
            n = stdout.read(&mut out_buf), if out_open && !throttled => match n {
                Ok(0) | Err(_) => out_open = false,
                Ok(n) => {
                    #[cfg(test)]
                    if plan.env.iter().any(|(k, _)| k == PANIC_FOR_TEST) {
                        panic!("a driver bug, injected by a test");
                    }
                    post_stdout(&shared, &mut plan, &mut raw_framer, &mut acct, &out_buf[..n])
                }
            },
            n = stderr.read(&mut err_buf), if err_open && !throttled => match n {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => {
                    post_stderr(&shared, &mut plan, &mut acct, err_text.push(&err_buf[..n]));
                    err_partial_due = match err_partial_due {
                        _ if !err_text.has_partial() => None,
                        Some(due) => Some(due),
                        None => Some(tokio::time::Instant::now() + STDERR_PARTIAL_WAIT),
                    };
                }
            },
            _ = sleep_until(err_partial_due), if err_partial_due.is_some() => {
                post_stderr(&shared, &mut plan, &mut acct, err_text.take_partial());
                err_partial_due = None;
            }
            status = tree.exited(), if running => {
                if status.is_none() {
                    // The supervisor that would end the tree is gone (killed from outside): its
                    // leader died with it; the rest of its group is ended here, now, so that
                    // nothing of it keeps the pipes open.
                    signal_group(shared.pgid.load(Ordering::SeqCst), signals::KILL);
                }
                exit_status = Some(status);
                let mut stream = shared.stream.lock().expect("stream");
                if kill_at.is_none() {
                    // No stop was signalled: the harness ended by itself, and a cancellation
                    // the driver had not acted on yet changes nothing, as any later one.
                    stream.ended_before_cancel();
                } else {
                    // A stop arriving from now on races a natural end: it changes nothing.
                    stream.ended_on_its_own();
                }
                drain_until = Some(tokio::time::Instant::now() + EXIT_DRAIN);
            }
            _ = shared.cancel_async.notified(), if running && !killed => {}
            _ = shared.room_async.notified(), if throttled => {}
            _ = sleep_until(deadline), if running && deadline.is_some() && kill_at.is_none() => {
                shared.stream.lock().expect("stream").cancel(CancelReason::Timeout);
            }
            _ = sleep_until(kill_at), if running && kill_at.is_some() => {
                signal_group(shared.pgid.load(Ordering::SeqCst), signals::KILL);
                killed = true;
                kill_at = Some(tokio::time::Instant::now() + Duration::from_secs(3600));
            }
            _ = sleep_until(drain_until), if drain_until.is_some() => {
                // The leader is gone but its output is still open: a descendant holds it.
                tree.end();
                tree_ended = true;
                drain_until = None;
                give_up_at = Some(tokio::time::Instant::now() + GIVE_UP);
            }
            _ = sleep_until(give_up_at), if give_up_at.is_some() && !throttled => {
                acct.diagnostics.push(format!(
                    "the harness's output was still open {}s after its process tree was ended; stopped reading it",
                    (EXIT_DRAIN + GIVE_UP).as_secs_f64()
                ));
                (out_open, err_open) = (false, false);
            }
            _ = stall_tick.tick() => {
                // The stall clock runs only while something is unread (see RunStream::check_stall).
                shared.stream.lock().expect("stream").check_stall();
            }
        }
        if exit_status.is_none() && shared.cancel.is_cancelled() && !killed {
            let pgid = shared.pgid.load(Ordering::SeqCst);
            let first = kill_at.is_none();
            let reached = if shared.kill_now.load(Ordering::SeqCst) {
                // Also when a cancel's SIGTERM went first: `kill` means at once.
                killed = true;
                kill_at = Some(tokio::time::Instant::now() + Duration::from_secs(3600));
                signal_group(pgid, signals::KILL)
            } else if first {
                kill_at = Some(tokio::time::Instant::now() + plan.kill_grace);
                signal_group(pgid, signals::CONT); // a paused group cannot act on SIGTERM
                signal_group(pgid, signals::TERM)
            } else {
                true
            };
            if first && !reached {
                // No process of the group was left to signal (a zombie still counts): the
                // harness had ended by itself, and its exit is on its way. The stop changes
                // nothing, as one that comes before the exit is seen without a signal sent.
                shared.stream.lock().expect("stream").ended_before_cancel();
            }
        }
    }
    // Nothing of the run's process tree outlives it.
    let status_unknown = matches!(exit_status, Some(None));
    child.end_tree();
    drop(child);
    let exit_status = exit_status.flatten();

    // Everything printed is decoded BEFORE the terminal item, a final partial line included.
    let cut_mid_line = finish_stdout(&shared, &mut plan, &mut raw_framer, &mut acct);
    post_stderr(&shared, &mut plan, &mut acct, err_text.finish());
    let (exit_code, signal) = exit_status.as_ref().map(exit_parts).unwrap_or((None, None));
    if acct.diagnostics_not_kept > 0 {
        acct.diagnostics.push(format!(
            "{} more diagnostics were not kept (the decode statistics count every line)",
            acct.diagnostics_not_kept
        ));
    }
    if acct.answer.dropped_bytes() > 0 {
        acct.diagnostics.push(format!(
            "the final answer is longer than {} bytes: final_text holds its first {} bytes ({} more were streamed)",
            crate::answer::MAX_ANSWER_BYTES,
            crate::answer::MAX_ANSWER_BYTES,
            acct.answer.dropped_bytes()
        ));
    }
    let mut stats = plan.decoder.as_ref().map(|d| *d.stats()).unwrap_or_default();
    if plan.decoder.is_none() {
        stats.oversize_lines = acct.raw_oversize;
    }
    let session_id = plan.decoder.as_ref().and_then(|d| d.session_id().map(str::to_string));
    let harness = plan.decoder.is_some();

    // The stream stays locked until the result is stored and the session is idle again: a reader
    // can take the terminal item only then, so whoever has read the end can read the result and
    // start the next run at once.
    let mut stream = shared.stream.lock().expect("stream");
    let (outcome, record, pressure, state) = {
        let end = RunEnd {
            exit_code,
            signal,
            status_unknown,
            // A harness interrupted by Ctrl-C on its own exits 130: that is an interruption too.
            cancel: stream.cancel_reason().or_else(|| {
                (exit_code == Some(130)).then(|| CancelReason::caller("the harness was interrupted (exit status 130)"))
            }),
            truncated_mid_line: harness && cut_mid_line,
            open_tool_calls: if harness { stream.open_tool_call_count() } else { 0 },
            fatal_error: acct.answer.fatal_error().map(str::to_string),
            missing_final_result: plan.decoder.as_ref().and_then(|d| d.missing_final_result()).map(str::to_string),
            unrecognized_output: plan.decoder.as_ref().and_then(|d| d.unrecognized_output()),
            no_output: harness && stats.lines == stats.blank_lines,
            last_stderr_line: last_line(&acct.stderr_tail).map(|line| stderr_excerpt(line, &mut plan)),
        };
        let outcome = derive_outcome(&end);
        let state = match &outcome {
            RunOutcome::Completed => FinalState::Completed,
            RunOutcome::Failed { .. } => FinalState::Failed,
            RunOutcome::Cancelled { .. } => FinalState::Cancelled,
        };
        let killed_session = session.lock().expect("session state").sandbox == SandboxState::Stopped;
        stream.finish(outcome, |ctx| {
            let mut ev = ctx.default_event(crate::time::now_iso8601());
            if killed_session {
                ev.sandbox = SandboxState::Stopped;
            }
            ev
        });
        let record = stream.record().cloned().expect("a finished stream has a record");
        (record.outcome.clone(), record, stream.pressure(), state)
    };
    {
        let mut st = session.lock().expect("session state");
        if st.sandbox != SandboxState::Stopped {
            st.sandbox = SandboxState::Ready;
        }
        st.agent = match state {
            FinalState::Completed => AgentState::Idle,
            FinalState::Failed => AgentState::Error,
            FinalState::Cancelled => AgentState::Interrupted,
        };
        st.paused = false;
    }
    shared.pgid.store(0, Ordering::SeqCst);
    let result = RunResult {
        run_id: shared.run_id.clone(),
        state,
        exit_code,
        signal,
        session_id,
        usage: record.usage.clone(),
        final_text: (harness && outcome.keeps_answer()).then(|| acct.answer.answer().to_string()),
        error: match &outcome {
            RunOutcome::Failed { detail, .. } => Some(detail.clone()),
            _ => None,
        },
        cancel_reason: outcome.cancel_reason().map(ToString::to_string),
        cancel_kind: outcome.cancel_reason().map(|r| r.code().to_string()),
        pressure,
        stats,
        last_sequence: record.terminal_sequence,
        diagnostics: std::mem::take(&mut acct.diagnostics),
        duration_ms: started.elapsed().as_millis() as u64,
        handler_errors: 0,
    };
    Held::release(&shared.held_until_finished);
    *shared.result.lock().expect("result") = Some(result);
    shared.finished.store(true, Ordering::SeqCst);
    drop(stream);
    shared.done.notify_all();
    shared.done_async.notify_waiters();
    shared.wake_readers();
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// The channels a run's stream buffers for its reader: the ones it asked for, plus content and
/// lifecycle when hook events are derived (they come from those items).
pub(crate) fn reader_channels(asked: ChannelSet, hooks: bool) -> ChannelSet {
    if hooks { asked.with(Channel::Content).with(Channel::Lifecycle) } else { asked }
}

/// A raw stdout line as its item (the text and its `"\n"`), or only a number when nobody reads
/// stdout.
fn push_raw(batch: &mut Posts, stdout: bool, line: &str) {
    if !stdout {
        batch.unread_raw();
        return;
    }
    let mut s = String::with_capacity(line.len() + 1);
    s.push_str(line);
    s.push('\n');
    batch.item(StreamItem::Stdout(s));
}

/// A decoded line's posts: its raw text, then its events (which the answer tracker sees first).
fn push_line(
    batch: &mut Posts,
    stdout: bool,
    acct: &mut Accounting,
    line: Option<&str>,
    events: &mut Vec<OutputEvent>,
) {
    if let Some(line) = line {
        push_raw(batch, stdout, line);
    }
    for ev in events.drain(..) {
        acct.answer.observe(&ev);
        batch.item(StreamItem::Content(ev));
    }
}

/// Posts are handed to the stream in batches of at most this many: one lock and one wake per
/// batch, a batch small enough to stay in cache (a post is a few hundred bytes), and a reader
/// gets the first items of a big chunk before its last line is decoded.
const BATCH: usize = 64;

fn flush_if_full(shared: &Shared, batch: &mut Posts) {
    if batch.len() >= BATCH {
        shared.post_all(batch);
    }
}

fn post_stdout(shared: &Shared, plan: &mut Plan, raw: &mut LineFramer, acct: &mut Accounting, bytes: &[u8]) {
    // Read once per chunk: a reader that subscribes to stdout meanwhile gets the lines of the
    // next chunk on (these are numbered all the same).
    let stdout = shared.wants(Channel::Stdout);
    // One lock, one clock reading and one wake per batch of posts, not per item.
    let mut batch = std::mem::take(&mut plan.batch);
    match plan.decoder.as_mut() {
        Some(decoder) => {
            decoder.feed_lines(bytes, &mut |line, events| {
                push_line(&mut batch, stdout, acct, line, events);
                flush_if_full(shared, &mut batch);
            });
            collect_diagnostics(decoder, acct);
        }
        None => {
            let max = raw.max_line_bytes();
            raw.push(bytes, &mut |frame| {
                if let Some(text) = raw_line(acct, max, &frame) {
                    push_raw(&mut batch, stdout, &text);
                    flush_if_full(shared, &mut batch);
                }
            })
        }
    }
    shared.post_all(&mut batch);
    plan.batch = batch;
}

/// A command's stdout line to deliver, counted; one over the line limit is skipped, counted and
/// named in the diagnostics instead (never dropped without a word).
fn raw_line<'a>(acct: &mut Accounting, max: usize, frame: &Frame<'a>) -> Option<std::borrow::Cow<'a, str>> {
    acct.raw_lines += 1;
    if let Frame::Oversize { len, .. } = frame {
        acct.raw_oversize += 1;
        push_diagnostic(
            acct,
            format!(
                "stdout line {}: {len} bytes, over the line limit of {max} bytes (limits.max_line_bytes): skipped",
                acct.raw_lines
            ),
        );
    }
    frame.text()
}

fn push_diagnostic(acct: &mut Accounting, message: String) {
    if acct.diagnostics.len() < MAX_RUN_DIAGNOSTICS {
        acct.diagnostics.push(message);
    } else {
        acct.diagnostics_not_kept += 1;
    }
}

/// The most diagnostics a run's result holds (a flood of bad lines must not grow memory; the
/// decode statistics count every line).
const MAX_RUN_DIAGNOSTICS: usize = 1000;

fn collect_diagnostics(decoder: &mut Decoder, acct: &mut Accounting) {
    for d in decoder.take_diagnostics() {
        push_diagnostic(acct, format!("stdout line {}: {}", d.line, d.message));
    }
}

/// Flush the final partial line; returns true when stdout ended mid-line (a last line that is not
/// whole JSON).
fn finish_stdout(shared: &Shared, plan: &mut Plan, raw: &mut LineFramer, acct: &mut Accounting) -> bool {
    let stdout = shared.wants(Channel::Stdout);
    let mut batch = std::mem::take(&mut plan.batch);
    let cut = match plan.decoder.as_mut() {
        Some(decoder) => {
            // A last line without its newline is cut only when it is not whole JSON: a harness
            // may print its final record and exit without one (decisions.md §1).
            let partial = decoder.has_partial_line();
            let invalid_before = decoder.stats().invalid_json;
            decoder.finish_lines(&mut |line, events| push_line(&mut batch, stdout, acct, line, events));
            collect_diagnostics(decoder, acct);
            partial && decoder.stats().invalid_json > invalid_before
        }
        None => {
            let cut = raw.has_partial();
            let max = raw.max_line_bytes();
            raw.finish(&mut |frame| {
                if let Some(text) = raw_line(acct, max, &frame) {
                    push_raw(&mut batch, stdout, &text);
                }
            });
            cut
        }
    };
    shared.post_all(&mut batch);
    cut
}
