//! OpenCode decoder (`opencode run --format json`, with or without `--thinking`; checked against
//! opencode 1.18.33).
//!
//! Every line is `{type, timestamp, sessionID, part | error}`. `sessionID` becomes the run's
//! `sessionId`; `timestamp` (milliseconds since the epoch) becomes ISO 8601 UTC with
//! milliseconds (`2026-12-02T09:41:56.202Z`); `part.messageID` becomes `messageId` on every event
//! of the line, so text, tool calls and the step's usage of one LLM message share it.
//!
//! | line | events |
//! |---|---|
//! | `step_start` | none (a retried request prints another one; a step that never finishes has no `step_finish`) |
//! | `text` | `agent_message_chunk` with `part.text` (whole parts, not deltas) |
//! | `reasoning` | `agent_thought_chunk` with `part.text` (printed only with `--thinking`) |
//! | `tool_use` | ONE line carries the call and its result (opencode 1.18 prints each tool once, already finished): `tool_call` (`pending` while the state is pending, else `in_progress`), then for `todowrite` a `plan`, then (unless pending) `tool_call_update`. A call announced by an earlier pending/running line is not announced again: its later lines give only the update |
//! | `step_finish` | `usage{scope:"call"}` (see below); `extra` = `{reason}` (`tool-calls`, `stop`) |
//! | `error` | `error{fatal:true}` (opencode exits 1 after it) with `error.data.message`, else `error.message`, else `error.name`; `extra` = `name`, `statusCode`, `isRetryable` as printed |
//! | any other `type` | none, counted as unknown |
//!
//! Tool calls: `toolCallId` = `part.callID`; `toolName` = `part.tool` verbatim (MCP tools are
//! `<server>_<tool>`, e.g. `kb_lookup`; calls to tools that do not exist are printed as tool
//! `invalid`); `kind` from `tools.rs` (opencode names are matched lowercased); `rawInput` =
//! `state.input`. The update: `failed` when `state.status` is `"error"` or `metadata.exit` is a
//! non-zero number (a failing `bash` is still `completed` in opencode's eyes), `in_progress`
//! while running, else `completed`; content = `state.error` on error, else `state.output`
//! (verbatim; non-string output as JSON text), then one image block per image attachment
//! (`data:` URLs inline, other URLs as `uri`); `rawOutput` = the state object verbatim without
//! `input` (already in `rawInput`).
//!
//! | tool | title | locations / call content |
//! |---|---|---|
//! | bash | the command in backticks | `description` as text |
//! | read | `Read <filePath>` | the file (`line` = `offset` when given) |
//! | write | `Write <filePath>` | the file; diff with `oldText` null unless `metadata.exists` says the file was there |
//! | edit | `Edit <filePath>` | the file; diff `oldString` → `newString` |
//! | multiedit | `Edit <filePath>` | the file |
//! | glob / grep / list | `Find <pattern>` / `grep "<pattern>"` / `List <path>` | `path` |
//! | webfetch | `Fetch <url>` | – |
//! | websearch, codesearch | `Search: <query>` | – |
//! | task | `Task: <description>` | – (the subagent's own steps are not printed) |
//! | todowrite / todoread | `Update todos` / `Read todos` | `plan` from `input.todos` (else `output` parsed as a JSON list): `in_progress`/`in-progress`/`running` → in_progress; `completed`/`done`/`cancelled` → completed (a cancelled todo is no longer open, as the peer maps it); anything else pending; priority kept when high/medium/low, else medium |
//! | invalid | `Invalid tool call: <input.tool>` | – |
//! | skill | `Skill: <name>` | – |
//! | anything else | `state.title`, else the tool name | – |
//!
//! Usage of a step: opencode's `tokens.input` EXCLUDES the cache (`input` = prompt − cached), and
//! its `tokens.output` EXCLUDES reasoning (`output` = completion − reasoning), so
//! `promptTokens` = `input + cache.read + cache.write`, `cachedTokens` = `cache.read`,
//! `completionTokens` = `output + reasoning` (the model's completion count, comparable with
//! codex's `output_tokens`), `costUsd` = `cost` as printed, `extra` = the `tokens` object verbatim.
//!
//! Golden cases (`tests/golden/opencode/`): `s1-text`, `s2-bash`, `s3-read-edit` are real
//! captures; the `e-*` cases are written from the captured shapes (an orphan or out-of-order
//! result cannot happen: call and result share one line):
//!
//! | case | pins |
//! |---|---|
//! | e-thinking-tool | `--thinking` reasoning parts as thoughts (empty ones dropped), per-step usage |
//! | e-failing-bash-and-tool-error | `metadata.exit` 2 fails a "completed" bash; `state.status:"error"` with the error text |
//! | e-image-attachment | a data-URL image, a linked image (`uri`), a non-image attachment left to `rawOutput` |
//! | e-todowrite-plan | todos with priorities (cancelled → completed, unknown priority → medium), the plan from `output` when the input has none |
//! | e-api-error-401 | the APIError line: message, fatal, `name`/`statusCode`/`isRetryable` in `extra` |
//! | e-hangup | retries print only `step_start`s, then the fatal ECONNRESET error |
//! | e-hangup-recover | a `step_start` without `step_finish`, then the answer |
//! | e-mcp-parallel | MCP tools (`kb_lookup`), an MCP error, two calls in one step before the text, cache writes and cost |
//! | e-many-tools | glob, grep, webfetch, task (subagent), invalid, write over an existing file (no diff), read with an offset, non-string output |
//! | e-pending-running-states | one call over pending → running → completed lines is announced once |
//! | e-bad-lines | `null`, non-objects, invalid JSON, unknown types, missing parts and call ids, odd timestamps, null tokens |

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::borrowed::{CowStr, Str, may_hold_surrogates, raw_str};
use super::concat::title;
use super::context::{DecodeContext, Envelope};
use super::id_set::IdSet;
use super::in_place::{SeenKeys, key_text, parse_line_seed};
use super::json::{ObjList, first_str, opt_string, str_field};
use super::raw_record::raw_object;
use super::{Agent, HarnessDecoder, LineOutcome};
use crate::event::ToolKind;
use crate::event::{
    ContentBlock, DiffContent, ImageContent, OutputEvent, PlanEntry, PlanEntryPriority, PlanEntryStatus, RawJson,
    SessionUpdate, TokenUsage, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, UsageScope,
};
use crate::tools::{MAX_TITLE_CHARS, command_title, kind_table, truncate_chars};

