//! The Claude-protocol `stream-json` dialect shared by Claude Code and Qwen Code.
//!
//! Both CLIs print the Claude Agent SDK message shapes: `system`, `assistant`, `user`, `result`
//! and (with `--include-partial-messages`) `stream_event` lines that wrap raw Anthropic SSE
//! events. This module holds what is truly common: the typed wire structs (decoded once per
//! line, strings borrowed from it, odd shapes tolerated field by field), content and image
//! conversion, tool-result content, todo lists, usage arithmetic helpers, and the line driver
//! [`Protocol`]. What differs per harness (tool titles, plan tools, usage arithmetic, how API
//! failures are printed) is a [`Dialect`], implemented in `claude.rs` and `qwen.rs`.
//!
//! | line | events (common part) |
//! |---|---|
//! | `system` `init` | none; its `session_id` becomes the run's session id |
//! | other `system` | dialect (claude `api_retry` → non-fatal `error`); otherwise none |
//! | `assistant` | one event per content block, in order: `text` → `agent_message_chunk`, `thinking` → `agent_thought_chunk`, `image` → image `agent_message_chunk`, `tool_use`/`server_tool_use`/`mcp_tool_use` → dialect (`tool_call` or `plan`); `redacted_thinking` and unknown blocks are skipped. Then `usage{scope:"call"}` from `message.usage` (dialect arithmetic) — given before the line's first tool call instead, when it has one: a reply that asks for a tool is complete, and the `model.completed` hook derived at the call carries the usage given by then. Envelope: `messageId` = `message.id`, `model` = `message.model`, `parentToolCallId` = `parent_tool_use_id`, `extra.stop_reason` when non-null |
//! | `user` | string content or `text`/`image` blocks → `user_message_chunk` (the prompt echo, also a subagent's prompt); `tool_result` blocks → `tool_call_update` (status `failed` iff `is_error: true`, content = the result's text/image blocks verbatim, `rawOutput` = the line's top-level `tool_use_result` when the line holds one result). Orphan results are emitted. Envelope: `timestamp`, `parentToolCallId` |
//! | `result` | `is_error: true` → `error{fatal:true}` (the `result` text, else `errors`, else `error.message`, else `subtype`); then `usage{scope:"run"}` (dialect). Envelope `extra`: `subtype`, `num_turns`, `duration_ms`, `duration_api_ms`, `stop_reason`, `terminal_reason`, `api_error_status`, non-empty `permission_denials` |
//! | `stream_event` | see "Partial messages" below |
//! | other types | none, counted as unknown |
//!
//! ## Partial messages (`--include-partial-messages`)
//!
//! Both CLIs print the raw SSE events AND the complete `assistant` lines afterwards. To stream in
//! real time without duplicates: `text_delta` / `thinking_delta` (and non-empty text in a
//! `content_block_start`) are emitted at once as chunks, and their text is remembered per scope
//! (`parent_tool_use_id`). A complete `assistant` text/thinking block is then reconciled with
//! what was streamed: the streamed prefix is consumed and only a remainder the stream did not
//! carry is emitted (a block that does not continue the streamed text is emitted whole). Tool
//! calls are taken from the complete lines only (their `input` is authoritative), so
//! `input_json_delta`s are ignored. Deltas carry the `messageId` and `model` of the scope's
//! `message_start` (qwen: the model of the scope's last complete line when its turn's
//! `message_start` is behind it). `message_delta` usage (the message's final output count) is
//! emitted as one more `usage{scope:"call"}` for that message, merged over its `message_start`
//! usage (counts are cumulative: the larger report wins), so "last call usage per messageId" is
//! the final one. Buffers are dropped at `message_start`, `user` and `result` lines (text of an
//! abandoned stream attempt never swallows later text).
//!
//! ## Decoding cost
//!
//! Each line is read once, by the validating scanner of [`crate::json::scan`], into the structs
//! below: keys are matched as printed, strings borrow from the line unless they hold escapes,
//! big irrelevant values (init tool lists, slash commands, uuids) are skipped without being
//! built. `rawInput` / `rawOutput` are the printed text of the tool input and of
//! `tool_use_result` ([`RawJson`], one copy, no tree); a tool's arguments are read from that
//! text once, into borrowed strings, when its title or content needs them. Only what an event
//! holds as a `serde_json::Value` (usage and envelope `extra`) is built as one, in the same pass
//! and at its exact size. The updates of a line are collected and stamped with the line's
//! envelope once, the envelope moving into the last event.
//!
//! The scanner accepts exactly the lines serde_json accepts, and a known key printed twice still
//! makes the line unusable, as serde's derived structs did. Where a value is now kept as printed
//! or skipped instead of being built (tool inputs, `tool_use_result`, a non-string value in a
//! string field), a number beyond `f64` or a lone surrogate escape in it no longer makes the
//! whole line unusable.

mod describe;
mod partial;
mod wire;

pub(crate) use self::describe::*;
pub(crate) use self::partial::*;
pub(crate) use self::wire::*;

use std::borrow::Cow;

use serde_json::Value;

use crate::decode::LineOutcome;
use crate::decode::context::{DecodeContext, Envelope};
use crate::event::{
    ContentBlock, ImageContent, JsonObject, OutputEvent, RawJson, SessionUpdate, SharedStr, TokenUsage,
    ToolCallContent, ToolCallStatus, ToolCallUpdate, UsageScope,
};
use crate::json::raw_record::ObjectMembers;

