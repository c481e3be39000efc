//! JSON Schema of every wire type, generated from the Rust types (feature `schema`).
//!
//! The checked-in copy at `core/schema/events.schema.json` is the one description of what the
//! core hands to other languages: content and lifecycle events, the run envelope, hook events
//! (with the details of every hook type), the run result and outcome, backpressure and decode
//! statistics, the agent and channel names, and the error table. The code generator
//! (`codegen/`, `make generate`) writes the Python, TypeScript and Go declarations from it; a
//! test keeps the file in sync with the types (`UPDATE_SCHEMA=1 cargo test -p agentstream-core
//! --test schema` rewrites it).
//!
//! The schema describes what the core SERIALIZES (schemars' serialize contract): a field that is
//! skipped when empty is optional, an `Option` that is written as `null` is required and
//! nullable.
//!
//! Besides standard JSON Schema (draft 2020-12) the document has one extension: `x-errors`, the
//! error table as data (`name`, `code`, `advice`, `description` per [`ErrorKind`], in code order).
//!
//! Two definitions refine a common object with a `oneOf` whose arms constrain some of its
//! properties (a discriminated union over shared fields):
//! * `Envelope`: per `channel`, the type of `event`;
//! * `HookEvent`: per `type`, the `status` it can have and the type of `details` (the hook
//!   catalogue below: which details each hook type carries; `hooks.rs` builds them as maps).

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::channel::Channel;
use crate::decode::{Agent, DecodeStats, Diagnostic};
use crate::error::ErrorKind;
use crate::event::{OutputEvent, TokenUsage, ToolKind};
use crate::hooks::HookEvent;
use crate::lifecycle::LifecycleEvent;
use crate::runner::RunResult;
use crate::stream::{Envelope, Pressure, RunOutcome};
use crate::usage::UsageTotals;

/// The schema's file name under `core/schema/`.
pub const SCHEMA_FILE: &str = "events.schema.json";

/// Every top-level wire type, by the name other languages use for it.
#[derive(JsonSchema)]
#[schemars(title = "Agentstream")]
#[allow(dead_code)]
struct WireTypes {
    output_event: OutputEvent,
    lifecycle_event: LifecycleEvent,
    envelope: Envelope,
    hook_event: HookEvent,
    hook_details: HookDetails,
    run_result: RunResult,
    run_outcome: RunOutcome,
    pressure: Pressure,
    decode_stats: DecodeStats,
    diagnostic: Diagnostic,
    agent: Agent,
    channel: Channel,
    cancel_kind: CancelKind,
    error_kind: ErrorKind,
}

/// Why a run was cancelled, machine-readable: `RunResult.cancel_kind`, the `kind` of a
/// [`CancelReason`](crate::stream::CancelReason) (its `code()`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CancelKind {
    /// The caller asked.
    Caller,
    /// The reader left before the run ended.
    ReaderLeft,
    /// The reader held unread events for longer than `stall_seconds`.
    Stalled,
    /// The run exceeded its time limit.
    Timeout,
}

/// Browser live-view facts of a `browser_ready` lifecycle event: `live_url`, `session_id`,
/// `session_tag` (strings; other keys may appear).
#[derive(Debug, Clone, JsonSchema)]
#[allow(dead_code)]
pub struct BrowserInfo(BTreeMap<String, String>);

impl JsonSchema for Envelope {
    fn schema_name() -> Cow<'static, str> {
        "Envelope".into()
    }

    // Envelope has a hand-written Serialize (stream/envelope.rs); the tests validate real
    // envelopes of every channel against this.
    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        let output = g.subschema_for::<OutputEvent>();
        let lifecycle = g.subschema_for::<LifecycleEvent>();
        let channel = g.subschema_for::<Channel>();
        let arm = |title: &str, name: &str, event: &Schema, doc: &str| {
            json!({
                "title": title,
                "description": doc,
                "properties": {"channel": {"const": name}, "event": event},
            })
        };
        let text = json_schema!({"type": "string"});
        json_schema!({
            "description": "One numbered item of a run: every channel shares one gapless `sequence` from 0.",
            "type": "object",
            "properties": {
                "runId": {"description": "The run it belongs to.", "type": "string"},
                "sequence": {
                    "description": "Its position in the run: one gapless sequence from 0 across all four channels.",
                    "type": "integer", "format": "uint64", "minimum": 0
                },
                "channel": channel,
                "event": {
                    "description": "The item: an OutputEvent (content), a LifecycleEvent (lifecycle) or the text (stdout, stderr).",
                    "anyOf": [output, lifecycle, {"type": "string"}]
                },
                "coalesced": {
                    "description": "How many later text deltas were merged into this one under backpressure (absent when none).",
                    "type": "integer", "format": "uint64", "minimum": 1
                }
            },
            "required": ["runId", "sequence", "channel", "event"],
            "oneOf": [
                arm("ContentEnvelope", "content", &output, "A parsed event."),
                arm("LifecycleEnvelope", "lifecycle", &lifecycle, "A sandbox/agent state transition."),
                arm("StdoutEnvelope", "stdout", &text, "One line of the harness's stdout, as printed."),
                arm("StderrEnvelope", "stderr", &text, "Harness stderr text, as received."),
            ]
        })
    }
}

