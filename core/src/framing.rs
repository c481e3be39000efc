//! Line framing: bytes in at any chunking, complete lines out.
//!
//! * `\n` ends a line; a trailing `\r` is stripped (CRLF).
//! * A final line without a newline is flushed by [`LineFramer::finish`].
//! * Each new chunk is scanned once (memchr): a long partial line is never rescanned, so a
//!   line delivered in many small chunks costs O(n), not O(n²).
//! * Complete lines inside a chunk are handed out borrowed, without copying, when no partial
//!   line is pending.
//! * A line longer than `max_line_bytes` is not kept: the framer switches to skipping until the
//!   next newline and reports [`Frame::Oversize`] with the full length, so memory stays bounded
//!   by the limit whatever the input.
//!
//! UTF-8 decoding is left to the caller ([`to_text`]): line boundaries are `\n` bytes, which
//! never occur inside a multi-byte UTF-8 sequence, so decoding per complete line is exact.

use std::borrow::Cow;

/// Default maximum line length: 16 MiB.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// One framed item.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A complete line, without its `\n` / `\r\n`.
    Line(&'a [u8]),
    /// A complete line, without its line ending, already known to be valid UTF-8: the framer
    /// checks all the complete lines of a chunk in one pass (much cheaper than line by line for
    /// short lines), and hands out those of a valid chunk this way.
    Text(&'a str),
    /// A line longer than the limit was skipped; `len` is its full length in bytes (without
    /// the line ending). `terminated` is false when the input ended inside it.
    Oversize {
        /// Length of the skipped line in bytes.
        len: usize,
        /// Whether a newline ended it (false: the input ended mid-line).
        terminated: bool,
    },
}

impl<'a> Frame<'a> {
    /// The line's text (lossy UTF-8, borrowed when valid); `None` for a skipped oversize line.
    pub fn text(&self) -> Option<Cow<'a, str>> {
        match *self {
            Frame::Line(bytes) => Some(to_text(bytes)),
            Frame::Text(text) => Some(Cow::Borrowed(text)),
            Frame::Oversize { .. } => None,
        }
    }
}

/// Splits a byte stream into lines. See the module docs.
#[derive(Debug)]
pub struct LineFramer {
    partial: Vec<u8>,
    max_line_bytes: usize,
    /// Bytes of the current line dropped so far, when it went over the limit.
    skipping: Option<usize>,
    /// Whether the last byte dropped was a `\r` (a CRLF split between two chunks: the `\r` is
    /// not part of the line's length, however the input was chunked).
    skipped_cr: bool,
}

impl Default for LineFramer {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_LINE_BYTES)
    }
}

impl LineFramer {
    /// A framer with the given maximum line length in bytes (at least 1).
    pub fn new(max_line_bytes: usize) -> Self {
        LineFramer { partial: Vec::new(), max_line_bytes: max_line_bytes.max(1), skipping: None, skipped_cr: false }
    }

    /// The configured maximum line length.
    pub fn max_line_bytes(&self) -> usize {
        self.max_line_bytes
    }

    /// True when bytes of an unfinished line are held (or being skipped).
    pub fn has_partial(&self) -> bool {
        !self.partial.is_empty() || self.skipping.is_some()
    }

    /// Bytes currently held for an unfinished line (bounded by the limit).
    pub fn buffered_bytes(&self) -> usize {
        self.partial.len()
    }

