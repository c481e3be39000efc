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
//! | `tool_call` of `TodoWrite` with `todos` as an array, or as a numbered text list `1. [in_progress] …` | `plan` (status `in_progress`/`completed`/`done` kept, else pending; priority `high`/`low` kept, else medium) instead of `tool_call`; its successful result is swallowed; a refused call (a failed result) is announced then: its `tool_call`, the failed `tool_call_update`, and a `plan` re-stating the list as it was before the call ([`super::task_list`]). A `todos` that does not parse stays a `tool_call` |
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
//! or is itself non-string JSON; a `content` that is neither text nor a list of blocks. A plain text `value` (command output,
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
//!
//! **Golden cases** (`tests/golden/droid/`; `s*` are real captures, `e-*` hand-written from the
//! captured shapes):
//!
//! | case | pins |
//! |---|---|
//! | `e-reasoning-duplicated` | s5/s10: every reasoning printed twice → once; the same thought under a new id emits |
//! | `e-parallel-tools` | s7: both calls, then both results |
//! | `e-failing-execute` | s9: exit 2 → `failed`, `error.message` verbatim, the error object as `rawOutput` |
//! | `e-mcp` | s12 (+ wrong name): ToolSearch, `kb___lookup` ok, `kb___lookup_fail` failed |
//! | `e-todo-plan` | s4: TodoWrite with a text list → plan; the tool is unavailable: the call announced, failed, the empty list restored; the array shape → plan, success swallowed; unparsable text stays a tool call |
//! | `e-completion-repeats-text` | the completion's text is not repeated (whitespace ignored); run usage |
//! | `e-completion-only-text` | a completion whose text was never printed is emitted; no usage printed, none emitted |
//! | `e-errors-401`, `e-errors-stream-broken` | s6/s14: `agent_loop` then `cli` `Exec failed`, both fatal, `source` in `extra`; a line without a timestamp has none |
//! | `e-image` | s13: `[object Object],[object Object]` kept as text; content blocks with a base64 image → image block |
//! | `e-many-tools` | s15: LS, Glob, Grep, Create, TaskOutput, Skill, Task, ApplyPatch, `execute_cli` (execute) |
//! | `e-multi-turn-usage` | s16: one run total, input excluding the cached share |
//! | `e-result-json` | `droid exec -o json`: result success (message + usage) and failure (fatal error) |
//! | `e-jsonrpc` | stream-jsonrpc: session response, deltas, re-sent thinking delta dropped, create_message repeating streamed text and tool_use, progress, result, per-call usage, non-fatal error notification, permission request, error response, run total at the end |
//! | `e-odd-lines` | non-objects, invalid JSON, unknown type, orphan and early results, a call without id, a null `toolUse`, a message without text, an empty result value |
//! | `e-no-final-result` | `s2-bash` without its `completion` line: replayed (exit 0) the run fails (`no_final_result`, decisions §1) |

mod describe;
mod wire;

use self::describe::*;
use self::wire::*;

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::Value;

use crate::decode::context::{DecodeContext, Envelope};
use crate::decode::task_list::TaskListCalls;
use crate::decode::{Agent, HarnessDecoder, LineOutcome};
use crate::event::{
    ContentBlock, ImageContent, JsonObject, OutputEvent, RawJson, SessionUpdate, SharedStr, TokenUsage, ToolCall,
    ToolCallContent, ToolCallStatus, ToolCallUpdate, UsageScope,
};
use crate::json::borrowed::unescape_literal;
#[cfg(test)]
use crate::json::in_place::parse_line_into;
use crate::json::raw_record::{read_raw_json, value_raw_json};
use crate::json::scan::json_of;
use crate::json::tree::{Entries, Json};
use crate::time::IsoMillis;
use crate::tools::{normalize_name, tool_kind};

/// How deep JSON-RPC envelopes are unwrapped.
const MAX_DEPTH: usize = 4;

/// Stateful droid line decoder.
#[derive(Debug, Default)]
pub(crate) struct DroidDecoder {
    /// Announced tool calls by id: `true` when the call became a plan (TodoWrite).
    calls: HashMap<String, bool>,
    /// The TodoWrite calls, held for a refusal.
    task_list: TaskListCalls,
    /// The last assistant text emitted: a whole message, or the deltas of a streamed message.
    last_text: LastText,
    /// While `last_text` accumulates deltas: the message they belong to.
    streaming: Option<Option<String>>,
    /// The message whose thinking was streamed as deltas.
    thinking_streamed: Option<String>,
    /// The thoughts emitted since the last other event (reasoning dedupe), by key.
    thought_keys: ThoughtKeys,
    /// The run total came from a `completion`/`result` line.
    run_usage_emitted: bool,
    /// The latest cumulative session usage from JSON-RPC notifications, emitted at the end.
    session_usage: Option<TokenUsage>,
}

/// The last assistant text emitted (a whole message, or the deltas of a streamed one), to skip
/// the same text printed again — kept up to [`MAX_ANSWER_BYTES`](crate::answer::MAX_ANSWER_BYTES):
/// past that it is dropped, and a repeat of so long a text is emitted again rather than risk
/// skipping a different one (it grew with every delta: 100 MB of deltas took 250 MB).
#[derive(Debug, Default)]
struct LastText {
    text: String,
    cut: bool,
}

