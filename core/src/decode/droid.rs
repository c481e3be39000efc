//! Factory Droid decoder (`droid exec --output-format stream-json`, and the `stream-jsonrpc`
//! envelope of `droid exec --input-format stream-jsonrpc --output-format stream-jsonrpc`).
//!
//! Every stream-json line carries `session_id` (captured once, stamped on every later event) and
//! most carry `timestamp` in epoch milliseconds, which becomes the event's ISO 8601 UTC
//! `timestamp` (a number below 10^11 is read as seconds; a string is kept as printed). Lines name
//! no model: the `system/init` line's `model` is stamped on every event.
//!
//! | wire line | events |
//! |---|---|
//! | `system` (`subtype: "init"`: `session_id`, `model`, `tools`) | nothing; captures the session id and the model |
//! | `message` role `user` (the prompt echo) | nothing (as the peer: `droid__testUserEchoIgnored`) |
//! | `message` / `assistant` role `assistant` (`id`, `text` or text blocks) | `agent_message_chunk`, `messageId` = `id` |
//! | `reasoning` (`id`, `text`) | `agent_thought_chunk`, `messageId` = `id`. Droid prints every reasoning block TWICE with the same id: a reasoning line whose (id, text) was already emitted since the last non-thought event is dropped. A line without an id is never dropped; the same thought after other output is emitted again |
//! | `tool_call`, `tool_use`: nested `toolUse {id, name, input}` or flat `{id, messageId, toolId, toolName, parameters}` | `tool_call` (status `pending`, `toolName` = `toolName`/`name` verbatim, `kind` from `tools.rs`, `rawInput` = the input object, title / locations / diffs below, `messageId`). A call id already announced is not announced again |
//! | `tool_call` of `TodoWrite` with `todos` as an array, or as a numbered text list `1. [in_progress] …` | `plan` (status `in_progress`/`completed`/`done` kept, else pending; priority `high`/`low` kept, else medium) instead of `tool_call`; its successful result is swallowed, a failed one is emitted. A `todos` that does not parse stays a `tool_call` |
//! | `tool_result` (`id` / `toolUseId`, `isError`, `value` / `content` / `error {type, message}`) | `tool_call_update`: status `failed` when `isError` (or an `error` object without `isError`), else `completed`; content = the text verbatim: `error.message` of a failure, else `value` (a string as is; other JSON as compact text), else `content` (string, or text/image blocks); `rawOutput` below. No title: the call's title stays |
//! | `tool_progress_update` / `tool_progress` | `tool_call_update` `in_progress` with the progress text |
//! | `completion` (`finalText`, `numTurns`, `durationMs`, `usage`) | `agent_message_chunk` with `finalText` ONLY when it differs (ignoring surrounding whitespace) from the last assistant text already emitted; then `usage` scope `run` (below) |
//! | `result` (`droid exec -o json`: `result`, `is_error`, `usage`) | like `completion`; with `is_error: true` an `error` (`fatal: true`) instead of the message |
//! | `error` (`source`: `agent_loop` / `cli`, `message`) | `error`, `fatal: true`, `extra: {"source": …}` |
//! | `create_message` (`message {id, role, content[]}`) | role assistant only, blocks in order: `text` → `agent_message_chunk` unless that message's text was already streamed as deltas or equals the last assistant text; `tool_use` → `tool_call` (deduplicated by id); `thinking` → `agent_thought_chunk` unless streamed as deltas |
//! | `assistant_text_delta` (`messageId`, `blockIndex`, `textDelta`) | `agent_message_chunk` |
//! | `thinking_text_delta` | `agent_thought_chunk`; an exact repeat (same messageId, blockIndex and text) of the thought emitted just before is dropped (droid re-sends them) |
//! | `session_token_usage_changed` (`tokenUsage`, `lastCallTokenUsage`) | `usage` scope `call` from `lastCallTokenUsage` when printed; the cumulative `tokenUsage` is held and emitted once as scope `run` at the end of input (unless a `completion` already gave the run total) |
//! | `error` notification (`message`, `errorType`) | `error`, `fatal: false` (the session stays open and droid retries; the run's outcome is its response/exit), `extra: {"errorType": …}` |
//! | JSON-RPC `response` (`result.sessionId`, `error`) | nothing, captures the session id; an `error` becomes `error` `fatal: true` (a failed request: that turn never ran) |
//! | JSON-RPC `notification` `droid.session_notification` | `params.notification` decoded as the bare line types above (`params.sessionId` captured) |
//! | JSON-RPC `request` (permission prompts), `assistant_text_complete`, `thinking_text_complete`, `droid_working_state_changed`, `permission_resolved`, `settings_updated`, `session_title_updated`, `mcp_status_changed`, `mission_*`, `mcp_auth_*`, `structured_output`, `hook` | nothing |
//!
//! **Usage.** Droid's `input_tokens` EXCLUDES cache reads and writes (s16: input 1100 = the sum of
//! the prompts minus the cached share), so `promptTokens` = `input_tokens` +
//! `cache_read_input_tokens` + `cache_creation_input_tokens`, `completionTokens` =
//! `output_tokens`, `cachedTokens` = `cache_read_input_tokens`; `extra` keeps every other counter
//! of `usage` under its own name (`cache_creation_input_tokens`, `factory_credits`, `ttft_ms`)
//! plus the line's `numTurns` and `durationMs`. The JSON-RPC counters are the same arithmetic
//! over `inputTokens`, `cacheReadTokens`, `cacheCreationTokens`, `outputTokens` (others, such as
//! `thinkingTokens`, go to `extra`).
//!
//! **rawOutput** is droid's structured record of the result where it prints one beyond the text:
//! the `error` object of a failure (`{type, message}`); the parsed `value` when `value` is JSON
//! text of an object or array (Create `{success, file_path}`, Edit `{diffLines, linesAdded, …}`)
//! or is itself non-string JSON; a non-string `content`. A plain text `value` (command output,
//! a file's text) has no structured record, so no `rawOutput`.
//!
//! **Errors.** Droid prints an `agent_loop` error only after its retries are exhausted (a
//! recovered failure prints nothing, s14-hangup-recover), followed by the `cli` line
//! `Exec failed` and exit code 1, so both are terminal: `fatal: true`.
//!
//! **Titles** (cut at [`crate::tools::MAX_TITLE_CHARS`]): Read `Read <file_path>`; LS
//! `List <directory_path>`; Glob `Find <patterns>`; Grep `grep "<pattern>"`; Create
//! `Create <file_path>` (+ diff, `oldText: null`); Edit `Edit <file_path>` (+ diff
//! `old_str` → `new_str`); Execute the command in backticks; FetchUrl `Fetch <url>`; WebSearch
//! `"<query>"`; Task the description; ToolSearch `Search tools: <query>`; Skill `Skill <name>`;
//! TaskOutput / TaskStop `Task output <id>` / `Stop task <id>`; MCP `<server>___<tool>` →
//! `<server>: <tool>`; anything else its name, with the path, command or URL when one is given.
//! Locations from `file_path` / `path` / `directory_path` / `folder`.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::context::{DecodeContext, Envelope};
use super::json::{lenient, parse_line};
use super::{Agent, HarnessDecoder, LineOutcome};
use crate::event::{
    ContentBlock, DiffContent, ImageContent, JsonObject, OutputEvent, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionUpdate, TokenUsage, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, UsageScope,
};
use crate::tools::{MAX_TITLE_CHARS, command_title, normalize_name, tool_kind, truncate_chars};

