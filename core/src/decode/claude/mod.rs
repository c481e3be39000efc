//! Claude Code (`claude -p … --output-format stream-json --verbose`, with or without
//! `--include-partial-messages`).
//!
//! The common Claude-protocol mapping (content blocks, tool results, partial messages, result
//! lines) is in [`super::stream_json`]; this module holds what is Claude Code's own.
//!
//! | line | events |
//! |---|---|
//! | `system` `init` | none; `session_id` becomes the run's session id (its `model` is not stamped: every claude line that names a model carries its own `message.model`). A second `init` (2.1.332+, the CLI re-entering after a background task, same session) starts no new session or run |
//! | `system` `api_retry` | `error{fatal:false}`, message built from the line's own fields (`API error: <error> (HTTP <error_status>); retry <attempt>/<max_retries> in <retry_delay_ms> ms`), `extra` = those fields verbatim |
//! | `system` `permission_denied` (2.1.332+: `tool_name`, `tool_use_id`, `message`) | none: the refused call's error `tool_result` follows and is the one failed `tool_call_update` (never an `error`); its `message` is that update's content when the result prints none |
//! | other `system` subtypes (`status`, `thinking_tokens`, `task_*`, `background_tasks_changed`, hooks, …) | none |
//! | `assistant` (one line per content block, lines of one API message share `message.id`) | the block's event (common table), then `usage{scope:"call"}` for the line — before the block when it is a tool call (the reply is complete when it asks for a tool, and its `model.completed` hook carries this usage) |
//! | `assistant` with a top-level `error` (the CLI's synthetic `model:"<synthetic>"` message standing in for an API failure; also an unmarked `<synthetic>` message whose text starts with `API Error`) | `error{fatal:true}` with the message text (the `result` with `is_error` that follows says it again: see `result`); no chunk, no usage; `extra.error` = the error code |
//! | `user` | prompt echo (a subagent's prompt, with `parentToolCallId`) → `user_message_chunk`; `tool_result` → `tool_call_update`, `rawOutput` = the line's `tool_use_result` verbatim (object, list or string); a `ToolSearch` result made of `tool_reference` blocks → one text block naming the tools found, one per line |
//! | `result` (2.1.332+ with a background subagent: two of them, `result_index` 0 and 1) | `is_error:true` → `error{fatal:true}` with the result text, unless the turn's synthetic message already gave that fatal error (one error per failure); `usage{scope:"run"}` = the run total SO FAR: token counters summed over the `result`s seen (each covers its own segment), `costUsd` the latest `total_cost_usd` (cumulative already), `extra` counters summed and `modelUsage` the latest; facts (incl. `permission_denials`) in `extra` |
//! | `stream_event` | deltas streamed at once; complete lines reconciled (common docs); `message_delta` usage → one more call usage |
//!
//! Usage: `promptTokens` = `input_tokens` + `cache_read_input_tokens` +
//! `cache_creation_input_tokens` (Claude's `input_tokens` excludes both cache shares),
//! `cachedTokens` = `cache_read_input_tokens`, `completionTokens` = `output_tokens`, every other
//! counter (`cache_creation_input_tokens`, `service_tier`, `server_tool_use`, …) in `extra`. The
//! run total also has `costUsd` = `total_cost_usd` and `extra.modelUsage`; when `result.usage`
//! is all zeros but `modelUsage` counted the calls (the CLI's non-streaming fallback), the
//! counters are the `modelUsage` totals.
//!
//! Plans: `TodoWrite` (a `todos` list) → `plan` at once, no `tool_call`, its result swallowed.
//! The task tools keep a task list keyed by task id, and each change emits the whole list as a
//! `plan` when the tool's result confirms it: `TaskCreate` adds `{subject, pending}` under the
//! id from `tool_use_result.task.id` (or `Task #N` in the text), `TaskUpdate` changes
//! `status`/`subject` (`deleted` removes), `TaskList`'s `tool_use_result.tasks` replaces the list.
//! These calls emit no `tool_call` while they succeed; a refused call (a failed result) is announced then: its `tool_call`, the failed `tool_call_update`, and a `plan` re-stating the list as it was before the call ([`super::task_list`]) (decisions.md §2).
//! Every line's `timestamp` (2.1.332 prints it on `assistant` lines too) is stamped on its events.
//!
//! | tool | title | content | locations |
//! |---|---|---|---|
//! | Task, Agent | `description` (else the name) | `prompt` | – |
//! | Bash | the command in backticks (`tools::command_title`), else `Terminal` | `description` | – |
//! | BashOutput / KillShell / TaskOutput / TaskStop | `Tail Logs` / `Kill Process` / `Task Output` / `Stop Task` | – | – |
//! | Read | `Read <file_path>` + ` (A - B)` / ` (from line N)` | – | `{path, line: offset}` |
//! | NotebookRead / NotebookEdit | `Read Notebook <path>` / `Edit Notebook <path>` | – / `new_source` | `{path}` |
//! | LS | ``List `<path>` directory`` | – | `{path}` |
//! | Edit / MultiEdit | ``Edit `<file_path>` `` | diff(s) `old_string` → `new_string` | `{path}` |
//! | Write | `Write <file_path>` | diff `null` → `content` | `{path}` |
//! | Glob | ``Find `<path>` `<pattern>` `` | – | `{path}` |
//! | Grep | `grep` + flags + `"pattern"` + path | – | – |
//! | WebFetch / WebSearch | `Fetch <url>` / `"query" (allowed: …) (blocked: …)` | `prompt` / – | – |
//! | ExitPlanMode / EnterPlanMode | `Ready to code?` / `Enter plan mode` | `plan` / – | – |
//! | Skill | `Skill <skill>` | – | – |
//! | `mcp__<server>__<tool>` | `<server>: <tool>` | – | – |
//! | anything else | the tool name | – | – |
//!
//! Hand-written golden cases (`tests/golden/claude/e-*.input.jsonl`, shapes from the captured CLI):
//!
//! | case | pins |
//! |---|---|
//! | `e-partial-stream` | `--include-partial-messages`: thinking and text deltas streamed once (complete lines add nothing), tool call from the complete line, `message_delta` usage as the message's last call usage |
//! | `e-api-error-401` | `api_retry` lines → non-fatal errors; the synthetic `<synthetic>` message → fatal error (no chunk, no usage); failed `result` with the same text → no second error, zero run usage carrying the result's facts |
//! | `e-hangup` | ECONNRESET synthetic message with `error:"server_error"`, no retry line |
//! | `e-reset-recover-usage` | `api_retry` with `error:"unknown"` and no status; non-streaming fallback whose `result.usage` is zero → run usage from `modelUsage` |
//! | `e-subagent` | Agent call, `task_*` system lines ignored, the subagent's prompt echo and its own tool call/result with `parentToolCallId`, the parent's two-block result |
//! | `e-task-plan` | TaskCreate/TaskUpdate/TaskList → plans keyed by task id, results swallowed, a failed TaskUpdate surfaced |
//! | `e-todowrite` | TodoWrite → plans, results swallowed; non-list `todos` → an ordinary tool call |
//! | `e-mcp` | `mcp__kb__lookup` list result without `is_error` (completed, `rawOutput` list), `fail_op` error; `tool_use_meta` in `extra` |
//! | `e-image-read` | Read of a PNG → image tool content, `rawOutput` image record |
//! | `e-tool-failures` | Bash exit 3, Read of a missing file, an unavailable tool, a permission denial (`permission_denials` in the result's `extra`) — all `failed`, text verbatim |
//! | `e-parallel-orphan` | parallel calls of one message, results out of order, an orphan, a result before its call, two results on one line (no `rawOutput`) |
//! | `e-multi-turn-usage` | three messages with cache reads/writes: call usage per line, run total = sum |
//! | `e-thinking` | thinking block → thought; `redacted_thinking` skipped; `thinking_tokens` ignored |
//! | `s1-text-newer`, `s2-bash-newer`, `s3-read-edit-newer`, `s8-subagent-newer` | real captures of Claude Code 2.1.332: `timestamp` on assistant lines, new `result` key order; a background subagent interleaving with the main agent (`parentToolCallId`), a second `init` and two `result`s giving one run and a running run total |
//! | `e-todo-refused` | TodoWrite and TaskCreate unavailable (`No such tool available`): the refused calls announced, failed, and the list restored |
//! | `e-permission-denied` | `system/permission_denied` before each refused call's error result: one failed update each, the line's message when the result has none |
//! | `e-tool-search` | MCP tools deferred behind `ToolSearch`: its `tool_reference` result names the tools found |
//! | `e-bad-lines` | `null`, numbers, arrays, invalid JSON, unknown/missing `type`, null/odd blocks, non-string fields, a result with `errors` |
//! | `e-no-final-result` | `s2-bash` without its closing `result` line: the events as printed; replayed (exit 0) the run fails (`no_final_result`, decisions §1) |
//! | `e-cost-digits` | a `total_cost_usd` and a tool argument whose last digit a fast float reader gets wrong: printed back exactly (run usage, `rawInput`, hook `arguments`) |
//! | `e-api-retry-newer` | 2.1.332's failure shape: `api_retry` with `error: "unknown"` and `error_status: null` → a non-fatal error; the `<synthetic>` reply → one fatal error; a `result` without a leading `type` (`terminal_reason`) → run usage; the run fails |
//! | `e-partial-with-subagent` | partial messages of the main agent with a background subagent's complete line between its deltas: neither text doubled nor lost, the subagent's chunk attributed |

