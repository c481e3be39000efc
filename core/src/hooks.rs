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
//! | `run.resumed` | lifecycle `run_start` of a run that continues a harness session (instead of `run.started`) | `operation`, `previous_status` (the previous run's final status, or `unknown`) |
//! | `step.started` | the first model output of a new LLM message (new `messageId`, or model output after tool results) | `step_index`, `message_id`?, `model`? |
//! | `model.completed` | the model's reply of that step is complete: its first tool call or tool result, the next step, or the end of the run | `step_index`, `message_id`?, `model`?, `usage`? (the step's last call usage reported by then; a claude/qwen line that asks for a tool gives its usage before the call, so that reply's usage is in it) |
//! | `tool.started` | `tool_call` | `step_index`, `tool_call_id`, `tool_name`?, `kind`, `title`, `arguments`? |
//! | `tool.preliminary_result` | `tool_call_update` still `in_progress` with content | `step_index`, `tool_call_id`, `tool_name`?, `result` |
//! | `tool.completed` | `tool_call_update` `completed` | `step_index`, `tool_call_id`, `tool_name`?, `output`, `raw_output`? |
//! | `tool.failed` | `tool_call_update` `failed`; or a call in flight at cancellation whose tool is idempotent (`retryable: true`) | `step_index`, `tool_call_id`, `tool_name`?, `error`, `retryable`? |
//! | `tool.indeterminate` | a call in flight when the run was cancelled or died: whether its effect landed cannot be known | `step_index`, `tool_call_id`, `tool_name`?, `detail` |
//! | `run.waiting_for_human` | a tool result in which the harness reports a permission prompt or denial | `step_index`, `pause` {`kind`, `tool_call_id`, `tool_name`?, `reason`} |
//! | `step.completed` | the step ended (the next step started, or the run completed) and every tool it requested has finished | `step_index`, `message_id`?, `model`? |
//! | `response.output_text.delta` | `agent_message_chunk` text | `step_index`, `delta` |
//! | `response.reasoning.delta` | `agent_thought_chunk` text | `step_index`, `delta` |
//! | `run.completed` | lifecycle `run_complete` / `command_complete` | `output` (the final answer: the message text of the main agent's last step that had any), `usage`? |
//! | `run.failed` | lifecycle `run_failed` / `command_failed` | `error` |
//! | `run.cancelled` | lifecycle `run_interrupted` / `command_interrupted` | `reason`, `last_sequence`, `usage`? |
//! | `run.stopped` | an interrupted run whose stop was a timeout | `stop_reason` |
//!
//! Order within a step (decisions.md §5, the seed's runtime order):
//!
//! | order | hooks |
//! |---|---|
//! | 1 | `step.started` |
//! | 2 | `response.reasoning.delta` / `response.output_text.delta` as the reply streams |
//! | 3 | `model.completed` (the reply is complete: it carries the usage reported by then; usage printed later goes to `usage` updates and the run totals) |
//! | 4 | per tool call of that reply: `tool.started` < `tool.preliminary_result`* < `tool.completed` \| `tool.failed` (\| `tool.indeterminate` at an abnormal end), then `run.waiting_for_human` after a denied call |
//! | 5 | `step.completed`, before the next step's `step.started` (or, when the step's tools still run, e.g. a subagent's steps nested in its call, right after its last tool hook) |
//!
//! Steps are tracked per agent: the events of a subagent (those with a `parentToolCallId`) make
//! their own steps, which may run beside the main agent's (a background subagent's lines
//! interleave with the main agent's); a subagent's step in progress ends when the call it runs
//! under returns. `run.completed`'s `output` is the main agent's last text (a subagent's only
//! when the main agent printed none).
//!
//! Every tool hook of a step falls between that step's `model.completed` and its
//! `step.completed`. The step in progress when a run fails or is cancelled gets no
//! `step.completed`: the terminal hook ends it, after the `tool.indeterminate` / retryable
//! `tool.failed` of its calls still in flight. Hooks are in `sequence` order; `model.completed`
//! is stamped with the item that proved the reply complete when that is earlier than the step's
//! last item.
//!
//! `status` is the run's status when the hook fires: `running`, then exactly one of
//! `completed`, `failed`, `cancelled`, `stopped` on the terminal hook.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value, json};

use crate::event::{OutputEvent, SessionUpdate, SharedStr, ToolCallContent, ToolCallStatus, UsageScope};
use crate::lifecycle::{LifecycleEvent, LifecycleReason};
use crate::stream::InterruptedToolCall;

mod steps;
use steps::{Step, Steps};

/// One hook event, the Rust shape of decisions.md §5 (the seed's `AgentEvent`): envelope fields,
/// `timestamp_ms`, and the event's facts in `details`.
///
/// Its JSON (serde) is the canonical wire shape every other language is given, unchanged:
/// `{"type", "run_id", "agent_id", "timestamp": ISO 8601 UTC with milliseconds, "status",
/// "sequence", "details"?}` (`details` omitted when empty). Deserializing reads that shape back
/// (a `timestamp` that is not IS 8601 UTC is an error).
#[derive(Debug, Clone, PartialEq)]
pub struct HookEvent {
    /// Dotted event name, e.g. `tool.started`.
    pub event_type: String,
    /// The run it belongs to.
    pub run_id: String,
    /// The agent's id (the configured agent name unless the caller set one).
    pub agent_id: String,
    /// When it fired, in milliseconds since the Unix epoch (UTC).
    pub timestamp_ms: u64,
    /// The run's status at emission.
    pub status: HookStatus,
    /// The sequence of the stream item it was derived from.
    pub sequence: u64,
    /// Event-specific facts, snake_case keys (empty for hooks without any).
    pub details: Map<String, Value>,
}

