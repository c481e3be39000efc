//! Reading Droid's wire format: the line structs, read in one pass by the scanner with the
//! leniency each field needs. What the lines mean is in [`super`].

use std::borrow::Cow;
#[cfg(test)]
use std::fmt;

#[cfg(test)]
use serde::de::{self, MapAccess, SeqAccess, Visitor};
#[cfg(test)]
use serde::{Deserialize, Deserializer};
#[cfg(test)]
use serde_json::value::RawValue;

use crate::decode::LineOutcome;
use crate::decode::classify_failure;
#[cfg(test)]
use crate::json::borrowed::unescape_literal;
#[cfg(test)]
use crate::json::in_place::{opt_str, raw_field, read_in_place, value};
use crate::json::lenient::{Obj, ObjList};
use crate::json::scan::{Res, Scan, read_obj, read_obj_list, read_object};
use crate::json::tree::Json;

/// A polymorphic field: a string (unescaped once, borrowed when it holds no escape), or any
/// other JSON value, kept as its verbatim text and read into a borrowed [`Json`] tree (no `Value`,
/// no hashing). Both are read exactly as strictly as a `Value` would read them.
#[derive(Debug)]
pub(super) enum Val<'a> {
    Str(Cow<'a, str>),
    Json(Box<RawVal<'a>>),
}

/// A non-string value: its text as printed, and the text read.
#[derive(Debug)]
pub(super) struct RawVal<'a> {
    pub(super) raw: &'a str,
    pub(super) json: Json<'a>,
}

/// `message`: the text of an `error` line, or the message object of `create_message`.
#[cfg_attr(test, derive(Debug))]
pub(super) enum MessageField<'a> {
    Str(Cow<'a, str>),
    Msg(Box<CreatedMessage<'a>>),
    Odd,
}

/// Every droid line shape: stream-json lines, JSON-RPC envelopes and their notifications.
///
/// Read in one pass by [`read_line`] ([`Scan`]) into a struct the decoder holds (at 1 KB, the
/// struct is filled in place, never copied).
#[derive(Default)]
#[cfg_attr(test, derive(Debug))]
pub(super) struct Line<'a> {
    pub(super) kind: Option<Cow<'a, str>>,
    pub(super) subtype: Option<Cow<'a, str>>,
    pub(super) role: Option<Cow<'a, str>>,
    pub(super) id: Option<Cow<'a, str>>,
    pub(super) message_id: Option<Cow<'a, str>>,
    pub(super) text: Option<Cow<'a, str>>,
    pub(super) text_delta: Option<Cow<'a, str>>,
    pub(super) block_index: Option<&'a str>,
    pub(super) session_id: Option<Cow<'a, str>>,
    pub(super) session_id_camel: Option<Cow<'a, str>>,
    pub(super) timestamp: Option<&'a str>,
    pub(super) model: Option<Cow<'a, str>>,
    // Tool calls: nested `toolUse` / `tool_use`, or the flat fields of the line itself.
    pub(super) tool_use: Obj<Box<ToolUse<'a>>>,
    pub(super) tool_use_snake: Obj<Box<ToolUse<'a>>>,
    pub(super) tool_use_id: Option<Cow<'a, str>>,
    pub(super) tool_use_id_snake: Option<Cow<'a, str>>,
    pub(super) name: Option<Cow<'a, str>>,
    pub(super) tool_name: Option<Cow<'a, str>>,
    pub(super) tool_name_snake: Option<Cow<'a, str>>,
    pub(super) tool_id: Option<Cow<'a, str>>,
    pub(super) input: Option<Val<'a>>,
    pub(super) tool_input: Option<Val<'a>>,
    pub(super) arguments: Option<Val<'a>>,
    pub(super) parameters: Option<Val<'a>>,
    // Tool results.
    pub(super) is_error: Option<&'a str>,
    pub(super) is_error_snake: Option<&'a str>,
    pub(super) value: Option<Val<'a>>,
    pub(super) content: Option<Val<'a>>,
    pub(super) error: Option<Val<'a>>,
    pub(super) update: Option<Val<'a>>,
    // Run end.
    pub(super) final_text: Option<Cow<'a, str>>,
    pub(super) result: Option<Val<'a>>,
    pub(super) usage: Option<Val<'a>>,
    pub(super) num_turns: Option<Val<'a>>,
    pub(super) duration_ms: Option<Val<'a>>,
    pub(super) num_turns_snake: Option<Val<'a>>,
    pub(super) duration_ms_snake: Option<Val<'a>>,
    // Errors and messages.
    pub(super) source: Option<Cow<'a, str>>,
    pub(super) message: Option<MessageField<'a>>,
    pub(super) error_type: Option<Cow<'a, str>>,
    // JSON-RPC.
    pub(super) jsonrpc: Option<&'a str>,
    pub(super) method: Option<Cow<'a, str>>,
    pub(super) params: Obj<Params<'a>>,
    pub(super) token_usage: Option<Val<'a>>,
    pub(super) last_call_token_usage: Option<Val<'a>>,
}

