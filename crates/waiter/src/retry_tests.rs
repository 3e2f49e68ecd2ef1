//! `retry` (issue 25): the next attempt at backoff, idempotent per (job_id, attempt), stale
//! attempts refused, and exhaustion parked for `redrive`.

use chrono::TimeDelta;
use serde_json::{json, Value};

use crate::job::AttributeData;
use crate::ports::Clock;
use crate::testing::*;

const NO_LOOKAHEAD: [(&str, &str); 2] = [("WAITER_DIRECT_MAX_DELAY", "0"), ("WAITER_LOOKAHEAD", "0")];

/// The retry of `attempt` of job `o-1`: backoff 2 s × 2 without jitter, at most 3 attempts.
fn retry(attempt: u64) -> Value {
    json!({"action": "retry", "queue": "orders", "job_id": "o-1", "attempt": attempt,
           "message_body": "the body", "error": "payment API timed out",
           "message_attributes": {"kind": {"data_type": "String", "string_value": "invoice"},
                                  "waiter.attempt": {"data_type": "Number", "string_value": "99"}},
           "backoff": {"base_s": 2, "factor": 2, "max_s": 3600, "jitter": false}, "max_attempts": 3})
}

/// Stored jobs and history records.
fn counts(store: &MemStore) -> (usize, usize) {
    let s = store.state.lock().unwrap();
    (s.items.len(), s.history.len())
}

fn stored_jobs(store: &MemStore) -> Vec<crate::ports::StoredJob> {
    store.state.lock().unwrap().items.values().cloned().collect()
}

fn attempt_attribute(sent: &Sent) -> AttributeData {
    sent.message.attributes["waiter.attempt"].data.clone()
}