/// How deep JSON-RPC envelopes are unwrapped.
const MAX_DEPTH: usize = 4;

/// Stateful droid line decoder.
#[derive(Debug, Default)]
pub(crate) struct DroidDecoder {
    /// Announced tool calls by id: `true` when the call became a plan (TodoWrite).
    calls: HashMap<String, bool>,
    /// The last assistant text emitted: a whole message, or the deltas of a streamed message.
    last_text: String,
    /// While `last_text` accumulates deltas: the message they belong to.
    streaming: Option<Option<String>>,
    /// The message whose thinking was streamed as deltas.
    thinking_streamed: Option<String>,
    /// Keys of the thoughts emitted since the last other event (reasoning dedupe).
    thought_keys: Vec<ThoughtKey>,
    /// The run total came from a `completion`/`result` line.
    run_usage_emitted: bool,
    /// The latest cumulative session usage from JSON-RPC notifications, emitted at the end.
    session_usage: Option<TokenUsage>,
}

/// (id or messageId, blockIndex, text) of an emitted thought.
type ThoughtKey = (String, String, String);

/// Every droid line shape: stream-json lines, JSON-RPC envelopes and their notifications.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", default, borrow, with = "super::json::opt_string")]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "super::json::opt_string")]
    subtype: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "super::json::opt_string")]
    role: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "super::json::opt_string")]
    id: Option<Cow<'a, str>>,
    #[serde(rename = "messageId", default, borrow, with = "super::json::opt_string")]
    message_id: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "super::json::opt_string")]
    text: Option<Cow<'a, str>>,
    #[serde(rename = "textDelta", default, borrow, with = "super::json::opt_string")]
    text_delta: Option<Cow<'a, str>>,
    #[serde(rename = "blockIndex", default, borrow)]
    block_index: Option<&'a RawValue>,
    #[serde(default, borrow, with = "super::json::opt_string")]
    session_id: Option<Cow<'a, str>>,
    #[serde(rename = "sessionId", default, borrow, with = "super::json::opt_string")]
    session_id_camel: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    timestamp: Option<&'a RawValue>,
    #[serde(default, borrow, with = "super::json::opt_string")]
    model: Option<Cow<'a, str>>,
    // Tool calls.
    #[serde(rename = "toolUse", default, borrow)]
    tool_use: Option<&'a RawValue>,
    #[serde(rename = "tool_use", default, borrow)]
    tool_use_snake: Option<&'a RawValue>,
    #[serde(default, borrow, with = "super::json::opt_string")]
    name: Option<Cow<'a, str>>,
    #[serde(rename = "toolName", default, borrow, with = "super::json::opt_string")]
    tool_name: Option<Cow<'a, str>>,
    #[serde(rename = "tool_name", default, borrow, with = "super::json::opt_string")]
    tool_name_snake: Option<Cow<'a, str>>,
    #[serde(rename = "toolId", default, borrow, with = "super::json::opt_string")]
    tool_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    input: Option<&'a RawValue>,
    #[serde(rename = "toolInput", default, borrow)]
    tool_input: Option<&'a RawValue>,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(default, borrow)]
    parameters: Option<&'a RawValue>,
    // Tool results.
    #[serde(rename = "toolUseId", default, borrow, with = "super::json::opt_string")]
    tool_use_id: Option<Cow<'a, str>>,
    #[serde(rename = "tool_use_id", default, borrow, with = "super::json::opt_string")]
    tool_use_id_snake: Option<Cow<'a, str>>,
    #[serde(rename = "isError", default, borrow)]
    is_error: Option<&'a RawValue>,
    #[serde(rename = "is_error", default, borrow)]
    is_error_snake: Option<&'a RawValue>,
    #[serde(default, borrow)]
    value: Option<&'a RawValue>,
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
    #[serde(default, borrow)]
    update: Option<&'a RawValue>,
    // Run end.
    #[serde(rename = "finalText", default, borrow, with = "super::json::opt_string")]
    final_text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    result: Option<&'a RawValue>,
    #[serde(default, borrow)]
    usage: Option<&'a RawValue>,
    #[serde(rename = "numTurns", default, borrow)]
    num_turns: Option<&'a RawValue>,
    #[serde(rename = "durationMs", default, borrow)]
    duration_ms: Option<&'a RawValue>,
    #[serde(rename = "num_turns", default, borrow)]
    num_turns_snake: Option<&'a RawValue>,
    #[serde(rename = "duration_ms", default, borrow)]
    duration_ms_snake: Option<&'a RawValue>,
    // Errors and messages.
    #[serde(default, borrow, with = "super::json::opt_string")]
    source: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    message: Option<&'a RawValue>,
    #[serde(rename = "errorType", default, borrow, with = "super::json::opt_string")]
    error_type: Option<Cow<'a, str>>,
    // JSON-RPC.
    #[serde(default, borrow)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, with = "super::json::opt_string")]
    method: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
    #[serde(rename = "tokenUsage", default, borrow)]
    token_usage: Option<&'a RawValue>,
    #[serde(rename = "lastCallTokenUsage", default, borrow)]
    last_call_token_usage: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(default, borrow)]
    notification: Option<&'a RawValue>,
    #[serde(rename = "sessionId", default, borrow, with = "super::json::opt_string")]
    session_id: Option<Cow<'a, str>>,
}

