//! A job opened by its queue and id: the console's page for an alias that may not read the
//! queues or list their jobs (a producer's, `send` or `{queue}--send`, which may `get`,
//! `cancel` and `reschedule` the jobs it knows by id), and for any page of a queue a queue's
//! alias does not reach: the home page, a queue's jobs, parked and bulk-cancel pages, and a
//! job's page are this form instead of a call the function would refuse.

use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::{html, Markup};
use serde::Deserialize;

use super::given;
use crate::layout::{enc, shell};
use crate::{Offered, Shared};

/// `/open?queue=…&job_id=…`, the form's target.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Open {
    pub queue: Option<String>,
    pub job_id: Option<String>,
}

/// The queue a queue's alias is for, read back from the key its name carries: a FIFO queue's
/// `.fifo` is `-fifo` there, so a key ending in `-fifo` is read as a FIFO queue's (a standard
/// queue named `…-fifo` is rare; the field stays editable, and the page says so).
fn alias_queue(c: &Shared) -> Option<String> {
    match &c.rights {
        Offered::Class(_, Some(key)) => Some(match key.strip_suffix("-fifo") {
            Some(base) => format!("{base}.fifo"),
            None => key.clone(),
        }),
        _ => None,
    }
}

/// The form: a queue and a job id. The queue starts as the alias's own, or else `queue`.
pub(crate) fn form(c: &Shared, queue: Option<&str>) -> Markup {
    let own = alias_queue(c);
    let read_back = own.as_deref().is_some_and(|q| q.ends_with(".fifo"));
    let queue = own.or_else(|| queue.map(str::to_owned)).unwrap_or_default();
    html! {
        form.filters #open method="get" action="/open" {
            label { "queue" input name="queue" value=(queue) required; }
            label { "job id" input name="job_id" required; }
            button type="submit" { "Open" }
        }
        @if read_back {
            p.muted { "The alias's name writes a FIFO queue's .fifo as -fifo: correct the queue if it is not a FIFO queue." }
        }
    }
}

/// The page in place of one the alias may not read: why, then the form.
pub(crate) fn page(c: &Shared, title: &str, queue: Option<&str>, flash: Option<&str>) -> Response {
    let body = html! {
        p.muted #open-why {
            @match &c.rights {
                Offered::Nothing => "This alias has no rights: the function refuses every call through it.",
                Offered::Class(class, Some(key)) if queue.is_some_and(|q| !crate::on_its_queue(key, q)) => {
                    "This is the " (class.as_str()) " alias of queue " (key) ": it reaches no other queue."
                }
                _ => "This alias may not list jobs: open one by its queue and id, and cancel or reschedule it there.",
            }
        }
        (form(c, queue))
    };
    shell(c, title, flash, body).into_response()
}

/// Sends the browser to the job's page, or back to the form naming the field left empty.
pub(crate) async fn open(State(c): State<Shared>, Query(o): Query<Open>) -> Response {
    let (queue, id) = match (given(&o.queue), given(&o.job_id)) {
        (Some(q), Some(id)) => (q, id),
        (None, _) => return missing(&c, None, "queue: give the job's queue"),
        (Some(q), None) => return missing(&c, Some(q), "job_id: give the job's id"),
    };
    let to = format!("/queues/{}/jobs/{}", enc(queue), enc(id));
    (StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response()
}

fn missing(c: &Shared, queue: Option<&str>, e: &str) -> Response {
    let body = html! { p.error role="alert" { (e) } (form(c, queue)) };
    (StatusCode::BAD_REQUEST, shell(c, "Open a job", None, body)).into_response()
}
