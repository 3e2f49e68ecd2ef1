//! One job as `get` shows it: stored, parked, or what history knows of it. Its body and
//! attributes, its times and attempts; for a series its repetition and next 10 occurrences
//! (`preview`); and what can be done with it.

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use maud::{html, Markup};
use sqs_waiter_client::{JobReply, JobStatus, Preview};

use super::Flash;
use crate::layout::{button, csrf, enc, failed, shell, time, time_opt};
use crate::Shared;

pub(crate) async fn page(
    State(c): State<Shared>,
    Path((queue, id)): Path<(String, String)>,
    Query(f): Query<Flash>,
) -> Response {
    if !c.reaches("get", Some(&queue)) {
        return super::open::page(&c, &format!("Job {id}"), Some(&queue), f.msg.as_deref());
    }
    let job = match c.client.get(&queue, &id).await {
        Ok(j) => j,
        Err(e) => return failed(&c, &format!("Job {id}"), &e),
    };
    let next = if job.repeat.is_some() && job.status == JobStatus::Scheduled {
        let request = Preview {
            queue: Some(queue.clone()),
            job_id: Some(id.clone()),
            count: Some(10),
            ..Preview::default()
        };
        Some(c.client.preview(&request).await.map_err(|e| e.to_string()))
    } else {
        None
    };
    let body = html! {
        (facts(&job))
        @if let Some(next) = next {
            h2 { "Next occurrences" }
            @match next {
                Ok(p) => ol #occurrences {
                    @for o in &p.occurrences {
                        li { (o.local.to_rfc3339()) " (" (time(o.at)) ")" @if o.shifted { " " span.badge { "moved by a clock change" } } }
                    }
                },
                Err(e) => p.error { (e) },
            }
        }
        @if let Some(b) = &job.message_body {
            h2 { "Body" }
            pre #body { (b) }
        }
        @if let Some(attrs) = job.message_attributes.as_ref().filter(|a| !a.is_empty()) {
            h2 { "Attributes" }
            table {
                tr { th { "name" } th { "type" } th { "value" } }
                @for (name, a) in attrs {
                    tr { td { (name) } td { (a.data_type) } td { (a.string_value.clone().or_else(|| a.binary_value.clone()).unwrap_or_default()) } }
                }
            }
        }
        (actions(&c, &queue, &job))
        @if c.reaches("list", Some(&queue)) {
            p { a href={"/queues/" (enc(&queue)) "/jobs"} { "All jobs of " (queue) } }
        } @else {
            h2 { "Another job" }
            (super::open::form(&c, Some(&queue)))
        }
    };
    shell(&c, &format!("Job {id}"), f.msg.as_deref(), body).into_response()
}

fn facts(j: &JobReply) -> Markup {
    let row = |k: &str, v: String| html! { @if !v.is_empty() { tr { th { (k) } td { (v) } } } };
    let opt = |v: Option<String>| v.unwrap_or_default();
    html! {
        table #facts {
            (row("status", j.status.as_str().to_owned()))
            (row("queue", j.queue.clone()))
            (row("due", time_opt(j.perform_at)))
            (row("paused since", if j.paused == Some(true) { time_opt(j.paused_at) } else { String::new() }))
            (row("repeats", opt(j.repeat.as_ref().map(|r| r.describe(j.time_zone.as_deref())))))
            (row("occurrences sent", opt(j.occurrences.map(|o| o.to_string()))))
            (row("time zone", opt(j.time_zone.clone())))
            (row("version", opt(j.version.map(|v| v.to_string()))))
            (row("priority", opt(j.priority.map(|v| v.to_string()))))
            (row("weight", opt(j.weight.map(|v| v.to_string()))))
            (row("attempt", opt(j.attempt.map(|v| v.to_string()))))
            (row("attempts made", opt(j.attempts.map(|v| v.to_string()))))
            (row("enqueued", time_opt(j.enqueued_at)))
            (row("expires", time_opt(j.expires_at)))
            (row("sent", time_opt(j.sent_at)))
            (row("cancelled", time_opt(j.cancelled_at)))
            (row("expired", time_opt(j.expired_at)))
            (row("parked", time_opt(j.parked_at)))
            (row("parked because", opt(j.error.as_ref().map(|e| format!("{}: {}", e.code, e.message)))))
            (row("reason", opt(j.reason.clone())))
            (row("message group", opt(j.message_group_id.clone())))
            (row("replay of", opt(j.replay_of.clone())))
            (row("trace header", opt(j.trace_header.clone())))
            (row("tags", super::jobs::tags_text(j.tags.as_ref())))
        }
    }
}

fn actions(c: &Shared, queue: &str, j: &JobReply) -> Markup {
    if c.read_only {
        return html! {};
    }
    let at = |action: &str| format!("/queues/{}/jobs/{}/{action}", enc(queue), enc(&j.job_id));
    html! {
        @match j.status {
            JobStatus::Scheduled => {
                h2 { "Actions" }
                p {
                    (button(c, "trigger", queue, &at("trigger"), "Run now", Some("Send it now?")))
                    @if j.paused == Some(true) {
                        (button(c, "resume", queue, &at("resume"), "Resume", None))
                    } @else {
                        (button(c, "pause", queue, &at("pause"), "Pause", None))
                    }
                    (button(c, "cancel", queue, &at("cancel"), "Cancel", Some("Cancel this job?")))
                }
                @if c.may("reschedule", queue) {
                    form.filters method="post" action=(at("reschedule")) {
                        (csrf(c))
                        label { "due at (RFC 3339, or YYYY-MM-DDTHH:MM in UTC)" input name="at" required placeholder="2026-12-01T09:00:00Z"; }
                        button type="submit" { "Reschedule" }
                    }
                }
            }
            JobStatus::Parked => {
                h2 { "Actions" }
                p { (button(c, "redrive", queue, &at("redrive"), "Redrive", None)) (button(c, "cancel", queue, &at("cancel"), "Cancel", Some("Cancel this job?"))) }
            }
            _ => {}
        }
    }
}
