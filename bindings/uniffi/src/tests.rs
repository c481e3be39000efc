//! The uniffi surface driven from Rust, with Rust-implemented listeners and command runs (a
//! real `sh` process): delivery order, failures, re-entrancy, cancellation. The Kotlin suite
//! (bindings/uniffi/kotlin) runs the same surface through the generated bindings.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::error::{AgentstreamError, ListenerError};
use crate::options::{AgentConfig, ReadMode, RunOptions};
use crate::run::{AgentRun, CancelToken, ChannelListener, HookListener};
use crate::{Evolve, agent_names, channel_names, core_version};

type Log = Arc<Mutex<Vec<String>>>;

/// Records what it is handed as `"<name>:<sequence>"`, fails when told to, and tries a read of
/// its own run when one is set.
struct Recorder {
    name: &'static str,
    log: Log,
    fail: bool,
    own_run: OnceLock<Arc<AgentRun>>,
    reentrant: Mutex<Vec<String>>,
}

impl Recorder {
    fn new(name: &'static str, log: &Log, fail: bool) -> Arc<Self> {
        Arc::new(Recorder { name, log: log.clone(), fail, own_run: OnceLock::new(), reentrant: Mutex::new(Vec::new()) })
    }

    fn record(&self, json: &str, sequence_key: &str) -> Result<(), ListenerError> {
        let v: Value = serde_json::from_str(json).expect("listeners get JSON");
        self.log.lock().unwrap().push(format!("{}:{}", self.name, v[sequence_key]));
        if let Some(run) = self.own_run.get() {
            let mut r = self.reentrant.lock().unwrap();
            if r.is_empty() {
                r.push(format!("{:?}", run.dispatch(Some(0)).map(|_| ())));
                r.push(format!("{:?}", run.wait_json(Some(0)).map(|_| ())));
            }
        }
        if self.fail { Err(ListenerError::Failed { reason: format!("{} failed", self.name) }) } else { Ok(()) }
    }
}

impl ChannelListener for Recorder {
    fn on_item(&self, envelope_json: String) -> Result<(), ListenerError> {
        self.record(&envelope_json, "sequence")
    }
}

impl HookListener for Recorder {
    fn on_hook(&self, hook_json: String) -> Result<(), ListenerError> {
        let v: Value = serde_json::from_str(&hook_json).unwrap();
        self.log.lock().unwrap().push(format!("{}:{}", self.name, v["type"].as_str().unwrap()));
        if self.fail { Err(ListenerError::Failed { reason: "hook failed".into() }) } else { Ok(()) }
    }
}

fn evolve() -> Arc<Evolve> {
    Evolve::new(AgentConfig {
        r#type: "claude".into(),
        agent_id: None,
        bin: None,
        model: None,
        extra_args: Vec::new(),
        cwd: None,
        env: Default::default(),
    })
    .unwrap()
}

fn command(script: &str) -> RunOptions {
    RunOptions { command: Some(vec!["sh".into(), "-c".into(), script.into()]), ..Default::default() }
}

fn dispatch_to_end(run: &AgentRun) -> Vec<crate::HandlerFailure> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut failures = Vec::new();
    loop {
        assert!(Instant::now() < deadline, "the run did not end");
        let batch = run.dispatch(Some(200)).unwrap();
        assert!(batch.deliveries_json.is_none());
        failures.extend(batch.failures);
        if batch.ended {
            return failures;
        }
    }
}

fn result(run: &AgentRun) -> Value {
    serde_json::from_str(&run.wait_json(Some(10_000)).unwrap()).unwrap()
}

#[test]
fn listeners_are_called_in_order_and_failures_are_counted_and_reported_once() {
    let log: Log = Default::default();
    let e = evolve();
    let first = e.on("stdout".into(), Recorder::new("a", &log, true)).unwrap();
    let second = e.on("stdout".into(), Recorder::new("b", &log, false)).unwrap();
    assert!(second > first);
    let hooks = Recorder::new("hook", &log, false);
    let run = e.start(command("echo one; echo two; echo three"), Some(hooks), None).unwrap();
    let failures = dispatch_to_end(&run);
    let got = log.lock().unwrap().clone();
    let stdout: Vec<&String> = got.iter().filter(|l| !l.starts_with("hook:")).collect();
    assert_eq!(stdout.len(), 6, "{got:?}");
    for pair in stdout.chunks(2) {
        assert!(pair[0].starts_with("a:") && pair[1].starts_with("b:"), "registration order: {got:?}");
        assert_eq!(pair[0][2..], pair[1][2..], "the same item: {got:?}");
    }
    assert_eq!(got.first().map(String::as_str), Some("hook:run.started"), "{got:?}");
    assert_eq!(failures.len(), 1, "the first failure of the failing listener only: {failures:?}");
    assert_eq!(failures[0].handler, first);
    assert_eq!(failures[0].channel, "stdout");
    assert_eq!(failures[0].reason, "a failed");
    let r = result(&run);
    assert_eq!(r["state"], "completed");
    assert_eq!(r["handler_errors"], 3, "every failure counted: {r}");
    assert_eq!(run.handler_error_count(), 3);
    assert_eq!(run.handler_failures(), failures);
}

