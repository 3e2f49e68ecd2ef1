//! One job across its attempts (issue 35), on the in-memory fakes: each defect of the issue
//! that the e2e suite does not show from outside, and the rules of the chain.

use chrono::TimeDelta;
use serde_json::{json, Value};

use crate::app::Waiter;
use crate::job::AttributeData;
use crate::ports::{Clock, Partition};
use crate::testing::*;

const NO_LOOKAHEAD: [(&str, &str); 2] = [("WAITER_DIRECT_MAX_DELAY", "0"), ("WAITER_LOOKAHEAD", "0")];

fn retry(job_id: &str, attempt: u64, base_s: u64, max_attempts: u64) -> Value {
    json!({"action": "retry", "queue": "orders", "job_id": job_id, "attempt": attempt, "message_body": "b",
           "backoff": {"base_s": base_s, "factor": 1, "jitter": false}, "max_attempts": max_attempts,
           "error": "boom"})
}

fn attempt_sent(s: &Sent) -> Option<String> {
    match &s.message.attributes.get("waiter.attempt")?.data {
        AttributeData::String(v) => Some(v.clone()),
        AttributeData::Binary(_) => None,
    }
}

/// Lets the attempt stored fall due and a poller run send it.
async fn deliver(w: &TestWaiter, after_s: u64) {
    tokio::time::sleep(std::time::Duration::from_secs(after_s)).await;
    dispatcher_for(w).run(w.clock.now() + TimeDelta::seconds(30)).await;
}

#[tokio::test(start_paused = true)]
async fn with_history_off_a_stale_attempt_is_a_conflict_for_fourteen_days_then_forgotten() {
    let (w, _, queue, _) = test_waiter(
        "orders",
        &[("WAITER_HISTORY_DAYS", "0"), NO_LOOKAHEAD[0], NO_LOOKAHEAD[1]],
    );
    assert_eq!(call(&w, retry("o-5", 1, 1, 10)).await["attempt"], 2);
    deliver(&w, 2).await;
    assert_eq!(call(&w, retry("o-5", 2, 1, 10)).await["attempt"], 3);
    deliver(&w, 2).await;
    assert_eq!(queue.sent().len(), 2);
    // A backoff of days: SQS may redeliver attempt 1 up to 14 days after it was sent.
    tokio::time::sleep(std::time::Duration::from_secs(13 * 86_400)).await;
    let stale = call(&w, retry("o-5", 1, 1, 10)).await;
    assert_eq!(
        (stale["status"].as_str(), stale["attempt"].as_u64()),
        (Some("conflict"), Some(3)),
        "{stale}"
    );
    tokio::time::sleep(std::time::Duration::from_secs(2 * 86_400)).await;
    let later = call(&w, retry("o-5", 3, 1, 10)).await;
    assert_eq!(later["attempt"], 4, "past SQS's retention the record is gone: {later}");
}

#[tokio::test(start_paused = true)]
async fn an_attempt_keeps_the_windows_of_its_job() {
    let (w, _, _, clock) = test_waiter("orders", &NO_LOOKAHEAD);
    // 09:00:00 UTC on the fake clock's day; the window opens at 10:00.
    let job = json!({"queue": "orders", "job_id": "w-1", "message_body": "b", "delay_seconds": 3,
                     "windows": [{"from": "09:00", "to": "09:05"}], "time_zone": "UTC"});
    assert_eq!(call(&w, job).await["status"], "scheduled");
    deliver(&w, 4).await;
    // Ten minutes' backoff lands past 09:05: the attempt is due at the next opening.
    let r = call(&w, retry("w-1", 1, 600, 10)).await;
    let due = crate::time::parse_time_str(r["perform_at"].as_str().unwrap_or_default()).unwrap();
    let next_day = clock
        .now()
        .date_naive()
        .succ_opt()
        .unwrap()
        .and_hms_opt(9, 0, 0)
        .unwrap()
        .and_utc();
    assert_eq!(due, next_day, "{r}");
    let got = call(&w, json!({"action": "get", "queue": "orders", "job_id": "w-1"})).await;
    assert_eq!(
        (got["attempt"].as_u64(), got["windows"][0]["from"].as_str()),
        (Some(2), Some("09:00")),
        "{got}"
    );
}

