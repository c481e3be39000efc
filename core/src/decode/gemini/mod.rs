//! Gemini CLI decoder (`gemini -p … --output-format stream-json`, checked against 0.61.0).
//!
//! Every line is `{type, timestamp, …}` with an ISO `timestamp`, which every event of the line
//! carries. The model comes from the `init` line and is stamped on every later event.
//!
//! Each line is read in one pass by the scanner ([`crate::json::scan::Scan`], serde_json's acceptance
//! rules) into a struct of fields borrowed from it: strings as `json::opt_string` reads them
//! (another type is absent), `parameters` / `output` / `error` as the text printed (what
//! `rawInput` / `rawOutput` are written from, verbatim), `stats` straight into the usage. A line
//! is unusable exactly when serde_json's reading of it failed: text that is not JSON, a known key
//! printed twice, a number or unpaired surrogate escape a typed read refuses, or an unpaired
//! surrogate escape in a verbatim part. The printed parameters of a `tool_use` are scanned once
//! more for its title, locations, diff and plan.
//!
//! | line | events |
//! |---|---|
//! | `init` | none; `session_id` becomes the run's `sessionId`, `model` the run's model |
//! | `message`, role `user` | `user_message_chunk` (the prompt echo) |
//! | `message`, role `assistant` | `agent_message_chunk` (gemini prints deltas only; a retried attempt's deltas are printed again and kept as printed) |
//! | `tool_use` | `tool_call{pending}`: `toolCallId` = `tool_id`, `toolName` = `tool_name`, `rawInput` = `parameters`, title / locations / diff per tool (table below); `write_todos` also gives a `plan` right after the call; when its result fails (refused), a `plan` re-stating the list as it was follows the failed update |
//! | `tool_result` | `tool_call_update`: `completed` for `status:"success"`, else `failed`; content = `output` (gemini's display text), and on failure also `error.message` when it says something else (an MCP error's `output` is `Error: MCP tool 'x' reported an error.` while `error.message` holds the server's words), each verbatim; `rawOutput` = `{status, output?, error?}` as printed |
//! | `error` | `error`: `fatal` when `severity` is `"error"` (gemini gives up the run after it: `Model stream ended without a finish reason.`), else not fatal (`warning`: loop detection) |
//! | `result` | `usage{scope:"run"}` from `stats`; with `status:"error"` also `error{fatal:true}` with `error.message`, or `gemini reported status error` when no error object is printed and no fatal error was reported yet |
//! | any other `type` | none, counted as unknown |
//!
//! Usage: `promptTokens` = `stats.input_tokens` (gemini's prompt count, which INCLUDES the
//! cached share; its `input` = `input_tokens - cached`), else `input + cached`;
//! `cachedTokens` = `cached`; `completionTokens` = `output_tokens`; `extra` = every other key
//! of `stats` verbatim (`total_tokens`, `input`, `duration_ms`, `tool_calls`, per-model
//! `models`).
//!
//! Titles, kinds (from `tools.rs`) and locations:
//!
//! | tool_name | title | locations / content |
//! |---|---|---|
//! | read_file | `Read <file_path>` | the file |
//! | read_many_files | `Read N files` | one per include pattern |
//! | write_file | `Write <file_path>` | the file; diff with `oldText` null, `newText` = content |
//! | replace, edit | `Edit <file_path>` | the file; diff `old_string` → `new_string` |
//! | run_shell_command, shell | the command in backticks | `description` as text |
//! | glob | `Find <pattern>` | `dir_path` |
//! | grep_search, grep, search_file_content | `grep "<pattern>"` | `dir_path` |
//! | list_directory | `List <dir_path>` | the directory |
//! | google_web_search, web_search | `Search: <query>` | – |
//! | web_fetch | `Fetch: <prompt, cut at 50 chars with … only when cut>` | – |
//! | invoke_agent, delegate_to_agent | `Agent: <agent name>` | – (the subagent's own steps never reach stdout) |
//! | write_todos | `Update todos` | `plan` from `todos[{description,status}]`: `pending`, `in_progress`, `completed`; `cancelled` counts as completed (no longer open) |
//! | update_topic | `Topic: <title>` | – |
//! | save_memory, activate_skill, enter/exit_plan_mode, background tools | a short phrase | – |
//! | anything else (MCP `mcp_<server>_<tool>`, …) | the tool name | – |
//!
//! Golden cases (`tests/golden/gemini/`): `s1-text`, `s2-bash`, `s3-read-edit` are real captures;
//! the `e-*` cases are written from the captured shapes:
//!
//! | case | pins |
//! |---|---|
//! | e-hangup | the deltas of every retried attempt as printed, `severity:"error"` fatal, then a bare failed `result` adds no second error |
//! | e-api-error-500 | a failed `result` with `error.message` is fatal; usage still reported |
//! | e-result-error-bare | a failed `result` with no error object and no earlier error says `gemini reported status error` |
//! | e-write-todos-refused | a refused `write_todos`: its failed update, then the list as it was |
//! | e-loop-detected | the loop-detection warning is not fatal; cached tokens are part of `promptTokens` |
//! | e-no-final-result | `s2-bash` without its `result` line: replayed (exit 0) the run fails (`no_final_result`, decisions §1) |
//! | e-tool-errors | `file_not_found`, `tool_not_registered`, `mcp_tool_error` (output and error text), `web_fetch_processing_error`, exit 3 reported as success |
//! | e-write-todos | todos as a plan (cancelled → completed, entries without text dropped), an empty list clears the plan |
//! | e-invoke-agent | the subagent call (kind think) and its output-less result |
//! | e-mcp-and-image | an MCP call and an image read (gemini prints only a text for it) |
//! | e-parallel-orphan-out-of-order | a result before any call, two calls answered in reverse order |
//! | e-many-tools | update_topic, list_directory, grep_search, glob, google_web_search, web_fetch, background tools, plan mode, a failed skill |
//! | e-bad-lines | `null`, non-objects, invalid JSON, unknown types, missing ids, odd roles and contents, a second `init` |

