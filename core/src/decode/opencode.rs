//! OpenCode decoder (`opencode run --format json`, with or without `--thinking`; checked against
//! opencode 1.18.33).
//!
//! Every line is `{type, timestamp, sessionID, part | error}`. `sessionID` becomes the run's
//! `sessionId`; `timestamp` (milliseconds since the epoch) becomes ISO 8601 UTC with
//! milliseconds (`2026-12-02T09:41:56.202Z`); `part.messageID` becomes `messageId` on every event
//! of the line, so text, tool calls and the step's usage of one LLM message share it.
//!
//! Each line is read in one pass by the scanner ([`super::scan::Scan`]) into borrowed fields,
//! failing exactly where serde_json's reading of it failed: a known key printed twice, a field
//! read by type (the strings, `tokens`, `error`) holding a lone surrogate escape or a number
//! beyond `f64`, or a `part` that is neither an object, a list (read by position) nor `null`.
//! `timestamp`, `cost` and the members of `part.state` are kept as printed (syntax checked; a
//! state member with an unpaired surrogate escape still fails the line); a tool's input and
//! `metadata` are read from that text when a call needs them (an input printing a known key
//! twice: its last value). The unit test `edge_lines_decode_as_before` pins these edges.
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

use serde_json::{Map, Value};

use super::borrowed::unescape_literal;
use super::concat::title;
use super::context::{DecodeContext, Envelope};
use super::id_set::IdSet;
use super::in_place::{SeenKeys, key_text};
use super::json::{ObjList, classify_failure, first_str, str_field};
use super::raw_record::{ObjectMembers, raw_count, read_raw_json};
use super::scan::{Bad, Res, Scan, read_obj_list};
use super::{Agent, HarnessDecoder, LineOutcome};
use crate::event::ToolKind;
use crate::event::{
    ContentBlock, DiffContent, ImageContent, OutputEvent, PlanEntry, PlanEntryPriority, PlanEntryStatus, RawJson,
    SessionUpdate, SharedStr, TokenUsage, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate,
    UsageScope,
};
use crate::time::IsoMillis;
use crate::tools::{MAX_TITLE_CHARS, command_title, kind_table, truncate_chars};

/// Opencode line decoder.
#[derive(Debug, Default)]
pub(crate) struct OpencodeDecoder {
    /// Calls announced by an earlier line whose state was not final yet (pending/running).
    open: IdSet,
    /// The scanner's buffer for building `tokens` objects, kept from line to line.
    scratch: Vec<(String, Value)>,
}

/// One line, read in one pass by [`Scan`] into a struct the decoder holds. A known key printed
/// twice makes the line unusable, as a derived struct would.
#[derive(Default)]
struct Line<'a> {
    kind: Option<Cow<'a, str>>,
    /// As printed (`None` for `null`).
    timestamp: Option<&'a str>,
    session_id: Option<Cow<'a, str>>,
    part: Option<Part<'a>>,
    error: Option<Value>,
}

impl<'a> Line<'a> {
    /// Read a whole line into `self` (a default line); on failure tell why the line could not
    /// be used. `scratch` is the scanner's buffer, reused from line to line.
    fn parse(&mut self, text: &'a str, scratch: &mut Vec<(String, Value)>) -> Result<(), LineOutcome> {
        // Only objects (a derived struct would read a list by position).
        if !text.trim_start().starts_with('{') {
            return Err(classify_failure(text));
        }
        let mut sc = Scan::with_scratch(text, std::mem::take(scratch));
        let read = self.read(&mut sc).and_then(|()| sc.end());
        *scratch = sc.into_scratch();
        read.map_err(|Bad| classify_failure(text))
    }

    fn read(&mut self, sc: &mut Scan<'a>) -> Res<()> {
        let l = self;
        read_fields(sc, Dups::Fail, |key, sc| {
            Ok(match key {
                "type" => set(&mut l.kind, sc.opt_str()?, 1 << 0),
                "timestamp" => set(&mut l.timestamp, raw(sc)?, 1 << 1),
                "sessionID" => set(&mut l.session_id, sc.opt_str()?, 1 << 2),
                "part" => Part::read(&mut l.part, sc).map(|()| 1 << 3)?,
                "error" => set(&mut l.error, if sc.null()? { None } else { Some(sc.json_value()?) }, 1 << 4),
                _ => sc.skip().map(|()| 0)?,
            })
        })
    }
}

