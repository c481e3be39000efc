//! The API parity table (`tests/parity/api.json`) run against the Rust bridge — the same cases
//! every language's suite runs against its own API (see `tests/parity/README.md`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agentstream_core::Error;
use agentstream_core::bridge::{
    AgentSpec, BatchLimits, Client, Delivery, HandlerError, Naming, Pulled, RunRequest, SubscriptionId,
};
use serde_json::{Value, json};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// What one case's client and its handlers are.
struct Case {
    client: Option<Client>,
    /// `throw` handlers fail on every call.
    throwing: HashMap<SubscriptionId, bool>,
    argv_file: PathBuf,
    handler_calls: usize,
}

fn check_error(step: &Value, got: Result<Value, Error>, what: &str) -> Option<Value> {
    match (step.get("error").and_then(Value::as_str), got) {
        (Some(kind), Err(e)) => {
            assert_eq!(e.kind.name(), kind, "{what}: {e}");
            for needle in step.get("message_has").and_then(Value::as_array).into_iter().flatten() {
                let needle = needle.as_str().unwrap();
                assert!(e.to_string().contains(needle), "{what}: {needle:?} not in {e}");
            }
            None
        }
        (Some(kind), Ok(v)) => panic!("{what}: expected a {kind} error, got {v}"),
        (None, Err(e)) => panic!("{what}: unexpected error {e}"),
        (None, Ok(v)) => Some(v),
    }
}

/// Every key of `expected` matches in `got` (`null` = absent or null).
fn assert_matches(expected: &Value, got: &Value, what: &str) {
    match expected {
        Value::Object(want) => {
            for (k, v) in want {
                let g = got.get(k).unwrap_or(&Value::Null);
                assert_matches(v, g, &format!("{what}.{k}"));
            }
        }
        other => assert_eq!(other, got, "{what}"),
    }
}

impl Case {
    fn client(&self) -> &Client {
        self.client.as_ref().expect("the case built a client")
    }

    fn new_client(&mut self, config: &Value, harness: Option<&str>) -> Result<Value, Error> {
        let mut spec: AgentSpec = serde_json::from_value(config.clone()).expect("a valid config object");
        if let Some(trace) = harness {
            spec.bin = Some(env!("CARGO_BIN_EXE_fake-harness").to_string());
            let prefix = repo().join("tests/golden").join(trace);
            spec.env.insert("AGENTSTREAM_FAKE_TRACE".into(), prefix.to_string_lossy().into_owned());
            spec.env.insert("AGENTSTREAM_FAKE_ARGV_FILE".into(), self.argv_file.to_string_lossy().into_owned());
        }
        self.client = Some(Client::new(spec, Naming::Snake)?);
        Ok(Value::Null)
    }

