//! Qwen Code (`qwen -p … --output-format stream-json`, with or without
//! `--include-partial-messages`).
//!
//! Qwen Code prints the Claude-protocol shapes; the common mapping is in
//! [`super::anthropic`]. What is Qwen's own:
//!
//! | line | events |
//! |---|---|
//! | `system` `init` | none; `session_id` becomes the run's session id |
//! | other `system` subtypes (`model_fallback`, …) | none |
//! | `assistant` (one line per finalized message, each with its own `message.id`; text before a tool call carries zero usage) | the block's event, then `usage{scope:"call"}` for every line that prints `usage`, zero counts included (it is printed usage, and its zero keeps the per-message sum equal to `result.usage`) |
//! | `assistant` text containing `[API Error: …]` (Qwen reports API failures only this way, exit code 0, possibly glued after partial text: `Partial[API Error: …]`) | the text before the marker → `agent_message_chunk`; from the marker to the end → `error{fatal:true}` (it ends the turn). The same split applies to streamed `text_delta`s |
//! | `user` | string content or text blocks → `user_message_chunk` (the prompt echo; a subagent's prompt with `parentToolCallId`); `tool_result` → `tool_call_update` (Qwen prints no structured result, so no `rawOutput`; a shell that exits non-zero is `is_error:false` and stays `completed`, as Qwen reports it) |
//! | `result` | `usage{scope:"run"}` from `result.usage` (`extra.stats` when printed); `is_error:true` → `error{fatal:true}` with `error.message`; non-empty `permission_denials` in `extra` |
//! | `stream_event` | deltas streamed at once, complete lines reconciled (common docs); Qwen's `message_start` comes once per turn (never for a subagent), so its id is stamped on deltas only until the turn's first complete line; the model carries over from the scope's last line |
//!
//! Usage: Qwen's `input_tokens` already includes the cache reads (`total_tokens` = input +
//! output), so `promptTokens` = `input_tokens`, `cachedTokens` = `cache_read_input_tokens`,
//! `completionTokens` = `output_tokens`, other counters (`total_tokens`) in `extra`.
//!
//! Plans: `todo_write` (and `TodoWrite`) with a `todos` list → `plan`, no `tool_call`, its
//! successful result swallowed (a failed one is surfaced as a failed `tool_call_update`).
//!
//! | tool | title | content | locations |
//! |---|---|---|---|
//! | read_file, Read | `Read <file_path>` + ` (A - B)` / ` (from line N)` | – | `{path, line: offset + 1}` (qwen's offset is 0-based) |
//! | write_file, Write | `Write <file_path>` | diff `null` → `content` | `{path}` |
//! | edit, replace, edit_file, Edit | `Edit <file_path>` | diff `old_string` → `new_string` | `{path}` |
//! | run_shell_command, shell, Bash | the command in backticks (`tools::command_title`), else `Run command` | `description` | – |
//! | grep_search, grep, search_file_content, Grep | `grep "<pattern>"` + path + `--include` | – | – |
//! | glob, Glob | ``Find `<path>` `<pattern>` `` | – | `{path}` |
//! | list_directory, LS | ``List `<path>` directory`` | – | `{path}` |
//! | web_fetch, WebFetch / web_search, WebSearch | `Fetch <url>` / `"query"` | `prompt` / – | – |
//! | agent, task, Task | `description`, else `Subagent task` | `prompt` | – |
//! | exit_plan_mode, ExitPlanMode | `Exit plan mode` | `plan` | – |
//! | tool_search | `Search tools "<query>"` | – | – |
//! | skill | `Skill <skill>` | – | – |
//! | `mcp__<server>__<tool>` | `<server>: <tool>` | – | – |
//! | anything else | the tool name | – | – |
//!
//! Hand-written golden cases (`tests/golden/qwen/e-*.input.jsonl`, shapes from the captured CLI):
//!
//! | case | pins |
//! |---|---|
//! | `e-partial-stream` | `--include-partial-messages`: deltas streamed once, one `message_start` per turn, tool call from the complete line |
//! | `e-api-error-401` | `[API Error: 401 …]` text → fatal error, no chunk; result success with zero usage |
//! | `e-api-error-glued` | partial attempts glued before the error: the text before the marker stays a message |
//! | `e-api-error-partial` | the error streamed as its own delta and repeated in the complete line: one message, one error |
//! | `e-todo-write` | `todo_write` → plans, results swallowed |
//! | `e-subagent` | `agent` call, the subagent's prompt echo, tool call, result and text with `parentToolCallId` |
//! | `e-tool-search-mcp` | `tool_search`, MCP success and error, an unregistered bare name |
//! | `e-tool-failures` | shell exit 3 reported `is_error:false` (completed), missing file, offline `web_fetch`, an image read |
//! | `e-permission-denied` | declined `write_file` (failed) and `permission_denials` in the result's `extra` |
//! | `e-parallel-orphan` | three calls in one message, results out of order, an orphan |
//! | `e-multi-turn-usage` | zero-usage text lines, per-turn usage, run total = sum |
//! | `e-thinking` | prompt echo as a user line, thinking block → thought |
//! | `e-bad-lines` | `null`, numbers, arrays, invalid JSON, unknown types, odd shapes, a failed subagent `result` |

