//! Verbatim records (`rawInput`, `rawOutput`, a harness's own record) built as [`RawJson`]
//! without building a `Value` tree and without serde_json reading the text a second time.
//!
//! - [`object_text`]: an object composed of members kept as printed ([`Printed`]).
//! - [`read_raw_json`] / [`value_raw_json`]: text the [`Scan`]ner has read whole, kept as is.
//! - [`checked_raw`]: a captured value kept when a `Value` would have held it.
//! - [`ObjectMembers`]: an object of members kept as printed (a harness's other usage counters),
//!   written as text once instead of built as a map of values.

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::borrowed::Checked;
use super::scan::Scan;
use super::text::{find_special, raw_count};
use crate::event::RawJson;

/// `s` as a JSON string.
fn write_json_str(out: &mut String, s: &str) {
    out.push('"');
    // Keys and short values rarely need an escape: checked eight bytes at a time.
    if super::text::find_special(s.as_bytes(), 0) == s.len() {
        out.push_str(s);
        out.push('"');
        return;
    }
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let esc = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
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

/// The members of a JSON object composed from values kept as printed, e.g. the counters of a
/// usage record that no typed field took. A key printed twice keeps its first place and its last
/// value, as a JSON reader's map does. Written once as text ([`ObjectMembers::into_raw_json`]):
/// one allocation instead of a map, a key and a value tree per member. The first few members
/// with borrowed keys are held inline (a usage record's odd counters need no allocation of
/// their own, and an unused set costs nothing to drop).
#[derive(Debug, Default)]
pub(crate) struct ObjectMembers<'a> {
    inline: [(&'a str, Printed<'a>); ObjectMembers::INLINE],
    len: usize,
    /// The members after the inline ones, in order.
    more: Vec<(Cow<'a, str>, Printed<'a>)>,
    /// Where each key of `more` is, once it holds more than [`ObjectMembers::INDEXED_FROM`]
    /// members: a line with thousands of distinct keys must not cost a search per key (it
    /// was quadratic: 60,000 keys took seconds).
    index: Option<std::collections::HashMap<Cow<'a, str>, usize>>,
}

/// A member's value: JSON text as printed, or a string to write as one.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Printed<'a> {
    Raw(&'a str),
    Text(&'a str),
}

impl Default for Printed<'_> {
    fn default() -> Self {
        Printed::Raw("")
    }
}

impl<'a> ObjectMembers<'a> {
    /// Members held without an allocation.
    const INLINE: usize = 4;
    /// Past this many members after the inline ones, keys are found through an index.
    const INDEXED_FROM: usize = 16;

    /// Set `key` to the value printed as `raw` (text a [`Scan`] read whole, e.g. with
    /// [`Scan::checked_raw`]).
    pub fn insert(&mut self, key: Cow<'a, str>, raw: &'a str) {
        self.set(key, Printed::Raw(raw));
    }

    /// Set `key` to the string `text` (written as a JSON string).
    pub fn insert_text(&mut self, key: Cow<'a, str>, text: &'a str) {
        self.set(key, Printed::Text(text));
    }

    fn set(&mut self, key: Cow<'a, str>, value: Printed<'a>) {
        if let Some(member) = self.inline[..self.len].iter_mut().find(|(k, _)| **k == *key) {
            member.1 = value;
            return;
        }
        let found = match &self.index {
            Some(index) => index.get(&key).copied(),
            None => self.more.iter().position(|(k, _)| *k == key),
        };
        if let Some(at) = found {
            self.more[at].1 = value;
            return;
        }
        match key {
            // Inline while nothing went past the inline members (so the order holds).
            Cow::Borrowed(k) if self.len < Self::INLINE && self.more.is_empty() => {
                self.inline[self.len] = (k, value);
                self.len += 1;
            }
            key => {
                if let Some(index) = &mut self.index {
                    index.insert(key.clone(), self.more.len());
                }
                self.more.push((key, value));
                if self.index.is_none() && self.more.len() > Self::INDEXED_FROM {
                    self.index = Some(self.more.iter().enumerate().map(|(i, (k, _))| (k.clone(), i)).collect());
                }
            }
        }
    }

    fn members(&self) -> impl Iterator<Item = (&str, Printed<'a>)> + Clone {
        let inline = self.inline[..self.len].iter().map(|(k, v)| (*k, *v));
        inline.chain(self.more.iter().map(|(k, v)| (&**k, *v)))
    }

    /// Remove `key`, keeping the others in order.
    pub fn remove(&mut self, key: &str) {
        let kept: Vec<(Cow<'a, str>, Printed<'a>)> =
            (self.inline[..self.len].iter().map(|(k, v)| (Cow::Borrowed(*k), *v)))
                .chain(std::mem::take(&mut self.more))
                .filter(|(k, _)| k != key)
                .collect();
        *self = ObjectMembers::default();
        for (k, v) in kept {
            self.set(k, v);
        }
    }