#[tokio::test(start_paused = true)]
async fn each_attempt_is_sent_at_its_backoff_with_its_number() {
    let (w, store, queue, clock) = test_waiter("orders", &[]);
    let start = clock.now();
    let r = call(&w, retry(1)).await;
    assert_eq!(
        (r["status"].as_str(), r["attempt"].as_u64()),
        (Some("scheduled"), Some(2)),
        "{r}"
    );
    assert_eq!(
        (r["job_id"].as_str(), r["duplicate"].as_bool()),
        (Some("o-1"), Some(false))
    );
    let r = call(&w, retry(2)).await;
    assert_eq!(r["attempt"], 3, "{r}");
    let sent = queue.sent();
    assert_eq!(
        sent.len(),
        2,
        "attempts due within the lookahead are handed over at once"
    );
    assert_eq!(
        sent.iter().map(|s| s.message.delay_seconds).collect::<Vec<_>>(),
        [Some(2), Some(4)],
        "base_s × factor^(attempt−1)"
    );
    assert_eq!(
        sent.iter().map(attempt_attribute).collect::<Vec<_>>(),
        [AttributeData::String("2".into()), AttributeData::String("3".into())],
        "the caller's waiter.attempt is replaced by ours"
    );
    assert_eq!(
        sent[0].message.attributes.len(),
        3,
        "kind, waiter.attempt and waiter.job_id"
    );
    assert_eq!(sent[0].message.body, "the body");
    assert!(sent.iter().all(|s| s.at >= start));
    assert_eq!(
        counts(&store),
        (0, 1),
        "one record of the job, its latest attempt, so a repeat is a duplicate"
    );
    let got = call(&w, json!({"action": "get", "queue": "orders", "job_id": "o-1"})).await;
    assert_eq!(
        (got["status"].as_str(), got["attempt"].as_u64()),
        (Some("dispatched"), Some(3)),
        "{got}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_repeated_retry_is_a_duplicate_and_sends_nothing_more() {
    for direct in [true, false] {
        let settings: &[(&str, &str)] = if direct { &[] } else { &NO_LOOKAHEAD };
        let (w, store, queue, _) = test_waiter("orders", settings);
        let first = call(&w, retry(1)).await;
        let items = counts(&store);
        let again = call(&w, retry(1)).await;
        assert_eq!(again["duplicate"], true, "direct {direct}: {again}");
        assert_eq!(
            (
                again["status"].clone(),
                again["attempt"].clone(),
                again["perform_at"].clone()
            ),
            (
                first["status"].clone(),
                first["attempt"].clone(),
                first["perform_at"].clone()
            ),
            "direct {direct}: the first reply again"
        );
        assert_eq!(queue.sent().len(), usize::from(direct), "direct {direct}");
        assert_eq!(counts(&store), items, "direct {direct}");
    }
}

#[tokio::test(start_paused = true)]
async fn with_history_off_an_attempt_sent_still_makes_a_repeated_retry_a_duplicate() {
    let (w, _, queue, _) = test_waiter("orders", &[("WAITER_HISTORY_DAYS", "0")]);
    let first = call(&w, retry(1)).await;
    assert_eq!(queue.sent().len(), 1, "handed over at once: {first}");
    let again = call(&w, retry(1)).await;
    assert_eq!(
        again["duplicate"], true,
        "the attempt's record outlives the send: {again}"
    );
    assert_eq!(queue.sent().len(), 1);
    // Other jobs still leave no record with history off.
    call(
        &w,
        json!({"queue": "orders", "job_id": "plain", "message_body": "b", "delay_seconds": 5}),
    )
    .await;
    let got = call(&w, json!({"action": "get", "queue": "orders", "job_id": "plain"})).await;
    assert_eq!(got["status"], "not_found", "{got}");
}

#[tokio::test(start_paused = true)]
async fn an_attempt_older_than_the_latest_is_a_conflict() {
    let (w, _, queue, clock) = test_waiter("orders", &NO_LOOKAHEAD);
    let d = dispatcher_for(&w);
    call(&w, retry(1)).await;
    let early = call(&w, retry(2)).await;
    assert_eq!(
        (early["status"].as_str(), early["attempt"].as_u64()),
        (Some("conflict"), Some(2)),
        "attempt 2 is not sent yet, so no consumer can have failed it: {early}"
    );
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    assert_eq!(d.run(clock.now() + TimeDelta::seconds(30)).await.dispatched, 1);
    assert_eq!(call(&w, retry(2)).await["attempt"], 3);
    let r = call(&w, retry(1)).await;
    assert_eq!(
        (r["status"].as_str(), r["attempt"].as_u64()),
        (Some("conflict"), Some(3)),
        "attempt 2 was scheduled and failed in turn: {r}"
    );
    assert_eq!(queue.sent().len(), 1, "attempt 2 only");
}

#[tokio::test(start_paused = true)]
async fn a_stored_attempt_is_due_at_its_backoff_and_never_early() {
    let (w, store, queue, clock) = test_waiter("orders", &NO_LOOKAHEAD);
    let d = dispatcher_for(&w);
    let mut r = retry(1);
    r["backoff"]["base_s"] = json!(600);
    let start = clock.now();
    let reply = call(&w, r).await;
    let job = stored_jobs(&store).remove(0);
    assert_eq!(
        (job.job.job_id.as_str(), job.job.attempt),
        ("o-1", 2),
        "one id across attempts"
    );
    assert_eq!(job.job.perform_at, start + TimeDelta::seconds(600), "{reply}");
    assert_eq!(d.run(clock.now() + TimeDelta::seconds(30)).await.dispatched, 0);
    tokio::time::sleep(std::time::Duration::from_secs(601)).await;
    assert_eq!(d.run(clock.now() + TimeDelta::seconds(30)).await.dispatched, 1);
    let sent = queue.sent();
    assert!(sent[0].at >= start + TimeDelta::seconds(600));
    assert_eq!(attempt_attribute(&sent[0]), AttributeData::String("2".into()));
    let got = call(&w, json!({"action": "get", "queue": "orders", "job_id": "o-1"})).await;
    assert_eq!(
        (got["status"].as_str(), got["attempt"].as_u64()),
        (Some("dispatched"), Some(2)),
        "{got}"
    );
}

#[tokio::test(start_paused = true)]
async fn jitter_draws_from_the_upper_half_of_the_delay() {
    let (w, store, _, clock) = test_waiter("orders", &NO_LOOKAHEAD);
    let start = clock.now();
    for i in 0..40 {
        let r = json!({"action": "retry", "queue": "orders", "job_id": format!("j-{i}"), "attempt": 3,
                       "message_body": "b", "backoff": {"base_s": 100, "factor": 2, "max_s": 100000}});
        call(&w, r).await;
    }
    let offsets: Vec<f64> = stored_jobs(&store)
        .iter()
        .map(|j| (j.job.perform_at - start).as_seconds_f64())
        .collect();
    assert_eq!(offsets.len(), 40);
    assert!(offsets.iter().all(|s| (200.0..=400.0).contains(s)), "{offsets:?}");
    let spread = offsets.iter().cloned().fold(f64::MIN, f64::max) - offsets.iter().cloned().fold(f64::MAX, f64::min);
    assert!(spread > 100.0, "jobs that failed together come back apart: {offsets:?}");
}

#[tokio::test(start_paused = true)]
async fn the_last_attempt_parks_the_job_and_redrive_sends_the_next() {
    let (w, store, queue, _) = test_waiter("orders", &NO_LOOKAHEAD);
    let r = call(&w, retry(3)).await;
    assert_eq!(
        (r["status"].as_str(), r["reason"].as_str(), r["attempts"].as_u64()),
        (Some("parked"), Some("attempts_exhausted"), Some(3)),
        "{r}"
    );
    assert_eq!(r["duplicate"], false);
    assert!(queue.sent().is_empty(), "nothing is scheduled");
    let again = call(&w, retry(3)).await;
    assert_eq!(
        (again["status"].as_str(), again["duplicate"].as_bool()),
        (Some("parked"), Some(true)),
        "{again}"
    );
    assert_eq!(store.len(), 1);

    let parked = call(&w, json!({"action": "list_parked", "queue": "orders"})).await;
    let job = &parked["jobs"][0];
    assert_eq!(
        (
            job["job_id"].as_str(),
            job["attempts"].as_u64(),
            job["error"]["message"].as_str()
        ),
        (Some("o-1"), Some(3), Some("payment API timed out")),
        "{parked}"
    );
    assert_eq!(job["error"]["code"], "attempts_exhausted");

    assert_eq!(job["attempt"], 4, "the attempt redrive sends");
    let r = call(&w, json!({"action": "redrive", "queue": "orders", "job_id": "o-1"})).await;
    assert_eq!(r["status"], "scheduled", "{r}");
    let d = dispatcher_for(&w);
    assert_eq!(d.run(w.clock.now() + TimeDelta::seconds(30)).await.dispatched, 1);
    assert_eq!(attempt_attribute(&queue.sent()[0]), AttributeData::String("4".into()));
}

#[tokio::test(start_paused = true)]
async fn a_fifo_retry_keeps_its_group_and_is_stored() {
    let (w, store, queue, _) = test_waiter("jobs.fifo", &[]);
    let r = call(
        &w,
        json!({"action": "retry", "queue": "jobs.fifo", "job_id": "f", "attempt": 1, "message_body": "b",
               "message_group_id": "customer-7", "backoff": {"base_s": 5, "jitter": false}}),
    )
    .await;
    assert_eq!(r["status"], "scheduled", "{r}");
    assert!(queue.sent().is_empty(), "FIFO queues take no per-message delay");
    let job = &stored_jobs(&store)[0];
    assert_eq!(job.job.message_group_id.as_deref(), Some("customer-7"));
    assert_eq!((job.job.job_id.as_str(), job.job.attempt), ("f", 2));
}

#[tokio::test(start_paused = true)]
async fn bad_retries_name_the_field_and_leave_nothing_behind() {
    let (w, store, queue, _) = test_waiter("orders,jobs.fifo", &[]);
    let attrs = |n: usize| -> Value {
        (0..n)
            .map(|i| (format!("a{i}"), json!({"data_type": "String", "string_value": "v"})))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    for (change, field) in [
        (json!({"attempt": 0}), "attempt"),
        (json!({"attempt": 1_000_001}), "attempt"),
        (json!({"attempt": -1}), "attempt"),
        (json!({"max_attempts": 0}), "max_attempts"),
        (json!({"backoff": {"base_s": 0}}), "backoff.base_s"),
        (json!({"backoff": {"base_s": 86_401}}), "backoff.base_s"),
        (json!({"backoff": {"factor": 0.5}}), "backoff.factor"),
        (json!({"backoff": {"factor": 11}}), "backoff.factor"),
        (json!({"backoff": {"base_s": 60, "max_s": 30}}), "backoff.max_s"),
        (json!({"backoff": {"max_s": 31_536_001}}), "backoff.max_s"),
        (json!({"backoff": {"jitter": "full"}}), "backoff.jitter"),
        (json!({"backoff": {"kind": "linear"}}), "backoff.kind"),
        (json!({"error": "e".repeat(1025)}), "error"),
        (json!({"message_attributes": attrs(10)}), "message_attributes"),
        (json!({"job_id": "x".repeat(129)}), "job_id"),
        (json!({"job_id": "o 1"}), "job_id"),
        (json!({"queue": "jobs.fifo"}), "message_group_id"),
    ] {
        let mut r = retry(1);
        for (k, v) in change.as_object().unwrap() {
            r[k] = v.clone();
        }
        let e = refused(&w, r).await;
        assert_eq!(e.field, field, "{change}: {e:?}");
    }
    let mut nine = retry(1);
    nine["message_attributes"] = attrs(9);
    assert_eq!(call(&w, nine).await["status"], "scheduled", "nine leave room for ours");
    assert_eq!((counts(&store), queue.sent().len()), ((0, 1), 1), "only the good one");
}

#[tokio::test(start_paused = true)]
async fn an_attempt_keeps_the_priority_and_weight_its_message_carried_unless_given_anew() {
    let (w, store, _queue, _clock) = test_waiter("orders", &NO_LOOKAHEAD);
    let mut carried = retry(1);
    carried["message_attributes"]["waiter.priority"] = json!({"data_type": "Number", "string_value": "7"});
    carried["message_attributes"]["waiter.weight"] = json!({"data_type": "Number", "string_value": "3"});
    assert_eq!(call(&w, carried).await["status"], "scheduled");
    let attempt = stored_jobs(&store).into_iter().next().expect("attempt 2 stored");
    assert_eq!((attempt.job.priority, attempt.job.weight), (7, 3));
    // Given anew, the request's win; the caller's waiter.* attributes are not kept as such.
    let mut given = retry(2);
    given["job_id"] = json!("o-2");
    given["message_attributes"]["waiter.priority"] = json!({"data_type": "Number", "string_value": "7"});
    given["priority"] = json!(0);
    assert_eq!(call(&w, given).await["status"], "scheduled");
    let o2 = stored_jobs(&store)
        .into_iter()
        .find(|j| j.job.job_id.starts_with("o-2"))
        .expect("o-2's attempt stored");
    assert_eq!((o2.job.priority, o2.job.weight), (0, 1));
    assert!(!o2.job.message_attributes.contains_key("waiter.priority"));
}
