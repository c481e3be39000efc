//! `on_event` lifecycle hooks, derived from a run's sequenced stream (decisions.md §5).
//!
//! Hook events are a PROJECTION of the stream, not extra items in it: each carries the
//! `sequence` of the stream item it was derived from, and the hook view ends with exactly one
//! terminal hook (`run.completed` / `run.failed` / `run.cancelled` / `run.stopped`), derived
//! from the run's terminal lifecycle event.
//!
//! | hook | derived from | details (snake_case) |
//! |---|---|---|
//! | `run.started` | lifecycle `run_start` / `command_start` | `operation` (`run` or `command`) |
//! | `step.started` | the first model output of a new LLM message (new `messageId`, or model output after tool results) | `step_index`, `message_id`?, `model`? |
//! | `model.completed` | the end of that step: its first tool result, the next step, or the end of the run | `step_index`, `message_id`?, `model`?, `usage`? (the step's last call usage) |
//! | `tool.started` | `tool_call` | `step_index`, `tool_call_id`, `tool_name`?, `kind`, `title`, `arguments`? |
//! | `tool.preliminary_result` | `tool_call_update` still `in_progress` with content | `step_index`, `tool_call_id`, `tool_name`?, `result` |
//! | `tool.completed` | `tool_call_update` `completed` | `step_index`, `tool_call_id`, `tool_name`?, `output`, `raw_output`? |
//! | `tool.failed` | `tool_call_update` `failed`; or a call in flight at cancellation whose tool is idempotent (`retryable: true`) | `step_index`, `tool_call_id`, `tool_name`?, `error`, `retryable`? |
//! | `tool.indeterminate` | a call in flight when the run was cancelled or died: whether its effect landed cannot be known | `step_index`, `tool_call_id`, `tool_name`?, `detail` |
//! | `run.waiting_for_human` | a tool result in which the harness reports a permission prompt or denial | `step_index`, `pause` {`kind`, `tool_call_id`, `tool_name`?, `reason`} |
//! | `response.output_text.delta` | `agent_message_chunk` text | `step_index`, `delta` |
//! | `response.reasoning.delta` | `agent_thought_chunk` text | `step_index`, `delta` |
//! | `run.completed` | lifecycle `run_complete` / `command_complete` | `output` (the final answer: the message text of the last step that had any), `usage`? |
//! | `run.failed` | lifecycle `run_failed` / `command_failed` | `error` |
//! | `run.cancelled` | lifecycle `run_interrupted` / `command_interrupted` | `reason`, `last_sequence`, `usage`? |
//! | `run.stopped` | an interrupted run whose stop was a timeout | `stop_reason` |
//!
//! `status` is the run's status when the hook fires: `running`, then exactly one of
//! `completed`, `failed`, `cancelled`, `stopped` on the terminal hook.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::event::{OutputEvent, SessionUpdate, SharedStr, ToolCallContent, ToolCallStatus, UsageScope};
use crate::lifecycle::{LifecycleEvent, LifecycleReason};
use crate::stream::InterruptedToolCall;

/// One hook event, in the canonical (C/Go) shape: envelope fields plus `details`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HookEvent {
    /// Dotted event name, e.g. `tool.started`.
    #[serde(rename = "type")]
    pub event_type: String,
    /// The run it belongs to.
    pub run_id: String,
    /// The agent's id (the configured agent name unless the caller set one).
    pub agent_id: String,
    /// When it fired, ISO 8601 UTC.
    pub timestamp: String,
    /// The run's status at emission.
    pub status: HookStatus,
    /// The sequence of the stream item it was derived from.
    pub sequence: u64,
    /// Event-specific facts, snake_case keys.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub details: Map<String, Value>,
}

/// The run status a hook reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum HookStatus {
    /// The run is going on.
    Running,
    /// Ended well.
    Completed,
    /// Ended badly.
    Failed,
    /// Stopped by a cancellation.
    Cancelled,
    /// Stopped by a stop condition (a timeout).
    Stopped,
}

impl HookEvent {
    /// True for the four terminal hook types.
    pub fn is_terminal(&self) -> bool {
        matches!(self.event_type.as_str(), "run.completed" | "run.failed" | "run.cancelled" | "run.stopped")
    }

