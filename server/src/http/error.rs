//! Every refusal is a JSON body naming what to fix:
//! `{"error": "<code>", "message": "<for people>", "field": "<the offending field>"?}`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::broker::BrokerError;

/// An HTTP error response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The status.
    pub status: StatusCode,
    /// A stable machine-readable code (`unauthorized`, `not_found`, `invalid_field`, …).
    pub code: &'static str,
    /// What is wrong and what to do, for people.
    pub message: String,
    /// The request field at fault (a JSON key, a query parameter or a header name).
    pub field: Option<String>,
}

#[derive(Serialize)]
struct Body<'a> {
    error: &'a str,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<&'a str>,
}

impl ApiError {
    /// An error without a field.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError { status, code, message: message.into(), field: None }
    }

    /// A 400 `invalid_field` error for `field`.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            code: "invalid_field",
            message: message.into(),
            field: Some(field.into()),
        }
    }

    /// With `field` set.
    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    /// 401.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message).with_field("Authorization")
    }

    /// 404 for a run (also for another tenant's: its existence is not revealed).
    pub fn run_not_found() -> Self {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such run")
    }

    /// A broker refusal. `after_field` names where the resume point came from.
    pub fn broker(e: BrokerError, after_field: &str) -> Self {
        let message = e.to_string();
        match e {
            BrokerError::NotFound => ApiError::run_not_found(),
            BrokerError::Invalid { field, message } => ApiError::field(field, message),
            BrokerError::TooManyRuns { .. }
            | BrokerError::TooManySubscribers { .. }
            | BrokerError::TooManyStreams { .. } => {
                ApiError::new(StatusCode::TOO_MANY_REQUESTS, "limit_reached", message)
            }
            BrokerError::Unavailable(_) => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "agent_unavailable", message).with_field("agent")
            }
            BrokerError::ShuttingDown => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "shutting_down", message),
            BrokerError::Backend(_) => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "backend_unavailable", message),
            BrokerError::CancelNotDelivered(_) => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "cancel_not_delivered", message)
            }
            BrokerError::AfterBeyondEnd { .. } => ApiError::field(after_field, message),
            // Callers answer `Complete` with 204 themselves; as an error it is a conflict.
            BrokerError::Complete => ApiError::new(StatusCode::CONFLICT, "stream_complete", message),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&Body { error: self.code, message: &self.message, field: self.field.as_deref() })
            .expect("error bodies serialize");
        let mut response = (self.status, [(header::CONTENT_TYPE, "application/json")], body).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"agentstream\""));
        }
        // When trying again makes sense, and how soon (seconds): a limit is usually free again
        // within a second (a stream's old connection noticed gone, a run ending); an unreachable
        // backend or a draining server takes longer.
        let retry_after = match self.code {
            "limit_reached" => Some("1"),
            "backend_unavailable" | "cancel_not_delivered" | "shutting_down" => Some("5"),
            _ => None,
        };
        if let Some(seconds) = retry_after {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static(seconds));
        }
        response
    }
}
