//! Issue 46: `retry` and the operator actions where they meet a poller run. Each test fails on
//! the code before its defect's fix.

use chrono::TimeDelta;
use serde_json::{json, Value};

use crate::app::Waiter;
use crate::job::AttributeData;
use crate::ports::Clock;
use crate::testing::*;

fn fifo_retry(job_id: &str, attempt: u64) -> Value {
    json!({"action": "retry", "queue": "jobs.fifo", "job_id": job_id, "attempt": attempt,
           "message_body": "again", "message_group_id": "g",
           "backoff": {"base_s": 30, "jitter": false}, "max_attempts": 5})
}

fn attempts_sent(queue: &FakeQueue) -> Vec<(String, AttributeData)> {
    queue
        .sent()
        .iter()
        .map(|s| {
            let attempt = s
                .message
                .attributes
                .get("waiter.attempt")
                .map_or(AttributeData::String("1".into()), |a| a.data.clone());
            (s.message.body.clone(), attempt)
        })
        .collect()
}

/// Defect 1: a FIFO run holding for due jobs keeps what it sent stored until it ends. A
/// consumer that fails fast retries attempt 1 while it is still stored: the retry must schedule
/// attempt 2 (it answered `conflict`, the consumer deleted the message, and the chain was lost),
/// and the run's removal of attempt 1 must leave attempt 2 alone.
#[tokio::test(start_paused = true)]
async fn a_retry_before_the_poller_removed_the_sent_attempt_schedules_the_next() {
    let (w, store, queue, clock) = test_waiter(
        "jobs.fifo",
        &[
            ("WAITER_SHARDS", "1"),
            ("WAITER_FIFO_HOLD", "10"),
            ("WAITER_LOOKAHEAD", "60"),
            ("WAITER_DIRECT_MAX_DELAY", "0"),
        ],
    );
    let d = dispatcher_for(&w);
    let now = clock.now();
    for (id, in_s) in [("f", 1), ("later", 8)] {
        let at = crate::time::format_rfc3339(now + TimeDelta::seconds(in_s));
        let r = call(
            &w,
            json!({"queue": "jobs.fifo", "job_id": id, "message_body": id,
                   "message_group_id": "g", "perform_at": at}),
        )
        .await;
        assert_eq!(r["status"], "scheduled", "{r}");
    }
    let consumer = async {
        while queue.sent().is_empty() {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert_eq!(store.len(), 2, "the holding run has not removed f yet");
        call(&w, fifo_retry("f", 1)).await
    };
    let (summary, reply) = tokio::join!(d.run(now + TimeDelta::seconds(30)), consumer);
    assert_eq!(
        (reply["status"].as_str(), reply["attempt"].as_u64()),
        (Some("scheduled"), Some(2)),
        "{reply}"
    );
    assert_eq!(summary.dispatched, 2, "{summary:?}");
    let stored = store.get(
        &crate::config::QueueName::parse("jobs.fifo").unwrap(),
        crate::ports::Partition::Shard(0),
        "f",
    );
    assert_eq!(
        stored.map(|j| j.job.attempt),
        Some(2),
        "the run's removal of attempt 1 left attempt 2 stored"
    );
    tokio::time::sleep(std::time::Duration::from_secs(31)).await;
    d.run(clock.now() + TimeDelta::seconds(30)).await;
    assert_eq!(
        attempts_sent(&queue),
        [
            ("f".to_owned(), AttributeData::String("1".into())),
            ("later".to_owned(), AttributeData::String("1".into())),
            ("again".to_owned(), AttributeData::String("2".into())),
        ]
    );
    assert_eq!(store.len(), 0);
    let again = call(&w, fifo_retry("f", 1)).await;
    assert_eq!(again["duplicate"], true, "{again}");
}

fn retry(job_id: &str, attempt: u64, max_attempts: u64) -> Value {
    json!({"action": "retry", "queue": "orders", "job_id": job_id, "attempt": attempt, "message_body": "b",
           "backoff": {"base_s": 60, "factor": 1, "jitter": false}, "max_attempts": max_attempts,
           "error": "boom"})
}

/// Defect 3: `cancel` of a parked, exhausted job deleted the parked item and then wrote its
/// record as a second step. A redelivered message of the last attempt, retried with a larger
/// `max_attempts` between the two, found only the record of the last attempt, scheduled the
/// next over it, and the cancel's record then stood aside for it: `cancelled`, and the chain
/// went on.
#[tokio::test(start_paused = true)]
async fn a_retry_racing_the_cancel_of_a_parked_job_schedules_nothing_once_cancelled() {
    for seed in 0..40 {
        let (w, mem, queue, _) = racing_waiter(seed, &[("WAITER_DIRECT_MAX_DELAY", "0"), ("WAITER_LOOKAHEAD", "0")]);
        let parked = w.handle(&retry("c-1", 3, 3)).await.unwrap();
        assert_eq!(parked["status"], "parked", "seed {seed}: {parked}");
        let cancel = json!({"action": "cancel", "queue": "orders", "job_id": "c-1"});
        let redelivered = retry("c-1", 3, 9);
        let (c, r) = tokio::join!(w.handle(&cancel), w.handle(&redelivered));
        let (c, r) = (c.unwrap(), r.unwrap());
        assert_eq!(c["status"], "cancelled", "seed {seed}: {c}");
        assert_eq!(mem.len(), 0, "seed {seed}: cancelled, yet stored: {r}");
        assert!(queue.sent().is_empty(), "seed {seed}: {r}");
        let later = w.handle(&retry("c-1", 3, 9)).await.unwrap();
        assert_eq!(later["status"], "cancelled", "seed {seed}: {later}");
    }
}

/// Defect 4: `redrive` of an exhausted job put the attempt home and then removed the parked
/// copy as a second call. When that call failed, the copy stayed, and every `retry` of the
/// redriven attempt met it and answered `conflict`: the chain was lost. Calls here fail at
/// random, before or after they take effect, and callers call again until answered.
#[tokio::test(start_paused = true)]
async fn a_redriven_attempt_is_retried_whatever_fails_during_the_redrive() {
    for seed in 0..60 {
        let mem = MemStore::default();
        let (w, queue, clock) = test_waiter_on(
            mem.clone(),
            "orders",
            &[("WAITER_DIRECT_MAX_DELAY", "0"), ("WAITER_LOOKAHEAD", "0")],
        );
        assert_eq!(call(&w, retry("d-1", 3, 3)).await["status"], "parked");
        let faulty = FaultyStore {
            inner: mem.clone(),
            faults: Faults::seeded(seed, 0.3),
        };
        let operator = Waiter::new(w.config.clone(), faulty, queue.clone(), clock.clone());
        let redrive = json!({"action": "redrive", "queue": "orders", "job_id": "d-1"});
        let mut r = Value::Null;
        for _ in 0..50 {
            if let Ok(answer) = operator.handle(&redrive).await {
                r = answer;
                break;
            }
        }
        // `not_found`: an earlier call moved it and its answer was lost.
        assert!(
            ["scheduled", "not_found"].contains(&r["status"].as_str().unwrap_or_default()),
            "seed {seed}: {r}"
        );
        let got = call(&w, json!({"action": "get", "queue": "orders", "job_id": "d-1"})).await;
        assert_eq!(
            (got["status"].as_str(), got["attempt"].as_u64()),
            (Some("scheduled"), Some(4)),
            "seed {seed}: {got}"
        );
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        dispatcher_for(&w).run(clock.now() + TimeDelta::seconds(30)).await;
        let next = call(&w, retry("d-1", 4, 9)).await;
        assert_eq!(
            (next["status"].as_str(), next["attempt"].as_u64()),
            (Some("scheduled"), Some(5)),
            "seed {seed}: {next}"
        );
    }
}

/// Defect 7: with history off, `cancel` of an attempt-1 job that may already have been
/// delivered (due, and sent by a run that had not removed it yet) left no record, so a retry of
/// that delivery, after `cancelled`, started the chain again with attempt 2.
#[tokio::test(start_paused = true)]
async fn with_history_off_a_cancel_of_a_job_that_may_have_been_sent_stops_its_chain() {
    let (w, store, queue, clock) = test_waiter(
        "orders",
        &[
            ("WAITER_HISTORY_DAYS", "0"),
            ("WAITER_SHARDS", "1"),
            ("WAITER_DIRECT_MAX_DELAY", "0"),
            ("WAITER_LOOKAHEAD", "0"),
        ],
    );
    // Sent by a run whose removal did not happen (a crash; its lease has lapsed since).
    store.insert(stored("orders", "h-1", clock.now() - TimeDelta::seconds(5), 1));
    let c = call(&w, json!({"action": "cancel", "queue": "orders", "job_id": "h-1"})).await;
    assert_eq!(c["status"], "cancelled", "{c}");
    let r = call(&w, retry("h-1", 1, 5)).await;
    assert_eq!(
        (r["status"].as_str(), r["attempt"].as_u64()),
        (Some("cancelled"), Some(1)),
        "{r}"
    );
    assert_eq!(store.len(), 0);
    assert!(queue.sent().is_empty());
    // A job cancelled before it was due leaves no record with history off, as before.
    store.insert(stored("orders", "h-2", clock.now() + TimeDelta::hours(1), 1));
    call(&w, json!({"action": "cancel", "queue": "orders", "job_id": "h-2"})).await;
    let got = call(&w, json!({"action": "get", "queue": "orders", "job_id": "h-2"})).await;
    assert_eq!(got["status"], "not_found", "{got}");
}