    /// The Python/PHP shape: one flat object, snake_case (`type`, `run_id`, `agent_id`,
    /// `timestamp`, `status`, `sequence`, then the details merged in).
    pub fn to_flat_snake(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("type".into(), Value::String(self.event_type.clone()));
        m.insert("run_id".into(), Value::String(self.run_id.clone()));
        m.insert("agent_id".into(), Value::String(self.agent_id.clone()));
        m.insert("timestamp".into(), Value::String(self.timestamp.clone()));
        m.insert("status".into(), serde_json::to_value(self.status).unwrap_or(Value::Null));
        m.insert("sequence".into(), Value::from(self.sequence));
        for (k, v) in &self.details {
            m.entry(k.clone()).or_insert_with(|| v.clone());
        }
        m
    }

    /// The TypeScript shape: flat, every key camelCase (`runId`, `agentId`, `stepIndex`, …),
    /// nested detail objects included.
    pub fn to_flat_camel(&self) -> Map<String, Value> {
        match crate::casing::camel_case_keys(Value::Object(self.to_flat_snake())) {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }
}

/// Facts about how a run ended that the terminal lifecycle event does not carry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TerminalFacts {
    /// Why it was cancelled (for an interrupted run).
    pub cancel_reason: Option<String>,
    /// True when the interruption was a stop condition (timeout) rather than a cancellation.
    pub stopped_by_timeout: bool,
    /// Why it failed (for a failed run).
    pub error: Option<String>,
    /// The sequence of the last item before the terminal one (−1 when none).
    pub last_sequence: i64,
    /// Usage so far, as a JSON object (absent when the harness reported none).
    pub usage: Option<Value>,
}

/// What the deriver is shown for each stream item.
#[derive(Debug, Clone, Copy)]
pub enum HookInput<'a> {
    /// A content event.
    Content(&'a OutputEvent),
    /// A lifecycle event (for a terminal one, `facts` must be given).
    Lifecycle(&'a LifecycleEvent, Option<&'a TerminalFacts>),
    /// A raw stdout/stderr item: no hook, but it still consumes a sequence number.
    Raw,
}

#[derive(Debug, Default)]
struct Step {
    index: u64,
    message_id: Option<SharedStr>,
    model: Option<SharedStr>,
    usage: Option<Value>,
    text: String,
    last_sequence: u64,
}

#[derive(Debug, Clone)]
struct OpenTool {
    name: Option<String>,
    step_index: u64,
}

/// Derives hook events from one run's stream items. Sans-IO and deterministic: the caller
/// passes each item's sequence and the timestamp to stamp.
#[derive(Debug)]
pub struct HookDeriver {
    run_id: String,
    agent_id: String,
    steps_started: u64,
    step: Option<Step>,
    after_tool_result: bool,
    tools: HashMap<String, OpenTool>,
    open_order: Vec<String>,
    idempotent_tools: HashSet<String>,
    final_answer: String,
    terminated: bool,
}

const PERMISSION_MARKERS: &[&str] = &[
    "requested permissions to",
    "requires permission to use",
    "permission was declined",
    "haven't granted it yet",
    "permission denied by user",
];

impl HookDeriver {
    /// A deriver for one run.
    pub fn new(run_id: impl Into<String>, agent_id: impl Into<String>) -> Self {
        HookDeriver {
            run_id: run_id.into(),
            agent_id: agent_id.into(),
            steps_started: 0,
            step: None,
            after_tool_result: false,
            tools: HashMap::new(),
            open_order: Vec::new(),
            idempotent_tools: HashSet::new(),
            final_answer: String::new(),
            terminated: false,
        }
    }

    /// Tools (by harness-native name) whose calls are safe to retry: a call of one of these in
    /// flight at cancellation is reported `tool.failed` with `retryable: true` instead of
    /// `tool.indeterminate`.
    pub fn with_idempotent_tools(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.idempotent_tools = names.into_iter().collect();
        self
    }

    /// True once the terminal hook was derived; later inputs produce nothing.
    pub fn is_terminated(&self) -> bool {
        self.terminated
    }

    /// Ids of tool calls started and not finished, oldest first.
    pub fn open_tool_calls(&self) -> &[String] {
        &self.open_order
    }

