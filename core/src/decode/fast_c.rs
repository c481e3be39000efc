//! A validating one-pass JSON scanner over one line, for decoders that read a few fields of a
//! line and skip the rest (written for the Claude-protocol decoders; nothing in it is specific
//! to them, so any decoder can share it).
//!
//! [`Scan`] walks the text once. Objects are read key by key ([`Scan::object`] /
//! [`Scan::next_key`]); a value is read as a string ([`Scan::string`], borrowed from the line
//! unless it holds escapes), kept as printed ([`Scan::raw`]), or skipped ([`Scan::skip`]).
//! Everything walked over is validated as serde_json validates it, so a line this scanner
//! accepts is a line `serde_json::from_str::<IgnoredAny>` accepts and the other way round.
//! Decoding a string is as strict as serde_json's (a lone surrogate escape is an error).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The line is not valid JSON (or a string in it does not decode); the caller classifies it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bad;

/// Result of a scanner step.
pub(crate) type Res<T> = Result<T, Bad>;

/// A string token: its text between the quotes, as printed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct JStr<'a> {
    src: &'a str,
    start: usize,
    end: usize,
    escaped: bool,
}

impl<'a> JStr<'a> {
    /// True when the printed text is exactly `s` (no escapes in it). Keys are compared this way:
    /// a key spelled with escapes is decoded first ([`JStr::decode`]).
    #[inline(always)]
    #[allow(dead_code)] // for decoders that match keys without decoding them
    pub fn is(&self, s: &str) -> bool {
        !self.escaped && self.src.as_bytes().get(self.start..self.end) == Some(s.as_bytes())
    }

    /// The text between the quotes, as printed.
    #[inline(always)]
    pub fn printed(&self) -> &'a str {
        // Both ends are next to a quote, so on character boundaries.
        self.src.get(self.start..self.end).unwrap_or_default()
    }

    /// The printed text, when it holds no escape.
    #[inline(always)]
    pub fn plain(&self) -> Option<&'a str> {
        (!self.escaped).then(|| self.printed())
    }

    /// The decoded string: borrowed when it holds no escape.
    #[inline(always)]
    pub fn decode(&self) -> Res<Cow<'a, str>> {
        if self.escaped { unescape(self.printed()).map(Cow::Owned) } else { Ok(Cow::Borrowed(self.printed())) }
    }
}

/// The scanner. `pos` is the byte offset of the next unread byte.
pub(crate) struct Scan<'a> {
    src: &'a str,
    b: &'a [u8],
    pos: usize,
    /// The entries of the objects being built (a stack: an object's entries are collected here,
    /// then moved into a map of exactly their number).
    entries: Vec<(String, Value)>,
}

#[inline]
fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\n' | b'\t' | b'\r')
}

impl<'a> Scan<'a> {
    /// A scanner at the start of `src`.
    pub fn new(src: &'a str) -> Self {
        Scan::with_scratch(src, Vec::new())
    }

    /// A scanner reusing a buffer for building objects (see [`Scan::into_scratch`]).
    pub fn with_scratch(src: &'a str, mut entries: Vec<(String, Value)>) -> Self {
        entries.clear();
        Scan { src, b: src.as_bytes(), pos: 0, entries }
    }

    /// The buffer, to reuse for the next line.
    pub fn into_scratch(self) -> Vec<(String, Value)> {
        self.entries
    }

    #[inline(always)]
    fn ws(&mut self) {
        while let Some(&c) = self.b.get(self.pos) {
            if !is_ws(c) {
                break;
            }
            self.pos += 1;
        }
    }

