//! The pages: each reads through the client and renders the contract's replies.

pub(crate) mod job;
pub(crate) mod jobs;
pub(crate) mod open;
pub(crate) mod parked;
pub(crate) mod queues;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::html;

use crate::layout::shell;
use crate::Shared;

/// A path no page has (behind the guard, as every path is).
pub(crate) async fn not_found(State(c): State<Shared>) -> Response {
    let body = html! { p { "No such page. " a href="/" { "Back to the queues" } } };
    (StatusCode::NOT_FOUND, shell(&c, "Not found", None, body)).into_response()
}

/// `?msg=` after a change, shown once at the top of the page it lands on.
#[derive(Debug, Default, serde::Deserialize)]
pub(crate) struct Flash {
    pub msg: Option<String>,
}

/// A form field as given: trimmed, `None` when empty.
pub(crate) fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}