/// What a known key printed twice in an object means.
#[derive(Clone, Copy, PartialEq)]
enum Dups {
    /// The object is unusable (a derived struct's read).
    Fail,
    /// The last value counts (a [`Value`]'s read).
    LastWins,
}

/// Read the fields of the object that is the next value, by type (keys decoded, nesting counted
/// as serde_json counts it, so a typed read inside fails where serde_json's failed): `field`
/// reads the value of a key it knows and returns the key's bit (each known key has its own), or
/// skips the value and returns 0.
#[inline(always)]
fn read_fields<'a>(sc: &mut Scan<'a>, dups: Dups, mut field: impl FnMut(&str, &mut Scan<'a>) -> Res<u32>) -> Res<()> {
    let mut seen = 0u32;
    sc.object(|sc, key| {
        let bit = field(&key, sc)?;
        if seen & bit != 0 && dups == Dups::Fail {
            return Err(Bad);
        }
        seen |= bit;
        Ok(())
    })
}

/// Store a field's value; its bit for the duplicate check.
#[inline(always)]
fn set<T>(slot: &mut T, value: T, bit: u32) -> u32 {
    *slot = value;
    bit
}

/// A value kept as printed (its syntax checked, as serde_json's `&RawValue`); `None` for `null`.
fn raw<'a>(sc: &mut Scan<'a>) -> Res<Option<&'a str>> {
    if sc.null()? { Ok(None) } else { sc.raw().map(Some) }
}

/// True when a [`Value`] reads `text` whole (a captured value holding a lone surrogate escape
/// or a number beyond `f64` does not).
fn reads_as_value(text: &str) -> bool {
    let mut sc = Scan::new(text);
    sc.check().and_then(|()| sc.end()).is_ok()
}

/// True when `text` may hold a `\u` escape of a surrogate (a superset: `\\u` counts too), found
/// with one searcher built once: long tool outputs hold many other escapes (`\n`), which a
/// backslash-by-backslash walk stops at one by one.
fn may_hold_surrogate_escape(text: &str) -> bool {
    static FINDER: std::sync::OnceLock<memchr::memmem::Finder<'static>> = std::sync::OnceLock::new();
    let finder = FINDER.get_or_init(|| memchr::memmem::Finder::new(b"\\u"));
    let bytes = text.as_bytes();
    finder.find_iter(bytes).any(|at| matches!(bytes.get(at + 2), Some(b'd' | b'D')))
}

/// The string a captured value holds, borrowed when it has no escapes; `None` when it is not a
/// string.
fn string_of(raw: &str) -> Option<Cow<'_, str>> {
    if raw.starts_with('"') { unescape_literal(raw) } else { None }
}

/// A line's part.
#[derive(Default)]
struct Part<'a> {
    text: Option<Cow<'a, str>>,
    message_id: Option<Cow<'a, str>>,
    call_id: Option<Cow<'a, str>>,
    id: Option<Cow<'a, str>>,
    tool: Option<Cow<'a, str>>,
    state: State<'a>,
    /// An object: its counters, and itself as printed (the usage's `extra`).
    tokens: Option<Tokens>,
    /// As printed.
    cost: Option<&'a str>,
    reason: Option<Cow<'a, str>>,
}

impl<'a> Part<'a> {
    /// `part`, into `slot` (read in place: a part is a few hundred bytes): `null` is none; an
    /// object is read field by field, a list by position; any other value fails the line (all
    /// as a derived struct reads it).
    fn read(slot: &mut Option<Part<'a>>, sc: &mut Scan<'a>) -> Res<()> {
        match sc.peek() {
            Some(b'{') => slot.insert(Part::default()).read_fields(sc),
            Some(b'[') => slot.insert(Part::default()).read_positions(sc),
            _ if sc.null()? => {
                *slot = None;
                Ok(())
            }
            _ => Err(Bad),
        }
    }