    /// The next non-whitespace byte, not consumed.
    #[inline(always)]
    pub fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.pos).copied()
    }

    #[inline(always)]
    fn eat(&mut self, c: u8) -> Res<()> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(Bad)
        }
    }

    /// Only whitespace is left.
    pub fn end(&mut self) -> Res<()> {
        if self.peek().is_none() { Ok(()) } else { Err(Bad) }
    }

    /// Enter the object that is the next value (`Bad` when it is not one).
    #[inline(always)]
    pub fn object(&mut self) -> Res<()> {
        self.eat(b'{')
    }

    /// The next key of the object being read and its `:`, or `None` at its end (`first`: no key
    /// read yet; the caller keeps it).
    #[inline(always)]
    pub fn next_key(&mut self, first: &mut bool) -> Res<Option<JStr<'a>>> {
        match self.peek() {
            Some(b'}') => {
                self.pos += 1;
                return Ok(None);
            }
            Some(b',') if !*first => {
                self.pos += 1;
                if self.peek() != Some(b'"') {
                    return Err(Bad);
                }
            }
            Some(b'"') if *first => {}
            _ => return Err(Bad),
        }
        *first = false;
        self.pos += 1;
        let key = self.string_body()?;
        self.eat(b':')?;
        Ok(Some(key))
    }

    /// Enter the array that is the next value.
    #[inline(always)]
    pub fn array(&mut self) -> Res<()> {
        self.eat(b'[')
    }

    /// Before the next element of the array being read: true when there is one, false at its
    /// end (`]` consumed).
    #[inline(always)]
    pub fn next_element(&mut self, first: &mut bool) -> Res<bool> {
        match self.peek() {
            Some(b']') => {
                self.pos += 1;
                Ok(false)
            }
            Some(b',') if !*first => {
                self.pos += 1;
                Ok(true)
            }
            Some(_) if *first => {
                *first = false;
                Ok(true)
            }
            _ => Err(Bad),
        }
    }

    /// The next value, which must be a string.
    #[inline(always)]
    pub fn string(&mut self) -> Res<JStr<'a>> {
        self.eat(b'"')?;
        self.string_body()
    }

    /// After an opening quote: the string up to its closing quote (validated like serde_json's
    /// `ignore_str`: no control characters, only valid escapes).
    #[inline(always)]
    fn string_body(&mut self) -> Res<JStr<'a>> {
        let start = self.pos;
        let mut escaped = false;
        loop {
            let at = find_special(self.b, self.pos);
            match self.b.get(at) {
                Some(b'"') => {
                    self.pos = at + 1;
                    return Ok(JStr { src: self.src, start, end: at, escaped });
                }
                Some(b'\\') => {
                    escaped = true;
                    self.pos = at + 1;
                    self.escape()?;
                }
                _ => return Err(Bad), // a control character, or the end of the line
            }
        }
    }

    #[inline]
    fn escape(&mut self) -> Res<()> {
        match self.b.get(self.pos) {
            Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                self.pos += 1;
                Ok(())
            }
            Some(b'u') => {
                let hex = self.b.get(self.pos + 1..self.pos + 5).ok_or(Bad)?;
                if !hex.iter().all(u8::is_ascii_hexdigit) {
                    return Err(Bad);
                }
                self.pos += 5;
                Ok(())
            }
            _ => Err(Bad),
        }
    }

    /// Skip the next value (validated), whatever it is.
    #[inline(always)]
    pub fn skip(&mut self) -> Res<()> {
        // Scalars directly; containers in the loop of `skip_any`.
        match self.peek() {
            Some(b'"') => {
                self.pos += 1;
                self.string_body().map(|_| ())
            }
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => self.skip_any(),
        }
    }

    fn skip_any(&mut self) -> Res<()> {
        // Nesting is tracked as a bit stack (1 = object), spilling past 64 levels.
        let mut stack: u64 = 0;
        let mut depth: usize = 0;
        let mut spill: Vec<u64> = Vec::new();
        loop {
            // A value.
            let c = self.peek().ok_or(Bad)?;
            let mut opened = None;
            match c {
                b'"' => {
                    self.pos += 1;
                    self.string_body()?;
                }
                b'{' | b'[' => {
                    self.pos += 1;
                    opened = Some(c == b'{');
                }
                b'-' | b'0'..=b'9' => self.number()?,
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                _ => return Err(Bad),
            }
            // After the value (or just inside a container): find the next value to read.
            let mut first = false;
            if let Some(is_obj) = opened {
                if depth % 64 == 0 && depth > 0 {
                    spill.push(stack);
                    stack = 0;
                }
                stack = (stack << 1) | is_obj as u64;
                depth += 1;
                first = true;
            }
            loop {
                if depth == 0 {
                    return Ok(());
                }
                let in_obj = stack & 1 == 1;
                let close = if in_obj { b'}' } else { b']' };
                match self.peek() {
                    Some(c) if c == close => {
                        self.pos += 1;
                        stack >>= 1;
                        depth -= 1;
                        if depth % 64 == 0 && depth > 0 {
                            stack = spill.pop().unwrap_or(0);
                        }
                        first = false;
                    }
                    Some(b',') if !first => {
                        self.pos += 1;
                        if in_obj {
                            self.eat(b'"')?;
                            self.string_body()?;
                            self.eat(b':')?;
                        }
                        break;
                    }
                    Some(b'"') if first && in_obj => {
                        self.pos += 1;
                        self.string_body()?;
                        self.eat(b':')?;
                        break;
                    }
                    Some(_) if first && !in_obj => break,
                    _ => return Err(Bad),
                }
            }
        }
    }

    /// The next value as printed (validated), without surrounding whitespace.
    pub fn raw(&mut self) -> Res<&'a str> {
        self.ws();
        let start = self.pos;
        self.skip()?;
        Ok(&self.src[start..self.pos])
    }

    /// The next value as a `&RawValue` borrowed from the line (read by serde_json, so it is one
    /// pass); `None` for `null`.
    pub fn raw_value(&mut self) -> Res<Option<&'a RawValue>> {
        if self.peek() == Some(b'n') {
            self.literal(b"null")?;
            return Ok(None);
        }
        let rest = &self.src[self.pos..];
        let mut de = serde_json::Deserializer::from_str(rest);
        let raw = <&RawValue>::deserialize(&mut de).map_err(|_| Bad)?;
        // The value ends where its text ends inside `rest`.
        let end = raw.get().as_ptr() as usize - rest.as_ptr() as usize + raw.get().len();
        self.pos += end;
        Ok(Some(raw))
    }

    /// The next value as a [`Value`], built in this pass with serde_json's semantics (numbers
    /// other than plain integers are read by serde_json itself; a key printed twice keeps its
    /// first place and its last value).
    pub fn json_value(&mut self) -> Res<Value> {
        self.value_at(0)
    }

    /// The next value, which must be an object, as a JSON object.
    pub fn json_object(&mut self) -> Res<Map<String, Value>> {
        self.object_at(0)
    }

    fn value_at(&mut self, depth: usize) -> Res<Value> {
        match self.peek().ok_or(Bad)? {
            b'"' => Ok(Value::String(self.string()?.decode()?.into_owned())),
            b'{' => self.object_at(depth).map(Value::Object),
            b'[' => {
                if depth >= MAX_DEPTH {
                    return Err(Bad);
                }
                self.pos += 1;
                let mut items = Vec::new();
                let mut first = true;
                while self.next_element(&mut first)? {
                    items.push(self.value_at(depth + 1)?);
                }
                Ok(Value::Array(items))
            }
            b't' => self.literal(b"true").map(|_| Value::Bool(true)),
            b'f' => self.literal(b"false").map(|_| Value::Bool(false)),
            b'n' => self.literal(b"null").map(|_| Value::Null),
            _ => {
                let start = self.pos;
                self.number()?;
                number_value(&self.src[start..self.pos])
            }
        }
    }

    fn object_at(&mut self, depth: usize) -> Res<Map<String, Value>> {
        self.object_where(depth, 0, |_, _| true)
    }

    /// The next value, which must be an object, as a JSON object of the entries `keep` accepts
    /// (it sees every entry in order), with room for `spare` more.
    pub fn json_object_where(
        &mut self,
        spare: usize,
        keep: impl FnMut(&str, &Value) -> bool,
    ) -> Res<Map<String, Value>> {
        self.object_where(0, spare, keep)
    }

    fn object_where(
        &mut self,
        depth: usize,
        spare: usize,
        mut keep: impl FnMut(&str, &Value) -> bool,
    ) -> Res<Map<String, Value>> {
        if depth >= MAX_DEPTH {
            return Err(Bad);
        }
        self.object()?;
        let start = self.entries.len();
        let mut first = true;
        while let Some(key) = self.next_key(&mut first)? {
            let key = key.decode()?;
            let value = self.value_at(depth + 1)?;
            if keep(&key, &value) {
                self.entries.push((key.into_owned(), value));
            }
        }
        let n = self.entries.len() - start;
        let mut map = if n + spare == 0 { Map::new() } else { Map::with_capacity(n + spare) };
        for (k, v) in self.entries.drain(start..) {
            map.insert(k, v);
        }
        Ok(map)
    }

    #[inline]
    fn literal(&mut self, word: &[u8]) -> Res<()> {
        if self.b.get(self.pos..self.pos + word.len()) == Some(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(Bad)
        }
    }

    /// A number (grammar as serde_json's `ignore_integer`).
    fn number(&mut self) -> Res<()> {
        let b = self.b;
        let mut i = self.pos;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        match b.get(i) {
            Some(b'0') => {
                i += 1;
                if b.get(i).is_some_and(u8::is_ascii_digit) {
                    return Err(Bad);
                }
            }
            Some(b'1'..=b'9') => {
                i += 1;
                while b.get(i).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                }
            }
            _ => return Err(Bad),
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            let digits = i;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            if i == digits {
                return Err(Bad);
            }
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let digits = i;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            if i == digits {
                return Err(Bad);
            }
        }
        self.pos = i;
        Ok(())
    }
}

