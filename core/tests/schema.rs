//! The JSON Schema of every wire type is generated from the Rust types and checked in at
//! `core/schema/events.schema.json`; the Python, TypeScript and Go declarations are generated
//! from that file (`make generate`). These tests keep it true:
//!
//! * the checked-in file is what the types generate (regenerate with
//!   `UPDATE_SCHEMA=1 cargo test -p agentstream-core --all-features --test schema`);
//! * what the core really emits validates against it: every golden event, every replayed
//!   envelope, hook, outcome and decode statistics, hooks of cancelled / timed-out / denied
//!   runs, and run results of real processes that completed, failed and were cancelled;
//! * every hook type of the catalogue is emitted by something above (no stale entries), and
//!   the tables (errors, cancel kinds, agents, channels) match the core's own lists.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentstream_core::hooks::{HookDeriver, HookInput, TerminalFacts};
use agentstream_core::replay::{ReplayOptions, replay};
use agentstream_core::runner::{AgentConfig, CommandOptions, RunOptions, Session};
use agentstream_core::schema::{SCHEMA_FILE, events_schema_json};
use agentstream_core::stream::CancelReason;
use agentstream_core::{
    Agent, AgentState, Channel, ErrorKind, LifecycleEvent, LifecycleReason, OutputEvent, SandboxState, SessionUpdate,
    ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolKind,
};
use serde_json::{Value, json};

fn schema_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("schema").join(SCHEMA_FILE)
}

#[test]
fn checked_in_schema_matches_the_types() {
    let generated = events_schema_json();
    let path = schema_path();
    if std::env::var_os("UPDATE_SCHEMA").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == generated,
        "core/schema/{SCHEMA_FILE} is out of date: run `make generate` (or UPDATE_SCHEMA=1 cargo test -p \
         agentstream-core --all-features --test schema, then cargo run -p agentstream-codegen)"
    );
}

// ---------------------------------------------------------------------------------------------
// A validator for the subset of JSON Schema 2020-12 schemars writes: $ref, type, const, enum,
// oneOf, anyOf, properties, required, additionalProperties, items, minimum, integer formats.

struct Validator {
    doc: Value,
}

impl Validator {
    fn new() -> Self {
        Validator { doc: serde_json::from_str(&events_schema_json()).unwrap() }
    }

    /// Validate `value` as the definition `def`; panics with every problem found.
    fn check(&self, def: &str, value: &Value, what: &str) {
        assert!(self.doc["$defs"].get(def).is_some(), "no definition {def}");
        let mut errors = Vec::new();
        self.validate(&json!({"$ref": format!("#/$defs/{def}")}), value, "$", &mut errors);
        assert!(errors.is_empty(), "{what} is not a valid {def}:\n  {}\nvalue: {value}", errors.join("\n  "));
    }

