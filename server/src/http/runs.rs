//! `POST /v1/runs`, `GET /v1/runs`, `GET /v1/runs/{id}`, `POST /v1/runs/{id}/cancel`.

use std::collections::HashMap;
use std::time::Duration;

use axum::Json;
use axum::body::Body;
use axum::extract::{Query, State, rejection::QueryRejection};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde_json::{Map, Value};

use super::{ApiError, AppState, Caller, RunIdParam};
use crate::broker::RunInfo;
use crate::executor::RunRequest;
use crate::registry::{ListPage, MAX_LIST_LIMIT};

/// The keys a run request may have.
const REQUEST_KEYS: [&str; 4] = ["agent", "prompt", "model", "resume"];

/// A run as the API returns it: the broker's [`RunInfo`] and where to stream it.
fn run_json(info: &RunInfo) -> Value {
    let mut v = serde_json::to_value(info).expect("run info serializes");
    if let Value::Object(m) = &mut v {
        m.insert("events".into(), format!("/v1/runs/{}/events", info.id).into());
        m.insert("ws".into(), format!("/v1/runs/{}/ws", info.id).into());
    }
    v
}

/// Read a body of at most `limit` bytes that arrives within `timeout`.
pub(super) async fn read_body(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
    timeout: Duration,
) -> Result<bytes::Bytes, ApiError> {
    let too_big = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!("the request body is larger than {limit} bytes (limits.max_body_bytes)"),
        )
        .with_field("body")
    };
    let declared =
        headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_big());
    }
    let Ok(read) = tokio::time::timeout(timeout, Limited::new(body, limit).collect()).await else {
        return Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "body_timeout",
            format!(
                "the request body did not arrive within {} s of its headers (limits.body_timeout_secs)",
                timeout.as_secs_f64()
            ),
        )
        .with_field("body"));
    };
    match read {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => Err(too_big()),
        Err(e) => Err(ApiError::field("body", format!("the request body could not be read: {e}"))),
    }
}

/// Parse and check a run request, naming the first field at fault.
fn parse_request(body: &[u8]) -> Result<RunRequest, ApiError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::field(
            "body",
            format!("the body is not valid JSON ({e}); send {{\"agent\": \"…\", \"prompt\": \"…\"}}"),
        )
    })?;
    let Value::Object(map) = value else {
        return Err(ApiError::field("body", "the body must be a JSON object: {\"agent\": \"…\", \"prompt\": \"…\"}"));
    };
    if let Some(unknown) = map.keys().find(|k| !REQUEST_KEYS.contains(&k.as_str())) {
        return Err(ApiError::field(
            unknown.as_str(),
            format!(
                "unknown field {unknown:?}: a run request has only agent, prompt, model and resume \
                 (the binary, arguments and environment are the server's configuration)"
            ),
        ));
    }
    Ok(RunRequest {
        agent: required_string(&map, "agent")?,
        prompt: required_string(&map, "prompt")?,
        model: optional_string(&map, "model")?,
        resume: optional_string(&map, "resume")?,
    })
}

fn required_string(map: &Map<String, Value>, key: &'static str) -> Result<String, ApiError> {
    match map.get(key) {
        None | Some(Value::Null) => Err(ApiError::field(key, format!("{key} is required"))),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(ApiError::field(key, format!("{key} must be a string"))),
    }
}

fn optional_string(map: &Map<String, Value>, key: &'static str) -> Result<Option<String>, ApiError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ApiError::field(key, format!("{key} must be a string"))),
    }
}

pub(super) async fn create(
    Caller(tenant): Caller,
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let result = async {
        let bytes = read_body(&headers, body, state.inner.max_body_bytes, state.inner.body_timeout).await?;
        let request = parse_request(&bytes)?;
        state.broker().start(&tenant, request).await.map_err(|e| ApiError::broker(e, "after"))
    }
    .await;
    match result {
        Ok(info) => {
            let location = format!("/v1/runs/{}", info.id);
            (StatusCode::CREATED, [(header::LOCATION, location)], Json(run_json(&info))).into_response()
        }
        Err(e) => e.into_response(),
    }
}

