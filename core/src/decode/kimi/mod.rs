//! Kimi CLI decoder (`kimi --print --output-format stream-json`).
//!
//! Kimi prints OpenAI-chat-style message objects, one per line, with no session, usage, id or
//! timestamp fields (so kimi events carry no `timestamp`, `model`, `messageId` and no `usage`
//! update exists), plus `role:"meta"` lines in the newer Kimi Code CLI and the older wire
//! envelopes `{type, payload}`. Its failures are NOT JSON: kimi prints them as plain text on
//! stdout, wrapped at 80 columns, and exits non-zero.
//!
//! | wire line | events |
//! |---|---|
//! | `{"role":"assistant","content":"text"}` | `agent_message_chunk` (empty text: nothing) |
//! | `{"role":"assistant","content":[parts]}` | per part, in order: `think` → `agent_thought_chunk`; `text` → `agent_message_chunk`; `image_url` → image `agent_message_chunk` (`data:` URL → `data` + `mimeType`, else `uri`); `video_url` / `audio_url` → `agent_message_chunk` `"[video] <url>"` / `"[audio] <url>"` |
//! | `… "tool_calls":[{id, function:{name, arguments}}]` | after the content: one `tool_call` per call (status `pending`, `toolName` = name, `kind` from `tools.rs`, `rawInput` = the parsed `arguments` object, or the raw string when it is not a JSON object, titles/locations/diffs below) |
//! | `SetTodoList` / `TodoList` call | `plan` instead of `tool_call` (`title` → content; `done`/`completed` → completed, `in_progress` kept, else pending; priority `medium`); the matching successful result is swallowed; a refused call (a failed result) is announced then: its `tool_call`, the failed `tool_call_update`, and a `plan` re-stating the list as it was before the call ([`super::task_list`]) |
//! | `{"role":"tool","tool_call_id":…,"content":…}` | `tool_call_update` with the content verbatim (string → one text block; parts → text / image blocks, `video_url`/`audio_url` → `"[video] <url>"` text), status `failed` when the FIRST text part starts with the error marker (below), else `completed`; no `rawOutput` (kimi prints none) |
//! | `{"role":"user","content":…}` | `user_message_chunk` (text parts) |
//! | `{"role":"meta","type":"session.resume_hint","session_id":…}` | nothing; the session id is captured and stamped on every later event |
//! | other `role:"meta"` lines | nothing |
//! | `{"type":"TextPart"\|"ThinkPart"\|"ImageURLPart"\|"AudioURLPart"\|"VideoURLPart","payload":part}` | as the assistant part above |
//! | `{"type":"ToolCall","payload":{id, function}}` | `tool_call` as above |
//! | `{"type":"ToolResult","payload":{tool_call_id, return_value:{is_error, output, message, …}}}` | `tool_call_update`: content = `message` (when non-empty) then `output` (string or parts); status from `is_error` (payload or return value), else `return_value.type == "ToolError"`, else the text marker; `rawOutput` = `return_value` verbatim |
//! | `{"type":"SubagentEvent","payload":{task_tool_call_id, event:{type, payload}}}` | the inner event decoded as above, with `parentToolCallId` = `task_tool_call_id` |
//! | `TurnBegin`, `TurnEnd`, `StepBegin`, `StepInterrupted`, `CompactionBegin`, `CompactionEnd`, `StatusUpdate`, `ToolCallPart`, `ApprovalRequest`, `ApprovalRequestResolved` envelopes | nothing (control flow, no content) |
//! | non-JSON text lines | ONE `error` update (`fatal: true`) per message: consecutive non-JSON lines are joined with `"\n"`, verbatim, and flushed when the next JSON object line arrives or at end of input (a message past 64 KiB goes on in the next `error` update: memory stays bounded); each line still counts as invalid JSON in the decode statistics. A valid non-object value (`404`) continues a message already started |
//! | a JSON object cut short (starts with `{"`, does not parse) | nothing; counted as invalid JSON (a killed process, not a failure message: kimi's failure text is prose or a Python repr with single quotes) |
//! | blank lines (e.g. after a hung-up assistant line) | nothing (the framer counts them as blank) |
//!
//! **Failure marker.** kimi renders a failed tool call as the message `<system>ERROR: …</system>`
//! put FIRST in the tool message, followed by the tool's output (kimi-cli `tool_result_to_message`;
//! MCP `isError` results too). So a result is `failed` exactly when its first text (the string
//! content, or the first text part) begins, after optional whitespace, with `<system>`, optional
//! whitespace, `ERROR` (any case), optional whitespace and `:`. The marker is not searched for
//! anywhere else: output that merely quotes `ToolError`, `<error>` or even `<system>ERROR:` in its
//! body (a log file, a grep hit) is not a failure — the peer's substring heuristic flags those.
//!
//! **Calls without an id** get a synthetic id `kimi_<name>_<n>` (non-alphanumerics of the name
//! replaced by `_`, `n` counting per run). Kimi prints tool results in call order, so a result
//! that has no `tool_call_id` takes the OLDEST id-less call that has not been answered yet; a
//! result without an id and with no such call is an unexpected shape (no event: there is no
//! call it could update).
//!
//! **Titles** (cut at [`crate::tools::MAX_TITLE_CHARS`]): `Read <path>` (+ location, `line` from
//! `line_offset`); `Read media <path>`; `Write <path>` (+ diff with `oldText: null` unless
//! `mode` is `append`); `Edit <path>` (+ one diff per `edit {old, new}`); Bash/Shell: the command
//! in backticks ([`crate::tools::command_title`]) or `Run command`; `Find <pattern>`;
//! `grep "<pattern>"`; `"<query>"` / `Web search`; `Fetch <url>` / `Web fetch`; the description or
//! `Subagent task` for Agent/AgentSwarm/Task; the thought or `Thinking`; `Subagent: <name>`;
//! `Update todos`; `Task output <id>`, `Stop task <id>`, `List tasks`; `Enter plan mode` /
//! `Exit plan mode`; anything else (MCP tools are bare names such as `lookup`): the name.
//! Locations come from `path` / `file_path` (Glob also `directory`).
//!
//! **Golden cases** (`tests/golden/kimi/`; `s*` are real captures, `e-*` hand-written from the
//! captured shapes):
//!
//! | case | pins |
//! |---|---|
//! | `e-error-401-at-end` | the 401 failure wrapped over two lines, last line without a newline: one fatal `error` at end of input |
//! | `e-error-between-json` | a wrapped 429 failure between JSON lines: flushed before the next line's events; a later failure after the resume hint carries the session id |
//! | `e-hangup-stream-broken` | s6-stream-broken: the partial text of both attempts (kept), a blank line, then the wrapped `peer closed connection …` error |
//! | `e-hangup-empty-error` | s14-hangup: partial text and only a blank line: the message, no error (nothing was printed) |
//! | `e-retry-recover` | s14-hangup-recover: the failed attempt's text is not rolled back |
//! | `e-parallel-tools` | s7: two calls on one line, then both results |
//! | `e-tool-failure` | s9: `<system>ERROR: Command failed with exit code: 2.` and a failing Grep |
//! | `e-quoted-tool-error` | output quoting `ToolError`, `<error>` and `<system>ERROR:` in its body stays `completed` |
//! | `e-todo-plan` | SetTodoList → plans, successful results swallowed, a refused one announced, failed and undone, an unusable list stays a tool call, an empty list is an empty plan |
//! | `e-thinking-tool` | s10: think → tool → think → answer |
//! | `e-image` | s13: ReadMediaFile's image part; assistant image / video / audio URLs |
//! | `e-mcp` | s12: bare MCP tool names, the isError marker |
//! | `e-wire-envelopes` | the legacy envelopes, ignored control flow, `SubagentEvent` → `parentToolCallId`, `ToolResult` `rawOutput` and `is_error` |
//! | `e-meta-resume-hint` | meta lines emit nothing; the session id is stamped from the hint on |
//! | `e-odd-lines` | non-objects, unknown roles and types, user echo, orphan and early results, id-less calls answered in order, unparsable arguments, a JSON line cut short |
//! | `e-many-tools` | s15/s16: Glob, FetchURL, SearchWeb failure, Agent, TaskOutput failure, WriteFile append (no diff), text + tool call on one line |

