//! Allocation-light JSON helpers for the kimi and droid decoders (any decoder could use them).
//!
//! - [`Reader`]: a one-pass JSON reader with serde_json's exact acceptance rules (what its
//!   `IgnoredAny` skips, what its typed reads refuse, its nesting limit), property-tested against
//!   serde_json. A decoder drives it field by field (`read_object!`), so a line is scanned once,
//!   with no serde layers, into a struct the decoder holds; strings borrow from the line unless
//!   they hold an escape, and are then unescaped in the same pass.
//! - [`Json`]: a borrowed JSON tree (objects are plain vectors: no map, no hashing) that accepts
//!   exactly what [`serde_json::Value`] accepts and reads like it (a key printed twice reads as
//!   its last value). [`Entries`] picks fields out of a record with `Map`'s semantics.
//! - [`read_raw_json`]: JSON text the reader has read whole becomes a [`RawJson`] without serde_json
//!   reading it again.
//! - The serde-side helpers ([`Text`], [`Checked`], [`InPlace`] / `read_in_place!`,
//!   [`unescape_literal`]) serve the wire-envelope payloads and the property tests' oracles.
#![allow(dead_code)] // shared helpers: not every decoder uses every one

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Number;
use serde_json::value::RawValue;

use crate::event::RawJson;

/// A JSON value whose strings borrow from the text it was read from.
#[derive(Debug, Clone, PartialEq)]
pub enum Json<'a> {
    Null,
    Bool(bool),
    Num(Number),
    Str(Cow<'a, str>),
    Arr(Vec<Json<'a>>),
    /// Entries in printed order; a repeated key is kept (lookups read the last one).
    Obj(Vec<(Cow<'a, str>, Json<'a>)>),
}

impl<'a> Json<'a> {
    /// The value of `key` in an object (the last one printed, as `Value` reads it).
    pub fn get(&self, key: &str) -> Option<&Json<'a>> {
        match self {
            Json::Obj(entries) => entries.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }

    /// A non-negative integer (as [`serde_json::Value::as_u64`]).
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Json::Num(n) => n.as_u64(),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Json<'a>]> {
        match self {
            Json::Arr(items) => Some(items),
            _ => None,
        }
    }

    pub fn is_object(&self) -> bool {
        matches!(self, Json::Obj(_))
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }

    /// The string value of `key` when it is a non-empty string.
    pub fn str_of(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Json::as_str).filter(|s| !s.is_empty())
    }

    /// The record as [`RawJson`], written as `Value` would write it (a repeated key once, at its
    /// first place, with its last value).
    pub fn to_raw_json(&self) -> RawJson {
        match serde_json::value::to_raw_value(self) {
            Ok(raw) => RawJson::from_raw(&raw),
            Err(_) => RawJson::from_value(&serde_json::Value::Null),
        }
    }
}

impl Json<'_> {
    /// The value as a [`serde_json::Value`] (a repeated key keeps its first place and last value,
    /// as when `Value` reads the text).
    pub fn into_value(self) -> serde_json::Value {
        use serde_json::Value;
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(b),
            Json::Num(n) => Value::Number(n),
            Json::Str(s) => Value::String(s.into_owned()),
            Json::Arr(items) => Value::Array(items.into_iter().map(Json::into_value).collect()),
            Json::Obj(entries) => Value::Object(Json::into_map(entries)),
        }
    }

    /// Object entries as a [`serde_json::Map`] (inserted in order, as `Value` reads them).
    pub fn into_map(entries: Vec<(Cow<'_, str>, Json<'_>)>) -> serde_json::Map<String, serde_json::Value> {
        let mut map = serde_json::Map::with_capacity(entries.len());
        for (k, v) in entries {
            map.insert(k.into_owned(), v.into_value());
        }
        map
    }

    /// Compact JSON text, as `Value::to_string` writes it.
    pub fn to_compact(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// An object's entries with the semantics of a [`serde_json::Map`] read from it (one entry per
/// key, at its first place, with its last value; `swap_remove` as the map's `remove`), to pick
/// fields out of a record before building the map of what is left.
#[derive(Debug, Default)]
pub struct Entries<'a>(Vec<(Cow<'a, str>, Json<'a>)>);

impl<'a> Entries<'a> {
    /// The entries of an object (empty for any other value).
    pub fn of(object: Json<'a>) -> Self {
        let Json::Obj(entries) = object else { return Entries::default() };
        // (Room for a couple of inserts: usage records get the line's counters added.)
        let mut out: Vec<(Cow<'a, str>, Json<'a>)> = Vec::with_capacity(entries.len() + 2);
        for (key, value) in entries {
            match out.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => out.push((key, value)),
            }
        }
        Entries(out)
    }

    /// Set `key` (in place when present, else at the end).
    pub fn insert(&mut self, key: &'a str, value: Json<'a>) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((Cow::Borrowed(key), value)),
        }
    }

    /// Remove `key`, moving the last entry into its place (as `Map::remove` does).
    pub fn swap_remove(&mut self, key: &str) -> Option<Json<'a>> {
        let at = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.swap_remove(at).1)
    }

    pub fn get(&self, key: &str) -> Option<&Json<'a>> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn into_map(self) -> serde_json::Map<String, serde_json::Value> {
        Json::into_map(self.0)
    }
}

