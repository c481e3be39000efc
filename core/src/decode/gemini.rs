//! Gemini CLI decoder (`gemini -p … --output-format stream-json`, checked against 0.61.0).
//!
//! Every line is `{type, timestamp, …}` with an ISO `timestamp`, which every event of the line
//! carries. The model comes from the `init` line and is stamped on every later event.
//!
//! | line | events |
//! |---|---|
//! | `init` | none; `session_id` becomes the run's `sessionId`, `model` the run's model |
//! | `message`, role `user` | `user_message_chunk` (the prompt echo) |
//! | `message`, role `assistant` | `agent_message_chunk` (gemini prints deltas only; a retried attempt's deltas are printed again and kept as printed) |
//! | `tool_use` | `tool_call{pending}`: `toolCallId` = `tool_id`, `toolName` = `tool_name`, `rawInput` = `parameters`, title / locations / diff per tool (table below); `write_todos` also gives a `plan` right after the call |
//! | `tool_result` | `tool_call_update`: `completed` for `status:"success"`, else `failed`; content = `output` (gemini's display text), and on failure also `error.message` when it says something else (an MCP error's `output` is `Error: MCP tool 'x' reported an error.` while `error.message` holds the server's words), each verbatim; `rawOutput` = `{status, output?, error?}` as printed |
//! | `error` | `error`: `fatal` when `severity` is `"error"` (gemini gives up the run after it: `Model stream ended without a finish reason.`), else not fatal (`warning`: loop detection) |
//! | `result` | `usage{scope:"run"}` from `stats`; with `status:"error"` also `error{fatal:true}` with `error.message`, or `gemini reported status error` when no error object is printed and no fatal error was reported yet |
//! | any other `type` | none, counted as unknown |
//!
//! Usage: `promptTokens` = `stats.input_tokens` (gemini's prompt count, which INCLUDES the
//! cached share; its `input` = `input_tokens - cached`), else `input + cached`;
//! `cachedTokens` = `cached`; `completionTokens` = `output_tokens`; `extra` = every other key
//! of `stats` verbatim (`total_tokens`, `input`, `duration_ms`, `tool_calls`, per-model
//! `models`).
//!
//! Titles, kinds (from `tools.rs`) and locations:
//!
//! | tool_name | title | locations / content |
//! |---|---|---|
//! | read_file | `Read <file_path>` | the file |
//! | read_many_files | `Read N files` | one per include pattern |
//! | write_file | `Write <file_path>` | the file; diff with `oldText` null, `newText` = content |
//! | replace, edit | `Edit <file_path>` | the file; diff `old_string` → `new_string` |
//! | run_shell_command, shell | the command in backticks | `description` as text |
//! | glob | `Find <pattern>` | `dir_path` |
//! | grep_search, grep, search_file_content | `grep "<pattern>"` | `dir_path` |
//! | list_directory | `List <dir_path>` | the directory |
//! | google_web_search, web_search | `Search: <query>` | – |
//! | web_fetch | `Fetch: <prompt, cut at 50 chars with … only when cut>` | – |
//! | invoke_agent, delegate_to_agent | `Agent: <agent name>` | – (the subagent's own steps never reach stdout) |
//! | write_todos | `Update todos` | `plan` from `todos[{description,status}]`: `pending`, `in_progress`, `completed`; `cancelled` counts as completed (no longer open) |
//! | update_topic | `Topic: <title>` | – |
//! | save_memory, activate_skill, enter/exit_plan_mode, background tools | a short phrase | – |
//! | anything else (MCP `mcp_<server>_<tool>`, …) | the tool name | – |
//!
//! Golden cases (`tests/golden/gemini/`): `s1-text`, `s2-bash`, `s3-read-edit` are real captures;
//! the `e-*` cases are written from the captured shapes:
//!
//! | case | pins |
//! |---|---|
//! | e-hangup | the deltas of every retried attempt as printed, `severity:"error"` fatal, then a bare failed `result` adds no second error |
//! | e-api-error-500 | a failed `result` with `error.message` is fatal; usage still reported |
//! | e-result-error-bare | a failed `result` with no error object and no earlier error says `gemini reported status error` |
//! | e-loop-detected | the loop-detection warning is not fatal; cached tokens are part of `promptTokens` |
//! | e-tool-errors | `file_not_found`, `tool_not_registered`, `mcp_tool_error` (output and error text), `web_fetch_processing_error`, exit 3 reported as success |
//! | e-write-todos | todos as a plan (cancelled → completed, entries without text dropped), an empty list clears the plan |
//! | e-invoke-agent | the subagent call (kind think) and its output-less result |
//! | e-mcp-and-image | an MCP call and an image read (gemini prints only a text for it) |
//! | e-parallel-orphan-out-of-order | a result before any call, two calls answered in reverse order |
//! | e-many-tools | update_topic, list_directory, grep_search, glob, google_web_search, web_fetch, background tools, plan mode, a failed skill |
//! | e-bad-lines | `null`, non-objects, invalid JSON, unknown types, missing ids, odd roles and contents, a second `init` |

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::borrowed::{CowStr, SizedValue, Str, may_hold_surrogates, raw_str};
use super::concat::title;
use super::context::{DecodeContext, Envelope};
use super::in_place::{ObjectVisitor, object_or_default, parse_line_seed};
use super::json::{ObjList, opt_string, str_field};
use super::raw_record::{Member, raw_object};
use super::{Agent, HarnessDecoder, LineOutcome};
use crate::event::{
    DiffContent, OutputEvent, PlanEntry, PlanEntryPriority, PlanEntryStatus, RawJson, SessionUpdate, TokenUsage,
    ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, UsageScope,
};
use crate::tools::{MAX_TITLE_CHARS, command_title, tool_kind};