/// A JSON-RPC response's `result`.
#[derive(Deserialize)]
struct RpcResult<'a> {
    #[serde(rename = "sessionId", default, borrow, with = "super::json::opt_string")]
    session_id: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "super::json::opt_string")]
    session_id_snake: Option<Cow<'a, str>>,
    #[serde(rename = "finalText", default, borrow, with = "super::json::opt_string")]
    final_text: Option<Cow<'a, str>>,
}

/// `create_message`'s `message`.
#[derive(Deserialize)]
struct CreatedMessage<'a> {
    #[serde(default, borrow, with = "super::json::opt_string")]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "super::json::opt_string")]
    role: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
}

/// A content block of a message or a tool result.
#[derive(Deserialize)]
struct Block<'a> {
    #[serde(rename = "type", default, borrow, with = "super::json::opt_string")]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "super::json::opt_string")]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "super::json::opt_string")]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "super::json::opt_string")]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "super::json::opt_string")]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    input: Option<&'a RawValue>,
    #[serde(default, borrow)]
    source: Option<&'a RawValue>,
    #[serde(default, borrow, with = "super::json::opt_string")]
    data: Option<Cow<'a, str>>,
    #[serde(rename = "mimeType", default, borrow, with = "super::json::opt_string")]
    mime_type: Option<Cow<'a, str>>,
}

/// An image block's `source {type, media_type, data}`.
#[derive(Deserialize)]
struct ImageSource<'a> {
    #[serde(default, borrow, with = "super::json::opt_string")]
    media_type: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "super::json::opt_string")]
    data: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "super::json::opt_string")]
    url: Option<Cow<'a, str>>,
}

/// A borrowed-when-possible JSON string.
#[derive(Deserialize)]
struct Str<'a>(#[serde(borrow)] Cow<'a, str>);

impl HarnessDecoder for DroidDecoder {
    fn decode_line(&mut self, line: &str, ctx: &mut DecodeContext, out: &mut Vec<OutputEvent>) -> LineOutcome {
        match parse_line::<Line<'_>>(line) {
            Ok(parsed) => self.decode(&parsed, line, ctx, 0, out),
            Err(outcome) => outcome,
        }
    }

    fn finish(&mut self, ctx: &mut DecodeContext, out: &mut Vec<OutputEvent>) {
        if let Some(usage) = self.session_usage.take() {
            if !self.run_usage_emitted {
                self.run_usage_emitted = true;
                let update = SessionUpdate::Usage { scope: UsageScope::Run, usage };
                Envelope::default().emit(ctx, update, out);
            }
        }
    }
}

impl DroidDecoder {
    /// Push an event; any event but a thought ends the reasoning-dedupe window.
    fn push(&mut self, env: &Envelope, ctx: &DecodeContext, update: SessionUpdate, out: &mut Vec<OutputEvent>) {
        if !matches!(update, SessionUpdate::AgentThoughtChunk { .. }) {
            self.thought_keys.clear();
        }
        env.emit(ctx, update, out);
    }

