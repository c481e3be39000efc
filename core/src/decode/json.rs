//! JSON helpers shared by the harness decoders.
//!
//! Lines are decoded into typed structs whose strings borrow from the line where possible.
//! Fields whose shape varies by harness version are kept as `&RawValue` and parsed on demand,
//! so an odd shape in one field never costs the rest of the line.
#![allow(dead_code)] // helpers are shared; not every decoder uses every one

use serde::Deserialize;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::LineOutcome;

/// Parse `line` as `T`; on failure tell why the line could not be used.
///
/// Only objects are accepted: serde would otherwise read a JSON array into a struct by position.
pub fn parse_line<'a, T: Deserialize<'a>>(line: &'a str) -> Result<T, LineOutcome> {
    if !line.trim_start().starts_with('{') {
        return Err(classify_failure(line));
    }
    serde_json::from_str::<T>(line).map_err(|_| classify_failure(line))
}

/// Why a line that did not parse as the expected struct is unusable.
pub fn classify_failure(line: &str) -> LineOutcome {
    let valid = serde_json::from_str::<IgnoredAny>(line).is_ok();
    let is_object = line.trim_start().starts_with('{');
    match (valid, is_object) {
        (false, _) => LineOutcome::InvalidJson,
        (true, false) => LineOutcome::NotObject,
        (true, true) => LineOutcome::UnexpectedShape,
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
pub mod opt_string {
    use serde::{Deserialize, Deserializer};
    use std::borrow::Cow;

    /// Deserialize leniently.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Cow<'de, str>>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Any<'a> {
            #[serde(borrow)]
            Str(Cow<'a, str>),
            Other(serde::de::IgnoredAny),
        }
        Ok(match Option::<Any<'de>>::deserialize(d)? {
            Some(Any::Str(s)) => Some(s),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_bad_lines() {
        assert_eq!(classify_failure("{oops"), LineOutcome::InvalidJson);
        assert_eq!(classify_failure("null"), LineOutcome::NotObject);
        assert_eq!(classify_failure("[1,2]"), LineOutcome::NotObject);
        assert_eq!(classify_failure(r#"{"a":1}"#), LineOutcome::UnexpectedShape);
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