/// Stateful gemini line decoder.
#[derive(Debug, Default)]
pub(crate) struct GeminiDecoder {
    /// A fatal `error` was already reported (so a bare failed `result` adds nothing).
    fatal_reported: bool,
}

/// One line, read in one pass and in place: strings borrowed from the line, the parts kept
/// verbatim (`parameters`, `output`, `error`) as raw slices, `stats` straight into the usage.
/// A known key printed twice makes the line unusable (as a derived struct would), and so does a
/// value no JSON reader takes in the parts that are values (`parameters`, `output`, `error`,
/// `stats`: an unpaired surrogate escape).
#[derive(Default)]
struct Line<'a> {
    kind: Option<Cow<'a, str>>,
    timestamp: Option<Cow<'a, str>>,
    session_id: Option<Cow<'a, str>>,
    model: Option<Cow<'a, str>>,
    role: Option<Cow<'a, str>>,
    content: Option<Cow<'a, str>>,
    tool_name: Option<Cow<'a, str>>,
    tool_id: Option<Cow<'a, str>>,
    status: Option<Cow<'a, str>>,
    severity: Option<Cow<'a, str>>,
    message: Option<Cow<'a, str>>,
    /// Not `null`.
    parameters: Option<&'a RawValue>,
    /// Not `null`.
    output: Option<&'a RawValue>,
    /// Not `null`.
    error: Option<&'a RawValue>,
    stats: Option<TokenUsage>,
}

struct LineSeed<'l, 'a>(&'l mut Line<'a>);

impl<'de: 'a, 'a> DeserializeSeed<'de> for LineSeed<'_, 'a> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

/// A raw value that must read as a JSON value (see [`Line`]); `None` for `null`.
fn value_raw<E: de::Error>(raw: &RawValue) -> Result<Option<&RawValue>, E> {
    if raw.get() == "null" {
        return Ok(None);
    }
    if may_hold_surrogates(raw.get()) && serde_json::from_str::<Value>(raw.get()).is_err() {
        return Err(E::custom("unreadable value"));
    }
    Ok(Some(raw))
}

