//! The output of a command run by `exec`, kept for the human view: its last lines, bounded.
//!
//! stdout and stderr arrive as chunks that may end mid-line, interleaved in the order the
//! command wrote them; each stream's unfinished line is held until its newline (or the end).
//! Only the last [`TAIL_LINES`] lines are kept, each cut to [`LINE_CHARS`] characters, so a
//! command that prints gigabytes costs the view a few kilobytes; the lines before them are
//! counted.

use std::collections::VecDeque;

use agentstream_core::tools::truncate_chars;

use super::preview::printable;

/// Lines of a command's output shown at the end.
pub const TAIL_LINES: usize = 40;

/// Characters of one output line shown (the rest is cut with `…`).
pub const LINE_CHARS: usize = 240;

/// Which of the command's streams a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// The last lines of a command's output.
#[derive(Debug, Default)]
pub struct OutputTail {
    lines: VecDeque<(Stream, String)>,
    /// Complete lines that fell out of the tail.
    dropped: usize,
    /// The unfinished line of stdout and of stderr (bounded like a kept line).
    partial: [String; 2],
}

impl OutputTail {
    /// Take a chunk of `stream`.
    pub fn push(&mut self, stream: Stream, chunk: &str) {
        let mut rest = chunk;
        while let Some(nl) = rest.find('\n') {
            self.extend_partial(stream, &rest[..nl]);
            let line = std::mem::take(&mut self.partial[stream as usize]);
            self.keep(stream, line);
            rest = &rest[nl + 1..];
        }
        self.extend_partial(stream, rest);
    }

    /// The unfinished line grows only up to what will be shown (plus room for `\r` rewrites).
    fn extend_partial(&mut self, stream: Stream, text: &str) {
        let partial = &mut self.partial[stream as usize];
        if let Some(cr) = text.rfind('\r') {
            // A carriage return starts the line over, as on a terminal.
            partial.clear();
            partial.push_str(&text[cr + 1..]);
        } else if partial.len() < LINE_CHARS * 4 {
            partial.push_str(agentstream_core::char_boundary::prefix(text, LINE_CHARS * 4 - partial.len()));
        }
    }

    fn keep(&mut self, stream: Stream, line: String) {
        let line = truncate_chars(&printable(&line), LINE_CHARS);
        self.lines.push_back((stream, line));
        if self.lines.len() > TAIL_LINES {
            self.lines.pop_front();
            self.dropped += 1;
        }
    }

    /// The last complete line so far (for a live status line).
    pub fn last_line(&self) -> Option<&str> {
        self.lines.back().map(|(_, l)| l.as_str())
    }

    /// End of output: unfinished lines are kept; returns the lines left out before the tail and
    /// the tail, oldest first.
    pub fn finish(&mut self) -> (usize, Vec<(Stream, String)>) {
        for stream in [Stream::Stdout, Stream::Stderr] {
            let line = std::mem::take(&mut self.partial[stream as usize]);
            if !line.is_empty() {
                self.keep(stream, line);
            }
        }
        (std::mem::take(&mut self.dropped), self.lines.drain(..).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_across_chunks_and_streams_come_out_whole() {
        let mut t = OutputTail::default();
        t.push(Stream::Stdout, "on");
        t.push(Stream::Stderr, "oops\n");
        t.push(Stream::Stdout, "e\ntw");
        t.push(Stream::Stdout, "o");
        let (dropped, lines) = t.finish();
        assert_eq!(dropped, 0);
        assert_eq!(
            lines,
            [
                (Stream::Stderr, "oops".to_string()),
                (Stream::Stdout, "one".to_string()),
                (Stream::Stdout, "two".to_string())
            ]
        );
    }

    #[test]
    fn only_the_tail_is_kept_and_the_rest_is_counted() {
        let mut t = OutputTail::default();
        for i in 0..1000 {
            t.push(Stream::Stdout, &format!("line {i}\n"));
        }
        t.push(Stream::Stdout, &"x".repeat(100_000));
        t.push(Stream::Stdout, "\nprogress 10%\rprogress 100%\n");
        let (dropped, lines) = t.finish();
        assert_eq!(dropped, 1002 - TAIL_LINES);
        assert_eq!(lines.len(), TAIL_LINES);
        assert_eq!(lines[TAIL_LINES - 3].1, "line 999");
        assert_eq!(lines[TAIL_LINES - 2].1.chars().count(), LINE_CHARS + 1, "cut with …");
        assert_eq!(lines[TAIL_LINES - 1].1, "progress 100%");
    }
}
