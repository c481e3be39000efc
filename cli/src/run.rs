//! `agentstream run` and `agentstream exec`: drive a real process and show its stream.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use agentstream_core::Agent;
use agentstream_core::runner::{
    AgentConfig, CommandOptions, Delivery, FinalState, RunHandle, RunOptions, RunResult, Session,
};
use agentstream_core::stream::StreamItem;

use crate::render::{Renderer, Style};

/// Flags shared by the run-like commands.
pub struct Flags {
    pub cwd: Option<PathBuf>,
    pub timeout: Option<Duration>,
    pub json: bool,
    pub hooks: bool,
    pub show_stderr: bool,
    pub redact: bool,
    pub max_line_bytes: usize,
}

/// The longest `--timeout` accepted: ten years, far below what a `Duration` can hold.
const MAX_TIMEOUT_SECS: f64 = 10.0 * 365.0 * 24.0 * 3600.0;

/// The shortest `--timeout` accepted: a millisecond, the unit every binding's `timeout_ms` counts
/// in (`1e-10` would time a run out before it started).
const MIN_TIMEOUT_SECS: f64 = 0.001;

/// `--timeout SECS`: a finite number of seconds from a millisecond (fractions allowed) to ten
/// years. `0`, negative numbers, `nan`, `inf` and words are refused with a message saying so
/// (leave the flag out for no time limit).
pub fn parse_timeout(text: &str) -> Result<Duration, String> {
    let secs: f64 = text.trim().parse().map_err(|_| format!("{text:?} is not a number of seconds (e.g. 30 or 1.5)"))?;
    if !secs.is_finite() {
        return Err(format!("{text:?} is not a finite number of seconds; leave --timeout out for no time limit"));
    }
    if secs <= 0.0 {
        return Err(format!("{text:?} must be greater than 0; leave --timeout out for no time limit"));
    }
    if secs < MIN_TIMEOUT_SECS {
        return Err(format!("{text:?} is less than a millisecond (the shortest --timeout is {MIN_TIMEOUT_SECS})"));
    }
    if secs > MAX_TIMEOUT_SECS {
        return Err(format!("{text:?} is more than ten years ({MAX_TIMEOUT_SECS} seconds)"));
    }
    Duration::try_from_secs_f64(secs).map_err(|e| format!("{text:?}: {e}"))
}

/// The CLI's own reader is whatever reads its standard output: a pager left open holds the
/// harness back, as any program in a pipeline is held back, and never gets it cancelled as
/// stalled (ten years, as the longest `--timeout`: the core wants a finite limit).
const READER_NEVER_STALLS: f64 = MAX_TIMEOUT_SECS;

/// Exit codes (documented in `agentstream run --help` and the README).
pub mod exit {
    /// The run completed.
    pub const COMPLETED: u8 = 0;
    /// The run failed (`exec`: the command's own code is used instead).
    pub const FAILED: u8 = 1;
    /// Bad arguments (clap's usage errors exit 2 as well).
    pub const USAGE: u8 = 2;
    /// `--timeout` elapsed (as GNU `timeout`).
    pub const TIMED_OUT: u8 = 124;
    /// The process could not be started: the working directory is missing, not executable, ….
    pub const CANNOT_START: u8 = 126;
    /// The harness or command was not found.
    pub const NOT_FOUND: u8 = 127;
    /// Standard output was closed under us (as a process killed by SIGPIPE).
    pub const OUTPUT_CLOSED: u8 = 128 + 13;
    /// 128 + the signal: agentstream was asked to stop by SIGINT (130), SIGTERM (143), SIGHUP (129).
    pub fn signalled(signal: i32) -> u8 {
        (128 + signal).clamp(129, 255) as u8
    }
}

