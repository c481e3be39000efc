//! `GET /v1/runs/{id}/events` (Server-Sent Events) and `GET /v1/runs/{id}/ws` (WebSocket).
//!
//! SSE: first `retry: 3000`, then per envelope `id: <sequence + coalesced>`, `time: <when the server received
//! it, Unix ms>` (a field SSE clients ignore; the live view measures durations with it) and
//! `data: <envelope JSON>` (the default `message` event), a gap notice as `event: gap`, a `: heartbeat` comment after each
//! heartbeat interval without an envelope, a notice about the cluster's connection as `event:
//! notice`; the response ends after the terminal envelope.
//! `Last-Event-ID` (what a browser's `EventSource` sends when it reconnects) or `?after=N`
//! resumes right after sequence N; the header wins when both are given. A client that already
//! has the terminal envelope gets `204 No Content`, which also tells `EventSource` to stop
//! reconnecting.
//!
//! WebSocket: the same JSON, one text message per envelope or gap notice, `?after=N` to resume;
//! pings as heartbeats; a normal close (1000) after the terminal envelope. The client may send
//! `{"type": "cancel", "reason"?: "…"}` to cancel the run; other messages are ignored. A peer
//! that goes away does NOT cancel the run: runs outlive connections so that clients can
//! resume; stopping a run is explicit.

use std::collections::HashMap;
use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ws::{
    CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade, close_code, rejection::WebSocketUpgradeRejection,
};
use axum::extract::{Extension, Query, State, rejection::QueryRejection};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::{BufMut, Bytes, BytesMut};
use futures_util::stream;

use super::{ApiError, AppState, Caller, RunIdParam};
use crate::auth::TenantId;
use crate::broker::{BrokerError, BrokerSubscription};
use crate::frame::Delivered;
use crate::listen::ConnectionSlot;
use crate::log::Subscription;

/// Deliveries read per wake.
const BATCH: usize = 256;
/// The most bytes of SSE text built at a time (one envelope larger than this is a chunk of its
/// own).
const CHUNK_BYTES: usize = 64 * 1024;
/// What `EventSource` waits before reconnecting, in milliseconds.
const RETRY_MS: u32 = 3000;

type Params = Result<Query<HashMap<String, String>>, QueryRejection>;

/// The resume point of a request and where it came from (for the error's `field`).
fn resume_point(
    headers: &HeaderMap,
    params: &Params,
    allow_header: bool,
) -> Result<(Option<u64>, &'static str), ApiError> {
    let parse = |raw: &str, field: &'static str| {
        raw.trim().parse::<u64>().map(Some).map_err(|_| {
            ApiError::field(
                field,
                format!("{field} must be the sequence number of an envelope you have (an integer >= 0), not {raw:?}"),
            )
        })
    };
    if let Some(v) = headers.get("last-event-id").filter(|_| allow_header) {
        let raw = v.to_str().map_err(|_| ApiError::field("Last-Event-ID", "Last-Event-ID must be ASCII digits"))?;
        return Ok((parse(raw, "Last-Event-ID")?, "Last-Event-ID"));
    }
    let params =
        params.as_ref().map_err(|e| ApiError::field("query", format!("the query string does not parse: {e}")))?;
    if let Some(unknown) = params.keys().find(|k| k.as_str() != "after") {
        return Err(ApiError::field(
            unknown.as_str(),
            format!("unknown query parameter {unknown:?}; the only one is after"),
        ));
    }
    match params.get("after") {
        Some(raw) => Ok((parse(raw, "after")?, "after")),
        None => Ok((None, "after")),
    }
}

async fn open(
    state: &AppState,
    tenant: &TenantId,
    id: &str,
    headers: &HeaderMap,
    params: &Params,
    allow_header: bool,
) -> Result<Option<BrokerSubscription>, ApiError> {
    // The run first: another tenant's run is 404 whatever the query says.
    state.broker().get(tenant, id).await.map_err(|e| ApiError::broker(e, "after"))?;
    let (after, field) = resume_point(headers, params, allow_header)?;
    match state.broker().subscribe(tenant, id, after).await {
        Ok(sub) => Ok(Some(sub)),
        Err(BrokerError::Complete) => Ok(None),
        Err(e) => Err(ApiError::broker(e, field)),
    }
}