/// Set `key` of `extra` to `raw` as printed, unless it is absent, `null` or not a value a JSON
/// reader takes.
pub(crate) fn put<'a>(extra: &mut ObjectMembers<'a>, key: &'static str, raw: Raw<'a>) {
    if let Some(raw) = checked(raw) {
        extra.insert(Cow::Borrowed(key), raw);
    }
}

// ------------------------------------------------------------------------------------------
// Content helpers
// ------------------------------------------------------------------------------------------

/// An image block (base64 `source`, URL `source`, or the flat MCP `{data, mimeType}` form).
pub(crate) fn image(block: &Block<'_>) -> Option<ImageContent> {
    if let Some(src) = &block.source.0 {
        if let Some(url) = src.url.non_empty().filter(|_| src.kind.get() == Some("url") || src.data.get().is_none()) {
            return Some(ImageContent { data: String::new(), mime_type: String::new(), uri: Some(url.to_string()) });
        }
        if let Some(data) = src.data.get() {
            return Some(ImageContent {
                data: data.to_string(),
                mime_type: src.media_type.get().unwrap_or_default().to_string(),
                uri: None,
            });
        }
    }
    block.data.get().map(|data| ImageContent {
        data: data.to_string(),
        mime_type: block.mime_type.get().unwrap_or_default().to_string(),
        uri: None,
    })
}

/// Tool-result content exactly as the harness sent it: a string is one text block; a list keeps
/// its text and image blocks in order, and the tools a `ToolSearch` found (`tool_reference`
/// blocks) as one text block naming them, one per line (other block kinds carry nothing a person
/// reads). `None` when there is nothing to show.
pub(crate) fn result_content(content: Content<'_>) -> Option<Vec<ToolCallContent>> {
    let items: Vec<ToolCallContent> = match content {
        Content::None => return None,
        Content::Text(t) if t.is_empty() => return None,
        Content::Text(t) => vec![ToolCallContent::text(t.into_owned())],
        Content::Blocks(blocks) => {
            let mut items = Vec::with_capacity(blocks.len());
            // Consecutive references make one block: the hook view joins blocks without a separator.
            let mut references: Option<String> = None;
            for b in blocks {
                if b.kind.get() == Some("tool_reference") {
                    if let Some(name) = b.tool_name.non_empty() {
                        match &mut references {
                            Some(names) => {
                                names.push('\n');
                                names.push_str(name);
                            }
                            None => references = Some(name.to_string()),
                        }
                    }
                    continue;
                }
                if let Some(names) = references.take() {
                    items.push(ToolCallContent::text(names));
                }
                match BlockKind::of(&b) {
                    BlockKind::Text => {
                        if let Some(t) = b.text.into_inner().filter(|t| !t.is_empty()) {
                            items.push(ToolCallContent::text(t.into_owned()));
                        }
                    }
                    BlockKind::Image => {
                        if let Some(img) = image(&b) {
                            items.push(ToolCallContent::Content { content: ContentBlock::Image(img) });
                        }
                    }
                    _ => {}
                }
            }
            if let Some(names) = references {
                items.push(ToolCallContent::text(names));
            }
            items
        }
    };
    (!items.is_empty()).then_some(items)
}

/// The text of a list of content blocks (text blocks joined), or the string content.
pub(crate) fn joined_text(content: &Content<'_>) -> String {
    match content {
        Content::None => String::new(),
        Content::Text(t) => t.to_string(),
        Content::Blocks(blocks) => blocks.iter().filter_map(|b| b.text.get()).collect::<Vec<_>>().join("\n"),
    }
}

// ------------------------------------------------------------------------------------------
// Usage helpers
// ------------------------------------------------------------------------------------------

/// A counter of a JSON object (a non-negative integer).
pub(crate) fn counter(obj: &JsonObject, key: &str) -> Option<u64> {
    obj.get(key).and_then(Value::as_u64)
}

/// Which printed counters make up `promptTokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Prompt {
    /// `input_tokens` excludes the cache shares: add `cache_read_input_tokens` and
    /// `cache_creation_input_tokens` (claude).
    PlusCache,
    /// `input_tokens` already includes the cache reads (qwen).
    InputOnly,
}

/// Build a [`TokenUsage`]: the `prompt` counters summed into `promptTokens` (absent when none
/// is printed), `output_tokens` → `completionTokens`, `cache_read_input_tokens` →
/// `cachedTokens`; every other key into `extra` verbatim.
pub(crate) fn token_usage(u: Usage, prompt: Prompt) -> TokenUsage {
    let parts = match prompt {
        Prompt::PlusCache => [u.input, u.cache_read, u.cache_creation],
        Prompt::InputOnly => [u.input, None, None],
    };
    let prompt_tokens = crate::counters::sum("prompt tokens", parts);
    TokenUsage {
        prompt_tokens,
        completion_tokens: u.output,
        cached_tokens: u.cache_read,
        cost_usd: None,
        extra: u.rest,
    }
}

// ------------------------------------------------------------------------------------------
// The dialect and the line driver
// ------------------------------------------------------------------------------------------

/// The updates decoded from one line, stamped with the line's envelope at the end.
pub(crate) type Updates = Vec<SessionUpdate>;

/// A finished tool result, before the dialect decides how to surface it.
pub(crate) struct ToolResult<'l> {
    /// The call it answers.
    pub id: String,
    /// `failed` when the harness flagged `is_error: true`, else `completed`.
    pub status: ToolCallStatus,
    /// The result content verbatim.
    pub content: Option<Vec<ToolCallContent>>,
    /// The harness's structured record (claude `tool_use_result`), as printed.
    pub raw_output: Option<&'l str>,
}