mod describe;
mod wire;

use self::describe::*;
use self::wire::*;

use std::borrow::Cow;
use std::collections::VecDeque;

use serde_json::Value;
use serde_json::value::RawValue;

use crate::decode::context::{DecodeContext, Envelope};
use crate::decode::task_list::TaskListCalls;
use crate::decode::{Agent, HarnessDecoder, LineOutcome};
use crate::event::{
    ContentBlock, ImageContent, OutputEvent, RawJson, SessionUpdate, SharedStr, ToolCall, ToolCallContent,
    ToolCallStatus, ToolCallUpdate,
};
use crate::json::borrowed::CowStr;
use crate::json::lenient::{ObjList, lenient};
use crate::json::raw_record::{checked_raw, read_raw_json};
use crate::json::tree::Json;
use crate::tools::tool_kind;

/// How deep `SubagentEvent` envelopes are followed (a subagent of a subagent …).
const MAX_SUBAGENT_DEPTH: usize = 8;

/// Stateful kimi line decoder.
#[derive(Debug, Default)]
pub(crate) struct KimiDecoder {
    /// The lines of a plain-text failure message, joined with `\n`, until the message ends.
    pending_error: Option<String>,
    /// Todo calls turned into plans: a successful result is swallowed, a refused one announced
    /// and undone.
    task_list: TaskListCalls,
    /// Synthetic ids of id-less calls not yet answered, oldest first.
    unanswered_synthetic: VecDeque<String>,
    /// Counter for synthetic ids.
    synthetic_count: u64,
}

/// What a role:tool / ToolResult content turned into.
struct ResultContent {
    blocks: Vec<ToolCallContent>,
    /// Whether the first text of the result carries the failure marker (`None`: no text).
    marker: Option<bool>,
}

/// The session id in kimi's closing stderr hint, `To resume this session: kimi -r <id>`, once
/// the id is complete (followed by a line end).
fn session_in_resume_hint(text: &str) -> Option<&str> {
    const HINT: &str = "kimi -r ";
    let start = text.rfind(HINT)? + HINT.len();
    let rest = &text[start..];
    let len = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))?;
    (len > 0 && rest[len..].starts_with(['\n', '\r'])).then(|| &rest[..len])
}

