//! The one-pass JSON scanner the hand-read decoders (claude/qwen, kimi, droid) read a line with.
//!
//! [`Scan`] walks a line once, with serde_json's exact acceptance rules, and the decoder drives
//! it field by field, so nothing is read twice and nothing passes through serde's layers. It
//! reads in two ways, because serde_json itself reads a value in two ways and a decoder must
//! fail a line exactly where serde_json's reading of it failed:
//!
//! - *Syntax only*, as serde_json's `IgnoredAny`: [`Scan::skip`] and [`Scan::raw`] (any
//!   well-formed escape, any well-formed number, nesting without limit), and the pull reads
//!   [`Scan::open_object`] / [`Scan::next_key`] / [`Scan::open_array`] /
//!   [`Scan::next_element`], which hand back keys as printed ([`JStr`], matched without
//!   decoding, decoded only when they hold an escape) and count no nesting (the caller bounds
//!   it).
//! - *Typed*, as serde_json's typed reads (`String`, `Value`, a derived struct): [`Scan::str`],
//!   [`Scan::object`] / [`Scan::array`] (keys decoded), [`Scan::check`], [`Scan::json`],
//!   [`Scan::json_value`] / [`Scan::json_object`]: a lone surrogate escape or a number beyond
//!   `f64` is refused, and every container they enter counts towards serde_json's nesting limit
//!   of 128 (containers entered by pull reads do not count).
//!
//! Any error is [`Bad`]; the caller classifies the line as serde would
//! ([`super::lenient::classify_failure`]). Acceptance is tested against serde_json below, with
//! fixed cases, random token soup and property tests.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::borrowed::Checked;
pub(crate) use super::text::{Bad, Res};
use super::text::{find_special, raw_count, unescape};
use super::tree::Json;

/// A string token: its text between the quotes, as printed (validated as `IgnoredAny` validates
/// it: its escapes are well formed, but a lone surrogate is only refused by [`JStr::decode`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct JStr<'a> {
    src: &'a str,
    start: usize,
    end: usize,
    /// Where its first backslash is, when it holds one.
    escape: Option<usize>,
}

impl<'a> JStr<'a> {
    /// True when the printed text is exactly `s` (no escapes in it).
    #[cfg(test)]
    pub fn is(&self, s: &str) -> bool {
        self.escape.is_none() && self.src.as_bytes().get(self.start..self.end) == Some(s.as_bytes())
    }

    /// The text between the quotes, as printed.
    #[inline(always)]
    pub fn printed(&self) -> &'a str {
        debug_assert!(self.src.is_char_boundary(self.start) && self.src.is_char_boundary(self.end));
        // SAFETY: `string_body` made this token with `start` right after an opening `"` and
        // `end` at the closing one, both inside `src`: ASCII bytes, so both ends are character
        // boundaries. (Pinned by `strings_are_sliced_on_character_boundaries`.)
        unsafe { self.src.get_unchecked(self.start..self.end) }
    }

    /// The printed text, when it holds no escape.
    #[inline(always)]
    pub fn plain(&self) -> Option<&'a str> {
        self.escape.is_none().then(|| self.printed())
    }

    /// The decoded string: borrowed when it holds no escape. A lone surrogate escape is `Bad`,
    /// as in serde_json's typed string read.
    #[inline(always)]
    pub fn decode(&self) -> Res<Cow<'a, str>> {
        match self.escape {
            None => Ok(Cow::Borrowed(self.printed())),
            Some(at) => unescape(self.src, self.start, at).map(|(s, _)| Cow::Owned(s)),
        }
    }
}

/// The scanner. `pos` is the byte offset of the next unread byte.
pub(crate) struct Scan<'a> {
    src: &'a str,
    b: &'a [u8],
    pos: usize,
    /// serde_json's `remaining_depth`: typed reads enter containers against it.
    depth_left: u8,
    /// The entries of the objects [`Scan::json_value`] is building (a stack: an object's entries
    /// are collected here, then moved into a map of exactly their number), kept from line to
    /// line by [`Scan::with_scratch`].
    entries: Vec<(String, Value)>,
}

#[inline]
fn is_ws(c: u8) -> bool {
    matches!(c, b' ' | b'\n' | b'\t' | b'\r')
}

impl<'a> Scan<'a> {
    /// A scanner at the start of `src`.
    #[inline]
    pub fn new(src: &'a str) -> Self {
        Scan { src, b: src.as_bytes(), pos: 0, depth_left: 128, entries: Vec::new() }
    }

