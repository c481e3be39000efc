//! `make bench-server`: what `agentstream serve` costs, side by side with reading the same run
//! directly from the runner in one process (the baseline), in one run.
//!
//! The harness is this binary itself (re-executed with `AGENTSTREAM_BENCH_HARNESS=1`): it
//! prints JSONL lines that carry the wall-clock time they were written at, so every client can
//! measure harness line → client latency. Each line becomes one `stdout` envelope (an unknown
//! line type to the claude decoder: no content events), so envelopes = lines unless merged under
//! backpressure (then `coalesced` counts them; the tables report both).
//!
//! * throughput: the harness prints `FLOOD` lines as fast as it can; events/s per client, from
//!   the first envelope to the terminal one, and the whole run end to end (from the start request
//!   to the client's terminal envelope: what a longer path to the first envelope also costs).
//! * latency: the harness prints `PACED` lines at `RATE` lines/s (far below saturation); p50 and
//!   p99 of (client receive time − harness write time) over every line of every client.
//!
//! Both with 1 and 100 SSE subscribers on one run, and for the baseline (one direct reader of the
//! run, no server). Then the same through the cluster: a `serve` instance with `[nats]`, a worker
//! (the library's `Worker`, in this process) and a nats-server started here (JetStream, a
//! temporary store; `$AGENTSTREAM_NATS_SERVER`, `target/tools/bin/nats-server` or PATH — without
//! one those rows are skipped and say why): harness → worker → JetStream → serve → client.
//! Clients run in this process, on the same two cores as the server, the worker, nats-server and
//! the harness: the numbers include that contention, as a one-box deployment would.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use agentstream_core::Agent;
use agentstream_core::runner::{AgentConfig, Delivery, RunOptions, Session};
use agentstream_core::stream::StreamItem;
use agentstream_server::auth::TokenDigest;
use agentstream_server::config::{AgentEntry, TenantConfig};
use agentstream_server::nats::{NatsSettings, Worker, WorkerSettings};
use agentstream_server::{ServeConfig, Server};
use futures_util::StreamExt;

const HARNESS_ENV: &str = "AGENTSTREAM_BENCH_HARNESS";
const TOKEN: &str = "bench-token";
const FLOOD: u64 = 50_000;
const PACED: u64 = 4_000;
const RATE: u64 = 2_000;

fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64
}

/// The harness: `lines` lines at `rate` lines/s (0: as fast as possible), each stamped.
fn harness(lines: u64, rate: u64) {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let start = Instant::now();
    for n in 0..lines {
        if let Some(offset) = (n * 1_000_000_000).checked_div(rate) {
            let due = start + Duration::from_nanos(offset);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
        }
        if writeln!(out, "{{\"type\":\"bench\",\"n\":{n},\"t\":{}}}", now_ns()).is_err() {
            return;
        }
        if rate > 0 && out.flush().is_err() {
            return;
        }
    }
    let _ = out.flush();
}