// ---------------------------------------------------------------------------------------------
// The hook catalogue: the details each hook type carries (hooks.rs builds them as JSON maps).
// `core/tests/schema.rs` deserializes the details of every hook derived from every golden trace
// (and from synthetic cancel/timeout/permission runs) into these types, unknown keys refused,
// so the catalogue cannot drift from what hooks.rs emits. A new hook type is one variant here.

/// The hook types and the details of each (the `HookEvent` refinement).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "type", content = "details")]
#[allow(dead_code)]
pub enum HookDetails {
    /// A run (or command) started.
    #[serde(rename = "run.started")]
    #[schemars(title = "RunStartedEvent", extend("x-status" = "running"))]
    RunStarted(RunStartedDetails),
    /// A run that continues a harness session started (instead of `run.started`).
    #[serde(rename = "run.resumed")]
    #[schemars(title = "RunResumedEvent", extend("x-status" = "running"))]
    RunResumed(RunResumedDetails),
    /// A new model turn started (a new LLM message).
    #[serde(rename = "step.started")]
    #[schemars(title = "StepStartedEvent", extend("x-status" = "running"))]
    StepStarted(StepStartedDetails),
    /// The model call of a step ended.
    #[serde(rename = "model.completed")]
    #[schemars(title = "ModelCompletedEvent", extend("x-status" = "running"))]
    ModelCompleted(ModelCompletedDetails),
    /// A step ended: its model reply and every tool call it requested are done.
    #[serde(rename = "step.completed")]
    #[schemars(title = "StepCompletedEvent", extend("x-status" = "running"))]
    StepCompleted(StepStartedDetails),
    /// A tool call started.
    #[serde(rename = "tool.started")]
    #[schemars(title = "ToolStartedEvent", extend("x-status" = "running"))]
    ToolStarted(ToolStartedDetails),
    /// A tool reported progress.
    #[serde(rename = "tool.preliminary_result")]
    #[schemars(title = "ToolPreliminaryResultEvent", extend("x-status" = "running"))]
    ToolPreliminaryResult(ToolPreliminaryResultDetails),
    /// A tool returned.
    #[serde(rename = "tool.completed")]
    #[schemars(title = "ToolCompletedEvent", extend("x-status" = "running"))]
    ToolCompleted(ToolCompletedDetails),
    /// A tool failed (or was stopped while running and is safe to retry: `retryable`).
    #[serde(rename = "tool.failed")]
    #[schemars(title = "ToolFailedEvent", extend("x-status" = "running"))]
    ToolFailed(ToolFailedDetails),
    /// A tool call was in flight when the run was cancelled or died: its effect cannot be known.
    #[serde(rename = "tool.indeterminate")]
    #[schemars(title = "ToolIndeterminateEvent", extend("x-status" = "running"))]
    ToolIndeterminate(ToolIndeterminateDetails),
    /// The harness reported a permission prompt or denial.
    #[serde(rename = "run.waiting_for_human")]
    #[schemars(title = "RunWaitingForHumanEvent", extend("x-status" = "running"))]
    RunWaitingForHuman(RunWaitingForHumanDetails),
    /// A piece of the answer text.
    #[serde(rename = "response.output_text.delta")]
    #[schemars(title = "ResponseOutputTextDeltaEvent", extend("x-status" = "running"))]
    ResponseOutputTextDelta(TextDeltaDetails),
    /// A piece of reasoning text.
    #[serde(rename = "response.reasoning.delta")]
    #[schemars(title = "ResponseReasoningDeltaEvent", extend("x-status" = "running"))]
    ResponseReasoningDelta(TextDeltaDetails),
    /// Terminal: the run completed.
    #[serde(rename = "run.completed")]
    #[schemars(title = "RunCompletedEvent", extend("x-status" = "completed"))]
    RunCompleted(RunCompletedDetails),
    /// Terminal: the run failed.
    #[serde(rename = "run.failed")]
    #[schemars(title = "RunFailedEvent", extend("x-status" = "failed"))]
    RunFailed(RunFailedDetails),
    /// Terminal: the run was cancelled.
    #[serde(rename = "run.cancelled")]
    #[schemars(title = "RunCancelledEvent", extend("x-status" = "cancelled"))]
    RunCancelled(RunCancelledDetails),
    /// Terminal: a stop condition (timeout) ended the run.
    #[serde(rename = "run.stopped")]
    #[schemars(title = "RunStoppedEvent", extend("x-status" = "stopped"))]
    RunStopped(RunStoppedDetails),
}

