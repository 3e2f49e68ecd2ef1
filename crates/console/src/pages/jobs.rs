//! A queue's jobs, filtered as `list` filters them (status, from, to, prefix, tags) with an id
//! lookup,
//! a page of `PAGE` at a time by cursor; and the confirmation of a bulk cancel, which first
//! shows how many jobs the filters select.

use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, NaiveDateTime, Utc};
use maud::html;
use serde::Deserialize;
use sqs_waiter_client::{List, ListStatus, Tags, MAX_PAGE_LIMIT};

use super::given;
use crate::layout::{csrf, enc, failed, shell, time_opt};
use crate::Shared;

/// Jobs per page.
pub(crate) const PAGE: usize = 50;
/// A bulk cancel's count reads at most this many pages of `MAX_PAGE_LIMIT` jobs.
const MAX_COUNT_PAGES: usize = 20;

/// The filters, as the form and the links carry them.
#[derive(Debug, Default, Clone, Deserialize)]
pub(crate) struct Filters {
    pub status: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    pub prefix: Option<String>,
    /// `key=value` pairs, comma-separated: jobs carrying every one (`list`'s `tags`).
    pub tags: Option<String>,
    pub id: Option<String>,
    pub cursor: Option<String>,
    pub msg: Option<String>,
}

/// RFC 3339, or a browser's `YYYY-MM-DDTHH:MM[:SS]` read as UTC.
pub(crate) fn parse_time(field: &str, v: &Option<String>) -> Result<Option<DateTime<Utc>>, String> {
    let Some(s) = given(v) else { return Ok(None) };
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(Some(t.to_utc()));
    }
    ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())
        .map(|n| Some(n.and_utc()))
        .ok_or_else(|| format!("{field}: {s:?} is not a time (RFC 3339, or YYYY-MM-DDTHH:MM in UTC)"))
}

/// `key=value, key=value` as `list`'s `tags`; `None` when empty. A pair without `=` is refused
/// by name (the function checks the lengths and the count).
pub(crate) fn parse_tags(v: &Option<String>) -> Result<Option<Tags>, String> {
    let Some(s) = given(v) else { return Ok(None) };
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
            _ => Err(format!("tags: {pair:?} is not key=value")),
        })
        .collect::<Result<Tags, String>>()
        .map(|t| (!t.is_empty()).then_some(t))
}

/// A job's tags as the page shows them: `key=value`, comma-separated.
pub(crate) fn tags_text(tags: Option<&Tags>) -> String {
    tags.map(|t| t.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", "))
        .unwrap_or_default()
}

impl Filters {
    pub(crate) fn status(&self) -> ListStatus {
        match given(&self.status) {
            Some("parked") => ListStatus::Parked,
            _ => ListStatus::Scheduled,
        }
    }

    /// The `list` request these filters make, or which filter does not read.
    pub(crate) fn list(&self, queue: &str, limit: usize) -> Result<List, String> {
        Ok(List {
            queue: queue.to_owned(),
            from: parse_time("from", &self.from)?,
            to: parse_time("to", &self.to)?,
            prefix: given(&self.prefix).map(str::to_owned),
            tags: parse_tags(&self.tags)?,
            status: Some(self.status()),
            limit: Some(limit),
            cursor: given(&self.cursor).map(str::to_owned),
            ..List::default()
        })
    }

    /// The query string of these filters (without the cursor, with `cursor` if given).
    pub(crate) fn query(&self, cursor: Option<&str>) -> String {
        let mut parts = vec![format!("status={}", self.status().as_str())];
        for (k, v) in [
            ("from", &self.from),
            ("to", &self.to),
            ("prefix", &self.prefix),
            ("tags", &self.tags),
        ] {
            if let Some(v) = given(v) {
                parts.push(format!("{k}={}", enc(v)));
            }
        }
        if let Some(c) = cursor {
            parts.push(format!("cursor={}", enc(c)));
        }
        parts.join("&")
    }

