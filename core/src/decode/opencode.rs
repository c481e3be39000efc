//! OpenCode decoder (`opencode run --format json`, with or without `--thinking`; checked against
//! opencode 1.18.33).
//!
//! Every line is `{type, timestamp, sessionID, part | error}`. `sessionID` becomes the run's
//! `sessionId`; `timestamp` (milliseconds since the epoch) becomes ISO 8601 UTC with
//! milliseconds (`2026-12-02T09:41:56.202Z`); `part.messageID` becomes `messageId` on every event
//! of the line, so text, tool calls and the step's usage of one LLM message share it.
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
use std::collections::HashSet;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::context::{DecodeContext, Envelope};
use super::json::{first_str, opt_string, parse_line, str_field};
use super::{Agent, HarnessDecoder, LineOutcome};
use crate::event::{
    ContentBlock, DiffContent, ImageContent, OutputEvent, PlanEntry, PlanEntryPriority, PlanEntryStatus, RawJson,
    SessionUpdate, TokenUsage, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, UsageScope,
};
use crate::tools::{MAX_TITLE_CHARS, command_title, tool_kind, truncate_chars};

/// Opencode line decoder.
#[derive(Debug, Default)]
pub(crate) struct OpencodeDecoder {
    /// Calls announced by an earlier line whose state was not final yet (pending/running).
    open: HashSet<String>,
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", default, borrow, with = "opt_string")]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    timestamp: Option<&'a RawValue>,
    #[serde(rename = "sessionID", default, borrow, with = "opt_string")]
    session_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    part: Option<Part<'a>>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Part<'a> {
    #[serde(default, borrow, with = "opt_string")]
    text: Option<Cow<'a, str>>,
    #[serde(rename = "messageID", default, borrow, with = "opt_string")]
    message_id: Option<Cow<'a, str>>,
    #[serde(rename = "callID", default, borrow, with = "opt_string")]
    call_id: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow, with = "opt_string")]
    tool: Option<Cow<'a, str>>,
    #[serde(default)]
    state: Option<Value>,
    #[serde(default)]
    tokens: Option<Value>,
    #[serde(default, borrow)]
    cost: Option<&'a RawValue>,
    #[serde(default, borrow, with = "opt_string")]
    reason: Option<Cow<'a, str>>,
}

impl HarnessDecoder for OpencodeDecoder {
    fn decode_line(&mut self, line: &str, ctx: &mut DecodeContext, out: &mut Vec<OutputEvent>) -> LineOutcome {
        let l: Line<'_> = match parse_line(line) {
            Ok(l) => l,
            Err(outcome) => return outcome,
        };
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
                .map(str::to_string),
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
                Some(part) => tool_use(&mut self.open, part, &env, ctx, out),
                None => LineOutcome::UnexpectedShape,
            },
            Some("step_finish") => {
                let Some(part) = l.part else { return LineOutcome::UnexpectedShape };
                if let Some(reason) = part.reason.filter(|r| !r.is_empty()) {
                    let mut extra = Map::new();
                    extra.insert("reason".into(), Value::String(reason.into_owned()));
                    env.extra = Some(extra);
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
                env.extra = (!extra.is_empty()).then_some(extra);
                env.emit_last(ctx, SessionUpdate::error(message, true), out);
                LineOutcome::Decoded
            }
            _ => LineOutcome::UnknownType,
        }
    }
}

/// The line's `timestamp`: milliseconds since the epoch → ISO 8601 UTC; a string stays as is.
fn timestamp(raw: &RawValue) -> Option<String> {
    let text = raw.get();
    if text.starts_with('"') {
        return serde_json::from_str::<String>(text).ok().filter(|s| !s.is_empty());
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
    iso_millis(ms)
}

/// Milliseconds since 1970-01-01T00:00:00Z → `YYYY-MM-DDTHH:MM:SS.mmmZ` (years 0..=9999).
fn iso_millis(ms: i64) -> Option<String> {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let of_day = secs.rem_euclid(86_400);
    // Civil date from days since the epoch (proleptic Gregorian; H. Hinnant's algorithm).
    let z = days.checked_add(719_468)?;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    if !(0..=9999).contains(&year) {
        return None;
    }
    Some(format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        of_day / 3600,
        of_day % 3600 / 60,
        of_day % 60
    ))
}

/// `step_finish` tokens and cost → call usage (see the module docs).
fn step_usage(tokens: Option<Value>, cost: Option<&RawValue>) -> Option<TokenUsage> {
    let tokens = match tokens {
        Some(Value::Object(t)) => Some(t),
        _ => None,
    };
    let cost = cost.and_then(|c| c.get().parse::<f64>().ok()).filter(|c| c.is_finite());
    if tokens.is_none() && cost.is_none() {
        return None;
    }
    let empty = Map::new();
    let t = tokens.as_ref().unwrap_or(&empty);
    let count = |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_u64);
    let cache = t.get("cache").and_then(Value::as_object).unwrap_or(&empty);
    let cache_read = count(cache, "read");
    let cache_write = count(cache, "write");
    let prompt = count(t, "input").map(|i| i + cache_read.unwrap_or(0) + cache_write.unwrap_or(0));
    let completion = count(t, "output").map(|o| o + count(t, "reasoning").unwrap_or(0));
    Some(TokenUsage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        cached_tokens: cache_read,
        cost_usd: cost,
        extra: tokens.filter(|t| !t.is_empty()),
    })
}