// The same fields read with serde: the property test's oracle for `read_line`.
#[cfg(test)]
read_in_place!(Line {
    kind: "type" => opt_str,
    subtype: "subtype" => opt_str,
    role: "role" => opt_str,
    id: "id" => opt_str,
    message_id: "messageId" => opt_str,
    text: "text" => opt_str,
    text_delta: "textDelta" => opt_str,
    block_index: "blockIndex" => raw_field,
    session_id: "session_id" => opt_str,
    session_id_camel: "sessionId" => opt_str,
    timestamp: "timestamp" => raw_field,
    model: "model" => opt_str,
    tool_use: "toolUse" => value,
    tool_use_snake: "tool_use" => value,
    tool_use_id: "toolUseId" => opt_str,
    tool_use_id_snake: "tool_use_id" => opt_str,
    name: "name" => opt_str,
    tool_name: "toolName" => opt_str,
    tool_name_snake: "tool_name" => opt_str,
    tool_id: "toolId" => opt_str,
    input: "input" => value,
    tool_input: "toolInput" => value,
    arguments: "arguments" => value,
    parameters: "parameters" => value,
    is_error: "isError" => raw_field,
    is_error_snake: "is_error" => raw_field,
    value: "value" => value,
    content: "content" => value,
    error: "error" => value,
    update: "update" => value,
    final_text: "finalText" => opt_str,
    result: "result" => value,
    usage: "usage" => value,
    num_turns: "numTurns" => value,
    duration_ms: "durationMs" => value,
    num_turns_snake: "num_turns" => value,
    duration_ms_snake: "duration_ms" => value,
    source: "source" => opt_str,
    message: "message" => value,
    error_type: "errorType" => opt_str,
    jsonrpc: "jsonrpc" => raw_field,
    method: "method" => opt_str,
    params: "params" => value,
    token_usage: "tokenUsage" => value,
    last_call_token_usage: "lastCallTokenUsage" => value,
});

/// The fields that name a tool call (nested `toolUse`, or flat on the line).
#[derive(Default)]
#[cfg_attr(test, derive(Deserialize, Debug))]
pub(super) struct ToolUse<'a> {
    #[cfg_attr(test, serde(default, borrow, with = "crate::json::lenient::opt_string"))]
    pub(super) id: Option<Cow<'a, str>>,
    #[cfg_attr(test, serde(rename = "toolUseId", default, borrow, with = "crate::json::lenient::opt_string"))]
    pub(super) tool_use_id: Option<Cow<'a, str>>,
    #[cfg_attr(test, serde(rename = "tool_use_id", default, borrow, with = "crate::json::lenient::opt_string"))]
    pub(super) tool_use_id_snake: Option<Cow<'a, str>>,
    #[cfg_attr(test, serde(default, borrow, with = "crate::json::lenient::opt_string"))]
    pub(super) name: Option<Cow<'a, str>>,
    #[cfg_attr(test, serde(rename = "toolName", default, borrow, with = "crate::json::lenient::opt_string"))]
    pub(super) tool_name: Option<Cow<'a, str>>,
    #[cfg_attr(test, serde(rename = "tool_name", default, borrow, with = "crate::json::lenient::opt_string"))]
    pub(super) tool_name_snake: Option<Cow<'a, str>>,
    #[cfg_attr(test, serde(rename = "toolId", default, borrow, with = "crate::json::lenient::opt_string"))]
    pub(super) tool_id: Option<Cow<'a, str>>,
    #[cfg_attr(test, serde(default, borrow))]
    pub(super) input: Option<Val<'a>>,
    #[cfg_attr(test, serde(rename = "toolInput", default, borrow))]
    pub(super) tool_input: Option<Val<'a>>,
    #[cfg_attr(test, serde(default, borrow))]
    pub(super) arguments: Option<Val<'a>>,
    #[cfg_attr(test, serde(default, borrow))]
    pub(super) parameters: Option<Val<'a>>,
}

