//! Issue 71: wave 6's steering (pause, debounce) where it meets retries, leases, series and FIFO.
//! Each test fails on the code before its defect's fix (b4faab2).

use chrono::TimeDelta;
use serde_json::{json, Value};

use crate::ports::{Clock, Jobs};
use crate::testing::*;

async fn get(w: &TestWaiter, id: &str) -> Value {
    call(w, json!({"action": "get", "queue": "orders", "job_id": id})).await
}

async fn run(w: &TestWaiter, clock: &FakeClock) -> crate::poller::RunSummary {
    dispatcher_for(w).run(clock.now() + TimeDelta::seconds(30)).await
}

fn retry_of(id: &str, attempt: u64, body: &str) -> Value {
    json!({"action": "retry", "queue": "orders", "job_id": id, "attempt": attempt, "message_body": body,
           "backoff": {"base_s": 30, "jitter": false}})
}

/// Defect 5: a debounced `replace` stored a new life, due within the second; the consumer of
/// the old life's message retries it. The new life is not the attempt that failed (no run sent
/// it): the retry answers `conflict`, and the new life's event is what arrives.
#[tokio::test(start_paused = true)]
async fn a_retry_of_the_last_lifes_message_leaves_the_new_life_a_replace_stored() {
    let (w, _, queue, clock) = test_waiter("orders", &[("WAITER_LOOKAHEAD", "0")]);
    schedule(&w, "d", 3600).await;
    clock.advance(TimeDelta::seconds(3601));
    run(&w, &clock).await;
    assert_eq!(queue.sent().len(), 1, "life 1 sent");
    let r = call(
        &w,
        json!({"queue": "orders", "job_id": "d", "message_body": "life-2", "delay_seconds": 3600,
               "on_duplicate": "replace"}),
    )
    .await;
    assert_eq!(r["status"], "scheduled", "{r}");
    // The consumer of life 1 fails just as life 2 falls due.
    clock.advance(TimeDelta::milliseconds(3_599_600));
    let r = call(&w, retry_of("d", 1, "body-d")).await;
    assert_eq!(r["status"], "conflict", "{r}");
    assert_eq!(get(&w, "d").await["message_body"], "life-2", "life 2 kept");
    clock.advance(TimeDelta::seconds(1));
    run(&w, &clock).await;
    let bodies: Vec<String> = queue.sent().iter().map(|s| s.message.body.clone()).collect();
    assert_eq!(bodies, ["body-d", "life-2"]);
}

/// Defect 5, with a pause: a paused job that a crashed run may have delivered
/// (`maybe_delivered_at`) is retried by its consumer. The next attempt is written, and stays
/// paused: nothing is sent until `resume`.
#[tokio::test(start_paused = true)]
async fn a_retry_of_a_paused_job_that_may_have_been_delivered_keeps_the_pause() {
    let (w, store, queue, clock) = test_waiter("orders", &[("WAITER_LOOKAHEAD", "0"), ("WAITER_SHARDS", "1")]);
    let mut job = stored("orders", "p", clock.now() + TimeDelta::hours(2), 1);
    job.maybe_delivered_at = Some(clock.now() - TimeDelta::seconds(5));
    job.paused_at = Some(clock.now() - TimeDelta::seconds(1));
    store.put_new(&job).await.expect("stored");
    let r = call(&w, retry_of("p", 1, "body-p")).await;
    assert_eq!(
        (r["status"].as_str(), r["attempt"].as_u64()),
        (Some("scheduled"), Some(2)),
        "{r}"
    );
    let g = get(&w, "p").await;
    assert_eq!(g["paused"], true, "the pause holds the next attempt: {g}");
    clock.advance(TimeDelta::seconds(60));
    run(&w, &clock).await;
    assert!(queue.sent().is_empty(), "nothing sent while paused");
    call(&w, json!({"action": "resume", "queue": "orders", "job_id": "p"})).await;
    run(&w, &clock).await;
    assert_eq!(queue.sent().len(), 1, "sent once resumed");
}