    fn decode(
        &mut self,
        l: &Line<'_>,
        raw_line: &str,
        ctx: &mut DecodeContext,
        depth: usize,
        out: &mut Vec<OutputEvent>,
    ) -> LineOutcome {
        ctx.see_session(l.session_id.as_deref().or(l.session_id_camel.as_deref()));
        if l.jsonrpc.is_some() {
            return self.jsonrpc(l, ctx, depth, out);
        }
        let Some(kind) = l.kind.as_deref() else { return LineOutcome::UnknownType };
        let mut env = Envelope { timestamp: timestamp(l.timestamp), ..Envelope::default() };
        env.message_id = match kind {
            "message" | "assistant" | "reasoning" | "thinking" => l.id.as_deref().or(l.message_id.as_deref()),
            _ => l.message_id.as_deref(),
        }
        .filter(|s| !s.is_empty())
        .map(str::to_string);
        match kind {
            "system" => {
                if l.subtype.as_deref() == Some("init") && ctx.init_model.is_none() {
                    ctx.init_model = l.model.as_deref().filter(|m| !m.is_empty()).map(str::to_string);
                }
                LineOutcome::Decoded
            }
            "message" | "assistant" => {
                if l.role.as_deref().is_some_and(|r| r != "assistant") {
                    return LineOutcome::Decoded; // the prompt echo: ignored, as the peer does
                }
                let text = match l.text.as_deref() {
                    Some(t) => Some(t.to_string()),
                    None => message_text(l.content.or(l.message)),
                };
                match text {
                    Some(text) => {
                        if !text.is_empty() {
                            self.push(&env, ctx, SessionUpdate::message(text.clone()), out);
                            self.last_text = text;
                            self.streaming = None;
                        }
                        LineOutcome::Decoded
                    }
                    None => LineOutcome::UnexpectedShape,
                }
            }
            "user" => LineOutcome::Decoded,
            "reasoning" | "thinking" => {
                let Some(text) = l.text.as_deref().filter(|t| !t.is_empty()) else { return LineOutcome::Decoded };
                let key = l
                    .id
                    .as_deref()
                    .or(l.message_id.as_deref())
                    .map(|id| (id.to_string(), raw_text(l.block_index), text.to_string()));
                if let Some(key) = key {
                    if self.thought_keys.contains(&key) {
                        return LineOutcome::Decoded; // droid prints each reasoning block twice
                    }
                    self.thought_keys.push(key);
                }
                self.push(&env, ctx, SessionUpdate::thought(text), out);
                LineOutcome::Decoded
            }
            "assistant_text_delta" => {
                let Some(delta) = l.text_delta.as_deref().or(l.text.as_deref()).filter(|t| !t.is_empty()) else {
                    return LineOutcome::Decoded;
                };
                let msg = l.message_id.as_deref().map(str::to_string);
                if self.streaming.as_ref() != Some(&msg) {
                    self.last_text.clear();
                    self.streaming = Some(msg);
                }
                self.last_text.push_str(delta);
                self.push(&env, ctx, SessionUpdate::message(delta), out);
                LineOutcome::Decoded
            }
            "thinking_text_delta" => {
                let Some(delta) = l.text_delta.as_deref().or(l.text.as_deref()).filter(|t| !t.is_empty()) else {
                    return LineOutcome::Decoded;
                };
                if let Some(msg) = l.message_id.as_deref() {
                    let key = (msg.to_string(), raw_text(l.block_index), delta.to_string());
                    if self.thought_keys.last() == Some(&key) {
                        return LineOutcome::Decoded; // a re-sent delta
                    }
                    self.thought_keys.push(key);
                    self.thinking_streamed = Some(msg.to_string());
                }
                self.push(&env, ctx, SessionUpdate::thought(delta), out);
                LineOutcome::Decoded
            }
            "tool_call" | "tool_use" => self.tool_call_line(l, &env, ctx, out),
            "tool_result" => self.tool_result(l, &env, ctx, out),
            "tool_progress_update" | "tool_progress" => self.tool_progress(l, &env, ctx, out),
            "create_message" => self.create_message(l, &mut env, ctx, out),
            "completion" => {
                let final_text = l.final_text.as_deref();
                self.run_end(l, final_text, &env, ctx, out);
                LineOutcome::Decoded
            }
            "result" => {
                let text = lenient::<Str<'_>>(l.result).map(|s| s.0);
                if flag(l.is_error_snake).or(flag(l.is_error)) == Some(true) {
                    let message = text
                        .map(Cow::into_owned)
                        .filter(|t| !t.is_empty())
                        .or_else(|| error_message(l.error))
                        .unwrap_or_else(|| raw_line.to_string());
                    self.push(&env, ctx, SessionUpdate::error(message, true), out);
                    self.run_end(l, None, &env, ctx, out);
                } else {
                    self.run_end(l, text.as_deref(), &env, ctx, out);
                }
                LineOutcome::Decoded
            }
            "error" => {
                let message = lenient::<Str<'_>>(l.message)
                    .map(|s| s.0.into_owned())
                    .filter(|m| !m.is_empty())
                    .or_else(|| error_message(l.error))
                    .unwrap_or_else(|| raw_line.to_string());
                let mut extra = JsonObject::new();
                if let Some(source) = l.source.as_deref() {
                    extra.insert("source".to_string(), Value::String(source.to_string()));
                }
                if let Some(error_type) = l.error_type.as_deref() {
                    extra.insert("errorType".to_string(), Value::String(error_type.to_string()));
                }
                env.extra = (!extra.is_empty()).then_some(extra);
                // A stream-json error ends the run (exit 1); a JSON-RPC session reports errors
                // while it retries and stays open.
                let fatal = depth == 0;
                self.push(&env, ctx, SessionUpdate::error(message, fatal), out);
                LineOutcome::Decoded
            }
            "session_token_usage_changed" | "token_usage_update" => {
                if let Some(last) = lenient::<Map<String, Value>>(l.last_call_token_usage) {
                    let usage = rpc_usage(&last);
                    self.push(&env, ctx, SessionUpdate::Usage { scope: UsageScope::Call, usage }, out);
                }
                if let Some(total) = lenient::<Map<String, Value>>(l.token_usage) {
                    self.session_usage = Some(rpc_usage(&total));
                }
                LineOutcome::Decoded
            }
            "assistant_text_complete"
            | "thinking_text_complete"
            | "droid_working_state_changed"
            | "working_state_changed"
            | "permission_resolved"
            | "settings_updated"
            | "session_title_updated"
            | "mcp_status_changed"
            | "structured_output"
            | "hook"
            | "turn_complete" => LineOutcome::Decoded,
            k if k.starts_with("mission_") || k.starts_with("mcp_auth_") => LineOutcome::Decoded,
            _ => LineOutcome::UnknownType,
        }
    }

