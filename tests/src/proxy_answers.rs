//! The answers the fault proxy makes up instead of forwarding: AWS-shaped errors.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

/// A whole-call error as AWS sends it: JSON `__type`, and SQS's query-compatible header.
pub(super) fn aws_error(status: u16, sqs: bool, code: &str) -> Response {
    let mut r = (
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        json!({"__type": code, "message": "injected by the fault proxy"}).to_string(),
    )
        .into_response();
    r.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/x-amz-json-1.0"));
    if sqs {
        if let Ok(v) = HeaderValue::from_str(&format!("{code};Sender")) {
            r.headers_mut().insert("x-amzn-query-error", v);
        }
    }
    r
}

/// A `BatchExecuteStatement` answered with HTTP 200 and `code` on each of its statements, as
/// DynamoDB reports statements it did not apply.
pub(super) fn statement_errors(body: &[u8], code: &str) -> Response {
    let statements = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|b| b["Statements"].as_array().map(Vec::len))
        .unwrap_or(0);
    let error = json!({"Error": {"Code": code, "Message": "forced by the fault proxy"}});
    let mut r = (
        StatusCode::OK,
        json!({"Responses": vec![error; statements]}).to_string(),
    )
        .into_response();
    r.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/x-amz-json-1.0"));
    r
}

/// A fixed answer for every request of one operation.
#[derive(Debug, Clone)]
pub enum Forced {
    Error {
        status: u16,
        /// The JSON `__type`.
        code: String,
        /// SQS's query-compatible `x-amzn-query-error` value, e.g. `KMS.DisabledException;Sender`.
        query_error: Option<String>,
        /// Merged into the JSON body (e.g. `CancellationReasons`).
        extra: Option<Value>,
    },
    /// Accept and never answer.
    Hang,
    /// Answer the next `remaining` `BatchExecuteStatement` calls, without forwarding them, with
    /// this error `code` for each of their statements (HTTP 200, as DynamoDB reports a statement
    /// it did not apply); later calls go through.
    StatementErrors { code: String, remaining: usize },
}
