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

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::context::{DecodeContext, Envelope};
use super::json::{opt_string, parse_line, to_value};
use super::{Agent, HarnessDecoder, LineOutcome};
use crate::event::{
    ContentBlock, ImageContent, OutputEvent, PlanEntry, PlanEntryPriority, PlanEntryStatus, SessionUpdate, TokenUsage,
    ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, UsageScope,
};
use crate::tools::{command_title, tool_kind, truncate_chars, MAX_TITLE_CHARS};

/// Stateful codex line decoder.
#[derive(Debug, Default)]
pub(crate) struct CodexDecoder {
    /// Tool items whose `tool_call` was emitted and whose completion has not been seen yet.
    open: HashSet<String>,
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", default, borrow, with = "opt_string")]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    thread_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    item: Option<&'a RawValue>,
    #[serde(default, borrow)]
    usage: Option<&'a RawValue>,
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
    #[serde(default, borrow)]
    message: Option<&'a RawValue>,
}

/// The fields of an item this decoder reads, each kept raw. Hand-written so that a key printed
/// twice (codex's `web_search` items print `id` twice) keeps its FIRST value instead of
/// failing the line.
#[derive(Default)]
struct Item<'a> {
    id: Option<&'a RawValue>,
    kind: Option<&'a RawValue>,
    text: Option<&'a RawValue>,
    summary: Option<&'a RawValue>,
    content: Option<&'a RawValue>,
    command: Option<&'a RawValue>,
    aggregated_output: Option<&'a RawValue>,
    exit_code: Option<&'a RawValue>,
    status: Option<&'a RawValue>,
    changes: Option<&'a RawValue>,
    server: Option<&'a RawValue>,
    tool: Option<&'a RawValue>,
    arguments: Option<&'a RawValue>,
    result: Option<&'a RawValue>,
    error: Option<&'a RawValue>,
    query: Option<&'a RawValue>,
    action: Option<&'a RawValue>,
    items: Option<&'a RawValue>,
    message: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum ItemKey {
    Id,
    #[serde(rename = "type")]
    Kind,
    Text,
    Summary,
    Content,
    Command,
    AggregatedOutput,
    ExitCode,
    Status,
    Changes,
    Server,
    Tool,
    Arguments,
    Result,
    Error,
    Query,
    Action,
    Items,
    Message,
    #[serde(other)]
    Other,
}

impl<'de> Deserialize<'de> for Item<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Item<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a codex item object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Item<'de>, A::Error> {
                let mut it = Item::default();
                while let Some(key) = map.next_key::<ItemKey>()? {
                    let slot = match key {
                        ItemKey::Id => &mut it.id,
                        ItemKey::Kind => &mut it.kind,
                        ItemKey::Text => &mut it.text,
                        ItemKey::Summary => &mut it.summary,
                        ItemKey::Content => &mut it.content,
                        ItemKey::Command => &mut it.command,
                        ItemKey::AggregatedOutput => &mut it.aggregated_output,
                        ItemKey::ExitCode => &mut it.exit_code,
                        ItemKey::Status => &mut it.status,
                        ItemKey::Changes => &mut it.changes,
                        ItemKey::Server => &mut it.server,
                        ItemKey::Tool => &mut it.tool,
                        ItemKey::Arguments => &mut it.arguments,
                        ItemKey::Result => &mut it.result,
                        ItemKey::Error => &mut it.error,
                        ItemKey::Query => &mut it.query,
                        ItemKey::Action => &mut it.action,
                        ItemKey::Items => &mut it.items,
                        ItemKey::Message => &mut it.message,
                        ItemKey::Other => {
                            map.next_value::<IgnoredAny>()?;
                            continue;
                        }
                    };
                    let value: &'de RawValue = map.next_value()?;
                    if slot.is_none() {
                        *slot = Some(value);
                    }
                }
                Ok(it)
            }
        }
        d.deserialize_map(V)
    }
}

/// A raw value as a string, borrowed when it has no escapes; `None` for other types and `null`.
fn raw_str(raw: Option<&RawValue>) -> Option<Cow<'_, str>> {
    let text = raw?.get();
    if !text.starts_with('"') {
        return None;
    }
    match serde_json::from_str::<&str>(text) {
        Ok(s) => Some(Cow::Borrowed(s)),
        Err(_) => serde_json::from_str::<String>(text).ok().map(Cow::Owned),
    }
}