    fn jsonrpc(&mut self, l: &Line<'_>, ctx: &mut DecodeContext, depth: usize, out: &mut Vec<OutputEvent>) -> LineOutcome {
        let kind = match l.kind.as_deref() {
            Some(k) => k,
            None if l.method.is_some() && l.id.is_some() => "request",
            None if l.method.is_some() => "notification",
            None => "response",
        };
        match kind {
            "response" => {
                let result = lenient::<RpcResult<'_>>(l.result);
                if let Some(r) = &result {
                    ctx.see_session(r.session_id.as_deref().or(r.session_id_snake.as_deref()));
                }
                let env = Envelope::default();
                if let Some(raw) = l.error.filter(|e| e.get() != "null") {
                    let message = error_message(Some(raw)).unwrap_or_else(|| raw.get().to_string());
                    self.push(&env, ctx, SessionUpdate::error(message, true), out);
                }
                if let Some(text) = result.as_ref().and_then(|r| r.final_text.as_deref()) {
                    self.final_message(text, &env, ctx, out);
                }
                LineOutcome::Decoded
            }
            "notification" => {
                if l.method.as_deref() != Some("droid.session_notification") {
                    return LineOutcome::Decoded;
                }
                let Some(params) = lenient::<Params<'_>>(l.params) else { return LineOutcome::UnexpectedShape };
                ctx.see_session(params.session_id.as_deref());
                let Some(raw) = params.notification else { return LineOutcome::UnexpectedShape };
                if depth >= MAX_DEPTH {
                    return LineOutcome::UnexpectedShape;
                }
                match lenient::<Line<'_>>(Some(raw)) {
                    Some(inner) => self.decode(&inner, raw.get(), ctx, depth + 1, out),
                    None => LineOutcome::UnexpectedShape,
                }
            }
            "request" => LineOutcome::Decoded,
            _ => LineOutcome::UnknownType,
        }
    }

    /// `completion` / `result`: the final text when new, then the run total.
    fn run_end(&mut self, l: &Line<'_>, final_text: Option<&str>, env: &Envelope, ctx: &DecodeContext, out: &mut Vec<OutputEvent>) {
        if let Some(text) = final_text {
            self.final_message(text, env, ctx, out);
        }
        if let Some(usage) = lenient::<Map<String, Value>>(l.usage) {
            let mut extra_keys: Vec<(&str, Option<&RawValue>)> = vec![
                ("numTurns", l.num_turns),
                ("durationMs", l.duration_ms),
                ("num_turns", l.num_turns_snake),
                ("duration_ms", l.duration_ms_snake),
            ];
            extra_keys.retain(|(_, v)| v.is_some());
            let usage = run_usage(usage, &extra_keys);
            self.run_usage_emitted = true;
            self.push(env, ctx, SessionUpdate::Usage { scope: UsageScope::Run, usage }, out);
        }
    }

    /// The run's final text, unless it repeats the assistant text already emitted.
    fn final_message(&mut self, text: &str, env: &Envelope, ctx: &DecodeContext, out: &mut Vec<OutputEvent>) {
        if text.trim().is_empty() || text.trim() == self.last_text.trim() {
            return;
        }
        self.push(env, ctx, SessionUpdate::message(text), out);
        self.last_text = text.to_string();
        self.streaming = None;
    }

    fn tool_call_line(&mut self, l: &Line<'_>, env: &Envelope, ctx: &DecodeContext, out: &mut Vec<OutputEvent>) -> LineOutcome {
        let nested_raw = l.tool_use.or(l.tool_use_snake).filter(|r| r.get() != "null");
        let nested = match nested_raw {
            Some(raw) => match lenient::<Line<'_>>(Some(raw)) {
                Some(n) => Some(n),
                None => return LineOutcome::UnexpectedShape,
            },
            None => None,
        };
        let src = nested.as_ref().unwrap_or(l);
        let id = src
            .id
            .as_deref()
            .or(src.tool_use_id.as_deref())
            .or(src.tool_use_id_snake.as_deref())
            .filter(|s| !s.is_empty());
        let Some(id) = id else { return LineOutcome::UnexpectedShape };
        let name = src
            .tool_name
            .as_deref()
            .or(src.name.as_deref())
            .or(src.tool_name_snake.as_deref())
            .or(src.tool_id.as_deref())
            .filter(|s| !s.is_empty());
        let input = src.input.or(src.tool_input).or(src.arguments).or(src.parameters);
        self.tool_call(id, name, input, env, ctx, out);
        LineOutcome::Decoded
    }

    fn tool_call(
        &mut self,
        id: &str,
        name: Option<&str>,
        input: Option<&RawValue>,
        env: &Envelope,
        ctx: &DecodeContext,
        out: &mut Vec<OutputEvent>,
    ) {
        if self.calls.contains_key(id) {
            return; // announced already (a create_message repeats the streamed tool_use)
        }
        let raw_input = parse_input(input);
        let args = raw_input.as_ref().and_then(Value::as_object);
        let name_str = name.unwrap_or("");
        if normalize_name(Agent::Droid, name_str) == "todowrite" {
            if let Some(entries) = args.and_then(|a| todo_plan(a.get("todos"))) {
                self.calls.insert(id.to_string(), true);
                self.push(env, ctx, SessionUpdate::Plan { entries }, out);
                return;
            }
        }
        self.calls.insert(id.to_string(), false);
        let (title, content, locations) = describe(name_str, args);
        let call = ToolCall {
            tool_call_id: id.to_string(),
            title,
            tool_name: name.map(str::to_string),
            kind: tool_kind(Agent::Droid, name_str),
            status: ToolCallStatus::Pending,
            raw_input,
            content: (!content.is_empty()).then_some(content),
            locations: (!locations.is_empty()).then_some(locations),
        };
        self.push(env, ctx, SessionUpdate::ToolCall(call), out);
    }

    fn tool_result(&mut self, l: &Line<'_>, env: &Envelope, ctx: &DecodeContext, out: &mut Vec<OutputEvent>) -> LineOutcome {
        let id = l
            .tool_use_id
            .as_deref()
            .or(l.tool_use_id_snake.as_deref())
            .or(l.id.as_deref())
            .filter(|s| !s.is_empty());
        let Some(id) = id else { return LineOutcome::UnexpectedShape };
        let error = l.error.filter(|e| e.get() != "null");
        let failed = flag(l.is_error).or(flag(l.is_error_snake)).unwrap_or(error.is_some());
        let error_object = lenient::<Map<String, Value>>(error);
        let error_text = error_message(error);
        let value = l.value.filter(|v| v.get() != "null");
        let content = l.content.filter(|v| v.get() != "null");
        let (blocks, raw_output) = if let (true, Some(text)) = (failed, &error_text) {
            (vec![ToolCallContent::text(text.clone())], error_object.map(Value::Object))
        } else if let Some(value) = value {
            match lenient::<Str<'_>>(Some(value)) {
                Some(Str(text)) => (text_blocks(&text), structured(&text)),
                None => (vec![ToolCallContent::text(value.get())], serde_json::from_str(value.get()).ok()),
            }
        } else if let Some(content) = content {
            result_blocks(content)
        } else if let Some(text) = error_text {
            (vec![ToolCallContent::text(text)], error_object.map(Value::Object))
        } else {
            (Vec::new(), None)
        };
        if self.calls.get(id) == Some(&true) && !failed {
            return LineOutcome::Decoded; // the plan already said it
        }
        let mut update = ToolCallUpdate::new(id);
        update.status = Some(if failed { ToolCallStatus::Failed } else { ToolCallStatus::Completed });
        update.content = (!blocks.is_empty()).then_some(blocks);
        update.raw_output = raw_output;
        self.push(env, ctx, SessionUpdate::ToolCallUpdate(update), out);
        LineOutcome::Decoded
    }

    fn tool_progress(&mut self, l: &Line<'_>, env: &Envelope, ctx: &DecodeContext, out: &mut Vec<OutputEvent>) -> LineOutcome {
        let id = l.tool_use_id.as_deref().or(l.tool_use_id_snake.as_deref()).or(l.id.as_deref()).filter(|s| !s.is_empty());
        let Some(id) = id else { return LineOutcome::UnexpectedShape };
        let text = lenient::<Str<'_>>(l.content).map(|s| s.0.into_owned()).filter(|t| !t.is_empty()).or_else(|| {
            let update = lenient::<Map<String, Value>>(l.update)?;
            ["text", "status", "details"]
                .iter()
                .find_map(|k| update.get(*k).and_then(Value::as_str).filter(|s| !s.is_empty()))
                .map(str::to_string)
        });
        let mut update = ToolCallUpdate::new(id);
        update.status = Some(ToolCallStatus::InProgress);
        update.content = text.map(|t| vec![ToolCallContent::text(t)]);
        self.push(env, ctx, SessionUpdate::ToolCallUpdate(update), out);
        LineOutcome::Decoded
    }

    fn create_message(&mut self, l: &Line<'_>, env: &mut Envelope, ctx: &DecodeContext, out: &mut Vec<OutputEvent>) -> LineOutcome {
        let Some(message) = lenient::<CreatedMessage<'_>>(l.message) else { return LineOutcome::UnexpectedShape };
        if message.role.as_deref() != Some("assistant") {
            return LineOutcome::Decoded; // the user's message: ignored, as the peer does
        }
        let msg_id = message.id.as_deref().or(l.message_id.as_deref()).filter(|s| !s.is_empty()).map(str::to_string);
        if msg_id.is_some() {
            env.message_id = msg_id.clone();
        }
        let text_streamed = msg_id.is_some() && self.streaming.as_ref() == Some(&msg_id);
        let thinking_streamed = msg_id.is_some() && self.thinking_streamed == msg_id;
        let blocks = lenient::<Vec<&RawValue>>(message.content).unwrap_or_default();
        let mut texts = String::new();
        for raw in blocks {
            let Some(block) = lenient::<Block<'_>>(Some(raw)) else { continue };
            match block.kind.as_deref() {
                Some("text") => {
                    if let Some(text) = block.text.as_deref().filter(|t| !t.is_empty()) {
                        texts.push_str(text);
                        if !text_streamed && text.trim() != self.last_text.trim() {
                            self.push(env, ctx, SessionUpdate::message(text), out);
                        }
                    }
                }
                Some("thinking") => {
                    let text = block.thinking.as_deref().or(block.text.as_deref()).filter(|t| !t.is_empty());
                    if let (Some(text), false) = (text, thinking_streamed) {
                        self.push(env, ctx, SessionUpdate::thought(text), out);
                    }
                }
                Some("tool_use") => {
                    if let Some(id) = block.id.as_deref().filter(|s| !s.is_empty()) {
                        self.tool_call(id, block.name.as_deref(), block.input, env, ctx, out);
                    }
                }
                _ => {}
            }
        }
        if !texts.is_empty() {
            self.last_text = texts;
            self.streaming = None;
        }
        LineOutcome::Decoded
    }
}

