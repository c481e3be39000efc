//! `agentstream demo`: the bundled real traces replayed through the FULL runtime (process runner,
//! decoder, run stream, hooks, renderer) by the fake harness, so a new user sees the product work
//! with no agent installed. This binary plays the fake harness itself when it finds
//! [`FAKE_HARNESS_ENV`] in its environment, so the demo needs nothing but the one executable.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use agentstream_core::Agent;
use agentstream_core::runner::{AgentConfig, Session};

use crate::run::{self, Flags, run_session};

/// Set in the fake harness's environment: this binary then replays a trace instead of parsing argv.
pub const FAKE_HARNESS_ENV: &str = "AGENTSTREAM_RUN_AS_FAKE_HARNESS";

/// (agent, scenario, stdout, stderr, meta) of one bundled trace.
type Trace = (&'static str, &'static str, &'static [u8], &'static [u8], &'static [u8]);

/// Every bundled trace.
const TRACES: &[Trace] = &[
    (
        "claude",
        "s1-text",
        include_bytes!("../../tests/golden/claude/s1-text.input.jsonl"),
        include_bytes!("../../tests/golden/claude/s1-text.stderr.txt"),
        include_bytes!("../../tests/golden/claude/s1-text.meta.json"),
    ),
    (
        "claude",
        "s2-bash",
        include_bytes!("../../tests/golden/claude/s2-bash.input.jsonl"),
        include_bytes!("../../tests/golden/claude/s2-bash.stderr.txt"),
        include_bytes!("../../tests/golden/claude/s2-bash.meta.json"),
    ),
    (
        "claude",
        "s3-read-edit",
        include_bytes!("../../tests/golden/claude/s3-read-edit.input.jsonl"),
        include_bytes!("../../tests/golden/claude/s3-read-edit.stderr.txt"),
        include_bytes!("../../tests/golden/claude/s3-read-edit.meta.json"),
    ),
    (
        "codex",
        "s1-text",
        include_bytes!("../../tests/golden/codex/s1-text.input.jsonl"),
        include_bytes!("../../tests/golden/codex/s1-text.stderr.txt"),
        include_bytes!("../../tests/golden/codex/s1-text.meta.json"),
    ),
    (
        "codex",
        "s2-bash",
        include_bytes!("../../tests/golden/codex/s2-bash.input.jsonl"),
        include_bytes!("../../tests/golden/codex/s2-bash.stderr.txt"),
        include_bytes!("../../tests/golden/codex/s2-bash.meta.json"),
    ),
    (
        "codex",
        "s3-read-edit",
        include_bytes!("../../tests/golden/codex/s3-read-edit.input.jsonl"),
        include_bytes!("../../tests/golden/codex/s3-read-edit.stderr.txt"),
        include_bytes!("../../tests/golden/codex/s3-read-edit.meta.json"),
    ),
    (
        "gemini",
        "s1-text",
        include_bytes!("../../tests/golden/gemini/s1-text.input.jsonl"),
        include_bytes!("../../tests/golden/gemini/s1-text.stderr.txt"),
        include_bytes!("../../tests/golden/gemini/s1-text.meta.json"),
    ),
    (
        "gemini",
        "s2-bash",
        include_bytes!("../../tests/golden/gemini/s2-bash.input.jsonl"),
        include_bytes!("../../tests/golden/gemini/s2-bash.stderr.txt"),
        include_bytes!("../../tests/golden/gemini/s2-bash.meta.json"),
    ),
    (
        "gemini",
        "s3-read-edit",
        include_bytes!("../../tests/golden/gemini/s3-read-edit.input.jsonl"),
        include_bytes!("../../tests/golden/gemini/s3-read-edit.stderr.txt"),
        include_bytes!("../../tests/golden/gemini/s3-read-edit.meta.json"),
    ),
    (
        "qwen",
        "s1-text",
        include_bytes!("../../tests/golden/qwen/s1-text.input.jsonl"),
        include_bytes!("../../tests/golden/qwen/s1-text.stderr.txt"),
        include_bytes!("../../tests/golden/qwen/s1-text.meta.json"),
    ),
    (
        "qwen",
        "s2-bash",
        include_bytes!("../../tests/golden/qwen/s2-bash.input.jsonl"),
        include_bytes!("../../tests/golden/qwen/s2-bash.stderr.txt"),
        include_bytes!("../../tests/golden/qwen/s2-bash.meta.json"),
    ),
    (
        "qwen",
        "s3-read-edit",
        include_bytes!("../../tests/golden/qwen/s3-read-edit.input.jsonl"),
        include_bytes!("../../tests/golden/qwen/s3-read-edit.stderr.txt"),
        include_bytes!("../../tests/golden/qwen/s3-read-edit.meta.json"),
    ),
    (
        "kimi",
        "s1-text",
        include_bytes!("../../tests/golden/kimi/s1-text.input.jsonl"),
        include_bytes!("../../tests/golden/kimi/s1-text.stderr.txt"),
        include_bytes!("../../tests/golden/kimi/s1-text.meta.json"),
    ),
    (
        "kimi",
        "s2-bash",
        include_bytes!("../../tests/golden/kimi/s2-bash.input.jsonl"),
        include_bytes!("../../tests/golden/kimi/s2-bash.stderr.txt"),
        include_bytes!("../../tests/golden/kimi/s2-bash.meta.json"),
    ),
    (
        "kimi",
        "s3-read-edit",
        include_bytes!("../../tests/golden/kimi/s3-read-edit.input.jsonl"),
        include_bytes!("../../tests/golden/kimi/s3-read-edit.stderr.txt"),
        include_bytes!("../../tests/golden/kimi/s3-read-edit.meta.json"),
    ),
    (
        "opencode",
        "s1-text",
        include_bytes!("../../tests/golden/opencode/s1-text.input.jsonl"),
        include_bytes!("../../tests/golden/opencode/s1-text.stderr.txt"),
        include_bytes!("../../tests/golden/opencode/s1-text.meta.json"),
    ),
    (
        "opencode",
        "s2-bash",
        include_bytes!("../../tests/golden/opencode/s2-bash.input.jsonl"),
        include_bytes!("../../tests/golden/opencode/s2-bash.stderr.txt"),
        include_bytes!("../../tests/golden/opencode/s2-bash.meta.json"),
    ),
    (
        "opencode",
        "s3-read-edit",
        include_bytes!("../../tests/golden/opencode/s3-read-edit.input.jsonl"),
        include_bytes!("../../tests/golden/opencode/s3-read-edit.stderr.txt"),
        include_bytes!("../../tests/golden/opencode/s3-read-edit.meta.json"),
    ),
    (
        "droid",
        "s1-text",
        include_bytes!("../../tests/golden/droid/s1-text.input.jsonl"),
        include_bytes!("../../tests/golden/droid/s1-text.stderr.txt"),
        include_bytes!("../../tests/golden/droid/s1-text.meta.json"),
    ),
    (
        "droid",
        "s2-bash",
        include_bytes!("../../tests/golden/droid/s2-bash.input.jsonl"),
        include_bytes!("../../tests/golden/droid/s2-bash.stderr.txt"),
        include_bytes!("../../tests/golden/droid/s2-bash.meta.json"),
    ),
    (
        "droid",
        "s3-read-edit",
        include_bytes!("../../tests/golden/droid/s3-read-edit.input.jsonl"),
        include_bytes!("../../tests/golden/droid/s3-read-edit.stderr.txt"),
        include_bytes!("../../tests/golden/droid/s3-read-edit.meta.json"),
    ),
];

pub fn demo(agent: Option<&str>, scenario: &str, delay_ms: u64, flags: &Flags) -> ExitCode {
    let agents: Vec<Agent> = match agent {
        Some(a) => match a.parse() {
            Ok(a) => vec![a],
            Err(e) => {
                stderr_line!("agentstream demo: {e}");
                return ExitCode::from(2);
            }
        },
        None => Agent::ALL.to_vec(),
    };
    if !TRACES.iter().any(|t| t.1 == scenario) {
        stderr_line!("agentstream demo: unknown scenario {scenario:?}: expected s1-text, s2-bash or s3-read-edit");
        return ExitCode::from(2);
    }
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            stderr_line!("agentstream demo: cannot find this executable to replay traces with: {e}");
            return ExitCode::from(1);
        }
    };
    let dir = TraceDir(std::env::temp_dir().join(format!("agentstream-demo-{}", std::process::id())));
    let dir = &dir.0;
    let mut worst = ExitCode::SUCCESS;
    for agent in agents {
        let Some((_, _, stdout, stderr, meta)) = TRACES.iter().find(|t| t.0 == agent.name() && t.1 == scenario) else {
            continue;
        };
        let prefix = match write_trace(dir, agent, scenario, stdout, stderr, meta) {
            Ok(p) => p,
            Err(e) => {
                stderr_line!("agentstream demo: cannot write the trace to {}: {e}", dir.display());
                return ExitCode::from(1);
            }
        };
        let prompt = prompt_of(meta);
        if !flags.json && !flags.hooks {
            let mut out = std::io::stdout().lock();
            if let Err(e) = writeln!(out, "\n── {agent} · {scenario} · prompt: {prompt}").and_then(|()| out.flush())
            {
                return run::output_failed("demo", &e);
            }
        }
        let mut config = AgentConfig::new(agent);
        config.bin = Some(exe.clone());
        config.cwd = flags.cwd.clone();
        config.env = vec![
            (FAKE_HARNESS_ENV.to_string(), "1".to_string()),
            ("AGENTSTREAM_FAKE_TRACE".to_string(), prefix.to_string_lossy().into_owned()),
            ("AGENTSTREAM_FAKE_DELAY_MS".to_string(), delay_ms.to_string()),
        ];
        let code = run_session(&Session::new(config), prompt, flags, &[]);
        if STOPPED.iter().any(|&c| code == ExitCode::from(c)) {
            // Ctrl-C, a signal or a closed output stops the demo, not only this agent's run.
            return code;
        }
        if code != ExitCode::SUCCESS {
            worst = code;
        }
    }
    worst
}