impl Serialize for Json<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Num(n) => n.serialize(s),
            Json::Str(text) => s.serialize_str(text),
            Json::Arr(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Obj(entries) => {
                // `Value` keeps one entry per key: the first place, the last value.
                let unique = |i: usize| !entries[..i].iter().any(|(k, _)| *k == entries[i].0);
                let count = (0..entries.len()).filter(|&i| unique(i)).count();
                let mut map = s.serialize_map(Some(count))?;
                for (i, (key, value)) in entries.iter().enumerate() {
                    if unique(i) {
                        let last = entries[i..].iter().rev().find(|(k, _)| k == key).map_or(value, |(_, v)| v);
                        map.serialize_entry(key.as_ref(), last)?;
                    }
                }
                map.end()
            }
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Json<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Json::Num(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Json::Num(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Number::from_f64(v).map_or(Json::Null, Json::Num))
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Json::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Json::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Json::Str(Cow::Owned(v)))
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Json::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        Json::deserialize(d)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Json::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(16));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Arr(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0).min(16));
        while let Some(key) = map.next_key::<Key<'de>>()? {
            entries.push((key.0, map.next_value()?));
        }
        Ok(Json::Obj(entries))
    }
}

/// An object key, borrowed when it holds no escape.
pub struct Key<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Key<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// Reads a line's object straight into a struct the caller holds (`Line::default()` on its stack):
/// a large line struct is then never moved (serde's derive builds the struct and returns it by
/// value through every layer, one copy each). `read_in_place!` implements it for a struct with
/// `Default`: every listed field is read by its reader (`opt_str`: a string or `None` for anything
/// else, as [`super::json::opt_string`]; `value`: the field type's own `Deserialize`); unknown keys
/// are skipped; a key printed twice is an error, as with serde's derive.
pub struct InPlace<'p, T>(pub &'p mut T);

/// Parse `line` into `place` (see [`InPlace`]), as [`super::json::parse_line`] would parse it.
pub fn parse_line_into<'a, T>(line: &'a str, place: &mut T) -> Result<(), super::LineOutcome>
where
    for<'p> InPlace<'p, T>: de::DeserializeSeed<'a, Value = ()>,
{
    use serde::de::DeserializeSeed;
    if !line.trim_start().starts_with('{') {
        return Err(super::json::classify_failure(line));
    }
    let mut de = serde_json::Deserializer::from_str(line);
    InPlace(place).deserialize(&mut de).and_then(|()| de.end()).map_err(|_| super::json::classify_failure(line))
}

/// Reader of a lenient string field (see [`InPlace`]).
pub fn opt_str<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<Cow<'de, str>>, A::Error> {
    struct S<'a>(Option<Cow<'a, str>>);
    impl<'de: 'a, 'a> Deserialize<'de> for S<'a> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            super::json::opt_string::deserialize(d).map(S)
        }
    }
    map.next_value::<S<'de>>().map(|s| s.0)
}

/// Reader of a field kept as its text, `null` being absent (see [`InPlace`]).
pub fn raw_str<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<&'de str>, A::Error> {
    map.next_value::<Option<&'de RawValue>>().map(|r| r.map(RawValue::get))
}

/// Reader of a field by its type's own `Deserialize` (see [`InPlace`]).
pub fn value<'de, T: Deserialize<'de>, A: MapAccess<'de>>(map: &mut A) -> Result<T, A::Error> {
    map.next_value()
}

/// Position of `key` in `keys` (compile time).
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

/// See [`InPlace`]: `read_in_place!(Line { field: "key" => reader, ... });`
#[allow(unused_macros)] // droid's property test uses it; the one-pass `Reader` reads lines
macro_rules! read_in_place {
    ($name:ident { $($field:ident : $key:literal => $reader:path),* $(,)? }) => {
        impl<'p, 'de: 'a, 'a> serde::de::DeserializeSeed<'de> for $crate::decode::fast_b::InPlace<'p, $name<'a>> {
            type Value = ();
            fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
                struct V<'p, 'a>(&'p mut $name<'a>);
                const KEYS: &[&str] = &[$($key),*];
                impl<'p, 'de: 'a, 'a> serde::de::Visitor<'de> for V<'p, 'a> {
                    type Value = ();
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str(concat!("struct ", stringify!($name)))
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
                        let mut seen = [false; KEYS.len()];
                        while let Some(key) = map.next_key::<$crate::decode::fast_b::Key<'de>>()? {
                            match key.0.as_ref() {
                                $($key => {
                                    const AT: usize = $crate::decode::fast_b::key_index(KEYS, $key);
                                    if seen[AT] {
                                        return Err(<A::Error as serde::de::Error>::duplicate_field($key));
                                    }
                                    seen[AT] = true;
                                    self.0.$field = $reader(&mut map)?;
                                })*
                                _ => {
                                    map.next_value::<serde::de::IgnoredAny>()?;
                                }
                            }
                        }
                        Ok(())
                    }
                }
                d.deserialize_struct(stringify!($name), KEYS, V(self.0))
            }
        }

        impl<'de: 'a, 'a> serde::Deserialize<'de> for $name<'a> {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                use serde::de::DeserializeSeed;
                let mut out = $name::default();
                $crate::decode::fast_b::InPlace(&mut out).deserialize(d)?;
                Ok(out)
            }
        }
    };
}
#[allow(unused_imports)]
pub(crate) use read_in_place;

/// Reads any JSON value and keeps nothing, accepting exactly what [`serde_json::Value`] accepts
/// (unlike `IgnoredAny`, numbers and strings are read, not skipped: `1e400` is refused). Checks
/// that a verbatim record is one a `Value` would have held, without building it.
pub struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CheckedVisitor)
    }
}

