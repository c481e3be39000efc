//! Describing Gemini CLI's tool calls: title, content, locations and diffs per tool (the table in
//! [`super`]'s docs).

use std::borrow::Cow;

use super::wire::*;
use crate::event::{DiffContent, PlanEntry, PlanEntryPriority, PlanEntryStatus, ToolCallContent, ToolCallLocation};
use crate::tools::cut_title;
use crate::tools::{MAX_TITLE_CHARS, command_title};

/// The first of `fields` that holds a non-empty string.
pub(super) fn first<'p>(fields: &[&'p Option<Cow<'_, str>>]) -> Option<&'p str> {
    fields.iter().find_map(|f| f.as_deref().filter(|s| !s.is_empty()))
}

/// Title, content and locations of a call, from its name and parameters.
pub(super) struct Shape {
    pub(super) title: String,
    pub(super) content: Vec<ToolCallContent>,
    pub(super) locations: Vec<ToolCallLocation>,
}

pub(super) fn describe(name: &str, mut p: Params<'_>) -> Shape {
    let mut content = Vec::new();
    let mut locations = Vec::new();
    let path = first(&[&p.file_path, &p.absolute_path, &p.path]);
    let dir = first(&[&p.dir_path, &p.path, &p.directory]);
    let title = match name {
        "read_file" => {
            locations.extend(path.map(ToolCallLocation::path));
            path.map_or("Read file".into(), |f| cut_title("Read ", f, MAX_TITLE_CHARS, ""))
        }
        "read_many_files" => {
            let patterns: Vec<&str> = [&p.include, &p.paths, &p.file_paths]
                .into_iter()
                .filter_map(Option::as_ref)
                .flatten()
                .map(|s| s.as_ref())
                .collect();
            locations.extend(patterns.iter().copied().map(ToolCallLocation::path));
            if patterns.is_empty() { "Read multiple files".into() } else { format!("Read {} files", patterns.len()) }
        }
        "write_file" => {
            if let Some(f) = path {
                locations.push(ToolCallLocation::path(f));
                if let Some(text) = p.content.take() {
                    content.push(ToolCallContent::Diff(DiffContent {
                        path: f.to_string(),
                        old_text: None,
                        new_text: text.into_owned(),
                    }));
                }
            }
            path.map_or("Write file".into(), |f| cut_title("Write ", f, MAX_TITLE_CHARS, ""))
        }
        "replace" | "edit" | "edit_file" => {
            if let Some(f) = path {
                locations.push(ToolCallLocation::path(f));
                if p.old_string.is_some() || p.new_string.is_some() {
                    content.push(ToolCallContent::Diff(DiffContent {
                        path: f.to_string(),
                        old_text: Some(p.old_string.take().map(Cow::into_owned).unwrap_or_default()),
                        new_text: p.new_string.take().map(Cow::into_owned).unwrap_or_default(),
                    }));
                }
            }
            path.map_or("Edit file".into(), |f| cut_title("Edit ", f, MAX_TITLE_CHARS, ""))
        }
        "run_shell_command" | "shell" => {
            if let Some(d) = first(&[&p.description]) {
                content.push(ToolCallContent::text(d));
            }
            first(&[&p.command]).map_or("Run command".into(), command_title)
        }
        "glob" => {
            locations.extend(dir.map(ToolCallLocation::path));
            first(&[&p.pattern]).map_or("Find files".into(), |s| cut_title("Find ", s, MAX_TITLE_CHARS, ""))
        }
        "grep_search" | "grep" | "search_file_content" => {
            locations.extend(dir.map(ToolCallLocation::path));
            first(&[&p.pattern, &p.query])
                .map_or("Search files".into(), |s| cut_title("grep \"", s, MAX_TITLE_CHARS, "\""))
        }
        "list_directory" => {
            locations.extend(dir.map(ToolCallLocation::path));
            dir.map_or("List directory".into(), |d| cut_title("List ", d, MAX_TITLE_CHARS, ""))
        }
        "google_web_search" | "web_search" | "brave_web_search" => {
            first(&[&p.query]).map_or("Web search".into(), |q| cut_title("Search: ", q, MAX_TITLE_CHARS, ""))
        }
        "web_fetch" => first(&[&p.prompt, &p.url]).map_or("Web fetch".into(), |s| cut_title("Fetch: ", s, 50, "")),
        "invoke_agent" | "delegate_to_agent" => {
            first(&[&p.agent_name, &p.agent_name_camel, &p.agent, &p.name, &p.subagent_type])
                .map_or("Invoke agent".into(), |a| cut_title("Agent: ", a, MAX_TITLE_CHARS, ""))
        }
        "write_todos" => "Update todos".into(),
        "update_topic" => first(&[&p.title, &p.topic, &p.name])
            .map_or("Update topic".into(), |t| cut_title("Topic: ", t, MAX_TITLE_CHARS, "")),
        "save_memory" => first(&[&p.fact]).map_or("Save memory".into(), |f| cut_title("Remember: \"", f, 40, "\"")),
        "activate_skill" => first(&[&p.name, &p.skill])
            .map_or("Activate skill".into(), |s| cut_title("Activate skill: ", s, MAX_TITLE_CHARS, "")),
        "enter_plan_mode" => "Enter plan mode".into(),
        "exit_plan_mode" => "Exit plan mode".into(),
        "list_background_processes" => "List background processes".into(),
        "read_background_output" => "Read background output".into(),
        "" => "Tool call".into(),
        other => other.to_string(),
    };
    Shape { title, content, locations }
}

/// `write_todos` parameters → plan entries, or `None` when there is no todo list to show.
pub(super) fn todo_plan(p: &Params<'_>) -> Option<Vec<PlanEntry>> {
    let todos = p.todos.as_ref()?;
    Some(
        todos
            .iter()
            .filter_map(|t| t.0.as_ref())
            .filter_map(|t| {
                let content = first(&[&t.description, &t.content, &t.text])?;
                let status = match t.status.as_deref() {
                    Some("in_progress" | "in-progress") => PlanEntryStatus::InProgress,
                    Some("completed" | "done" | "cancelled") => PlanEntryStatus::Completed,
                    _ => PlanEntryStatus::Pending,
                };
                let priority = PlanEntryPriority::from_wire(t.priority.as_deref());
                Some(PlanEntry { content: content.to_string(), status, priority })
            })
            .collect(),
    )
}