    fn read_fields(&mut self, sc: &mut Scan<'a>) -> Res<()> {
        let p = self;
        read_fields(sc, Dups::Fail, |key, sc| {
            Ok(match key {
                "text" => set(&mut p.text, sc.opt_str()?, 1 << 0),
                "messageID" => set(&mut p.message_id, sc.opt_str()?, 1 << 1),
                "callID" => set(&mut p.call_id, sc.opt_str()?, 1 << 2),
                "id" => set(&mut p.id, sc.opt_str()?, 1 << 3),
                "tool" => set(&mut p.tool, sc.opt_str()?, 1 << 4),
                "reason" => set(&mut p.reason, sc.opt_str()?, 1 << 5),
                "state" => set(&mut p.state, State::read(sc)?, 1 << 6),
                "tokens" => set(&mut p.tokens, read_tokens(sc)?, 1 << 7),
                "cost" => set(&mut p.cost, raw(sc)?, 1 << 8),
                _ => sc.skip().map(|()| 0)?,
            })
        })
    }

    /// A part printed as a list, as a derived struct reads one: the elements are the fields in
    /// the order `text`, `messageID`, `callID`, `id`, `tool`, `state`, `tokens`, `cost`,
    /// `reason`; fewer leave the rest unset, more fail the line.
    fn read_positions(&mut self, sc: &mut Scan<'a>) -> Res<()> {
        let mut at = 0;
        sc.array(|sc| {
            match at {
                0 => self.text = sc.opt_str()?,
                1 => self.message_id = sc.opt_str()?,
                2 => self.call_id = sc.opt_str()?,
                3 => self.id = sc.opt_str()?,
                4 => self.tool = sc.opt_str()?,
                5 => self.state = State::read(sc)?,
                6 => self.tokens = read_tokens(sc)?,
                7 => self.cost = raw(sc)?,
                8 => self.reason = sc.opt_str()?,
                _ => return Err(Bad),
            }
            at += 1;
            Ok(())
        })
    }
}

/// `part.tokens` read in the line's pass: the counters a usage needs (a key printed twice counts
/// with its last value), and the object kept as printed for `extra`.
#[derive(Default)]
struct Tokens {
    input: Option<u64>,
    output: Option<u64>,
    reasoning: Option<u64>,
    cache_read: Option<u64>,
    cache_write: Option<u64>,
    /// The object (its members as printed); `None` when it has none.
    object: Option<RawJson>,
}

/// `part.tokens`: [`Tokens`] for an object; `None` for `null` or any other value (read by type
/// all the same, so text a `Value` refuses fails the line).
fn read_tokens(sc: &mut Scan<'_>) -> Res<Option<Tokens>> {
    if sc.peek() != Some(b'{') {
        return sc.check().map(|()| None);
    }
    let mut t = Tokens::default();
    let mut members = ObjectMembers::default();
    sc.object(|r, key| {
        let raw = r.checked_raw()?;
        match key.as_ref() {
            "input" => t.input = raw_count(raw),
            "output" => t.output = raw_count(raw),
            "reasoning" => t.reasoning = raw_count(raw),
            "cache" => (t.cache_read, t.cache_write) = cache_counts(raw),
            _ => {}
        }
        members.insert(key, raw);
        Ok(())
    })?;
    t.object = members.into_raw_json();
    Ok(Some(t))
}

/// `tokens.cache`'s `read` and `write` counts (the last printing of each), when it is an object.
fn cache_counts(raw: &str) -> (Option<u64>, Option<u64>) {
    let (mut read, mut write) = (None, None);
    let mut sc = Scan::new(raw);
    if sc.peek() == Some(b'{') {
        // Read whole once already (`checked_raw`): this pass cannot fail.
        let _ = sc.object(|r, key| {
            let raw = r.raw()?;
            match key.as_ref() {
                "read" => read = raw_count(raw),
                "write" => write = raw_count(raw),
                _ => {}
            }
            Ok(())
        });
    }
    (read, write)
}

impl HarnessDecoder for OpencodeDecoder {
    fn decode_line(&mut self, line: &str, ctx: &mut DecodeContext, out: &mut Vec<OutputEvent>) -> LineOutcome {
        let mut l = Line::default();
        if let Err(outcome) = l.parse(line, &mut self.scratch) {
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
                .map(|m| ctx.message_ids.share(m)),
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
                Some(part) => tool_use(&mut self.open, part, env, ctx, out),
                None => LineOutcome::UnexpectedShape,
            },
            Some("step_finish") => {
                let Some(part) = l.part else { return LineOutcome::UnexpectedShape };
                if let Some(reason) = part.reason.filter(|r| !r.is_empty()) {
                    let mut extra = ObjectMembers::default();
                    extra.insert_text(Cow::Borrowed("reason"), &reason);
                    env.extra = extra.into_raw_json();
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
                env.extra = (!extra.is_empty()).then(|| RawJson::from_value(&Value::Object(extra)));
                env.emit_last(ctx, SessionUpdate::error(message, true), out);
                LineOutcome::Decoded
            }
            _ => LineOutcome::UnknownType,
        }
    }
}

