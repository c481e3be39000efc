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
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::context::{DecodeContext, Envelope};
use super::json::{first_str, opt_string, parse_line, str_field};
use super::{Agent, HarnessDecoder, LineOutcome};
use crate::event::{
    DiffContent, OutputEvent, PlanEntry, PlanEntryPriority, PlanEntryStatus, RawJson, SessionUpdate, TokenUsage,
    ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, UsageScope,
};
use crate::tools::{MAX_TITLE_CHARS, command_title, tool_kind, truncate_chars};

/// Stateful gemini line decoder.
#[derive(Debug, Default)]
pub(crate) struct GeminiDecoder {
    /// A fatal `error` was already reported (so a bare failed `result` adds nothing).
    fatal_reported: bool,
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", default, borrow, with = "opt_string")]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    timestamp: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    session_id: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    model: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    role: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    tool_name: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    tool_id: Option<Cow<'a, str>>,
    #[serde(default)]
    parameters: Option<Value>,
    #[serde(default, borrow, with = "opt_string")]
    status: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    output: Option<TextOrValue<'a>>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default, borrow, with = "opt_string")]
    severity: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    message: Option<Cow<'a, str>>,
    #[serde(default)]
    stats: Option<Value>,
}

/// A value read in one pass: a string stays borrowed (tool outputs can be ~200 KB), anything
/// else becomes a [`Value`]. `null` is `None` at the field level.
enum TextOrValue<'a> {
    Text(Cow<'a, str>),
    Value(Value),
}