#[test]
fn a_failing_hook_listener_is_counted_under_its_own_id() {
    let log: Log = Default::default();
    let e = evolve();
    let run = e.start(command("true"), Some(Recorder::new("hook", &log, true)), None).unwrap();
    let failures = dispatch_to_end(&run);
    assert_eq!(failures.len(), 1);
    assert_eq!((failures[0].handler, failures[0].channel.as_str()), (crate::run::HOOK_LISTENER, "on_event"));
    assert!(result(&run)["handler_errors"].as_u64().unwrap() >= 2);
}

#[test]
fn an_iterated_run_is_pulled_as_tagged_json_in_one_gapless_sequence() {
    let e = evolve();
    let options = RunOptions { read: Some(ReadMode::Iterate), hooks: true, ..command("echo hi") };
    let run = e.start(options, None, None).unwrap();
    assert_eq!(run.read_mode(), ReadMode::Iterate);
    let mut deliveries: Vec<Value> = Vec::new();
    loop {
        let batch = run.next_batch(Some(2), Some(5_000)).unwrap();
        let items: Vec<Value> = serde_json::from_str(batch.deliveries_json.as_deref().unwrap()).unwrap();
        assert!(items.len() <= 2, "at most max_events per batch");
        deliveries.extend(items);
        if batch.ended {
            break;
        }
    }
    let envelopes: Vec<&Value> = deliveries.iter().filter_map(|d| d.get("item")).collect();
    let sequences: Vec<u64> = envelopes.iter().map(|e| e["sequence"].as_u64().unwrap()).collect();
    assert_eq!(sequences, (0..sequences.len() as u64).collect::<Vec<_>>());
    assert!(envelopes.iter().any(|e| e["channel"] == "stdout" && e["event"] == "hi\n"));
    assert!(deliveries.iter().any(|d| d.get("hook").is_some()), "hook events are tagged");
    assert_eq!(result(&run)["state"], "completed");
    let again = run.next_batch(None, Some(0)).unwrap();
    assert!(again.ended && again.deliveries_json.as_deref() == Some("[]"));
    let bad = run.next_batch(Some(0), None).unwrap_err();
    assert!(matches!(bad, AgentstreamError::InvalidArgument(ref m) if m.starts_with("maxEvents")), "{bad}");
}

#[test]
fn a_listener_reading_its_own_run_is_told_busy_instead_of_waiting_for_itself() {
    let log: Log = Default::default();
    let e = evolve();
    let recorder = Recorder::new("a", &log, false);
    e.on("stdout".into(), recorder.clone()).unwrap();
    let run = e.start(command("echo x"), None, None).unwrap();
    recorder.own_run.set(run.clone()).ok().unwrap();
    dispatch_to_end(&run);
    let tries = recorder.reentrant.lock().unwrap().clone();
    assert_eq!(tries.len(), 2, "{tries:?}");
    assert!(tries.iter().all(|t| t.starts_with("Err(Busy(")), "{tries:?}");
}

