//! [`RawJson`]: a harness's own JSON record (`rawInput`, `rawOutput`), kept as the text it printed.
//!
//! Decoders copy the record's bytes out of the wire line instead of building a
//! [`serde_json::Value`] tree: a tree costs one allocation per string and per object (plus
//! hashing every key), and most consumers never look inside these records. Serializing with
//! serde_json writes the text verbatim; [`RawJson::to_value`] parses it when someone does look.
//!
//! # What every JSON reader can read
//!
//! A harness may print JSON that one parser accepts and another refuses or crashes on. Before a
//! record leaves the core it is [normalized](RawJson::normalized), so that everything the product
//! writes is read by every strict JSON parser (and by the product's own envelope reader), and
//! by every binding without unbounded recursion:
//!
//! | printed | delivered |
//! |---|---|
//! | a lone surrogate escape (`"\ud800"`, a `\udc00` without its lead) | `"\ufffd"` (U+FFFD, as invalid UTF-8 is replaced) |
//! | a number beyond `f64` (`1e999`, a 400-digit integer) | `null` (what JSON writers make of an infinite number) |
//! | a container nested deeper than [`MAX_DEPTH`] levels inside the record | `{"$rawJson": "<its JSON text>"}` ([`RAW_JSON_MARKER`]), or `"[redacted]"` in a masked tool input |
//!
//! Each repair is counted ([`Repairs`]) and reported by the decoder as a diagnostic.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

mod clean;

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
    /// every JSON reader), [normalized](Self::normalized) first when it has to be: containers
    /// nested past [`MAX_DEPTH`] become `{"$rawJson": "…"}`, so a deep record is a value
    /// (never `null`, as serde_json's own recursion limit would make it).
    pub fn to_value(&self) -> Value {
        match serde_json::from_str(self.0.get()) {
            Ok(v) => v,
            Err(_) => match self.normalized(DeepContainers::AsText) {
                Some((fixed, _)) => serde_json::from_str(fixed.get()).unwrap_or(Value::Null),
                None => Value::Null,
            },
        }
    }

    /// True when the record is JSON `null`.
    pub fn is_null(&self) -> bool {
        self.0.get().trim() == "null"
    }
}

/// Containers (objects, arrays) nested deeper than this inside one record are delivered as
/// their JSON text under [`RAW_JSON_MARKER`] (see the [module docs](self)): every binding
/// converts records recursively, and a record nested a million levels deep must not take its
/// host down.
pub const MAX_DEPTH: usize = 64;

/// The one key of the object that stands in for a container nested past [`MAX_DEPTH`]; its
/// value is the container's JSON text, verbatim.
pub const RAW_JSON_MARKER: &str = "$rawJson";

/// What a container nested past [`MAX_DEPTH`] becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeepContainers {
    /// `{"$rawJson": "<its JSON text>"}`.
    AsText,
    /// The string `"[redacted]"`: a tool input too deep to judge is masked whole (fail closed).
    Masked,
}

/// What [`RawJson::normalized`] repaired.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Repairs {
    /// Lone surrogate escapes replaced by `\ufffd`.
    pub lone_surrogates: u32,
    /// Numbers beyond `f64` replaced by `null`.
    pub out_of_range_numbers: u32,
    /// Containers nested past [`MAX_DEPTH`] replaced whole.
    pub deep_containers: u32,
}

impl std::ops::AddAssign for Repairs {
    fn add_assign(&mut self, other: Repairs) {
        self.lone_surrogates += other.lone_surrogates;
        self.out_of_range_numbers += other.out_of_range_numbers;
        self.deep_containers += other.deep_containers;
    }
}

impl Repairs {
    /// True when nothing was repaired.
    pub fn is_empty(&self) -> bool {
        *self == Repairs::default()
    }

    /// One line for people, e.g. `1 lone surrogate escape replaced by U+FFFD`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.lone_surrogates > 0 {
            parts.push(format!("{} lone surrogate escape(s) replaced by U+FFFD", self.lone_surrogates));
        }
        if self.out_of_range_numbers > 0 {
            parts
                .push(format!("{} number(s) beyond 64-bit floating point replaced by null", self.out_of_range_numbers));
        }
        if self.deep_containers > 0 {
            parts.push(format!(
                "{} container(s) nested deeper than {MAX_DEPTH} levels delivered whole as {RAW_JSON_MARKER} text (or masked)",
                self.deep_containers
            ));
        }
        parts.join("; ")
    }
}

