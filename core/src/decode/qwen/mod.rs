//! Qwen Code (`qwen -p … --output-format stream-json`, with or without
//! `--include-partial-messages`).
//!
//! Qwen Code prints the Claude-protocol shapes; the common mapping is in
//! [`super::stream_json`]. What is Qwen's own:
//!
//! | line | events |
//! |---|---|
//! | `system` `init` | none; `session_id` becomes the run's session id |
//! | `system` `retry` (0.24.4: `data {reason, discardedToolCalls, preserveText}`) | `error{fatal:false}` (`Retrying the model call (<reason>)`), `extra` = `data` verbatim plus `discardedText: true` when `preserveText` is `false` (the attempt's text already emitted is to be dropped; it is not retracted); `discardedToolCalls: n` ends the n newest unanswered calls of the same agent (the line's `parent_tool_use_id`) with a failed `tool_call_update` (the attempt's calls are never answered) |
//! | other `system` subtypes (`model_fallback`, `task_started`, `task_notification`, …) | none |
//! | `assistant` (one line per finalized message, each with its own `message.id`; text before a tool call carries zero usage) | the block's event, then `usage{scope:"call"}` (before the first tool call of the line, so that its `model.completed` hook carries it) for every line that prints `usage`, zero counts included (it is printed usage, and its zero keeps the per-message sum equal to `result.usage`) |
//! | `assistant` text ending in `[API Error: …]` (Qwen reports API failures only this way, exit code 0, possibly glued after partial text: `Partial[API Error: …]`) | the text before the marker → `agent_message_chunk`; from the marker to the end → `error{fatal:true}` (it ends the turn). The same split applies to streamed `text_delta`s, also when the marker is split across them (a delta ending in `[API Er…`, or in a marker not closed yet and at most 2 KiB long, is held until its text goes on or ends). A marker with text after it is the model quoting one: message text |
//! | `user` | string content or text blocks → `user_message_chunk` (the prompt echo; a subagent's prompt with `parentToolCallId`); `tool_result` → `tool_call_update` (Qwen prints no structured result, so no `rawOutput`; a shell that exits non-zero is `is_error:false` and stays `completed`, as Qwen reports it) |
//! | `result` | `usage{scope:"run"}` from `result.usage` (`extra.stats` when printed); `is_error:true` (0.24.4: `subtype:"error_during_execution"`, `error.message`, exit 1) → `error{fatal:true}` with `error.message`, unless the same failure was already given by the `[API Error: …]` text of the turn (one error per failure); non-empty `permission_denials` in `extra` |
//! | `stream_event` `goal_state` (0.24.4 prints one in every run) | none (a known line: no partial-message mode, not counted as unknown) |
//! | `stream_event` | deltas streamed at once, complete lines reconciled (common docs); Qwen's `message_start` comes once per turn (never for a subagent), so its id is stamped on deltas only until the turn's first complete line; the model carries over from the scope's last line |
//!
//! Usage: Qwen's `input_tokens` already includes the cache reads (`total_tokens` = input +
//! output), so `promptTokens` = `input_tokens`, `cachedTokens` = `cache_read_input_tokens`,
//! `completionTokens` = `output_tokens`, other counters (`total_tokens`) in `extra`.
//!
//! Plans: `todo_write` (and `TodoWrite`) with a `todos` list → `plan`, no `tool_call`, its
//! successful result swallowed; a refused call (a failed result) is announced then: its `tool_call`, the failed `tool_call_update`, and a `plan` re-stating the list as it was before the call ([`super::task_list`]) — e.g. 0.24.4's `todo_write`, disabled by default.
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
//! | `e-partial-line-ids-differ` | partial messages: the thinking line keeps the `message_start` id, the text line has an id of its own: one step, whose `model.completed` carries the text line's usage (it gives no new output, so its usage is not kept for a step that never starts) |
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
//! | `s1-text-newer`, `s2-bash-newer`, `s3-read-edit-newer` | real captures of Qwen Code 0.24.4: the `goal_state` line every run prints gives nothing |
//! | `e-retry` | a failed attempt's text, `system/retry` with `preserveText:false` (non-fatal error, `discardedText`), the second attempt |
//! | `e-error-during-execution` | 0.24.4's flagged failure: `[API Error: …]` text and a `result` `error_during_execution` give ONE fatal error (exit 1) |
//! | `e-todo-disabled` | `todo_write` disabled by default: the plan, then the call announced, failed, the list restored (empty) |
//! | `e-bad-lines` | `null`, numbers, arrays, invalid JSON, unknown types, odd shapes, a failed subagent `result` |
//! | `e-no-final-result` | `s2-bash` without its closing `result` line: the events as printed; replayed (exit 0) the run fails (`no_final_result`, decisions §1) |
//! | `e-cost-digits` | a `total_cost_usd` whose last digit a fast float reader gets wrong: printed back exactly |
//! | `e-api-error-split-in-deltas` | partial messages: `Partial[API Err` + `or: 500 Internal` + ` Server Error]` in three deltas: `Partial` → message, the marker → ONE fatal error (the `error_during_execution` result repeats it); a delta ending in `a[` whose next goes on `0]` stays message text |
//! | `e-api-error-quoted-in-deltas` | partial messages: a delta ends right after a quoted `[API Error: …]` and the next goes on: message text, no error (a marker ending a delta is held, per agent, until its text goes on or ends: its block, message or line ends, a `result`, the end of input) |
//! | `e-api-error-quoted-subagent-between` | as above, with a subagent's complete line between the two deltas: the held part is the main agent's (not ended by another agent's line, not given to it) |
//! | `e-api-error-quoted-line-goes-on` | the stream ends with a quoted marker and the complete `assistant` line shows more text after it: message text |
//! | `e-retry-discards-call` | an attempt's `tool_use`, then `system/retry` with `discardedToolCalls: 1`: the call ends failed (not open), the second attempt's answer, the run completes |
//! | `e-background-subagent` | 0.24.4's background subagent: "Background agent launched" result, `task_started`, the main answer, the completion announced as a user line, `task_notification`, the second answer, ONE `result` (the run completes once) |