    /// A scanner reusing a buffer for building objects (see [`Scan::into_scratch`]).
    pub fn with_scratch(src: &'a str, mut entries: Vec<(String, Value)>) -> Self {
        entries.clear();
        Scan { src, b: src.as_bytes(), pos: 0, depth_left: 128, entries }
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

    #[inline]
    fn literal(&mut self, word: &[u8]) -> Res<()> {
        if self.b.get(self.pos..self.pos + word.len()) == Some(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(Bad)
        }
    }

    /// Enter a container read by type (serde_json's recursion check).
    #[inline]
    fn enter(&mut self) -> Res<()> {
        self.depth_left -= 1;
        if self.depth_left == 0 { Err(Bad) } else { Ok(()) }
    }

    #[inline]
    fn leave(&mut self) {
        self.depth_left += 1;
    }

    // -- Pull reads (syntax only, nesting not counted) ---------------------------------------

    /// Enter the object that is the next value (`Bad` when it is not one).
    #[inline(always)]
    pub fn open_object(&mut self) -> Res<()> {
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

    /// The text from the next value on, for a reader of one shape of its own (it then moves the
    /// cursor past what it read with [`Scan::skip_read`]); `None` where an object could not be
    /// entered by type (no nesting left), so that such a reader never accepts what the typed
    /// read would refuse.
    #[inline]
    pub(crate) fn rest(&mut self) -> Option<&'a str> {
        self.ws();
        (self.depth_left > 1).then(|| &self.src[self.pos..])
    }

    /// For a reader of [`Scan::rest`] that met a member value it does not read itself: the
    /// length of the value starting at byte `start` of `rest`, read by type ([`Scan::check`])
    /// as the member of an object at the cursor — one level deeper than the cursor, with the
    /// nesting the typed read would have left there —; `None` where the typed read refuses it.
    /// The cursor does not move.
    pub(crate) fn member_len(&self, start: usize) -> Option<usize> {
        let at = self.pos + start;
        if self.b.get(at).is_none_or(|&c| is_ws(c)) || self.depth_left <= 1 {
            return None;
        }
        let mut member =
            Scan { src: self.src, b: self.b, pos: at, depth_left: self.depth_left - 1, entries: Vec::new() };
        member.check().ok()?;
        Some(member.pos - at)
    }

    /// Move the cursor past the first `n` bytes of [`Scan::rest`], which the caller read whole
    /// as one JSON value.
    #[inline]
    pub(crate) fn skip_read(&mut self, n: usize) {
        debug_assert!(self.src.is_char_boundary(self.pos + n));
        self.pos += n;
    }

    /// Enter the array that is the next value.
    #[inline(always)]
    pub fn open_array(&mut self) -> Res<()> {
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

    /// After an opening quote: the string up to its closing quote (validated like serde_json's
    /// `ignore_str`: no control characters, only well-formed escapes).
    #[inline(always)]
    fn string_body(&mut self) -> Res<JStr<'a>> {
        let start = self.pos;
        let mut escape = None;
        loop {
            let at = find_special(self.b, self.pos);
            match self.b.get(at) {
                Some(b'"') => {
                    self.pos = at + 1;
                    return Ok(JStr { src: self.src, start, end: at, escape });
                }
                Some(b'\\') => {
                    escape.get_or_insert(at);
                    self.pos = at + 1;
                    self.escape()?;
                }
                _ => return Err(Bad), // a control character, or the end of the line
            }
        }
    }

    /// Past the escape after a backslash, checking that it is well formed.
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

    /// Skip the next value (validated as `IgnoredAny` validates it), whatever it is.
    #[inline(always)]
    pub fn skip(&mut self) -> Res<()> {
        // Scalars directly; containers in the loop of `skip_any`.
        match self.peek() {
            Some(b'"') => {
                self.pos += 1;
                self.string_body().map(|_| ())
            }
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number().map(|_| ()),
            _ => self.skip_any(),
        }
    }

    fn skip_any(&mut self) -> Res<()> {
        // Nesting is tracked as a bit stack (1 = object), spilling past 64 levels: no recursion,
        // any depth.
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
                b'-' | b'0'..=b'9' => {
                    self.number()?;
                }
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

    /// The next value as printed (validated as [`Scan::skip`] validates it), without the
    /// whitespace around it: what serde_json captures as a `&RawValue`.
    #[inline]
    pub fn raw(&mut self) -> Res<&'a str> {
        self.ws();
        let start = self.pos;
        self.skip()?;
        Ok(&self.src[start..self.pos])
    }

    /// The next value as printed ([`Scan::raw`]), `None` for `null`.
    pub fn raw_or_null(&mut self) -> Res<Option<&'a str>> {
        if self.peek() == Some(b'n') {
            self.literal(b"null")?;
            return Ok(None);
        }
        self.raw().map(Some)
    }

