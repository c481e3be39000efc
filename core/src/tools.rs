//! The cross-harness tool-name → [`ToolKind`] table. This is the ONE place kinds are decided.
//!
//! | kind | claude | codex item | gemini | qwen | kimi | opencode | droid |
//! |---|---|---|---|---|---|---|---|
//! | read | Read, NotebookRead | – | read_file, read_many_files | Read, read_file, read_many_files | Read, ReadFile, ReadMediaFile | read | read |
//! | edit | Edit, MultiEdit, Write, NotebookEdit | file_change | write_file, replace, edit, edit_file | Write, Edit, write_file, edit, edit_file, replace | Write, WriteFile, Edit, StrReplaceFile | write, edit, multiedit, patch, apply_patch | create, edit, multiedit, write, applypatch |
//! | execute | Bash, BashOutput, KillShell, TaskOutput, TaskStop | command_execution | run_shell_command, shell, read_background_output, list_background_processes | Bash, BashOutput, KillShell, shell, run_shell_command, monitor | Bash, Shell, TaskOutput, TaskStop | bash | execute, executecli, bash, taskoutput, taskstop |
//! | search | Glob, Grep, LS | – | glob, grep, grep_search, search_file_content, list_directory | Glob, Grep, LS, glob, grep, grep_search, list_directory | Glob, Grep | glob, grep, list, codesearch, lsp | grep, glob, ls |
//! | fetch | WebFetch, WebSearch | web_search | google_web_search, web_search, brave_web_search, web_fetch | WebFetch, WebSearch, web_fetch, web_search, brave_web_search | WebSearch, SearchWeb, FetchURL | webfetch, websearch | fetchurl, webfetch, websearch |
//! | think | Task, Agent | – | delegate_to_agent, invoke_agent | Task, task, agent | Agent, AgentSwarm, Task, Think, CreateSubagent | task, batch | task |
//! | switch_mode | ExitPlanMode, EnterPlanMode | – | enter_plan_mode, exit_plan_mode | ExitPlanMode, exit_plan_mode | ExitPlanMode, EnterPlanMode | plan_enter, plan_exit | exitplanmode, exitspecmode |
//! | other | MCP tools (`mcp__*`), todo tools, anything else | mcp_tool_call (toolName `mcp__<server>__<tool>`, or codex's own list_mcp_resources, list_mcp_resource_templates, read_mcp_resource) | MCP tools (`mcp_<server>_<tool>`), write_todos, save_memory, update_topic, activate_skill, anything else | MCP tools, todo_write, TodoWrite, anything else | TodoList, SetTodoList, anything else | MCP tools (`<server>_<tool>`), todowrite, todoread, skill, question, invalid, anything else | todowrite, skill, MCP tools, anything else |
//!
//! Matching: claude, gemini, qwen and kimi names are matched exactly (so `bash` in claude is
//! `other`); opencode names are lowercased first; droid names are lowercased with `-`, `_` and
//! spaces removed (`Execute`, `execute_cli` → `execute`, `executecli`). Fixed relative to the
//! peer: droid `execute_cli` is `execute`, not `other`; droid `skill` is `other` (as in every
//! other harness), not `execute`; the current CLIs' own tool names are included.

use crate::decode::Agent;
use crate::event::ToolKind;
use ToolKind::*;

const CLAUDE: &[(&str, ToolKind)] = &[
    ("Read", Read),
    ("NotebookRead", Read),
    ("Edit", Edit),
    ("MultiEdit", Edit),
    ("Write", Edit),
    ("NotebookEdit", Edit),
    ("Bash", Execute),
    ("BashOutput", Execute),
    ("KillShell", Execute),
    ("TaskOutput", Execute),
    ("TaskStop", Execute),
    ("Glob", Search),
    ("Grep", Search),
    ("LS", Search),
    ("WebFetch", Fetch),
    ("WebSearch", Fetch),
    ("Task", Think),
    ("Agent", Think),
    ("ExitPlanMode", SwitchMode),
    ("EnterPlanMode", SwitchMode),
];

const CODEX: &[(&str, ToolKind)] =
    &[("command_execution", Execute), ("file_change", Edit), ("web_search", Fetch), ("mcp_tool_call", Other)];