impl ToolResult<'_> {
    /// The structured record parsed (for the few dialect rules that look inside it).
    pub fn raw_output_value(&self) -> Option<Value> {
        self.raw_output.and_then(|r| serde_json::from_str(r).ok())
    }

    /// The first text of the content.
    pub fn text(&self) -> Option<&str> {
        self.content.iter().flatten().find_map(|c| match c {
            ToolCallContent::Content { content } => content.as_text(),
            ToolCallContent::Diff(_) => None,
        })
    }

    /// The `tool_call_update` for this result.
    pub fn update(self) -> SessionUpdate {
        SessionUpdate::ToolCallUpdate(ToolCallUpdate {
            tool_call_id: self.id,
            status: Some(self.status),
            title: None,
            content: self.content,
            locations: None,
            raw_output: self.raw_output.map(raw_json),
        })
    }
}

/// What differs between the harnesses speaking this protocol.
pub(crate) trait Dialect: Send {
    /// Each `assistant` line finalizes its message (qwen): a streamed message id is not carried
    /// past one, while the line's model is kept for the scope's later deltas (qwen's
    /// `message_start` comes once per turn, and never for a subagent). Claude prints one line per
    /// content block of a continuing message.
    const LINE_ENDS_MESSAGE: bool;

    /// One LLM call's usage, with this harness's arithmetic.
    fn call_usage(&self, usage: Usage) -> TokenUsage;