    /// Feed a chunk; `sink` is called for every complete line (or oversize report) in order.
    pub fn push(&mut self, mut chunk: &[u8], sink: &mut dyn FnMut(Frame<'_>)) {
        // The chunk's complete lines, checked as UTF-8 at once: a newline is never inside a
        // multi-byte character, so each line of a valid run is valid (an invalid run leaves
        // every line to be checked alone, by `to_text`).
        let whole = chunk;
        let checked = memchr::memrchr(b'\n', chunk).and_then(|end| simdutf8::basic::from_utf8(&chunk[..end]).ok());
        while !chunk.is_empty() {
            match memchr::memchr(b'\n', chunk) {
                Some(nl) => {
                    let head = &chunk[..nl];
                    chunk = &chunk[nl + 1..];
                    if let Some(skipped) = self.skipping.take() {
                        let len = if head.is_empty() {
                            skipped - usize::from(self.skipped_cr)
                        } else {
                            strip_cr_len(skipped + head.len(), head)
                        };
                        sink(Frame::Oversize { len, terminated: true });
                    } else if self.partial.is_empty() {
                        let line = strip_cr(head);
                        if line.len() > self.max_line_bytes {
                            sink(Frame::Oversize { len: line.len(), terminated: true });
                        } else if let Some(checked) = checked {
                            // `line` lies inside `checked` and both its ends are ASCII bytes.
                            let at = line.as_ptr() as usize - whole.as_ptr() as usize;
                            sink(Frame::Text(&checked[at..at + line.len()]));
                        } else {
                            sink(Frame::Line(line));
                        }
                    } else if self.partial.len() + head.len() > self.max_line_bytes + 1 {
                        // +1: a '\r' right before the newline does not count toward the limit.
                        let len = strip_cr_len(self.partial.len() + head.len(), head);
                        self.partial.clear();
                        if len > self.max_line_bytes {
                            sink(Frame::Oversize { len, terminated: true });
                        }
                    } else {
                        self.partial.extend_from_slice(head);
                        let line = strip_cr(&self.partial);
                        if line.len() > self.max_line_bytes {
                            let len = line.len();
                            sink(Frame::Oversize { len, terminated: true });
                        } else {
                            sink(Frame::Line(line));
                        }
                        self.partial.clear();
                    }
                }
                None => {
                    if let Some(skipped) = self.skipping.as_mut() {
                        *skipped += chunk.len();
                        self.skipped_cr = chunk.last() == Some(&b'\r');
                    } else if self.partial.len() + chunk.len() > self.max_line_bytes + 1 {
                        self.skipping = Some(self.partial.len() + chunk.len());
                        self.skipped_cr = chunk.last() == Some(&b'\r');
                        self.partial = Vec::new();
                    } else {
                        self.partial.extend_from_slice(chunk);
                    }
                    chunk = &[];
                }
            }
        }
    }

    /// End of input: flush a final line that had no newline.
    pub fn finish(&mut self, sink: &mut dyn FnMut(Frame<'_>)) {
        if let Some(skipped) = self.skipping.take() {
            sink(Frame::Oversize { len: skipped, terminated: false });
        } else if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            let line_ref = strip_cr(&line);
            if line_ref.len() > self.max_line_bytes {
                sink(Frame::Oversize { len: line_ref.len(), terminated: false });
            } else {
                sink(Frame::Line(line_ref));
            }
        }
    }
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Length of a line of `total` bytes whose last piece is `tail`, minus a trailing `\r`.
fn strip_cr_len(total: usize, tail: &[u8]) -> usize {
    if tail.last() == Some(&b'\r') { total - 1 } else { total }
}

/// Decode a line as UTF-8, replacing invalid sequences with U+FFFD (borrowed when valid).
pub fn to_text(line: &[u8]) -> Cow<'_, str> {
    // Valid lines (nearly all) are checked with SIMD; only an invalid one takes the lossy walk.
    match simdutf8::basic::from_utf8(line) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(line),
    }
}

/// Incremental UTF-8 decoding of a byte stream cut at arbitrary points (stderr text): a
/// multi-byte character split across chunks is held until it completes; invalid bytes become
/// U+FFFD. Nothing is lost: `finish` flushes an incomplete tail as U+FFFD.
#[derive(Debug, Default)]
pub struct Utf8Decoder {
    pending: Vec<u8>,
}

impl Utf8Decoder {
    /// Decode `chunk`, returning the text complete so far.
    pub fn push(&mut self, chunk: &[u8]) -> String {
        let joined;
        let bytes: &[u8] = if self.pending.is_empty() {
            chunk
        } else {
            self.pending.extend_from_slice(chunk);
            joined = std::mem::take(&mut self.pending);
            &joined
        };
        // Hold back an incomplete (not invalid) sequence at the very end.
        let keep = incomplete_tail_len(bytes);
        let (done, tail) = bytes.split_at(bytes.len() - keep);
        let text = String::from_utf8_lossy(done).into_owned();
        self.pending = tail.to_vec();
        text
    }

    /// End of input: an incomplete trailing sequence becomes U+FFFD.
    pub fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.pending);
        String::from_utf8_lossy(&rest).into_owned()
    }
}

/// Text read in pieces (stderr) handed on a line at a time where it can be: the text after the
/// last line ending (`\n` or `\r`) is held back until more comes, until the caller takes it
/// after a pause ([`LineAlignedText::take_partial`]), or while it is at most
/// [`LineAlignedText::MAX_PARTIAL`] bytes. A line that a program wrote in several writes
/// (`password=`, then the value) thus reaches a reader, and a line-based masking, whole. The
/// bytes and their order are unchanged; only where the pieces are cut moves.
#[derive(Debug, Default)]
pub struct LineAlignedText {
    utf8: Utf8Decoder,
    partial: String,
}

