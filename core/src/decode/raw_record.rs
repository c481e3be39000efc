//! Verbatim records (`rawInput`, `rawOutput`, a harness's own record) built as [`RawJson`]
//! without building a `Value` tree and without serde_json reading the text a second time.
//!
//! - [`raw_object`]: an object composed of members kept as printed ([`Member`] / [`Piece`]).
//! - [`read_raw_json`] / [`value_raw_json`]: text the [`Scan`]ner has read whole, kept as is.
//! - [`checked_raw`]: a captured value kept when a `Value` would have held it.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;

use super::borrowed::Checked;
use super::scan::Scan;
use crate::event::RawJson;

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

/// `raw` as [`RawJson`] (its text copied verbatim) when a [`serde_json::Value`] would hold it.
pub fn checked_raw(raw: &RawValue) -> Option<RawJson> {
    serde_json::from_str::<Checked>(raw.get()).is_ok().then(|| RawJson::from_raw(raw))
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
mod tests {
    use super::*;
    use serde_json::Value;

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
