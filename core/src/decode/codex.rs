//! Codex decoder (`codex exec --json`, checked against codex 0.171.0).
//!
//! Codex prints one JSON object per line: `thread.started`, `turn.started`, `item.started` /
//! `item.updated` / `item.completed` (each carrying an `item` with its own `type`),
//! `turn.completed` (usage), `turn.failed` and top-level `error`. No line carries a timestamp or a
//! model, so events have neither.
//!
//! | line / item | events |
//! |---|---|
//! | `thread.started` | none; `thread_id` becomes the run's `sessionId` |
//! | `turn.started` | none |
//! | `turn.completed` | `usage{scope:"run"}`: `promptTokens` = `input_tokens` (codex already counts the cached share in it), `cachedTokens` = `cached_input_tokens`, `completionTokens` = `output_tokens` (already includes `reasoning_output_tokens`), `extra` = every other counter verbatim (`cache_write_input_tokens`, `reasoning_output_tokens`, …) |
//! | `turn.failed` | `error{fatal:true}` with `error.message` (else the JSON of `error`, else the line) |
//! | `error` (top level) | `error{fatal:false}` with `message` (else the line): these are retries and warnings (`Reconnecting... 1/5 (…)`); a turn that gives up says so with `turn.failed` |
//! | item `agent_message` (completed) | `agent_message_chunk` with `text` |
//! | item `reasoning` (completed) | `agent_thought_chunk` with `text`, else `summary` / `content` joined by newlines |
//! | item `command_execution` | started: `tool_call{in_progress}`; updated with output: `tool_call_update{in_progress}` with the output so far; completed: `tool_call_update` with `aggregated_output` as text, status `completed` iff `status == "completed"` (`failed` / `declined` → failed; no status → by `exit_code`) |
//! | item `file_change` | started: `tool_call{in_progress}` with one location per change (codex prints no diff text, so there is no diff content); completed: `tool_call_update` with the status and locations |
//! | item `mcp_tool_call` | started: `tool_call{in_progress}`, `rawInput` = `arguments`; completed: `tool_call_update` with `result.content` mapped (text, image, resource text) and `error.message` as text; failed when `status == "failed"` or `error` is set |
//! | item `web_search` | started: ONE `tool_call{in_progress}`; completed: `tool_call_update{completed}` with the title once the query is known |
//! | item `todo_list` (any phase) | `plan`: completed items completed, the first unfinished one in_progress, the rest pending; priority medium |
//! | item `error` (completed) | `error{fatal:false}` (codex goes on: e.g. missing model metadata, even before `turn.started`) |
//! | any other `type` / item type | none, counted as unknown |
//!
//! Tool items: `toolCallId` = the item id; `toolName` = the item type (`command_execution`,
//! `file_change`, `web_search`), since codex prints item types rather than the model's tool
//! names. An MCP call is named the way the model called it: the namespace codex gives MCP
//! servers joined with the tool, `mcp__<server>__<tool>`, except codex's own MCP helpers
//! (`list_mcp_resources`, `list_mcp_resource_templates`, `read_mcp_resource`), which keep their
//! name. `rawOutput` of every completion is the completed item verbatim.
//!
//! Decisions worth knowing:
//! - A completed tool item whose start was never printed still gets its `tool_call` first (the
//!   completed item carries the whole call), so consumers see the same pair either way.
//! - A `web_search` item can carry the key `id` twice (codex's `item_N`, then the provider's
//!   id). The FIRST one is the tool call id, for the started and the completed line alike;
//!   `rawOutput` keeps what a JSON parser makes of the item (the last duplicate).
//! - Codex item ids name items, not LLM messages, so no event carries a `messageId`.
//! - `codex exec` runs one turn, and its `turn.completed` sums every model request of the
//!   run, so it is the run total (`scope:"run"`), not one call.
//! - A shell wrapper (`/bin/bash -lc '…'`) is peeled off the command for the title only.
//!
//! Golden cases (`tests/golden/codex/`): `s1-text`, `s2-bash`, `s3-read-edit` are real captures;
//! the `e-*` cases are written from the captured shapes:
//!
//! | case | pins |
//! |---|---|
//! | e-retries-then-turn-failed | five `Reconnecting... n/5` retries and the final `error` are not fatal; `turn.failed` is |
//! | e-retry-recover | one retry, then the answer and the run usage |
//! | e-api-error-401 | `error` + `turn.failed` with codex's 401 text |
//! | e-error-item-before-turn | an `error` item before `turn.started` is a non-fatal error |
//! | e-mcp-tools | MCP success, `isError` result (failed, result text kept), JSON-RPC failure (`error.message` as content), codex's own MCP helpers, an image block |
//! | e-web-search-duplicate-id | `id` printed twice: one call and one update, both `item_6`; the title gets the query on completion |
//! | e-file-changes | add → Create, update → Edit, delete → Delete, several files, a `null` change, a failed patch |
//! | e-todo-list | started/updated/completed todo lists as plans (first unfinished in progress) |
//! | e-failing-commands | exit 2 (`failed`), `declined`, backticks and quotes in a title |
//! | e-reasoning | reasoning `text`, `summary` parts joined, empty reasoning dropped |
//! | e-parallel-orphan-out-of-order | two calls completing in reverse order, output while running, a completion never started |
//! | e-bad-lines | `null`, non-objects, invalid JSON, unknown types, odd item shapes, messages that are not strings |

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::Deserialize;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::context::{DecodeContext, Envelope};
use super::json::{opt_string, parse_line, str_field};
use super::{Agent, HarnessDecoder, LineOutcome};
use crate::event::{
    ContentBlock, ImageContent, OutputEvent, PlanEntry, PlanEntryPriority, PlanEntryStatus, RawJson, SessionUpdate,
    TokenUsage, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, UsageScope,
};
use crate::tools::{MAX_TITLE_CHARS, command_title, tool_kind, truncate_chars};