/// `true` / `false` of a raw JSON boolean.
fn flag(raw: Option<&RawValue>) -> Option<bool> {
    raw.and_then(|r| r.get().parse::<bool>().ok())
}

/// A raw value as text for a dedupe key (`""` when absent).
fn raw_text(raw: Option<&RawValue>) -> String {
    raw.map(|r| r.get().to_string()).unwrap_or_default()
}

/// The text of `error`: a string, or an object's `message`.
fn error_message(raw: Option<&RawValue>) -> Option<String> {
    let raw = raw?;
    if raw.get().starts_with('"') {
        return lenient::<Str<'_>>(Some(raw)).map(|s| s.0.into_owned()).filter(|s| !s.is_empty());
    }
    let obj = lenient::<Map<String, Value>>(Some(raw))?;
    obj.get("message").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string)
}

/// The text of a message's `content`: a string, or its text blocks joined.
fn message_text(raw: Option<&RawValue>) -> Option<String> {
    let raw = raw?;
    if raw.get().starts_with('"') {
        return lenient::<Str<'_>>(Some(raw)).map(|s| s.0.into_owned());
    }
    let blocks = lenient::<Vec<&RawValue>>(Some(raw))?;
    Some(
        blocks
            .into_iter()
            .filter_map(|b| lenient::<Block<'_>>(Some(b)))
            .filter(|b| b.kind.as_deref() == Some("text"))
            .filter_map(|b| b.text)
            .collect::<Vec<_>>()
            .concat(),
    )
}

/// A text result as content (no block for an empty text).
fn text_blocks(text: &str) -> Vec<ToolCallContent> {
    if text.is_empty() { Vec::new() } else { vec![ToolCallContent::text(text)] }
}

/// `value` text that is JSON of an object or array: droid's structured record.
fn structured(text: &str) -> Option<Value> {
    let t = text.trim_start();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return None;
    }
    serde_json::from_str::<Value>(text).ok().filter(|v| v.is_object() || v.is_array())
}

/// A tool result's `content`: a string, text/image blocks, or other JSON (kept as `rawOutput`).
fn result_blocks(raw: &RawValue) -> (Vec<ToolCallContent>, Option<Value>) {
    match raw.get().as_bytes().first() {
        Some(b'"') => match lenient::<Str<'_>>(Some(raw)) {
            Some(Str(text)) => (text_blocks(&text), None),
            None => (Vec::new(), None),
        },
        Some(b'[') => {
            let mut blocks = Vec::new();
            for item in lenient::<Vec<&RawValue>>(Some(raw)).unwrap_or_default() {
                let Some(block) = lenient::<Block<'_>>(Some(item)) else { continue };
                match block.kind.as_deref() {
                    Some("text") => {
                        if let Some(text) = block.text.filter(|t| !t.is_empty()) {
                            blocks.push(ToolCallContent::text(text));
                        }
                    }
                    Some("image") => {
                        let source = lenient::<ImageSource<'_>>(block.source);
                        let data = block.data.or_else(|| source.as_ref().and_then(|s| s.data.clone()));
                        let mime = block.mime_type.or_else(|| source.as_ref().and_then(|s| s.media_type.clone()));
                        let uri = source.as_ref().and_then(|s| s.url.clone());
                        if data.is_some() || uri.is_some() {
                            blocks.push(ToolCallContent::Content {
                                content: ContentBlock::Image(ImageContent {
                                    data: data.map(Cow::into_owned).unwrap_or_default(),
                                    mime_type: mime.map(Cow::into_owned).unwrap_or_default(),
                                    uri: uri.map(Cow::into_owned),
                                }),
                            });
                        }
                    }
                    _ => {}
                }
            }
            (blocks, None)
        }
        _ => (vec![ToolCallContent::text(raw.get())], serde_json::from_str(raw.get()).ok()),
    }
}

/// The tool input: an object, or a JSON string holding one (else the string itself).
fn parse_input(raw: Option<&RawValue>) -> Option<Value> {
    let raw = raw.filter(|r| r.get() != "null")?;
    if raw.get().starts_with('"') {
        let Str(text) = lenient::<Str<'_>>(Some(raw))?;
        return Some(match serde_json::from_str::<Value>(&text) {
            Ok(v @ Value::Object(_)) => v,
            _ => Value::String(text.into_owned()),
        });
    }
    serde_json::from_str(raw.get()).ok()
}

