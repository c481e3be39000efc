//! A fake harness CLI: replays a recorded trace as a real process, for runner tests and the demo.
//!
//! It accepts (and ignores) whatever argv the runner builds for a real harness, so it can stand
//! in for `claude`, `codex`, … via `--bin`. It is configured by environment variables (flags of
//! the same names, `--trace PATH` etc., work too when it is run by hand):
//!
//! | variable | meaning |
//! |---|---|
//! | `AGENTSTREAM_FAKE_TRACE` | trace prefix: plays `<prefix>.input.jsonl` (or `.stdout.jsonl`) to stdout, `<prefix>.stderr.txt` to stderr, and exits with `exit_code` from `<prefix>.meta.json` |
//! | `AGENTSTREAM_FAKE_EXIT` | exit code (overrides the meta file; default 0) |
//! | `AGENTSTREAM_FAKE_DELAY_MS` | pause between stdout lines |
//! | `AGENTSTREAM_FAKE_DIE_MID_LINE` | `1`: print only the first half of the last line, then die by SIGKILL |
//! | `AGENTSTREAM_FAKE_HANG` | `1`: after the output, sleep until killed |
//! | `AGENTSTREAM_FAKE_IGNORE_SIGTERM` | `1`: ignore SIGTERM (the runner must escalate to SIGKILL) |
//! | `AGENTSTREAM_FAKE_FLOOD` | print this many extra small lines as fast as possible |
//! | `AGENTSTREAM_FAKE_FLOOD_TEXT` | then print this many bytes of answer text as claude text deltas (`stream_event` `text_delta` lines; the text is [`flood_text`]'s), as fast as possible |
//! | `AGENTSTREAM_FAKE_FLOOD_STDERR` | first print this many bytes of text lines on stderr, as fast as possible |
//! | `AGENTSTREAM_FAKE_ARGV_FILE` | write the arguments it was given to this file, as a JSON array |
//! | `AGENTSTREAM_FAKE_CHILDREN` | `1`: first start two children that sleep until killed and keep stdout and stderr open — one in the harness's process group, one in a session of its own (`setsid`), as a background job or daemon would |

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

struct Config {
    trace: Option<String>,
    exit: Option<i32>,
    delay_ms: u64,
    die_mid_line: bool,
    hang: bool,
    ignore_sigterm: bool,
    flood: u64,
    flood_text: u64,
    flood_stderr: u64,
}

fn env_or_flag(args: &[String], name: &str) -> Option<String> {
    let flag = format!("--{}", name.to_lowercase().replace('_', "-"));
    if let Some(i) = args.iter().position(|a| *a == flag) {
        return args.get(i + 1).cloned();
    }
    std::env::var(format!("AGENTSTREAM_FAKE_{name}")).ok().filter(|v| !v.is_empty())
}

fn truthy(v: Option<String>) -> bool {
    matches!(v.as_deref(), Some("1" | "true" | "yes"))
}

