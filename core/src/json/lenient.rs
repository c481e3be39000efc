//! serde helpers with the decoders' leniency, shared by the harness decoders.
//!
//! Lines are decoded into typed structs whose strings borrow from the line where possible.
//! Fields whose shape varies by harness version are kept as `&RawValue` and parsed on demand,
//! so an odd shape in one field never costs the rest of the line.
#![allow(dead_code)] // helpers are shared; not every decoder uses every one

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeOwned, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::Unusable;

/// Parse `line` as `T`; on failure tell why the line could not be used.
///
/// Only objects are accepted: serde would otherwise read a JSON array into a struct by position.
pub fn parse_line<'a, T: Deserialize<'a>>(line: &'a str) -> Result<T, Unusable> {
    if !line.trim_start().starts_with('{') {
        return Err(classify_failure(line));
    }
    serde_json::from_str::<T>(line).map_err(|_| classify_failure(line))
}

/// Why a line that did not parse as the expected struct is unusable.
pub fn classify_failure(line: &str) -> Unusable {
    let valid = serde_json::from_str::<IgnoredAny>(line).is_ok();
    let is_object = line.trim_start().starts_with('{');
    match (valid, is_object) {
        (false, _) => Unusable::InvalidJson,
        (true, false) => Unusable::NotObject,
        (true, true) => Unusable::UnexpectedShape,
    }
}

/// Parse a raw sub-value as `T`, or `None` when it has another shape (or is `null`).
pub fn lenient<'a, T: Deserialize<'a>>(raw: Option<&'a RawValue>) -> Option<T> {
    let raw = raw?;
    if raw.get() == "null" {
        return None;
    }
    serde_json::from_str(raw.get()).ok()
}

/// Parse a raw sub-value into an owned `T`, or `None`.
pub fn lenient_owned<T: DeserializeOwned>(raw: Option<&RawValue>) -> Option<T> {
    let raw = raw?;
    serde_json::from_str(raw.get()).ok()
}

/// A raw sub-value as a [`Value`] (for `rawInput` / `rawOutput`), `None` when absent.
pub fn to_value(raw: Option<&RawValue>) -> Option<Value> {
    raw.and_then(|r| serde_json::from_str(r.get()).ok())
}

/// A raw sub-value as a string, when it is a JSON string.
pub fn as_str(raw: Option<&RawValue>) -> Option<String> {
    lenient_owned::<String>(raw)
}

/// Get a string field of a JSON object value.
pub fn str_field<'v>(obj: &'v Map<String, Value>, key: &str) -> Option<&'v str> {
    obj.get(key).and_then(Value::as_str)
}

/// The first of `keys` that holds a non-empty string.
pub fn first_str<'v>(obj: &'v Map<String, Value>, keys: &[&str]) -> Option<&'v str> {
    keys.iter().find_map(|k| str_field(obj, k).filter(|s| !s.is_empty()))
}

/// A JSON value's text the way a person reads it: a string as is, anything else as compact JSON.
pub fn display_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Serde helper: a string that may be absent, null, or of another type (then `None`).
///
/// A visitor, not an untagged enum: nothing is buffered, and an escape-free string is borrowed.
pub mod opt_string {
    use serde::Deserializer;
    use std::borrow::Cow;

    /// Deserialize leniently.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
        d.deserialize_any(super::LenientStr)
    }
}

/// Visitor behind [`opt_string`]: a string, or `None` for any other value (consumed whole).
struct LenientStr;

