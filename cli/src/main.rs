//! The `agentstream` command.

use std::io::{self, BufWriter, Read, Write};
use std::process::ExitCode;

/// The decoders allocate many small strings per line; mimalloc serves them several times faster
/// than the system allocator (`benches/parse_ratio.py`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use agentstream_core::{Agent, Decoder};
use clap::{Args, Parser, Subcommand};

/// `eprintln!` that cannot panic: a line for a standard error that is gone (closed, a full disk,
/// a reader that left) is dropped, never a panic (exit 101) in the middle of a command whose
/// exit code says how it went.
macro_rules! stderr_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod demo;
mod fake_harness;
mod parse_report;
mod render;
mod run;
mod serve;
mod worker;

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
    /// stdout in the exact seed shape, and a one-line decode summary on stderr. Malformed lines
    /// are counted, never fatal. Exits 0 unless the input cannot be read (1) or nothing was
    /// decoded from it (1: binary input, plain text, another harness's output — one line on
    /// stderr says what the lines were), or standard output failed (141 when its reader went
    /// away, as under SIGPIPE; 1 with the error on stderr otherwise). Secret shapes in tool-call inputs are masked, as in
    /// `run` (--no-redact to keep them).
    Parse {
        #[arg(long, short, help = agent_help("The harness that printed the input"))]
        agent: String,
        /// Maximum line length in bytes (at least 1); longer lines are skipped and reported.
        #[arg(long, default_value_t = agentstream_core::framing::DEFAULT_MAX_LINE_BYTES, value_parser = at_least_one)]
        max_line_bytes: usize,
        /// Do not mask secret shapes in tool-call inputs (masked by default, as in `run`).
        #[arg(long)]
        no_redact: bool,
        /// The recorded stdout (JSONL); `-` or absent for standard input.
        file: Option<std::path::PathBuf>,
    },
    /// Run a real harness and render its stream (or print it as JSONL with --json / --hooks).
    ///
    /// Everything after `--` is the prompt (joined with spaces), unless --prompt is given, in
    /// which case it is passed to the harness as extra arguments. Exit codes: 0 completed,
    /// 1 failed, 2 bad arguments, 124 timed out (--timeout), 126 could not start (bad --cwd,
    /// not executable), 127 harness not found, 128+N stopped by signal N sent to agentstream
    /// (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP), 141 standard output closed (1, with the error
    /// on stderr, when writing to it failed otherwise). A slow reader of the output (a pager)
    /// holds the harness back; the run is never cancelled for it.
    Run {
        #[arg(long, short, help = agent_help("The harness"))]
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
        #[arg(long, short, help = agent_help("Only this agent (default: every one)"))]
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
    /// Serve runs over HTTP: start them, stream them with Server-Sent Events or WebSocket,
    /// resume by sequence, cancel; with a live run view at `/`.
    ///
    /// With no --config, the embedded default: 127.0.0.1:8787, the seven harnesses by their
    /// usual command names, and one tenant `local` whose token is printed once at start. See
    /// docs/server.md for serve.toml (tenants, agents, limits, shutdown) and the API. SIGTERM or
    /// SIGINT stops accepting, ends every run with its terminal event delivered, and exits.
    Serve {
        /// The configuration file (TOML).
        #[arg(long, short)]
        config: Option<std::path::PathBuf>,
        /// Listen on this address (host:port) instead of the configured one; port 0 picks a
        /// free port (the address is printed).
        #[arg(long, short)]
        listen: Option<String>,
        /// Join the cluster on this NATS server (nats://host:4222; overrides `[nats] url`): runs
        /// execute on `agentstream worker`s and every instance serves every run.
        #[arg(long)]
        nats: Option<String>,
    },
    /// Run harnesses for a cluster of `serve` instances: take run requests from NATS JetStream.
    ///
    /// Needs NATS (--nats or `[nats] url`; nats-server 2.11 or later with JetStream). Uses the
    /// config's [agents] (what this worker runs), [limits] run_timeout_secs, [shutdown] and
    /// [worker] (id, max_runs). SIGTERM or SIGINT stops taking requests and ends the runs in
    /// flight by [shutdown] mode, each with its terminal event published. See docs/server.md.
    Worker {
        /// The configuration file (TOML; the same format as serve's).
        #[arg(long, short)]
        config: Option<std::path::PathBuf>,
        /// The NATS server (nats://host:4222; overrides `[nats] url`).
        #[arg(long)]
        nats: Option<String>,
        /// This worker's id in the cluster (default: host name and process id).
        #[arg(long)]
        id: Option<String>,
        /// Runs taken at once (default 8, or [worker] max_runs).
        #[arg(long)]
        max_runs: Option<usize>,
    },
    /// Write a recorded run as one self-contained HTML page (the live view's timeline, offline).
    ///
    /// Replays FILE (the harness's stdout as JSONL; `-` for standard input) through the full
    /// sans-IO pipeline and writes a page that renders messages, thinking, tool calls, plans,
    /// errors, token usage and cost, with no server and no network. Exits 1 when nothing was
    /// decoded from the input (another harness's output, not JSONL), as `parse` does.
    View {
        /// The harness that printed the input: claude, codex, gemini, qwen, kimi, opencode, droid.
        #[arg(long, short)]
        agent: String,
        /// Where to write the page (default: standard output).
        #[arg(long, short)]
        output: Option<std::path::PathBuf>,
        /// Keep secret shapes as the harness printed them (by default they are masked in the
        /// events and in the raw lines the page embeds, as the server masks what it serves).
        #[arg(long)]
        no_redact: bool,
        /// The recorded stdout (JSONL), or `-`; at most 64 MiB (the page is built in memory).
        file: std::path::PathBuf,
    },
    /// Make a bearer token for a serve.toml tenant (or, with --hash, hash one read from stdin).
    ///
    /// Prints the token once and the `[[tenant]]` entry with its SHA-256: the server keeps only
    /// the hash, so the token cannot be recovered from the config.
    Token {
        /// The tenant's name in the printed entry.
        #[arg(long, default_value = "my-tenant")]
        tenant: String,
        /// Read an existing token from standard input and print only its entry.
        #[arg(long)]
        hash: bool,
    },
}