    /// The object's text, `None` when it has no members.
    pub fn into_raw_json(self) -> Option<RawJson> {
        (self.len > 0 || !self.more.is_empty()).then(|| object_text(self.members()))
    }
}

/// The JSON object of `members` (each value a [`Scan`]-read value as printed, or a string) as
/// text: one allocation of the right size, keys escaped as needed, and a value holding a raw CR
/// between its tokens written compactly instead (so that an event never holds a raw CR).
pub(crate) fn object_text<'v>(members: impl Iterator<Item = (&'v str, Printed<'v>)> + Clone) -> RawJson {
    let len = members.clone().map(|(k, v)| k.len() + v.len() + 4).sum::<usize>() + 1;
    let mut text = String::with_capacity(len);
    text.push('{');
    for (i, (key, value)) in members.enumerate() {
        if i > 0 {
            text.push(',');
        }
        write_json_str(&mut text, key);
        text.push(':');
        match value {
            Printed::Text(s) => write_json_str(&mut text, s),
            Printed::Raw(raw) => text.push_str(&without_cr(raw)),
        }
    }
    text.push('}');
    read_raw_json(text)
}

/// A value read whole by the [`Scan`] as an event may hold it: its text as printed, unless a
/// carriage return sits between its tokens — then written compactly, so that an event never
/// holds a raw CR (a reader splitting lines on CR, as Python's text mode does, would cut it).
/// (Text that does not parse, which a value read whole never is, is left as printed.)
pub(crate) fn without_cr(raw: &str) -> Cow<'_, str> {
    if memchr::memchr(b'\r', raw.as_bytes()).is_none() {
        return Cow::Borrowed(raw);
    }
    serde_json::from_str::<serde_json::Value>(raw).map_or(Cow::Borrowed(raw), |value| Cow::Owned(value.to_string()))
}

/// The object `{"key":value,…}` of distinct keys whose values are printed as `members` give
/// them (each read whole by the [`Scan`]ner).
pub(crate) fn raw_members(members: &[(&str, &str)]) -> RawJson {
    object_text(members.iter().map(|(k, v)| (*k, Printed::Raw(v))))
}

/// `extra` (an object's text, or none) with the member `key` set to the value printed as `raw`
/// (text a [`Scan`] read by type): appended to the text when `extra` has no such key (a run
/// total adding `modelUsage` or `stats` to its counters), else through a map.
pub(crate) fn with_raw_member(extra: Option<RawJson>, key: &str, raw: &str) -> RawJson {
    let Some(extra) = extra else { return object_text(std::iter::once((key, Printed::Raw(raw)))) };
    let text = extra.get().trim();
    let mut has_key = false;
    let mut sc = Scan::new(text);
    let read = sc.object(|r, k| {
        has_key |= k == key;
        r.skip()
    });
    if read.is_err() || has_key || memchr::memchr(b'\r', raw.as_bytes()).is_some() {
        let mut map = match extra.to_value() {
            serde_json::Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        map.insert(key.to_string(), serde_json::from_str(raw).unwrap_or_default());
        return RawJson::from_value(&serde_json::Value::Object(map));
    }
    let mut out = String::with_capacity(text.len() + key.len() + raw.len() + 4);
    let open = text[..text.len() - 1].trim_end();
    out.push_str(open);
    if open != "{" {
        out.push(',');
    }
    write_json_str(&mut out, key);
    out.push(':');
    out.push_str(raw);
    out.push('}');
    read_raw_json(out)
}

impl Printed<'_> {
    /// About how many bytes the value takes written.
    fn len(&self) -> usize {
        match self {
            Printed::Raw(raw) => raw.len(),
            Printed::Text(s) => s.len() + 2,
        }
    }
}

/// A harness's usage object read in the line's pass: the named counters, and every other member
/// kept as printed.
pub(crate) struct Counters<const N: usize> {
    /// The count of each named counter (its last printing, as in a JSON reader).
    pub counts: [Option<u64>; N],
    /// The other members, and each named counter whose value is not a count.
    pub extra: Option<RawJson>,
}

/// Read a usage object ([`Counters`]); any other value is read by type and gives `None`, as an
/// object without members does. `null` counts as an absent counter when `null_is_absent`, else
/// it is kept in `extra` like any value that is not a count. `also` sees each member that is not
/// a named counter (with its value as printed) before it goes to `extra`.
pub(crate) fn read_counters<'a, const N: usize>(
    r: &mut Scan<'a>,
    names: [&str; N],
    null_is_absent: bool,
    mut also: impl FnMut(&str, &'a str),
) -> super::scan::Res<Option<Counters<N>>> {
    if let Some((counters, len)) = compact_counters(r, names, &mut also) {
        r.skip_read(len);
        return Ok(Some(counters));
    }
    read_counters_by_type(r, names, null_is_absent, also)
}