use std::collections::HashSet;

use super::anthropic::{
    Dialect, Line, Prompt, Protocol, ToolResult, ToolUse, Updates, Usage, checked, diff, glob_title, mcp_title,
    plan_from_todos, read_title, token_usage, value, web_search_title,
};
use super::context::DecodeContext;
use super::raw_record::with_raw_member;
use super::{Agent, HarnessDecoder, LineOutcome};
use crate::event::{
    OutputEvent, SessionUpdate, TokenUsage, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus,
};
use crate::tools::{command_title, tool_kind};

/// Stateful qwen line decoder.
#[derive(Debug, Default)]
pub(crate) struct QwenDecoder {
    proto: Protocol<Qwen>,
}

impl HarnessDecoder for QwenDecoder {
    fn decode_line(&mut self, line: &str, ctx: &mut DecodeContext, out: &mut Vec<OutputEvent>) -> LineOutcome {
        self.proto.decode_line(line, ctx, out)
    }
}

/// Qwen Code's dialect state.
#[derive(Debug, Default)]
pub(crate) struct Qwen {
    /// Todo calls whose (successful) result is swallowed.
    plan_calls: HashSet<String>,
}

/// How Qwen prints an API failure inside assistant text.
const API_ERROR: &str = "[API Error:";

impl Dialect for Qwen {
    const LINE_ENDS_MESSAGE: bool = true;

    fn call_usage(&self, usage: Usage) -> TokenUsage {
        token_usage(usage, Prompt::InputOnly)
    }

    fn run_usage(&self, line: &mut Line<'_>) -> Option<TokenUsage> {
        let usage = line.usage.0.take();
        let stats = checked(line.facts().stats);
        let cost = value(line.facts().total_cost_usd).and_then(|v| v.as_f64());
        if usage.is_none() && stats.is_none() && cost.is_none() {
            return None;
        }
        let mut total = usage.map(|u| self.call_usage(u)).unwrap_or_default();
        if let Some(stats) = stats {
            total.extra = Some(with_raw_member(total.extra.take(), "stats", stats));
        }
        total.cost_usd = cost;
        Some(total)
    }

    fn text(&mut self, mut text: String, out: &mut Updates) {
        match api_error_at(&text) {
            Some(at) => {
                let error = text.split_off(at);
                if !text.is_empty() {
                    out.push(SessionUpdate::message(text));
                }
                out.push(SessionUpdate::error(error, true));
            }
            None => out.push(SessionUpdate::message(text)),
        }
    }

    fn tool_use(&mut self, call: ToolUse<'_>, out: &mut Updates) {
        if matches!(call.name, "todo_write" | "TodoWrite") {
            if let Some(entries) = plan_from_todos(&call) {
                self.plan_calls.insert(call.id.to_string());
                out.push(SessionUpdate::Plan { entries });
                return;
            }
        }
        out.push(SessionUpdate::ToolCall(tool_call(call)));
    }

    fn tool_result(&mut self, result: ToolResult<'_>, out: &mut Updates) {
        let swallowed = !self.plan_calls.is_empty() && self.plan_calls.remove(&result.id);
        if swallowed && result.status != ToolCallStatus::Failed {
            return;
        }
        out.push(result.update());
    }
}

/// Where `text` holds [`API_ERROR`] (a search for its `[` first: most text has none).
fn api_error_at(text: &str) -> Option<usize> {
    let first = memchr::memchr(b'[', text.as_bytes())?;
    text[first..].find(API_ERROR).map(|at| first + at)
}

/// Push the non-empty string argument `key` as text content.
fn text_arg(call: &ToolUse<'_>, key: &str, content: &mut Vec<ToolCallContent>) {
    if let Some(t) = call.str(key) {
        content.push(ToolCallContent::text(t));
    }
}