mod describe;
mod wire;

use self::describe::*;
use self::wire::*;

use std::borrow::Cow;

use serde_json::Value;

use crate::decode::context::{DecodeContext, Envelope};
use crate::decode::task_list::TaskListCalls;
use crate::decode::{Agent, HarnessDecoder, LineOutcome};
use crate::event::{
    OutputEvent, RawJson, SessionUpdate, SharedStr, ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdate,
    UsageScope,
};
use crate::json::borrowed::unescape_literal;
use crate::json::raw_record::{Printed, object_text, read_raw_json};
use crate::json::scan::Scan;
use crate::tools::tool_kind;

/// Stateful gemini line decoder.
#[derive(Debug, Default)]
pub(crate) struct GeminiDecoder {
    /// A fatal `error` was already reported (so a bare failed `result` adds nothing).
    fatal_reported: bool,
    /// `write_todos` calls until their result: a refused one is undone (decisions.md §2).
    task_list: TaskListCalls,
    /// The scanner's buffer for the objects of `stats`, kept from line to line so each
    /// `result` line does not grow a new one.
    scratch: Vec<(String, Value)>,
}

impl HarnessDecoder for GeminiDecoder {
    fn final_record(&self) -> Option<&'static str> {
        Some("`result` line")
    }

    fn decode_line(&mut self, line: &str, ctx: &mut DecodeContext, out: &mut Vec<OutputEvent>) -> LineOutcome {
        let mut l = Line::default();
        if let Err(outcome) = parse_line(line, &mut l, &mut self.scratch) {
            return outcome;
        }
        let kind = l.kind.take();
        match kind.as_deref() {
            Some("init") => {
                ctx.see_session(l.session_id.as_deref());
                if ctx.init_model.is_none() {
                    ctx.init_model = l.model.take().filter(|m| !m.is_empty()).map(|m| SharedStr::from(&*m));
                }
                LineOutcome::Decoded
            }
            Some("message") => {
                let Some(text) = l.content.take().filter(|c| !c.is_empty()) else { return LineOutcome::Decoded };
                let update = match l.role.as_deref() {
                    Some("user") => SessionUpdate::user_message(text),
                    Some("assistant") | None => SessionUpdate::message(text),
                    Some(_) => return LineOutcome::UnexpectedShape,
                };
                envelope(&mut l).emit_last(ctx, update, out);
                LineOutcome::Decoded
            }
            Some("tool_use") => tool_use(&mut l, &mut self.task_list, ctx, out),
            Some("tool_result") => tool_result(&mut l, &mut self.task_list, ctx, out),
            Some("error") => {
                let env = envelope(&mut l);
                let fatal = l.severity.as_deref() == Some("error");
                let message =
                    l.message.take().filter(|m| !m.is_empty()).map_or_else(|| line.trim().into(), Cow::into_owned);
                self.fatal_reported |= fatal;
                env.emit_last(ctx, SessionUpdate::error(message, fatal), out);
                LineOutcome::Decoded
            }
            Some("result") => {
                ctx.final_result_seen = true;
                let env = envelope(&mut l);
                if let Some(usage) = l.stats.take() {
                    env.emit(ctx, SessionUpdate::Usage { scope: UsageScope::Run, usage }, out);
                }
                if l.status.as_deref().is_some_and(|s| s != "success") {
                    let message = match l.error.and_then(error_message) {
                        Some(m) => Some(m.into_owned()),
                        None if !self.fatal_reported => {
                            Some(format!("gemini reported status {}", l.status.as_deref().unwrap_or_default()))
                        }
                        None => None,
                    };
                    if let Some(m) = message {
                        self.fatal_reported = true;
                        env.emit(ctx, SessionUpdate::error(m, true), out);
                    }
                }
                LineOutcome::Decoded
            }
            _ => LineOutcome::UnknownType,
        }
    }
}

