//! Streaming a run from a real server: resume at every sequence point (SSE and WebSocket),
//! 100 concurrent subscribers, gaps, cancel, and a harness killed mid-run.

mod common;

use std::time::Duration;

use agentstream_core::Agent;
use common::*;
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;

/// The complete SSE messages of a partly read response.
fn whole_messages(text: &str) -> &str {
    text.rfind("\n\n").map_or("", |i| &text[..i + 2])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_is_the_run_and_its_content_is_the_golden_decoding() {
    let server = TestServer::default("golden").await;
    let id = server.start_run(TOKEN_A, "claude").await;
    let sse = server.sse(TOKEN_A, &id, None, "").await;
    assert_eq!(sse.status, 200);
    assert_eq!(sse.content_type, "text/event-stream");
    assert!(sse.raw.starts_with("retry: 3000\n\n"), "{}", &sse.raw[..40.min(sse.raw.len())]);
    let envs = sse.envelopes();
    assert_whole_stream(&envs);
    assert_eq!(reason(envs.last().unwrap()), Some("run_complete"));
    for (event, env) in sse.events.iter().zip(&envs) {
        let last_covered = env["sequence"].as_u64().unwrap() + env["coalesced"].as_u64().unwrap_or(0);
        assert_eq!(event.id.as_deref(), Some(last_covered.to_string().as_str()), "SSE id = sequence + coalesced");
        assert_eq!(env["runId"], id.as_str());
    }
    // The content channel is exactly what the decoder produces for the trace.
    let content: Vec<Value> = envs.iter().filter(|e| e["channel"] == "content").map(|e| e["event"].clone()).collect();
    let expected: Vec<Value> = std::fs::read_to_string(golden("claude", "s2-bash.expected.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(content, expected);
    let info = server.wait_ended(TOKEN_A, &id).await;
    assert_eq!(info["status"], "completed");
    assert_eq!(info["result"]["state"], "completed");
    assert_eq!(info["lastSequence"], envs.last().unwrap()["sequence"]);
    assert!(info["result"]["final_text"].as_str().unwrap().contains("three files"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_at_every_sequence_point_yields_the_identical_tail() {
    let server = TestServer::default("resume").await;
    let id = server.start_run(TOKEN_A, "edit").await;
    let full = server.sse(TOKEN_A, &id, None, "").await.events;
    let envs: Vec<Value> = full.iter().map(SseEvent::json).collect();
    assert_whole_stream(&envs);
    assert!(envs.len() > 20, "a run with enough points: {}", envs.len());
    for (k, event) in full.iter().enumerate() {
        let id_k = event.id.as_deref().unwrap();
        let by_header = server.sse(TOKEN_A, &id, Some(id_k), "").await;
        let by_query = server.sse(TOKEN_A, &id, None, &format!("?after={id_k}")).await;
        if k + 1 == full.len() {
            // The client has the terminal: nothing more, and EventSource stops reconnecting.
            assert_eq!((by_header.status, by_query.status), (204, 204), "after the terminal");
            continue;
        }
        assert_eq!(by_header.status, 200);
        assert_eq!(by_header.events, full[k + 1..], "Last-Event-ID {id_k}: the identical tail");
        assert_eq!(by_query.events, full[k + 1..], "after={id_k}: the identical tail");
        let mut ws = ws_connect(&server, Some(TOKEN_A), &id, &format!("?after={id_k}")).await.unwrap();
        let (ws_envs, close) = ws_collect(&mut ws).await;
        assert_eq!(ws_envs, envs[k + 1..], "WebSocket after={id_k}: the identical tail");
        assert_eq!(close, Some(1000));
    }
    // A resume point that was never sent is refused, naming where it came from.
    let beyond = envs.last().unwrap()["sequence"].as_u64().unwrap() + 1;
    let refused = server.sse(TOKEN_A, &id, Some(&beyond.to_string()), "").await;
    assert_eq!(refused.status, 400, "{}", refused.raw);
    let body: Value = serde_json::from_str(&refused.raw).unwrap();
    assert_eq!(body["field"], "Last-Event-ID", "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_stream_dropped_and_resumed_loses_nothing_and_repeats_nothing() {
    let server = TestServer::default("live-resume").await;
    let id = server.start_run(TOKEN_A, "slow").await;
    let mut got: Vec<SseEvent> = Vec::new();
    let mut reconnects = 0;
    loop {
        let mut req = server.http.get(server.url(&format!("/v1/runs/{id}/events"))).bearer_auth(TOKEN_A);
        if let Some(last) = got.last() {
            req = req.header("Last-Event-ID", last.id.clone().unwrap());
        }
        let resp = req.send().await.unwrap();
        if resp.status() == 204 {
            break;
        }
        assert_eq!(resp.status(), 200);
        // Read until two more whole envelopes arrived (or the stream ended), then drop the
        // connection; an envelope cut in half was never seen, so it is not a resume point.
        let mut stream = resp.bytes_stream();
        let mut text = String::new();
        while let Some(chunk) = tokio::time::timeout(Duration::from_secs(20), stream.next()).await.unwrap() {
            text.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
            if parse_sse(whole_messages(&text)).len() >= 2 {
                break;
            }
        }
        drop(stream);
        got.extend(parse_sse(whole_messages(&text)));
        if got.last().is_some_and(|e| reason(&e.json()) == Some("run_complete")) {
            break;
        }
        reconnects += 1;
    }
    assert!(reconnects >= 3, "the test really reconnected ({reconnects})");
    let envs: Vec<Value> = got.iter().map(SseEvent::json).collect();
    assert_whole_stream(&envs);
    let whole = server.sse(TOKEN_A, &id, None, "").await.envelopes();
    assert_eq!(envs, whole);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_concurrent_subscribers_all_get_the_full_stream() {
    let server = TestServer::default("hundred").await;
    let id = server.start_run(TOKEN_A, "flood").await;
    let mut tasks = Vec::new();
    for i in 0..100 {
        let (http, url) = (server.http.clone(), server.url(&format!("/v1/runs/{id}/events")));
        tasks.push(tokio::spawn(async move {
            let resp = http.get(url).bearer_auth(TOKEN_A).send().await.unwrap();
            assert_eq!(resp.status(), 200, "subscriber {i}");
            let mut body = Vec::new();
            let mut stream = resp.bytes_stream();
            while let Some(chunk) = stream.next().await {
                body.extend_from_slice(&chunk.unwrap());
            }
            parse_sse(std::str::from_utf8(&body).unwrap()).iter().map(SseEvent::json).collect::<Vec<Value>>()
        }));
    }
    let mut streams = Vec::new();
    for t in tasks {
        streams.push(tokio::time::timeout(Duration::from_secs(60), t).await.expect("in time").unwrap());
    }
    let first = &streams[0];
    assert_whole_stream(first);
    let last = first.last().unwrap()["sequence"].as_u64().unwrap();
    assert!(last > 3000, "every flood line is numbered (some merged under backpressure): {last}");
    assert_eq!(reason(first.last().unwrap()), Some("run_complete"));
    for (i, s) in streams.iter().enumerate() {
        assert_eq!(s.len(), first.len(), "subscriber {i}: same length");
        assert!(s == first, "subscriber {i}: the identical stream");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_point_older_than_the_replay_buffer_gets_an_explicit_gap() {
    let mark = new_mark("gap");
    let mut config = config(&mark);
    config.limits.replay_events = 50;
    let server = TestServer::start(config, mark).await;
    let id = server.start_run(TOKEN_A, "flood").await;
    server.wait_ended(TOKEN_A, &id).await;
    let sse = server.sse(TOKEN_A, &id, Some("10"), "").await;
    assert_eq!(sse.status, 200);
    assert_eq!(sse.events[0].event, "gap");
    assert_eq!(sse.events[0].id, None, "a gap notice is not a resume point");
    let gap = sse.events[0].json();
    assert_eq!(gap["type"], "gap");
    assert_eq!(gap["reason"], "evicted");
    assert_eq!(gap["after"], 10);
    let tail = sse.envelopes();
    assert_eq!(tail.len(), 50, "then every envelope kept");
    let first_kept = tail[0]["sequence"].as_u64().unwrap();
    assert_eq!(gap["resumeFrom"], first_kept);
    assert_eq!(gap["missing"], first_kept - 11, "the numbers 11 .. first kept - 1");
    // Gapless from there (a line merged under backpressure accounts for its numbers).
    let mut next = first_kept;
    for e in &tail {
        assert_eq!(e["sequence"].as_u64(), Some(next));
        next += 1 + e["coalesced"].as_u64().unwrap_or(0);
    }
    assert_eq!(reason(tail.last().unwrap()), Some("run_complete"));
    // From the start: the same, with `after` absent.
    let from_start = server.sse(TOKEN_A, &id, None, "").await;
    let gap = from_start.events[0].json();
    assert_eq!((gap["missing"].as_u64(), gap.get("after")), (Some(first_kept), None));
    // WebSocket: the same notice as a message.
    let mut ws = ws_connect(&server, Some(TOKEN_A), &id, "?after=10").await.unwrap();
    let (msgs, _) = ws_collect(&mut ws).await;
    assert_eq!(msgs[0]["type"], "gap");
    assert_eq!(msgs[1..], tail[..]);
    // A point still in the buffer: no gap.
    let kept = server.sse(TOKEN_A, &id, Some(&first_kept.to_string()), "").await;
    assert!(kept.events.iter().all(|e| e.event == "message"));
    assert_eq!(kept.events.len(), 49);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_ends_the_run_with_exactly_one_terminal_reason_caller() {
    let server = TestServer::default("cancel").await;
    let id = server.start_run(TOKEN_A, "hang").await;
    let watcher = {
        let (http, url) = (server.http.clone(), server.url(&format!("/v1/runs/{id}/events")));
        tokio::spawn(async move {
            let text = http.get(url).bearer_auth(TOKEN_A).send().await.unwrap().text().await.unwrap();
            parse_sse(&text).iter().map(SseEvent::json).collect::<Vec<Value>>()
        })
    };
    // Let the harness print its trace and hang.
    server.wait_past(&id, 5).await; // the trace is out
    let resp = server
        .http
        .post(server.url(&format!("/v1/runs/{id}/cancel")))
        .bearer_auth(TOKEN_A)
        .json(&serde_json::json!({"reason": "the client pressed stop"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let info: Value = resp.json().await.unwrap();
    assert_eq!(info["status"], "cancelled", "cancel waits for the end: {info}");
    assert_eq!(info["result"]["cancel_kind"], "caller");
    assert!(info["result"]["cancel_reason"].as_str().unwrap().contains("the client pressed stop"));
    let envs = tokio::time::timeout(Duration::from_secs(20), watcher).await.unwrap().unwrap();
    assert_whole_stream(&envs);
    assert_eq!(reason(envs.last().unwrap()), Some("run_interrupted"));
    // Idempotent: a second cancel changes nothing.
    let again: Value = server
        .http
        .post(server.url(&format!("/v1/runs/{id}/cancel")))
        .bearer_auth(TOKEN_A)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(again["result"], info["result"]);
    eventually("no harness left", Duration::from_secs(10), || processes_with_mark(&server.mark).is_empty()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_cancel_message_cancels_and_other_messages_are_ignored() {
    use tokio_tungstenite::tungstenite::Message;
    let server = TestServer::default("ws-cancel").await;
    let id = server.start_run(TOKEN_A, "hang").await;
    let mut ws = ws_connect(&server, Some(TOKEN_A), &id, "").await.unwrap();
    for ignored in [r#"["cancel"]"#, "not json", r#"{"type":"approve"}"#] {
        ws.send(Message::text(ignored)).await.unwrap();
    }
    // Read a few envelopes, then cancel over the socket.
    let mut seen = Vec::new();
    while seen.len() < 5 {
        if let Message::Text(t) = ws.next().await.unwrap().unwrap() {
            seen.push(serde_json::from_str::<Value>(t.as_str()).unwrap());
        }
    }
    ws.send(Message::text(r#"{"type":"cancel","reason":"stop from the socket"}"#)).await.unwrap();
    let (rest, close) = ws_collect(&mut ws).await;
    seen.extend(rest);
    assert_whole_stream(&seen);
    assert_eq!(reason(seen.last().unwrap()), Some("run_interrupted"));
    assert_eq!(close, Some(1000));
    let info = server.wait_ended(TOKEN_A, &id).await;
    assert!(info["result"]["cancel_reason"].as_str().unwrap().contains("stop from the socket"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_reaches_a_client_on_any_channel() {
    // The secret-shape corpus as each harness printed it: content events are masked by the
    // core; the raw stdout lines (and stderr) leave the server masked too.
    let secrets_dir = repo().join("tests/secrets");
    let corpus = std::fs::read_to_string(secrets_dir.join("corpus.jsonl")).unwrap();
    let secrets: Vec<String> = corpus
        .lines()
        .filter(|l| !l.trim().is_empty())
        .flat_map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["secrets"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect::<Vec<_>>()
        })
        .collect();
    let mark = new_mark("secrets");
    let mut c = config(&mark);
    for agent in [Agent::Claude, Agent::Codex, Agent::Droid] {
        let mut entry = fake_agent(agent, "s2-bash", &[]);
        let trace = secrets_dir.join("traces").join(agent.name());
        entry.env = vec![("AGENTSTREAM_FAKE_TRACE".into(), trace.to_string_lossy().into_owned())];
        c.agents.insert(format!("secrets-{}", agent.name()), entry);
    }
    let server = TestServer::start(c, mark).await;
    for agent in [Agent::Claude, Agent::Codex, Agent::Droid] {
        let id = server.start_run(TOKEN_A, &format!("secrets-{}", agent.name())).await;
        let sse = server.sse(TOKEN_A, &id, None, "").await;
        let envs = sse.envelopes();
        assert!(envs.iter().any(|e| e["channel"] == "stdout"), "{agent}: the raw lines are served");
        assert!(envs.iter().any(|e| e["channel"] == "stdout" && e["event"].is_string()), "raw text under \"event\"");
        // Each envelope's payload as the client decodes it (JSON unescaped).
        let text: String = envs.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n");
        let unescaped: String =
            envs.iter().filter_map(|e| e["event"].as_str().map(str::to_string)).collect::<Vec<_>>().join("\n");
        let left: Vec<&String> =
            secrets.iter().filter(|s| text.contains(s.as_str()) || unescaped.contains(s.as_str())).collect();
        assert!(left.is_empty(), "{agent}: {left:?} reached the client");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_line_written_to_stderr_in_two_writes_reaches_no_client() {
    // The assignment, then its value 10 ms later: read apart, each piece alone looks harmless.
    let mark = new_mark("stderr-pieces");
    let script = std::env::temp_dir().join(format!("agentstream-{mark}.py"));
    std::fs::write(
        &script,
        "#!/usr/bin/env python3\n\
         import sys, time\n\
         sys.stderr.write('export DB_PASSWORD='); sys.stderr.flush(); time.sleep(0.01)\n\
         sys.stderr.write('Zq9sT4vLm2xRw8Kp\\n'); sys.stderr.flush()\n\
         print('{\"type\":\"result\",\"subtype\":\"success\",\"result\":\"ok\",\"session_id\":\"s\"}')\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut c = config(&mark);
    let mut entry = agentstream_server::config::AgentEntry::default_for(Agent::Claude);
    entry.bin = script.clone();
    c.agents.insert("pieces".into(), entry);
    let server = TestServer::start(c, mark).await;
    let id = server.start_run(TOKEN_A, "pieces").await;
    let envs = server.sse(TOKEN_A, &id, None, "").await.envelopes();
    let stderr: String = envs.iter().filter(|e| e["channel"] == "stderr").filter_map(|e| e["event"].as_str()).collect();
    assert!(stderr.starts_with("export DB_PASSWORD="), "the line is served: {stderr:?}");
    assert!(!stderr.contains("Zq9sT4vLm2xRw8Kp"), "the secret reached the client: {stderr:?}");
    std::fs::remove_file(&script).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_closing_its_websocket_gets_the_close_answered() {
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::protocol::CloseFrame;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
    let server = TestServer::default("ws-close").await;
    let id = server.start_run(TOKEN_A, "hang").await;
    let mut ws = ws_connect(&server, Some(TOKEN_A), &id, "").await.unwrap();
    ws.send(Message::Close(Some(CloseFrame { code: CloseCode::Normal, reason: "bye".into() }))).await.unwrap();
    // The server's own Close comes back (a browser otherwise reports 1006, not clean).
    let answered = async {
        while let Some(msg) = ws.next().await {
            match msg {
                Ok(Message::Close(frame)) => return frame.map(|f| u16::from(f.code)),
                Ok(_) => {}
                Err(e) => panic!("no Close frame before the connection ended: {e}"),
            }
        }
        panic!("the connection ended without a Close frame");
    };
    let code = tokio::time::timeout(Duration::from_secs(10), answered).await.expect("an answer");
    assert_eq!(code, Some(1000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_harness_killed_mid_run_gives_every_subscriber_run_failed() {
    let server = TestServer::default("kill").await;
    let id = server.start_run(TOKEN_A, "slow").await;
    let mut watchers = Vec::new();
    for _ in 0..3 {
        let (http, url) = (server.http.clone(), server.url(&format!("/v1/runs/{id}/events")));
        watchers.push(tokio::spawn(async move {
            let text = http.get(url).bearer_auth(TOKEN_A).send().await.unwrap().text().await.unwrap();
            parse_sse(&text).iter().map(SseEvent::json).collect::<Vec<Value>>()
        }));
    }
    let mut ws = ws_connect(&server, Some(TOKEN_A), &id, "").await.unwrap();
    eventually("the harness runs", Duration::from_secs(10), || processes_with_mark(&server.mark).len() == 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    for pid in processes_with_mark(&server.mark) {
        // SAFETY: kill(2) on a pid we found by its marker; no memory is involved.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    for w in watchers {
        let envs = tokio::time::timeout(Duration::from_secs(20), w).await.unwrap().unwrap();
        assert_whole_stream(&envs);
        assert_eq!(reason(envs.last().unwrap()), Some("run_failed"));
    }
    let (msgs, _) = ws_collect(&mut ws).await;
    assert_eq!(reason(msgs.last().unwrap()), Some("run_failed"));
    let info = server.wait_ended(TOKEN_A, &id).await;
    assert_eq!(info["status"], "failed");
    assert_eq!(info["result"]["signal"], 9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_stream_gets_heartbeats_and_a_point_beyond_the_run_is_refused() {
    let mark = new_mark("heartbeat");
    let mut config = config(&mark);
    config.limits.heartbeat = Duration::from_millis(100);
    let server = TestServer::start(config, mark).await;
    let id = server.start_run(TOKEN_A, "hang").await;
    server.wait_past(&id, 5).await; // the trace is out
    // The harness prints nothing more: the stream carries comment frames only.
    let resp = server.http.get(server.url(&format!("/v1/runs/{id}/events"))).bearer_auth(TOKEN_A).send().await.unwrap();
    let mut stream = resp.bytes_stream();
    let mut text = String::new();
    while text.matches(": heartbeat\n\n").count() < 2 {
        let chunk = tokio::time::timeout(Duration::from_secs(5), stream.next()).await.expect("a heartbeat");
        text.push_str(std::str::from_utf8(&chunk.unwrap().unwrap()).unwrap());
    }
    drop(stream);
    // WebSocket: pings.
    let mut ws = ws_connect(&server, Some(TOKEN_A), &id, "").await.unwrap();
    let ping = async {
        while let Some(msg) = ws.next().await {
            if matches!(msg.unwrap(), tokio_tungstenite::tungstenite::Message::Ping(_)) {
                return;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(5), ping).await.expect("a ping");
    // A resume point the live run has not produced yet.
    let last = server.broker.get(&"a".into(), &id).await.unwrap().last_sequence.unwrap();
    let beyond = server.sse(TOKEN_A, &id, None, &format!("?after={}", last + 100)).await;
    assert_eq!(beyond.status, 400);
    let body: Value = serde_json::from_str(&beyond.raw).unwrap();
    assert_eq!(body["field"], "after");
    assert!(body["message"].as_str().unwrap().contains(&format!("last sequence {last}")), "{body}");
    server.broker.cancel(&"a".into(), &id, "done", Duration::from_secs(10)).await.unwrap();
}