mod describe;

use self::describe::*;

use std::collections::HashMap;

use serde_json::Value;

use crate::decode::context::{DecodeContext, Envelope};
use crate::decode::stream_json::{
    Dialect, Line, Message, Prompt, Protocol, ToolResult, ToolUse, Updates, Usage, counter, joined_text,
    plan_from_todos, plan_status, put, token_usage, value,
};
use crate::decode::task_list::TaskListCalls;
use crate::decode::{HarnessDecoder, LineOutcome};
use crate::event::{
    JsonObject, OutputEvent, PlanEntry, PlanEntryPriority, PlanEntryStatus, SessionUpdate, TokenUsage, ToolCallContent,
    ToolCallStatus,
};
use crate::json::lenient::display_text;
use crate::json::raw_record::{ObjectMembers, with_raw_member};

/// Stateful claude line decoder.
#[derive(Debug, Default)]
pub(crate) struct ClaudeDecoder {
    proto: Protocol<Claude>,
}

impl HarnessDecoder for ClaudeDecoder {
    fn decode_line(&mut self, line: &str, ctx: &mut DecodeContext, out: &mut Vec<OutputEvent>) -> LineOutcome {
        self.proto.decode_line(line, ctx, out)
    }

    fn final_record(&self) -> Option<&'static str> {
        Some("`result` line")
    }
}

