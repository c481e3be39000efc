//! Describing OpenCode's tool calls: title, content, locations and diffs per tool (the table in
//! [`super`]'s docs).

use std::borrow::Cow;

use serde_json::Value;

use super::wire::*;
use crate::decode::Agent;
use crate::event::ToolKind;
use crate::event::{DiffContent, PlanEntry, PlanEntryPriority, PlanEntryStatus, ToolCallContent, ToolCallLocation};
use crate::json::lenient::{first_str, str_field};
use crate::tools::cut_title;
use crate::tools::{MAX_TITLE_CHARS, command_title, kind_table};

/// The kind of an opencode tool, from its lowercased name (the table in `tools.rs`).
pub(super) fn kind_of(lower: &str) -> ToolKind {
    kind_table(Agent::Opencode).iter().find(|(n, _)| *n == lower).map_or(ToolKind::Other, |(_, k)| *k)
}

/// The first of `fields` that holds a non-empty string.
pub(super) fn first<'p>(fields: &[&'p Option<Cow<'_, str>>]) -> Option<&'p str> {
    fields.iter().find_map(|f| f.as_deref().filter(|s| !s.is_empty()))
}

/// Title (None = fall back to `state.title`), call content and locations per tool.
pub(super) fn describe(
    tool: &str,
    mut args: Args<'_>,
    meta: &Meta,
    content: &mut Vec<ToolCallContent>,
    locations: &mut Vec<ToolCallLocation>,
) -> Option<String> {
    let file = first(&[&args.file_path, &args.path]);
    let dir = first(&[&args.path]);
    match tool {
        "bash" => {
            if let Some(d) = first(&[&args.description]) {
                content.push(ToolCallContent::text(d));
            }
            first(&[&args.command]).map(command_title)
        }
        "read" => {
            if let Some(f) = file {
                let line = args.offset.filter(|n| *n > 0);
                locations.push(ToolCallLocation { path: f.to_string(), line });
            }
            file.map(|f| cut_title("Read ", f, MAX_TITLE_CHARS, ""))
        }
        "write" => {
            if let Some(f) = file {
                locations.push(ToolCallLocation::path(f));
                if let (Some(text), false) = (args.content.take(), meta.existed) {
                    content.push(ToolCallContent::Diff(DiffContent {
                        path: f.to_string(),
                        old_text: None,
                        new_text: text.into_owned(),
                    }));
                }
            }
            file.map(|f| cut_title("Write ", f, MAX_TITLE_CHARS, ""))
        }
        "edit" | "multiedit" => {
            if let Some(f) = file {
                locations.push(ToolCallLocation::path(f));
                if tool == "edit" && (args.old_string.is_some() || args.new_string.is_some()) {
                    content.push(ToolCallContent::Diff(DiffContent {
                        path: f.to_string(),
                        old_text: Some(args.old_string.take().map(Cow::into_owned).unwrap_or_default()),
                        new_text: args.new_string.take().map(Cow::into_owned).unwrap_or_default(),
                    }));
                }
            }
            file.map(|f| cut_title("Edit ", f, MAX_TITLE_CHARS, ""))
        }
        "glob" => {
            locations.extend(dir.map(ToolCallLocation::path));
            first(&[&args.pattern]).map(|p| cut_title("Find ", p, MAX_TITLE_CHARS, ""))
        }
        "grep" => {
            locations.extend(dir.map(ToolCallLocation::path));
            first(&[&args.pattern]).map(|p| cut_title("grep \"", p, MAX_TITLE_CHARS, "\""))
        }
        "list" => {
            locations.extend(dir.map(ToolCallLocation::path));
            Some(dir.map_or("List directory".into(), |d| cut_title("List ", d, MAX_TITLE_CHARS, "")))
        }
        "webfetch" => first(&[&args.url]).map(|u| cut_title("Fetch ", u, MAX_TITLE_CHARS, "")),
        "websearch" | "codesearch" => first(&[&args.query]).map(|q| cut_title("Search: ", q, MAX_TITLE_CHARS, "")),
        "task" => {
            Some(first(&[&args.description]).map_or("Task".into(), |d| cut_title("Task: ", d, MAX_TITLE_CHARS, "")))
        }
        "todowrite" => Some("Update todos".into()),
        "todoread" => Some("Read todos".into()),
        "invalid" => Some(
            first(&[&args.tool])
                .map_or("Invalid tool call".into(), |t| cut_title("Invalid tool call: ", t, MAX_TITLE_CHARS, "")),
        ),
        "skill" => first(&[&args.name]).map(|n| cut_title("Skill: ", n, MAX_TITLE_CHARS, "")),
        "plan_enter" => Some("Enter plan mode".into()),
        "plan_exit" => Some("Exit plan mode".into()),
        _ => None,
    }
}

/// `todowrite` → plan entries from `input.todos`, else from `output` parsed as a JSON list.
pub(super) fn todo_plan(args: &Args<'_>, state: &State<'_>) -> Option<Vec<PlanEntry>> {
    let status_of = |status: Option<&str>| match status {
        Some("in_progress" | "in-progress" | "running") => PlanEntryStatus::InProgress,
        Some("completed" | "done" | "cancelled") => PlanEntryStatus::Completed,
        _ => PlanEntryStatus::Pending,
    };
    if let Some(todos) = &args.todos.0 {
        return Some(
            todos
                .iter()
                .filter_map(|t| t.0.as_ref())
                .filter_map(|t| {
                    let content = first(&[&t.content])?;
                    let priority = PlanEntryPriority::from_wire(t.priority.as_deref());
                    Some(PlanEntry { content: content.to_string(), status: status_of(t.status.as_deref()), priority })
                })
                .collect(),
        );
    }
    let output = state.get("output").and_then(string_of)?;
    let todos = serde_json::from_str::<Vec<Value>>(&output).ok()?;
    Some(
        todos
            .iter()
            .filter_map(Value::as_object)
            .filter_map(|t| {
                let content = first_str(t, &["content"])?;
                let priority = PlanEntryPriority::from_wire(str_field(t, "priority"));
                Some(PlanEntry { content: content.to_string(), status: status_of(str_field(t, "status")), priority })
            })
            .collect(),
    )
}