impl<'de: 'a, 'a> Visitor<'de> for LineSeed<'_, 'a> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a gemini line")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let l = self.0;
        let mut seen = 0u32;
        while let Some(CowStr(key)) = map.next_key::<CowStr<'de>>()? {
            let (bit, slot) = match key.as_ref() {
                "type" => (0, &mut l.kind),
                "timestamp" => (1, &mut l.timestamp),
                "session_id" => (2, &mut l.session_id),
                "model" => (3, &mut l.model),
                "role" => (4, &mut l.role),
                "content" => (5, &mut l.content),
                "tool_name" => (6, &mut l.tool_name),
                "tool_id" => (7, &mut l.tool_id),
                "status" => (8, &mut l.status),
                "severity" => (9, &mut l.severity),
                "message" => (10, &mut l.message),
                other => {
                    let bit = match other {
                        "parameters" => 11,
                        "output" => 12,
                        "error" => 13,
                        "stats" => 14,
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    if seen & (1 << bit) != 0 {
                        return Err(de::Error::custom("duplicate field"));
                    }
                    seen |= 1 << bit;
                    match bit {
                        11 => l.parameters = value_raw::<A::Error>(map.next_value()?)?,
                        12 => l.output = value_raw::<A::Error>(map.next_value()?)?,
                        13 => l.error = value_raw::<A::Error>(map.next_value()?)?,
                        _ => l.stats = map.next_value::<Stats>()?.0,
                    }
                    continue;
                }
            };
            if seen & (1 << bit) != 0 {
                return Err(de::Error::custom("duplicate field"));
            }
            seen |= 1 << bit;
            *slot = map.next_value::<Str<'de>>()?.0;
        }
        Ok(())
    }
}

impl HarnessDecoder for GeminiDecoder {
    fn decode_line(&mut self, line: &str, ctx: &mut DecodeContext, out: &mut Vec<OutputEvent>) -> LineOutcome {
        let mut l = Line::default();
        if let Err(outcome) = parse_line_seed(line, LineSeed(&mut l)) {
            return outcome;
        }
        let env = Envelope {
            timestamp: l.timestamp.take().filter(|t| !t.is_empty()).map(Cow::into_owned),
            model: l.model.take().filter(|m| !m.is_empty()).map(Cow::into_owned),
            ..Envelope::default()
        };
        match l.kind.as_deref() {
            Some("init") => {
                ctx.see_session(l.session_id.as_deref());
                if ctx.init_model.is_none() {
                    ctx.init_model = env.model;
                }
                LineOutcome::Decoded
            }
            Some("message") => {
                let Some(text) = l.content.take().filter(|c| !c.is_empty()) else { return LineOutcome::Decoded };
                match l.role.as_deref() {
                    Some("user") => env.emit_last(ctx, SessionUpdate::user_message(text), out),
                    Some("assistant") | None => env.emit_last(ctx, SessionUpdate::message(text), out),
                    Some(_) => return LineOutcome::UnexpectedShape,
                }
                LineOutcome::Decoded
            }
            Some("tool_use") => tool_use(&mut l, env, ctx, out),
            Some("tool_result") => tool_result(&mut l, env, ctx, out),
            Some("error") => {
                let fatal = l.severity.as_deref() == Some("error");
                let message =
                    l.message.take().filter(|m| !m.is_empty()).map_or_else(|| line.trim().into(), Cow::into_owned);
                self.fatal_reported |= fatal;
                env.emit_last(ctx, SessionUpdate::error(message, fatal), out);
                LineOutcome::Decoded
            }
            Some("result") => {
                if let Some(usage) = l.stats.take() {
                    env.emit(ctx, SessionUpdate::Usage { scope: UsageScope::Run, usage }, out);
                }
                if l.status.as_deref().is_some_and(|s| s != "success") {
                    let error = l.error.and_then(|e| serde_json::from_str::<Value>(e.get()).ok());
                    let message = match error_message(error.as_ref()) {
                        Some(m) => Some(m.to_string()),
                        None if !self.fatal_reported => {
                            Some(format!("gemini reported status {}", l.status.as_deref().unwrap_or_default()))
                        }
                        None => None,
                    };
                    if let Some(m) = message {
                        self.fatal_reported = true;
                        env.emit(ctx, SessionUpdate::error(m, true), out);
                    }
                }
                LineOutcome::Decoded
            }
            _ => LineOutcome::UnknownType,
        }
    }
}