/// A line's timestamp as ISO 8601: epoch milliseconds (seconds below 10^11) are converted, a
/// string is kept as printed.
fn timestamp(raw: Option<&RawValue>) -> Option<String> {
    let raw = raw?;
    if raw.get().starts_with('"') {
        return lenient::<Str<'_>>(Some(raw)).map(|s| s.0.into_owned()).filter(|s| !s.is_empty());
    }
    let n = raw.get().parse::<f64>().ok()?;
    iso_from_epoch(n)
}

/// Epoch milliseconds (or seconds, below 10^11) as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn iso_from_epoch(n: f64) -> Option<String> {
    if !(0.0..=1e15).contains(&n) {
        return None;
    }
    let ms = if n < 1e11 { (n * 1000.0).round() } else { n.round() } as i64;
    let (secs, milli) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    let (days, sod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's days → civil date.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    Some(format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    ))
}

/// The `completion` / `result` usage (see the module docs for the arithmetic).
fn run_usage(mut usage: Map<String, Value>, more: &[(&str, Option<&RawValue>)]) -> TokenUsage {
    let mut take = |k: &str| usage.remove(k).and_then(|v| v.as_u64());
    let input = take("input_tokens");
    let output = take("output_tokens");
    let read = take("cache_read_input_tokens");
    let write = usage.get("cache_creation_input_tokens").and_then(Value::as_u64);
    for (key, raw) in more {
        if let Some(v) = raw.and_then(|r| serde_json::from_str::<Value>(r.get()).ok()) {
            usage.insert((*key).to_string(), v);
        }
    }
    TokenUsage {
        prompt_tokens: input.map(|i| i + read.unwrap_or(0) + write.unwrap_or(0)),
        completion_tokens: output,
        cached_tokens: read,
        cost_usd: None,
        extra: (!usage.is_empty()).then_some(usage),
    }
}

/// A JSON-RPC `tokenUsage` / `lastCallTokenUsage` (camelCase counters, same arithmetic).
fn rpc_usage(usage: &Map<String, Value>) -> TokenUsage {
    let n = |k: &str| usage.get(k).and_then(Value::as_u64);
    let (input, output, read, write) =
        (n("inputTokens"), n("outputTokens"), n("cacheReadTokens"), n("cacheCreationTokens"));
    let extra: JsonObject = usage
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "inputTokens" | "outputTokens" | "cacheReadTokens"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    TokenUsage {
        prompt_tokens: input.map(|i| i + read.unwrap_or(0) + write.unwrap_or(0)),
        completion_tokens: output,
        cached_tokens: read,
        cost_usd: None,
        extra: (!extra.is_empty()).then_some(extra),
    }
}

/// A TodoWrite `todos`: an array of `{content, status, priority}`, or droid's numbered text list
/// `1. [in_progress] Do x`. `None` when it does not parse (the call stays a tool call).
fn todo_plan(todos: Option<&Value>) -> Option<Vec<PlanEntry>> {
    match todos? {
        Value::Array(items) => {
            let entries: Vec<PlanEntry> = items
                .iter()
                .filter_map(|t| {
                    let t = t.as_object()?;
                    let content = t.get("content").and_then(Value::as_str).filter(|s| !s.is_empty())?;
                    let status = plan_status(t.get("status").and_then(Value::as_str).unwrap_or(""));
                    let priority = match t.get("priority").and_then(Value::as_str) {
                        Some("high") => PlanEntryPriority::High,
                        Some("low") => PlanEntryPriority::Low,
                        _ => PlanEntryPriority::Medium,
                    };
                    Some(PlanEntry { content: content.to_string(), status, priority })
                })
                .collect();
            (items.is_empty() || !entries.is_empty()).then_some(entries)
        }
        Value::String(text) => plan_from_text(text),
        _ => None,
    }
}

fn plan_status(s: &str) -> PlanEntryStatus {
    match s.trim().to_ascii_lowercase().as_str() {
        "in_progress" | "in-progress" | "in progress" => PlanEntryStatus::InProgress,
        "completed" | "done" | "x" => PlanEntryStatus::Completed,
        _ => PlanEntryStatus::Pending,
    }
}

/// `1. [in_progress] Write the plan` lines (numbered, bulleted or bare); every non-empty line
/// must have the `[status]` form.
fn plan_from_text(text: &str) -> Option<Vec<PlanEntry>> {
    let mut entries = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let rest = line.trim_start_matches(|c: char| c.is_ascii_digit());
        let rest = if rest.len() < line.len() {
            rest.strip_prefix('.').or_else(|| rest.strip_prefix(')'))?
        } else {
            rest.strip_prefix("- ").or_else(|| rest.strip_prefix("* ")).unwrap_or(rest)
        };
        let rest = rest.trim_start().strip_prefix('[')?;
        let (status, content) = rest.split_once(']')?;
        let content = content.trim();
        if content.is_empty() {
            return None;
        }
        entries.push(PlanEntry {
            content: content.to_string(),
            status: plan_status(status),
            priority: PlanEntryPriority::Medium,
        });
    }
    (!entries.is_empty()).then_some(entries)
}

