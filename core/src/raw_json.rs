//! [`RawJson`]: a harness's own JSON record (`rawInput`, `rawOutput`), kept as the text it printed.
//!
//! Decoders copy the record's bytes out of the wire line instead of building a
//! [`serde_json::Value`] tree: a tree costs one allocation per string and per object (plus
//! hashing every key), and most consumers never look inside these records. Serializing with
//! serde_json writes the text verbatim; [`RawJson::to_value`] parses it when someone does look.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// A valid JSON value, held as its text exactly as the harness printed it.
///
/// Equality is by meaning: two records are equal when their texts are, or when they parse to
/// equal values (so `{"a": 1}` equals `{"a":1}`). With serde_json the text is written verbatim;
/// other serde serializers get the parsed value.
#[derive(Clone)]
pub struct RawJson(Box<RawValue>);

impl RawJson {
    /// Copy an already-validated slice of a line (no re-parse).
    pub fn from_raw(raw: &RawValue) -> Self {
        RawJson(raw.to_owned())
    }

    /// Take a raw value already owned (no copy).
    pub(crate) fn from_boxed(raw: Box<RawValue>) -> Self {
        RawJson(raw)
    }

    /// The JSON text of `value`.
    pub fn from_value(value: &Value) -> Self {
        // Serializing a Value cannot fail: its keys are strings and its numbers finite.
        RawJson(serde_json::value::to_raw_value(value).unwrap_or_else(|_| null()))
    }

    /// Validate `text` as one JSON value; `None` when it is not JSON.
    pub fn from_text(text: impl Into<String>) -> Option<Self> {
        RawValue::from_string(text.into()).ok().map(RawJson)
    }

    /// The JSON text, verbatim.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// The record parsed into a [`Value`] (a key printed twice keeps its last value, as in
    /// every JSON reader).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.0.get()).unwrap_or(Value::Null)
    }

    /// True when the record is JSON `null`.
    pub fn is_null(&self) -> bool {
        self.0.get().trim() == "null"
    }
}

fn null() -> Box<RawValue> {
    RawValue::from_string("null".to_string()).expect("null is JSON")
}

impl From<Value> for RawJson {
    fn from(value: Value) -> Self {
        RawJson::from_value(&value)
    }
}

impl From<&RawValue> for RawJson {
    fn from(raw: &RawValue) -> Self {
        RawJson::from_raw(raw)
    }
}

impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get() || self.to_value() == other.to_value()
    }
}

impl PartialEq<Value> for RawJson {
    fn eq(&self, other: &Value) -> bool {
        self.to_value() == *other
    }
}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl fmt::Display for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // serde_json (to a writer, a string or a Value) recognises RawValue and copies the text;
        // any other serializer would see RawValue's private wrapper, so it gets the value.
        if std::any::type_name::<S>().starts_with("&mut serde_json::") {
            self.0.serialize(serializer)
        } else {
            self.to_value().serialize(serializer)
        }
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Through a Value so any deserializer works (events are read back from our own output,
        // not on the hot path).
        Value::deserialize(deserializer).map(|v| RawJson::from_value(&v))
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for RawJson {
    // Exactly the schema of a `serde_json::Value`: any JSON.
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "AnyValue".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::Schema::from(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn serde_json_writes_the_text_verbatim() {
        let raw = RawJson::from_text(r#"{"b": 1, "a":"\u00e9"}"#).unwrap();
        #[derive(Serialize)]
        struct W {
            raw: RawJson,
        }
        assert_eq!(serde_json::to_string(&W { raw: raw.clone() }).unwrap(), r#"{"raw":{"b": 1, "a":"\u00e9"}}"#);
        assert_eq!(serde_json::to_value(&raw).unwrap(), json!({"b": 1, "a": "é"}));
    }

    #[test]
    fn equality_is_by_meaning() {
        assert_eq!(RawJson::from_text(r#"{"a": [1, 2]}"#).unwrap(), RawJson::from_value(&json!({"a": [1, 2]})));
        assert_ne!(RawJson::from_text("1").unwrap(), RawJson::from_text("2").unwrap());
        assert_eq!(RawJson::from_text(r#""x""#).unwrap(), json!("x"));
    }

    #[test]
    fn invalid_text_is_refused_and_null_is_recognised() {
        assert!(RawJson::from_text("{not json").is_none());
        assert!(RawJson::from_text(" null").unwrap().is_null());
        assert!(!RawJson::from_value(&json!(0)).is_null());
    }

    #[test]
    fn reads_back_from_any_deserializer() {
        let v: RawJson = serde_json::from_value(json!({"k": [true]})).unwrap();
        assert_eq!(v.get(), r#"{"k":[true]}"#);
        let w: RawJson = serde_json::from_str(r#" {"k" : [true]} "#).unwrap();
        assert_eq!(v, w);
    }
}