/// `{type, message}` → the message when it is a non-empty string (a bare string error too).
fn error_message(error: Option<&Value>) -> Option<&str> {
    match error? {
        Value::String(s) => Some(s.as_str()),
        Value::Object(o) => str_field(o, "message"),
        _ => None,
    }
    .filter(|m| !m.is_empty())
}

/// `result.stats` → run usage (see the module docs), read in the line's pass: the counters
/// that are used leave `extra`, every other key stays there verbatim (a key printed twice
/// counts with its last value, as in a JSON reader).
struct Stats(Option<TokenUsage>);

impl<'de> Deserialize<'de> for Stats {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> ObjectVisitor<'de> for V {
            type Out = Option<TokenUsage>;
            const LISTS_AS_VALUES: bool = true;
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<TokenUsage>, A::Error> {
                let mut extra = Map::with_capacity(8);
                let (mut input_tokens, mut output_tokens, mut cached, mut input) = (None, None, None, None);
                let mut any = false;
                // Counters kept in `extra` because their value was not a count (bit per slot).
                let mut odd = 0u8;
                while let Some(CowStr(key)) = map.next_key::<CowStr<'de>>()? {
                    any = true;
                    let SizedValue(value) = map.next_value()?;
                    let (bit, slot) = match key.as_ref() {
                        "input_tokens" => (1, &mut input_tokens),
                        "output_tokens" => (2, &mut output_tokens),
                        "cached" => (4, &mut cached),
                        other => {
                            if other == "input" {
                                input = value.as_u64();
                            }
                            extra.insert(key.into_owned(), value);
                            continue;
                        }
                    };
                    *slot = value.as_u64();
                    if slot.is_none() {
                        odd |= bit;
                        extra.insert(key.into_owned(), value);
                    } else if odd & bit != 0 {
                        odd &= !bit;
                        extra.shift_remove(key.as_ref());
                    }
                }
                if !any {
                    return Ok(None);
                }
                let prompt = input_tokens.or_else(|| Some(input? + cached.unwrap_or(0)));
                Ok(Some(TokenUsage {
                    prompt_tokens: prompt,
                    completion_tokens: output_tokens,
                    cached_tokens: cached,
                    cost_usd: None,
                    extra: (!extra.is_empty()).then_some(extra),
                }))
            }
        }
        object_or_default(d, V).map(Stats)
    }
}

fn tool_use(l: &mut Line<'_>, env: Envelope, ctx: &DecodeContext, out: &mut Vec<OutputEvent>) -> LineOutcome {
    let Some(id) = l.tool_id.as_deref().filter(|id| !id.is_empty()) else { return LineOutcome::UnexpectedShape };
    let name = l.tool_name.as_deref().filter(|n| !n.is_empty());
    let params = l.parameters.map(Params::read).unwrap_or_default();
    let plan = (name == Some("write_todos")).then(|| todo_plan(&params)).flatten();
    let shape = describe(name.unwrap_or_default(), params);
    let call = ToolCall {
        tool_call_id: id.to_string(),
        title: shape.title,
        tool_name: name.map(str::to_string),
        kind: tool_kind(Agent::Gemini, name.unwrap_or_default()),
        status: ToolCallStatus::Pending,
        raw_input: l.parameters.map(RawJson::from_raw),
        content: (!shape.content.is_empty()).then_some(shape.content),
        locations: (!shape.locations.is_empty()).then_some(shape.locations),
    };
    match plan {
        Some(entries) => {
            env.emit(ctx, SessionUpdate::ToolCall(call), out);
            env.emit_last(ctx, SessionUpdate::Plan { entries }, out);
        }
        None => env.emit_last(ctx, SessionUpdate::ToolCall(call), out),
    }
    LineOutcome::Decoded
}