/// The most members a [`CompactCounts`] object holds (a usage object has a handful; at most
/// 16, the bits of [`CompactCounts::kept`]'s mask).
const COMPACT_MEMBERS: usize = 12;

/// The shape harnesses print their usage objects in, read in one pass of its own instead of by
/// the general reader: a compact object (no whitespace between its members) of at most
/// [`COMPACT_MEMBERS`] members whose keys need no escape. A value that is an unsigned integer
/// of at most 19 digits (so it fits a `u64`) is read here as a count; any other value (a run
/// total's per-model counters, a service tier) is read by type by the [`Scan`] at its real
/// depth ([`Scan::member_len`]) and kept as printed. Anything else is not read as one (see
/// [`CompactCounts::read`]); its reader then reads it by type, from the object's start.
pub(crate) struct CompactCounts<'a> {
    /// Each member: its key, its value as printed, and that value when it is a count.
    members: [(&'a str, &'a str, u64); COMPACT_MEMBERS],
    len: usize,
    /// Bit `i` set: member `i` is not a count (its value is read by type).
    not_counts: u16,
    /// The length of the object's text.
    text_len: usize,
}

impl<'a> CompactCounts<'a> {
    /// The object that is the next value of `r`, when it has this shape; `None` for anything
    /// else, an empty object too. The cursor does not move (the caller moves it past
    /// [`CompactCounts::text_len`] bytes once it has taken the object).
    #[inline]
    pub fn read(r: &mut Scan<'a>) -> Option<Self> {
        let text = r.rest()?;
        let b = text.as_bytes();
        if b.first() != Some(&b'{') {
            return None;
        }
        let mut compact = CompactCounts { members: [("", "", 0); COMPACT_MEMBERS], len: 0, not_counts: 0, text_len: 0 };
        let mut pos = 1;
        loop {
            if compact.len == COMPACT_MEMBERS || b.get(pos) != Some(&b'"') {
                return None;
            }
            let key_start = pos + 1;
            let key_end = find_special(b, key_start);
            if b.get(key_end) != Some(&b'"') || b.get(key_end + 1) != Some(&b':') {
                return None;
            }
            let value_start = key_end + 2;
            let mut value_end = value_start;
            let mut count = 0u64;
            while let Some(&digit @ b'0'..=b'9') = b.get(value_end) {
                // Wrapping: past 19 digits the value is not taken as a count below.
                count = count.wrapping_mul(10).wrapping_add(u64::from(digit - b'0'));
                value_end += 1;
            }
            let digits = value_end - value_start;
            let is_count = (1..=19).contains(&digits)
                && (digits == 1 || b[value_start] != b'0')
                && matches!(b.get(value_end), Some(b',' | b'}'));
            if !is_count {
                value_end = value_start + r.member_len(value_start)?;
                compact.not_counts |= 1 << compact.len;
            }
            // Quotes, digits and the ends of a value read whole are on character boundaries.
            compact.members[compact.len] = (&text[key_start..key_end], &text[value_start..value_end], count);
            compact.len += 1;
            match b.get(value_end) {
                Some(b',') => pos = value_end + 1,
                Some(b'}') => {
                    compact.text_len = value_end + 1;
                    return Some(compact);
                }
                _ => return None,
            }
        }
    }

