//! How a tool call is named on its line: the title, and the harness's tool name before it only
//! when the title does not already say it.
//!
//! The decoders' titles name the action (`Read /p/hello.py`, `Edit 2 files`, `kb: lookup`,
//! `Task: Count files`); a command's title is the command itself (`` `ls -1` ``). Printing the
//! tool name before a title that already says it gives `Read Read /p/hello.py`. So the name is
//! left out when the title starts with it or with its last word (`read_file` / `Read …`), when
//! it is the title's `server: tool` spelled as one name (`mcp__kb__lookup` / `kb: lookup`), or
//! when the title's first word is the verb of the call's kind (`replace` / `Edit …`,
//! `Shell` / `Run command`); it is kept where it adds something (`Bash` `` `ls -1` ``,
//! `Agent` `Count python files`).

use agentstream_core::ToolKind;

/// The words of a tool call's line after its status mark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolLabel {
    /// The tool name, when the title does not already say it.
    pub name: Option<String>,
    /// The title (may be empty).
    pub title: String,
}

impl ToolLabel {
    /// The label of a call with the harness's tool name (absent: the kind stands in), kind and title.
    pub fn new(tool_name: Option<&str>, kind: ToolKind, title: &str) -> Self {
        let name = tool_name.map(str::to_string).unwrap_or_else(|| kind_word(kind).to_string());
        let title = title.trim().to_string();
        let shown = (title.is_empty() || !title_says_tool(&name, kind, &title)).then_some(name);
        ToolLabel { name: shown, title }
    }
}

/// Letters and digits only, lower case: `mcp__kb__lookup` and `kb: lookup` compare as
/// `mcpkblookup` and `kblookup`.
fn squash(s: &str) -> String {
    s.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

fn title_says_tool(name: &str, kind: ToolKind, title: &str) -> bool {
    let (name, whole) = (squash(name), squash(title));
    // `Read /p`, `Task: Count files`, `TaskCreate`; `kb: lookup` of `mcp__kb__lookup`,
    // `codex: list_mcp_resources` of `list_mcp_resources`.
    if name.is_empty()
        || whole.starts_with(&name)
        || (whole.len() >= 3 && name.ends_with(&whole))
        || (title.contains(':') && whole.ends_with(&name))
    {
        return true;
    }
    // A command or a quoted query opens with its own words, not the tool's.
    if title.starts_with(['`', '"', '\'']) {
        return false;
    }
    // `Read` of `read_file`, `Search: …` of `google_web_search`, `Edit` of `replace`.
    let first = squash(title.split([' ', ':']).next().unwrap_or_default());
    first.len() >= 3 && (name.starts_with(&first) || name.ends_with(&first) || verbs(kind).contains(&first.as_str()))
}

/// The verbs the decoders' titles use for each kind of call.
fn verbs(kind: ToolKind) -> &'static [&'static str] {
    match kind {
        ToolKind::Read => &["read"],
        ToolKind::Edit => &["edit", "write", "create", "delete", "apply", "patch"],
        ToolKind::Delete => &["delete", "remove"],
        ToolKind::Move => &["move", "rename"],
        ToolKind::Search => &["find", "search", "list", "grep", "glob"],
        ToolKind::Execute => &["run"],
        ToolKind::Think => &["agent", "task"],
        ToolKind::Fetch => &["fetch", "search"],
        ToolKind::SwitchMode => &["enter", "exit"],
        ToolKind::Other => &[],
    }
}

/// The word for a kind, standing in for a tool name the harness did not give.
fn kind_word(kind: ToolKind) -> &'static str {
    match kind {
        ToolKind::Read => "read",
        ToolKind::Edit => "edit",
        ToolKind::Delete => "delete",
        ToolKind::Move => "move",
        ToolKind::Search => "search",
        ToolKind::Execute => "execute",
        ToolKind::Think => "think",
        ToolKind::Fetch => "fetch",
        ToolKind::SwitchMode => "switch_mode",
        ToolKind::Other => "tool",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(name: &str, kind: ToolKind, title: &str) -> String {
        let l = ToolLabel::new(Some(name), kind, title);
        match l.name {
            Some(n) => format!("{n} {}", l.title),
            None => l.title,
        }
    }

    #[test]
    fn a_title_that_names_the_tool_stands_alone() {
        use ToolKind::*;
        for (name, kind, title, shown) in [
            ("Read", Read, "Read /p/hello.py", "Read /p/hello.py"),
            ("Edit", Edit, "Edit `/p/hello.py`", "Edit `/p/hello.py`"),
            ("Create", Edit, "Create /p/NOTES.md", "Create /p/NOTES.md"),
            ("read_file", Read, "Read /p/hello.py", "Read /p/hello.py"),
            ("ReadFile", Read, "Read /p/hello.py", "Read /p/hello.py"),
            ("replace", Edit, "Edit /p/hello.py", "Edit /p/hello.py"),
            ("StrReplaceFile", Edit, "Edit /p/hello.py", "Edit /p/hello.py"),
            ("file_change", Edit, "Edit 2 files", "Edit 2 files"),
            ("Glob", Search, "Find *.py", "Find *.py"),
            ("grep_search", Search, "grep \"greet\"", "grep \"greet\""),
            ("mcp__kb__lookup", Other, "kb: lookup", "kb: lookup"),
            ("list_mcp_resources", Other, "codex: list_mcp_resources", "codex: list_mcp_resources"),
            ("task", Think, "Task: Count files", "Task: Count files"),
            ("Read File", Other, "Read File", "Read File"),
            ("bash", Execute, "bash", "bash"),
            ("google_web_search", Fetch, "Search: python f-strings", "Search: python f-strings"),
            ("web_fetch", Fetch, "Fetch http://x/page", "Fetch http://x/page"),
        ] {
            assert_eq!(label(name, kind, title), shown, "{name} / {title}");
        }
    }

    #[test]
    fn a_name_that_adds_something_is_kept() {
        use ToolKind::*;
        for (name, kind, title) in [
            ("Bash", Execute, "`ls -1`"),
            ("command_execution", Execute, "`echo hi`"),
            ("Execute", Execute, "`echo read`"),
            ("Agent", Think, "Count python files"),
            ("Bash", Execute, "Terminal"),
            ("SearchWeb", Fetch, "\"agentstream\""),
            ("TodoWrite", Other, "Update todos"),
        ] {
            assert_eq!(label(name, kind, title), format!("{name} {title}"));
        }
        assert_eq!(label("Bash", Execute, ""), "Bash ");
    }

    #[test]
    fn without_a_tool_name_the_kind_stands_in() {
        assert_eq!(ToolLabel::new(None, ToolKind::Read, "Read /x").name, None);
        assert_eq!(ToolLabel::new(None, ToolKind::Execute, "`ls`").name.as_deref(), Some("execute"));
    }
}
