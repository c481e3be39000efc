//! serde field types and string helpers that borrow from the line.
//!
//! The serde-driven decoders (codex, gemini, opencode, and kimi's envelope payloads) read a line
//! in one pass into structs whose strings borrow from it unless they hold an escape. The types
//! here give each field the exact leniency it had when it was read as a `Value` or through
//! [`super::lenient::opt_string`], so a line fails exactly where it failed before:
//!
//! - [`Str`]: a string, or `None` for any other value (read by type and dropped: a number
//!   beyond `f64` or a bad key still fails, as in `opt_string`); [`lenient_text`] applies the
//!   same rule to a value already captured as text.
//! - [`Checked`]: any value read as a `Value` reads it, keeping nothing.
//! - [`CowStr`]: a value that must be a string (a key), borrowed when it holds no escape.
//! - [`unescape_literal`]: the string a captured value holds, decoded by the
//!   scanner's one unescaper ([`super::text::unescape`]).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A value that must be a JSON string (an object key, above all), borrowed when it holds no
/// escape.
pub struct CowStr<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for CowStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CowStr<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// A lenient string field: a JSON string (borrowed when it has no escapes), `None` for any other
/// value. [`super::lenient::opt_string`] as a type, so with its rules: the other value is read by
/// type and dropped, so a number beyond `f64` or a key with a lone surrogate escape still fails
/// the line.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Str<'a>(pub Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        super::lenient::opt_string::deserialize(d).map(Str)
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
                    super::lenient::opt_string::deserialize(d).map(|_| Probe)
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

/// The text of a JSON string literal `raw` (quotes included) that serde_json has already scanned
/// (so its escapes are well formed and it holds no control character): borrowed when it holds no
/// escape, else unescaped into a string of its exact size. `None` for a lone surrogate escape,
/// which serde_json refuses in a string.
pub fn unescape_literal(raw: &str) -> Option<Cow<'_, str>> {
    let inner = raw.get(1..raw.len().checked_sub(1)?)?;
    match memchr::memchr(b'\\', inner.as_bytes()) {
        None => Some(Cow::Borrowed(inner)),
        Some(at) => super::text::unescape(raw, 1, at + 1).ok().map(|(s, _)| Cow::Owned(s)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::Strategy;
    use serde::Deserialize;
    use serde_json::value::RawValue;

    #[test]
    fn literals_unescape_like_serde_json_strings() {
        for text in [
            r#""\"\\\/\b\f\n\r\t x""#,
            r#""\u00e9\u20AC \ud83d\ude00 end\\""#,
            r#""\\u0041\u0041""#,
            r#""\ud800""#,
            r#""\udc00 x""#,
            r#""\ud800\u0041""#,
            r#""\ud800\n""#,
        ] {
            let expected = serde_json::from_str::<String>(text).ok();
            assert_eq!(unescape_literal(text).map(Cow::into_owned), expected, "{text}");
        }
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
    fn literals_borrow_unless_escaped() {
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
    fn lenient_text_is_lenient_but_fails_where_serde_json_fails() {
        /// A field read as its captured text, then by `lenient_text` (as kimi reads arguments).
        struct Text(Option<String>);
        impl<'de> Deserialize<'de> for Text {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let raw = <&'de RawValue>::deserialize(d)?;
                lenient_text(raw.get()).map(|t| Text(t.map(Cow::into_owned)))
            }
        }
        #[derive(Deserialize)]
        struct L {
            #[serde(default)]
            t: Option<Text>,
        }
        let get = |json: &str| serde_json::from_str::<L>(json).map(|l| l.t.and_then(|t| t.0)).ok();
        assert_eq!(get(r#"{"t":"x\ny"}"#), Some(Some("x\ny".to_string())));
        for other in ["null", "1", "true", "[1]", r#"{"a":"\ud800"}"#, r#"["\ud800"]"#] {
            assert_eq!(get(&format!(r#"{{"t":{other}}}"#)), Some(None), "{other}");
        }
        assert_eq!(get(r#"{"t":"\ud800"}"#), None);
        assert_eq!(get(r#"{"t":1e400}"#), None);
        assert_eq!(get(r#"{"t":{"\ud800":1}}"#), None);
        assert_eq!(get(r#"{}"#), Some(None));
        // Exactly as `json::opt_string` (and so `Str`).
        #[derive(Deserialize)]
        struct O<'a> {
            #[serde(default, borrow, with = "crate::json::lenient::opt_string")]
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
}