    /// The members in order: key, value as printed, the value when it is a count.
    pub fn members(&self) -> impl Iterator<Item = (&'a str, &'a str, Option<u64>)> + '_ {
        self.members[..self.len]
            .iter()
            .enumerate()
            .map(|(i, &(key, value, count))| (key, value, (self.not_counts & (1 << i) == 0).then_some(count)))
    }

    /// The length of the object's text (to move the [`Scan`] past it).
    pub fn text_len(&self) -> usize {
        self.text_len
    }

    /// The object of the members whose bits are set in `kept` (bit `i`: member `i`), in order,
    /// as [`ObjectMembers`] would write it (`None` when none is kept), each kept member shown to
    /// `each` first; `Err` when a kept key is printed twice or a kept value has a carriage return
    /// in it (`ObjectMembers` keeps a repeated key's first position and last value and writes a
    /// value with a CR anew: its reader handles both), before anything is shown.
    #[inline]
    pub fn kept(&self, kept: u16, mut each: impl FnMut(&str, &'a str)) -> Result<Option<RawJson>, NotKept> {
        let is_kept = |i: usize| kept & (1 << i) != 0;
        let members = &self.members[..self.len];
        let mut text_len = 0;
        for (i, &(key, value, _)) in members.iter().enumerate().filter(|&(i, _)| is_kept(i)) {
            if members[..i].iter().enumerate().any(|(j, (k, _, _))| is_kept(j) && *k == key)
                || (self.not_counts & (1 << i) != 0 && memchr::memchr(b'\r', value.as_bytes()).is_some())
            {
                return Err(NotKept);
            }
            text_len += key.len() + value.len() + 4;
        }
        if text_len == 0 {
            return Ok(None);
        }
        // Written here rather than by `object_text`: `read` found every key free of anything to
        // escape and every value free of a CR was checked above, so `object_text`'s escape
        // search per key and CR search per value would find nothing (through it, codex's
        // decoding measured 2 % more instructions). Same text.
        let mut out = String::with_capacity(text_len + 1);
        for &(key, value, _) in members.iter().enumerate().filter(|&(i, _)| is_kept(i)).map(|(_, m)| m) {
            each(key, value);
            out.push(if out.is_empty() { '{' } else { ',' });
            out.push('"');
            out.push_str(key);
            out.push_str("\":");
            out.push_str(value);
        }
        out.push('}');
        Ok(Some(read_raw_json(out)))
    }
}

/// What [`CompactCounts::kept`] leaves to the general reader: a kept key printed twice, or a
/// kept value with a carriage return in it.
#[derive(Debug)]
pub(crate) struct NotKept;

/// [`read_counters`] for a [`CompactCounts`] object: the counters and the length of the
/// object's text; `None` for any other (which the general reader then reads), when a named
/// counter's value is not a count, and when [`CompactCounts::kept`] refuses `extra`. `also` is
/// called only once the whole object has been read. Same counters and the same `extra` text as
/// [`read_counters_by_type`] (property-tested).
fn compact_counters<'a, const N: usize>(
    r: &mut Scan<'a>,
    names: [&str; N],
    also: &mut impl FnMut(&str, &'a str),
) -> Option<(Counters<N>, usize)> {
    let compact = CompactCounts::read(r)?;
    let mut counts = [None; N];
    let mut others = 0;
    for (i, (key, _, count)) in compact.members().enumerate() {
        match names.iter().position(|name| *name == key) {
            // The last printing counts, as in a JSON reader; any other value is the general
            // reader's (`null` may be an absent counter, the rest goes to `extra`).
            Some(n) => counts[n] = Some(count?),
            None => others |= 1 << i,
        }
    }
    let extra = compact.kept(others, &mut *also).ok()?;
    Some((Counters { counts, extra }, compact.text_len()))
}

/// [`read_counters`] by the general reader: any object, any values.
fn read_counters_by_type<'a, const N: usize>(
    r: &mut Scan<'a>,
    names: [&str; N],
    null_is_absent: bool,
    mut also: impl FnMut(&str, &'a str),
) -> super::scan::Res<Option<Counters<N>>> {
    if r.peek() != Some(b'{') {
        return r.check().map(|()| None);
    }
    let mut counts = [None; N];
    let mut extra = ObjectMembers::default();
    let mut any = false;
    // Counters in `extra` because their (latest) value was not a count.
    let mut odd = [false; N];
    r.object(|r, key| {
        any = true;
        // Read by type (what a `Value` accepts), kept as printed.
        let raw = r.checked_raw()?;
        let Some(i) = names.iter().position(|name| *name == key) else {
            also(&key, raw);
            extra.insert(key, raw);
            return Ok(());
        };
        counts[i] = raw_count(raw);
        if counts[i].is_none() && !(null_is_absent && raw == "null") {
            odd[i] = true;
            extra.insert(key, raw);
        } else if odd[i] {
            odd[i] = false;
            extra.remove(&key);
        }
        Ok(())
    })?;
    Ok(any.then(|| Counters { counts, extra: extra.into_raw_json() }))
}

/// `raw` as [`RawJson`] (its text copied verbatim) when a [`serde_json::Value`] would hold it.
pub fn checked_raw(raw: &RawValue) -> Option<RawJson> {
    serde_json::from_str::<Checked>(raw.get()).is_ok().then(|| RawJson::from_raw(raw))
}