/// Defect 6: a paused job is sent by no run, so a lease over its shard (a FIFO hold, a crashed
/// run's) does not make `cancel`, `cancel_many` or `reschedule` of it answer `dispatching`.
#[tokio::test(start_paused = true)]
async fn a_paused_job_under_a_lease_is_cancelled_and_rescheduled_not_dispatching() {
    let (w, store, queue, clock) = test_waiter("orders", &[("WAITER_SHARDS", "1"), ("WAITER_LOOKAHEAD", "0")]);
    for id in ["a", "b", "c"] {
        schedule(&w, id, 3600).await;
        let r = call(&w, json!({"action": "pause", "queue": "orders", "job_id": id})).await;
        assert_eq!(r["status"], "paused", "{r}");
    }
    poller_holds_orders(&store, &clock, TimeDelta::hours(2)).await;
    let later = crate::time::format_rfc3339(clock.now() + TimeDelta::hours(3));
    let r = call(
        &w,
        json!({"action": "reschedule", "queue": "orders", "job_id": "a", "perform_at": later}),
    )
    .await;
    assert_eq!(r["status"], "rescheduled", "{r}");
    let r = call(&w, json!({"action": "cancel", "queue": "orders", "job_id": "b"})).await;
    assert_eq!(r["status"], "cancelled", "{r}");
    let r = call(
        &w,
        json!({"action": "cancel_many", "queue": "orders", "job_ids": ["c"]}),
    )
    .await;
    assert_eq!(
        (r["cancelled"].as_u64(), r["dispatching"].as_u64()),
        (Some(1), Some(0)),
        "{r}"
    );
    assert_eq!(get(&w, "a").await["paused"], true, "the pause kept");
    // An unpaused job under the same lease still answers `dispatching`.
    schedule(&w, "d", 3600).await;
    let r = call(&w, json!({"action": "cancel", "queue": "orders", "job_id": "d"})).await;
    assert_eq!(r["status"], "dispatching", "{r}");
    poller_releases_orders(&store).await;
    assert!(queue.sent().is_empty());
}

/// Defect 4: the occurrences that fell due while the queue was paused are missed: after the
/// queue's `resume`, a `skip` series sends none of them, a `one` series the latest.
#[tokio::test(start_paused = true)]
async fn occurrences_due_during_a_queue_pause_are_missed_after_its_resume() {
    let (w, _, queue, clock) = test_waiter("orders", &[("WAITER_LOOKAHEAD", "0"), ("WAITER_SHARDS", "1")]);
    for (id, catch_up) in [("skip", "skip"), ("one", "one")] {
        let r = call(
            &w,
            json!({"queue": "orders", "job_id": id, "message_body": id, "delay_seconds": 3600,
                   "repeat": {"every_s": 60, "catch_up": catch_up}}),
        )
        .await;
        assert_eq!(r["status"], "scheduled", "{r}");
    }
    clock.advance(TimeDelta::seconds(3600));
    run(&w, &clock).await;
    assert_eq!(queue.sent().len(), 2, "the first occurrences, before the pause");
    clock.advance(TimeDelta::seconds(10));
    call(&w, json!({"action": "pause", "queue": "orders"})).await;
    // Paused for two minutes: within `MAX_RUN_GAP`, so no outage rule hides the defect.
    for _ in 0..2 {
        clock.advance(TimeDelta::seconds(60));
        run(&w, &clock).await;
    }
    assert_eq!(queue.sent().len(), 2, "nothing while paused");
    call(&w, json!({"action": "resume", "queue": "orders"})).await;
    run(&w, &clock).await;
    let late: Vec<String> = queue.sent()[2..].iter().map(|s| s.message.body.clone()).collect();
    assert_eq!(late, ["one"], "skip sends none of the missed ones, one the latest");
    clock.advance(TimeDelta::seconds(60));
    run(&w, &clock).await;
    assert_eq!(queue.sent().len(), 5, "both go on at their next occurrence");
}

/// Defect 9: on a FIFO queue, a one-off job's own deduplication id does not go with `replace`
/// or `extend` (SQS would drop a new life sent within 5 minutes of the last one under the same
/// id, and the poller would record it as dispatched); without one each life has its own.
#[tokio::test(start_paused = true)]
async fn a_fifo_debounce_with_its_own_deduplication_id_is_refused_and_each_life_gets_its_own() {
    let (w, store, queue, clock) = test_waiter("jobs.fifo", &[("WAITER_LOOKAHEAD", "0"), ("WAITER_SHARDS", "1")]);
    let life = |body: &str, dedup: Option<&str>| {
        let mut j = json!({"queue": "jobs.fifo", "job_id": "d", "message_body": body, "delay_seconds": 0,
                           "message_group_id": "g", "on_duplicate": "replace"});
        if let Some(d) = dedup {
            j["message_deduplication_id"] = json!(d);
        }
        j
    };
    for kind in ["replace", "extend"] {
        let mut j = life("x", Some("same"));
        j["on_duplicate"] = json!(kind);
        let e = refused(&w, j).await;
        assert_eq!(e.field, "message_deduplication_id", "{kind}: {e:?}");
    }
    assert_eq!(store.len(), 0, "nothing stored");
    // Each life without one: both messages reach the group, seconds apart.
    for body in ["first", "second"] {
        let r = call(&w, life(body, None)).await;
        assert!(r["status"] == "scheduled" || r["status"] == "sent", "{r}");
        run(&w, &clock).await;
        clock.advance(TimeDelta::seconds(2));
    }
    let bodies: Vec<String> = queue.sent().iter().map(|s| s.message.body.clone()).collect();
    assert_eq!(bodies, ["first", "second"]);
}
