//! Reading Kimi CLI's wire format: the line structs, read in one pass by the scanner with the
//! leniency each field needs. What the lines mean is in [`super`].

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use crate::decode::LineOutcome;
use crate::decode::classify_failure;
use crate::json::borrowed::{Str, lenient_text};
use crate::json::lenient::{Obj, ObjList};
use crate::json::scan::json_of;
use crate::json::scan::{Bad, Res, Scan, read_obj, read_obj_list};
use crate::json::tree::Json;

/// Every line shape kimi prints: role-based messages and `{type, payload}` envelopes.
///
/// A line is read in one pass by [`read_line`]; the derived `Deserialize` (the same fields, the
/// same leniency) reads the wire envelopes' payloads.
#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
pub(super) struct Line<'a> {
    #[serde(default, borrow, with = "crate::json::lenient::opt_string")]
    pub(super) role: Option<Cow<'a, str>>,
    #[serde(rename = "type", default, borrow, with = "crate::json::lenient::opt_string")]
    pub(super) kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) content: Option<Content<'a>>,
    #[serde(default, borrow)]
    pub(super) tool_calls: Option<ObjList<RawToolCall<'a>>>,
    #[serde(default, borrow, with = "crate::json::lenient::opt_string")]
    pub(super) tool_call_id: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "crate::json::lenient::opt_string")]
    pub(super) session_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) payload: Option<&'a RawValue>,
}

/// A content part: `{type, text | think | image_url | audio_url | video_url}`.
#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
pub(super) struct Part<'a> {
    #[serde(rename = "type", default, borrow, with = "crate::json::lenient::opt_string")]
    pub(super) kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) text: Str<'a>,
    #[serde(default, borrow)]
    pub(super) think: Str<'a>,
    #[serde(default, borrow)]
    pub(super) image_url: Option<Url<'a>>,
    #[serde(default, borrow)]
    pub(super) audio_url: Option<Url<'a>>,
    #[serde(default, borrow)]
    pub(super) video_url: Option<Url<'a>>,
}

/// `{url}` of a media part (some writers print the URL as a bare string).
#[derive(Deserialize)]
pub(super) struct MediaUrl<'a> {
    #[serde(default, borrow, with = "crate::json::lenient::opt_string")]
    pub(super) url: Option<Cow<'a, str>>,
}

/// A media part's URL: `{"url": …}` or a bare string; `None` for anything else.
#[cfg_attr(test, derive(Debug))]
pub(super) struct Url<'a>(pub(super) Option<Cow<'a, str>>);

/// A message's `content`: a string, a list of parts, or something unusable (`Odd`). Decoded in
/// the same pass as the line.
#[cfg_attr(test, derive(Debug))]
pub(super) enum Content<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Obj<Part<'a>>>),
    Odd,
}

/// `function.arguments`: normally a string of JSON; some writers print the object itself.
#[cfg_attr(test, derive(Debug))]
pub(super) enum Args<'a> {
    Text(Cow<'a, str>),
    Object(Json<'a>),
    Odd,
}

/// One entry of `tool_calls`, and the wire `ToolCall` payload.
#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
pub(super) struct RawToolCall<'a> {
    #[serde(default, borrow, with = "crate::json::lenient::opt_string")]
    pub(super) id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) function: Obj<Function<'a>>,
}

#[derive(Deserialize, Default)]
#[cfg_attr(test, derive(Debug))]
pub(super) struct Function<'a> {
    #[serde(default, borrow, with = "crate::json::lenient::opt_string")]
    pub(super) name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) arguments: Option<Args<'a>>,
}

/// The wire `ToolResult` payload.
#[derive(Deserialize)]
pub(super) struct WireToolResult<'a> {
    #[serde(default, borrow, with = "crate::json::lenient::opt_string")]
    pub(super) tool_call_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) return_value: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub(super) content: Option<Content<'a>>,
    #[serde(default, borrow)]
    pub(super) is_error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
