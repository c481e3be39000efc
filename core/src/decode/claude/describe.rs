//! Describing Claude Code's tool calls: title, content and locations per tool (the table in
//! [`super`]'s docs).

use serde_json::Value;

use crate::decode::Agent;
use crate::decode::stream_json::{ToolUse, diff, glob_title, mcp_title, read_title, web_search_title};
use crate::event::{ToolCallContent, ToolCallLocation};
use crate::json::lenient::display_text;
use crate::tools::{command_title, tool_kind};

/// Push the non-empty string argument `key` as text content.
pub(super) fn text_content(key: &str, call: &ToolUse<'_>, content: &mut Vec<ToolCallContent>) {
    if let Some(t) = call.str(key) {
        content.push(ToolCallContent::text(t));
    }
}

/// The `tool_call` of a non-plan tool (see the module table).
pub(super) fn tool_call(call: ToolUse<'_>) -> crate::event::ToolCall {
    let name = call.name;
    let kind = tool_kind(Agent::Claude, name);
    let mut content = Vec::new();
    let mut locations = Vec::new();
    let title = match name {
        "Task" | "Agent" => {
            text_content("prompt", &call, &mut content);
            call.str("description").unwrap_or(name).to_string()
        }
        "Bash" => {
            text_content("description", &call, &mut content);
            call.str("command").map(command_title).unwrap_or_else(|| "Terminal".into())
        }
        "BashOutput" => "Tail Logs".into(),
        "KillShell" => "Kill Process".into(),
        "TaskOutput" => "Task Output".into(),
        "TaskStop" => "Stop Task".into(),
        "Read" => {
            let path = call.str("file_path");
            let offset = call.uint("offset");
            if let Some(p) = path {
                locations.push(ToolCallLocation { path: p.to_string(), line: offset });
            }
            read_title(path, offset, call.uint("limit"), "File")
        }
        "NotebookRead" | "NotebookEdit" => {
            let path = call.str("notebook_path");
            if let Some(p) = path {
                locations.push(ToolCallLocation::path(p));
            }
            let verb = if name == "NotebookRead" { "Read" } else { "Edit" };
            if name == "NotebookEdit" {
                text_content("new_source", &call, &mut content);
            }
            match path {
                Some(p) => format!("{verb} Notebook {p}"),
                None => format!("{verb} Notebook"),
            }
        }
        "LS" => match call.str("path") {
            Some(p) => {
                locations.push(ToolCallLocation::path(p));
                format!("List `{p}` directory")
            }
            None => "List current directory".into(),
        },
        "Edit" | "MultiEdit" => {
            let path = call.str("file_path");
            if let Some(p) = path {
                if name == "Edit" {
                    content.push(diff(p, call.str("old_string"), call.str("new_string")));
                } else if let Some(Value::Array(edits)) = call.value("edits") {
                    for e in edits.iter().filter_map(Value::as_object) {
                        let s = |k: &str| e.get(k).and_then(Value::as_str);
                        content.push(diff(p, s("old_string"), s("new_string")));
                    }
                }
                locations.push(ToolCallLocation::path(p));
            }
            path.map(|p| format!("Edit `{p}`")).unwrap_or_else(|| "Edit".into())
        }
        "Write" => {
            let path = call.str("file_path");
            if let Some(p) = path {
                content.push(diff(p, None, call.str_any("content")));
                locations.push(ToolCallLocation::path(p));
            }
            path.map(|p| format!("Write {p}")).unwrap_or_else(|| "Write".into())
        }
        "Glob" => {
            let path = call.str("path");
            if let Some(p) = path {
                locations.push(ToolCallLocation::path(p));
            }
            glob_title(path, call.str("pattern"))
        }
        "Grep" => grep_title(&call),
        "WebFetch" => {
            text_content("prompt", &call, &mut content);
            call.str("url").map(|u| format!("Fetch {u}")).unwrap_or_else(|| "Fetch".into())
        }
        "WebSearch" => web_search_title(&call),
        "TodoWrite" => "Update TODOs".into(),
        "ExitPlanMode" => {
            text_content("plan", &call, &mut content);
            "Ready to code?".into()
        }
        "EnterPlanMode" => "Enter plan mode".into(),
        "Skill" => call.str("skill").map(|s| format!("Skill {s}")).unwrap_or_else(|| name.into()),
        _ => mcp_title(name).unwrap_or_else(|| if name.is_empty() { "Unknown Tool".into() } else { name.into() }),
    };
    call.call(title, kind, content, locations)
}

/// `grep` with the Grep tool's flags, the quoted pattern and the path.
pub(super) fn grep_title(call: &ToolUse<'_>) -> String {
    let mut title = String::from("grep");
    if call.flag("-i") {
        title.push_str(" -i");
    }
    if call.flag("-n") {
        title.push_str(" -n");
    }
    for k in ["-A", "-B", "-C"] {
        if let Some(v) = call.value(k).filter(|v| !v.is_null()) {
            title.push_str(&format!(" {k} {}", display_text(&v)));
        }
    }
    match call.str("output_mode") {
        Some("files_with_matches") => title.push_str(" -l"),
        Some("count") => title.push_str(" -c"),
        _ => {}
    }
    if let Some(g) = call.str("glob") {
        title.push_str(&format!(" --include=\"{g}\""));
    }
    if let Some(t) = call.str("type") {
        title.push_str(&format!(" --type={t}"));
    }
    if call.flag("multiline") {
        title.push_str(" -P");
    }
    title.push_str(&format!(" \"{}\"", call.str("pattern").unwrap_or_default()));
    if let Some(p) = call.str("path") {
        title.push_str(&format!(" {p}"));
    }
    if let Some(n) = call.uint("head_limit") {
        title.push_str(&format!(" | head -{n}"));
    }
    title
}
