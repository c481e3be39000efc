//! The cluster on NATS JetStream, end to end: a real `nats-server` (2.11 or later; CI builds
//! v2.15.3 with `.ci/install-nats.sh`) started by each test with JetStream, a temporary store
//! directory, on 127.0.0.1 and a free port; two `serve` instances (in this process, real HTTP on
//! 127.0.0.1) and two `agentstream worker` processes (the real binary), whose agents are the fake
//! harness.
//!
//! The server binary: `$AGENTSTREAM_NATS_SERVER`, else `target/tools/bin/nats-server`, else
//! `nats-server` on PATH. Without one the tests say so and pass, unless
//! `AGENTSTREAM_REQUIRE_NATS=1` (what `make test-nats` sets), which makes a missing or too old
//! server a failure. The tests live in `mod cluster` so that `make test-server` can skip them
//! (`--skip cluster::`) and `make test-nats` runs them.

mod common;

mod cluster {
    use std::collections::{BTreeMap, HashMap};
    use std::io::{BufRead, BufReader};
    use std::path::PathBuf;
    use std::process::{Child, Command, Stdio};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use agentstream_core::Agent;
    use agentstream_server::config::AgentEntry;
    use agentstream_server::nats::NatsSettings;
    use futures_util::StreamExt;
    use serde_json::{Value, json};

    use super::common::*;

    /// The oldest nats-server the backend supports.
    const MIN_VERSION: (u64, u64) = (2, 11);

    fn nats_server_binary() -> Result<PathBuf, String> {
        let candidates: Vec<PathBuf> = match std::env::var_os("AGENTSTREAM_NATS_SERVER") {
            Some(p) => vec![PathBuf::from(p)],
            None => {
                let mut c = vec![repo().join("target/tools/bin/nats-server")];
                if let Some(path) = std::env::var_os("PATH") {
                    c.extend(std::env::split_paths(&path).map(|d| d.join("nats-server")));
                }
                c
            }
        };
        let bin = candidates.into_iter().find(|p| p.is_file()).ok_or_else(|| {
            "no nats-server found (run .ci/install-nats.sh, or set AGENTSTREAM_NATS_SERVER)".to_string()
        })?;
        let out = Command::new(&bin).arg("--version").output().map_err(|e| format!("{}: {e}", bin.display()))?;
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let version = text.trim().rsplit(' ').next().unwrap_or("").trim_start_matches('v').to_string();
        let mut parts = version.split('.').map(|p| p.parse::<u64>().unwrap_or(0));
        let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        if (major, minor) < MIN_VERSION {
            return Err(format!(
                "{} is nats-server {version}: too old (key-value buckets and per-key TTL need {}.{} or later; \
                 .ci/install-nats.sh builds 2.15.3)",
                bin.display(),
                MIN_VERSION.0,
                MIN_VERSION.1
            ));
        }
        Ok(bin)
    }