/// Stateful codex line decoder.
#[derive(Debug, Default)]
pub(crate) struct CodexDecoder {
    /// Tool items whose `tool_call` was emitted and whose completion has not been seen yet.
    open: HashSet<String>,
}

/// One line. Small polymorphic parts are read straight into [`Value`]s; the item is kept as
/// borrowed raw fields and turned into values only as far as the events need them.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", default, borrow, with = "opt_string")]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    thread_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    item: Option<RawItem<'a>>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    message: Option<Value>,
}

/// An item's fields in wire order, unparsed. Anything that is not an object reads as an item
/// with `is_object` false.
#[derive(Default)]
struct RawItem<'a> {
    fields: Vec<(Cow<'a, str>, &'a RawValue)>,
    is_object: bool,
}

/// A map key, borrowed from the line when it has no escapes.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        struct K;
        impl<'de> Visitor<'de> for K {
            type Value = Cow<'de, str>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
                Ok(Cow::Borrowed(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Cow<'de, str>, E> {
                Ok(Cow::Owned(v.to_string()))
            }
        }
        d.deserialize_str(K)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawItem<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = RawItem<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a codex item")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<RawItem<'a>, A::Error> {
                let mut item = RawItem { fields: Vec::with_capacity(8), is_object: true };
                while let Some(key) = access.next_key_seed(KeySeed)? {
                    let value: &'de RawValue = access.next_value()?;
                    item.fields.push((key, value));
                }
                Ok(item)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut access: A) -> Result<RawItem<'a>, A::Error> {
                while access.next_element::<IgnoredAny>()?.is_some() {}
                Ok(RawItem::default())
            }
            fn visit_bool<E>(self, _: bool) -> Result<RawItem<'a>, E> {
                Ok(RawItem::default())
            }
            fn visit_i64<E>(self, _: i64) -> Result<RawItem<'a>, E> {
                Ok(RawItem::default())
            }
            fn visit_u64<E>(self, _: u64) -> Result<RawItem<'a>, E> {
                Ok(RawItem::default())
            }
            fn visit_f64<E>(self, _: f64) -> Result<RawItem<'a>, E> {
                Ok(RawItem::default())
            }
            fn visit_str<E>(self, _: &str) -> Result<RawItem<'a>, E> {
                Ok(RawItem::default())
            }
            fn visit_unit<E>(self) -> Result<RawItem<'a>, E> {
                Ok(RawItem::default())
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl<'a> RawItem<'a> {
    /// The FIRST value printed under `key` (codex's `web_search` items print `id` twice: its
    /// `item_N`, then the provider's id).
    fn raw(&self, key: &str) -> Option<&'a RawValue> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    /// The first value under `key` as a string, borrowed when it has no escapes.
    fn str(&self, key: &str) -> Option<Cow<'a, str>> {
        let text = self.raw(key)?.get();
        if !text.starts_with('"') {
            return None;
        }
        // A raw value is valid JSON: a string without a backslash is its own text, quoted.
        if text.len() >= 2 && !text.as_bytes().contains(&b'\\') {
            return Some(Cow::Borrowed(&text[1..text.len() - 1]));
        }
        match serde_json::from_str::<&'a str>(text) {
            Ok(s) => Some(Cow::Borrowed(s)),
            Err(_) => serde_json::from_str::<String>(text).ok().map(Cow::Owned),
        }
    }

    /// The item as values: every field (`keys` = None, for `rawOutput`), or only `keys`. A key
    /// printed twice keeps its last value there, as any JSON reader would.
    fn to_item(&self, keys: Option<&[&str]>) -> Item {
        let wanted = |key: &str| keys.is_none_or(|ks| ks.contains(&key));
        let mut map = Map::with_capacity(self.fields.iter().filter(|(k, _)| wanted(k)).count());
        for (key, raw) in &self.fields {
            if !wanted(key) {
                continue;
            }
            if let Ok(value) = serde_json::from_str::<Value>(raw.get()) {
                map.insert(key.to_string(), value);
            }
        }
        Item { map }
    }
}