/// The exit code once writing to standard output failed: 141 when its reader went away (a
/// closed pipe: what a process killed by SIGPIPE reports), else 1, with the error said on
/// standard error (a full disk): output was lost, never silently. (A descriptor closed before
/// the start is no error to see: Rust's runtime opens /dev/null in its place before `main`.)
pub fn output_failed(command: &str, e: &io::Error) -> ExitCode {
    if e.kind() == io::ErrorKind::BrokenPipe {
        return ExitCode::from(exit::OUTPUT_CLOSED);
    }
    stderr_line!("agentstream {command}: cannot write to standard output: {e}");
    ExitCode::from(exit::FAILED)
}

pub fn run_command(
    agent: &str,
    bin: Option<PathBuf>,
    prompt: Option<String>,
    model: Option<String>,
    mut extra_args: Vec<String>,
    rest: Vec<String>,
    flags: &Flags,
) -> ExitCode {
    let agent: Agent = match agent.parse() {
        Ok(a) => a,
        Err(e) => {
            stderr_line!("agentstream run: {e}");
            return ExitCode::from(exit::USAGE);
        }
    };
    let prompt = match prompt {
        Some(p) => {
            extra_args.extend(rest);
            p
        }
        None if !rest.is_empty() => rest.join(" "),
        None => {
            stderr_line!("agentstream run: no prompt: give --prompt TEXT or the prompt after `--`");
            return ExitCode::from(exit::USAGE);
        }
    };
    let mut config = AgentConfig::new(agent);
    config.bin = bin;
    config.model = model;
    config.extra_args = extra_args;
    config.cwd = flags.cwd.clone();
    run_session(&Session::new(config), prompt, flags, &[])
}

/// Run `prompt` on `session` and render it; shared with the demo.
pub fn run_session(session: &Session, prompt: String, flags: &Flags, env: &[(String, String)]) -> ExitCode {
    let _ = env;
    let mut options = RunOptions::new(prompt);
    options.timeout = flags.timeout;
    options.redact = flags.redact;
    options.hooks = flags.hooks;
    options.max_line_bytes = flags.max_line_bytes;
    options.backpressure = options.backpressure.with_stall_seconds(READER_NEVER_STALLS);
    match session.start_run(options) {
        Ok(handle) => show(&handle, flags, Exit::Run),
        Err(e) => start_failed("run", &e),
    }
}

pub fn exec_command(command: Vec<String>, flags: &Flags) -> ExitCode {
    // A command is no harness: its hook events name the program it ran, not the session's
    // placeholder agent.
    let mut config = AgentConfig::new(Agent::Claude);
    config.agent_id = command.first().map(|program| program_name(program));
    let session = Session::new(config);
    let mut options = CommandOptions::new(command);
    options.cwd = flags.cwd.clone();
    options.timeout = flags.timeout;
    options.hooks = flags.hooks;
    options.max_line_bytes = flags.max_line_bytes;
    options.backpressure = options.backpressure.with_stall_seconds(READER_NEVER_STALLS);
    match session.start_command(options) {
        Ok(handle) => show(&handle, flags, Exit::PassThrough),
        Err(e) => start_failed("exec", &e),
    }
}

/// The file name of `program` as hook events report it (`/usr/bin/make` → `make`).
fn program_name(program: &str) -> String {
    match std::path::Path::new(program).file_name() {
        Some(name) => name.to_string_lossy().into_owned(),
        None => program.to_string(),
    }
}

fn start_failed(command: &str, e: &agentstream_core::Error) -> ExitCode {
    use agentstream_core::ErrorKind;
    if command == "exec" && e.kind == ErrorKind::HarnessNotFound {
        // The core's advice is for a harness; this is the user's own command.
        stderr_line!("agentstream exec: {}: check the command's name, or give its path", e.message);
    } else if command == "exec" && e.kind == ErrorKind::SpawnFailed {
        stderr_line!("agentstream exec: {}", e.message); // says what is wrong with the command itself
    } else {
        stderr_line!("agentstream {command}: {e}");
    }
    ExitCode::from(match e.kind {
        ErrorKind::HarnessNotFound => exit::NOT_FOUND,
        ErrorKind::SpawnFailed => exit::CANNOT_START,
        ErrorKind::InvalidArgument => exit::USAGE,
        _ => exit::FAILED,
    })
}