/// The envelope of a line that gives events (made only then: its strings are copies).
fn envelope(l: &mut Line<'_>) -> Envelope {
    Envelope {
        timestamp: l.timestamp.take().filter(|t| !t.is_empty()).map(|t| SharedStr::from(&*t)),
        model: l.model.take().filter(|m| !m.is_empty()).map(|m| SharedStr::from(&*m)),
        ..Envelope::default()
    }
}

/// The message of a printed `error` (`{type, message}`, or a bare string) when it is a non-empty
/// string; `None` also when a JSON reader refuses the text (a number beyond `f64`), as when it
/// was read into a `Value` first. A `message` printed twice counts with its last value.
fn error_message(text: &str) -> Option<Cow<'_, str>> {
    let mut r = Scan::new(text);
    let message = match r.peek()? {
        b'"' => r.str().ok(),
        b'{' => {
            let mut message = None;
            r.object(|r, key| {
                if key != "message" {
                    return r.check();
                }
                message = if r.peek() == Some(b'"') { Some(r.str()?) } else { r.check().map(|()| None)? };
                Ok(())
            })
            .ok()?;
            message
        }
        _ => None,
    };
    r.end().ok()?;
    message.filter(|m| !m.is_empty())
}

fn tool_use(
    l: &mut Line<'_>,
    task_list: &mut TaskListCalls,
    ctx: &DecodeContext,
    out: &mut Vec<OutputEvent>,
) -> LineOutcome {
    let env = envelope(l);
    let Some(id) = l.tool_id.as_deref().filter(|id| !id.is_empty()) else { return LineOutcome::UnexpectedShape };
    let name = l.tool_name.as_deref().filter(|n| !n.is_empty());
    let params = l.parameters.map(Params::read).unwrap_or_default();
    let plan = (name == Some("write_todos")).then(|| todo_plan(&params)).flatten();
    let shape = describe(name.unwrap_or_default(), params);
    let call = ToolCall {
        tool_call_id: id.to_string(),
        title: shape.title,
        tool_name: name.map(str::to_string),
        kind: tool_kind(Agent::Gemini, name.unwrap_or_default()),
        status: ToolCallStatus::Pending,
        // The scanner read the parameters whole (`Scan::raw`): kept as printed, not read again.
        raw_input: l.parameters.map(|text| read_raw_json(text.to_string())),
        content: (!shape.content.is_empty()).then_some(shape.content),
        locations: (!shape.locations.is_empty()).then_some(shape.locations),
    };
    match plan {
        Some(entries) => {
            let plan = task_list.call(id, None, entries);
            env.emit(ctx, SessionUpdate::ToolCall(call), out);
            env.emit_last(ctx, plan, out);
        }
        None => env.emit_last(ctx, SessionUpdate::ToolCall(call), out),
    }
    LineOutcome::Decoded
}

fn tool_result(
    l: &mut Line<'_>,
    task_list: &mut TaskListCalls,
    ctx: &DecodeContext,
    out: &mut Vec<OutputEvent>,
) -> LineOutcome {
    let env = envelope(l);
    let Some(id) = l.tool_id.as_deref().filter(|id| !id.is_empty()) else { return LineOutcome::UnexpectedShape };
    let mut update = ToolCallUpdate::new(id);
    let success = l.status.as_deref() == Some("success");
    update.status = Some(if success { ToolCallStatus::Completed } else { ToolCallStatus::Failed });
    let output_text = l.output.and_then(output_text);
    let mut content = Vec::new();
    if !success {
        if let Some(text) = output_text.as_deref().filter(|t| !t.is_empty()) {
            content.push(ToolCallContent::text(text));
        }
        let error = l.error.and_then(error_message);
        if let Some(text) = error.filter(|t| Some(t.as_ref()) != output_text.as_deref()) {
            content.push(ToolCallContent::text(text));
        }
    } else if let Some(text) = output_text.filter(|t| !t.is_empty()) {
        content.push(ToolCallContent::text(text));
    }
    update.content = (!content.is_empty()).then_some(content);
    update.raw_output = Some(raw_output(l.status.as_deref(), l.output, l.error));
    let update = SessionUpdate::ToolCallUpdate(update);
    if success {
        task_list.done(id);
    } else if task_list.holds(id) {
        // A refused `write_todos`: its failed update, then the list as it was.
        let mut updates = task_list.refused(id, update);
        let last = updates.pop();
        for u in updates {
            env.emit(ctx, u, out);
        }
        if let Some(u) = last {
            env.emit_last(ctx, u, out);
        }
        return LineOutcome::Decoded;
    }
    env.emit_last(ctx, update, out);
    LineOutcome::Decoded
}

