//! `replay` (issue 25): a copy of a job that left the table, from the message history kept with
//! `WAITER_HISTORY_BODY`.

use chrono::TimeDelta;
use serde_json::json;

use crate::job::AttributeData;
use crate::ports::Clock;
use crate::testing::*;

const BODY_ON: (&str, &str) = ("WAITER_HISTORY_BODY", "true");
const NO_LOOKAHEAD: [(&str, &str); 2] = [("WAITER_DIRECT_MAX_DELAY", "0"), ("WAITER_LOOKAHEAD", "0")];

fn enqueue(job_id: &str, delay_s: u64) -> serde_json::Value {
    json!({"queue": "orders", "job_id": job_id, "message_body": "the body", "delay_seconds": delay_s,
           "message_attributes": {"kind": {"data_type": "String", "string_value": "invoice"}}})
}

fn replay(job_id: &str) -> serde_json::Value {
    json!({"action": "replay", "queue": "orders", "job_id": job_id})
}

#[tokio::test(start_paused = true)]
async fn a_dispatched_job_is_replayed_once_with_its_body_and_attributes() {
    let (w, store, queue, clock) = test_waiter("orders", &[BODY_ON, NO_LOOKAHEAD[0], NO_LOOKAHEAD[1]]);
    let d = dispatcher_for(&w);
    assert_eq!(call(&w, enqueue("j", 5)).await["status"], "scheduled");
    tokio::time::sleep(std::time::Duration::from_secs(6)).await;
    assert_eq!(d.run(clock.now() + TimeDelta::seconds(30)).await.dispatched, 1);
    assert_eq!(store.len(), 0);

    let r = call(&w, replay("j")).await;
    assert_eq!(
        (r["status"].as_str(), r["replay_of"].as_str()),
        (Some("sent"), Some("j")),
        "{r}"
    );
    assert_eq!(
        r["job_id"], "j:r1",
        "the default id: job_id, ':r', the record's version"
    );
    let sent = queue.sent();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1].message.body, "the body");
    assert_eq!(
        sent[1].message.attributes["kind"].data,
        AttributeData::String("invoice".into())
    );

    // The same replay again is a duplicate of the copy: nothing more is sent.
    let again = call(&w, replay("j")).await;
    assert_eq!(
        (again["duplicate"].as_bool(), again["job_id"].as_str()),
        (Some(true), Some("j:r1")),
        "{again}"
    );
    assert_eq!(queue.sent().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_job_is_replayed_at_the_time_given_under_the_id_given() {
    let (w, store, queue, clock) = test_waiter("orders", &[BODY_ON]);
    call(&w, enqueue("c", 5000)).await;
    assert_eq!(
        call(&w, json!({"action": "cancel", "queue": "orders", "job_id": "c"})).await["status"],
        "cancelled"
    );
    let at = clock.now() + TimeDelta::seconds(7200);
    let r = call(
        &w,
        json!({"action": "replay", "queue": "orders", "job_id": "c", "new_job_id": "c-again",
               "perform_at": crate::time::format_rfc3339(at)}),
    )
    .await;
    assert_eq!(
        (r["status"].as_str(), r["job_id"].as_str()),
        (Some("scheduled"), Some("c-again")),
        "{r}"
    );
    assert_eq!(store.len(), 1, "the copy is stored");
    assert!(queue.sent().is_empty());
    let got = call(&w, json!({"action": "get", "queue": "orders", "job_id": "c-again"})).await;
    assert_eq!(got["message_body"], "the body", "{got}");
}

#[tokio::test(start_paused = true)]
async fn without_history_body_or_history_nothing_is_replayable() {
    let (w, _, queue, _) = test_waiter("orders", &[]);
    call(&w, enqueue("j", 5000)).await;
    call(&w, json!({"action": "cancel", "queue": "orders", "job_id": "j"})).await;
    let r = call(&w, replay("j")).await;
    assert_eq!(
        r["status"], "not_replayable",
        "WAITER_HISTORY_BODY is off by default: {r}"
    );
    let r = call(&w, replay("never-was")).await;
    assert_eq!(r["status"], "not_replayable", "{r}");
    let (w, _, _, _) = test_waiter("orders", &[BODY_ON, ("WAITER_HISTORY_DAYS", "0")]);
    call(&w, enqueue("h", 5000)).await;
    call(&w, json!({"action": "cancel", "queue": "orders", "job_id": "h"})).await;
    assert_eq!(call(&w, replay("h")).await["status"], "not_replayable", "history off");
    assert!(queue.sent().is_empty());
}

#[tokio::test(start_paused = true)]
async fn an_active_job_is_a_conflict_and_a_direct_send_is_replayable() {
    let (w, _, queue, _) = test_waiter("orders", &[BODY_ON]);
    call(&w, enqueue("a", 5000)).await;
    let r = call(&w, replay("a")).await;
    assert_eq!(r["status"], "conflict", "still stored: {r}");
    // A direct send with a caller's id leaves a history record, with its message.
    assert_eq!(call(&w, enqueue("d", 10)).await["status"], "sent");
    let r = call(&w, replay("d")).await;
    assert_eq!(
        (r["status"].as_str(), r["job_id"].as_str()),
        (Some("sent"), Some("d:r1")),
        "{r}"
    );
    assert_eq!(queue.sent().len(), 2);
    assert_eq!(queue.sent()[1].message.body, "the body");
}

#[tokio::test(start_paused = true)]
async fn a_fifo_copy_keeps_its_group_and_gets_its_own_deduplication_id() {
    let (w, _, queue, _) = test_waiter("jobs.fifo", &[BODY_ON]);
    let r = call(
        &w,
        json!({"queue": "jobs.fifo", "job_id": "f", "message_body": "b", "message_group_id": "g-1",
               "message_deduplication_id": "dedup-1"}),
    )
    .await;
    assert_eq!(r["status"], "sent", "{r}");
    let r = call(&w, json!({"action": "replay", "queue": "jobs.fifo", "job_id": "f"})).await;
    assert_eq!(r["status"], "sent", "{r}");
    let copy = &queue.sent()[1].message;
    assert_eq!(copy.group_id.as_deref(), Some("g-1"));
    assert_ne!(
        copy.deduplication_id.as_deref(),
        Some("dedup-1"),
        "SQS would drop it as a duplicate"
    );
}

#[tokio::test(start_paused = true)]
async fn bad_replay_requests_are_refused_naming_the_field() {
    let (w, _, _, _) = test_waiter("orders", &[BODY_ON]);
    for (request, field) in [
        (json!({"action": "replay", "queue": "orders"}), "job_id"),
        (
            json!({"action": "replay", "queue": "orders", "job_id": "j", "new_job_id": "a b"}),
            "new_job_id",
        ),
        (
            json!({"action": "replay", "queue": "orders", "job_id": "j", "new_job_id": ""}),
            "new_job_id",
        ),
        (
            json!({"action": "replay", "queue": "orders", "job_id": "j", "delay_seconds": 5, "perform_at": "2026-12-01T10:00:00Z"}),
            "delay_seconds",
        ),
        (
            json!({"action": "replay", "queue": "elsewhere", "job_id": "j"}),
            "queue",
        ),
        (
            json!({"action": "replay", "queue": "orders", "job_id": "j", "attempt": 2}),
            "attempt",
        ),
    ] {
        let e = refused(&w, request.clone()).await;
        assert_eq!(e.field, field, "{request}: {e:?}");
    }
    // The default id would pass the id length: the caller must name the copy.
    let long = "x".repeat(127);
    call(&w, enqueue(&long, 5000)).await;
    call(&w, json!({"action": "cancel", "queue": "orders", "job_id": long})).await;
    let e = refused(&w, replay(&long)).await;
    assert_eq!(e.field, "new_job_id", "{e:?}");
}