    fn resolve<'a>(&'a self, reference: &str) -> &'a Value {
        let name = reference.strip_prefix("#/$defs/").unwrap_or_else(|| panic!("unsupported $ref {reference}"));
        self.doc["$defs"].get(name).unwrap_or_else(|| panic!("dangling $ref {reference}"))
    }

    fn validate(&self, schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
        let schema = match schema {
            Value::Bool(true) => return,
            Value::Bool(false) => return errors.push(format!("{at}: nothing is allowed here")),
            Value::Object(o) => o,
            other => panic!("not a schema: {other}"),
        };
        if let Some(Value::String(r)) = schema.get("$ref") {
            self.validate(self.resolve(r), value, at, errors);
        }
        if let Some(t) = schema.get("type") {
            let types: Vec<&str> = match t {
                Value::String(s) => vec![s.as_str()],
                Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
                _ => panic!("bad type {t}"),
            };
            if !types.iter().any(|t| type_matches(t, value)) {
                return errors.push(format!("{at}: expected {types:?}, got {value}"));
            }
        }
        if let Some(c) = schema.get("const") {
            if c != value {
                errors.push(format!("{at}: expected {c}, got {value}"));
            }
        }
        if let Some(Value::Array(options)) = schema.get("enum") {
            if !options.contains(value) {
                errors.push(format!("{at}: {value} is not one of {options:?}"));
            }
        }
        if let (Some(min), Some(n)) = (schema.get("minimum").and_then(Value::as_f64), value.as_f64()) {
            if n < min {
                errors.push(format!("{at}: {n} < minimum {min}"));
            }
        }
        if let (Some(Value::String(format)), Value::Number(n)) = (schema.get("format"), value) {
            let fits = match format.as_str() {
                "uint64" | "uint" => n.is_u64(),
                "int64" => n.is_i64(),
                "int32" => n.as_i64().is_some_and(|v| i32::try_from(v).is_ok()),
                "double" | "float" => true,
                other => panic!("unsupported format {other}"),
            };
            if !fits {
                errors.push(format!("{at}: {n} does not fit {format}"));
            }
        }
        if let Value::Object(obj) = value {
            let props = schema.get("properties").and_then(Value::as_object);
            for name in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
                let name = name.as_str().unwrap();
                if !obj.contains_key(name) {
                    errors.push(format!("{at}: missing required {name:?}"));
                }
            }
            for (k, v) in obj {
                match props.and_then(|p| p.get(k)) {
                    Some(s) => self.validate(s, v, &format!("{at}.{k}"), errors),
                    None => {
                        if let Some(extra) = schema.get("additionalProperties") {
                            self.validate(extra, v, &format!("{at}.{k}"), errors);
                        }
                    }
                }
            }
        }
        if let (Some(items), Value::Array(values)) = (schema.get("items"), value) {
            for (i, v) in values.iter().enumerate() {
                self.validate(items, v, &format!("{at}[{i}]"), errors);
            }
        }
        if let Some(Value::Array(arms)) = schema.get("oneOf") {
            let matching: Vec<usize> = (0..arms.len()).filter(|&i| self.passes(&arms[i], value, at)).collect();
            if matching.len() != 1 {
                let detail: Vec<String> = arms
                    .iter()
                    .map(|arm| {
                        let mut e = Vec::new();
                        self.validate(arm, value, at, &mut e);
                        e.join("; ")
                    })
                    .collect();
                errors.push(format!("{at}: {} oneOf arms match (want 1): {detail:?}", matching.len()));
            }
        }
        if let Some(Value::Array(arms)) = schema.get("anyOf") {
            if !arms.iter().any(|arm| self.passes(arm, value, at)) {
                errors.push(format!("{at}: no anyOf arm matches {value}"));
            }
        }
    }

    fn passes(&self, schema: &Value, value: &Value, at: &str) -> bool {
        let mut e = Vec::new();
        self.validate(schema, value, at, &mut e);
        e.is_empty()
    }

    fn def(&self, name: &str) -> &Value {
        &self.doc["$defs"][name]
    }

    /// The `const`s of an enum definition (`oneOf` of consts, or `enum`).
    fn enum_values(&self, name: &str) -> Vec<String> {
        let def = self.def(name);
        let list: Vec<&Value> = match def.get("enum") {
            Some(Value::Array(a)) => a.iter().collect(),
            _ => def["oneOf"].as_array().unwrap().iter().map(|a| &a["const"]).collect(),
        };
        list.iter().map(|v| v.as_str().unwrap().to_string()).collect()
    }
}

fn type_matches(t: &str, v: &Value) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64(),
        other => panic!("unsupported type {other}"),
    }
}

// ---------------------------------------------------------------------------------------------
// What the core emits, validated.

fn golden_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/golden")
}

fn golden_cases() -> Vec<(Agent, PathBuf)> {
    let mut out = Vec::new();
    for agent in Agent::ALL {
        for entry in std::fs::read_dir(golden_root().join(agent.name())).into_iter().flatten().flatten() {
            if entry.file_name().to_string_lossy().ends_with(".input.jsonl") {
                out.push((agent, entry.path()));
            }
        }
    }
    out.sort_by(|a, b| (a.0.name(), &a.1).cmp(&(b.0.name(), &b.1)));
    assert!(out.len() > 20, "golden cases not found under {}", golden_root().display());
    out
}

