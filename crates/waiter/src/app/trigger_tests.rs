//! `trigger` where it meets the other features (issue 71, defects 2, 3, 7 and 8, and the rate):
//! a series' extra occurrence lives in the series' item, the run reads the job by its key, the
//! run holds no FIFO lease past the job, and no two occurrences share an id.

use chrono::TimeDelta;
use serde_json::json;

use super::repeat_tests::{get, run};
use crate::ports::Clock;
use crate::testing::attribute_text;
use crate::testing::{
    call, dispatcher_for, poller_holds_orders, poller_releases_orders, schedule, test_waiter, test_waiter_on, MemStore,
    TestWaiter,
};
use sqs_waiter_contract::JOB_ID_ATTRIBUTE;

async fn trigger(w: &TestWaiter, queue: &str, id: &str) -> serde_json::Value {
    call(w, json!({"action": "trigger", "queue": queue, "job_id": id})).await
}

async fn hourly(w: &TestWaiter, id: &str) -> serde_json::Value {
    let r = call(
        w,
        json!({"queue": "orders", "message_body": "tick", "job_id": id, "delay_seconds": 3600, "repeat": {"every_s": 3600}}),
    )
    .await;
    assert_eq!(r["status"], "scheduled", "{r}");
    r
}

/// Defect 3: the run finds the job it was just told to send by its key, whatever the index
/// shows yet (a GSI lags its table on AWS; the fakes' index did not).
#[tokio::test(start_paused = true)]
async fn trigger_sends_the_job_it_just_moved_though_the_index_does_not_show_it_yet() {
    let store = MemStore {
        index_lag: std::time::Duration::from_secs(30),
        ..MemStore::default()
    };
    let (w, queue, _) = test_waiter_on(store, "orders", &[("WAITER_SHARDS", "1"), ("WAITER_LOOKAHEAD", "0")]);
    schedule(&w, "a", 3600).await;
    hourly(&w, "s").await;
    tokio::time::sleep(std::time::Duration::from_secs(60)).await;
    assert_eq!(trigger(&w, "orders", "a").await["status"], "sent");
    let r = trigger(&w, "orders", "s").await;
    assert_eq!(r["status"], "sent", "{r}");
    assert_eq!(queue.sent().len(), 2);
}

/// Defect 2: an extra occurrence that waits (here for the lease a run holds) is part of its
/// series: `cancel` and `pause` of the series cover it; once resumed it goes, once.
#[tokio::test(start_paused = true)]
async fn a_waiting_extra_occurrence_is_cancelled_and_paused_with_its_series() {
    let (w, store, queue, clock) = test_waiter("orders", &[("WAITER_SHARDS", "1"), ("WAITER_LOOKAHEAD", "0")]);
    hourly(&w, "s").await;
    let next = hourly(&w, "p").await["perform_at"].clone();
    // A run holds the shard, its lease covering nothing stored: the trigger's write goes
    // through, and its own run finds the shard busy.
    poller_holds_orders(&store, &clock, TimeDelta::seconds(-1)).await;
    assert_eq!(trigger(&w, "orders", "s").await["status"], "dispatching");
    assert_eq!(trigger(&w, "orders", "p").await["status"], "dispatching");
    poller_releases_orders(&store).await;

    let c = call(&w, json!({"action": "cancel", "queue": "orders", "job_id": "s"})).await;
    assert_eq!(c["status"], "cancelled", "{c}");
    let p = call(&w, json!({"action": "pause", "queue": "orders", "job_id": "p"})).await;
    assert_eq!(p["status"], "paused", "{p}");
    clock.advance(TimeDelta::seconds(5));
    run(&w, &clock).await;
    assert!(queue.sent().is_empty(), "nothing after cancel or pause answered");

    let r = call(&w, json!({"action": "resume", "queue": "orders", "job_id": "p"})).await;
    assert_eq!(r["status"], "resumed", "{r}");
    run(&w, &clock).await;
    run(&w, &clock).await;
    let sent = queue.sent();
    assert_eq!(sent.len(), 1, "the extra occurrence, once");
    let id = attribute_text(&sent[0].message, JOB_ID_ATTRIBUTE).expect("waiter.job_id");
    assert!(id.starts_with("p@"), "{id}");
    let g = get(&w, "p").await;
    assert_eq!(
        (g["perform_at"].clone(), g["occurrences"].as_u64()),
        (next, Some(0)),
        "the series where it stood, its count untouched: {g}"
    );
}