/// Exit codes after which the demo goes no further: stopped by SIGHUP, SIGINT or SIGTERM, or
/// its output closed (see `run::exit`).
const STOPPED: [u8; 4] = [129, 130, run::exit::OUTPUT_CLOSED, 143];

/// The demo's folder of traces, removed however the demo ends.
struct TraceDir(PathBuf);

impl Drop for TraceDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn write_trace(
    dir: &PathBuf,
    agent: Agent,
    scenario: &str,
    stdout: &[u8],
    stderr: &[u8],
    meta: &[u8],
) -> std::io::Result<PathBuf> {
    // Only the demo's own folder: a missing temporary directory is an error, not made here.
    match std::fs::create_dir(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    let prefix = dir.join(format!("{}-{scenario}", agent.name()));
    let with = |suffix: &str| PathBuf::from(format!("{}{suffix}", prefix.display()));
    std::fs::write(with(".input.jsonl"), stdout)?;
    std::fs::write(with(".stderr.txt"), stderr)?;
    std::fs::write(with(".meta.json"), meta)?;
    Ok(prefix)
}

/// The prompt the trace was recorded with (from its argv), for the header and the run.
fn prompt_of(meta: &[u8]) -> String {
    let meta: serde_json::Value = serde_json::from_slice(meta).unwrap_or_default();
    let argv: Vec<&str> =
        meta["argv"].as_array().map(|a| a.iter().filter_map(|v| v.as_str()).collect()).unwrap_or_default();
    argv.iter()
        .position(|a| *a == "-p")
        .and_then(|i| argv.get(i + 1))
        .or_else(|| argv.iter().rev().find(|a| !a.starts_with('-') && a.contains(' ')))
        .map(|s| s.to_string())
        .unwrap_or_else(|| "(recorded prompt)".to_string())
}
