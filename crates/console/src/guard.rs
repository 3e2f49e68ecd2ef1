//! The one layer every request passes before a route is chosen (DESIGN "The console",
//! security): a page that forgets a check cannot exist.
//! - `Host` must be `127.0.0.1:P` or `localhost:P`: a hostile page's DNS rebinding sends its own.
//! - The token: `?token=T` on the first visit sets the session cookie and redirects to the
//!   same path without it; after that the cookie must carry it. Else 403.
//! - A POST: refused under `--read-only`; refused when its `Origin` (or `Sec-Fetch-Site`)
//!   says another site sent it; refused without the form's CSRF token. The body is read here,
//!   up to `MAX_FORM_BYTES`, and handed on.

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::{Shared, COOKIE};

/// The largest form the console takes (a redrive of 1000 selected ids fits).
const MAX_FORM_BYTES: usize = 256 * 1024;
/// The form field that carries the CSRF token.
pub(crate) const CSRF_FIELD: &str = "csrf";

fn refused(why: &'static str) -> Response {
    (
        StatusCode::FORBIDDEN,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        why,
    )
        .into_response()
}

pub(crate) async fn guard(State(c): State<Shared>, request: Request, next: Next) -> Response {
    let origins = [format!("127.0.0.1:{}", c.port), format!("localhost:{}", c.port)];
    let host = request.headers().get(header::HOST).and_then(|h| h.to_str().ok());
    if !host.is_some_and(|h| origins.iter().any(|o| o == h)) {
        return refused("403: this console answers only to 127.0.0.1 and localhost on its own port");
    }
    if let Some(token) = query_value(request.uri().query(), "token") {
        if token != c.token {
            return refused("403: wrong token");
        }
        // Keep it in the session cookie and take it out of the address bar and history.
        let cookie = format!("{COOKIE}={}; Path=/; HttpOnly; SameSite=Strict", c.token);
        let mut response = (
            StatusCode::SEE_OTHER,
            [(header::LOCATION, request.uri().path().to_owned())],
        )
            .into_response();
        if let Ok(v) = HeaderValue::from_str(&cookie) {
            response.headers_mut().insert(header::SET_COOKIE, v);
        }
        return response;
    }
    if cookie_value(request.headers(), COOKIE) != Some(c.token.as_str()) {
        return refused("403: open the console with the address it printed (it carries the token)");
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return check_post(&c, &origins, request, next).await;
    }
    next.run(request).await
}

async fn check_post(c: &Shared, origins: &[String; 2], request: Request, next: Next) -> Response {
    if c.read_only {
        return refused("403: the console is read-only (--read-only)");
    }
    let headers = request.headers();
    let origin_ok = headers
        .get(header::ORIGIN)
        .and_then(|o| o.to_str().ok())
        .is_none_or(|o| origins.iter().any(|own| o == format!("http://{own}")));
    let site_ok = headers
        .get("sec-fetch-site")
        .and_then(|s| s.to_str().ok())
        .is_none_or(|s| s == "same-origin" || s == "none");
    if !origin_ok || !site_ok {
        return refused("403: a change must come from the console's own pages");
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = to_bytes(body, MAX_FORM_BYTES).await else {
        return refused("403: the form is too large");
    };
    let fields: Vec<(String, String)> = serde_urlencoded::from_bytes(&bytes).unwrap_or_default();
    if !fields.iter().any(|(k, v)| k == CSRF_FIELD && *v == c.csrf) {
        return refused("403: the form's CSRF token is missing or wrong; reload the page");
    }
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

fn query_value<'a>(query: Option<&'a str>, name: &str) -> Option<&'a str> {
    query?
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

fn cookie_value<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|h| h.to_str().ok())
        .flat_map(|h| h.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}