fn tool_use(
    open: &mut HashSet<String>,
    part: Part<'_>,
    env: &Envelope,
    ctx: &DecodeContext,
    out: &mut Vec<OutputEvent>,
) -> LineOutcome {
    let Some(id) = part.call_id.as_deref().or(part.id.as_deref()).filter(|id| !id.is_empty()) else {
        return LineOutcome::UnexpectedShape;
    };
    let tool = part.tool.as_deref().filter(|t| !t.is_empty());
    let lower = tool.unwrap_or_default().to_lowercase();
    let mut state = match part.state {
        Some(Value::Object(state)) => state,
        _ => Map::new(),
    };
    let input = state.remove("input").filter(|v| !v.is_null());
    let empty = Map::new();
    let args = input.as_ref().and_then(Value::as_object).unwrap_or(&empty);
    let metadata = state.get("metadata").and_then(Value::as_object).unwrap_or(&empty);
    let status = str_field(&state, "status");

    let mut content = Vec::new();
    let mut locations = Vec::new();
    let title = describe(&lower, args, metadata, &mut content, &mut locations);
    let call = ToolCall {
        tool_call_id: id.to_string(),
        title: title.unwrap_or_else(|| match str_field(&state, "title").filter(|t| !t.is_empty()) {
            Some(t) => truncate_chars(t, MAX_TITLE_CHARS),
            None => tool.unwrap_or("Tool call").to_string(),
        }),
        tool_name: tool.map(str::to_string),
        kind: tool_kind(Agent::Opencode, tool.unwrap_or_default()),
        status: if status == Some("pending") { ToolCallStatus::Pending } else { ToolCallStatus::InProgress },
        raw_input: input.clone().map(RawJson::from),
        content: (!content.is_empty()).then_some(content),
        locations: (!locations.is_empty()).then_some(locations),
    };
    // A call announced by an earlier (pending/running) line is not announced again.
    let announced = open.contains(id);
    if !announced {
        env.emit(ctx, SessionUpdate::ToolCall(call), out);
    }

    if lower == "todowrite" {
        if let Some(entries) = todo_plan(args, &state) {
            env.emit(ctx, SessionUpdate::Plan { entries }, out);
        }
    }

    let outcome = match status {
        Some("pending") => None,
        Some("running") => Some(ToolCallStatus::InProgress),
        Some("error") => Some(ToolCallStatus::Failed),
        Some("completed") => Some(exit_status(metadata)),
        // No (known) status: a result is there when output or error is.
        _ if state.contains_key("error") => Some(ToolCallStatus::Failed),
        _ if state.contains_key("output") => Some(exit_status(metadata)),
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
        let text = match (status, state.get("error"), state.get("output")) {
            (ToolCallStatus::Failed, Some(e), _) if !e.is_null() => Some(e),
            (_, _, Some(o)) if !o.is_null() => Some(o),
            _ => None,
        };
        match text {
            Some(Value::String(s)) if !s.is_empty() => content.push(ToolCallContent::text(s.as_str())),
            Some(Value::String(_)) | None => {}
            Some(other) => content.push(ToolCallContent::text(other.to_string())),
        }
        attachments(state.get("attachments"), &mut content);
        update.content = (!content.is_empty()).then_some(content);
        update.raw_output = Some(RawJson::from(Value::Object(state)));
        env.emit(ctx, SessionUpdate::ToolCallUpdate(update), out);
    }
    LineOutcome::Decoded
}