/// A printed `output` as text: a string as is, any other value as its JSON text (`None` when a
/// JSON reader refuses it).
fn output_text(text: &str) -> Option<Cow<'_, str>> {
    if text.starts_with('"') {
        if let Some(s) = unescape_literal(text) {
            return Some(s);
        }
    }
    serde_json::from_str::<Value>(text).ok().map(|v| Cow::Owned(v.to_string()))
}

/// `rawOutput`: `{status, output, error}` as printed (those present, in that order), written
/// straight from the slices the scanner read whole.
fn raw_output(status: Option<&str>, output: Option<&str>, error: Option<&str>) -> RawJson {
    let members = [
        ("status", status.map(Printed::Text)),
        ("output", output.map(Printed::Raw)),
        ("error", error.map(Printed::Raw)),
    ];
    object_text(members.iter().filter_map(|&(key, value)| Some((key, value?))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{Agent, Decoder};

    fn run(input: &str) -> Vec<Value> {
        let mut d = Decoder::new(Agent::Gemini);
        let mut evs = d.feed(input.as_bytes());
        evs.extend(d.finish());
        evs.iter().map(|e| serde_json::to_value(e).unwrap()).collect()
    }

    #[test]
    fn init_model_and_session_are_stamped_later() {
        let evs = run(concat!(
            r#"{"type":"init","timestamp":"2026-01-01T00:00:00.000Z","session_id":"s","model":"m"}"#,
            "\n",
            r#"{"type":"message","timestamp":"2026-01-01T00:00:01.000Z","role":"assistant","content":"hi","delta":true}"#,
            "\n"
        ));
        assert_eq!(evs.len(), 1);
        assert_eq!(evs[0]["sessionId"], "s");
        assert_eq!(evs[0]["model"], "m");
        assert_eq!(evs[0]["timestamp"], "2026-01-01T00:00:01.000Z");
    }

    #[test]
    fn web_fetch_titles_are_cut_only_when_long() {
        let fetch_title = |s: &str| describe("web_fetch", Params::read(&format!(r#"{{"prompt":"{s}"}}"#))).title;
        assert_eq!(fetch_title("short"), "Fetch: short");
        assert_eq!(fetch_title(&"x".repeat(60)), format!("Fetch: {}…", "x".repeat(50)));
    }

    #[test]
    fn parameters_printed_twice_read_as_a_json_reader_reads_them() {
        let p = Params::read(r#"{"file_path":"/a","file_path":"/b","todos":[{"text":"t","text":"u"}]}"#);
        assert_eq!(p.file_path.as_deref(), Some("/b"));
        assert_eq!(todo_plan(&p).unwrap()[0].content, "u");
    }

    #[test]
    fn non_string_output_is_kept_as_json_text() {
        let evs = run("{\"type\":\"tool_result\",\"tool_id\":\"t\",\"status\":\"success\",\"output\":{\"a\":1}}\n");
        assert_eq!(evs[0]["update"]["content"][0]["content"]["text"], "{\"a\":1}");
        assert_eq!(evs[0]["update"]["rawOutput"]["output"]["a"], 1);
    }

    /// One line through a fresh decoder: its outcome and its events as JSON text.
    fn line(text: &str) -> (LineOutcome, Vec<String>) {
        let mut ctx = DecodeContext::default();
        let mut out = Vec::new();
        let outcome = GeminiDecoder::default().decode_line(text, &mut ctx, &mut out);
        (outcome, out.iter().map(|e| serde_json::to_string(e).unwrap()).collect())
    }

    /// The verbatim parts are read by syntax only, as serde_json captured them: only an
    /// unpaired surrogate escape (which a JSON reader refuses) makes the line unusable, not a
    /// number beyond `f64` nor nesting past serde_json's limit; `stats` is read by type.
    #[test]
    fn verbatim_parts_fail_the_line_only_as_before() {
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        for (text, usable) in [
            (r#"{"type":"tool_use","tool_id":"t","parameters":{"x":1e400}}"#.to_string(), true),
            (r#"{"type":"tool_use","tool_id":"t","parameters":{"x":"\ud800"}}"#.to_string(), false),
            (r#"{"type":"tool_use","tool_id":"t","parameters":{"x":"\ud800\udc00"}}"#.to_string(), true),
            (r#"{"type":"tool_use","tool_id":"t","parameters":{"x":"\ud800","y":1e400}}"#.to_string(), false),
            (format!(r#"{{"type":"tool_use","tool_id":"t","parameters":{deep}}}"#), true),
            (r#"{"type":"tool_result","tool_id":"t","output":["\udc00"]}"#.to_string(), false),
            (r#"{"type":"tool_result","tool_id":"t","error":1e400}"#.to_string(), true),
            (r#"{"type":"result","stats":{"x":1e400}}"#.to_string(), false),
            (r#"{"type":"result","stats":[1e400]}"#.to_string(), false),
            (format!(r#"{{"type":"result","stats":{deep}}}"#), false),
            (r#"{"type":"tool_use","tool_id":"t","parameters":{},"parameters":null}"#.to_string(), false),
        ] {
            let (outcome, _) = line(&text);
            assert_eq!(outcome == LineOutcome::Decoded, usable, "{text}: {outcome:?}");
        }
        // Parameters a typed read refuses give no title parts, but are still kept as printed.
        let (_, evs) = line(
            r#"{"type":"tool_use","tool_id":"t","tool_name":"read_file","parameters":{"file_path":"/a","path":1e400}}"#,
        );
        assert!(evs[0].contains(r#""title":"Read file""#), "{}", evs[0]);
        assert!(evs[0].contains(r#""rawInput":{"file_path":"/a","path":1e400}"#), "{}", evs[0]);
    }

    /// `rawOutput` is written from the printed parts; a status that needs escaping (never seen)
    /// is escaped as serde_json escapes a string, whatever the record's length.
    #[test]
    fn raw_output_keeps_the_printed_parts() {
        let (_, evs) =
            line(r#"{"type":"tool_result","tool_id":"t","status":"error","output" : [1, 2] ,"error":{"message":"m"}}"#);
        let record = r#""rawOutput":{"status":"error","output":[1, 2],"error":{"message":"m"}}"#;
        assert!(evs[0].contains(record), "{}", evs[0]);
        let record = |status: &str, output: &str| raw_output(Some(status), Some(output), None).get().to_string();
        assert_eq!(record("success", r#"[1, 2]"#), r#"{"status":"success","output":[1, 2]}"#);
        assert_eq!(raw_output(None, None, None).get(), "{}");
        assert_eq!(record("a\"b", r#""o""#), r#"{"status":"a\"b","output":"o"}"#);
        assert_eq!(record("a\u{8}b", r#""o""#), r#"{"status":"a\bb","output":"o"}"#);
        let long = format!("\"{}\"", "y".repeat(100));
        assert_eq!(record("a\u{8}b", &long), format!(r#"{{"status":"a\bb","output":{long}}}"#));
    }

    /// An `error`'s message is what a JSON reader makes of it: the last `message`, and none when
    /// the reader refuses the error (a number beyond `f64`).
    #[test]
    fn error_messages_read_as_a_json_reader_reads_them() {
        assert_eq!(error_message(r#"{"message":"a","message":"b"}"#).as_deref(), Some("b"));
        assert_eq!(error_message(r#"{"message":"a","message":1}"#), None);
        assert_eq!(error_message(r#"{"message":"a","code":1e400}"#), None);
        assert_eq!(error_message(r#""plain""#).as_deref(), Some("plain"));
        assert_eq!(error_message(r#""""#), None);
        assert_eq!(error_message(r#"{"message":"\ud83d\ude00"}"#).as_deref(), Some("😀"));
        assert_eq!(error_message(r#"["m"]"#), None);
    }

    #[test]
    fn stats_without_input_tokens_add_cached_to_input() {
        let u = read_stats(&mut Scan::new(r#"{"input":5,"cached":3,"output_tokens":2}"#)).unwrap().unwrap();
        assert_eq!(u.prompt_tokens, Some(8));
        assert_eq!(u.cached_tokens, Some(3));
        assert_eq!(u.extra.unwrap().get(), r#"{"input":5}"#);
    }
}