impl RawJson {
    /// This record as every JSON reader can read it (see the [module docs](self)): `None` when
    /// it already is (the usual case: one vector pass over the text, no allocation), else the
    /// repaired record and what was repaired. Iterative: any nesting depth.
    pub fn normalized(&self, deep: DeepContainers) -> Option<(RawJson, Repairs)> {
        repaired(normalize(self.get(), deep)?)
    }

    /// [`RawJson::normalized`] without its first look ([`clean::surely_clean`]): the exact pass
    /// over every byte. Slower, and always the same result; public for the tests and the
    /// `repair_scan` fuzz target, which compare the two.
    #[doc(hidden)]
    pub fn normalized_by_exact_pass(&self, deep: DeepContainers) -> Option<(RawJson, Repairs)> {
        repaired(repair(self.get(), deep)?)
    }
}

/// A repaired text as a record (validated: the repairs keep it JSON).
fn repaired((text, repairs): (String, Repairs)) -> Option<(RawJson, Repairs)> {
    let raw = RawValue::from_string(text).ok()?;
    Some((RawJson(raw), repairs))
}

/// Replace `text[start..end]` with the string.
type Edit = (usize, usize, String);

/// The repaired text of the JSON `text`, or `None` when nothing needs repairing (or the text is
/// not JSON after all: then it is left as it is). Most records are judged clean at a glance
/// ([`clean`]); the others go through the exact pass.
fn normalize(text: &str, deep: DeepContainers) -> Option<(String, Repairs)> {
    if clean::surely_clean(text.as_bytes()) {
        return None;
    }
    repair(text, deep)
}

/// [`normalize`]'s exact pass: every byte outside strings, every string's escapes.
fn repair(text: &str, deep: DeepContainers) -> Option<(String, Repairs)> {
    let b = text.as_bytes();
    let mut edits: Vec<Edit> = Vec::new();
    let mut repairs = Repairs::default();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => i = string_end(b, i + 1, Some((&mut edits, &mut repairs)))?,
            b'[' | b'{' if depth == MAX_DEPTH => {
                let end = container_end(b, i)?;
                let replacement = match deep {
                    DeepContainers::AsText => {
                        format!("{{\"{RAW_JSON_MARKER}\":{}}}", serde_json::to_string(&text[i..end]).ok()?)
                    }
                    DeepContainers::Masked => format!("\"{}\"", crate::redact::REDACTED),
                };
                edits.push((i, end, replacement));
                repairs.deep_containers += 1;
                i = end;
            }
            b'[' | b'{' => {
                depth += 1;
                i += 1;
            }
            b']' | b'}' => {
                depth = depth.checked_sub(1)?;
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < b.len() && matches!(b[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                    i += 1;
                }
                let number = &text[start..i];
                // Up to 19 plain digits always fit; anything else is judged the way a reader
                // that parses numbers as f64 judges it.
                let plain = number.len() <= 19 && !number.bytes().any(|c| matches!(c, b'.' | b'e' | b'E'));
                if !plain && !number.parse::<f64>().is_ok_and(f64::is_finite) {
                    edits.push((start, i, "null".to_string()));
                    repairs.out_of_range_numbers += 1;
                }
            }
            _ => i += 1,
        }
    }
    if edits.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    for (start, end, replacement) in edits {
        out.push_str(&text[pos..start]);
        out.push_str(&replacement);
        pos = end;
    }
    out.push_str(&text[pos..]);
    Some((out, repairs))
}

/// The index after the closing quote of the string whose contents start at `i`. With `fix`,
/// lone surrogate escapes are recorded as edits to `\ufffd`.
fn string_end(b: &[u8], mut i: usize, mut fix: Option<(&mut Vec<Edit>, &mut Repairs)>) -> Option<usize> {
    loop {
        i += memchr::memchr2(b'"', b'\\', &b[i..])?;
        if b[i] == b'"' {
            return Some(i + 1);
        }
        if b.get(i + 1) != Some(&b'u') {
            i += 2;
            continue;
        }
        let unit = hex4(b, i + 2)?;
        let paired = (0xD800..=0xDBFF).contains(&unit)
            && b.get(i + 6..i + 8) == Some(b"\\u")
            && hex4(b, i + 8).is_some_and(|lo| (0xDC00..=0xDFFF).contains(&lo));
        if paired {
            i += 12;
        } else {
            if (0xD800..=0xDFFF).contains(&unit) {
                if let Some((edits, repairs)) = fix.as_mut() {
                    edits.push((i, i + 6, "\\ufffd".to_string()));
                    repairs.lone_surrogates += 1;
                }
            }
            i += 6;
        }
    }
}

