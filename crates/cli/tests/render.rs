//! The CLI's human output on fixed replies (insta snapshots in `tests/snapshots/`).

use serde_json::json;
use sqs_waiter::render;
use sqs_waiter_client::{JobReply, ListReply, StatsReply};

fn stats() -> StatsReply {
    serde_json::from_value(json!({
        "queue": "orders", "now": "2026-12-01T09:00:00.123456Z",
        "scheduled": 10412, "parked": 3, "overdue": 12, "oldest_overdue_s": 41.7,
        "next_due": "2026-12-01T09:00:01Z", "bucket_s": 3600,
        "histogram": [
            {"from": "2026-12-01T09:00:00.123456Z", "to": "2026-12-01T10:00:00.123456Z", "count": 311},
            {"from": "2026-12-01T10:00:00.123456Z", "to": "2026-12-01T11:00:00.123456Z", "count": 0},
            {"from": "2026-12-01T11:00:00.123456Z", "to": "2026-12-01T12:00:00.123456Z", "count": 1},
            {"from": "2026-12-01T12:00:00.123456Z", "to": "2026-12-01T13:00:00.123456Z", "count": 987},
            {"from": "2026-12-01T13:00:00.123456Z", "to": null, "count": 9101}
        ]
    }))
    .unwrap()
}

#[test]
fn stats_draws_a_histogram_that_fits_the_terminal() {
    console::set_colors_enabled(false);
    insta::assert_snapshot!("stats_80", render::stats(&stats(), 80));
    let narrow = render::stats(&stats(), 40);
    let histogram = narrow.lines().skip_while(|l| !l.contains("DUE IN"));
    assert!(histogram.clone().all(|l| l.chars().count() <= 40), "{narrow}");
    assert_eq!(histogram.count(), 6, "a header and a row per bucket");
    let wide = render::stats(&stats(), 200);
    let longest = wide.lines().map(|l| l.chars().count()).max().unwrap();
    assert!(
        longest <= 200 && longest > 80,
        "bars grow with the terminal, up to a limit: {longest}"
    );
}

#[test]
fn stats_shows_the_overdue_jobs_by_priority_class_once_one_ranks_otherwise() {
    let mut s = stats();
    s.overdue = 9;
    s.overdue_by_priority = [("0".to_owned(), 1), ("1-99".to_owned(), 3), ("100".to_owned(), 5)].into();
    let out = render::stats(&s, 80);
    assert!(out.contains("by priority  0: 1, 1-99: 3, 100: 5"), "{out}");
    s.overdue_by_priority = [("100".to_owned(), 9)].into();
    assert!(!render::stats(&s, 80).contains("by priority"));
}

#[test]
fn stats_of_an_empty_queue() {
    let empty: StatsReply = serde_json::from_value(json!({
        "queue": "orders", "now": "2026-12-01T09:00:00Z", "scheduled": 0, "parked": 0, "overdue": 0,
        "oldest_overdue_s": 0.0, "next_due": null, "bucket_s": 86400,
        "histogram": [{"from": "2026-12-01T09:00:00Z", "to": "2026-12-02T09:00:00Z", "count": 0},
                      {"from": "2026-12-02T09:00:00Z", "to": null, "count": 0}]
    }))
    .unwrap();
    insta::assert_snapshot!("stats_empty", render::stats(&empty, 80));
}