#[derive(Default)]
#[cfg_attr(test, derive(Deserialize, Debug))]
pub(super) struct Params<'a> {
    #[cfg_attr(test, serde(default, borrow))]
    pub(super) notification: Obj<Box<Line<'a>>>,
    #[cfg_attr(test, serde(rename = "sessionId", default, borrow, with = "crate::json::lenient::opt_string"))]
    pub(super) session_id: Option<Cow<'a, str>>,
}

/// `create_message`'s `message`.
#[derive(Default)]
#[cfg_attr(test, derive(Deserialize, Debug))]
pub(super) struct CreatedMessage<'a> {
    #[cfg_attr(test, serde(default, borrow, with = "crate::json::lenient::opt_string"))]
    pub(super) id: Option<Cow<'a, str>>,
    #[cfg_attr(test, serde(default, borrow, with = "crate::json::lenient::opt_string"))]
    pub(super) role: Option<Cow<'a, str>>,
    #[cfg_attr(test, serde(default, borrow))]
    pub(super) content: ObjList<Block<'a>>,
}

/// A content block of a message.
#[derive(Default)]
#[cfg_attr(test, derive(Deserialize, Debug))]
pub(super) struct Block<'a> {
    #[cfg_attr(test, serde(rename = "type", default, borrow, with = "crate::json::lenient::opt_string"))]
    pub(super) kind: Option<Cow<'a, str>>,
    #[cfg_attr(test, serde(default, borrow, with = "crate::json::lenient::opt_string"))]
    pub(super) text: Option<Cow<'a, str>>,
    #[cfg_attr(test, serde(default, borrow, with = "crate::json::lenient::opt_string"))]
    pub(super) thinking: Option<Cow<'a, str>>,
    #[cfg_attr(test, serde(default, borrow, with = "crate::json::lenient::opt_string"))]
    pub(super) id: Option<Cow<'a, str>>,
    #[cfg_attr(test, serde(default, borrow, with = "crate::json::lenient::opt_string"))]
    pub(super) name: Option<Cow<'a, str>>,
    #[cfg_attr(test, serde(default, borrow))]
    pub(super) input: Option<Val<'a>>,
}

#[cfg(test)]
impl<'de: 'a, 'a> Deserialize<'de> for Val<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = <&'de RawValue>::deserialize(d)?.get();
        if raw.starts_with('"') {
            return unescape_literal(raw).map(Val::Str).ok_or_else(|| de::Error::custom("lone surrogate in a string"));
        }
        let json = serde_json::from_str::<Json<'de>>(raw).map_err(de::Error::custom)?;
        Ok(Val::Json(Box::new(RawVal { raw, json })))
    }
}

#[cfg(test)]
impl<'de: 'a, 'a> Deserialize<'de> for MessageField<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MessageField<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or a message object")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(MessageField::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(MessageField::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(MessageField::Str(Cow::Owned(v)))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                CreatedMessage::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(|m| MessageField::Msg(Box::new(m)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<de::IgnoredAny>()?.is_some() {}
                Ok(MessageField::Odd)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(MessageField::Odd)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(MessageField::Odd)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(MessageField::Odd)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(MessageField::Odd)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(MessageField::Odd)
            }
        }
        d.deserialize_any(V)
    }
}

