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
//! Reading: each line is read in one pass with the scanner ([`crate::json::scan::Scan`]), which
//! accepts exactly what serde_json accepts, so a line is unusable exactly where a serde reading
//! of it failed. The item's fields land in borrowed strings and raw slices (see `Item`); the
//! parts kept verbatim (`rawInput`, `rawOutput`) are the printed text, not rebuilt. An item
//! printing a key twice or a surrogate escape takes an exact, slower path (see `Item`).
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
//! | e-no-final-result | `s2-bash` without `turn.completed`: replayed (exit 0) the run fails (`no_final_result`, decisions §1) |
//! | e-todo-list | started/updated/completed todo lists as plans (first unfinished in progress) |
//! | e-failing-commands | exit 2 (`failed`), `declined`, backticks and quotes in a title |
//! | e-reasoning | reasoning `text`, `summary` parts joined, empty reasoning dropped |
//! | e-parallel-orphan-out-of-order | two calls completing in reverse order, output while running, a completion never started |
//! | e-bad-lines | `null`, non-objects, invalid JSON, unknown types, odd item shapes, messages that are not strings |

mod describe;
mod wire;

use self::describe::*;
use self::wire::*;

use std::borrow::Cow;

use serde_json::Value;

use crate::decode::classify_failure;
use crate::decode::context::DecodeContext;
use crate::decode::context::session_event;
use crate::decode::id_set::IdSet;
use crate::decode::{HarnessDecoder, LineOutcome};
use crate::event::{
    ContentBlock, ImageContent, OutputEvent, PlanEntry, PlanEntryPriority, PlanEntryStatus, RawJson, SessionUpdate,
    ToolCallContent, ToolCallStatus, ToolCallUpdate, UsageScope,
};
use crate::json::lenient::str_field;
use crate::json::scan::Scan;

/// Stateful codex line decoder.
#[derive(Debug, Default)]
pub(crate) struct CodexDecoder {
    /// Tool items whose `tool_call` was emitted and whose completion has not been seen yet.
    open: IdSet,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Started,
    Updated,
    Completed,
}

/// Push the event for `update` (codex lines carry no envelope facts besides the session).
fn emit(ctx: &DecodeContext, update: SessionUpdate, out: &mut Vec<OutputEvent>) {
    out.push(session_event(ctx, update));
}

impl HarnessDecoder for CodexDecoder {
    fn final_record(&self) -> Option<&'static str> {
        Some("`turn.completed` line")
    }

    fn decode_line(&mut self, line: &str, ctx: &mut DecodeContext, out: &mut Vec<OutputEvent>) -> LineOutcome {
        if !line.trim_start().starts_with('{') {
            return classify_failure(line);
        }
        let mut item = Item::default();
        let mut l = Line::default();
        let fast = read_whole_line(line, &mut l, Some(&mut item)).is_ok() && !item.dup && !item.suspicious;
        if fast {
            return self.line(&mut l, &mut item, line, ctx, out);
        }
        // The exact path: the item kept as printed, then read field by field.
        let mut l = Line::default();
        if read_whole_line(line, &mut l, None).is_err() {
            return classify_failure(line);
        }
        if l.item_text.is_empty() {
            return self.line(&mut l, &mut Item::default(), line, ctx, out);
        }
        let (text, id, kind, exact) = match exact_item(l.item_text) {
            Ok(Some(exact)) => exact,
            Ok(None) => return self.line(&mut l, &mut Item::default(), line, ctx, out),
            Err(_) => return LineOutcome::UnexpectedShape,
        };
        let mut item = Item::default();
        if read_item(&mut Scan::new(&text), &mut item).is_err() {
            return LineOutcome::UnexpectedShape; // unreachable: `text` was written by serde_json
        }
        item.id = Text::new(id.map(Cow::Owned));
        item.kind = Text::new(kind.map(Cow::Owned));
        item.exact = Some(Box::new(exact));
        self.line(&mut l, &mut item, line, ctx, out)
    }
}