#[test]
fn golden_replays_validate() {
    let v = Validator::new();
    let mut hook_types = std::collections::BTreeSet::new();
    for (agent, input) in golden_cases() {
        let name = input.display().to_string();
        let expected = std::fs::read_to_string(input.to_string_lossy().replace(".input.jsonl", ".expected.jsonl"))
            .unwrap_or_default();
        for line in expected.lines().filter(|l| !l.trim().is_empty()) {
            v.check("OutputEvent", &serde_json::from_str(line).unwrap(), &name);
        }
        let r = replay(agent, &std::fs::read(&input).unwrap(), &ReplayOptions::default());
        for item in &r.items {
            v.check("Envelope", &serde_json::to_value(item).unwrap(), &name);
        }
        for hook in &r.hooks {
            v.check("HookEvent", &serde_json::to_value(hook).unwrap(), &name);
            hook_types.insert(hook.event_type.clone());
        }
        v.check("RunOutcome", &serde_json::to_value(&r.outcome).unwrap(), &name);
        v.check("DecodeStats", &serde_json::to_value(r.stats).unwrap(), &name);
    }
    assert!(hook_types.contains("run.completed") && hook_types.contains("tool.completed"), "{hook_types:?}");
}

fn event(update: SessionUpdate) -> OutputEvent {
    OutputEvent::new(update)
}

fn tool_call(id: &str, name: &str) -> OutputEvent {
    event(SessionUpdate::ToolCall(ToolCall {
        tool_call_id: id.into(),
        title: name.into(),
        tool_name: Some(name.into()),
        kind: ToolKind::Execute,
        status: ToolCallStatus::InProgress,
        raw_input: None,
        content: None,
        locations: None,
    }))
}

fn tool_update(id: &str, status: Option<ToolCallStatus>, text: &str) -> OutputEvent {
    let mut u = ToolCallUpdate::new(id);
    u.status = status;
    u.content = Some(vec![ToolCallContent::text(text)]);
    event(SessionUpdate::ToolCallUpdate(u))
}

fn lifecycle(reason: LifecycleReason) -> LifecycleEvent {
    LifecycleEvent::local(reason, SandboxState::Running, AgentState::Running, "2026-12-02T00:00:00.000Z")
}

/// Hooks of runs no golden trace ends like: progress, a denied permission, a cancellation with
/// calls in flight (one idempotent), a timeout, a failure; each terminal with usage.
fn synthetic_hooks() -> Vec<agentstream_core::HookEvent> {
    let usage = Some(json!({"promptTokens": 10, "completionTokens": 2, "cachedTokens": 4, "costUsd": 0.01}));
    let mut out = Vec::new();
    let ends = [
        (LifecycleReason::RunInterrupted, TerminalFacts { cancel_reason: Some("caller".into()), ..Default::default() }),
        (LifecycleReason::RunInterrupted, TerminalFacts { stopped_by_timeout: true, ..Default::default() }),
        (LifecycleReason::CommandFailed, TerminalFacts { error: Some("exit 3".into()), ..Default::default() }),
        (LifecycleReason::CommandComplete, TerminalFacts::default()),
    ];
    for (end, mut facts) in ends {
        facts.usage = usage.clone();
        facts.last_sequence = 5;
        let command = matches!(end, LifecycleReason::CommandFailed | LifecycleReason::CommandComplete);
        let d = HookDeriver::new("r", "claude").with_idempotent_tools(["Read".to_string()]);
        // A harness run that continues a session starts with run.resumed.
        let mut d = if command { d } else { d.resuming("completed") };
        let start = if command { LifecycleReason::CommandStart } else { LifecycleReason::RunStart };
        let ts = 1_764_633_600_000; // 2026-12-02T00:00:00.000Z
        d.observe(0, HookInput::Lifecycle(&lifecycle(start), None), ts, &mut out);
        d.observe(1, HookInput::Content(&tool_call("a", "Bash")), ts, &mut out);
        d.observe(2, HookInput::Content(&tool_update("a", Some(ToolCallStatus::InProgress), "partial")), ts, &mut out);
        d.observe(
            3,
            HookInput::Content(&tool_update("a", Some(ToolCallStatus::Failed), "permission denied by user")),
            ts,
            &mut out,
        );
        d.observe(4, HookInput::Content(&tool_call("b", "Bash")), ts, &mut out);
        d.observe(5, HookInput::Content(&tool_call("c", "Read")), ts, &mut out);
        d.observe(6, HookInput::Lifecycle(&lifecycle(end), Some(&facts)), ts, &mut out);
    }
    out
}