/// JSON text that a [`Scan`] has read whole (so it is one well-formed value, possibly with
/// whitespace around it) as [`RawJson`], kept verbatim, without serde_json reading it a second
/// time (`RawJson::from_text` would: about as long as reading it).
///
/// Callers pass only text that `json_of`, `Scan::check`/`checked_raw`/`raw` or
/// `Scan::read_with_text` accepted whole (or [`without_cr`] wrote from such text); debug builds re-check it (serde_json's own
/// `debug_assert` in `from_string_unchecked`).
pub fn read_raw_json(text: String) -> RawJson {
    let is_ws = |c| matches!(c, ' ' | '\t' | '\n' | '\r');
    // (Nearly always nothing to trim: both ends are looked at first.)
    let padded = text.starts_with(is_ws) || text.ends_with(is_ws);
    let text = if padded { text.trim_matches(is_ws).to_string() } else { text };
    // SAFETY: `text` is one well-formed JSON value without surrounding whitespace: a `Scan`
    // (which accepts only what serde_json accepts, property-tested against it) has read it
    // whole, and the whitespace around it was trimmed above.
    let raw = unsafe { RawValue::from_string_unchecked(text) };
    // Kept as it is: copying it again would cost an allocation per record.
    RawJson::from_boxed(raw)
}