const ONES: u64 = u64::MAX / 255;
const HIGH: u64 = ONES << 7;

/// High bit set in each byte of `w` that is a control character (below 0x20); bytes above the
/// first hit may be flagged wrongly, so only the lowest flag counts.
#[inline]
fn ctrl_bytes(w: u64) -> u64 {
    w.wrapping_sub(ONES * 0x20) & !w & HIGH
}

/// High bit set in each byte of `w` equal to `c` (lowest flag exact, as above).
#[inline]
fn eq_bytes(w: u64, c: u8) -> u64 {
    let x = w ^ (ONES * c as u64);
    x.wrapping_sub(ONES) & !x & HIGH
}

/// The index of the first `"`, `\\` or control character at or after `from` (`b.len()` when
/// none), eight bytes at a time.
#[inline(always)]
fn find_special(b: &[u8], from: usize) -> usize {
    let mut i = from;
    while i + 8 <= b.len() {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[i..i + 8]);
        let w = u64::from_le_bytes(w);
        let hits = ctrl_bytes(w) | eq_bytes(w, b'"') | eq_bytes(w, b'\\');
        if hits != 0 {
            return i + hits.trailing_zeros() as usize / 8;
        }
        i += 8;
    }
    while i < b.len() {
        let c = b[i];
        if c == b'"' || c == b'\\' || c < 0x20 {
            return i;
        }
        i += 1;
    }
    i
}