    fn hook(&self, ty: &str, status: HookStatus, sequence: u64, ts: &str, details: Map<String, Value>) -> HookEvent {
        HookEvent {
            event_type: ty.to_string(),
            run_id: self.run_id.clone(),
            agent_id: self.agent_id.clone(),
            timestamp: ts.to_string(),
            status,
            sequence,
            details,
        }
    }

    /// Feed one stream item; hooks derived from it are appended to `out`.
    pub fn observe(&mut self, sequence: u64, input: HookInput<'_>, timestamp: &str, out: &mut Vec<HookEvent>) {
        if self.terminated {
            return;
        }
        match input {
            HookInput::Raw => {}
            HookInput::Content(ev) => self.content(sequence, ev, timestamp, out),
            HookInput::Lifecycle(ev, facts) => self.lifecycle(sequence, ev, facts, timestamp, out),
        }
    }

    fn lifecycle(
        &mut self,
        sequence: u64,
        ev: &LifecycleEvent,
        facts: Option<&TerminalFacts>,
        ts: &str,
        out: &mut Vec<HookEvent>,
    ) {
        use LifecycleReason::*;
        match ev.reason {
            RunStart | CommandStart => {
                let mut d = Map::new();
                let op = if ev.reason == RunStart { "run" } else { "command" };
                d.insert("operation".into(), json!(op));
                out.push(self.hook("run.started", HookStatus::Running, sequence, ts, d));
            }
            reason if reason.is_terminal() => {
                let default_facts = TerminalFacts { last_sequence: sequence as i64 - 1, ..Default::default() };
                let facts = facts.unwrap_or(&default_facts);
                self.end_step(ts, out);
                let interrupted = matches!(reason, RunInterrupted | CommandInterrupted);
                let failed =
                    matches!(reason, RunFailed | CommandFailed | RunBackgroundFailed | CommandBackgroundFailed);
                if interrupted || failed {
                    self.settle_open_tools(sequence, ts, out);
                }
                let (ty, status, mut d) = if interrupted && facts.stopped_by_timeout {
                    let mut d = Map::new();
                    d.insert(
                        "stop_reason".into(),
                        json!(facts.cancel_reason.clone().unwrap_or_else(|| "timeout".into())),
                    );
                    ("run.stopped", HookStatus::Stopped, d)
                } else if interrupted {
                    let mut d = Map::new();
                    d.insert("reason".into(), json!(facts.cancel_reason.clone().unwrap_or_else(|| "cancelled".into())));
                    d.insert("last_sequence".into(), json!(facts.last_sequence));
                    ("run.cancelled", HookStatus::Cancelled, d)
                } else if failed {
                    let mut d = Map::new();
                    d.insert("error".into(), json!(facts.error.clone().unwrap_or_else(|| "the run failed".into())));
                    ("run.failed", HookStatus::Failed, d)
                } else {
                    let mut d = Map::new();
                    d.insert("output".into(), json!(self.final_answer));
                    ("run.completed", HookStatus::Completed, d)
                };
                if let Some(u) = &facts.usage {
                    if ty != "run.failed" {
                        d.insert("usage".into(), u.clone());
                    }
                }
                out.push(self.hook(ty, status, sequence, ts, d));
                self.terminated = true;
            }
            _ => {}
        }
    }

    /// Calls still in flight when a run ends abnormally: their effect cannot be known.
    fn settle_open_tools(&mut self, sequence: u64, ts: &str, out: &mut Vec<HookEvent>) {
        for id in std::mem::take(&mut self.open_order) {
            let Some(tool) = self.tools.remove(&id) else { continue };
            let mut d = Map::new();
            d.insert("step_index".into(), json!(tool.step_index));
            d.insert("tool_call_id".into(), json!(id));
            if let Some(n) = &tool.name {
                d.insert("tool_name".into(), json!(n));
            }
            let fate = InterruptedToolCall::of(tool.name.as_deref(), &self.idempotent_tools);
            if fate == InterruptedToolCall::FailedRetryable {
                d.insert(
                    "error".into(),
                    json!("stopped while running; the tool is idempotent, so it is safe to retry"),
                );
                d.insert("retryable".into(), json!(true));
                out.push(self.hook("tool.failed", HookStatus::Running, sequence, ts, d));
            } else {
                d.insert("detail".into(), json!("stopped after dispatch: whether its effect landed cannot be known"));
                out.push(self.hook("tool.indeterminate", HookStatus::Running, sequence, ts, d));
            }
        }
    }