/// The SSE text of the first deliveries of `deliveries`, and how many it holds: as many as fit
/// in [`CHUNK_BYTES`] (at least one). A chunk stays in memory until the client has read all of
/// it, so it is bounded: a slow reader of a run with large envelopes holds one chunk, not a
/// whole batch copied.
fn sse_chunk(deliveries: &[Delivered]) -> (Bytes, usize) {
    let size_of = |d: &Delivered| match d {
        Delivered::Frame(f) => f.json.len() + 48,
        Delivered::Gap(_) | Delivered::Notice(_) => 256,
    };
    let (mut size, mut taken) = (0, 0);
    for d in deliveries {
        if taken > 0 && size + size_of(d) > CHUNK_BYTES {
            break;
        }
        size += size_of(d);
        taken += 1;
    }
    let mut buf = BytesMut::with_capacity(size);
    for d in &deliveries[..taken] {
        match d {
            Delivered::Frame(f) => {
                // The resume point is the last number the envelope accounts for: resumed from
                // a merged envelope's own `sequence` after it was evicted, the numbers it merged
                // would be reported missing although the client has them.
                buf.put_slice(b"id: ");
                buf.put_slice(f.last_covered.to_string().as_bytes());
                buf.put_slice(b"\ntime: ");
                buf.put_slice(f.received_ms.to_string().as_bytes());
                buf.put_slice(b"\ndata: ");
                buf.put_slice(&f.json);
                buf.put_slice(b"\n\n");
            }
            Delivered::Gap(g) => {
                buf.put_slice(b"event: gap\ndata: ");
                buf.put_slice(g.to_json().as_bytes());
                buf.put_slice(b"\n\n");
            }
            Delivered::Notice(n) => {
                buf.put_slice(b"event: notice\ndata: ");
                buf.put_slice(n.to_json().as_bytes());
                buf.put_slice(b"\n\n");
            }
        }
    }
    (buf.freeze(), taken)
}