impl CodexDecoder {
    fn line(
        &mut self,
        l: &mut Line<'_>,
        item: &mut Item<'_>,
        line: &str,
        ctx: &mut DecodeContext,
        out: &mut Vec<OutputEvent>,
    ) -> LineOutcome {
        match l.kind.get() {
            Some("thread.started") => {
                ctx.see_session(l.thread_id.get());
                LineOutcome::Decoded
            }
            Some("turn.started") => {
                ctx.final_result_seen = false;
                LineOutcome::Decoded
            }
            Some("turn.completed") => {
                ctx.final_result_seen = true;
                if let Some(usage) = l.usage.take() {
                    emit(ctx, SessionUpdate::Usage { scope: UsageScope::Run, usage }, out);
                }
                LineOutcome::Decoded
            }
            Some("turn.failed") => {
                ctx.final_result_seen = true;
                let error = l.error.take().filter(|e| !e.is_null());
                let message = match &error {
                    Some(Value::String(m)) => Some(m.as_str()),
                    Some(e) => e.get("message").and_then(Value::as_str),
                    None => None,
                }
                .filter(|m| !m.is_empty())
                .map(str::to_string)
                .or_else(|| error.as_ref().map(Value::to_string))
                .unwrap_or_else(|| line.trim().to_string());
                emit(ctx, SessionUpdate::error(message, true), out);
                LineOutcome::Decoded
            }
            Some("error") => {
                let message = match l.message.take() {
                    Some(m) if !m.is_empty() => m.into_owned(),
                    _ => line.trim().to_string(),
                };
                emit(ctx, SessionUpdate::error(message, false), out);
                LineOutcome::Decoded
            }
            Some("item.started") => self.item(Phase::Started, item, l.item_text, ctx, out),
            Some("item.updated") => self.item(Phase::Updated, item, l.item_text, ctx, out),
            Some("item.completed") => self.item(Phase::Completed, item, l.item_text, ctx, out),
            _ => LineOutcome::UnknownType,
        }
    }
}

impl CodexDecoder {
    /// `printed`: the item as printed on the line.
    fn item(
        &mut self,
        phase: Phase,
        item: &mut Item<'_>,
        printed: &str,
        ctx: &DecodeContext,
        out: &mut Vec<OutputEvent>,
    ) -> LineOutcome {
        if !item.is_object {
            return LineOutcome::UnexpectedShape;
        }
        let Some(kind) = item.kind.take() else { return LineOutcome::UnknownType };
        match kind.as_ref() {
            "agent_message" => {
                if phase == Phase::Completed {
                    if let Some(text) = item.take_first_text().filter(|t| !t.is_empty()) {
                        emit(ctx, SessionUpdate::message(text), out);
                    }
                }
                LineOutcome::Decoded
            }
            "reasoning" => {
                if phase == Phase::Completed {
                    if let Some(text) = reasoning_text(item) {
                        emit(ctx, SessionUpdate::thought(text), out);
                    }
                }
                LineOutcome::Decoded
            }
            "todo_list" => {
                let items = present(item.items).and_then(|raw| serde_json::from_str::<Value>(raw).ok());
                emit(ctx, SessionUpdate::Plan { entries: todo_entries(items.as_ref()) }, out);
                LineOutcome::Decoded
            }
            "error" => {
                if phase == Phase::Completed {
                    let message = match item.take_first_message().filter(|m| !m.is_empty()) {
                        Some(m) => m.into_owned(),
                        None => match &item.exact {
                            Some(exact) => exact.value.to_string(),
                            None => item_value(printed).to_string(),
                        },
                    };
                    emit(ctx, SessionUpdate::error(message, false), out);
                }
                LineOutcome::Decoded
            }
            "command_execution" | "file_change" | "mcp_tool_call" | "web_search" => {
                self.tool_item(phase, &kind, item, printed, ctx, out)
            }
            _ => LineOutcome::UnknownType,
        }
    }