struct CheckedVisitor;

impl<'de> Visitor<'de> for CheckedVisitor {
    type Value = Checked;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_none<E: de::Error>(self) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Checked, D::Error> {
        Checked::deserialize(d)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        while map.next_key::<Checked>()?.is_some() {
            map.next_value::<Checked>()?;
        }
        Ok(Checked)
    }
}

/// `raw` as [`RawJson`] (its text copied verbatim) when a [`serde_json::Value`] would hold it.
pub fn checked_raw(raw: &RawValue) -> Option<RawJson> {
    serde_json::from_str::<Checked>(raw.get()).is_ok().then(|| RawJson::from_raw(raw))
}

/// A string field read leniently (anything else, `null` included, is `None`, as
/// [`super::json::opt_string`]), scanned without serde_json's scratch buffer: the literal is
/// captured verbatim, then borrowed when it holds no escape or unescaped into a string of its
/// exact size. Refuses what serde_json's string reader refuses, so a line fails exactly when it did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Text<'a>(pub Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = <&'de RawValue>::deserialize(d)?;
        lenient_text(raw.get()).map(Text)
    }
}

/// The string a captured JSON value holds (`None` for other values); an error where reading the
/// value with serde_json's own visitors would have failed (a lone surrogate, a number out of range).
pub fn lenient_text<E: de::Error>(raw: &str) -> Result<Option<Cow<'_, str>>, E> {
    match raw.as_bytes().first() {
        Some(b'"') => unescape_literal(raw).map(Some).ok_or_else(|| E::custom("lone surrogate in a string")),
        Some(b'-' | b'0'..=b'9') => check_number(raw).map(|()| None),
        // An object is visited (its keys read as strings, its values skipped), as
        // `json::opt_string` does: a key serde_json refuses fails the line there too.
        Some(b'{') => {
            struct Probe;
            impl<'de> Deserialize<'de> for Probe {
                fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                    super::json::opt_string::deserialize(d).map(|_| Probe)
                }
            }
            serde_json::from_str::<Probe>(raw).map(|_| None).map_err(E::custom)
        }
        _ => Ok(None),
    }
}

/// A captured number is one serde_json's number reader takes (`1e400` is not).
pub fn check_number<E: de::Error>(raw: &str) -> Result<(), E> {
    serde_json::from_str::<Checked>(raw).map(|_| ()).map_err(E::custom)
}

/// The text of a JSON string literal `raw` (quotes included) that serde_json has already scanned
/// (so its escapes are well formed and it holds no control character): borrowed when it holds no
/// escape, else unescaped into a string of its exact size. `None` for a lone surrogate escape,
/// which serde_json refuses in a string.
pub fn unescape_literal(raw: &str) -> Option<Cow<'_, str>> {
    let inner = raw.get(1..raw.len().checked_sub(1)?)?;
    let bytes = inner.as_bytes();
    let Some(first) = memchr::memchr(b'\\', bytes) else { return Some(Cow::Borrowed(inner)) };
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len());
    out.extend_from_slice(&bytes[..first]);
    let mut at = first;
    loop {
        // Copy up to the next backslash, eight bytes at a time.
        // (Whole words are copied, then the bytes from the backslash on are dropped: a copy of
        // a known size is a few instructions, a call to memcpy is not.)
        while let Some(word) = bytes.get(at..at + 8) {
            let word: [u8; 8] = word.try_into().ok()?;
            let x = u64::from_le_bytes(word) ^ 0x5c5c_5c5c_5c5c_5c5c;
            let found = x.wrapping_sub(0x0101_0101_0101_0101) & !x & 0x8080_8080_8080_8080;
            out.extend_from_slice(&word);
            if found == 0 {
                at += 8;
            } else {
                let n = (found.trailing_zeros() / 8) as usize;
                out.truncate(out.len() - 8 + n);
                at += n;
                break;
            }
        }
        while let Some(&b) = bytes.get(at) {
            if b == b'\\' {
                break;
            }
            out.push(b);
            at += 1;
        }
        if at >= bytes.len() {
            break;
        }
        at += 1;
        let esc = *bytes.get(at)?;
        at += 1;
        let byte = match esc {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let n = hex4(bytes.get(at..at + 4)?)?;
                at += 4;
                let c = match n {
                    0xDC00..=0xDFFF => return None,
                    0xD800..=0xDBFF => {
                        if bytes.get(at..at + 2)? != b"\\u" {
                            return None;
                        }
                        let n2 = hex4(bytes.get(at + 2..at + 6)?)?;
                        if !(0xDC00..=0xDFFF).contains(&n2) {
                            return None;
                        }
                        at += 6;
                        char::from_u32(((u32::from(n) - 0xD800) << 10 | (u32::from(n2) - 0xDC00)) + 0x1_0000)?
                    }
                    _ => char::from_u32(u32::from(n))?,
                };
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                continue;
            }
            _ => return None,
        };
        out.push(byte);
    }
    String::from_utf8(out).ok().map(Cow::Owned)
}

fn hex4(digits: &[u8]) -> Option<u16> {
    let mut n = 0u16;
    for &d in digits {
        n = n << 4 | (d as char).to_digit(16)? as u16;
    }
    Some(n)
}