const GEMINI: &[(&str, ToolKind)] = &[
    ("read_file", Read),
    ("read_many_files", Read),
    ("write_file", Edit),
    ("replace", Edit),
    ("edit", Edit),
    ("edit_file", Edit),
    ("run_shell_command", Execute),
    ("shell", Execute),
    ("read_background_output", Execute),
    ("list_background_processes", Execute),
    ("glob", Search),
    ("grep", Search),
    ("grep_search", Search),
    ("search_file_content", Search),
    ("list_directory", Search),
    ("google_web_search", Fetch),
    ("web_search", Fetch),
    ("brave_web_search", Fetch),
    ("web_fetch", Fetch),
    ("delegate_to_agent", Think),
    ("invoke_agent", Think),
    ("enter_plan_mode", SwitchMode),
    ("exit_plan_mode", SwitchMode),
];

const QWEN: &[(&str, ToolKind)] = &[
    ("Read", Read),
    ("read_file", Read),
    ("read_many_files", Read),
    ("Write", Edit),
    ("Edit", Edit),
    ("write_file", Edit),
    ("edit", Edit),
    ("edit_file", Edit),
    ("replace", Edit),
    ("Bash", Execute),
    ("BashOutput", Execute),
    ("KillShell", Execute),
    ("shell", Execute),
    ("run_shell_command", Execute),
    ("monitor", Execute),
    ("Glob", Search),
    ("Grep", Search),
    ("LS", Search),
    ("glob", Search),
    ("grep", Search),
    ("grep_search", Search),
    ("list_directory", Search),
    ("WebFetch", Fetch),
    ("WebSearch", Fetch),
    ("web_fetch", Fetch),
    ("web_search", Fetch),
    ("brave_web_search", Fetch),
    ("Task", Think),
    ("task", Think),
    ("agent", Think),
    ("ExitPlanMode", SwitchMode),
    ("exit_plan_mode", SwitchMode),
];

const KIMI: &[(&str, ToolKind)] = &[
    ("Read", Read),
    ("ReadFile", Read),
    ("ReadMediaFile", Read),
    ("Write", Edit),
    ("WriteFile", Edit),
    ("Edit", Edit),
    ("StrReplaceFile", Edit),
    ("Bash", Execute),
    ("Shell", Execute),
    ("TaskOutput", Execute),
    ("TaskStop", Execute),
    ("Glob", Search),
    ("Grep", Search),
    ("WebSearch", Fetch),
    ("SearchWeb", Fetch),
    ("FetchURL", Fetch),
    ("Agent", Think),
    ("AgentSwarm", Think),
    ("Task", Think),
    ("Think", Think),
    ("CreateSubagent", Think),
    ("ExitPlanMode", SwitchMode),
    ("EnterPlanMode", SwitchMode),
];

const OPENCODE: &[(&str, ToolKind)] = &[
    ("read", Read),
    ("write", Edit),
    ("edit", Edit),
    ("multiedit", Edit),
    ("patch", Edit),
    ("apply_patch", Edit),
    ("bash", Execute),
    ("glob", Search),
    ("grep", Search),
    ("list", Search),
    ("codesearch", Search),
    ("lsp", Search),
    ("webfetch", Fetch),
    ("websearch", Fetch),
    ("task", Think),
    ("batch", Think),
    ("plan_enter", SwitchMode),
    ("plan_exit", SwitchMode),
];

const DROID: &[(&str, ToolKind)] = &[
    ("read", Read),
    ("create", Edit),
    ("edit", Edit),
    ("multiedit", Edit),
    ("write", Edit),
    ("applypatch", Edit),
    ("execute", Execute),
    ("executecli", Execute),
    ("bash", Execute),
    ("taskoutput", Execute),
    ("taskstop", Execute),
    ("grep", Search),
    ("glob", Search),
    ("ls", Search),
    ("fetchurl", Fetch),
    ("webfetch", Fetch),
    ("websearch", Fetch),
    ("task", Think),
    ("exitplanmode", SwitchMode),
    ("exitspecmode", SwitchMode),
];

/// The table of one agent: `(name as matched, kind)`; names not listed are [`ToolKind::Other`].
pub fn kind_table(agent: Agent) -> &'static [(&'static str, ToolKind)] {
    match agent {
        Agent::Claude => CLAUDE,
        Agent::Codex => CODEX,
        Agent::Gemini => GEMINI,
        Agent::Qwen => QWEN,
        Agent::Kimi => KIMI,
        Agent::Opencode => OPENCODE,
        Agent::Droid => DROID,
    }
}

/// How `agent` spells a tool name for lookup (see the module docs).
pub fn normalize_name(agent: Agent, name: &str) -> String {
    match agent {
        Agent::Opencode => name.to_lowercase(),
        Agent::Droid => name.chars().filter(|c| !matches!(c, '-' | '_' | ' ')).flat_map(char::to_lowercase).collect(),
        _ => name.to_string(),
    }
}