/// A plan tool call waiting for its result.
#[derive(Debug)]
enum PlanCall {
    Todo,
    TaskCreate { subject: String },
    TaskUpdate { task_id: String, status: Option<String>, subject: Option<String> },
    TaskList,
}

/// One task of the task tools' list.
#[derive(Debug, Clone, PartialEq)]
struct Task {
    id: String,
    subject: String,
    status: PlanEntryStatus,
}

/// Claude Code's dialect state.
#[derive(Debug, Default)]
pub(crate) struct Claude {
    plan_calls: HashMap<String, PlanCall>,
    /// The same calls, held for a refusal (decisions.md §2).
    task_list: TaskListCalls,
    tasks: Vec<Task>,
    /// `system/permission_denied` messages by call id, for a refused call's result that prints none.
    denied: HashMap<String, String>,
}

impl Dialect for Claude {
    const LINE_ENDS_MESSAGE: bool = false;

    fn call_usage(&self, usage: Usage) -> TokenUsage {
        token_usage(usage, Prompt::PlusCache)
    }

    fn run_usage(&self, line: &mut Line<'_>) -> Option<TokenUsage> {
        let usage = line.usage.0.take();
        let model_usage = line.model_usage.0.take();
        let cost = value(line.facts().total_cost_usd).and_then(|v| v.as_f64());
        if usage.is_none() && model_usage.is_none() && cost.is_none() {
            return None;
        }
        let mut total = usage.map(|u| token_usage(u, Prompt::PlusCache)).unwrap_or_default();
        if let Some(models_text) = model_usage {
            let zero = |v: Option<u64>| v.unwrap_or(0) == 0;
            if zero(total.prompt_tokens) && zero(total.completion_tokens) && zero(total.cached_tokens) {
                // (Only without usable counters: the per-model records are read then.)
                let models = match serde_json::from_str(models_text) {
                    Ok(Value::Object(models)) => models,
                    _ => JsonObject::new(),
                };
                let sum = |key: &str| -> Option<u64> {
                    let vals: Vec<u64> =
                        models.values().filter_map(|m| m.as_object()).filter_map(|m| counter(m, key)).collect();
                    crate::counters::sum("a per-model usage total", vals.into_iter().map(Some))
                };
                let prompt: Vec<u64> = ["inputTokens", "cacheReadInputTokens", "cacheCreationInputTokens"]
                    .iter()
                    .filter_map(|k| sum(k))
                    .collect();
                if prompt.iter().chain(sum("outputTokens").iter()).any(|n| *n > 0) {
                    total.prompt_tokens = crate::counters::sum("prompt tokens", prompt.into_iter().map(Some));
                    total.completion_tokens = sum("outputTokens");
                    total.cached_tokens = sum("cacheReadInputTokens");
                }
            }
            total.extra = Some(with_raw_member(total.extra.take(), "modelUsage", models_text));
        }
        total.cost_usd = cost;
        Some(total)
    }

