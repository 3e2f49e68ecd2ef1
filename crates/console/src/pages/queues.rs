//! The queues the function serves (`queues`), each with its `stats`: stored, overdue, parked,
//! paused, and the due-time histogram.

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use maud::html;
use sqs_waiter_client::{Stats, StatsReply};

use super::Flash;
use crate::layout::{button, enc, failed, shell, time, time_opt};
use crate::Shared;

pub(crate) async fn page_of(c: &Shared, flash: Option<&str>) -> Response {
    if !c.reaches("queues", None) {
        return super::open::page(c, "Open a job", None, flash);
    }
    let queues = match c.client.queues().await {
        Ok(q) => q.queues,
        Err(e) => return failed(c, "Queues", &e),
    };
    let mut stats: Vec<(sqs_waiter_client::QueueInfo, Result<StatsReply, String>)> = Vec::new();
    for q in queues {
        let s = c
            .client
            .stats(&Stats {
                queue: q.queue.clone(),
                buckets: Some(24),
                bucket_s: Some(3600),
                formats: None,
            })
            .await
            .map_err(|e| e.to_string());
        stats.push((q, s));
    }
    let body = html! {
        p.muted {
            label { input #refresh type="checkbox"; " refresh every 10 s" }
        }
        @for (q, s) in &stats {
            section aria-labelledby={"q-" (q.queue)} {
                h2 #{"q-" (q.queue)} {
                    a href={"/queues/" (enc(&q.queue)) "/jobs"} { (q.queue) }
                    @if q.fifo { " " span.badge { "FIFO" } }
                    @if q.paused { " " span.badge { "PAUSED since " (time_opt(q.paused_at)) } }
                }
                @match s {
                    Ok(s) => {
                        table {
                            tr {
                                th.num { "stored" } th.num { "overdue" } th.num { "parked" }
                                th.num { "paused jobs" } th { "next due" } th { "due in the next 24 h" }
                            }
                            tr {
                                td.num { (s.scheduled) }
                                td.num { (s.overdue) }
                                td.num { a href={"/queues/" (enc(&q.queue)) "/parked"} { (s.parked) } }
                                td.num { (s.paused_jobs) }
                                td { (s.next_due.map(time).unwrap_or_else(|| "—".into())) }
                                td { (crate::svg::histogram(&s.histogram)) }
                            }
                        }
                    }
                    Err(e) => { p.error { (e) } }
                }
                p {
                    a href={"/queues/" (enc(&q.queue)) "/jobs"} { "Jobs" } " · "
                    a href={"/queues/" (enc(&q.queue)) "/parked"} { "Parked" } " "
                    @if q.paused {
                        (button(c, "resume", &q.queue, &format!("/queues/{}/resume", enc(&q.queue)), "Resume queue", None))
                    } @else {
                        (button(c, "pause", &q.queue, &format!("/queues/{}/pause", enc(&q.queue)), "Pause queue",
                            Some("Pause the queue? Nothing of it is sent until it is resumed.")))
                    }
                }
            }
        }
    };
    shell(c, "Queues", flash, body).into_response()
}

pub(crate) async fn page(State(c): State<Shared>, Query(f): Query<Flash>) -> Response {
    page_of(&c, f.msg.as_deref()).await
}