/// How a finished operation's outcome becomes the exit code.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Exit {
    /// `run`: 0 completed, 1 failed.
    Run,
    /// `exec`: the command's own exit code (128+N for a signal N).
    PassThrough,
}

/// SIGINT (Ctrl-C), SIGTERM and SIGHUP stop the run through its one cancellation path — its
/// whole process tree is terminated — instead of killing us mid-render with the harness left
/// running. Returns the number of the first such signal once one arrived (0 before).
#[cfg(unix)]
fn stop_on_signals(handle: &RunHandle) -> Arc<AtomicI32> {
    use tokio::signal::unix::{SignalKind, signal};
    let received = Arc::new(AtomicI32::new(0));
    for (kind, number, name) in [
        (SignalKind::interrupt(), libc::SIGINT, "SIGINT (Ctrl-C)"),
        (SignalKind::terminate(), libc::SIGTERM, "SIGTERM"),
        (SignalKind::hangup(), libc::SIGHUP, "SIGHUP"),
    ] {
        let (h, received) = (handle.clone(), received.clone());
        // Registered before the run is read, so a signal from now on is ours to handle.
        let stream = {
            let _enter = agentstream_core::runner::runtime().enter();
            signal(kind)
        };
        let Ok(mut stream) = stream else { continue };
        agentstream_core::runner::runtime().spawn(async move {
            if stream.recv().await.is_some() {
                let _ = received.compare_exchange(0, number, Ordering::SeqCst, Ordering::SeqCst);
                h.cancel(&format!("agentstream received {name}"));
            }
        });
    }
    received
}

/// Ctrl-C stops the run the same way where there are no Unix signals (no run starts there yet:
/// see `runner::process::ensure_supported`).
#[cfg(not(unix))]
fn stop_on_signals(handle: &RunHandle) -> Arc<AtomicI32> {
    let received = Arc::new(AtomicI32::new(0));
    let (h, r) = (handle.clone(), received.clone());
    agentstream_core::runner::runtime().spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            let _ = r.compare_exchange(0, libc::SIGINT, Ordering::SeqCst, Ordering::SeqCst);
            h.cancel("agentstream received Ctrl-C");
        }
    });
    received
}

fn show(handle: &RunHandle, flags: &Flags, exit_rule: Exit) -> ExitCode {
    let signal = stop_on_signals(handle);
    let stdout = io::stdout();
    let tty = stdout.is_terminal();
    let mut out = stdout.lock();
    let mut renderer =
        (!flags.json && !flags.hooks).then(|| Renderer::new(io::stdout(), Style::detect(tty), tty, flags.show_stderr));
    let mut lost: Option<io::Error> = None;
    // Raw lines (stdout, stderr) are masked as the server streams them, unless `--no-redact`:
    // as `--json` prints them and as the human view shows them (`exec`, `--show-stderr`).
    let mut raw_masker = flags.redact.then(agentstream_core::redact::Redactor::new);
    loop {
        let batch = handle.next_batch_blocking(256, Some(Duration::from_millis(200)));
        if batch.is_empty() && handle.is_ended() {
            break;
        }
        for mut d in batch {
            if let (Delivery::Item(env), Some(masker)) = (&mut d, raw_masker.as_mut()) {
                env.item.mask_raw(masker);
            }
            let written = match (&d, renderer.as_mut()) {
                (Delivery::Item(env), None) if flags.json => {
                    writeln!(out, "{}", serde_json::to_string(env).unwrap_or_default())
                }
                (Delivery::Hook(h), None) if flags.hooks => {
                    writeln!(out, "{}", serde_json::to_string(h).unwrap_or_default())
                }
                (Delivery::Item(env), Some(r)) => match &env.item {
                    StreamItem::Content(ev) => r.content(ev),
                    StreamItem::Lifecycle(ev) => r.lifecycle(ev),
                    StreamItem::Stderr(t) => r.stderr(t),
                    StreamItem::Stdout(t) => r.stdout(t),
                },
                _ => Ok(()),
            };
            if let Err(e) = written
                && lost.is_none()
            {
                handle.reader_left(); // our stdout went away: stop the run through the one path
                lost = Some(e);
            }
        }
    }
    if let Err(e) = out.flush() {
        lost.get_or_insert(e);
    }
    drop(out);
    let result = handle.wait_blocking();
    if let (Some(r), None) = (renderer.as_mut(), &lost) {
        let summary = summary_line(&result, r.tool_calls, r.tool_failures);
        if let Err(e) = r.summary(&summary, result.state == FinalState::Completed) {
            lost = Some(e);
        }
    }
    for d in &result.diagnostics {
        stderr_line!("agentstream: {d}");
    }
    let signal = signal.load(Ordering::SeqCst);
    match lost {
        // A signal that stopped us says more than the output it cut off.
        Some(e) if signal == 0 => output_failed(command_name(exit_rule), &e),
        _ => ExitCode::from(exit_code(&result, signal, exit_rule)),
    }
}

