//! Rendering a run's stream for a person: streamed answer text, a live line for each tool call
//! in progress, plans, errors, and a summary with usage and cost at the end.

use std::collections::HashMap;
use std::io::{self, Write};

use agentstream_core::{
    ContentBlock, LifecycleEvent, OutputEvent, PlanEntryStatus, SessionUpdate, ToolCallContent, ToolCallStatus,
};

/// ANSI styling, off when the output is not a terminal or `NO_COLOR` is set.
#[derive(Clone, Copy)]
pub struct Style {
    on: bool,
}

impl Style {
    /// Colour when `tty` and `NO_COLOR` is unset.
    pub fn detect(tty: bool) -> Self {
        Style { on: tty && std::env::var_os("NO_COLOR").is_none() }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.on { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_string() }
    }
    fn dim(&self, t: &str) -> String {
        self.paint("2", t)
    }
    fn bold(&self, t: &str) -> String {
        self.paint("1", t)
    }
    fn red(&self, t: &str) -> String {
        self.paint("31", t)
    }
    fn green(&self, t: &str) -> String {
        self.paint("32", t)
    }
    fn yellow(&self, t: &str) -> String {
        self.paint("33", t)
    }
    fn cyan(&self, t: &str) -> String {
        self.paint("36", t)
    }
}

struct Tool {
    title: String,
    name: String,
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
    live_line: Option<String>,
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
            live_line: None,
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
                    ContentBlock::Text { text } => write!(self.out, "{text}")?,
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
                    write!(self.out, "{prefix}{}", self.style.dim(t))?;
                    self.mid_text = true;
                    self.in_thought = true;
                }
            }
            SessionUpdate::UserMessageChunk { content } => {
                if let Some(t) = content.as_text() {
                    self.end_text()?;
                    writeln!(self.out, "{} {}", self.style.cyan(">"), self.style.dim(t))?;
                }
            }
            SessionUpdate::ToolCall(call) => {
                self.end_text()?;
                self.clear_live()?;
                self.tool_calls += 1;
                let name = call.tool_name.clone().unwrap_or_else(|| format!("{:?}", call.kind).to_lowercase());
                let done = matches!(call.status, ToolCallStatus::Completed | ToolCallStatus::Failed);
                self.tools.insert(call.tool_call_id.clone(), Tool { title: call.title.clone(), name: name.clone() });
                if done {
                    self.finished_line(&call.tool_call_id, call.status, None)?;
                } else if self.live {
                    let line = format!("{} {} {}", self.style.yellow("…"), self.style.bold(&name), call.title);
                    write!(self.out, "{line}")?;
                    self.live_line = Some(line);
                } else {
                    writeln!(self.out, "{} {} {}", self.style.yellow("→"), self.style.bold(&name), call.title)?;
                }
            }
            SessionUpdate::ToolCallUpdate(update) => {
                if let Some(status @ (ToolCallStatus::Completed | ToolCallStatus::Failed)) = update.status {
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
                    writeln!(self.out, "  {mark} {}", e.content)?;
                }
            }
            SessionUpdate::Error { message, fatal } => {
                self.end_text()?;
                self.clear_live()?;
                let label = if *fatal { "error" } else { "warning" };
                let painted = if *fatal { self.style.red(label) } else { self.style.yellow(label) };
                writeln!(self.out, "{painted}: {message}")?;
            }
            SessionUpdate::Usage { .. } => {}
        }
        self.out.flush()
    }

    fn finished_line(
        &mut self,
        id: &str,
        status: ToolCallStatus,
        content: Option<&[ToolCallContent]>,
    ) -> io::Result<()> {
        let (name, title) = match self.tools.get(id) {
            Some(t) => (t.name.clone(), t.title.clone()),
            None => ("tool".to_string(), id.to_string()),
        };
        let mark = if status == ToolCallStatus::Failed {
            self.tool_failures += 1;
            self.style.red("✗")
        } else {
            self.style.green("✓")
        };
        writeln!(self.out, "{mark} {} {title}", self.style.bold(&name))?;
        let text: String = content
            .unwrap_or(&[])
            .iter()
            .filter_map(|c| match c {
                ToolCallContent::Content { content } => content.as_text().map(str::to_string),
                ToolCallContent::Diff(d) => Some(format!("(diff of {})", d.path)),
            })
            .collect::<Vec<_>>()
            .join("\n");
        let lines: Vec<&str> = text.lines().collect();
        for l in lines.iter().take(3) {
            writeln!(self.out, "  {}", self.style.dim(&agentstream_core::tools::truncate_chars(l, 120)))?;
        }
        if lines.len() > 3 {
            writeln!(self.out, "  {}", self.style.dim(&format!("… {} more lines", lines.len() - 3)))?;
        }
        Ok(())
    }

    /// Render raw stderr text (shown dimmed when asked for).
    pub fn stderr(&mut self, text: &str) -> io::Result<()> {
        if self.show_stderr {
            self.end_text()?;
            self.clear_live()?;
            for l in text.lines() {
                writeln!(self.out, "{}", self.style.dim(&format!("stderr: {l}")))?;
            }
        }
        Ok(())
    }

    /// Lifecycle events are summarized at the end; only pauses and kills are shown as they happen.
    pub fn lifecycle(&mut self, ev: &LifecycleEvent) -> io::Result<()> {
        use agentstream_core::LifecycleReason::*;
        if matches!(ev.reason, SandboxPause | SandboxResume | SandboxKilled) {
            self.end_text()?;
            self.clear_live()?;
            writeln!(self.out, "{}", self.style.dim(&format!("[{}]", ev.reason.as_str())))?;
        }
        Ok(())
    }

    /// Print the closing summary line.
    pub fn summary(&mut self, line: &str, ok: bool) -> io::Result<()> {
        self.end_text()?;
        self.clear_live()?;
        let mark = if ok { self.style.green("✓") } else { self.style.red("✗") };
        writeln!(self.out, "{mark} {line}")?;
        self.out.flush()
    }
}
