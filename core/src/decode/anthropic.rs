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
//! | `assistant` | one event per content block, in order: `text` → `agent_message_chunk`, `thinking` → `agent_thought_chunk`, `image` → image `agent_message_chunk`, `tool_use`/`server_tool_use`/`mcp_tool_use` → dialect (`tool_call` or `plan`); `redacted_thinking` and unknown blocks are skipped. Then `usage{scope:"call"}` from `message.usage` (dialect arithmetic). Envelope: `messageId` = `message.id`, `model` = `message.model`, `parentToolCallId` = `parent_tool_use_id`, `extra.stop_reason` when non-null |
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
//! Each line is read once, by the validating scanner of [`super::scan`], into the structs
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

use std::borrow::Cow;
use std::cell::OnceCell;

use serde_json::Value;
use serde_json::value::RawValue;

use super::LineOutcome;
use super::context::{DecodeContext, Envelope};
use super::json::classify_failure;
use super::raw_record::{ObjectMembers, raw_count};
use super::scan::{Bad, Res, Scan};
use crate::event::{
    ContentBlock, DiffContent, ImageContent, JsonObject, OutputEvent, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    RawJson, SessionUpdate, SharedStr, TokenUsage, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus,
    ToolCallUpdate, UsageScope,
};

// ------------------------------------------------------------------------------------------
// Lenient wire types, read in one pass with the `scan` scanner
// ------------------------------------------------------------------------------------------

/// A string field that may be absent, `null` or of another type (then `None`). Borrowed from
/// the line when it has no escapes.
///
/// Looser than the serde decoders' [`super::borrowed::Str`] (`json::opt_string`'s rules): a
/// value of another type is only skipped ([`Scan::skip`], syntax only), so a number beyond `f64`
/// or a lone surrogate escape inside it does not make the line unusable.
///
/// Not an `Option<Cow<str>>`: that type's `None` is only a niche in the capacity word, so a
/// default line leaves the pointer and length words unwritten, and LLVM may then test the
/// (unused) length before the tag. The result is right but valgrind reports a branch on
/// uninitialised memory, which our C suite treats as a failure. An empty borrowed string plus
/// a flag writes every word.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LooseStr<'a> {
    text: Cow<'a, str>,
    present: bool,
}

impl Default for LooseStr<'_> {
    fn default() -> Self {
        LooseStr { text: Cow::Borrowed(""), present: false }
    }
}

impl<'a> LooseStr<'a> {
    /// The string, when it is one.
    pub fn get(&self) -> Option<&str> {
        self.present.then_some(&*self.text)
    }

    /// The string, when it is one and not empty.
    pub fn non_empty(&self) -> Option<&str> {
        self.get().filter(|s| !s.is_empty())
    }

    /// An owned copy, when non-empty.
    pub fn owned(&self) -> Option<String> {
        self.non_empty().map(str::to_string)
    }

    /// The string itself, when it is one.
    pub fn into_inner(self) -> Option<Cow<'a, str>> {
        self.present.then_some(self.text)
    }

    /// Read the next value: a string, or any other value (skipped) as `None`.
    #[inline(always)]
    fn read(sc: &mut Scan<'a>) -> Res<Self> {
        if sc.peek() == Some(b'"') {
            Ok(LooseStr { text: sc.str()?, present: true })
        } else {
            sc.skip().map(|_| LooseStr::default())
        }
    }
}

/// An object field read as `T`; absent, `null` or a non-object value gives `None`.
///
/// Looser than [`super::json::Obj`] as [`LooseStr`] is looser than `borrowed::Str`: a value of
/// another type is only skipped (syntax only), not read by type.
#[derive(Debug)]
pub(crate) struct LooseObj<T>(pub Option<T>);

impl<T> Default for LooseObj<T> {
    fn default() -> Self {
        LooseObj(None)
    }
}

impl<T> LooseObj<T> {
    /// Read the next value with `read` when it is an object; skip any other value.
    #[inline(always)]
    fn read<'a>(sc: &mut Scan<'a>, read: impl FnOnce(&mut Scan<'a>) -> Res<T>) -> Res<Self> {
        if sc.peek() == Some(b'{') { read(sc).map(|t| LooseObj(Some(t))) } else { sc.skip().map(|_| LooseObj(None)) }
    }
}

/// A field kept as its JSON text (validated), `None` when absent or `null`.
pub(crate) type Raw<'a> = Option<&'a str>;

#[inline(always)]
fn raw<'a>(sc: &mut Scan<'a>) -> Res<Raw<'a>> {
    let text = sc.raw()?;
    Ok((text != "null").then_some(text))
}

/// Read the fields of the object that is the next value: `field` reads the value of a key it
/// knows and returns the key's bit (each known key has its own), or skips the value and returns
/// 0. A known key printed twice makes the line unusable, as serde's derived structs decide.
#[inline(always)]
fn read_fields<'a>(sc: &mut Scan<'a>, mut field: impl FnMut(&str, &mut Scan<'a>) -> Res<u64>) -> Res<()> {
    sc.open_object()?;
    let mut first = true;
    let mut seen = 0u64;
    while let Some(key) = sc.next_key(&mut first)? {
        let bit = match key.plain() {
            Some(name) => field(name, sc)?,
            None => field(&key.decode()?, sc)?,
        };
        if seen & bit != 0 {
            return Err(Bad);
        }
        seen |= bit;
    }
    Ok(())
}

/// How deep content lists and blocks may nest, counting every container from the line's own
/// object (1): serde_json's recursion limit, which made deeper lines unusable before.
const MAX_NESTING: usize = 128;