mod describe;

use self::describe::*;

use serde_json::Value;

use crate::decode::context::{DecodeContext, Envelope};
use crate::decode::stream_json::{
    Dialect, Line, Prompt, Protocol, ToolResult, ToolUse, Updates, Usage, checked, plan_from_todos, token_usage, value,
};
use crate::decode::task_list::TaskListCalls;
use crate::decode::{HarnessDecoder, LineOutcome};
use crate::event::{
    JsonObject, OutputEvent, RawJson, SessionUpdate, TokenUsage, ToolCallContent, ToolCallStatus, ToolCallUpdate,
};
use crate::json::lenient::display_text;
use crate::json::raw_record::with_raw_member;

/// Stateful qwen line decoder.
#[derive(Debug, Default)]
pub(crate) struct QwenDecoder {
    proto: Protocol<Qwen>,
}

impl HarnessDecoder for QwenDecoder {
    fn decode_line(&mut self, line: &str, ctx: &mut DecodeContext, out: &mut Vec<OutputEvent>) -> LineOutcome {
        self.proto.decode_line(line, ctx, out)
    }

    fn finish(&mut self, ctx: &mut DecodeContext, out: &mut Vec<OutputEvent>) {
        self.proto.finish(ctx, out);
    }

    fn final_record(&self) -> Option<&'static str> {
        Some("`result` line")
    }
}

/// Qwen Code's dialect state.
#[derive(Debug, Default)]
pub(crate) struct Qwen {
    /// Todo calls: a successful result is swallowed, a refused one announced and undone.
    task_list: TaskListCalls,
    /// Calls announced and not answered yet, oldest first, with the subagent making each (its
    /// `parent_tool_use_id`): a retry that discards the attempt's tool calls
    /// (`discardedToolCalls`) ends the newest of them made by the same agent.
    unanswered: std::collections::VecDeque<(Option<String>, String)>,
}

