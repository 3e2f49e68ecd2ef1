//! An occurrence SQS rejects (issue 60, defect 7): the occurrence is parked under its own id,
//! the series goes on, and `redrive` sends that occurrence, leaving the series' schedule as it is.

use chrono::TimeDelta;
use serde_json::json;

use super::repeat_tests::{get, rfc3339, run};
use crate::ports::{Clock, EntryOutcome, Jobs, OutgoingMessage, Partition};
use crate::testing::attribute_text;
use crate::testing::{call, test_waiter};
use sqs_waiter_contract::{JOB_ID_ATTRIBUTE, OCCURRENCE_ATTRIBUTE};

#[tokio::test(start_paused = true)]
async fn a_rejected_occurrence_is_parked_alone_and_redriven_as_itself() {
    let (w, store, queue, clock) = test_waiter("orders", &[("WAITER_LOOKAHEAD", "0"), ("WAITER_SHARDS", "1")]);
    let first = clock.now() + TimeDelta::seconds(90);
    call(
        &w,
        json!({"queue": "orders", "message_body": "tick", "job_id": "s", "perform_at": rfc3339(first),
               "repeat": {"every_s": 3600}}),
    )
    .await;
    let rejected = rfc3339(first);
    *queue.entry_fault.lock().unwrap() = Some(Box::new(move |m: &OutgoingMessage| {
        (attribute_text(m, OCCURRENCE_ATTRIBUTE).as_deref() == Some(rejected.as_str())).then(|| EntryOutcome::Failed {
            code: "InvalidParameterValue".into(),
            message: "refused".into(),
            sender_fault: true,
        })
    }));
    clock.advance(TimeDelta::seconds(91));
    let s = run(&w, &clock).await;
    assert_eq!((s.parked, s.dispatched), (1, 0), "{s:?}");
    // The series went on to its next occurrence; the occurrence waits in the parked partition.
    let g = get(&w, "s").await;
    assert_eq!(
        (g["status"].as_str(), g["occurrences"].as_u64()),
        (Some("scheduled"), Some(1)),
        "{g}"
    );
    let next = first + TimeDelta::hours(1);
    assert_eq!(g["perform_at"], rfc3339(next), "{g}");
    let occurrence_id = format!("s@{}", first.timestamp());
    let parked = call(&w, json!({"action": "list_parked", "queue": "orders"})).await;
    let ids: Vec<&str> = parked["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .filter_map(|j| j["job_id"].as_str())
        .collect();
    assert_eq!(ids, [occurrence_id.as_str()], "{parked}");

    let orders = crate::config::QueueName::parse("orders").expect("queue");
    let parked_copy = store
        .find(&orders, &occurrence_id, &[Partition::Parked])
        .await
        .expect("read")
        .expect("parked");
    // Redriven: that occurrence, under its id, now; the series' schedule is untouched.
    *queue.entry_fault.lock().unwrap() = None;
    let r = call(
        &w,
        json!({"action": "redrive", "queue": "orders", "job_id": occurrence_id}),
    )
    .await;
    assert_eq!(r["status"], "scheduled", "{r}");
    run(&w, &clock).await;
    let sent = queue.sent();
    let last = sent.last().expect("the redriven occurrence");
    assert_eq!(
        attribute_text(&last.message, JOB_ID_ATTRIBUTE),
        Some(occurrence_id.clone())
    );
    assert_eq!(
        attribute_text(&last.message, OCCURRENCE_ATTRIBUTE),
        Some(rfc3339(first))
    );
    assert_eq!(get(&w, "s").await["perform_at"], rfc3339(next));
    // A second refused copy of that occurrence (a run re-sent it after a crash) parked after
    // it was dispatched: a redrive finds its history, answers `dispatched`, and the copy goes.
    assert!(store.place(&parked_copy).await.expect("place"));
    let r = call(
        &w,
        json!({"action": "redrive", "queue": "orders", "job_id": occurrence_id}),
    )
    .await;
    assert_eq!(
        (r["status"].as_str(), r["duplicate"].as_bool()),
        (Some("dispatched"), Some(true)),
        "{r}"
    );
    let parked = call(&w, json!({"action": "list_parked", "queue": "orders"})).await;
    assert_eq!(parked["jobs"], json!([]), "{parked}");
    // And the series' next occurrence goes as any.
    clock.advance(next - clock.now() + TimeDelta::seconds(1));
    run(&w, &clock).await;
    let last = queue.sent().last().cloned().expect("the next occurrence");
    assert_eq!(
        attribute_text(&last.message, JOB_ID_ATTRIBUTE),
        Some(format!("s@{}", next.timestamp()))
    );
}

/// An occurrence parked when a run handed it over ahead of its instant (`WAITER_LOOKAHEAD`),
/// redriven before that instant, arrives at it, never early (found by the whole system's series
/// seeds, issue 71: redrive made every parked job due now).
#[tokio::test(start_paused = true)]
async fn an_occurrence_parked_ahead_of_its_instant_and_redriven_before_it_is_not_sent_early() {
    let (w, _, queue, clock) = test_waiter("orders", &[("WAITER_LOOKAHEAD", "60"), ("WAITER_SHARDS", "1")]);
    let first = clock.now() + TimeDelta::seconds(50);
    call(
        &w,
        json!({"queue": "orders", "message_body": "tick", "job_id": "s", "perform_at": rfc3339(first),
               "repeat": {"every_s": 3600}}),
    )
    .await;
    queue.refuse_every_message();
    let s = run(&w, &clock).await;
    assert_eq!(s.parked, 1, "parked ahead of its instant: {s:?}");
    *queue.entry_fault.lock().unwrap() = None;
    let occurrence_id = format!("s@{}", first.timestamp());
    let r = call(
        &w,
        json!({"action": "redrive", "queue": "orders", "job_id": occurrence_id}),
    )
    .await;
    assert_eq!(r["status"], "scheduled", "{r}");
    run(&w, &clock).await;
    clock.advance(TimeDelta::seconds(60));
    run(&w, &clock).await;
    let sent = queue.sent();
    let s = sent.last().expect("the redriven occurrence");
    let arrival = s.at + TimeDelta::seconds(i64::from(s.message.delay_seconds.unwrap_or(0)));
    assert!(arrival >= first, "arrived at {arrival}, before its instant {first}");
}