/// A raw value that is present and not `null`.
fn present(raw: Option<&RawValue>) -> Option<&RawValue> {
    raw.filter(|r| r.get() != "null")
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
                if let Some(usage) = usage(l.usage) {
                    env.emit(ctx, SessionUpdate::Usage { scope: UsageScope::Run, usage }, out);
                }
                LineOutcome::Decoded
            }
            Some("turn.failed") => {
                let error = present(l.error);
                let message = error
                    .and_then(|e| lenient_message(e))
                    .or_else(|| error.map(|e| e.get().to_string()))
                    .unwrap_or_else(|| line.trim().to_string());
                env.emit(ctx, SessionUpdate::error(message, true), out);
                LineOutcome::Decoded
            }
            Some("error") => {
                let message =
                    raw_str(l.message).filter(|m| !m.is_empty()).map(Cow::into_owned).unwrap_or_else(|| line.trim().to_string());
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

/// `{"message": "..."}` → the message, when it is a non-empty string.
fn lenient_message(raw: &RawValue) -> Option<String> {
    #[derive(Deserialize)]
    struct M<'a> {
        #[serde(default, borrow, with = "opt_string")]
        message: Option<Cow<'a, str>>,
    }
    serde_json::from_str::<M<'_>>(raw.get()).ok()?.message.filter(|m| !m.is_empty()).map(Cow::into_owned)
}