/// The wire shape of a [`HookEvent`] as written (borrowed: serializing copies nothing).
#[derive(Serialize)]
struct HookEventOut<'a> {
    #[serde(rename = "type")]
    event_type: &'a str,
    run_id: &'a str,
    agent_id: &'a str,
    timestamp: &'a str,
    status: HookStatus,
    sequence: u64,
    #[serde(skip_serializing_if = "Map::is_empty")]
    details: &'a Map<String, Value>,
}

/// The wire shape of a [`HookEvent`] as read (and as the JSON Schema describes it).
#[derive(Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(rename = "HookEvent"))]
struct HookEventWire {
    /// Dotted event name, e.g. `tool.started`.
    #[serde(rename = "type")]
    event_type: String,
    /// The run it belongs to.
    run_id: String,
    /// The agent's id.
    agent_id: String,
    /// When it fired, ISO 8601 UTC with milliseconds.
    timestamp: String,
    /// The run's status at emission.
    status: HookStatus,
    /// The sequence of the stream item it was derived from.
    sequence: u64,
    /// Event-specific facts, snake_case keys.
    #[serde(default)]
    details: Map<String, Value>,
}

impl Serialize for HookEvent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let timestamp = self.timestamp();
        HookEventOut {
            event_type: &self.event_type,
            run_id: &self.run_id,
            agent_id: &self.agent_id,
            timestamp: &timestamp,
            status: self.status,
            sequence: self.sequence,
            details: &self.details,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for HookEvent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let w = HookEventWire::deserialize(deserializer)?;
        let timestamp_ms =
            crate::time::millis_from_iso8601(&w.timestamp).and_then(|ms| u64::try_from(ms).ok()).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "hook timestamp {:?} is not ISO 8601 UTC after 1970 (e.g. 2026-01-01T00:00:00.000Z)",
                    w.timestamp
                ))
            })?;
        Ok(HookEvent {
            event_type: w.event_type,
            run_id: w.run_id,
            agent_id: w.agent_id,
            timestamp_ms,
            status: w.status,
            sequence: w.sequence,
            details: w.details,
        })
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for HookEvent {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "HookEvent".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        HookEventWire::json_schema(generator)
    }
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
    /// When it fired as the wire shows it: ISO 8601 UTC with milliseconds.
    pub fn timestamp(&self) -> String {
        crate::time::iso8601_from_millis(i64::try_from(self.timestamp_ms).unwrap_or(i64::MAX))
    }

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
        m.insert("timestamp".into(), Value::String(self.timestamp()));
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

#[derive(Debug, Clone)]
struct OpenTool {
    name: Option<String>,
    step_index: u64,
    /// Its place in [`HookDeriver::open_order`].
    order: u64,
}

/// A step whose model reply has ended (a later step started) while tools it requested are
/// still running: its `step.completed` waits for the last of them.
#[derive(Debug, Clone)]
struct WaitingStep {
    index: u64,
    message_id: Option<SharedStr>,
    model: Option<SharedStr>,
}

/// Derives hook events from one run's stream items. Sans-IO and deterministic: the caller
/// passes each item's sequence and the time to stamp.
#[derive(Debug)]
pub struct HookDeriver {
    run_id: String,
    agent_id: String,
    steps_started: u64,
    /// The steps in progress, one per scope (main agent, each subagent), oldest first.
    steps: Steps,
    waiting: Vec<WaitingStep>,
    tools: HashMap<String, OpenTool>,
    /// The open calls' ids in the order they started (by a count of calls started), and how
    /// many are open per step: each tool event costs the same however many are open (a search
    /// of them all per event was quadratic on a harness that leaves thousands open).
    open_order: BTreeMap<u64, String>,
    started_tools: u64,
    open_per_step: HashMap<u64, usize>,
    idempotent_tools: HashSet<String>,
    /// Calls whose result came before their announcement: a late `tool_call` for one is not
    /// started (its `tool.completed` / `tool.failed` was already derived), so not left open.
    finished_early: crate::stream::FinishedEarly,
    /// A call's usage printed before its message's first output (a line that asks for a tool
    /// gives its usage first), for the step that message starts.
    next_step_usage: Option<PendingUsage>,
    /// The message text of the main agent's last step that had any.
    final_answer: String,
    /// The same over every scope (the answer when the main agent printed none).
    last_text: String,
    /// The sequence of the last hook derived: no hook is stamped behind it.
    last_sequence: u64,
    terminated: bool,
    /// `Some(previous status)` when the run continues a harness session.
    resumed: Option<String>,
}