    /// The run total of a `result` line (its usage fields may be taken).
    fn run_usage(&self, line: &mut Line<'_>) -> Option<TokenUsage>;

    /// A `system` line other than `init`; `env` holds the line's timestamp and parent.
    fn system(&mut self, _line: &Line<'_>, _env: &mut Envelope, _out: &mut Updates) {}

    /// True when an `assistant` line reports a harness failure instead of model output.
    fn is_failure(&self, _line: &Line<'_>, _message: &Message<'_>) -> bool {
        false
    }

    /// Assistant text to emit (after stream reconciliation).
    fn text(&mut self, text: String, out: &mut Updates) {
        out.push(SessionUpdate::message(text));
    }

    /// Where a failure the harness glued to the end of the reply starts in `text`, when it ends
    /// with one (qwen's `[API Error: …]`). Streamed text ending so is held back until it goes
    /// on (then it was the model's words) or ends (the failure): see `Protocol::delta`.
    fn trailing_failure(&self, _text: &str) -> Option<usize> {
        None
    }

    /// Where a tail of streamed `text` that may still become such a failure starts (the next
    /// delta may finish it: `…[API Err` + `or: 500 …]`). Held back like a failure; when the text
    /// ends before it became one, it is the model's text after all.
    fn failure_may_start(&self, _text: &str) -> Option<usize> {
        None
    }

    /// A tool call block.
    fn tool_use(&mut self, call: ToolUse<'_>, out: &mut Updates);

    /// A tool result block.
    fn tool_result(&mut self, result: ToolResult<'_>, out: &mut Updates) {
        out.push(result.update());
    }
}

/// Stamp a line's updates with its envelope (moved into the last event, cloned for the others).
/// `updates` is drained, keeping its capacity for the next line.
fn stamp(env: Envelope, ctx: &DecodeContext, updates: &mut Updates, out: &mut Vec<OutputEvent>) {
    let mut updates = updates.drain(..).peekable();
    while let Some(update) = updates.next() {
        if updates.peek().is_some() {
            out.push(env.event(ctx, update));
        } else {
            out.push(env.into_event(ctx, update));
            break;
        }
    }
}

/// The line types of the protocol.
#[derive(Clone, Copy)]
enum LineKind {
    System,
    Assistant,
    User,
    Result,
    StreamEvent,
    Unknown,
}

/// The line driver shared by the claude and qwen decoders.
#[derive(Debug, Default)]
pub(crate) struct Protocol<D> {
    /// The harness specifics.
    pub dialect: D,
    streams: Streams,
    /// The current line's updates (a reused buffer).
    updates: Updates,
    /// The scanner's buffer for building objects (reused).
    scratch: Vec<(String, Value)>,
    /// The text of the last fatal error of the current turn (the `result` line ends a turn).
    turn_fatal: Option<String>,
    /// Streamed text held back per agent (`parent_tool_use_id`): a delta that ended in what
    /// [`Dialect::trailing_failure`] finds.
    held: Vec<(Option<String>, String)>,
    /// The run's usage over the `result` lines so far (claude prints a second one after a
    /// background task): each `usage{scope:"run"}` is the running total (decisions.md §1).
    run_so_far: Option<TokenUsage>,
    /// The session of the last `init` line: an `init` of ANOTHER session (recorded runs
    /// concatenated into one input) starts a new total; claude's re-entry keeps its session.
    init_session: Option<String>,
}

impl<D: Dialect> Protocol<D> {
    /// Decode one line.
    pub fn decode_line(&mut self, text: &str, ctx: &mut DecodeContext, out: &mut Vec<OutputEvent>) -> LineOutcome {
        let mut line = Line::default();
        if let Err(outcome) = line.parse(text, &mut self.scratch) {
            return outcome;
        }
        ctx.see_session(line.session_id.get());
        let kind = match line.kind.get() {
            Some("system") => LineKind::System,
            Some("assistant") => LineKind::Assistant,
            Some("user") => LineKind::User,
            Some("result") => LineKind::Result,
            Some("stream_event") => LineKind::StreamEvent,
            _ => LineKind::Unknown,
        };
        let mut updates = std::mem::take(&mut self.updates);
        let mut env = Envelope {
            timestamp: line.timestamp.non_empty().map(SharedStr::from),
            parent_tool_call_id: ctx.parents.share_opt(line.parent_tool_use_id.non_empty()),
            ..Envelope::default()
        };
        // A line of the agent whose streamed text is held ends that text (an assistant line
        // reconciles it first; a result ends every agent's turn).
        match kind {
            LineKind::Result => self.give_held(|_| true, env.timestamp.as_ref(), ctx, out),
            LineKind::System | LineKind::User => {
                let scope = line.parent_tool_use_id.non_empty();
                self.give_held(|s| s == scope, env.timestamp.as_ref(), ctx, out);
            }
            LineKind::Assistant | LineKind::StreamEvent | LineKind::Unknown => {}
        }
        let outcome = match kind {
            LineKind::System => {
                if line.subtype.get() == Some("init") {
                    // A (re-)start: claude re-enters after a background task with a second init,
                    // and that segment ends with its own `result`.
                    ctx.final_result_seen = false;
                    let session = line.session_id.get();
                    if session != self.init_session.as_deref() {
                        if self.init_session.is_some() {
                            self.run_so_far = None;
                        }
                        self.init_session = session.map(str::to_string);
                    }
                } else {
                    self.dialect.system(&line, &mut env, &mut updates);
                }
                LineOutcome::Decoded
            }
            LineKind::Assistant => self.assistant(&mut line, ctx, &mut env, &mut updates),
            LineKind::User => self.user(&mut line, &mut env, &mut updates),
            LineKind::Result => {
                ctx.final_result_seen = true;
                self.result(&mut line, &mut env, &mut updates)
            }
            LineKind::StreamEvent => self.stream_event(&mut line, ctx, &mut env, &mut updates),
            LineKind::Unknown => LineOutcome::UnknownType,
        };
        // (A result line ends the turn: `result` forgets the turn's fatal error itself.)
        let fatal = updates.iter().rev().find_map(|u| match u {
            SessionUpdate::Error { message, fatal: true } => Some(message),
            _ => None,
        });
        if let Some(message) = fatal.filter(|_| !matches!(kind, LineKind::Result)) {
            self.turn_fatal = Some(message.clone());
        }
        stamp(env, ctx, &mut updates, out);
        self.updates = updates;
        outcome
    }

    /// The most of a held tail kept held: a longer one is the model's text (a failure message is
    /// short), delivered as such.
    const MAX_HELD: usize = 64 * 1024;

    /// The streamed text held back for `scope`, if any (taken).
    fn take_held(&mut self, scope: Option<&str>) -> Option<String> {
        let at = self.held.iter().position(|(s, _)| s.as_deref() == scope)?;
        Some(self.held.swap_remove(at).1)
    }

    /// `scope`'s streamed text ended: what was held back is the failure (or, when it never
    /// became one, the model's text).
    fn release_held(&mut self, scope: Option<&str>, updates: &mut Updates) {
        if let Some(held) = self.take_held(scope) {
            self.held_ended(held, updates);
        }
    }

    /// The streamed text of the agents `ended` picks ended with a line that is not theirs to
    /// stamp (a `result` ends every agent's, a `system` or `user` line its agent's, the end of
    /// input every agent's): what was held for each is given before that line's events, with its
    /// own agent's envelope — its parent call, and the model and id of the message it streamed.
    fn give_held(
        &mut self,
        ended: impl Fn(Option<&str>) -> bool,
        timestamp: Option<&SharedStr>,
        ctx: &DecodeContext,
        out: &mut Vec<OutputEvent>,
    ) {
        if self.held.is_empty() {
            return;
        }
        let (given, kept) = std::mem::take(&mut self.held).into_iter().partition(|(s, _)| ended(s.as_deref()));
        self.held = kept;
        for (scope, held) in given {
            let mut updates = Updates::new();
            self.held_ended(held, &mut updates);
            let streamed = self.streams.scope(scope.as_deref());
            let env = Envelope {
                timestamp: timestamp.cloned(),
                model: streamed.model.clone(),
                message_id: streamed.message_id.clone(),
                parent_tool_call_id: scope.as_deref().map(SharedStr::from),
                ..Envelope::default()
            };
            stamp(env, ctx, &mut updates, out);
        }
    }

    /// A held tail whose text ended: a whole failure is a fatal error, and the turn's (the
    /// `result` that repeats it is not a second one); the beginning of one that never came is
    /// the model's text.
    fn held_ended(&mut self, held: String, updates: &mut Updates) {
        if self.dialect.trailing_failure(&held) != Some(0) {
            updates.push(SessionUpdate::message(held));
            return;
        }
        self.turn_fatal = Some(held.clone());
        updates.push(SessionUpdate::error(held, true));
    }

    /// A stream event ended `parent`'s streamed text: what was held is given, attributed to the
    /// streamed message as its deltas were.
    fn streamed_text_ended(&mut self, parent: Option<&str>, env: &mut Envelope, out: &mut Updates) {
        let before = out.len();
        self.release_held(parent, out);
        if out.len() > before {
            let scope = self.streams.scope(parent);
            env.model = scope.model.clone();
            env.message_id = scope.message_id.clone();
        }
    }

    /// The end of input: streamed text still held back is the failure.
    pub fn finish(&mut self, ctx: &DecodeContext, out: &mut Vec<OutputEvent>) {
        self.give_held(|_| true, None, ctx, out);
    }

    fn assistant(
        &mut self,
        line: &mut Line<'_>,
        ctx: &mut DecodeContext,
        env: &mut Envelope,
        out: &mut Updates,
    ) -> LineOutcome {
        let Some(msg) = line.message.0.take() else { return LineOutcome::UnexpectedShape };
        let line = &*line;
        let parent = line.parent_tool_use_id.non_empty();
        let mut extra = ObjectMembers::default();
        put(&mut extra, "stop_reason", msg.stop_reason);
        put(&mut extra, "tool_use_meta", line.tool_use_meta);
        put(&mut extra, "subagent_type", line.subagent_type);
        put(&mut extra, "task_description", line.task_description);
        let failure = self.dialect.is_failure(line, &msg);
        if failure {
            put(&mut extra, "error", line.facts().error);
        }
        env.model = ctx.models.share_opt(msg.model.non_empty());
        env.message_id = ctx.message_ids.share_opt(msg.id.non_empty());
        env.extra = extra.into_raw_json();
        if failure {
            // A harness-made message standing in for an API failure: an error, not model text,
            // and no LLM call to meter.
            let mut message = joined_text(&msg.content);
            if message.is_empty() {
                message = value(line.facts().error).map(|v| crate::json::lenient::display_text(&v)).unwrap_or_default();
            }
            out.push(SessionUpdate::error(message, true));
            self.streams.clear_text(parent);
            return LineOutcome::Decoded;
        }
        let Message { content, usage, .. } = msg;
        let mut usage = usage.0;
        match content {
            Content::Text(t) => self.assistant_text(parent, Piece::Text, t, out),
            Content::Blocks(blocks) => {
                for block in blocks {
                    // The reply is complete once it asks for a tool: the call's usage, printed on
                    // the same line, comes before the call, so that `model.completed` carries it.
                    let asks_for_a_tool = matches!(BlockKind::of(&block), BlockKind::Call);
                    if asks_for_a_tool {
                        // The text before the call ended (its stream may not have said so).
                        self.release_held(parent, out);
                    }
                    if let Some(u) = usage.take_if(|_| asks_for_a_tool) {
                        out.push(self.call_usage(u));
                    }
                    self.assistant_block(block, parent, out);
                }
            }
            Content::None => {}
        }
        // The complete line has the whole reply: streamed text still held ended there.
        self.release_held(parent, out);
        if let Some(u) = usage {
            out.push(self.call_usage(u));
        }
        if D::LINE_ENDS_MESSAGE {
            self.streams.line_ended_message(parent, env.model.as_ref());
        }
        LineOutcome::Decoded
    }

    /// The `usage{scope:"call"}` update of an assistant line's `message.usage`.
    fn call_usage(&self, usage: Usage) -> SessionUpdate {
        SessionUpdate::Usage { scope: UsageScope::Call, usage: self.dialect.call_usage(usage) }
    }

    fn assistant_text(&mut self, parent: Option<&str>, piece: Piece, full: Cow<'_, str>, out: &mut Updates) {
        let start = self.streams.reconcile(parent, piece, &full);
        if start >= full.len() {
            return;
        }
        let mut text = if start == 0 { full.into_owned() } else { full[start..].to_string() };
        if let (Piece::Text, Some(held)) = (piece, self.take_held(parent)) {
            // The complete line shows the streamed text went on after the held part.
            text.insert_str(0, &held);
        }
        match piece {
            Piece::Text => self.dialect.text(text, out),
            Piece::Thought => out.push(SessionUpdate::thought(text)),
        }
    }

    fn assistant_block(&mut self, block: Block<'_>, parent: Option<&str>, out: &mut Updates) {
        match BlockKind::of(&block) {
            BlockKind::Text => {
                if let Some(t) = block.text.into_inner() {
                    self.assistant_text(parent, Piece::Text, t, out);
                }
            }
            BlockKind::Thinking => {
                if let Some(t) = block.thinking.into_inner() {
                    self.assistant_text(parent, Piece::Thought, t, out);
                }
            }
            BlockKind::Image => {
                if let Some(img) = image(&block) {
                    out.push(SessionUpdate::AgentMessageChunk { content: ContentBlock::Image(img) });
                }
            }
            BlockKind::Call => {
                let Block { id, name, input, .. } = block;
                let (Some(id), Some(name)) = (id.get(), name.get()) else { return };
                self.dialect.tool_use(ToolUse::new(id, name, input).in_scope(parent), out);
            }
            BlockKind::Result => self.tool_result(block, None, out),
            BlockKind::Other => {}
        }
    }

    fn tool_result<'l>(&mut self, block: Block<'l>, raw_output: Option<&'l str>, out: &mut Updates) {
        let Block { tool_use_id, is_error, content, .. } = block;
        let Some(id) = tool_use_id.into_inner() else { return };
        let status = if is_true(is_error) { ToolCallStatus::Failed } else { ToolCallStatus::Completed };
        let result = ToolResult { id: id.into_owned(), status, content: result_content(content), raw_output };
        self.dialect.tool_result(result, out);
    }

    fn user(&mut self, line: &mut Line<'_>, env: &mut Envelope, out: &mut Updates) -> LineOutcome {
        let Some(msg) = line.message.0.take() else { return LineOutcome::UnexpectedShape };
        let raw_output = line.tool_use_result.take();
        let parent = line.parent_tool_use_id.non_empty();
        self.streams.clear_text(parent);
        let mut extra = ObjectMembers::default();
        put(&mut extra, "subagent_type", line.subagent_type);
        put(&mut extra, "task_description", line.task_description);
        env.extra = extra.into_raw_json();
        match msg.content {
            Content::Text(t) if !t.is_empty() => out.push(SessionUpdate::user_message(t.into_owned())),
            Content::Blocks(blocks) => {
                let results = blocks.iter().filter(|b| BlockKind::of(b) == BlockKind::Result).count();
                // `tool_use_result` describes the line's one result; with several it is ambiguous.
                let mut raw_output = raw_output.filter(|_| results == 1);
                for block in blocks {
                    match BlockKind::of(&block) {
                        BlockKind::Text => {
                            if let Some(t) = block.text.into_inner().filter(|t| !t.is_empty()) {
                                out.push(SessionUpdate::user_message(t.into_owned()));
                            }
                        }
                        BlockKind::Image => {
                            if let Some(img) = image(&block) {
                                out.push(SessionUpdate::UserMessageChunk { content: ContentBlock::Image(img) });
                            }
                        }
                        BlockKind::Result => self.tool_result(block, raw_output.take(), out),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        LineOutcome::Decoded
    }

    fn result(&mut self, line: &mut Line<'_>, env: &mut Envelope, out: &mut Updates) -> LineOutcome {
        self.streams.clear();
        let mut extra = ObjectMembers::default();
        if let Some(s) = line.subtype.get() {
            extra.insert_text(Cow::Borrowed("subtype"), s);
        }
        put(&mut extra, "num_turns", line.facts().num_turns);
        put(&mut extra, "duration_ms", line.facts().duration_ms);
        put(&mut extra, "duration_api_ms", line.facts().duration_api_ms);
        put(&mut extra, "stop_reason", line.facts().stop_reason);
        put(&mut extra, "terminal_reason", line.facts().terminal_reason);
        put(&mut extra, "api_error_status", line.facts().api_error_status);
        let denials = line.facts().permission_denials;
        if value(denials).is_some_and(|v| v.as_array().is_some_and(|a| !a.is_empty())) {
            put(&mut extra, "permission_denials", denials);
        }
        env.extra = extra.into_raw_json();
        if is_true(line.facts().is_error) {
            let message = result_error(line);
            // Claude's failing turn prints its error twice: a synthetic assistant message, then
            // the `result`. One fatal error per failure; the result's facts (`extra`) still
            // arrive, on its run usage.
            if !self.turn_fatal.as_deref().is_some_and(|said| same_failure(said, &message)) {
                out.push(SessionUpdate::error(message, true));
            }
        }
        self.turn_fatal = None;
        if let Some(usage) = self.dialect.run_usage(line) {
            let usage = match self.run_so_far.take() {
                Some(earlier) => running_total(earlier, usage),
                None => usage,
            };
            self.run_so_far = Some(usage.clone());
            out.push(SessionUpdate::Usage { scope: UsageScope::Run, usage });
        }
        LineOutcome::Decoded
    }

    fn stream_event(
        &mut self,
        line: &mut Line<'_>,
        ctx: &mut DecodeContext,
        env: &mut Envelope,
        out: &mut Updates,
    ) -> LineOutcome {
        let Some(ev) = line.event.0.take() else { return LineOutcome::UnexpectedShape };
        let parent = line.parent_tool_use_id.non_empty();
        let StreamEvent { kind, message, content_block, delta, usage } = *ev;
        match kind.get().unwrap_or_default() {
            "message_start" => {
                self.streamed_text_ended(parent, env, out);
                let scope = self.streams.start_message(parent);
                let msg = message.0;
                scope.message_id = ctx.message_ids.share_opt(msg.as_ref().and_then(|m| m.id.non_empty()));
                scope.model = ctx.models.share_opt(msg.as_ref().and_then(|m| m.model.non_empty()));
                scope.start_usage = msg.and_then(|m| m.usage.0);
                self.streams.forget_if_blank(parent);
            }
            "content_block_start" => {
                if let Some(block) = content_block.0 {
                    match BlockKind::of(&block) {
                        BlockKind::Text => self.delta(parent, Piece::Text, block.text.into_inner(), env, out),
                        BlockKind::Thinking => {
                            self.delta(parent, Piece::Thought, block.thinking.into_inner(), env, out)
                        }
                        _ => {}
                    }
                }
            }
            "content_block_delta" => {
                if let Some(delta) = delta.0 {
                    match delta.kind.get() {
                        Some("text_delta") => self.delta(parent, Piece::Text, delta.text.into_inner(), env, out),
                        Some("thinking_delta") => {
                            self.delta(parent, Piece::Thought, delta.thinking.into_inner(), env, out)
                        }
                        _ => {}
                    }
                }
            }
            "message_delta" => {
                if let Some(usage) = usage.0 {
                    let scope = self.streams.scope(parent);
                    let mut merged = scope.start_usage.take().unwrap_or_default();
                    merged.merge(usage);
                    scope.start_usage = Some(merged.clone());
                    let mut extra = ObjectMembers::default();
                    put(&mut extra, "stop_reason", delta.0.as_ref().and_then(|d| d.stop_reason));
                    env.model = scope.model.clone();
                    env.message_id = scope.message_id.clone();
                    env.extra = extra.into_raw_json();
                    let usage = self.dialect.call_usage(merged);
                    out.push(SessionUpdate::Usage { scope: UsageScope::Call, usage });
                }
            }
            "content_block_stop" => self.streamed_text_ended(parent, env, out),
            "message_stop" => {
                self.streamed_text_ended(parent, env, out);
                self.streams.end_message(parent);
            }
            _ => {}
        }
        LineOutcome::Decoded
    }

    fn delta(
        &mut self,
        parent: Option<&str>,
        piece: Piece,
        text: Option<Cow<'_, str>>,
        env: &mut Envelope,
        out: &mut Updates,
    ) {
        let Some(text) = text.filter(|t| !t.is_empty()) else { return };
        self.streams.push(parent, piece, &text);
        let scope = self.streams.scope(parent);
        env.model = scope.model.clone();
        env.message_id = scope.message_id.clone();
        match piece {
            Piece::Text => {
                let mut text = text.into_owned();
                if let Some(held) = self.take_held(parent) {
                    text.insert_str(0, &held);
                }
                let failure = self.dialect.trailing_failure(&text).or_else(|| self.dialect.failure_may_start(&text));
                match failure.filter(|&at| text.len() - at <= Self::MAX_HELD) {
                    Some(at) => {
                        // Decided when this agent's text goes on or ends.
                        self.held.push((parent.map(str::to_string), text.split_off(at)));
                        if !text.is_empty() {
                            out.push(SessionUpdate::message(text));
                        }
                    }
                    None => self.dialect.text(text, out),
                }
            }
            Piece::Thought => {
                // The reply goes on after what was held: it was the model's words.
                if let Some(held) = self.take_held(parent) {
                    out.push(SessionUpdate::message(held));
                }
                out.push(SessionUpdate::thought(text.into_owned()));
            }
        }
    }
}

/// True when two failure texts report one failure: the same text, or one holding the other
/// (qwen appends `[API Error: …]` to the reply and repeats it in the `result`'s `error.message`).
fn same_failure(said: &str, message: &str) -> bool {
    let (a, b) = (said.trim(), message.trim());
    !a.is_empty() && !b.is_empty() && (a == b || a.contains(b) || b.contains(a))
}

/// The run total after one more `result`: the token counters (each record counts its own
/// segment) added, `costUsd` the latest (`total_cost_usd` is cumulative already), and `extra`
/// merged by [`merge_totals`].
fn running_total(earlier: TokenUsage, later: TokenUsage) -> TokenUsage {
    let add = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), Some(b)) => Some(a.saturating_add(b)),
        (a, b) => a.or(b),
    };
    let extra = match (earlier.extra, later.extra) {
        (Some(a), Some(b)) => {
            let merged = merge_totals(object_of(Some(a)), object_of(Some(b)));
            Some(RawJson::from_value(&Value::Object(merged)))
        }
        (a, b) => b.or(a),
    };
    TokenUsage {
        prompt_tokens: add(earlier.prompt_tokens, later.prompt_tokens),
        completion_tokens: add(earlier.completion_tokens, later.completion_tokens),
        cached_tokens: add(earlier.cached_tokens, later.cached_tokens),
        cost_usd: later.cost_usd.or(earlier.cost_usd),
        extra,
    }
}

/// Two records' `extra` as one: counters (integers) in both are added, at any depth; any other
/// value is the later record's, and `modelUsage` (claude's per-model totals, cumulative over
/// the session) is the later one whole.
fn merge_totals(mut earlier: JsonObject, later: JsonObject) -> JsonObject {
    for (key, value) in later {
        match earlier.get_mut(&key) {
            // (In place: the earlier record's key order stays.)
            Some(slot) if key != "modelUsage" => *slot = merge_total(std::mem::take(slot), value),
            _ => {
                earlier.insert(key, value);
            }
        }
    }
    earlier
}

fn merge_total(earlier: Value, later: Value) -> Value {
    match (earlier, later) {
        (Value::Number(a), Value::Number(b)) if a.is_u64() && b.is_u64() => {
            Value::from(a.as_u64().unwrap_or(0).saturating_add(b.as_u64().unwrap_or(0)))
        }
        (Value::Object(a), Value::Object(b)) => Value::Object(merge_totals(a, b)),
        (_, later) => later,
    }
}

/// The message of a failed `result`: its `result` text, else `errors`, else `error.message` (or
/// a string `error`), else its `subtype`.
fn result_error(line: &Line<'_>) -> String {
    if let Some(Value::String(s)) = value(line.facts().result).filter(|v| v.as_str().is_some_and(|s| !s.is_empty())) {
        return s;
    }
    if let Some(Value::Array(errors)) = value(line.facts().errors) {
        let texts: Vec<String> = errors.iter().map(crate::json::lenient::display_text).collect();
        if !texts.is_empty() {
            return texts.join("\n");
        }
    }
    match value(line.facts().error) {
        Some(Value::Object(o)) => {
            if let Some(m) = o.get("message").and_then(Value::as_str) {
                return m.to_string();
            }
            return Value::Object(o).to_string();
        }
        Some(Value::String(s)) => return s,
        _ => {}
    }
    line.subtype.owned().unwrap_or_else(|| "error".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_fields_tolerate_odd_shapes() {
        let mut line = Line::default();
        line.parse(
            r#"{"type":"assistant","session_id":5,"message":{"id":null,"content":[null,1,"x",{"type":"text","text":"hi"},[2]]}}"#,
            &mut Vec::new(),
        )
        .unwrap();
        assert_eq!(line.kind.get(), Some("assistant"));
        assert_eq!(line.session_id.get(), None);
        let msg = line.message.0.unwrap();
        let Content::Blocks(blocks) = msg.content else { panic!("blocks") };
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].text.get(), Some("hi"));
    }

    #[test]
    fn strings_borrow_when_unescaped() {
        let mut line = Line::default();
        line.parse(r#"{"type":"user","session_id":"abc","timestamp":"a\nb"}"#, &mut Vec::new()).unwrap();
        assert!(matches!(line.session_id.clone().into_inner(), Some(Cow::Borrowed("abc"))));
        assert!(matches!(line.timestamp.clone().into_inner(), Some(Cow::Owned(_))));
    }

    #[test]
    fn deeply_nested_content_is_unusable_not_a_crash() {
        let nested = |n: usize| {
            let open = r#"[{"type":"tool_result","tool_use_id":"t","content":"#.repeat(n);
            format!(r#"{{"type":"user","message":{{"content":{open}"x"{}}}}}"#, "}]".repeat(n))
        };
        let mut p = Protocol::<crate::decode::claude::Claude>::default();
        let mut ctx = DecodeContext::default();
        let mut out = Vec::new();
        // Blocks at depth 4, 6, …: the 62nd is the 126th container, the 63rd would be the 128th.
        assert_eq!(p.decode_line(&nested(62), &mut ctx, &mut out), LineOutcome::Decoded);
        assert_eq!(p.decode_line(&nested(63), &mut ctx, &mut out), LineOutcome::UnexpectedShape);
        assert_eq!(p.decode_line(&nested(100_000), &mut ctx, &mut out), LineOutcome::UnexpectedShape);
    }

    #[test]
    fn reconcile_consumes_streamed_prefixes() {
        let mut s = Streams::default();
        s.push(None, Piece::Text, "Hello wor");
        assert_eq!(s.reconcile(None, Piece::Text, "Hello world"), 9);
        assert_eq!(s.reconcile(None, Piece::Text, "Again"), 0);
        s.push(None, Piece::Text, "AB");
        assert_eq!(s.reconcile(None, Piece::Text, "A"), 1);
        assert_eq!(s.reconcile(None, Piece::Text, "B"), 1);
        s.push(None, Piece::Text, "stale");
        assert_eq!(s.reconcile(None, Piece::Text, "fresh"), 0);
        assert_eq!(s.reconcile(Some("sub"), Piece::Text, "sub text"), 0);
    }

    #[test]
    fn message_delta_usage_merges_cumulatively() {
        let mut start = Usage::from_json(r#"{"input_tokens":1523,"output_tokens":1,"cache_creation_input_tokens":5}"#);
        let delta = Usage::from_json(r#"{"input_tokens":0,"output_tokens":42,"cache_creation_input_tokens":0}"#);
        start.merge(delta);
        assert_eq!((start.input, start.output, start.cache_creation), (Some(1523), Some(42), Some(5)));
        assert_eq!(start.rest.unwrap().to_value()["cache_creation_input_tokens"], 5);
    }

    /// Every prefix and a few byte mutations of every golden line decode without a panic (the
    /// driver is called directly, outside the decoder's panic guard).
    #[test]
    fn mangled_golden_lines_never_panic() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden");
        for agent in ["claude", "qwen"] {
            let Ok(dir) = std::fs::read_dir(root.join(agent)) else { continue };
            for entry in dir.flatten() {
                let path = entry.path();
                if !path.to_string_lossy().ends_with(".input.jsonl") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                let mut claude = Protocol::<crate::decode::claude::Claude>::default();
                let mut qwen = Protocol::<crate::decode::qwen::Qwen>::default();
                let mut ctx = DecodeContext::default();
                let mut out = Vec::new();
                for line in text.lines().filter(|l| l.len() < 4096) {
                    let mut variants: Vec<String> = (0..line.len())
                        .step_by(13)
                        .filter(|i| line.is_char_boundary(*i))
                        .map(|i| line[..i].to_string())
                        .collect();
                    for (from, to) in [("\"", "1"), ("{", "["), (":\"", ":null,\""), ("[", "{"), ("true", "\"x\"")] {
                        variants.push(line.replacen(from, to, 1));
                        variants.push(line.replace(from, to));
                    }
                    for v in variants {
                        claude.decode_line(&v, &mut ctx, &mut out);
                        qwen.decode_line(&v, &mut ctx, &mut out);
                        out.clear();
                    }
                }
            }
        }
    }

    #[test]
    fn titles() {
        assert_eq!(read_title(Some("/a"), Some(10), Some(20), "File"), "Read /a (11 - 30)");
        assert_eq!(read_title(Some("/a"), Some(5), None, "File"), "Read /a (from line 6)");
        assert_eq!(read_title(None, None, None, "File"), "Read File");
        assert_eq!(mcp_title("mcp__kb__lookup").as_deref(), Some("kb: lookup"));
        assert_eq!(mcp_title("mcp__srv__a__b").as_deref(), Some("srv: a__b"));
        assert_eq!(mcp_title("lookup"), None);
        assert_eq!(glob_title(Some("/r"), Some("*.rs")), "Find `/r` `*.rs`");
    }

    #[test]
    fn usage_arithmetic_keeps_other_counters() {
        let u = Usage::from_json(
            r#"{"input_tokens":100,"cache_read_input_tokens":30,"cache_creation_input_tokens":20,"output_tokens":7,"service_tier":"standard"}"#,
        );
        let t = token_usage(u.clone(), Prompt::PlusCache);
        assert_eq!((t.prompt_tokens, t.completion_tokens, t.cached_tokens), (Some(150), Some(7), Some(30)));
        let extra = t.extra.unwrap().to_value();
        let extra = extra.as_object().unwrap();
        assert_eq!(extra.len(), 2);
        assert!(extra.contains_key("cache_creation_input_tokens") && extra.contains_key("service_tier"));
        assert_eq!(token_usage(u, Prompt::InputOnly).prompt_tokens, Some(100));
        assert_eq!(token_usage(Usage::default(), Prompt::InputOnly), TokenUsage::default());
        let odd = Usage::from_json(r#"{"input_tokens":"many","output_tokens":2}"#);
        let t = token_usage(odd, Prompt::PlusCache);
        assert_eq!((t.prompt_tokens, t.completion_tokens), (None, Some(2)));
        assert_eq!(t.extra.unwrap().get(), r#"{"input_tokens":"many"}"#);
    }
}