/// An item's fields (all of them, or the ones an event needs) as values.
struct Item {
    map: Map<String, Value>,
}

impl Item {
    fn str(&self, key: &str) -> Option<&str> {
        str_field(&self.map, key)
    }

    /// A non-empty string field, taken out of the item (no copy).
    fn take_text(&mut self, key: &str) -> Option<String> {
        if !matches!(self.map.get(key), Some(Value::String(s)) if !s.is_empty()) {
            return None;
        }
        match self.map.remove(key) {
            Some(Value::String(s)) => Some(s),
            _ => None,
        }
    }

    /// A field that is present and not `null`.
    fn get(&self, key: &str) -> Option<&Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Started,
    Updated,
    Completed,
}

impl HarnessDecoder for CodexDecoder {
    fn decode_line(&mut self, line: &str, ctx: &mut DecodeContext, out: &mut Vec<OutputEvent>) -> LineOutcome {
        let l: Line<'_> = match parse_line(line) {
            Ok(l) => l,
            Err(outcome) => return outcome,
        };
        let env = Envelope::default();
        match l.kind.as_deref() {
            Some("thread.started") => {
                ctx.see_session(l.thread_id.as_deref());
                LineOutcome::Decoded
            }
            Some("turn.started") => LineOutcome::Decoded,
            Some("turn.completed") => {
                if let Some(usage) = l.usage.and_then(usage) {
                    env.emit(ctx, SessionUpdate::Usage { scope: UsageScope::Run, usage }, out);
                }
                LineOutcome::Decoded
            }
            Some("turn.failed") => {
                let error = l.error.filter(|e| !e.is_null());
                let message = match &error {
                    Some(Value::String(m)) => Some(m.as_str()),
                    Some(e) => e.get("message").and_then(Value::as_str),
                    None => None,
                }
                .filter(|m| !m.is_empty())
                .map(str::to_string)
                .or_else(|| error.as_ref().map(Value::to_string))
                .unwrap_or_else(|| line.trim().to_string());
                env.emit(ctx, SessionUpdate::error(message, true), out);
                LineOutcome::Decoded
            }
            Some("error") => {
                let message = match l.message {
                    Some(Value::String(m)) if !m.is_empty() => m,
                    _ => line.trim().to_string(),
                };
                env.emit(ctx, SessionUpdate::error(message, false), out);
                LineOutcome::Decoded
            }
            Some("item.started") => self.item(Phase::Started, l.item, &env, ctx, out),
            Some("item.updated") => self.item(Phase::Updated, l.item, &env, ctx, out),
            Some("item.completed") => self.item(Phase::Completed, l.item, &env, ctx, out),
            _ => LineOutcome::UnknownType,
        }
    }
}