pub(super) async fn sse(
    Caller(tenant): Caller,
    State(state): State<AppState>,
    RunIdParam(id): RunIdParam,
    headers: HeaderMap,
    params: Params,
) -> Response {
    let sub = match open(&state, &tenant, &id, &headers, &params, true).await {
        Ok(Some(sub)) => sub,
        Ok(None) => return StatusCode::NO_CONTENT.into_response(),
        Err(e) => return e.into_response(),
    };
    let heartbeat = state.inner.heartbeat;
    struct Feed {
        sub: BrokerSubscription,
        buf: Vec<Delivered>,
        /// How many of `buf` were written.
        written: usize,
        started: bool,
    }
    let feed = Feed { sub, buf: Vec::with_capacity(BATCH), written: 0, started: false };
    let body = stream::unfold(feed, move |mut feed| async move {
        if !feed.started {
            feed.started = true;
            return Some((Ok::<_, Infallible>(Bytes::from(format!("retry: {RETRY_MS}\n\n"))), feed));
        }
        if feed.written == feed.buf.len() {
            feed.buf.clear();
            feed.written = 0;
            match tokio::time::timeout(heartbeat, feed.sub.next_batch(&mut feed.buf, BATCH)).await {
                Err(_) => return Some((Ok(Bytes::from_static(b": heartbeat\n\n")), feed)),
                Ok(false) => return None,
                Ok(true) if feed.buf.is_empty() => return Some((Ok(Bytes::new()), feed)),
                Ok(true) => {}
            }
        }
        let (chunk, taken) = sse_chunk(&feed.buf[feed.written..]);
        feed.written += taken;
        Some((Ok(chunk), feed))
    });
    let mut response = Response::new(Body::from_stream(body));
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache, no-transform"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

pub(super) async fn websocket(
    Caller(tenant): Caller,
    State(state): State<AppState>,
    RunIdParam(id): RunIdParam,
    headers: HeaderMap,
    params: Params,
    slot: Option<Extension<ConnectionSlot>>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    let sub = match open(&state, &tenant, &id, &headers, &params, false).await {
        Ok(sub) => sub,
        Err(e) => return e.into_response(),
    };
    let upgrade = match upgrade {
        Ok(u) => u,
        Err(e) => {
            return ApiError::new(
                StatusCode::UPGRADE_REQUIRED,
                "websocket_required",
                format!("this route speaks WebSocket only: {e}"),
            )
            .into_response();
        }
    };
    let heartbeat = state.inner.heartbeat;
    // A client sends only small control messages (`{"type": "cancel"}`): anything larger than a
    // request body may be is refused before it is buffered.
    let limit = state.inner.max_body_bytes;
    let upgrade = upgrade.max_message_size(limit).max_frame_size(limit);
    upgrade.on_upgrade(move |socket| async move {
        // The socket counts as an open connection until it closes (see crate::listen).
        let _slot = slot;
        match sub {
            Some(sub) => serve_socket(socket, sub, state, tenant, id, heartbeat).await,
            None => close(socket, "the run's stream already ended").await,
        }
    })
}

async fn close(mut socket: WebSocket, why: &'static str) {
    let _ = socket.send(Message::Close(Some(CloseFrame { code: 1000, reason: Utf8Bytes::from_static(why) }))).await;
}

async fn serve_socket(
    mut socket: WebSocket,
    mut sub: BrokerSubscription,
    state: AppState,
    tenant: TenantId,
    id: String,
    heartbeat: Duration,
) {
    let mut buf = Vec::with_capacity(BATCH);
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + heartbeat, heartbeat);
    loop {
        tokio::select! {
            more = sub.next_batch(&mut buf, BATCH) => {
                if !more {
                    return close(socket, "the run's stream ended").await;
                }
                for d in buf.drain(..) {
                    let text = match d {
                        // serde_json wrote it, or the cluster's `wire::unpack` checked it.
                        Delivered::Frame(f) => Utf8Bytes::try_from(f.json.clone()).expect("envelope JSON is UTF-8"),
                        Delivered::Gap(g) => Utf8Bytes::from(g.to_json()),
                        Delivered::Notice(n) => Utf8Bytes::from(n.to_json()),
                    };
                    if socket.send(Message::Text(text)).await.is_err() {
                        return;
                    }
                }
            }
            incoming = socket.recv() => match incoming {
                None => return,
                Some(Ok(Message::Close(_))) => {
                    // The library queued the answering Close when it read this one; it is
                    // written on the next write or flush, and there is none after a return.
                    let _ = futures_util::SinkExt::flush(&mut socket).await;
                    return;
                }
                Some(Err(e)) => {
                    if is_too_long(&e) {
                        let limit = state.inner.max_body_bytes;
                        let why = format!("a message to the server is limited to {limit} bytes (limits.max_body_bytes)");
                        let frame = CloseFrame { code: close_code::SIZE, reason: Utf8Bytes::from(why) };
                        let _ = socket.send(Message::Close(Some(frame))).await;
                    }
                    return;
                }
                Some(Ok(Message::Text(text))) => {
                    if let Some(reason) = cancel_message(text.as_str()) {
                        // No waiting: the terminal envelope comes through this socket.
                        let _ = state.broker().cancel(&tenant, &id, &reason, Duration::ZERO).await;
                    }
                }
                Some(Ok(_)) => {}
            },
            _ = ping.tick() => {
                if socket.send(Message::Ping(Bytes::new())).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Whether a WebSocket read failed on a message or frame over the size limit. axum hands the
/// WebSocket library's error over only as text, hence the match on its wording ("Space limit
/// exceeded: Message too long: … > …", for a message and a frame alike); another error is
/// answered by closing without a frame, as before. Pinned by a test against the real library.
fn is_too_long(e: &axum::Error) -> bool {
    let text = e.to_string();
    text.contains("Space limit exceeded") || text.contains("Message too long")
}

/// `{"type": "cancel", "reason"?: "…"}` → the reason; anything else → `None` (ignored).
fn cancel_message(text: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    let obj = v.as_object()?;
    if obj.get("type")?.as_str()? != "cancel" {
        return None;
    }
    let reason = obj.get("reason").and_then(|r| r.as_str()).filter(|r| !r.trim().is_empty());
    Some(reason.unwrap_or("cancelled over the WebSocket").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{Frame, Gap, GapReason};
    use std::sync::Arc;

    #[test]
    fn sse_framing() {
        let f = Frame {
            sequence: 7,
            last_covered: 7,
            terminal: false,
            json: Bytes::from_static(b"{\"a\":1}"),
            received_ms: 12,
        };
        let g = Gap::new("r", GapReason::Evicted, None, 3, Some(3));
        let (chunk, taken) = sse_chunk(&[Delivered::Frame(Arc::new(f)), Delivered::Gap(g.clone())]);
        let text = String::from_utf8(chunk.to_vec()).unwrap();
        assert_eq!(text, format!("id: 7\ntime: 12\ndata: {{\"a\":1}}\n\nevent: gap\ndata: {}\n\n", g.to_json()));
        assert_eq!(taken, 2);
        // A merged envelope's id is the last number it accounts for (its resume point).
        let merged =
            Frame { sequence: 8, last_covered: 11, terminal: false, json: Bytes::from_static(b"{}"), received_ms: 0 };
        let (chunk, _) = sse_chunk(&[Delivered::Frame(Arc::new(merged))]);
        assert!(chunk.starts_with(b"id: 11\n"), "{chunk:?}");
    }

    #[test]
    fn a_chunk_holds_what_fits_in_its_bound_and_at_least_one_envelope() {
        let frame = |sequence: u64, bytes: usize| {
            let json = Bytes::from(format!("\"{}\"", "x".repeat(bytes - 2)));
            Delivered::Frame(Arc::new(Frame {
                sequence,
                last_covered: sequence,
                terminal: false,
                json,
                received_ms: 0,
            }))
        };
        // 256 envelopes of 1 MiB: one per chunk, never the batch copied at once.
        let large: Vec<Delivered> = (0..256).map(|i| frame(i, 1 << 20)).collect();
        let (chunk, taken) = sse_chunk(&large);
        assert_eq!(taken, 1);
        assert!(chunk.len() < (1 << 20) + 64, "{}", chunk.len());
        // Small envelopes: as many as fit in CHUNK_BYTES, and every one of them whole.
        let small: Vec<Delivered> = (0..256).map(|i| frame(i, 1000)).collect();
        let mut written = 0;
        let mut text = String::new();
        while written < small.len() {
            let (chunk, taken) = sse_chunk(&small[written..]);
            assert!(taken >= 1 && chunk.len() <= CHUNK_BYTES, "{taken} {}", chunk.len());
            written += taken;
            text.push_str(std::str::from_utf8(&chunk).unwrap());
        }
        let ids: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("id: ")).collect();
        assert_eq!(ids, (0..256).map(|i| i.to_string()).collect::<Vec<_>>());
    }

    #[test]
    fn control_messages() {
        assert_eq!(cancel_message(r#"{"type":"cancel"}"#).as_deref(), Some("cancelled over the WebSocket"));
        assert_eq!(cancel_message(r#"{"type":"cancel","reason":"stop","runId":"other"}"#).as_deref(), Some("stop"));
        for ignored in [r#"["cancel"]"#, "cancel", r#"{"type":"approve"}"#, r#"{"type":5}"#] {
            assert_eq!(cancel_message(ignored), None, "{ignored}");
        }
    }

    #[test]
    fn resume_points() {
        let q = |pairs: &[(&str, &str)]| -> Params {
            Ok(Query(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()))
        };
        let mut h = HeaderMap::new();
        assert_eq!(resume_point(&h, &q(&[]), true).unwrap(), (None, "after"));
        assert_eq!(resume_point(&h, &q(&[("after", "4")]), true).unwrap(), (Some(4), "after"));
        assert_eq!(resume_point(&h, &q(&[("after", "-1")]), true).unwrap_err().field.as_deref(), Some("after"));
        assert_eq!(resume_point(&h, &q(&[("from", "1")]), true).unwrap_err().field.as_deref(), Some("from"));
        h.insert("last-event-id", HeaderValue::from_static("9"));
        assert_eq!(resume_point(&h, &q(&[("after", "4")]), true).unwrap(), (Some(9), "Last-Event-ID"));
        assert_eq!(resume_point(&h, &q(&[("after", "4")]), false).unwrap(), (Some(4), "after"));
        h.insert("last-event-id", HeaderValue::from_static("x"));
        assert_eq!(resume_point(&h, &q(&[]), true).unwrap_err().field.as_deref(), Some("Last-Event-ID"));
    }
}