    /// Past a number, checking its syntax (serde_json's `ignore_integer` grammar); its text.
    #[inline]
    fn number(&mut self) -> Res<&'a str> {
        let b = self.b;
        let start = self.pos;
        let mut i = start;
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
        Ok(&self.src[start..i])
    }

    // -- Typed reads (serde_json's typed rules, nesting counted) ------------------------------

    /// A number read by type: beyond `f64` is refused (only a number with an exponent or of 300+
    /// characters can be; serde_json itself decides those).
    fn typed_number(&mut self) -> Res<&'a str> {
        let text = self.number()?;
        if (text.len() >= 300 || text.bytes().any(|c| c | 0x20 == b'e'))
            && serde_json::from_str::<Checked>(text).is_err()
        {
            return Err(Bad);
        }
        Ok(text)
    }

    /// A string, read by type: borrowed when it holds no escape, else unescaped;
    /// a lone surrogate is refused.
    #[inline(always)]
    pub fn str(&mut self) -> Res<Cow<'a, str>> {
        if self.peek() != Some(b'"') {
            return Err(Bad);
        }
        let start = self.pos + 1;
        let i = find_special(self.b, start);
        if self.b.get(i) == Some(&b'"') {
            // Most strings (keys, ids, kinds) hold no escape: this much is inlined at each read.
            self.pos = i + 1;
            debug_assert!(self.src.is_char_boundary(start) && self.src.is_char_boundary(i));
            // SAFETY: `start` follows the `"` `peek` found and `i` is at the `"` just found,
            // both inside `src`: an ASCII byte is never inside a UTF-8 character, so `start`
            // and `i` are character boundaries of `src`. (Pinned by
            // `strings_are_sliced_on_character_boundaries`; the slicing's own check cost 3 % of
            // codex's decoding.)
            return Ok(Cow::Borrowed(unsafe { self.src.get_unchecked(start..i) }));
        }
        self.escaped_str(start, i)
    }

    /// The rest of [`Scan::str`] from `i`, the first byte of the body at `start` that is a
    /// backslash or a control character.
    #[inline(never)]
    fn escaped_str(&mut self, start: usize, i: usize) -> Res<Cow<'a, str>> {
        if self.b.get(i) != Some(&b'\\') {
            return Err(Bad);
        }
        let (out, end) = unescape(self.src, start, i)?;
        self.pos = end + 1;
        Ok(Cow::Owned(out))
    }

    /// Read one value by type and keep nothing: what a `serde_json::Value` accepts.
    pub fn check(&mut self) -> Res<()> {
        match self.peek() {
            Some(b'"') => self.str().map(drop),
            Some(b'n') => self.literal(b"null"),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'-' | b'0'..=b'9') => self.typed_number().map(drop),
            Some(b'[') => self.array(|r| r.check()),
            Some(b'{') => self.object(|r, _| r.check()),
            _ => Err(Bad),
        }
    }

    /// Run `read` on the next value and return that value's text.
    pub fn read_with_text(&mut self, read: impl FnOnce(&mut Self) -> Res<()>) -> Res<&'a str> {
        self.ws();
        let start = self.pos;
        read(self)?;
        Ok(&self.src[start..self.pos])
    }

    /// Read one value by type ([`Scan::check`]) and return its text.
    pub fn checked_raw(&mut self) -> Res<&'a str> {
        self.read_with_text(Scan::check)
    }

    /// An object read by type (at `{`): `entry` is called with each key (read by type) and must
    /// read or skip its value.
    pub fn object(&mut self, mut entry: impl FnMut(&mut Self, Cow<'a, str>) -> Res<()>) -> Res<()> {
        self.eat(b'{')?;
        self.enter()?;
        if self.peek() == Some(b'}') {
            self.pos += 1;
            self.leave();
            return Ok(());
        }
        loop {
            let key = self.str()?;
            self.eat(b':')?;
            entry(self, key)?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    self.leave();
                    return Ok(());
                }
                _ => return Err(Bad),
            }
        }
    }

    /// An array read by type (at `[`): `item` must read or skip each element.
    pub fn array(&mut self, mut item: impl FnMut(&mut Self) -> Res<()>) -> Res<()> {
        self.eat(b'[')?;
        self.enter()?;
        if self.peek() == Some(b']') {
            self.pos += 1;
            self.leave();
            return Ok(());
        }
        loop {
            item(self)?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    self.leave();
                    return Ok(());
                }
                _ => return Err(Bad),
            }
        }
    }

    /// A value read leniently as a string, as [`super::lenient::opt_string`] reads it: the string,
    /// or `None` for anything else (a number still read by type, a list's items skipped, an
    /// object's keys read and its values skipped).
    #[inline]
    pub fn opt_str(&mut self) -> Res<Option<Cow<'a, str>>> {
        match self.peek() {
            Some(b'"') => self.str().map(Some),
            Some(b'[') => self.array(|r| r.skip()).map(|()| None),
            Some(b'{') => self.object(|r, _| r.skip()).map(|()| None),
            Some(b'-' | b'0'..=b'9') => self.typed_number().map(|_| None),
            _ => self.skip().map(|()| None),
        }
    }

    /// `null` (consumed: `true`), or anything else (left: `false`), as serde reads an `Option`.
    #[inline]
    pub fn null(&mut self) -> Res<bool> {
        if self.peek() == Some(b'n') {
            self.literal(b"null")?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// A value read by type into a borrowed [`Json`] tree (what a `serde_json::Value` accepts).
    pub fn json(&mut self) -> Res<Json<'a>> {
        match self.peek() {
            Some(b'"') => self.str().map(Json::Str),
            Some(b'n') => self.literal(b"null").map(|()| Json::Null),
            Some(b't') => self.literal(b"true").map(|()| Json::Bool(true)),
            Some(b'f') => self.literal(b"false").map(|()| Json::Bool(false)),
            Some(b'-' | b'0'..=b'9') => {
                let text = self.typed_number()?;
                serde_json::from_str::<Json<'_>>(text).map_err(|_| Bad)
            }
            Some(b'[') => {
                let mut items = Vec::new();
                self.array(|r| r.json().map(|v| items.push(v)))?;
                Ok(Json::Arr(items))
            }
            Some(b'{') => {
                let mut entries = Vec::new();
                self.object(|r, k| r.json().map(|v| entries.push((k, v))))?;
                Ok(Json::Obj(entries))
            }
            _ => Err(Bad),
        }
    }

    /// The next value as a [`Value`], built in this pass with serde_json's semantics (numbers
    /// other than plain integers are read by serde_json itself; a key printed twice keeps its
    /// first place and its last value).
    pub fn json_value(&mut self) -> Res<Value> {
        match self.peek().ok_or(Bad)? {
            b'"' => Ok(Value::String(self.str()?.into_owned())),
            b'{' => self.json_object().map(Value::Object),
            b'[' => {
                self.open_array()?;
                self.enter()?;
                let mut items = Vec::new();
                let mut first = true;
                while self.next_element(&mut first)? {
                    items.push(self.json_value()?);
                }
                self.leave();
                Ok(Value::Array(items))
            }
            b't' => self.literal(b"true").map(|_| Value::Bool(true)),
            b'f' => self.literal(b"false").map(|_| Value::Bool(false)),
            b'n' => self.literal(b"null").map(|_| Value::Null),
            _ => number_value(self.number()?),
        }
    }

    /// The next value, which must be an object, as a JSON object.
    pub fn json_object(&mut self) -> Res<Map<String, Value>> {
        self.open_object()?;
        self.enter()?;
        let start = self.entries.len();
        let mut first = true;
        while let Some(key) = self.next_key(&mut first)? {
            let key = key.decode()?;
            let value = self.json_value()?;
            self.entries.push((key.into_owned(), value));
        }
        self.leave();
        let n = self.entries.len() - start;
        let mut map = if n == 0 { Map::new() } else { Map::with_capacity(n) };
        for (k, v) in self.entries.drain(start..) {
            map.insert(k, v);
        }
        Ok(map)
    }
}