pub(super) struct ReturnValue<'a> {
    #[serde(default, borrow)]
    pub(super) is_error: Option<&'a RawValue>,
    #[serde(rename = "type", default, borrow, with = "crate::json::lenient::opt_string")]
    pub(super) kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) output: Option<Content<'a>>,
    #[serde(default, borrow, with = "crate::json::lenient::opt_string")]
    pub(super) message: Option<Cow<'a, str>>,
}

/// The wire `SubagentEvent` payload.
#[derive(Deserialize)]
pub(super) struct SubagentEvent<'a> {
    #[serde(default, borrow, with = "crate::json::lenient::opt_string")]
    pub(super) task_tool_call_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub(super) event: Option<&'a RawValue>,
}

/// Implements the visitor methods that give `$other` for value kinds a type does not use
/// (consuming lists and objects whole).
macro_rules! other_values {
    ($other:expr, $($skip:ident),*) => {
        $(other_values!(@one $skip, $other);)*
    };
    (@one bool, $other:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> { Ok($other) }
    };
    (@one num, $other:expr) => {
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> { Ok($other) }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> { Ok($other) }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> { Ok($other) }
    };
    (@one unit, $other:expr) => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> { Ok($other) }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> { Ok($other) }
    };
    (@one str, $other:expr) => {
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> { Ok($other) }
    };
    (@one seq, $other:expr) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok($other)
        }
    };
    (@one map, $other:expr) => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok($other)
        }
    };
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or a list of parts")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Owned(v)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut parts = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(16));
                while let Some(part) = seq.next_element::<Obj<Part<'de>>>()? {
                    parts.push(part);
                }
                Ok(Content::Parts(parts))
            }
            other_values!(Content::Odd, bool, num, unit, map);
        }
        d.deserialize_any(V)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Args<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Captured verbatim, then read: the string (the usual case, full of escaped quotes) is
        // unescaped once into a string of its exact size, bypassing serde_json's scratch buffer.
        let raw = <&'de RawValue>::deserialize(d)?;
        let text = raw.get();
        if text.starts_with('{') {
            return serde_json::from_str::<Json<'de>>(text).map(Args::Object).map_err(de::Error::custom);
        }
        Ok(match lenient_text(text)? {
            Some(text) => Args::Text(text),
            None => Args::Odd,
        })
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Url<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Url<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("{url} or a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Url(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Url(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Url(Some(Cow::Owned(v))))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                MediaUrl::deserialize(de::value::MapAccessDeserializer::new(map)).map(|m| Url(m.url))
            }
            other_values!(Url(None), bool, num, unit, seq);
        }
        d.deserialize_any(V)
    }
}

/// A line read in one pass with [`Scan`] (serde_json's acceptance rules, no serde layers):
/// exactly what `parse_line::<Line>` gives, faster.
pub(super) fn parse_into<'a>(line: &'a str, l: &mut Line<'a>) -> Result<(), LineOutcome> {
    if !line.trim_start().starts_with('{') {
        return Err(classify_failure(line));
    }
    let mut r = Scan::new(line);
    read_line(&mut r, l).and_then(|()| r.end()).map_err(|_| classify_failure(line))
}

/// [`parse_into`] a new line struct.
#[cfg(test)]
pub(super) fn parse_one_pass(line: &str) -> Result<Line<'_>, LineOutcome> {
    let mut l = Line::default();
    parse_into(line, &mut l).map(|()| l)
}

/// Mark `bit` of `seen`: a key printed twice fails the line, as with serde's derive.
pub(super) fn once(seen: &mut u32, bit: u32) -> Res<()> {
    if *seen & bit != 0 {
        return Err(Bad);
    }
    *seen |= bit;
    Ok(())
}