/// Run the fake harness with the process's arguments; returns the exit code.
pub fn main_with_args(args: &[String]) -> i32 {
    let cfg = Config {
        trace: env_or_flag(args, "TRACE"),
        exit: env_or_flag(args, "EXIT").and_then(|v| v.parse().ok()),
        delay_ms: env_or_flag(args, "DELAY_MS").and_then(|v| v.parse().ok()).unwrap_or(0),
        die_mid_line: truthy(env_or_flag(args, "DIE_MID_LINE")),
        hang: truthy(env_or_flag(args, "HANG")),
        ignore_sigterm: truthy(env_or_flag(args, "IGNORE_SIGTERM")),
        flood: env_or_flag(args, "FLOOD").and_then(|v| v.parse().ok()).unwrap_or(0),
        flood_text: env_or_flag(args, "FLOOD_TEXT").and_then(|v| v.parse().ok()).unwrap_or(0),
        flood_stderr: env_or_flag(args, "FLOOD_STDERR").and_then(|v| v.parse().ok()).unwrap_or(0),
    };
    if let Ok(path) = std::env::var("AGENTSTREAM_FAKE_ARGV_FILE") {
        let _ = std::fs::write(path, serde_json::to_string(args).unwrap_or_default());
    }
    if truthy(std::env::var("AGENTSTREAM_FAKE_CHILDREN").ok()) {
        spawn_children();
    }
    if cfg.ignore_sigterm {
        // SAFETY: setting a signal disposition to SIG_IGN has no memory-safety preconditions.
        unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
    }
    let (stdout_file, stderr_bytes, meta_exit) = match &cfg.trace {
        Some(prefix) => open_trace(prefix),
        None => (None, Vec::new(), None),
    };
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(&stderr_bytes);
    let mut written = 0u64;
    let line = format!("{}\n", "e".repeat(99));
    while written < cfg.flood_stderr {
        if err.write_all(line.as_bytes()).is_err() {
            return 141;
        }
        written += line.len() as u64;
    }
    let _ = err.flush();
    drop(err);

    let mut out = std::io::stdout().lock();
    // The trace is read as it is written out, a line at a time, as a CLI prints as it goes: no
    // start-up spent loading it (16 MiB took 15 ms before the first line), and the last line
    // is known when the read after it finds nothing.
    let mut lines = stdout_file.map(|f| BufReader::with_capacity(64 * 1024, f));
    let mut line = Vec::new();
    let mut next = Vec::new();
    let mut more = read_line(&mut lines, &mut line);
    let mut last = None;
    while more {
        more = read_line(&mut lines, &mut next);
        if !more && cfg.die_mid_line {
            last = Some(line);
            break;
        }
        if out.write_all(&line).and_then(|_| out.flush()).is_err() {
            return 141; // reader went away (SIGPIPE-like)
        }
        if cfg.delay_ms > 0 {
            std::thread::sleep(Duration::from_millis(cfg.delay_ms));
        }
        std::mem::swap(&mut line, &mut next);
    }
    for i in 0..cfg.flood {
        if writeln!(out, "{{\"type\":\"flood\",\"n\":{i}}}").is_err() {
            return 141;
        }
    }
    let mut written = 0u64;
    let mut n = 0u64;
    while written < cfg.flood_text {
        let text = flood_text(n);
        n += 1;
        written += text.len() as u64;
        let line = format!(
            "{{\"type\":\"stream_event\",\"event\":{{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{text}\"}}}},\"session_id\":\"flood\",\"parent_tool_use_id\":null}}\n"
        );
        if out.write_all(line.as_bytes()).is_err() {
            return 141;
        }
    }
    let _ = out.flush();
    if let Some(line) = last {
        let half = &line[..line.len() / 2];
        let _ = out.write_all(half);
        let _ = out.flush();
        // SAFETY: raising a signal on ourselves; the process ends here.
        #[cfg(unix)]
        unsafe {
            libc::raise(libc::SIGKILL)
        };
        #[cfg(not(unix))]
        std::process::abort();
    }
    if cfg.hang {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    cfg.exit.or(meta_exit).unwrap_or(0)
}

/// Two copies of this program that only sleep, inheriting stdout and stderr: one in our process
/// group, one that left it (`setsid`). They inherit the environment but for the variables
/// that would make them replay or spawn again.
fn spawn_children() {
    let Ok(me) = std::env::current_exe() else { return };
    for leave_group in [false, true] {
        let mut cmd = std::process::Command::new(&me);
        cmd.env_remove("AGENTSTREAM_FAKE_CHILDREN")
            .env_remove("AGENTSTREAM_FAKE_TRACE")
            .env_remove("AGENTSTREAM_FAKE_ARGV_FILE")
            .env("AGENTSTREAM_FAKE_HANG", "1")
            .stdin(std::process::Stdio::null());
        // (Sessions are a Unix notion: elsewhere both children stay with the harness.)
        #[cfg(unix)]
        if leave_group {
            use std::os::unix::process::CommandExt;
            // SAFETY: setsid is async-signal-safe and has no memory-safety preconditions.
            unsafe {
                cmd.pre_exec(|| {
                    libc::setsid();
                    Ok(())
                });
            }
        }
        #[cfg(not(unix))]
        let _ = leave_group;
        let _ = cmd.spawn();
    }
}

/// The text of the `n`-th delta of `AGENTSTREAM_FAKE_FLOOD_TEXT` (64 bytes, numbered, so a test
/// can tell that the concatenation is exact).
pub fn flood_text(n: u64) -> String {
    format!("{n:012} abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ|")
}

/// Replace `line` with the next line of `lines` (with its `\n`; the last may have none); false
/// at the end (or when it cannot be read: a trace is local and complete, so that is the end too).
fn read_line(lines: &mut Option<BufReader<File>>, line: &mut Vec<u8>) -> bool {
    line.clear();
    lines.as_mut().is_some_and(|r| r.read_until(b'\n', line).is_ok_and(|n| n > 0))
}

/// The trace's stdout file (opened, read as it is played), its stderr and its exit code.
fn open_trace(prefix: &str) -> (Option<File>, Vec<u8>, Option<i32>) {
    let read = |suffix: &str| std::fs::read(format!("{prefix}{suffix}")).ok();
    let open = |suffix: &str| File::open(format!("{prefix}{suffix}")).ok();
    let stdout = open(".input.jsonl").or_else(|| open(".stdout.jsonl")).unwrap_or_else(|| {
        let _ = writeln!(std::io::stderr(), "fake-harness: no {prefix}.input.jsonl or {prefix}.stdout.jsonl");
        std::process::exit(66);
    });
    let stderr = read(".stderr.txt").unwrap_or_default();
    let exit = read(".meta.json")
        .and_then(|m| serde_json::from_slice::<serde_json::Value>(&m).ok())
        .and_then(|m| m.get("exit_code").and_then(|c| c.as_i64()))
        .map(|c| c as i32);
    (Some(stdout), stderr, exit)
}