    fn end_step(&mut self, ts: &str, out: &mut Vec<HookEvent>) {
        if let Some(step) = self.step.take() {
            let mut d = Map::new();
            d.insert("step_index".into(), json!(step.index));
            if let Some(m) = &step.message_id {
                d.insert("message_id".into(), json!(m));
            }
            if let Some(m) = &step.model {
                d.insert("model".into(), json!(m));
            }
            if let Some(u) = step.usage {
                d.insert("usage".into(), u);
            }
            if !step.text.is_empty() {
                self.final_answer = step.text;
            }
            // Never behind a hook already emitted: hooks stay in sequence order.
            let sequence = step.last_sequence.max(out.last().map_or(0, |h: &HookEvent| h.sequence));
            out.push(self.hook("model.completed", HookStatus::Running, sequence, ts, d));
        }
    }

    fn start_step_if_new(&mut self, sequence: u64, ev: &OutputEvent, ts: &str, out: &mut Vec<HookEvent>) -> u64 {
        let new_step = match &self.step {
            None => true,
            Some(step) => match (&ev.message_id, &step.message_id) {
                (Some(a), Some(b)) => a != b,
                _ => self.after_tool_result,
            },
        };
        if new_step {
            self.end_step(ts, out);
            let index = self.steps_started;
            self.steps_started += 1;
            self.step = Some(Step {
                index,
                message_id: ev.message_id.clone(),
                model: ev.model.clone(),
                usage: None,
                text: String::new(),
                last_sequence: sequence,
            });
            let mut d = Map::new();
            d.insert("step_index".into(), json!(index));
            if let Some(m) = &ev.message_id {
                d.insert("message_id".into(), json!(m));
            }
            if let Some(m) = &ev.model {
                d.insert("model".into(), json!(m));
            }
            out.push(self.hook("step.started", HookStatus::Running, sequence, ts, d));
        }
        self.after_tool_result = false;
        let step = self.step.as_mut().expect("a step is open");
        step.last_sequence = sequence;
        step.index
    }