    fn tool_item(
        &mut self,
        phase: Phase,
        kind: &str,
        item: &mut Item<'_>,
        printed: &str,
        ctx: &DecodeContext,
        out: &mut Vec<OutputEvent>,
    ) -> LineOutcome {
        let Some(id) = item.id.take().filter(|id| !id.is_empty()) else { return LineOutcome::UnexpectedShape };
        match phase {
            Phase::Started | Phase::Updated => {
                if !self.open.contains(id.as_ref()) {
                    emit(ctx, SessionUpdate::ToolCall(tool_call(kind, &id, item)), out);
                    self.open.insert(id.into_owned());
                } else if phase == Phase::Updated && kind == "command_execution" {
                    if let Some(output) = item.first_output().filter(|o| !o.is_empty()) {
                        let mut update = ToolCallUpdate::new(id);
                        update.status = Some(ToolCallStatus::InProgress);
                        update.content = Some(vec![ToolCallContent::text(output)]);
                        emit(ctx, SessionUpdate::ToolCallUpdate(update), out);
                    }
                }
            }
            Phase::Completed => {
                if !self.open.remove(id.as_ref()) {
                    emit(ctx, SessionUpdate::ToolCall(tool_call(kind, &id, item)), out);
                }
                // `rawOutput`: the item as printed (on the exact path: as its fields read).
                // (Every field of a fast-path item was read or checked, see `Item`.)
                let raw_output = match &item.exact {
                    Some(exact) => RawJson::from_value(&exact.value),
                    None => verbatim(printed),
                };
                emit(ctx, SessionUpdate::ToolCallUpdate(completion(kind, id.into_owned(), item, raw_output)), out);
            }
        }
        LineOutcome::Decoded
    }
}