impl HarnessDecoder for KimiDecoder {
    fn session_in_stderr<'t>(&self, text: &'t str) -> Option<&'t str> {
        session_in_resume_hint(text)
    }

    /// Kimi prints no end-of-run record on stdout (only messages; the resume hint goes to stderr).
    fn final_record(&self) -> Option<&'static str> {
        None
    }

    fn decode_line(&mut self, line: &str, ctx: &mut DecodeContext, out: &mut Vec<OutputEvent>) -> LineOutcome {
        // Filled in place and handed down by reference: the line struct is never moved.
        let mut parsed = Line::default();
        match parse_into(line, &mut parsed) {
            Ok(()) => {
                self.flush_error(ctx, out);
                self.decode(&mut parsed, ctx, Envelope::NONE, 0, out)
            }
            // A JSON object cut short (`{"role":…` of a killed process) is not failure text:
            // kimi's failures are prose or Python reprs (`{'error': …}`, single quotes).
            Err(LineOutcome::InvalidJson) if line.trim_start().starts_with("{\"") || is_binary(line) => {
                self.flush_error(ctx, out);
                LineOutcome::InvalidJson
            }
            Err(LineOutcome::InvalidJson) => {
                self.hold_error_text(line, ctx, out);
                LineOutcome::InvalidJson
            }
            // A line of plain text that happens to be valid JSON (`404`, `true`) continues a
            // failure message already being printed; on its own it is just a stray value.
            Err(LineOutcome::NotObject) if self.pending_error.is_some() => {
                self.hold_error_text(line, ctx, out);
                LineOutcome::NotObject
            }
            Err(outcome) => {
                self.flush_error(ctx, out);
                outcome
            }
        }
    }

    fn finish(&mut self, ctx: &mut DecodeContext, out: &mut Vec<OutputEvent>) {
        self.flush_error(ctx, out);
    }
}

/// A held plain-text failure message is delivered once it reaches this many bytes and goes on
/// in a new `error` update: a flood of non-JSON lines never builds one unbounded event.
const MAX_ERROR_TEXT: usize = 64 * 1024;

impl KimiDecoder {
    fn hold_error_text(&mut self, line: &str, ctx: &DecodeContext, out: &mut Vec<OutputEvent>) {
        if self.pending_error.as_ref().is_some_and(|t| t.len() + 1 + line.len() > MAX_ERROR_TEXT) {
            self.flush_error(ctx, out);
        }
        match &mut self.pending_error {
            Some(text) => {
                text.push('\n');
                text.push_str(line);
            }
            None => self.pending_error = Some(line.to_string()),
        }
    }

    /// Kimi exits non-zero right after printing a failure, so it is fatal.
    fn flush_error(&mut self, ctx: &DecodeContext, out: &mut Vec<OutputEvent>) {
        if let Some(text) = self.pending_error.take() {
            Envelope::NONE.emit(ctx, SessionUpdate::error(text, true), out);
        }
    }