fn tool_result(l: &mut Line<'_>, env: Envelope, ctx: &DecodeContext, out: &mut Vec<OutputEvent>) -> LineOutcome {
    let Some(id) = l.tool_id.as_deref().filter(|id| !id.is_empty()) else { return LineOutcome::UnexpectedShape };
    let mut update = ToolCallUpdate::new(id);
    let success = l.status.as_deref() == Some("success");
    update.status = Some(if success { ToolCallStatus::Completed } else { ToolCallStatus::Failed });
    // The output as text: a string as is, any other value as its JSON text.
    let output_text: Option<Cow<'_, str>> = l.output.and_then(|raw| match raw_str(raw) {
        Some(text) => Some(text),
        None => serde_json::from_str::<Value>(raw.get()).ok().map(|v| Cow::Owned(v.to_string())),
    });
    let mut content = Vec::new();
    if !success {
        let error = l.error.and_then(|e| serde_json::from_str::<Value>(e.get()).ok());
        if let Some(text) = output_text.as_deref().filter(|t| !t.is_empty()) {
            content.push(ToolCallContent::text(text));
        }
        if let Some(text) = error_message(error.as_ref()).filter(|t| Some(*t) != output_text.as_deref()) {
            content.push(ToolCallContent::text(text));
        }
    } else if let Some(text) = output_text.filter(|t| !t.is_empty()) {
        content.push(ToolCallContent::text(text));
    }
    update.content = (!content.is_empty()).then_some(content);
    // `rawOutput`: `{status, output, error}` as printed.
    let mut record: [(&str, Member<'_>); 3] = [("", Member::Str("")); 3];
    let mut n = 0;
    for (key, member) in [
        ("status", l.status.as_deref().map(Member::Str)),
        ("output", l.output.map(Member::Raw)),
        ("error", l.error.map(Member::Raw)),
    ] {
        if let Some(member) = member {
            record[n] = (key, member);
            n += 1;
        }
    }
    update.raw_output = Some(raw_object(&record[..n]));
    env.emit_last(ctx, SessionUpdate::ToolCallUpdate(update), out);
    LineOutcome::Decoded
}

/// A list of strings: the strings of a JSON array (other elements skipped); `None` when the
/// value is not an array.
#[derive(Default)]
struct StrList<'a>(Option<Vec<Cow<'a, str>>>);