/// Message or tool-result content: a string, or a list of blocks (non-object items dropped).
#[derive(Debug, Default)]
pub(crate) enum Content<'a> {
    /// Absent, `null` or another shape.
    #[default]
    None,
    /// A plain string.
    Text(Cow<'a, str>),
    /// Content blocks.
    Blocks(Vec<Block<'a>>),
}

impl<'a> Content<'a> {
    /// Read content whose list (if it is one) is the `depth`-th nested container of the line.
    fn read(sc: &mut Scan<'a>, depth: usize) -> Res<Self> {
        match sc.peek() {
            Some(b'"') => Ok(Content::Text(sc.str()?)),
            Some(b'[') => {
                if depth >= MAX_NESTING {
                    return Err(Bad);
                }
                sc.open_array()?;
                // Most messages hold one block.
                let mut blocks = Vec::with_capacity(1);
                let mut first = true;
                while sc.next_element(&mut first)? {
                    if sc.peek() == Some(b'{') {
                        blocks.push(Block::read(sc, depth + 1)?);
                    } else {
                        sc.skip()?;
                    }
                }
                Ok(Content::Blocks(blocks))
            }
            Some(b'{') if depth >= MAX_NESTING => Err(Bad),
            _ => sc.skip().map(|_| Content::None),
        }
    }
}

/// One wire line. Only the fields either CLI prints that the decoders use; the rest (init tool
/// lists, slash commands, …) is skipped without being built.
#[derive(Default)]
pub(crate) struct Line<'a> {
    pub kind: LooseStr<'a>,
    pub subtype: LooseStr<'a>,
    pub session_id: LooseStr<'a>,
    pub parent_tool_use_id: LooseStr<'a>,
    pub timestamp: LooseStr<'a>,
    pub message: LooseObj<Message<'a>>,
    pub event: LooseObj<Box<StreamEvent<'a>>>,
    pub tool_use_result: Option<&'a RawValue>,
    pub usage: LooseObj<Usage>,
    /// As printed (an object read by type).
    pub model_usage: LooseObj<&'a str>,
    pub tool_use_meta: Raw<'a>,
    pub subagent_type: Raw<'a>,
    pub task_description: Raw<'a>,
    /// The facts of `result` and `system` lines (and a synthetic message's `error`), boxed:
    /// most lines print none of them.
    facts: Option<Box<Facts<'a>>>,
}

/// See [`Line::facts`].
#[derive(Default)]
pub(crate) struct Facts<'a> {
    pub error: Raw<'a>,
    pub is_error: Raw<'a>,
    pub result: Raw<'a>,
    pub errors: Raw<'a>,
    pub total_cost_usd: Raw<'a>,
    pub stats: Raw<'a>,
    pub num_turns: Raw<'a>,
    pub duration_ms: Raw<'a>,
    pub duration_api_ms: Raw<'a>,
    pub stop_reason: Raw<'a>,
    pub terminal_reason: Raw<'a>,
    pub api_error_status: Raw<'a>,
    pub permission_denials: Raw<'a>,
    pub attempt: Raw<'a>,
    pub max_retries: Raw<'a>,
    pub retry_delay_ms: Raw<'a>,
    pub error_status: Raw<'a>,
}

static NO_FACTS: Facts<'static> = Facts {
    error: None,
    is_error: None,
    result: None,
    errors: None,
    total_cost_usd: None,
    stats: None,
    num_turns: None,
    duration_ms: None,
    duration_api_ms: None,
    stop_reason: None,
    terminal_reason: None,
    api_error_status: None,
    permission_denials: None,
    attempt: None,
    max_retries: None,
    retry_delay_ms: None,
    error_status: None,
};

impl<'a> Line<'a> {
    /// Parse a whole line into `self` (a default line); on failure tell why the line could not
    /// be used. `scratch` is a buffer the scanner reuses from line to line.
    pub fn parse(&mut self, text: &'a str, scratch: &mut Vec<(String, Value)>) -> Result<(), LineOutcome> {
        // Only objects (as serde would otherwise read a JSON array into a struct by position).
        if !text.trim_start().starts_with('{') {
            return Err(classify_failure(text));
        }
        let mut sc = Scan::with_scratch(text, std::mem::take(scratch));
        let read = self.read(&mut sc).and_then(|_| sc.end());
        *scratch = sc.into_scratch();
        read.map_err(|Bad| classify_failure(text))
    }

    /// The facts of a `result` or `system` line (all `None` on other lines).
    pub fn facts(&self) -> &Facts<'a> {
        self.facts.as_deref().unwrap_or(&NO_FACTS)
    }

    fn read(&mut self, sc: &mut Scan<'a>) -> Res<()> {
        let l = self;
        read_fields(sc, |name, sc| {
            Ok(match name {
                "type" => set(&mut l.kind, LooseStr::read(sc)?, 1 << 0),
                "subtype" => set(&mut l.subtype, LooseStr::read(sc)?, 1 << 1),
                "session_id" => set(&mut l.session_id, LooseStr::read(sc)?, 1 << 2),
                "parent_tool_use_id" => set(&mut l.parent_tool_use_id, LooseStr::read(sc)?, 1 << 3),
                "timestamp" => set(&mut l.timestamp, LooseStr::read(sc)?, 1 << 4),
                "message" => set(&mut l.message, LooseObj::read(sc, |sc| Message::read(sc, 2))?, 1 << 5),
                "event" => set(&mut l.event, LooseObj::read(sc, |sc| StreamEvent::read(sc).map(Box::new))?, 1 << 6),
                "tool_use_result" => set(&mut l.tool_use_result, sc.raw_value()?, 1 << 7),
                "error" => set(&mut fact(&mut l.facts).error, raw(sc)?, 1 << 8),
                "is_error" => set(&mut fact(&mut l.facts).is_error, raw(sc)?, 1 << 9),
                "result" => set(&mut fact(&mut l.facts).result, raw(sc)?, 1 << 10),
                "errors" => set(&mut fact(&mut l.facts).errors, raw(sc)?, 1 << 11),
                "usage" => set(&mut l.usage, LooseObj::read(sc, Usage::read)?, 1 << 12),
                "modelUsage" => set(&mut l.model_usage, LooseObj::read(sc, Scan::checked_raw)?, 1 << 13),
                "total_cost_usd" => set(&mut fact(&mut l.facts).total_cost_usd, raw(sc)?, 1 << 14),
                "stats" => set(&mut fact(&mut l.facts).stats, raw(sc)?, 1 << 15),
                "num_turns" => set(&mut fact(&mut l.facts).num_turns, raw(sc)?, 1 << 16),
                "duration_ms" => set(&mut fact(&mut l.facts).duration_ms, raw(sc)?, 1 << 17),
                "duration_api_ms" => set(&mut fact(&mut l.facts).duration_api_ms, raw(sc)?, 1 << 18),
                "stop_reason" => set(&mut fact(&mut l.facts).stop_reason, raw(sc)?, 1 << 19),
                "terminal_reason" => set(&mut fact(&mut l.facts).terminal_reason, raw(sc)?, 1 << 20),
                "api_error_status" => set(&mut fact(&mut l.facts).api_error_status, raw(sc)?, 1 << 21),
                "permission_denials" => set(&mut fact(&mut l.facts).permission_denials, raw(sc)?, 1 << 22),
                "attempt" => set(&mut fact(&mut l.facts).attempt, raw(sc)?, 1 << 23),
                "max_retries" => set(&mut fact(&mut l.facts).max_retries, raw(sc)?, 1 << 24),
                "retry_delay_ms" => set(&mut fact(&mut l.facts).retry_delay_ms, raw(sc)?, 1 << 25),
                "error_status" => set(&mut fact(&mut l.facts).error_status, raw(sc)?, 1 << 26),
                "tool_use_meta" => set(&mut l.tool_use_meta, raw(sc)?, 1 << 27),
                "subagent_type" => set(&mut l.subagent_type, raw(sc)?, 1 << 28),
                "task_description" => set(&mut l.task_description, raw(sc)?, 1 << 29),
                _ => skip(sc)?,
            })
        })
    }
}

