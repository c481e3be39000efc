//! Fast-path helpers of the codex, gemini and opencode decoders (nothing harness-specific: any
//! decoder could share them).
//!
//! * [`IdSet`]: the open-tool-call bookkeeping, hashed with FxHash instead of SipHash (tool ids
//!   come from the harness we run, not from an attacker racing our hash table).
//! * [`Str`] / [`RawStr`]: lenient string fields read in the line's one pass, borrowed when the
//!   text has no escapes.
//! * [`raw_object`]: a `rawInput` / `rawOutput` object composed of verbatim members, without
//!   building a [`Value`] tree and without re-validating the text.
//! * [`session_event`]: an event stamped with only the run's session id (no envelope to clone).

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use super::LineOutcome;
use super::context::DecodeContext;
use super::json::classify_failure;
use crate::event::{OutputEvent, RawJson, SessionUpdate};

/// Like `json::parse_line`, with a seed (so a decoder can fill its per-line state in place
/// instead of moving a large struct out of the parser): only objects are accepted, and on
/// failure the line is classified.
pub(crate) fn parse_line_seed<'a, S: DeserializeSeed<'a>>(line: &'a str, seed: S) -> Result<S::Value, LineOutcome> {
    if !line.trim_start().starts_with('{') {
        return Err(classify_failure(line));
    }
    let mut de = serde_json::Deserializer::from_str(line);
    match seed.deserialize(&mut de).and_then(|v| de.end().map(|()| v)) {
        Ok(v) => Ok(v),
        Err(_) => Err(classify_failure(line)),
    }
}

/// FxHash (the hasher of rustc): one multiply per word.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.hash
    }
}

/// A set of tool call ids (look up with `&str`, insert owned).
pub(crate) type IdSet = HashSet<String, BuildHasherDefault<FxHasher>>;

/// The event for `update`, carrying only the run's session id (harnesses whose lines have no
/// timestamp, model or message id).
#[inline]
pub(crate) fn session_event(ctx: &DecodeContext, update: SessionUpdate) -> OutputEvent {
    let mut event = OutputEvent::new(update);
    event.session_id = ctx.session_id.clone();
    event.model = ctx.init_model.clone();
    event
}

/// A lenient string: a JSON string (borrowed when it has no escapes), `None` for any other value
/// (consumed whole, never an error). The same rule as `json::opt_string`, as a type.
#[derive(Default)]
pub(crate) struct Str<'a>(pub Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        super::json::opt_string::deserialize(d).map(Str)
    }
}

/// Like [`Str`], but a value that is not a string is read as a [`Value`] (and dropped), so text no
/// JSON reader takes (an unpaired surrogate escape inside a list or object) fails the read, as it
/// did where the field was read as a `Value`.
#[derive(Default)]
pub(crate) struct CheckedStr<'a>(pub Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for CheckedStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Option<Cow<'de, str>>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Some(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Some(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Some(Cow::Owned(v)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Value::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(|_| None)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                Value::deserialize(de::value::MapAccessDeserializer::new(map)).map(|_| None)
            }
        }
        d.deserialize_any(V).map(CheckedStr)
    }
}

/// The string a raw JSON value holds, borrowed when it has no escapes; `None` when it is not a
/// string.
pub(crate) fn raw_str(raw: &RawValue) -> Option<Cow<'_, str>> {
    let text = raw.get();
    if text.len() < 2 || !text.starts_with('"') {
        return None;
    }
    // A raw value is valid JSON: a string without a backslash is its own text, quoted.
    let inner = &text[1..text.len() - 1];
    match memchr::memchr(b'\\', inner.as_bytes()) {
        None => Some(Cow::Borrowed(inner)),
        Some(at) => unescape(inner, at).map(Cow::Owned),
    }
}

