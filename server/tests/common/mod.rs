//! Shared by the server's integration tests: a real server on 127.0.0.1:0 whose agents are the
//! fake harness (it replays golden traces as a real process), and HTTP/SSE/WebSocket clients.
//!
//! The fake harness is the agentstream-cli binary `fake-harness`: `$AGENTSTREAM_FAKE_HARNESS`,
//! or next to this test executable's directory (`target/<profile>/fake-harness`). `make
//! test-server` builds it first; by hand: `cargo build -p agentstream-cli --bins`.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agentstream_core::Agent;
use agentstream_server::auth::TokenDigest;
use agentstream_server::config::{AgentEntry, TenantConfig};
use agentstream_server::{RunBroker, ServeConfig, Server, ShutdownReport};
use futures_util::StreamExt;
use serde_json::Value;

pub const TOKEN_A: &str = "token-of-tenant-a";
pub const TOKEN_B: &str = "token-of-tenant-b";

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub fn golden(agent: &str, case: &str) -> String {
    repo().join("tests/golden").join(agent).join(case).to_string_lossy().into_owned()
}

/// The fake harness binary.
pub fn fake_harness() -> PathBuf {
    if let Some(p) = std::env::var_os("AGENTSTREAM_FAKE_HARNESS") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("the test executable's path");
    let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>");
    let candidate = profile_dir.join("fake-harness");
    assert!(
        candidate.exists(),
        "the fake harness is not built at {}: run `cargo build -p agentstream-cli --bins` (make test-server does), \
         or set AGENTSTREAM_FAKE_HARNESS",
        candidate.display()
    );
    candidate
}

/// An agent that replays `agent/case` with the given extra fake-harness settings.
pub fn fake_agent(agent: Agent, case: &str, extra: &[(&str, &str)]) -> AgentEntry {
    let mut entry = AgentEntry::default_for(agent);
    entry.bin = fake_harness();
    entry.env = vec![("AGENTSTREAM_FAKE_TRACE".into(), golden(agent.name(), case))];
    entry.env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    entry
}

/// The agents every test server has.
pub fn agents(mark: &str) -> BTreeMap<String, AgentEntry> {
    let marked = [("AGENTSTREAM_TEST_MARK", mark)];
    let mut a = BTreeMap::new();
    a.insert("claude".into(), fake_agent(Agent::Claude, "s2-bash", &marked));
    a.insert("codex".into(), fake_agent(Agent::Codex, "s2-bash", &marked));
    a.insert("edit".into(), fake_agent(Agent::Claude, "s3-read-edit", &marked));
    a.insert("slow".into(), fake_agent(Agent::Claude, "s2-bash", &[("AGENTSTREAM_FAKE_DELAY_MS", "400"), marked[0]]));
    a.insert("hang".into(), fake_agent(Agent::Claude, "s2-bash", &[("AGENTSTREAM_FAKE_HANG", "1"), marked[0]]));
    a.insert("flood".into(), fake_agent(Agent::Claude, "s2-bash", &[("AGENTSTREAM_FAKE_FLOOD", "3000"), marked[0]]));
    let mut missing = AgentEntry::default_for(Agent::Claude);
    missing.bin = PathBuf::from("/nonexistent/agentstream-test-harness");
    a.insert("missing".into(), missing);
    a
}

/// A config for tests: two tenants, the fake agents, port 0.
pub fn config(mark: &str) -> ServeConfig {
    let mut c = ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        tenants: vec![
            TenantConfig { name: "a".into(), token_sha256: TokenDigest::of(TOKEN_A) },
            TenantConfig { name: "b".into(), token_sha256: TokenDigest::of(TOKEN_B) },
        ],
        agents: agents(mark),
        ..ServeConfig::default()
    };
    c.shutdown.kill_grace = Duration::from_secs(2);
    c
}

/// A unique marker for this test's harness processes.
pub fn new_mark(test: &str) -> String {
    format!("{test}-{}-{}", std::process::id(), agentstream_core::stream::new_run_id())
}

/// Harness processes (by their marker in the environment) still alive.
pub fn processes_with_mark(mark: &str) -> Vec<i32> {
    let needle = format!("AGENTSTREAM_TEST_MARK={mark}");
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(env) = std::fs::read(entry.path().join("environ")) else { continue };
        let zombie = std::fs::read_to_string(entry.path().join("stat"))
            .map(|s| s.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')))
            .unwrap_or(false);
        if !zombie && env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()) {
            pids.push(pid);
        }
    }
    pids
}