#[test]
fn list_and_parked_tables() {
    let page: ListReply = serde_json::from_value(json!({"queue": "orders", "cursor": "abc", "jobs": [
        {"job_id": "invoice-42", "queue": "orders", "status": "scheduled", "perform_at": "2026-12-01T09:00:00Z",
         "perform_at_epoch": 1796115600.0, "enqueued_at": "2026-11-22T22:00:00Z", "version": 2},
        {"job_id": "invoice-43", "queue": "orders", "status": "scheduled", "perform_at": "2026-12-01T09:30:00.5Z",
         "perform_at_epoch": 1796117400.5, "enqueued_at": "2026-11-22T22:00:00Z", "version": 1}
    ]}))
    .unwrap();
    insta::assert_snapshot!("list", render::jobs(&page.jobs, page.cursor.is_some()));
    let parked: Vec<JobReply> = serde_json::from_value(json!([
        {"job_id": "bad-1", "queue": "orders", "status": "parked", "perform_at": "2026-11-30T09:00:00Z",
         "version": 1, "parked_at": "2026-11-30T09:00:02Z",
         "error": {"code": "InvalidParameterValue", "message": "Message must be shorter than 262144 bytes."}}
    ]))
    .unwrap();
    insta::assert_snapshot!("parked", render::jobs(&parked, false));
    let exhausted: Vec<JobReply> = serde_json::from_value(json!([
        {"job_id": "order-7:a4", "queue": "orders", "status": "parked", "perform_at": "2026-11-30T09:00:00Z",
         "version": 1, "parked_at": "2026-11-30T09:00:00Z", "attempt": 4, "attempts": 3,
         "reason": "attempts_exhausted", "error": {"code": "attempts_exhausted", "message": "payment API timed out"}},
        {"job_id": "bad-1", "queue": "orders", "status": "parked", "perform_at": "2026-11-30T09:00:00Z",
         "version": 1, "parked_at": "2026-11-30T09:00:02Z",
         "error": {"code": "InvalidParameterValue", "message": "Message must be shorter than 262144 bytes."}}
    ]))
    .unwrap();
    insta::assert_snapshot!("parked_retried", render::jobs(&exhausted, false));
    assert_eq!(render::jobs(&[], false), "no jobs");
}

#[test]
fn list_shows_a_priority_column_once_a_job_ranks_or_weighs_otherwise() {
    let jobs: Vec<JobReply> = serde_json::from_value(json!([
        {"job_id": "urgent", "queue": "orders", "status": "scheduled", "perform_at": "2026-12-01T09:00:00Z",
         "version": 1, "priority": 1, "weight": 1},
        {"job_id": "bulk", "queue": "orders", "status": "scheduled", "perform_at": "2026-12-01T09:00:00Z",
         "version": 1, "priority": 100, "weight": 5},
        {"job_id": "plain", "queue": "orders", "status": "scheduled", "perform_at": "2026-12-01T09:00:00Z",
         "version": 1, "priority": 100, "weight": 1}
    ]))
    .unwrap();
    let table = render::jobs(&jobs, false);
    let header = table.lines().next().unwrap_or_default();
    assert!(header.trim_end().ends_with("PRIORITY"), "{table}");
    let row = |id: &str| {
        let found = table.lines().find(|l| l.trim_start().starts_with(id));
        found.unwrap_or_default().trim_end().to_owned()
    };
    assert!(row("urgent").ends_with(" 1"), "{table}");
    assert!(row("bulk").ends_with("100×5"), "{table}");
    assert!(row("plain").ends_with("100"), "{table}");
    // Only default ranks: no column.
    let plain: Vec<JobReply> = jobs.into_iter().filter(|j| j.job_id == "plain").collect();
    assert!(!render::jobs(&plain, false).contains("PRIORITY"));
}