fn hex4(b: &[u8], at: usize) -> Option<u32> {
    let digits = b.get(at..at + 4)?;
    digits.iter().try_fold(0u32, |n, d| Some(n * 16 + (*d as char).to_digit(16)?))
}

/// The index after the container that opens at `start` (iterative: any depth).
fn container_end(b: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = start;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i = string_end(b, i + 1, None)?;
                continue;
            }
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
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

    fn normalized(text: &str) -> (String, Repairs) {
        let raw = RawJson::from_text(text).unwrap();
        match raw.normalized(DeepContainers::AsText) {
            Some((fixed, repairs)) => (fixed.get().to_string(), repairs),
            None => (text.to_string(), Repairs::default()),
        }
    }

    #[test]
    fn lone_surrogates_and_infinite_numbers_are_repaired_for_strict_readers() {
        let cases = [
            (r#"{"a":"x\ud800y"}"#, r#"{"a":"x\ufffdy"}"#),
            (r#"["\udc00", "\uD83D\uDE00", "\ud83d"]"#, r#"["\ufffd", "\uD83D\uDE00", "\ufffd"]"#),
            (r#"{"\ud800":1}"#, r#"{"\ufffd":1}"#),
            (
                r#"[1e999, -1E400, 1.5e308, 1e308, 0.5, -0, 12345678901234567890123]"#,
                r#"[null, null, 1.5e308, 1e308, 0.5, -0, 12345678901234567890123]"#,
            ),
            (r#"{"n": 1e999}"#, r#"{"n": null}"#),
        ];
        for (input, want) in cases {
            let (got, repairs) = normalized(input);
            assert_eq!(got, want, "{input}");
            assert!(!repairs.is_empty(), "{input}");
            // What we write, serde_json (strict: it refuses both) reads.
            assert!(serde_json::from_str::<Value>(&got).is_ok(), "{got}");
        }
        let big = format!("[{}]", "9".repeat(400));
        assert_eq!(normalized(&big).0, "[null]");
        for fine in [r#"{"a":"\u00e9\n\"\\"}"#, "[1, -2.5, 3e10, 18446744073709551615]", r#""sk-\ud83d\ude00""#] {
            assert_eq!(normalized(fine), (fine.to_string(), Repairs::default()), "{fine}");
        }
    }

    #[test]
    fn containers_past_the_depth_limit_are_delivered_as_text_at_any_depth() {
        for depth in [MAX_DEPTH, MAX_DEPTH + 1, 1000, 1_000_000] {
            let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
            let raw = RawJson::from_text(text.clone()).unwrap();
            let value = raw.to_value();
            assert_ne!(value, Value::Null, "depth {depth}");
            match raw.normalized(DeepContainers::AsText) {
                None => assert!(depth <= MAX_DEPTH, "depth {depth} within the limit"),
                Some((fixed, repairs)) => {
                    assert_eq!(repairs.deep_containers, 1);
                    let mut v = &serde_json::from_str::<Value>(fixed.get()).unwrap();
                    for _ in 0..MAX_DEPTH {
                        v = &v[0];
                    }
                    assert_eq!(v[RAW_JSON_MARKER], Value::String(text[MAX_DEPTH..text.len() - MAX_DEPTH].to_string()));
                    let (masked, _) = raw.normalized(DeepContainers::Masked).unwrap();
                    assert!(masked.get().contains("\"[redacted]\""));
                }
            }
        }
        // Siblings past the limit are each replaced; strings that look like brackets are not.
        let deep = format!("{}{}", "{\"k\":".repeat(MAX_DEPTH), "[[\"]]\"],[1]]");
        let text = format!("{deep}{}", "}".repeat(MAX_DEPTH));
        let (fixed, repairs) = normalized(&text);
        assert_eq!(repairs.deep_containers, 1);
        assert!(fixed.contains(r#"{"$rawJson":"[[\"]]\"],[1]]"}"#), "{fixed}");
    }

    #[test]
    fn reads_back_from_any_deserializer() {
        let v: RawJson = serde_json::from_value(json!({"k": [true]})).unwrap();
        assert_eq!(v.get(), r#"{"k":[true]}"#);
        let w: RawJson = serde_json::from_str(r#" {"k" : [true]} "#).unwrap();
        assert_eq!(v, w);
    }
}
