//! Hostile and careless clients at the connection level, against a real server: a connection
//! that sends nothing, a request head or body that trickles in, more connections than the limit.
//! None of them may keep a connection (a file descriptor) for ever or starve the others.

mod common;

use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Read until the server closes the connection (or `within` passes); what it sent.
async fn read_to_close(tcp: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
    let mut got = Vec::new();
    // An error (a reset: the server closed with our bytes unread) is a close too.
    tokio::time::timeout(within, tcp.read_to_end(&mut got)).await.ok().map(|_| got)
}

/// The status and JSON body of a raw HTTP/1.1 response.
fn parse_response(raw: &[u8]) -> (u16, Value) {
    let text = String::from_utf8_lossy(raw);
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("");
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

async fn health(server: &TestServer) -> Value {
    server.get_json(Some(TOKEN_A), "/healthz").await.1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_sends_nothing_or_trickles_its_head_is_closed_after_the_header_timeout() {
    let mark = new_mark("header-timeout");
    let mut config = config(&mark);
    config.limits.header_timeout = Duration::from_millis(400);
    let server = TestServer::start(config, mark).await;

    // Nothing at all.
    let started = Instant::now();
    let mut silent = TcpStream::connect(server.addr).await.unwrap();
    let got = read_to_close(&mut silent, Duration::from_secs(5)).await;
    assert!(got.is_some(), "a silent connection is closed");
    assert!(started.elapsed() >= Duration::from_millis(350), "not before the timeout: {:?}", started.elapsed());

    // A request line, then a header byte every 100 ms: each byte arrives in time, the head does not.
    let started = Instant::now();
    let mut slow = TcpStream::connect(server.addr).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\n").await.unwrap();
    let trickle = async {
        for byte in b"X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
            if slow.write_all(&[*byte]).await.is_err() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    };
    let refused = tokio::time::timeout(Duration::from_secs(5), trickle).await.expect("the trickle ends");
    let closed = refused || read_to_close(&mut slow, Duration::from_secs(2)).await.is_some();
    assert!(closed, "a head that trickles in is cut off");
    assert!(started.elapsed() < Duration::from_secs(3), "cut off near the timeout: {:?}", started.elapsed());

    // A kept-alive connection that goes quiet after its response.
    let mut idle = TcpStream::connect(server.addr).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let mut first = [0u8; 12];
    idle.read_exact(&mut first).await.unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    let started = Instant::now();
    assert!(read_to_close(&mut idle, Duration::from_secs(5)).await.is_some(), "an idle keep-alive is closed");
    assert!(started.elapsed() < Duration::from_secs(3));

    // Clients that send their requests are served as before.
    assert_eq!(health(&server).await["status"], "ok");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_sends_requests_and_never_reads_the_responses_loses_its_connection() {
    let mark = new_mark("send-timeout");
    let mut config = config(&mark);
    config.limits.max_connections = 2;
    config.limits.send_timeout = Duration::from_millis(500);
    let server = TestServer::start(config, mark).await;
    // Every slot taken by a client that pipelines thousands of requests and reads nothing (a
    // small receive buffer, so the server's sends stall soon).
    let mut hogs = Vec::new();
    for _ in 0..2 {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let tcp = socket.connect(server.addr).await.unwrap();
        let (_read, mut write) = tcp.into_split();
        hogs.push((
            _read,
            tokio::spawn(async move {
                let request = b"GET /assets/timeline.js HTTP/1.1\r\nHost: x\r\n\r\n".repeat(3000);
                let _ = write.write_all(&request).await;
                write
            }),
        ));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    // The slots come back once the sends have stalled for the limit: others are served.
    let started = Instant::now();
    let served = tokio::time::timeout(Duration::from_secs(20), health(&server)).await;
    assert_eq!(served.expect("a slot came back")["status"], "ok");
    assert!(started.elapsed() >= Duration::from_millis(250), "not before the sends stalled: {:?}", started.elapsed());
    drop(hogs);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_does_not_arrive_in_time_is_a_408_naming_the_limit() {
    let mark = new_mark("body-timeout");
    let mut config = config(&mark);
    config.limits.body_timeout = Duration::from_millis(300);
    let server = TestServer::start(config, mark).await;
    let mut tcp = TcpStream::connect(server.addr).await.unwrap();
    let head = format!(
        "POST /v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN_A}\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\n\r\n{{\"agent\":"
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    let started = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains("}") {
        let n = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf)).await.expect("an answer").unwrap();
        assert!(n > 0, "answered before closing: {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    let (status, body) = parse_response(&got);
    assert_eq!((status, body["error"].as_str(), body["field"].as_str()), (408, Some("body_timeout"), Some("body")));
    assert!(body["message"].as_str().unwrap().contains("limits.body_timeout_secs"), "{body}");
    assert!(started.elapsed() >= Duration::from_millis(250));
    assert_eq!(server.broker.running(), 0, "no run started");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_limit_wait_until_one_closes_and_websockets_count() {
    let mark = new_mark("max-connections");
    let mut config = config(&mark);
    config.limits.max_connections = 3;
    let server = TestServer::start(config, mark).await;
    // Each answered request's connection closes (the test client keeps none idle): wait up to
    // 5 s for the count (this health request's own connection included) to reach `expected`;
    // the last count seen.
    let open_settles_at = |expected: u64| {
        let server = &server;
        async move {
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                let h = health(server).await;
                assert_eq!(h["connections"]["max"], 3, "{h}");
                let open = h["connections"]["open"].as_u64().unwrap();
                if open == expected || Instant::now() > deadline {
                    return open;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    assert_eq!(open_settles_at(1).await, 1, "only the health request's own connection");

    let mut idle = Vec::new();
    for _ in 0..3 {
        idle.push(TcpStream::connect(server.addr).await.unwrap());
    }
    // A fourth client connects (the kernel's backlog takes it) but is not served…
    let mut waiting = TcpStream::connect(server.addr).await.unwrap();
    let request =
        format!("GET /healthz HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN_A}\r\nConnection: close\r\n\r\n");
    waiting.write_all(request.as_bytes()).await.unwrap();
    let mut buf = vec![0u8; 4096];
    assert!(
        tokio::time::timeout(Duration::from_millis(500), waiting.read(&mut buf)).await.is_err(),
        "no answer while every slot is taken"
    );
    // …until one of the three closes.
    drop(idle.pop());
    let got = read_to_close(&mut waiting, Duration::from_secs(5)).await.expect("served once a slot frees");
    let (status, body) = parse_response(&got);
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&got));
    assert_eq!(body["connections"], serde_json::json!({"open": 3, "max": 3}), "{body}");
    drop(idle);

    // An upgraded WebSocket keeps its slot until it closes.
    let id = server.start_run(TOKEN_A, "hang").await;
    let ws = ws_connect(&server, Some(TOKEN_A), &id, "").await.expect("the socket opens");
    assert_eq!(open_settles_at(2).await, 2, "the socket and the health request");
    drop(ws);
    assert_eq!(open_settles_at(1).await, 1, "a closed socket frees its slot");
    server.broker.cancel(&"a".into(), &id, "done", Duration::from_secs(10)).await.unwrap();
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_message_over_the_body_limit_closes_the_socket_with_1009_and_the_run_goes_on() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let mark = new_mark("ws-limit");
    let mut config = config(&mark);
    config.limits.max_body_bytes = 1024;
    let server = TestServer::start(config, mark).await;
    let id = server.start_run(TOKEN_A, "hang").await;
    let mut ws = ws_connect(&server, Some(TOKEN_A), &id, "").await.expect("the socket opens");
    // Not a cancel, and too long to be read at all.
    let long = format!("{{\"type\":\"cancel\",\"reason\":\"{}\"}}", "x".repeat(4096));
    ws.send(Message::text(long)).await.unwrap();
    let close = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(msg) = ws.next().await {
            if let Ok(Message::Close(frame)) = msg {
                return frame;
            }
        }
        None
    })
    .await
    .expect("the server closes the socket");
    let frame = close.expect("with a close frame");
    assert_eq!(u16::from(frame.code), 1009, "{frame:?}");
    assert!(frame.reason.as_str().contains("limits.max_body_bytes"), "{frame:?}");
    // The message was not read as a cancel: the run is still running, and a small cancel works.
    assert_eq!(server.get_json(Some(TOKEN_A), &format!("/v1/runs/{id}")).await.1["status"], "running");
    let mut ws = ws_connect(&server, Some(TOKEN_A), &id, "").await.expect("a second socket opens");
    ws.send(Message::text(r#"{"type":"cancel","reason":"small enough"}"#)).await.unwrap();
    let run = server.wait_ended(TOKEN_A, &id).await;
    assert_eq!(run["status"], "cancelled", "{run}");
    assert!(run["result"]["cancel_reason"].as_str().unwrap().contains("small enough"), "{run}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_and_sockets_outlive_the_header_timeout() {
    let mark = new_mark("long-streams");
    let mut config = config(&mark);
    config.limits.header_timeout = Duration::from_millis(300);
    let server = TestServer::start(config, mark).await;
    let id = server.start_run(TOKEN_A, "hang").await;
    // An SSE response and a WebSocket open well past the header timeout (the client sends
    // nothing more on either), then the run ends: both get everything, the terminal last.
    let mut ws = ws_connect(&server, Some(TOKEN_A), &id, "").await.expect("the socket opens");
    let (sse, ()) = tokio::join!(server.sse(TOKEN_A, &id, None, ""), async {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        server.broker.cancel(&"a".into(), &id, "done", Duration::from_secs(10)).await.unwrap();
    });
    assert_eq!(sse.status, 200);
    assert_whole_stream(&sse.envelopes());
    let (socketed, close) = ws_collect(&mut ws).await;
    assert_whole_stream(&socketed);
    assert_eq!(close, Some(1000));
    server.shutdown().await;
}