impl LineAlignedText {
    /// The longest line end held back; a longer one is handed on as it comes.
    pub const MAX_PARTIAL: usize = 64 * 1024;

    /// Decode `chunk`; returns the text ready to hand on (whole lines, unless a partial line
    /// grew past [`Self::MAX_PARTIAL`]), maybe empty.
    pub fn push(&mut self, chunk: &[u8]) -> String {
        let text = self.utf8.push(chunk);
        let mut ready = if self.partial.is_empty() {
            text
        } else {
            let mut joined = std::mem::take(&mut self.partial);
            joined.push_str(&text);
            joined
        };
        let after_last_end = memchr::memrchr2(b'\n', b'\r', ready.as_bytes()).map_or(0, |at| at + 1);
        if ready.len() - after_last_end <= Self::MAX_PARTIAL {
            self.partial = ready.split_off(after_last_end);
        }
        ready
    }

    /// A partial line is held back.
    pub fn has_partial(&self) -> bool {
        !self.partial.is_empty()
    }

    /// The partial line held back (the program paused mid-line).
    pub fn take_partial(&mut self) -> String {
        std::mem::take(&mut self.partial)
    }

    /// End of input: everything held, an incomplete character as U+FFFD.
    pub fn finish(&mut self) -> String {
        let mut rest = self.take_partial();
        rest.push_str(&self.utf8.finish());
        rest
    }
}