/// An `--agent` help line naming the agents the core decodes (its one list, `Agent::ALL`).
fn agent_help(what: &str) -> String {
    format!("{what}: {}", Agent::valid_names())
}

/// Flags shared by `run`, `exec` and `demo`.
#[derive(Args, Clone)]
struct RunFlags {
    /// Working directory of the process.
    #[arg(long)]
    cwd: Option<std::path::PathBuf>,
    /// Cancel after this many seconds (0.001 or more, fractions allowed; exit code 124).
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
    /// Do not mask secret shapes in tool-call inputs, nor in the raw stdout and stderr lines
    /// (masked by default as the server masks them, in the human view and with --json).
    #[arg(long)]
    no_redact: bool,
    /// The longest stdout line read, in bytes (at least 1); a longer one is skipped and named
    /// in a diagnostic on stderr.
    #[arg(long, default_value_t = agentstream_core::framing::DEFAULT_MAX_LINE_BYTES, value_parser = at_least_one)]
    max_line_bytes: usize,
}

fn main() -> ExitCode {
    // A run's supervisor is this program started again with a marker (no copy of this
    // process's memory per run: see core/src/runner/self_exec.rs); in that case it never returns.
    agentstream_core::runner::supervise_if_asked();
    // The demo re-executes this binary as the fake harness (see `demo.rs`).
    if std::env::var_os(demo::FAKE_HARNESS_ENV).is_some_and(|v| v == "1") {
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
        Command::Serve { config, listen, nats } => {
            serve::serve_command(config.as_deref(), listen.as_deref(), nats.as_deref())
        }
        Command::Worker { config, nats, id, max_runs } => {
            worker::worker_command(config.as_deref(), nats.as_deref(), id, max_runs)
        }
        Command::View { agent, output, no_redact, file } => {
            serve::view_command(&agent, &file, output.as_deref(), !no_redact)
        }
        Command::Token { tenant, hash } => serve::token_command(&tenant, hash),
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
            max_line_bytes: f.max_line_bytes,
        }
    }
}

/// A count of at least 1 (`--max-line-bytes 0` would skip every line).
fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

fn parse_command(agent: &str, max_line_bytes: usize, redact: bool, file: Option<&std::path::Path>) -> ExitCode {
    let agent: Agent = match agent.parse() {
        Ok(a) => a,
        Err(e) => {
            stderr_line!("agentstream parse: {e}");
            return ExitCode::from(2);
        }
    };
    // A file name need not be UTF-8 (a path is whatever bytes the filesystem holds).
    let file = file.filter(|path| path.as_os_str() != "-");
    let source = file.map_or_else(|| "standard input".to_string(), |path| path.display().to_string());
    let mut input: Box<dyn Read> = match file {
        None => Box::new(io::stdin().lock()),
        Some(path) => match std::fs::File::open(path) {
            Ok(f) => Box::new(f),
            Err(e) => {
                stderr_line!("agentstream parse: cannot read {source}: {e}");
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
    let mut text = String::new();
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                stderr_line!("agentstream parse: cannot read {source}: {e}");
                return ExitCode::from(1);
            }
        };
        decoder.feed_into(&buf[..n], &mut events);
        if let Err(e) = write_events(&mut out, &mut events, &mut text) {
            return run::output_failed("parse", &e);
        }
    }
    events.extend(decoder.finish());
    if let Err(e) = write_events(&mut out, &mut events, &mut text).and_then(|()| out.flush()) {
        return run::output_failed("parse", &e);
    }
    parse_report::finish(&mut decoder)
}

/// A chunk's events as JSON lines, written at once; `text` is the buffer, reused from chunk to chunk.
fn write_events(
    out: &mut impl Write,
    events: &mut Vec<agentstream_core::OutputEvent>,
    text: &mut String,
) -> io::Result<()> {
    // `write_json` is serde_json's text, faster.
    text.clear();
    for ev in events.drain(..) {
        ev.write_json(text);
        text.push('\n');
    }
    out.write_all(text.as_bytes())
}