/// `turn.completed.usage` → run usage (see the module table).
fn usage(value: Value) -> Option<TokenUsage> {
    let Value::Object(map) = value else { return None };
    if map.is_empty() {
        return None;
    }
    let mut usage = TokenUsage::default();
    let mut extra = Map::new();
    for (key, value) in map {
        let slot = match key.as_str() {
            "input_tokens" => &mut usage.prompt_tokens,
            "cached_input_tokens" => &mut usage.cached_tokens,
            "output_tokens" => &mut usage.completion_tokens,
            _ => {
                extra.insert(key, value);
                continue;
            }
        };
        match value.as_u64() {
            Some(n) => *slot = Some(n),
            // Not a count we can read: keep it verbatim rather than drop it.
            None if !value.is_null() => {
                extra.insert(key, value);
            }
            None => {}
        }
    }
    usage.extra = (!extra.is_empty()).then_some(extra);
    Some(usage)
}

impl CodexDecoder {
    fn item(
        &mut self,
        phase: Phase,
        item: Option<RawItem<'_>>,
        env: &Envelope,
        ctx: &DecodeContext,
        out: &mut Vec<OutputEvent>,
    ) -> LineOutcome {
        let Some(raw) = item.filter(|i| i.is_object) else { return LineOutcome::UnexpectedShape };
        let Some(kind) = raw.str("type") else { return LineOutcome::UnknownType };
        match kind.as_ref() {
            "agent_message" => {
                if phase == Phase::Completed {
                    if let Some(text) = raw.str("text").filter(|t| !t.is_empty()) {
                        env.emit(ctx, SessionUpdate::message(text), out);
                    }
                }
                LineOutcome::Decoded
            }
            "reasoning" => {
                if phase == Phase::Completed {
                    if let Some(text) = reasoning_text(&mut raw.to_item(Some(&["text", "summary", "content"]))) {
                        env.emit(ctx, SessionUpdate::thought(text), out);
                    }
                }
                LineOutcome::Decoded
            }
            "todo_list" => {
                let item = raw.to_item(Some(&["items"]));
                env.emit(ctx, SessionUpdate::Plan { entries: todo_entries(item.get("items")) }, out);
                LineOutcome::Decoded
            }
            "error" => {
                if phase == Phase::Completed {
                    let message = match raw.str("message").filter(|m| !m.is_empty()) {
                        Some(m) => m.into_owned(),
                        None => Value::Object(raw.to_item(None).map).to_string(),
                    };
                    env.emit(ctx, SessionUpdate::error(message, false), out);
                }
                LineOutcome::Decoded
            }
            "command_execution" | "file_change" | "mcp_tool_call" | "web_search" => {
                self.tool_item(phase, &kind, &raw, env, ctx, out)
            }
            _ => LineOutcome::UnknownType,
        }
    }