/// `GET /v1/runs[?limit=N][&before=CURSOR]`: a page of the caller's runs, newest first —
/// `{"runs": [run…], "next"?: "/v1/runs?limit=N&before=…"}` (`next` while more runs follow).
/// A listed run has no `result` and its prompt is cut (`promptTruncated`): the list stays small
/// however long the answers were; `GET /v1/runs/{id}` has the whole run.
pub(super) async fn list(
    Caller(tenant): Caller,
    State(state): State<AppState>,
    params: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Response {
    let page = match list_page(params) {
        Ok(page) => page,
        Err(e) => return e.into_response(),
    };
    match state.broker().list(&tenant, &page).await {
        Ok(listed) => {
            let runs: Vec<Value> = listed
                .runs
                .iter()
                .map(|run| {
                    let mut v = run_json(&run.info);
                    if run.prompt_cut {
                        v["promptTruncated"] = true.into();
                    }
                    v
                })
                .collect();
            let mut body = serde_json::json!({ "runs": runs });
            if let Some(next) = listed.next {
                body["next"] = format!("/v1/runs?limit={}&before={next}", page.limit).into();
            }
            Json(body).into_response()
        }
        Err(e) => ApiError::broker(e, "after").into_response(),
    }
}

/// The page a list request asks for; an unknown parameter or a bad value is a 400 naming it.
fn list_page(params: Result<Query<HashMap<String, String>>, QueryRejection>) -> Result<ListPage, ApiError> {
    let Query(params) =
        params.map_err(|e| ApiError::field("query", format!("the query string does not parse: {e}")))?;
    if let Some(unknown) = params.keys().find(|k| !matches!(k.as_str(), "limit" | "before")) {
        return Err(ApiError::field(
            unknown.as_str(),
            format!("unknown query parameter {unknown:?}; a list takes limit and before"),
        ));
    }
    let mut page = ListPage::default();
    if let Some(raw) = params.get("limit") {
        page.limit = raw.trim().parse().ok().filter(|n| (1..=MAX_LIST_LIMIT).contains(n)).ok_or_else(|| {
            ApiError::field("limit", format!("limit must be an integer from 1 to {MAX_LIST_LIMIT}, not {raw:?}"))
        })?;
    }
    if let Some(raw) = params.get("before") {
        page.before = Some(raw.parse().map_err(|()| {
            ApiError::field("before", "before must be the `next` of a previous page's answer, as it was given")
        })?);
    }
    Ok(page)
}

pub(super) async fn get(Caller(tenant): Caller, State(state): State<AppState>, RunIdParam(id): RunIdParam) -> Response {
    match state.broker().get(&tenant, &id).await {
        Ok(info) => Json(run_json(&info)).into_response(),
        Err(e) => ApiError::broker(e, "after").into_response(),
    }
}

pub(super) async fn cancel(
    Caller(tenant): Caller,
    State(state): State<AppState>,
    RunIdParam(id): RunIdParam,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let result = async {
        // An optional {"reason": "…"}; an empty body is fine.
        let bytes = read_body(&headers, body, state.inner.max_body_bytes, state.inner.body_timeout).await?;
        let reason = cancel_reason(&bytes)?;
        state
            .broker()
            .cancel(&tenant, &id, &reason, state.inner.cancel_wait)
            .await
            .map_err(|e| ApiError::broker(e, "after"))
    }
    .await;
    match result {
        Ok(info) => Json(run_json(&info)).into_response(),
        Err(e) => e.into_response(),
    }
}

fn cancel_reason(body: &[u8]) -> Result<String, ApiError> {
    const DEFAULT: &str = "cancelled over the API";
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(DEFAULT.to_string());
    }
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::field("body", format!("the body is not valid JSON ({e}); send {{\"reason\": \"…\"}} or nothing"))
    })?;
    let Value::Object(map) = value else {
        return Err(ApiError::field("body", "the body must be a JSON object: {\"reason\": \"…\"}"));
    };
    if let Some(unknown) = map.keys().find(|k| k.as_str() != "reason") {
        return Err(ApiError::field(
            unknown.as_str(),
            format!("unknown field {unknown:?}: a cancel request has only reason"),
        ));
    }
    Ok(optional_string(&map, "reason")?.filter(|r| !r.trim().is_empty()).unwrap_or_else(|| DEFAULT.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_parsing_names_the_field() {
        let ok = parse_request(br#"{"agent":"claude","prompt":"hi","model":null}"#).unwrap();
        assert_eq!((ok.agent.as_str(), ok.prompt.as_str(), ok.model), ("claude", "hi", None));
        for (body, field) in [
            (&b"{"[..], "body"),
            (b"[1]", "body"),
            (br#"{"prompt":"hi"}"#, "agent"),
            (br#"{"agent":"claude"}"#, "prompt"),
            (br#"{"agent":"claude","prompt":5}"#, "prompt"),
            (br#"{"agent":"claude","prompt":"x","bin":"/bin/sh"}"#, "bin"),
            (br#"{"agent":"claude","prompt":"x","model":1}"#, "model"),
        ] {
            assert_eq!(
                parse_request(body).unwrap_err().field.as_deref(),
                Some(field),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn cancel_bodies() {
        assert_eq!(cancel_reason(b"").unwrap(), "cancelled over the API");
        assert_eq!(cancel_reason(br#"{"reason":"stop"}"#).unwrap(), "stop");
        assert_eq!(cancel_reason(br#"{"why":"stop"}"#).unwrap_err().field.as_deref(), Some("why"));
        assert_eq!(cancel_reason(b"nope").unwrap_err().field.as_deref(), Some("body"));
    }
}
