//! Jobs SQS rejected permanently (`list_parked`), with redrive of one, the selected, or all.

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use maud::html;
use serde::Deserialize;
use sqs_waiter_client::ListParked;

use crate::layout::{csrf, enc, failed, shell, time_opt};
use crate::Shared;

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Page {
    pub cursor: Option<String>,
    pub msg: Option<String>,
}

pub(crate) async fn page(State(c): State<Shared>, Path(queue): Path<String>, Query(p): Query<Page>) -> Response {
    if !c.reaches("list_parked", Some(&queue)) {
        return super::open::page(&c, &format!("Parked jobs of {queue}"), Some(&queue), p.msg.as_deref());
    }
    let request = ListParked {
        queue: queue.clone(),
        limit: Some(super::jobs::PAGE),
        cursor: p.cursor.clone().filter(|c| !c.is_empty()),
    };
    let reply = match c.client.parked(&request).await {
        Ok(r) => r,
        Err(e) => return failed(&c, &format!("Parked jobs of {queue}"), &e),
    };
    let base = format!("/queues/{}", enc(&queue));
    let body = html! {
        p { strong #parked-count { (reply.count) } " parked in all." }
        form method="post" action={(base) "/parked/redrive"} {
            (csrf(&c))
            table {
                thead { tr {
                    th { @if c.may("redrive", &queue) { input #select-all type="checkbox" aria-label="Select all"; } }
                    th { "job id" } th { "parked" } th { "why" } th.num { "attempts" }
                } }
                tbody {
                    @for j in &reply.jobs {
                        tr {
                            td { @if c.may("redrive", &queue) { input type="checkbox" name="job_id" value=(j.job_id) aria-label={"Select " (j.job_id)}; } }
                            td { a href={(base) "/jobs/" (enc(&j.job_id))} { (j.job_id) } }
                            td { (time_opt(j.parked_at)) }
                            td { (j.error.as_ref().map(|e| format!("{}: {}", e.code, e.message)).unwrap_or_default()) }
                            td.num { (j.attempts.map(|a| a.to_string()).unwrap_or_default()) }
                        }
                    }
                }
            }
            @if c.may("redrive", &queue) && !reply.jobs.is_empty() { button type="submit" { "Redrive selected" } }
        }
        @if c.may("redrive", &queue) && reply.count > 0 {
            form.inline method="post" action={(base) "/parked/redrive"} data-confirm={"Redrive all " (reply.count) " parked jobs?"} {
                (csrf(&c))
                input type="hidden" name="all" value="true";
                button type="submit" { "Redrive all" }
            }
        }
        p.paging {
            @if p.cursor.as_deref().is_some_and(|c| !c.is_empty()) { a href={(base) "/parked"} { "First page" } }
            @if let Some(next) = &reply.cursor { a href={(base) "/parked?cursor=" (enc(next))} rel="next" { "Next page" } }
        }
        p { a href={(base) "/jobs"} { "Jobs of " (queue) } }
    };
    shell(&c, &format!("Parked jobs of {queue}"), p.msg.as_deref(), body).into_response()
}