/// What a `run.started` hook started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunOperation {
    /// A harness run.
    Run,
    /// A command (`execute_command`).
    Command,
}

/// Details of `run.started`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunStartedDetails {
    /// Whether a harness run or a command started.
    pub operation: RunOperation,
}

/// Details of `run.resumed`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunResumedDetails {
    /// Whether a harness run or a command started (always a run: commands do not resume).
    pub operation: RunOperation,
    /// How the previous run of the continued session ended (`completed`, `failed`,
    /// `cancelled`), or `unknown`.
    pub previous_status: String,
}

/// Details of `step.started` and `step.completed`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepStartedDetails {
    /// The step's index in the run, from 0.
    pub step_index: u64,
    /// The harness's id of the step's LLM message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// The model the harness named for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// Details of `model.completed`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelCompletedDetails {
    /// The step's index in the run, from 0.
    pub step_index: u64,
    /// The harness's id of the step's LLM message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// The model the harness named for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The step's last per-call usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
}

/// Details of `tool.started`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolStartedDetails {
    /// The step the call belongs to.
    pub step_index: u64,
    /// The harness's id for the call.
    pub tool_call_id: String,
    /// The harness-native tool name, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The tool's category.
    pub kind: ToolKind,
    /// For people to read.
    pub title: String,
    /// The tool input, verbatim (the harness's key names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

/// Details of `tool.preliminary_result`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolPreliminaryResultDetails {
    /// The step the call belongs to.
    pub step_index: u64,
    /// The harness's id for the call.
    pub tool_call_id: String,
    /// The harness-native tool name, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The progress text so far.
    pub result: String,
}

/// Details of `tool.completed`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCompletedDetails {
    /// The step the call belongs to.
    pub step_index: u64,
    /// The harness's id for the call.
    pub tool_call_id: String,
    /// The harness-native tool name, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The result text.
    pub output: String,
    /// The harness's structured result record, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<Value>,
}

/// Details of `tool.failed`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolFailedDetails {
    /// The step the call belongs to.
    pub step_index: u64,
    /// The harness's id for the call.
    pub tool_call_id: String,
    /// The harness-native tool name, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// What went wrong (the harness's text).
    pub error: String,
    /// True for a call of an idempotent tool stopped while running: safe to retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retryable: Option<bool>,
}

/// Details of `tool.indeterminate`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolIndeterminateDetails {
    /// The step the call belongs to.
    pub step_index: u64,
    /// The harness's id for the call.
    pub tool_call_id: String,
    /// The harness-native tool name, verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// Why its effect cannot be known.
    pub detail: String,
}

/// Why a run waits for a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PauseKind {
    /// The harness asked for (or was denied) a permission.
    Permission,
}

/// The pause of a `run.waiting_for_human` hook.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HookPause {
    /// Why the run waits.
    pub kind: PauseKind,
    /// The call the harness asked about.
    pub tool_call_id: String,
    /// Its harness-native tool name (`null` when unknown).
    pub tool_name: Option<String>,
    /// The harness's text.
    pub reason: String,
}

/// Details of `run.waiting_for_human`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunWaitingForHumanDetails {
    /// The step the call belongs to.
    pub step_index: u64,
    /// What the run waits for.
    pub pause: HookPause,
}

/// Details of `response.output_text.delta` and `response.reasoning.delta`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TextDeltaDetails {
    /// The step the text belongs to.
    pub step_index: u64,
    /// The piece of text.
    pub delta: String,
}

/// Details of `run.completed`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCompletedDetails {
    /// The final answer: the message text of the last step that had any.
    pub output: String,
    /// The run's token totals, when the harness reported any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageTotals>,
}

/// Details of `run.failed`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunFailedDetails {
    /// Why it failed.
    pub error: String,
}

/// Details of `run.cancelled`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCancelledDetails {
    /// Why it was cancelled.
    pub reason: String,
    /// The sequence of the last item before the terminal one (-1 when none).
    pub last_sequence: i64,
    /// The run's token totals, when the harness reported any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageTotals>,
}