#[tokio::test(start_paused = true)]
async fn racing_retries_with_different_max_attempts_leave_the_job_parked_or_scheduled_never_both() {
    for seed in 0..40 {
        let mem = MemStore::default();
        let faults = Faults::seeded(seed, 0.0).with_latency(20);
        let store = FaultyStore {
            inner: mem.clone(),
            faults,
        };
        let clock = FakeClock::default();
        let queue = FakeQueue::new(clock.clone());
        let w = Waiter::new(config("orders", &NO_LOOKAHEAD), store, queue, clock);
        let (last, more) = (retry("x-1", 3, 60, 3), retry("x-1", 3, 60, 9));
        let (a, b) = tokio::join!(w.handle(&last), w.handle(&more));
        let (a, b) = (a.unwrap(), b.unwrap());
        let state = mem.state.lock().unwrap();
        let parked = state.items.keys().filter(|(_, p, _)| *p == Partition::Parked).count();
        let scheduled = state.items.keys().filter(|(_, p, _)| *p != Partition::Parked).count();
        assert_eq!(parked + scheduled, 1, "seed {seed}: {a} {b}");
        let fresh = [&a, &b].iter().filter(|r| r["duplicate"] == false).count();
        assert_eq!(fresh, 1, "seed {seed}: one of them made the attempt: {a} {b}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_redriven_last_attempt_is_retried_and_parked_again_and_a_cancel_stops_the_chain() {
    let (w, store, queue, _) = test_waiter("orders", &NO_LOOKAHEAD);
    let parked = call(&w, retry("p-1", 3, 1, 3)).await;
    assert_eq!(
        (parked["status"].as_str(), parked["attempt"].as_u64()),
        (Some("parked"), Some(4))
    );
    let r = call(&w, json!({"action": "redrive", "queue": "orders", "job_id": "p-1"})).await;
    assert_eq!(
        (r["status"].as_str(), r["attempt"].as_u64()),
        (Some("scheduled"), Some(4)),
        "{r}"
    );
    deliver(&w, 1).await;
    assert_eq!(queue.sent().iter().filter_map(attempt_sent).collect::<Vec<_>>(), ["4"]);
    let again = call(&w, retry("p-1", 4, 1, 3)).await;
    assert_eq!(
        (
            again["status"].as_str(),
            again["attempts"].as_u64(),
            again["attempt"].as_u64()
        ),
        (Some("parked"), Some(4), Some(5)),
        "{again}"
    );
    assert_eq!(
        call(&w, json!({"action": "cancel", "queue": "orders", "job_id": "p-1"})).await["status"],
        "cancelled"
    );
    for attempt in [4, 3] {
        let after = call(&w, retry("p-1", attempt, 1, 10)).await;
        assert_eq!(
            (after["status"].as_str(), after["attempt"].as_u64()),
            (Some("cancelled"), Some(5)),
            "{after}"
        );
    }
    assert_eq!(store.len(), 0, "nothing stored after the cancel");
}

#[tokio::test(start_paused = true)]
async fn enqueue_and_reschedule_replace_a_callers_waiter_attributes_and_keep_the_attempt() {
    let (w, store, queue, _) = test_waiter("orders", &NO_LOOKAHEAD);
    let forged = json!({"waiter.attempt": {"data_type": "Number", "string_value": "9"},
                        "waiter.job_id": {"data_type": "String", "string_value": "other"},
                        "kind": {"data_type": "String", "string_value": "k"}});
    let job = json!({"queue": "orders", "job_id": "f-1", "message_body": "b", "delay_seconds": 60,
                     "message_attributes": forged});
    assert_eq!(call(&w, job).await["status"], "scheduled");
    let orders = crate::config::QueueName::parse("orders").unwrap();
    let stored = (0..64)
        .find_map(|shard| store.get(&orders, Partition::Shard(shard), "f-1"))
        .expect("stored in its shard");
    assert_eq!(
        (
            stored.job.attempt,
            stored.job.message_attributes.keys().collect::<Vec<_>>()
        ),
        (1, vec![&"kind".to_owned()])
    );
    assert_eq!(call(&w, retry("g-1", 1, 60, 10)).await["attempt"], 2);
    let moved = json!({"action": "reschedule", "queue": "orders", "job_id": "g-1", "delay_seconds": 1,
                       "message_attributes": forged});
    let r = call(&w, moved).await;
    assert_eq!(
        (r["status"].as_str(), r["attempt"].as_u64()),
        (Some("rescheduled"), Some(2)),
        "{r}"
    );
    deliver(&w, 2).await;
    let sent = queue.sent();
    let g1 = sent
        .iter()
        .find(|s| s.message.body == "b" && attempt_sent(s).is_some())
        .expect("g-1 sent");
    assert_eq!(
        attempt_sent(g1).as_deref(),
        Some("2"),
        "its attempt, not the caller's 9"
    );
    assert_eq!(
        crate::job::number_in::<String>(&g1.message.attributes, "waiter.job_id").as_deref(),
        Some("g-1"),
        "its own id, as every message carries it, not the caller's"
    );
}