    fn tool_item(
        &mut self,
        phase: Phase,
        kind: &str,
        raw: &RawItem<'_>,
        env: &Envelope,
        ctx: &DecodeContext,
        out: &mut Vec<OutputEvent>,
    ) -> LineOutcome {
        let Some(id) = raw.str("id").filter(|id| !id.is_empty()) else { return LineOutcome::UnexpectedShape };
        match phase {
            Phase::Started | Phase::Updated => {
                if !self.open.contains(id.as_ref()) {
                    let mut item = raw.to_item(Some(CALL_FIELDS));
                    env.emit(ctx, SessionUpdate::ToolCall(tool_call(kind, &id, &mut item, true)), out);
                    self.open.insert(id.into_owned());
                } else if phase == Phase::Updated && kind == "command_execution" {
                    if let Some(output) = raw.str("aggregated_output").filter(|o| !o.is_empty()) {
                        let mut update = ToolCallUpdate::new(id);
                        update.status = Some(ToolCallStatus::InProgress);
                        update.content = Some(vec![ToolCallContent::text(output)]);
                        env.emit(ctx, SessionUpdate::ToolCallUpdate(update), out);
                    }
                }
            }
            Phase::Completed => {
                let mut item = raw.to_item(None);
                if !self.open.remove(id.as_ref()) {
                    env.emit(ctx, SessionUpdate::ToolCall(tool_call(kind, &id, &mut item, false)), out);
                }
                env.emit(ctx, SessionUpdate::ToolCallUpdate(completion(kind, id.into_owned(), item)), out);
            }
        }
        LineOutcome::Decoded
    }
}

/// The fields a `tool_call` is built from.
const CALL_FIELDS: &[&str] = &["command", "changes", "server", "tool", "arguments", "query", "action"];

/// The text of a completed reasoning item: `text`, else `summary` / `content` entries joined.
fn reasoning_text(item: &mut Item) -> Option<String> {
    if let Some(text) = item.take_text("text") {
        return Some(text);
    }
    for key in ["summary", "content"] {
        let Some(Value::Array(parts)) = item.get(key) else { continue };
        let texts: Vec<&str> = parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.as_str()),
                Value::Object(o) => str_field(o, "text"),
                _ => None,
            })
            .collect();
        let joined = texts.join("\n");
        if !joined.is_empty() {
            return Some(joined);
        }
    }
    None
}

/// `todo_list.items` → plan entries (see the module table).
fn todo_entries(items: Option<&Value>) -> Vec<PlanEntry> {
    let Some(Value::Array(items)) = items else { return Vec::new() };
    let mut seen_open = false;
    items
        .iter()
        .filter_map(Value::as_object)
        .filter_map(|t| {
            let content = str_field(t, "text")?.to_string();
            let status = if t.get("completed") == Some(&Value::Bool(true)) {
                PlanEntryStatus::Completed
            } else if !seen_open {
                seen_open = true;
                PlanEntryStatus::InProgress
            } else {
                PlanEntryStatus::Pending
            };
            Some(PlanEntry { content, status, priority: PlanEntryPriority::Medium })
        })
        .collect()
}

/// The `(path, kind)` of each change of a `file_change` item that names a path.
fn changes(item: &Item) -> Vec<(&str, Option<&str>)> {
    let Some(Value::Array(changes)) = item.get("changes") else { return Vec::new() };
    changes
        .iter()
        .filter_map(Value::as_object)
        .filter_map(|c| Some((str_field(c, "path").filter(|p| !p.is_empty())?, str_field(c, "kind"))))
        .collect()
}

fn change_locations(changes: &[(&str, Option<&str>)]) -> Option<Vec<ToolCallLocation>> {
    let locations: Vec<ToolCallLocation> = changes.iter().map(|(p, _)| ToolCallLocation::path(*p)).collect();
    (!locations.is_empty()).then_some(locations)
}

fn change_title(changes: &[(&str, Option<&str>)]) -> String {
    match changes {
        [] => "Edit files".to_string(),
        [(path, kind)] => {
            let verb = match kind {
                Some("add") => "Create",
                Some("delete") => "Delete",
                _ => "Edit",
            };
            format!("{verb} {path}")
        }
        many => format!("Edit {} files", many.len()),
    }
}

/// Codex's own MCP helpers, shown as `mcp_tool_call` items but not tools of the named server.
const MCP_HELPERS: &[&str] = &["list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"];

