//! The `agentstream` command.

use std::io::{self, BufWriter, Read, Write};
use std::process::ExitCode;

use agentstream_core::{Agent, Decoder};
use clap::{Args, Parser, Subcommand};

mod demo;
mod fake_harness;
mod render;
mod run;

/// One typed, ordered stream of events from any coding-agent CLI.
#[derive(Parser)]
#[command(name = "agentstream", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Decode recorded harness stdout into content events (one JSON OutputEvent per line).
    ///
    /// Reads FILE (or standard input for `-` or no FILE), prints one OutputEvent per line on
    /// stdout in the exact seed shape, and a one-line decode summary on stderr. Exits 0 unless
    /// the input cannot be read. Malformed lines are counted, never fatal. Secret shapes in
    /// tool-call inputs are masked, as in `run` (--no-redact to keep them).
    Parse {
        /// The harness that printed the input: claude, codex, gemini, qwen, kimi, opencode, droid.
        #[arg(long, short)]
        agent: String,
        /// Maximum line length in bytes; longer lines are skipped and reported.
        #[arg(long, default_value_t = agentstream_core::framing::DEFAULT_MAX_LINE_BYTES)]
        max_line_bytes: usize,
        /// Do not mask secret shapes in tool-call inputs (masked by default, as in `run`).
        #[arg(long)]
        no_redact: bool,
        /// The recorded stdout (JSONL); `-` or absent for standard input.
        file: Option<String>,
    },
    /// Run a real harness and render its stream (or print it as JSONL with --json / --hooks).
    ///
    /// Everything after `--` is the prompt (joined with spaces), unless --prompt is given, in
    /// which case it is passed to the harness as extra arguments. Exit codes: 0 completed,
    /// 1 failed, 2 bad arguments, 124 timed out (--timeout), 126 could not start (bad --cwd,
    /// not executable), 127 harness not found, 128+N stopped by signal N sent to agentstream
    /// (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP), 141 standard output closed.
    Run {
        /// The harness: claude, codex, gemini, qwen, kimi, opencode, droid.
        #[arg(long, short)]
        agent: String,
        /// Replace the harness executable (e.g. with the fake harness).
        #[arg(long)]
        bin: Option<std::path::PathBuf>,
        /// The prompt (otherwise the words after `--`).
        #[arg(long, short)]
        prompt: Option<String>,
        /// The model, passed with the harness's own flag.
        #[arg(long, short)]
        model: Option<String>,
        /// Extra argument for the harness (repeatable).
        #[arg(long = "arg", allow_hyphen_values = true)]
        extra_args: Vec<String>,
        #[command(flatten)]
        common: RunFlags,
        /// The prompt, or extra harness arguments when --prompt is given.
        #[arg(last = true)]
        rest: Vec<String>,
    },
    /// Run any command with the same streaming, lifecycle and hooks (no content decoding).
    ///
    /// Exits with the command's own exit code (128+N when a signal N killed it); the codes of
    /// `run` for everything agentstream itself decides (124 timed out, 126/127 could not
    /// start, 128+N stopped by a signal sent to agentstream).
    Exec {
        #[command(flatten)]
        common: RunFlags,
        /// The command and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Replay the bundled real traces through the full runtime via the fake harness: see the
    /// product work with no agent installed.
    Demo {
        /// Only this agent (default: all seven).
        #[arg(long, short)]
        agent: Option<String>,
        /// Which recorded scenario: s1-text, s2-bash or s3-read-edit (default s2-bash).
        #[arg(long, default_value = "s2-bash")]
        scenario: String,
        /// Pause between replayed lines, in milliseconds.
        #[arg(long, default_value_t = 40)]
        delay_ms: u64,
        #[command(flatten)]
        common: RunFlags,
    },
}