    fn decode(
        &mut self,
        line: &mut Line<'_>,
        ctx: &mut DecodeContext,
        env: &Envelope,
        depth: usize,
        out: &mut Vec<OutputEvent>,
    ) -> LineOutcome {
        if let Some(role) = line.role.as_deref() {
            return match role {
                "assistant" => self.assistant(line, ctx, env, out),
                "tool" => {
                    let content = result_content(line.content.take());
                    let failed = content.marker.unwrap_or(false);
                    self.result(line.tool_call_id.as_deref(), content.blocks, failed, None, ctx, env, out)
                }
                "user" => {
                    for text in user_texts(line.content.take()) {
                        env.emit(ctx, SessionUpdate::user_message(text), out);
                    }
                    LineOutcome::Decoded
                }
                "meta" => {
                    if line.kind.as_deref() == Some("session.resume_hint") {
                        ctx.see_session(line.session_id.as_deref());
                    }
                    LineOutcome::Decoded
                }
                _ => LineOutcome::UnknownType,
            };
        }
        let Some(kind) = line.kind.as_deref() else { return LineOutcome::UnknownType };
        match kind {
            "TextPart" | "ThinkPart" | "ImageURLPart" | "AudioURLPart" | "VideoURLPart" => {
                match lenient::<Part<'_>>(line.payload) {
                    Some(part) => {
                        if let Some(update) = assistant_part(part) {
                            env.emit(ctx, update, out);
                        }
                        LineOutcome::Decoded
                    }
                    None => LineOutcome::UnexpectedShape,
                }
            }
            "ToolCall" => match lenient::<RawToolCall<'_>>(line.payload) {
                Some(call) => {
                    self.tool_call(call, ctx, env, out);
                    LineOutcome::Decoded
                }
                None => LineOutcome::UnexpectedShape,
            },
            "ToolResult" => match lenient::<WireToolResult<'_>>(line.payload) {
                Some(mut result) => self.wire_result(&mut result, ctx, env, out),
                None => LineOutcome::UnexpectedShape,
            },
            "SubagentEvent" => {
                let Some(sub) = lenient::<SubagentEvent<'_>>(line.payload) else {
                    return LineOutcome::UnexpectedShape;
                };
                let Some(mut inner) = lenient::<Line<'_>>(sub.event) else { return LineOutcome::UnexpectedShape };
                if depth >= MAX_SUBAGENT_DEPTH {
                    return LineOutcome::UnexpectedShape;
                }
                let mut sub_env = env.clone();
                if let Some(parent) = sub.task_tool_call_id.filter(|s| !s.is_empty()) {
                    sub_env.parent_tool_call_id = Some(SharedStr::from(&*parent));
                }
                self.decode(&mut inner, ctx, &sub_env, depth + 1, out)
            }
            "TurnBegin"
            | "TurnEnd"
            | "StepBegin"
            | "StepInterrupted"
            | "CompactionBegin"
            | "CompactionEnd"
            | "StatusUpdate"
            | "ToolCallPart"
            | "ApprovalRequest"
            | "ApprovalRequestResolved" => LineOutcome::Decoded,
            _ => LineOutcome::UnknownType,
        }
    }

    fn assistant(
        &mut self,
        line: &mut Line<'_>,
        ctx: &DecodeContext,
        env: &Envelope,
        out: &mut Vec<OutputEvent>,
    ) -> LineOutcome {
        let mut odd = false;
        match line.content.take() {
            Some(Content::Text(text)) if !text.is_empty() => env.emit(ctx, SessionUpdate::message(text), out),
            Some(Content::Text(_)) => {}
            Some(Content::Parts(parts)) => {
                for part in parts {
                    match part.0 {
                        Some(part) => {
                            if let Some(update) = assistant_part(part) {
                                env.emit(ctx, update, out);
                            }
                        }
                        None => odd = true,
                    }
                }
            }
            Some(Content::Odd) => odd = true,
            None => {} // null: a message with only tool calls
        }
        if let Some(ObjList(calls)) = line.tool_calls.take() {
            match calls {
                Some(calls) => {
                    for call in calls {
                        match call.0 {
                            Some(call) => self.tool_call(call, ctx, env, out),
                            None => odd = true,
                        }
                    }
                }
                None => odd = true,
            }
        }
        if odd { LineOutcome::UnexpectedShape } else { LineOutcome::Decoded }
    }

    fn tool_call(&mut self, call: RawToolCall<'_>, ctx: &DecodeContext, env: &Envelope, out: &mut Vec<OutputEvent>) {
        let RawToolCall { id, function } = call;
        let (name, arguments) = match function.0 {
            Some(f) => (f.name.filter(|n| !n.is_empty()), f.arguments),
            None => (None, None),
        };
        let name = name.as_deref();
        let id = match id.filter(|id| !id.is_empty()) {
            Some(id) => id.into_owned(),
            None => {
                self.synthetic_count += 1;
                let sanitized: String =
                    name.unwrap_or("tool").chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
                let id = format!("kimi_{sanitized}_{}", self.synthetic_count);
                self.unanswered_synthetic.push_back(id.clone());
                id
            }
        };
        // `arguments` is JSON text of the input object: read once for the fields the title,
        // locations, diffs and plans are made of, and kept itself as `rawInput`.
        let input = match arguments {
            Some(Args::Text(text)) if !super::is_blank(&text) => Input::Text(text),
            Some(Args::Object(object)) => Input::Object(object),
            _ => Input::None,
        };
        // (Filled in place: the member slots are too large to move around.)
        let mut fields = CallInput::new();
        let is_object = match &input {
            Input::Text(text) => fields.read(text),
            Input::Object(object) => {
                fields.fill_from_tree(object);
                true
            }
            Input::None => false,
        };
        let plan = match name {
            Some("SetTodoList" | "TodoList") => is_object.then_some(&fields).and_then(|f| todo_plan(f.get("todos"))),
            _ => None,
        };
        let (title, content, locations) = describe(name.unwrap_or(""), is_object.then_some(&mut fields));
        drop(fields); // (It borrows from `input`, moved below.)
        let raw_input = match input {
            // An object: its text verbatim (read whole just above).
            Input::Text(text) if is_object => Some(read_raw_json(text.into_owned())),
            // Not a JSON object: the raw string itself.
            Input::Text(text) => Some(RawJson::from_value(&Value::String(text.into_owned()))),
            Input::Object(object) => Some(object.to_raw_json()),
            Input::None => None,
        };
        let call = ToolCall {
            tool_call_id: id,
            title,
            tool_name: name.map(str::to_string),
            kind: tool_kind(Agent::Kimi, name.unwrap_or("")),
            status: ToolCallStatus::Pending,
            raw_input,
            content: (!content.is_empty()).then_some(content),
            locations: (!locations.is_empty()).then_some(locations),
        };
        let update = match plan {
            // A task list: the plan now, the call held for a refusal (decisions.md §2).
            Some(entries) => {
                let id = call.tool_call_id.clone();
                self.task_list.call(&id, Some(call), entries)
            }
            None => SessionUpdate::ToolCall(call),
        };
        env.emit(ctx, update, out);
    }

    #[allow(clippy::too_many_arguments)]
    fn result(
        &mut self,
        id: Option<&str>,
        blocks: Vec<ToolCallContent>,
        failed: bool,
        raw_output: Option<RawJson>,
        ctx: &DecodeContext,
        env: &Envelope,
        out: &mut Vec<OutputEvent>,
    ) -> LineOutcome {
        let id = match id.filter(|id| !id.is_empty()) {
            Some(id) => {
                // A real id may still be one we made up when the call came without one.
                if let Some(pos) = self.unanswered_synthetic.iter().position(|s| s == id) {
                    self.unanswered_synthetic.remove(pos);
                }
                id.to_string()
            }
            None => match self.unanswered_synthetic.pop_front() {
                Some(id) => id,
                None => return LineOutcome::UnexpectedShape,
            },
        };
        if !failed && self.task_list.done(&id) {
            return LineOutcome::Decoded; // the plan already said it
        }
        let key = if failed && self.task_list.holds(&id) { Some(id.clone()) } else { None };
        let mut update = ToolCallUpdate::new(id);
        update.status = Some(if failed { ToolCallStatus::Failed } else { ToolCallStatus::Completed });
        update.content = Some(blocks);
        update.raw_output = raw_output;
        match key {
            // A refused task list: announced, failed, undone.
            Some(id) => {
                for u in self.task_list.refused(&id, SessionUpdate::ToolCallUpdate(update)) {
                    env.emit(ctx, u, out);
                }
            }
            None => env.emit(ctx, SessionUpdate::ToolCallUpdate(update), out),
        }
        LineOutcome::Decoded
    }

    fn wire_result(
        &mut self,
        result: &mut WireToolResult<'_>,
        ctx: &DecodeContext,
        env: &Envelope,
        out: &mut Vec<OutputEvent>,
    ) -> LineOutcome {
        let mut ret = lenient::<ReturnValue<'_>>(result.return_value);
        let mut blocks = Vec::new();
        let mut marker = None;
        if let Some(message) = ret.as_ref().and_then(|r| r.message.as_deref()).filter(|m| !m.is_empty()) {
            marker = Some(is_error_marker(message));
            blocks.push(ToolCallContent::text(message));
        }
        // The output; a bare string return value is the output itself.
        let bare = lenient::<CowStr<'_>>(result.return_value.filter(|raw| raw.get().starts_with('"')))
            .map(|s| Content::Text(s.0));
        let output = ret.as_mut().and_then(|r| r.output.take()).or(result.content.take()).or(bare);
        let content = result_content(output);
        blocks.extend(content.blocks);
        let flag = |raw: Option<&RawValue>| raw.and_then(|r| r.get().parse::<bool>().ok());
        let failed = flag(result.is_error)
            .or_else(|| ret.as_ref().and_then(|r| flag(r.is_error)))
            .or_else(|| ret.as_ref().and_then(|r| r.kind.as_deref()).map(|k| k == "ToolError"))
            .unwrap_or_else(|| marker.or(content.marker).unwrap_or(false));
        let raw_output = result.return_value.and_then(checked_raw);
        self.result(result.tool_call_id.as_deref(), blocks, failed, raw_output, ctx, env, out)
    }
}