/// The line's facts, created on the first one.
#[inline(always)]
fn fact<'b, 'a>(facts: &'b mut Option<Box<Facts<'a>>>) -> &'b mut Facts<'a> {
    facts.get_or_insert_with(Box::default)
}

/// Store a field's value; its bit for the duplicate check.
#[inline(always)]
fn set<T>(slot: &mut T, value: T, bit: u64) -> u64 {
    *slot = value;
    bit
}

/// Skip an unknown field's value (no bit).
#[inline(always)]
fn skip(sc: &mut Scan<'_>) -> Res<u64> {
    sc.skip().map(|_| 0)
}

/// An API message (`assistant`/`user` lines, `message_start`).
#[derive(Default)]
pub(crate) struct Message<'a> {
    pub id: LooseStr<'a>,
    pub model: LooseStr<'a>,
    pub content: Content<'a>,
    pub stop_reason: Raw<'a>,
    pub usage: LooseObj<Usage>,
}

impl<'a> Message<'a> {
    /// Read a message that is the `depth`-th nested container of the line.
    fn read(sc: &mut Scan<'a>, depth: usize) -> Res<Self> {
        let mut m = Message::default();
        read_fields(sc, |name, sc| {
            Ok(match name {
                "id" => set(&mut m.id, LooseStr::read(sc)?, 1 << 0),
                "model" => set(&mut m.model, LooseStr::read(sc)?, 1 << 1),
                "content" => set(&mut m.content, Content::read(sc, depth + 1)?, 1 << 2),
                "stop_reason" => set(&mut m.stop_reason, raw(sc)?, 1 << 3),
                "usage" => set(&mut m.usage, LooseObj::read(sc, Usage::read)?, 1 << 4),
                _ => skip(sc)?,
            })
        })?;
        Ok(m)
    }
}

/// A content block of any kind (text, thinking, image, tool_use, tool_result, …).
#[derive(Default, Debug)]
pub(crate) struct Block<'a> {
    pub kind: LooseStr<'a>,
    pub text: LooseStr<'a>,
    pub thinking: LooseStr<'a>,
    pub id: LooseStr<'a>,
    pub name: LooseStr<'a>,
    pub input: Option<&'a RawValue>,
    pub tool_use_id: LooseStr<'a>,
    pub content: Content<'a>,
    pub is_error: Raw<'a>,
    pub source: LooseObj<Box<Source<'a>>>,
    pub data: LooseStr<'a>,
    pub mime_type: LooseStr<'a>,
}

impl<'a> Block<'a> {
    /// Read a block that is the `depth`-th nested container of the line (blocks nest through
    /// tool-result content).
    fn read(sc: &mut Scan<'a>, depth: usize) -> Res<Self> {
        if depth >= MAX_NESTING {
            return Err(Bad);
        }
        let mut b = Block::default();
        read_fields(sc, |name, sc| {
            Ok(match name {
                "type" => set(&mut b.kind, LooseStr::read(sc)?, 1 << 0),
                "text" => set(&mut b.text, LooseStr::read(sc)?, 1 << 1),
                "thinking" => set(&mut b.thinking, LooseStr::read(sc)?, 1 << 2),
                "id" => set(&mut b.id, LooseStr::read(sc)?, 1 << 3),
                "name" => set(&mut b.name, LooseStr::read(sc)?, 1 << 4),
                "input" => set(&mut b.input, sc.raw_value()?, 1 << 5),
                "tool_use_id" => set(&mut b.tool_use_id, LooseStr::read(sc)?, 1 << 6),
                "content" => set(&mut b.content, Content::read(sc, depth + 1)?, 1 << 7),
                "is_error" => set(&mut b.is_error, raw(sc)?, 1 << 8),
                "source" => set(&mut b.source, LooseObj::read(sc, |sc| Source::read(sc).map(Box::new))?, 1 << 9),
                "data" => set(&mut b.data, LooseStr::read(sc)?, 1 << 10),
                "mimeType" => set(&mut b.mime_type, LooseStr::read(sc)?, 1 << 11),
                _ => skip(sc)?,
            })
        })?;
        Ok(b)
    }
}

/// An image block's `source`.
#[derive(Default, Debug)]
pub(crate) struct Source<'a> {
    pub kind: LooseStr<'a>,
    pub data: LooseStr<'a>,
    pub media_type: LooseStr<'a>,
    pub url: LooseStr<'a>,
}