/// Opencode line decoder.
#[derive(Debug, Default)]
pub(crate) struct OpencodeDecoder {
    /// Calls announced by an earlier line whose state was not final yet (pending/running).
    open: IdSet,
}

/// One line, read in one pass and in place (no large struct moved out of the parser). A known
/// key printed twice makes the line unusable, as a derived struct would.
#[derive(Default)]
struct Line<'a> {
    kind: Option<Cow<'a, str>>,
    timestamp: Option<&'a RawValue>,
    session_id: Option<Cow<'a, str>>,
    part: Option<Part<'a>>,
    error: Option<Value>,
}

struct LineSeed<'l, 'a>(&'l mut Line<'a>);

impl<'de: 'a, 'a> de::DeserializeSeed<'de> for LineSeed<'_, 'a> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for LineSeed<'_, 'a> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an opencode line")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let l = self.0;
        let mut seen = 0u8;
        while let Some(CowStr(key)) = map.next_key::<CowStr<'de>>()? {
            let bit = match key.as_ref() {
                "type" => 1,
                "timestamp" => 2,
                "sessionID" => 4,
                "part" => 8,
                "error" => 16,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            if seen & bit != 0 {
                return Err(de::Error::custom("duplicate field"));
            }
            seen |= bit;
            match bit {
                1 => l.kind = map.next_value::<Str<'de>>()?.0,
                2 => l.timestamp = map.next_value()?,
                4 => l.session_id = map.next_value::<Str<'de>>()?.0,
                8 => map.next_value_seed(PartSeed(&mut l.part))?,
                _ => l.error = map.next_value()?,
            }
        }
        Ok(())
    }
}

/// Reads a line's `part` in place: `null` is none; an object fills the part field by field; a
/// list fills it by position, and anything else fails the line (as a derived struct does).
struct PartSeed<'p, 'a>(&'p mut Option<Part<'a>>);

impl<'de: 'a, 'a> de::DeserializeSeed<'de> for PartSeed<'_, 'a> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for PartSeed<'_, 'a> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an opencode part")
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        struct Fields<'p, 'a>(&'p mut Part<'a>);
        impl<'de: 'a, 'a> Visitor<'de> for Fields<'_, 'a> {
            type Value = ();
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("struct Part")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
                let p = self.0;
                let mut seen = 0u16;
                while let Some(CowStr(key)) = map.next_key::<CowStr<'de>>()? {
                    let bit: u16 = match key.as_ref() {
                        "text" => 1,
                        "messageID" => 2,
                        "callID" => 4,
                        "id" => 8,
                        "tool" => 16,
                        "reason" => 32,
                        "state" => 64,
                        "tokens" => 128,
                        "cost" => 256,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    if seen & bit != 0 {
                        return Err(de::Error::custom("duplicate field"));
                    }
                    seen |= bit;
                    match bit {
                        1 => p.text = map.next_value::<Str<'de>>()?.0,
                        2 => p.message_id = map.next_value::<Str<'de>>()?.0,
                        4 => p.call_id = map.next_value::<Str<'de>>()?.0,
                        8 => p.id = map.next_value::<Str<'de>>()?.0,
                        16 => p.tool = map.next_value::<Str<'de>>()?.0,
                        32 => p.reason = map.next_value::<Str<'de>>()?.0,
                        64 => p.state = map.next_value()?,
                        128 => p.tokens = map.next_value()?,
                        _ => p.cost = map.next_value()?,
                    }
                }
                Ok(())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
                *self.0 = Part::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(())
            }
        }
        let part = self.0.insert(Part::default());
        d.deserialize_struct("Part", PART_FIELDS, Fields(part))
    }
}

const PART_FIELDS: &[&str] = &["text", "messageID", "callID", "id", "tool", "state", "tokens", "cost", "reason"];

/// A line's part (see [`PartSeed`]; derived for a part printed as a list).
#[derive(Deserialize, Default)]
struct Part<'a> {
    #[serde(default, borrow, with = "opt_string")]
    text: Option<Cow<'a, str>>,
    #[serde(rename = "messageID", default, borrow, with = "opt_string")]
    message_id: Option<Cow<'a, str>>,
    #[serde(rename = "callID", default, borrow, with = "opt_string")]
    call_id: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    tool: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    state: Option<State<'a>>,
    #[serde(default)]
    tokens: Option<Tokens>,
    #[serde(default, borrow)]
    cost: Option<&'a RawValue>,
    #[serde(default, borrow, with = "opt_string")]
    reason: Option<Cow<'a, str>>,
}

impl HarnessDecoder for OpencodeDecoder {
    fn decode_line(&mut self, line: &str, ctx: &mut DecodeContext, out: &mut Vec<OutputEvent>) -> LineOutcome {
        let mut l = Line::default();
        if let Err(outcome) = parse_line_seed(line, LineSeed(&mut l)) {
            return outcome;
        }
        ctx.see_session(l.session_id.as_deref());
        if l.kind.as_deref() == Some("step_start") {
            // Nothing to say: skip building an envelope (half of all opencode lines).
            return LineOutcome::Decoded;
        }
        let mut env = Envelope {
            timestamp: l.timestamp.and_then(timestamp),
            message_id: l
                .part
                .as_ref()
                .and_then(|p| p.message_id.as_deref())
                .filter(|m| !m.is_empty())
                .map(str::to_string),
            ..Envelope::default()
        };
        match l.kind.as_deref() {
            Some(kind @ ("text" | "reasoning")) => {
                let Some(part) = l.part else { return LineOutcome::UnexpectedShape };
                if let Some(text) = part.text.filter(|t| !t.is_empty()) {
                    let update =
                        if kind == "text" { SessionUpdate::message(text) } else { SessionUpdate::thought(text) };
                    env.emit_last(ctx, update, out);
                }
                LineOutcome::Decoded
            }
            Some("tool_use") => match l.part {
                Some(part) => tool_use(&mut self.open, part, &env, ctx, out),
                None => LineOutcome::UnexpectedShape,
            },
            Some("step_finish") => {
                let Some(part) = l.part else { return LineOutcome::UnexpectedShape };
                if let Some(reason) = part.reason.filter(|r| !r.is_empty()) {
                    let mut extra = Map::new();
                    extra.insert("reason".into(), Value::String(reason.into_owned()));
                    env.extra = Some(extra);
                }
                if let Some(usage) = step_usage(part.tokens, part.cost) {
                    env.emit_last(ctx, SessionUpdate::Usage { scope: UsageScope::Call, usage }, out);
                }
                LineOutcome::Decoded
            }
            Some("error") => {
                let empty = Map::new();
                let e = l.error.as_ref().and_then(Value::as_object).unwrap_or(&empty);
                let data = e.get("data").and_then(Value::as_object).unwrap_or(&empty);
                let message = first_str(data, &["message"])
                    .or_else(|| first_str(e, &["message", "name"]))
                    .map(str::to_string)
                    .unwrap_or_else(|| match l.error.as_ref().filter(|e| !e.is_null()) {
                        Some(e) => e.to_string(),
                        None => line.trim().to_string(),
                    });
                let mut extra = Map::new();
                if let Some(name) = e.get("name").filter(|v| !v.is_null()) {
                    extra.insert("name".into(), name.clone());
                }
                for key in ["statusCode", "isRetryable"] {
                    if let Some(v) = data.get(key).filter(|v| !v.is_null()) {
                        extra.insert(key.into(), v.clone());
                    }
                }
                env.extra = (!extra.is_empty()).then_some(extra);
                env.emit_last(ctx, SessionUpdate::error(message, true), out);
                LineOutcome::Decoded
            }
            _ => LineOutcome::UnknownType,
        }
    }
}

