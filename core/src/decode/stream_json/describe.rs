//! Describing stream-json tool calls: a call's arguments read on demand ([`ToolUse`]), the
//! title, diff and location helpers both dialects use, and the todo list of a task-list call.
//! Each dialect's own tool table is in its `describe` module.

use std::borrow::Cow;
use std::cell::OnceCell;

use serde_json::Value;

use super::wire::*;
use crate::event::{
    DiffContent, PlanEntry, PlanEntryPriority, PlanEntryStatus, ToolCall, ToolCallContent, ToolCallLocation,
    ToolCallStatus,
};
use crate::json::scan::{Bad, Res, Scan};

// ------------------------------------------------------------------------------------------
// Tool helpers
// ------------------------------------------------------------------------------------------

/// A tool call read from a `tool_use` block.
pub(crate) struct ToolUse<'l> {
    /// The harness's call id.
    pub id: &'l str,
    /// The harness-native tool name.
    pub name: &'l str,
    /// The input as printed (usually an object), `None` when absent or `null`.
    pub input: Option<&'l str>,
    /// The input's top-level arguments, read on first use.
    pub(crate) args: OnceCell<Args<'l>>,
    /// The call that started the subagent making this call (`parent_tool_use_id`); `None` for
    /// the main agent.
    pub scope: Option<&'l str>,
}

/// One top-level argument of a tool input: a string (decoded, borrowed from the line when it
/// has no escapes), or any other value as printed.
pub(crate) enum Arg<'l> {
    Str(Cow<'l, str>),
    Other(&'l str),
}

/// The top-level arguments of a tool input object, in printed order (empty when the input is
/// not an object). Lookups take a key's last occurrence, as a JSON object reader does.
#[derive(Default)]
pub(crate) struct Args<'l>(Vec<(Cow<'l, str>, Arg<'l>)>);

impl<'l> Args<'l> {
    /// Read the arguments of `raw` (one scan of the input; nothing is built for values that are
    /// not strings).
    pub(crate) fn read(raw: Option<&'l str>) -> Args<'l> {
        let Some(raw) = raw else { return Args::default() };
        let mut sc = Scan::new(raw);
        if sc.peek() != Some(b'{') {
            return Args::default();
        }
        let mut args = Vec::with_capacity(4);
        let mut read = |args: &mut Vec<_>| -> Res<()> {
            sc.open_object()?;
            let mut first = true;
            while let Some(key) = sc.next_key(&mut first)? {
                let key = key.decode()?;
                let arg = if sc.peek() == Some(b'"') { Arg::Str(sc.str()?) } else { Arg::Other(sc.raw()?) };
                args.push((key, arg));
            }
            Ok(())
        };
        match read(&mut args) {
            Ok(()) => Args(args),
            Err(Bad) => Args::default(),
        }
    }

    pub(crate) fn get(&self, key: &str) -> Option<&Arg<'l>> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

impl<'l> ToolUse<'l> {
    /// A call; `input` is kept as printed.
    pub fn new(id: &'l str, name: &'l str, input: Option<&'l str>) -> Self {
        ToolUse { id, name, input, args: OnceCell::new(), scope: None }
    }

    /// This call, made by the subagent that call `scope` started (`None`: the main agent).
    pub fn in_scope(mut self, scope: Option<&'l str>) -> Self {
        self.scope = scope;
        self
    }

    pub(crate) fn args(&self) -> &Args<'l> {
        self.args.get_or_init(|| Args::read(self.input))
    }

    /// True when the input has the argument `key` (any value, `null` included).
    pub fn has(&self, key: &str) -> bool {
        self.args().get(key).is_some()
    }

    /// A string argument, possibly empty.
    pub fn str_any(&self, key: &str) -> Option<&str> {
        match self.args().get(key)? {
            Arg::Str(s) => Some(s),
            Arg::Other(_) => None,
        }
    }

    /// A non-empty string argument.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.str_any(key).filter(|s| !s.is_empty())
    }

    /// The first non-empty string argument of `keys`.
    pub fn first_str(&self, keys: &[&str]) -> Option<&str> {
        keys.iter().find_map(|k| self.str(k))
    }

    /// True when the argument `key` is JSON `true`.
    pub fn flag(&self, key: &str) -> bool {
        matches!(self.args().get(key), Some(Arg::Other("true")))
    }

    /// The argument `key` as a [`Value`] (`Value::Null` for a printed `null`); `None` when absent.
    pub fn value(&self, key: &str) -> Option<Value> {
        match self.args().get(key)? {
            Arg::Str(s) => Some(Value::String(s.to_string())),
            Arg::Other(raw) => Scan::new(raw).json_value().ok(),
        }
    }

    /// An unsigned integer argument (a JSON number, or a string of digits).
    pub fn uint(&self, key: &str) -> Option<u64> {
        match self.args().get(key)? {
            Arg::Str(s) => s.trim().parse().ok(),
            Arg::Other(raw) => match Scan::new(raw).json_value().ok()? {
                Value::Number(n) => n.as_u64().or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64)),
                _ => None,
            },
        }
    }

    /// A `tool_call` (status `pending`) for this call.
    pub fn call(
        self,
        title: String,
        kind: crate::event::ToolKind,
        content: Vec<ToolCallContent>,
        locations: Vec<ToolCallLocation>,
    ) -> ToolCall {
        ToolCall {
            tool_call_id: self.id.to_string(),
            title,
            tool_name: Some(self.name.to_string()),
            kind,
            status: ToolCallStatus::Pending,
            raw_input: self.input.map(raw_json),
            content: (!content.is_empty()).then_some(content),
            locations: (!locations.is_empty()).then_some(locations),
        }
    }
}