#[test]
fn every_hook_type_of_the_catalogue_is_emitted_and_valid() {
    let v = Validator::new();
    let mut seen = std::collections::BTreeSet::new();
    for hook in synthetic_hooks() {
        v.check("HookEvent", &serde_json::to_value(&hook).unwrap(), "a synthetic hook");
        seen.insert(hook.event_type);
    }
    for (agent, input) in golden_cases() {
        for hook in replay(agent, &std::fs::read(&input).unwrap(), &ReplayOptions::default()).hooks {
            seen.insert(hook.event_type);
        }
    }
    let catalogue: std::collections::BTreeSet<String> = v.def("HookEvent")["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arm| arm["properties"]["type"]["const"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        seen, catalogue,
        "hook types emitted vs the catalogue in core/src/schema.rs (a new hook type needs a HookDetails variant there)"
    );
}

#[test]
fn lifecycle_events_validate() {
    let v = Validator::new();
    let mut ev = lifecycle(LifecycleReason::BrowserReady);
    v.check("LifecycleEvent", &serde_json::to_value(&ev).unwrap(), "a local event");
    ev.sandbox_id = Some("sb-1".into());
    ev.browser = Some([("live_url".to_string(), "https://x".to_string())].into_iter().collect());
    v.check("LifecycleEvent", &serde_json::to_value(&ev).unwrap(), "a browser event");
}

/// A "harness" script that prints `trace` and exits with `code`.
fn harness(dir: &Path, trace: &Path, code: i32) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join(format!("harness-{code}.sh"));
    std::fs::write(&script, format!("#!/bin/sh\ncat '{}'\nexit {code}\n", trace.display())).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