/// The line's `timestamp`: milliseconds since the epoch → ISO 8601 UTC; a string stays as is.
fn timestamp(text: &str) -> Option<SharedStr> {
    if text.starts_with('"') {
        return unescape_literal(text).filter(|s| !s.is_empty()).map(|s| SharedStr::from(&*s));
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
    IsoMillis::new(ms).map(|t| t.as_str().into())
}

/// `step_finish` tokens and cost → call usage (see the module docs).
fn step_usage(tokens: Option<Tokens>, cost: Option<&str>) -> Option<TokenUsage> {
    let cost = cost.and_then(|c| c.parse::<f64>().ok()).filter(|c| c.is_finite());
    if tokens.is_none() && cost.is_none() {
        return None;
    }
    let t = tokens.unwrap_or_default();
    Some(TokenUsage {
        prompt_tokens: t.input.and(crate::counters::sum("prompt tokens", [t.input, t.cache_read, t.cache_write])),
        completion_tokens: t.output.and(crate::counters::sum("completion tokens", [t.output, t.reasoning])),
        cached_tokens: t.cache_read,
        cost_usd: cost,
        extra: t.object,
    })
}

/// A part's `state`, read in the line's pass: an object's members kept as printed (key, value
/// text), so `rawOutput` can be the state again without its `input`, and the fields a call
/// needs read from them on demand. Anything else reads as an empty state. A value no JSON reader
/// takes (an unpaired surrogate escape) makes the line unusable, as reading it as a value did.
#[derive(Default)]
struct State<'a> {
    members: Vec<(Cow<'a, str>, &'a str)>,
    /// Some key was printed twice: the state is then read as a JSON reader reads it.
    dup: bool,
}

impl<'a> State<'a> {
    fn read(sc: &mut Scan<'a>) -> Res<State<'a>> {
        if sc.peek() != Some(b'{') {
            // Not an object (`null` included): an empty state, read as a value all the same.
            return sc.check().map(|()| State::default());
        }
        let mut state = State { members: Vec::with_capacity(8), dup: false };
        let mut seen = SeenKeys::new();
        sc.object(|sc, key| {
            // Members are kept as printed (syntax checked only), but one that holds a surrogate
            // escape must still be one a JSON reader takes (the old reader read those again).
            let raw = sc.raw()?;
            if may_hold_surrogate_escape(raw) && !reads_as_value(raw) {
                return Err(Bad);
            }
            seen.other(key_text(&key));
            state.members.push((key, raw));
            Ok(())
        })?;
        state.dup = seen.dup();
        Ok(state)
    }

    /// The last value printed under `key`.
    fn get(&self, key: &str) -> Option<&'a str> {
        self.members.iter().rev().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    /// The last value under `key`, unless it is `null`.
    fn non_null(&self, key: &str) -> Option<&'a str> {
        self.get(key).filter(|v| *v != "null")
    }

    /// The state without `input`, as a JSON reader reads it (for a key printed twice).
    fn value_without_input(&self) -> Value {
        let mut map = Map::new();
        for (key, raw) in &self.members {
            if let Ok(value) = serde_json::from_str::<Value>(raw) {
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
        // (More than 16 members were always read through a `Value`: kept, as it writes numbers
        // in its own way.)
        if self.dup || n > 16 {
            return RawJson::from_value(&self.value_without_input());
        }
        let input = self.members.iter().position(|(k, _)| k == "input");
        let kept = (0..n).filter_map(|i| match input {
            Some(at) if i == at && at + 1 < n => Some(n - 1),
            Some(at) if i == at || (i + 1 == n && at + 1 < n) => None,
            _ => Some(i),
        });
        // The exact length for plain keys, so the text becomes the record without being moved
        // to a smaller buffer: each member `"key":value,` but the last without its comma, in `{}`.
        let with_commas: usize = kept.clone().map(|i| self.members[i].0.len() + self.members[i].1.len() + 4).sum();
        let len = 2 + with_commas.saturating_sub(1);
        let mut text = String::with_capacity(len);
        text.push('{');
        for (written, i) in kept.enumerate() {
            let (key, value) = &self.members[i];
            if written > 0 {
                text.push(',');
            }
            if key.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
                text.push_str(&serde_json::to_string(key.as_ref()).unwrap_or_default());
            } else {
                text.push('"');
                text.push_str(key);
                text.push('"');
            }
            text.push(':');
            text.push_str(value);
        }
        text.push('}');
        // Keys written as serde_json writes them, values as the scanner read them whole: one
        // well-formed object, not read again.
        read_raw_json(text)
    }
}

/// One todo of `todowrite`.
#[derive(Default)]
struct Todo<'a> {
    content: Option<Cow<'a, str>>,
    status: Option<Cow<'a, str>>,
    priority: Option<Cow<'a, str>>,
}

