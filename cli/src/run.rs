//! `agentstream run` and `agentstream exec`: drive a real process and show its stream.

use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
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
    pub timeout: Option<f64>,
    pub json: bool,
    pub hooks: bool,
    pub show_stderr: bool,
    pub redact: bool,
}

impl Flags {
    fn timeout(&self) -> Option<Duration> {
        self.timeout.filter(|t| *t > 0.0).map(Duration::from_secs_f64)
    }
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
            eprintln!("agentstream run: {e}");
            return ExitCode::from(2);
        }
    };
    let prompt = match prompt {
        Some(p) => {
            extra_args.extend(rest);
            p
        }
        None if !rest.is_empty() => rest.join(" "),
        None => {
            eprintln!("agentstream run: no prompt: give --prompt TEXT or the prompt after `--`");
            return ExitCode::from(2);
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
    options.timeout = flags.timeout();
    options.redact = flags.redact;
    options.hooks = flags.hooks;
    let handle = match session.start_run(options) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("agentstream run: {e}");
            return ExitCode::from(if e.kind == agentstream_core::ErrorKind::HarnessNotFound { 127 } else { 1 });
        }
    };
    show(&handle, flags)
}

pub fn exec_command(command: Vec<String>, flags: &Flags) -> ExitCode {
    let session = Session::new(AgentConfig::new(Agent::Claude));
    let mut options = CommandOptions::new(command);
    options.cwd = flags.cwd.clone();
    options.timeout = flags.timeout();
    options.hooks = flags.hooks;
    let handle = match session.start_command(options) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("agentstream exec: {e}");
            return ExitCode::from(if e.kind == agentstream_core::ErrorKind::HarnessNotFound { 127 } else { 1 });
        }
    };
    show(&handle, flags)
}

/// Ctrl-C interrupts the run (its whole process group) instead of killing us mid-render.
fn interrupt_on_ctrl_c(handle: &RunHandle) {
    let h = handle.clone();
    agentstream_core::runner::runtime().spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            h.cancel("interrupted by Ctrl-C");
        }
    });
}

fn show(handle: &RunHandle, flags: &Flags) -> ExitCode {
    interrupt_on_ctrl_c(handle);
    let stdout = io::stdout();
    let tty = stdout.is_terminal();
    let mut out = stdout.lock();
    let mut renderer =
        (!flags.json && !flags.hooks).then(|| Renderer::new(io::stdout(), Style::detect(tty), tty, flags.show_stderr));
    loop {
        let batch = handle.next_batch_blocking(256, Some(Duration::from_millis(200)));
        if batch.is_empty() && handle.is_ended() {
            break;
        }
        for d in batch {
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
            if written.is_err() {
                handle.reader_left(); // our stdout went away: stop the run through the one path
            }
        }
    }
    let _ = out.flush();
    drop(out);
    let result = handle.wait_blocking();
    if let Some(r) = renderer.as_mut() {
        let _ = r.summary(&summary_line(&result, r.tool_calls, r.tool_failures), result.state == FinalState::Completed);
    }
    for d in &result.diagnostics {
        eprintln!("agentstream: {d}");
    }
    ExitCode::from(match result.state {
        FinalState::Completed => 0,
        FinalState::Failed => 1,
        FinalState::Cancelled => 130,
    })
}

/// `completed in 2.1s · 1 tool call · 6092 prompt + 51 completion tokens · $0.0317`
pub fn summary_line(r: &RunResult, tools: usize, failed_tools: usize) -> String {
    let mut parts = vec![match r.state {
        FinalState::Completed => format!("completed in {:.1}s", r.duration_ms as f64 / 1000.0),
        FinalState::Failed => {
            format!("failed after {:.1}s: {}", r.duration_ms as f64 / 1000.0, r.error.clone().unwrap_or_default())
        }
        FinalState::Cancelled => format!(
            "cancelled after {:.1}s: {}",
            r.duration_ms as f64 / 1000.0,
            r.cancel_reason.clone().unwrap_or_default()
        ),
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
