//! Describing Codex's tool calls: title, content, locations and diffs per tool (the table in
//! [`super`]'s docs).

use std::borrow::Cow;

use serde_json::Value;

use super::wire::*;
use crate::decode::Agent;
use crate::event::{ToolCall, ToolCallLocation, ToolCallStatus};
use crate::json::lenient::str_field;
use crate::json::raw_record::raw_members;
use crate::json::scan::{Scan, read_obj};
use crate::tools::cut_title;
use crate::tools::{MAX_TITLE_CHARS, command_title, tool_kind};

/// The changes of a `file_change` item that name a path: their locations, in order, and the
/// kind of the first (for the title of a single change).
#[derive(Default)]
pub(super) struct FileChanges<'a> {
    pub(super) locations: Vec<ToolCallLocation>,
    pub(super) first_kind: Text<'a>,
}

impl<'a> FileChanges<'a> {
    /// Read the changes kept as printed in `raw` (absent or `null`: none).
    pub(crate) fn read(raw: &'a str) -> Self {
        let Some(raw) = present(raw) else { return FileChanges::default() };
        // Read as `json::ObjList` reads a list of objects (see `scan::read_obj_list`), straight
        // into the locations.
        let mut changes = FileChanges::default();
        let mut r = Scan::new(raw);
        let read = if r.peek() == Some(b'[') {
            r.array(|r| {
                if let Some(mut c) = read_obj(r, read_change)? {
                    changes.add(c.path.take(), c.kind.take());
                }
                Ok(())
            })
        } else {
            r.opt_str().map(drop)
        };
        if read.and_then(|()| r.end()).is_ok() {
            return changes;
        }
        // A change printing a key twice: read it the way a JSON reader would (last value).
        let mut changes = FileChanges::default();
        if let Ok(Value::Array(list)) = serde_json::from_str::<Value>(raw) {
            for c in list.iter().filter_map(Value::as_object) {
                let owned = |k: &str| str_field(c, k).map(|s| Cow::Owned(s.to_string()));
                changes.add(owned("path"), owned("kind"));
            }
        }
        changes
    }

    /// One more change, kept when it names a path.
    pub(crate) fn add(&mut self, path: Option<Cow<'a, str>>, kind: Option<Cow<'a, str>>) {
        let Some(path) = path.filter(|p| !p.is_empty()) else { return };
        if self.locations.is_empty() {
            self.first_kind = Text::new(kind);
        }
        self.locations.push(ToolCallLocation::path(path));
    }

    pub(crate) fn title(&self) -> String {
        match self.locations.as_slice() {
            [] => "Edit files".to_string(),
            [one] => {
                let verb = match self.first_kind.get() {
                    Some("add") => "Create",
                    Some("delete") => "Delete",
                    _ => "Edit",
                };
                let mut title = String::with_capacity(verb.len() + 1 + one.path.len());
                title.push_str(verb);
                title.push(' ');
                title.push_str(&one.path);
                title
            }
            many => format!("Edit {} files", many.len()),
        }
    }

    /// The locations, `None` when there are none.
    pub(crate) fn into_locations(self) -> Option<Vec<ToolCallLocation>> {
        (!self.locations.is_empty()).then_some(self.locations)
    }
}

/// Codex's own MCP helpers, shown as `mcp_tool_call` items but not tools of the named server.
pub(super) const MCP_HELPERS: &[&str] = &["list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"];

pub(super) fn mcp_tool_name(server: Option<&str>, tool: Option<&str>) -> Option<String> {
    let tool = tool.filter(|t| !t.is_empty())?;
    match server.filter(|s| !s.is_empty()) {
        Some(server) if !MCP_HELPERS.contains(&tool) => Some(format!("mcp__{server}__{tool}")),
        _ => Some(tool.to_string()),
    }
}