impl<'a> Todo<'a> {
    fn read(sc: &mut Scan<'a>, dups: Dups) -> Res<Todo<'a>> {
        let mut t = Todo::default();
        read_fields(sc, dups, |key, sc| {
            Ok(match key {
                "content" => set(&mut t.content, sc.opt_str()?, 1 << 0),
                "status" => set(&mut t.status, sc.opt_str()?, 1 << 1),
                "priority" => set(&mut t.priority, sc.opt_str()?, 1 << 2),
                _ => sc.skip().map(|()| 0)?,
            })
        })?;
        Ok(t)
    }
}

/// The tool input fields a title, location, diff or plan is made of (see [`Args::read`]).
#[derive(Default)]
struct Args<'a> {
    file_path: Option<Cow<'a, str>>,
    path: Option<Cow<'a, str>>,
    description: Option<Cow<'a, str>>,
    command: Option<Cow<'a, str>>,
    /// A non-negative integer (as `Value::as_u64`), else none.
    offset: Option<u64>,
    content: Option<Cow<'a, str>>,
    old_string: Option<Cow<'a, str>>,
    new_string: Option<Cow<'a, str>>,
    pattern: Option<Cow<'a, str>>,
    url: Option<Cow<'a, str>>,
    query: Option<Cow<'a, str>>,
    tool: Option<Cow<'a, str>>,
    name: Option<Cow<'a, str>>,
    todos: ObjList<Todo<'a>>,
}

impl<'a> Args<'a> {
    /// The input's fields (an input that is not an object: none), read as the serde reader
    /// read them: as a struct (other keys' values checked for syntax only) unless a known key
    /// is printed twice, then as a [`Value`] (a key's last value) when a `Value` reads the
    /// input, else none.
    fn read(raw: &'a str) -> Args<'a> {
        if !raw.starts_with('{') {
            return Args::default();
        }
        let mut args = Args::default();
        if args.read_fields(&mut Scan::new(raw), Dups::Fail).is_ok() {
            return args;
        }
        if !reads_as_value(raw) {
            return Args::default();
        }
        let mut args = Args::default();
        args.read_fields(&mut Scan::new(raw), Dups::LastWins).map(|()| args).unwrap_or_default()
    }

    fn read_fields(&mut self, sc: &mut Scan<'a>, dups: Dups) -> Res<()> {
        let a = self;
        read_fields(sc, dups, |key, sc| {
            Ok(match key {
                "filePath" => set(&mut a.file_path, sc.opt_str()?, 1 << 0),
                "path" => set(&mut a.path, sc.opt_str()?, 1 << 1),
                "description" => set(&mut a.description, sc.opt_str()?, 1 << 2),
                "command" => set(&mut a.command, sc.opt_str()?, 1 << 3),
                "offset" => set(&mut a.offset, sc.json_value()?.as_u64(), 1 << 4),
                "content" => set(&mut a.content, sc.opt_str()?, 1 << 5),
                "oldString" => set(&mut a.old_string, sc.opt_str()?, 1 << 6),
                "newString" => set(&mut a.new_string, sc.opt_str()?, 1 << 7),
                "pattern" => set(&mut a.pattern, sc.opt_str()?, 1 << 8),
                "url" => set(&mut a.url, sc.opt_str()?, 1 << 9),
                "query" => set(&mut a.query, sc.opt_str()?, 1 << 10),
                "tool" => set(&mut a.tool, sc.opt_str()?, 1 << 11),
                "name" => set(&mut a.name, sc.opt_str()?, 1 << 12),
                "todos" => set(&mut a.todos, ObjList(read_obj_list(sc, |sc| Todo::read(sc, dups))?), 1 << 13),
                _ => sc.skip().map(|()| 0)?,
            })
        })
    }
}

/// The `metadata` facts a call needs.
#[derive(Default)]
struct Meta {
    /// `exit` when it is a number.
    exit: Option<f64>,
    /// `exists` is `true`.
    existed: bool,
}

impl Meta {
    /// Read from the raw `metadata` (often large: previews and diffs), skipping the read when
    /// neither key can be in it; read as [`Args::read`] reads an input.
    fn read(raw: Option<&str>) -> Meta {
        let Some(raw) = raw.filter(|r| r.starts_with('{')) else { return Meta::default() };
        let text = raw.as_bytes();
        if memchr::memmem::find(text, b"\"exi").is_none() && memchr::memmem::find(text, b"\\u").is_none() {
            return Meta::default();
        }
        let mut meta = Meta::default();
        if meta.read_fields(&mut Scan::new(raw), Dups::Fail).is_ok() {
            return meta;
        }
        if !reads_as_value(raw) {
            return Meta::default();
        }
        let mut meta = Meta::default();
        meta.read_fields(&mut Scan::new(raw), Dups::LastWins).map(|()| meta).unwrap_or_default()
    }