impl<'de> Visitor<'de> for LenientStr {
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
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
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
    fn visit_i128<E: de::Error>(self, _: i128) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u128<E: de::Error>(self, _: u128) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

/// A field that should be an object of shape `T`: `Obj(Some(t))` for an object, `Obj(None)` for
/// any other value (consumed whole, never an error). Decodes in the same pass as its line, so a
/// nested object costs no second scan. `T`'s own fields should be lenient too.
#[derive(Debug, Clone, PartialEq)]
pub struct Obj<T>(pub Option<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Obj<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(|t| Obj(Some(t)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Obj(None))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_any(self)
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Obj(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Obj(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Obj(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Obj(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Obj(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Obj(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Obj(None))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl<T> Default for Obj<T> {
    fn default() -> Self {
        Obj(None)
    }
}

/// A field that should be a list of objects of shape `T`: each element an [`Obj`] (`None` for a
/// `null` or other non-object element); a value that is not a list gives `None`.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjList<T>(pub Option<Vec<Obj<T>>>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ObjList<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = ObjList<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
                while let Some(item) = seq.next_element::<Obj<T>>()? {
                    items.push(item);
                }
                Ok(ObjList(Some(items)))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(ObjList(None))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_any(self)
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ObjList(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ObjList(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(ObjList(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(ObjList(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(ObjList(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(ObjList(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(ObjList(None))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl<T> Default for ObjList<T> {
    fn default() -> Self {
        ObjList(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_bad_lines() {
        assert_eq!(classify_failure("{oops"), Unusable::InvalidJson);
        assert_eq!(classify_failure("null"), Unusable::NotObject);
        assert_eq!(classify_failure("[1,2]"), Unusable::NotObject);
        assert_eq!(classify_failure(r#"{"a":1}"#), Unusable::UnexpectedShape);
    }

    #[test]
    fn opt_string_takes_strings_and_ignores_everything_else() {
        #[derive(Deserialize)]
        struct L<'a> {
            #[serde(default, borrow, with = "opt_string")]
            s: Option<Cow<'a, str>>,
            #[serde(default)]
            after: Option<u8>,
        }
        let get = |json: &str| serde_json::from_str::<L>(json).map(|l| (l.s.map(Cow::into_owned), l.after)).unwrap();
        assert_eq!(get(r#"{"s":"plain","after":1}"#), (Some("plain".to_string()), Some(1)));
        assert_eq!(get(r#"{"s":"esc\n\"aped\"","after":1}"#), (Some("esc\n\"aped\"".to_string()), Some(1)));
        for other in ["null", "1", "-2.5", "true", "[1,[2],{}]", r#"{"a":{"b":[]}}"#] {
            assert_eq!(get(&format!(r#"{{"s":{other},"after":1}}"#)), (None, Some(1)), "{other}");
        }
        assert_eq!(get(r#"{"after":1}"#), (None, Some(1)));
        let borrowed: L = serde_json::from_str(r#"{"s":"no escapes"}"#).unwrap();
        assert!(matches!(borrowed.s, Some(Cow::Borrowed(_))));
    }

    #[test]
    fn obj_and_obj_list_never_fail_the_line() {
        #[derive(Deserialize, Debug, PartialEq)]
        struct T {
            #[serde(default)]
            n: Option<u8>,
        }
        #[derive(Deserialize)]
        struct L {
            #[serde(default)]
            one: Obj<T>,
            #[serde(default)]
            many: ObjList<T>,
        }
        let l: L = serde_json::from_str(r#"{"one":{"n":1,"x":[1]},"many":[{"n":2},null,3,"s",{"n":4}]}"#).unwrap();
        assert_eq!(l.one, Obj(Some(T { n: Some(1) })));
        let many: Vec<Option<u8>> = l.many.0.unwrap().into_iter().map(|o| o.0.and_then(|t| t.n)).collect();
        assert_eq!(many, vec![Some(2), None, None, None, Some(4)]);
        for other in ["null", "1", "\"s\"", "[1]", "true"] {
            let l: L = serde_json::from_str(&format!(r#"{{"one":{other},"many":{other}}}"#)).unwrap();
            assert_eq!(l.one, Obj(None), "{other}");
            assert!(l.many.0.is_none() || other == "[1]", "{other}");
        }
    }

    #[test]
    fn lenient_ignores_other_shapes() {
        #[derive(Deserialize)]
        struct L<'a> {
            #[serde(borrow)]
            x: Option<&'a RawValue>,
        }
        let l: L = serde_json::from_str(r#"{"x":5}"#).unwrap();
        assert_eq!(lenient::<String>(l.x), None);
        assert_eq!(lenient::<u64>(l.x), Some(5));
    }
}