fn mcp_tool_name(server: Option<&str>, tool: Option<&str>) -> Option<String> {
    let tool = tool.filter(|t| !t.is_empty())?;
    match server.filter(|s| !s.is_empty()) {
        Some(server) if !MCP_HELPERS.contains(&tool) => Some(format!("mcp__{server}__{tool}")),
        _ => Some(tool.to_string()),
    }
}

/// The search query of a `web_search` item: `query`, else `action.query`.
fn search_query(item: &Item) -> Option<&str> {
    item.str("query")
        .filter(|q| !q.is_empty())
        .or_else(|| item.get("action")?.get("query")?.as_str().filter(|q| !q.is_empty()))
}

fn search_title(query: Option<&str>) -> String {
    match query {
        Some(q) => format!("Search: {}", truncate_chars(q, MAX_TITLE_CHARS)),
        None => "Web search".to_string(),
    }
}

/// Peel a `/bin/bash -lc '<script>'` wrapper off a command, for titles.
fn unwrap_shell(command: &str) -> Cow<'_, str> {
    const SHELLS: &[&str] = &["/bin/bash", "/usr/bin/bash", "bash", "/bin/zsh", "/usr/bin/zsh", "zsh", "/bin/sh", "sh"];
    for shell in SHELLS {
        let Some(rest) =
            command.strip_prefix(shell).and_then(|r| r.strip_prefix(" -lc ").or_else(|| r.strip_prefix(" -c ")))
        else {
            continue;
        };
        let rest = rest.trim();
        if let Some(inner) = rest.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')) {
            // POSIX single quotes: `'\''` is an escaped quote; any other quote means several words.
            if inner.replace("'\\''", "").contains('\'') {
                return Cow::Borrowed(command);
            }
            return Cow::Owned(inner.replace("'\\''", "'"));
        }
        if !rest.is_empty() && !rest.contains(['\'', '"']) {
            return Cow::Borrowed(rest);
        }
        return Cow::Borrowed(command);
    }
    Cow::Borrowed(command)
}

/// An object with the given fields of the item (for `rawInput`): moved out of the item when
/// `take` (the item is not needed afterwards), else cloned.
fn pick(item: &mut Item, keys: &[&str], take: bool) -> Option<Value> {
    let mut picked = Map::with_capacity(keys.len());
    for k in keys {
        if let Some(v) = grab(item, k, take) {
            picked.insert((*k).to_string(), v);
        }
    }
    (!picked.is_empty()).then_some(Value::Object(picked))
}

/// A field of the item, moved out when `take`, else cloned.
fn grab(item: &mut Item, key: &str, take: bool) -> Option<Value> {
    if take { item.map.swap_remove(key) } else { item.map.get(key).cloned() }
}

/// The `tool_call` for a tool item (from its started line, or from a completion seen alone).
/// With `take`, the fields that become `rawInput` are moved out of `item`.
fn tool_call(kind: &str, id: &str, item: &mut Item, take: bool) -> ToolCall {
    let mut call = ToolCall {
        tool_call_id: id.to_string(),
        title: String::new(),
        tool_name: Some(kind.to_string()),
        kind: tool_kind(Agent::Codex, kind),
        status: ToolCallStatus::InProgress,
        raw_input: None,
        content: None,
        locations: None,
    };
    match kind {
        "command_execution" => {
            call.title = match item.str("command").filter(|c| !c.trim().is_empty()) {
                Some(c) => command_title(&unwrap_shell(c)),
                None => "Run command".to_string(),
            };
            if item.str("command").is_some() {
                call.raw_input = pick(item, &["command"], take).map(RawJson::from);
            }
        }
        "file_change" => {
            let changes = changes(item);
            call.title = change_title(&changes);
            call.locations = change_locations(&changes);
            if item.get("changes").is_some() {
                call.raw_input = pick(item, &["changes"], take).map(RawJson::from);
            }
        }
        "mcp_tool_call" => {
            let server = item.str("server").filter(|s| !s.is_empty());
            let tool = item.str("tool").filter(|t| !t.is_empty());
            call.tool_name = mcp_tool_name(server, tool);
            if let Some(name) = &call.tool_name {
                call.kind = tool_kind(Agent::Codex, name);
            }
            call.title = match (server, tool) {
                (Some(s), Some(t)) => format!("{s}: {t}"),
                (None, Some(t)) => t.to_string(),
                (Some(s), None) => format!("{s}: MCP tool"),
                (None, None) => "MCP tool".to_string(),
            };
            if item.get("arguments").is_some() {
                call.raw_input = grab(item, "arguments", take).map(RawJson::from);
            }
        }
        _ => {
            // web_search
            call.title = search_title(search_query(item));
            call.raw_input = pick(item, &["query", "action"], take).map(RawJson::from);
        }
    }
    call
}