/// How deep values built by [`Scan::json_value`] may nest (serde_json's recursion limit).
const MAX_DEPTH: usize = 127;

/// A number's [`Value`]: a plain integer directly, anything else through serde_json.
#[inline]
fn number_value(text: &str) -> Res<Value> {
    if text.len() <= 19 && text.bytes().all(|c| c.is_ascii_digit()) {
        let n = text.bytes().fold(0u64, |n, c| n * 10 + u64::from(c - b'0'));
        return Ok(Value::from(n));
    }
    serde_json::from_str(text).map_err(|_| Bad)
}

/// Decode the escapes of a string's printed text (already validated by the scanner), as strictly
/// as serde_json: a surrogate escape must be a leading one followed by a trailing one.
fn unescape(raw: &str) -> Res<String> {
    let b = raw.as_bytes();
    let mut out = String::with_capacity(raw.len());
    let mut i = 0;
    while let Some(off) = memchr::memchr(b'\\', &b[i..]) {
        out.push_str(&raw[i..i + off]);
        i += off + 1;
        let c = *b.get(i).ok_or(Bad)?;
        i += 1;
        match c {
            b'"' => out.push('"'),
            b'\\' => out.push('\\'),
            b'/' => out.push('/'),
            b'b' => out.push('\u{8}'),
            b'f' => out.push('\u{c}'),
            b'n' => out.push('\n'),
            b'r' => out.push('\r'),
            b't' => out.push('\t'),
            b'u' => {
                let n = hex4(b, i)?;
                i += 4;
                let ch = match n {
                    0xDC00..=0xDFFF => return Err(Bad),
                    0xD800..=0xDBFF => {
                        if b.get(i..i + 2) != Some(b"\\u") {
                            return Err(Bad);
                        }
                        let n2 = hex4(b, i + 2)?;
                        if !(0xDC00..=0xDFFF).contains(&n2) {
                            return Err(Bad);
                        }
                        i += 6;
                        char::from_u32((((n - 0xD800) << 10) | (n2 - 0xDC00)) + 0x1_0000)
                    }
                    n => char::from_u32(n),
                };
                out.push(ch.ok_or(Bad)?);
            }
            _ => return Err(Bad),
        }
    }
    out.push_str(&raw[i..]);
    Ok(out)
}