impl<'de: 'a, 'a> Deserialize<'de> for StrList<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = StrList<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<StrList<'a>, A::Error> {
                let mut list = Vec::new();
                while let Some(Str(s)) = seq.next_element::<Str<'de>>()? {
                    list.extend(s);
                }
                Ok(StrList(Some(list)))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StrList<'a>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(StrList(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<StrList<'a>, E> {
                Ok(StrList(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<StrList<'a>, E> {
                Ok(StrList(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<StrList<'a>, E> {
                Ok(StrList(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<StrList<'a>, E> {
                Ok(StrList(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<StrList<'a>, E> {
                Ok(StrList(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<StrList<'a>, E> {
                Ok(StrList(None))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// One todo of `write_todos`.
#[derive(Deserialize)]
struct Todo<'a> {
    #[serde(default, borrow, with = "opt_string")]
    description: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    status: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    priority: Option<Cow<'a, str>>,
}

/// The tool parameters any title, location, diff or plan is made of (strings only where the
/// table reads strings). Read from the raw `parameters` in one pass; a parameter printed twice
/// makes the pass fail, and the parameters are then read as a JSON reader reads them (last
/// value) through a [`Value`].
#[derive(Deserialize, Default)]
struct Params<'a> {
    #[serde(default, borrow, with = "opt_string")]
    file_path: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    absolute_path: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    path: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    dir_path: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    directory: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    include: StrList<'a>,
    #[serde(default, borrow)]
    paths: StrList<'a>,
    #[serde(default, borrow)]
    file_paths: StrList<'a>,
    #[serde(default, borrow, with = "opt_string")]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    old_string: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    new_string: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    description: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    command: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    pattern: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    query: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    prompt: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    url: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    agent_name: Option<Cow<'a, str>>,
    #[serde(rename = "agentName", default, borrow, with = "opt_string")]
    agent_name_camel: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    agent: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    subagent_type: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    title: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    topic: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    fact: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    skill: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    todos: ObjList<Todo<'a>>,
}

impl<'a> Params<'a> {
    /// The parameters of a `tool_use` (not an object: none).
    fn read(raw: &'a RawValue) -> Params<'a> {
        if !raw.get().starts_with('{') {
            return Params::default();
        }
        if let Ok(params) = serde_json::from_str::<Params<'a>>(raw.get()) {
            return params;
        }
        // A parameter printed twice: what a JSON reader makes of them (owned copies).
        match serde_json::from_str::<Value>(raw.get()) {
            Ok(value) => Params::deserialize(&value).map(Params::into_owned).unwrap_or_default(),
            Err(_) => Params::default(),
        }
    }

    fn into_owned(self) -> Params<'static> {
        fn own(s: Option<Cow<'_, str>>) -> Option<Cow<'static, str>> {
            s.map(|s| Cow::Owned(s.into_owned()))
        }
        fn own_list(l: StrList<'_>) -> StrList<'static> {
            StrList(l.0.map(|v| v.into_iter().map(|s| Cow::Owned(s.into_owned())).collect()))
        }
        Params {
            file_path: own(self.file_path),
            absolute_path: own(self.absolute_path),
            path: own(self.path),
            dir_path: own(self.dir_path),
            directory: own(self.directory),
            include: own_list(self.include),
            paths: own_list(self.paths),
            file_paths: own_list(self.file_paths),
            content: own(self.content),
            old_string: own(self.old_string),
            new_string: own(self.new_string),
            description: own(self.description),
            command: own(self.command),
            pattern: own(self.pattern),
            query: own(self.query),
            prompt: own(self.prompt),
            url: own(self.url),
            agent_name: own(self.agent_name),
            agent_name_camel: own(self.agent_name_camel),
            agent: own(self.agent),
            name: own(self.name),
            subagent_type: own(self.subagent_type),
            title: own(self.title),
            topic: own(self.topic),
            fact: own(self.fact),
            skill: own(self.skill),
            todos: crate::decode::json::ObjList(self.todos.0.map(|list| {
                list.into_iter()
                    .map(|t| {
                        crate::decode::json::Obj(t.0.map(|t| Todo {
                            description: own(t.description),
                            content: own(t.content),
                            text: own(t.text),
                            status: own(t.status),
                            priority: own(t.priority),
                        }))
                    })
                    .collect()
            })),
        }
    }
}

/// The first of `fields` that holds a non-empty string.
fn first<'p>(fields: &[&'p Option<Cow<'_, str>>]) -> Option<&'p str> {
    fields.iter().find_map(|f| f.as_deref().filter(|s| !s.is_empty()))
}

/// Title, content and locations of a call, from its name and parameters.
struct Shape {
    title: String,
    content: Vec<ToolCallContent>,
    locations: Vec<ToolCallLocation>,
}

fn describe(name: &str, mut p: Params<'_>) -> Shape {
    let mut content = Vec::new();
    let mut locations = Vec::new();
    let path = first(&[&p.file_path, &p.absolute_path, &p.path]);
    let dir = first(&[&p.dir_path, &p.path, &p.directory]);
    let title = match name {
        "read_file" => {
            locations.extend(path.map(ToolCallLocation::path));
            path.map_or("Read file".into(), |f| title("Read ", f, MAX_TITLE_CHARS, ""))
        }
        "read_many_files" => {
            let patterns: Vec<&str> = [&p.include, &p.paths, &p.file_paths]
                .into_iter()
                .filter_map(|l| l.0.as_ref())
                .flatten()
                .map(|s| s.as_ref())
                .collect();
            locations.extend(patterns.iter().copied().map(ToolCallLocation::path));
            if patterns.is_empty() { "Read multiple files".into() } else { format!("Read {} files", patterns.len()) }
        }
        "write_file" => {
            if let Some(f) = path {
                locations.push(ToolCallLocation::path(f));
                if let Some(text) = p.content.take() {
                    content.push(ToolCallContent::Diff(DiffContent {
                        path: f.to_string(),
                        old_text: None,
                        new_text: text.into_owned(),
                    }));
                }
            }
            path.map_or("Write file".into(), |f| title("Write ", f, MAX_TITLE_CHARS, ""))
        }
        "replace" | "edit" | "edit_file" => {
            if let Some(f) = path {
                locations.push(ToolCallLocation::path(f));
                if p.old_string.is_some() || p.new_string.is_some() {
                    content.push(ToolCallContent::Diff(DiffContent {
                        path: f.to_string(),
                        old_text: Some(p.old_string.take().map(Cow::into_owned).unwrap_or_default()),
                        new_text: p.new_string.take().map(Cow::into_owned).unwrap_or_default(),
                    }));
                }
            }
            path.map_or("Edit file".into(), |f| title("Edit ", f, MAX_TITLE_CHARS, ""))
        }
        "run_shell_command" | "shell" => {
            if let Some(d) = first(&[&p.description]) {
                content.push(ToolCallContent::text(d));
            }
            first(&[&p.command]).map_or("Run command".into(), command_title)
        }
        "glob" => {
            locations.extend(dir.map(ToolCallLocation::path));
            first(&[&p.pattern]).map_or("Find files".into(), |s| title("Find ", s, MAX_TITLE_CHARS, ""))
        }
        "grep_search" | "grep" | "search_file_content" => {
            locations.extend(dir.map(ToolCallLocation::path));
            first(&[&p.pattern, &p.query]).map_or("Search files".into(), |s| title("grep \"", s, MAX_TITLE_CHARS, "\""))
        }
        "list_directory" => {
            locations.extend(dir.map(ToolCallLocation::path));
            dir.map_or("List directory".into(), |d| title("List ", d, MAX_TITLE_CHARS, ""))
        }
        "google_web_search" | "web_search" | "brave_web_search" => {
            first(&[&p.query]).map_or("Web search".into(), |q| title("Search: ", q, MAX_TITLE_CHARS, ""))
        }
        "web_fetch" => first(&[&p.prompt, &p.url]).map_or("Web fetch".into(), |s| title("Fetch: ", s, 50, "")),
        "invoke_agent" | "delegate_to_agent" => {
            first(&[&p.agent_name, &p.agent_name_camel, &p.agent, &p.name, &p.subagent_type])
                .map_or("Invoke agent".into(), |a| title("Agent: ", a, MAX_TITLE_CHARS, ""))
        }
        "write_todos" => "Update todos".into(),
        "update_topic" => first(&[&p.title, &p.topic, &p.name])
            .map_or("Update topic".into(), |t| title("Topic: ", t, MAX_TITLE_CHARS, "")),
        "save_memory" => first(&[&p.fact]).map_or("Save memory".into(), |f| title("Remember: \"", f, 40, "\"")),
        "activate_skill" => first(&[&p.name, &p.skill])
            .map_or("Activate skill".into(), |s| title("Activate skill: ", s, MAX_TITLE_CHARS, "")),
        "enter_plan_mode" => "Enter plan mode".into(),
        "exit_plan_mode" => "Exit plan mode".into(),
        "list_background_processes" => "List background processes".into(),
        "read_background_output" => "Read background output".into(),
        "" => "Tool call".into(),
        other => other.to_string(),
    };
    Shape { title, content, locations }
}

/// `write_todos` parameters → plan entries, or `None` when there is no todo list to show.
fn todo_plan(p: &Params<'_>) -> Option<Vec<PlanEntry>> {
    let todos = p.todos.0.as_ref()?;
    Some(
        todos
            .iter()
            .filter_map(|t| t.0.as_ref())
            .filter_map(|t| {
                let content = first(&[&t.description, &t.content, &t.text])?;
                let status = match t.status.as_deref() {
                    Some("in_progress" | "in-progress") => PlanEntryStatus::InProgress,
                    Some("completed" | "done" | "cancelled") => PlanEntryStatus::Completed,
                    _ => PlanEntryStatus::Pending,
                };
                let priority = PlanEntryPriority::from_wire(t.priority.as_deref());
                Some(PlanEntry { content: content.to_string(), status, priority })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{Agent, Decoder};

    fn run(input: &str) -> Vec<Value> {
        let mut d = Decoder::new(Agent::Gemini);
        let mut evs = d.feed(input.as_bytes());
        evs.extend(d.finish());
        evs.iter().map(|e| serde_json::to_value(e).unwrap()).collect()
    }

    #[test]
    fn init_model_and_session_are_stamped_later() {
        let evs = run(concat!(
            r#"{"type":"init","timestamp":"2026-01-01T00:00:00.000Z","session_id":"s","model":"m"}"#,
            "\n",
            r#"{"type":"message","timestamp":"2026-01-01T00:00:01.000Z","role":"assistant","content":"hi","delta":true}"#,
            "\n"
        ));
        assert_eq!(evs.len(), 1);
        assert_eq!(evs[0]["sessionId"], "s");
        assert_eq!(evs[0]["model"], "m");
        assert_eq!(evs[0]["timestamp"], "2026-01-01T00:00:01.000Z");
    }

    #[test]
    fn web_fetch_titles_are_cut_only_when_long() {
        let fetch_title = |s: &str| {
            let raw = RawValue::from_string(format!(r#"{{"prompt":"{s}"}}"#)).unwrap();
            describe("web_fetch", Params::read(&raw)).title
        };
        assert_eq!(fetch_title("short"), "Fetch: short");
        assert_eq!(fetch_title(&"x".repeat(60)), format!("Fetch: {}…", "x".repeat(50)));
    }

    #[test]
    fn parameters_printed_twice_read_as_a_json_reader_reads_them() {
        let raw =
            RawValue::from_string(r#"{"file_path":"/a","file_path":"/b","todos":[{"text":"t","text":"u"}]}"#.into())
                .unwrap();
        let p = Params::read(&raw);
        assert_eq!(p.file_path.as_deref(), Some("/b"));
        assert_eq!(todo_plan(&p).unwrap()[0].content, "u");
    }

    #[test]
    fn non_string_output_is_kept_as_json_text() {
        let evs = run("{\"type\":\"tool_result\",\"tool_id\":\"t\",\"status\":\"success\",\"output\":{\"a\":1}}\n");
        assert_eq!(evs[0]["update"]["content"][0]["content"]["text"], "{\"a\":1}");
        assert_eq!(evs[0]["update"]["rawOutput"]["output"]["a"], 1);
    }

    #[test]
    fn stats_without_input_tokens_add_cached_to_input() {
        let u = serde_json::from_str::<Stats>(r#"{"input":5,"cached":3,"output_tokens":2}"#).unwrap().0.unwrap();
        assert_eq!(u.prompt_tokens, Some(8));
        assert_eq!(u.cached_tokens, Some(3));
        assert_eq!(u.extra.unwrap().get("input"), Some(&Value::from(5)));
    }
}