impl<'a> Source<'a> {
    fn read(sc: &mut Scan<'a>) -> Res<Self> {
        let mut s = Source::default();
        read_fields(sc, |name, sc| {
            Ok(match name {
                "type" => set(&mut s.kind, LooseStr::read(sc)?, 1 << 0),
                "data" => set(&mut s.data, LooseStr::read(sc)?, 1 << 1),
                "media_type" => set(&mut s.media_type, LooseStr::read(sc)?, 1 << 2),
                "url" => set(&mut s.url, LooseStr::read(sc)?, 1 << 3),
                _ => skip(sc)?,
            })
        })?;
        Ok(s)
    }
}

/// The raw SSE event of a `stream_event` line.
#[derive(Default)]
pub(crate) struct StreamEvent<'a> {
    pub kind: LooseStr<'a>,
    pub message: LooseObj<Message<'a>>,
    pub content_block: LooseObj<Block<'a>>,
    pub delta: LooseObj<Delta<'a>>,
    pub usage: LooseObj<Usage>,
}

impl<'a> StreamEvent<'a> {
    fn read(sc: &mut Scan<'a>) -> Res<Self> {
        let mut e = StreamEvent::default();
        read_fields(sc, |name, sc| {
            Ok(match name {
                "type" => set(&mut e.kind, LooseStr::read(sc)?, 1 << 0),
                "message" => set(&mut e.message, LooseObj::read(sc, |sc| Message::read(sc, 3))?, 1 << 1),
                "content_block" => set(&mut e.content_block, LooseObj::read(sc, |sc| Block::read(sc, 3))?, 1 << 2),
                "delta" => set(&mut e.delta, LooseObj::read(sc, Delta::read)?, 1 << 3),
                "usage" => set(&mut e.usage, LooseObj::read(sc, Usage::read)?, 1 << 4),
                _ => skip(sc)?,
            })
        })?;
        Ok(e)
    }
}

/// A `content_block_delta` / `message_delta` delta.
#[derive(Default)]
pub(crate) struct Delta<'a> {
    pub kind: LooseStr<'a>,
    pub text: LooseStr<'a>,
    pub thinking: LooseStr<'a>,
    pub stop_reason: Raw<'a>,
}

impl<'a> Delta<'a> {
    fn read(sc: &mut Scan<'a>) -> Res<Self> {
        let mut d = Delta::default();
        read_fields(sc, |name, sc| {
            Ok(match name {
                "type" => set(&mut d.kind, LooseStr::read(sc)?, 1 << 0),
                "text" => set(&mut d.text, LooseStr::read(sc)?, 1 << 1),
                "thinking" => set(&mut d.thinking, LooseStr::read(sc)?, 1 << 2),
                "stop_reason" => set(&mut d.stop_reason, raw(sc)?, 1 << 3),
                _ => skip(sc)?,
            })
        })?;
        Ok(d)
    }
}

/// A `usage` object: the counters the dialects read, and every other key verbatim in `rest`
/// (`cache_creation_input_tokens` is both read and kept, as the seed's `extra` shows it).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Usage {
    /// `input_tokens`.
    pub input: Option<u64>,
    /// `output_tokens`.
    pub output: Option<u64>,
    /// `cache_read_input_tokens`.
    pub cache_read: Option<u64>,
    /// `cache_creation_input_tokens`.
    pub cache_creation: Option<u64>,
    /// Every other counter (and any of the above whose value is not a count), as printed.
    pub rest: Option<RawJson>,
}

impl Usage {
    /// Overlay a later report of the same message (`message_delta` over `message_start`). The
    /// API's counts are cumulative, so a counter keeps the larger of the two reports.
    pub fn merge(&mut self, later: Usage) {
        let max = |a: Option<u64>, b: Option<u64>| a.max(b);
        self.input = max(self.input, later.input);
        self.output = max(self.output, later.output);
        self.cache_read = max(self.cache_read, later.cache_read);
        self.cache_creation = max(self.cache_creation, later.cache_creation);
        // (Once per streamed message: the two records are read into maps to merge.)
        let mut rest = object_of(self.rest.take());
        if let Some(n) = self.cache_creation {
            rest.insert("cache_creation_input_tokens".into(), n.into());
        }
        for (k, v) in object_of(later.rest) {
            if k != "cache_creation_input_tokens" {
                rest.insert(k, v);
            }
        }
        self.rest = (!rest.is_empty()).then(|| RawJson::from_value(&Value::Object(rest)));
    }

    /// Read a usage object (the next value must be an object).
    pub fn read(sc: &mut Scan<'_>) -> Res<Usage> {
        let (mut input, mut output, mut cache_read, mut cache_creation) = (None, None, None, None);
        if sc.peek() != Some(b'{') {
            return Err(Bad);
        }
        let mut rest = ObjectMembers::default();
        sc.object(|r, key| {
            // Read by type (what a `Value` accepts), kept as printed.
            let raw = r.checked_raw()?;
            let slot = match key.as_ref() {
                "input_tokens" => &mut input,
                "output_tokens" => &mut output,
                "cache_read_input_tokens" => &mut cache_read,
                "cache_creation_input_tokens" => {
                    cache_creation = raw_count(raw);
                    rest.insert(key, raw);
                    return Ok(());
                }
                _ => {
                    rest.insert(key, raw);
                    return Ok(());
                }
            };
            match raw_count(raw) {
                Some(n) => *slot = Some(n),
                None => rest.insert(key, raw),
            }
            Ok(())
        })?;
        Ok(Usage { input, output, cache_read, cache_creation, rest: rest.into_raw_json() })
    }

    /// Parse a usage object from its JSON text (tests).
    #[cfg(test)]
    pub fn from_json(text: &str) -> Usage {
        Usage::read(&mut Scan::new(text)).expect("a usage object")
    }
}

/// True when the raw value is JSON `true`.
pub(crate) fn is_true(raw: Raw<'_>) -> bool {
    raw == Some("true")
}