/// The next `\\` at or after `from`: eight bytes at a time for the first 64 (escapes in text
/// come close together, where a `memchr` call costs more than it saves), then `memchr`.
#[inline]
fn next_backslash(bytes: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let near = bytes.len().min(from.saturating_add(64));
    let mut i = from;
    while i + 8 <= near {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[i..i + 8]);
        // A zero byte of `x` is a backslash; the lowest flagged byte is the first one.
        let x = u64::from_le_bytes(word) ^ (ONES * u64::from(b'\\'));
        let found = x.wrapping_sub(ONES) & !x & HIGHS;
        if found != 0 {
            return Some(i + (found.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    if let Some(p) = bytes.get(i..near)?.iter().position(|b| *b == b'\\') {
        return Some(i + p);
    }
    memchr::memchr(b'\\', bytes.get(near..)?).map(|p| near + p)
}

/// The inside of a JSON string (valid JSON, as a raw value is) with its escapes resolved, the
/// first backslash being at `at`: one allocation of the right size, one copy. `None` for an
/// unpaired surrogate escape, which serde_json refuses in a string too.
fn unescape(inner: &str, mut at: usize) -> Option<String> {
    let bytes = inner.as_bytes();
    let hex4 = |i: usize| -> Option<u32> {
        let digits = bytes.get(i..i + 4)?;
        let mut n = 0;
        for d in digits {
            let v = match d {
                b'0'..=b'9' => d - b'0',
                b'a'..=b'f' => d - b'a' + 10,
                b'A'..=b'F' => d - b'A' + 10,
                _ => return None,
            };
            n = n * 16 + u32::from(v);
        }
        Some(n)
    };
    let mut out = String::with_capacity(inner.len());
    let mut start = 0;
    loop {
        out.push_str(inner.get(start..at)?);
        start = at + 2;
        let c = match *bytes.get(at + 1)? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let n = hex4(at + 2)?;
                start = at + 6;
                match n {
                    0xD800..=0xDBFF => {
                        if bytes.get(start..start + 2) != Some(b"\\u") {
                            return None;
                        }
                        let low = hex4(start + 2).filter(|l| (0xDC00..=0xDFFF).contains(l))?;
                        start += 6;
                        char::from_u32(0x1_0000 + ((n - 0xD800) << 10) + (low - 0xDC00))?
                    }
                    0xDC00..=0xDFFF => return None,
                    _ => char::from_u32(n)?,
                }
            }
            _ => return None,
        };
        out.push(c);
        match next_backslash(bytes, start) {
            Some(i) => at = i,
            None => {
                out.push_str(inner.get(start..)?);
                return Some(out);
            }
        }
    }
}

/// True when `text` may hold a `\u` escape of a surrogate (`\uD800`-`\uDFFF`), which a JSON
/// reader refuses when unpaired (a decoder checks the parts it keeps verbatim with this).
pub(crate) fn may_hold_surrogates(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(i) = next_backslash(bytes, from) {
        if bytes.get(i + 1) == Some(&b'u') && matches!(bytes.get(i + 2), Some(b'd' | b'D')) {
            return true;
        }
        // Past the escaped character (`\\\\` is one escape, not the start of another).
        from = i + 2;
    }
    false
}

/// A raw value that is not JSON `null`.
pub(crate) fn non_null(raw: Option<&RawValue>) -> Option<&RawValue> {
    raw.filter(|r| r.get() != "null")
}

/// A member value of a composed record: a raw value (written verbatim) or a string.
pub(crate) trait Piece: Serialize {
    /// Append the JSON text of the value.
    fn write(&self, out: &mut String);
    /// About how many bytes `write` appends.
    fn len_hint(&self) -> usize;
}

impl Piece for &RawValue {
    fn write(&self, out: &mut String) {
        out.push_str(self.get());
    }
    fn len_hint(&self) -> usize {
        self.get().len()
    }
}

/// A member value that is a raw value or a plain string (written as a JSON string).
#[derive(Clone, Copy)]
pub(crate) enum Member<'a> {
    Raw(&'a RawValue),
    Str(&'a str),
}

impl Serialize for Member<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Member::Raw(raw) => raw.serialize(serializer),
            Member::Str(s) => serializer.serialize_str(s),
        }
    }
}

impl Piece for Member<'_> {
    fn write(&self, out: &mut String) {
        match self {
            Member::Raw(raw) => out.push_str(raw.get()),
            Member::Str(s) => write_json_str(out, s),
        }
    }
    fn len_hint(&self) -> usize {
        match self {
            Member::Raw(raw) => raw.get().len(),
            Member::Str(s) => s.len() + 2,
        }
    }
}