/// Defect 8: an extra occurrence never takes the id of one of its series' occurrences, nor of
/// another extra one, and two triggers in one second both send.
#[tokio::test(start_paused = true)]
async fn extra_occurrences_take_seconds_of_their_own_and_two_triggers_in_a_second_both_send() {
    let (w, _, queue, clock) = test_waiter("orders", &[("WAITER_SHARDS", "1"), ("WAITER_LOOKAHEAD", "0")]);
    let r = call(
        &w,
        json!({"queue": "orders", "message_body": "tick", "job_id": "m", "delay_seconds": 60, "repeat": {"every_s": 60}}),
    )
    .await;
    assert_eq!(r["status"], "scheduled", "{r}");
    // The first occurrence is sent in its second; the triggers come within that second.
    clock.advance(TimeDelta::seconds(60));
    run(&w, &clock).await;
    let first = queue.sent();
    assert_eq!(first.len(), 1, "the first occurrence");
    let a = trigger(&w, "orders", "m").await;
    let b = trigger(&w, "orders", "m").await;
    assert_eq!(
        (a["status"].as_str(), b["status"].as_str()),
        (Some("sent"), Some("sent")),
        "{a} {b}"
    );
    let ids: Vec<String> = queue
        .sent()
        .iter()
        .filter_map(|s| attribute_text(&s.message, JOB_ID_ATTRIBUTE))
        .collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 3, "each occurrence its own id: {ids:?}");
    assert_eq!(a["job_id"].as_str(), Some(ids[1].as_str()));
    // Never before the instant its id names.
    for s in &queue.sent()[1..] {
        let id = attribute_text(&s.message, JOB_ID_ATTRIBUTE).expect("id");
        let epoch: i64 = id.rsplit_once('@').and_then(|(_, e)| e.parse().ok()).expect("epoch");
        let arrival = s.at + TimeDelta::seconds(i64::from(s.message.delay_seconds.unwrap_or(0)));
        assert!(arrival.timestamp() >= epoch, "{id} arrived at {arrival}");
    }
    assert_eq!(get(&w, "m").await["occurrences"].as_u64(), Some(1));
}

/// Defect 7: on a FIFO queue with a hold, the trigger's run holds the lease no longer than the
/// job it sends, so a regular run that starts beside it takes the shard over and sends the
/// group's next job on time.
#[tokio::test(start_paused = true)]
async fn a_trigger_on_a_fifo_queue_with_a_hold_leaves_the_shard_to_the_regular_run() {
    let (w, _, queue, clock) = test_waiter("billing.fifo", &[("WAITER_SHARDS", "1"), ("WAITER_FIFO_HOLD", "20")]);
    for (id, delay) in [("a", 3600), ("b", 5)] {
        let r = call(
            &w,
            json!({"queue": "billing.fifo", "job_id": id, "message_body": id, "delay_seconds": delay,
                   "message_group_id": "g"}),
        )
        .await;
        assert_eq!(r["status"], "scheduled", "{r}");
    }
    let started = clock.now();
    let regular = async {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        dispatcher_for(&w).run(clock.now() + TimeDelta::seconds(50)).await
    };
    let (r, summary) = tokio::join!(trigger(&w, "billing.fifo", "a"), regular);
    assert_eq!(r["status"], "sent", "{r}");
    assert_eq!(
        summary.busy_partitions, 0,
        "the regular run worked the shard: {summary:?}"
    );
    let sent = queue.sent();
    let b = sent
        .iter()
        .find(|s| s.message.body == "b")
        .expect("b sent by the regular run");
    assert!(
        b.at - started < TimeDelta::seconds(6),
        "b went when due, not a run later: {}",
        b.at - started
    );
}

/// Under `WAITER_MAX_RATE`, a triggered job takes the budget's next free second as any due job:
/// the call answers `sent` once SQS has it, its delay bringing it in that second.
#[tokio::test(start_paused = true)]
async fn under_the_rate_a_trigger_books_the_next_free_second_and_answers_sent() {
    let (w, _, queue, _) = test_waiter(
        "orders",
        &[
            ("WAITER_SHARDS", "1"),
            ("WAITER_LOOKAHEAD", "0"),
            ("WAITER_MAX_RATE", "1"),
        ],
    );
    schedule(&w, "a", 3600).await;
    schedule(&w, "b", 3600).await;
    let a = trigger(&w, "orders", "a").await;
    let b = trigger(&w, "orders", "b").await;
    assert_eq!(
        (a["status"].as_str(), b["status"].as_str()),
        (Some("sent"), Some("sent")),
        "{a} {b}"
    );
    let arrivals: Vec<i64> = queue
        .sent()
        .iter()
        .map(|s| (s.at + TimeDelta::seconds(i64::from(s.message.delay_seconds.unwrap_or(0)))).timestamp())
        .collect();
    assert_eq!(arrivals.len(), 2);
    assert_ne!(arrivals[0], arrivals[1], "one a second: {arrivals:?}");
}