    fn system(&mut self, line: &Line<'_>, env: &mut Envelope, out: &mut Updates) {
        if line.subtype.get() == Some("permission_denied") {
            // The refused call's error `tool_result` follows and carries the failure (one failed
            // update, no `error`); the message stands in if that result prints none.
            let text = |raw| value(raw).and_then(|v| v.as_str().map(str::to_string));
            if let (Some(id), Some(message)) = (text(line.facts().tool_use_id), text(line.facts().message_text)) {
                self.denied.insert(id, message);
            }
            return;
        }
        if line.subtype.get() != Some("api_retry") {
            return;
        }
        let facts = line.facts();
        let mut extra = ObjectMembers::default();
        put(&mut extra, "attempt", facts.attempt);
        put(&mut extra, "max_retries", facts.max_retries);
        put(&mut extra, "retry_delay_ms", facts.retry_delay_ms);
        put(&mut extra, "error_status", facts.error_status);
        put(&mut extra, "error", facts.error);
        let text = |k: &str| {
            let raw = match k {
                "error" => facts.error,
                "error_status" => facts.error_status,
                "attempt" => facts.attempt,
                "max_retries" => facts.max_retries,
                _ => facts.retry_delay_ms,
            };
            value(raw).map(|v| display_text(&v))
        };
        let mut message = String::from("API error");
        if let Some(e) = text("error") {
            message.push_str(&format!(": {e}"));
        }
        if let Some(s) = text("error_status") {
            message.push_str(&format!(" (HTTP {s})"));
        }
        if let Some(a) = text("attempt") {
            message.push_str(&format!("; retry {a}"));
            if let Some(m) = text("max_retries") {
                message.push_str(&format!("/{m}"));
            }
        }
        // A fractional delay (2.1.197 prints `587.2914651234`) reads as whole milliseconds; the
        // exact value stays in `extra`.
        let delay = value(facts.retry_delay_ms).and_then(|v| v.as_f64()).filter(|d| d.is_finite() && *d >= 0.0);
        if let Some(d) = delay {
            message.push_str(&format!(" in {} ms", d.round() as u64));
        } else if let Some(d) = text("retry_delay_ms") {
            message.push_str(&format!(" in {d} ms"));
        }
        env.extra = extra.into_raw_json();
        out.push(SessionUpdate::error(message, false));
    }

    fn is_failure(&self, line: &Line<'_>, message: &Message<'_>) -> bool {
        // The CLI marks its stand-in message with a top-level `error` code; an unmarked
        // `<synthetic>` message is a failure only when it says so ("API Error: …").
        value(line.facts().error).is_some()
            || (message.model.get() == Some("<synthetic>") && joined_text(&message.content).starts_with("API Error"))
    }

    fn tool_use(&mut self, call: ToolUse<'_>, out: &mut Updates) {
        let plan_call = match call.name {
            "TodoWrite" => match plan_from_todos(&call) {
                Some(entries) => {
                    self.plan_calls.insert(call.id.to_string(), PlanCall::Todo);
                    let announce = tool_call(ToolUse::new(call.id, call.name, call.input));
                    out.push(self.task_list.call(call.id, Some(announce), entries));
                    return;
                }
                None => None,
            },
            "TaskCreate" => Some(PlanCall::TaskCreate { subject: call.str("subject").unwrap_or_default().to_string() }),
            "TaskUpdate" => {
                call.value("taskId").or_else(|| call.value("task_id")).as_ref().and_then(id_string).map(|task_id| {
                    PlanCall::TaskUpdate {
                        task_id,
                        status: call.str("status").map(str::to_string),
                        subject: call.str("subject").map(str::to_string),
                    }
                })
            }
            "TaskList" => Some(PlanCall::TaskList),
            _ => None,
        };
        if let Some(p) = plan_call {
            self.plan_calls.insert(call.id.to_string(), p);
            self.task_list.hold(call.id, tool_call(call));
            return;
        }
        out.push(SessionUpdate::ToolCall(tool_call(call)));
    }