fn hex4(b: &[u8], at: usize) -> Res<u32> {
    let digits = b.get(at..at + 4).ok_or(Bad)?;
    let mut n = 0u32;
    for d in digits {
        n = (n << 4) | (*d as char).to_digit(16).ok_or(Bad)?;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::IgnoredAny;

    fn scans(s: &str) -> bool {
        let mut sc = Scan::new(s);
        sc.skip().is_ok() && sc.end().is_ok()
    }

    #[test]
    fn accepts_exactly_what_serde_json_accepts() {
        let cases = [
            "{}",
            "[]",
            "1",
            "-0",
            "-0.5e+3",
            "01",
            "1.",
            ".5",
            "1e",
            "1e+",
            "-",
            "\"a\\u00e9\\n\"",
            "\"\\x\"",
            "\"\\u12\"",
            "\"a\u{1}\"",
            "{\"a\":1,}",
            "[1,]",
            "[,1]",
            "{\"a\" 1}",
            "{\"a\":}",
            "{1:2}",
            "[1 2]",
            "{\"a\":[1,{\"b\":null}],\"c\":true}",
            "  {\"a\" : [ ] }  ",
            "tru",
            "nul",
            "[",
            "{",
            "\"abc",
            "}",
            "[1]]",
            "{\"a\":1}}",
            "\"\\ud800\"",
            "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
            "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
            "{\"a\":{\"b\":{\"c\":[{},[],\"x\"]}}}",
            "1 2",
            "\"a\"\"b\"",
            "[true,false,null,-1.5E-7]",
        ];
        for c in cases {
            assert_eq!(scans(c), serde_json::from_str::<IgnoredAny>(c).is_ok(), "{c}");
        }
    }

    /// Random token soup (a fixed seed): the scanner and serde_json agree on every string, and
    /// `json_value` builds what serde_json builds.
    #[test]
    fn agrees_with_serde_json_on_random_token_soup() {
        const TOKENS: &[&str] = &[
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            " ",
            "\t",
            "\r",
            "\"a\"",
            "\"k\":",
            "\"\\n\"",
            "\"\\u00e9\"",
            "\"\\ud83d\\ude00\"",
            "\"\\ud83d\"",
            "\"\\x\"",
            "\"\u{1}\"",
            "0",
            "-1",
            "1.5",
            "2e9",
            "01",
            "1.",
            "-",
            "true",
            "false",
            "null",
            "nul",
            "1e400",
            "18446744073709551616",
            "\"é\"",
        ];
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut valid = 0;
        for _ in 0..20_000 {
            let n = (next() % 12) as usize + 1;
            let mut s = String::new();
            for _ in 0..n {
                s.push_str(TOKENS[(next() % TOKENS.len() as u64) as usize]);
            }
            let serde_ok = serde_json::from_str::<IgnoredAny>(&s).is_ok();
            assert_eq!(scans(&s), serde_ok, "{s:?}");
            valid += serde_ok as usize;
            let mut sc = Scan::new(&s);
            let ours = sc.json_value().and_then(|v| sc.end().map(|_| v)).ok();
            assert_eq!(ours, serde_json::from_str::<Value>(&s).ok(), "{s:?}");
        }
        assert!(valid > 1000, "the soup should hold valid JSON too ({valid})");
    }

    #[test]
    fn unescapes_like_serde_json() {
        for s in [
            r#""plain""#,
            r#""a\"b\\c\/d\b\f\n\r\t""#,
            r#""\u00e9\u20ac""#,
            r#""\ud83d\ude00""#,
            r#""\ud83d""#,
            r#""\ude00""#,
            r#""\ud83d\u0041""#,
            r#""\ud83dx""#,
            r#""x\u0000y""#,
        ] {
            let mut sc = Scan::new(s);
            let ours = sc.string().and_then(|j| j.decode()).ok().map(Cow::into_owned);
            assert_eq!(ours, serde_json::from_str::<String>(s).ok(), "{s}");
        }
    }

    #[test]
    fn raw_values_end_where_the_value_ends() {
        let mut sc = Scan::new(r#"{"a": {"x":[1,2]} , "b":null,"c":"s"}"#);
        let mut first = true;
        sc.object().unwrap();
        assert!(sc.next_key(&mut first).unwrap().unwrap().is("a"));
        assert_eq!(sc.raw_value().unwrap().unwrap().get(), r#"{"x":[1,2]}"#);
        assert!(sc.next_key(&mut first).unwrap().unwrap().is("b"));
        assert!(sc.raw_value().unwrap().is_none());
        assert!(sc.next_key(&mut first).unwrap().unwrap().is("c"));
        assert_eq!(sc.raw().unwrap(), r#""s""#);
        assert!(sc.next_key(&mut first).unwrap().is_none());
        sc.end().unwrap();
    }
}