impl LastText {
    fn clear(&mut self) {
        self.text.clear();
        self.cut = false;
    }

    fn push(&mut self, more: &str) {
        if self.cut {
            return;
        }
        if self.text.len() + more.len() > crate::answer::MAX_ANSWER_BYTES {
            self.cut = true;
            self.text = String::new();
            return;
        }
        self.text.push_str(more);
    }

    fn set(&mut self, text: &str) {
        self.clear();
        self.push(text);
    }

    /// Whether `text` is this text again (blanks around aside).
    fn same(&self, text: &str) -> bool {
        !self.cut && text.trim() == self.text.trim()
    }
}

/// A thought's key: its message id, block index and text, kept as a 64-bit digest (a long run
/// of reasoning lines kept every text and searched them all for each line: quadratic, and the
/// texts' size in memory).
#[derive(Debug, Default)]
struct ThoughtKeys {
    seen: std::collections::HashSet<u64>,
    last: Option<u64>,
}

impl ThoughtKeys {
    fn key(id: &str, block: &str, text: &str) -> u64 {
        use std::hash::{Hash, Hasher};
        // Fixed keys: the same thought gives the same digest in every run.
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (id, block, text).hash(&mut h);
        h.finish()
    }

    fn contains(&self, key: u64) -> bool {
        self.seen.contains(&key)
    }

    fn is_last(&self, key: u64) -> bool {
        self.last == Some(key)
    }

    fn push(&mut self, key: u64) {
        self.seen.insert(key);
        self.last = Some(key);
    }

    fn clear(&mut self) {
        self.seen.clear();
        self.last = None;
    }
}

impl HarnessDecoder for DroidDecoder {
    fn final_record(&self) -> Option<&'static str> {
        Some("`completion` line")
    }

    fn decode_line(&mut self, line: &str, ctx: &mut DecodeContext, out: &mut Vec<OutputEvent>) -> LineOutcome {
        let mut parsed = Line::default();
        match parse_one_pass(line, &mut parsed) {
            Ok(()) => self.decode(&mut parsed, line, ctx, 0, out),
            Err(outcome) => outcome,
        }
    }

    fn finish(&mut self, ctx: &mut DecodeContext, out: &mut Vec<OutputEvent>) {
        if let Some(usage) = self.session_usage.take() {
            if !self.run_usage_emitted {
                self.run_usage_emitted = true;
                let update = SessionUpdate::Usage { scope: UsageScope::Run, usage };
                Envelope::NONE.emit(ctx, update, out);
            }
        }
    }
}

/// The envelope of an event: shared while the line may emit more, or the line's own (moved into
/// its last event instead of copied).
enum Env<'e> {
    Last(Envelope),
    Shared(&'e Envelope),
}

impl DroidDecoder {
    /// Push an event; any event but a thought ends the reasoning-dedupe window.
    fn push(&mut self, env: &Envelope, ctx: &DecodeContext, update: SessionUpdate, out: &mut Vec<OutputEvent>) {
        self.push_env(Env::Shared(env), ctx, update, out);
    }

    /// Push a line's last event, moving the envelope into it.
    fn push_last(&mut self, env: Envelope, ctx: &DecodeContext, update: SessionUpdate, out: &mut Vec<OutputEvent>) {
        self.push_env(Env::Last(env), ctx, update, out);
    }

    fn push_env(&mut self, env: Env<'_>, ctx: &DecodeContext, update: SessionUpdate, out: &mut Vec<OutputEvent>) {
        if !matches!(update, SessionUpdate::AgentThoughtChunk { .. }) {
            self.thought_keys.clear();
        }
        match env {
            Env::Last(env) => env.emit_last(ctx, update, out),
            Env::Shared(env) => env.emit(ctx, update, out),
        }
    }