/// Details of `run.stopped`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunStoppedDetails {
    /// The stop condition (`timeout`).
    pub stop_reason: String,
    /// The run's token totals, when the harness reported any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageTotals>,
}

// ---------------------------------------------------------------------------------------------

/// The schema document as a JSON value.
pub fn wire_schema() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().for_serialize().into_generator();
    let mut doc = generator.into_root_schema_for::<WireTypes>().to_value();
    refine_hook_event(&mut doc);
    optional_is_never_null(&mut doc);
    let errors: Vec<Value> = ErrorKind::ALL
        .iter()
        .map(|k| {
            json!({
                "name": k.name(),
                "code": k.code(),
                "advice": k.advice(),
                "description": error_description(&doc, k.name()),
            })
        })
        .collect();
    if let Some(root) = doc.as_object_mut() {
        root.insert("x-errors".into(), Value::Array(errors));
    }
    doc
}

/// The schema document, pretty-printed with a trailing newline (what is checked in).
pub fn events_schema_json() -> String {
    let mut text = serde_json::to_string_pretty(&wire_schema()).expect("schema serializes");
    text.push('\n');
    text
}

/// Move the hook catalogue into `HookEvent` as its `oneOf` refinement: each arm fixes `type`,
/// the `status` that type reports (`x-status` of the catalogue variant) and the `details` type.
fn refine_hook_event(doc: &mut Value) {
    let Some(defs) = doc.get_mut("$defs").and_then(Value::as_object_mut) else { return };
    let Some(Value::Object(catalogue)) = defs.remove("HookDetails") else { return };
    let arms: Vec<Value> = catalogue
        .get("oneOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|variant| {
            let mut arm = Map::new();
            for key in ["title", "description"] {
                if let Some(v) = variant.get(key) {
                    arm.insert(key.into(), v.clone());
                }
            }
            let props = variant.get("properties").cloned().unwrap_or(Value::Null);
            let status = variant.get("x-status").cloned().unwrap_or(Value::Null);
            arm.insert(
                "properties".into(),
                json!({
                    "type": {"const": props["type"]["const"]},
                    "status": {"const": status},
                    "details": props["details"],
                }),
            );
            arm.insert("required".into(), json!(["details"]));
            Value::Object(arm)
        })
        .collect();
    if let Some(Value::Object(hook)) = defs.get_mut("HookEvent") {
        hook.insert("oneOf".into(), Value::Array(arms));
    }
    if let Some(root) = doc.get_mut("properties").and_then(Value::as_object_mut) {
        root.remove("hook_details");
    }
    if let Some(Value::Array(required)) = doc.get_mut("required") {
        required.retain(|r| r != "hook_details");
    }
}

/// A field the core skips when it is `None` is absent, never `null`: schemars still lists `null`
/// among its types, so drop it from every property that is not required. (A required `Option`
/// is written as `null`, so it keeps it.)
fn optional_is_never_null(node: &mut Value) {
    match node {
        Value::Object(obj) => {
            let required: Vec<String> = obj
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
                .unwrap_or_default();
            if let Some(Value::Object(props)) = obj.get_mut("properties") {
                for (name, prop) in props.iter_mut() {
                    if !required.contains(name) {
                        drop_null(prop);
                    }
                }
            }
            for v in obj.values_mut() {
                optional_is_never_null(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(optional_is_never_null),
        _ => {}
    }
}

fn drop_null(prop: &mut Value) {
    let Some(obj) = prop.as_object_mut() else { return };
    if let Some(Value::Array(types)) = obj.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        let single = if kept.len() == 1 { kept[0].clone() } else { Value::Array(kept) };
        obj.insert("type".into(), single);
    }
    if let Some(Value::Array(arms)) = obj.get("anyOf") {
        let kept: Vec<Value> = arms.iter().filter(|a| a.get("type") != Some(&json!("null"))).cloned().collect();
        if kept.len() == 1 {
            obj.remove("anyOf");
            if let Value::Object(only) = &kept[0] {
                for (k, v) in only {
                    obj.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        } else {
            obj.insert("anyOf".into(), Value::Array(kept));
        }
    }
}

/// The doc comment of an `ErrorKind` variant, as schemars put it in the `ErrorKind` definition.
fn error_description(doc: &Value, name: &str) -> Value {
    doc["$defs"]["ErrorKind"]["oneOf"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|arm| arm["const"] == name)
        .and_then(|arm| arm.get("description").cloned())
        .unwrap_or(Value::Null)
}