    fn tool_result(&mut self, mut result: ToolResult<'_>, out: &mut Updates) {
        if !self.denied.is_empty() {
            if let Some(message) = self.denied.remove(&result.id) {
                if result.status == ToolCallStatus::Failed && result.text().is_none_or(str::is_empty) {
                    result.content = Some(vec![ToolCallContent::text(message)]);
                }
            }
        }
        // Most results answer no plan call: no hashing of their id then.
        let plan_call = if self.plan_calls.is_empty() { None } else { self.plan_calls.remove(&result.id) };
        let Some(plan_call) = plan_call else {
            out.push(result.update());
            return;
        };
        if result.status == ToolCallStatus::Failed {
            let id = result.id.clone();
            out.extend(self.task_list.refused(&id, result.update()));
            return;
        }
        self.task_list.done(&result.id);
        let before = self.tasks.clone();
        let raw_output = result.raw_output_value();
        match plan_call {
            PlanCall::Todo => return,
            PlanCall::TaskCreate { subject } => {
                let id = raw_output
                    .as_ref()
                    .and_then(|r| r.get("task"))
                    .and_then(|t| t.get("id"))
                    .and_then(id_string)
                    .or_else(|| result.text().and_then(task_number))
                    // Internal key only: the CLI numbers tasks 1, 2, … in creation order.
                    .unwrap_or_else(|| {
                        let last = self.tasks.iter().filter_map(|t| t.id.parse::<u64>().ok()).max().unwrap_or(0);
                        last.saturating_add(1).to_string()
                    });
                let subject = if subject.is_empty() {
                    raw_output
                        .as_ref()
                        .and_then(|r| r.get("task"))
                        .and_then(|t| t.get("subject"))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                } else {
                    subject
                };
                self.tasks.retain(|t| t.id != id);
                self.tasks.push(Task { id, subject, status: PlanEntryStatus::Pending });
            }
            PlanCall::TaskUpdate { task_id, status, subject } => {
                if status.as_deref() == Some("deleted") {
                    self.tasks.retain(|t| t.id != task_id);
                } else if let Some(task) = self.tasks.iter_mut().find(|t| t.id == task_id) {
                    if let Some(s) = status {
                        task.status = plan_status(Some(&s));
                    }
                    if let Some(s) = subject {
                        task.subject = s;
                    }
                } else if let Some(subject) = subject {
                    self.tasks.push(Task { id: task_id, subject, status: plan_status(status.as_deref()) });
                }
            }
            PlanCall::TaskList => {
                let listed = raw_output.as_ref().and_then(|r| r.get("tasks")).and_then(Value::as_array);
                if let Some(listed) = listed {
                    self.tasks = listed
                        .iter()
                        .filter_map(Value::as_object)
                        .filter_map(|t| {
                            let id = t.get("id").and_then(id_string)?;
                            let status = t.get("status").and_then(Value::as_str);
                            (status != Some("deleted")).then(|| Task {
                                id,
                                subject: t.get("subject").and_then(Value::as_str).unwrap_or_default().to_string(),
                                status: plan_status(status),
                            })
                        })
                        .collect();
                }
            }
        }
        if self.tasks != before {
            let entries = self
                .tasks
                .iter()
                .map(|t| PlanEntry {
                    content: t.subject.clone(),
                    status: t.status,
                    priority: PlanEntryPriority::Medium,
                })
                .collect::<Vec<_>>();
            self.task_list.stated(&entries);
            out.push(SessionUpdate::Plan { entries });
        }
    }
}

