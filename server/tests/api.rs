//! The HTTP API of a real server: the tenant table on every route, every bad input, limits,
//! and shutdown (no harness process left behind).

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

/// What a request to `route` answered: status and JSON body (Null when none).
async fn call(server: &TestServer, method: &str, path: &str, token: Option<&str>) -> (u16, Value) {
    let url = server.url(path);
    let mut req = match method {
        "GET" => server.http.get(url),
        "POST" => server.http.post(url),
        other => panic!("{other}"),
    };
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    if path == "/v1/runs" && method == "POST" {
        req = req.json(&json!({"agent": "claude", "prompt": "hi"}));
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn ws_status(server: &TestServer, token: Option<&str>, id: &str) -> u16 {
    match ws_connect(server, token, id, "").await {
        Ok(_) => 101,
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
            let body: Value = serde_json::from_slice(resp.body().as_deref().unwrap_or(b"null")).unwrap();
            assert!(body["error"].is_string(), "a JSON error: {body}");
            resp.status().as_u16()
        }
        Err(e) => panic!("{e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tenant_table_on_every_route() {
    let server = TestServer::default("tenants").await;
    let id = server.start_run(TOKEN_A, "hang").await;
    let run_routes: [(&str, String); 3] = [
        ("GET", format!("/v1/runs/{id}")),
        ("GET", format!("/v1/runs/{id}/events")),
        ("POST", format!("/v1/runs/{id}/cancel")),
    ];
    let unknown = "run_00000000000000000000000000000000";
    for (method, path) in &run_routes {
        // No token, a wrong scheme, an unknown token: 401 with a JSON error and a challenge.
        for token in [None, Some("not-a-tenant")] {
            let (status, body) = call(&server, method, path, token).await;
            assert_eq!(status, 401, "{method} {path} with {token:?}");
            assert_eq!(body["error"], "unauthorized");
            assert_eq!(body["field"], "Authorization");
        }
        // Another tenant: 404, exactly like a run that does not exist.
        let (status, other) = call(&server, method, path, Some(TOKEN_B)).await;
        assert_eq!(status, 404, "{method} {path} as tenant b");
        let (status, missing) = call(&server, method, &path.replace(&id, unknown), Some(TOKEN_A)).await;
        assert_eq!(status, 404);
        assert_eq!(other, missing, "indistinguishable from an unknown id");
        // An id no run can have (NATS refuses it as a key; not UTF-8; too long): the same JSON
        // 404, not a plain-text 400 or a 503 from the backend.
        let too_long = format!("run_{}", "0".repeat(200));
        for impossible in ["foo*", "a%20b", "%3E", "%FF", "a.b", too_long.as_str()] {
            let (status, body) = call(&server, method, &path.replace(&id, impossible), Some(TOKEN_A)).await;
            assert_eq!((status, &body), (404, &missing), "{method} {path} with id {impossible}");
        }
    }
    assert_eq!(ws_status(&server, None, &id).await, 401);
    assert_eq!(ws_status(&server, Some("not-a-tenant"), &id).await, 401);
    assert_eq!(ws_status(&server, Some(TOKEN_B), &id).await, 404);
    assert_eq!(ws_status(&server, Some(TOKEN_A), unknown).await, 404);
    assert_eq!(ws_status(&server, Some(TOKEN_A), "a%20b").await, 404);
    assert_eq!(ws_status(&server, Some(TOKEN_A), &id).await, 101);
    // Lists and agents: no token → 401; each tenant sees only its own runs.
    for path in ["/v1/runs", "/v1/agents"] {
        assert_eq!(call(&server, "GET", path, None).await.0, 401);
    }
    assert_eq!(call(&server, "POST", "/v1/runs", None).await.0, 401);
    let (_, mine) = call(&server, "GET", "/v1/runs", Some(TOKEN_A)).await;
    let (_, theirs) = call(&server, "GET", "/v1/runs", Some(TOKEN_B)).await;
    assert_eq!(mine["runs"].as_array().unwrap().len(), 1);
    assert_eq!(mine["runs"][0]["id"], id.as_str());
    assert_eq!(theirs["runs"], json!([]));
    let (status, agents) = call(&server, "GET", "/v1/agents", Some(TOKEN_B)).await;
    assert_eq!(status, 200);
    assert!(agents["agents"].as_array().unwrap().contains(&json!("claude")));
    // The other tenant's cancel was not applied: the owner's run is still running.
    assert_eq!(server.get_json(Some(TOKEN_A), &format!("/v1/runs/{id}")).await.1["status"], "running");
    // The owner's routes work.
    let (status, _) = call(&server, "GET", &format!("/v1/runs/{id}"), Some(TOKEN_A)).await;
    assert_eq!(status, 200);
    let (status, info) = call(&server, "POST", &format!("/v1/runs/{id}/cancel"), Some(TOKEN_A)).await;
    assert_eq!((status, info["status"].as_str()), (200, Some("cancelled")));
    let sse = server.sse(TOKEN_A, &id, None, "").await;
    assert_eq!(sse.status, 200);
    assert_eq!(reason(sse.envelopes().last().unwrap()), Some("run_interrupted"));
    // Tenant b's own run is its own.
    let b_run = server.start_run(TOKEN_B, "claude").await;
    assert_eq!(call(&server, "GET", &format!("/v1/runs/{b_run}"), Some(TOKEN_A)).await.0, 404);
    assert_eq!(call(&server, "GET", &format!("/v1/runs/{b_run}"), Some(TOKEN_B)).await.0, 200);
}

/// Send `body` (raw) to POST /v1/runs; return (status, JSON).
async fn post_raw(server: &TestServer, body: impl Into<reqwest::Body>) -> (u16, Value) {
    let resp = server
        .http
        .post(server.url("/v1/runs"))
        .bearer_auth(TOKEN_A)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap_or(Value::Null))
}

fn assert_error(status: u16, body: &Value, want_status: u16, field: &str, what: &str) {
    assert_eq!(status, want_status, "{what}: {body}");
    assert_eq!(body["field"], field, "{what}: {body}");
    assert!(body["error"].is_string() && body["message"].as_str().is_some_and(|m| !m.is_empty()), "{what}: {body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_bad_input_is_a_4xx_naming_the_field() {
    let mark = new_mark("bad-input");
    let mut config = config(&mark);
    config.limits.max_body_bytes = 1024;
    let server = TestServer::start(config, mark).await;
    let cases: Vec<(&str, String, u16, &str)> = vec![
        ("malformed JSON", "{\"agent\": \"claude\",".into(), 400, "body"),
        ("not an object", "[\"claude\", \"hi\"]".into(), 400, "body"),
        ("unknown agent", json!({"agent": "gpt", "prompt": "hi"}).to_string(), 400, "agent"),
        ("missing agent", json!({"prompt": "hi"}).to_string(), 400, "agent"),
        ("agent not a string", json!({"agent": 7, "prompt": "hi"}).to_string(), 400, "agent"),
        ("missing prompt", json!({"agent": "claude"}).to_string(), 400, "prompt"),
        ("empty prompt", json!({"agent": "claude", "prompt": "  "}).to_string(), 400, "prompt"),
        ("prompt not a string", json!({"agent": "claude", "prompt": ["hi"]}).to_string(), 400, "prompt"),
        ("a NUL in the prompt", json!({"agent": "claude", "prompt": "a\u{0}b"}).to_string(), 400, "prompt"),
        ("a binary", json!({"agent": "claude", "prompt": "hi", "bin": "/bin/sh"}).to_string(), 400, "bin"),
        ("an environment", json!({"agent": "claude", "prompt": "hi", "env": {}}).to_string(), 400, "env"),
        ("a flag as model", json!({"agent": "claude", "prompt": "hi", "model": "--yolo"}).to_string(), 400, "model"),
        ("a bad session", json!({"agent": "claude", "prompt": "hi", "resume": "-x y"}).to_string(), 400, "resume"),
        ("oversized", json!({"agent": "claude", "prompt": "x".repeat(2000)}).to_string(), 413, "body"),
    ];
    for (what, body, status, field) in cases {
        let (got, json) = post_raw(&server, body).await;
        assert_error(got, &json, status, field, what);
    }
    // Oversized without a Content-Length (chunked): refused while reading.
    let chunks: Vec<Result<String, std::io::Error>> = (0..20).map(|_| Ok("x".repeat(100))).collect();
    let (got, json) = post_raw(&server, reqwest::Body::wrap_stream(futures_util::stream::iter(chunks))).await;
    assert_error(got, &json, 413, "body", "oversized, chunked");
    // The harness cannot be started: 503 naming the agent.
    let (got, json) = server.create(Some(TOKEN_A), json!({"agent": "missing", "prompt": "hi"})).await;
    assert_error(got, &json, 503, "agent", "missing binary");
    assert!(json["message"].as_str().unwrap().contains("nonexistent"), "{json}");

    let id = server.start_run(TOKEN_A, "claude").await;
    server.wait_ended(TOKEN_A, &id).await;
    let events = format!("/v1/runs/{id}/events");
    for (what, last_event_id, query, field) in [
        ("Last-Event-ID not a number", Some("seven"), "", "Last-Event-ID"),
        ("Last-Event-ID negative", Some("-1"), "", "Last-Event-ID"),
        ("after not a number", None, "?after=x", "after"),
        ("an unknown parameter", None, "?from=3", "from"),
    ] {
        let mut req = server.http.get(server.url(&format!("{events}{query}"))).bearer_auth(TOKEN_A);
        if let Some(l) = last_event_id {
            req = req.header("Last-Event-ID", l);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        assert_error(status, &resp.json().await.unwrap(), 400, field, what);
    }
    // A cancel body that is not what it should be.
    let resp = server
        .http
        .post(server.url(&format!("/v1/runs/{id}/cancel")))
        .bearer_auth(TOKEN_A)
        .body("{\"reason\": 5}")
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    assert_error(status, &resp.json().await.unwrap(), 400, "reason", "cancel reason not a string");
    // Routes and methods that do not exist: JSON too.
    let (status, body) = call(&server, "GET", "/v1/nothing", Some(TOKEN_A)).await;
    assert_eq!((status, body["error"].as_str()), (404, Some("not_found")));
    let (status, body) = call(&server, "POST", &format!("/v1/runs/{id}"), Some(TOKEN_A)).await;
    assert_eq!((status, body["error"].as_str()), (405, Some("method_not_allowed")));
    // The WebSocket route asked without an upgrade.
    let (status, body) = call(&server, "GET", &format!("/v1/runs/{id}/ws"), Some(TOKEN_A)).await;
    assert_eq!((status, body["error"].as_str()), (426, Some("websocket_required")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_are_enforced_with_429() {
    let mark = new_mark("limits");
    let mut config = config(&mark);
    config.limits.runs_per_tenant = 1;
    config.limits.subscribers_per_run = 2;
    config.limits.finished_runs_kept = 1;
    let server = TestServer::start(config, mark).await;
    let id = server.start_run(TOKEN_A, "hang").await;
    let (status, body) = server.create(Some(TOKEN_A), json!({"agent": "claude", "prompt": "hi"})).await;
    assert_eq!((status, body["error"].as_str()), (429, Some("limit_reached")), "{body}");
    // Another tenant has its own allowance.
    let b_run = server.start_run(TOKEN_B, "claude").await;
    // Two subscribers fit, the third does not.
    let open = |n: usize| {
        let (http, url) = (server.http.clone(), server.url(&format!("/v1/runs/{id}/events")));
        async move {
            let resp = http.get(url).bearer_auth(TOKEN_A).send().await.unwrap();
            (n, resp)
        }
    };
    let (_, s1) = open(1).await;
    let (_, s2) = open(2).await;
    assert_eq!((s1.status().as_u16(), s2.status().as_u16()), (200, 200));
    let (_, s3) = open(3).await;
    assert_eq!(s3.status().as_u16(), 429);
    // When to try again: a stream's old connection is usually noticed gone within a second.
    assert_eq!(s3.headers().get("retry-after").and_then(|v| v.to_str().ok()), Some("1"));
    drop((s1, s2));
    // A closed stream frees its slot.
    let mut freed = false;
    for _ in 0..50 {
        let (_, s) = open(4).await;
        if s.status() == 200 {
            freed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(freed, "a dropped subscriber frees its slot");
    server.broker.cancel(&"a".into(), &id, "done", Duration::from_secs(10)).await.unwrap();
    // Only the newest finished run is kept per tenant.
    let second = server.start_run(TOKEN_A, "claude").await;
    server.wait_ended(TOKEN_A, &second).await;
    assert_eq!(server.get_json(Some(TOKEN_A), &format!("/v1/runs/{id}")).await.0, 404, "forgotten");
    assert_eq!(server.get_json(Some(TOKEN_B), &format!("/v1/runs/{b_run}")).await.0, 200, "b's run is b's");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_the_page() {
    let server = TestServer::default("health").await;
    // Without a token, the status alone: the counts describe every tenant's load.
    let (status, body) = call(&server, "GET", "/healthz", None).await;
    assert_eq!((status, &body), (200, &json!({"status": "ok"})));
    let (status, body) = call(&server, "GET", "/healthz", Some("not-a-token")).await;
    assert_eq!((status, body["error"].as_str()), (401, Some("unauthorized")), "{body}");
    let (status, body) = call(&server, "GET", "/healthz", Some(TOKEN_B)).await;
    assert_eq!((status, body["status"].as_str(), body["running"].as_u64()), (200, Some("ok"), Some(0)));
    let max = body["replay"]["max"].as_u64().unwrap();
    assert_eq!(body["replay"], json!({"runs": 0, "bytes": 0, "max": max}), "{body}");
    // A finished run's envelopes are kept for resuming, and counted.
    let id = server.start_run(TOKEN_A, "claude").await;
    server.wait_ended(TOKEN_A, &id).await;
    let replay = call(&server, "GET", "/healthz", Some(TOKEN_A)).await.1["replay"].clone();
    let bytes = replay["bytes"].as_u64().unwrap();
    assert_eq!(replay["runs"], 1, "{replay}");
    assert!(bytes > 0 && bytes < max, "{replay}");
    for (path, kind) in [
        ("/", "text/html"),
        ("/assets/style.css", "text/css"),
        ("/assets/timeline.js", "text/javascript"),
        ("/assets/live.js", "text/javascript"),
    ] {
        let resp = server.http.get(server.url(path)).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{path}");
        assert!(resp.headers()["content-type"].to_str().unwrap().starts_with(kind));
        assert!(resp.headers()["content-security-policy"].to_str().unwrap().contains("default-src 'self'"));
    }
    assert_eq!(server.http.get(server.url("/assets/nope.js")).send().await.unwrap().status(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_every_run_with_its_terminal_delivered_and_leaves_no_harness() {
    let server = TestServer::default("shutdown").await;
    let ids = [server.start_run(TOKEN_A, "hang").await, server.start_run(TOKEN_B, "hang").await];
    let mut watchers = Vec::new();
    for (id, token) in ids.iter().zip([TOKEN_A, TOKEN_B]) {
        // Connected (headers received) before the signal.
        let resp =
            server.http.get(server.url(&format!("/v1/runs/{id}/events"))).bearer_auth(token).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        watchers.push(tokio::spawn(async move {
            let text = resp.text().await.unwrap();
            parse_sse(&text).iter().map(SseEvent::json).collect::<Vec<Value>>()
        }));
    }
    eventually("both harnesses run", Duration::from_secs(10), || processes_with_mark(&server.mark).len() == 2).await;
    let mark = server.mark.clone();
    let addr = server.addr;
    let report = server.shutdown().await;
    assert_eq!(report.running_at_signal, 2);
    assert!(report.all_runs_ended && report.connections_closed, "{report:?}");
    for w in watchers {
        let envs = w.await.unwrap();
        assert_whole_stream(&envs);
        assert_eq!(reason(envs.last().unwrap()), Some("run_interrupted"), "each subscriber got the terminal");
    }
    assert_eq!(processes_with_mark(&mark), Vec::<i32>::new(), "no harness process left behind");
    assert!(tokio::net::TcpStream::connect(addr).await.is_err(), "no longer accepting");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drain_mode_lets_runs_finish_refuses_new_ones_and_cancels_what_outlasts_it() {
    use agentstream_server::config::ShutdownMode;
    let mark = new_mark("drain");
    let mut config = config(&mark);
    config.shutdown.mode = ShutdownMode::Drain;
    // "slow" takes about 2.4 s; "hang" never ends by itself.
    config.shutdown.drain_timeout = Duration::from_secs(6);
    let server = TestServer::start(config, mark).await;
    let mut watchers = Vec::new();
    for agent in ["slow", "hang"] {
        let id = server.start_run(TOKEN_A, agent).await;
        let resp =
            server.http.get(server.url(&format!("/v1/runs/{id}/events"))).bearer_auth(TOKEN_A).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        watchers.push(tokio::spawn(async move {
            let text = resp.text().await.unwrap();
            parse_sse(&text).iter().map(SseEvent::json).collect::<Vec<Value>>()
        }));
    }
    let broker = server.broker.clone();
    let mark = server.mark.clone();
    let shutdown = tokio::spawn(server.shutdown());
    eventually("shutdown began", Duration::from_secs(5), || !broker.is_accepting()).await;
    let refused = broker
        .start(
            &"a".into(),
            agentstream_server::RunRequest { agent: "claude".into(), prompt: "hi".into(), model: None, resume: None },
        )
        .await;
    assert_eq!(refused.unwrap_err(), agentstream_server::BrokerError::ShuttingDown);
    let report = shutdown.await.unwrap();
    assert!(report.all_runs_ended, "{report:?}");
    let ends: Vec<Option<String>> = futures_util::future::join_all(watchers)
        .await
        .into_iter()
        .map(|w| {
            let envs = w.unwrap();
            assert_whole_stream(&envs);
            reason(envs.last().unwrap()).map(str::to_string)
        })
        .collect();
    assert_eq!(ends, [Some("run_complete".into()), Some("run_interrupted".into())], "drained, then cancelled");
    assert!(processes_with_mark(&mark).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_response_is_left_to_content_sniffing_or_to_caches() {
    let server = TestServer::default("nosniff").await;
    let id = server.start_run(TOKEN_A, "claude").await;
    server.wait_ended(TOKEN_A, &id).await;
    for (path, token) in [
        ("/healthz", None),
        ("/v1/runs", None),
        ("/v1/runs", Some(TOKEN_A)),
        ("/", None),
        ("/no-such-route", None),
        (&*format!("/v1/runs/{id}/events"), Some(TOKEN_A)),
    ] {
        let mut req = server.http.get(server.url(path));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let resp = req.send().await.unwrap();
        let header = |name: &str| resp.headers().get(name).map(|v| v.to_str().unwrap().to_string());
        assert_eq!(header("x-content-type-options").as_deref(), Some("nosniff"), "{path} ({})", resp.status());
        // Nothing is stored by a cache: the API's answers hold prompts, answers and tokens; the
        // page and the stream say no-cache themselves.
        let cache = header("cache-control").unwrap_or_default();
        assert!(cache == "no-store" || cache.starts_with("no-cache"), "{path}: {cache:?}");
    }
}

/// `GET /v1/runs` pages newest first; a listed run has no result and a cut prompt (the list
/// stays small however long the answers were); bad paging parameters are 400s naming them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_list_pages_and_stays_small() {
    let server = TestServer::default("list-pages").await;
    let long_prompt = "é".repeat(400); // 800 bytes: cut at 500 on a character boundary
    let mut started = Vec::new();
    for n in 0..5 {
        let prompt = if n == 0 { long_prompt.clone() } else { format!("run {n}") };
        let (status, body) = server.create(Some(TOKEN_A), json!({"agent": "claude", "prompt": prompt})).await;
        assert_eq!(status, 201, "{body}");
        let id = body["id"].as_str().unwrap().to_string();
        server.wait_ended(TOKEN_A, &id).await;
        started.push(id);
    }
    let (status, whole) = call(&server, "GET", "/v1/runs", Some(TOKEN_A)).await;
    assert_eq!(status, 200);
    assert_eq!(whole.get("next"), None, "one page holds them all: {whole}");
    let listed: Vec<&Value> = whole["runs"].as_array().unwrap().iter().collect();
    let ids: Vec<&str> = listed.iter().map(|r| r["id"].as_str().unwrap()).collect();
    let newest_first: Vec<&str> = started.iter().rev().map(String::as_str).collect();
    assert_eq!(ids, newest_first);
    assert!(listed.iter().all(|r| r.get("result").is_none() && r["status"] == "completed"), "{whole}");
    let oldest = listed.last().unwrap();
    assert_eq!(oldest["promptTruncated"], true);
    assert_eq!(oldest["prompt"].as_str().unwrap(), "é".repeat(250));
    assert_eq!(listed[0].get("promptTruncated"), None);
    let (_, one) = call(&server, "GET", &format!("/v1/runs/{}", started[0]), Some(TOKEN_A)).await;
    assert_eq!(
        (one["prompt"].as_str(), one["result"]["state"].as_str()),
        (Some(long_prompt.as_str()), Some("completed"))
    );

    // Two at a time, following `next`.
    let mut paged = Vec::new();
    let mut path = "/v1/runs?limit=2".to_string();
    loop {
        let (status, page) = call(&server, "GET", &path, Some(TOKEN_A)).await;
        assert_eq!(status, 200, "{path}: {page}");
        let runs = page["runs"].as_array().unwrap();
        assert!(runs.len() <= 2);
        paged.extend(runs.iter().map(|r| r["id"].as_str().unwrap().to_string()));
        match page["next"].as_str() {
            Some(next) => path = next.to_string(),
            None => break,
        }
    }
    assert_eq!(paged, newest_first);
    // Another tenant's cursor shows nothing of this tenant's.
    let (_, page) = call(&server, "GET", "/v1/runs?limit=2", Some(TOKEN_A)).await;
    let (status, theirs) = call(&server, "GET", page["next"].as_str().unwrap(), Some(TOKEN_B)).await;
    assert_eq!((status, &theirs["runs"]), (200, &json!([])));

    for (query, field) in [
        ("limit=0", "limit"),
        ("limit=1001", "limit"),
        ("limit=two", "limit"),
        ("before=nonsense", "before"),
        ("before=2026-01-01T00:00:00Z~a%20b", "before"),
        ("page=2", "page"),
    ] {
        let (status, body) = call(&server, "GET", &format!("/v1/runs?{query}"), Some(TOKEN_A)).await;
        assert_eq!((status, body["field"].as_str()), (400, Some(field)), "{query}: {body}");
    }
}