/// A raw value as a [`Value`], `None` when absent or `null`.
pub(crate) fn value(raw: Raw<'_>) -> Option<Value> {
    raw.filter(|r| *r != "null").and_then(|r| Scan::new(r).json_value().ok())
}

/// Set `key` of `extra` to `raw` as printed, unless it is absent, `null` or not a value a JSON
/// reader takes.
pub(crate) fn put<'a>(extra: &mut ObjectMembers<'a>, key: &'static str, raw: Raw<'a>) {
    if let Some(raw) = checked(raw) {
        extra.insert(Cow::Borrowed(key), raw);
    }
}

/// A harness record kept as printed ([`RawJson::from_raw`]), unless its text holds a carriage
/// return between tokens: that record is written compactly instead, so that an event never holds
/// a raw CR (a reader splitting lines on CR, as Python's text mode does, would cut it).
pub(crate) fn raw_json(raw: &RawValue) -> RawJson {
    if memchr::memchr(b'\r', raw.get().as_bytes()).is_none() {
        return RawJson::from_raw(raw);
    }
    serde_json::from_str::<Value>(raw.get()).map_or_else(|_| RawJson::from_raw(raw), |v| RawJson::from_value(&v))
}

/// A record kept as text, read into a map (an empty map for none or for anything but an object).
fn object_of(record: Option<RawJson>) -> JsonObject {
    match record.map(|r| r.to_value()) {
        Some(Value::Object(map)) => map,
        _ => JsonObject::new(),
    }
}