/// A task id printed as a string or a number.
fn id_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `N` of the first `#N` in a result text (`Task #3 created successfully: …`).
fn task_number(text: &str) -> Option<String> {
    let at = text.find('#')?;
    let digits: String = text[at + 1..].chars().take_while(char::is_ascii_digit).collect();
    (!digits.is_empty()).then_some(digits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::Agent;
    use crate::decode::parse;

    fn run(input: &str) -> Vec<OutputEvent> {
        parse(Agent::Claude, input.as_bytes())
    }

    #[test]
    fn session_id_is_stamped_from_init_on_every_event() {
        let evs = run(concat!(
            r#"{"type":"system","subtype":"init","session_id":"S","model":"m[1m]","tools":["Bash"]}"#,
            "\n",
            r#"{"type":"assistant","message":{"id":"m1","model":"m","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":1,"output_tokens":2}}}"#,
            "\n"
        ));
        assert_eq!(evs.len(), 2);
        assert!(evs.iter().all(|e| e.session_id.as_deref() == Some("S")));
        assert_eq!(evs[0].model.as_deref(), Some("m"));
    }

    fn lines(lines: &[&str]) -> Vec<OutputEvent> {
        run(&lines.iter().map(|l| format!("{l}\n")).collect::<String>())
    }

    fn kinds(evs: &[OutputEvent]) -> Vec<&'static str> {
        evs.iter().map(|e| e.update.kind_name()).collect()
    }

    #[test]
    fn each_result_gives_the_run_total_so_far() {
        // Claude Code 2.1.332 with a background subagent: two `result` lines in one run.
        let evs = lines(&[
            r#"{"type":"result","subtype":"success","is_error":false,"result":"a","total_cost_usd":0.03,"usage":{"input_tokens":3046,"output_tokens":29,"cache_creation_input_tokens":5,"server_tool_use":{"web_search_requests":1},"service_tier":"standard"},"modelUsage":{"m":{"inputTokens":9}},"result_index":0}"#,
            r#"{"type":"system","subtype":"init","session_id":"S"}"#,
            r#"{"type":"result","subtype":"success","is_error":false,"result":"b","total_cost_usd":0.05,"usage":{"input_tokens":1523,"output_tokens":12,"cache_creation_input_tokens":2,"server_tool_use":{"web_search_requests":0},"service_tier":"standard"},"modelUsage":{"m":{"inputTokens":11}},"result_index":1,"origin":{"kind":"task-notification"}}"#,
        ]);
        let totals: Vec<_> = evs
            .iter()
            .filter_map(|e| match &e.update {
                SessionUpdate::Usage { scope: crate::event::UsageScope::Run, usage } => Some(usage.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(totals.len(), 2);
        assert_eq!((totals[0].prompt_tokens, totals[0].completion_tokens), (Some(3051), Some(29)));
        assert_eq!((totals[1].prompt_tokens, totals[1].completion_tokens), (Some(4576), Some(41)), "a running total");
        assert_eq!(totals[1].cost_usd, Some(0.05), "total_cost_usd is cumulative: the latest stands");
        let extra = totals[1].extra.as_ref().unwrap().to_value();
        assert_eq!(extra["cache_creation_input_tokens"], 7);
        assert_eq!(extra["server_tool_use"]["web_search_requests"], 1);
        assert_eq!(extra["service_tier"], "standard");
        assert_eq!(extra["modelUsage"]["m"]["inputTokens"], 11, "modelUsage is cumulative: the latest whole");
    }

    #[test]
    fn another_session_starts_a_new_run_total() {
        // Recorded runs concatenated into one input: each session's total stands alone.
        let one = |session: &str| {
            [
                format!(r#"{{"type":"system","subtype":"init","session_id":"{session}"}}"#),
                r#"{"type":"result","subtype":"success","is_error":false,"usage":{"input_tokens":10,"output_tokens":1}}"#
                    .to_string(),
            ]
        };
        let input: Vec<String> = one("A").into_iter().chain(one("B")).collect();
        let evs = lines(&input.iter().map(String::as_str).collect::<Vec<_>>());
        let prompts: Vec<_> = evs
            .iter()
            .filter_map(|e| match &e.update {
                SessionUpdate::Usage { usage, .. } => usage.prompt_tokens,
                _ => None,
            })
            .collect();
        assert_eq!(prompts, [10, 10]);
    }

    #[test]
    fn assistant_line_timestamps_are_copied_to_their_events() {
        let evs = lines(&[
            r#"{"type":"assistant","message":{"id":"m1","model":"x","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":1,"output_tokens":2}},"timestamp":"2026-12-04T00:35:49.458Z"}"#,
        ]);
        assert_eq!(kinds(&evs), ["agent_message_chunk", "usage", "tool_call"], "the usage before the call it asks for");
        assert!(evs.iter().all(|e| e.timestamp.as_deref() == Some("2026-12-04T00:35:49.458Z")));
    }

    #[test]
    fn tool_search_results_name_the_tools_found() {
        let evs = lines(&[
            r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":[{"type":"tool_reference","tool_name":"mcp__kb__lookup"},{"type":"tool_reference","tool_name":"mcp__kb__fail_op"}]}]}}"#,
        ]);
        let SessionUpdate::ToolCallUpdate(u) = &evs[0].update else { panic!("{evs:?}") };
        let content = u.content.as_ref().expect("not an empty result");
        assert_eq!(content, &vec![ToolCallContent::text("mcp__kb__lookup\nmcp__kb__fail_op")]);
    }

    #[test]
    fn a_denied_call_fails_once_with_the_harness_message() {
        let evs = lines(&[
            r#"{"type":"assistant","message":{"id":"m1","model":"x","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"rm -rf build"}}]}}"#,
            r#"{"type":"system","subtype":"permission_denied","tool_name":"Bash","tool_use_id":"t1","message":"Permission to use Bash has been denied."}"#,
            r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"","is_error":true}]}}"#,
        ]);
        assert_eq!(kinds(&evs), ["tool_call", "tool_call_update"], "no error update, one failed update");
        let SessionUpdate::ToolCallUpdate(u) = &evs[1].update else { unreachable!() };
        assert_eq!(u.status, Some(ToolCallStatus::Failed));
        assert_eq!(u.content, Some(vec![ToolCallContent::text("Permission to use Bash has been denied.")]));
    }

    #[test]
    fn a_refused_todo_write_is_announced_failed_and_undone() {
        let todo = |id: &str, status: &str| {
            format!(
                r#"{{"type":"assistant","message":{{"id":"{id}","model":"x","content":[{{"type":"tool_use","id":"{id}","name":"TodoWrite","input":{{"todos":[{{"content":"Read","status":"{status}","activeForm":"Reading"}}]}}}}]}}}}"#
            )
        };
        let result = |id: &str, error: bool| {
            format!(
                r#"{{"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"{id}","type":"tool_result","content":"x","is_error":{error}}}]}}}}"#
            )
        };
        let input = [todo("a", "in_progress"), result("a", false), todo("b", "completed"), result("b", true)];
        let evs = lines(&input.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(kinds(&evs), ["plan", "plan", "tool_call", "tool_call_update", "plan"]);
        assert!(
            matches!(&evs[2].update, SessionUpdate::ToolCall(c) if c.tool_call_id == "b" && c.title == "Update TODOs")
        );
        let SessionUpdate::Plan { entries } = &evs[4].update else { unreachable!() };
        assert_eq!(entries[0].status, PlanEntryStatus::InProgress, "the list as it was before the refused call");
    }

    #[test]
    fn todo_write_becomes_a_plan_and_its_result_is_swallowed() {
        let evs = run(concat!(
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"TodoWrite","input":{"todos":[{"content":"A","status":"in_progress","activeForm":"Doing A"}]}}]}}"#,
            "\n",
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}"#,
            "\n"
        ));
        assert_eq!(evs.len(), 1);
        assert!(
            matches!(&evs[0].update, SessionUpdate::Plan { entries } if entries[0].status == PlanEntryStatus::InProgress)
        );
    }

    #[test]
    fn task_tools_keep_a_list() {
        let evs = run(concat!(
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"c1","name":"TaskCreate","input":{"subject":"A","description":"a"}}]}}"#,
            "\n",
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"c1","content":"Task #1 created successfully: A"}]}}"#,
            "\n",
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"c2","name":"TaskUpdate","input":{"taskId":"1","status":"completed"}}]}}"#,
            "\n",
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"c2","content":"Updated task #1 status"}]}}"#,
            "\n"
        ));
        let plans: Vec<_> = evs
            .iter()
            .filter_map(|e| match &e.update {
                SessionUpdate::Plan { entries } => Some(entries.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(plans.len(), 2);
        assert_eq!(plans[1][0].status, PlanEntryStatus::Completed);
        assert_eq!(plans[1][0].content, "A");
    }

    #[test]
    fn a_tool_input_with_a_carriage_return_between_tokens_is_kept_compact() {
        // A bare CR: a CR-LF would end the line.
        let line = "{\"type\":\"assistant\",\"message\":{\"id\":\"m1\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"Bash\",\"input\":{\"command\":\r \"ls\"}}]}}\n";
        let evs = run(line);
        let SessionUpdate::ToolCall(call) = &evs[0].update else { panic!("{evs:?}") };
        assert_eq!(call.raw_input.as_ref().map(|r| r.get()), Some(r#"{"command":"ls"}"#));
    }

    #[test]
    fn grep_titles() {
        let input = r#"{"pattern":"foo","path":"/src","-i":true,"output_mode":"count","head_limit":5}"#;
        let call = ToolUse::new("t", "Grep", Some(input));
        assert_eq!(grep_title(&call), "grep -i -c \"foo\" /src | head -5");
    }

    #[test]
    fn synthetic_api_errors_are_errors_not_text() {
        let evs = run(concat!(
            r#"{"type":"assistant","message":{"id":"x","model":"<synthetic>","content":[{"type":"text","text":"API Error: API returned an empty or malformed response (HTTP 200)"}],"usage":{"input_tokens":0,"output_tokens":0}}}"#,
            "\n",
            r#"{"type":"assistant","message":{"id":"y","model":"<synthetic>","content":[{"type":"text","text":"No response requested."}]}}"#,
            "\n"
        ));
        assert_eq!(evs.len(), 2);
        assert_eq!(
            evs[0].update,
            SessionUpdate::error("API Error: API returned an empty or malformed response (HTTP 200)", true)
        );
        assert_eq!(evs[1].update, SessionUpdate::message("No response requested."));
    }

    #[test]
    fn a_failing_turn_is_one_fatal_error_and_the_next_turn_can_fail_again() {
        let failing_turn = concat!(
            r#"{"type":"assistant","error":"authentication_failed","message":{"id":"m","model":"<synthetic>","content":[{"type":"text","text":"Invalid API key"}]}}"#,
            "\n",
            r#"{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key","duration_ms":5,"usage":{"input_tokens":0,"output_tokens":0}}"#,
            "\n"
        );
        let evs = run(&[failing_turn, failing_turn].concat());
        let errors: Vec<_> = evs.iter().filter(|e| matches!(e.update, SessionUpdate::Error { .. })).collect();
        assert_eq!(errors.len(), 2, "one per turn: {evs:#?}");
        assert!(errors.iter().all(|e| e.update == SessionUpdate::error("Invalid API key", true)));
        // The result's facts still arrive, on its run usage.
        let run_usage =
            evs.iter().find(|e| matches!(e.update, SessionUpdate::Usage { .. }) && e.extra.is_some()).unwrap();
        assert_eq!(run_usage.extra.as_ref().unwrap().to_value()["duration_ms"], 5);
        // A result whose text differs from the synthetic message is its own error.
        let evs = run(concat!(
            r#"{"type":"assistant","error":"unknown","message":{"id":"m","model":"<synthetic>","content":[{"type":"text","text":"API Error: 500"}]}}"#,
            "\n",
            r#"{"type":"result","is_error":true,"result":"something else"}"#,
            "\n"
        ));
        assert_eq!(evs.iter().filter(|e| matches!(e.update, SessionUpdate::Error { fatal: true, .. })).count(), 2);
    }

    #[test]
    fn api_retry_is_a_non_fatal_error() {
        let evs = run(
            r#"{"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"retry_delay_ms":1200,"error_status":401,"error":"authentication_failed","session_id":"S"}"#,
        );
        assert_eq!(
            evs[0].update,
            SessionUpdate::error("API error: authentication_failed (HTTP 401); retry 2/10 in 1200 ms", false)
        );
        let fractional = run(r#"{"type":"system","subtype":"api_retry","attempt":1,"retry_delay_ms":587.2914651234}"#);
        assert_eq!(fractional[0].update, SessionUpdate::error("API error; retry 1 in 587 ms", false));
        assert_eq!(fractional[0].extra.as_ref().unwrap().get(), r#"{"attempt":1,"retry_delay_ms":587.2914651234}"#);
    }

    #[test]
    fn a_tool_result_is_never_fenced_and_keeps_raw_output() {
        let evs = run(
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"x","content":"a\n```\nb","is_error":true}]},"tool_use_result":"Error: a"}"#,
        );
        let SessionUpdate::ToolCallUpdate(u) = &evs[0].update else { panic!() };
        assert_eq!(u.status, Some(ToolCallStatus::Failed));
        assert_eq!(u.content.as_ref().unwrap()[0], ToolCallContent::text("a\n```\nb"));
        assert_eq!(u.raw_output.as_ref().map(|r| r.to_value()), Some(Value::String("Error: a".into())));
    }
}