/// The harness write time in an envelope's stdout line (`"t":<ns>` inside the JSON string).
fn stamp(text: &str) -> Option<u64> {
    let at = text.find("\\\"t\\\":").map(|i| i + 6).or_else(|| text.find("\"t\":").map(|i| i + 4))?;
    let digits: String = text[at..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[derive(Default)]
struct ClientStats {
    /// When the run was asked for.
    asked: Option<Instant>,
    envelopes: u64,
    lines: u64,
    first: Option<Instant>,
    last: Option<Instant>,
    latencies_us: Vec<u64>,
    gaps: u64,
    /// Subscriptions answered 503 and asked again (see `sse_client`).
    retries: u64,
}

impl ClientStats {
    fn envelope(&mut self, text: &str, coalesced: u64, is_line: bool) {
        let now = Instant::now();
        self.first.get_or_insert(now);
        self.last = Some(now);
        self.envelopes += 1;
        if is_line {
            self.lines += 1 + coalesced;
            if let Some(t) = stamp(text) {
                self.latencies_us.push(now_ns().saturating_sub(t) / 1000);
            }
        }
    }

    /// From the start request to the terminal envelope.
    fn end_to_end(&self) -> f64 {
        match (self.asked, self.last) {
            (Some(a), Some(b)) => (b - a).as_secs_f64().max(1e-9),
            _ => f64::NAN,
        }
    }

    fn seconds(&self) -> f64 {
        match (self.first, self.last) {
            (Some(a), Some(b)) => (b - a).as_secs_f64().max(1e-9),
            _ => f64::NAN,
        }
    }
}

fn config(exe: &std::path::Path) -> ServeConfig {
    let agent = |lines: u64, rate: u64| {
        let mut e = AgentEntry::default_for(Agent::Claude);
        e.bin = exe.to_path_buf();
        e.env = vec![
            (HARNESS_ENV.into(), "1".into()),
            ("BENCH_LINES".into(), lines.to_string()),
            ("BENCH_RATE".into(), rate.to_string()),
        ];
        e
    };
    let mut agents = BTreeMap::new();
    agents.insert("flood".to_string(), agent(FLOOD, 0));
    agents.insert("paced".to_string(), agent(PACED, RATE));
    let mut c = ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        tenants: vec![TenantConfig { name: "bench".into(), token_sha256: TokenDigest::of(TOKEN) }],
        agents,
        ..ServeConfig::default()
    };
    c.limits.runs_per_tenant = 4;
    c
}

/// One SSE subscriber reading a whole run.
async fn sse_client(http: reqwest::Client, url: String, asked: Instant) -> ClientStats {
    let mut stats = ClientStats { asked: Some(asked), ..ClientStats::default() };
    // A 503 is asked again after a pause, as the Python and Node clients do: in the cluster,
    // a hundred subscriptions at once on two busy cores can see NATS time out creating their
    // consumers ("backend_unavailable").
    let resp = loop {
        let resp = http.get(&url).bearer_auth(TOKEN).send().await.expect("subscribe");
        let status = resp.status();
        if status == 503 && stats.retries < 10 {
            stats.retries += 1;
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        }
        assert_eq!(status, 200, "{url}: {}", resp.text().await.unwrap_or_default());
        break resp;
    };
    let mut stream = resp.bytes_stream();
    let mut pending = String::new();
    while let Some(chunk) = stream.next().await {
        pending.push_str(std::str::from_utf8(&chunk.expect("body")).expect("UTF-8"));
        // Whole messages only; the cut one waits for the next chunk.
        let Some(end) = pending.rfind("\n\n") else { continue };
        for block in pending[..end].split("\n\n") {
            if block.starts_with("event: gap") {
                stats.gaps += 1;
                continue;
            }
            let Some(data) = block.lines().find_map(|l| l.strip_prefix("data: ")) else { continue };
            let is_line = data.contains("\"channel\":\"stdout\"");
            let coalesced = data
                .rfind("\"coalesced\":")
                .map(|i| data[i + 12..].chars().take_while(char::is_ascii_digit).collect::<String>())
                .and_then(|d| d.parse().ok())
                .unwrap_or(0);
            stats.envelope(data, coalesced, is_line);
        }
        pending.drain(..end + 2);
    }
    stats
}

/// The baseline: the same run read directly from the runner (no server, no HTTP).
async fn direct(exe: &std::path::Path, lines: u64, rate: u64) -> ClientStats {
    let mut config = AgentConfig::new(Agent::Claude);
    config.bin = Some(exe.to_path_buf());
    config.env = vec![
        (HARNESS_ENV.into(), "1".into()),
        ("BENCH_LINES".into(), lines.to_string()),
        ("BENCH_RATE".into(), rate.to_string()),
    ];
    let asked = Instant::now();
    let handle = Session::new(config).start_run(RunOptions::new("bench")).expect("start");
    let mut stats = ClientStats { asked: Some(asked), ..ClientStats::default() };
    while let Some(d) = handle.next().await {
        if let Delivery::Item(env) = d {
            match &env.item {
                StreamItem::Stdout(text) => stats.envelope(text, env.coalesced, true),
                _ => stats.envelope("", 0, false),
            }
        }
    }
    stats
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

struct Row {
    what: String,
    end_to_end_s: f64,
    envelopes_per_s: f64,
    lines_per_s: f64,
    aggregate_envelopes_per_s: f64,
    p50_ms: f64,
    p99_ms: f64,
    gaps: u64,
    retries: u64,
}

async fn scenario(server: &str, http: &reqwest::Client, agent: &str, subscribers: usize) -> Vec<ClientStats> {
    let asked = Instant::now();
    let resp = http
        .post(format!("{server}/v1/runs"))
        .bearer_auth(TOKEN)
        .json(&serde_json::json!({"agent": agent, "prompt": "bench"}))
        .send()
        .await
        .expect("start");
    assert_eq!(resp.status(), 201);
    let id = resp.json::<serde_json::Value>().await.unwrap()["id"].as_str().unwrap().to_string();
    let url = format!("{server}/v1/runs/{id}/events");
    let tasks: Vec<_> = (0..subscribers).map(|_| tokio::spawn(sse_client(http.clone(), url.clone(), asked))).collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

fn row(what: &str, clients: &[ClientStats]) -> Row {
    let n = clients.len() as f64;
    let per_client = |f: &dyn Fn(&ClientStats) -> f64| clients.iter().map(f).sum::<f64>() / n;
    let mut lat: Vec<u64> = clients.iter().flat_map(|c| c.latencies_us.iter().copied()).collect();
    lat.sort_unstable();
    Row {
        what: what.to_string(),
        end_to_end_s: per_client(&|c| c.end_to_end()),
        envelopes_per_s: per_client(&|c| c.envelopes as f64 / c.seconds()),
        lines_per_s: per_client(&|c| c.lines as f64 / c.seconds()),
        aggregate_envelopes_per_s: clients.iter().map(|c| c.envelopes as f64 / c.seconds()).sum(),
        p50_ms: percentile(&lat, 0.50),
        p99_ms: percentile(&lat, 0.99),
        gaps: clients.iter().map(|c| c.gaps).sum(),
        retries: clients.iter().map(|c| c.retries).sum(),
    }
}

/// A nats-server with JetStream for the cluster rows (killed on drop).
struct NatsServer {
    child: std::process::Child,
    store: std::path::PathBuf,
    url: String,
}

impl NatsServer {
    fn start() -> Result<NatsServer, String> {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let bin = std::env::var_os("AGENTSTREAM_NATS_SERVER")
            .map(std::path::PathBuf::from)
            .or_else(|| Some(repo.join("target/tools/bin/nats-server")).filter(|p| p.is_file()))
            .or_else(|| {
                std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join("nats-server")).find(|p| p.is_file())
            })
            .ok_or("no nats-server (run .ci/install-nats.sh or set AGENTSTREAM_NATS_SERVER)")?;
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let store = std::env::temp_dir().join(format!("agentstream-bench-nats-{}", std::process::id()));
        let child = std::process::Command::new(&bin)
            .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
            .arg(&store)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("{}: {e}", bin.display()))?;
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                return Err("nats-server did not start".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(NatsServer { child, store, url: format!("nats://127.0.0.1:{port}") })
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.store);
    }
}

/// The same scenarios through the cluster: a worker and a serve instance on `nats`.
async fn cluster_rows(
    exe: &std::path::Path,
    nats: &NatsServer,
    http: &reqwest::Client,
    throughput: &mut Vec<Row>,
    latency: &mut Vec<Row>,
) -> Result<(), String> {
    let mut config = config(exe);
    let settings = NatsSettings::new(nats.url.clone());
    config.nats = Some(settings.clone());
    let worker = Worker::connect(&config, settings, WorkerSettings { id: "bench".into(), max_runs: 4 }).await?;
    let (stop_worker, worker_stopped) = tokio::sync::oneshot::channel::<()>();
    let working = tokio::spawn(worker.run(async move {
        let _ = worker_stopped.await;
    }));
    let server = Server::bind(&config).await.map_err(|e| e.to_string())?;
    let base = format!("http://{}", server.local_addr());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));
    // The worker announces itself within a third of its lease.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let health: serde_json::Value = http
            .get(format!("{base}/healthz"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .map_err(|e| e.to_string())?
            .json()
            .await
            .unwrap();
        if health["backend"]["workers"] == 1 {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!("the worker did not show up: {health}"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for subs in [1, 100] {
        let clients = scenario(&base, http, "flood", subs).await;
        throughput.push(row(&format!("cluster (NATS), {subs} SSE sub(s)"), &clients));
    }
    for subs in [1, 100] {
        let clients = scenario(&base, http, "paced", subs).await;
        latency.push(row(&format!("cluster (NATS), {subs} SSE sub(s)"), &clients));
    }
    let _ = stop.send(());
    let _ = serving.await;
    let _ = stop_worker.send(());
    let _ = working.await;
    Ok(())
}

fn main() {
    if std::env::var_os(HARNESS_ENV).is_some() {
        let lines = std::env::var("BENCH_LINES").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);
        let rate = std::env::var("BENCH_RATE").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
        harness(lines, rate);
        return;
    }
    // `cargo bench` passes --bench; nothing else to parse.
    let exe = std::env::current_exe().expect("this binary");
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async move {
        let server = Server::bind(&config(&exe)).await.expect("bind");
        let base = format!("http://{}", server.local_addr());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(server.run(async move {
            let _ = stopped.await;
        }));
        let http = reqwest::Client::builder().pool_max_idle_per_host(200).build().unwrap();

        let mut throughput = Vec::new();
        throughput.push(row("direct reader (baseline)", &[direct(&exe, FLOOD, 0).await]));
        for subs in [1, 100] {
            let clients = scenario(&base, &http, "flood", subs).await;
            throughput.push(row(&format!("serve, {subs} SSE subscriber(s)"), &clients));
        }
        let mut latency = Vec::new();
        latency.push(row("direct reader (baseline)", &[direct(&exe, PACED, RATE).await]));
        for subs in [1, 100] {
            let clients = scenario(&base, &http, "paced", subs).await;
            latency.push(row(&format!("serve, {subs} SSE subscriber(s)"), &clients));
        }
        let _ = stop.send(());
        let _ = serving.await;
        let cluster = match NatsServer::start() {
            Ok(nats) => cluster_rows(&exe, &nats, &http, &mut throughput, &mut latency).await,
            Err(e) => Err(e),
        };

        let base_rate = throughput[0].lines_per_s;
        println!(
            "\nthroughput: {FLOOD} lines printed as fast as possible (per client; merged lines counted in lines/s)"
        );
        println!(
            "{:<32} {:>14} {:>14} {:>10} {:>18} {:>12} {:>6}",
            "", "envelopes/s", "lines/s", "vs direct", "all clients env/s", "end to end", "gaps"
        );
        for r in &throughput {
            println!(
                "{:<32} {:>14.0} {:>14.0} {:>9.2}x {:>18.0} {:>10.3} s {:>6}",
                r.what,
                r.envelopes_per_s,
                r.lines_per_s,
                r.lines_per_s / base_rate,
                r.aggregate_envelopes_per_s,
                r.end_to_end_s,
                r.gaps
            );
        }
        println!(
            "\nlatency: {PACED} lines at {RATE} lines/s, harness write → client receive (every line of every client)"
        );
        println!("{:<32} {:>10} {:>10} {:>6}", "", "p50 ms", "p99 ms", "gaps");
        for r in &latency {
            println!("{:<32} {:>10.3} {:>10.3} {:>6}", r.what, r.p50_ms, r.p99_ms, r.gaps);
        }
        for r in throughput.iter().chain(&latency).filter(|r| r.retries > 0) {
            println!("{}: {} subscription(s) answered 503 and asked again", r.what.trim(), r.retries);
        }
        if let Err(why) = cluster {
            println!("\ncluster (NATS) rows skipped: {why}");
        }
    });
}