/// `Read <path>` plus ` (A - B)` for a limit or ` (from line N)` for an offset alone.
pub(crate) fn read_title(path: Option<&str>, offset: Option<u64>, limit: Option<u64>, fallback: &str) -> String {
    let mut title = format!("Read {}", path.unwrap_or(fallback));
    match (offset, limit) {
        (o, Some(l)) if l > 0 => {
            let start = o.unwrap_or(0);
            let first = crate::counters::add("a read's first line", start, 1);
            if let (Some(first), Some(last)) = (first, crate::counters::add("a read's last line", start, l)) {
                title.push_str(&format!(" ({first} - {last})"));
            }
        }
        (Some(o), _) if o > 0 => {
            if let Some(first) = crate::counters::add("a read's first line", o, 1) {
                title.push_str(&format!(" (from line {first})"));
            }
        }
        _ => {}
    }
    title
}

/// `server: tool` for an MCP tool name `mcp__server__tool` (the tool part may itself hold `__`).
pub(crate) fn mcp_title(name: &str) -> Option<String> {
    let rest = name.strip_prefix("mcp__")?;
    let (server, tool) = rest.split_once("__")?;
    (!server.is_empty() && !tool.is_empty()).then(|| format!("{server}: {tool}"))
}

/// `"query"`, then ` (allowed: a, b)` and ` (blocked: c)` when domain lists are given.
pub(crate) fn web_search_title(call: &ToolUse<'_>) -> String {
    let mut title = format!("\"{}\"", call.str("query").unwrap_or_default());
    for (key, label) in [("allowed_domains", "allowed"), ("blocked_domains", "blocked")] {
        if let Some(Value::Array(list)) = call.value(key) {
            let names: Vec<&str> = list.iter().filter_map(Value::as_str).collect();
            if !names.is_empty() {
                title.push_str(&format!(" ({label}: {})", names.join(", ")));
            }
        }
    }
    title
}

/// ``Find `path` `pattern` `` (each part only when given).
pub(crate) fn glob_title(path: Option<&str>, pattern: Option<&str>) -> String {
    let mut title = String::from("Find");
    for part in [path, pattern].into_iter().flatten() {
        title.push_str(&format!(" `{part}`"));
    }
    title
}

/// A diff content item.
pub(crate) fn diff(path: &str, old: Option<&str>, new: Option<&str>) -> ToolCallContent {
    ToolCallContent::Diff(DiffContent {
        path: path.to_string(),
        old_text: old.map(str::to_string),
        new_text: new.unwrap_or_default().to_string(),
    })
}

/// A plan entry status from a todo's status string (`completed`/`in_progress`, else `pending`).
pub(crate) fn plan_status(status: Option<&str>) -> PlanEntryStatus {
    match status {
        Some("completed" | "done" | "complete") => PlanEntryStatus::Completed,
        Some("in_progress" | "in-progress" | "active") => PlanEntryStatus::InProgress,
        _ => PlanEntryStatus::Pending,
    }
}

/// The plan of a TodoWrite-style input (`{todos: [{content, status, priority?}]}`); `None`
/// when `todos` is not a list. Items that are not objects are skipped.
pub(crate) fn plan_from_todos(call: &ToolUse<'_>) -> Option<Vec<PlanEntry>> {
    let Value::Array(todos) = call.value("todos")? else { return None };
    Some(
        todos
            .iter()
            .filter_map(Value::as_object)
            .map(|t| PlanEntry {
                content: t
                    .get("content")
                    .or_else(|| t.get("description"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                status: plan_status(t.get("status").and_then(Value::as_str)),
                priority: PlanEntryPriority::from_wire(t.get("priority").and_then(Value::as_str)),
            })
            .collect(),
    )
}