    /// Whether they select jobs for `cancel_many` (it needs a prefix, tags or a time).
    pub(crate) fn selects(&self) -> bool {
        [&self.from, &self.to, &self.prefix, &self.tags]
            .iter()
            .any(|v| given(v).is_some())
    }
}

pub(crate) async fn page(State(c): State<Shared>, Path(queue): Path<String>, Query(f): Query<Filters>) -> Response {
    if let Some(id) = given(&f.id) {
        let to = format!("/queues/{}/jobs/{}", enc(&queue), enc(id));
        return (StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response();
    }
    if !c.reaches("list", Some(&queue)) {
        return super::open::page(&c, &format!("Jobs of {queue}"), Some(&queue), f.msg.as_deref());
    }
    let request = match f.list(&queue, PAGE) {
        Ok(r) => r,
        Err(e) => return bad_filter(&c, &queue, &e),
    };
    let reply = match c.client.list(&request).await {
        Ok(r) => r,
        Err(e) => return failed(&c, &format!("Jobs of {queue}"), &e),
    };
    let base = format!("/queues/{}/jobs", enc(&queue));
    let body = html! {
        (filter_form(&base, &f))
        p.muted {
            (reply.jobs.len()) " jobs on this page"
            // A tag search reads the jobs it passes over, at most 2,000 a shard a page: a rare
            // tag may take a few pages to find its jobs.
            @if let Some(n) = reply.scanned { " (" (n) " stored jobs read to find them)" }
        }
        table {
            thead { tr { th { "job id" } th { "due" } th { "state" } th { "repeats" } th { "tags" } th.num { "priority" } th.num { "version" } } }
            tbody {
                @for j in &reply.jobs {
                    tr {
                        td { a href={(base) "/" (enc(&j.job_id))} { (j.job_id) } }
                        td { (time_opt(j.perform_at)) }
                        td {
                            (j.status.as_str())
                            @if j.paused == Some(true) { " " span.badge { "paused" } }
                        }
                        td { (j.repeat.as_ref().map(|r| r.describe(j.time_zone.as_deref())).unwrap_or_default()) }
                        td { (tags_text(j.tags.as_ref())) }
                        td.num { (j.priority.map(|p| p.to_string()).unwrap_or_default()) }
                        td.num { (j.version.map(|v| v.to_string()).unwrap_or_default()) }
                    }
                }
            }
        }
        p.paging {
            @if given(&f.cursor).is_some() { a href={(base) "?" (f.query(None))} { "First page" } }
            @if let Some(next) = &reply.cursor { a href={(base) "?" (f.query(Some(next)))} rel="next" { "Next page" } }
        }
        @if f.status() == ListStatus::Scheduled && c.may("cancel_many", &queue) {
            @if f.selects() {
                p { a href={"/queues/" (enc(&queue)) "/cancel?" (f.query(None))} { "Cancel the jobs these filters select…" } }
            } @else {
                p.muted { "To cancel many jobs, filter by prefix, tags or time first." }
            }
        }
    };
    shell(&c, &format!("Jobs of {queue}"), f.msg.as_deref(), body).into_response()
}

fn filter_form(base: &str, f: &Filters) -> maud::Markup {
    let v = |o: &Option<String>| o.clone().unwrap_or_default();
    html! {
        form.filters method="get" action=(base) {
            label { "status"
                select name="status" {
                    option value="scheduled" selected[f.status() == ListStatus::Scheduled] { "scheduled" }
                    option value="parked" selected[f.status() == ListStatus::Parked] { "parked" }
                }
            }
            label { "due from" input name="from" value=(v(&f.from)) placeholder="2026-12-01T09:00:00Z"; }
            label { "due to" input name="to" value=(v(&f.to)) placeholder="2026-12-02T09:00:00Z"; }
            label { "id prefix" input name="prefix" value=(v(&f.prefix)); }
            label { "tags" input name="tags" value=(v(&f.tags)) placeholder="customer=42, campaign=xmas"; }
            button type="submit" { "Filter" }
        }
        form.filters method="get" action=(base) {
            label { "job id" input name="id" required; }
            button type="submit" { "Open" }
        }
    }
}

fn bad_filter(c: &Shared, queue: &str, e: &str) -> Response {
    let body =
        html! { p.error role="alert" { (e) } p { a href={"/queues/" (enc(queue)) "/jobs"} { "Clear the filters" } } };
    (
        StatusCode::BAD_REQUEST,
        shell(c, &format!("Jobs of {queue}"), None, body),
    )
        .into_response()
}

/// How many scheduled jobs the filters select, read page by page (at most `MAX_COUNT_PAGES`);
/// `true` when the count stopped there.
pub(crate) async fn count(c: &Shared, queue: &str, f: &Filters) -> Result<(usize, bool), Response> {
    // `cancel_many` cancels scheduled jobs: count those, whatever the list showed.
    let mut f = Filters {
        cursor: None,
        status: None,
        ..f.clone()
    };
    let mut n = 0;
    for _ in 0..MAX_COUNT_PAGES {
        let request = f.list(queue, MAX_PAGE_LIMIT).map_err(|e| bad_filter(c, queue, &e))?;
        let reply = c.client.list(&request).await.map_err(|e| failed(c, "Cancel", &e))?;
        n += reply.jobs.len();
        match reply.cursor {
            Some(next) => f.cursor = Some(next),
            None => return Ok((n, false)),
        }
    }
    Ok((n, true))
}

pub(crate) async fn confirm_cancel(
    State(c): State<Shared>,
    Path(queue): Path<String>,
    Query(f): Query<Filters>,
) -> Response {
    if !f.selects() {
        return bad_filter(&c, &queue, "cancel: give a prefix, tags, a from or a to");
    }
    // The count reads with `list`: an alias that may not list cannot cancel many either.
    if !c.reaches("list", Some(&queue)) {
        return super::open::page(&c, &format!("Cancel jobs of {queue}"), Some(&queue), None);
    }
    let (n, capped) = match count(&c, &queue, &f).await {
        Ok(n) => n,
        Err(r) => return r,
    };
    let v = |o: &Option<String>| o.clone().unwrap_or_default();
    let body = html! {
        p { (if capped { "At least " } else { "" }) strong #match-count { (n) } " scheduled jobs of " (queue) " match these filters." }
        @if !c.may("cancel_many", &queue) {
            p.muted { "The console is read-only, or its alias may not cancel many jobs." }
        } @else {
            form method="post" action={"/queues/" (enc(&queue)) "/cancel"} data-confirm={"Cancel " (n) " jobs?"} {
                (csrf(&c))
                input type="hidden" name="from" value=(v(&f.from));
                input type="hidden" name="to" value=(v(&f.to));
                input type="hidden" name="prefix" value=(v(&f.prefix));
                input type="hidden" name="tags" value=(v(&f.tags));
                button type="submit" { "Cancel these jobs" }
            }
        }
        p { a href={"/queues/" (enc(&queue)) "/jobs?" (f.query(None))} { "Back to the list" } }
    };
    shell(&c, &format!("Cancel jobs of {queue}"), None, body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_read_as_comma_separated_pairs_and_a_pair_without_a_key_is_refused_by_name() {
        let t = |s: &str| parse_tags(&Some(s.to_owned()));
        let want = Tags::from([("customer".into(), "42".into()), ("campaign".into(), "".into())]);
        assert_eq!(t(" customer = 42, campaign=,"), Ok(Some(want.clone())));
        assert_eq!(t("  "), Ok(None));
        assert_eq!(t("customer"), Err("tags: \"customer\" is not key=value".into()));
        assert_eq!(t("=42"), Err("tags: \"=42\" is not key=value".into()));
        assert_eq!(tags_text(Some(&want)), "campaign=, customer=42");
        let f = Filters {
            tags: Some("team=red".into()),
            ..Filters::default()
        };
        assert!(f.selects(), "tags alone select jobs to cancel");
        assert_eq!(f.query(None), "status=scheduled&tags=team%3Dred");
    }
}