/// `parts` joined into a string of exactly their size (`format!` costs several times more).
pub fn cat(parts: &[&str]) -> String {
    let mut out = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for part in parts {
        out.push_str(part);
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Reader: one pass over a line, with serde_json's acceptance rules.
// ---------------------------------------------------------------------------------------------

/// A pull reader over one JSON text that accepts exactly what serde_json accepts, read the way
/// serde's typed deserialization reads it: [`Reader::skip`] is serde_json's `IgnoredAny` (syntax
/// only: any string escape that is well formed, any number that is well formed, nesting without
/// limit); the typed reads ([`Reader::str`], [`Reader::object`], [`Reader::check`], …) are its
/// typed reads (a lone surrogate escape or a number beyond `f64` is refused; every object or
/// array entered counts towards serde_json's nesting limit of 128). A decoder drives it field by
/// field, so a line is scanned once, with no serde layers, and a struct is filled in place.
///
/// Any error is a [`Fail`]: the caller classifies the line as serde would
/// ([`super::json::classify_failure`]).
pub struct Reader<'a> {
    s: &'a str,
    pos: usize,
    /// serde_json's `remaining_depth`.
    depth_left: u8,
}

/// The text is not one serde_json would read (see [`Reader`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fail;

pub type Read<T> = Result<T, Fail>;

impl<'a> Reader<'a> {
    pub fn new(s: &'a str) -> Self {
        Reader { s, pos: 0, depth_left: 128 }
    }

    #[inline]
    fn bytes(&self) -> &'a [u8] {
        self.s.as_bytes()
    }

    /// The next byte after whitespace (not consumed).
    #[inline]
    pub fn peek(&mut self) -> Option<u8> {
        let b = self.bytes();
        while let Some(&c) = b.get(self.pos) {
            if matches!(c, b' ' | b'\n' | b'\t' | b'\r') {
                self.pos += 1;
            } else {
                return Some(c);
            }
        }
        None
    }

    /// Only whitespace is left.
    pub fn finish(mut self) -> Read<()> {
        if self.peek().is_none() { Ok(()) } else { Err(Fail) }
    }

    #[inline]
    fn eat(&mut self, c: u8) -> Read<()> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(Fail)
        }
    }

    /// Enter a container read by type (serde_json's recursion check).
    #[inline]
    fn enter(&mut self) -> Read<()> {
        self.depth_left -= 1;
        if self.depth_left == 0 { Err(Fail) } else { Ok(()) }
    }

    #[inline]
    fn leave(&mut self) {
        self.depth_left += 1;
    }

    fn literal(&mut self, word: &[u8]) -> Read<()> {
        if self.bytes()[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(Fail)
        }
    }

    /// Past a string literal (at its opening quote), checking its syntax; `(start, end)` of the
    /// literal, quotes included, and whether it holds an escape.
    #[inline]
    fn scan_str(&mut self) -> Read<(usize, usize, bool)> {
        let b = self.bytes();
        let start = self.pos;
        let mut i = start + 1;
        let mut escaped = false;
        loop {
            i = plain_run(b, i);
            match b.get(i) {
                Some(b'"') => {
                    self.pos = i + 1;
                    return Ok((start, i + 1, escaped));
                }
                Some(b'\\') => {
                    escaped = true;
                    match b.get(i + 1) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
                        Some(b'u') => {
                            let hex = b.get(i + 2..i + 6).ok_or(Fail)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return Err(Fail);
                            }
                            i += 6;
                        }
                        _ => return Err(Fail),
                    }
                }
                // A control character, or the end of the text.
                _ => return Err(Fail),
            }
        }
    }

    /// A string, read by type: borrowed when it holds no escape, else unescaped in the same pass;
    /// a lone surrogate is refused.
    #[inline]
    pub fn str(&mut self) -> Read<Cow<'a, str>> {
        if self.peek() != Some(b'"') {
            return Err(Fail);
        }
        let b = self.bytes();
        let start = self.pos + 1;
        let i = plain_run(b, start);
        match b.get(i) {
            Some(b'"') => {
                self.pos = i + 1;
                Ok(Cow::Borrowed(&self.s[start..i]))
            }
            Some(b'\\') => self.str_escaped(start, i).map(Cow::Owned),
            _ => Err(Fail),
        }
    }

    /// The rest of a string from its first escape (at `i`), unescaped as it is read.
    fn str_escaped(&mut self, start: usize, mut i: usize) -> Read<String> {
        let b = self.bytes();
        // The string's length is not known yet: room for the rest of the line up to 4 KiB (one
        // allocation for nearly every string; the spare room is given back at the end).
        let mut out: Vec<u8> = Vec::with_capacity((b.len() - start).min(4096.max(2 * (i - start))));
        out.extend_from_slice(&b[start..i]);
        loop {
            // At a backslash.
            let esc = *b.get(i + 1).ok_or(Fail)?;
            i += 2;
            let byte = match esc {
                b'"' => b'"',
                b'\\' => b'\\',
                b'/' => b'/',
                b'b' => 0x08,
                b'f' => 0x0c,
                b'n' => b'\n',
                b'r' => b'\r',
                b't' => b'\t',
                b'u' => {
                    let n = hex4(b.get(i..i + 4).ok_or(Fail)?).ok_or(Fail)?;
                    i += 4;
                    let c = match n {
                        0xDC00..=0xDFFF => return Err(Fail),
                        0xD800..=0xDBFF => {
                            if b.get(i..i + 2) != Some(b"\\u") {
                                return Err(Fail);
                            }
                            let n2 = hex4(b.get(i + 2..i + 6).ok_or(Fail)?).ok_or(Fail)?;
                            if !(0xDC00..=0xDFFF).contains(&n2) {
                                return Err(Fail);
                            }
                            i += 6;
                            char::from_u32(((u32::from(n) - 0xD800) << 10 | (u32::from(n2) - 0xDC00)) + 0x1_0000)
                        }
                        _ => char::from_u32(u32::from(n)),
                    };
                    out.extend_from_slice(c.ok_or(Fail)?.encode_utf8(&mut [0; 4]).as_bytes());
                    0
                }
                _ => return Err(Fail),
            };
            if esc != b'u' {
                out.push(byte);
            }
            let j = plain_run(b, i);
            out.extend_from_slice(&b[i..j]);
            i = j;
            match b.get(i) {
                Some(b'"') => {
                    self.pos = i + 1;
                    if out.capacity() - out.len() > 64 {
                        out.shrink_to_fit();
                    }
                    return String::from_utf8(out).map_err(|_| Fail);
                }
                Some(b'\\') => {}
                _ => return Err(Fail),
            }
        }
    }

    /// Past a number, checking its syntax; `(start, end)`.
    fn scan_number(&mut self) -> Read<(usize, usize)> {
        let b = self.bytes();
        let start = self.pos;
        let mut i = start;
        let digits = |i: &mut usize| {
            let from = *i;
            while b.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            *i > from
        };
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        match b.get(i) {
            Some(b'0') => {
                i += 1;
                if b.get(i).is_some_and(u8::is_ascii_digit) {
                    return Err(Fail);
                }
            }
            Some(b'1'..=b'9') => {
                digits(&mut i);
            }
            _ => return Err(Fail),
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            if !digits(&mut i) {
                return Err(Fail);
            }
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            if !digits(&mut i) {
                return Err(Fail);
            }
        }
        self.pos = i;
        Ok((start, i))
    }

    /// A number read by type: beyond `f64` is refused (only a number with an exponent or of 300+
    /// characters can be; serde_json itself decides those).
    fn typed_number(&mut self) -> Read<&'a str> {
        let (start, end) = self.scan_number()?;
        let text = &self.s[start..end];
        if (text.len() >= 300 || text.bytes().any(|c| c | 0x20 == b'e'))
            && serde_json::from_str::<Checked>(text).is_err()
        {
            return Err(Fail);
        }
        Ok(text)
    }

    /// Skip one value as serde_json's `IgnoredAny` does (syntax only, no nesting limit).
    pub fn skip(&mut self) -> Read<()> {
        // Open containers, innermost last: `true` for an object. No recursion: any depth.
        let mut open = Open::default();
        loop {
            // A value.
            match self.peek() {
                Some(b'"') => {
                    self.scan_str()?;
                }
                Some(b'n') => self.literal(b"null")?,
                Some(b't') => self.literal(b"true")?,
                Some(b'f') => self.literal(b"false")?,
                Some(b'-' | b'0'..=b'9') => {
                    self.scan_number()?;
                }
                Some(b'[') => {
                    self.pos += 1;
                    if self.peek() == Some(b']') {
                        self.pos += 1;
                    } else {
                        open.push(false);
                        continue;
                    }
                }
                Some(b'{') => {
                    self.pos += 1;
                    if self.peek() == Some(b'}') {
                        self.pos += 1;
                    } else {
                        open.push(true);
                        self.skip_key()?;
                        continue;
                    }
                }
                _ => return Err(Fail),
            }
            // After a value: close what ends here, or go on after a comma.
            loop {
                let Some(&object) = open.last() else { return Ok(()) };
                match self.peek() {
                    Some(b',') => {
                        self.pos += 1;
                        if object {
                            self.skip_key()?;
                        }
                        break;
                    }
                    Some(b']') if !object => {
                        self.pos += 1;
                        open.pop();
                    }
                    Some(b'}') if object => {
                        self.pos += 1;
                        open.pop();
                    }
                    _ => return Err(Fail),
                }
            }
        }
    }

    /// A key and its colon, skipped.
    fn skip_key(&mut self) -> Read<()> {
        if self.peek() != Some(b'"') {
            return Err(Fail);
        }
        self.scan_str()?;
        self.eat(b':')
    }

    /// Skip one value, returning its text (as serde_json captures a `&RawValue`).
    pub fn raw(&mut self) -> Read<&'a str> {
        self.peek();
        let start = self.pos;
        self.skip()?;
        Ok(&self.s[start..self.pos])
    }

    /// Read one value by type and keep nothing: what a `serde_json::Value` accepts, with the
    /// nesting counted from here.
    pub fn check(&mut self) -> Read<()> {
        match self.peek() {
            Some(b'"') => self.str().map(drop),
            Some(b'n') => self.literal(b"null"),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'-' | b'0'..=b'9') => self.typed_number().map(drop),
            Some(b'[') => self.array(|r| r.check()),
            Some(b'{') => self.object(|r, _| r.check()),
            _ => Err(Fail),
        }
    }

    /// Run `read` on the next value and return that value's text.
    pub fn read_with_text(&mut self, read: impl FnOnce(&mut Self) -> Read<()>) -> Read<&'a str> {
        self.peek();
        let start = self.pos;
        read(self)?;
        Ok(&self.s[start..self.pos])
    }

    /// Read one value by type and return its text.
    pub fn checked_raw(&mut self) -> Read<&'a str> {
        self.peek();
        let start = self.pos;
        self.check()?;
        Ok(&self.s[start..self.pos])
    }

    /// An object read by type (at `{`): `entry` is called with each key (read by type) and must
    /// read or skip its value.
    pub fn object(&mut self, mut entry: impl FnMut(&mut Self, Cow<'a, str>) -> Read<()>) -> Read<()> {
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
                _ => return Err(Fail),
            }
        }
    }

    /// An array read by type (at `[`): `item` must read or skip each element.
    pub fn array(&mut self, mut item: impl FnMut(&mut Self) -> Read<()>) -> Read<()> {
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
                _ => return Err(Fail),
            }
        }
    }

    /// A value read leniently as a string, as [`super::json::opt_string`] reads it: the string,
    /// or `None` for anything else (a number still read by type, a list's items skipped, an
    /// object's keys read and its values skipped).
    #[inline]
    pub fn opt_str(&mut self) -> Read<Option<Cow<'a, str>>> {
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
    pub fn null(&mut self) -> Read<bool> {
        if self.peek() == Some(b'n') {
            self.literal(b"null")?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// A value read by type into a [`Json`] tree (what a `serde_json::Value` accepts).
    pub fn json(&mut self) -> Read<Json<'a>> {
        match self.peek() {
            Some(b'"') => self.str().map(Json::Str),
            Some(b'n') => self.literal(b"null").map(|()| Json::Null),
            Some(b't') => self.literal(b"true").map(|()| Json::Bool(true)),
            Some(b'f') => self.literal(b"false").map(|()| Json::Bool(false)),
            Some(b'-' | b'0'..=b'9') => {
                let text = self.typed_number()?;
                serde_json::from_str::<Json<'_>>(text).map_err(|_| Fail)
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
            _ => Err(Fail),
        }
    }
}

/// An [`super::json::Obj`] field: an object read by `read`, or `None` for any other value (read
/// as `Obj` reads it).
pub fn read_obj<'a, T>(r: &mut Reader<'a>, read: impl FnOnce(&mut Reader<'a>) -> Read<T>) -> Read<Option<T>> {
    if r.peek() == Some(b'{') { read(r).map(Some) } else { r.opt_str().map(|_| None) }
}

/// An [`super::json::ObjList`] field: a list of objects each read by `read` (`None` for an item
/// that is not an object), or `None` for any other value.
pub fn read_obj_list<'a, T>(
    r: &mut Reader<'a>,
    mut read: impl FnMut(&mut Reader<'a>) -> Read<T>,
) -> Read<Option<Vec<super::json::Obj<T>>>> {
    if r.peek() != Some(b'[') {
        return r.opt_str().map(|_| None);
    }
    let mut items = Vec::new();
    r.array(|r| read_obj(r, &mut read).map(|t| items.push(super::json::Obj(t))))?;
    Ok(Some(items))
}

/// Fill the fields of `$target` from the object at `$r`: `"key" => field: reader` (a reader is
/// `fn(&mut Reader) -> Read<FieldType>`); other keys are skipped; a listed key printed twice
/// fails, as with serde's derive.
macro_rules! read_object {
    ($r:expr, $target:expr, { $($key:literal => $field:ident : $reader:expr),* $(,)? }) => {{
        const KEYS: &[&str] = &[$($key),*];
        let mut seen = [false; KEYS.len()];
        let target = $target;
        $r.object(|r, key| match key.as_ref() {
            $($key => {
                const AT: usize = $crate::decode::fast_b::key_index(KEYS, $key);
                if seen[AT] {
                    return Err($crate::decode::fast_b::Fail);
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

/// JSON text that a [`Reader`] has read whole (so it is one well-formed value, possibly with
/// whitespace around it) as [`RawJson`], kept verbatim, without serde_json reading it a second
/// time (`RawJson::from_text` would: about as long as reading it).
///
/// Callers pass only text that `json_of`, `Reader::check`/`checked_raw`/`raw` or
/// `Reader::read_with_text` accepted whole; debug builds re-check it (serde_json's own
/// `debug_assert` in `from_string_unchecked`).
pub fn read_raw_json(text: String) -> RawJson {
    let value = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'));
    let text = if value.len() == text.len() { text } else { value.to_string() };
    // SAFETY: `text` is one well-formed JSON value without surrounding whitespace: a `Reader`
    // (which accepts only what serde_json accepts, property-tested against it) has read it
    // whole, and the whitespace around it was trimmed above.
    let raw = unsafe { RawValue::from_string_unchecked(text) };
    RawJson::from_raw(&raw)
}

/// JSON `text` as [`RawJson`] (kept verbatim) when a [`serde_json::Value`] would read it whole.
pub fn value_raw_json(text: &str) -> Option<RawJson> {
    let mut r = Reader::new(text);
    let value = r.checked_raw().ok()?;
    r.finish().ok()?;
    Some(read_raw_json(value.to_string()))
}

/// `text` read whole into a [`Json`] tree, exactly as `serde_json::from_str::<Json>` (and
/// `Value`) would read it.
pub fn json_of(text: &str) -> Option<Json<'_>> {
    let mut r = Reader::new(text);
    r.json().and_then(|j| r.finish().map(|()| j)).ok()
}

/// The stack of containers [`Reader::skip`] is inside: the first 64 levels in a word, deeper
/// ones in a vector (allocated only for such nesting).
#[derive(Default)]
struct Open {
    bits: u64,
    len: usize,
    deep: Vec<bool>,
}

impl Open {
    #[inline]
    fn push(&mut self, object: bool) {
        if self.len < 64 {
            self.bits = (self.bits & !(1 << self.len)) | (u64::from(object) << self.len);
        } else {
            self.deep.push(object);
        }
        self.len += 1;
    }

    #[inline]
    fn last(&self) -> Option<&bool> {
        match self.len {
            0 => None,
            n if n <= 64 => Some(if self.bits >> (n - 1) & 1 == 1 { &true } else { &false }),
            _ => self.deep.last(),
        }
    }

    #[inline]
    fn pop(&mut self) {
        if self.len > 64 {
            self.deep.pop();
        }
        self.len = self.len.saturating_sub(1);
    }
}

/// The index of the first `"`, `\` or control character at or after `i` (or the length).
#[inline]
fn plain_run(b: &[u8], mut i: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(chunk) = b.get(i..i + 8) {
        let w = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        let ctrl = w.wrapping_sub(ONES * 0x20) & !w;
        let q = w ^ (ONES * u64::from(b'"'));
        let quote = q.wrapping_sub(ONES) & !q;
        let s = w ^ (ONES * u64::from(b'\\'));
        let slash = s.wrapping_sub(ONES) & !s;
        let found = (ctrl | quote | slash) & HIGH;
        if found != 0 {
            return i + (found.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while let Some(&c) = b.get(i) {
        if c == b'"' || c == b'\\' || c < 0x20 {
            return i;
        }
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::Strategy;
    use serde_json::{Value, json};

    #[test]
    fn accepts_what_value_accepts() {
        for text in [
            r#"{"a":1,"b":[true,null,-2,3.5,"x\n"],"c":{"d":"e"}}"#,
            r#"{"a":1,"a":2}"#,
            "[1e400]",
            r#""\ud800""#,
            "{\"a\":1",
            "-0",
            "18446744073709551616",
        ] {
            let json = serde_json::from_str::<Json>(text).ok();
            let ours = json.as_ref().map(|j| serde_json::to_value(j).unwrap());
            let theirs = serde_json::from_str::<Value>(text).ok();
            assert_eq!(ours, theirs, "{text}");
            assert_eq!(json.as_ref().map(Json::to_compact), theirs.as_ref().map(Value::to_string), "{text}");
            assert_eq!(json.map(Json::into_value), theirs, "{text}");
            assert_eq!(serde_json::from_str::<Checked>(text).is_ok(), theirs.is_some(), "{text}");
        }
    }

    #[test]
    fn repeated_keys_read_and_write_like_value() {
        let j: Json = serde_json::from_str(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        assert_eq!(j.get("a").and_then(Json::as_u64), Some(3));
        assert_eq!(j.to_raw_json().get(), r#"{"a":3,"b":2}"#);
        assert_eq!(j.to_raw_json(), json!({"b": 2, "a": 3}));
    }

    #[test]
    fn strings_borrow_without_escapes() {
        let j: Json = serde_json::from_str(r#"{"a":"plain","b":"esc\n"}"#).unwrap();
        assert!(matches!(j.get("a"), Some(Json::Str(Cow::Borrowed("plain")))));
        assert!(matches!(j.get("b"), Some(Json::Str(Cow::Owned(_)))));
        assert_eq!(unescape_literal(r#""x\"y""#).as_deref(), Some("x\"y"));
        assert!(matches!(unescape_literal(r#""xy""#), Some(Cow::Borrowed("xy"))));
    }

    #[test]
    fn unescapes_like_serde_json() {
        for text in [
            r#""plain""#,
            r#""a\"b\\c\/d\be\ff\ng\rh\ti""#,
            r#""\u00e9\u4e2d\ud83d\ude00 end""#,
            r#""\ud800""#,
            r#""\udc00x""#,
            r#""\ud800\n""#,
            r#""\ud800\u0041""#,
            r#""\ud800\ud800""#,
            r#""x\u0000y""#,
            r#""""#,
        ] {
            let theirs = serde_json::from_str::<String>(text).ok();
            assert_eq!(unescape_literal(text).map(Cow::into_owned), theirs, "{text}");
        }
    }

    proptest::proptest! {
        #[test]
        fn unescape_agrees_with_serde_json(
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    "[a-z \"\\\\/\n\té€😀]{0,12}".prop_map(|s| {
                        let quoted = serde_json::to_string(&s).unwrap();
                        quoted[1..quoted.len() - 1].to_string()
                    }),
                    "\\\\u[0-9a-fA-F]{4}",
                    "\\\\u[dD][89abAB][0-9a-f]{2}",
                    "\\\\u[dD][c-fC-F][0-9a-f]{2}",
                    "\\\\[bfnrt/\"\\\\]",
                ],
                0..12,
            )
        ) {
            let text = format!("\"{}\"", parts.concat());
            let theirs = serde_json::from_str::<String>(&text).ok();
            proptest::prop_assert_eq!(unescape_literal(&text).map(Cow::into_owned), theirs, "{}", text);
        }
    }

    #[test]
    fn text_is_lenient_but_fails_where_serde_json_fails() {
        #[derive(Deserialize)]
        struct L<'a> {
            #[serde(default, borrow)]
            t: Text<'a>,
        }
        let get = |json: &str| serde_json::from_str::<L>(json).map(|l| l.t.0.map(Cow::into_owned)).ok();
        assert_eq!(get(r#"{"t":"x\ny"}"#), Some(Some("x\ny".to_string())));
        for other in ["null", "1", "true", "[1]", r#"{"a":"\ud800"}"#, r#"["\ud800"]"#] {
            assert_eq!(get(&format!(r#"{{"t":{other}}}"#)), Some(None), "{other}");
        }
        assert_eq!(get(r#"{"t":"\ud800"}"#), None);
        assert_eq!(get(r#"{"t":1e400}"#), None);
        assert_eq!(get(r#"{"t":{"\ud800":1}}"#), None);
        assert_eq!(get(r#"{}"#), Some(None));
        // Exactly as `json::opt_string`.
        #[derive(Deserialize)]
        struct O<'a> {
            #[serde(default, borrow, with = "super::super::json::opt_string")]
            t: Option<Cow<'a, str>>,
        }
        let oracle = |json: &str| serde_json::from_str::<O>(json).map(|l| l.t.map(Cow::into_owned)).ok();
        for value in [
            r#""x""#,
            r#""\ud800""#,
            "null",
            "1",
            "-0.5e3",
            "1e400",
            "true",
            "[1,{}]",
            r#"["\ud800"]"#,
            r#"{"a":"\ud800"}"#,
            r#"{"\ud800":1}"#,
            r#"{"a":[1e400]}"#,
            "[1e400]",
        ] {
            let json = format!(r#"{{"t":{value}}}"#);
            assert_eq!(get(&json), oracle(&json), "{value}");
        }
    }

    #[test]
    fn entries_behave_like_a_map() {
        let text = r#"{"a":1,"b":2,"a":3,"c":4,"d":5}"#;
        let mut map: serde_json::Map<String, Value> = serde_json::from_str(text).unwrap();
        let mut entries = Entries::of(serde_json::from_str(text).unwrap());
        map.insert("e".into(), json!(6));
        entries.insert("e", Json::Num(6.into()));
        map.insert("b".into(), json!(7));
        entries.insert("b", Json::Num(7.into()));
        assert_eq!(map.remove("a"), entries.swap_remove("a").map(Json::into_value));
        assert_eq!(map.remove("x"), entries.swap_remove("x").map(Json::into_value));
        assert_eq!(map.remove("c"), entries.swap_remove("c").map(Json::into_value));
        let ours = entries.into_map();
        assert_eq!(ours.keys().collect::<Vec<_>>(), map.keys().collect::<Vec<_>>());
        assert_eq!(ours, map);
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
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        #[test]
        fn reader_accepts_what_serde_json_accepts(text in json_text()) {
            use proptest::prop_assert_eq;
            let skip = { let mut r = Reader::new(&text); r.skip().and_then(|()| r.finish()).is_ok() };
            prop_assert_eq!(skip, serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok(), "skip {}", text);
            let raw = { let mut r = Reader::new(&text); r.raw().and_then(|t| r.finish().map(|()| t)).ok() };
            prop_assert_eq!(raw, serde_json::from_str::<&RawValue>(&text).ok().map(RawValue::get), "raw {}", text);
            let value = serde_json::from_str::<Value>(&text).ok();
            let check = { let mut r = Reader::new(&text); r.check().and_then(|()| r.finish()).is_ok() };
            prop_assert_eq!(check, value.is_some(), "check {}", text);
            let json = { let mut r = Reader::new(&text); r.json().and_then(|j| r.finish().map(|()| j)).ok() };
            prop_assert_eq!(json.map(Json::into_value), value, "json {}", text);
            // A lenient string field, as `json::opt_string` reads it inside a struct.
            #[derive(Deserialize)]
            struct O<'a> {
                #[serde(default, borrow, with = "super::super::json::opt_string")]
                t: Option<Cow<'a, str>>,
            }
            let line = format!(r#"{{"t":{text}}}"#);
            let ours = {
                let mut r = Reader::new(&line);
                let mut t = None;
                r.object(|r, k| if k == "t" { r.opt_str().map(|v| t = v) } else { r.skip() })
                    .and_then(|()| r.finish())
                    .map(|()| t.map(Cow::into_owned))
                    .ok()
            };
            let theirs = serde_json::from_str::<O>(&line).ok().map(|o| o.t.map(Cow::into_owned));
            prop_assert_eq!(ours, theirs, "opt_str {}", line);
        }
    }

    #[test]
    fn generator_mixes_valid_and_invalid() {
        use proptest::strategy::ValueTree;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let (mut valid, mut strict, mut n) = (0, 0, 0);
        for _ in 0..2000 {
            let text = json_text().new_tree(&mut runner).unwrap().current();
            n += 1;
            valid += usize::from(serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok());
            strict += usize::from(serde_json::from_str::<Value>(&text).is_ok());
        }
        eprintln!("{n} texts: {valid} valid, {strict} valid for Value");
        assert!(valid > n / 5 && valid < n * 4 / 5 && strict < valid);
    }

    #[test]
    fn reader_skips_deep_mixed_nesting_like_serde_json() {
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
                    let mut r = Reader::new(&text);
                    r.skip().and_then(|()| r.finish()).is_ok()
                };
                assert_eq!(skip, serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok(), "{depth}: {text}");
            }
        }
    }

    #[test]
    fn reader_nesting_limit_is_serde_jsons() {
        for depth in [126, 127, 128, 129, 2000] {
            let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            let check = Reader::new(&text).check().is_ok();
            assert_eq!(check, serde_json::from_str::<Value>(&text).is_ok(), "{depth}");
            let skip = Reader::new(&text).skip().is_ok();
            assert_eq!(skip, serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok(), "{depth}");
        }
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