/// A line read in one pass with [`Scan`] (serde_json's acceptance rules, no serde layers),
/// into `l`: exactly what reading it with serde gives (the property test checks that).
pub(super) fn parse_one_pass<'a>(line: &'a str, l: &mut Line<'a>) -> Result<(), LineOutcome> {
    if !line.trim_start().starts_with('{') {
        return Err(classify_failure(line));
    }
    let mut r = Scan::new(line);
    read_line(&mut r, l).and_then(|()| r.end()).map_err(|_| classify_failure(line))
}

pub(super) fn read_line<'a>(r: &mut Scan<'a>, l: &mut Line<'a>) -> Res<()> {
    read_object!(r, l, {
        "type" => kind: Scan::opt_str,
        "subtype" => subtype: Scan::opt_str,
        "role" => role: Scan::opt_str,
        "id" => id: Scan::opt_str,
        "messageId" => message_id: Scan::opt_str,
        "text" => text: Scan::opt_str,
        "textDelta" => text_delta: Scan::opt_str,
        "blockIndex" => block_index: read_raw,
        "session_id" => session_id: Scan::opt_str,
        "sessionId" => session_id_camel: Scan::opt_str,
        "timestamp" => timestamp: read_raw,
        "model" => model: Scan::opt_str,
        "toolUse" => tool_use: read_tool_use,
        "tool_use" => tool_use_snake: read_tool_use,
        "toolUseId" => tool_use_id: Scan::opt_str,
        "tool_use_id" => tool_use_id_snake: Scan::opt_str,
        "name" => name: Scan::opt_str,
        "toolName" => tool_name: Scan::opt_str,
        "tool_name" => tool_name_snake: Scan::opt_str,
        "toolId" => tool_id: Scan::opt_str,
        "input" => input: read_val,
        "toolInput" => tool_input: read_val,
        "arguments" => arguments: read_val,
        "parameters" => parameters: read_val,
        "isError" => is_error: read_raw,
        "is_error" => is_error_snake: read_raw,
        "value" => value: read_val,
        "content" => content: read_val,
        "error" => error: read_val,
        "update" => update: read_val,
        "finalText" => final_text: Scan::opt_str,
        "result" => result: read_val,
        "usage" => usage: read_val,
        "numTurns" => num_turns: read_val,
        "durationMs" => duration_ms: read_val,
        "num_turns" => num_turns_snake: read_val,
        "duration_ms" => duration_ms_snake: read_val,
        "source" => source: Scan::opt_str,
        "message" => message: read_message,
        "errorType" => error_type: Scan::opt_str,
        "jsonrpc" => jsonrpc: read_raw,
        "method" => method: Scan::opt_str,
        "params" => params: read_params,
        "tokenUsage" => token_usage: read_val,
        "lastCallTokenUsage" => last_call_token_usage: read_val,
    })
}

/// A field kept as its text (`null` is absent).
pub(super) fn read_raw<'a>(r: &mut Scan<'a>) -> Res<Option<&'a str>> {
    if r.null()? { Ok(None) } else { r.raw().map(Some) }
}

/// A polymorphic field ([`Val`]; `null` is absent).
pub(super) fn read_val<'a>(r: &mut Scan<'a>) -> Res<Option<Val<'a>>> {
    if r.null()? {
        return Ok(None);
    }
    if r.peek() == Some(b'"') {
        return r.str().map(|s| Some(Val::Str(s)));
    }
    let mut json = Json::Null;
    let raw = r.read_with_text(|r| r.json().map(|j| json = j))?;
    Ok(Some(Val::Json(Box::new(RawVal { raw, json }))))
}