/// The search query of a `web_search` item: `query`, else `action.query`.
pub(super) fn search_query<'a>(item: &Item<'a>) -> Option<Cow<'a, str>> {
    if let Some(q) = string_value(item.query).filter(|q| !q.is_empty()) {
        return Some(q);
    }
    let action = serde_json::from_str::<Value>(present(item.action)?).ok()?;
    let query = action.get("query")?.as_str().filter(|q| !q.is_empty())?;
    Some(Cow::Owned(query.to_string()))
}

pub(super) fn search_title(query: Option<&str>) -> String {
    match query {
        Some(q) => cut_title("Search: ", q, MAX_TITLE_CHARS, ""),
        None => "Web search".to_string(),
    }
}

/// Peel a `/bin/bash -lc '<script>'` wrapper off a command, for titles.
pub(super) fn unwrap_shell(command: &str) -> Cow<'_, str> {
    const SHELLS: &[&str] = &["/bin/bash", "/usr/bin/bash", "bash", "/bin/zsh", "/usr/bin/zsh", "zsh", "/bin/sh", "sh"];
    for shell in SHELLS {
        let Some(rest) =
            command.strip_prefix(shell).and_then(|r| r.strip_prefix(" -lc ").or_else(|| r.strip_prefix(" -c ")))
        else {
            continue;
        };
        let rest = rest.trim();
        if let Some(inner) = rest.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')) {
            // POSIX single quotes: `'\''` is an escaped quote; any other quote means several words.
            if !inner.contains('\'') {
                return Cow::Borrowed(inner);
            }
            if inner.replace("'\\''", "").contains('\'') {
                return Cow::Borrowed(command);
            }
            return Cow::Owned(inner.replace("'\\''", "'"));
        }
        if !rest.is_empty() && !rest.contains(['\'', '"']) {
            return Cow::Borrowed(rest);
        }
        return Cow::Borrowed(command);
    }
    Cow::Borrowed(command)
}

/// The `tool_call` for a tool item (from its started line, or from a completion seen alone).
pub(super) fn tool_call(kind: &str, id: &str, item: &Item<'_>) -> ToolCall {
    let mut call = ToolCall {
        tool_call_id: id.to_string(),
        title: String::new(),
        tool_name: Some(kind.to_string()),
        kind: tool_kind(Agent::Codex, kind),
        status: ToolCallStatus::InProgress,
        raw_input: None,
        content: None,
        locations: None,
    };
    match kind {
        "command_execution" => {
            let command = item.command();
            call.title = match command.as_deref().filter(|c| !c.trim().is_empty()) {
                Some(c) => command_title(&unwrap_shell(c)),
                None => "Run command".to_string(),
            };
            if command.is_some() {
                call.raw_input = Some(raw_members(&[("command", item.command)]));
            }
        }
        "file_change" => {
            let changes = FileChanges::read(item.changes);
            call.title = changes.title();
            call.locations = changes.into_locations();
            if let Some(raw) = present(item.changes) {
                call.raw_input = Some(raw_members(&[("changes", raw)]));
            }
        }
        "mcp_tool_call" => {
            let server = item.server.get().filter(|s| !s.is_empty());
            let tool = item.tool.get().filter(|t| !t.is_empty());
            call.tool_name = mcp_tool_name(server, tool);
            if let Some(name) = &call.tool_name {
                call.kind = tool_kind(Agent::Codex, name);
            }
            call.title = match (server, tool) {
                (Some(s), Some(t)) => format!("{s}: {t}"),
                (None, Some(t)) => t.to_string(),
                (Some(s), None) => format!("{s}: MCP tool"),
                (None, None) => "MCP tool".to_string(),
            };
            call.raw_input = present(item.arguments).map(verbatim);
        }
        _ => {
            // web_search
            call.title = search_title(search_query(item).as_deref());
            let members: Vec<(&str, &str)> =
                [("query", item.query), ("action", item.action)].into_iter().filter(|(_, v)| !v.is_empty()).collect();
            if !members.is_empty() {
                call.raw_input = Some(raw_members(&members));
            }
        }
    }
    call
}
