//! Allocation-light JSON helpers for the kimi and droid decoders (any decoder could use them).
//!
//! - [`Json`]: a borrowed JSON tree (objects are plain vectors: no map, no hashing) that accepts
//!   exactly what [`serde_json::Value`] accepts and reads like it (a key printed twice reads as
//!   its last value). [`Entries`] picks fields out of a record with `Map`'s semantics.
//! - [`read_raw_json`]: JSON text the [`Scan`]ner has read whole becomes a [`RawJson`] without
//!   serde_json reading it again.
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

use super::scan::Scan;
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
#[allow(unused_macros)] // droid's property test uses it; the one-pass `Scan` reads lines
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
    match memchr::memchr(b'\\', inner.as_bytes()) {
        None => Some(Cow::Borrowed(inner)),
        Some(at) => super::scan::unescape(raw.as_bytes(), 1, at + 1, inner.len()).ok().map(|(s, _)| Cow::Owned(s)),
    }
}

/// `parts` joined into a string of exactly their size (`format!` costs several times more).
pub fn cat(parts: &[&str]) -> String {
    let mut out = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for part in parts {
        out.push_str(part);
    }
    out
}

/// JSON text that a [`Scan`] has read whole (so it is one well-formed value, possibly with
/// whitespace around it) as [`RawJson`], kept verbatim, without serde_json reading it a second
/// time (`RawJson::from_text` would: about as long as reading it).
///
/// Callers pass only text that `json_of`, `Scan::check`/`checked_raw`/`raw` or
/// `Scan::read_with_text` accepted whole; debug builds re-check it (serde_json's own
/// `debug_assert` in `from_string_unchecked`).
pub fn read_raw_json(text: String) -> RawJson {
    let value = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'));
    let text = if value.len() == text.len() { text } else { value.to_string() };
    // SAFETY: `text` is one well-formed JSON value without surrounding whitespace: a `Scan`
    // (which accepts only what serde_json accepts, property-tested against it) has read it
    // whole, and the whitespace around it was trimmed above.
    let raw = unsafe { RawValue::from_string_unchecked(text) };
    RawJson::from_raw(&raw)
}

/// JSON `text` as [`RawJson`] (kept verbatim) when a [`serde_json::Value`] would read it whole.
pub fn value_raw_json(text: &str) -> Option<RawJson> {
    let mut r = Scan::new(text);
    let value = r.checked_raw().ok()?;
    r.end().ok()?;
    Some(read_raw_json(value.to_string()))
}

/// `text` read whole into a [`Json`] tree, exactly as `serde_json::from_str::<Json>` (and
/// `Value`) would read it.
pub fn json_of(text: &str) -> Option<Json<'_>> {
    let mut r = Scan::new(text);
    r.json().and_then(|j| r.end().map(|()| j)).ok()
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