#[test]
fn closing_an_unread_run_cancels_it_and_a_cancel_token_cancels_another() {
    let log: Log = Default::default();
    let e = evolve();
    e.on("stdout".into(), Recorder::new("a", &log, false)).unwrap();
    let run = e.start(command("echo started; sleep 30"), None, None).unwrap();
    assert!(e.status().active_run_id.is_some());
    drop(run);
    let deadline = Instant::now() + Duration::from_secs(20);
    while e.status().active_run_id.is_some() {
        assert!(Instant::now() < deadline, "the dropped run did not end");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(e.status().last_status.as_deref(), Some("cancelled"));

    let token = CancelToken::new();
    let run = e.start(command("sleep 30"), None, Some(token.clone())).unwrap();
    assert!(token.cancel("stop".into()));
    assert!(!token.cancel("again".into()) && token.is_cancelled());
    dispatch_to_end(&run);
    let r = result(&run);
    assert_eq!((r["state"].as_str(), r["cancel_kind"].as_str()), (Some("cancelled"), Some("caller")), "{r}");
}

#[test]
fn the_async_run_delivers_to_the_end_and_returns_the_result() {
    let log: Log = Default::default();
    let e = evolve();
    e.on("stdout".into(), Recorder::new("a", &log, true)).unwrap();
    let finished = agentstream_core::runner::runtime()
        .block_on(e.run(command("echo one; echo two"), Some(Recorder::new("hook", &log, false)), None))
        .unwrap();
    let r: Value = serde_json::from_str(&finished.result_json).unwrap();
    assert_eq!(r["state"], "completed");
    assert_eq!(r["handler_errors"], 2);
    assert_eq!(finished.failures.len(), 1);
    assert!(log.lock().unwrap().iter().any(|l| l == "hook:run.completed"), "{:?}", log.lock().unwrap());
}

#[test]
fn subscriptions_and_errors_use_the_cores_rules() {
    let e = evolve();
    let log: Log = Default::default();
    let e1 = e.on("content".into(), Recorder::new("a", &log, false)).unwrap();
    let e2 = e.on("content".into(), Recorder::new("b", &log, false)).unwrap();
    assert_eq!(e.subscribers("content".into()).unwrap(), vec![e1, e2]);
    assert!(e.off_id(e1));
    assert!(!e.off_id(e1));
    assert_eq!(e.off("content".into()).unwrap(), vec![e2]);
    let bad = e.on("message".into(), Recorder::new("c", &log, false)).unwrap_err();
    assert!(matches!(bad, AgentstreamError::InvalidArgument(ref m) if m.contains("lifecycle")), "{bad}");
    assert!(matches!(e.pause(), Err(AgentstreamError::NotRunning(_))));
    assert_eq!(e.status().agent, "claude");
    assert_eq!(e.status().sandbox, "ready");
    assert!(!e.interrupt("x".into()) && !e.kill());
    assert!(matches!(e.set_session_id(Some("-x".into())), Err(AgentstreamError::InvalidArgument(_))));
    e.set_session_id(Some("s1".into())).unwrap();
    assert_eq!(e.session_id().as_deref(), Some("s1"));
    let e = Evolve::new(AgentConfig { r#type: "nope".into(), ..evolve_config() }).unwrap_err();
    assert!(matches!(e, AgentstreamError::InvalidArgument(ref m) if m.contains("opencode")), "{e}");
    assert_eq!(agent_names().len(), 7);
    assert_eq!(channel_names(), ["content", "lifecycle", "stdout", "stderr"]);
    assert_eq!(core_version(), agentstream_core::VERSION);
}

fn evolve_config() -> AgentConfig {
    AgentConfig {
        r#type: "claude".into(),
        agent_id: None,
        bin: None,
        model: None,
        extra_args: Vec::new(),
        cwd: None,
        env: Default::default(),
    }
}

#[test]
fn the_decoder_and_replay_hand_over_json() {
    let line = b"{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n{\"type\":\"item.completed\",\"item\":{\"id\":\"i\",\"type\":\"agent_message\",\"text\":\"hi\"}}\n";
    let d = crate::Decoder::new("codex".into(), None, None).unwrap();
    let events: Vec<Value> = serde_json::from_str(&d.feed(line[..10].to_vec()).unwrap()).unwrap();
    assert!(events.is_empty() && d.has_partial_line());
    let events: Vec<Value> = serde_json::from_str(&d.feed(line[10..].to_vec()).unwrap()).unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(d.session_id().as_deref(), Some("t"));
    assert_eq!(d.finish().unwrap(), "[]");
    let whole: Vec<Value> =
        serde_json::from_str(&crate::parse_json("codex".into(), line.to_vec(), None).unwrap()).unwrap();
    assert_eq!(whole, events);
    let replay: Value = serde_json::from_str(
        &crate::replay_json("codex".into(), line.to_vec(), Some("r1".into()), None, None, None).unwrap(),
    )
    .unwrap();
    assert_eq!(replay["items"][0]["runId"], "r1");
    assert_eq!(replay["hooks"][0]["type"], "run.started");
    assert!(matches!(crate::Decoder::new("codex".into(), Some(0), None), Err(AgentstreamError::InvalidArgument(_))));
}

#[test]
fn redact_false_keeps_tool_inputs_as_printed_everywhere() {
    let line = b"{\"type\":\"item.started\",\"item\":{\"id\":\"i\",\"type\":\"command_execution\",\"command\":\"export API_TOKEN=abcdefghijklmnopqrstuv\",\"status\":\"in_progress\"}}\n";
    let command = |events: &Value| events[0]["update"]["rawInput"]["command"].as_str().unwrap().to_string();
    for (redact, want) in [
        (None, "export API_TOKEN=[redacted]"),
        (Some(true), "export API_TOKEN=[redacted]"),
        (Some(false), "export API_TOKEN=abcdefghijklmnopqrstuv"),
    ] {
        let parsed: Value =
            serde_json::from_str(&crate::parse_json("codex".into(), line.to_vec(), redact).unwrap()).unwrap();
        assert_eq!(command(&parsed), want, "parse_json redact={redact:?}");
        let d = crate::Decoder::new("codex".into(), None, redact).unwrap();
        let fed: Value = serde_json::from_str(&d.feed(line.to_vec()).unwrap()).unwrap();
        assert_eq!(command(&fed), want, "Decoder redact={redact:?}");
        let replay: Value =
            serde_json::from_str(&crate::replay_json("codex".into(), line.to_vec(), None, None, None, redact).unwrap())
                .unwrap();
        let content: Vec<&Value> =
            replay["items"].as_array().unwrap().iter().filter(|i| i["channel"] == "content").collect();
        assert_eq!(content[0]["event"]["update"]["rawInput"]["command"], want, "replay_json redact={redact:?}");
    }
}

/// Pulls a run through `agentstream_uniffi_run_pull_routed` to its end, starting with a buffer
/// of `capacity` bytes and growing it when told to; the entries of every batch.
fn pull_routed_to_end(run: &Arc<AgentRun>, capacity: usize) -> (Vec<Value>, usize) {
    use crate::routed::{PULL_END, PULL_TIMEOUT, PULL_TOO_SMALL, agentstream_uniffi_run_pull_routed};
    let reader = run.clone().routed_reader();
    assert_eq!(run.clone().routed_reader(), reader, "one id per run");
    let mut buf = vec![0u8; capacity];
    let (mut entries, mut too_small) = (Vec::new(), 0);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        assert!(Instant::now() < deadline, "the run did not end");
        // SAFETY: buf holds buf.len() bytes for the call.
        let n = unsafe { agentstream_uniffi_run_pull_routed(reader, 1_000, buf.as_mut_ptr(), buf.len() as u64) };
        match n {
            PULL_END => return (entries, too_small),
            PULL_TIMEOUT => continue,
            PULL_TOO_SMALL => {
                too_small += 1;
                let need = u64::from_le_bytes(buf[..8].try_into().unwrap()) as usize;
                assert!(need > buf.len(), "asked for {need} with {} bytes", buf.len());
                buf = vec![0u8; need];
            }
            n => {
                assert!(n >= 2, "a batch or a PULL_ code, got {n}");
                let batch: Vec<Value> = serde_json::from_slice(&buf[..n as usize]).expect("a JSON array");
                assert!(!batch.is_empty(), "a batch with nothing to deliver is not handed over");
                entries.extend(batch);
            }
        }
    }
}

#[test]
fn a_routed_pull_names_the_listeners_of_each_item_and_counts_what_failed() {
    let log: Log = Default::default();
    let e = evolve();
    let a = e.on("stdout".into(), Recorder::new("a", &log, false)).unwrap();
    let b = e.on("stdout".into(), Recorder::new("b", &log, false)).unwrap();
    let options = RunOptions { hooks: true, ..command("echo one; echo two") };
    let run = e.start(options, None, None).unwrap();
    let (entries, too_small) = pull_routed_to_end(&run, 8);
    assert!(too_small >= 1, "an 8-byte buffer is too small for any batch");
    assert!(log.lock().unwrap().is_empty(), "the per-item listeners are not called: {:?}", log.lock().unwrap());
    let items: Vec<&Value> = entries.iter().filter(|e| e.get("item").is_some()).collect();
    assert_eq!(items.len(), 2, "only the subscribed channel's items: {entries:?}");
    assert!(items.iter().all(|i| i["item"]["channel"] == "stdout" && i["to"] == serde_json::json!([a, b])));
    assert_eq!(entries.iter().find_map(|e| e.get("hook")).unwrap()["type"], "run.started");
    let sequences: Vec<u64> = entries
        .iter()
        .map(|e| e.get("item").or_else(|| e.get("hook")).unwrap()["sequence"].as_u64().unwrap())
        .collect();
    assert!(sequences.windows(2).all(|w| w[0] <= w[1]), "delivery order: {sequences:?}");

    let failed =
        |sequence| crate::HandlerFailure { handler: b, channel: "stdout".into(), sequence, reason: "boom".into() };
    let first = run.report_failures(vec![failed(items[0]["item"]["sequence"].as_u64().unwrap())]);
    assert_eq!(first, vec![failed(items[0]["item"]["sequence"].as_u64().unwrap())], "the first failure of b");
    assert!(run.report_failures(vec![failed(items[1]["item"]["sequence"].as_u64().unwrap())]).is_empty());
    assert!(run.report_failures(Vec::new()).is_empty());
    assert_eq!(result(&run)["handler_errors"], 2);
}

#[test]
fn a_routed_pull_of_an_iterated_run_hands_over_every_item() {
    let e = evolve();
    let options = RunOptions { read: Some(ReadMode::Iterate), ..command("echo one; echo oops >&2") };
    let run = e.start(options, None, None).unwrap();
    let (entries, _) = pull_routed_to_end(&run, 64 * 1024);
    let channels: Vec<&str> = entries.iter().filter_map(|e| e["item"]["channel"].as_str()).collect();
    assert!(
        channels.contains(&"stdout") && channels.contains(&"stderr") && channels.contains(&"lifecycle"),
        "{channels:?}"
    );
    assert!(entries.iter().all(|e| e["to"] == serde_json::json!([])), "nobody listens: {entries:?}");
    assert_eq!(result(&run)["state"], "completed");
}

#[test]
fn a_routed_pull_refuses_what_it_cannot_serve() {
    use crate::routed::*;
    let mut buf = [0u8; 64];
    // SAFETY: buf holds 64 bytes; the null and short calls are refused before any write.
    unsafe {
        assert_eq!(agentstream_uniffi_run_pull_routed(u64::MAX, 0, buf.as_mut_ptr(), 64), PULL_UNKNOWN_READER);
        assert_eq!(agentstream_uniffi_run_pull_routed(1, 0, std::ptr::null_mut(), 64), PULL_BAD_ARGUMENT);
        assert_eq!(agentstream_uniffi_run_pull_routed(1, 0, buf.as_mut_ptr(), 7), PULL_BAD_ARGUMENT);
    }
    let e = evolve();
    let run = e.start(RunOptions { read: Some(ReadMode::Iterate), ..command("sleep 30") }, None, None).unwrap();
    let reader = run.clone().routed_reader();
    let reading = run.reading().unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { agentstream_uniffi_run_pull_routed(reader, 0, buf.as_mut_ptr(), 64) }, PULL_BUSY);
    drop(reading);
    let mut big = vec![0u8; 64 * 1024];
    // SAFETY: big holds big.len() bytes.
    let pull = |big: &mut Vec<u8>| unsafe {
        agentstream_uniffi_run_pull_routed(reader, 0, big.as_mut_ptr(), big.len() as u64)
    };
    let mut lifecycle = 0;
    while pull(&mut big) >= 2 {
        lifecycle += 1; // the run's start
        assert!(lifecycle < 100, "a sleeping run delivers a few lifecycle events, then nothing");
    }
    assert_eq!(pull(&mut big), PULL_TIMEOUT, "sleeping: nothing more within 0 ms");
    drop(run); // closing the only handle frees the run (and cancels it): the id names no run
    assert_eq!(unsafe { agentstream_uniffi_run_pull_routed(reader, 0, buf.as_mut_ptr(), 64) }, PULL_UNKNOWN_READER);
}

#[test]
fn a_routed_pulls_panic_hands_its_message_over_cut_at_a_character() {
    use crate::routed::panic_message;
    let payload = std::panic::catch_unwind(|| panic!("bad état {}", 1)).unwrap_err();
    assert_eq!(panic_message(payload.as_ref(), 100), "bad état 1");
    // "é" is two bytes: a cut inside it leaves it out rather than splitting it.
    assert_eq!(panic_message(payload.as_ref(), 6), "bad é");
    assert_eq!(panic_message(payload.as_ref(), 5), "bad ");
    let other = std::panic::catch_unwind(|| std::panic::panic_any(3u8)).unwrap_err();
    assert_eq!(panic_message(other.as_ref(), 100), "a panic without a message");
}
