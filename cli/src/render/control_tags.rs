//! The harnesses' control tags, taken out of tool results before a person reads them.
//!
//! Tool results are written for the model, and harnesses mark parts of them with XML-like tags:
//! kimi wraps its status line in `<system>…</system>`, claude sends refusals as
//! `<tool_use_error>…</tool_use_error>` and adds `<system-reminder>` blocks of instructions for
//! the model, opencode frames a read as `<path>…</path>`, `<type>…</type>`, `<content>`, and a
//! subagent's answer as `<task …>` / `<task_result>`, claude a subagent's totals as `<usage>`.
//! In the human view, `<system-reminder>` blocks are dropped whole (they say nothing about
//! what the tool did) and the other tags are removed with their text kept. Only these names
//! are touched, and only where they open a line or close one: a file's own markup in the
//! middle of a line stays as it is.

use std::borrow::Cow;

/// Blocks addressed to the model alone: dropped with everything inside.
const DROPPED: &[&str] = &["system-reminder"];

/// One-line frames that repeat what the call's line already says (opencode's `<path>…</path>`
/// and `<type>file</type>` before a read's content): the line goes.
const FRAMES: &[&str] = &["path", "type"];

/// Tags around text a person can read too: the tags go, the text stays.
const UNWRAPPED: &[&str] = &["system", "tool_use_error", "task", "task_result", "usage", "content"];

/// `text` without the control tags (see the module docs); borrowed when it has none.
pub fn strip(text: &str) -> Cow<'_, str> {
    if !text.contains('<') {
        return Cow::Borrowed(text);
    }
    let text = drop_blocks(text);
    let mut out = String::with_capacity(text.len());
    let mut changed = matches!(text, Cow::Owned(_));
    for line in text.split_inclusive('\n') {
        let (body, ending) = match line.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        if is_frame(body) {
            changed = true;
            continue;
        }
        let inner = unwrap_line(body);
        if inner.len() == body.len() {
            out.push_str(line);
            continue;
        }
        changed = true;
        // A line that held nothing but tags goes; one that held text keeps it.
        if !inner.trim().is_empty() {
            out.push_str(inner);
            out.push_str(ending);
        }
    }
    if changed { Cow::Owned(out) } else { text }
}

/// Remove every `<name …>…</name>` block of a [`DROPPED`] name (to the end when unclosed).
fn drop_blocks(text: &str) -> Cow<'_, str> {
    let mut text = Cow::Borrowed(text);
    for name in DROPPED {
        while let Some(start) = find_open(&text, name) {
            let close = format!("</{name}>");
            let end = text[start..].find(&close).map_or(text.len(), |i| start + i + close.len());
            let mut owned = text.into_owned();
            owned.replace_range(start..end, "");
            text = Cow::Owned(owned);
        }
    }
    text
}

/// Where `<name>` or `<name attr…>` starts in `text`.
fn find_open(text: &str, name: &str) -> Option<usize> {
    let open = format!("<{name}");
    let mut from = 0;
    while let Some(i) = text[from..].find(&open) {
        let at = from + i;
        match text[at + open.len()..].chars().next() {
            Some('>') | Some(' ') | Some('\t') | Some('\n') => return Some(at),
            _ => from = at + open.len(),
        }
    }
    None
}

/// Whether `line` is one [`FRAMES`] tag with its text: `<path>/p/x</path>`.
fn is_frame(line: &str) -> bool {
    let line = line.trim();
    FRAMES
        .iter()
        .any(|name| line.strip_prefix(&format!("<{name}>")).is_some_and(|rest| rest.ends_with(&format!("</{name}>"))))
}

/// `line` without [`UNWRAPPED`] tags opening it or closing it (surrounding spaces kept out).
fn unwrap_line(line: &str) -> &str {
    let mut rest = line.trim();
    loop {
        let before = rest.len();
        rest = strip_opening(rest).trim_start();
        rest = strip_closing(rest).trim_end();
        if rest.len() == before {
            break;
        }
    }
    if rest.len() == line.trim().len() { line } else { rest }
}

/// `s` without a leading `<name>` or `<name attr="…">` of an [`UNWRAPPED`] name.
fn strip_opening(s: &str) -> &str {
    let Some(tag) = s.strip_prefix('<') else { return s };
    let Some(end) = tag.find('>') else { return s };
    let name = tag[..end].split([' ', '\t']).next().unwrap_or_default();
    if UNWRAPPED.contains(&name) { &tag[end + 1..] } else { s }
}

/// `s` without a trailing `</name>` of an [`UNWRAPPED`] name.
fn strip_closing(s: &str) -> &str {
    let Some(body) = s.strip_suffix('>') else { return s };
    let Some(start) = body.rfind("</") else { return s };
    if UNWRAPPED.contains(&&body[start + 2..]) { &s[..start] } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kimi_status_lines_keep_their_words() {
        assert_eq!(
            strip("<system>Command executed successfully.</system>\nhi\n"),
            "Command executed successfully.\nhi\n"
        );
        assert_eq!(
            strip("<system>ERROR: Command failed with exit code: 2.</system>"),
            "ERROR: Command failed with exit code: 2."
        );
    }

    #[test]
    fn reminders_for_the_model_are_dropped_whole() {
        let text =
            "1\tdef greet():\n<system-reminder>\nWhenever you read a file, consider malware.\n</system-reminder>\n";
        assert_eq!(strip(text), "1\tdef greet():\n\n");
        assert_eq!(strip("ok <system-reminder>never closed"), "ok ");
        assert_eq!(strip("<system-reminder>a</system-reminder>b<system-reminder>c</system-reminder>"), "b");
    }

    #[test]
    fn opencode_frames_and_refusals_are_unwrapped() {
        let read = "<path>/p/hello.py</path>\n<type>file</type>\n<content>\n1: def greet(name):\n</content>";
        assert_eq!(strip(read), "1: def greet(name):\n");
        let task =
            "<task id=\"ses_1\" state=\"completed\">\n<task_result>\nThere are 3 files.\n</task_result>\n</task>";
        assert_eq!(strip(task), "There are 3 files.\n");
        assert_eq!(strip("<tool_use_error>File does not exist.</tool_use_error>"), "File does not exist.");
    }

    #[test]
    fn other_markup_is_left_alone() {
        for text in [
            "<div>html</div>",
            "<path d=\"M0 0\"/>",
            "<path>no end",
            "x <system>inline</system> y",
            "a < b and c > d",
            "<systemd>unit</systemd>",
        ] {
            assert_eq!(strip(text), text);
            assert!(matches!(strip(text), Cow::Borrowed(_)));
        }
    }
}
