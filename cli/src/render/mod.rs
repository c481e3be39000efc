//! Rendering a run's stream for a person: streamed answer text, a line for each tool call (a
//! live one while it runs, on a terminal) with a short excerpt of its result or the diff of its
//! edit, plans, errors, a command's output, and a summary with usage and cost at the end.
//!
//! Everything shown comes from the run's events as the core delivered them — tool inputs are
//! already masked there — and every excerpt is bounded.

mod command_output;
mod control_tags;
mod diff;
mod diff_view;
mod preview;
mod style;
mod tool_label;
mod words;

use std::collections::HashMap;
use std::io::{self, Write};

use agentstream_core::tools::truncate_chars;
use agentstream_core::{
    ContentBlock, DiffContent, LifecycleEvent, LifecycleReason, OutputEvent, PlanEntryStatus, SessionUpdate,
    ToolCallContent, ToolCallStatus,
};

use command_output::{OutputTail, Stream};
use diff::Change;
use diff_view::ViewLine;
pub use style::Style;
use tool_label::ToolLabel;

/// Lines of a tool result shown under its call.
const RESULT_LINES: usize = 3;
/// Lines of the diffs shown under an edit (all of its files together).
const DIFF_LINES: usize = 12;
/// Characters of one shown line of a result or a diff.
const LINE_CHARS: usize = 120;

/// What is remembered of a tool call until it finishes.
struct Tool {
    label: ToolLabel,
    /// The edits it makes (from the call and its updates).
    diffs: Vec<DiffContent>,
}

/// Human renderer state for one run.
pub struct Renderer<W: Write> {
    out: W,
    style: Style,
    live: bool,
    show_stderr: bool,
    mid_text: bool,
    in_thought: bool,
    tools: HashMap<String, Tool>,
    /// Calls whose result came before their announcement: a late announcement is not shown
    /// starting after its finished line (the core's rule for open calls).
    finished_early: agentstream_core::stream::FinishedEarly,
    live_line: Option<String>,
    /// The run is a command (`exec`): its output is shown, not decoded.
    command: Option<OutputTail>,
    /// Tool calls seen.
    pub tool_calls: usize,
    /// Tool calls that failed.
    pub tool_failures: usize,
}

impl<W: Write> Renderer<W> {
    /// A renderer; `live` draws an updating line for tool calls in progress (terminals only).
    pub fn new(out: W, style: Style, live: bool, show_stderr: bool) -> Self {
        Renderer {
            out,
            style,
            live,
            show_stderr,
            mid_text: false,
            in_thought: false,
            tools: HashMap::new(),
            finished_early: Default::default(),
            live_line: None,
            command: None,
            tool_calls: 0,
            tool_failures: 0,
        }
    }

    fn clear_live(&mut self) -> io::Result<()> {
        if self.live_line.take().is_some() {
            write!(self.out, "\r\x1b[2K")?;
        }
        Ok(())
    }

    fn set_live(&mut self, line: String) -> io::Result<()> {
        self.clear_live()?;
        write!(self.out, "{line}")?;
        self.live_line = Some(line);
        self.out.flush()
    }

    fn end_text(&mut self) -> io::Result<()> {
        if self.mid_text {
            writeln!(self.out)?;
            self.mid_text = false;
            self.in_thought = false;
        }
        Ok(())
    }

