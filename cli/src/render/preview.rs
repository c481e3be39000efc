//! Bounded, printable excerpts of text the harness or a command printed: a person sees the
//! first few lines of a tool result, each cut to a width, never a terminal escape sequence.

use std::borrow::Cow;

use agentstream_core::tools::truncate_chars;

/// The first lines of a text and how many were left out.
#[derive(Debug, PartialEq, Eq)]
pub struct Preview {
    /// The lines shown, printable and cut to the width.
    pub lines: Vec<String>,
    /// Lines left out after them.
    pub more: usize,
}

/// At most `max_lines` lines of `text`, each cut to `max_chars` characters; blank lines at
/// the start and the end are not counted (a result ending in newlines has nothing more), and a
/// run of blank lines inside counts as one.
pub fn head(text: &str, max_lines: usize, max_chars: usize) -> Preview {
    let all: Vec<&str> = text.lines().collect();
    let first = all.iter().position(|l| !l.trim().is_empty()).unwrap_or(all.len());
    let last = all.iter().rposition(|l| !l.trim().is_empty()).map_or(first, |i| i + 1);
    let mut body: Vec<&str> = Vec::with_capacity(last - first);
    for line in &all[first..last] {
        let blank = line.trim().is_empty();
        if !(blank && body.last().is_some_and(|l| l.trim().is_empty())) {
            body.push(if blank { "" } else { line });
        }
    }
    Preview {
        lines: body.iter().take(max_lines).map(|l| truncate_chars(&printable(l), max_chars)).collect(),
        more: body.len().saturating_sub(max_lines),
    }
}

/// `line` as a terminal shows it, made safe to print: what a carriage return overwrote is
/// dropped (progress bars), ANSI escape sequences are removed, and any other control character
/// but a tab becomes `�`, so text from a harness or a command cannot move the cursor, clear the
/// screen or change colours in the view.
pub fn printable(line: &str) -> Cow<'_, str> {
    let line = line.trim_end_matches('\r');
    without_controls(line.rsplit('\r').next().unwrap_or(line), false)
}

/// Flowing text from the harness (an answer, a thought, a plan entry, a tool's title) made safe
/// to print: line ends and tabs stay, ANSI escape sequences are removed, and any other control
/// character (a carriage return too, which could overwrite what was printed) becomes `�` —
/// a harness's text cannot set the window title, clear the screen or change colours.
pub fn terminal_text(text: &str) -> Cow<'_, str> {
    without_controls(text, true)
}

/// `text` without escape sequences, every control character but a tab (and, with `lines`, a
/// line end, `\r\n` as `\n`) as `�`; borrowed back when there is none.
fn without_controls(text: &str, lines: bool) -> Cow<'_, str> {
    let kept = |c: char| c == '\t' || (lines && c == '\n');
    if !text.chars().any(|c| c.is_control() && !kept(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => skip_escape(&mut chars),
            '\r' if lines && chars.peek() == Some(&'\n') => {}
            c if c.is_control() && !kept(c) => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Skip the rest of an escape sequence after ESC: a CSI (`ESC [` parameters, final byte
/// `@`–`~`), an OSC (`ESC ]` … BEL or `ESC \`), or a two-character escape.
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => {
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
        Some(']') => {
            while let Some(c) = chars.next() {
                if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                    break;
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flowing_text_keeps_its_lines_and_loses_escapes() {
        assert_eq!(terminal_text("plain\ntext\twith tab"), "plain\ntext\twith tab");
        assert_eq!(
            terminal_text("I'll list\x1b]0;PWNED\x07\x1b[2J\x1b[31mRED\x1b[0m\r\nnext\rover"),
            "I'll listRED\nnext\u{fffd}over"
        );
        assert_eq!(terminal_text("bell\x07 and \x1b]8;;http://x\x1b\\link"), "bell\u{fffd} and link");
    }

    #[test]
    fn blank_edges_do_not_count_and_long_lines_are_cut() {
        let p = head("\n\nREADME.md\nhello.py\n\n\n", 3, 80);
        assert_eq!(p, Preview { lines: vec!["README.md".into(), "hello.py".into()], more: 0 });
        let p = head("a\nb\nc\nd\n", 3, 80);
        assert_eq!((p.lines.len(), p.more), (3, 1));
        assert_eq!(head(&"x".repeat(200), 3, 10).lines, vec![format!("{}…", "x".repeat(10))]);
        assert_eq!(head("", 3, 10), Preview { lines: vec![], more: 0 });
        let p = head("hi\n\n\n[Process exited with code 0]", 3, 80);
        assert_eq!(p, Preview { lines: vec!["hi".into(), "".into(), "[Process exited with code 0]".into()], more: 0 });
    }

    #[test]
    fn escapes_and_control_characters_never_reach_the_terminal() {
        assert_eq!(printable("\x1b[31mred\x1b[0m text"), "red text");
        assert_eq!(printable("\x1b]0;title\x07after"), "after");
        assert_eq!(printable("10%\r50%\r100%"), "100%");
        assert_eq!(printable("a\x07b\tc"), "a\u{fffd}b\tc");
        assert!(matches!(printable("plain\ttext"), Cow::Borrowed(_)));
    }
}