pub(super) fn read_tool_use<'a>(r: &mut Scan<'a>) -> Res<Obj<Box<ToolUse<'a>>>> {
    read_obj(r, |r| {
        let mut t = Box::<ToolUse<'a>>::default();
        read_object!(r, &mut *t, {
            "id" => id: Scan::opt_str,
            "toolUseId" => tool_use_id: Scan::opt_str,
            "tool_use_id" => tool_use_id_snake: Scan::opt_str,
            "name" => name: Scan::opt_str,
            "toolName" => tool_name: Scan::opt_str,
            "tool_name" => tool_name_snake: Scan::opt_str,
            "toolId" => tool_id: Scan::opt_str,
            "input" => input: read_val,
            "toolInput" => tool_input: read_val,
            "arguments" => arguments: read_val,
            "parameters" => parameters: read_val,
        })
        .map(|()| t)
    })
    .map(Obj)
}

pub(super) fn read_params<'a>(r: &mut Scan<'a>) -> Res<Obj<Params<'a>>> {
    read_obj(r, |r| {
        let mut p = Params::default();
        read_object!(r, &mut p, {
            "notification" => notification: |r: &mut Scan<'a>| {
                read_obj(r, |r| {
                    let mut inner = Box::<Line<'a>>::default();
                    read_line(r, &mut inner).map(|()| inner)
                })
                .map(Obj)
            },
            "sessionId" => session_id: Scan::opt_str,
        })
        .map(|()| p)
    })
    .map(Obj)
}

/// `message`: a string, `create_message`'s message object, or anything else (`Odd`).
pub(super) fn read_message<'a>(r: &mut Scan<'a>) -> Res<Option<MessageField<'a>>> {
    if r.null()? {
        return Ok(None);
    }
    Ok(Some(match r.peek() {
        Some(b'"') => MessageField::Str(r.str()?),
        Some(b'{') => {
            let mut m = Box::<CreatedMessage<'a>>::default();
            read_object!(r, &mut *m, {
                "id" => id: Scan::opt_str,
                "role" => role: Scan::opt_str,
                "content" => content: |r: &mut Scan<'a>| read_obj_list(r, read_block).map(ObjList),
            })?;
            MessageField::Msg(m)
        }
        _ => r.opt_str().map(|_| MessageField::Odd)?,
    }))
}

pub(super) fn read_block<'a>(r: &mut Scan<'a>) -> Res<Block<'a>> {
    let mut b = Block::default();
    read_object!(r, &mut b, {
        "type" => kind: Scan::opt_str,
        "text" => text: Scan::opt_str,
        "thinking" => thinking: Scan::opt_str,
        "id" => id: Scan::opt_str,
        "name" => name: Scan::opt_str,
        "input" => input: read_val,
    })?;
    Ok(b)
}

impl<'a> Line<'a> {
    /// The tool-call fields printed flat on the line (droid ≥ 0.24 `tool_call` shape).
    pub(crate) fn take_flat_tool_use(&mut self) -> ToolUse<'a> {
        ToolUse {
            id: self.id.take(),
            tool_use_id: self.tool_use_id.take(),
            tool_use_id_snake: self.tool_use_id_snake.take(),
            name: self.name.take(),
            tool_name: self.tool_name.take(),
            tool_name_snake: self.tool_name_snake.take(),
            tool_id: self.tool_id.take(),
            input: self.input.take(),
            tool_input: self.tool_input.take(),
            arguments: self.arguments.take(),
            parameters: self.parameters.take(),
        }
    }

    /// The id a result or progress line refers to.
    pub(crate) fn take_result_id(&mut self) -> Option<Cow<'a, str>> {
        self.tool_use_id.take().or(self.tool_use_id_snake.take()).or(self.id.take()).filter(|s| !s.is_empty())
    }
}

impl<'a> Val<'a> {
    /// An object value (a [`Json::Obj`]).
    pub(crate) fn into_object(self) -> Option<Json<'a>> {
        match self {
            Val::Json(v) if v.json.is_object() => Some(v.json),
            _ => None,
        }
    }
    pub(crate) fn into_json(self) -> Json<'a> {
        match self {
            Val::Str(s) => Json::Str(s),
            Val::Json(v) => v.json,
        }
    }
    pub(crate) fn is_null(&self) -> bool {
        matches!(self, Val::Json(v) if v.json.is_null())
    }
}
