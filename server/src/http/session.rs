//! `GET /v1/whoami` and `POST /v1/session`: who a token is, and the live view's one-time sign-in
//! codes (see [`SignInLinks`](crate::auth::SignInLinks)).

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use super::runs::read_body;
use super::{ApiError, AppState, Caller};

/// The caller's tenant (the live view shows it, so a tab says whose runs it shows).
pub(super) async fn whoami(Caller(tenant): Caller) -> Json<Value> {
    Json(json!({ "tenant": &*tenant }))
}

/// Redeem a sign-in code for its tenant's token: `{"code": "asl_…"}` → `{"tenant", "token"}`,
/// once; a used or unknown code is 401.
pub(super) async fn redeem(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Json<Value>, ApiError> {
    let body = read_body(&headers, body, state.inner.max_body_bytes, state.inner.body_timeout).await?;
    let code = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v.get("code").and_then(Value::as_str).map(str::to_string))
        .ok_or_else(|| ApiError::field("code", "send {\"code\": \"asl_…\"}: the code of a sign-in link"))?;
    let (tenant, token) = state.sign_in().redeem(&code).ok_or_else(|| {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "this sign-in link was used already, or is not one of this server's: sign in with the token \
             `agentstream serve` printed",
        )
    })?;
    Ok(Json(json!({ "tenant": &*tenant, "token": token })))
}
