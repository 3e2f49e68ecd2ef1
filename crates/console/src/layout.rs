//! The page shell and the pieces every page uses: the navigation, a flash message, forms that
//! carry the CSRF token, times, and the error page. maud escapes every value it renders.

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use chrono::{DateTime, SecondsFormat, Utc};
use maud::{html, Markup, DOCTYPE};
use sqs_waiter_client::Error;

use crate::guard::CSRF_FIELD;
use crate::Console;

/// A whole page.
pub(crate) fn shell(c: &Console, title: &str, flash: Option<&str>, body: Markup) -> Html<String> {
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                title { (title) " · sqs-waiter" }
                link rel="stylesheet" href="/assets/console.css";
                script src="/assets/console.js" defer {}
            }
            body {
                header {
                    nav aria-label="Main" {
                        a href="/" { strong { "sqs-waiter" } }
                        " "
                        a href="/" { "Queues" }
                        @if let Some(url) = dashboard_url(c) {
                            " "
                            a href=(url) rel="noopener noreferrer" { "CloudWatch dashboard" }
                        }
                        @if c.read_only {
                            " " span.badge { "read-only" }
                        }
                        @match &c.rights {
                            crate::Offered::Class(class, None) => { " " span.badge { (class.as_str()) " alias" } }
                            crate::Offered::Class(class, Some(key)) => {
                                " " span.badge { (class.as_str()) " alias of queue " (key) }
                            }
                            crate::Offered::Nothing => { " " span.badge { "an alias without rights" } }
                            crate::Offered::All => {}
                        }
                    }
                }
                main {
                    h1 { (title) }
                    @if let Some(f) = flash {
                        p.flash role="status" { (f) }
                    }
                    (body)
                }
            }
        }
    };
    Html(markup.into_string())
}

/// CloudWatch's dashboards in the region, filtered to the stack's (`OperatorDashboard` in
/// its generated name).
fn dashboard_url(c: &Console) -> Option<String> {
    let region = c.region.as_deref()?;
    Some(format!(
        "https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}#dashboards?search=OperatorDashboard"
    ))
}

/// The hidden field every form carries.
pub(crate) fn csrf(c: &Console) -> Markup {
    html! { input type="hidden" name=(CSRF_FIELD) value=(c.csrf); }
}

/// A button that POSTs to `action`, asking first when `confirm` is given (the script asks; a
/// page without script posts at once). None under `--read-only`, nor where the alias does not
/// allow the contract action `right` on `queue` (its class, and a queue's alias elsewhere).
pub(crate) fn button(
    c: &Console,
    right: &str,
    queue: &str,
    action: &str,
    label: &str,
    confirm: Option<&str>,
) -> Markup {
    if !c.may(right, queue) {
        return html! {};
    }
    html! {
        form.inline method="post" action=(action) data-confirm=[confirm] {
            (csrf(c))
            button type="submit" { (label) }
        }
    }
}

pub(crate) fn time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

pub(crate) fn time_opt(t: Option<DateTime<Utc>>) -> String {
    t.map(time).unwrap_or_default()
}

/// A call that failed: the function's message, named as the CLI names it.
pub(crate) fn failed(c: &Console, what: &str, e: &Error) -> Response {
    let status = match e {
        Error::InvalidRequest { .. } => StatusCode::BAD_REQUEST,
        _ => StatusCode::BAD_GATEWAY,
    };
    let body = html! {
        p.error role="alert" { (e.to_string()) }
        p { a href="/" { "Back to the queues" } }
    };
    (status, shell(c, what, None, body)).into_response()
}

/// A percent-encoded path segment or query value.
pub(crate) fn enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}
