//! The changes, each a POST the guard has already let through (token, origin, CSRF, not
//! read-only): parse the form, call the client, and send the browser back to the page it came
//! from with what happened (`?msg=`), or show the function's refusal.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use sqs_waiter_client::{CancelMany, Pause, RedriveAll, Reschedule, Resume};

use crate::layout::{enc, failed};
use crate::pages::jobs::{parse_tags, parse_time, Filters};
use crate::Shared;

fn fields(body: &Bytes) -> Vec<(String, String)> {
    serde_urlencoded::from_bytes(body).unwrap_or_default()
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(k, v)| k == name && !v.trim().is_empty())
        .map(|(_, v)| v.trim())
}

/// Back to `path`, with `msg` shown at its top.
fn back(path: &str, msg: &str) -> Response {
    let to = format!("{path}{}msg={}", if path.contains('?') { '&' } else { '?' }, enc(msg));
    (StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response()
}

pub(crate) async fn pause_queue(State(c): State<Shared>, Path(queue): Path<String>) -> Response {
    match c.client.pause(&Pause::queue(&queue)).await {
        Ok(_) => back("/", &format!("Paused queue {queue}.")),
        Err(e) => failed(&c, "Pause", &e),
    }
}

pub(crate) async fn resume_queue(State(c): State<Shared>, Path(queue): Path<String>) -> Response {
    match c.client.resume(&Resume::queue(&queue)).await {
        Ok(_) => back("/", &format!("Resumed queue {queue}.")),
        Err(e) => failed(&c, "Resume", &e),
    }
}

/// Cancels what the filters select, page by page until the function says done.
pub(crate) async fn cancel_many(State(c): State<Shared>, Path(queue): Path<String>, body: Bytes) -> Response {
    let form = fields(&body);
    let text = |name: &str| field(&form, name).map(str::to_owned);
    let filters = Filters {
        from: text("from"),
        to: text("to"),
        prefix: text("prefix"),
        tags: text("tags"),
        ..Filters::default()
    };
    let (from, to) = match (parse_time("from", &filters.from), parse_time("to", &filters.to)) {
        (Ok(f), Ok(t)) => (f, t),
        (Err(e), _) | (_, Err(e)) => return back(&format!("/queues/{}/jobs", enc(&queue)), &e),
    };
    let tags = match parse_tags(&filters.tags) {
        Ok(t) => t,
        Err(e) => return back(&format!("/queues/{}/jobs", enc(&queue)), &e),
    };
    let mut request = CancelMany {
        queue: queue.clone(),
        prefix: filters.prefix.clone(),
        tags,
        from,
        to,
        ..CancelMany::default()
    };
    let (mut cancelled, mut in_flight) = (0, 0);
    loop {
        match c.client.cancel_many(&request).await {
            Ok(r) => {
                cancelled += r.cancelled;
                in_flight += r.dispatching + r.maybe_delivered;
                match r.cursor {
                    Some(next) => request.cursor = Some(next),
                    None => break,
                }
            }
            Err(e) => return failed(&c, "Cancel", &e),
        }
    }
    let msg = format!("Cancelled {cancelled} jobs; {in_flight} were being sent or may arrive.");
    back(&format!("/queues/{}/jobs?{}", enc(&queue), filters.query(None)), &msg)
}

/// One id, the ids ticked (`job_id`, repeated), or `all=true`.
pub(crate) async fn redrive(State(c): State<Shared>, Path(queue): Path<String>, body: Bytes) -> Response {
    let form = fields(&body);
    let parked = format!("/queues/{}/parked", enc(&queue));
    if field(&form, "all") == Some("true") {
        let (mut redriven, mut cursor) = (0, None);
        loop {
            match c.client.redrive_all(&RedriveAll::page(&queue, cursor)).await {
                Ok(r) => {
                    redriven += r.redriven + r.duplicates;
                    match r.cursor {
                        Some(next) => cursor = Some(next),
                        None => break,
                    }
                }
                Err(e) => return failed(&c, "Redrive", &e),
            }
        }
        return back(&parked, &format!("Redrove {redriven} jobs."));
    }
    let ids: Vec<String> = form
        .iter()
        .filter(|(k, v)| k == "job_id" && !v.is_empty())
        .map(|(_, v)| v.clone())
        .collect();
    if ids.is_empty() {
        return back(&parked, "Select the jobs to redrive first.");
    }
    match c.client.redrive_many(&queue, &ids).await {
        Ok(results) => {
            let ok = results.iter().filter(|r| r.is_ok()).count();
            let failed: Vec<String> = results
                .iter()
                .filter_map(|r| r.as_ref().err().map(|f| f.message.clone()))
                .collect();
            let mut msg = format!("Redrove {ok} of {} jobs.", ids.len());
            if !failed.is_empty() {
                msg.push_str(&format!(" Refused: {}", failed.join("; ")));
            }
            back(&parked, &msg)
        }
        Err(e) => failed(&c, "Redrive", &e),
    }
}

/// cancel, pause, resume, trigger, reschedule (`at`) or redrive of one job.
pub(crate) async fn job_action(
    State(c): State<Shared>,
    Path((queue, id, action)): Path<(String, String, String)>,
    body: Bytes,
) -> Response {
    let page = format!("/queues/{}/jobs/{}", enc(&queue), enc(&id));
    let outcome = match action.as_str() {
        "cancel" => c.client.cancel(&queue, &id).await.map(|r| r.status.as_str().to_owned()),
        "trigger" => c
            .client
            .trigger(&queue, &id)
            .await
            .map(|r| r.status.as_str().to_owned()),
        "redrive" => c
            .client
            .redrive(&queue, &id)
            .await
            .map(|r| r.status.as_str().to_owned()),
        "pause" => c
            .client
            .pause(&Pause::job(&queue, &id))
            .await
            .map(|r| r.status.as_str().to_owned()),
        "resume" => c
            .client
            .resume(&Resume::job(&queue, &id))
            .await
            .map(|r| r.status.as_str().to_owned()),
        "reschedule" => {
            let form = fields(&body);
            let at = match parse_time("at", &field(&form, "at").map(str::to_owned)) {
                Ok(Some(t)) => t,
                Ok(None) => return back(&page, "at: give the new time"),
                Err(e) => return back(&page, &e),
            };
            c.client
                .reschedule(&Reschedule::to(&queue, &id, at))
                .await
                .map(|r| r.status.as_str().to_owned())
        }
        _ => return crate::pages::not_found(State(c)).await,
    };
    match outcome {
        Ok(status) => back(&page, &format!("{action}: {status}")),
        Err(e) => failed(&c, &format!("Job {id}"), &e),
    }
}
