//! Describing Droid's tool calls: title, content, locations and diffs per tool (the table in
//! [`super`]'s docs).

use crate::decode::Agent;
use crate::event::{DiffContent, PlanEntry, PlanEntryPriority, PlanEntryStatus, ToolCallContent, ToolCallLocation};
use crate::json::tree::Json;
use crate::tools::cat;
use crate::tools::{bound_title, command_title, normalize_name};

/// A TodoWrite `todos`: an array of `{content, status, priority}`, or droid's numbered text list
/// `1. [in_progress] Do x`. `None` when it does not parse (the call stays a tool call).
pub(super) fn todo_plan(todos: Option<&Json<'_>>) -> Option<Vec<PlanEntry>> {
    match todos? {
        Json::Arr(items) => {
            let entries: Vec<PlanEntry> = items
                .iter()
                .filter_map(|t| {
                    if !t.is_object() {
                        return None;
                    }
                    let content = t.get("content").and_then(Json::as_str).filter(|s| !s.is_empty())?;
                    let status = plan_status(t.get("status").and_then(Json::as_str).unwrap_or(""));
                    let priority = PlanEntryPriority::from_wire(t.get("priority").and_then(Json::as_str));
                    Some(PlanEntry { content: content.to_string(), status, priority })
                })
                .collect();
            (items.is_empty() || !entries.is_empty()).then_some(entries)
        }
        Json::Str(text) => plan_from_text(text),
        _ => None,
    }
}

pub(super) fn plan_status(s: &str) -> PlanEntryStatus {
    match s.trim().to_ascii_lowercase().as_str() {
        "in_progress" | "in-progress" | "in progress" => PlanEntryStatus::InProgress,
        "completed" | "done" | "x" => PlanEntryStatus::Completed,
        _ => PlanEntryStatus::Pending,
    }
}

/// `1. [in_progress] Write the plan` lines (numbered, bulleted or bare); every non-empty line
/// must have the `[status]` form.
pub(super) fn plan_from_text(text: &str) -> Option<Vec<PlanEntry>> {
    let mut entries = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let rest = line.trim_start_matches(|c: char| c.is_ascii_digit());
        let rest = if rest.len() < line.len() {
            rest.strip_prefix('.').or_else(|| rest.strip_prefix(')'))?
        } else {
            rest.strip_prefix("- ").or_else(|| rest.strip_prefix("* ")).unwrap_or(rest)
        };
        let rest = rest.trim_start().strip_prefix('[')?;
        let (status, content) = rest.split_once(']')?;
        let content = content.trim();
        if content.is_empty() {
            return None;
        }
        entries.push(PlanEntry {
            content: content.to_string(),
            status: plan_status(status),
            priority: PlanEntryPriority::Medium,
        });
    }
    (!entries.is_empty()).then_some(entries)
}

/// Title, content (diffs) and locations of a call from its name and input.
pub(super) fn describe(name: &str, args: Option<&Json<'_>>) -> (String, Vec<ToolCallContent>, Vec<ToolCallLocation>) {
    let get = |k: &str| args.and_then(|a| a.str_of(k));
    let path = get("file_path").or_else(|| get("path")).or_else(|| get("filePath")).or_else(|| get("absolute_path"));
    let dir = get("directory_path").or_else(|| get("folder"));
    let mut content = Vec::new();
    let mut locations = Vec::new();
    if let Some(p) = path.or(dir) {
        locations.push(ToolCallLocation::path(p));
    }
    let file = path.unwrap_or("file");
    let key = normalize_name(Agent::Droid, name);
    let title = match key.as_str() {
        "read" => cat(&["Read ", file]),
        "ls" => dir.or(path).map(|d| cat(&["List ", d])).unwrap_or_else(|| "List directory".to_string()),
        "glob" => {
            let patterns = match args.and_then(|a| a.get("patterns")) {
                Some(Json::Arr(items)) => items.iter().filter_map(Json::as_str).collect::<Vec<_>>().join(", "),
                _ => get("pattern").unwrap_or("").to_string(),
            };
            if patterns.is_empty() { "Find files".to_string() } else { cat(&["Find ", &patterns]) }
        }
        "grep" => get("pattern").map(|p| cat(&["grep \"", p, "\""])).unwrap_or_else(|| "grep".to_string()),
        "create" | "write" => {
            if let (Some(p), Some(text)) = (path, get_any_str(args, "content")) {
                content.push(ToolCallContent::Diff(DiffContent {
                    path: p.to_string(),
                    old_text: None,
                    new_text: text,
                }));
            }
            cat(&[if key == "create" { "Create " } else { "Write " }, file])
        }
        "edit" | "multiedit" => {
            if let Some(p) = path {
                let list: &[Json<'_>] = match args.and_then(|a| a.get("edits")) {
                    Some(Json::Arr(items)) => items,
                    _ => args.map(std::slice::from_ref).unwrap_or_default(),
                };
                for edit in list.iter().filter(|e| e.is_object()) {
                    let old = edit.get("old_str").or_else(|| edit.get("old_string")).and_then(Json::as_str);
                    let new = edit.get("new_str").or_else(|| edit.get("new_string")).and_then(Json::as_str);
                    if let (Some(old), Some(new)) = (old, new) {
                        content.push(ToolCallContent::Diff(DiffContent {
                            path: p.to_string(),
                            old_text: Some(old.to_string()),
                            new_text: new.to_string(),
                        }));
                    }
                }
            }
            cat(&["Edit ", file])
        }
        "applypatch" => "Apply patch".to_string(),
        "execute" | "executecli" | "bash" => {
            get("command").map(command_title).unwrap_or_else(|| "Run command".to_string())
        }
        "fetchurl" | "webfetch" => get("url").map(|u| cat(&["Fetch ", u])).unwrap_or_else(|| "Web fetch".to_string()),
        "websearch" => get("query").map(|q| cat(&["\"", q, "\""])).unwrap_or_else(|| "Web search".to_string()),
        "task" => get("description").unwrap_or("Subagent task").to_string(),
        "todowrite" => "Update todos".to_string(),
        "toolsearch" => get("query").map(|q| cat(&["Search tools: ", q])).unwrap_or_else(|| "Search tools".to_string()),
        "skill" => {
            get("skill").or_else(|| get("name")).map(|s| cat(&["Skill ", s])).unwrap_or_else(|| "Skill".to_string())
        }
        "taskoutput" => task_title("Task output", args),
        "taskstop" => task_title("Stop task", args),
        "exitspecmode" => "Exit spec mode".to_string(),
        "exitplanmode" => "Exit plan mode".to_string(),
        _ => match name.split_once("___") {
            Some((server, tool)) if !server.is_empty() && !tool.is_empty() => cat(&[server, ": ", tool]),
            _ if name.is_empty() => "Tool call".to_string(),
            _ => match path.or_else(|| get("command")).or_else(|| get("url")) {
                Some(what) => cat(&[name, " ", what]),
                None => name.to_string(),
            },
        },
    };
    (bound_title(title), content, locations)
}

pub(super) fn get_any_str(args: Option<&Json<'_>>, key: &str) -> Option<String> {
    args.and_then(|a| a.get(key)).and_then(Json::as_str).map(str::to_string)
}

pub(super) fn task_title(label: &str, args: Option<&Json<'_>>) -> String {
    let id = args.and_then(|a| ["task_id", "taskId", "id"].iter().find_map(|k| a.get(k).and_then(Json::as_str)));
    match id {
        Some(id) if !id.is_empty() => cat(&[label, " ", id]),
        _ => label.to_string(),
    }
}