/// The line's `timestamp`: milliseconds since the epoch → ISO 8601 UTC; a string stays as is.
fn timestamp(raw: &RawValue) -> Option<String> {
    let text = raw.get();
    if text.starts_with('"') {
        return serde_json::from_str::<String>(text).ok().filter(|s| !s.is_empty());
    }
    let ms = if let Ok(n) = text.parse::<i64>() {
        n
    } else {
        let f = text.parse::<f64>().ok().filter(|f| f.is_finite())?.floor();
        if f.abs() > 9.0e15 {
            return None;
        }
        f as i64
    };
    iso_millis(ms)
}

/// Milliseconds since 1970-01-01T00:00:00Z → `YYYY-MM-DDTHH:MM:SS.mmmZ` (years 0..=9999).
fn iso_millis(ms: i64) -> Option<String> {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let of_day = secs.rem_euclid(86_400);
    // Civil date from days since the epoch (proleptic Gregorian; H. Hinnant's algorithm).
    let z = days.checked_add(719_468)?;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    if !(0..=9999).contains(&year) {
        return None;
    }
    // `{year:04}-{month:02}-{day:02}T{hh:02}:{mm:02}:{ss:02}.{millis:03}Z`, without `format!`.
    let mut text = String::with_capacity(24);
    let mut digits = |n: i64, width: u32, sep: Option<char>| {
        for i in (0..width).rev() {
            text.push(char::from(b'0' + (n / 10_i64.pow(i) % 10) as u8));
        }
        text.extend(sep);
    };
    digits(year, 4, Some('-'));
    digits(month, 2, Some('-'));
    digits(day, 2, Some('T'));
    digits(of_day / 3600, 2, Some(':'));
    digits(of_day % 3600 / 60, 2, Some(':'));
    digits(of_day % 60, 2, Some('.'));
    digits(millis, 3, Some('Z'));
    Some(text)
}

/// `step_finish` tokens and cost → call usage (see the module docs).
/// `part.tokens` as the map it is (the usage's `extra`), sized for opencode's counters up front;
/// `None` for any other value (read as a value all the same).
struct Tokens(Option<Map<String, Value>>);