    fn content(&mut self, sequence: u64, ev: &OutputEvent, ts: &str, out: &mut Vec<HookEvent>) {
        match &ev.update {
            SessionUpdate::AgentMessageChunk { content } | SessionUpdate::AgentThoughtChunk { content } => {
                let step = self.start_step_if_new(sequence, ev, ts, out);
                if let Some(text) = content.as_text() {
                    let thought = matches!(ev.update, SessionUpdate::AgentThoughtChunk { .. });
                    if !thought {
                        if let Some(s) = self.step.as_mut() {
                            crate::answer::push_capped(&mut s.text, text);
                        }
                    }
                    let mut d = Map::new();
                    d.insert("step_index".into(), json!(step));
                    d.insert("delta".into(), json!(text));
                    let ty = if thought { "response.reasoning.delta" } else { "response.output_text.delta" };
                    out.push(self.hook(ty, HookStatus::Running, sequence, ts, d));
                }
            }
            SessionUpdate::ToolCall(call) => {
                let step = self.start_step_if_new(sequence, ev, ts, out);
                if !self.tools.contains_key(&call.tool_call_id) {
                    self.open_order.push(call.tool_call_id.clone());
                }
                self.tools
                    .insert(call.tool_call_id.clone(), OpenTool { name: call.tool_name.clone(), step_index: step });
                let mut d = Map::new();
                d.insert("step_index".into(), json!(step));
                d.insert("tool_call_id".into(), json!(call.tool_call_id));
                if let Some(n) = &call.tool_name {
                    d.insert("tool_name".into(), json!(n));
                }
                d.insert("kind".into(), serde_json::to_value(call.kind).unwrap_or(Value::Null));
                d.insert("title".into(), json!(call.title));
                if let Some(input) = &call.raw_input {
                    d.insert("arguments".into(), input.to_value());
                }
                out.push(self.hook("tool.started", HookStatus::Running, sequence, ts, d));
                if matches!(call.status, ToolCallStatus::Completed | ToolCallStatus::Failed) {
                    // A call announced already finished (e.g. a file change): it is not in flight.
                    self.close_tool(&call.tool_call_id);
                }
            }
            SessionUpdate::ToolCallUpdate(update) => {
                // Tool progress or a result proves the model's message is complete: the model call
                // ended before its tools ran, so `model.completed` comes before the tool's hooks.
                self.end_step(ts, out);
                let known = self.tools.get(&update.tool_call_id).cloned();
                let step = known.as_ref().map(|t| t.step_index).or(self.step.as_ref().map(|s| s.index)).unwrap_or(0);
                let text = content_text(update.content.as_deref());
                let mut d = Map::new();
                d.insert("step_index".into(), json!(step));
                d.insert("tool_call_id".into(), json!(update.tool_call_id));
                if let Some(n) = known.as_ref().and_then(|t| t.name.clone()) {
                    d.insert("tool_name".into(), json!(n));
                }
                match update.status {
                    Some(ToolCallStatus::Completed) => {
                        d.insert("output".into(), json!(text));
                        if let Some(raw) = &update.raw_output {
                            d.insert("raw_output".into(), raw.to_value());
                        }
                        self.close_tool(&update.tool_call_id);
                        self.after_tool_result = true;
                        out.push(self.hook("tool.completed", HookStatus::Running, sequence, ts, d));
                    }
                    Some(ToolCallStatus::Failed) => {
                        d.insert("error".into(), json!(text));
                        self.close_tool(&update.tool_call_id);
                        self.after_tool_result = true;
                        let denied = PERMISSION_MARKERS.iter().any(|m| text.contains(m));
                        let pause_details = denied.then(|| {
                            let mut p = Map::new();
                            p.insert("step_index".into(), json!(step));
                            p.insert(
                                "pause".into(),
                                json!({
                                    "kind": "permission",
                                    "tool_call_id": update.tool_call_id,
                                    "tool_name": known.as_ref().and_then(|t| t.name.clone()),
                                    "reason": text,
                                }),
                            );
                            p
                        });
                        out.push(self.hook("tool.failed", HookStatus::Running, sequence, ts, d));
                        if let Some(p) = pause_details {
                            out.push(self.hook("run.waiting_for_human", HookStatus::Running, sequence, ts, p));
                        }
                    }
                    _ if update.content.as_ref().is_some_and(|c| !c.is_empty()) => {
                        d.insert("result".into(), json!(text));
                        out.push(self.hook("tool.preliminary_result", HookStatus::Running, sequence, ts, d));
                    }
                    _ => {}
                }
            }
            SessionUpdate::Usage { scope: UsageScope::Call, usage } => {
                if let Some(step) = self.step.as_mut() {
                    step.usage = serde_json::to_value(usage).ok();
                    step.last_sequence = sequence;
                }
            }
            _ => {}
        }
    }

    fn close_tool(&mut self, id: &str) {
        self.tools.remove(id);
        self.open_order.retain(|x| x != id);
    }
}