/// `completed`, or `failed` when `metadata.exit` is a non-zero number.
fn exit_status(metadata: &Map<String, Value>) -> ToolCallStatus {
    match metadata.get("exit") {
        Some(Value::Number(n)) if n.as_f64() != Some(0.0) => ToolCallStatus::Failed,
        _ => ToolCallStatus::Completed,
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

/// Title (None = fall back to `state.title`), call content and locations per tool.
fn describe(
    tool: &str,
    args: &Map<String, Value>,
    metadata: &Map<String, Value>,
    content: &mut Vec<ToolCallContent>,
    locations: &mut Vec<ToolCallLocation>,
) -> Option<String> {
    let short = |s: &str| truncate_chars(s, MAX_TITLE_CHARS);
    let file = first_str(args, &["filePath", "path"]);
    let dir = first_str(args, &["path"]);
    match tool {
        "bash" => {
            if let Some(d) = first_str(args, &["description"]) {
                content.push(ToolCallContent::text(d));
            }
            first_str(args, &["command"]).map(command_title)
        }
        "read" => {
            if let Some(f) = file {
                let line = args.get("offset").and_then(Value::as_u64).filter(|n| *n > 0);
                locations.push(ToolCallLocation { path: f.to_string(), line });
            }
            file.map(|f| format!("Read {}", short(f)))
        }
        "write" => {
            if let Some(f) = file {
                locations.push(ToolCallLocation::path(f));
                let existed = metadata.get("exists").and_then(Value::as_bool) == Some(true);
                if let (Some(text), false) = (str_field(args, "content"), existed) {
                    content.push(ToolCallContent::Diff(DiffContent {
                        path: f.to_string(),
                        old_text: None,
                        new_text: text.to_string(),
                    }));
                }
            }
            file.map(|f| format!("Write {}", short(f)))
        }
        "edit" | "multiedit" => {
            if let Some(f) = file {
                locations.push(ToolCallLocation::path(f));
                let old = str_field(args, "oldString");
                let new = str_field(args, "newString");
                if tool == "edit" && (old.is_some() || new.is_some()) {
                    content.push(ToolCallContent::Diff(DiffContent {
                        path: f.to_string(),
                        old_text: Some(old.unwrap_or_default().to_string()),
                        new_text: new.unwrap_or_default().to_string(),
                    }));
                }
            }
            file.map(|f| format!("Edit {}", short(f)))
        }
        "glob" => {
            locations.extend(dir.map(ToolCallLocation::path));
            first_str(args, &["pattern"]).map(|p| format!("Find {}", short(p)))
        }
        "grep" => {
            locations.extend(dir.map(ToolCallLocation::path));
            first_str(args, &["pattern"]).map(|p| format!("grep \"{}\"", short(p)))
        }
        "list" => {
            locations.extend(dir.map(ToolCallLocation::path));
            Some(dir.map_or("List directory".into(), |d| format!("List {}", short(d))))
        }
        "webfetch" => first_str(args, &["url"]).map(|u| format!("Fetch {}", short(u))),
        "websearch" | "codesearch" => first_str(args, &["query"]).map(|q| format!("Search: {}", short(q))),
        "task" => Some(first_str(args, &["description"]).map_or("Task".into(), |d| format!("Task: {}", short(d)))),
        "todowrite" => Some("Update todos".into()),
        "todoread" => Some("Read todos".into()),
        "invalid" => Some(
            first_str(args, &["tool"])
                .map_or("Invalid tool call".into(), |t| format!("Invalid tool call: {}", short(t))),
        ),
        "skill" => first_str(args, &["name"]).map(|n| format!("Skill: {}", short(n))),
        "plan_enter" => Some("Enter plan mode".into()),
        "plan_exit" => Some("Exit plan mode".into()),
        _ => None,
    }
}

/// `todowrite` → plan entries from `input.todos`, else from `output` parsed as a JSON list.
fn todo_plan(args: &Map<String, Value>, state: &Map<String, Value>) -> Option<Vec<PlanEntry>> {
    let parsed;
    let todos = match args.get("todos") {
        Some(Value::Array(t)) => t,
        _ => {
            parsed = serde_json::from_str::<Vec<Value>>(str_field(state, "output")?).ok()?;
            &parsed
        }
    };
    Some(
        todos
            .iter()
            .filter_map(Value::as_object)
            .filter_map(|t| {
                let content = first_str(t, &["content"])?;
                let status = match str_field(t, "status") {
                    Some("in_progress" | "in-progress" | "running") => PlanEntryStatus::InProgress,
                    Some("completed" | "done" | "cancelled") => PlanEntryStatus::Completed,
                    _ => PlanEntryStatus::Pending,
                };
                let priority = PlanEntryPriority::from_wire(str_field(t, "priority"));
                Some(PlanEntry { content: content.to_string(), status, priority })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn millisecond_timestamps_become_iso_utc() {
        assert_eq!(iso_millis(0).as_deref(), Some("1970-01-01T00:00:00.000Z"));
        assert_eq!(iso_millis(1_796_221_316_202).as_deref(), Some("2026-12-02T14:21:56.202Z"));
        assert_eq!(iso_millis(951_782_400_000).as_deref(), Some("2000-02-29T00:00:00.000Z"));
        assert_eq!(iso_millis(-1).as_deref(), Some("1969-12-31T23:59:59.999Z"));
        assert_eq!(iso_millis(253_402_300_800_000), None); // year 10000
        assert_eq!(iso_millis(i64::MAX), None);
        let raw = RawValue::from_string("1796221316202.9".into()).unwrap();
        assert_eq!(timestamp(&raw).as_deref(), Some("2026-12-02T14:21:56.202Z"));
    }

    #[test]
    fn usage_adds_cache_to_input_and_reasoning_to_output() {
        let tokens =
            serde_json::json!({"total":1359,"input":250,"output":49,"reasoning":10,"cache":{"read":1050,"write":5}});
        let cost = RawValue::from_string("0.25".into()).unwrap();
        let u = step_usage(Some(tokens), Some(&*cost)).unwrap();
        assert_eq!(u.prompt_tokens, Some(1305));
        assert_eq!(u.cached_tokens, Some(1050));
        assert_eq!(u.completion_tokens, Some(59));
        assert_eq!(u.cost_usd, Some(0.25));
        assert_eq!(u.extra.unwrap()["total"], 1359);
    }
}
