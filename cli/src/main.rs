//! The `agentstream` command.

use std::io::{self, BufWriter, Read, Write};
use std::process::ExitCode;

use agentstream_core::{Agent, Decoder};
use clap::{Parser, Subcommand};

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
    /// the input cannot be read. Malformed lines are counted, never fatal.
    Parse {
        /// The harness that printed the input: claude, codex, gemini, qwen, kimi, opencode, droid.
        #[arg(long, short)]
        agent: String,
        /// Maximum line length in bytes; longer lines are skipped and reported.
        #[arg(long, default_value_t = agentstream_core::framing::DEFAULT_MAX_LINE_BYTES)]
        max_line_bytes: usize,
        /// The recorded stdout (JSONL); `-` or absent for standard input.
        file: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Parse { agent, max_line_bytes, file } => parse_command(&agent, max_line_bytes, file.as_deref()),
    }
}

fn parse_command(agent: &str, max_line_bytes: usize, file: Option<&str>) -> ExitCode {
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
    let mut decoder = Decoder::with_options(agent, agentstream_core::DecoderOptions { max_line_bytes });
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