fn command_name(rule: Exit) -> &'static str {
    match rule {
        Exit::Run => "run",
        Exit::PassThrough => "exec",
    }
}

/// The exit code of a finished operation (see [`exit`]).
fn exit_code(r: &RunResult, signal: i32, rule: Exit) -> u8 {
    match r.state {
        FinalState::Completed => exit::COMPLETED,
        FinalState::Failed => match rule {
            Exit::Run => exit::FAILED,
            Exit::PassThrough => match (r.exit_code, r.signal) {
                (Some(code), _) if code != 0 => code.clamp(1, 255) as u8,
                (_, Some(sig)) => exit::signalled(sig),
                _ => exit::FAILED,
            },
        },
        FinalState::Cancelled => match r.cancel_kind.as_deref() {
            Some("timeout") => exit::TIMED_OUT,
            Some("reader_left") => exit::OUTPUT_CLOSED,
            Some("caller") if signal != 0 => exit::signalled(signal),
            _ => exit::FAILED,
        },
    }
}

/// Why a cancelled run was cancelled, without the reason's own "cancelled" prefix (the summary
/// line already says it).
fn cancel_detail(r: &RunResult) -> String {
    let reason = r.cancel_reason.clone().unwrap_or_default();
    match r.cancel_kind.as_deref() {
        Some("timeout") => "the --timeout elapsed".to_string(),
        _ => reason
            .strip_prefix("cancelled by the caller: ")
            .or_else(|| reason.strip_prefix("cancelled: "))
            .unwrap_or(&reason)
            .to_string(),
    }
}

/// `completed in 2.1s · 1 tool call · 6092 prompt + 51 completion tokens · $0.0317`
pub fn summary_line(r: &RunResult, tools: usize, failed_tools: usize) -> String {
    let mut parts = vec![match r.state {
        FinalState::Completed => format!("completed in {:.1}s", r.duration_ms as f64 / 1000.0),
        FinalState::Failed => {
            format!("failed after {:.1}s: {}", r.duration_ms as f64 / 1000.0, r.error.clone().unwrap_or_default())
        }
        FinalState::Cancelled => {
            format!("cancelled after {:.1}s: {}", r.duration_ms as f64 / 1000.0, cancel_detail(r))
        }
    }];
    if tools > 0 {
        let failed = if failed_tools > 0 { format!(" ({failed_tools} failed)") } else { String::new() };
        parts.push(format!("{tools} tool call{}{failed}", if tools == 1 { "" } else { "s" }));
    }
    let u = &r.usage;
    if let (Some(p), Some(c)) = (u.prompt_tokens, u.completion_tokens) {
        let cached = u.cached_tokens.map(|c| format!(" ({c} cached)")).unwrap_or_default();
        parts.push(format!("{p} prompt{cached} + {c} completion tokens"));
    }
    if let Some(cost) = u.cost_usd {
        parts.push(format!("${cost:.4}"));
    }
    if let Some(code) = r.exit_code.filter(|c| *c != 0) {
        parts.push(format!("exit {code}"));
    }
    parts.join(" · ")
}