/// Wait until `f` holds (panics after `timeout`).
pub async fn eventually(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub struct TestServer {
    pub base: String,
    pub addr: std::net::SocketAddr,
    pub broker: RunBroker,
    pub mark: String,
    pub http: reqwest::Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<ShutdownReport>>>,
}

impl TestServer {
    pub async fn start(config: ServeConfig, mark: String) -> Self {
        let server = Server::bind(&config).await.expect("bind 127.0.0.1:0");
        let addr = server.local_addr();
        let broker = server.broker().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(server.run(async move {
            let _ = stopped.await;
        }));
        TestServer {
            base: format!("http://{addr}"),
            addr,
            broker,
            mark,
            http: reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap(),
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// A server with the default test config.
    pub async fn default(test: &str) -> Self {
        let mark = new_mark(test);
        Self::start(config(&mark), mark).await
    }

    /// Signal shutdown and wait for the server to return.
    pub async fn shutdown(mut self) -> ShutdownReport {
        let _ = self.stop.take().unwrap().send(());
        let task = self.task.take().unwrap();
        tokio::time::timeout(Duration::from_secs(30), task).await.expect("shutdown in time").unwrap().unwrap()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// `POST /v1/runs` → (status, body).
    pub async fn create(&self, token: Option<&str>, body: Value) -> (u16, Value) {
        let mut req = self.http.post(self.url("/v1/runs")).json(&body);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    /// Start a run of `agent` as tenant A (asserting 201) and return its id.
    pub async fn start_run(&self, token: &str, agent: &str) -> String {
        let (status, body) =
            self.create(Some(token), serde_json::json!({"agent": agent, "prompt": "List the files"})).await;
        assert_eq!(status, 201, "{body}");
        body["id"].as_str().unwrap().to_string()
    }

    pub async fn get_json(&self, token: Option<&str>, path: &str) -> (u16, Value) {
        let mut req = self.http.get(self.url(path));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    /// Wait until tenant A's run `id` has delivered past sequence `past`.
    pub async fn wait_past(&self, id: &str, past: u64) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.broker.get(&"a".into(), id).await.unwrap().last_sequence.unwrap_or(0) <= past {
            assert!(Instant::now() < deadline, "run {id} did not get past sequence {past}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Wait for a run to end; returns its final info.
    pub async fn wait_ended(&self, token: &str, id: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (status, body) = self.get_json(Some(token), &format!("/v1/runs/{id}")).await;
            assert_eq!(status, 200, "{body}");
            if body["status"] != "running" {
                return body;
            }
            assert!(Instant::now() < deadline, "run {id} did not end");
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Read a whole SSE response.
    pub async fn sse(&self, token: &str, id: &str, last_event_id: Option<&str>, query: &str) -> Sse {
        let mut req = self.http.get(self.url(&format!("/v1/runs/{id}/events{query}"))).bearer_auth(token);
        if let Some(l) = last_event_id {
            req = req.header("Last-Event-ID", l);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let content_type =
            resp.headers().get("content-type").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
        let mut body = String::new();
        let mut stream = resp.bytes_stream();
        let read = async {
            while let Some(chunk) = stream.next().await {
                body.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
            }
        };
        tokio::time::timeout(Duration::from_secs(30), read).await.expect("the SSE response ends");
        Sse { status, content_type, events: parse_sse(&body), raw: body }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// One SSE message.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    pub event: String,
    pub id: Option<String>,
    pub data: String,
}

impl SseEvent {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap()
    }
}

pub struct Sse {
    pub status: u16,
    pub content_type: String,
    pub events: Vec<SseEvent>,
    pub raw: String,
}

impl Sse {
    /// The envelopes (default `message` events), parsed.
    pub fn envelopes(&self) -> Vec<Value> {
        self.events.iter().filter(|e| e.event == "message").map(SseEvent::json).collect()
    }
}

/// Parse SSE text (only what this server sends: `\n` line ends).
pub fn parse_sse(text: &str) -> Vec<SseEvent> {
    let mut out = Vec::new();
    for block in text.split("\n\n") {
        let mut ev = SseEvent { event: "message".into(), id: None, data: String::new() };
        let mut has_data = false;
        for line in block.lines() {
            if line.starts_with(':') || line.is_empty() {
                continue;
            }
            let (field, value) = line.split_once(": ").unwrap_or((line, ""));
            match field {
                "event" => ev.event = value.to_string(),
                "id" => ev.id = Some(value.to_string()),
                "data" => {
                    if has_data {
                        ev.data.push('\n');
                    }
                    ev.data.push_str(value);
                    has_data = true;
                }
                _ => {}
            }
        }
        if has_data {
            out.push(ev);
        }
    }
    out
}

/// The lifecycle reason of an envelope, if it is a lifecycle one.
pub fn reason(env: &Value) -> Option<&str> {
    (env["channel"] == "lifecycle").then(|| env["event"]["reason"].as_str()).flatten()
}

/// Check one whole stream: from 0, gapless (counting coalesced numbers), exactly one terminal,
/// last.
pub fn assert_whole_stream(envs: &[Value]) {
    assert!(!envs.is_empty());
    let mut next = 0u64;
    for e in envs {
        let seq = e["sequence"].as_u64().unwrap();
        assert_eq!(seq, next, "gapless at {e}");
        next = seq + 1 + e["coalesced"].as_u64().unwrap_or(0);
    }
    let terminals =
        envs.iter().filter(|e| matches!(reason(e), Some("run_complete" | "run_failed" | "run_interrupted"))).count();
    assert_eq!(terminals, 1, "exactly one terminal");
    assert!(matches!(reason(envs.last().unwrap()), Some("run_complete" | "run_failed" | "run_interrupted")));
}

/// A WebSocket to a run's stream.
pub async fn ws_connect(
    server: &TestServer,
    token: Option<&str>,
    id: &str,
    query: &str,
) -> Result<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    tokio_tungstenite::tungstenite::Error,
> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let url = format!("ws://{}/v1/runs/{id}/ws{query}", server.addr);
    let mut req = url.into_client_request().unwrap();
    if let Some(t) = token {
        req.headers_mut().insert("authorization", format!("Bearer {t}").parse().unwrap());
    }
    tokio_tungstenite::connect_async(req).await.map(|(ws, _)| ws)
}

/// Read a WebSocket until it closes: the text messages, parsed.
pub async fn ws_collect(
    ws: &mut tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
) -> (Vec<Value>, Option<u16>) {
    use tokio_tungstenite::tungstenite::Message;
    let mut out = Vec::new();
    let mut close = None;
    let read = async {
        while let Some(msg) = ws.next().await {
            match msg.unwrap() {
                Message::Text(t) => out.push(serde_json::from_str(t.as_str()).unwrap()),
                Message::Close(frame) => {
                    close = frame.map(|f| u16::from(f.code));
                    break;
                }
                _ => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read).await.expect("the WebSocket closes");
    (out, close)
}