/// A call's usage given before its message's first output (see `HookDeriver::next_step_usage`).
#[derive(Debug)]
struct PendingUsage {
    scope: Option<SharedStr>,
    message_id: SharedStr,
    usage: Option<Value>,
    /// The usage item's own sequence.
    sequence: u64,
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
            steps: Steps::default(),
            waiting: Vec::new(),
            tools: HashMap::new(),
            open_order: BTreeMap::new(),
            started_tools: 0,
            open_per_step: HashMap::new(),
            idempotent_tools: HashSet::new(),
            finished_early: Default::default(),
            next_step_usage: None,
            final_answer: String::new(),
            last_text: String::new(),
            last_sequence: 0,
            terminated: false,
            resumed: None,
        }
    }

    /// This run continues a harness session: it starts with `run.resumed` (details:
    /// `previous_status`, the previous run's final status or `unknown`) instead of
    /// `run.started` (decisions.md §5).
    pub fn resuming(mut self, previous_status: impl Into<String>) -> Self {
        self.resumed = Some(previous_status.into());
        self
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
    pub fn open_tool_calls(&self) -> Vec<String> {
        self.open_order.values().cloned().collect()
    }

    /// Emit one hook. Its sequence is never behind a hook already emitted (hooks stay in
    /// sequence order, also when one is derived from an earlier item, as `model.completed` is).
    fn emit(
        &mut self,
        ty: &str,
        status: HookStatus,
        sequence: u64,
        ts: u64,
        details: Map<String, Value>,
        out: &mut Vec<HookEvent>,
    ) {
        let sequence = sequence.max(self.last_sequence);
        self.last_sequence = sequence;
        out.push(HookEvent {
            event_type: ty.to_string(),
            run_id: self.run_id.clone(),
            agent_id: self.agent_id.clone(),
            timestamp_ms: ts,
            status,
            sequence,
            details,
        });
    }

    /// Feed one stream item; hooks derived from it are appended to `out`.
    pub fn observe(&mut self, sequence: u64, input: HookInput<'_>, timestamp_ms: u64, out: &mut Vec<HookEvent>) {
        if self.terminated {
            return;
        }
        match input {
            HookInput::Raw => {}
            HookInput::Content(ev) => {
                self.settle_next_step_usage(Some(ev));
                self.content(sequence, ev, timestamp_ms, out)
            }
            HookInput::Lifecycle(ev, facts) => {
                self.settle_next_step_usage(None);
                self.lifecycle(sequence, ev, facts, timestamp_ms, out)
            }
        }
    }

    /// A usage kept for the step its message would start goes to the step in progress after
    /// all when what comes next is not that message's first output: qwen's partial mode gives
    /// each complete line of one streamed reply an id of its own, and the reply stays one step.
    fn settle_next_step_usage(&mut self, next: Option<&OutputEvent>) {
        let Some(pending) = &self.next_step_usage else { return };
        let starts_its_step = next.is_some_and(|ev| {
            ev.parent_tool_call_id == pending.scope
                && ev.message_id.as_ref() == Some(&pending.message_id)
                && matches!(
                    ev.update,
                    SessionUpdate::AgentMessageChunk { .. }
                        | SessionUpdate::AgentThoughtChunk { .. }
                        | SessionUpdate::ToolCall(_)
                )
        });
        if starts_its_step {
            return;
        }
        if let Some(pending) = self.next_step_usage.take() {
            self.step_takes_usage(pending.scope.as_ref(), pending.usage, pending.sequence);
        }
    }

    /// `scope`'s step in progress takes a call's usage given at `sequence` (it is what its
    /// `model.completed` carries), unless its reply is complete already.
    fn step_takes_usage(&mut self, scope: Option<&SharedStr>, usage: Option<Value>, sequence: u64) {
        let at = self.step_of(scope);
        if let Some(step) = at.and_then(|at| self.steps.get_mut(at)).filter(|s| !s.model_completed) {
            step.usage = usage;
            step.last_sequence = sequence;
        }
    }

    fn lifecycle(
        &mut self,
        sequence: u64,
        ev: &LifecycleEvent,
        facts: Option<&TerminalFacts>,
        ts: u64,
        out: &mut Vec<HookEvent>,
    ) {
        use LifecycleReason::*;
        match ev.reason {
            RunStart | CommandStart => {
                let mut d = Map::new();
                let op = if ev.reason == RunStart { "run" } else { "command" };
                d.insert("operation".into(), json!(op));
                match self.resumed.clone() {
                    Some(previous) => {
                        d.insert("previous_status".into(), json!(previous));
                        self.emit("run.resumed", HookStatus::Running, sequence, ts, d, out);
                    }
                    None => self.emit("run.started", HookStatus::Running, sequence, ts, d, out),
                }
            }
            reason if reason.is_terminal() => {
                let default_facts = TerminalFacts { last_sequence: sequence as i64 - 1, ..Default::default() };
                let facts = facts.unwrap_or(&default_facts);
                let interrupted = matches!(reason, RunInterrupted | CommandInterrupted);
                let failed =
                    matches!(reason, RunFailed | CommandFailed | RunBackgroundFailed | CommandBackgroundFailed);
                if interrupted || failed {
                    // The steps in progress did not complete: the terminal hook ends them.
                    for at in self.steps.indexes() {
                        self.complete_model(at, sequence, ts, out);
                    }
                    for step in self.steps.take_all() {
                        self.keep_answer(step.scope.is_none(), step.text);
                    }
                    self.settle_open_tools(sequence, ts, out);
                    self.waiting.clear();
                } else {
                    while let Some(at) = self.steps.first() {
                        self.end_step(at, ts, out);
                    }
                    for step in std::mem::take(&mut self.waiting) {
                        self.step_completed(&step, sequence, ts, out);
                    }
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
                    let answer = if self.final_answer.is_empty() { &self.last_text } else { &self.final_answer };
                    d.insert("output".into(), json!(answer));
                    ("run.completed", HookStatus::Completed, d)
                };
                if let Some(u) = &facts.usage {
                    if ty != "run.failed" {
                        d.insert("usage".into(), u.clone());
                    }
                }
                self.emit(ty, status, sequence, ts, d, out);
                self.terminated = true;
            }
            _ => {}
        }
    }

    /// Calls still in flight when a run ends abnormally: their effect cannot be known.
    fn settle_open_tools(&mut self, sequence: u64, ts: u64, out: &mut Vec<HookEvent>) {
        self.open_per_step.clear();
        for id in std::mem::take(&mut self.open_order).into_values() {
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
                self.emit("tool.failed", HookStatus::Running, sequence, ts, d, out);
            } else {
                d.insert("detail".into(), json!("stopped after dispatch: whether its effect landed cannot be known"));
                self.emit("tool.indeterminate", HookStatus::Running, sequence, ts, d, out);
            }
        }
    }

    /// The step's envelope details: `step_index`, `message_id`?, `model`?.
    fn step_details(index: u64, message_id: Option<&SharedStr>, model: Option<&SharedStr>) -> Map<String, Value> {
        let mut d = Map::new();
        d.insert("step_index".into(), json!(index));
        if let Some(m) = message_id {
            d.insert("message_id".into(), json!(m));
        }
        if let Some(m) = model {
            d.insert("model".into(), json!(m));
        }
        d
    }

    /// The index of the step in progress of `scope`.
    fn step_of(&self, scope: Option<&SharedStr>) -> Option<u64> {
        self.steps.of_scope(scope.map(|s| &**s))
    }

    /// The model's reply in step `at` is complete: `model.completed` (once per step), with the
    /// usage reported by then. It comes before the hooks of the tools that reply requested, so
    /// it is stamped with the item that proved it (`sequence`) when that comes before the
    /// step's last item.
    fn complete_model(&mut self, at: u64, sequence: u64, ts: u64, out: &mut Vec<HookEvent>) {
        let Some(step) = self.steps.get_mut(at).filter(|s| !s.model_completed) else { return };
        step.model_completed = true;
        let mut d = Self::step_details(step.index, step.message_id.as_ref(), step.model.as_ref());
        if let Some(u) = step.usage.take() {
            d.insert("usage".into(), u);
        }
        let sequence = step.last_sequence.min(sequence);
        self.emit("model.completed", HookStatus::Running, sequence, ts, d, out);
    }

    fn keep_answer(&mut self, main_agent: bool, text: String) {
        if text.is_empty() {
            return;
        }
        if main_agent {
            self.final_answer.clone_from(&text);
        }
        self.last_text = text;
    }

    /// Step `at` ends (its scope starts a new step, or the run completes): `model.completed` if
    /// not yet, then `step.completed` — at once, or when the last of its tools finishes.
    fn end_step(&mut self, at: u64, ts: u64, out: &mut Vec<HookEvent>) {
        let Some(last) = self.steps.get(at).map(|s| s.last_sequence) else { return };
        self.complete_model(at, last, ts, out);
        let Some(step) = self.steps.remove(at) else { return };
        let waiting = WaitingStep { index: step.index, message_id: step.message_id, model: step.model };
        self.keep_answer(step.scope.is_none(), step.text);
        if self.open_per_step.contains_key(&waiting.index) {
            self.waiting.push(waiting);
        } else {
            self.step_completed(&waiting, last, ts, out);
        }
    }

    fn step_completed(&mut self, step: &WaitingStep, sequence: u64, ts: u64, out: &mut Vec<HookEvent>) {
        let d = Self::step_details(step.index, step.message_id.as_ref(), step.model.as_ref());
        self.emit("step.completed", HookStatus::Running, sequence, ts, d, out);
    }

    /// The step `ev` belongs to, started if it is new; its index.
    fn start_step_if_new(&mut self, sequence: u64, ev: &OutputEvent, ts: u64, out: &mut Vec<HookEvent>) -> u64 {
        let scope = ev.parent_tool_call_id.as_ref();
        let current = self.step_of(scope);
        let new_step = match current.and_then(|at| self.steps.get(at)) {
            None => true,
            Some(step) => match (&ev.message_id, &step.message_id) {
                (Some(a), Some(b)) => a != b,
                _ => step.after_tool_result,
            },
        };
        let at = match current {
            Some(at) if !new_step => at,
            _ => {
                if let Some(at) = current {
                    self.end_step(at, ts, out);
                }
                let index = self.steps_started;
                self.steps_started += 1;
                let usage = self
                    .next_step_usage
                    .take_if(|p| p.scope.as_ref() == scope && Some(&p.message_id) == ev.message_id.as_ref())
                    .and_then(|p| p.usage);
                self.steps.insert(Step {
                    index,
                    scope: scope.cloned(),
                    message_id: ev.message_id.clone(),
                    model: ev.model.clone(),
                    last_sequence: sequence,
                    usage,
                    ..Step::default()
                });
                let d = Self::step_details(index, ev.message_id.as_ref(), ev.model.as_ref());
                self.emit("step.started", HookStatus::Running, sequence, ts, d, out);
                index
            }
        };
        let step = &mut self.steps[at];
        step.after_tool_result = false;
        step.last_sequence = sequence;
        at
    }

    fn content(&mut self, sequence: u64, ev: &OutputEvent, ts: u64, out: &mut Vec<HookEvent>) {
        match &ev.update {
            SessionUpdate::AgentMessageChunk { content } | SessionUpdate::AgentThoughtChunk { content } => {
                let at = self.start_step_if_new(sequence, ev, ts, out);
                let step = self.steps[at].index;
                if let Some(text) = content.as_text() {
                    let thought = matches!(ev.update, SessionUpdate::AgentThoughtChunk { .. });
                    if !thought {
                        self.steps.push_text(at, text);
                    }
                    let mut d = Map::new();
                    d.insert("step_index".into(), json!(step));
                    d.insert("delta".into(), json!(text));
                    let ty = if thought { "response.reasoning.delta" } else { "response.output_text.delta" };
                    self.emit(ty, HookStatus::Running, sequence, ts, d, out);
                }
            }
            SessionUpdate::ToolCall(call) => {
                let at = self.start_step_if_new(sequence, ev, ts, out);
                let step = self.steps[at].index;
                // A tool call is requested by a complete reply: the model call is over before
                // its tools run, so `model.completed` comes first.
                self.complete_model(at, sequence, ts, out);
                if !self.tools.contains_key(&call.tool_call_id) && self.finished_early.contains(&call.tool_call_id) {
                    // Announced after its result: its end was derived already; starting it now
                    // would put `tool.started` after it and leave the call open for ever.
                    return;
                }
                let order = match self.tools.get(&call.tool_call_id).map(|t| (t.step_index, t.order)) {
                    Some((was_in, order)) => {
                        // Announced again (maybe from another step): counted where it is now.
                        self.step_closes(was_in);
                        order
                    }
                    None => {
                        self.started_tools += 1;
                        self.open_order.insert(self.started_tools, call.tool_call_id.clone());
                        self.started_tools
                    }
                };
                *self.open_per_step.entry(step).or_default() += 1;
                self.tools.insert(
                    call.tool_call_id.clone(),
                    OpenTool { name: call.tool_name.clone(), step_index: step, order },
                );
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
                self.emit("tool.started", HookStatus::Running, sequence, ts, d, out);
                if matches!(call.status, ToolCallStatus::Completed | ToolCallStatus::Failed) {
                    // A call announced already finished (e.g. a file change): it is not in flight.
                    self.close_tool(&call.tool_call_id, sequence, ts, out);
                }
            }
            SessionUpdate::ToolCallUpdate(update) => {
                let known = self.tools.get(&update.tool_call_id).cloned();
                let scope = ev.parent_tool_call_id.as_ref();
                // Tool progress or a result proves the reply of the step that requested the call
                // is complete; an orphan result belongs to its scope's step in progress.
                let owner = match &known {
                    Some(tool) => self.steps.get(tool.step_index).map(|s| s.index),
                    None => self.step_of(scope),
                };
                if let Some(at) = owner {
                    self.complete_model(at, sequence, ts, out);
                }
                let step =
                    known.as_ref().map(|t| t.step_index).or_else(|| owner.map(|at| self.steps[at].index)).unwrap_or(0);
                if matches!(update.status, Some(ToolCallStatus::Completed | ToolCallStatus::Failed)) {
                    if known.is_none() {
                        self.finished_early.insert(&update.tool_call_id);
                    }
                    self.end_steps_under(&update.tool_call_id, ts, out);
                    // The next output of this scope starts a new step.
                    if let Some(at) = self.step_of(scope) {
                        self.steps[at].after_tool_result = true;
                    }
                }
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
                        self.emit("tool.completed", HookStatus::Running, sequence, ts, d, out);
                        self.close_tool(&update.tool_call_id, sequence, ts, out);
                    }
                    Some(ToolCallStatus::Failed) => {
                        d.insert("error".into(), json!(text));
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
                        self.emit("tool.failed", HookStatus::Running, sequence, ts, d, out);
                        if let Some(p) = pause_details {
                            self.emit("run.waiting_for_human", HookStatus::Running, sequence, ts, p, out);
                        }
                        self.close_tool(&update.tool_call_id, sequence, ts, out);
                    }
                    _ if update.content.as_ref().is_some_and(|c| !c.is_empty()) => {
                        d.insert("result".into(), json!(text));
                        self.emit("tool.preliminary_result", HookStatus::Running, sequence, ts, d, out);
                    }
                    _ => {}
                }
            }
            SessionUpdate::Usage { scope: UsageScope::Call, usage } => {
                let scope = ev.parent_tool_call_id.as_ref();
                let at = self.step_of(scope);
                let current_message = at.and_then(|at| self.steps.get(at)).map(|s| s.message_id.as_ref());
                let usage = serde_json::to_value(usage).ok();
                match ev.message_id.as_ref().filter(|id| current_message.is_none_or(|m| m.is_some_and(|m| m != *id))) {
                    // Another message's, before its first output: that message's step takes it.
                    Some(id) => {
                        self.next_step_usage =
                            Some(PendingUsage { scope: scope.cloned(), message_id: id.clone(), usage, sequence })
                    }
                    None => self.step_takes_usage(scope, usage, sequence),
                }
            }
            _ => {}
        }
    }

    /// The steps of a subagent still open under call `id` end: its call returned (a foreground
    /// subagent is done when its call's result arrives).
    fn end_steps_under(&mut self, id: &str, ts: u64, out: &mut Vec<HookEvent>) {
        while let Some(at) = self.steps.of_scope(Some(id)) {
            self.end_step(at, ts, out);
        }
    }

    /// One call of step `index` is no longer open there.
    fn step_closes(&mut self, index: u64) {
        if let Some(n) = self.open_per_step.get_mut(&index) {
            *n -= 1;
            if *n == 0 {
                self.open_per_step.remove(&index);
            }
        }
    }

    /// A call finished: a step that ended while it ran completes with its last call.
    fn close_tool(&mut self, id: &str, sequence: u64, ts: u64, out: &mut Vec<HookEvent>) {
        let Some(tool) = self.tools.remove(id) else { return };
        self.open_order.remove(&tool.order);
        self.step_closes(tool.step_index);
        let done = !self.open_per_step.contains_key(&tool.step_index);
        if let Some(at) = self.waiting.iter().position(|w| w.index == tool.step_index).filter(|_| done) {
            let step = self.waiting.remove(at);
            self.step_completed(&step, sequence, ts, out);
        }
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
        d.observe(0, HookInput::Lifecycle(&lc(LifecycleReason::RunStart), None), 0, &mut out);
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
        d.observe(1, HookInput::Content(&call), 0, &mut out);
        let mut upd = ToolCallUpdate::new("t1");
        upd.status = Some(ToolCallStatus::Completed);
        upd.content = Some(vec![ToolCallContent::text("a\nb")]);
        d.observe(2, HookInput::Content(&OutputEvent::new(SessionUpdate::ToolCallUpdate(upd))), 0, &mut out);
        d.observe(3, HookInput::Content(&msg("Two ", "m2")), 0, &mut out);
        d.observe(4, HookInput::Content(&msg("files.", "m2")), 0, &mut out);
        d.observe(5, HookInput::Raw, 0, &mut out);
        d.observe(6, HookInput::Lifecycle(&lc(LifecycleReason::RunComplete), None), 0, &mut out);
        assert_eq!(
            types(&out),
            [
                "run.started",
                "step.started",
                "model.completed",
                "tool.started",
                "tool.completed",
                "step.completed",
                "step.started",
                "response.output_text.delta",
                "response.output_text.delta",
                "model.completed",
                "step.completed",
                "run.completed"
            ]
        );
        assert_eq!(out.last().unwrap().details["output"], "Two files.");
        assert_eq!(out.last().unwrap().status, HookStatus::Completed);
        assert!(out.windows(2).all(|w| w[0].sequence <= w[1].sequence));
        d.observe(7, HookInput::Content(&msg("late", "m3")), 0, &mut out);
        assert_eq!(out.len(), 12, "nothing after the terminal hook");
    }

    fn call(id: &str, name: &str, mid: Option<&str>) -> OutputEvent {
        let mut e = OutputEvent::new(SessionUpdate::ToolCall(ToolCall {
            tool_call_id: id.into(),
            title: name.into(),
            tool_name: Some(name.into()),
            kind: ToolKind::Other,
            status: ToolCallStatus::Pending,
            raw_input: None,
            content: None,
            locations: None,
        }));
        e.message_id = mid.map(Into::into);
        e
    }

    fn result(id: &str, status: ToolCallStatus) -> OutputEvent {
        let mut upd = ToolCallUpdate::new(id);
        upd.status = Some(status);
        upd.content = Some(vec![ToolCallContent::text("ok")]);
        OutputEvent::new(SessionUpdate::ToolCallUpdate(upd))
    }

    fn call_usage(mid: &str, prompt: u64) -> OutputEvent {
        let mut e = OutputEvent::new(SessionUpdate::Usage {
            scope: UsageScope::Call,
            usage: crate::event::TokenUsage { prompt_tokens: Some(prompt), ..Default::default() },
        });
        e.message_id = Some(mid.into());
        e
    }

    /// Feeds events one by one (each with a fresh output buffer, as the runner does) and
    /// returns every hook.
    fn derive(events: &[OutputEvent], end: LifecycleReason) -> Vec<HookEvent> {
        let mut d = HookDeriver::new("r", "claude");
        let mut all = Vec::new();
        let mut seq = 0;
        let mut feed = |d: &mut HookDeriver, input: HookInput<'_>| {
            let mut out = Vec::new();
            d.observe(seq, input, 0, &mut out);
            seq += 1;
            all.extend(out);
        };
        feed(&mut d, HookInput::Lifecycle(&lc(LifecycleReason::RunStart), None));
        for e in events {
            feed(&mut d, HookInput::Raw);
            feed(&mut d, HookInput::Content(e));
        }
        feed(&mut d, HookInput::Lifecycle(&lc(end), None));
        assert!(all.windows(2).all(|w| w[0].sequence <= w[1].sequence), "hooks in sequence order");
        all
    }

    /// Per step: `step.started` < `model.completed` < its tool hooks < `step.completed`.
    fn assert_step_brackets(hooks: &[HookEvent]) {
        let at = |ty: &str, step: u64| {
            hooks.iter().position(|h| h.event_type == ty && h.details.get("step_index") == Some(&json!(step)))
        };
        for (i, h) in hooks.iter().enumerate() {
            if !h.event_type.starts_with("tool.") {
                continue;
            }
            let step = h.details["step_index"].as_u64().unwrap();
            let model = at("model.completed", step).expect("model.completed of the tool's step");
            assert!(model < i, "{} of step {step} before its model.completed", h.event_type);
            if let Some(done) = at("step.completed", step) {
                assert!(i < done, "{} of step {step} after its step.completed", h.event_type);
            }
        }
    }

    #[test]
    fn model_completed_comes_before_the_tools_it_requested() {
        let mut text = msg("Let me look.", "m1");
        text.model = Some("x".into());
        let hooks = derive(
            &[
                text,
                call_usage("m1", 10),
                call("a", "Bash", Some("m1")),
                call_usage("m1", 12),
                call("b", "Read", Some("m1")),
                result("b", ToolCallStatus::Completed),
                result("a", ToolCallStatus::Failed),
                msg("Done.", "m2"),
            ],
            LifecycleReason::RunComplete,
        );
        assert_eq!(
            types(&hooks),
            [
                "run.started",
                "step.started",
                "response.output_text.delta",
                "model.completed",
                "tool.started",
                "tool.started",
                "tool.completed",
                "tool.failed",
                "step.completed",
                "step.started",
                "response.output_text.delta",
                "model.completed",
                "step.completed",
                "run.completed"
            ]
        );
        // The usage reported by the time the reply was complete; the later report is not in it.
        assert_eq!(hooks[3].details["usage"]["promptTokens"], 10);
        assert_eq!(hooks[3].details["model"], "x");
        assert_step_brackets(&hooks);
    }

    #[test]
    fn a_reply_that_only_asks_for_a_tool_completes_with_the_usage_printed_before_the_call() {
        let hooks = derive(
            &[
                msg("Let me look.", "m1"),
                // A tool-only reply's line: its usage first, then the call (m1 is not over yet).
                call_usage("m2", 20),
                call("a", "Bash", Some("m2")),
                result("a", ToolCallStatus::Completed),
                call_usage("m3", 30),
                msg("Done.", "m4"),
            ],
            LifecycleReason::RunComplete,
        );
        let completed: Vec<_> =
            hooks.iter().filter(|h| h.event_type == "model.completed").map(|h| h.details.get("usage")).collect();
        assert_eq!(completed, [None, Some(&json!({"promptTokens": 20})), None], "m3's usage is not m4's");
        assert_step_brackets(&hooks);
    }

    #[test]
    fn a_usage_under_another_id_that_starts_no_step_is_the_current_steps() {
        // Qwen's partial mode: the reply streams under m1, its complete text line says m2 (and
        // gives no new output), then the run ends.
        let mut later_delta = msg("more", "m1");
        later_delta.message_id = None;
        let hooks = derive(
            &[msg("Hello", "m1"), call_usage("m1", 0), later_delta, call_usage("m2", 15)],
            LifecycleReason::RunComplete,
        );
        let completed: Vec<_> =
            hooks.iter().filter(|h| h.event_type == "model.completed").map(|h| h.details.get("usage")).collect();
        assert_eq!(completed, [Some(&json!({"promptTokens": 15}))]);
    }

    #[test]
    fn a_step_waits_for_its_tools_while_a_subagent_runs() {
        let sub = |mut e: OutputEvent| {
            e.parent_tool_call_id = Some("agent".into());
            e
        };
        let hooks = derive(
            &[
                call("agent", "Agent", Some("m1")),
                sub(msg("Sub here.", "s1")),
                // The main agent goes on while the background subagent works.
                msg("Waiting for it.", "m1"),
                sub(call("sub-tool", "Read", Some("s1"))),
                sub(result("sub-tool", ToolCallStatus::Completed)),
                sub(msg("Sub done.", "s2")),
                result("agent", ToolCallStatus::Completed),
                msg("All done.", "m2"),
            ],
            LifecycleReason::RunComplete,
        );
        let started = hooks.iter().filter(|h| h.event_type == "step.started").count();
        assert_eq!(started, 4, "interleaved lines of one message stay one step: {:?}", types(&hooks));
        assert_step_brackets(&hooks);
        let completed: Vec<u64> = hooks
            .iter()
            .filter(|h| h.event_type == "step.completed")
            .map(|h| h.details["step_index"].as_u64().unwrap())
            .collect();
        // The subagent's steps end when its call returns, then the call's own step completes.
        assert_eq!(completed, [1, 2, 0, 3], "the Agent call's step completes with its call");
        assert_eq!(hooks.last().unwrap().details["output"], "All done.", "the main agent's answer");
    }

    #[test]
    fn subagent_steps_hold_their_text_within_one_budget() {
        let mut d = HookDeriver::new("r", "claude");
        let mut out = Vec::new();
        d.observe(0, HookInput::Lifecycle(&lc(LifecycleReason::RunStart), None), 0, &mut out);
        let piece = "é".repeat(128 * 1024);
        let mut seq = 1;
        let mut feed = |d: &mut HookDeriver, e: &OutputEvent, out: &mut Vec<HookEvent>| {
            out.clear();
            d.observe(seq, HookInput::Content(e), 0, out);
            seq += 1;
        };
        // 32 subagents of 1 MiB each, none of them returned yet.
        for p in 0..32 {
            for _ in 0..4 {
                let mut e = msg(&piece, &format!("m{p}"));
                e.parent_tool_call_id = Some(format!("toolu_{p}").into());
                feed(&mut d, &e, &mut out);
                assert!(out.iter().any(|h| h.event_type == "response.output_text.delta"), "every delta is a hook");
            }
        }
        assert_eq!(d.steps.subagents_text(), steps::SUBAGENTS_TEXT, "the budget, not 32 MiB");
        // The main agent's step is not held back by the subagents'.
        feed(&mut d, &msg(&piece, "main"), &mut out);
        assert_eq!(d.steps[d.step_of(None).unwrap()].text, piece);
        // Each subagent's steps end when its call returns; the text they held goes with them.
        for p in 0..32 {
            feed(&mut d, &result(&format!("toolu_{p}"), ToolCallStatus::Completed), &mut out);
            assert!(d.step_of(Some(&format!("toolu_{p}").into())).is_none());
        }
        assert_eq!(d.steps.subagents_text(), 0);
        feed(&mut d, &msg("Done.", "main"), &mut out);
        out.clear();
        d.observe(seq, HookInput::Lifecycle(&lc(LifecycleReason::RunComplete), None), 0, &mut out);
        assert_eq!(out.last().unwrap().details["output"], format!("{piece}Done."));
    }

    #[test]
    fn an_abnormal_end_gives_the_step_in_progress_no_step_completed() {
        for end in [LifecycleReason::RunFailed, LifecycleReason::RunInterrupted] {
            let hooks = derive(&[msg("Working.", "m1"), call("a", "Bash", Some("m1"))], end);
            let t = types(&hooks);
            assert_eq!(&t[1..5], ["step.started", "response.output_text.delta", "model.completed", "tool.started"]);
            assert_eq!(t[5], "tool.indeterminate");
            assert!(!t.contains(&"step.completed"), "{t:?}");
            assert_step_brackets(&hooks);
        }
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
            d.observe(i as u64, HookInput::Content(&call), 0, &mut out);
        }
        let facts = TerminalFacts { cancel_reason: Some("caller".into()), last_sequence: 1, ..Default::default() };
        d.observe(2, HookInput::Lifecycle(&lc(LifecycleReason::RunInterrupted), Some(&facts)), 0, &mut out);
        let t = types(&out);
        assert_eq!(
            t,
            [
                "step.started",
                "model.completed",
                "tool.started",
                "tool.started",
                "tool.indeterminate",
                "tool.failed",
                "run.cancelled"
            ]
        );
        assert_eq!(out[out.len() - 2].details["retryable"], true);
        assert_eq!(out.last().unwrap().details["reason"], "caller");
    }

    #[test]
    fn thousands_of_open_tools_stay_in_order_and_are_settled_oldest_first() {
        let call = |id: String, status: ToolCallStatus| {
            OutputEvent::new(SessionUpdate::ToolCall(ToolCall {
                tool_call_id: id,
                title: "t".into(),
                tool_name: Some("Bash".into()),
                kind: ToolKind::Execute,
                status,
                raw_input: None,
                content: None,
                locations: None,
            }))
        };
        let mut d = HookDeriver::new("r", "claude");
        let mut out = Vec::new();
        for i in 0..3000u64 {
            d.observe(i, HookInput::Content(&call(format!("c{i}"), ToolCallStatus::InProgress)), 0, &mut out);
        }
        // Every other one finishes; one is announced again (it keeps its place).
        for i in (0..3000u64).step_by(2) {
            d.observe(3000 + i, HookInput::Content(&call(format!("c{i}"), ToolCallStatus::Completed)), 0, &mut out);
        }
        d.observe(7000, HookInput::Content(&call("c1".into(), ToolCallStatus::InProgress)), 0, &mut out);
        let open = d.open_tool_calls();
        assert_eq!(open.len(), 1500);
        assert_eq!((open[0].as_str(), open[1].as_str()), ("c1", "c3"));
        out.clear();
        let facts = TerminalFacts { cancel_reason: Some("caller".into()), last_sequence: 7000, ..Default::default() };
        d.observe(7001, HookInput::Lifecycle(&lc(LifecycleReason::RunInterrupted), Some(&facts)), 0, &mut out);
        let settled: Vec<_> = out
            .iter()
            .filter(|h| h.event_type == "tool.indeterminate")
            .map(|h| h.details["tool_call_id"].clone())
            .collect();
        assert_eq!(settled.len(), 1500);
        assert_eq!((settled[0].as_str(), settled[1499].as_str()), (Some("c1"), Some("c2999")));
        assert!(d.open_tool_calls().is_empty());
    }

    #[test]
    fn shapes_per_language() {
        let mut d = Map::new();
        d.insert("step_index".into(), json!(1));
        let h = HookEvent {
            event_type: "step.started".into(),
            run_id: "r".into(),
            agent_id: "a".into(),
            timestamp_ms: 1_796_221_604_599,
            status: HookStatus::Running,
            sequence: 3,
            details: d,
        };
        assert_eq!(
            serde_json::to_string(&h).unwrap(),
            r#"{"type":"step.started","run_id":"r","agent_id":"a","timestamp":"2026-12-02T14:26:44.599Z","status":"running","sequence":3,"details":{"step_index":1}}"#
        );
        // The wire shape reads back into the Rust shape (decisions.md §5: `timestamp_ms`, `details`).
        let back: HookEvent = serde_json::from_str(&serde_json::to_string(&h).unwrap()).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.timestamp_ms, 1_796_221_604_599);
        let no_details = r#"{"type":"run.started","run_id":"r","agent_id":"a","timestamp":"1970-01-01T00:00:00.000Z","status":"running","sequence":0}"#;
        let h0: HookEvent = serde_json::from_str(no_details).unwrap();
        assert!(h0.details.is_empty() && h0.timestamp_ms == 0);
        assert_eq!(serde_json::to_string(&h0).unwrap(), no_details, "empty details are omitted");
        let bad = no_details.replace("1970-01-01T00:00:00.000Z", "yesterday");
        let err = serde_json::from_str::<HookEvent>(&bad).unwrap_err().to_string();
        assert!(err.contains("ISO 8601"), "{err}");
        assert_eq!(h.to_flat_snake()["step_index"], 1);
        assert_eq!(h.to_flat_snake()["timestamp"], "2026-12-02T14:26:44.599Z");
        assert_eq!(h.to_flat_camel()["stepIndex"], 1);
        assert_eq!(h.to_flat_camel()["runId"], "r");
    }
}