/// JSON `text` as [`RawJson`] (kept verbatim) when a [`serde_json::Value`] would read it whole.
pub fn value_raw_json(text: &str) -> Option<RawJson> {
    let mut r = Scan::new(text);
    let value = r.checked_raw().ok()?;
    r.end().ok()?;
    Some(read_raw_json(value.to_string()))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::Value;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(crate::test_cases::cases(500)))]
        /// The invariant `read_raw_json`'s SAFETY comment relies on: text a `Scan` read whole, with
        /// whitespace around it, is one JSON value once trimmed — the value serde_json reads.
        #[test]
        fn text_a_scan_read_whole_is_one_json_value(value in json_value(), pad in "[ \t\r\n]{0,3}", pretty in proptest::bool::ANY) {
            let printed = if pretty { serde_json::to_string_pretty(&value) } else { serde_json::to_string(&value) }.unwrap();
            let text = format!("{pad}{printed}{pad}");
            let mut r = Scan::new(&text);
            r.checked_raw().expect("a Scan reads what serde_json writes");
            r.end().expect("whole");
            let raw = read_raw_json(text.clone());
            proptest::prop_assert_eq!(raw.get(), printed.as_str(), "kept verbatim, trimmed");
            proptest::prop_assert_eq!(serde_json::from_str::<Value>(raw.get()).unwrap(), value);
        }
    }

    /// `read` run on the value that `text` nests in `levels` arrays (entered by type, so that
    /// the value is read with that much less nesting left): what it gave and the text it read;
    /// `None` where it failed (what follows the value in `text` does not matter).
    pub(crate) fn read_nested<'a, T>(
        text: &'a str,
        levels: usize,
        read: &mut dyn FnMut(&mut Scan<'a>) -> super::super::scan::Res<T>,
    ) -> Option<(T, &'a str)> {
        fn enter<'a, T>(
            r: &mut Scan<'a>,
            levels: usize,
            read: &mut dyn FnMut(&mut Scan<'a>) -> super::super::scan::Res<T>,
            out: &mut Option<(T, &'a str)>,
        ) -> super::super::scan::Res<()> {
            if levels > 0 {
                return r.array(|r| enter(r, levels - 1, read, out));
            }
            let mut value = None;
            let text = r.read_with_text(|r| read(r).map(|v| value = Some(v)))?;
            *out = value.map(|v| (v, text));
            Ok(())
        }
        let mut out = None;
        let _ = enter(&mut Scan::new(text), levels, read, &mut out);
        out
    }

    /// `text` nested in `levels` arrays.
    pub(crate) fn nest(text: &str, levels: usize) -> String {
        format!("{}{text}{}", "[".repeat(levels), "]".repeat(levels))
    }

    /// How deep a usage object is read in the property tests: half of them at the top, half
    /// where the nesting left runs out (a [`Scan`] enters at most 127 containers).
    pub(crate) fn levels() -> impl proptest::strategy::Strategy<Value = usize> {
        use proptest::prelude::*;
        prop_oneof![1 => Just(0usize), 1 => 122usize..=127]
    }

    /// What reading `text` (nested in `levels` arrays) with `read` gives: the counters,
    /// `extra`'s text, the members `also` saw, and the text read (`None` where the read failed).
    type CountersRead = Option<(Vec<Option<u64>>, Option<String>, Vec<(String, String)>, String)>;

    fn counters_read<'a>(
        text: &'a str,
        levels: usize,
        read: impl Fn(&mut Scan<'a>, &mut dyn FnMut(&str, &'a str)) -> super::super::scan::Res<Option<Counters<3>>>,
    ) -> CountersRead {
        let mut seen = Vec::new();
        let (read, text) = read_nested(text, levels, &mut |r| {
            seen.clear();
            read(r, &mut |k, v| seen.push((k.to_string(), v.to_string())))
        })?;
        let (counts, extra) = match read {
            Some(Counters { counts, extra }) => (counts.to_vec(), extra.map(|e| e.get().to_string())),
            None => (Vec::new(), None),
        };
        Some((counts, extra, seen, text.to_string()))
    }

    const NAMES: [&str; 3] = ["input_tokens", "cached_input_tokens", "output_tokens"];

    /// A usage-like object: keys from `keys` and others (some needing an escape, some twice),
    /// values mostly counts (some past 19 digits, some with a leading zero) and now and then
    /// anything else (strings, containers nested up to five deep, with whitespace and carriage
    /// returns in them, text that is not JSON), now and then whitespace, and text after it.
    pub(crate) fn usage_text(keys: &[&'static str]) -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let mut keys = keys.to_vec();
        keys.extend(["reasoning_output_tokens", "cache_write_input_tokens", "é"]);
        let key = prop_oneof![
            4 => prop::sample::select(keys).prop_map(|k| format!("\"{k}\"")),
            1 => prop::sample::select(vec![r#""a\"b""#, r#""tab\t""#, r#""\u0069nput_tokens""#, r#""""#]).prop_map(str::to_string),
        ];
        let scalar = prop::sample::select(vec![
            "00",
            "07",
            "-1",
            "1.5",
            "2e3",
            "1e400",
            "null",
            "\"7\"",
            "\"standard\"",
            "\"a\\\"b\"",
            "\"\\ud800\"",
            "\"é\"",
            "true",
            "tru",
            "99999999999999999999",
            "18446744073709551616",
            "18446744073709551615",
            "1234567890123456789",
            "{\"read\":5,\"write\":7}",
            "{\"write\":0,\"read\":1,\"read\":2}",
            "{\"read\": 3}",
        ]);
        let container =
            (1usize..=5, prop::sample::select(vec!["", " ", "\r", "\r\n "]), prop::sample::select(vec!["{", "["]))
                .prop_map(|(depth, space, open)| {
                    let mut text = "1".to_string();
                    for level in 0..depth {
                        text = if (open == "{") == (level % 2 == 0) {
                            format!("{{\"k{level}\":{space}{text},\"n\":0}}")
                        } else {
                            format!("[{space}{text},{space}\"s\"]")
                        };
                    }
                    text
                });
        let value = prop_oneof![
            8 => (0u64..u64::MAX).prop_map(|n| n.to_string()),
            2 => (0u64..1000).prop_map(|n| n.to_string()),
            1 => scalar.prop_map(str::to_string),
            1 => container,
            1 => prop::sample::select(vec!["{}", "[]", "{\"a\":1,}", "[1,]", "{\"a\"}"]).prop_map(str::to_string),
        ];
        let space = prop_oneof![9 => Just(""), 1 => Just(" ")];
        (
            proptest::collection::vec((key, value, space.clone()), 0..14),
            space,
            prop::sample::select(vec!["", "}", ",\"x\":1}", " ]"]),
        )
            .prop_map(|(members, pad, after)| {
                let body: Vec<String> = members.iter().map(|(k, v, sp)| format!("{k}:{sp}{v}")).collect();
                format!("{{{}{pad}}}{after}", body.join(","))
            })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(crate::test_cases::cases(3000)))]
        /// The compact-object reading of a usage object gives what the general reader gives: the
        /// same counters, the same `extra` text, the same members seen, the same text read.
        #[test]
        fn compact_counters_read_as_the_general_reader(text in usage_text(&NAMES), levels in levels()) {
            let text = nest(&text, levels);
            let general = counters_read(&text, levels, |r, also| read_counters_by_type(r, NAMES, true, also));
            let read = counters_read(&text, levels, |r, also| read_counters(r, NAMES, true, also));
            proptest::prop_assert_eq!(read, general, "{}", text);
        }
    }

    #[test]
    fn usage_objects_as_harnesses_print_them_are_read_compact_and_other_shapes_are_not() {
        let mut seen = 0;
        let mut compact = |text: &str| {
            compact_counters(&mut Scan::new(text), NAMES, &mut |_, _| seen += 1)
                .map(|(c, len)| (c.counts, c.extra.map(|e| e.get().to_string()), len))
        };
        let line = r#"{"input_tokens":2500,"cached_input_tokens":2000,"cache_write_input_tokens":0,"output_tokens":84,"reasoning_output_tokens":14}}"#;
        assert_eq!(
            compact(line),
            Some((
                [Some(2500), Some(2000), Some(84)],
                Some(r#"{"cache_write_input_tokens":0,"reasoning_output_tokens":14}"#.into()),
                line.len() - 1
            ))
        );
        assert_eq!(compact(r#"{"output_tokens":1}"#), Some(([None, None, Some(1)], None, 19)));
        // A run total nesting per-model counters (gemini's `stats`), a service tier.
        let stats = r#"{"input_tokens":1624,"output_tokens":40,"models":{"m":{"input_tokens":1624, "x":[1,{}]}},"tier":"standard"}"#;
        assert_eq!(
            compact(stats),
            Some((
                [Some(1624), None, Some(40)],
                Some(r#"{"models":{"m":{"input_tokens":1624, "x":[1,{}]}},"tier":"standard"}"#.into()),
                stats.len()
            ))
        );
        for other in [
            "{}",
            r#"{"input_tokens": 1}"#,
            r#"{ "input_tokens":1}"#,
            r#"{"input_tokens":1 }"#,
            r#"{"input_tokens":1.0}"#,
            r#"{"input_tokens":-1}"#,
            r#"{"input_tokens":01}"#,
            r#"{"input_tokens":null}"#,
            r#"{"input_tokens":12345678901234567890}"#,
            r#"{"input_tokens":{"a":1}}"#,
            r#"{"in\"put":1}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"a": {"b":1}}"#,
            "{\"a\":{\"b\":\r1}}",
            r#"{"a":{"b":1}"#,
            r#"{"a":01}"#,
            r#"{"a":1,}"#,
            r#"{"a":1"#,
            "[1]",
        ] {
            assert_eq!(compact(other), None, "{other}");
        }
        assert_eq!(seen, 4, "`also` saw the other members of the objects read whole, nothing of the others");
    }

    #[test]
    fn a_value_with_a_carriage_return_between_tokens_is_written_compactly() {
        assert!(matches!(without_cr(r#"{"a": [1, "x\r"]}"#), Cow::Borrowed(_)), "an escaped CR is no raw CR");
        assert_eq!(without_cr("{\"a\":\r\n [1,\r\"x\"]}"), r#"{"a":[1,"x"]}"#);
        assert_eq!(without_cr("\r\n7\r"), "7");
        // Inside an object of members, the same rule (`object_text`).
        let object = raw_members(&[("k", "{\"b\":\r2}"), ("n", "1")]);
        assert_eq!(object.get(), r#"{"k":{"b":2},"n":1}"#);
    }

    #[test]
    fn a_compact_object_nests_no_deeper_than_the_typed_read_would() {
        // A member nested one level deeper than the object: read where a container can still
        // be entered, refused by both readers one level further down.
        let usage = r#"{"input_tokens":1,"models":{"m":1}}"#;
        let read = |levels| {
            let text = nest(usage, levels);
            let general = counters_read(&text, levels, |r, also| read_counters_by_type(r, NAMES, true, also));
            let compact = counters_read(&text, levels, |r, also| read_counters(r, NAMES, true, also));
            assert_eq!(compact, general, "{levels} levels");
            compact.is_some()
        };
        assert!(read(125), "the object and its member fit");
        assert!(!read(126), "its member does not");
        assert!(!read(127), "the object does not");
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
            any::<String>().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                proptest::collection::btree_map(any::<String>(), inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    #[test]
    fn composed_objects_are_valid_json_with_the_members_verbatim() {
        let write = |members: &[(&str, Printed<'_>)]| object_text(members.iter().copied());
        let (a, b) = (r#""x \"q\"""#, r#"[1, {"k": null}]"#);
        assert_eq!(write(&[("command", Printed::Raw(a))]).get(), r#"{"command":"x \"q\""}"#);
        let long = format!("\"{}\"", "y".repeat(200));
        let big = write(&[("a", Printed::Raw(b)), ("we\"ird", Printed::Raw(&long))]);
        assert_eq!(big.get(), format!(r#"{{"a":[1, {{"k": null}}],"we\"ird":{long}}}"#));
        assert_eq!(write(&[]).get(), "{}");
        let odd = "q\"\\\n\u{1}\u{8}\u{c}é";
        let rec = write(&[("status", Printed::Text(odd)), ("output", Printed::Raw(a))]);
        assert_eq!(rec.to_value(), serde_json::json!({"status": odd, "output": "x \"q\""}));
        // Strings are escaped as serde_json escapes them.
        assert_eq!(rec.get(), format!(r#"{{"status":{},"output":{a}}}"#, serde_json::to_string(odd).unwrap()));
    }
    #[test]
    fn counts_read_as_a_value_reads_them() {
        for text in
            ["0", "7", "-0", "-1", "1.0", "1e2", "18446744073709551615", "18446744073709551616", "\"5\"", "null"]
        {
            let theirs = serde_json::from_str::<Value>(text).unwrap().as_u64();
            assert_eq!(raw_count(text), theirs, "{text}");
        }
    }

    #[test]
    fn object_members_keep_first_places_and_last_values() {
        let mut m = ObjectMembers::default();
        assert!(ObjectMembers::default().into_raw_json().is_none());
        m.insert("b".into(), "1");
        m.insert("we\"ird".into(), r#"{"x": [1, 2]}"#);
        m.insert("c".into(), "true");
        m.insert("b".into(), "2.50");
        m.remove("c");
        m.insert_text("t".into(), "a \"q\"\n");
        assert_eq!(m.into_raw_json().unwrap().get(), r#"{"b":2.50,"we\"ird":{"x": [1, 2]},"t":"a \"q\"\n"}"#);
        let mut cr = ObjectMembers::default();
        cr.insert("a".into(), "[1,\r2]");
        assert_eq!(cr.into_raw_json().unwrap().get(), r#"{"a":[1,2]}"#);
    }

    #[test]
    fn object_members_past_the_index_threshold_keep_first_places_and_last_values() {
        // Past INDEXED_FROM members after the inline ones keys are found through an index
        // (a line with thousands of keys was quadratic): the same result as serde_json's map.
        let keys: Vec<String> = (0..200).map(|i| format!("k{i}")).collect();
        let mut m = ObjectMembers::default();
        let mut want = serde_json::Map::new();
        for round in 0..3 {
            for (_, k) in keys.iter().enumerate().filter(|(i, _)| round == 0 || i % 7 == round) {
                let v: &'static str = ["1", "2", "3"][round];
                m.insert(Cow::Owned(k.clone()), v);
                want.insert(k.clone(), serde_json::json!(v.parse::<u64>().unwrap()));
            }
        }
        let got: serde_json::Value = serde_json::from_str(m.into_raw_json().unwrap().get()).unwrap();
        assert_eq!(got, serde_json::Value::Object(want));
        let got_keys: Vec<_> = got.as_object().unwrap().keys().cloned().collect();
        assert_eq!(got_keys, keys, "first places kept");
    }

    #[test]
    fn object_members_past_the_inline_ones_and_owned_keys_keep_their_order() {
        // Checked against serde_json's own (insertion-ordered) map.
        let ops: &[(&str, bool, &str)] = &[
            ("a", false, "1"),
            ("b", true, "2"),
            ("c", false, "3"),
            ("a", false, "4"),
            ("d", false, "5"),
            ("e", false, "6"),
            ("f", true, "7"),
            ("b", false, "8"),
            ("-c", false, ""),
            ("g", false, "9"),
        ];
        let mut ours = ObjectMembers::default();
        let mut theirs = serde_json::Map::new();
        for (key, owned, raw) in ops {
            if let Some(key) = key.strip_prefix('-') {
                ours.remove(key);
                theirs.shift_remove(key);
                continue;
            }
            let k: Cow<'_, str> = if *owned { Cow::Owned(key.to_string()) } else { Cow::Borrowed(key) };
            ours.insert(k, raw);
            theirs.insert(key.to_string(), serde_json::from_str(raw).unwrap());
        }
        assert_eq!(ours.into_raw_json().unwrap().get(), serde_json::Value::Object(theirs).to_string());
    }

    #[test]
    fn members_are_appended_to_a_record_or_replace_theirs() {
        let obj = |t: &str| Some(RawJson::from_text(t).unwrap());
        assert_eq!(with_raw_member(None, "m", r#"{"a": 1}"#).get(), r#"{"m":{"a": 1}}"#);
        assert_eq!(with_raw_member(obj(r#"{"x":1}"#), "m", "[2]").get(), r#"{"x":1,"m":[2]}"#);
        assert_eq!(with_raw_member(obj("{ }"), "m", "2").get(), r#"{"m":2}"#);
        assert_eq!(with_raw_member(obj(r#"{"m":1,"x":2}"#), "m", "3").get(), r#"{"m":3,"x":2}"#);
        assert_eq!(with_raw_member(obj(r#"{"x":1}"#), "m", "[1,\r2]").get(), r#"{"x":1,"m":[1,2]}"#);
    }

    #[test]
    fn value_raw_json_is_what_value_reads_kept_verbatim() {
        for text in [
            r#" {"a": [1, 2.5], "b": "x\n"} "#,
            r#"{"a":1e400}"#,
            r#"{"s":"\ud800"}"#,
            r#"{"a":1"#,
            "[1,2]",
            r#""s""#,
            "\n[]\t",
        ] {
            let theirs = serde_json::from_str::<Value>(text).ok();
            let ours = value_raw_json(text);
            assert_eq!(ours.as_ref().map(RawJson::to_value), theirs, "{text}");
            if let Some(raw) = ours {
                assert_eq!(raw.get(), text.trim(), "{text}");
            }
        }
        assert_eq!(read_raw_json(" {\"a\": 1}\n".to_string()).get(), r#"{"a": 1}"#);
    }
}