/// `s` as a JSON string.
fn write_json_str(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let esc = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            out.push_str(&format!("\\u{b:04x}"));
        } else {
            out.push_str(esc);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// Members of an object, each value as its [`Piece`].
struct Members<'m, P>(&'m [(&'m str, P)]);

impl<P: Piece> Serialize for Members<'_, P> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, value) in self.0 {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// The JSON object `{"key": value, …}` of verbatim members, as a [`RawJson`]. serde_json writes
/// raw values as they are, so the text is valid without parsing it again; small objects (a key
/// and a short string) are cheaper to validate once than to copy twice.
pub(crate) fn raw_object<P: Piece>(members: &[(&str, P)]) -> RawJson {
    let len: usize = members.iter().map(|(k, v)| k.len() + v.len_hint() + 4).sum::<usize>() + 1;
    if len <= 96 && members.iter().all(|(k, _)| !k.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20)) {
        let mut text = String::with_capacity(len);
        text.push('{');
        for (i, (key, value)) in members.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push('"');
            text.push_str(key);
            text.push_str("\":");
            value.write(&mut text);
        }
        text.push('}');
        if let Some(raw) = RawJson::from_text(text) {
            return raw;
        }
    }
    match serde_json::value::to_raw_value(&Members(members)) {
        Ok(raw) => RawJson::from_raw(&raw),
        // Unreachable: string keys and raw values always serialize.
        Err(_) => RawJson::from_value(&serde_json::Value::Null),
    }
}

/// A JSON value read into a [`Value`] as serde_json reads it, with objects presized for a few
/// keys (a harness's counters), so small maps do not grow (and rehash) key by key.
pub(crate) struct SizedValue(pub Value);

impl<'de> Deserialize<'de> for SizedValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Value;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
                let mut out = serde_json::Map::with_capacity(8);
                while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                    let SizedValue(value) = map.next_value()?;
                    out.insert(key.into_owned(), value);
                }
                Ok(Value::Object(out))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Value, A::Error> {
                Value::deserialize(de::value::SeqAccessDeserializer::new(seq))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
                Ok(Value::Bool(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
                Ok(Value::from(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
                Ok(Value::from(v))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
                Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
                Ok(Value::String(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
                Ok(Value::String(v))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
                Ok(Value::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<Value, E> {
                Ok(Value::Null)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
                d.deserialize_any(self)
            }
        }
        d.deserialize_any(V).map(SizedValue)
    }
}

/// `prefix`, then `text` cut at `max` characters (`…` appended when cut, as
/// `tools::truncate_chars`), then `suffix`: a title in one allocation.
pub(crate) fn title(prefix: &str, text: &str, max: usize, suffix: &str) -> String {
    // A text of at most `max` bytes has at most `max` characters: nothing to count.
    let cut = if text.len() <= max { None } else { text.char_indices().nth(max).map(|(i, _)| i) };
    let body = cut.map_or(text, |i| &text[..i]);
    let mut title = String::with_capacity(prefix.len() + body.len() + 3 + suffix.len());
    title.push_str(prefix);
    title.push_str(body);
    if cut.is_some() {
        title.push('…');
    }
    title.push_str(suffix);
    title
}

/// A map key, borrowed from the line when it has no escapes.
pub(crate) struct Key<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Key<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct K;
        impl<'de> Visitor<'de> for K {
            type Value = Cow<'de, str>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
                Ok(Cow::Borrowed(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Cow<'de, str>, E> {
                Ok(Cow::Owned(v.to_string()))
            }
        }
        d.deserialize_str(K).map(Key)
    }
}

/// The text of a key borrowed from the line, `None` when it had escapes (see [`SeenKeys::other`]).
pub(crate) fn key_text<'a>(key: &Cow<'a, str>) -> Option<&'a str> {
    match key {
        Cow::Borrowed(k) => Some(k),
        Cow::Owned(_) => None,
    }
}

/// Which keys of an object were seen, to notice a key printed twice: known keys by index in a
/// bit set, other keys by their (borrowed) text. A key that cannot be tracked counts as a
/// duplicate: callers then take their exact (slow) path.
///
/// (No `dup` flag updated in `known`: rustc 1.95.0 miscompiles `self.flag |= seen; seen` once
/// inlined twice (MIR reads an unset local), so the verdict is computed at the end instead.)
pub(crate) struct SeenKeys<'a> {
    known: u64,
    hits: u32,
    others: [&'a str; 8],
    n_others: usize,
    /// Other keys past the eighth (allocated only then).
    more: Vec<&'a str>,
    untracked: bool,
}

impl<'a> SeenKeys<'a> {
    pub(crate) fn new() -> Self {
        SeenKeys { known: 0, hits: 0, others: [""; 8], n_others: 0, more: Vec::new(), untracked: false }
    }

    /// A known key, by its index (< 64). True when it was seen before.
    #[inline]
    pub(crate) fn known(&mut self, index: u32) -> bool {
        let bit = 1u64 << index;
        let seen = self.known & bit != 0;
        self.known |= bit;
        self.hits += 1;
        seen
    }

    /// Any other key: its text when borrowed from the line (`None`: it cannot be tracked).
    #[inline]
    pub(crate) fn other(&mut self, key: Option<&'a str>) {
        match key {
            Some(k) if self.n_others < self.others.len() => {
                self.others[self.n_others] = k;
                self.n_others += 1;
            }
            Some(k) => self.more.push(k),
            None => self.untracked = true,
        }
    }

    /// True when some key was printed twice (or could not be tracked).
    pub(crate) fn dup(&self) -> bool {
        if self.untracked || self.hits != self.known.count_ones() {
            return true;
        }
        let others = &self.others[..self.n_others];
        others.iter().enumerate().any(|(i, k)| others[..i].contains(k))
            || self.more.iter().enumerate().any(|(i, k)| others.contains(k) || self.more[..i].contains(k))
    }
}

/// A visitor helper: a value that should be an object, read by `visit_map`; any other value is
/// consumed whole and gives `T::default()` (never an error).
pub(crate) trait ObjectVisitor<'de>: Sized {
    /// The result.
    type Out: Default;
    /// Read a list as a [`Value`] (rather than skip it), so text no JSON reader takes (an
    /// unpaired surrogate escape) fails the read, as it did where the field was a `Value`.
    const LISTS_AS_VALUES: bool = false;
    /// Read the object's entries.
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Out, A::Error>;
}

/// Drive an [`ObjectVisitor`]: objects go to it, anything else is skipped.
pub(crate) fn object_or_default<'de, D: Deserializer<'de>, V: ObjectVisitor<'de>>(
    d: D,
    v: V,
) -> Result<V::Out, D::Error> {
    struct Any<V>(V);
    impl<'de, V: ObjectVisitor<'de>> Visitor<'de> for Any<V> {
        type Value = V::Out;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            self.0.visit_map(map)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            if V::LISTS_AS_VALUES {
                Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
            } else {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
            }
            Ok(V::Out::default())
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(V::Out::default())
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(V::Out::default())
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(V::Out::default())
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(V::Out::default())
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(V::Out::default())
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(V::Out::default())
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(V::Out::default())
        }
    }
    d.deserialize_any(Any(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_objects_are_valid_json_with_the_members_verbatim() {
        let a = RawValue::from_string(r#""x \"q\"""#.into()).unwrap();
        let b = RawValue::from_string(r#"[1, {"k": null}]"#.into()).unwrap();
        let small = raw_object(&[("command", &*a)]);
        assert_eq!(small.get(), r#"{"command":"x \"q\""}"#);
        let long = "y".repeat(200);
        let c = RawValue::from_string(format!("\"{long}\"")).unwrap();
        let big = raw_object(&[("a", &*b), ("we\"ird", &*c)]);
        assert_eq!(big.get(), format!(r#"{{"a":[1, {{"k": null}}],"we\"ird":"{long}"}}"#));
        assert_eq!(raw_object::<&RawValue>(&[]).get(), "{}");
        let odd = "q\"\\\n\u{1}é";
        let rec = raw_object(&[("status", Member::Str(odd)), ("output", Member::Raw(&a))]);
        assert_eq!(rec.to_value(), serde_json::json!({"status": odd, "output": "x \"q\""}));
    }

    #[test]
    fn raw_strings_borrow_unless_escaped() {
        let plain = RawValue::from_string(r#""abc""#.into()).unwrap();
        assert!(matches!(raw_str(&plain), Some(Cow::Borrowed("abc"))));
        let esc = RawValue::from_string(r#""a\nb""#.into()).unwrap();
        assert_eq!(raw_str(&esc).as_deref(), Some("a\nb"));
        for text in [
            r#""\"\\\/\b\f\n\r\t x""#,
            r#""\u00e9\u20AC \ud83d\ude00 end\\""#,
            r#""\\u0041\u0041""#,
            r#""\ud800""#,
            r#""\udc00 x""#,
            r#""\ud800\u0041""#,
            r#""\ud800\n""#,
        ] {
            let raw = RawValue::from_string(text.into()).unwrap();
            let expected = serde_json::from_str::<String>(text).ok();
            assert_eq!(raw_str(&raw).map(Cow::into_owned), expected, "{text}");
        }
        let num = RawValue::from_string("1".into()).unwrap();
        assert_eq!(raw_str(&num), None);
    }

    #[test]
    fn backslashes_are_found_at_any_distance() {
        for len in 0..200 {
            for at in [0, 1, 7, 8, 9, 63, 64, 65, 100, 150, 199] {
                let mut text = vec![b'x'; len];
                if at < len {
                    text[at] = b'\\';
                }
                let expected = (at < len).then_some(at);
                assert_eq!(next_backslash(&text, 0), expected, "{len} {at}");
                if at < len && at > 3 {
                    assert_eq!(next_backslash(&text, 3), Some(at));
                }
            }
        }
        assert_eq!(next_backslash(b"ab", 5), None);
    }

    #[test]
    fn surrogate_escapes_are_noticed() {
        assert!(may_hold_surrogates(r#""a\ud800""#));
        assert!(may_hold_surrogates(r#"{"k":"\uDC00"}"#));
        assert!(!may_hold_surrogates(r#""\\ud800 is a path""#));
        assert!(!may_hold_surrogates(r#""\u00e9\n\"""#));
        let long = format!(r#""{}\ud83d\ude00""#, "x\\n".repeat(100));
        assert!(may_hold_surrogates(&long));
    }

    #[test]
    fn seen_keys_notice_duplicates() {
        let mut s = SeenKeys::new();
        assert!(!s.known(3));
        s.other(Some("a"));
        s.other(Some("b"));
        assert!(!s.dup());
        s.other(Some("a"));
        assert!(s.dup());
        let mut t = SeenKeys::new();
        t.known(1);
        assert!(t.known(1) && t.dup());
        let mut many = SeenKeys::new();
        let keys = ["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"];
        for k in keys {
            many.other(Some(k));
        }
        assert!(!many.dup());
        many.other(Some("k9"));
        assert!(many.dup());
        let mut u = SeenKeys::new();
        u.other(key_text(&Cow::Owned("escaped".into())));
        assert!(u.dup());
    }

    #[test]
    fn sized_values_read_as_values() {
        let text = r#"{"a":[1,-2,3.5,"s\n",null,true,{"k":{}}],"b":{"c":18446744073709551615},"a":0}"#;
        let SizedValue(v) = serde_json::from_str(text).unwrap();
        assert_eq!(v, serde_json::from_str::<serde_json::Value>(text).unwrap());
        assert_eq!(v.to_string(), serde_json::from_str::<serde_json::Value>(text).unwrap().to_string());
    }

    #[test]
    fn titles_cut_like_truncate_chars() {
        use crate::tools::truncate_chars;
        for (text, max) in
            [("short", 10), ("exactly10!", 10), ("éééééééééééé", 10), ("x".repeat(60).as_str(), 50), ("", 3)]
        {
            assert_eq!(title("Fetch: ", text, max, "\""), format!("Fetch: {}\"", truncate_chars(text, max)));
        }
    }

    #[test]
    fn fx_ids_hash_consistently() {
        let mut set = IdSet::default();
        set.insert("item_1".to_string());
        assert!(set.contains("item_1"));
        assert!(!set.contains("item_2"));
    }
}