/// The text of a tool result's content blocks, joined (images are skipped).
fn content_text(content: Option<&[ToolCallContent]>) -> String {
    let mut s = String::new();
    for c in content.unwrap_or(&[]) {
        if let ToolCallContent::Content { content } = c {
            if let Some(t) = content.as_text() {
                s.push_str(t);
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{ToolCall, ToolCallUpdate, ToolKind};
    use crate::lifecycle::{AgentState, SandboxState};

    fn lc(reason: LifecycleReason) -> LifecycleEvent {
        LifecycleEvent {
            sandbox_id: None,
            sandbox: SandboxState::Running,
            agent: AgentState::Running,
            timestamp: "t".into(),
            browser: None,
            reason,
        }
    }

    fn types(out: &[HookEvent]) -> Vec<&str> {
        out.iter().map(|h| h.event_type.as_str()).collect()
    }

    fn msg(text: &str, mid: &str) -> OutputEvent {
        let mut e = OutputEvent::new(SessionUpdate::message(text));
        e.message_id = Some(mid.into());
        e
    }

    #[test]
    fn a_tool_step_then_an_answer() {
        let mut d = HookDeriver::new("r", "claude");
        let mut out = Vec::new();
        d.observe(0, HookInput::Lifecycle(&lc(LifecycleReason::RunStart), None), "t", &mut out);
        let mut call = OutputEvent::new(SessionUpdate::ToolCall(ToolCall {
            tool_call_id: "t1".into(),
            title: "`ls`".into(),
            tool_name: Some("Bash".into()),
            kind: ToolKind::Execute,
            status: ToolCallStatus::Pending,
            raw_input: None,
            content: None,
            locations: None,
        }));
        call.message_id = Some("m1".into());
        d.observe(1, HookInput::Content(&call), "t", &mut out);
        let mut upd = ToolCallUpdate::new("t1");
        upd.status = Some(ToolCallStatus::Completed);
        upd.content = Some(vec![ToolCallContent::text("a\nb")]);
        d.observe(2, HookInput::Content(&OutputEvent::new(SessionUpdate::ToolCallUpdate(upd))), "t", &mut out);
        d.observe(3, HookInput::Content(&msg("Two ", "m2")), "t", &mut out);
        d.observe(4, HookInput::Content(&msg("files.", "m2")), "t", &mut out);
        d.observe(5, HookInput::Raw, "t", &mut out);
        d.observe(6, HookInput::Lifecycle(&lc(LifecycleReason::RunComplete), None), "t", &mut out);
        assert_eq!(
            types(&out),
            [
                "run.started",
                "step.started",
                "tool.started",
                "model.completed",
                "tool.completed",
                "step.started",
                "response.output_text.delta",
                "response.output_text.delta",
                "model.completed",
                "run.completed"
            ]
        );
        assert_eq!(out.last().unwrap().details["output"], "Two files.");
        assert_eq!(out.last().unwrap().status, HookStatus::Completed);
        assert!(out.windows(2).all(|w| w[0].sequence <= w[1].sequence));
        d.observe(7, HookInput::Content(&msg("late", "m3")), "t", &mut out);
        assert_eq!(out.len(), 10, "nothing after the terminal hook");
    }

    #[test]
    fn in_flight_tools_become_indeterminate_or_retryable_on_cancel() {
        let mut d = HookDeriver::new("r", "codex").with_idempotent_tools(["Read".to_string()]);
        let mut out = Vec::new();
        for (i, (id, name)) in [("a", "Bash"), ("b", "Read")].iter().enumerate() {
            let call = OutputEvent::new(SessionUpdate::ToolCall(ToolCall {
                tool_call_id: id.to_string(),
                title: name.to_string(),
                tool_name: Some(name.to_string()),
                kind: ToolKind::Other,
                status: ToolCallStatus::InProgress,
                raw_input: None,
                content: None,
                locations: None,
            }));
            d.observe(i as u64, HookInput::Content(&call), "t", &mut out);
        }
        let facts = TerminalFacts { cancel_reason: Some("caller".into()), last_sequence: 1, ..Default::default() };
        d.observe(2, HookInput::Lifecycle(&lc(LifecycleReason::RunInterrupted), Some(&facts)), "t", &mut out);
        let t = types(&out);
        assert_eq!(&t[t.len() - 4..], ["model.completed", "tool.indeterminate", "tool.failed", "run.cancelled"]);
        assert_eq!(out[out.len() - 2].details["retryable"], true);
        assert_eq!(out.last().unwrap().details["reason"], "caller");
    }

    #[test]
    fn shapes_per_language() {
        let mut d = Map::new();
        d.insert("step_index".into(), json!(1));
        let h = HookEvent {
            event_type: "step.started".into(),
            run_id: "r".into(),
            agent_id: "a".into(),
            timestamp: "t".into(),
            status: HookStatus::Running,
            sequence: 3,
            details: d,
        };
        assert_eq!(
            serde_json::to_string(&h).unwrap(),
            r#"{"type":"step.started","run_id":"r","agent_id":"a","timestamp":"t","status":"running","sequence":3,"details":{"step_index":1}}"#
        );
        assert_eq!(h.to_flat_snake()["step_index"], 1);
        assert_eq!(h.to_flat_camel()["stepIndex"], 1);
        assert_eq!(h.to_flat_camel()["runId"], "r");
    }
}