/// Title, content (diffs) and locations of a call from its name and input.
fn describe(name: &str, args: Option<&Map<String, Value>>) -> (String, Vec<ToolCallContent>, Vec<ToolCallLocation>) {
    let get = |k: &str| args.and_then(|a| a.get(k)).and_then(Value::as_str).filter(|s| !s.is_empty());
    let path = get("file_path").or_else(|| get("path")).or_else(|| get("filePath")).or_else(|| get("absolute_path"));
    let dir = get("directory_path").or_else(|| get("folder"));
    let mut content = Vec::new();
    let mut locations = Vec::new();
    if let Some(p) = path.or(dir) {
        locations.push(ToolCallLocation::path(p));
    }
    let file = path.unwrap_or("file");
    let key = normalize_name(Agent::Droid, name);
    let title = match key.as_str() {
        "read" => format!("Read {file}"),
        "ls" => dir.or(path).map(|d| format!("List {d}")).unwrap_or_else(|| "List directory".to_string()),
        "glob" => {
            let patterns = match args.and_then(|a| a.get("patterns")) {
                Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "),
                _ => get("pattern").unwrap_or("").to_string(),
            };
            if patterns.is_empty() { "Find files".to_string() } else { format!("Find {patterns}") }
        }
        "grep" => get("pattern").map(|p| format!("grep \"{p}\"")).unwrap_or_else(|| "grep".to_string()),
        "create" | "write" => {
            if let (Some(p), Some(text)) = (path, get_any_str(args, "content")) {
                content.push(ToolCallContent::Diff(DiffContent { path: p.to_string(), old_text: None, new_text: text }));
            }
            format!("{} {file}", if key == "create" { "Create" } else { "Write" })
        }
        "edit" | "multiedit" => {
            if let Some(p) = path {
                let list: Vec<&Map<String, Value>> = match args.and_then(|a| a.get("edits")) {
                    Some(Value::Array(items)) => items.iter().filter_map(Value::as_object).collect(),
                    _ => args.into_iter().collect(),
                };
                for edit in list {
                    let old = edit.get("old_str").or_else(|| edit.get("old_string")).and_then(Value::as_str);
                    let new = edit.get("new_str").or_else(|| edit.get("new_string")).and_then(Value::as_str);
                    if let (Some(old), Some(new)) = (old, new) {
                        content.push(ToolCallContent::Diff(DiffContent {
                            path: p.to_string(),
                            old_text: Some(old.to_string()),
                            new_text: new.to_string(),
                        }));
                    }
                }
            }
            format!("Edit {file}")
        }
        "applypatch" => "Apply patch".to_string(),
        "execute" | "executecli" | "bash" => get("command").map(command_title).unwrap_or_else(|| "Run command".to_string()),
        "fetchurl" | "webfetch" => get("url").map(|u| format!("Fetch {u}")).unwrap_or_else(|| "Web fetch".to_string()),
        "websearch" => get("query").map(|q| format!("\"{q}\"")).unwrap_or_else(|| "Web search".to_string()),
        "task" => get("description").unwrap_or("Subagent task").to_string(),
        "todowrite" => "Update todos".to_string(),
        "toolsearch" => get("query").map(|q| format!("Search tools: {q}")).unwrap_or_else(|| "Search tools".to_string()),
        "skill" => get("skill").or_else(|| get("name")).map(|s| format!("Skill {s}")).unwrap_or_else(|| "Skill".to_string()),
        "taskoutput" => task_title("Task output", args),
        "taskstop" => task_title("Stop task", args),
        "exitspecmode" => "Exit spec mode".to_string(),
        "exitplanmode" => "Exit plan mode".to_string(),
        _ => match name.split_once("___") {
            Some((server, tool)) if !server.is_empty() && !tool.is_empty() => format!("{server}: {tool}"),
            _ if name.is_empty() => "Tool call".to_string(),
            _ => match path.or_else(|| get("command")).or_else(|| get("url")) {
                Some(what) => format!("{name} {what}"),
                None => name.to_string(),
            },
        },
    };
    (truncate_chars(&title, MAX_TITLE_CHARS), content, locations)
}

fn get_any_str(args: Option<&Map<String, Value>>, key: &str) -> Option<String> {
    args.and_then(|a| a.get(key)).and_then(Value::as_str).map(str::to_string)
}

fn task_title(label: &str, args: Option<&Map<String, Value>>) -> String {
    let id = args.and_then(|a| ["task_id", "taskId", "id"].iter().find_map(|k| a.get(*k).and_then(Value::as_str)));
    match id {
        Some(id) if !id.is_empty() => format!("{label} {id}"),
        _ => label.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{Agent, Decoder};

    fn run(input: &str) -> Vec<serde_json::Value> {
        let mut d = Decoder::new(Agent::Droid);
        let mut events = d.feed(input.as_bytes());
        events.extend(d.finish());
        events.iter().map(|e| serde_json::to_value(e).unwrap()).collect()
    }

    #[test]
    fn epoch_milliseconds_become_iso_8601() {
        assert_eq!(iso_from_epoch(1_796_221_399_731.0).unwrap(), "2026-12-02T14:23:19.731Z");
        assert_eq!(iso_from_epoch(0.0).unwrap(), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_from_epoch(951_782_400.0).unwrap(), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso_from_epoch(f64::NAN), None);
    }

    #[test]
    fn numbered_todo_text_parses_into_a_plan() {
        let entries = plan_from_text("1. [in_progress] Write the plan\n2. [pending] Ship it\n3. [completed] Read docs").unwrap();
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[0].status, PlanEntryStatus::InProgress);
        assert_eq!(entries[1].content, "Ship it");
        assert_eq!(entries[2].status, PlanEntryStatus::Completed);
        assert!(plan_from_text("just some words").is_none());
        assert!(plan_from_text("1. [pending]").is_none());
    }

    #[test]
    fn reasoning_printed_twice_is_emitted_once_but_a_new_id_emits() {
        let ev = run(concat!(
            r#"{"type":"reasoning","id":"m1","text":"think","session_id":"s"}"#,
            "\n",
            r#"{"type":"reasoning","id":"m1","text":"think","session_id":"s"}"#,
            "\n",
            r#"{"type":"reasoning","id":"m2","text":"think","session_id":"s"}"#,
            "\n"
        ));
        assert_eq!(ev.len(), 2);
        assert_eq!(ev[1]["messageId"], "m2");
    }

    #[test]
    fn completion_usage_adds_cache_to_the_prompt() {
        let ev = run(concat!(
            r#"{"type":"completion","finalText":"x","numTurns":4,"durationMs":9,"session_id":"s","usage":{"input_tokens":1100,"output_tokens":270,"cache_read_input_tokens":4300,"cache_creation_input_tokens":5,"factory_credits":0,"ttft_ms":1.5}}"#,
            "\n"
        ));
        let usage = &ev[1]["update"]["usage"];
        assert_eq!(usage["promptTokens"], 5405);
        assert_eq!(usage["cachedTokens"], 4300);
        assert_eq!(usage["completionTokens"], 270);
        assert_eq!(usage["extra"]["numTurns"], 4);
        assert_eq!(usage["extra"]["cache_creation_input_tokens"], 5);
        assert_eq!(usage["extra"]["ttft_ms"], 1.5);
    }
}
