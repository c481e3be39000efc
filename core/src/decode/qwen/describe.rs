//! Describing Qwen Code's tool calls: title, content and locations per tool (the table in
//! [`super`]'s docs).

use crate::decode::Agent;
use crate::decode::stream_json::{ToolUse, diff, glob_title, mcp_title, read_title, web_search_title};
use crate::event::{ToolCall, ToolCallContent, ToolCallLocation};
use crate::tools::{command_title, tool_kind};

/// Push the non-empty string argument `key` as text content.
pub(super) fn text_arg(call: &ToolUse<'_>, key: &str, content: &mut Vec<ToolCallContent>) {
    if let Some(t) = call.str(key) {
        content.push(ToolCallContent::text(t));
    }
}

/// The `tool_call` of a non-plan tool (see the module table).
pub(super) fn tool_call(call: ToolUse<'_>) -> ToolCall {
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