    fn run(&mut self, step: &Value) -> Result<Value, Error> {
        let mut request = step.get("request").cloned().unwrap_or(json!({}));
        let on_event = step.get("on_event").and_then(Value::as_bool).unwrap_or(false);
        if on_event {
            request["hooks"] = json!(true);
        }
        let request = RunRequest::from_json(&request.to_string())?;
        let run = self.client().start(request)?;
        let mut hooks = Vec::new();
        let mut batch = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            assert!(Instant::now() < deadline, "the run did not end");
            batch.clear();
            match run.pull(&mut batch, BatchLimits::DEFAULT, Some(Duration::from_millis(200))) {
                Pulled::End => break,
                Pulled::Timeout => continue,
                Pulled::Batch => {}
            }
            for d in &batch {
                match d {
                    Delivery::Hook(h) => hooks.push(h.event_type.clone()),
                    Delivery::Item(env) => {
                        for id in self.client().subscribers(env.channel()) {
                            self.handler_calls += 1;
                            if self.throwing.get(&id).copied().unwrap_or(false) {
                                run.handler_failed(HandlerError {
                                    handler: id,
                                    channel: env.channel().name().into(),
                                    sequence: env.sequence,
                                    message: "a throwing handler".into(),
                                });
                            }
                        }
                    }
                }
            }
        }
        if let Some(first) = step.get("hooks_first").and_then(Value::as_str) {
            assert_eq!(hooks.first().map(String::as_str), Some(first), "hooks: {hooks:?}");
        }
        let result = run.result()?;
        Ok(serde_json::to_value(result).unwrap())
    }

    fn step(&mut self, step: &Value, case: &str) {
        let call = step["call"].as_str().unwrap();
        let what = format!("{case} / {call}");
        let channel = || step["channel"].as_str().unwrap_or_default().to_string();
        let calls_before = self.handler_calls;
        let got: Result<Value, Error> = match call {
            "new" => self.new_client(&step["config"], None),
            "on" => self.client().on(&channel()).map(|id| {
                self.throwing.insert(id, step.get("handler").and_then(Value::as_str) == Some("throw"));
                Value::Null
            }),
            "off" => self.client().off(&channel()).map(|_| Value::Null),
            "run" => self.run(step),
            "status" => Ok(serde_json::to_value(self.client().status()).unwrap()),
            "get_session" => Ok(json!(self.client().session_id())),
            "set_session" => {
                self.client().set_session_id(step["session_id"].as_str().map(str::to_string)).map(|()| Value::Null)
            }
            "interrupt" => Ok(json!(self.client().interrupt("parity"))),
            "kill" => Ok(json!(self.client().kill())),
            "pause" => self.client().pause().map(|()| Value::Null),
            "resume" => self.client().resume().map(|()| Value::Null),
            "argv" => Ok(serde_json::from_str(&std::fs::read_to_string(&self.argv_file).unwrap()).unwrap()),
            other => panic!("{what}: the parity table names a call this runner does not know: {other}"),
        };
        let Some(value) = check_error(step, got, &what) else { return };
        if let Some(expected) = step.get("returns") {
            assert_matches(expected, &value, &what);
        }
        if let Some(n) = step.get("handler_calls_at_least").and_then(Value::as_u64) {
            assert!((self.handler_calls - calls_before) as u64 >= n, "{what}: {} handler calls", self.handler_calls);
        }
        if let Some(n) = step.get("handler_errors_at_least").and_then(Value::as_u64) {
            assert!(value["handler_errors"].as_u64().unwrap() >= n, "{what}: {value}");
        }
        let argv: Vec<String> =
            if call == "argv" { serde_json::from_value(value.clone()).unwrap() } else { Vec::new() };
        if let Some(has) = step.get("argv_has").and_then(Value::as_array) {
            let has: Vec<String> = has.iter().map(|v| v.as_str().unwrap().to_string()).collect();
            // `--opt value` in the table also matches the joined `--opt=value` a harness gets.
            let joined = vec![format!("{}={}", has[0], has[1..].join(" "))];
            let contains = |needle: &[String]| argv.windows(needle.len()).any(|w| w == needle);
            assert!(contains(&has) || (has.len() == 2 && contains(&joined)), "{what}: {has:?} not in {argv:?}");
        }
        for lack in step.get("argv_lacks").and_then(Value::as_array).into_iter().flatten() {
            let lack = lack.as_str().unwrap();
            assert!(
                !argv.iter().any(|a| a == lack || a.starts_with(&format!("{lack}="))),
                "{what}: {lack} in {argv:?}"
            );
        }
    }
}

/// The keys a case and a step may have (tests/parity/README.md): every language's runner reads
/// only these, so a misspelled one would be ignored by all eight. Checked once, here.
const CASE_KEYS: &[&str] = &["name", "config", "harness", "steps"];
const STEP_KEYS: &[&str] = &[
    "call",
    "channel",
    "config",
    "handler",
    "request",
    "on_event",
    "session_id",
    "error",
    "message_has",
    "returns",
    "argv_has",
    "argv_lacks",
    "hooks_first",
    "handler_calls_at_least",
    "handler_errors_at_least",
];
const CALLS: &[&str] = &[
    "new",
    "on",
    "off",
    "run",
    "status",
    "get_session",
    "set_session",
    "interrupt",
    "kill",
    "pause",
    "resume",
    "argv",
];

#[test]
fn the_parity_table_uses_only_the_documented_keys_and_calls() {
    let table: Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("tests/parity/api.json")).unwrap()).unwrap();
    let readme = std::fs::read_to_string(repo().join("tests/parity/README.md")).unwrap();
    let cases = table["cases"].as_array().unwrap();
    assert!(cases.len() >= 9, "the parity table has its cases");
    for case in cases {
        let name = case["name"].as_str().unwrap();
        for key in case.as_object().unwrap().keys() {
            assert!(CASE_KEYS.contains(&key.as_str()), "{name}: unknown case key {key:?}");
        }
        for step in case["steps"].as_array().unwrap() {
            for key in step.as_object().unwrap().keys() {
                assert!(STEP_KEYS.contains(&key.as_str()), "{name}: unknown step key {key:?} in {step}");
            }
            let call = step["call"].as_str().unwrap();
            assert!(CALLS.contains(&call), "{name}: unknown call {call:?}");
        }
    }
    for key in STEP_KEYS.iter().chain(CALLS) {
        assert!(readme.contains(&format!("`{key}`")), "tests/parity/README.md documents `{key}`");
    }
}

#[test]
fn the_parity_table_holds_for_rust() {
    let table: Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("tests/parity/api.json")).unwrap()).unwrap();
    let dir = std::env::temp_dir().join(format!("agentstream-parity-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, case) in table["cases"].as_array().unwrap().iter().enumerate() {
        let name = case["name"].as_str().unwrap();
        let mut c = Case {
            client: None,
            throwing: HashMap::new(),
            argv_file: dir.join(format!("argv-{i}.json")),
            handler_calls: 0,
        };
        if let Some(config) = case.get("config") {
            c.new_client(config, case.get("harness").and_then(Value::as_str)).unwrap();
        }
        for step in case["steps"].as_array().unwrap() {
            c.step(step, name);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