/// A raw value that a `Value` reads (as [`value`] would give it), not `null`.
pub(crate) fn checked(raw: Raw<'_>) -> Raw<'_> {
    raw.filter(|r| *r != "null" && Scan::new(r).check().is_ok())
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
/// its text and image blocks in order (other block kinds carry nothing a person reads).
/// `None` when there is nothing to show.
pub(crate) fn result_content(content: Content<'_>) -> Option<Vec<ToolCallContent>> {
    let items: Vec<ToolCallContent> = match content {
        Content::None => return None,
        Content::Text(t) if t.is_empty() => return None,
        Content::Text(t) => vec![ToolCallContent::text(t.into_owned())],
        Content::Blocks(blocks) => blocks
            .into_iter()
            .filter_map(|b| match BlockKind::of(&b) {
                BlockKind::Text => {
                    b.text.into_inner().filter(|t| !t.is_empty()).map(|t| ToolCallContent::text(t.into_owned()))
                }
                BlockKind::Image => image(&b).map(|img| ToolCallContent::Content { content: ContentBlock::Image(img) }),
                _ => None,
            })
            .collect(),
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

/// What a content block is, for dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockKind {
    Text,
    Thinking,
    Image,
    Call,
    Result,
    Other,
}

impl BlockKind {
    /// The kind of `block` by its `type`.
    pub fn of(block: &Block<'_>) -> BlockKind {
        match block.kind.get().unwrap_or_default() {
            "text" => BlockKind::Text,
            "thinking" => BlockKind::Thinking,
            "image" => BlockKind::Image,
            k if CALL_KINDS.contains(&k) => BlockKind::Call,
            k if RESULT_KINDS.contains(&k) => BlockKind::Result,
            _ => BlockKind::Other,
        }
    }
}

/// The block kinds that carry a tool result.
pub(crate) const RESULT_KINDS: &[&str] = &[
    "tool_result",
    "mcp_tool_result",
    "web_fetch_tool_result",
    "web_search_tool_result",
    "tool_search_tool_result",
    "code_execution_tool_result",
    "bash_code_execution_tool_result",
    "text_editor_code_execution_tool_result",
];

/// The block kinds that carry a tool call.
pub(crate) const CALL_KINDS: &[&str] = &["tool_use", "server_tool_use", "mcp_tool_use"];

// ------------------------------------------------------------------------------------------
// Tool helpers
// ------------------------------------------------------------------------------------------

/// A tool call read from a `tool_use` block.
pub(crate) struct ToolUse<'l> {
    /// The harness's call id.
    pub id: &'l str,
    /// The harness-native tool name.
    pub name: &'l str,
    /// The input as printed (usually an object), `None` when absent or `null`.
    pub input: Option<&'l RawValue>,
    /// The input's top-level arguments, read on first use.
    args: OnceCell<Args<'l>>,
}

/// One top-level argument of a tool input: a string (decoded, borrowed from the line when it
/// has no escapes), or any other value as printed.
enum Arg<'l> {
    Str(Cow<'l, str>),
    Other(&'l str),
}

/// The top-level arguments of a tool input object, in printed order (empty when the input is
/// not an object). Lookups take a key's last occurrence, as a JSON object reader does.
#[derive(Default)]
pub(crate) struct Args<'l>(Vec<(Cow<'l, str>, Arg<'l>)>);

impl<'l> Args<'l> {
    /// Read the arguments of `raw` (one scan of the input; nothing is built for values that are
    /// not strings).
    fn read(raw: Option<&'l RawValue>) -> Args<'l> {
        let Some(raw) = raw else { return Args::default() };
        let mut sc = Scan::new(raw.get());
        if sc.peek() != Some(b'{') {
            return Args::default();
        }
        let mut args = Vec::with_capacity(4);
        let mut read = |args: &mut Vec<_>| -> Res<()> {
            sc.open_object()?;
            let mut first = true;
            while let Some(key) = sc.next_key(&mut first)? {
                let key = key.decode()?;
                let arg = if sc.peek() == Some(b'"') { Arg::Str(sc.str()?) } else { Arg::Other(sc.raw()?) };
                args.push((key, arg));
            }
            Ok(())
        };
        match read(&mut args) {
            Ok(()) => Args(args),
            Err(Bad) => Args::default(),
        }
    }

    fn get(&self, key: &str) -> Option<&Arg<'l>> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

impl<'l> ToolUse<'l> {
    /// A call; `input` is kept as printed.
    pub fn new(id: &'l str, name: &'l str, input: Option<&'l RawValue>) -> Self {
        ToolUse { id, name, input, args: OnceCell::new() }
    }

    fn args(&self) -> &Args<'l> {
        self.args.get_or_init(|| Args::read(self.input))
    }

    /// True when the input has the argument `key` (any value, `null` included).
    pub fn has(&self, key: &str) -> bool {
        self.args().get(key).is_some()
    }

    /// A string argument, possibly empty.
    pub fn str_any(&self, key: &str) -> Option<&str> {
        match self.args().get(key)? {
            Arg::Str(s) => Some(s),
            Arg::Other(_) => None,
        }
    }

    /// A non-empty string argument.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.str_any(key).filter(|s| !s.is_empty())
    }

    /// The first non-empty string argument of `keys`.
    pub fn first_str(&self, keys: &[&str]) -> Option<&str> {
        keys.iter().find_map(|k| self.str(k))
    }

    /// True when the argument `key` is JSON `true`.
    pub fn flag(&self, key: &str) -> bool {
        matches!(self.args().get(key), Some(Arg::Other("true")))
    }

    /// The argument `key` as a [`Value`] (`Value::Null` for a printed `null`); `None` when absent.
    pub fn value(&self, key: &str) -> Option<Value> {
        match self.args().get(key)? {
            Arg::Str(s) => Some(Value::String(s.to_string())),
            Arg::Other(raw) => Scan::new(raw).json_value().ok(),
        }
    }

    /// An unsigned integer argument (a JSON number, or a string of digits).
    pub fn uint(&self, key: &str) -> Option<u64> {
        match self.args().get(key)? {
            Arg::Str(s) => s.trim().parse().ok(),
            Arg::Other(raw) => match Scan::new(raw).json_value().ok()? {
                Value::Number(n) => n.as_u64().or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
                _ => None,
            },
        }
    }

    /// A `tool_call` (status `pending`) for this call.
    pub fn call(
        self,
        title: String,
        kind: crate::event::ToolKind,
        content: Vec<ToolCallContent>,
        locations: Vec<ToolCallLocation>,
    ) -> ToolCall {
        ToolCall {
            tool_call_id: self.id.to_string(),
            title,
            tool_name: Some(self.name.to_string()),
            kind,
            status: ToolCallStatus::Pending,
            raw_input: self.input.map(raw_json),
            content: (!content.is_empty()).then_some(content),
            locations: (!locations.is_empty()).then_some(locations),
        }
    }
}

/// `Read <path>` plus ` (A - B)` for a limit or ` (from line N)` for an offset alone.
pub(crate) fn read_title(path: Option<&str>, offset: Option<u64>, limit: Option<u64>, fallback: &str) -> String {
    let mut title = format!("Read {}", path.unwrap_or(fallback));
    match (offset, limit) {
        (o, Some(l)) if l > 0 => {
            let start = o.unwrap_or(0);
            let first = crate::counters::add("a read's first line", start, 1);
            if let (Some(first), Some(last)) = (first, crate::counters::add("a read's last line", start, l)) {
                title.push_str(&format!(" ({first} - {last})"));
            }
        }
        (Some(o), _) if o > 0 => {
            if let Some(first) = crate::counters::add("a read's first line", o, 1) {
                title.push_str(&format!(" (from line {first})"));
            }
        }
        _ => {}
    }
    title
}

/// `server: tool` for an MCP tool name `mcp__server__tool` (the tool part may itself hold `__`).
pub(crate) fn mcp_title(name: &str) -> Option<String> {
    let rest = name.strip_prefix("mcp__")?;
    let (server, tool) = rest.split_once("__")?;
    (!server.is_empty() && !tool.is_empty()).then(|| format!("{server}: {tool}"))
}

/// `"query"`, then ` (allowed: a, b)` and ` (blocked: c)` when domain lists are given.
pub(crate) fn web_search_title(call: &ToolUse<'_>) -> String {
    let mut title = format!("\"{}\"", call.str("query").unwrap_or_default());
    for (key, label) in [("allowed_domains", "allowed"), ("blocked_domains", "blocked")] {
        if let Some(Value::Array(list)) = call.value(key) {
            let names: Vec<&str> = list.iter().filter_map(Value::as_str).collect();
            if !names.is_empty() {
                title.push_str(&format!(" ({label}: {})", names.join(", ")));
            }
        }
    }
    title
}

/// ``Find `path` `pattern` `` (each part only when given).
pub(crate) fn glob_title(path: Option<&str>, pattern: Option<&str>) -> String {
    let mut title = String::from("Find");
    for part in [path, pattern].into_iter().flatten() {
        title.push_str(&format!(" `{part}`"));
    }
    title
}

/// A diff content item.
pub(crate) fn diff(path: &str, old: Option<&str>, new: Option<&str>) -> ToolCallContent {
    ToolCallContent::Diff(DiffContent {
        path: path.to_string(),
        old_text: old.map(str::to_string),
        new_text: new.unwrap_or_default().to_string(),
    })
}

/// A plan entry status from a todo's status string (`completed`/`in_progress`, else `pending`).
pub(crate) fn plan_status(status: Option<&str>) -> PlanEntryStatus {
    match status {
        Some("completed" | "done" | "complete") => PlanEntryStatus::Completed,
        Some("in_progress" | "in-progress" | "active") => PlanEntryStatus::InProgress,
        _ => PlanEntryStatus::Pending,
    }
}

/// The plan of a TodoWrite-style input (`{todos: [{content, status, priority?}]}`); `None`
/// when `todos` is not a list. Items that are not objects are skipped.
pub(crate) fn plan_from_todos(call: &ToolUse<'_>) -> Option<Vec<PlanEntry>> {
    let Value::Array(todos) = call.value("todos")? else { return None };
    Some(
        todos
            .iter()
            .filter_map(Value::as_object)
            .map(|t| PlanEntry {
                content: t
                    .get("content")
                    .or_else(|| t.get("description"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                status: plan_status(t.get("status").and_then(Value::as_str)),
                priority: PlanEntryPriority::from_wire(t.get("priority").and_then(Value::as_str)),
            })
            .collect(),
    )
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
// Partial-message reconciliation
// ------------------------------------------------------------------------------------------

/// Which stream a delta belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Piece {
    Text,
    Thought,
}

/// The streaming state of one scope (the main agent, or one subagent by parent tool id).
#[derive(Debug, Default)]
struct Scope {
    parent: Option<String>,
    text: Streamed,
    thought: Streamed,
    message_id: Option<SharedStr>,
    model: Option<SharedStr>,
    start_usage: Option<Usage>,
}

impl Scope {
    fn buffer(&mut self, piece: Piece) -> &mut Streamed {
        match piece {
            Piece::Text => &mut self.text,
            Piece::Thought => &mut self.thought,
        }
    }
}

/// Streamed text not yet confirmed by a complete line, in bounded memory: the first
/// [`MAX_HELD`] bytes as text, the rest only as its length and a hash — enough to tell whether
/// a complete block continues the stream. (A flood of deltas never confirmed must not grow a
/// decoder without bound.)
#[derive(Debug, Default)]
pub(crate) struct Streamed {
    head: String,
    /// Bytes streamed in all: `head`, then `len - head.len()` more, hashed.
    len: usize,
    tail_hash: u64,
}

/// The streamed text a scope holds as text; past it, a length and a hash.
const MAX_HELD: usize = 1024 * 1024;

fn fnv(mut hash: u64, bytes: &[u8]) -> u64 {
    if hash == 0 {
        hash = 0xcbf2_9ce4_8422_2325;
    }
    for &b in bytes {
        hash = (hash ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    hash
}

impl Streamed {
    fn push_str(&mut self, text: &str) {
        let mut cut =
            if self.len == self.head.len() { MAX_HELD.saturating_sub(self.head.len()).min(text.len()) } else { 0 };
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        self.head.push_str(&text[..cut]);
        self.tail_hash = fnv(self.tail_hash, &text.as_bytes()[cut..]);
        self.len += text.len();
    }

    fn clear(&mut self) {
        *self = Streamed::default();
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn len(&self) -> usize {
        self.len
    }

    /// `full` begins with everything streamed.
    fn is_prefix_of(&self, full: &str) -> bool {
        full.len() >= self.len
            && full.starts_with(self.head.as_str())
            && (self.len == self.head.len() || fnv(0, &full.as_bytes()[self.head.len()..self.len]) == self.tail_hash)
    }

    /// Everything streamed begins with `full` (decidable within the text held).
    fn starts_with(&self, full: &str) -> bool {
        self.head.starts_with(full)
    }

    /// Consume the first `n` streamed bytes (`n` within the text held).
    fn drain_front(&mut self, n: usize) {
        self.head.drain(..n);
        self.len -= n;
    }
}

/// Per-scope streamed text not yet confirmed by a complete `assistant` line.
#[derive(Debug, Default)]
pub(crate) struct Streams {
    scopes: Vec<Scope>,
}

impl Streams {
    fn scope(&mut self, parent: Option<&str>) -> &mut Scope {
        let at = match self.scopes.iter().position(|s| s.parent.as_deref() == parent) {
            Some(at) => at,
            None => {
                self.scopes.push(Scope { parent: parent.map(str::to_string), ..Scope::default() });
                self.scopes.len() - 1
            }
        };
        &mut self.scopes[at]
    }

    fn existing(&mut self, parent: Option<&str>) -> Option<&mut Scope> {
        self.scopes.iter_mut().find(|s| s.parent.as_deref() == parent)
    }

    /// Where the part of a complete block's `full` text that still has to be emitted starts:
    /// the streamed prefix is consumed; text that does not continue the stream is emitted whole
    /// (0); `full.len()` when the stream carried all of it.
    pub fn reconcile(&mut self, parent: Option<&str>, piece: Piece, full: &str) -> usize {
        let Some(scope) = self.existing(parent) else { return 0 };
        let buf = scope.buffer(piece);
        if buf.is_empty() {
            0
        } else if buf.is_prefix_of(full) {
            let at = buf.len();
            buf.clear();
            at
        } else if buf.starts_with(full) {
            buf.drain_front(full.len());
            full.len()
        } else {
            buf.clear();
            0
        }
    }

    /// Drop the unconfirmed text of a scope.
    pub fn clear_text(&mut self, parent: Option<&str>) {
        if let Some(s) = self.existing(parent) {
            s.text.clear();
            s.thought.clear();
        }
    }

    /// Forget the streamed message of a scope.
    pub fn end_message(&mut self, parent: Option<&str>) {
        if let Some(s) = self.existing(parent) {
            s.message_id = None;
            s.model = None;
            s.start_usage = None;
        }
    }

    /// A complete line finalized the scope's message (qwen): later deltas belong to a message
    /// whose id is not known yet; the model (configuration-wide in qwen) carries over.
    pub fn line_ended_message(&mut self, parent: Option<&str>, model: Option<&SharedStr>) {
        let scope = self.scope(parent);
        scope.message_id = None;
        scope.start_usage = None;
        if let Some(m) = model {
            scope.model = Some(m.clone());
        }
    }

    /// Forget everything (end of a run).
    pub fn clear(&mut self) {
        self.scopes.clear();
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
    pub raw_output: Option<&'l RawValue>,
}

impl ToolResult<'_> {
    /// The structured record parsed (for the few dialect rules that look inside it).
    pub fn raw_output_value(&self) -> Option<Value> {
        self.raw_output.and_then(|r| serde_json::from_str(r.get()).ok())
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
        let outcome = match kind {
            LineKind::System => {
                if line.subtype.get() != Some("init") {
                    self.dialect.system(&line, &mut env, &mut updates);
                }
                LineOutcome::Decoded
            }
            LineKind::Assistant => self.assistant(&mut line, ctx, &mut env, &mut updates),
            LineKind::User => self.user(&mut line, &mut env, &mut updates),
            LineKind::Result => self.result(&mut line, &mut env, &mut updates),
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
                message = value(line.facts().error).map(|v| super::json::display_text(&v)).unwrap_or_default();
            }
            out.push(SessionUpdate::error(message, true));
            self.streams.clear_text(parent);
            return LineOutcome::Decoded;
        }
        let Message { content, usage, .. } = msg;
        match content {
            Content::Text(t) => self.assistant_text(parent, Piece::Text, t, out),
            Content::Blocks(blocks) => {
                for block in blocks {
                    self.assistant_block(block, parent, out);
                }
            }
            Content::None => {}
        }
        if let Some(usage) = usage.0 {
            let usage = self.dialect.call_usage(usage);
            out.push(SessionUpdate::Usage { scope: UsageScope::Call, usage });
        }
        if D::LINE_ENDS_MESSAGE {
            self.streams.line_ended_message(parent, env.model.as_ref());
        }
        LineOutcome::Decoded
    }

    fn assistant_text(&mut self, parent: Option<&str>, piece: Piece, full: Cow<'_, str>, out: &mut Updates) {
        let start = self.streams.reconcile(parent, piece, &full);
        if start >= full.len() {
            return;
        }
        let text = if start == 0 { full.into_owned() } else { full[start..].to_string() };
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
                self.dialect.tool_use(ToolUse::new(id, name, input.filter(|v| v.get() != "null")), out);
            }
            BlockKind::Result => self.tool_result(block, None, out),
            BlockKind::Other => {}
        }
    }

    fn tool_result<'l>(&mut self, block: Block<'l>, raw_output: Option<&'l RawValue>, out: &mut Updates) {
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
                let mut raw_output = raw_output.filter(|v| results == 1 && v.get() != "null");
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
            if self.turn_fatal.as_deref() != Some(message.as_str()) {
                out.push(SessionUpdate::error(message, true));
            }
        }
        self.turn_fatal = None;
        if let Some(usage) = self.dialect.run_usage(line) {
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
                let scope = self.streams.scope(parent);
                scope.text.clear();
                scope.thought.clear();
                let msg = message.0;
                scope.message_id = ctx.message_ids.share_opt(msg.as_ref().and_then(|m| m.id.non_empty()));
                scope.model = ctx.models.share_opt(msg.as_ref().and_then(|m| m.model.non_empty()));
                scope.start_usage = msg.and_then(|m| m.usage.0);
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
            "message_stop" => self.streams.end_message(parent),
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
        let scope = self.streams.scope(parent);
        scope.buffer(piece).push_str(&text);
        env.model = scope.model.clone();
        env.message_id = scope.message_id.clone();
        match piece {
            Piece::Text => self.dialect.text(text.into_owned(), out),
            Piece::Thought => out.push(SessionUpdate::thought(text.into_owned())),
        }
    }
}

/// The message of a failed `result`: its `result` text, else `errors`, else `error.message` (or
/// a string `error`), else its `subtype`.
fn result_error(line: &Line<'_>) -> String {
    if let Some(Value::String(s)) = value(line.facts().result).filter(|v| v.as_str().is_some_and(|s| !s.is_empty())) {
        return s;
    }
    if let Some(Value::Array(errors)) = value(line.facts().errors) {
        let texts: Vec<String> = errors.iter().map(super::json::display_text).collect();
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
        s.scope(None).text.push_str("Hello wor");
        assert_eq!(s.reconcile(None, Piece::Text, "Hello world"), 9);
        assert_eq!(s.reconcile(None, Piece::Text, "Again"), 0);
        s.scope(None).text.push_str("AB");
        assert_eq!(s.reconcile(None, Piece::Text, "A"), 1);
        assert_eq!(s.reconcile(None, Piece::Text, "B"), 1);
        s.scope(None).text.push_str("stale");
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

#[cfg(test)]
mod streamed_tests {
    use super::*;

    #[test]
    fn streamed_text_is_held_bounded_and_still_reconciles() {
        let piece = "0123456789abcdé-";
        let mut s = Streamed::default();
        let mut all = String::new();
        while all.len() < 3 * MAX_HELD {
            s.push_str(piece);
            all.push_str(piece);
        }
        assert!(s.head.len() <= MAX_HELD && s.len() == all.len());
        assert!(s.is_prefix_of(&all));
        assert!(s.is_prefix_of(&format!("{all} and more")));
        let mut changed = all.clone();
        let at = (2 * MAX_HELD..).find(|&i| all.is_char_boundary(i) && all.is_char_boundary(i + 1)).unwrap();
        changed.replace_range(at..at + 1, "X");
        assert!(!s.is_prefix_of(&changed), "a difference past the held text is seen");
        assert!(!s.is_prefix_of(&all[..all.len() - 1]));
        assert!(s.starts_with("0123") && !s.starts_with("x"));
    }

    #[test]
    fn a_complete_line_after_a_long_stream_adds_nothing() {
        let delta = |t: &str| {
            format!(
                "{{\"type\":\"stream_event\",\"event\":{{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{t}\"}}}},\"session_id\":\"s\",\"parent_tool_use_id\":null}}\n"
            )
        };
        let piece = "abcdefghij0123456789";
        let count = 3 * MAX_HELD / piece.len();
        let mut input = String::new();
        for _ in 0..count {
            input.push_str(&delta(piece));
        }
        let full = piece.repeat(count);
        input.push_str(&format!(
            "{{\"type\":\"assistant\",\"message\":{{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"x\",\"content\":[{{\"type\":\"text\",\"text\":\"{full}\"}}]}},\"session_id\":\"s\",\"parent_tool_use_id\":null}}\n"
        ));
        let events = crate::decode::parse(crate::decode::Agent::Claude, input.as_bytes());
        let text: String = events
            .iter()
            .filter_map(|e| match &e.update {
                crate::event::SessionUpdate::AgentMessageChunk { content } => content.as_text(),
                _ => None,
            })
            .collect();
        assert_eq!(text.len(), full.len(), "streamed once, the complete line adds nothing");
    }
}