/// The `tool_call` of a non-plan tool (see the module table).
fn tool_call(call: ToolUse<'_>) -> ToolCall {
    let name = call.name;
    let kind = tool_kind(Agent::Qwen, name);
    let mut content = Vec::new();
    let mut locations = Vec::new();
    let path = || call.first_str(&["file_path", "absolute_path", "path"]);
    let title = match name {
        "read_file" | "Read" => {
            let path = path();
            // Qwen's `offset` is 0-based; a location's line is 1-based.
            let offset = call.uint("offset");
            if let Some(p) = path {
                locations.push(ToolCallLocation {
                    path: p.to_string(),
                    line: offset.and_then(|o| crate::counters::add("a read's first line", o, 1)),
                });
            }
            read_title(path, offset, call.uint("limit"), "file")
        }
        "write_file" | "Write" => {
            let path = path();
            if let Some(p) = path {
                content.push(diff(p, None, call.str_any("content")));
                locations.push(ToolCallLocation::path(p));
            }
            format!("Write {}", path.unwrap_or("file"))
        }
        "edit" | "replace" | "edit_file" | "Edit" => {
            let path = path();
            if let Some(p) = path {
                if call.has("old_string") || call.has("new_string") {
                    content.push(diff(p, call.str("old_string"), call.str_any("new_string")));
                }
                locations.push(ToolCallLocation::path(p));
            }
            format!("Edit {}", path.unwrap_or("file"))
        }
        "run_shell_command" | "shell" | "Bash" => {
            text_arg(&call, "description", &mut content);
            call.str("command").map(command_title).unwrap_or_else(|| "Run command".into())
        }
        "grep_search" | "grep" | "search_file_content" | "Grep" => {
            let mut title = format!("grep \"{}\"", call.str("pattern").unwrap_or_default());
            if let Some(p) = call.str("path") {
                title.push_str(&format!(" {p}"));
            }
            if let Some(g) = call.first_str(&["glob", "include"]) {
                title.push_str(&format!(" --include=\"{g}\""));
            }
            title
        }
        "glob" | "Glob" => {
            let dir = call.str("path");
            if let Some(p) = dir {
                locations.push(ToolCallLocation::path(p));
            }
            glob_title(dir, call.str("pattern"))
        }
        "list_directory" | "LS" => match call.str("path") {
            Some(p) => {
                locations.push(ToolCallLocation::path(p));
                format!("List `{p}` directory")
            }
            None => "List current directory".into(),
        },
        "web_fetch" | "WebFetch" => {
            text_arg(&call, "prompt", &mut content);
            call.str("url").map(|u| format!("Fetch {u}")).unwrap_or_else(|| "Fetch".into())
        }
        "web_search" | "WebSearch" => web_search_title(&call),
        "agent" | "task" | "Task" => {
            text_arg(&call, "prompt", &mut content);
            call.str("description").unwrap_or("Subagent task").to_string()
        }
        "exit_plan_mode" | "ExitPlanMode" => {
            text_arg(&call, "plan", &mut content);
            "Exit plan mode".into()
        }
        "todo_write" | "TodoWrite" => "Update todos".into(),
        "tool_search" => format!("Search tools \"{}\"", call.str("query").unwrap_or_default()),
        "skill" => call.str("skill").map(|s| format!("Skill {s}")).unwrap_or_else(|| name.into()),
        _ => mcp_title(name).unwrap_or_else(|| if name.is_empty() { "Unknown Tool".into() } else { name.into() }),
    };
    call.call(title, kind, content, locations)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::parse;

    fn run(input: &str) -> Vec<OutputEvent> {
        parse(Agent::Qwen, input.as_bytes())
    }

    #[test]
    fn api_error_text_becomes_a_fatal_error_after_the_partial_text() {
        let evs = run(
            r#"{"type":"assistant","session_id":"Q","message":{"id":"m","model":"q","content":[{"type":"text","text":"Partial[API Error: Unterminated string in JSON at position 57]"}],"usage":{"input_tokens":0,"output_tokens":0}}}"#,
        );
        assert_eq!(evs[0].update, SessionUpdate::message("Partial"));
        assert_eq!(
            evs[1].update,
            SessionUpdate::error("[API Error: Unterminated string in JSON at position 57]", true)
        );
        assert!(matches!(evs[2].update, SessionUpdate::Usage { .. }));
    }

    #[test]
    fn prompt_echo_is_a_user_chunk() {
        let evs = run(r#"{"type":"user","session_id":"Q","message":{"role":"user","content":"the prompt"}}"#);
        assert_eq!(evs[0].update, SessionUpdate::user_message("the prompt"));
        assert_eq!(evs[0].session_id.as_deref(), Some("Q"));
    }

    #[test]
    fn usage_takes_input_tokens_as_the_prompt() {
        let evs = run(
            r#"{"type":"result","session_id":"Q","usage":{"input_tokens":1200,"output_tokens":35,"cache_read_input_tokens":800,"total_tokens":1235}}"#,
        );
        let SessionUpdate::Usage { usage, .. } = &evs[0].update else { panic!() };
        assert_eq!(
            (usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens),
            (Some(1200), Some(35), Some(800))
        );
        assert_eq!(usage.extra.as_ref().unwrap().to_value()["total_tokens"], 1235);
    }
}