impl<'de> Deserialize<'de> for Tokens {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Tokens;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Tokens, A::Error> {
                let mut tokens = Map::with_capacity(8);
                while let Some(CowStr(key)) = map.next_key::<CowStr<'de>>()? {
                    let value = map.next_value::<Value>()?;
                    tokens.insert(key.into_owned(), value);
                }
                Ok(Tokens(Some(tokens)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Tokens, A::Error> {
                Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(Tokens(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Tokens, E> {
                Ok(Tokens(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Tokens, E> {
                Ok(Tokens(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Tokens, E> {
                Ok(Tokens(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Tokens, E> {
                Ok(Tokens(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Tokens, E> {
                Ok(Tokens(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Tokens, E> {
                Ok(Tokens(None))
            }
        }
        d.deserialize_any(V)
    }
}

fn step_usage(tokens: Option<Tokens>, cost: Option<&RawValue>) -> Option<TokenUsage> {
    let tokens = tokens.and_then(|t| t.0);
    let cost = cost.and_then(|c| c.get().parse::<f64>().ok()).filter(|c| c.is_finite());
    if tokens.is_none() && cost.is_none() {
        return None;
    }
    let empty = Map::new();
    let t = tokens.as_ref().unwrap_or(&empty);
    // A few keys each: found by comparing names rather than hashing them.
    let count = |m: &Map<String, Value>, k: &str| m.iter().find(|(key, _)| *key == k).and_then(|(_, v)| v.as_u64());
    let cache = t.iter().find(|(k, _)| *k == "cache").and_then(|(_, v)| v.as_object()).unwrap_or(&empty);
    let cache_read = count(cache, "read");
    let cache_write = count(cache, "write");
    let prompt = count(t, "input").map(|i| i + cache_read.unwrap_or(0) + cache_write.unwrap_or(0));
    let completion = count(t, "output").map(|o| o + count(t, "reasoning").unwrap_or(0));
    Some(TokenUsage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        cached_tokens: cache_read,
        cost_usd: cost,
        extra: tokens.filter(|t| !t.is_empty()),
    })
}

/// A part's `state`, read in the line's pass: an object's members kept as printed (key, raw
/// value), so `rawOutput` can be the state again without its `input`, and the fields a call
/// needs read from them on demand. Anything else reads as an empty state. A value no JSON reader
/// takes (an unpaired surrogate escape) makes the line unusable, as reading it as a value did.
#[derive(Default)]
struct State<'a> {
    members: Vec<(Cow<'a, str>, &'a RawValue)>,
    /// Some key was printed twice: the state is then read as a JSON reader reads it.
    dup: bool,
}

impl<'de: 'a, 'a> Deserialize<'de> for State<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = State<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<State<'a>, A::Error> {
                let mut state = State { members: Vec::with_capacity(8), dup: false };
                let mut seen = SeenKeys::new();
                while let Some(CowStr(key)) = map.next_key::<CowStr<'de>>()? {
                    let raw: &'de RawValue = map.next_value()?;
                    if may_hold_surrogates(raw.get()) && serde_json::from_str::<Value>(raw.get()).is_err() {
                        return Err(de::Error::custom("unreadable value"));
                    }
                    seen.other(key_text(&key));
                    state.members.push((key, raw));
                }
                state.dup = seen.dup();
                Ok(state)
            }
            // Not an object: an empty state, read as a value all the same (see `State`).
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<State<'a>, A::Error> {
                Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
                Ok(State::default())
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<State<'a>, E> {
                Ok(State::default())
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<State<'a>, E> {
                Ok(State::default())
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<State<'a>, E> {
                Ok(State::default())
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<State<'a>, E> {
                Ok(State::default())
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<State<'a>, E> {
                Ok(State::default())
            }
            fn visit_unit<E: de::Error>(self) -> Result<State<'a>, E> {
                Ok(State::default())
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl<'a> State<'a> {
    /// The last value printed under `key`.
    fn get(&self, key: &str) -> Option<&'a RawValue> {
        self.members.iter().rev().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    /// The last value under `key`, unless it is `null`.
    fn non_null(&self, key: &str) -> Option<&'a RawValue> {
        self.get(key).filter(|v| v.get() != "null")
    }

    /// The state without `input`, as a JSON reader reads it (for a key printed twice).
    fn value_without_input(&self) -> Value {
        let mut map = Map::new();
        for (key, raw) in &self.members {
            if let Ok(value) = serde_json::from_str::<Value>(raw.get()) {
                map.insert(key.to_string(), value);
            }
        }
        map.swap_remove("input");
        Value::Object(map)
    }

    /// `rawOutput`: the state as printed, without `input` (already in `rawInput`). The last
    /// member takes the place of `input`, as removing it from a JSON reader's map does (the
    /// order every earlier record was printed in).
    fn raw_output(&self) -> RawJson {
        let n = self.members.len();
        if self.dup || n > 16 {
            return RawJson::from_value(&self.value_without_input());
        }
        let mut members: [(&str, &RawValue); 16] = [("", RawValue::NULL); 16];
        for (slot, (key, raw)) in members.iter_mut().zip(&self.members) {
            *slot = (key.as_ref(), raw);
        }
        let mut n = n;
        if let Some(i) = members[..n].iter().position(|(k, _)| *k == "input") {
            members.swap(i, n - 1);
            n -= 1;
        }
        raw_object(&members[..n])
    }
}

/// A count or nothing: a non-negative integer, `None` for any other value (as `Value::as_u64`).
#[derive(Default)]
struct Count(Option<u64>);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Count(Value::deserialize(d)?.as_u64()))
    }
}

/// One todo of `todowrite`.
#[derive(Deserialize)]
struct Todo<'a> {
    #[serde(default, borrow, with = "opt_string")]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    status: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    priority: Option<Cow<'a, str>>,
}

/// The tool input fields a title, location, diff or plan is made of, read from the raw input in
/// one pass (an input printing a key twice: read through a [`Value`], last value, as before).
#[derive(Deserialize, Default)]
struct Args<'a> {
    #[serde(rename = "filePath", default, borrow, with = "opt_string")]
    file_path: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    path: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    description: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    command: Option<Cow<'a, str>>,
    #[serde(default)]
    offset: Count,
    #[serde(default, borrow, with = "opt_string")]
    content: Option<Cow<'a, str>>,
    #[serde(rename = "oldString", default, borrow, with = "opt_string")]
    old_string: Option<Cow<'a, str>>,
    #[serde(rename = "newString", default, borrow, with = "opt_string")]
    new_string: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    pattern: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    url: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    query: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    tool: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    todos: ObjList<Todo<'a>>,
}

impl<'a> Args<'a> {
    /// The input's fields (an input that is not an object: none).
    fn read(raw: &'a RawValue) -> Args<'a> {
        if !raw.get().starts_with('{') {
            return Args::default();
        }
        if let Ok(args) = serde_json::from_str::<Args<'a>>(raw.get()) {
            return args;
        }
        match serde_json::from_str::<Value>(raw.get()) {
            Ok(value) => Args::deserialize(&value).map(Args::into_owned).unwrap_or_default(),
            Err(_) => Args::default(),
        }
    }

    fn into_owned(self) -> Args<'static> {
        fn own(s: Option<Cow<'_, str>>) -> Option<Cow<'static, str>> {
            s.map(|s| Cow::Owned(s.into_owned()))
        }
        Args {
            file_path: own(self.file_path),
            path: own(self.path),
            description: own(self.description),
            command: own(self.command),
            offset: self.offset,
            content: own(self.content),
            old_string: own(self.old_string),
            new_string: own(self.new_string),
            pattern: own(self.pattern),
            url: own(self.url),
            query: own(self.query),
            tool: own(self.tool),
            name: own(self.name),
            todos: ObjList(self.todos.0.map(|list| {
                list.into_iter()
                    .map(|t| {
                        super::json::Obj(t.0.map(|t| Todo {
                            content: own(t.content),
                            status: own(t.status),
                            priority: own(t.priority),
                        }))
                    })
                    .collect()
            })),
        }
    }
}

/// `metadata.exit` as far as a status needs it: a number (0 or not), or anything else.
#[derive(Default, Clone, Copy)]
struct Exit(Option<f64>);

impl<'de> Deserialize<'de> for Exit {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Exit(match Value::deserialize(d)? {
            Value::Number(n) => n.as_f64(),
            _ => None,
        }))
    }
}

/// The `metadata` facts a call needs.
#[derive(Deserialize, Default)]
struct Meta {
    #[serde(default)]
    exit: Exit,
    #[serde(default)]
    exists: Option<Value>,
}

impl Meta {
    /// Read from the raw `metadata` (often large: previews and diffs), skipping the read when
    /// neither key can be in it.
    fn read(raw: Option<&RawValue>) -> Meta {
        let Some(raw) = raw.filter(|r| r.get().starts_with('{')) else { return Meta::default() };
        let text = raw.get().as_bytes();
        if memchr::memmem::find(text, b"\"exi").is_none() && memchr::memmem::find(text, b"\\u").is_none() {
            return Meta::default();
        }
        if let Ok(meta) = serde_json::from_str::<Meta>(raw.get()) {
            return meta;
        }
        match serde_json::from_str::<Value>(raw.get()) {
            Ok(value) => Meta::deserialize(&value).unwrap_or_default(),
            Err(_) => Meta::default(),
        }
    }

    /// `completed`, or `failed` when `exit` is a non-zero number.
    fn exit_status(&self) -> ToolCallStatus {
        match self.exit.0 {
            Some(n) if n != 0.0 => ToolCallStatus::Failed,
            _ => ToolCallStatus::Completed,
        }
    }

    fn existed(&self) -> bool {
        self.exists == Some(Value::Bool(true))
    }
}

/// The kind of an opencode tool, from its lowercased name (the table in `tools.rs`).
fn kind_of(lower: &str) -> ToolKind {
    kind_table(Agent::Opencode).iter().find(|(n, _)| *n == lower).map_or(ToolKind::Other, |(_, k)| *k)
}

fn tool_use(
    open: &mut IdSet,
    part: Part<'_>,
    env: &Envelope,
    ctx: &DecodeContext,
    out: &mut Vec<OutputEvent>,
) -> LineOutcome {
    let Some(id) = part.call_id.as_deref().or(part.id.as_deref()).filter(|id| !id.is_empty()) else {
        return LineOutcome::UnexpectedShape;
    };
    let tool = part.tool.as_deref().filter(|t| !t.is_empty());
    let name = tool.unwrap_or_default();
    let lower: Cow<'_, str> = if name.bytes().any(|b| b.is_ascii_uppercase() || !b.is_ascii()) {
        Cow::Owned(name.to_lowercase())
    } else {
        Cow::Borrowed(name)
    };
    let state = part.state.unwrap_or_default();
    let input = state.non_null("input");
    let args = input.map(Args::read).unwrap_or_default();
    let meta = Meta::read(state.get("metadata"));
    let status = state.get("status").and_then(raw_str);
    // "" when absent or not a string (it means the same as an empty status): an `Option<&str>`
    // `None` leaves its length word undefined, and LLVM may compare that length with
    // "pending"'s before it tests for `None` (right, but valgrind reports the branch).
    let status: &str = status.as_deref().unwrap_or_default();

    let mut content = Vec::new();
    let mut locations = Vec::new();
    let plan = if lower == "todowrite" { todo_plan(&args, &state) } else { None };
    let title = describe(&lower, args, &meta, &mut content, &mut locations);
    let call = ToolCall {
        tool_call_id: id.to_string(),
        title: title.unwrap_or_else(|| match state.get("title").and_then(raw_str).filter(|t| !t.is_empty()) {
            Some(t) => truncate_chars(&t, MAX_TITLE_CHARS),
            None => tool.unwrap_or("Tool call").to_string(),
        }),
        tool_name: tool.map(str::to_string),
        kind: kind_of(&lower),
        status: if status == "pending" { ToolCallStatus::Pending } else { ToolCallStatus::InProgress },
        raw_input: input.map(RawJson::from_raw),
        content: (!content.is_empty()).then_some(content),
        locations: (!locations.is_empty()).then_some(locations),
    };
    // A call announced by an earlier (pending/running) line is not announced again.
    let announced = open.contains(id);
    if !announced {
        env.emit(ctx, SessionUpdate::ToolCall(call), out);
    }
    if let Some(entries) = plan {
        env.emit(ctx, SessionUpdate::Plan { entries }, out);
    }

    let outcome = match status {
        "pending" => None,
        "running" => Some(ToolCallStatus::InProgress),
        "error" => Some(ToolCallStatus::Failed),
        "completed" => Some(meta.exit_status()),
        // No (known) status: a result is there when output or error is.
        _ if state.get("error").is_some() => Some(ToolCallStatus::Failed),
        _ if state.get("output").is_some() => Some(meta.exit_status()),
        _ => None,
    };
    match outcome {
        Some(ToolCallStatus::Completed | ToolCallStatus::Failed) => {
            if announced {
                open.remove(id);
            }
        }
        _ => {
            if !announced {
                open.insert(id.to_string());
            }
        }
    }
    if let Some(status) = outcome {
        let mut update = ToolCallUpdate::new(id);
        update.status = Some(status);
        let mut content = Vec::new();
        let text = match (status, state.non_null("error")) {
            (ToolCallStatus::Failed, Some(e)) => Some(e),
            _ => state.non_null("output"),
        };
        if let Some(raw) = text {
            match raw_str(raw) {
                Some(s) if !s.is_empty() => content.push(ToolCallContent::text(s)),
                Some(_) => {}
                None => {
                    if let Ok(value) = serde_json::from_str::<Value>(raw.get()) {
                        content.push(ToolCallContent::text(value.to_string()));
                    }
                }
            }
        }
        if let Some(raw) = state.get("attachments") {
            attachments(serde_json::from_str::<Value>(raw.get()).ok().as_ref(), &mut content);
        }
        update.content = (!content.is_empty()).then_some(content);
        update.raw_output = Some(state.raw_output());
        env.emit(ctx, SessionUpdate::ToolCallUpdate(update), out);
    }
    LineOutcome::Decoded
}

/// Image attachments → image blocks; other files stay in `rawOutput` only.
fn attachments(raw: Option<&Value>, out: &mut Vec<ToolCallContent>) {
    let Some(Value::Array(items)) = raw else { return };
    for a in items.iter().filter_map(Value::as_object) {
        let mime = str_field(a, "mime").or_else(|| str_field(a, "mimeType")).unwrap_or_default();
        if !mime.starts_with("image/") {
            continue;
        }
        let Some(url) = str_field(a, "url").filter(|u| !u.is_empty()) else { continue };
        let image = match url.strip_prefix("data:").and_then(|rest| rest.split_once(";base64,")) {
            Some((_, data)) => ImageContent { data: data.to_string(), mime_type: mime.to_string(), uri: None },
            None => ImageContent { data: String::new(), mime_type: mime.to_string(), uri: Some(url.to_string()) },
        };
        out.push(ToolCallContent::Content { content: ContentBlock::Image(image) });
    }
}

/// The first of `fields` that holds a non-empty string.
fn first<'p>(fields: &[&'p Option<Cow<'_, str>>]) -> Option<&'p str> {
    fields.iter().find_map(|f| f.as_deref().filter(|s| !s.is_empty()))
}

/// Title (None = fall back to `state.title`), call content and locations per tool.
fn describe(
    tool: &str,
    mut args: Args<'_>,
    meta: &Meta,
    content: &mut Vec<ToolCallContent>,
    locations: &mut Vec<ToolCallLocation>,
) -> Option<String> {
    let file = first(&[&args.file_path, &args.path]);
    let dir = first(&[&args.path]);
    match tool {
        "bash" => {
            if let Some(d) = first(&[&args.description]) {
                content.push(ToolCallContent::text(d));
            }
            first(&[&args.command]).map(command_title)
        }
        "read" => {
            if let Some(f) = file {
                let line = args.offset.0.filter(|n| *n > 0);
                locations.push(ToolCallLocation { path: f.to_string(), line });
            }
            file.map(|f| title("Read ", f, MAX_TITLE_CHARS, ""))
        }
        "write" => {
            if let Some(f) = file {
                locations.push(ToolCallLocation::path(f));
                if let (Some(text), false) = (args.content.take(), meta.existed()) {
                    content.push(ToolCallContent::Diff(DiffContent {
                        path: f.to_string(),
                        old_text: None,
                        new_text: text.into_owned(),
                    }));
                }
            }
            file.map(|f| title("Write ", f, MAX_TITLE_CHARS, ""))
        }
        "edit" | "multiedit" => {
            if let Some(f) = file {
                locations.push(ToolCallLocation::path(f));
                if tool == "edit" && (args.old_string.is_some() || args.new_string.is_some()) {
                    content.push(ToolCallContent::Diff(DiffContent {
                        path: f.to_string(),
                        old_text: Some(args.old_string.take().map(Cow::into_owned).unwrap_or_default()),
                        new_text: args.new_string.take().map(Cow::into_owned).unwrap_or_default(),
                    }));
                }
            }
            file.map(|f| title("Edit ", f, MAX_TITLE_CHARS, ""))
        }
        "glob" => {
            locations.extend(dir.map(ToolCallLocation::path));
            first(&[&args.pattern]).map(|p| title("Find ", p, MAX_TITLE_CHARS, ""))
        }
        "grep" => {
            locations.extend(dir.map(ToolCallLocation::path));
            first(&[&args.pattern]).map(|p| title("grep \"", p, MAX_TITLE_CHARS, "\""))
        }
        "list" => {
            locations.extend(dir.map(ToolCallLocation::path));
            Some(dir.map_or("List directory".into(), |d| title("List ", d, MAX_TITLE_CHARS, "")))
        }
        "webfetch" => first(&[&args.url]).map(|u| title("Fetch ", u, MAX_TITLE_CHARS, "")),
        "websearch" | "codesearch" => first(&[&args.query]).map(|q| title("Search: ", q, MAX_TITLE_CHARS, "")),
        "task" => Some(first(&[&args.description]).map_or("Task".into(), |d| title("Task: ", d, MAX_TITLE_CHARS, ""))),
        "todowrite" => Some("Update todos".into()),
        "todoread" => Some("Read todos".into()),
        "invalid" => Some(
            first(&[&args.tool])
                .map_or("Invalid tool call".into(), |t| title("Invalid tool call: ", t, MAX_TITLE_CHARS, "")),
        ),
        "skill" => first(&[&args.name]).map(|n| title("Skill: ", n, MAX_TITLE_CHARS, "")),
        "plan_enter" => Some("Enter plan mode".into()),
        "plan_exit" => Some("Exit plan mode".into()),
        _ => None,
    }
}

/// `todowrite` → plan entries from `input.todos`, else from `output` parsed as a JSON list.
fn todo_plan(args: &Args<'_>, state: &State<'_>) -> Option<Vec<PlanEntry>> {
    let status_of = |status: Option<&str>| match status {
        Some("in_progress" | "in-progress" | "running") => PlanEntryStatus::InProgress,
        Some("completed" | "done" | "cancelled") => PlanEntryStatus::Completed,
        _ => PlanEntryStatus::Pending,
    };
    if let Some(todos) = &args.todos.0 {
        return Some(
            todos
                .iter()
                .filter_map(|t| t.0.as_ref())
                .filter_map(|t| {
                    let content = first(&[&t.content])?;
                    let priority = PlanEntryPriority::from_wire(t.priority.as_deref());
                    Some(PlanEntry { content: content.to_string(), status: status_of(t.status.as_deref()), priority })
                })
                .collect(),
        );
    }
    let output = state.get("output").and_then(raw_str)?;
    let todos = serde_json::from_str::<Vec<Value>>(&output).ok()?;
    Some(
        todos
            .iter()
            .filter_map(Value::as_object)
            .filter_map(|t| {
                let content = first_str(t, &["content"])?;
                let priority = PlanEntryPriority::from_wire(str_field(t, "priority"));
                Some(PlanEntry { content: content.to_string(), status: status_of(str_field(t, "status")), priority })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines at the edges of what a line may hold (duplicate keys, values of unexpected types,
    /// unreadable numbers and surrogates, nesting at serde_json's limit, parts printed as lists),
    /// decoded one after another by one decoder: outcome and events of each.
    fn edge_transcript() -> String {
        let deep = |open: &str, close: &str, n: usize| format!("{}{}", open.repeat(n), close.repeat(n));
        let mut lines: Vec<String> = EDGE_LINES.iter().map(|l| l.to_string()).collect();
        for n in [124, 125, 126, 127, 128] {
            let arrays = deep("[", "]", n);
            lines.push(format!(r#"{{"type":"error","error":{arrays}}}"#));
            lines.push(format!(r#"{{"type":"step_finish","part":{{"tokens":{arrays},"cost":1}}}}"#));
            lines.push(format!(r#"{{"type":"step_finish","part":{{"tokens":{{"a":{arrays}}},"cost":1}}}}"#));
            lines.push(format!(r#"{{"type":"tool_use","part":{{"callID":"d{n}","state":{arrays}}}}}"#));
            lines.push(format!(r#"{{"type":"text","part":[{arrays},"m"]}}"#));
            lines.push(format!(r#"{{"type":"text","part":{{"text":{arrays}}}}}"#));
            lines.push(format!(
                r#"{{"type":"tool_use","part":{{"callID":"s{n}","tool":"bash","state":{{"status":"completed","output":["\ud83d\ude00",{arrays}],"input":{{"command":"x","deep":{arrays}}},"metadata":{{"exit":1,"deep":{arrays}}}}}}}}}"#
            ));
        }
        let mut decoder = OpencodeDecoder::default();
        let mut ctx = DecodeContext::default();
        let mut text = String::new();
        for line in &lines {
            let mut out = Vec::new();
            let outcome = decoder.decode_line(line, &mut ctx, &mut out);
            text.push_str(&format!("{outcome:?}"));
            for event in &out {
                text.push(' ');
                text.push_str(&serde_json::to_string(event).unwrap());
            }
            text.push('\n');
        }
        text
    }

    const EDGE_LINES: &[&str] = &[
        r#"{"type":"text","part":{"text":"a","text":"b"}}"#,
        r#"{"type":"text","type":"text","part":{"text":"a"}}"#,
        r#"{"type":"text","part":{"text":"a"},"part":{"text":"b"}}"#,
        r#"{"type":"text","part":["listed","msg_list"]}"#,
        r#"{"type":"text","part":["a","b","c","d","e",null,null,null,"r"]}"#,
        r#"{"type":"text","part":["a","b","c","d","e",null,null,null,"r","extra"]}"#,
        r#"{"type":"tool_use","part":["t","m","c_list","i","bash",{"status":"completed","input":{"command":"ls"},"output":"o"}]}"#,
        r#"{"type":"step_finish","part":[null,null,null,null,null,null,{"input":1,"output":2},0.5,"stop"]}"#,
        r#"{"type":"text","part":[]}"#,
        r#"{"type":"text","part":"x"}"#,
        r#"{"type":"text","part":1e400}"#,
        r#"{"type":"text","part":true}"#,
        r#"{"type":"text","part":nul}"#,
        r#"{"type":"text","part":null}"#,
        r#"{"type":"text","part":{"text":"\ud800"}}"#,
        r#"{"type":"text","part":{"text":1e400}}"#,
        r#"{"type":"text","part":{"text":12}}"#,
        r#"{"type":"text","part":{"text":{"\ud800":1}}}"#,
        r#"{"type":"text","part":{"text":["\ud800",1e400]}}"#,
        r#"{"type":"text","part":{"text":"ok","other":1e400,"more":"\ud800"}}"#,
        r#"{"type":"text","part":{"text":"ok"},"other":[1e400,"\ud800"]}"#,
        r#"{"type":"text","part":{"text":"ok","\ud800":1}}"#,
        r#"{"\ud800":1,"type":"text","part":{"text":"ok"}}"#,
        r#"{"typ\u0065":"text","part":{"t\u0065xt":"escaped keys","messag\u0065ID":"m\u0031"}}"#,
        r#"  { "type" : "text" , "part" : { "text" : "spaced" } }  "#,
        r#"{"type":"text","part":{"text":"trailing"}} x"#,
        r#"{"type":"text","part":{"text":"tab\tin string"}}"#,
        r#"{"type":1e400,"part":{"text":"x"}}"#,
        r#"{"type":["text"],"part":{"text":"x"}}"#,
        r#"{"type":"text","sessionID":{"a":1},"part":{"text":"x"}}"#,
        r#"{"type":"text","timestamp":"2026-12-02T00:00:00Z","part":{"text":"ts string"}}"#,
        r#"{"type":"text","timestamp":"\ud800","part":{"text":"ts surrogate"}}"#,
        r#"{"type":"text","timestamp":"a\nb","part":{"text":"ts escaped"}}"#,
        r#"{"type":"text","timestamp":"","part":{"text":"ts empty"}}"#,
        r#"{"type":"text","timestamp":1e400,"part":{"text":"ts huge"}}"#,
        r#"{"type":"text","timestamp":[1,2],"part":{"text":"ts list"}}"#,
        r#"{"type":"text","timestamp":1.5e3,"part":{"text":"ts exp"}}"#,
        r#"{"type":"text","timestamp":-0,"part":{"text":"ts minus zero"}}"#,
        r#"{"type":"text","timestamp":null,"part":{"text":"ts null"}}"#,
        r#"{"type":"text","timestamp":true,"part":{"text":"ts bool"}}"#,
        r#"{"type":"step_finish","part":{"tokens":{"input":1e400}}}"#,
        r#"{"type":"step_finish","part":{"tokens":[1e400]}}"#,
        r#"{"type":"step_finish","part":{"tokens":"\ud800"}}"#,
        r#"{"type":"step_finish","part":{"tokens":"x","cost":"0.5"}}"#,
        r#"{"type":"step_finish","part":{"tokens":{"input":1,"input":2,"cache":{"read":3,"read":4}},"cost":1e400}}"#,
        r#"{"type":"step_finish","part":{"tokens":{"input":-1,"output":2.5,"reasoning":"r","cache":[1]},"cost":-0.25}}"#,
        r#"{"type":"step_finish","part":{"tokens":{},"cost":[1],"reason":""}}"#,
        r#"{"type":"step_finish","part":{"tokens":{"\u0069nput":5,"x":{"y":[1,{"z":null}]}},"cost":2}}"#,
        r#"{"type":"step_finish","part":{"tokens":1,"cost":true,"reason":"why"}}"#,
        r#"{"type":"error","error":{"name":"X","data":{"message":"m","statusCode":401,"isRetryable":false}}}"#,
        r#"{"type":"error","error":{"name":"X","name":"Y","data":{"statusCode":1e3}}}"#,
        r#"{"type":"error","error":1e400}"#,
        r#"{"type":"error","error":"\ud800"}"#,
        r#"{"type":"error","error":"plain text"}"#,
        r#"{"type":"error","error":null}"#,
        r#"{"type":"error","error":[1,{"a":2}]}"#,
        r#"{"type":"error","error":{"name":null,"message":7,"data":{"message":""}}}"#,
        r#"{"type":"error","error":{},"error":{}}"#,
        r#"{"type":"tool_use","part":{"callID":"c1","tool":"bash","state":{"status":"completed","input":{"command":"ls"},"output":"x","n":1e400}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c2","tool":"bash","state":{"status":"completed","output":"\ud800"}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c3","tool":"bash","state":{"status":"completed","output":["\ud83d\ude00",1e400]}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c4","tool":"bash","state":{"status":"completed","output":"\ud83d\ude00 ok","x":1e400}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c5","tool":"bash","state":{"status":"completed","output":"a","output":"b","input":{"command":"ls"},"z":1e400}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c6","tool":"bash","state":[1]}}"#,
        r#"{"type":"tool_use","part":{"callID":"c7","tool":"bash","state":[1e400]}}"#,
        r#"{"type":"tool_use","part":{"callID":"c8","tool":"bash","state":"\ud800"}}"#,
        r#"{"type":"tool_use","part":{"callID":"c9","tool":"bash","state":1e400}}"#,
        r#"{"type":"tool_use","part":{"callID":"c10","tool":"bash","state":"completed"}}"#,
        r#"{"type":"tool_use","part":{"callID":"c11","tool":"bash","state":{"st\u0061tus":"error","error":"boom","input":{"command":"false"}}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c12","tool":"bash","state":{"status":"completed","input":{"command":"a","command":"b"},"output":"o"}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c13","tool":"bash","state":{"status":"completed","input":{"command":"a","x":1e400},"output":"o"}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c14","tool":"bash","state":{"status":"completed","input":{"command":"a","command":"b","x":1e400},"output":"o","title":"from title"}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c15","tool":"bash","state":{"status":"completed","input":{"command":1e400,"description":"d"},"output":"o","title":"t15"}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c16","tool":"bash","state":{"status":"completed","input":{"c\u006fmmand":"escaped"},"output":"o"}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c17","tool":"bash","state":{"status":"completed","input":{"command":"x"},"metadata":{"exit":2,"exit":0}}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c18","tool":"bash","state":{"status":"completed","input":{"command":"x"},"metadata":{"\u0065xit":2}}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c19","tool":"bash","state":{"status":"completed","input":{"command":"x"},"metadata":{"exit":2,"x":1e400}}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c20","tool":"bash","state":{"status":"completed","input":{"command":"x"},"metadata":{"exit":2,"exit":3,"x":1e400}}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c21","tool":"bash","state":{"status":"completed","input":{"command":"x"},"metadata":{"exit":"2"}}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c22","tool":"bash","state":{"status":"completed","input":{"command":"x"},"metadata":{"exit":-0.0}}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c23","tool":"bash","state":{"status":"completed","input":{"command":"x"},"metadata":{"exit":1e400}}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c24","tool":"bash","state":{"status":"completed","input":{"command":"x"},"metadata":[{"exit":1}]}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c25","tool":"write","state":{"status":"completed","input":{"filePath":"/f","content":"new"},"metadata":{"exists":true,"exists":false}}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c26","tool":"write","state":{"status":"completed","input":{"filePath":"/f","content":"new"},"metadata":{"exists":"true"}}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c27","tool":"read","state":{"status":"completed","input":{"filePath":"/r","offset":5.0}}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c28","tool":"read","state":{"status":"completed","input":{"filePath":"/r","offset":"5","offset":7}}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c29","tool":"todowrite","state":{"status":"completed","input":{"todos":[{"content":"a","status":"done","status":"running"},7,null,{"content":"b","priority":"high"}]}}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c30","tool":"todowrite","state":{"status":"completed","input":{"todos":{"content":"x"}},"output":"[{\"content\":\"o\",\"status\":\"completed\"}]"}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c31","tool":"todowrite","state":{"status":"completed","input":{"todos":[{"content":"a"}],"todos":[{"content":"b"}]}}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c32","tool":"Bash","state":{"status":"running","input":{"command":"x"}}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c32","tool":"Bash","state":{"status":"completed","input":{"command":"x"},"output":{"k":[1,2.50,"s"]}}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c33","tool":"edit","state":{"input":{"filePath":"/e","oldString":"o\u00e9","newString":null},"error":"bad","attachments":[{"mime":"image/png","url":"data:image/png;base64,AAA"}]}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c34","tool":"bash","state":{"status":"completed","k\"ey":"v","input":{"command":"x"},"output":"o"}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c35","tool":"bash","state":{"status":"completed","a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c36","tool":"bash","state":{"status":"completed","input":{"command":"x"},"output":"o","\u0069nput":{"command":"y"}}}}"#,
        r#"{"type":"tool_use","part":{"callID":"c37","tool":"bash","state":{"status":"completed","input":null,"output":null,"error":null}}}"#,
        r#"{"type":"tool_use","part":{"callID":"","id":"prt_fallback","tool":"","state":{"status":"pending","title":"pending title"}}}"#,
        r#"{"type":"tool_use","part":{"callID":7,"tool":"bash"}}"#,
        r#"{"type":"tool_use","part":{"callID":"c38","tool":"grep","state":{"status":"completed","input":{"pattern":"p","path":"/d"},"output":"o","metadata":{"matches":1}}}}"#,
        r#"{"type":"step_start","sessionID":"ses_late","part":{"text":1e400}}"#,
        r#"{"type":"step_start","sessionID":"ses_late","part":{}}"#,
        r#"{"type":"mystery","part":{"text":"x"}}"#,
        r#"{"part":{"text":"x"}}"#,
        r#"{}"#,
    ];

    /// The edge lines decode as the serde reader decoded them (`testdata/opencode_edges.txt` is
    /// its transcript, recorded before the line reader moved onto the scanner).
    #[test]
    fn edge_lines_decode_as_before() {
        let ours = edge_transcript();
        let before = include_str!("testdata/opencode_edges.txt");
        for (i, (a, b)) in ours.lines().zip(before.lines()).enumerate() {
            assert_eq!(a, b, "line {i}");
        }
        assert_eq!(ours.lines().count(), before.lines().count());
    }

    #[test]
    fn millisecond_timestamps_become_iso_utc() {
        assert_eq!(iso_millis(0).as_deref(), Some("1970-01-01T00:00:00.000Z"));
        assert_eq!(iso_millis(1_796_221_316_202).as_deref(), Some("2026-12-02T14:21:56.202Z"));
        assert_eq!(iso_millis(951_782_400_000).as_deref(), Some("2000-02-29T00:00:00.000Z"));
        assert_eq!(iso_millis(-1).as_deref(), Some("1969-12-31T23:59:59.999Z"));
        assert_eq!(iso_millis(253_402_300_800_000), None); // year 10000
        assert_eq!(iso_millis(i64::MAX), None);
        let raw = RawValue::from_string("1796221316202.9".into()).unwrap();
        assert_eq!(timestamp(&raw).as_deref(), Some("2026-12-02T14:21:56.202Z"));
    }

    #[test]
    fn usage_adds_cache_to_input_and_reasoning_to_output() {
        let tokens =
            serde_json::json!({"total":1359,"input":250,"output":49,"reasoning":10,"cache":{"read":1050,"write":5}});
        let cost = RawValue::from_string("0.25".into()).unwrap();
        let u = step_usage(Some(serde_json::from_value::<Tokens>(tokens).unwrap()), Some(&*cost)).unwrap();
        assert_eq!(u.prompt_tokens, Some(1305));
        assert_eq!(u.cached_tokens, Some(1050));
        assert_eq!(u.completion_tokens, Some(59));
        assert_eq!(u.cost_usd, Some(0.25));
        assert_eq!(u.extra.unwrap()["total"], 1359);
    }
}
