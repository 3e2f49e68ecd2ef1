//! The stylesheet and the script, inside the binary: the console works offline.

use axum::extract::Path;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

const CSS: &str = include_str!("../assets/console.css");
const JS: &str = include_str!("../assets/console.js");

pub(crate) async fn asset(Path(name): Path<String>) -> Response {
    let (body, kind) = match name.as_str() {
        "console.css" => (CSS, "text/css; charset=utf-8"),
        "console.js" => (JS, "text/javascript; charset=utf-8"),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    (
        [(header::CONTENT_TYPE, kind), (header::CACHE_CONTROL, "no-cache")],
        body,
    )
        .into_response()
}