    fn free_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
    }

    /// A nats-server with JetStream on 127.0.0.1, a free port and a temporary store.
    pub struct NatsServer {
        bin: PathBuf,
        pub port: u16,
        store: PathBuf,
        /// `max_payload` when not the server's default (1 MiB).
        max_payload: Option<usize>,
        /// More of its configuration file (e.g. `authorization { … }`).
        conf: String,
        child: Option<Child>,
    }

    impl NatsServer {
        /// Start one with `conf` added to its configuration file, or `None` (the test is skipped)
        /// when there is no usable nats-server.
        pub fn start_with_conf(test: &str, max_payload: Option<usize>, conf: &str) -> Option<NatsServer> {
            let bin = match nats_server_binary() {
                Ok(bin) => bin,
                Err(why) if std::env::var_os("AGENTSTREAM_REQUIRE_NATS").is_some_and(|v| v == "1") => {
                    panic!("{why}")
                }
                Err(why) => {
                    eprintln!("SKIPPED {test}: {why}");
                    return None;
                }
            };
            let store = std::env::temp_dir().join(format!("agentstream-nats-{}", new_mark(test)));
            std::fs::create_dir_all(&store).unwrap();
            let mut server =
                NatsServer { bin, port: free_port(), store, max_payload, conf: conf.to_string(), child: None };
            server.resume();
            Some(server)
        }

        pub fn url(&self) -> String {
            format!("nats://127.0.0.1:{}", self.port)
        }

        /// (Re)start on the same port and store.
        pub fn resume(&mut self) {
            let mut command = Command::new(&self.bin);
            command.args(["-js", "-a", "127.0.0.1", "-p", &self.port.to_string(), "-sd"]).arg(&self.store);
            let mut conf = self.conf.clone();
            if let Some(max) = self.max_payload {
                conf.push_str(&format!("max_payload: {max}\n"));
            }
            if !conf.is_empty() {
                let path = self.store.join("nats.conf");
                std::fs::write(&path, conf).unwrap();
                command.arg("-c").arg(path);
            }
            let child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("start nats-server");
            self.child = Some(child);
            let deadline = Instant::now() + Duration::from_secs(10);
            while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
                assert!(Instant::now() < deadline, "nats-server did not listen on {}", self.port);
                std::thread::sleep(Duration::from_millis(20));
            }
        }

        /// Stop it (an outage); `resume` brings it back with the same data.
        pub fn stop(&mut self) {
            if let Some(mut child) = self.child.take() {
                unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
                let deadline = Instant::now() + Duration::from_secs(10);
                while child.try_wait().unwrap().is_none() {
                    if Instant::now() > deadline {
                        let _ = child.kill();
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
    }

    impl Drop for NatsServer {
        fn drop(&mut self) {
            if let Some(mut child) = self.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
            let _ = std::fs::remove_dir_all(&self.store);
        }
    }

    /// The CLI binary (for `agentstream worker`), next to the fake harness.
    fn agentstream_binary() -> PathBuf {
        if let Some(p) = std::env::var_os("AGENTSTREAM_BIN") {
            return PathBuf::from(p);
        }
        let bin = fake_harness().with_file_name("agentstream");
        assert!(bin.exists(), "{} is not built: run `cargo build -p agentstream-cli --bins`", bin.display());
        bin
    }

    fn toml_string(s: &str) -> String {
        serde_json::to_string(s).unwrap()
    }

    /// serve.toml text for a worker: its agents and the cluster.
    fn worker_config(agents: &BTreeMap<String, AgentEntry>, nats: &NatsSettings, max_runs: usize) -> String {
        let mut t = String::new();
        for (name, a) in agents {
            t.push_str(&format!(
                "[agents.{name}]\nharness = {}\nbin = {}\n",
                toml_string(a.harness.name()),
                toml_string(&a.bin.to_string_lossy())
            ));
            let env: Vec<String> = a.env.iter().map(|(k, v)| format!("{k} = {}", toml_string(v))).collect();
            t.push_str(&format!("env = {{ {} }}\n", env.join(", ")));
        }
        t.push_str(&format!(
            "[shutdown]\nkill_grace_secs = 2\n[nats]\nurl = {}\nlease_secs = {}\nstart_timeout_secs = {}\nretention_bytes = {}\n\
             retention_secs = {}\n[worker]\nmax_runs = {max_runs}\n",
            toml_string(&nats.url),
            nats.lease.as_secs(),
            nats.start_timeout.as_secs(),
            nats.retention_bytes,
            nats.retention_age.as_secs_f64(),
        ));
        t
    }

    /// An `agentstream worker` process.
    pub struct WorkerProcess {
        pub id: String,
        pub mark: String,
        child: Child,
        _config: PathBuf,
    }

    impl WorkerProcess {
        fn start(id: &str, mark: &str, nats: &NatsSettings, extra: &[(&str, AgentEntry)], max_runs: usize) -> Self {
            let mut agents = agents(mark);
            for (name, entry) in extra {
                agents.insert(name.to_string(), entry.clone());
            }
            let path = std::env::temp_dir().join(format!("agentstream-worker-{mark}.toml"));
            std::fs::write(&path, worker_config(&agents, nats, max_runs)).unwrap();
            let mut child = Command::new(agentstream_binary())
                .args(["worker", "--id", id, "--config"])
                .arg(&path)
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("start agentstream worker");
            let mut line = String::new();
            BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
            assert!(line.contains("connected to NATS"), "the worker says it is connected: {line:?}");
            WorkerProcess { id: id.to_string(), mark: mark.to_string(), child, _config: path }
        }

        /// SIGKILL: the worker dies without a word (its harness processes are orphaned).
        fn kill(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }

        /// SIGTERM and wait: the worker's own shutdown.
        fn terminate(&mut self) -> std::process::ExitStatus {
            unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                if let Some(status) = self.child.try_wait().unwrap() {
                    return status;
                }
                assert!(Instant::now() < deadline, "the worker did not stop");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    impl Drop for WorkerProcess {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
            // A killed worker leaves its harnesses behind: end them (they are this test's).
            for pid in processes_with_mark(&self.mark) {
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            let _ = std::fs::remove_file(&self._config);
            let _ = std::fs::remove_file(format!(
                "{}.input.jsonl",
                std::env::temp_dir().join(format!("agentstream-big-{}", self.mark)).display()
            ));
        }
    }

    /// A trace (the claude s2-bash one) with a 40 KB line in the middle: its stdout envelope is
    /// larger than a small NATS message. Returns the fake harness's trace prefix.
    fn big_trace(mark: &str) -> String {
        let prefix = std::env::temp_dir().join(format!("agentstream-big-{mark}"));
        let original = std::fs::read_to_string(format!("{}.input.jsonl", golden("claude", "s2-bash"))).unwrap();
        let mut lines: Vec<String> = original.lines().map(str::to_string).collect();
        lines.insert(2, format!("{{\"type\":\"padding\",\"text\":\"{}\"}}", "0123456789".repeat(4000)));
        std::fs::write(format!("{}.input.jsonl", prefix.display()), lines.join("\n") + "\n").unwrap();
        prefix.to_string_lossy().into_owned()
    }

    /// A quick agent (a short trace, no delay), a paced one, floods, and one with a large line.
    fn extra_agents(mark: &str) -> Vec<(&'static str, AgentEntry)> {
        let marked = ("AGENTSTREAM_TEST_MARK", mark);
        let mut big = fake_agent(Agent::Claude, "s2-bash", &[marked]);
        big.env[0].1 = big_trace(mark);
        vec![
            ("big", big),
            ("quick", fake_agent(Agent::Claude, "s1-text", &[marked])),
            ("paced", fake_agent(Agent::Claude, "s2-bash", &[("AGENTSTREAM_FAKE_DELAY_MS", "150"), marked])),
            ("deluge", fake_agent(Agent::Claude, "s2-bash", &[("AGENTSTREAM_FAKE_FLOOD", "80000"), marked])),
            // 32–36 MB on the stream: several times what a socket pair and hyper buffer (4–10 MB
            // measured).
            ("torrent", fake_agent(Agent::Claude, "s2-bash", &[("AGENTSTREAM_FAKE_FLOOD", "640000"), marked])),
        ]
    }

    /// How a test's cluster is set up.
    #[derive(Clone, Copy)]
    struct Setup {
        lease_secs: u64,
        max_runs: usize,
        runs_per_tenant: usize,
        retention_bytes: u64,
        /// The events stream's and the runs bucket's age limit.
        retention: Duration,
        max_payload: Option<usize>,
        /// The serve instances' `limits.replay_bytes` (what each keeps of a run it reads).
        replay_bytes: Option<usize>,
        /// How long serve waits for a worker to take a run request.
        start_timeout_secs: u64,
        /// More of nats-server's configuration (e.g. `authorization { … }`).
        nats_conf: &'static str,
    }

    impl Default for Setup {
        fn default() -> Self {
            Setup {
                lease_secs: 5,
                max_runs: 4,
                runs_per_tenant: 16,
                retention_bytes: 1 << 30,
                retention: Duration::from_secs(24 * 3600),
                max_payload: None,
                replay_bytes: None,
                start_timeout_secs: 20,
                nats_conf: "",
            }
        }
    }

    /// nats-server, two workers, two serve instances.
    pub struct Cluster {
        pub a: TestServer,
        pub b: TestServer,
        pub workers: Vec<WorkerProcess>,
        pub nats: NatsServer,
        pub settings: NatsSettings,
    }

    impl Cluster {
        async fn start(test: &str, setup: Setup) -> Option<Cluster> {
            let Setup {
                lease_secs,
                max_runs,
                runs_per_tenant,
                retention_bytes,
                retention,
                max_payload,
                replay_bytes,
                start_timeout_secs,
                nats_conf,
            } = setup;
            let nats = NatsServer::start_with_conf(test, max_payload, nats_conf)?;
            let mut settings = NatsSettings::new(nats.url());
            settings.lease = Duration::from_secs(lease_secs);
            settings.start_timeout = Duration::from_secs(start_timeout_secs);
            settings.retention_bytes = retention_bytes;
            settings.retention_age = retention;
            let workers: Vec<WorkerProcess> = (1..=2)
                .map(|i| {
                    let mark = new_mark(&format!("{test}-w{i}"));
                    WorkerProcess::start(&format!("w{i}"), &mark, &settings, &extra_agents(&mark), max_runs)
                })
                .collect();
            let serve = |name: &str| {
                let mark = new_mark(&format!("{test}-{name}"));
                let mut c = config(&mark);
                c.nats = Some(settings.clone());
                c.limits.runs_per_tenant = runs_per_tenant;
                c.limits.heartbeat = Duration::from_millis(500);
                if let Some(bytes) = replay_bytes {
                    c.limits.replay_bytes = bytes;
                }
                (c, mark)
            };
            let (ca, ma) = serve("a");
            let (cb, mb) = serve("b");
            let a = TestServer::start(ca, ma).await;
            let b = TestServer::start(cb, mb).await;
            let cluster = Cluster { a, b, workers, nats, settings };
            // Both workers announced themselves to both instances.
            for s in [&cluster.a, &cluster.b] {
                let deadline = Instant::now() + Duration::from_secs(10);
                loop {
                    let (_, h) = s.get_json(Some(TOKEN_A), "/healthz").await;
                    assert!(h.get("replay").is_none(), "the stream is the replay buffer, not this process: {h}");
                    if h["backend"]["workers"] == 2 {
                        break;
                    }
                    assert!(Instant::now() < deadline, "workers not seen: {h}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            Some(cluster)
        }

        fn worker(&mut self, id: &str) -> &mut WorkerProcess {
            self.workers.iter_mut().find(|w| w.id == id).unwrap()
        }

        /// A JetStream context of the test's own on the cluster's NATS server.
        async fn jetstream(&self) -> async_nats::jetstream::Context {
            async_nats::jetstream::new(async_nats::connect(self.nats.url()).await.expect("connect to NATS"))
        }

        /// The cluster's events stream.
        async fn events(&self) -> async_nats::jetstream::stream::Stream {
            self.jetstream().await.get_stream(self.settings.events_stream()).await.expect("the events stream")
        }

        /// The bytes the events stream holds.
        async fn event_bytes(&self) -> u64 {
            self.events().await.info().await.expect("stream info").state.bytes
        }

        /// How many consumers the events stream has (ordered consumers outlive their reader
        /// until the server finds them inactive, so this counts the ones a test made).
        async fn event_consumers(&self) -> usize {
            self.events().await.info().await.expect("stream info").state.consumer_count
        }
    }

    /// Read the first `n` envelopes of a live SSE stream, then hang up.
    async fn sse_head(server: &TestServer, token: &str, id: &str, n: usize) -> Vec<Value> {
        let resp =
            server.http.get(server.url(&format!("/v1/runs/{id}/events"))).bearer_auth(token).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        let mut body = String::new();
        let mut stream = resp.bytes_stream();
        let read = async {
            loop {
                let envs: Vec<Value> =
                    parse_sse(whole(&body)).iter().filter(|e| e.event == "message").map(SseEvent::json).collect();
                if envs.len() >= n {
                    return envs[..n].to_vec();
                }
                let chunk = stream.next().await.expect("the stream goes on").unwrap();
                body.push_str(std::str::from_utf8(&chunk).unwrap());
            }
        };
        tokio::time::timeout(Duration::from_secs(30), read).await.expect("the head of the stream")
    }

    /// `POST …/cancel` as tenant A: the status and the body.
    async fn cancel(server: &TestServer, id: &str) -> (u16, Value) {
        let resp =
            server.http.post(server.url(&format!("/v1/runs/{id}/cancel"))).bearer_auth(TOKEN_A).send().await.unwrap();
        (resp.status().as_u16(), resp.json().await.unwrap())
    }

    fn whole(text: &str) -> &str {
        text.rfind("\n\n").map_or("", |i| &text[..i + 2])
    }

    fn seqs(envs: &[Value]) -> Vec<u64> {
        envs.iter().map(|e| e["sequence"].as_u64().unwrap()).collect()
    }

    /// Wait until `server` reports run `id` of tenant A past sequence `past`.
    async fn wait_past(server: &TestServer, id: &str, past: u64) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let (_, body) = server.get_json(Some(TOKEN_A), &format!("/v1/runs/{id}")).await;
            if body["lastSequence"].as_u64().is_some_and(|l| l > past) {
                return;
            }
            assert!(Instant::now() < deadline, "run {id} did not get past {past}: {body}");
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    fn spawn_sse_after(server: &TestServer, id: &str, after: u64) -> tokio::task::JoinHandle<Vec<SseEvent>> {
        let http = server.http.clone();
        let url = server.url(&format!("/v1/runs/{id}/events?after={after}"));
        tokio::spawn(async move {
            let text = http.get(url).bearer_auth(TOKEN_A).send().await.unwrap().text().await.unwrap();
            parse_sse(&text)
        })
    }

    fn spawn_sse(server: &TestServer, id: &str) -> tokio::task::JoinHandle<Vec<SseEvent>> {
        let http = server.http.clone();
        let url = server.url(&format!("/v1/runs/{id}/events"));
        tokio::spawn(async move {
            let text = http.get(url).bearer_auth(TOKEN_A).send().await.unwrap().text().await.unwrap();
            parse_sse(&text)
        })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_run_started_on_a_streams_resumes_and_cancels_from_b() {
        let Some(cluster) = Cluster::start("cross", Setup::default()).await else { return };
        let (a, b) = (&cluster.a, &cluster.b);

        let id = a.start_run(TOKEN_A, "paced").await;
        // B knows it at once, and which worker runs it.
        let (status, info) = b.get_json(Some(TOKEN_A), &format!("/v1/runs/{id}")).await;
        assert_eq!(status, 200, "{info}");
        assert_eq!(info["status"], "running");
        assert!(matches!(info["worker"].as_str(), Some("w1" | "w2")), "{info}");
        // Stream from B, hang up after 4 envelopes, resume from B where it stopped.
        let head = sse_head(b, TOKEN_A, &id, 4).await;
        let last = head.last().unwrap()["sequence"].as_u64().unwrap();
        let tail = b.sse(TOKEN_A, &id, Some(&last.to_string()), "").await;
        assert_eq!(tail.status, 200);
        let mut joined = head.clone();
        joined.extend(tail.envelopes());
        assert_whole_stream(&joined);
        assert_eq!(reason(joined.last().unwrap()), Some("run_complete"));
        // A has the identical stream, and every resume point gives the identical tail on B.
        let from_a = a.sse(TOKEN_A, &id, None, "").await.envelopes();
        assert_eq!(from_a, joined, "the same envelopes through either instance");
        for env in &joined[..joined.len() - 1] {
            let s = env["sequence"].as_u64().unwrap();
            let got = b.sse(TOKEN_A, &id, None, &format!("?after={s}")).await.envelopes();
            let want: Vec<Value> = joined.iter().filter(|e| e["sequence"].as_u64().unwrap() > s).cloned().collect();
            assert_eq!(seqs(&got), seqs(&want), "resume after {s} on B");
            assert_eq!(got, want);
        }
        let terminal = joined.last().unwrap()["sequence"].as_u64().unwrap();
        assert_eq!(b.sse(TOKEN_A, &id, Some(&terminal.to_string()), "").await.status, 204);
        let (status, body) = b.get_json(Some(TOKEN_A), &format!("/v1/runs/{id}/events?after={}", terminal + 5)).await;
        assert_eq!((status, body["field"].as_str()), (400, Some("after")), "{body}");
        let (_, done) = b.get_json(Some(TOKEN_A), &format!("/v1/runs/{id}")).await;
        assert_eq!((done["status"].as_str(), done["lastSequence"].as_u64()), (Some("completed"), Some(terminal)));
        assert_eq!(done["result"]["state"], "completed");

        // Cancel from B a run started through A: it reaches the owning worker, whose terminal
        // envelope confirms it on both instances.
        let id = a.start_run(TOKEN_A, "hang").await;
        wait_past(b, &id, 5).await;
        let (on_a, on_b) = (spawn_sse(a, &id), spawn_sse(b, &id));
        tokio::time::sleep(Duration::from_millis(200)).await;
        let resp = b
            .http
            .post(b.url(&format!("/v1/runs/{id}/cancel")))
            .bearer_auth(TOKEN_A)
            .json(&json!({"reason": "stopped from B"}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["status"], "cancelled", "{body}");
        assert!(body["result"]["cancel_reason"].as_str().unwrap().contains("stopped from B"), "{body}");
        assert_eq!(body["result"]["cancel_kind"], "caller");
        for sse in [on_a, on_b] {
            let envs: Vec<Value> =
                sse.await.unwrap().iter().filter(|e| e.event == "message").map(SseEvent::json).collect();
            assert_whole_stream(&envs);
            assert_eq!(reason(envs.last().unwrap()), Some("run_interrupted"));
        }
        // WebSocket from B: the same envelopes, closed with 1000.
        let mut ws = ws_connect(b, Some(TOKEN_A), &id, "").await.unwrap();
        let (msgs, close) = ws_collect(&mut ws).await;
        assert_whole_stream(&msgs);
        assert_eq!(close, Some(1000));
        for w in &cluster.workers {
            eventually("no harness left", Duration::from_secs(10), || processes_with_mark(&w.mark).is_empty()).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_subscribers_of_a_run_on_one_instance_share_one_consumer() {
        // Before, each subscriber had its own consumer: NATS sent the run once per subscriber
        // over the instance's one connection (a hundred to a flood overflowed it).
        let Some(cluster) = Cluster::start("shared", Setup::default()).await else { return };
        let (a, b) = (&cluster.a, &cluster.b);
        let id = a.start_run(TOKEN_A, "paced").await;
        let readers: Vec<_> = (0..20).map(|_| spawn_sse(b, &id)).collect();
        wait_past(b, &id, 3).await;
        // Joining later, from the start and from the middle: what the shared follow holds.
        let late = spawn_sse(b, &id);
        let resumed = spawn_sse_after(b, &id, 2);
        let whole: Vec<Vec<Value>> = join_envelopes(readers).await;
        for envs in &whole {
            assert_whole_stream(envs);
            assert_eq!(envs, &whole[0], "every subscriber got the same stream");
        }
        assert_eq!(join_envelopes(vec![late]).await[0], whole[0]);
        let tail = join_envelopes(vec![resumed]).await.remove(0);
        assert_eq!(tail[..], whole[0][3..], "resumed after 2");
        assert_eq!(cluster.event_consumers().await, 1, "one consumer for 22 subscribers");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn subscribers_the_shared_follow_left_behind_read_on_from_their_own_consumer() {
        // The instance keeps 4 KiB of a run it reads (its newest message). A client that reads
        // nothing while two others read a 32 MB flood to its end is left far behind — what the
        // sockets hold for it (its receive buffer is kept small) is a few MB — and, once it
        // reads, reads on from a consumer of its own: nothing lost.
        let setup = Setup { replay_bytes: Some(4096), ..Setup::default() };
        let Some(cluster) = Cluster::start("behind", setup).await else { return };
        let (a, b) = (&cluster.a, &cluster.b);
        let id = a.start_run(TOKEN_A, "torrent").await;
        let mut slow = raw_subscriber(b, &id);
        let fast: Vec<_> = (0..2).map(|_| spawn_sse(b, &id)).collect();
        for envs in join_envelopes(fast).await {
            assert_whole_stream(&envs);
        }
        let response = tokio::task::spawn_blocking(move || {
            use std::io::Read;
            let mut bytes = Vec::new();
            slow.read_to_end(&mut bytes).unwrap();
            bytes
        })
        .await
        .unwrap();
        let events = parse_sse(&String::from_utf8(chunked_body(&response)).unwrap());
        assert!(events.iter().all(|e| e.event == "message"), "only envelopes");
        assert_whole_stream(&events.iter().map(SseEvent::json).collect::<Vec<_>>());
        assert!(cluster.event_consumers().await > 1, "the slow subscriber read on from a consumer of its own");
    }

    /// The body of a raw HTTP/1.1 `200` response sent in chunks (an SSE stream).
    fn chunked_body(response: &[u8]) -> Vec<u8> {
        let head_end = response.windows(4).position(|w| w == b"\r\n\r\n").expect("a response head");
        let head = String::from_utf8_lossy(&response[..head_end]).to_ascii_lowercase();
        assert!(head.starts_with("http/1.1 200") && head.contains("transfer-encoding: chunked"), "{head}");
        let (mut rest, mut body) = (&response[head_end + 4..], Vec::new());
        loop {
            let line_end = rest.windows(2).position(|w| w == b"\r\n").expect("a chunk's size line");
            let size = std::str::from_utf8(&rest[..line_end]).unwrap().split(';').next().unwrap().trim();
            let size = usize::from_str_radix(size, 16).expect("a chunk size");
            rest = &rest[line_end + 2..];
            if size == 0 {
                return body;
            }
            body.extend_from_slice(&rest[..size]);
            rest = &rest[size + 2..];
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_follow_reads_no_further_than_its_subscribers_and_goes_with_them() {
        // Each instance may keep the whole run: only the pacing keeps it from reading it all.
        let setup = Setup { replay_bytes: Some(512 << 20), ..Setup::default() };
        let Some(cluster) = Cluster::start("paced-follow", setup).await else { return };
        let (a, b) = (&cluster.a, &cluster.b);
        let id = a.start_run(TOKEN_A, "torrent").await;
        a.wait_ended(TOKEN_A, &id).await;
        let run_bytes = cluster.event_bytes().await;
        // A client that reads the response head and then nothing, with a small receive buffer.
        let mut client = raw_subscriber(b, &id);
        use std::io::Read;
        let mut head = [0u8; 4096];
        let n = client.read(&mut head).unwrap();
        assert!(head[..n].starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&head[..n]));
        // What the follow holds stops growing once the sockets are full.
        let mut held = Vec::new();
        for _ in 0..60 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            held.push(follows(b).await);
            if held.len() >= 10 && held[held.len() - 10..].iter().all(|f| f == held.last().unwrap()) {
                break;
            }
        }
        let last = held.last().unwrap().clone();
        assert_eq!(last["runs"], 1, "{held:?}");
        assert_eq!(last["max"], 1 << 30, "replay_bytes_total's default: {held:?}");
        let bytes = last["bytes"].as_u64().unwrap();
        // About 32 MB, less when the instance merged text deltas under load (24.9 MB seen in a
        // CI run): what the sockets hold is a few MB, so half of 16 MiB still tells.
        assert!(run_bytes > 16 << 20, "the run ({run_bytes} bytes) is too small to tell");
        assert!(bytes < run_bytes / 2, "held {bytes} of the run's {run_bytes} bytes for a client reading nothing");
        // The client goes: so does the follow, and what it held.
        drop(client);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let f = follows(b).await;
            if (&f["runs"], &f["bytes"]) == (&json!(0), &json!(0)) {
                break;
            }
            assert!(Instant::now() < deadline, "the follow outlived its subscriber: {f}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `/healthz`'s `backend.follows` of `server`.
    async fn follows(server: &TestServer) -> Value {
        server.get_json(Some(TOKEN_A), "/healthz").await.1["backend"]["follows"].clone()
    }

    /// A plain socket that asked `server` for run `id`'s events (to be closed after the
    /// response), its receive buffer kept small: the client's reading alone paces what it gets.
    fn raw_subscriber(server: &TestServer, id: &str) -> std::net::TcpStream {
        use std::io::Write;
        let mut socket = std::net::TcpStream::connect(server.addr).unwrap();
        shrink_receive_buffer(&socket);
        write!(
            socket,
            "GET /v1/runs/{id}/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN_A}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        socket
    }

    /// 64 KiB (the kernel doubles it) instead of a buffer growing to 32 MiB.
    fn shrink_receive_buffer(socket: &std::net::TcpStream) {
        use std::os::fd::AsRawFd;
        let size: libc::c_int = 64 * 1024;
        // SAFETY: setsockopt on a socket this test owns, with a c_int that outlives the call.
        let r = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(r, 0, "setsockopt SO_RCVBUF");
    }

    /// The envelopes of each finished SSE reader.
    async fn join_envelopes(readers: Vec<tokio::task::JoinHandle<Vec<SseEvent>>>) -> Vec<Vec<Value>> {
        let mut out = Vec::new();
        for r in readers {
            let events = tokio::time::timeout(Duration::from_secs(60), r).await.expect("the stream ends").unwrap();
            assert!(events.iter().all(|e| e.event == "message"), "only envelopes");
            out.push(events.iter().map(SseEvent::json).collect());
        }
        out
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_worker_killed_mid_run_ends_it_failed_on_every_instance() {
        let Some(mut cluster) = Cluster::start("killed", Setup { lease_secs: 2, ..Setup::default() }).await else {
            return;
        };
        let id = cluster.a.start_run(TOKEN_A, "hang").await;
        wait_past(&cluster.b, &id, 5).await;
        let (on_a, on_b) = (spawn_sse(&cluster.a, &id), spawn_sse(&cluster.b, &id));
        let (_, info) = cluster.b.get_json(Some(TOKEN_A), &format!("/v1/runs/{id}")).await;
        let owner = info["worker"].as_str().unwrap().to_string();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let killed_at = Instant::now();
        cluster.worker(&owner).kill();
        // Nobody hears a cancel now: the client is told so (not "running" after the wait), unless
        // the reaper was quicker.
        let (status, body) = cancel(&cluster.a, &id).await;
        if status == 503 {
            assert_eq!(body["error"], "cancel_not_delivered", "{body}");
            assert!(body["message"].as_str().unwrap().contains("no worker is listening"), "{body}");
        } else {
            assert_eq!((status, body["status"].as_str()), (200, Some("failed")), "{body}");
        }
        for sse in [on_a, on_b] {
            let events = tokio::time::timeout(Duration::from_secs(20), sse).await.expect("the stream ends").unwrap();
            let envs: Vec<Value> = events.iter().filter(|e| e.event == "message").map(SseEvent::json).collect();
            assert_whole_stream(&envs);
            assert_eq!(reason(envs.last().unwrap()), Some("run_failed"), "every subscriber gets a terminal");
        }
        let took = killed_at.elapsed();
        assert!(took < Duration::from_secs(15), "ended {took:?} after the kill (lease 2 s)");
        for server in [&cluster.a, &cluster.b] {
            let (_, body) = server.get_json(Some(TOKEN_A), &format!("/v1/runs/{id}")).await;
            assert_eq!(body["status"], "failed", "{body}");
            let error = body["result"]["error"].as_str().unwrap();
            assert!(error.contains(&format!("{owner:?}")) && error.contains("lease"), "a clear reason: {error}");
        }
        // Resuming after the reaper's terminal: 204 on both.
        let (_, body) = cluster.a.get_json(Some(TOKEN_A), &format!("/v1/runs/{id}")).await;
        let last = body["lastSequence"].as_u64().unwrap().to_string();
        assert_eq!(cluster.b.sse(TOKEN_A, &id, Some(&last), "").await.status, 204);
        // The other worker takes the next runs.
        let (status, h) = cluster.a.get_json(Some(TOKEN_A), "/healthz").await;
        assert_eq!(status, 200, "{h}");
        let next = cluster.b.start_run(TOKEN_A, "quick").await;
        let done = cluster.a.wait_ended(TOKEN_A, &next).await;
        assert_eq!(done["status"], "completed");
        assert_ne!(done["worker"].as_str(), Some(owner.as_str()));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_flood_resumes_inside_batched_messages_and_what_retention_dropped_is_an_explicit_gap() {
        // 1 MiB of stream for all runs: an 80,000-line flood (2 MB of text, however merged) outgrows it.
        let Some(cluster) = Cluster::start("flood", Setup { retention_bytes: 1 << 20, ..Setup::default() }).await
        else {
            return;
        };
        let (a, b) = (&cluster.a, &cluster.b);
        let id = a.start_run(TOKEN_A, "deluge").await;
        b.wait_ended(TOKEN_A, &id).await;
        let sse = b.sse(TOKEN_A, &id, None, "").await;
        assert_eq!(sse.events[0].event, "gap", "the start was dropped by retention: said so, first");
        let gap = sse.events[0].json();
        let kept = sse.envelopes();
        let first_kept = kept[0]["sequence"].as_u64().unwrap();
        assert_eq!((gap["reason"].as_str(), gap.get("after")), (Some("evicted"), None), "{gap}");
        assert_eq!((gap["missing"].as_u64(), gap["resumeFrom"].as_u64()), (Some(first_kept), Some(first_kept)));
        let mut next = first_kept;
        for e in &kept {
            assert_eq!(e["sequence"].as_u64(), Some(next), "gapless from there");
            next += 1 + e["coalesced"].as_u64().unwrap_or(0);
        }
        assert_eq!(reason(kept.last().unwrap()), Some("run_complete"));
        // Resume points inside the kept range (most fall inside a message of many envelopes)
        // give exactly the tail, through either instance.
        for (n, env) in kept.iter().enumerate().step_by(331).skip(1) {
            let s = env["sequence"].as_u64().unwrap();
            let server = if n % 2 == 0 { a } else { b };
            let got = server.sse(TOKEN_A, &id, Some(&s.to_string()), "").await;
            assert!(got.events.iter().all(|e| e.event == "message"), "no gap after {s}");
            assert_eq!(got.envelopes(), kept[n + 1..], "resume after {s}");
        }
        // A point older than what is kept: the gap, then all that is kept.
        let old = b.sse(TOKEN_A, &id, Some("3"), "").await;
        let gap = old.events[0].json();
        assert_eq!((gap["after"].as_u64(), gap["missing"].as_u64()), (Some(3), Some(first_kept - 4)));
        assert_eq!(old.envelopes(), kept);
    }

    /// Whether retention left anything of run `id` (tenant A) in the events stream.
    async fn anything_left(cluster: &Cluster, id: &str) -> bool {
        let stream = cluster.events().await;
        stream.direct_get_last_for_subject(cluster.settings.events_subject("a", id)).await.is_ok()
    }

    /// The last sequence the record of run `id` (tenant A) holds, once it holds one.
    async fn recorded_last_sequence(cluster: &Cluster, id: &str) -> u64 {
        let runs = cluster.jetstream().await.get_key_value(cluster.settings.runs_bucket()).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let record = runs.get(cluster.settings.run_key("a", id)).await.unwrap().expect("the run's record");
            let record: Value = serde_json::from_slice(&record).unwrap();
            if let Some(last) = record["run"]["lastSequence"].as_u64() {
                return last;
            }
            assert!(Instant::now() < deadline, "no progress recorded: {record}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Run the 2 MB flood to its end: with 1 MiB of retention, it pushes every other run out.
    async fn flood_out_everything_else(cluster: &Cluster) {
        let flood = cluster.a.start_run(TOKEN_A, "deluge").await;
        assert_eq!(cluster.b.wait_ended(TOKEN_A, &flood).await["status"], "completed");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_run_that_retention_emptied_goes_on_ends_once_and_then_says_what_is_gone() {
        let Some(cluster) = Cluster::start("emptied", Setup { retention_bytes: 1 << 20, ..Setup::default() }).await
        else {
            return;
        };
        let (a, b) = (&cluster.a, &cluster.b);
        let id = a.start_run(TOKEN_A, "hang").await;
        wait_past(b, &id, 5).await;
        let early = spawn_sse(a, &id);
        tokio::time::sleep(Duration::from_millis(300)).await;
        flood_out_everything_else(&cluster).await;
        assert!(!anything_left(&cluster, &id).await, "retention removed the running run's envelopes");
        // Resumed while it runs, from a point its record vouches for (the live view reconnecting):
        // what was removed as a gap, then what comes — not a 400 for a point nothing shows.
        let recorded = recorded_last_sequence(&cluster, &id).await;
        wait_past(b, &id, recorded.saturating_sub(1)).await;
        let resume_point = recorded - 3;
        let resumed = spawn_sse_after(b, &id, resume_point);
        tokio::time::sleep(Duration::from_millis(300)).await;
        // The worker publishes on into the emptied subject: the cancel's terminal is stored.
        let info = b.broker.cancel(&"a".into(), &id, "done", Duration::from_secs(15)).await.unwrap();
        assert_eq!(info.status, agentstream_server::broker::RunStatus::Cancelled, "{info:?}");
        let events = tokio::time::timeout(Duration::from_secs(20), early).await.expect("the stream ends").unwrap();
        let envs: Vec<Value> = events.iter().filter(|e| e.event == "message").map(SseEvent::json).collect();
        assert_whole_stream(&envs);
        assert_eq!(reason(envs.last().unwrap()), Some("run_interrupted"));
        let last = envs.last().unwrap()["sequence"].as_u64().unwrap();
        let resumed = tokio::time::timeout(Duration::from_secs(20), resumed).await.expect("it ends").unwrap();
        assert_eq!(resumed[0].event, "gap", "{resumed:?}");
        let gap = resumed[0].json();
        assert_eq!((gap["reason"].as_str(), gap["after"].as_u64()), (Some("evicted"), Some(resume_point)), "{gap}");
        assert_eq!(gap["missing"].as_u64(), Some(last - resume_point - 1), "{gap}");
        let after_gap: Vec<Value> = resumed.iter().filter(|e| e.event == "message").map(SseEvent::json).collect();
        assert_eq!(after_gap.iter().map(|e| e["sequence"].as_u64()).collect::<Vec<_>>(), [Some(last)]);
        // From the start now: what retention removed as a gap, then the terminal.
        let late = b.sse(TOKEN_A, &id, None, "").await;
        assert_eq!(late.events[0].event, "gap", "{:?}", late.events);
        assert_eq!(late.events[0].json()["resumeFrom"].as_u64(), Some(last));
        assert_eq!(reason(late.envelopes().last().unwrap()), Some("run_interrupted"));
        // Once nothing at all is left: one gap for everything, and the end.
        flood_out_everything_else(&cluster).await;
        assert!(!anything_left(&cluster, &id).await);
        for (server, after) in [(a, None), (b, Some("4"))] {
            let gone = tokio::time::timeout(Duration::from_secs(20), server.sse(TOKEN_A, &id, after, ""))
                .await
                .expect("the stream of a run of which nothing is left ends");
            assert_eq!(gone.events.len(), 1, "{:?}", gone.events);
            let gap = gone.events[0].json();
            assert_eq!((gap["reason"].as_str(), gap.get("resumeFrom")), (Some("evicted"), None), "{gap}");
            let missing = last + 1 - after.map_or(0, |a| a.parse::<u64>().unwrap() + 1);
            assert_eq!(gap["missing"].as_u64(), Some(missing), "{gap}");
        }
        assert_eq!(b.sse(TOKEN_A, &id, Some(&last.to_string()), "").await.status, 204, "complete");
        let beyond = b.sse(TOKEN_A, &id, Some(&(last + 5).to_string()), "").await;
        assert_eq!(beyond.status, 400, "a number the run never produced: {}", beyond.raw);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_reaper_ends_a_run_that_retention_emptied_after_its_last_sequence() {
        let setup = Setup { retention_bytes: 1 << 20, lease_secs: 2, ..Setup::default() };
        let Some(mut cluster) = Cluster::start("emptied-reaped", setup).await else { return };
        let id = cluster.a.start_run(TOKEN_A, "hang").await;
        wait_past(&cluster.b, &id, 5).await;
        let early = spawn_sse(&cluster.a, &id);
        flood_out_everything_else(&cluster).await;
        assert!(!anything_left(&cluster, &id).await);
        // The worker records its progress each third of a lease: the reaper reads that record.
        let last = recorded_last_sequence(&cluster, &id).await;
        let (_, info) = cluster.b.get_json(Some(TOKEN_A), &format!("/v1/runs/{id}")).await;
        let owner = info["worker"].as_str().unwrap().to_string();
        cluster.worker(&owner).kill();
        let events = tokio::time::timeout(Duration::from_secs(20), early).await.expect("the stream ends").unwrap();
        let envs: Vec<Value> = events.iter().filter(|e| e.event == "message").map(SseEvent::json).collect();
        assert_whole_stream(&envs);
        let terminal = envs.last().unwrap();
        assert_eq!((reason(terminal), terminal["sequence"].as_u64()), (Some("run_failed"), Some(last + 1)));
        let done = cluster.a.wait_ended(TOKEN_A, &id).await;
        assert_eq!((done["status"].as_str(), done["lastSequence"].as_u64()), (Some("failed"), Some(last + 1)));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_quiet_run_outlives_the_age_limit_of_records() {
        let setup = Setup { retention: Duration::from_secs(4), lease_secs: 2, max_runs: 1, ..Setup::default() };
        let Some(cluster) = Cluster::start("quiet", setup).await else { return };
        let id = cluster.a.start_run(TOKEN_A, "hang").await;
        // Silent for three age limits: its record is written again before it ages out, so the
        // run stays visible, cancellable, and counted against its worker.
        tokio::time::sleep(Duration::from_secs(12)).await;
        for server in [&cluster.a, &cluster.b] {
            let (status, body) = server.get_json(Some(TOKEN_A), &format!("/v1/runs/{id}")).await;
            assert_eq!((status, body["status"].as_str()), (200, Some("running")), "{body}");
        }
        let info = cluster.b.broker.cancel(&"a".into(), &id, "done", Duration::from_secs(15)).await.unwrap();
        assert_eq!(info.status, agentstream_server::broker::RunStatus::Cancelled, "{info:?}");
        // A released lease leaves a delete marker: the leases bucket's age limit removes it (every
        // live key is renewed well within it), so markers do not pile up over the runs.
        let leases = cluster.jetstream().await.get_key_value(cluster.settings.leases_bucket()).await.unwrap();
        assert_eq!(leases.status().await.unwrap().max_age(), Duration::from_secs(60));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn envelopes_larger_than_a_nats_message_travel_in_parts() {
        // A 16 KiB max_payload: the run's 40 KB envelope is split into parts and joined again,
        // and resuming lands on whole envelopes.
        let Some(cluster) = Cluster::start("parts", Setup { max_payload: Some(16384), ..Setup::default() }).await
        else {
            return;
        };
        let (a, b) = (&cluster.a, &cluster.b);
        let id = a.start_run(TOKEN_A, "big").await;
        b.wait_ended(TOKEN_A, &id).await;
        let envs = b.sse(TOKEN_A, &id, None, "").await.envelopes();
        assert_whole_stream(&envs);
        assert_eq!(reason(envs.last().unwrap()), Some("run_complete"));
        let big = envs.iter().find(|e| e.to_string().len() > 40_000).expect("the large envelope arrived whole");
        assert!(big["event"].as_str().unwrap().contains(&"0123456789".repeat(4000)));
        for (n, env) in envs[..envs.len() - 1].iter().enumerate() {
            let s = env["sequence"].as_u64().unwrap();
            let server = if n % 2 == 0 { a } else { b };
            assert_eq!(
                server.sse(TOKEN_A, &id, Some(&s.to_string()), "").await.envelopes(),
                envs[n + 1..],
                "after {s}"
            );
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tenancy_holds_across_instances() {
        let Some(cluster) = Cluster::start("tenancy", Setup { runs_per_tenant: 2, ..Setup::default() }).await else {
            return;
        };
        let (a, b) = (&cluster.a, &cluster.b);
        let done = a.start_run(TOKEN_A, "quick").await;
        let hang = a.start_run(TOKEN_A, "hang").await;
        b.wait_ended(TOKEN_A, &done).await;
        for id in [&done, &hang] {
            for (method, path) in [
                ("GET", format!("/v1/runs/{id}")),
                ("GET", format!("/v1/runs/{id}/events")),
                ("GET", format!("/v1/runs/{id}/ws")),
                ("POST", format!("/v1/runs/{id}/cancel")),
            ] {
                let req = |token: Option<&str>| {
                    let mut r = b.http.request(method.parse().unwrap(), b.url(&path));
                    if let Some(t) = token {
                        r = r.bearer_auth(t);
                    }
                    r
                };
                let resp = req(Some(TOKEN_B)).send().await.unwrap();
                assert_eq!(resp.status(), 404, "{method} {path} as another tenant on B");
                let body: Value = resp.json().await.unwrap();
                assert_eq!(body["error"], "not_found");
                assert_eq!(req(None).send().await.unwrap().status(), 401, "{method} {path} without a token");
                assert_eq!(req(Some("nope")).send().await.unwrap().status(), 401);
            }
        }
        let ids = |v: Value| -> Vec<String> {
            v["runs"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_string()).collect()
        };
        assert!(ids(b.get_json(Some(TOKEN_B), "/v1/runs").await.1).is_empty());
        let mine = ids(b.get_json(Some(TOKEN_A), "/v1/runs").await.1);
        assert!(mine.contains(&done) && mine.contains(&hang), "{mine:?}");
        let (_, info) = b.get_json(Some(TOKEN_A), &format!("/v1/runs/{hang}")).await;
        assert_eq!(info["status"], "running", "the other tenant's cancel was not applied");
        // runs_per_tenant counts the tenant's runs on every instance: a second through A, and
        // the third is refused by B.
        let second = a.start_run(TOKEN_A, "hang").await;
        let deadline = Instant::now() + Duration::from_secs(5);
        let (status, body) = loop {
            let (status, body) = b.create(Some(TOKEN_A), json!({"agent": "hang", "prompt": "x"})).await;
            if status != 201 || Instant::now() > deadline {
                break (status, body);
            }
            // B had not seen A's run yet: that one counts too now.
            let id = body["id"].as_str().unwrap().to_string();
            b.http.post(b.url(&format!("/v1/runs/{id}/cancel"))).bearer_auth(TOKEN_A).send().await.unwrap();
        };
        assert_eq!((status, body["error"].as_str()), (429, Some("limit_reached")), "{body}");
        let (status, _) = b.create(Some(TOKEN_B), json!({"agent": "quick", "prompt": "x"})).await;
        assert_eq!(status, 201, "another tenant's limit is its own");
        for id in [&hang, &second] {
            let resp = b.http.post(b.url(&format!("/v1/runs/{id}/cancel"))).bearer_auth(TOKEN_A).send().await.unwrap();
            assert_eq!(resp.json::<Value>().await.unwrap()["status"], "cancelled");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_serve_instance_that_stops_ends_its_streams_and_clients_resume_on_another() {
        let Some(cluster) = Cluster::start("serve-stops", Setup::default()).await else { return };
        let Cluster { a, b, workers: _workers, nats: _nats, .. } = cluster;
        let id = a.start_run(TOKEN_A, "hang").await;
        wait_past(&b, &id, 5).await;
        let on_b = spawn_sse(&b, &id);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let report = b.shutdown().await;
        assert!(report.all_runs_ended && report.connections_closed, "{report:?}");
        let seen: Vec<Value> = tokio::time::timeout(Duration::from_secs(10), on_b)
            .await
            .expect("B's stream ended")
            .unwrap()
            .iter()
            .filter(|e| e.event == "message")
            .map(SseEvent::json)
            .collect();
        assert!(!seen.iter().any(|e| matches!(reason(e), Some("run_complete" | "run_failed" | "run_interrupted"))));
        // The run goes on on its worker; the client resumes on A where B left it.
        let (_, info) = a.get_json(Some(TOKEN_A), &format!("/v1/runs/{id}")).await;
        assert_eq!(info["status"], "running");
        let last = seen.last().unwrap()["sequence"].as_u64().unwrap();
        let rest = spawn_sse_after(&a, &id, last);
        tokio::time::sleep(Duration::from_millis(200)).await;
        a.http.post(a.url(&format!("/v1/runs/{id}/cancel"))).bearer_auth(TOKEN_A).send().await.unwrap();
        let mut all = seen.clone();
        all.extend(rest.await.unwrap().iter().filter(|e| e.event == "message").map(SseEvent::json));
        assert_whole_stream(&all);
        assert_eq!(reason(all.last().unwrap()), Some("run_interrupted"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_thousand_short_runs_spread_over_both_workers_and_none_is_lost() {
        const RUNS: usize = 1000;
        const AT_ONCE: usize = 48;
        let Some(cluster) =
            Cluster::start("thousand", Setup { max_runs: 24, runs_per_tenant: RUNS, ..Setup::default() }).await
        else {
            return;
        };
        let cluster = Arc::new(cluster);
        let started = Instant::now();
        let gate = Arc::new(tokio::sync::Semaphore::new(AT_ONCE));
        let mut tasks = Vec::new();
        for n in 0..RUNS {
            let cluster = cluster.clone();
            let gate = gate.clone();
            tasks.push(tokio::spawn(async move {
                let _slot = gate.acquire().await.unwrap();
                let (via, other) = if n % 2 == 0 { (&cluster.a, &cluster.b) } else { (&cluster.b, &cluster.a) };
                let id = via.start_run(TOKEN_A, "quick").await;
                let done = other.wait_ended(TOKEN_A, &id).await;
                (id, done)
            }));
        }
        let mut per_worker: HashMap<String, usize> = HashMap::new();
        let mut ids = Vec::new();
        for t in tasks {
            let (id, done) = t.await.unwrap();
            assert_eq!(done["status"], "completed", "{done}");
            *per_worker.entry(done["worker"].as_str().unwrap().to_string()).or_default() += 1;
            ids.push(id);
        }
        eprintln!("{RUNS} runs in {:?}: {per_worker:?}", started.elapsed());
        assert_eq!(per_worker.values().sum::<usize>(), RUNS);
        assert!(per_worker.len() == 2 && per_worker.values().all(|n| *n > 0), "spread over both: {per_worker:?}");
        let listed = cluster.b.get_json(Some(TOKEN_A), "/v1/runs?limit=1000").await.1;
        let listed: Vec<&str> = listed["runs"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
        assert!(ids.iter().all(|id| listed.contains(&id.as_str())), "every run is listed");
        // Their streams are whole (a sample, through the instance that did not start them).
        for (n, id) in ids.iter().enumerate().step_by(25) {
            let server = if n % 2 == 0 { &cluster.b } else { &cluster.a };
            let envs = server.sse(TOKEN_A, id, None, "").await.envelopes();
            assert_whole_stream(&envs);
            assert_eq!(reason(envs.last().unwrap()), Some("run_complete"));
        }
        for w in &cluster.workers {
            eventually("no harness left", Duration::from_secs(10), || processes_with_mark(&w.mark).is_empty()).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_nats_outage_is_reported_and_the_stream_resumes() {
        let Some(mut cluster) = Cluster::start("outage", Setup { lease_secs: 8, ..Setup::default() }).await else {
            return;
        };
        let id = cluster.a.start_run(TOKEN_A, "paced").await;
        wait_past(&cluster.b, &id, 2).await;
        let reader = spawn_sse(&cluster.b, &id);
        tokio::time::sleep(Duration::from_millis(300)).await;
        cluster.nats.stop();
        // /healthz and new requests say so.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (status, h) = cluster.b.get_json(Some(TOKEN_A), "/healthz").await;
            if status == 503 {
                assert_eq!(
                    (h["status"].as_str(), h["backend"]["connected"].as_bool()),
                    (Some("degraded"), Some(false))
                );
                break;
            }
            assert!(Instant::now() < deadline, "the outage is not reported: {h}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let (status, body) = cluster.b.create(Some(TOKEN_A), json!({"agent": "quick", "prompt": "x"})).await;
        assert_eq!((status, body["error"].as_str()), (503, Some("backend_unavailable")), "{body}");
        // A cancel now says at once that it was not sent, and is not carried out when NATS is
        // back (the run completes below).
        let asked = Instant::now();
        let (status, body) = cancel(&cluster.b, &id).await;
        assert_eq!((status, body["error"].as_str()), (503, Some("cancel_not_delivered")), "{body}");
        assert!(body["message"].as_str().unwrap().contains("not sent"), "{body}");
        assert!(asked.elapsed() < Duration::from_secs(2), "answered after {:?}", asked.elapsed());
        tokio::time::sleep(Duration::from_millis(1500)).await;
        cluster.nats.resume();
        let events = tokio::time::timeout(Duration::from_secs(60), reader).await.expect("the stream ends").unwrap();
        let notices: Vec<String> = events
            .iter()
            .filter(|e| e.event == "notice")
            .map(|e| e.json()["reason"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(notices[..2], ["backend_unavailable", "backend_restored"], "{notices:?}");
        let envs: Vec<Value> = events.iter().filter(|e| e.event == "message").map(SseEvent::json).collect();
        assert_whole_stream(&envs);
        assert_eq!(reason(envs.last().unwrap()), Some("run_complete"), "the run went on through the outage");
        let (status, h) = cluster.b.get_json(Some(TOKEN_A), "/healthz").await;
        assert_eq!(status, 200, "{h}");
        let done = cluster.a.wait_ended(TOKEN_A, &id).await;
        assert_eq!(done["status"], "completed");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn credentials_in_the_url_sign_in() {
        let conf = "authorization { user: serve, password: \"s3r@ve\" }\n";
        let Some(server) = NatsServer::start_with_conf("credentials", None, conf) else { return };
        let url = |userinfo: &str| format!("nats://{userinfo}@127.0.0.1:{}", server.port);
        let connect = |url: String| agentstream_server::nats::Cluster::connect(NatsSettings::new(url), "test");
        let cluster = connect(url("serve:s3r%40ve")).await.expect("the URL's user and password sign in");
        assert!(cluster.is_connected());
        let refused = connect(url("serve:wrong")).await.unwrap_err();
        assert!(refused.contains("authorization"), "{refused}");
        assert!(!refused.contains("wrong"), "the password is not shown: {refused}");
        let anonymous = connect(server.url()).await.unwrap_err();
        assert!(anonymous.contains("authorization"), "{anonymous}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_worker_that_cannot_hear_cancel_requests_refuses_the_run_and_starts_nothing() {
        // A permissions mistake: NATS refuses every subscription to the runs' cancel subjects.
        let conf = "no_auth_user: agentstream\nauthorization { users = [ { user: agentstream, password: x, \
                    permissions: { subscribe: { allow: \">\", deny: \"agentstream.*.*.cancel\" } } } ] }\n";
        let Some(mut cluster) = Cluster::start("deaf", Setup { nats_conf: conf, ..Setup::default() }).await else {
            return;
        };
        let (status, body) = cluster.a.create(Some(TOKEN_A), json!({"agent": "hang", "prompt": "hi"})).await;
        assert_eq!(status, 503, "a run nobody could stop is not started: {body}");
        assert!(body["message"].as_str().unwrap().contains("cancel requests"), "{body}");
        for id in ["w1", "w2"] {
            let mark = cluster.worker(id).mark.clone();
            eventually("no harness of the refused run", Duration::from_secs(15), || {
                processes_with_mark(&mark).is_empty()
            })
            .await;
        }
        let (_, runs) = cluster.a.get_json(Some(TOKEN_A), "/v1/runs").await;
        assert!(runs.to_string().matches("\"running\"").count() == 0, "nothing left running: {runs}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_run_started_after_serve_gave_up_on_its_worker_is_cancelled() {
        // 3 s: the test itself must take the request before serve would take it back.
        let Some(mut cluster) = Cluster::start("late", Setup { start_timeout_secs: 3, ..Setup::default() }).await
        else {
            return;
        };
        // The workers are gone: the test takes the request off the queue as a slow worker would.
        for id in ["w1", "w2"] {
            cluster.worker(id).kill();
        }
        let js = cluster.jetstream().await;
        let work = js.get_stream(cluster.settings.work_stream()).await.unwrap();
        let consumer: async_nats::jetstream::consumer::PullConsumer = work.get_consumer("work-hang").await.unwrap();
        let take = async {
            let mut batch = consumer.fetch().max_messages(1).expires(Duration::from_secs(10)).messages().await.unwrap();
            let message = batch.next().await.expect("the request").unwrap();
            message.double_ack().await.unwrap();
            message
        };
        let ((status, body), message) =
            tokio::join!(cluster.a.create(Some(TOKEN_A), json!({"agent": "hang", "prompt": "late"})), take);
        assert_eq!(status, 503, "{body}");
        assert!(body["message"].as_str().unwrap().contains("did not answer in time"), "{body}");
        // The slow worker starts it after all and answers: serve cancels it.
        let client = async_nats::connect(cluster.nats.url()).await.unwrap();
        let mut cancels = client.subscribe(cluster.settings.cancel_subject("a", "run_late")).await.unwrap();
        let reply_to = message.headers.as_ref().unwrap().get("Agentstream-Reply").unwrap().to_string();
        let started = json!({"started": {"id": "run_late", "agent": "hang", "prompt": "late", "status": "running",
            "createdAt": "2026-12-07T00:00:00.000Z"}});
        client.publish(reply_to, serde_json::to_vec(&started).unwrap().into()).await.unwrap();
        client.flush().await.unwrap();
        let cancel = tokio::time::timeout(Duration::from_secs(10), cancels.next())
            .await
            .expect("serve cancels the run it told its client had not started")
            .unwrap();
        let reason: Value = serde_json::from_slice(&cancel.payload).unwrap();
        assert!(reason["reason"].as_str().unwrap().contains("stopped waiting"), "{reason}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn workers_are_seen_as_soon_as_they_start_whatever_the_lease() {
        // Presence used to be first published a third of a lease after the start (20 s here):
        // Cluster::start waits at most 10 s for both workers.
        let started = Instant::now();
        let Some(cluster) = Cluster::start("visible", Setup { lease_secs: 60, ..Setup::default() }).await else {
            return;
        };
        assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
        let (status, _) = cluster.a.create(Some(TOKEN_A), json!({"agent": "claude", "prompt": "hi"})).await;
        assert_eq!(status, 201);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_worker_frozen_past_its_lease_loses_the_run_and_stops_its_harness_when_it_thaws() {
        let Some(mut cluster) = Cluster::start("frozen", Setup { lease_secs: 2, ..Setup::default() }).await else {
            return;
        };
        let id = cluster.a.start_run(TOKEN_A, "hang").await;
        wait_past(&cluster.b, &id, 5).await;
        let on_b = spawn_sse(&cluster.b, &id);
        let (_, info) = cluster.b.get_json(Some(TOKEN_A), &format!("/v1/runs/{id}")).await;
        let owner = info["worker"].as_str().unwrap().to_string();
        let pid = cluster.worker(&owner).child.id() as i32;
        let mark = cluster.worker(&owner).mark.clone();
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        // Frozen past its lease: another process ends the run.
        let envs: Vec<Value> = tokio::time::timeout(Duration::from_secs(20), on_b)
            .await
            .expect("the stream ends")
            .unwrap()
            .iter()
            .filter(|e| e.event == "message")
            .map(SseEvent::json)
            .collect();
        assert_eq!(reason(envs.last().unwrap()), Some("run_failed"));
        assert!(!processes_with_mark(&mark).is_empty(), "the harness lives on while its worker is frozen");
        unsafe { libc::kill(pid, libc::SIGCONT) };
        // Thawed, the worker finds its run ended elsewhere and stops the harness; the run keeps
        // exactly one terminal (the worker's own is refused) and its failed record.
        eventually("the thawed worker stops its harness", Duration::from_secs(15), || {
            processes_with_mark(&mark).is_empty()
        })
        .await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        for server in [&cluster.a, &cluster.b] {
            let envs = server.sse(TOKEN_A, &id, None, "").await.envelopes();
            assert_whole_stream(&envs);
            assert_eq!(reason(envs.last().unwrap()), Some("run_failed"));
            let (_, body) = server.get_json(Some(TOKEN_A), &format!("/v1/runs/{id}")).await;
            assert_eq!(body["status"], "failed", "{body}");
            assert!(body["result"]["error"].as_str().unwrap().contains("lease"), "{body}");
        }
        // And it goes on taking runs.
        let next = cluster.a.start_run(TOKEN_A, "quick").await;
        assert_eq!(cluster.b.wait_ended(TOKEN_A, &next).await["status"], "completed");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_worker_stopped_by_sigterm_ends_its_runs_and_others_stream_them_to_the_end() {
        let Some(mut cluster) = Cluster::start("sigterm", Setup::default()).await else { return };
        let id = cluster.a.start_run(TOKEN_A, "hang").await;
        wait_past(&cluster.b, &id, 5).await;
        let on_b = spawn_sse(&cluster.b, &id);
        let (_, info) = cluster.b.get_json(Some(TOKEN_A), &format!("/v1/runs/{id}")).await;
        let owner = info["worker"].as_str().unwrap().to_string();
        let status = cluster.worker(&owner).terminate();
        assert!(status.success(), "the worker ended every run: {status}");
        let envs: Vec<Value> =
            on_b.await.unwrap().iter().filter(|e| e.event == "message").map(SseEvent::json).collect();
        assert_whole_stream(&envs);
        assert_eq!(reason(envs.last().unwrap()), Some("run_interrupted"));
        let (_, body) = cluster.b.get_json(Some(TOKEN_A), &format!("/v1/runs/{id}")).await;
        assert_eq!(body["status"], "cancelled");
        assert!(body["result"]["cancel_reason"].as_str().unwrap().contains("the worker is shutting down"), "{body}");
        let w = cluster.worker(&owner);
        assert!(processes_with_mark(&w.mark).is_empty(), "no harness left behind");
        // Its presence was withdrawn: the instances count one worker.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let (_, h) = cluster.a.get_json(Some(TOKEN_A), "/healthz").await;
            if h["backend"]["workers"] == 1 {
                break;
            }
            assert!(Instant::now() < deadline, "{h}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