/// The most unanswered calls remembered (a harness that never answers its calls must not grow
/// the decoder without bound; older ones show as open at worst).
const MAX_UNANSWERED: usize = 1024;

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

    fn trailing_failure(&self, text: &str) -> Option<usize> {
        api_error_at(text)
    }

    fn failure_may_start(&self, text: &str) -> Option<usize> {
        api_error_may_start(text)
    }

    fn system(&mut self, line: &Line<'_>, env: &mut Envelope, out: &mut Updates) {
        if line.subtype.get() != Some("retry") {
            return;
        }
        // `{data: {reason, discardedToolCalls, preserveText}}`: a non-fatal error; when the
        // attempt's text is thrown away, `extra.discardedText` says so (decisions.md §2).
        let data = match value(line.facts().data) {
            Some(Value::Object(data)) => data,
            _ => JsonObject::new(),
        };
        let discarded_text = data.get("preserveText") == Some(&Value::Bool(false));
        let mut message = String::from("Retrying the model call");
        if let Some(reason) = data.get("reason").filter(|r| !r.is_null()) {
            message.push_str(&format!(" ({})", display_text(reason)));
        }
        if discarded_text {
            message.push_str("; the attempt's text was discarded");
        }
        // The attempt's tool calls are thrown away with it: they will never be answered, so each
        // ends here, failed (decisions.md §2: a call the harness refused), not open for ever.
        let mut discarded_calls = data.get("discardedToolCalls").and_then(Value::as_u64).unwrap_or(0);
        let scope = line.parent_tool_use_id.non_empty();
        let mut discarded = Vec::new();
        while discarded_calls > 0 {
            let Some(at) = self.unanswered.iter().rposition(|(s, _)| s.as_deref() == scope) else { break };
            discarded.extend(self.unanswered.remove(at).map(|(_, id)| id));
            discarded_calls -= 1;
        }
        for id in discarded.into_iter().rev() {
            let mut update = ToolCallUpdate::new(id);
            update.status = Some(ToolCallStatus::Failed);
            update.content = Some(vec![ToolCallContent::text("discarded: the model call that made it was retried")]);
            out.push(SessionUpdate::ToolCallUpdate(update));
        }
        let mut extra = data;
        if discarded_text {
            extra.insert("discardedText".into(), Value::Bool(true));
        }
        if !extra.is_empty() {
            env.extra = Some(RawJson::from_value(&Value::Object(extra)));
        }
        out.push(SessionUpdate::error(message, false));
    }

    fn tool_use(&mut self, call: ToolUse<'_>, out: &mut Updates) {
        if matches!(call.name, "todo_write" | "TodoWrite") {
            if let Some(entries) = plan_from_todos(&call) {
                let announce = tool_call(ToolUse::new(call.id, call.name, call.input));
                out.push(self.task_list.call(call.id, Some(announce), entries));
                return;
            }
        }
        if self.unanswered.len() == MAX_UNANSWERED {
            self.unanswered.pop_front();
        }
        self.unanswered.push_back((call.scope.map(str::to_string), call.id.to_string()));
        out.push(SessionUpdate::ToolCall(tool_call(call)));
    }

    fn tool_result(&mut self, result: ToolResult<'_>, out: &mut Updates) {
        if let Some(at) = self.unanswered.iter().rposition(|(_, id)| *id == result.id) {
            self.unanswered.remove(at);
        }
        if result.status == ToolCallStatus::Failed {
            let id = result.id.clone();
            out.extend(self.task_list.refused(&id, result.update()));
        } else if !self.task_list.done(&result.id) {
            out.push(result.update());
        }
    }
}

/// Where the failure Qwen glued to the end of `text` starts: its last [`API_ERROR`] marker when
/// that runs to the end of the text (`…[API Error: 500 …]`). A marker with text after it is the
/// model's own words (an answer quoting a log), not a failure. A search for `[` first: most text
/// has none.
fn api_error_at(text: &str) -> Option<usize> {
    memchr::memchr(b'[', text.as_bytes())?;
    let at = text.rfind(API_ERROR)?;
    text[at..].trim_end().ends_with(']').then_some(at)
}

/// Where a tail of `text` that the next delta could make an [`API_ERROR`] failure starts: a
/// marker not closed yet (`…[API Error: 500 Int`) and at most [`OPEN_MARKER_HELD`] long, or
/// the marker's own beginning at the very end (`…[API Er`).
fn api_error_may_start(text: &str) -> Option<usize> {
    let last_open = memchr::memrchr(b'[', text.as_bytes())?;
    let open_marker = text.rfind(API_ERROR).filter(|&at| !text[at..].contains(']'));
    if let Some(at) = open_marker.filter(|&at| text.len() - at <= OPEN_MARKER_HELD) {
        return Some(at);
    }
    API_ERROR.starts_with(&text[last_open..]).then_some(last_open)
}