pub(super) fn read_line<'a>(r: &mut Scan<'a>, l: &mut Line<'a>) -> Res<()> {
    let mut seen = 0;
    r.object(|r, key| {
        match key.as_ref() {
            "role" => once(&mut seen, 1).and_then(|()| r.opt_str()).map(|v| l.role = v),
            "type" => once(&mut seen, 2).and_then(|()| r.opt_str()).map(|v| l.kind = v),
            "content" => {
                once(&mut seen, 4)?;
                l.content = if r.null()? { None } else { Some(read_content(r)?) };
                Ok(())
            }
            "tool_calls" => {
                once(&mut seen, 8)?;
                l.tool_calls = if r.null()? { None } else { Some(ObjList(read_obj_list(r, read_tool_call)?)) };
                Ok(())
            }
            "tool_call_id" => once(&mut seen, 16).and_then(|()| r.opt_str()).map(|v| l.tool_call_id = v),
            "session_id" => once(&mut seen, 32).and_then(|()| r.opt_str()).map(|v| l.session_id = v),
            "payload" => {
                once(&mut seen, 64)?;
                if !r.null()? {
                    // Only the wire envelopes carry one: captured, then read by their own types.
                    l.payload = Some(serde_json::from_str::<&RawValue>(r.raw()?).map_err(|_| Bad)?);
                }
                Ok(())
            }
            _ => r.skip(),
        }
    })
}

/// `content`: a string, a list of parts, or anything else (`Odd`).
pub(super) fn read_content<'a>(r: &mut Scan<'a>) -> Res<Content<'a>> {
    match r.peek() {
        Some(b'"') => r.str().map(Content::Text),
        Some(b'[') => {
            let mut parts = Vec::new();
            r.array(|r| read_obj(r, read_part).map(|p| parts.push(Obj(p))))?;
            Ok(Content::Parts(parts))
        }
        _ => r.opt_str().map(|_| Content::Odd),
    }
}

pub(super) fn read_part<'a>(r: &mut Scan<'a>) -> Res<Part<'a>> {
    let mut p = Part::default();
    let mut seen = 0;
    r.object(|r, key| match key.as_ref() {
        "type" => once(&mut seen, 1).and_then(|()| r.opt_str()).map(|v| p.kind = v),
        "text" => once(&mut seen, 2).and_then(|()| r.opt_str()).map(|v| p.text = Str(v)),
        "think" => once(&mut seen, 4).and_then(|()| r.opt_str()).map(|v| p.think = Str(v)),
        "image_url" => once(&mut seen, 8).and_then(|()| read_opt_url(r)).map(|v| p.image_url = v),
        "audio_url" => once(&mut seen, 16).and_then(|()| read_opt_url(r)).map(|v| p.audio_url = v),
        "video_url" => once(&mut seen, 32).and_then(|()| read_opt_url(r)).map(|v| p.video_url = v),
        _ => r.skip(),
    })?;
    Ok(p)
}

/// `Option<Url>`: `null`, a string, `{url}`, or anything else (`Url(None)`).
pub(super) fn read_opt_url<'a>(r: &mut Scan<'a>) -> Res<Option<Url<'a>>> {
    if r.null()? {
        return Ok(None);
    }
    match r.peek() {
        Some(b'"') => r.str().map(|u| Some(Url(Some(u)))),
        Some(b'{') => {
            let mut url = None;
            let mut seen = 0;
            r.object(|r, key| match key.as_ref() {
                "url" => once(&mut seen, 1).and_then(|()| r.opt_str()).map(|v| url = v),
                _ => r.skip(),
            })?;
            Ok(Some(Url(url)))
        }
        _ => r.opt_str().map(|_| Some(Url(None))),
    }
}

pub(super) fn read_tool_call<'a>(r: &mut Scan<'a>) -> Res<RawToolCall<'a>> {
    let mut call = RawToolCall::default();
    let mut seen = 0;
    r.object(|r, key| match key.as_ref() {
        "id" => once(&mut seen, 1).and_then(|()| r.opt_str()).map(|v| call.id = v),
        "function" => once(&mut seen, 2).and_then(|()| read_obj(r, read_function)).map(|v| call.function = Obj(v)),
        _ => r.skip(),
    })?;
    Ok(call)
}