    fn read_fields(&mut self, sc: &mut Scan<'_>, dups: Dups) -> Res<()> {
        let m = self;
        read_fields(sc, dups, |key, sc| {
            Ok(match key {
                "exit" => {
                    // Read by type, as a `Value` (which makes any number an `f64`).
                    let text = sc.checked_raw()?;
                    let number = matches!(text.as_bytes().first(), Some(b'-' | b'0'..=b'9'));
                    set(&mut m.exit, text.parse::<f64>().ok().filter(|_| number), 1 << 0)
                }
                "exists" => set(&mut m.existed, sc.checked_raw()? == "true", 1 << 1),
                _ => sc.skip().map(|()| 0)?,
            })
        })
    }

    /// `completed`, or `failed` when `exit` is a non-zero number.
    fn exit_status(&self) -> ToolCallStatus {
        match self.exit {
            Some(n) if n != 0.0 => ToolCallStatus::Failed,
            _ => ToolCallStatus::Completed,
        }
    }
}

/// The kind of an opencode tool, from its lowercased name (the table in `tools.rs`).
fn kind_of(lower: &str) -> ToolKind {
    kind_table(Agent::Opencode).iter().find(|(n, _)| *n == lower).map_or(ToolKind::Other, |(_, k)| *k)
}

fn tool_use(
    open: &mut IdSet,
    part: Part<'_>,
    env: Envelope,
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
    let state = part.state;
    let input = state.non_null("input");
    let args = input.map(Args::read).unwrap_or_default();
    let meta = Meta::read(state.get("metadata"));
    let status = state.get("status").and_then(string_of);
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
        title: title.unwrap_or_else(|| match state.get("title").and_then(string_of).filter(|t| !t.is_empty()) {
            Some(t) => truncate_chars(&t, MAX_TITLE_CHARS),
            None => tool.unwrap_or("Tool call").to_string(),
        }),
        tool_name: tool.map(str::to_string),
        kind: kind_of(&lower),
        status: if status == "pending" { ToolCallStatus::Pending } else { ToolCallStatus::InProgress },
        // The input as the scanner read it whole: kept verbatim, not read again.
        raw_input: input.map(|raw| read_raw_json(raw.to_string())),
        content: (!content.is_empty()).then_some(content),
        locations: (!locations.is_empty()).then_some(locations),
    };
    // A call announced by an earlier (pending/running) line is not announced again.
    let announced = open.contains(id);
    // The line's last event takes the envelope; the ones before it get a copy.
    let mut held = (!announced).then_some(SessionUpdate::ToolCall(call));
    if let Some(entries) = plan {
        hold(&mut held, SessionUpdate::Plan { entries }, &env, ctx, out);
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
            match string_of(raw) {
                Some(s) if !s.is_empty() => content.push(ToolCallContent::text(s)),
                Some(_) => {}
                None => {
                    if let Ok(value) = serde_json::from_str::<Value>(raw) {
                        content.push(ToolCallContent::text(value.to_string()));
                    }
                }
            }
        }
        if let Some(raw) = state.get("attachments") {
            attachments(serde_json::from_str::<Value>(raw).ok().as_ref(), &mut content);
        }
        update.content = (!content.is_empty()).then_some(content);
        update.raw_output = Some(state.raw_output());
        hold(&mut held, SessionUpdate::ToolCallUpdate(update), &env, ctx, out);
    }
    if let Some(last) = held {
        env.emit_last(ctx, last, out);
    }
    LineOutcome::Decoded
}