/// The most of an unclosed marker held back, in bytes: Qwen's failure is one short message, so a
/// longer one is the model quoting a marker and going on, delivered as it streams.
const OPEN_MARKER_HELD: usize = 2048;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::Agent;
    use crate::decode::parse;

    fn run(input: &str) -> Vec<OutputEvent> {
        parse(Agent::Qwen, input.as_bytes())
    }

    #[test]
    fn goal_state_gives_nothing_and_is_not_partial_message_mode() {
        let input = concat!(
            r#"{"type":"stream_event","session_id":"S","parent_tool_use_id":null,"event":{"type":"goal_state","goal_state":{"v":2,"goal":null,"activity":"idle"}}}"#,
            "\n",
            r#"{"type":"assistant","session_id":"S","message":{"id":"m1","model":"q","content":[{"type":"text","text":"Hello."}],"usage":{"input_tokens":1,"output_tokens":1}}}"#,
            "\n",
        );
        let mut d = crate::Decoder::new(Agent::Qwen);
        let evs: Vec<_> = d.feed(input.as_bytes()).into_iter().chain(d.finish()).collect();
        assert_eq!(d.stats().unknown_type, 0, "a known line");
        let texts: Vec<_> = evs
            .iter()
            .filter_map(|e| match &e.update {
                SessionUpdate::AgentMessageChunk { content } => content.as_text(),
                _ => None,
            })
            .collect();
        assert_eq!(texts, ["Hello."], "the complete line's text, once");
    }

    #[test]
    fn a_retry_is_a_non_fatal_error_saying_the_text_was_discarded() {
        let evs = run(concat!(
            r#"{"type":"system","subtype":"retry","session_id":"S","data":{"reason":"retry","discardedToolCalls":0,"preserveText":false}}"#,
            "\n",
            r#"{"type":"system","subtype":"retry","session_id":"S","data":{"reason":"retry","preserveText":true}}"#,
            "\n",
        ));
        assert_eq!(evs.len(), 2);
        for (ev, discarded) in evs.iter().zip([true, false]) {
            assert!(matches!(&ev.update, SessionUpdate::Error { fatal: false, .. }), "{ev:?}");
            let extra = ev.extra.as_ref().unwrap().to_value();
            assert_eq!(extra.get("discardedText") == Some(&serde_json::json!(true)), discarded);
        }
    }

    #[test]
    fn error_during_execution_gives_one_fatal_error() {
        let evs = run(concat!(
            r#"{"type":"assistant","session_id":"S","message":{"id":"m1","model":"q","content":[{"type":"text","text":"Partial[API Error: 500 boom]"}]}}"#,
            "\n",
            r#"{"type":"result","subtype":"error_during_execution","is_error":true,"error":{"message":"[API Error: 500 boom]"},"usage":{"input_tokens":3,"output_tokens":1}}"#,
            "\n",
        ));
        let errors: Vec<_> = evs
            .iter()
            .filter_map(|e| match &e.update {
                SessionUpdate::Error { message, fatal } => Some((message.as_str(), *fatal)),
                _ => None,
            })
            .collect();
        assert_eq!(errors, [("[API Error: 500 boom]", true)]);
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
    fn a_tail_that_may_become_a_marker_is_found_and_nothing_else() {
        assert_eq!(api_error_may_start("Partial[API Err"), Some(7));
        assert_eq!(api_error_may_start("Partial["), Some(7));
        assert_eq!(api_error_may_start("x [API Error: 500 Inter"), Some(2), "a marker not closed yet");
        let long = format!("x [API Error: 500 {}", "y".repeat(OPEN_MARKER_HELD));
        assert_eq!(api_error_may_start(&long), None, "an open marker longer than a failure is text");
        assert_eq!(api_error_may_start("x [API Error: 500] y"), None, "closed: a quote");
        assert_eq!(api_error_may_start("a[0"), None);
        assert_eq!(api_error_may_start("[APIs"), None);
        assert_eq!(api_error_may_start("no bracket"), None);
    }

    /// Deltas of one streamed text block, then its end.
    fn streamed(deltas: &[&str]) -> Vec<SessionUpdate> {
        let mut input = String::from(
            r#"{"type":"stream_event","session_id":"S","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}}"#,
        );
        input.push('\n');
        for d in deltas {
            let line = serde_json::json!({"type": "stream_event", "session_id": "S",
                "event": {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": d}}});
            input.push_str(&format!("{line}\n"));
        }
        input.push_str(r#"{"type":"stream_event","session_id":"S","event":{"type":"content_block_stop","index":0}}"#);
        input.push('\n');
        run(&input).into_iter().map(|e| e.update).collect()
    }

    #[test]
    fn a_marker_split_across_deltas_is_the_failure() {
        assert_eq!(
            streamed(&["Partial[API Err", "or: 500 Internal", " Server Error]"]),
            [SessionUpdate::message("Partial"), SessionUpdate::error("[API Error: 500 Internal Server Error]", true)]
        );
    }

    #[test]
    fn held_text_comes_before_the_tool_call_of_its_complete_line() {
        // No `content_block_stop` before the complete line: the held `[` is released before the
        // call, not after it.
        let input = concat!(
            r#"{"type":"stream_event","session_id":"S","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}}"#,
            "\n",
            r#"{"type":"stream_event","session_id":"S","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Run: ["}}}"#,
            "\n",
            r#"{"type":"assistant","session_id":"S","message":{"id":"m","model":"q","content":[{"type":"text","text":"Run: ["},{"type":"tool_use","id":"t1","name":"run_shell_command","input":{"command":"ls"}}],"usage":{"input_tokens":1,"output_tokens":1}}}"#,
            "\n",
        );
        let kinds: Vec<_> = run(input).iter().map(|e| e.update.kind_name()).collect();
        assert_eq!(kinds, ["agent_message_chunk", "agent_message_chunk", "usage", "tool_call"]);
    }

    #[test]
    fn a_held_beginning_that_never_became_a_marker_is_message_text() {
        assert_eq!(
            streamed(&["Look at a[", "0] now"]),
            [SessionUpdate::message("Look at a"), SessionUpdate::message("[0] now")]
        );
        assert_eq!(
            streamed(&["It ends [API Error: open"]),
            [SessionUpdate::message("It ends "), SessionUpdate::message("[API Error: open")],
            "an unclosed marker at the text's end is the model's"
        );
    }

    #[test]
    fn a_subagents_held_failure_ended_by_another_line_keeps_the_subagents_envelope() {
        let sub = |event: serde_json::Value| {
            serde_json::json!({"type": "stream_event", "session_id": "S", "parent_tool_use_id": "task1", "event": event})
                .to_string()
        };
        let lines = [
            sub(
                serde_json::json!({"type": "message_start", "message": {"id": "sm1", "model": "q-sub", "content": []}}),
            ),
            sub(
                serde_json::json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            sub(serde_json::json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": "Sub[API Error: 500 x]"}})),
        ];
        let result = r#"{"type":"result","subtype":"success","session_id":"S","is_error":false,"result":"","usage":{"input_tokens":1,"output_tokens":1}}"#;
        // Ended by the main agent's `result`, and by the end of input.
        for end in [Some(result), None] {
            let mut input: String = lines.iter().map(|l| format!("{l}\n")).collect();
            input.extend(end.map(|r| format!("{r}\n")));
            let evs = run(&input);
            let error = evs.iter().find(|e| matches!(e.update, SessionUpdate::Error { .. })).expect("the failure");
            assert_eq!(error.update, SessionUpdate::error("[API Error: 500 x]", true));
            assert_eq!(
                (error.parent_tool_call_id.as_deref(), error.message_id.as_deref(), error.model.as_deref()),
                (Some("task1"), Some("sm1"), Some("q-sub")),
                "ended by {end:?}"
            );
        }
    }

    #[test]
    fn a_marker_the_answer_goes_on_after_is_the_models_words() {
        let text = "The log reads [API Error: 500 Internal Server Error] which means the upstream failed.";
        let line = serde_json::json!({"type": "assistant", "session_id": "Q",
            "message": {"id": "m", "model": "q", "content": [{"type": "text", "text": text}]}});
        let evs = run(&line.to_string());
        assert_eq!(evs.len(), 1, "{evs:?}");
        assert_eq!(evs[0].update, SessionUpdate::message(text));
        // The failure glued after a quote of one is still found: the last marker, at the end.
        let glued = "It said [API Error: 1] once.Partial[API Error: 500 boom]\n";
        assert_eq!(api_error_at(glued), glued.rfind("[API Error: 500"));
    }

    #[test]
    fn a_subagents_retry_discards_its_own_calls_not_the_call_that_started_it() {
        let evs = run(concat!(
            r#"{"type":"assistant","session_id":"Q","message":{"id":"m1","model":"q","content":[{"type":"tool_use","id":"call_task","name":"agent","input":{"prompt":"p"}}]}}"#,
            "\n",
            r#"{"type":"assistant","session_id":"Q","parent_tool_use_id":"call_task","message":{"id":"m2","model":"q","content":[{"type":"tool_use","id":"call_sub","name":"read_file","input":{"absolute_path":"/a"}}]}}"#,
            "\n",
            r#"{"type":"system","subtype":"retry","session_id":"Q","parent_tool_use_id":"call_task","data":{"reason":"retry","discardedToolCalls":2,"preserveText":true}}"#,
            "\n",
        ));
        let failed: Vec<&str> = evs
            .iter()
            .filter_map(|e| match &e.update {
                SessionUpdate::ToolCallUpdate(u) if u.status == Some(ToolCallStatus::Failed) => {
                    Some(u.tool_call_id.as_str())
                }
                _ => None,
            })
            .collect();
        assert_eq!(failed, ["call_sub"], "the parent's call goes on: {evs:?}");
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