/// A tool result's content: a string, or a list of parts (owned text is moved, not copied).
fn result_content(content: Option<Content<'_>>) -> ResultContent {
    let mut blocks = Vec::new();
    let mut marker = None;
    match content {
        Some(Content::Text(text)) if !text.is_empty() => {
            marker = Some(is_error_marker(&text));
            // (Sized to fit: every list here ends up in an event as it is.)
            blocks = vec![ToolCallContent::text(text)];
        }
        Some(Content::Parts(parts)) => {
            blocks.reserve_exact(parts.len());
            for part in parts.into_iter().filter_map(|p| p.0) {
                let block = match part.kind.as_deref() {
                    Some("image_url") => media_url(&part.image_url).map(image_block),
                    Some("video_url") => media_url(&part.video_url).map(|u| ContentBlock::text(format!("[video] {u}"))),
                    Some("audio_url") => media_url(&part.audio_url).map(|u| ContentBlock::text(format!("[audio] {u}"))),
                    Some("think") => None,
                    _ => part.text.0.filter(|t| !t.is_empty()).map(|t| {
                        if marker.is_none() {
                            marker = Some(is_error_marker(&t));
                        }
                        ContentBlock::text(t)
                    }),
                };
                if let Some(content) = block {
                    blocks.push(ToolCallContent::Content { content });
                }
            }
        }
        _ => {}
    }
    ResultContent { blocks, marker }
}

/// The update for one assistant content part (none for empty text or unknown parts).
fn assistant_part(part: Part<'_>) -> Option<SessionUpdate> {
    match part.kind.as_deref() {
        Some("think") => part.think.0.filter(|t| !t.is_empty()).map(SessionUpdate::thought),
        Some("text") => part.text.0.filter(|t| !t.is_empty()).map(SessionUpdate::message),
        Some("image_url") => {
            media_url(&part.image_url).map(|u| SessionUpdate::AgentMessageChunk { content: image_block(u) })
        }
        Some("video_url") => media_url(&part.video_url).map(|u| SessionUpdate::message(format!("[video] {u}"))),
        Some("audio_url") => media_url(&part.audio_url).map(|u| SessionUpdate::message(format!("[audio] {u}"))),
        _ => None,
    }
}

/// The texts of a `role:"user"` line.
fn user_texts(content: Option<Content<'_>>) -> Vec<String> {
    match content {
        Some(Content::Text(text)) if !text.is_empty() => vec![text.into_owned()],
        Some(Content::Parts(parts)) => parts
            .into_iter()
            .filter_map(|p| p.0)
            .filter(|p| p.kind.as_deref() == Some("text"))
            .filter_map(|p| p.text.0.map(Cow::into_owned))
            .filter(|t| !t.is_empty())
            .collect(),
        _ => Vec::new(),
    }
}

/// The URL of a media part; `None` when absent or empty.
fn media_url<'u>(url: &'u Option<Url<'_>>) -> Option<&'u str> {
    url.as_ref().and_then(|u| u.0.as_deref()).filter(|u| !u.is_empty())
}

/// An image block: a `data:<mime>;base64,<data>` URL is inlined, anything else is a `uri`.
fn image_block(url: &str) -> ContentBlock {
    if let Some(rest) = url.strip_prefix("data:") {
        if let Some((meta, data)) = rest.split_once(',') {
            let mut params = meta.split(';');
            let mime = params.next().unwrap_or("");
            if params.any(|p| p.eq_ignore_ascii_case("base64")) {
                return ContentBlock::Image(ImageContent {
                    data: data.to_string(),
                    mime_type: mime.to_string(),
                    uri: None,
                });
            }
        }
    }
    ContentBlock::Image(ImageContent { data: String::new(), mime_type: String::new(), uri: Some(url.to_string()) })
}

/// `<system>ERROR:` at the start of a result's first text (case-insensitive, whitespace allowed).
fn is_error_marker(text: &str) -> bool {
    fn strip_ci<'t>(s: &'t str, prefix: &str) -> Option<&'t str> {
        let head = s.get(..prefix.len())?;
        head.eq_ignore_ascii_case(prefix).then(|| &s[prefix.len()..])
    }
    let Some(rest) = strip_ci(text.trim_start(), "<system>") else { return false };
    let Some(rest) = strip_ci(rest.trim_start(), "error") else { return false };
    rest.trim_start().starts_with(':')
}