/// Flags shared by `run`, `exec` and `demo`.
#[derive(Args, Clone)]
struct RunFlags {
    /// Working directory of the process.
    #[arg(long)]
    cwd: Option<std::path::PathBuf>,
    /// Cancel after this many seconds (a positive number, fractions allowed; exit code 124).
    #[arg(long, value_parser = run::parse_timeout, allow_hyphen_values = true)]
    timeout: Option<std::time::Duration>,
    /// Print the run's sequenced stream (all four channels), one envelope per line, as JSONL.
    #[arg(long, conflicts_with = "hooks")]
    json: bool,
    /// Print the on_event hook events as JSONL instead.
    #[arg(long)]
    hooks: bool,
    /// Show the harness's stderr (dimmed) in the human view.
    #[arg(long)]
    show_stderr: bool,
    /// Do not mask secret shapes in tool-call inputs.
    #[arg(long)]
    no_redact: bool,
}

fn main() -> ExitCode {
    // The demo re-executes this binary as the fake harness (see `demo.rs`).
    if std::env::var_os(demo::FAKE_HARNESS_ENV).is_some() {
        let args: Vec<String> = std::env::args().skip(1).collect();
        return ExitCode::from(fake_harness::main_with_args(&args).clamp(0, 255) as u8);
    }
    let cli = Cli::parse();
    match cli.command {
        Command::Parse { agent, max_line_bytes, no_redact, file } => {
            parse_command(&agent, max_line_bytes, !no_redact, file.as_deref())
        }
        Command::Run { agent, bin, prompt, model, extra_args, common, rest } => {
            run::run_command(&agent, bin, prompt, model, extra_args, rest, &common.into())
        }
        Command::Exec { common, command } => run::exec_command(command, &common.into()),
        Command::Demo { agent, scenario, delay_ms, common } => {
            demo::demo(agent.as_deref(), &scenario, delay_ms, &common.into())
        }
    }
}

impl From<RunFlags> for run::Flags {
    fn from(f: RunFlags) -> Self {
        run::Flags {
            cwd: f.cwd,
            timeout: f.timeout,
            json: f.json,
            hooks: f.hooks,
            show_stderr: f.show_stderr,
            redact: !f.no_redact,
        }
    }
}

fn parse_command(agent: &str, max_line_bytes: usize, redact: bool, file: Option<&str>) -> ExitCode {
    let agent: Agent = match agent.parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("agentstream parse: {e}");
            return ExitCode::from(2);
        }
    };
    let mut input: Box<dyn Read> = match file {
        None | Some("-") => Box::new(io::stdin().lock()),
        Some(path) => match std::fs::File::open(path) {
            Ok(f) => Box::new(f),
            Err(e) => {
                eprintln!("agentstream parse: cannot read {path}: {e}");
                return ExitCode::from(1);
            }
        },
    };
    let options = agentstream_core::DecoderOptions::default()
        .with_max_line_bytes(max_line_bytes)
        .with_redaction(agentstream_core::RedactionPolicy { enabled: redact });
    let mut decoder = Decoder::with_options(agent, options);
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut buf = vec![0u8; 64 * 1024];
    let mut events = Vec::new();
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                eprintln!("agentstream parse: read error: {e}");
                return ExitCode::from(1);
            }
        };
        decoder.feed_into(&buf[..n], &mut events);
        if write_events(&mut out, &mut events).is_err() {
            return ExitCode::SUCCESS; // stdout closed (e.g. piped into `head`)
        }
    }
    events.extend(decoder.finish());
    if write_events(&mut out, &mut events).is_err() || out.flush().is_err() {
        return ExitCode::SUCCESS;
    }
    for d in decoder.take_diagnostics() {
        eprintln!("agentstream parse: line {}: {}", d.line, d.message);
    }
    eprintln!("agentstream parse ({agent}): {}", decoder.stats().summary());
    ExitCode::SUCCESS
}

fn write_events(out: &mut impl Write, events: &mut Vec<agentstream_core::OutputEvent>) -> io::Result<()> {
    for ev in events.drain(..) {
        serde_json::to_writer(&mut *out, &ev)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}