/// A number's [`Value`]: a plain integer directly, anything else through serde_json.
#[inline]
fn number_value(text: &str) -> Res<Value> {
    if let Some(n) = raw_count(text) {
        return Ok(Value::from(n));
    }
    serde_json::from_str(text).map_err(|_| Bad)
}

/// `text` read whole into a [`Json`] tree, exactly as `serde_json::from_str::<Json>` (and
/// `Value`) would read it.
pub fn json_of(text: &str) -> Option<Json<'_>> {
    let mut r = Scan::new(text);
    r.json().and_then(|j| r.end().map(|()| j)).ok()
}

/// An [`super::lenient::Obj`] field: an object read by `read`, or `None` for any other value (read
/// as `Obj` reads it).
pub fn read_obj<'a, T>(r: &mut Scan<'a>, read: impl FnOnce(&mut Scan<'a>) -> Res<T>) -> Res<Option<T>> {
    if r.peek() == Some(b'{') { read(r).map(Some) } else { r.opt_str().map(|_| None) }
}

/// An [`super::lenient::ObjList`] field: a list of objects each read by `read` (`None` for an item
/// that is not an object), or `None` for any other value.
pub fn read_obj_list<'a, T>(
    r: &mut Scan<'a>,
    mut read: impl FnMut(&mut Scan<'a>) -> Res<T>,
) -> Res<Option<Vec<super::lenient::Obj<T>>>> {
    if r.peek() != Some(b'[') {
        return r.opt_str().map(|_| None);
    }
    let mut items = Vec::new();
    r.array(|r| read_obj(r, &mut read).map(|t| items.push(super::lenient::Obj(t))))?;
    Ok(Some(items))
}

