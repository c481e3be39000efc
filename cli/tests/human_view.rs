//! The human view of `agentstream run`, `exec` and `parse` (no `--json`), through the real
//! binary: the fake harness replays the golden traces of all seven agents as a real process,
//! and the printed text and exit codes are checked as a person would read them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

const AGENTS: [&str; 7] = ["claude", "codex", "gemini", "qwen", "kimi", "opencode", "droid"];

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_agentstream")
}

fn fake() -> &'static str {
    env!("CARGO_BIN_EXE_fake-harness")
}

fn golden_dir(agent: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden").join(agent)
}

/// What a run printed and how it exited.
struct Shown {
    stdout: String,
    stderr: String,
    code: i32,
}

impl Shown {
    /// The closing summary: from its mark to the end (a harness's error in it may span lines).
    fn summary(&self) -> &str {
        let at = ["✓ completed", "✗ failed", "✗ cancelled"]
            .iter()
            .filter_map(|mark| {
                self.stdout
                    .rfind(&format!("\n{mark}"))
                    .map(|i| i + 1)
                    .or_else(|| self.stdout.starts_with(mark).then_some(0))
            })
            .max()
            .unwrap_or(self.stdout.len());
        &self.stdout[at..]
    }
}

fn shown(cmd: &mut Command) -> Shown {
    let out = cmd.env("NO_COLOR", "1").stdin(Stdio::null()).output().expect("agentstream runs");
    Shown {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

/// `agentstream run --agent AGENT --bin BIN -- hi` with `env`, in the human view.
fn run(agent: &str, bin_path: &str, env: &[(&str, &Path)], extra: &[&str]) -> Shown {
    let mut cmd = Command::new(bin());
    cmd.env_remove("AGENTSTREAM_FAKE_TRACE").args(["run", "--agent", agent, "--bin", bin_path]).args(extra);
    for (k, v) in env {
        cmd.env(k, v);
    }
    shown(cmd.args(["--", "hi"]))
}

/// The fake harness replaying the trace at `prefix` (`<prefix>.input.jsonl`, …) as `agent`.
fn replay(agent: &str, prefix: &Path, extra: &[&str]) -> Shown {
    run(agent, fake(), &[("AGENTSTREAM_FAKE_TRACE", prefix)], extra)
}

fn exec(command: &[&str]) -> Shown {
    shown(Command::new(bin()).arg("exec").arg("--").args(command))
}

fn parse(agent: &str, input: &[u8]) -> Shown {
    let mut child = Command::new(bin())
        .args(["parse", "--agent", agent, "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("agentstream parse runs");
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    Shown {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

/// Every golden case of `agent`: its trace prefix.
fn golden_cases(agent: &str) -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(golden_dir(agent))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".input.jsonl").map(|case| golden_dir(agent).join(case))
        })
        .collect();
    cases.sort();
    cases
}

fn with_suffix(prefix: &Path, suffix: &str) -> PathBuf {
    PathBuf::from(format!("{}{suffix}", prefix.display()))
}

/// A scratch directory of this test process, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("agentstream-human-view-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// Write `<dir>/<name>.input.jsonl` with `lines`; returns the trace prefix.
    fn trace(&self, name: &str, lines: &[Value]) -> PathBuf {
        let prefix = self.0.join(name);
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(with_suffix(&prefix, ".input.jsonl"), text).unwrap();
        prefix
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A claude stream-json trace: one tool call per `(name, input, result)`, then the result.
fn claude_trace(calls: &[(&str, Value, &str)]) -> Vec<Value> {
    let mut lines = vec![serde_json::json!({"type": "system", "subtype": "init", "session_id": "s1", "model": "m"})];
    for (i, (name, input, result)) in calls.iter().enumerate() {
        let id = format!("toolu_{i}");
        lines.push(serde_json::json!({"type": "assistant", "session_id": "s1", "message": {"id": format!("msg_{i}"),
            "role": "assistant", "model": "m", "content": [{"type": "tool_use", "id": id, "name": name, "input": input}]}}));
        let is_error = result.starts_with("<tool_use_error>");
        lines.push(serde_json::json!({"type": "user", "session_id": "s1", "message": {"role": "user",
            "content": [{"tool_use_id": id, "type": "tool_result", "content": result, "is_error": is_error}]}}));
    }
    lines.push(serde_json::json!({"type": "result", "subtype": "success", "is_error": false, "result": "done",
        "session_id": "s1", "usage": {"input_tokens": 1, "output_tokens": 1}}));
    lines
}

/// Letters and digits, lower case.
fn squash(s: &str) -> String {
    s.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

/// The faults a person should never see, for one rendered run.
fn faults(out: &str) -> Vec<String> {
    let mut faults = Vec::new();
    for line in out.lines() {
        // "✓ Read Read /p": the title already names the tool.
        let mut words = line.split_whitespace();
        if let (Some("✓" | "✗" | "→" | "…"), Some(a), Some(b)) = (words.next(), words.next(), words.next())
            && squash(a) == squash(b)
            && !squash(a).is_empty()
        {
            faults.push(format!("doubled name: {line}"));
        }
        // "1 lines", "1 files", "… 4 lines more".
        let words: Vec<&str> = line.split_whitespace().collect();
        for pair in words.windows(2) {
            if pair[0] == "1" && pair[1].ends_with('s') && ["lines", "files", "events", "calls"].contains(&pair[1]) {
                faults.push(format!("plural after 1: {line}"));
            }
        }
        if line.contains("lines more") || line.contains("line more") {
            faults.push(format!("word order: {line}"));
        }
        for tag in ["<system>", "</system>", "<system-reminder>", "<tool_use_error>", "<task_result>"] {
            if line.contains(tag) {
                faults.push(format!("raw control tag {tag}: {line}"));
            }
        }
        if line.contains('\x1b') {
            faults.push(format!("escape sequence: {line:?}"));
        }
    }
    faults
}

/// The type of the last hook of a golden case: how a replay of it ends.
fn expected_terminal(prefix: &Path) -> String {
    let hooks = std::fs::read_to_string(with_suffix(prefix, ".hooks.jsonl")).unwrap();
    let last: Value = serde_json::from_str(hooks.lines().last().unwrap()).unwrap();
    last["type"].as_str().unwrap().to_string()
}

#[test]
fn every_golden_case_reads_cleanly_and_ends_as_the_run_did() {
    for agent in AGENTS {
        let cases = golden_cases(agent);
        assert!(cases.len() >= 3, "{agent}: golden cases");
        for prefix in cases {
            let case = format!("{agent}/{}", prefix.file_name().unwrap().to_string_lossy());
            let out = replay(agent, &prefix, &[]);
            let faults = faults(&out.stdout);
            assert!(faults.is_empty(), "{case}:\n{}\n--- output:\n{}", faults.join("\n"), out.stdout);
            // The closing line and the exit code are the run's real outcome.
            let completed = expected_terminal(&prefix) == "run.completed";
            assert_eq!(out.summary().starts_with("✓ completed"), completed, "{case}:\n{}", out.stdout);
            assert_eq!(out.summary().starts_with("✗ failed"), !completed, "{case}:\n{}", out.stdout);
            assert_eq!(out.code, if completed { 0 } else { 1 }, "{case}: exit code");
            assert_eq!(out.stdout.matches("✓ completed").count(), usize::from(completed), "{case}");
        }
    }
}

/// The edits of `prefix`'s expected events: (path, old text, new text) of each diff of a call
/// that completed.
fn completed_diffs(prefix: &Path) -> Vec<(String, Option<String>, String)> {
    let expected = std::fs::read_to_string(with_suffix(prefix, ".expected.jsonl")).unwrap();
    let events: Vec<Value> = expected.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let completed =
        |id: &Value| events.iter().any(|e| e["update"]["toolCallId"] == *id && e["update"]["status"] == "completed");
    let mut diffs = Vec::new();
    for e in &events {
        let u = &e["update"];
        if !u["sessionUpdate"].as_str().is_some_and(|s| s.starts_with("tool_call")) || !completed(&u["toolCallId"]) {
            continue;
        }
        for c in u["content"].as_array().into_iter().flatten().filter(|c| c["type"] == "diff") {
            let text = |v: &Value| v.as_str().map(str::to_string);
            let diff = (text(&c["path"]).unwrap(), text(&c["oldText"]), text(&c["newText"]).unwrap());
            if !diffs.contains(&diff) {
                diffs.push(diff);
            }
        }
    }
    diffs
}

#[test]
fn a_completed_edit_shows_its_diff_for_every_agent() {
    let mut agents_with_diffs = Vec::new();
    for agent in AGENTS {
        for prefix in golden_cases(agent) {
            let diffs = completed_diffs(&prefix);
            if diffs.is_empty() {
                continue;
            }
            agents_with_diffs.push(agent);
            let out = replay(agent, &prefix, &[]).stdout;
            for (path, old, new) in diffs {
                let old_lines: Vec<&str> = old.as_deref().unwrap_or_default().lines().collect();
                let new_lines: Vec<&str> = new.lines().collect();
                let added = new_lines.iter().find(|l| !old_lines.contains(l)).expect("a diff adds a line");
                assert!(out.contains(&format!("\n  + {added}\n")), "{agent} {path}: + {added:?} in\n{out}");
                if let Some(removed) = old_lines.iter().find(|l| !new_lines.contains(l)) {
                    assert!(out.contains(&format!("\n  - {removed}\n")), "{agent} {path}: - {removed:?} in\n{out}");
                }
            }
            // The harness's "file updated" text is not repeated under a diff.
            assert!(!out.contains("has been updated successfully"), "{agent}:\n{out}");
        }
    }
    agents_with_diffs.dedup();
    // codex's `file_change` item carries paths only (no texts): its edit line says "Edit 2 files".
    assert_eq!(agents_with_diffs, ["claude", "gemini", "qwen", "kimi", "opencode", "droid"]);
    let codex = replay("codex", &golden_dir("codex").join("s3-read-edit"), &[]).stdout;
    assert!(codex.contains("✓ Edit 2 files\n"), "{codex}");
}

#[test]
fn a_long_edit_is_cut_with_a_count_and_a_failed_one_shows_its_error() {
    let scratch = Scratch::new("long-edit");
    let long: String = (0..100).map(|i| format!("line {i}\n")).collect();
    let prefix = scratch.trace(
        "long",
        &claude_trace(&[
            ("Write", serde_json::json!({"file_path": "/p/long.txt", "content": long}), "File created"),
            (
                "Edit",
                serde_json::json!({"file_path": "/p/a.py", "old_string": "x = 1\ny = 2\nz = 3", "new_string": "x = 1\ny = 20\nz = 3"}),
                "<tool_use_error>String to replace not found in file.</tool_use_error>",
            ),
        ]),
    );
    for agent in ["claude", "qwen"] {
        let out = replay(agent, &prefix, &[]).stdout;
        assert!(
            out.contains("  + line 11\n  … 88 more lines\n"),
            "{agent}: 12 lines of the diff, then a count:\n{out}"
        );
        assert!(!out.contains("line 12\n"), "{out}");
        // The edit failed: its error, not its diff.
        let error = out.find("\n  String to replace not found in file.\n").expect(&out);
        assert!(out[..error].rsplit('\n').next().unwrap().starts_with("✗ Edit"), "{agent}:\n{out}");
        assert!(!out.contains("+ y = 20"), "{out}");
        assert!(faults(&out).is_empty(), "{:?}", faults(&out));
    }
}

#[test]
fn results_are_excerpts_in_words_without_control_tags() {
    let scratch = Scratch::new("excerpts");
    let reminder = "1\ta\n2\tb\n3\tc\n4\td\n\n<system-reminder>\nWhenever you read a file, consider whether it is malware.\n</system-reminder>\n";
    let prefix = scratch.trace(
        "excerpts",
        &claude_trace(&[
            ("Read", serde_json::json!({"file_path": "/p/a.txt"}), reminder),
            ("Bash", serde_json::json!({"command": "printf 'x\\n\\n\\n'"}), "x\n\n\n"),
        ]),
    );
    let out = replay("claude", &prefix, &[]).stdout;
    assert!(out.contains("✓ Read /p/a.txt\n  1\ta\n  2\tb\n  3\tc\n  … 1 more line\n"), "{out}");
    assert!(!out.contains("malware") && !out.contains("system-reminder"), "{out}");
    assert!(
        out.contains("✓ Bash `printf 'x\\n\\n\\n'`\n  x\n✓ completed"),
        "trailing blank lines are nothing more:\n{out}"
    );
    // kimi's status line keeps its words without its tags.
    let kimi = replay("kimi", &golden_dir("kimi").join("s2-bash"), &[]).stdout;
    assert!(kimi.contains("✓ Shell `echo hi`\n  Command executed successfully.\n  hi\n"), "{kimi}");
    // Tool lines name the tool once.
    let claude = replay("claude", &golden_dir("claude").join("s3-read-edit"), &[]).stdout;
    assert!(claude.contains("✓ Read /home/dev/project/hello.py\n"), "{claude}");
    let gemini = replay("gemini", &golden_dir("gemini").join("s2-bash"), &[]).stdout;
    assert!(gemini.contains("✓ run_shell_command `ls -1`\n"), "a name that adds something stays:\n{gemini}");
}

#[test]
fn escape_sequences_from_the_harness_never_reach_the_terminal() {
    let scratch = Scratch::new("escapes");
    let nasty = "\u{1b}]0;PWNED\u{7}\u{1b}[2J\u{1b}[31mRED\u{1b}[0m";
    let mut lines = claude_trace(&[("Bash", serde_json::json!({"command": format!("ls {nasty}")}), "ok")]);
    lines.insert(
        1,
        serde_json::json!({"type": "assistant", "session_id": "s1", "message": {"id": "msg_t", "role": "assistant",
            "model": "m", "content": [{"type": "text", "text": format!("I'll list{nasty}\r\nthe files")},
                                      {"type": "thinking", "thinking": format!("hmm{nasty}")}]}}),
    );
    let prefix = scratch.trace("escapes", &lines);
    let out = replay("claude", &prefix, &[]).stdout;
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}') && !out.contains('\r'), "{out:?}");
    assert!(out.contains("I'll listRED\nthe files"), "{out}");
    assert!(out.contains("✓ Bash `ls RED`"), "{out}");
}

#[test]
fn secrets_stay_masked_in_the_human_view() {
    let scratch = Scratch::new("secrets");
    let key = "sk-live-0123456789abcdefABCD";
    let prefix = scratch.trace(
        "secrets",
        &claude_trace(&[
            ("Bash", serde_json::json!({"command": format!("curl -H 'Authorization: Bearer {key}' https://x")}), "ok"),
            ("Write", serde_json::json!({"file_path": "/p/.env", "content": format!("OPENAI_API_KEY={key}\n")}), "ok"),
            (
                "Edit",
                serde_json::json!({"file_path": "/p/.env", "old_string": format!("OPENAI_API_KEY={key}"), "new_string": "OPENAI_API_KEY=$KEY"}),
                "ok",
            ),
        ]),
    );
    for agent in ["claude", "qwen"] {
        let out = replay(agent, &prefix, &[]).stdout;
        assert!(!out.contains("0123456789abcdef"), "{agent}: a secret in the human view:\n{out}");
        assert!(out.contains("Bearer [redacted]"), "{agent}: the title, masked:\n{out}");
        assert!(out.contains("  + OPENAI_API_KEY=[redacted]\n"), "{agent}: the written text, masked:\n{out}");
        assert!(out.contains("  - OPENAI_API_KEY=[redacted]\n  + OPENAI_API_KEY=$KEY\n"), "{agent}:\n{out}");
        // Asked for explicitly, the inputs are shown as the harness printed them.
        let raw = replay(agent, &prefix, &["--no-redact"]).stdout;
        assert!(raw.contains(&format!("  + OPENAI_API_KEY={key}\n")), "{agent}:\n{raw}");
    }
}

#[test]
fn exec_shows_the_commands_output_bounded() {
    let out = exec(&["sh", "-c", "for i in $(seq 1 100); do echo line $i; done; exit 3"]);
    assert!(out.stdout.starts_with("… 60 lines before these (--json prints every line)\nline 61\n"), "{}", out.stdout);
    assert!(out.stdout.contains("\nline 100\n✗ failed after "), "{}", out.stdout);
    assert_eq!(out.stdout.lines().count(), 1 + 40 + 1, "{}", out.stdout);
    assert_ne!(out.code, 0);
    assert!(!out.stdout.contains('✓'), "{}", out.stdout);

    // stderr is part of a command's output.
    let out = exec(&["sh", "-c", "echo out; echo oops >&2; exit 2"]);
    let mut shown: Vec<&str> = out.stdout.lines().take(2).collect();
    shown.sort();
    assert_eq!(shown, ["oops", "out"], "{}", out.stdout);
    assert!(out.summary().starts_with("✗ failed after "), "{}", out.stdout);

    let out = exec(&["printf", "a\\nb"]);
    assert_eq!(out.stdout.lines().collect::<Vec<_>>()[..2], ["a", "b"], "a last line without newline is shown");
    assert!(out.summary().starts_with("✓ completed"), "{}", out.stdout);
    assert_eq!(out.code, 0);

    // A huge line is cut; escape sequences never reach the terminal; carriage returns rewrite.
    let out = exec(&[
        "sh",
        "-c",
        "head -c 100000 /dev/zero | tr '\\0' x; printf '\\n\\033[2J\\033[31mred\\033[0m\\n10%%\\r100%%\\n'",
    ]);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines[0].chars().count(), 241, "240 characters and …");
    assert_eq!(lines[1..3], ["red", "100%"], "{:?}", out.stdout);
    assert!(faults(&out.stdout).is_empty(), "{:?}", faults(&out.stdout));

    let out = exec(&["true"]);
    assert_eq!(out.stdout.lines().count(), 1, "no output, one summary line: {}", out.stdout);
}

#[test]
fn a_wrong_bin_or_foreign_output_never_renders_completed() {
    let foreign = |agent: &str| golden_dir(if agent == "codex" { "claude" } else { "codex" }).join("s2-bash");
    for agent in AGENTS {
        let mut tries: Vec<(String, Shown)> = ["/bin/echo", "/bin/true", "cat"]
            .iter()
            .map(|bin_path| (format!("--bin {bin_path}"), run(agent, bin_path, &[], &[])))
            .collect();
        tries.push(("another harness's output".into(), replay(agent, &foreign(agent), &[])));
        for (what, out) in tries {
            let all = format!("{agent}, {what}:\n{}{}", out.stdout, out.stderr);
            assert!(!out.stdout.contains("✓ completed"), "{all}");
            assert!(out.summary().starts_with("✗ failed after "), "{all}");
            assert_eq!(out.code, 1, "{all}");
        }
        // Output that is not the harness's is named as such.
        let out = run(agent, "/bin/echo", &[], &[]);
        if agent != "kimi" {
            let said = format!("no events decoded: 1 line was not {agent} JSON");
            assert!(out.summary().contains(&said), "{agent}: {}", out.summary());
        }
        let out = replay(agent, &foreign(agent), &[]);
        assert!(out.summary().contains(&format!("not {agent} JSON")), "{agent}: {}", out.summary());
    }
    // kimi prints its failures as plain text: echo's words are its error; nothing at all is none.
    let out = run("kimi", "/bin/true", &[], &[]);
    assert!(out.summary().contains("printed nothing on stdout"), "{}", out.summary());
}

#[test]
fn parse_of_input_that_is_not_the_harness_output_says_so_in_one_line() {
    let mut binary: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    binary.extend(b"\n\x7fELF\x02\x01\x01\x00\xff\xfe\n");
    for agent in AGENTS {
        let foreign =
            std::fs::read(golden_dir(if agent == "codex" { "claude" } else { "codex" }).join("s2-bash.input.jsonl"))
                .unwrap();
        let mut inputs: Vec<(&str, &[u8])> = vec![("another harness's JSON", &foreign), ("binary", &binary)];
        if agent != "kimi" {
            inputs.push(("plain text", b"hello\nworld\n"));
        }
        for (what, input) in inputs {
            let out = parse(agent, input);
            let all = format!("{agent}, {what}: {}", out.stderr);
            assert_eq!(out.code, 1, "{all}");
            assert_eq!(out.stdout, "", "{all}");
            assert_eq!(out.stderr.lines().count(), 1, "one line: {all}");
            let said = format!("agentstream parse ({agent}): no events decoded: ");
            assert!(out.stderr.starts_with(&said), "{all}");
            assert!(out.stderr.contains(&format!(" lines were not {agent} JSON (")), "{all}");
            if what == "plain text" {
                assert_eq!(out.stderr, format!("{said}2 lines were not {agent} JSON (2 invalid JSON)\n"));
            }
        }
        // Empty input is nothing wrong; the harness's own output decodes.
        let out = parse(agent, b"");
        assert_eq!(
            (out.code, out.stderr.as_str()),
            (0, format!("agentstream parse ({agent}): 0 lines, 0 events\n").as_str())
        );
        let own = std::fs::read(golden_dir(agent).join("s1-text.input.jsonl")).unwrap();
        let out = parse(agent, &own);
        assert_eq!(out.code, 0, "{agent}: {}", out.stderr);
        assert!(!out.stdout.is_empty());
    }
    // kimi prints its failures as plain text, so plain text decodes to `error` events
    // (decisions.md §2), its per-line diagnostics capped; binary is not text.
    let text: Vec<u8> = (0..40).flat_map(|i| format!("Traceback line {i}\n").into_bytes()).collect();
    let out = parse("kimi", &text);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("\"sessionUpdate\":\"error\""), "{}", out.stdout);
    assert!(out.stderr.lines().count() <= 12, "{}", out.stderr);
}

#[test]
fn a_call_announced_after_its_result_is_shown_once_finished_not_started_again() {
    // kimi and droid e-odd-lines: call_late's result comes before its call.
    for agent in ["kimi", "droid"] {
        let shown = replay(agent, &golden_dir(agent).join("e-odd-lines"), &[]);
        let lines: Vec<&str> = shown.stdout.lines().filter(|l| l.contains("late")).collect();
        assert!(lines.iter().any(|l| l.starts_with('✓')), "{agent}: its finished line: {}", shown.stdout);
        assert!(!lines.iter().any(|l| l.starts_with('→')), "{agent}: no start after its end: {}", shown.stdout);
    }
}