    fn decode(
        &mut self,
        l: &mut Line<'_>,
        raw_line: &str,
        ctx: &mut DecodeContext,
        depth: usize,
        out: &mut Vec<OutputEvent>,
    ) -> LineOutcome {
        ctx.see_session(l.session_id.as_deref().or(l.session_id_camel.as_deref()));
        if l.jsonrpc.is_some() {
            return self.jsonrpc(l, ctx, depth, out);
        }
        let Some(kind) = l.kind.take() else { return LineOutcome::UnknownType };
        // Lines that never emit an event: no envelope built for them.
        match kind.as_ref() {
            "system" => {
                if l.subtype.as_deref() == Some("init") && ctx.init_model.is_none() {
                    ctx.init_model = l.model.as_deref().filter(|m| !m.is_empty()).map(SharedStr::from);
                }
                return LineOutcome::Decoded;
            }
            // The prompt echo: ignored, as the peer does.
            "message" | "assistant" if l.role.as_deref().is_some_and(|r| r != "assistant") => {
                return LineOutcome::Decoded;
            }
            "user" => return LineOutcome::Decoded,
            _ => {}
        }
        let mut env = Envelope { timestamp: timestamp(l.timestamp), ..Envelope::default() };
        env.message_id = match kind.as_ref() {
            "message" | "assistant" | "reasoning" | "thinking" => l.id.as_deref().or(l.message_id.as_deref()),
            _ => l.message_id.as_deref(),
        }
        .filter(|s| !s.is_empty())
        .map(|m| ctx.message_ids.share(m));
        match kind.as_ref() {
            "message" | "assistant" => {
                let text = match l.text.take() {
                    Some(t) => Some(t.into_owned()),
                    None => message_text(l.content.take()),
                };
                match text {
                    Some(text) => {
                        if !text.is_empty() {
                            self.last_text.set(&text);
                            self.streaming = None;
                            self.push_last(env, ctx, SessionUpdate::message(text), out);
                        }
                        LineOutcome::Decoded
                    }
                    None => LineOutcome::UnexpectedShape,
                }
            }
            "reasoning" | "thinking" => {
                let Some(text) = l.text.take().filter(|t| !t.is_empty()) else { return LineOutcome::Decoded };
                let id = l.id.as_deref().or(l.message_id.as_deref());
                if let Some(id) = id {
                    let key = ThoughtKeys::key(id, &raw_text(l.block_index), &text);
                    if self.thought_keys.contains(key) {
                        return LineOutcome::Decoded; // droid prints each reasoning block twice
                    }
                    self.thought_keys.push(key);
                }
                self.push_last(env, ctx, SessionUpdate::thought(text), out);
                LineOutcome::Decoded
            }
            "assistant_text_delta" => {
                let Some(delta) = l.text_delta.take().or(l.text.take()).filter(|t| !t.is_empty()) else {
                    return LineOutcome::Decoded;
                };
                let msg = l.message_id.as_deref().map(str::to_string);
                if self.streaming.as_ref() != Some(&msg) {
                    self.last_text.clear();
                    self.streaming = Some(msg);
                }
                self.last_text.push(&delta);
                self.push_last(env, ctx, SessionUpdate::message(delta), out);
                LineOutcome::Decoded
            }
            "thinking_text_delta" => {
                let Some(delta) = l.text_delta.take().or(l.text.take()).filter(|t| !t.is_empty()) else {
                    return LineOutcome::Decoded;
                };
                if let Some(msg) = l.message_id.as_deref() {
                    let key = ThoughtKeys::key(msg, &raw_text(l.block_index), &delta);
                    if self.thought_keys.is_last(key) {
                        return LineOutcome::Decoded; // a re-sent delta
                    }
                    self.thought_keys.push(key);
                    self.thinking_streamed = Some(msg.to_string());
                }
                self.push_last(env, ctx, SessionUpdate::thought(delta), out);
                LineOutcome::Decoded
            }
            "tool_call" | "tool_use" => self.tool_call_line(l, env, ctx, out),
            "tool_result" => self.tool_result(l, env, ctx, out),
            "tool_progress_update" | "tool_progress" => self.tool_progress(l, env, ctx, out),
            "create_message" => self.create_message(l, &mut env, ctx, out),
            "completion" => {
                ctx.final_result_seen = true;
                let final_text = l.final_text.take();
                self.run_end(l, final_text.as_deref(), env, ctx, out);
                LineOutcome::Decoded
            }
            "result" => {
                ctx.final_result_seen = true;
                let text = match l.result.take() {
                    Some(Val::Str(s)) => Some(s),
                    _ => None,
                };
                if flag(l.is_error_snake).or(flag(l.is_error)) == Some(true) {
                    let message = text
                        .map(Cow::into_owned)
                        .filter(|t| !t.is_empty())
                        .or_else(|| l.error.take().and_then(|e| error_parts(e).0))
                        .unwrap_or_else(|| raw_line.to_string());
                    self.push(&env, ctx, SessionUpdate::error(message, true), out);
                    self.run_end(l, None, env, ctx, out);
                } else {
                    self.run_end(l, text.as_deref(), env, ctx, out);
                }
                LineOutcome::Decoded
            }
            "error" => {
                let message = match l.message.take() {
                    Some(MessageField::Str(m)) if !m.is_empty() => Some(m.into_owned()),
                    _ => None,
                }
                .or_else(|| l.error.take().and_then(|e| error_parts(e).0))
                .unwrap_or_else(|| raw_line.to_string());
                let mut extra = JsonObject::new();
                if let Some(source) = l.source.as_deref() {
                    extra.insert("source".to_string(), Value::String(source.to_string()));
                }
                if let Some(error_type) = l.error_type.as_deref() {
                    extra.insert("errorType".to_string(), Value::String(error_type.to_string()));
                }
                env.extra = (!extra.is_empty()).then(|| RawJson::from_value(&Value::Object(extra)));
                // A stream-json error ends the run (exit 1); a JSON-RPC session reports errors
                // while it retries and stays open.
                let fatal = depth == 0;
                self.push_last(env, ctx, SessionUpdate::error(message, fatal), out);
                LineOutcome::Decoded
            }
            "session_token_usage_changed" | "token_usage_update" => {
                if let Some(last) = l.last_call_token_usage.take().and_then(Val::into_object) {
                    let usage = rpc_usage(Entries::of(last));
                    self.push(&env, ctx, SessionUpdate::Usage { scope: UsageScope::Call, usage }, out);
                }
                if let Some(total) = l.token_usage.take().and_then(Val::into_object) {
                    self.session_usage = Some(rpc_usage(Entries::of(total)));
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

    fn jsonrpc(
        &mut self,
        l: &mut Line<'_>,
        ctx: &mut DecodeContext,
        depth: usize,
        out: &mut Vec<OutputEvent>,
    ) -> LineOutcome {
        let kind = match l.kind.as_deref() {
            Some(k) => k,
            None if l.method.is_some() && l.id.is_some() => "request",
            None if l.method.is_some() => "notification",
            None => "response",
        };
        match kind {
            "response" => {
                let result = l.result.take().and_then(Val::into_object);
                if let Some(r) = &result {
                    let sid = r.get("sessionId").or_else(|| r.get("session_id")).and_then(Json::as_str);
                    ctx.see_session(sid);
                }
                let env = Envelope::NONE;
                if let Some(error) = l.error.take().filter(|e| !e.is_null()) {
                    let (message, raw) = error_parts(error);
                    let message = message.or_else(|| raw.map(|r| r.json.to_compact())).unwrap_or_default();
                    self.push(env, ctx, SessionUpdate::error(message, true), out);
                }
                if let Some(text) = result.as_ref().and_then(|r| r.get("finalText")).and_then(Json::as_str) {
                    self.final_message(text, env, ctx, out);
                }
                LineOutcome::Decoded
            }
            "notification" => {
                if l.method.as_deref() != Some("droid.session_notification") {
                    return LineOutcome::Decoded;
                }
                let Some(params) = l.params.0.take() else { return LineOutcome::UnexpectedShape };
                ctx.see_session(params.session_id.as_deref());
                let Some(inner) = params.notification.0 else { return LineOutcome::UnexpectedShape };
                if depth >= MAX_DEPTH {
                    return LineOutcome::UnexpectedShape;
                }
                // An error notification without a message falls back to the whole envelope.
                let mut inner = inner;
                self.decode(&mut inner, "", ctx, depth + 1, out)
            }
            "request" => LineOutcome::Decoded,
            _ => LineOutcome::UnknownType,
        }
    }

    /// `completion` / `result`: the final text when new, then the run total.
    fn run_end(
        &mut self,
        l: &mut Line<'_>,
        final_text: Option<&str>,
        env: Envelope,
        ctx: &DecodeContext,
        out: &mut Vec<OutputEvent>,
    ) {
        if let Some(text) = final_text {
            self.final_message(text, &env, ctx, out);
        }
        if let Some(mut usage) = l.usage.take().and_then(Val::into_object).map(Entries::of) {
            for (key, value) in [
                ("numTurns", l.num_turns.take()),
                ("durationMs", l.duration_ms.take()),
                ("num_turns", l.num_turns_snake.take()),
                ("duration_ms", l.duration_ms_snake.take()),
            ] {
                if let Some(v) = value {
                    usage.insert(key, v.into_json());
                }
            }
            let usage = run_usage(usage);
            self.run_usage_emitted = true;
            self.push_last(env, ctx, SessionUpdate::Usage { scope: UsageScope::Run, usage }, out);
        }
    }

    /// The run's final text, unless it repeats the assistant text already emitted.
    fn final_message(&mut self, text: &str, env: &Envelope, ctx: &DecodeContext, out: &mut Vec<OutputEvent>) {
        if text.trim().is_empty() || self.last_text.same(text) {
            return;
        }
        self.push(env, ctx, SessionUpdate::message(text), out);
        self.last_text.set(text);
        self.streaming = None;
    }

    fn tool_call_line(
        &mut self,
        l: &mut Line<'_>,
        env: Envelope,
        ctx: &DecodeContext,
        out: &mut Vec<OutputEvent>,
    ) -> LineOutcome {
        let src = match l.tool_use.0.take().or_else(|| l.tool_use_snake.0.take()) {
            Some(nested) => *nested,
            None => l.take_flat_tool_use(),
        };
        let ToolUse {
            id,
            tool_use_id,
            tool_use_id_snake,
            name,
            tool_name,
            tool_name_snake,
            tool_id,
            input,
            tool_input,
            arguments,
            parameters,
        } = src;
        let Some(id) = id.or(tool_use_id).or(tool_use_id_snake).filter(|s| !s.is_empty()) else {
            return LineOutcome::UnexpectedShape;
        };
        let name = tool_name.or(name).or(tool_name_snake).or(tool_id).filter(|s| !s.is_empty());
        let input = input.or(tool_input).or(arguments).or(parameters);
        self.tool_call(&id, name.as_deref(), input, Env::Last(env), ctx, out);
        LineOutcome::Decoded
    }

    fn tool_call(
        &mut self,
        id: &str,
        name: Option<&str>,
        input: Option<Val<'_>>,
        env: Env<'_>,
        ctx: &DecodeContext,
        out: &mut Vec<OutputEvent>,
    ) {
        if self.calls.contains_key(id) {
            return; // announced already (a create_message repeats the streamed tool_use)
        }
        // A string input is JSON text of the input object: read it for the title and keep the text
        // itself as `rawInput`; any other input is kept as printed.
        let from_text = match &input {
            Some(Val::Str(text)) => json_of(text).filter(Json::is_object),
            _ => None,
        };
        let args = match &input {
            Some(Val::Json(v)) if v.json.is_object() => Some(&v.json),
            _ => from_text.as_ref(),
        };
        let name_str = name.unwrap_or("");
        let plan = (normalize_name(Agent::Droid, name_str) == "todowrite")
            .then(|| args.and_then(|a| todo_plan(a.get("todos"))))
            .flatten();
        self.calls.insert(id.to_string(), plan.is_some());
        let (title, content, locations) = describe(name_str, args);
        let text_is_object = from_text.is_some();
        drop(from_text);
        let raw_input = match input {
            // Read whole just above.
            Some(Val::Str(text)) if text_is_object => Some(read_raw_json(text.into_owned())),
            Some(Val::Str(text)) => Some(RawJson::from_value(&Value::String(text.into_owned()))),
            Some(Val::Json(v)) if v.json.is_null() => None,
            Some(Val::Json(v)) => Some(read_raw_json(v.raw.to_string())),
            None => None,
        };
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
        let update = match plan {
            // A task list: the plan now, the call held for a refusal (decisions.md §2).
            Some(entries) => self.task_list.call(id, Some(call), entries),
            None => SessionUpdate::ToolCall(call),
        };
        self.push_env(env, ctx, update, out);
    }

    fn tool_result(
        &mut self,
        l: &mut Line<'_>,
        env: Envelope,
        ctx: &DecodeContext,
        out: &mut Vec<OutputEvent>,
    ) -> LineOutcome {
        let Some(id) = l.take_result_id() else { return LineOutcome::UnexpectedShape };
        let not_null = |v: &Val<'_>| !v.is_null();
        let error = l.error.take().filter(not_null);
        let failed = flag(l.is_error).or(flag(l.is_error_snake)).unwrap_or(error.is_some());
        let (error_text, error_raw) = error.map(error_parts).unwrap_or((None, None));
        let value = l.value.take().filter(not_null);
        let content = l.content.take().filter(not_null);
        let (blocks, raw_output) = if let (true, Some(text)) = (failed, &error_text) {
            (vec![ToolCallContent::text(text.clone())], error_raw.map(|r| read_raw_json(r.raw.to_string())))
        } else if let Some(value) = value {
            match value {
                Val::Str(text) => {
                    let raw = structured(&text);
                    (text_blocks(text), raw)
                }
                Val::Json(v) => {
                    (vec![ToolCallContent::text(v.json.to_compact())], Some(read_raw_json(v.raw.to_string())))
                }
            }
        } else if let Some(content) = content {
            result_blocks(content)
        } else if let Some(text) = error_text {
            (vec![ToolCallContent::text(text)], error_raw.map(|r| read_raw_json(r.raw.to_string())))
        } else {
            (Vec::new(), None)
        };
        if !failed && self.task_list.done(&id) {
            return LineOutcome::Decoded; // the plan already said it
        }
        let key = id.to_string();
        let mut update = ToolCallUpdate::new(id);
        update.status = Some(if failed { ToolCallStatus::Failed } else { ToolCallStatus::Completed });
        update.content = (!blocks.is_empty()).then_some(blocks);
        update.raw_output = raw_output;
        let update = SessionUpdate::ToolCallUpdate(update);
        if failed && self.task_list.holds(&key) {
            // A refused task list: announced, failed, undone.
            let mut updates = self.task_list.refused(&key, update).into_iter().peekable();
            while let Some(u) = updates.next() {
                if updates.peek().is_some() {
                    self.push(&env, ctx, u, out);
                } else {
                    self.push_last(env, ctx, u, out);
                    break;
                }
            }
            return LineOutcome::Decoded;
        }
        self.push_last(env, ctx, update, out);
        LineOutcome::Decoded
    }

    fn tool_progress(
        &mut self,
        l: &mut Line<'_>,
        env: Envelope,
        ctx: &DecodeContext,
        out: &mut Vec<OutputEvent>,
    ) -> LineOutcome {
        let Some(id) = l.take_result_id() else { return LineOutcome::UnexpectedShape };
        let text = match l.content.take() {
            Some(Val::Str(s)) if !s.is_empty() => Some(s.into_owned()),
            _ => l.update.take().and_then(Val::into_object).and_then(|update| {
                ["text", "status", "details"]
                    .iter()
                    .find_map(|k| update.get(k).and_then(Json::as_str).filter(|s| !s.is_empty()))
                    .map(str::to_string)
            }),
        };
        let mut update = ToolCallUpdate::new(id);
        update.status = Some(ToolCallStatus::InProgress);
        update.content = text.map(|t| vec![ToolCallContent::text(t)]);
        self.push_last(env, ctx, SessionUpdate::ToolCallUpdate(update), out);
        LineOutcome::Decoded
    }

    fn create_message(
        &mut self,
        l: &mut Line<'_>,
        env: &mut Envelope,
        ctx: &DecodeContext,
        out: &mut Vec<OutputEvent>,
    ) -> LineOutcome {
        let Some(MessageField::Msg(message)) = l.message.take() else { return LineOutcome::UnexpectedShape };
        if message.role.as_deref() != Some("assistant") {
            return LineOutcome::Decoded; // the user's message: ignored, as the peer does
        }
        let msg_id = message.id.as_deref().or(l.message_id.as_deref()).filter(|s| !s.is_empty()).map(str::to_string);
        if let Some(m) = &msg_id {
            env.message_id = Some(m.as_str().into());
        }
        let text_streamed = msg_id.is_some() && self.streaming.as_ref() == Some(&msg_id);
        let thinking_streamed = msg_id.is_some() && self.thinking_streamed == msg_id;
        let mut texts = String::new();
        for block in message.content.0.unwrap_or_default().into_iter().filter_map(|b| b.0) {
            match block.kind.as_deref() {
                Some("text") => {
                    if let Some(text) = block.text.as_deref().filter(|t| !t.is_empty()) {
                        texts.push_str(text);
                        if !text_streamed && !self.last_text.same(text) {
                            self.push(env, ctx, SessionUpdate::message(text), out);
                        }
                    }
                }
                Some("thinking") => {
                    let text = block.thinking.or(block.text).filter(|t| !t.is_empty());
                    if let (Some(text), false) = (text, thinking_streamed) {
                        self.push(env, ctx, SessionUpdate::thought(text), out);
                    }
                }
                Some("tool_use") => {
                    if let Some(id) = block.id.as_deref().filter(|s| !s.is_empty()) {
                        self.tool_call(id, block.name.as_deref(), block.input, Env::Shared(env), ctx, out);
                    }
                }
                _ => {}
            }
        }
        if !texts.is_empty() {
            self.last_text.set(&texts);
            self.streaming = None;
        }
        LineOutcome::Decoded
    }
}

/// `true` / `false` of a raw JSON boolean.
fn flag(raw: Option<&str>) -> Option<bool> {
    raw.and_then(|r| r.parse::<bool>().ok())
}

/// A raw value as text for a dedupe key (`""` when absent).
fn raw_text(raw: Option<&str>) -> String {
    raw.map(str::to_string).unwrap_or_default()
}

/// An `error` field: its text (a string, or an object's `message`) and, for any other value, the
/// value itself.
fn error_parts(error: Val<'_>) -> (Option<String>, Option<Box<RawVal<'_>>>) {
    match error {
        Val::Str(s) => ((!s.is_empty()).then(|| s.into_owned()), None),
        Val::Json(v) => {
            let message = v.json.get("message").and_then(Json::as_str).filter(|s| !s.is_empty()).map(str::to_string);
            (message, Some(v))
        }
    }
}

/// The text of a message's `content`: a string, or its text blocks joined.
fn message_text(content: Option<Val<'_>>) -> Option<String> {
    match content? {
        Val::Str(s) => Some(s.into_owned()),
        Val::Json(v) => match &v.json {
            Json::Arr(blocks) => Some(
                blocks
                    .iter()
                    .filter(|b| b.get("type").and_then(Json::as_str) == Some("text"))
                    .filter_map(|b| b.get("text").and_then(Json::as_str))
                    .collect::<Vec<_>>()
                    .concat(),
            ),
            _ => None,
        },
    }
}

/// A text result as content (no block for an empty text).
fn text_blocks(text: Cow<'_, str>) -> Vec<ToolCallContent> {
    if text.is_empty() { Vec::new() } else { vec![ToolCallContent::text(text)] }
}

/// `value` text that is JSON of an object or array: droid's structured record, kept as printed.
fn structured(text: &str) -> Option<RawJson> {
    let t = text.trim_start();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return None;
    }
    // Starting with `{` or `[`, what parses is an object or an array.
    value_raw_json(text)
}

/// A tool result's `content`: a string, text/image blocks, or other JSON (kept as `rawOutput`).
fn result_blocks(content: Val<'_>) -> (Vec<ToolCallContent>, Option<RawJson>) {
    let v = match content {
        Val::Str(text) => return (text_blocks(text), None),
        Val::Json(v) => v,
    };
    let Json::Arr(items) = &v.json else {
        return (vec![ToolCallContent::text(v.json.to_compact())], Some(read_raw_json(v.raw.to_string())));
    };
    let mut blocks = Vec::new();
    for block in items {
        let text_of = |k: &str| block.get(k).and_then(Json::as_str);
        match text_of("type") {
            Some("text") => {
                if let Some(text) = text_of("text").filter(|t| !t.is_empty()) {
                    blocks.push(ToolCallContent::text(text));
                }
            }
            Some("image") => {
                let source = block.get("source");
                let src = |k: &str| source.and_then(|s| s.get(k)).and_then(Json::as_str);
                let data = text_of("data").or_else(|| src("data"));
                let mime = text_of("mimeType").or_else(|| src("media_type"));
                let uri = src("url");
                if data.is_some() || uri.is_some() {
                    blocks.push(ToolCallContent::Content {
                        content: ContentBlock::Image(ImageContent {
                            data: data.unwrap_or_default().to_string(),
                            mime_type: mime.unwrap_or_default().to_string(),
                            uri: uri.map(str::to_string),
                        }),
                    });
                }
            }
            _ => {}
        }
    }
    (blocks, None)
}

/// A line's timestamp as ISO 8601: epoch milliseconds (seconds below 10^11) are converted, a
/// string is kept as printed.
fn timestamp(raw: Option<&str>) -> Option<SharedStr> {
    let raw = raw?;
    if raw.starts_with('"') {
        return unescape_literal(raw).filter(|s| !s.is_empty()).map(|s| SharedStr::from(&*s));
    }
    // Epoch milliseconds are plain integers: read them without the float parser.
    let n = match raw.len() {
        1..=15 if raw.bytes().all(|b| b.is_ascii_digit()) => {
            raw.bytes().fold(0u64, |n, b| n * 10 + u64::from(b - b'0')) as f64
        }
        _ => raw.parse::<f64>().ok()?,
    };
    iso_from_epoch(n)
}

/// Epoch milliseconds (or seconds, below 10^11) as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn iso_from_epoch(n: f64) -> Option<SharedStr> {
    if !(0.0..=1e15).contains(&n) {
        return None;
    }
    let ms = if n < 1e11 { (n * 1000.0).round() } else { n.round() } as i64;
    IsoMillis::new(ms).map(|t| t.as_str().into())
}

/// The `completion` / `result` usage (see the module docs for the arithmetic).
fn run_usage(mut usage: Entries<'_>) -> TokenUsage {
    let mut take = |k: &str| usage.swap_remove(k).and_then(|v| v.as_u64());
    let input = take("input_tokens");
    let output = take("output_tokens");
    let read = take("cache_read_input_tokens");
    let write = usage.get("cache_creation_input_tokens").and_then(Json::as_u64);
    TokenUsage {
        prompt_tokens: input.and(crate::counters::sum("prompt tokens", [input, read, write])),
        completion_tokens: output,
        cached_tokens: read,
        cost_usd: None,
        extra: (!usage.is_empty()).then(|| usage.into_raw_json()),
    }
}

/// A JSON-RPC `tokenUsage` / `lastCallTokenUsage` (camelCase counters, same arithmetic).
fn rpc_usage(mut usage: Entries<'_>) -> TokenUsage {
    let mut take = |k: &str| usage.swap_remove(k).and_then(|v| v.as_u64());
    let (input, output, read) = (take("inputTokens"), take("outputTokens"), take("cacheReadTokens"));
    let write = usage.get("cacheCreationTokens").and_then(Json::as_u64);
    TokenUsage {
        prompt_tokens: input.and(crate::counters::sum("prompt tokens", [input, read, write])),
        completion_tokens: output,
        cached_tokens: read,
        cost_usd: None,
        extra: (!usage.is_empty()).then(|| usage.into_raw_json()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_text_is_kept_up_to_the_answer_cap_and_no_further() {
        let mut last = LastText::default();
        last.push("  hello ");
        last.push("world\n");
        assert!(last.same("hello world"));
        assert!(!last.same("hello"));
        // Past the cap nothing is kept, and nothing counts as the same text (emitted again,
        // never skipped).
        let chunk = "x".repeat(1 << 20);
        for _ in 0..9 {
            last.push(&chunk);
        }
        assert!(last.cut && last.text.capacity() == 0);
        assert!(!last.same(""));
        last.set("again");
        assert!(last.same("again"));
    }
    use crate::decode::{Agent, Decoder};
    use crate::event::PlanEntryStatus;

    fn run(input: &str) -> Vec<serde_json::Value> {
        let mut d = Decoder::new(Agent::Droid);
        let mut events = d.feed(input.as_bytes());
        events.extend(d.finish());
        events.iter().map(|e| serde_json::to_value(e).unwrap()).collect()
    }

    /// Random droid-shaped lines: the real keys with values of every shape (odd ones, repeated
    /// keys, strings and numbers serde_json refuses, cut-short text).
    fn droid_line() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let scalar = proptest::sample::select(vec![
            "null",
            "true",
            "false",
            "1796221399731",
            "-2.5",
            "1e400",
            r#""""#,
            r#""message""#,
            r#""assistant""#,
            r#""tool_call""#,
            r#""tool_result""#,
            r#""completion""#,
            r#""create_message""#,
            r#""a\nb\"c""#,
            r#""\ud800""#,
            r#""\u00e9""#,
            r#""{\"command\": \"ls\"}""#,
            r#""[1,2]""#,
            "[]",
            "{}",
            "[1,[2]]",
            r#"{"\ud800":1}"#,
            r#"{"input_tokens":3,"input_tokens":4,"x":1e400}"#,
            r#"{"message":"boom","type":"x"}"#,
            r#""2.0""#,
            r#""droid.session_notification""#,
        ])
        .prop_map(str::to_string);
        let key = proptest::sample::select(vec![
            "type",
            "subtype",
            "role",
            "id",
            "messageId",
            "text",
            "textDelta",
            "blockIndex",
            "session_id",
            "sessionId",
            "timestamp",
            "model",
            "toolUse",
            "tool_use",
            "toolUseId",
            "name",
            "toolName",
            "toolId",
            "input",
            "parameters",
            "isError",
            "value",
            "content",
            "error",
            "update",
            "finalText",
            "result",
            "usage",
            "numTurns",
            "message",
            "errorType",
            "jsonrpc",
            "method",
            "params",
            "notification",
            "tokenUsage",
            "thinking",
            "other",
        ]);
        let value = scalar.prop_recursive(4, 48, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
                proptest::collection::vec((key.clone(), inner), 0..6).prop_map(|v| {
                    let body: Vec<String> = v.into_iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                    format!("{{{}}}", body.join(","))
                }),
            ]
        });
        let shaped = (value.clone(), value.clone(), value.clone(), 0..4usize).prop_map(|(a, b, c, which)| match which {
            0 => format!(r#"{{"type":"tool_call","id":{a},"toolName":{b},"parameters":{c},"timestamp":1796221399731}}"#),
            1 => format!(r#"{{"type":"create_message","message":{{"id":{a},"role":"assistant","content":[{{"type":"tool_use","id":"t","name":{b},"input":{c}}}]}}}}"#),
            2 => format!(r#"{{"jsonrpc":"2.0","method":"droid.session_notification","params":{{"sessionId":{a},"notification":{{"type":{b},"textDelta":{c}}}}}}}"#),
            _ => format!(r#"{{"type":"tool_call","toolUse":{{"id":{a},"name":{b},"input":{c}}}}}"#),
        });
        (prop_oneof![value, shaped], 0..400usize, proptest::bool::weighted(0.1)).prop_map(|(v, cut, cut_it)| {
            let v = if v.starts_with('{') { v } else { format!(r#"{{"type":"message","text":{v}}}"#) };
            if cut_it { v.chars().take(cut % (v.chars().count() + 1)).collect() } else { v }
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        #[test]
        fn one_pass_read_is_the_serde_read(line in droid_line()) {
            let mut ours = Line::default();
            let ours = parse_one_pass(&line, &mut ours).map(|()| format!("{ours:?}"));
            let mut theirs = Line::default();
            let theirs = parse_line_into(&line, &mut theirs).map(|()| format!("{theirs:?}")).map_err(LineOutcome::from);
            proptest::prop_assert_eq!(ours, theirs, "{}", line);
        }
    }

    #[test]
    fn droid_line_generator_mixes_outcomes() {
        use proptest::strategy::{Strategy, ValueTree};
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let mut counts = std::collections::BTreeMap::new();
        for _ in 0..3000 {
            let line = droid_line().new_tree(&mut runner).unwrap().current();
            let mut l = Line::default();
            let outcome = match parse_one_pass(&line, &mut l) {
                Ok(()) => format!(
                    "ok params={} message={} parameters={}",
                    l.params.0.is_some(),
                    l.message.is_some(),
                    l.parameters.is_some()
                ),
                Err(e) => format!("{e:?}"),
            };
            *counts.entry(outcome).or_insert(0) += 1;
        }
        eprintln!("{counts:?}");
        assert!(counts.len() >= 5);
    }

    #[test]
    fn epoch_milliseconds_become_iso_8601() {
        assert_eq!(iso_from_epoch(1_796_221_399_731.0).as_deref(), Some("2026-12-02T14:23:19.731Z"));
        assert_eq!(iso_from_epoch(0.0).as_deref(), Some("1970-01-01T00:00:00.000Z"));
        assert_eq!(iso_from_epoch(951_782_400.0).as_deref(), Some("2000-02-29T00:00:00.000Z"));
        assert_eq!(iso_from_epoch(f64::NAN), None);
    }

    #[test]
    fn timestamps_read_as_integers_or_floats_agree() {
        let ts = |raw: &str| timestamp(Some(raw));
        for raw in ["1796221399731", "1796221399731.4", "0", "951782400", "1e12", "99999999999999", "999999999999999"] {
            assert_eq!(ts(raw), iso_from_epoch(raw.parse::<f64>().unwrap()), "{raw}");
        }
        assert_eq!(ts("-1"), None);
        assert_eq!(ts(r#""2026-01-02T03:04:05Z""#).as_deref(), Some("2026-01-02T03:04:05Z"));
        assert_eq!(ts(r#""""#), None);
    }

    #[test]
    fn a_key_printed_twice_makes_the_line_unusable_as_before() {
        for line in [
            r#"{"type":"message","role":"assistant","text":"a","text":"b","session_id":"s"}"#,
            r#"{"type":"message","role":"assistant","text":null,"text":"b"}"#,
            r#"{"type":"notification","jsonrpc":"2.0","method":"droid.session_notification","params":{"notification":{"type":"assistant_text_delta","textDelta":"x","textDelta":"y"}}}"#,
        ] {
            let mut d = Decoder::new(Agent::Droid);
            let events = d.feed(format!("{line}\n").as_bytes());
            assert!(events.is_empty(), "{line}");
            assert_eq!(d.stats().unexpected_shape, 1, "{line}");
            assert_eq!(d.session_id(), None);
        }
        // Unknown keys, twice or not, are skipped.
        let ev = run("{\"type\":\"message\",\"role\":\"assistant\",\"text\":\"a\",\"x\":1,\"x\":[2]}\n");
        assert_eq!(ev.len(), 1);
    }

    #[test]
    fn numbered_todo_text_parses_into_a_plan() {
        let entries =
            plan_from_text("1. [in_progress] Write the plan\n2. [pending] Ship it\n3. [completed] Read docs").unwrap();
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