    /// Render a content event.
    pub fn content(&mut self, ev: &OutputEvent) -> io::Result<()> {
        match &ev.update {
            SessionUpdate::AgentMessageChunk { content } => {
                self.clear_live()?;
                if self.in_thought {
                    self.end_text()?;
                }
                match content {
                    ContentBlock::Text { text } => write!(self.out, "{}", preview::terminal_text(text))?,
                    ContentBlock::Image(img) => {
                        write!(self.out, "{}", self.style.dim(&format!("[image {}]", img.mime_type)))?
                    }
                }
                self.mid_text = true;
            }
            SessionUpdate::AgentThoughtChunk { content } => {
                self.clear_live()?;
                if self.mid_text && !self.in_thought {
                    self.end_text()?;
                }
                if let Some(t) = content.as_text() {
                    let prefix = if self.in_thought { String::new() } else { self.style.dim("thinking: ") };
                    write!(self.out, "{prefix}{}", self.style.dim(&preview::terminal_text(t)))?;
                    self.mid_text = true;
                    self.in_thought = true;
                }
            }
            SessionUpdate::UserMessageChunk { content } => {
                if let Some(t) = content.as_text() {
                    self.end_text()?;
                    self.clear_live()?;
                    let t = control_tags::strip(t);
                    let t = preview::terminal_text(&t);
                    if !t.trim().is_empty() {
                        writeln!(self.out, "{} {}", self.style.cyan(">"), self.style.dim(t.trim()))?;
                    }
                }
            }
            SessionUpdate::ToolCall(call) => {
                self.end_text()?;
                self.clear_live()?;
                self.tool_calls += 1;
                let label = ToolLabel::new(call.tool_name.as_deref(), call.kind, &call.title);
                let diffs = diffs_in(call.content.as_deref()).cloned().collect();
                let late =
                    !self.tools.contains_key(&call.tool_call_id) && self.finished_early.contains(&call.tool_call_id);
                self.tools.insert(call.tool_call_id.clone(), Tool { label, diffs });
                if late {
                    // Its finished line was shown already, when its result came.
                } else if matches!(call.status, ToolCallStatus::Completed | ToolCallStatus::Failed) {
                    self.finished_line(&call.tool_call_id, call.status, call.content.as_deref())?;
                } else if self.live {
                    let line = format!("{} {}", self.style.yellow("…"), self.label_text(&call.tool_call_id));
                    self.set_live(line)?;
                } else {
                    writeln!(self.out, "{} {}", self.style.yellow("→"), self.label_text(&call.tool_call_id))?;
                }
            }
            SessionUpdate::ToolCallUpdate(update) => {
                if let (Some(title), Some(tool)) = (&update.title, self.tools.get_mut(&update.tool_call_id)) {
                    tool.label.title = title.trim().to_string();
                }
                if let Some(status @ (ToolCallStatus::Completed | ToolCallStatus::Failed)) = update.status {
                    if !self.tools.contains_key(&update.tool_call_id) {
                        self.finished_early.insert(&update.tool_call_id);
                    }
                    self.end_text()?;
                    self.clear_live()?;
                    self.finished_line(&update.tool_call_id, status, update.content.as_deref())?;
                }
            }
            SessionUpdate::Plan { entries } => {
                self.end_text()?;
                self.clear_live()?;
                writeln!(self.out, "{}", self.style.bold("plan"))?;
                for e in entries {
                    let mark = match e.status {
                        PlanEntryStatus::Completed => self.style.green("[x]"),
                        PlanEntryStatus::InProgress => self.style.yellow("[~]"),
                        PlanEntryStatus::Pending => "[ ]".to_string(),
                    };
                    writeln!(self.out, "  {mark} {}", preview::terminal_text(&e.content))?;
                }
            }
            SessionUpdate::Error { message, fatal } => {
                self.end_text()?;
                self.clear_live()?;
                let label = if *fatal { "error" } else { "warning" };
                let painted = if *fatal { self.style.red(label) } else { self.style.yellow(label) };
                writeln!(self.out, "{painted}: {}", preview::terminal_text(control_tags::strip(message).trim()))?;
            }
            SessionUpdate::Usage { .. } => {}
        }
        self.out.flush()
    }

    /// The call's label as printed: the tool name in bold (when shown) and the title.
    fn label_text(&self, id: &str) -> String {
        // Names, titles and ids come from the harness: printable before they are styled.
        let safe = |text: &str| preview::printable(text).into_owned();
        match self.tools.get(id) {
            Some(Tool { label: ToolLabel { name: Some(name), title }, .. }) => {
                format!("{} {}", self.style.bold(&safe(name)), safe(title)).trim_end().to_string()
            }
            Some(Tool { label: ToolLabel { name: None, title }, .. }) => safe(title),
            None => format!("{} {}", self.style.bold("tool"), safe(id)),
        }
    }

    /// The call's closing line, then the diff of its edit (when it made one) or an excerpt of
    /// its result.
    fn finished_line(
        &mut self,
        id: &str,
        status: ToolCallStatus,
        content: Option<&[ToolCallContent]>,
    ) -> io::Result<()> {
        let mark = if status == ToolCallStatus::Failed {
            self.tool_failures += 1;
            self.style.red("✗")
        } else {
            self.style.green("✓")
        };
        writeln!(self.out, "{mark} {}", self.label_text(id))?;
        let mut diffs = self.tools.remove(id).map(|t| t.diffs).unwrap_or_default();
        for d in diffs_in(content) {
            if !diffs.contains(d) {
                diffs.push(d.clone());
            }
        }
        // A completed edit is told by its diff (the harness's "file updated" adds nothing); a
        // failed one by its error.
        if status == ToolCallStatus::Completed && !diffs.is_empty() {
            return self.diffs(&diffs);
        }
        let text: Vec<&str> = content
            .unwrap_or(&[])
            .iter()
            .filter_map(|c| match c {
                ToolCallContent::Content { content } => content.as_text(),
                ToolCallContent::Diff(_) => None,
            })
            .collect();
        let text = text.join("\n");
        let shown = preview::head(&control_tags::strip(&text), RESULT_LINES, LINE_CHARS);
        for l in &shown.lines {
            writeln!(self.out, "  {}", self.style.dim(l))?;
        }
        if shown.more > 0 {
            writeln!(self.out, "  {}", self.style.dim(&words::more_lines(shown.more)))?;
        }
        Ok(())
    }

