//! The HTTP API (axum): routes, authentication, and JSON errors.
//!
//! | route | what |
//! |---|---|
//! | `GET /` , `GET /assets/{file}` | the live run view (no authentication: it holds no data) |
//! | `GET /healthz` | `{"status": "ok" \| "degraded" \| "shutting_down"}`; with a tenant's token also `"running": N, "connections": {…}, "replay"?: {…}, "backend"?: {…}` |
//! | `GET /v1/agents` | the agent names a run may use |
//! | `GET /v1/whoami` | the caller's tenant: `{"tenant": "…"}` |
//! | `POST /v1/session` | redeem a sign-in code (no token needed): `{"code": "asl_…"}` → `{"tenant", "token"}`, once |
//! | `POST /v1/runs` | start a run: `{"agent", "prompt", "model"?, "resume"?}` → 201 |
//! | `GET /v1/runs` | a page of the caller's runs, newest first (`?limit=N&before=…`), without results |
//! | `GET /v1/runs/{id}` | one run: status and, once ended, its result |
//! | `GET /v1/runs/{id}/events` | Server-Sent Events: one per envelope, `id` = sequence + coalesced |
//! | `GET /v1/runs/{id}/ws` | WebSocket: the same envelopes, one text message each |
//! | `POST /v1/runs/{id}/cancel` | cancel; the run ends with one terminal envelope |
//!
//! Everything else under `/v1` needs `Authorization: Bearer <token>`: none or an unknown token is
//! 401; another tenant's run is 404 on every route, exactly like an id that does not exist.

mod error;
mod runs;
mod session;
mod stream;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

pub use error::ApiError;

use crate::auth::{SignInLinks, TenantId, Tenants};
use crate::broker::RunBroker;
use crate::listen::Connections;

/// What the handlers share.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<AppInner>,
}

struct AppInner {
    broker: RunBroker,
    tenants: Tenants,
    max_body_bytes: usize,
    body_timeout: Duration,
    heartbeat: Duration,
    cancel_wait: Duration,
    connections: Connections,
    sign_in: SignInLinks,
}

impl AppState {
    /// The state of a server over `broker`, accepting `tenants`.
    pub fn new(
        broker: RunBroker,
        tenants: Tenants,
        max_body_bytes: usize,
        body_timeout: Duration,
        heartbeat: Duration,
        cancel_wait: Duration,
        connections: Connections,
    ) -> Self {
        let inner = AppInner {
            broker,
            tenants,
            max_body_bytes,
            body_timeout,
            heartbeat,
            cancel_wait,
            connections,
            sign_in: SignInLinks::default(),
        };
        AppState { inner: Arc::new(inner) }
    }

    pub(crate) fn broker(&self) -> &RunBroker {
        &self.inner.broker
    }

    /// The one-time sign-in codes of the live view.
    pub(crate) fn sign_in(&self) -> &SignInLinks {
        &self.inner.sign_in
    }
}

/// The router of the whole API and the live view.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(crate::view::index))
        .route("/assets/{file}", get(crate::view::asset))
        .route("/healthz", get(healthz))
        .route("/v1/agents", get(agents))
        .route("/v1/whoami", get(session::whoami))
        .route("/v1/session", post(session::redeem))
        .route("/v1/runs", post(runs::create).get(runs::list))
        .route("/v1/runs/{id}", get(runs::get))
        .route("/v1/runs/{id}/cancel", post(runs::cancel))
        .route("/v1/runs/{id}/events", get(stream::sse))
        .route("/v1/runs/{id}/ws", get(stream::websocket))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::middleware::map_response(no_sniffing))
        .with_state(state)
}

/// No response is to be sniffed into something else: the pages, the JSON, the SSE streams and
/// the errors all say what they are. None is to be stored by a cache either unless it says so
/// (the page and the streams do): the API's answers hold tokens (`/v1/session`), prompts and
/// answers.
async fn no_sniffing(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// The authenticated tenant of a request.
pub struct Caller(pub TenantId);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let Some(value) = parts.headers.get(header::AUTHORIZATION) else {
            return Err(ApiError::unauthorized("send Authorization: Bearer <token>"));
        };
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .filter(|t| !t.is_empty())
            .ok_or_else(|| ApiError::unauthorized("the Authorization header must be: Bearer <token>"))?;
        state.inner.tenants.authenticate(token).map(Caller).ok_or_else(|| ApiError::unauthorized("unknown token"))
    }
}

/// The `{id}` of a run's route. An id no run can have (not 1 to 128 ASCII letters, digits,
/// `_` or `-`; not UTF-8 once decoded) is the JSON 404 of an unknown run, not axum's plain-text
/// 400, and never reaches the backend (NATS refuses such keys: that was a 503).
pub struct RunIdParam(pub String);

impl RunIdParam {
    const MAX_LEN: usize = 128;

    fn possible(id: &str) -> bool {
        (1..=Self::MAX_LEN).contains(&id.len())
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    }
}

impl FromRequestParts<AppState> for RunIdParam {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        match Path::<String>::from_request_parts(parts, state).await {
            Ok(Path(id)) if Self::possible(&id) => Ok(RunIdParam(id)),
            _ => Err(ApiError::run_not_found()),
        }
    }
}

/// The status for anyone (a load balancer's probe needs no token); the counts behind it — runs,
/// connections, memory, the cluster's workers and URL — only for a caller with a tenant's token
/// (they describe every tenant's load, so they are not public). A token that is sent must be
/// valid: a probe configured with a revoked one hears so (401) instead of a bare status.
async fn healthz(parts: Parts, State(state): State<AppState>) -> Response {
    let detailed = if parts.headers.contains_key(header::AUTHORIZATION) {
        let mut parts = parts;
        match Caller::from_request_parts(&mut parts, &state).await {
            Ok(_) => true,
            Err(e) => return e.into_response(),
        }
    } else {
        false
    };
    let broker = state.broker();
    let health = broker.health();
    let (status, code) = if !broker.is_accepting() {
        ("shutting_down", StatusCode::SERVICE_UNAVAILABLE)
    } else if !health.ok {
        ("degraded", StatusCode::SERVICE_UNAVAILABLE)
    } else {
        ("ok", StatusCode::OK)
    };
    if !detailed {
        return (code, axum::Json(serde_json::json!({"status": status}))).into_response();
    }
    let connections = &state.inner.connections;
    let mut body = serde_json::json!({
        "status": status,
        "running": broker.running().max(broker.running_everywhere()),
        "connections": {"open": connections.open(), "max": connections.max()},
    });
    if let Some(detail) = health.detail {
        body["backend"] = detail;
    }
    if let Some(replay) = broker.replay_usage() {
        body["replay"] = serde_json::json!(replay);
    }
    (code, axum::Json(body)).into_response()
}

async fn agents(_caller: Caller, State(state): State<AppState>) -> Response {
    axum::Json(serde_json::json!({"agents": state.broker().agents()})).into_response()
}

async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such route; the API is under /v1 (see docs/server.md)")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", "this route does not take that method")
}