#[test]
fn one_job_in_detail_and_outcomes_in_one_line() {
    let job: JobReply = serde_json::from_value(json!({
        "job_id": "invoice-42", "queue": "billing.fifo", "status": "scheduled",
        "perform_at": "2026-12-01T21:00:00Z", "perform_at_epoch": 1796158800.0,
        "enqueued_at": "2026-11-22T22:00:00Z", "message_body": "{\"order\":42}",
        "message_attributes": {"kind": {"data_type": "String", "string_value": "invoice"}},
        "expires_at": "2026-12-02T00:00:00Z", "message_group_id": "customer-7",
        "message_deduplication_id": "invoice-42",
        "windows": [{"from": "22:00", "to": "23:00"}], "time_zone": "Europe/Berlin", "version": 3,
        "trace_header": "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1"
    }))
    .unwrap();
    insta::assert_snapshot!("get", render::details(&job));
    insta::assert_snapshot!("scheduled", render::outcome(&job));
    let not_found: JobReply =
        serde_json::from_value(json!({"status": "not_found", "queue": "orders", "job_id": "nope"})).unwrap();
    assert_eq!(
        render::not_done(&not_found).as_deref(),
        Some("job_id: no job nope on queue orders")
    );
    assert_eq!(render::not_done(&job), None);
}

#[test]
fn a_cancel_of_a_job_a_crashed_run_may_have_delivered_says_so() {
    let cancelled: JobReply = serde_json::from_value(json!({
        "status": "cancelled", "queue": "orders", "job_id": "w",
        "maybe_delivered_at": "2026-12-01T09:00:57Z"
    }))
    .unwrap();
    assert_eq!(
        render::outcome(&cancelled),
        "cancelled w on orders (a poller run that crashed may have delivered it at 2026-12-01T09:00:57Z; \
         this acts on its later delivery)"
    );
    assert_eq!(render::not_done(&cancelled), None, "cancelled: done");
    let many: sqs_waiter_client::CancelManyReply = serde_json::from_value(json!({
        "queue": "orders", "cancelled": 3, "maybe_delivered": 1, "dispatching": 0, "not_found": 0, "cursor": null
    }))
    .unwrap();
    assert_eq!(
        render::cancel_many(&many),
        "orders: cancelled 3, not found 0 (1 of the cancelled may have been delivered once by a poller run that crashed)"
    );
}

#[test]
fn list_and_get_show_a_series_repetition() {
    let jobs: Vec<JobReply> = serde_json::from_value(json!([
        {"job_id": "standup", "queue": "orders", "status": "scheduled", "perform_at": "2026-12-01T08:00:00Z",
         "version": 4, "time_zone": "Europe/Berlin", "occurrences": 3,
         "repeat": {"cron": "0 9 * * MON-FRI", "catch_up": "skip"}},
        {"job_id": "ping", "queue": "orders", "status": "scheduled", "perform_at": "2026-12-01T08:15:00Z",
         "version": 1, "occurrences": 0,
         "repeat": {"every_s": 900, "count": 96, "until": "2026-12-02T00:00:00Z", "catch_up": "one"}},
        {"job_id": "once", "queue": "orders", "status": "scheduled", "perform_at": "2026-12-01T09:00:00Z",
         "version": 1}
    ]))
    .unwrap();
    let table = render::jobs(&jobs, false);
    assert!(table.contains("REPEATS"), "{table}");
    assert!(
        table.contains("cron 0 9 * * MON-FRI Europe/Berlin, catch-up skip"),
        "{table}"
    );
    assert!(
        table.contains("every 900s, until 2026-12-02T00:00:00Z, count 96"),
        "{table}"
    );
    let one = render::details(&jobs[0]);
    assert!(one.contains("cron 0 9 * * MON-FRI Europe/Berlin"), "{one}");
    assert!(
        one.lines().any(|l| l.contains("occurrences") && l.contains('3')),
        "{one}"
    );
    assert!(!render::jobs(&jobs[2..], false).contains("REPEATS"));
}

/// `stats --formats`: the queue's items by item format, before a rollback (issue 82).
#[test]
fn stats_with_formats_names_each_format_and_its_items() {
    console::set_colors_enabled(false);
    let mut s = stats();
    assert!(!render::stats(&s, 80).contains("item formats"), "only when asked");
    s.formats = Some([("1".to_owned(), 10_400), ("2".to_owned(), 12)].into());
    assert!(render::stats(&s, 80).contains("item formats  1: 10400, 2: 12"));
}
