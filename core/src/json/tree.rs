//! A borrowed JSON tree, for records a decoder picks fields out of and then keeps.
//!
//! [`Json`] accepts exactly what [`serde_json::Value`] accepts and reads like it (a key printed
//! twice reads as its last value), but its strings borrow from the line and its objects are plain
//! vectors: no map to build and no key to hash for a record that is read a few keys at a time.
//! [`Entries`] picks fields out of a record with `Map`'s semantics before the rest becomes a map.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Number;

use super::borrowed::CowStr;
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
        if entries.len() > 16 {
            // Many keys (a hostile line can hold thousands): an index, not a search per key.
            let mut at: std::collections::HashMap<Cow<'a, str>, usize> = std::collections::HashMap::new();
            for (key, value) in entries {
                match at.get(&key) {
                    Some(&i) => out[i].1 = value,
                    None => {
                        at.insert(key.clone(), out.len());
                        out.push((key, value));
                    }
                }
            }
            return Entries(out);
        }
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

    /// The object of these entries as text, written as `Value` would write it.
    pub fn into_raw_json(self) -> RawJson {
        Json::Obj(self.0).to_raw_json()
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
        while let Some(key) = map.next_key::<CowStr<'de>>()? {
            entries.push((key.0, map.next_value()?));
        }
        Ok(Json::Obj(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::borrowed::Checked;
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
            assert_eq!(json.map(|j| serde_json::to_value(&j).unwrap()), theirs, "{text}");
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
        let value = |j: Json<'_>| serde_json::to_value(&j).unwrap();
        assert_eq!(map.remove("a"), entries.swap_remove("a").map(value));
        assert_eq!(map.remove("x"), entries.swap_remove("x").map(value));
        assert_eq!(map.remove("c"), entries.swap_remove("c").map(value));
        // Same members in the same order, written as `Value` writes them.
        assert_eq!(entries.into_raw_json().get(), Value::Object(map).to_string());
        // Many keys, repeated (found through an index, not a search per key): the same.
        let text = format!("{{{}}}", (0..300).map(|i| format!("\"k{}\":{i}", i % 120)).collect::<Vec<_>>().join(","));
        let map: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
        let entries = Entries::of(serde_json::from_str(&text).unwrap());
        assert_eq!(entries.into_raw_json().get(), Value::Object(map).to_string());
    }
}