/// `turn.completed.usage` → run usage (see the module table).
fn usage(raw: Option<&RawValue>) -> Option<TokenUsage> {
    let map: Map<String, Value> = serde_json::from_str(present(raw)?.get()).ok()?;
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
        raw: Option<&RawValue>,
        env: &Envelope,
        ctx: &DecodeContext,
        out: &mut Vec<OutputEvent>,
    ) -> LineOutcome {
        let Some(raw) = present(raw) else { return LineOutcome::UnexpectedShape };
        let Ok(item) = serde_json::from_str::<Item<'_>>(raw.get()) else { return LineOutcome::UnexpectedShape };
        let kind = raw_str(item.kind);
        match kind.as_deref() {
            Some("agent_message") => {
                if phase == Phase::Completed {
                    if let Some(text) = raw_str(item.text).filter(|t| !t.is_empty()) {
                        env.emit(ctx, SessionUpdate::message(text), out);
                    }
                }
                LineOutcome::Decoded
            }
            Some("reasoning") => {
                if phase == Phase::Completed {
                    if let Some(text) = reasoning_text(&item) {
                        env.emit(ctx, SessionUpdate::thought(text), out);
                    }
                }
                LineOutcome::Decoded
            }
            Some("todo_list") => {
                env.emit(ctx, SessionUpdate::Plan { entries: todo_entries(item.items) }, out);
                LineOutcome::Decoded
            }
            Some("error") => {
                if phase == Phase::Completed {
                    let message = raw_str(item.message)
                        .filter(|m| !m.is_empty())
                        .map(Cow::into_owned)
                        .unwrap_or_else(|| raw.get().to_string());
                    env.emit(ctx, SessionUpdate::error(message, false), out);
                }
                LineOutcome::Decoded
            }
            Some(tool @ ("command_execution" | "file_change" | "mcp_tool_call" | "web_search")) => {
                self.tool_item(phase, tool, &item, raw, env, ctx, out)
            }
            _ => LineOutcome::UnknownType,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn tool_item(
        &mut self,
        phase: Phase,
        kind: &str,
        item: &Item<'_>,
        raw: &RawValue,
        env: &Envelope,
        ctx: &DecodeContext,
        out: &mut Vec<OutputEvent>,
    ) -> LineOutcome {
        let Some(id) = raw_str(item.id).filter(|id| !id.is_empty()) else { return LineOutcome::UnexpectedShape };
        match phase {
            Phase::Started | Phase::Updated => {
                if !self.open.contains(id.as_ref()) {
                    self.open.insert(id.to_string());
                    env.emit(ctx, SessionUpdate::ToolCall(tool_call(kind, &id, item)), out);
                } else if phase == Phase::Updated && kind == "command_execution" {
                    if let Some(output) = raw_str(item.aggregated_output).filter(|o| !o.is_empty()) {
                        let mut update = ToolCallUpdate::new(id.as_ref());
                        update.status = Some(ToolCallStatus::InProgress);
                        update.content = Some(vec![ToolCallContent::text(output)]);
                        env.emit(ctx, SessionUpdate::ToolCallUpdate(update), out);
                    }
                }
            }
            Phase::Completed => {
                if !self.open.remove(id.as_ref()) {
                    env.emit(ctx, SessionUpdate::ToolCall(tool_call(kind, &id, item)), out);
                }
                env.emit(ctx, SessionUpdate::ToolCallUpdate(completion(kind, &id, item, raw)), out);
            }
        }
        LineOutcome::Decoded
    }
}

/// The text of a completed reasoning item: `text`, else `summary` / `content` entries joined.
fn reasoning_text(item: &Item<'_>) -> Option<String> {
    if let Some(text) = raw_str(item.text).filter(|t| !t.is_empty()) {
        return Some(text.into_owned());
    }
    for raw in [item.summary, item.content] {
        let Some(parts) = present(raw).and_then(|r| serde_json::from_str::<Vec<Value>>(r.get()).ok()) else { continue };
        let texts: Vec<&str> = parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.as_str()),
                Value::Object(o) => o.get("text").and_then(Value::as_str),
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
fn todo_entries(raw: Option<&RawValue>) -> Vec<PlanEntry> {
    #[derive(Deserialize)]
    struct Todo<'a> {
        #[serde(default, borrow, with = "opt_string")]
        text: Option<Cow<'a, str>>,
        #[serde(default, borrow)]
        completed: Option<&'a RawValue>,
    }
    let todos: Vec<Option<Todo<'_>>> =
        present(raw).and_then(|r| serde_json::from_str::<Vec<Option<Todo<'_>>>>(r.get()).ok()).unwrap_or_default();
    let mut seen_open = false;
    todos
        .into_iter()
        .flatten()
        .filter_map(|t| {
            let content = t.text?.into_owned();
            let done = t.completed.is_some_and(|c| c.get() == "true");
            let status = if done {
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

/// One change of a `file_change` item.
#[derive(Deserialize)]
struct Change<'a> {
    #[serde(default, borrow, with = "opt_string")]
    path: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    kind: Option<Cow<'a, str>>,
}

fn changes<'a>(item: &Item<'a>) -> Vec<Change<'a>> {
    present(item.changes)
        .and_then(|r| serde_json::from_str::<Vec<Option<Change<'a>>>>(r.get()).ok())
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .filter(|c| c.path.as_deref().is_some_and(|p| !p.is_empty()))
        .collect()
}

fn change_locations(changes: &[Change<'_>]) -> Option<Vec<ToolCallLocation>> {
    let locations: Vec<ToolCallLocation> =
        changes.iter().filter_map(|c| c.path.as_deref()).map(ToolCallLocation::path).collect();
    (!locations.is_empty()).then_some(locations)
}

fn change_title(changes: &[Change<'_>]) -> String {
    match changes {
        [] => "Edit files".to_string(),
        [one] => {
            let verb = match one.kind.as_deref() {
                Some("add") => "Create",
                Some("delete") => "Delete",
                _ => "Edit",
            };
            format!("{verb} {}", one.path.as_deref().unwrap_or_default())
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
fn search_query(item: &Item<'_>) -> Option<String> {
    if let Some(q) = raw_str(item.query).filter(|q| !q.is_empty()) {
        return Some(q.into_owned());
    }
    #[derive(Deserialize)]
    struct Action<'a> {
        #[serde(default, borrow, with = "opt_string")]
        query: Option<Cow<'a, str>>,
    }
    let action: Action<'_> = serde_json::from_str(present(item.action)?.get()).ok()?;
    action.query.filter(|q| !q.is_empty()).map(Cow::into_owned)
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
        let Some(rest) = command.strip_prefix(shell).and_then(|r| r.strip_prefix(" -lc ").or_else(|| r.strip_prefix(" -c ")))
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

/// The `tool_call` for a tool item (from its started line, or from a completion seen alone).
fn tool_call(kind: &str, id: &str, item: &Item<'_>) -> ToolCall {
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
            let command = raw_str(item.command);
            call.title = match command.as_deref().filter(|c| !c.trim().is_empty()) {
                Some(c) => command_title(&unwrap_shell(c)),
                None => "Run command".to_string(),
            };
            if let Some(c) = command {
                let mut input = Map::new();
                input.insert("command".into(), Value::String(c.into_owned()));
                call.raw_input = Some(Value::Object(input));
            }
        }
        "file_change" => {
            let changes = changes(item);
            call.title = change_title(&changes);
            call.locations = change_locations(&changes);
            if let Some(v) = to_value(present(item.changes)) {
                let mut input = Map::new();
                input.insert("changes".into(), v);
                call.raw_input = Some(Value::Object(input));
            }
        }
        "mcp_tool_call" => {
            let server = raw_str(item.server);
            let tool = raw_str(item.tool);
            call.tool_name = mcp_tool_name(server.as_deref(), tool.as_deref());
            if let Some(name) = &call.tool_name {
                call.kind = tool_kind(Agent::Codex, name);
            }
            call.title = match (server.as_deref().filter(|s| !s.is_empty()), tool.as_deref().filter(|t| !t.is_empty())) {
                (Some(s), Some(t)) => format!("{s}: {t}"),
                (None, Some(t)) => t.to_string(),
                (Some(s), None) => format!("{s}: MCP tool"),
                (None, None) => "MCP tool".to_string(),
            };
            call.raw_input = to_value(present(item.arguments));
        }
        _ => {
            // web_search
            let query = search_query(item);
            call.title = search_title(query.as_deref());
            let mut input = Map::new();
            if let Some(q) = raw_str(item.query) {
                input.insert("query".into(), Value::String(q.into_owned()));
            }
            if let Some(action) = to_value(present(item.action)) {
                input.insert("action".into(), action);
            }
            call.raw_input = (!input.is_empty()).then_some(Value::Object(input));
        }
    }
    call
}

/// The `tool_call_update` for a completed tool item.
fn completion(kind: &str, id: &str, item: &Item<'_>, raw: &RawValue) -> ToolCallUpdate {
    let mut update = ToolCallUpdate::new(id);
    let status = raw_str(item.status);
    let error = present(item.error);
    let failed = match kind {
        "command_execution" => match status.as_deref() {
            Some("completed") => false,
            Some(_) => true,
            None => present(item.exit_code).is_some_and(|c| c.get() != "0"),
        },
        "mcp_tool_call" => status.as_deref() == Some("failed") || error.is_some(),
        _ => status.as_deref().is_some_and(|s| s != "completed"),
    };
    update.status = Some(if failed { ToolCallStatus::Failed } else { ToolCallStatus::Completed });
    let mut content = Vec::new();
    match kind {
        "command_execution" => {
            if let Some(output) = raw_str(item.aggregated_output).filter(|o| !o.is_empty()) {
                content.push(ToolCallContent::text(output));
            }
        }
        "file_change" => update.locations = change_locations(&changes(item)),
        "mcp_tool_call" => {
            mcp_result_content(present(item.result), &mut content);
            if let Some(e) = error {
                let message = lenient_message(e).or_else(|| raw_str(Some(e)).map(Cow::into_owned));
                if let Some(m) = message.filter(|m| !m.is_empty()) {
                    content.push(ToolCallContent::text(m));
                }
            }
        }
        _ => update.title = search_query(item).map(|q| search_title(Some(&q))),
    }
    update.content = (!content.is_empty()).then_some(content);
    update.raw_output = to_value(Some(raw));
    update
}

/// MCP `result.content` blocks → tool content: text, images, embedded resource text; any
/// other block as its JSON text. A string result is one text.
fn mcp_result_content(result: Option<&RawValue>, out: &mut Vec<ToolCallContent>) {
    let Some(result) = result else { return };
    let value: Value = match serde_json::from_str(result.get()) {
        Ok(v) => v,
        Err(_) => return,
    };
    let blocks = match &value {
        Value::String(s) => {
            if !s.is_empty() {
                out.push(ToolCallContent::text(s.as_str()));
            }
            return;
        }
        Value::Object(o) => match o.get("content") {
            Some(Value::Array(blocks)) => blocks,
            Some(Value::String(s)) if !s.is_empty() => {
                out.push(ToolCallContent::text(s.as_str()));
                return;
            }
            _ => return,
        },
        Value::Array(blocks) => blocks,
        _ => return,
    };
    for block in blocks {
        let Some(obj) = block.as_object() else {
            if let Value::String(s) = block {
                out.push(ToolCallContent::text(s.as_str()));
            }
            continue;
        };
        let str_of = |k: &str| obj.get(k).and_then(Value::as_str);
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
        let evs = run("{\"type\":\"error\"}\n{\"type\":\"turn.failed\"}\n{\"type\":\"turn.failed\",\"error\":{\"code\":1}}\n");
        assert_eq!(evs.len(), 3);
        assert_eq!(evs[0]["update"]["message"], "{\"type\":\"error\"}");
        assert_eq!(evs[1]["update"]["fatal"], true);
        assert_eq!(evs[2]["update"]["message"], "{\"code\":1}");
    }
}
