//! Describing Kimi CLI's tool calls: title, content, locations and diffs per tool (the table in
//! [`super`]'s docs).

use super::wire::*;
use crate::event::{DiffContent, PlanEntry, PlanEntryPriority, PlanEntryStatus, ToolCallContent, ToolCallLocation};
use crate::json::tree::Json;
use crate::tools::cat;
use crate::tools::{bound_title, command_title};

/// A SetTodoList / TodoList `todos` array as plan entries; `None` when it is not an array or no
/// entry has a title (then the call is shown as an ordinary tool call).
pub(super) fn todo_plan(todos: Option<&Json<'_>>) -> Option<Vec<PlanEntry>> {
    let todos = todos?.as_array()?;
    let entries: Vec<PlanEntry> = todos
        .iter()
        .filter_map(|t| {
            if !t.is_object() {
                return None;
            }
            let content =
                t.get("title").or_else(|| t.get("content")).and_then(Json::as_str).filter(|s| !s.is_empty())?;
            let status = match t.get("status").and_then(Json::as_str).unwrap_or("") {
                "in_progress" | "in-progress" => PlanEntryStatus::InProgress,
                "done" | "completed" => PlanEntryStatus::Completed,
                _ => PlanEntryStatus::Pending,
            };
            Some(PlanEntry { content: content.to_string(), status, priority: PlanEntryPriority::Medium })
        })
        .collect();
    (todos.is_empty() || !entries.is_empty()).then_some(entries)
}

/// The diffs of a Write (`content`, unless `mode` is `append`) or an Edit / StrReplaceFile
/// (`edit` is one `{old, new}` or a list of them; an Edit in the Claude style carries
/// `old_string` / `new_string` at the top level). Their texts are moved out of `args`: an
/// unescaped text (a file's content nearly always is) is not copied again.
pub(super) fn diffs(name: &str, args: &mut CallInput<'_>) -> Vec<ToolCallContent> {
    if !matches!(name, "Write" | "WriteFile" | "Edit" | "StrReplaceFile") {
        return Vec::new();
    }
    let Some(path) = args.str_of("path").or_else(|| args.str_of("file_path")).map(str::to_string) else {
        return Vec::new();
    };
    let diff = |path: String, old_text: Option<String>, new_text: String| {
        ToolCallContent::Diff(DiffContent { path, old_text, new_text })
    };
    // (The path is copied out first: the texts are then taken from `args`.)
    match name {
        "Write" | "WriteFile" if args.str_of("mode") != Some("append") => {
            args.take("content").and_then(into_string).map(|text| vec![diff(path, None, text)]).unwrap_or_default()
        }
        "Edit" | "StrReplaceFile" => match args.take("edit").or_else(|| args.take("edits")) {
            Some(Json::Arr(items)) => {
                let mut content = Vec::with_capacity(items.len());
                for mut edit in items {
                    if let Some((old, new)) = edit_texts(|k| take_member(&mut edit, k)) {
                        content.push(diff(path.clone(), Some(old), new));
                    }
                }
                content
            }
            Some(mut one @ Json::Obj(_)) => edit_texts(|k| take_member(&mut one, k))
                .map(|(old, new)| vec![diff(path, Some(old), new)])
                .unwrap_or_default(),
            _ => edit_texts(|k| args.take(k)).map(|(old, new)| vec![diff(path, Some(old), new)]).unwrap_or_default(),
        },
        _ => Vec::new(),
    }
}

/// The old and new text of one edit, taken from its members by `take` (`old` / `old_string`,
/// `new` / `new_string`: the first present counts, and must be a string).
pub(super) fn edit_texts<'j>(mut take: impl FnMut(&str) -> Option<Json<'j>>) -> Option<(String, String)> {
    let old = take("old").or_else(|| take("old_string")).and_then(into_string)?;
    let new = take("new").or_else(|| take("new_string")).and_then(into_string)?;
    Some((old, new))
}

/// A string value as an owned string (moved when it was unescaped).
pub(super) fn into_string(value: Json<'_>) -> Option<String> {
    match value {
        Json::Str(text) => Some(text.into_owned()),
        _ => None,
    }
}

/// Take the value of `key` out of an object (the last one printed, as `Value` reads it).
pub(super) fn take_member<'j>(object: &mut Json<'j>, key: &str) -> Option<Json<'j>> {
    match object {
        Json::Obj(entries) => {
            entries.iter_mut().rev().find(|(k, _)| k == key).map(|(_, v)| std::mem::replace(v, Json::Null))
        }
        _ => None,
    }
}

/// Title, content (diffs) and locations of a call from its name and input (the texts of its
/// diffs are moved out of `args`).
pub(super) fn describe(
    name: &str,
    mut args: Option<&mut CallInput<'_>>,
) -> (String, Vec<ToolCallContent>, Vec<ToolCallLocation>) {
    let content = args.as_deref_mut().map(|a| diffs(name, a)).unwrap_or_default();
    let args = args.as_deref();
    let get = |k: &str| args.and_then(|a| a.str_of(k));
    let path = get("path").or_else(|| get("file_path"));
    let mut locations = Vec::new();
    if let Some(p) = path {
        let line = if matches!(name, "Read" | "ReadFile") {
            args.and_then(|a| a.get("line_offset")).and_then(Json::as_u64).filter(|n| *n >= 1)
        } else {
            None
        };
        locations = vec![ToolCallLocation { path: p.to_string(), line }];
    }
    let file = path.unwrap_or("file");
    let title = match name {
        "Read" | "ReadFile" => cat(&["Read ", file]),
        "ReadMediaFile" => cat(&["Read media ", file]),
        "Write" | "WriteFile" => cat(&["Write ", file]),
        "Edit" | "StrReplaceFile" => cat(&["Edit ", file]),
        "Bash" | "Shell" => get("command").map(command_title).unwrap_or_else(|| "Run command".to_string()),
        "Glob" => {
            if locations.is_empty() {
                if let Some(dir) = get("directory") {
                    locations.push(ToolCallLocation::path(dir));
                }
            }
            get("pattern").map(|p| cat(&["Find ", p])).unwrap_or_else(|| "Find files".to_string())
        }
        "Grep" => get("pattern").map(|p| cat(&["grep \"", p, "\""])).unwrap_or_else(|| "grep".to_string()),
        "WebSearch" | "SearchWeb" => {
            get("query").map(|q| cat(&["\"", q, "\""])).unwrap_or_else(|| "Web search".to_string())
        }
        "FetchURL" => get("url").map(|u| cat(&["Fetch ", u])).unwrap_or_else(|| "Web fetch".to_string()),
        "Agent" | "AgentSwarm" | "Task" => get("description").unwrap_or("Subagent task").to_string(),
        "Think" => get("thought").unwrap_or("Thinking").to_string(),
        "CreateSubagent" => {
            get("name").map(|n| cat(&["Subagent: ", n])).unwrap_or_else(|| "Create subagent".to_string())
        }
        "SetTodoList" | "TodoList" => "Update todos".to_string(),
        "TaskOutput" => get("task_id").map(|t| cat(&["Task output ", t])).unwrap_or_else(|| "Task output".to_string()),
        "TaskStop" => get("task_id").map(|t| cat(&["Stop task ", t])).unwrap_or_else(|| "Stop task".to_string()),
        "TaskList" => "List tasks".to_string(),
        "EnterPlanMode" => "Enter plan mode".to_string(),
        "ExitPlanMode" => "Exit plan mode".to_string(),
        "" => "Tool call".to_string(),
        other => other.to_string(),
    };
    (bound_title(title), content, locations)
}