/// The `tool_call_update` for a completed tool item; the item becomes its `rawOutput`.
fn completion(kind: &str, id: String, item: Item) -> ToolCallUpdate {
    let mut update = ToolCallUpdate::new(id);
    let status = item.str("status");
    let error = item.get("error");
    let failed = match kind {
        "command_execution" => match status {
            Some("completed") => false,
            Some(_) => true,
            None => item.get("exit_code").is_some_and(|c| c.as_i64() != Some(0)),
        },
        "mcp_tool_call" => status == Some("failed") || error.is_some(),
        _ => status.is_some_and(|s| s != "completed"),
    };
    update.status = Some(if failed { ToolCallStatus::Failed } else { ToolCallStatus::Completed });
    let mut content = Vec::new();
    match kind {
        "command_execution" => {
            if let Some(output) = item.str("aggregated_output").filter(|o| !o.is_empty()) {
                content.push(ToolCallContent::text(output));
            }
        }
        "file_change" => update.locations = change_locations(&changes(&item)),
        "mcp_tool_call" => {
            mcp_result_content(item.get("result"), &mut content);
            let message = match error {
                Some(Value::String(m)) => Some(m.as_str()),
                Some(Value::Object(e)) => str_field(e, "message"),
                _ => None,
            };
            if let Some(m) = message.filter(|m| !m.is_empty()) {
                content.push(ToolCallContent::text(m));
            }
        }
        _ => update.title = search_query(&item).map(|q| search_title(Some(q))),
    }
    update.content = (!content.is_empty()).then_some(content);
    update.raw_output = Some(RawJson::from(Value::Object(item.map)));
    update
}