/// Position of `key` in `keys` (compile time), for the seen-key bit sets of `read_object!` and
/// `read_in_place!`.
pub const fn key_index(keys: &[&str], key: &str) -> usize {
    let mut i = 0;
    while i < keys.len() {
        let (a, b) = (keys[i].as_bytes(), key.as_bytes());
        if a.len() == b.len() {
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("key not listed")
}

/// Fill the fields of `$target` from the object at `$r` (a typed [`Scan::object`] read):
/// `"key" => field: reader` (a reader is `fn(&mut Scan) -> Res<FieldType>`); other keys are
/// skipped; a listed key printed twice fails, as with serde's derive.
macro_rules! read_object {
    ($r:expr, $target:expr, { $($key:literal => $field:ident : $reader:expr),* $(,)? }) => {{
        const KEYS: &[&str] = &[$($key),*];
        let mut seen = [false; KEYS.len()];
        let target = $target;
        $r.object(|r, key| match key.as_ref() {
            $($key => {
                const AT: usize = $crate::json::scan::key_index(KEYS, $key);
                if seen[AT] {
                    return Err($crate::json::scan::Bad);
                }
                seen[AT] = true;
                target.$field = ($reader)(r)?;
                Ok(())
            })*
            _ => r.skip(),
        })
    }};
}
pub(crate) use read_object;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::Strategy;
    use serde::Deserialize;
    use serde::de::IgnoredAny;
    use serde_json::value::RawValue;

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
        // Under Miri (`make test-miri`), a sample: it runs about a thousand times slower.
        let rounds = if cfg!(miri) { 1_000 } else { 20_000 };
        for _ in 0..rounds {
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
        assert!(valid > rounds / 20, "the soup should hold valid JSON too ({valid})");
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
            let theirs = serde_json::from_str::<String>(s).ok();
            assert_eq!(key_token(s), theirs, "{s}");
            assert_eq!(Scan::new(s).str().ok().map(Cow::into_owned), theirs, "{s}");
        }
    }

    #[test]
    fn raw_values_end_where_the_value_ends() {
        let mut sc = Scan::new(r#"{"a": {"x":[1,2]} , "b":null,"c":"s"}"#);
        let mut first = true;
        sc.open_object().unwrap();
        assert!(sc.next_key(&mut first).unwrap().unwrap().is("a"));
        assert_eq!(sc.raw_or_null().unwrap(), Some(r#"{"x":[1,2]}"#));
        assert!(sc.next_key(&mut first).unwrap().unwrap().is("b"));
        assert!(sc.raw_or_null().unwrap().is_none());
        assert!(sc.next_key(&mut first).unwrap().unwrap().is("c"));
        assert_eq!(sc.raw().unwrap(), r#""s""#);
        assert!(sc.next_key(&mut first).unwrap().is_none());
        sc.end().unwrap();
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(crate::test_cases::cases(2000)))]
        /// The invariant the unchecked slices of `Scan::str` and `JStr::printed` rely on: a
        /// string without escapes is cut from the line on character boundaries — whatever
        /// characters sit next to its quotes — and is the string serde_json reads.
        #[test]
        fn strings_are_sliced_on_character_boundaries(
            body in "[a-zé😀\u{7ff}\u{800}\u{ffff}]{0,12}",
            before in "[aé😀]{0,3}",
            after in "[aé😀]{0,3}",
        ) {
            let text = format!("{before}\"{body}\"{after}");
            let mut sc = Scan::new(&text[before.len()..]);
            let read = sc.str().expect("a string");
            proptest::prop_assert_eq!(read.as_ref(), body.as_str());
            // The same string as a key of a pull read (a `JStr`).
            let object = format!("{before}{{\"{body}\":1}}{after}");
            let mut sc = Scan::new(&object[before.len()..object.len() - after.len()]);
            sc.open_object().unwrap();
            let key = sc.next_key(&mut true).unwrap().expect("a key");
            proptest::prop_assert_eq!(key.printed(), body.as_str());
            proptest::prop_assert_eq!(key.plain(), Some(body.as_str()));
            proptest::prop_assert_eq!(read, serde_json::from_str::<String>(&text[before.len()..before.len() + body.len() + 2]).unwrap());
        }
    }

    #[test]
    fn raw_values_nest_without_bound_as_serde_json_captures_them() {
        // serde_json captures a `&RawValue` at any depth (its skipping is not recursive), and so
        // does `raw`: a record is kept whole however deep, and bounded later where it leaves
        // the core.
        let deep = format!("{}{}", "[{\"a\":".repeat(5_000), "}]".repeat(5_000));
        let deep = deep.replacen("{\"a\":}", "{\"a\":1}", 1);
        let text = format!("{{\"input\":{deep},\"x\":null}}");
        let mut sc = Scan::new(&text);
        let mut first = true;
        sc.open_object().unwrap();
        assert!(sc.next_key(&mut first).unwrap().unwrap().is("input"));
        let raw = sc.raw_or_null().unwrap();
        assert_eq!(raw, Some(deep.as_str()));
        assert_eq!(raw, serde_json::from_str::<&RawValue>(&deep).ok().map(RawValue::get));
    }

    /// Random JSON-ish text: mostly valid, with the corner cases serde_json treats specially,
    /// sometimes cut short or with a stray byte.
    fn json_text() -> impl Strategy<Value = String> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just("null".to_string()),
            Just("true".to_string()),
            Just("nul".to_string()),
            proptest::sample::select(vec![
                "0",
                "-0",
                "12",
                "-3.25",
                "1e5",
                "1E+2",
                "2.5e-3",
                "1e400",
                "-1e400",
                "0e999",
                "01",
                "1.",
                "-",
                "2e",
                "18446744073709551616",
                ".5",
                "1.5e",
                "+1",
            ])
            .prop_map(str::to_string),
            proptest::sample::select(vec![
                r#""""#,
                r#""plain""#,
                r#""a\"b""#,
                r#""\\""#,
                r#""\n\t\/""#,
                r#""\u00e9""#,
                r#""\ud83d\ude00""#,
                r#""\ud800""#,
                r#""\udc00""#,
                r#""\ud800\u0041""#,
                r#""\x""#,
                "\"a\u{1}b\"",
                r#""\u12G4""#,
                r#""é€""#,
                r#""unterminated"#,
            ])
            .prop_map(str::to_string),
        ];
        let value = leaf.prop_recursive(4, 40, 5, |inner| {
            let key =
                proptest::sample::select(vec![r#""t""#, r#""a""#, r#""b""#, r#""\ud800""#, r#""k\n""#, "1", r#""t""#]);
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
                proptest::collection::vec((key, inner), 0..4).prop_map(|v| {
                    let body: Vec<String> = v.into_iter().map(|(k, v)| format!("{k}:{v}")).collect();
                    format!("{{{}}}", body.join(" , "))
                }),
            ]
        });
        (value, 0..40usize, proptest::sample::select(vec!["", "", "", "x", ",", "}", "]", " ", "\""])).prop_map(
            |(v, cut, junk)| match junk {
                "" => v,
                " " => format!(" {v}\n"),
                junk => {
                    let at = v.char_indices().map(|(i, _)| i).nth(cut % (v.chars().count() + 1)).unwrap_or(v.len());
                    format!("{}{junk}{}", &v[..at], &v[at..])
                }
            },
        )
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(crate::test_cases::cases(2000)))]
        #[test]
        fn reads_accept_what_serde_json_accepts(text in json_text()) {
            use proptest::prop_assert_eq;
            let skip = { let mut r = Scan::new(&text); r.skip().and_then(|()| r.end()).is_ok() };
            prop_assert_eq!(skip, serde_json::from_str::<IgnoredAny>(&text).is_ok(), "skip {}", text);
            let raw = { let mut r = Scan::new(&text); r.raw().and_then(|t| r.end().map(|()| t)).ok() };
            prop_assert_eq!(raw, serde_json::from_str::<&RawValue>(&text).ok().map(RawValue::get), "raw {}", text);
            let value = serde_json::from_str::<Value>(&text).ok();
            let check = { let mut r = Scan::new(&text); r.check().and_then(|()| r.end()).is_ok() };
            prop_assert_eq!(check, value.is_some(), "check {}", text);
            let json = { let mut r = Scan::new(&text); r.json().and_then(|j| r.end().map(|()| j)).ok() };
            prop_assert_eq!(json.map(|j| serde_json::to_value(&j).unwrap()), value, "json {}", text);
            // A lenient string field, as `json::opt_string` reads it inside a struct.
            #[derive(Deserialize)]
            struct O<'a> {
                #[serde(default, borrow, with = "super::super::lenient::opt_string")]
                t: Option<Cow<'a, str>>,
            }
            let line = format!(r#"{{"t":{text}}}"#);
            let ours = {
                let mut r = Scan::new(&line);
                let mut t = None;
                r.object(|r, k| if k == "t" { r.opt_str().map(|v| t = v) } else { r.skip() })
                    .and_then(|()| r.end())
                    .map(|()| t.map(Cow::into_owned))
                    .ok()
            };
            let theirs = serde_json::from_str::<O>(&line).ok().map(|o| o.t.map(Cow::into_owned));
            prop_assert_eq!(ours, theirs, "opt_str {}", line);
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "checks the test generator, not code under test")]
    fn generator_mixes_valid_and_invalid() {
        use proptest::strategy::ValueTree;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let (mut valid, mut strict, mut n) = (0, 0, 0);
        for _ in 0..2000 {
            let text = json_text().new_tree(&mut runner).unwrap().current();
            n += 1;
            valid += usize::from(serde_json::from_str::<IgnoredAny>(&text).is_ok());
            strict += usize::from(serde_json::from_str::<Value>(&text).is_ok());
        }
        eprintln!("{n} texts: {valid} valid, {strict} valid for Value");
        assert!(valid > n / 5 && valid < n * 4 / 5 && strict < valid);
    }

    #[test]
    fn skips_deep_mixed_nesting_like_serde_json() {
        for depth in [1usize, 63, 64, 65, 66, 130, 300] {
            let open: String = (0..depth).map(|i| if i % 3 == 0 { r#"{"k":"# } else { "[" }).collect();
            let close: String = (0..depth).rev().map(|i| if i % 3 == 0 { "}" } else { "]" }).collect();
            let good = format!("{open}1{close}");
            let mut variants = vec![good.clone()];
            // A wrong closer at a few depths.
            for at in [0, depth / 2, depth.saturating_sub(1)] {
                let mut bytes = good.clone().into_bytes();
                let pos = open.len() + 1 + at;
                bytes[pos] = if bytes[pos] == b'}' { b']' } else { b'}' };
                variants.push(String::from_utf8(bytes).unwrap());
            }
            for text in variants {
                let skip = {
                    let mut r = Scan::new(&text);
                    r.skip().and_then(|()| r.end()).is_ok()
                };
                assert_eq!(skip, serde_json::from_str::<IgnoredAny>(&text).is_ok(), "{depth}: {text}");
            }
        }
    }

    #[test]
    fn typed_nesting_limit_is_serde_jsons() {
        for depth in [126, 127, 128, 129, 2000] {
            let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            let check = Scan::new(&text).check().is_ok();
            assert_eq!(check, serde_json::from_str::<Value>(&text).is_ok(), "{depth}");
            let skip = Scan::new(&text).skip().is_ok();
            assert_eq!(skip, serde_json::from_str::<IgnoredAny>(&text).is_ok(), "{depth}");
        }
    }

    /// `json_value` counts nesting as serde_json's `Value` does, from where it starts: the pull
    /// reads around it enter nothing (a decoder bounds their depth itself).
    #[test]
    fn json_value_nesting_limit_is_serde_jsons() {
        for depth in [126, 127, 128, 129] {
            let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            let ours = Scan::new(&text).json_value().ok();
            assert_eq!(ours, serde_json::from_str::<Value>(&text).ok(), "{depth}");
            let objects = format!("{}1{}", r#"{"k":"#.repeat(depth), "}".repeat(depth));
            let ours = Scan::new(&objects).json_value().ok();
            assert_eq!(ours, serde_json::from_str::<Value>(&objects).ok(), "{depth}");
            let inside = format!(r#"{{"a":[{text}]}}"#);
            let mut sc = Scan::new(&inside);
            let mut first = true;
            sc.open_object().unwrap();
            sc.next_key(&mut first).unwrap();
            sc.open_array().unwrap();
            assert!(sc.next_element(&mut true).unwrap());
            assert_eq!(sc.json_value().is_ok(), depth < 128, "{depth} inside pull reads");
        }
    }

    /// `literal` read as a key (a string token, as printed) and decoded.
    fn key_token(literal: &str) -> Option<String> {
        let text = format!("{{{literal}:0}}");
        let mut sc = Scan::new(&text);
        sc.open_object().ok()?;
        let key = sc.next_key(&mut true).ok()??;
        key.decode().ok().map(Cow::into_owned)
    }

    /// A string token and a typed string read decode alike; a lone surrogate passes a skip (as
    /// `IgnoredAny`) and fails a decode (as `String`).
    #[test]
    fn string_tokens_and_typed_strings_agree() {
        for text in [r#""a\nb""#, r#""\ud800""#, r#""\u00e9x\"""#, r#""plain""#, r#""x\/y""#] {
            let token = key_token(text);
            let typed = Scan::new(text).str().ok().map(Cow::into_owned);
            assert_eq!(token, typed, "{text}");
            assert_eq!(typed, serde_json::from_str::<String>(text).ok(), "{text}");
            assert!(Scan::new(text).skip().is_ok(), "{text}");
        }
    }

    /// Escapes at every offset of strings of every length up to a few words: the word-at-a-time
    /// copy between escapes cuts back exactly, near the end of the line too.
    #[test]
    fn unescapes_at_every_offset() {
        // Under Miri, strings up to 18 characters (still past one 16-byte vector block) and a
        // fifth of the escapes' places in them.
        let longest = if cfg!(miri) { 18 } else { 40 };
        for len in 0..longest {
            for at in (0..=len).filter(|at| !cfg!(miri) || (len * 7 + at) % 5 == 0) {
                for esc in [r"\n", r"\u00e9", r"\ud83d\ude00", r"\u0001"] {
                    let body: String =
                        (0..len).map(|i| if i == at { esc.to_string() } else { "é".repeat(i % 2) + "x" }).collect();
                    for tail in ["", " ", "        , 1"] {
                        let literal = format!("\"{body}\\\"{tail}\"");
                        let theirs = serde_json::from_str::<String>(&literal).ok();
                        let text = format!("{literal}{tail}");
                        let mut sc = Scan::new(&text);
                        assert_eq!(sc.str().ok().map(Cow::into_owned), theirs, "{text}");
                        assert_eq!(key_token(&literal), theirs, "{text}");
                    }
                }
            }
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "megabytes of text: hours under Miri")]
    fn unescapes_strings_larger_than_the_kept_buffer_and_after_a_failure() {
        // A string over the per-thread buffer's kept size, then small ones: each exact, and
        // a malformed escape in between leaves nothing behind for the next read.
        let big = format!("\"{}\"", "ab\\n\\\"".repeat(600_000));
        for text in [big.as_str(), r#""x\ty""#, r#""bad \q escape""#, r#""é\u00e9""#, big.as_str(), r#""\n""#] {
            let theirs = serde_json::from_str::<String>(text).ok();
            let ours = Scan::new(text).str().ok().map(Cow::into_owned);
            assert_eq!(ours.as_ref().map(String::len), theirs.as_ref().map(String::len));
            assert!(ours == theirs, "{}", &text[..text.len().min(40)]);
            if let Some(s) = ours {
                assert!(s.capacity() == s.len(), "unescaped strings carry no spare capacity");
            }
        }
    }
}