/// Hold `update` back as the line's last event so far, emitting the one held before it.
fn hold(
    held: &mut Option<SessionUpdate>,
    update: SessionUpdate,
    env: &Envelope,
    ctx: &DecodeContext,
    out: &mut Vec<OutputEvent>,
) {
    if let Some(earlier) = held.replace(update) {
        env.emit(ctx, earlier, out);
    }
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
                let line = args.offset.filter(|n| *n > 0);
                locations.push(ToolCallLocation { path: f.to_string(), line });
            }
            file.map(|f| title("Read ", f, MAX_TITLE_CHARS, ""))
        }
        "write" => {
            if let Some(f) = file {
                locations.push(ToolCallLocation::path(f));
                if let (Some(text), false) = (args.content.take(), meta.existed) {
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
    let output = state.get("output").and_then(string_of)?;
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
    /// its transcript, recorded before the line reader moved onto the scanner), except that usage
    /// `extra` is kept as printed since: a key repeated inside a nested object stays repeated
    /// there (`"cache":{"read":3,"read":4}`; every JSON reader takes the last).
    #[test]
    fn edge_lines_decode_as_before() {
        let ours = edge_transcript();
        let before = include_str!("testdata/opencode_edges.txt");
        for (i, (a, b)) in ours.lines().zip(before.lines()).enumerate() {
            assert_eq!(a, b, "line {i}");
        }
        assert_eq!(ours.lines().count(), before.lines().count());
    }

    /// The searcher finds every surrogate escape the shared backslash walk finds (it may find
    /// more: an escaped backslash before a `u`, which the full check then clears).
    #[test]
    fn surrogate_escape_search_finds_what_the_walk_finds() {
        let long = format!("\"{}\\uD83D\"", "x\\n".repeat(40));
        for text in [
            r#""a\ud800""#,
            r#"{"k":"\uDC00"}"#,
            r#""\\ud800 is a path""#,
            r#""\\\ud800""#,
            r#""\u00e9\n\"""#,
            r#""\ud83d\ude00""#,
            r#""\ud"#,
            "",
            long.as_str(),
        ] {
            let walk = crate::decode::borrowed::may_hold_surrogates(text);
            assert!(!walk || may_hold_surrogate_escape(text), "{text}");
        }
        assert!(may_hold_surrogate_escape(&long));
        assert!(!may_hold_surrogate_escape(r#""\u00e9\n""#));
    }

    #[test]
    fn millisecond_timestamps_become_iso_utc() {
        assert_eq!(timestamp("0").as_deref(), Some("1970-01-01T00:00:00.000Z"));
        assert_eq!(timestamp("1796221316202").as_deref(), Some("2026-12-02T14:21:56.202Z"));
        assert_eq!(timestamp("951782400000").as_deref(), Some("2000-02-29T00:00:00.000Z"));
        assert_eq!(timestamp("-1").as_deref(), Some("1969-12-31T23:59:59.999Z"));
        assert_eq!(timestamp("253402300800000"), None); // year 10000
        assert_eq!(timestamp("9223372036854775807"), None);
        assert_eq!(timestamp("1796221316202.9").as_deref(), Some("2026-12-02T14:21:56.202Z"));
    }

    #[test]
    fn usage_adds_cache_to_input_and_reasoning_to_output() {
        let text = r#"{"total":1359,"input":250,"output":49,"reasoning":10,"cache":{"read":1050,"write":5}}"#;
        let tokens = read_tokens(&mut Scan::new(text)).unwrap();
        let u = step_usage(tokens, Some("0.25")).unwrap();
        assert_eq!(u.prompt_tokens, Some(1305));
        assert_eq!(u.cached_tokens, Some(1050));
        assert_eq!(u.completion_tokens, Some(59));
        assert_eq!(u.cost_usd, Some(0.25));
        assert_eq!(u.extra.unwrap().get(), text);
    }
}
