//! Retries meet series (issue 60, defects 1 and 15): a retry under the series' own id is
//! refused and leaves the series as it was; an occurrence's retries carry its `waiter.job_id`
//! whether or not the consumer handed the attributes back.

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{json, Value};

use super::repeat_tests::{get, run};
use crate::ports::Clock;
use crate::testing::attribute_text;
use crate::testing::{call, refused, test_waiter, FakeClock, FakeQueue, MemStore, TestWaiter};
use sqs_waiter_contract::{ATTEMPT_ATTRIBUTE, JOB_ID_ATTRIBUTE};

/// A series `daily`, every hour from 90 s on, and the instant of its first occurrence.
async fn series() -> (TestWaiter, MemStore, FakeQueue, FakeClock, DateTime<Utc>) {
    let (w, store, queue, clock) = test_waiter("orders", &[("WAITER_LOOKAHEAD", "0"), ("WAITER_SHARDS", "2")]);
    let first = clock.now() + TimeDelta::seconds(90);
    let r = call(
        &w,
        json!({"queue": "orders", "message_body": "tick", "job_id": "daily",
               "perform_at": crate::time::format_rfc3339(first), "repeat": {"every_s": 3600}}),
    )
    .await;
    assert_eq!(r["status"], "scheduled", "{r}");
    (w, store, queue, clock, first)
}

fn retry(job_id: &str, attempt: u64) -> Value {
    // No attributes: the consumer did not ask SQS for them.
    json!({"action": "retry", "queue": "orders", "job_id": job_id, "attempt": attempt, "message_body": "tick",
           "backoff": {"base_s": 2, "factor": 2, "jitter": false}})
}

/// Attribute `name` of the `i`th message SQS received.
fn text(queue: &FakeQueue, i: usize, name: &str) -> Option<String> {
    attribute_text(&queue.sent().get(i)?.message, name)
}

#[tokio::test(start_paused = true)]
async fn a_retry_under_the_series_id_is_refused_and_the_series_goes_on() {
    let (w, store, queue, clock, first) = series().await;
    // Due and not yet sent: the series item looks as if its message may be in SQS, which is
    // when the retry used to write a one-off attempt 2 over it.
    clock.advance(TimeDelta::seconds(90));
    let before = get(&w, "daily").await;
    let e = refused(&w, retry("daily", 1)).await;
    assert!(
        e.field == "job_id" && e.rule.starts_with("names a series") && e.rule.contains("daily@"),
        "{e}"
    );
    assert_eq!(get(&w, "daily").await, before, "the refusal changed the series");
    assert_eq!(store.len(), 1);
    run(&w, &clock).await;
    assert_eq!(
        text(&queue, 0, JOB_ID_ATTRIBUTE),
        Some(format!("daily@{}", first.timestamp()))
    );
    let g = get(&w, "daily").await;
    assert_eq!(
        (g["status"].as_str(), g["occurrences"].as_u64()),
        (Some("scheduled"), Some(1)),
        "{g}"
    );
    assert_eq!(g["repeat"]["every_s"], 3600, "{g}");
    // Moved on to its next hour, and still refused.
    refused(&w, retry("daily", 1)).await;
    assert_eq!(get(&w, "daily").await, g);
}

#[tokio::test(start_paused = true)]
async fn an_occurrence_retried_without_its_attributes_names_itself_in_every_attempt() {
    let (w, _, queue, clock, first) = series().await;
    clock.advance(TimeDelta::seconds(90));
    run(&w, &clock).await;
    let occurrence = format!("daily@{}", first.timestamp());
    assert_eq!(text(&queue, 0, JOB_ID_ATTRIBUTE).as_ref(), Some(&occurrence));
    for attempt in 1..=2u64 {
        let r = call(&w, retry(&occurrence, attempt)).await;
        assert_eq!(
            (r["status"].as_str(), r["attempt"].as_u64()),
            (Some("scheduled"), Some(attempt + 1)),
            "{r}"
        );
        clock.advance(TimeDelta::seconds(10));
        run(&w, &clock).await;
        let i = queue.sent().len() - 1;
        assert_eq!(text(&queue, i, ATTEMPT_ATTRIBUTE), Some((attempt + 1).to_string()));
        assert_eq!(
            text(&queue, i, JOB_ID_ATTRIBUTE).as_ref(),
            Some(&occurrence),
            "attempt {} does not name its occurrence",
            attempt + 1
        );
    }
    // The series itself is untouched by its occurrence's retries.
    let g = get(&w, "daily").await;
    assert_eq!(
        (g["occurrences"].as_u64(), g["repeat"]["every_s"].as_u64()),
        (Some(1), Some(3600)),
        "{g}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_occurrence_retried_keeps_its_series_windows() {
    // Issue 60, defect 6: the first retry of an occurrence found no attempt of its own to take
    // the windows from, and attempt 2 was due outside them.
    let (w, _, queue, clock) = test_waiter("orders", &[("WAITER_LOOKAHEAD", "0"), ("WAITER_SHARDS", "2")]);
    let now = clock.now().timestamp();
    let opening = DateTime::from_timestamp(now - now % 60, 0).expect("09:00");
    let first = opening + TimeDelta::minutes(1);
    call(
        &w,
        json!({"queue": "orders", "message_body": "w", "job_id": "w", "perform_at": crate::time::format_rfc3339(first),
               "windows": [{"from": "09:00", "to": "09:05"}], "time_zone": "UTC", "repeat": {"every_s": 86_400}}),
    )
    .await;
    clock.advance(TimeDelta::seconds(90));
    run(&w, &clock).await;
    let occurrence = format!("w@{}", first.timestamp());
    assert_eq!(text(&queue, 0, JOB_ID_ATTRIBUTE).as_ref(), Some(&occurrence));
    // Ten minutes' backoff falls after the window's close: attempt 2 waits for the next opening.
    let r = call(
        &w,
        json!({"action": "retry", "queue": "orders", "job_id": occurrence, "attempt": 1, "message_body": "w",
               "backoff": {"base_s": 600, "jitter": false}}),
    )
    .await;
    assert_eq!(r["attempt"], 2, "{r}");
    let due = DateTime::parse_from_rfc3339(r["perform_at"].as_str().expect("perform_at")).expect("time");
    assert_eq!(due, opening + TimeDelta::days(1), "{r}");
}