/// `function.arguments` of a call: JSON text holding the input object (kept for `rawInput`: the
/// parsed object when it is one, else the raw string), an object printed as is, or nothing (absent,
/// empty or of another type).
enum Input<'a> {
    Text(Cow<'a, str>),
    Object(Json<'a>),
    None,
}

/// Whether `line` is binary rather than text: control characters text does not hold (a tab, a
/// carriage return and the escape of terminal colours aside), or mostly bytes that were not
/// UTF-8 (replaced by U+FFFD when the line was read; a few are text decoded with
/// `errors="replace"`, as an error page in another charset). Binary input is not a failure
/// kimi printed.
fn is_binary(line: &str) -> bool {
    if line.bytes().any(|b| b < 0x20 && !matches!(b, b'\t' | b'\r' | 0x1b)) {
        return true;
    }
    let replaced = line.matches('\u{FFFD}').count();
    replaced > 0 && replaced * 8 >= line.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{Agent, Decoder};
    use crate::json::scan::json_of;

    fn run(input: &str) -> Vec<serde_json::Value> {
        let mut d = Decoder::new(Agent::Kimi);
        let mut events = d.feed(input.as_bytes());
        events.extend(d.finish());
        events.iter().map(|e| serde_json::to_value(e).unwrap()).collect()
    }

    #[test]
    fn binary_is_not_failure_text_but_a_few_replaced_bytes_in_a_message_are() {
        assert!(is_binary("ELF\u{1}\u{2}\u{0}abc") && is_binary("\u{FFFD}\u{FFFD}x\u{FFFD}"));
        assert!(!is_binary("Error: upstream said \u{FFFD}chec de la requ\u{FFFD}te (502 Bad Gateway)"));
        assert!(!is_binary("\u{1b}[31merror\u{1b}[0m: quota\t exceeded\r"));
        // A failure message whose middle line holds a few replaced bytes stays one message.
        let events =
            run("Error: the gateway answered:\n\u{FFFD}chec de la requ\u{FFFD}te, r\u{FFFD}essayez\nRetry later.\n");
        assert_eq!(events.len(), 1, "{events:?}");
        assert!(events[0]["update"]["message"].as_str().unwrap().contains("Retry later"), "{events:?}");
    }

    /// Random kimi-shaped lines: the real keys with values of every shape (odd ones, repeated
    /// keys, strings serde_json refuses, cut-short text).
    fn kimi_line() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let scalar = proptest::sample::select(vec![
            "null",
            "true",
            "1",
            "-2.5",
            "1e400",
            r#""""#,
            r#""assistant""#,
            r#""tool""#,
            r#""user""#,
            r#""text""#,
            r#""think""#,
            r#""image_url""#,
            r#""a\nb\"c""#,
            r#""\ud800""#,
            r#""\u00e9""#,
            r#""{\"path\": \"/a\"}""#,
            r#""{\"command\":\"ls\",\"command\":1}""#,
            r#""data:image/png;base64,QUJD""#,
            "[]",
            "{}",
            "[1,[2]]",
            r#"{"\ud800":1}"#,
            r#"{"url":"http://x"}"#,
            r#"{"url":1,"url":2}"#,
            r#"{"x":1e400}"#,
        ])
        .prop_map(str::to_string);
        let key = proptest::sample::select(vec![
            "role",
            "type",
            "content",
            "tool_calls",
            "tool_call_id",
            "session_id",
            "payload",
            "text",
            "think",
            "image_url",
            "audio_url",
            "video_url",
            "url",
            "id",
            "function",
            "name",
            "arguments",
            "other",
        ]);
        let value = scalar.prop_recursive(4, 48, 5, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
                proptest::collection::vec((key.clone(), inner), 0..5).prop_map(|v| {
                    let body: Vec<String> = v.into_iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                    format!("{{{}}}", body.join(","))
                }),
            ]
        });
        let shaped = (value.clone(), value.clone(), value.clone(), value.clone(), 0..3usize).prop_map(|(a, b, c, d, which)| {
            match which {
                0 => format!(
                    r#"{{"role":"assistant","content":[],"tool_calls":[{{"type":"function","id":{a},"function":{{"name":{b},"arguments":{c}}}}},{d}]}}"#
                ),
                1 => format!(r#"{{"role":"tool","tool_call_id":{a},"content":[{{"type":{b},"text":{c}}},{{"type":"image_url","image_url":{d}}}]}}"#),
                _ => format!(r#"{{"role":"assistant","tool_calls":[{{"function":{{"arguments":{a},"name":"Shell"}},"id":"x"}}],"content":{b}}}"#),
            }
        });
        (prop_oneof![value, shaped], 0..400usize, proptest::bool::weighted(0.1)).prop_map(|(v, cut, cut_it)| {
            let v = if v.starts_with('{') { v } else { format!(r#"{{"role":"assistant","content":{v}}}"#) };
            if cut_it { v.chars().take(cut % (v.chars().count() + 1)).collect() } else { v }
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        #[test]
        fn one_pass_read_is_the_derived_read(line in kimi_line()) {
            let ours = format!("{:?}", parse_one_pass(&line));
            let theirs = format!("{:?}", crate::json::lenient::parse_line::<Line<'_>>(&line).map_err(LineOutcome::from));
            proptest::prop_assert_eq!(ours, theirs, "{}", line);
        }
    }

    /// The members `input_key` knows.
    const MEMBERS: [&str; INPUT_KEYS] = [
        "path",
        "file_path",
        "line_offset",
        "content",
        "mode",
        "edit",
        "edits",
        "old",
        "new",
        "old_string",
        "new_string",
        "command",
        "directory",
        "pattern",
        "query",
        "url",
        "description",
        "thought",
        "name",
        "task_id",
        "todos",
    ];

    /// Tool-call arguments: objects of known and unknown members with values of every shape
    /// (repeated keys, values serde_json refuses, nested edits), other values and broken text.
    fn call_arguments() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let mut keys = MEMBERS.to_vec();
        keys.extend(["x", "p\\u0061th"]);
        let key = proptest::sample::select(keys);
        let value = proptest::sample::select(vec![
            "null",
            "true",
            "7",
            "-1",
            "2.0",
            "1e400",
            r#""/a/b""#,
            r#""""#,
            r#""a\nb""#,
            r#""\ud800""#,
            r#"{"old":"a","new":"b"}"#,
            r#"[{"old":"a","new":"b"},{"old":"c"}]"#,
            r#"[{"title":"t","status":"done"}]"#,
            "[1,[2,{}]]",
            r#"{"k":1e400}"#,
        ]);
        let member = (key, value).prop_map(|(k, v)| format!(r#""{k}": {v}"#));
        (proptest::collection::vec(member, 0..9), 0..6usize).prop_map(|(members, shape)| {
            let object = format!("{{{}}}", members.join(", "));
            match shape {
                0 => format!(" {object} "),
                1 => object[..object.len() / 2].to_string(),
                2 => format!("[{object}]"),
                _ => object,
            }
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        #[test]
        fn call_input_one_pass_read_is_the_tree_read(text in call_arguments()) {
            // The tree reads as `serde_json::Value` does (tree.rs tests that).
            let tree = json_of(&text).filter(Json::is_object);
            let mut expected = CallInput::new();
            if let Some(tree) = &tree {
                expected.fill_from_tree(tree);
            }
            let mut ours = CallInput::new();
            let is_object = ours.read(&text);
            proptest::prop_assert_eq!(is_object, tree.is_some(), "{}", text);
            proptest::prop_assert_eq!(&ours.values, &expected.values, "{}", text);
            // The one pass alone never accepts what the tree refuses.
            let mut fast = CallInput::new();
            if fast.scan(&text) {
                proptest::prop_assert!(tree.is_some());
                proptest::prop_assert_eq!(&fast.values, &expected.values, "{}", text);
            }
        }
    }

    #[test]
    fn every_input_member_has_its_own_slot() {
        let keys = MEMBERS;
        let mut slots: Vec<usize> = keys.iter().map(|k| input_key(k).unwrap()).collect();
        slots.sort_unstable();
        assert_eq!(slots, (0..INPUT_KEYS).collect::<Vec<_>>());
        assert_eq!(input_key("other"), None);
    }

    #[test]
    fn diffs_from_every_edit_shape() {
        let call = |name: &str, args: serde_json::Value| {
            let line = serde_json::json!({"role": "assistant", "tool_calls": [
                {"id": "c", "function": {"name": name, "arguments": args.to_string()}}]});
            let ev = run(&format!("{line}\n"));
            let update = &ev[0]["update"];
            let diffs: Vec<_> = update["content"]
                .as_array()
                .map(|c| c.iter().map(|d| (d["path"].clone(), d["oldText"].clone(), d["newText"].clone())).collect())
                .unwrap_or_default();
            diffs.iter().map(|(p, o, n)| format!("{} {o} {n}", p.as_str().unwrap())).collect::<Vec<_>>()
        };
        use serde_json::json;
        let list = json!({"path": "/f", "edit": [{"old": "a\n", "new": "b"}, 3, {"old": "x"}, {"old_string": "c", "new": "d\"q"}]});
        assert_eq!(call("StrReplaceFile", list), ["/f \"a\\n\" \"b\"", "/f \"c\" \"d\\\"q\""]);
        // One edit object; a key printed twice counts by its last value.
        let one = r#"{"file_path": "/g", "edits": {"old": "1", "old": "2", "new": "3"}}"#;
        let line = format!(
            "{{\"role\":\"assistant\",\"tool_calls\":[{{\"id\":\"c\",\"function\":{{\"name\":\"Edit\",\"arguments\":{}}}}}]}}\n",
            serde_json::Value::String(one.into())
        );
        assert_eq!(run(&line)[0]["update"]["content"][0]["oldText"], "2");
        // Claude style at the top level; `old` present but not a string: no diff.
        assert_eq!(call("Edit", json!({"path": "/h", "old_string": "o", "new_string": "n"})), ["/h \"o\" \"n\""]);
        assert!(call("Edit", json!({"path": "/h", "old": 1, "old_string": "o", "new_string": "n"})).is_empty());
        // No path, no diff; append mode, no diff; a written text moves into the diff whole.
        assert!(call("Edit", json!({"old": "o", "new": "n"})).is_empty());
        assert!(call("WriteFile", json!({"path": "/w", "content": "x", "mode": "append"})).is_empty());
        assert_eq!(
            call("WriteFile", json!({"path": "/w", "content": "l1\nl2", "mode": "overwrite"})),
            ["/w null \"l1\\nl2\""]
        );
        assert!(call("WriteFile", json!({"path": "/w", "content": 5})).is_empty());
    }

    #[test]
    fn call_arguments_generator_mixes_outcomes() {
        use proptest::strategy::{Strategy, ValueTree};
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let (mut one_pass, mut by_tree, mut not_object) = (0, 0, 0);
        for _ in 0..3000 {
            let text = call_arguments().new_tree(&mut runner).unwrap().current();
            if CallInput::new().scan(&text) {
                one_pass += 1;
            } else if CallInput::new().read(&text) {
                by_tree += 1;
            } else {
                not_object += 1;
            }
        }
        assert!(one_pass > 300 && by_tree > 100 && not_object > 300, "{one_pass} {by_tree} {not_object}");
    }

    #[test]
    fn kimi_line_generator_mixes_outcomes() {
        use proptest::strategy::{Strategy, ValueTree};
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let mut counts = std::collections::BTreeMap::new();
        for _ in 0..3000 {
            let line = kimi_line().new_tree(&mut runner).unwrap().current();
            let outcome = match parse_one_pass(&line) {
                Ok(l) => format!("ok tool_calls={} content={}", l.tool_calls.is_some(), l.content.is_some()),
                Err(e) => format!("{e:?}"),
            };
            *counts.entry(outcome).or_insert(0) += 1;
        }
        eprintln!("{counts:?}");
        assert!(counts.len() >= 4);
    }

    #[test]
    fn error_marker_only_at_the_start() {
        assert!(is_error_marker("<system>ERROR: Command failed with exit code: 2.</system>"));
        assert!(is_error_marker("  <SYSTEM> error : x"));
        assert!(!is_error_marker("<system>Command executed successfully.</system>"));
        assert!(!is_error_marker("raise ToolError('x') # <error> <system>ERROR: y"));
        assert!(!is_error_marker("<system>ERRORS are fine</system>"));
        assert!(!is_error_marker("<sys"));
    }

    #[test]
    fn quoted_tool_error_is_not_a_failure() {
        let ev = run(concat!(
            r#"{"role":"tool","content":[{"type":"text","text":"<system>Command executed successfully.</system>"},"#,
            r#"{"type":"text","text":"class ToolError(Exception): <error> <system>ERROR: no\n"}],"tool_call_id":"c1"}"#,
            "\n"
        ));
        assert_eq!(ev[0]["update"]["status"], "completed");
    }

    #[test]
    fn a_flood_of_plain_text_is_delivered_in_bounded_error_updates() {
        let line = "E".repeat(1000);
        let input = format!("{line}\n").repeat(1000);
        let mut d = KimiDecoder::default();
        let mut ctx = DecodeContext::default();
        let mut out = Vec::new();
        let mut biggest = 0;
        for l in input.lines() {
            d.decode_line(l, &mut ctx, &mut out);
            biggest = biggest.max(d.pending_error.as_ref().map_or(0, String::len));
        }
        d.finish(&mut ctx, &mut out);
        assert!(biggest <= MAX_ERROR_TEXT, "held {biggest} bytes");
        let texts: Vec<String> = out
            .iter()
            .map(|e| match &e.update {
                SessionUpdate::Error { message, fatal: true } => message.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert!(texts.len() > 1 && texts.iter().all(|t| t.len() <= MAX_ERROR_TEXT));
        assert_eq!(texts.join("\n"), input.trim_end(), "every line, in order, nothing dropped");
    }

    #[test]
    fn plain_text_failure_lines_join_into_one_fatal_error() {
        let mut d = Decoder::new(Agent::Kimi);
        let input = "Error code: 401 - {'error': {'message': 'Incorrect API key provided: sk-test-dum\nmy (mock)', 'type': 'x'}}\n";
        let mut ev = d.feed(input.as_bytes());
        assert!(ev.is_empty(), "held until the message ends");
        ev.extend(d.finish());
        assert_eq!(ev.len(), 1);
        assert_eq!(
            ev[0].update,
            SessionUpdate::error(
                "Error code: 401 - {'error': {'message': 'Incorrect API key provided: sk-test-dum\nmy (mock)', 'type': 'x'}}",
                true
            )
        );
        assert_eq!(d.stats().invalid_json, 2);
    }

    #[test]
    fn id_less_calls_are_answered_in_order() {
        let ev = run(concat!(
            r#"{"role":"assistant","content":[],"tool_calls":[{"type":"function","function":{"name":"Shell","arguments":"{\"command\":\"a\"}"}},{"type":"function","function":{"name":"Shell","arguments":"{\"command\":\"b\"}"}}]}"#,
            "\n",
            r#"{"role":"tool","content":"one"}"#,
            "\n",
            r#"{"role":"tool","content":"two"}"#,
            "\n"
        ));
        assert_eq!(ev[0]["update"]["toolCallId"], "kimi_Shell_1");
        assert_eq!(ev[1]["update"]["toolCallId"], "kimi_Shell_2");
        assert_eq!(ev[2]["update"]["toolCallId"], "kimi_Shell_1");
        assert_eq!(ev[3]["update"]["toolCallId"], "kimi_Shell_2");
    }

    #[test]
    fn unparsable_arguments_stay_a_raw_string() {
        let ev = run(
            "{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"b1\",\"function\":{\"name\":\"Shell\",\"arguments\":\"not json\"}}]}\n",
        );
        assert_eq!(ev[0]["update"]["rawInput"], "not json");
        assert_eq!(ev[0]["update"]["title"], "Run command");
    }

    #[test]
    fn the_stderr_resume_hint_gives_the_session_id_in_any_chunking() {
        let stderr = "warming up\nTo resume this session: kimi -r 40976034-6a9b-40bd-a741-6026ffa0f11b\n";
        for split in 0..stderr.len() {
            let mut d = crate::Decoder::new(crate::Agent::Kimi);
            d.observe_stderr(&stderr[..split]);
            d.observe_stderr(&stderr[split..]);
            assert_eq!(d.session_id(), Some("40976034-6a9b-40bd-a741-6026ffa0f11b"), "split at {split}");
        }
        let mut d = crate::Decoder::new(crate::Agent::Kimi);
        d.observe_stderr("To resume this session: kimi -r 4097");
        assert_eq!(d.session_id(), None, "an id is taken only once it is complete");
        let mut d = crate::Decoder::new(crate::Agent::Claude);
        d.observe_stderr(stderr);
        assert_eq!(d.session_id(), None, "only kimi prints its session there");
    }

    #[test]
    fn resume_hint_sets_the_session_for_later_events() {
        let ev = run(concat!(
            r#"{"role":"meta","type":"session.resume_hint","session_id":"session_1","content":"To resume"}"#,
            "\n",
            r#"{"role":"assistant","content":"hi"}"#,
            "\n"
        ));
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0]["sessionId"], "session_1");
    }
}