    /// The diffs of an edit, at most [`DIFF_LINES`] lines for all of them together.
    fn diffs(&mut self, diffs: &[DiffContent]) -> io::Result<()> {
        let mut room = DIFF_LINES;
        let mut more = 0;
        for d in diffs {
            let changes = diff::line_diff(d.old_text.as_deref(), &d.new_text);
            if diffs.len() > 1 && room > 0 {
                writeln!(self.out, "  {}", self.style.bold(&preview::printable(&d.path)))?;
                room -= 1;
            }
            let view = diff_view::view(&changes, room);
            room -= view.lines.len();
            more += view.more;
            for line in view.lines {
                let shown = match line {
                    ViewLine::Gap => self.style.dim("  …"),
                    ViewLine::Line(Change::Same(l)) => self.style.dim(&format!("    {}", self.cut(l))),
                    ViewLine::Line(Change::Removed(l)) => self.style.red(&format!("  - {}", self.cut(l))),
                    ViewLine::Line(Change::Added(l)) => self.style.green(&format!("  + {}", self.cut(l))),
                };
                writeln!(self.out, "{shown}")?;
            }
        }
        if more > 0 {
            writeln!(self.out, "  {}", self.style.dim(&words::more_lines(more)))?;
        }
        Ok(())
    }

    fn cut(&self, line: &str) -> String {
        truncate_chars(&preview::printable(line), LINE_CHARS)
    }

    /// Render raw stdout text: a command's output is kept for the end (its last lines; on a
    /// terminal the newest line is shown live); a harness's is its JSON, shown as the events
    /// decoded from it.
    pub fn stdout(&mut self, text: &str) -> io::Result<()> {
        self.command_output(Stream::Stdout, text)
    }

    /// Render raw stderr text: a command's is part of its output; a harness's is shown
    /// (dimmed) when asked for.
    pub fn stderr(&mut self, text: &str) -> io::Result<()> {
        if self.command.is_some() {
            return self.command_output(Stream::Stderr, text);
        }
        if self.show_stderr {
            self.end_text()?;
            self.clear_live()?;
            for l in text.lines() {
                writeln!(self.out, "{}", self.style.dim(&format!("stderr: {}", preview::printable(l))))?;
            }
        }
        Ok(())
    }

    fn command_output(&mut self, stream: Stream, text: &str) -> io::Result<()> {
        let Some(tail) = self.command.as_mut() else { return Ok(()) };
        let before = tail.last_line().map(str::to_string);
        tail.push(stream, text);
        match tail.last_line() {
            Some(last) if self.live && before.as_deref() != Some(last) => {
                let line = self.style.dim(&format!("… {}", truncate_chars(last, 100)));
                self.set_live(line)
            }
            _ => Ok(()),
        }
    }

    /// Lifecycle events are summarized at the end; only pauses and kills are shown as they
    /// happen. A command's start makes this the view of a command: its output is shown.
    pub fn lifecycle(&mut self, ev: &LifecycleEvent) -> io::Result<()> {
        use LifecycleReason::*;
        if ev.reason == CommandStart {
            self.command.get_or_insert_with(OutputTail::default);
        }
        if matches!(ev.reason, SandboxPause | SandboxResume | SandboxKilled) {
            self.end_text()?;
            self.clear_live()?;
            writeln!(self.out, "{}", self.style.dim(&format!("[{}]", ev.reason.as_str())))?;
        }
        Ok(())
    }

    /// Print a command's output (its last lines), then the closing summary line.
    pub fn summary(&mut self, line: &str, ok: bool) -> io::Result<()> {
        self.end_text()?;
        self.clear_live()?;
        if let Some(mut tail) = self.command.take() {
            let (dropped, lines) = tail.finish();
            if dropped > 0 {
                let earlier = format!("… {} before these (--json prints every line)", words::count(dropped, "line"));
                writeln!(self.out, "{}", self.style.dim(&earlier))?;
            }
            for (stream, l) in lines {
                let l = if stream == Stream::Stderr { self.style.red(&l) } else { l };
                writeln!(self.out, "{l}")?;
            }
        }
        let mark = if ok { self.style.green("✓") } else { self.style.red("✗") };
        writeln!(self.out, "{mark} {line}")?;
        self.out.flush()
    }
}

/// The diffs among a call's contents.
fn diffs_in(content: Option<&[ToolCallContent]>) -> impl Iterator<Item = &DiffContent> {
    content.unwrap_or(&[]).iter().filter_map(|c| match c {
        ToolCallContent::Diff(d) => Some(d),
        ToolCallContent::Content { .. } => None,
    })
}