pub(super) fn read_function<'a>(r: &mut Scan<'a>) -> Res<Function<'a>> {
    let mut f = Function::default();
    let mut seen = 0;
    r.object(|r, key| match key.as_ref() {
        "name" => once(&mut seen, 1).and_then(|()| r.opt_str()).map(|v| f.name = v),
        "arguments" => {
            once(&mut seen, 2)?;
            f.arguments = if r.null()? {
                None
            } else {
                Some(match r.peek() {
                    Some(b'"') => Args::Text(r.str()?),
                    Some(b'{') => Args::Object(r.json()?),
                    _ => r.opt_str().map(|_| Args::Odd)?,
                })
            };
            Ok(())
        }
        _ => r.skip(),
    })?;
    Ok(f)
}

/// The members of a call's input that titles, locations, diffs and plans are made of, each as
/// a JSON reader reads it (the last one printed); other members are only checked.
pub(super) struct CallInput<'a> {
    pub(super) values: [Option<Json<'a>>; INPUT_KEYS],
}

/// How many members [`input_key`] knows.
pub(super) const INPUT_KEYS: usize = 21;

/// The slot of a member [`describe`] or [`todo_plan`] reads.
#[inline]
pub(super) fn input_key(key: &str) -> Option<usize> {
    Some(match key {
        "path" => 0,
        "file_path" => 1,
        "line_offset" => 2,
        "content" => 3,
        "mode" => 4,
        "edit" => 5,
        "edits" => 6,
        "old" => 7,
        "new" => 8,
        "old_string" => 9,
        "new_string" => 10,
        "command" => 11,
        "directory" => 12,
        "pattern" => 13,
        "query" => 14,
        "url" => 15,
        "description" => 16,
        "thought" => 17,
        "name" => 18,
        "task_id" => 19,
        "todos" => 20,
        _ => return None,
    })
}

impl<'a> CallInput<'a> {
    pub(crate) fn new() -> CallInput<'a> {
        CallInput { values: Default::default() }
    }

    /// Fill in the members of `text` when it is one JSON object (as a `serde_json::Value`
    /// reads it): whether it is one.
    pub(crate) fn read(&mut self, text: &'a str) -> bool {
        // One typed pass that checks every member and keeps the known ones: no tree is built.
        // A known member printed twice fails it: the tree then says which value counts.
        if self.scan(text) {
            return true;
        }
        *self = CallInput::new();
        match json_of(text).filter(Json::is_object) {
            Some(tree) => {
                self.fill_from_tree(&tree);
                true
            }
            None => false,
        }
    }

    pub(crate) fn scan(&mut self, text: &'a str) -> bool {
        let mut seen = 0u32;
        let mut r = Scan::new(text);
        r.object(|r, key| match input_key(&key) {
            Some(at) => {
                once(&mut seen, 1 << at)?;
                self.values[at] = Some(r.json()?);
                Ok(())
            }
            None => r.check(),
        })
        .and_then(|()| r.end())
        .is_ok()
    }

    /// The known members of an object (the last of a repeated key, as `Value` reads them).
    pub(crate) fn fill_from_tree(&mut self, tree: &Json<'a>) {
        if let Json::Obj(entries) = tree {
            for (key, value) in entries {
                if let Some(at) = input_key(key) {
                    self.values[at] = Some(value.clone());
                }
            }
        }
    }

    /// A member [`input_key`] knows.
    #[inline]
    pub(crate) fn get(&self, key: &str) -> Option<&Json<'a>> {
        self.values.get(input_key(key)?)?.as_ref()
    }

    /// Take a member [`input_key`] knows out.
    pub(crate) fn take(&mut self, key: &str) -> Option<Json<'a>> {
        self.values.get_mut(input_key(key)?)?.take()
    }

    /// A member's value when it is a non-empty string.
    pub(crate) fn str_of(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Json::as_str).filter(|s| !s.is_empty())
    }
}