#[test]
fn run_results_of_real_processes_validate() {
    let v = Validator::new();
    let dir = std::env::temp_dir().join(format!("agentstream-schema-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = golden_root().join("claude/s2-bash.input.jsonl");
    let mut results = Vec::new();
    for code in [0, 3] {
        let mut config = AgentConfig::new(Agent::Claude);
        config.bin = Some(harness(&dir, &trace, code));
        let mut options = RunOptions::new("p");
        options.attach_reader = false;
        results.push(Session::new(config).start_run(options).unwrap().wait_blocking());
    }
    let mut sleeper = CommandOptions::new(vec!["sleep".into(), "5".into()]);
    sleeper.timeout = Some(Duration::from_millis(50));
    sleeper.attach_reader = false;
    results.push(Session::new(AgentConfig::new(Agent::Claude)).start_command(sleeper).unwrap().wait_blocking());
    let _ = std::fs::remove_dir_all(&dir);

    let values: Vec<Value> = results.iter().map(|r| serde_json::to_value(r).unwrap()).collect();
    let states: Vec<&str> = values.iter().map(|r| r["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["completed", "failed", "cancelled"], "{values:?}");
    assert!(values[0]["usage"].as_object().is_some_and(|u| !u.is_empty()), "a run with usage: {}", values[0]);
    assert_eq!(values[2]["cancel_kind"], "timeout");
    for (r, value) in results.iter().zip(&values) {
        v.check("RunResult", value, &format!("the {:?} run result", r.state));
        v.check("Pressure", &serde_json::to_value(r.pressure).unwrap(), "pressure");
    }
}

// ---------------------------------------------------------------------------------------------
// The tables of the document against the core's own lists.

#[test]
fn tables_match_the_core() {
    let v = Validator::new();
    let agents: Vec<&str> = Agent::ALL.iter().map(|a| a.name()).collect();
    assert_eq!(v.enum_values("Agent"), agents, "Agent, in documentation order");
    let channels: Vec<&str> = Channel::ALL.iter().map(|c| c.name()).collect();
    assert_eq!(v.enum_values("Channel"), channels);

    let reasons = [CancelReason::caller("x"), CancelReason::ReaderLeft, CancelReason::Stalled, CancelReason::Timeout];
    let codes: Vec<&str> = reasons.iter().map(|r| r.code()).collect();
    assert_eq!(v.enum_values("CancelKind"), codes, "CancelKind lists every CancelReason::code");
    let union_kinds: Vec<String> = v.def("CancelReason")["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|arm| arm["properties"]["kind"]["const"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(v.enum_values("CancelKind"), union_kinds, "CancelKind is the CancelReason kinds");
    for r in &reasons {
        v.check("CancelReason", &serde_json::to_value(r).unwrap(), "a cancel reason");
    }

    let errors = v.doc["x-errors"].as_array().unwrap();
    assert_eq!(errors.len(), ErrorKind::ALL.len());
    for (row, kind) in errors.iter().zip(ErrorKind::ALL) {
        assert_eq!(row["name"], kind.name());
        assert_eq!(row["code"], kind.code());
        assert_eq!(row["advice"], kind.advice());
        assert!(row["description"].as_str().is_some_and(|d| !d.is_empty()), "{row}");
    }
    let names: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(v.enum_values("ErrorKind"), names);
}

#[test]
fn every_reference_resolves() {
    fn walk(v: &Validator, node: &Value) {
        match node {
            Value::Object(o) => {
                if let Some(Value::String(r)) = o.get("$ref") {
                    v.resolve(r);
                }
                o.values().for_each(|x| walk(v, x));
            }
            Value::Array(a) => a.iter().for_each(|x| walk(v, x)),
            _ => {}
        }
    }
    let v = Validator::new();
    walk(&v, &v.doc);
}

/// The validator above is what makes these tests fail: it must reject what the core never emits.
#[test]
fn the_validator_rejects_what_the_schema_forbids() {
    let v = Validator::new();
    let rejects = |def: &str, value: Value| {
        let mut errors = Vec::new();
        v.validate(&json!({"$ref": format!("#/$defs/{def}")}), &value, "$", &mut errors);
        assert!(!errors.is_empty(), "{def} accepted {value}");
    };
    let hook = |ty: &str, status: &str, details: Value| json!({"type": ty, "run_id": "r", "agent_id": "a", "timestamp": "t", "status": status, "sequence": 1, "details": details});
    v.check("HookEvent", &hook("run.started", "running", json!({"operation": "run"})), "a good hook");
    rejects("HookEvent", hook("run.started", "running", json!({"operation": "run", "surprise": 1})));
    rejects("HookEvent", hook("run.started", "completed", json!({"operation": "run"})));
    rejects("HookEvent", hook("run.teleported", "running", json!({})));
    rejects("HookEvent", hook("tool.completed", "running", json!({"step_index": 0, "tool_call_id": "t"})));
    rejects("HookEvent", hook("run.cancelled", "cancelled", json!({"reason": "x", "last_sequence": "7"})));
    let env = |channel: &str, event: Value| json!({"runId": "r", "sequence": 0, "channel": channel, "event": event});
    v.check("Envelope", &env("stdout", json!("line")), "a good envelope");
    rejects("Envelope", env("content", json!("line")));
    rejects("Envelope", env("stdout", json!({"update": {"sessionUpdate": "plan", "entries": []}})));
    rejects("Envelope", json!({"runId": "r", "sequence": -1, "channel": "stdout", "event": "x"}));
    rejects("OutputEvent", json!({"sessionId": null, "update": {"sessionUpdate": "plan", "entries": []}}));
    rejects("OutputEvent", json!({"update": {"sessionUpdate": "plan"}}));
    rejects("LifecycleEvent", json!({"sandbox": "ready", "agent": "idle", "timestamp": "t", "reason": "run_complete"}));
    rejects("RunResult", json!({"run_id": "r", "state": "completed", "cancel_kind": "bored"}));
}