/// The kind of tool `name` for `agent`.
pub fn tool_kind(agent: Agent, name: &str) -> ToolKind {
    let table = kind_table(agent);
    let find = |key: &str| table.iter().find(|(n, _)| *n == key).map(|(_, k)| *k).unwrap_or(Other);
    match agent {
        Agent::Opencode | Agent::Droid => find(&normalize_name(agent, name)),
        _ => find(name), // matched exactly: no allocation
    }
}

/// Wrap a shell command in backticks for a title, escaping backticks inside it so the markdown
/// stays intact, and cut titles at a sane length (a heredoc must not become the title).
pub fn command_title(command: &str) -> String {
    // Common case: nothing to escape and short enough that no cut is possible (bytes >= chars).
    if command.len() <= MAX_TITLE_CHARS && !command.contains('`') {
        let mut title = String::with_capacity(command.len() + 2);
        title.push('`');
        title.push_str(command);
        title.push('`');
        return title;
    }
    let escaped = command.replace('`', "\\`");
    format!("`{}`", truncate_chars(&escaped, MAX_TITLE_CHARS))
}

/// Titles are for people: longer text is cut at this many characters with an ellipsis.
pub const MAX_TITLE_CHARS: usize = 200;

/// `title` cut at [`MAX_TITLE_CHARS`] like [`truncate_chars`], without copying a short one.
pub fn bound_title(title: String) -> String {
    if title.len() <= MAX_TITLE_CHARS { title } else { truncate_chars(&title, MAX_TITLE_CHARS) }
}

/// Cut `s` to at most `max` characters (on a char boundary), appending `…` when cut.
pub fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((cut, _)) => format!("{}…", &s[..cut]),
    }
}

// Titles are built on every tool call from its arguments: in one allocation, as `format!`
// costs several times more.

/// `parts` joined into a string of exactly their size (`format!` costs several times more).
pub(crate) fn cat(parts: &[&str]) -> String {
    let mut out = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for part in parts {
        out.push_str(part);
    }
    out
}

/// `prefix`, then `text` cut at `max` characters (`…` appended when cut, as
/// [`truncate_chars`]), then `suffix`: a title in one allocation.
pub(crate) fn cut_title(prefix: &str, text: &str, max: usize, suffix: &str) -> String {
    // A text of at most `max` bytes has at most `max` characters: nothing to count.
    let cut = if text.len() <= max { None } else { text.char_indices().nth(max).map(|(i, _)| i) };
    let body = cut.map_or(text, |i| &text[..i]);
    let mut title = String::with_capacity(prefix.len() + body.len() + 3 + suffix.len());
    title.push_str(prefix);
    title.push_str(body);
    if cut.is_some() {
        title.push('…');
    }
    title.push_str(suffix);
    title
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_per_harness() {
        assert_eq!(tool_kind(Agent::Claude, "Bash"), Execute);
        assert_eq!(tool_kind(Agent::Claude, "bash"), Other);
        assert_eq!(tool_kind(Agent::Claude, "mcp__kb__lookup"), Other);
        assert_eq!(tool_kind(Agent::Opencode, "Bash"), Execute);
        assert_eq!(tool_kind(Agent::Droid, "execute_cli"), Execute);
        assert_eq!(tool_kind(Agent::Droid, "Execute"), Execute);
        assert_eq!(tool_kind(Agent::Droid, "Skill"), Other);
        assert_eq!(tool_kind(Agent::Gemini, "run_shell_command"), Execute);
        assert_eq!(tool_kind(Agent::Qwen, "edit"), Edit);
        assert_eq!(tool_kind(Agent::Kimi, "StrReplaceFile"), Edit);
    }

    #[test]
    fn every_documented_name_is_in_the_module_docs() {
        let docs = include_str!("tools.rs");
        for agent in Agent::ALL {
            for (name, _) in kind_table(agent) {
                assert!(docs.contains(name), "{agent} {name} missing from the table in the docs");
            }
        }
    }

    #[test]
    fn command_titles_escape_backticks_and_stay_short() {
        assert_eq!(command_title("echo `date`"), "`echo \\`date\\``");
        assert_eq!(command_title(&"x".repeat(500)).chars().count(), MAX_TITLE_CHARS + 3);
    }

    #[test]
    fn titles_cut_like_truncate_chars() {
        for (text, max) in
            [("short", 10), ("exactly10!", 10), ("éééééééééééé", 10), ("x".repeat(60).as_str(), 50), ("", 3)]
        {
            assert_eq!(cut_title("Fetch: ", text, max, "\""), format!("Fetch: {}\"", truncate_chars(text, max)));
        }
    }
}