impl<'de: 'a, 'a> Deserialize<'de> for TextOrValue<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = TextOrValue<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(TextOrValue::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(TextOrValue::Text(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(TextOrValue::Text(Cow::Owned(v)))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
                Ok(TextOrValue::Value(Value::Bool(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(TextOrValue::Value(Value::from(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(TextOrValue::Value(Value::from(v)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(TextOrValue::Value(Value::from(v)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(TextOrValue::Value(Value::Null))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Value::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(TextOrValue::Value)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                Value::deserialize(de::value::MapAccessDeserializer::new(map)).map(TextOrValue::Value)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl TextOrValue<'_> {
    fn into_value(self) -> Value {
        match self {
            TextOrValue::Text(t) => Value::String(t.into_owned()),
            TextOrValue::Value(v) => v,
        }
    }
}

impl HarnessDecoder for GeminiDecoder {
    fn decode_line(&mut self, line: &str, ctx: &mut DecodeContext, out: &mut Vec<OutputEvent>) -> LineOutcome {
        let l: Line<'_> = match parse_line(line) {
            Ok(l) => l,
            Err(outcome) => return outcome,
        };
        let env = Envelope {
            timestamp: l.timestamp.as_deref().filter(|t| !t.is_empty()).map(str::to_string),
            model: l.model.as_deref().filter(|m| !m.is_empty()).map(str::to_string),
            ..Envelope::default()
        };
        match l.kind.as_deref() {
            Some("init") => {
                ctx.see_session(l.session_id.as_deref());
                if ctx.init_model.is_none() {
                    ctx.init_model = env.model.clone();
                }
                LineOutcome::Decoded
            }
            Some("message") => {
                let Some(text) = l.content.filter(|c| !c.is_empty()) else { return LineOutcome::Decoded };
                match l.role.as_deref() {
                    Some("user") => env.emit_last(ctx, SessionUpdate::user_message(text), out),
                    Some("assistant") | None => env.emit_last(ctx, SessionUpdate::message(text), out),
                    Some(_) => return LineOutcome::UnexpectedShape,
                }
                LineOutcome::Decoded
            }
            Some("tool_use") => tool_use(l, env, ctx, out),
            Some("tool_result") => tool_result(l, env, ctx, out),
            Some("error") => {
                let fatal = l.severity.as_deref() == Some("error");
                let message =
                    l.message.filter(|m| !m.is_empty()).map(Cow::into_owned).unwrap_or_else(|| line.trim().into());
                self.fatal_reported |= fatal;
                env.emit_last(ctx, SessionUpdate::error(message, fatal), out);
                LineOutcome::Decoded
            }
            Some("result") => {
                if let Some(usage) = stats_usage(l.stats) {
                    env.emit(ctx, SessionUpdate::Usage { scope: UsageScope::Run, usage }, out);
                }
                if l.status.as_deref().is_some_and(|s| s != "success") {
                    let message = error_message(l.error.as_ref());
                    let message = match message {
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

/// `result.stats` → run usage (see the module docs).
fn stats_usage(stats: Option<Value>) -> Option<TokenUsage> {
    let Some(Value::Object(map)) = stats else { return None };
    if map.is_empty() {
        return None;
    }
    let count = |k: &str| map.get(k).and_then(Value::as_u64);
    let cached = count("cached");
    let prompt = count("input_tokens").or_else(|| Some(count("input")? + cached.unwrap_or(0)));
    let completion = count("output_tokens");
    let input_tokens_used = count("input_tokens").is_some();
    let mapped = |k: &str| match k {
        "input_tokens" => input_tokens_used,
        "output_tokens" => completion.is_some(),
        "cached" => cached.is_some(),
        _ => false,
    };
    let extra: Map<String, Value> = map.into_iter().filter(|(k, _)| !mapped(k)).collect();
    Some(TokenUsage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        cached_tokens: cached,
        cost_usd: None,
        extra: (!extra.is_empty()).then_some(extra),
    })
}

fn tool_use(l: Line<'_>, env: Envelope, ctx: &DecodeContext, out: &mut Vec<OutputEvent>) -> LineOutcome {
    let Some(id) = l.tool_id.as_deref().filter(|id| !id.is_empty()) else { return LineOutcome::UnexpectedShape };
    let name = l.tool_name.as_deref().filter(|n| !n.is_empty());
    let input = l.parameters.filter(|p| !p.is_null());
    let empty = Map::new();
    let params = input.as_ref().and_then(Value::as_object).unwrap_or(&empty);
    let shape = describe(name.unwrap_or_default(), params);
    let plan = (name == Some("write_todos")).then(|| todo_plan(params)).flatten();
    let call = ToolCall {
        tool_call_id: id.to_string(),
        title: shape.title,
        tool_name: name.map(str::to_string),
        kind: tool_kind(Agent::Gemini, name.unwrap_or_default()),
        status: ToolCallStatus::Pending,
        raw_input: input.map(RawJson::from),
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

fn tool_result(l: Line<'_>, env: Envelope, ctx: &DecodeContext, out: &mut Vec<OutputEvent>) -> LineOutcome {
    let Some(id) = l.tool_id.as_deref().filter(|id| !id.is_empty()) else { return LineOutcome::UnexpectedShape };
    let mut update = ToolCallUpdate::new(id);
    let success = l.status.as_deref() == Some("success");
    update.status = Some(if success { ToolCallStatus::Completed } else { ToolCallStatus::Failed });
    let error = l.error.filter(|e| !e.is_null());
    let error_text = error_message(error.as_ref());
    let output = l.output.map(TextOrValue::into_value).filter(|v| !v.is_null());
    let output_text: Option<Cow<'_, str>> = output.as_ref().map(|v| match v {
        Value::String(s) => Cow::Borrowed(s.as_str()),
        other => Cow::Owned(other.to_string()),
    });
    let mut content = Vec::new();
    if let Some(text) = output_text.as_deref().filter(|t| !t.is_empty()) {
        content.push(ToolCallContent::text(text));
    }
    if !success {
        if let Some(text) = error_text.filter(|t| !t.is_empty() && Some(*t) != output_text.as_deref()) {
            content.push(ToolCallContent::text(text));
        }
    }
    update.content = (!content.is_empty()).then_some(content);
    let mut raw = Map::new();
    if let Some(status) = l.status {
        raw.insert("status".into(), Value::String(status.into_owned()));
    }
    if let Some(output) = output {
        raw.insert("output".into(), output);
    }
    if let Some(error) = error {
        raw.insert("error".into(), error);
    }
    update.raw_output = Some(RawJson::from(Value::Object(raw)));
    env.emit_last(ctx, SessionUpdate::ToolCallUpdate(update), out);
    LineOutcome::Decoded
}

/// Title, content and locations of a call, from its name and parameters.
struct Shape {
    title: String,
    content: Vec<ToolCallContent>,
    locations: Vec<ToolCallLocation>,
}

fn describe(name: &str, p: &Map<String, Value>) -> Shape {
    let mut content = Vec::new();
    let mut locations = Vec::new();
    let path = first_str(p, &["file_path", "absolute_path", "path"]);
    let dir = first_str(p, &["dir_path", "path", "directory"]);
    let short = |s: &str| truncate_chars(s, MAX_TITLE_CHARS);
    let title = match name {
        "read_file" => {
            locations.extend(path.map(ToolCallLocation::path));
            path.map_or("Read file".into(), |f| format!("Read {}", short(f)))
        }
        "read_many_files" => {
            let patterns: Vec<&str> = ["include", "paths", "file_paths"]
                .iter()
                .filter_map(|k| p.get(*k).and_then(Value::as_array))
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            locations.extend(patterns.iter().copied().map(ToolCallLocation::path));
            if patterns.is_empty() { "Read multiple files".into() } else { format!("Read {} files", patterns.len()) }
        }
        "write_file" => {
            if let Some(f) = path {
                locations.push(ToolCallLocation::path(f));
                if let Some(text) = str_field(p, "content") {
                    content.push(ToolCallContent::Diff(DiffContent {
                        path: f.to_string(),
                        old_text: None,
                        new_text: text.to_string(),
                    }));
                }
            }
            path.map_or("Write file".into(), |f| format!("Write {}", short(f)))
        }
        "replace" | "edit" | "edit_file" => {
            if let Some(f) = path {
                locations.push(ToolCallLocation::path(f));
                let old = str_field(p, "old_string");
                let new = str_field(p, "new_string");
                if old.is_some() || new.is_some() {
                    content.push(ToolCallContent::Diff(DiffContent {
                        path: f.to_string(),
                        old_text: Some(old.unwrap_or_default().to_string()),
                        new_text: new.unwrap_or_default().to_string(),
                    }));
                }
            }
            path.map_or("Edit file".into(), |f| format!("Edit {}", short(f)))
        }
        "run_shell_command" | "shell" => {
            if let Some(d) = first_str(p, &["description"]) {
                content.push(ToolCallContent::text(d));
            }
            first_str(p, &["command"]).map_or("Run command".into(), command_title)
        }
        "glob" => {
            locations.extend(dir.map(ToolCallLocation::path));
            first_str(p, &["pattern"]).map_or("Find files".into(), |s| format!("Find {}", short(s)))
        }
        "grep_search" | "grep" | "search_file_content" => {
            locations.extend(dir.map(ToolCallLocation::path));
            first_str(p, &["pattern", "query"]).map_or("Search files".into(), |s| format!("grep \"{}\"", short(s)))
        }
        "list_directory" => {
            locations.extend(dir.map(ToolCallLocation::path));
            dir.map_or("List directory".into(), |d| format!("List {}", short(d)))
        }
        "google_web_search" | "web_search" | "brave_web_search" => {
            first_str(p, &["query"]).map_or("Web search".into(), |q| format!("Search: {}", short(q)))
        }
        "web_fetch" => {
            first_str(p, &["prompt", "url"]).map_or("Web fetch".into(), |s| format!("Fetch: {}", truncate_chars(s, 50)))
        }
        "invoke_agent" | "delegate_to_agent" => {
            first_str(p, &["agent_name", "agentName", "agent", "name", "subagent_type"])
                .map_or("Invoke agent".into(), |a| format!("Agent: {}", short(a)))
        }
        "write_todos" => "Update todos".into(),
        "update_topic" => {
            first_str(p, &["title", "topic", "name"]).map_or("Update topic".into(), |t| format!("Topic: {}", short(t)))
        }
        "save_memory" => {
            first_str(p, &["fact"]).map_or("Save memory".into(), |f| format!("Remember: \"{}\"", truncate_chars(f, 40)))
        }
        "activate_skill" => first_str(p, &["name", "skill"])
            .map_or("Activate skill".into(), |s| format!("Activate skill: {}", short(s))),
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
fn todo_plan(p: &Map<String, Value>) -> Option<Vec<PlanEntry>> {
    let todos = p.get("todos")?.as_array()?;
    Some(
        todos
            .iter()
            .filter_map(Value::as_object)
            .filter_map(|t| {
                let content = first_str(t, &["description", "content", "text"])?;
                let status = match str_field(t, "status") {
                    Some("in_progress" | "in-progress") => PlanEntryStatus::InProgress,
                    Some("completed" | "done" | "cancelled") => PlanEntryStatus::Completed,
                    _ => PlanEntryStatus::Pending,
                };
                let priority = PlanEntryPriority::from_wire(str_field(t, "priority"));
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
        let p = |s: &str| serde_json::from_str::<Map<String, Value>>(&format!(r#"{{"prompt":"{s}"}}"#)).unwrap();
        assert_eq!(describe("web_fetch", &p("short")).title, "Fetch: short");
        let long = "x".repeat(60);
        assert_eq!(describe("web_fetch", &p(&long)).title, format!("Fetch: {}…", "x".repeat(50)));
    }

    #[test]
    fn non_string_output_is_kept_as_json_text() {
        let evs = run("{\"type\":\"tool_result\",\"tool_id\":\"t\",\"status\":\"success\",\"output\":{\"a\":1}}\n");
        assert_eq!(evs[0]["update"]["content"][0]["content"]["text"], "{\"a\":1}");
        assert_eq!(evs[0]["update"]["rawOutput"]["output"]["a"], 1);
    }

    #[test]
    fn stats_without_input_tokens_add_cached_to_input() {
        let u = stats_usage(Some(serde_json::json!({"input":5,"cached":3,"output_tokens":2}))).unwrap();
        assert_eq!(u.prompt_tokens, Some(8));
        assert_eq!(u.cached_tokens, Some(3));
        assert_eq!(u.extra.unwrap().get("input"), Some(&Value::from(5)));
    }
}