/// MCP `result.content` blocks → tool content: text, images, embedded resource text; any
/// other block as its JSON text. A string result is one text.
fn mcp_result_content(result: Option<&Value>, out: &mut Vec<ToolCallContent>) {
    let blocks = match result {
        Some(Value::String(s)) => {
            if !s.is_empty() {
                out.push(ToolCallContent::text(s.as_str()));
            }
            return;
        }
        Some(Value::Object(o)) => match o.get("content") {
            Some(Value::Array(blocks)) => blocks,
            Some(Value::String(s)) if !s.is_empty() => {
                out.push(ToolCallContent::text(s.as_str()));
                return;
            }
            _ => return,
        },
        Some(Value::Array(blocks)) => blocks,
        _ => return,
    };
    for block in blocks {
        let Some(obj) = block.as_object() else {
            if let Value::String(s) = block {
                out.push(ToolCallContent::text(s.as_str()));
            }
            continue;
        };
        let str_of = |k: &str| str_field(obj, k);
        match str_of("type") {
            Some("text") => out.push(ToolCallContent::text(str_of("text").unwrap_or_default())),
            Some("image") => {
                let mime = str_of("mime_type").or_else(|| str_of("mimeType")).unwrap_or_default();
                out.push(ToolCallContent::Content {
                    content: ContentBlock::Image(ImageContent {
                        data: str_of("data").unwrap_or_default().to_string(),
                        mime_type: mime.to_string(),
                        uri: None,
                    }),
                });
            }
            Some("resource") if obj.get("resource").and_then(|r| r.get("text")).and_then(Value::as_str).is_some() => {
                let text = obj["resource"]["text"].as_str().unwrap_or_default();
                out.push(ToolCallContent::text(text));
            }
            _ => out.push(ToolCallContent::text(block.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{Agent, Decoder};

    fn run(input: &str) -> Vec<Value> {
        let mut d = Decoder::new(Agent::Codex);
        let mut evs = d.feed(input.as_bytes());
        evs.extend(d.finish());
        evs.iter().map(|e| serde_json::to_value(e).unwrap()).collect()
    }

    #[test]
    fn duplicate_id_keeps_the_first_for_started_and_completed() {
        let evs = run(concat!(
            r#"{"type":"item.started","item":{"id":"item_6","type":"web_search","id":"ws_1","query":"","action":{"type":"other"}}}"#,
            "\n",
            r#"{"type":"item.completed","item":{"id":"item_6","type":"web_search","id":"ws_1","query":"q","action":{"type":"search","query":"q"}}}"#,
            "\n"
        ));
        assert_eq!(evs.len(), 2);
        assert_eq!(evs[0]["update"]["sessionUpdate"], "tool_call");
        assert_eq!(evs[0]["update"]["toolCallId"], "item_6");
        assert_eq!(evs[0]["update"]["title"], "Web search");
        assert_eq!(evs[1]["update"]["sessionUpdate"], "tool_call_update");
        assert_eq!(evs[1]["update"]["toolCallId"], "item_6");
        assert_eq!(evs[1]["update"]["title"], "Search: q");
        assert_eq!(evs[1]["update"]["rawOutput"]["id"], "ws_1");
    }

    #[test]
    fn shell_wrappers_are_peeled_for_titles_only() {
        assert_eq!(unwrap_shell("/bin/bash -lc 'echo hi'"), "echo hi");
        assert_eq!(unwrap_shell("/bin/bash -lc 'echo '\\''x'\\'''"), "echo 'x'");
        assert_eq!(unwrap_shell("bash -lc ls"), "ls");
        assert_eq!(unwrap_shell("/bin/bash -lc 'a' 'b'"), "/bin/bash -lc 'a' 'b'");
        assert_eq!(unwrap_shell("ls -la"), "ls -la");
    }

    #[test]
    fn mcp_names_join_server_and_tool_except_codex_helpers() {
        assert_eq!(mcp_tool_name(Some("kb"), Some("lookup")).as_deref(), Some("mcp__kb__lookup"));
        assert_eq!(mcp_tool_name(Some("codex"), Some("list_mcp_resources")).as_deref(), Some("list_mcp_resources"));
        assert_eq!(mcp_tool_name(Some("kb"), Some("read_mcp_resource")).as_deref(), Some("read_mcp_resource"));
        assert_eq!(mcp_tool_name(None, None), None);
    }

    #[test]
    fn usage_keeps_unreadable_counters_in_extra() {
        let evs = run(
            "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":10,\"cached_input_tokens\":4,\"output_tokens\":-1,\"reasoning_output_tokens\":2}}\n",
        );
        let u = &evs[0]["update"]["usage"];
        assert_eq!(u["promptTokens"], 10);
        assert_eq!(u["cachedTokens"], 4);
        assert!(u.get("completionTokens").is_none());
        assert_eq!(u["extra"]["output_tokens"], -1);
        assert_eq!(u["extra"]["reasoning_output_tokens"], 2);
    }

    #[test]
    fn malformed_errors_still_carry_a_message() {
        let evs = run(concat!(
            "{\"type\":\"error\"}\n{\"type\":\"turn.failed\"}\n{\"type\":\"turn.failed\",\"error\":{\"code\":1}}\n",
            "{\"type\":\"turn.failed\",\"error\":\"plain words\"}\n"
        ));
        assert_eq!(evs.len(), 4);
        assert_eq!(evs[3]["update"]["message"], "plain words");
        assert_eq!(evs[0]["update"]["message"], "{\"type\":\"error\"}");
        assert_eq!(evs[1]["update"]["fatal"], true);
        assert_eq!(evs[2]["update"]["message"], "{\"code\":1}");
    }
}