/// Length of a trailing prefix of a multi-byte UTF-8 character that more bytes could complete.
fn incomplete_tail_len(bytes: &[u8]) -> usize {
    for back in 1..=3.min(bytes.len()) {
        let b = bytes[bytes.len() - back];
        if b & 0b1100_0000 == 0b1000_0000 {
            continue; // continuation byte: look further back for the lead byte
        }
        let need = match b {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return 0,
        };
        return if need > back { back } else { 0 };
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_aligned_text_holds_back_a_partial_line_and_loses_nothing() {
        let mut t = LineAlignedText::default();
        assert_eq!(t.push(b"password="), "");
        assert!(t.has_partial());
        assert_eq!(t.push(b"hunter2\nnext "), "password=hunter2\n");
        assert_eq!(t.push(b"line\r\nprogress 10%\r"), "next line\r\nprogress 10%\r");
        assert!(!t.has_partial());
        // A character split across pieces, then a pause: the partial is handed on as it is.
        assert_eq!(t.push(&"caf\u{e9}".as_bytes()[..4]), "");
        assert_eq!(t.take_partial(), "caf");
        assert_eq!(t.push(&"caf\u{e9}".as_bytes()[4..]), "");
        assert_eq!(t.finish(), "\u{e9}");
        // A partial line longer than the bound is not held.
        let long = "x".repeat(LineAlignedText::MAX_PARTIAL + 1);
        assert_eq!(t.push(format!("a\n{long}").as_bytes()), format!("a\n{long}"));
        assert!(!t.has_partial());
        // Bytes cut anywhere come out the same, in order.
        let mut all = "one\ntwo \u{1F600} three\rfour\n\nfive ".as_bytes().to_vec();
        all.push(0xff);
        for size in 1..all.len() {
            let mut t = LineAlignedText::default();
            let mut out = String::new();
            for piece in all.chunks(size) {
                out.push_str(&t.push(piece));
            }
            out.push_str(&t.finish());
            assert_eq!(out, String::from_utf8_lossy(&all), "pieces of {size}");
        }
    }

    fn frames(framer: &mut LineFramer, chunks: &[&[u8]]) -> Vec<String> {
        let mut out = Vec::new();
        let mut sink = |f: Frame<'_>| match f {
            Frame::Line(l) => out.push(String::from_utf8_lossy(l).into_owned()),
            Frame::Text(t) => out.push(t.to_string()),
            Frame::Oversize { len, terminated } => out.push(format!("<oversize {len} {terminated}>")),
        };
        for c in chunks {
            framer.push(c, &mut sink);
        }
        framer.finish(&mut sink);
        out
    }

    #[test]
    fn a_valid_chunks_lines_come_checked_and_an_invalid_line_is_checked_alone() {
        let kinds = |chunk: &[u8]| {
            let mut f = LineFramer::default();
            let mut out = Vec::new();
            f.push(chunk, &mut |fr| {
                out.push(match fr {
                    Frame::Text(t) => format!("text {t}"),
                    Frame::Line(_) => format!("line {}", fr.text().unwrap()),
                    Frame::Oversize { .. } => "oversize".to_string(),
                })
            });
            out
        };
        assert_eq!(kinds("é\r\nb\npartial ü".as_bytes()), ["text é", "text b"]);
        // A bad byte anywhere: every line of the chunk is decoded on its own, the bad one lossily.
        assert_eq!(kinds(b"ok\n\xff\xfebad\nok\n"), ["line ok", "line \u{fffd}\u{fffd}bad", "line ok"]);
        // A multi-byte character cut by the chunk's end is not part of the checked run.
        assert_eq!(kinds(b"a\n\xc3"), ["text a"]);
        let mut f = LineFramer::default();
        let mut out = Vec::new();
        for chunk in [&b"x\xc3"[..], b"\xa9\ny\n"] {
            f.push(chunk, &mut |fr| out.push(fr.text().unwrap().into_owned()));
        }
        assert_eq!(out, ["x\u{e9}", "y"]);
    }

    #[test]
    fn splits_at_any_chunking_and_strips_crlf() {
        let input = b"a\r\nbb\n\nccc";
        let whole = frames(&mut LineFramer::default(), &[input]);
        assert_eq!(whole, vec!["a", "bb", "", "ccc"]);
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(frames(&mut LineFramer::default(), &bytes), whole);
    }

    #[test]
    fn an_oversize_crlf_line_has_one_length_however_it_is_chunked() {
        // Found by the `framing` fuzz target: the '\r' ending one chunk and the '\n' starting
        // the next gave a length one byte longer than the same line in one piece.
        let line = b"0123456789abcdef\r\n";
        let mut whole = Vec::new();
        LineFramer::new(8).push(line, &mut |f| whole.push(format!("{f:?}")));
        let mut split = Vec::new();
        let mut f = LineFramer::new(8);
        f.push(&line[..17], &mut |fr| split.push(format!("{fr:?}")));
        f.push(&line[17..], &mut |fr| split.push(format!("{fr:?}")));
        assert_eq!(whole, ["Oversize { len: 16, terminated: true }"]);
        assert_eq!(split, whole);
    }

    #[test]
    fn oversize_lines_are_skipped_with_their_length() {
        let mut f = LineFramer::new(4);
        assert_eq!(
            frames(&mut f, &[b"1234\n12345\nok\n", b"123", b"456", b"7\nend"]),
            vec!["1234", "<oversize 5 true>", "ok", "<oversize 7 true>", "end"]
        );
        let mut f = LineFramer::new(4);
        assert_eq!(frames(&mut f, &[b"12", b"3456789"]), vec!["<oversize 9 false>"]);
        assert_eq!(f.buffered_bytes(), 0);
    }

    #[test]
    fn a_crlf_line_at_the_limit_fits() {
        let mut f = LineFramer::new(4);
        assert_eq!(frames(&mut f, &[b"12", b"34\r", b"\n"]), vec!["1234"]);
    }

    #[test]
    fn memory_stays_bounded_on_a_huge_line() {
        let mut f = LineFramer::new(1024);
        let chunk = vec![b'x'; 4096];
        let mut n = 0;
        for _ in 0..1000 {
            f.push(&chunk, &mut |_| n += 1);
            assert!(f.buffered_bytes() <= 1025);
        }
        f.push(b"\n", &mut |fr| assert_eq!(fr, Frame::Oversize { len: 4096 * 1000, terminated: true }));
    }

    #[test]
    fn utf8_split_across_chunks_is_kept_whole() {
        let text = "héllo → 世界 🎉";
        let bytes = text.as_bytes();
        for cut in 0..bytes.len() {
            let mut d = Utf8Decoder::default();
            let mut out = d.push(&bytes[..cut]);
            out += &d.push(&bytes[cut..]);
            out += &d.finish();
            assert_eq!(out, text, "cut at {cut}");
        }
        let mut d = Utf8Decoder::default();
        assert_eq!(d.push(b"a\xffb\xe4"), "a\u{fffd}b");
        assert_eq!(d.finish(), "\u{fffd}");
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        assert_eq!(to_text(b"a\xffb"), "a\u{fffd}b");
    }
}