/// The text of a completed reasoning item: `text`, else `summary` / `content` entries joined.
fn reasoning_text(item: &mut Item<'_>) -> Option<String> {
    if let Some(text) = item.text.take().filter(|t| !t.is_empty()) {
        return Some(text.into_owned());
    }
    for raw in [item.summary, item.content] {
        let Some(Value::Array(parts)) = present(raw).and_then(|r| serde_json::from_str::<Value>(r).ok()) else {
            continue;
        };
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

/// The `tool_call_update` for a completed tool item.
fn completion(kind: &str, id: String, item: &mut Item<'_>, raw_output: RawJson) -> ToolCallUpdate {
    let mut update = ToolCallUpdate::new(id);
    let status = item.status.get();
    let error = present(item.error);
    let failed = match kind {
        "command_execution" => match status {
            Some("completed") => false,
            Some(_) => true,
            None => item.exit_code == ExitCode::Other,
        },
        "mcp_tool_call" => status == Some("failed") || error.is_some(),
        _ => status.is_some_and(|s| s != "completed"),
    };
    update.status = Some(if failed { ToolCallStatus::Failed } else { ToolCallStatus::Completed });
    let mut content = Vec::new();
    match kind {
        "command_execution" => {
            if let Some(output) = item.aggregated_output.take().filter(|o| !o.is_empty()) {
                // (Sized to fit: grown from empty, a vector of these takes room for four.)
                content = vec![ToolCallContent::text(output)];
            }
        }
        "file_change" => update.locations = FileChanges::read(item.changes).into_locations(),
        "mcp_tool_call" => {
            let result = present(item.result).and_then(|r| serde_json::from_str::<Value>(r).ok());
            mcp_result_content(result.as_ref(), &mut content);
            let error = error.and_then(|e| serde_json::from_str::<Value>(e).ok());
            let message = match &error {
                Some(Value::String(m)) => Some(m.as_str()),
                Some(Value::Object(e)) => str_field(e, "message"),
                _ => None,
            };
            if let Some(m) = message.filter(|m| !m.is_empty()) {
                content.push(ToolCallContent::text(m));
            }
        }
        _ => update.title = search_query(item).map(|q| search_title(Some(&q))),
    }
    update.content = (!content.is_empty()).then_some(content);
    update.raw_output = Some(raw_output);
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
    use crate::decode::{Agent, Decoder, HarnessDecoder};

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

    /// Decode each line with a fresh context: its outcome and its events as serialized.
    fn outcomes(lines: &[String]) -> Vec<(LineOutcome, String)> {
        let mut d = CodexDecoder::default();
        let mut ctx = DecodeContext::default();
        lines
            .iter()
            .map(|l| {
                let mut out = Vec::new();
                let outcome = d.decode_line(l, &mut ctx, &mut out);
                (outcome, serde_json::to_string(&out).unwrap())
            })
            .collect()
    }

    /// Edge cases of the scanner port, pinned to what the serde reading it replaced gave
    /// (checked against it on random lines while porting).
    #[test]
    fn scanner_reads_edge_cases_as_the_serde_reading_did() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let completed = |id: &str, rest: &str| {
            format!(r#"{{"type":"item.completed","item":{{"id":"{id}","type":"command_execution"{rest}}}}}"#)
        };
        let lines = [
            completed("a", r#","exit_code":0"#),
            // serde_json reads `-0` and `0.0` as floats: not the integer 0, so failed.
            completed("b", r#","exit_code":-0"#),
            completed("c", r#","exit_code":0.0"#),
            // An unreadable number in a read field: the exact path drops the field.
            completed("d", r#","exit_code":1e400"#),
            // In a field only kept verbatim, it stays (as printed).
            completed("e", r#","exit_code":0,"note":1e400"#),
            r#"{"type":"item.completed","item":{"id":"m1","type":"agent_message","text":"\ud800"}}"#.to_string(),
            // An escaped key is the key it spells (`id` twice: the exact path).
            r#"{"type":"item.completed","item":{"id":"m2","type":"agent_message","text":"hi","\u0069d":"m3"}}"#
                .to_string(),
            r#"{"type":"item.completed","item":{"id":"m4","type":"agent_message","\ud800":1}}"#.to_string(),
            r#"{"type":"error","message":[1e400]}"#.to_string(),
            r#"{"type":"turn.completed","usage":"\ud800"}"#.to_string(),
            format!(
                r#"{{"type":"item.completed","item":{{"id":"m5","type":"agent_message","text":"x","n":{}}}}}"#,
                deep(126)
            ),
            format!(
                r#"{{"type":"item.completed","item":{{"id":"m6","type":"agent_message","text":{},"text":"y"}}}}"#,
                deep(126)
            ),
        ];
        let tool = |id: &str, status: &str, raw: &str| {
            format!(
                r#"[{{"update":{{"sessionUpdate":"tool_call","toolCallId":"{id}","title":"Run command","toolName":"command_execution","kind":"execute","status":"in_progress"}}}},{{"update":{{"sessionUpdate":"tool_call_update","toolCallId":"{id}","status":"{status}","rawOutput":{{"id":"{id}","type":"command_execution"{raw}}}}}}}]"#
            )
        };
        let message = |text: &str| {
            format!(
                r#"[{{"update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{text}"}}}}}}]"#
            )
        };
        let expected = [
            (LineOutcome::Decoded, tool("a", "completed", r#","exit_code":0"#)),
            (LineOutcome::Decoded, tool("b", "failed", r#","exit_code":-0"#)),
            (LineOutcome::Decoded, tool("c", "failed", r#","exit_code":0.0"#)),
            (LineOutcome::Decoded, tool("d", "completed", "")),
            (LineOutcome::Decoded, tool("e", "completed", r#","exit_code":0,"note":1e400"#)),
            (LineOutcome::Decoded, "[]".to_string()),
            (LineOutcome::Decoded, message("hi")),
            (LineOutcome::UnexpectedShape, "[]".to_string()),
            (LineOutcome::UnexpectedShape, "[]".to_string()),
            (LineOutcome::UnexpectedShape, "[]".to_string()),
            (LineOutcome::Decoded, message("x")),
            // `text` printed twice: the first one counts, and it is not a string.
            (LineOutcome::Decoded, "[]".to_string()),
        ];
        let got = outcomes(&lines);
        for ((line, want), got) in lines.iter().zip(&expected).zip(&got) {
            assert_eq!(got, want, "{line}");
        }
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
