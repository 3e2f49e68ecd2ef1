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
        (Some("scheduled"), Some("j")),
        "{r}"
    );
    assert_eq!(r["job_id"], "j~1", "the default id: job_id, '~', the record's version");
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    d.run(clock.now() + TimeDelta::seconds(30)).await;
    let sent = queue.sent();
    assert_eq!(sent.len(), 2);
    assert_eq!(
        sent[1].message.attributes["waiter.job_id"].data,
        AttributeData::String("j~1".into()),
        "the copy's message names it, for its consumer's retry"
    );
    assert_eq!(sent[1].message.body, "the body");
    assert_eq!(
        sent[1].message.attributes["kind"].data,
        AttributeData::String("invoice".into())
    );

    // The same replay again is a duplicate of the copy: nothing more is sent.
    let again = call(&w, replay("j")).await;
    assert_eq!(
        (again["duplicate"].as_bool(), again["job_id"].as_str()),
        (Some(true), Some("j~1")),
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
        (Some("scheduled"), Some("d~1")),
        "{r}"
    );
    assert_eq!(queue.sent().len(), 2, "a copy due now is handed over at once");
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
    assert_eq!(r["status"], "scheduled", "{r}");
    let d = dispatcher_for(&w);
    d.run(w.clock.now() + TimeDelta::seconds(30)).await;
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
            json!({"action": "replay", "queue": "orders", "job_id": "j", "new_job_id": "j~9"}),
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

#[tokio::test(start_paused = true)]
async fn a_replayed_copy_is_retried_under_its_own_id_not_the_original_chain() {
    let (w, _, queue, clock) = test_waiter("orders", &[BODY_ON]);
    let d = dispatcher_for(&w);
    let retry = |job_id: &str, attempt: u64, attributes: serde_json::Value| {
        json!({"action": "retry", "queue": "orders", "job_id": job_id, "attempt": attempt,
               "message_body": "the body", "message_attributes": attributes,
               "backoff": {"base_s": 2, "jitter": false}})
    };
    // o-2 fails twice: attempt 3 is its latest.
    assert_eq!(call(&w, enqueue("o-2", 0)).await["status"], "sent");
    assert_eq!(call(&w, retry("o-2", 1, json!({}))).await["attempt"], 2);
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    d.run(clock.now() + TimeDelta::seconds(30)).await;
    let copy = call(&w, replay("o-2")).await;
    let copy_id = copy["job_id"].as_str().expect("the copy's id").to_owned();
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    d.run(clock.now() + TimeDelta::seconds(30)).await;
    let sent = queue.sent();
    let received = sent.last().expect("the copy was sent");
    let named = match &received.message.attributes["waiter.job_id"].data {
        AttributeData::String(s) => s.clone(),
        AttributeData::Binary(_) => panic!("waiter.job_id is a string"),
    };
    assert_eq!(named, copy_id);
    // The consumer retries the id the message names, attempt 1 (it carries no waiter.attempt).
    assert!(!received.message.attributes.contains_key("waiter.attempt"));
    let r = call(
        &w,
        retry(
            &named,
            1,
            json!({"waiter.job_id": {"data_type": "String", "string_value": named}}),
        ),
    )
    .await;
    assert_eq!(
        (r["status"].as_str(), r["attempt"].as_u64(), r["duplicate"].as_bool()),
        (Some("scheduled"), Some(2), Some(false)),
        "{r}"
    );
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    d.run(clock.now() + TimeDelta::seconds(30)).await;
    let last = queue.sent().last().expect("attempt 2 of the copy").message.clone();
    assert_eq!(
        last.attributes["waiter.job_id"].data,
        AttributeData::String(copy_id.clone())
    );
    assert_eq!(
        last.attributes["waiter.attempt"].data,
        AttributeData::String("2".into())
    );
    let original = call(&w, json!({"action": "get", "queue": "orders", "job_id": "o-2"})).await;
    assert_eq!(original["attempt"], 2, "the original chain is untouched: {original}");
}

#[tokio::test(start_paused = true)]
async fn replaying_twice_makes_one_copy_whatever_the_history_settings() {
    let settings = [BODY_ON, ("WAITER_DIRECT_HISTORY", "false")];
    let (w, _, queue, clock) = test_waiter("orders", &settings);
    let d = dispatcher_for(&w);
    call(&w, enqueue("k", 5000)).await;
    call(&w, json!({"action": "cancel", "queue": "orders", "job_id": "k"})).await;
    let first = call(&w, replay("k")).await;
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    d.run(clock.now() + TimeDelta::seconds(30)).await;
    let again = call(&w, replay("k")).await;
    assert_eq!(
        (again["duplicate"].as_bool(), &again["job_id"]),
        (Some(true), &first["job_id"]),
        "{again}"
    );
    assert_eq!(queue.sent().len(), 1, "one copy");
}

#[tokio::test(start_paused = true)]
async fn with_history_off_a_copy_of_a_retried_job_is_still_made_once() {
    // History off: only the retried attempt's record (kept 14 days) knows the job, with its
    // message; the copy, a job never retried, must still leave a record to make a second
    // replay a duplicate (simulation seed 4206 of 15000 found two copies).
    let (w, _, queue, clock) = test_waiter("orders", &[BODY_ON, ("WAITER_HISTORY_DAYS", "0")]);
    let d = dispatcher_for(&w);
    let retry = json!({"action": "retry", "queue": "orders", "job_id": "h-2", "attempt": 1,
                       "message_body": "the body", "backoff": {"base_s": 1, "jitter": false}});
    assert_eq!(call(&w, retry).await["attempt"], 2);
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    d.run(clock.now() + TimeDelta::seconds(30)).await;
    let first = call(&w, replay("h-2")).await;
    assert_eq!(
        (first["status"].as_str(), first["duplicate"].as_bool()),
        (Some("scheduled"), Some(false)),
        "{first}"
    );
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    d.run(clock.now() + TimeDelta::seconds(30)).await;
    let sent = queue.sent().len();
    let again = call(&w, replay("h-2")).await;
    assert_eq!(
        (again["duplicate"].as_bool(), &again["job_id"]),
        (Some(true), &first["job_id"]),
        "{again}"
    );
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    d.run(clock.now() + TimeDelta::seconds(30)).await;
    assert_eq!(queue.sent().len(), sent, "one copy");
}
