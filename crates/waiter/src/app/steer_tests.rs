//! `pause`, `resume` and `queues` against the in-memory store and the poller (DESIGN "Pause
//! and resume"). The guarantee against a send in flight is checked end to end at the fault
//! proxy (tests/tests/manage/pause.rs); `ports::pause` has the check's freshness rule.

use chrono::TimeDelta;
use serde_json::json;

use super::repeat_tests::{get, run, sent_occurrences};
use crate::ports::Clock;
use crate::testing::{call, poller_holds_orders, poller_releases_orders, refused, schedule, test_waiter};

fn bodies(queue: &crate::testing::FakeQueue) -> Vec<String> {
    queue.sent().iter().map(|s| s.message.body.clone()).collect()
}

#[tokio::test(start_paused = true)]
async fn a_paused_job_keeps_its_time_is_not_sent_and_goes_out_on_resume() {
    let (w, _, queue, clock) = test_waiter("orders", &[("WAITER_LOOKAHEAD", "0")]);
    schedule(&w, "a", 3600).await;
    schedule(&w, "b", 3600).await;
    let r = call(&w, json!({"action": "pause", "queue": "orders", "job_id": "a"})).await;
    assert_eq!(
        (r["status"].as_str(), r["version"].as_u64()),
        (Some("paused"), Some(2)),
        "{r}"
    );
    let again = call(&w, json!({"action": "pause", "queue": "orders", "job_id": "a"})).await;
    assert_eq!(
        (again["paused_at"].clone(), again["version"].as_u64()),
        (r["paused_at"].clone(), Some(2)),
        "a second pause changes nothing"
    );
    let g = get(&w, "a").await;
    assert_eq!(
        (g["paused"].as_bool(), g["perform_at"].clone()),
        (Some(true), get(&w, "a").await["perform_at"].clone())
    );
    // A reschedule keeps the pause; a stats call counts it.
    let r = call(
        &w,
        json!({"action": "reschedule", "queue": "orders", "job_id": "a", "delay_seconds": 1800}),
    )
    .await;
    assert_eq!(r["status"], "rescheduled", "{r}");
    assert_eq!(get(&w, "a").await["paused"], true);
    let s = call(&w, json!({"action": "stats", "queue": "orders"})).await;
    assert_eq!(
        (
            s["paused"].as_bool(),
            s["paused_jobs"].as_u64(),
            s["scheduled"].as_u64()
        ),
        (Some(false), Some(1), Some(2)),
        "{s}"
    );

    clock.advance(TimeDelta::hours(2));
    run(&w, &clock).await;
    assert_eq!(bodies(&queue), vec!["body-b"], "only the job not paused");
    clock.advance(TimeDelta::minutes(1));
    assert_eq!(run(&w, &clock).await.backlog_age_s, 0.0, "a paused job is no backlog");
    let r = call(&w, json!({"action": "resume", "queue": "orders", "job_id": "a"})).await;
    assert_eq!(
        (r["status"].as_str(), r["version"].as_u64()),
        (Some("resumed"), Some(4)),
        "{r}"
    );
    assert_eq!(get(&w, "a").await.get("paused"), None);
    run(&w, &clock).await;
    assert_eq!(bodies(&queue), vec!["body-b", "body-a"], "sent as an overdue job is");
    let r = call(&w, json!({"action": "pause", "queue": "orders", "job_id": "a"})).await;
    assert_eq!(r["status"], "not_found", "{r}");
}

#[tokio::test(start_paused = true)]
async fn a_paused_queue_stores_what_it_would_send_directly_and_sends_nothing_until_resumed() {
    let (w, store, queue, clock) = test_waiter("orders,other", &[("WAITER_LOOKAHEAD", "0")]);
    schedule(&w, "stored", 1200).await;
    let r = call(&w, json!({"action": "pause", "queue": "orders"})).await;
    assert_eq!((r["status"].as_str(), r.get("job_id")), (Some("paused"), None), "{r}");
    let r = call(
        &w,
        json!({"queue": "orders", "job_id": "direct", "message_body": "body-direct", "delay_seconds": 5}),
    )
    .await;
    assert_eq!(r["status"], "scheduled", "stored instead of sent: {r}");
    let r = call(
        &w,
        json!({"queue": "other", "job_id": "elsewhere", "message_body": "x", "delay_seconds": 5}),
    )
    .await;
    assert_eq!(r["status"], "sent", "another queue is not paused: {r}");
    let q = call(&w, json!({"action": "queues"})).await;
    assert_eq!(q["queues"][0]["queue"], "orders");
    assert_eq!(
        (q["queues"][0]["paused"].as_bool(), q["queues"][1]["paused"].as_bool()),
        (Some(true), Some(false)),
        "{q}"
    );
    assert_eq!(
        call(&w, json!({"action": "stats", "queue": "orders"})).await["paused"],
        true
    );

    clock.advance(TimeDelta::minutes(25));
    let summary = run(&w, &clock).await;
    assert_eq!(bodies(&queue), vec!["x"], "nothing of the paused queue");
    assert_eq!(summary.paused_queues, vec!["orders"]);
    assert_eq!(summary.backlog_age_s, 0.0, "a paused queue's backlog does not page");
    let paused_for = summary.by_queue["orders"].paused_for_s.expect("the metric's value");
    assert!((1500.0..1502.0).contains(&paused_for), "{paused_for}");
    // The job stays the job: a pause of one of its jobs still works, and cancel does.
    assert_eq!(
        call(&w, json!({"action": "cancel", "queue": "orders", "job_id": "stored"})).await["status"],
        "cancelled"
    );

    let r = call(&w, json!({"action": "resume", "queue": "orders"})).await;
    assert_eq!(r["status"], "resumed", "{r}");
    assert!(store.state.lock().unwrap().paused_queues.is_empty());
    run(&w, &clock).await;
    assert_eq!(bodies(&queue), vec!["x", "body-direct"]);
}

#[tokio::test(start_paused = true)]
async fn after_a_pause_answers_a_run_sends_only_the_batch_in_flight() {
    let (w, _, queue, clock) = test_waiter(
        "orders",
        &[
            ("WAITER_LOOKAHEAD", "0"),
            ("WAITER_SHARDS", "1"),
            ("WAITER_DIRECT_MAX_DELAY", "0"),
        ],
    );
    for i in 0..30 {
        schedule(&w, &format!("j{i}"), 60).await;
    }
    clock.advance(TimeDelta::minutes(2));
    let permits = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    *queue.hold_batches.lock().unwrap() = Some(permits.clone());
    let steer = async {
        // The run's first batch is waiting in SQS's call by now (nothing else is).
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert_eq!(
            call(&w, json!({"action": "pause", "queue": "orders"})).await["status"],
            "paused"
        );
        permits.add_permits(100);
    };
    let (summary, ()) = tokio::join!(run(&w, &clock), steer);
    // The first batch only (the jobs were stored a few milliseconds apart, so it may hold
    // fewer than ten).
    assert_eq!(summary.dispatched, queue.sent().len() as u64);
    assert!((1..=10).contains(&summary.dispatched), "{summary:?}");
    assert!(summary.pause_checks >= 2, "the next batch read the pause again");
    // Resumed, the rest goes out once.
    call(&w, json!({"action": "resume", "queue": "orders"})).await;
    run(&w, &clock).await;
    let mut sent = bodies(&queue);
    sent.sort();
    sent.dedup();
    assert_eq!(sent.len(), 30);
}

#[tokio::test(start_paused = true)]
async fn a_paused_series_resumes_by_its_catch_up() {
    let (w, _, queue, clock) = test_waiter("orders", &[("WAITER_LOOKAHEAD", "0"), ("WAITER_SHARDS", "1")]);
    let t0 = clock.now();
    let r = call(
        &w,
        json!({"queue": "orders", "message_body": "tick", "job_id": "tick", "delay_seconds": 60,
               "repeat": {"every_s": 60, "catch_up": "one"}}),
    )
    .await;
    assert_eq!(r["status"], "scheduled", "{r}");
    assert_eq!(
        call(&w, json!({"action": "pause", "queue": "orders", "job_id": "tick"})).await["status"],
        "paused"
    );
    for _ in 0..10 {
        clock.advance(TimeDelta::minutes(1));
        run(&w, &clock).await;
    }
    assert!(queue.sent().is_empty(), "nothing while paused");
    clock.advance(TimeDelta::seconds(30));
    assert_eq!(
        call(&w, json!({"action": "resume", "queue": "orders", "job_id": "tick"})).await["status"],
        "resumed"
    );
    run(&w, &clock).await;
    assert_eq!(
        sent_occurrences(&queue),
        vec![super::repeat_tests::rfc3339(t0 + TimeDelta::minutes(10))],
        "catch_up one: the latest occurrence that fell due during the pause, only"
    );
    assert_eq!(get(&w, "tick").await["occurrences"], 1);
}

#[tokio::test(start_paused = true)]
async fn a_job_a_poller_holds_is_not_paused_under_it() {
    let (w, store, _, clock) = test_waiter("orders", &[("WAITER_SHARDS", "1")]);
    schedule(&w, "a", 3600).await;
    poller_holds_orders(&store, &clock, TimeDelta::hours(2)).await;
    let r = call(&w, json!({"action": "pause", "queue": "orders", "job_id": "a"})).await;
    assert_eq!(r["status"], "dispatching", "{r}");
    assert_eq!(get(&w, "a").await.get("paused"), None, "nothing changed");
}

#[tokio::test]
async fn bad_pause_requests_name_the_field_and_change_nothing() {
    let (w, store, _, _) = test_waiter("orders", &[]);
    let e = refused(&w, json!({"action": "pause", "queue": "nope"})).await;
    assert_eq!(e.field, "queue", "{e:?}");
    let e = refused(&w, json!({"action": "resume", "queue": "orders", "job_id": ""})).await;
    assert_eq!(e.field, "job_id", "{e:?}");
    let e = refused(&w, json!({"action": "pause", "queue": "orders", "until": "x"})).await;
    assert_eq!(e.field, "until", "{e:?}");
    let e = refused(&w, json!({"action": "queues", "queue": "orders"})).await;
    assert_eq!(e.field, "queue", "{e:?}");
    assert!(store.state.lock().unwrap().paused_queues.is_empty());
}

#[tokio::test(start_paused = true)]
async fn trigger_sends_a_job_now_and_a_series_one_extra_occurrence() {
    let (w, store, queue, clock) = test_waiter("orders", &[("WAITER_LOOKAHEAD", "0"), ("WAITER_SHARDS", "1")]);
    schedule(&w, "a", 3600).await;
    let r = call(&w, json!({"action": "trigger", "queue": "orders", "job_id": "a"})).await;
    assert_eq!(r["status"], "sent", "{r}");
    let sent = queue.sent();
    assert_eq!((sent.len(), sent[0].message.body.as_str()), (1, "body-a"));
    assert_eq!(r["message_id"].as_str().map(str::len), Some(36), "SQS's id: {r}");
    assert_eq!(
        get(&w, "a").await["status"],
        "dispatched",
        "it left as any sent job does"
    );

    let r = call(
        &w,
        json!({"queue": "orders", "message_body": "tick", "job_id": "s", "delay_seconds": 3600, "repeat": {"every_s": 3600}}),
    )
    .await;
    let next = r["perform_at"].clone();
    let r = call(&w, json!({"action": "trigger", "queue": "orders", "job_id": "s"})).await;
    assert_eq!(r["status"], "sent", "{r}");
    let now = clock.now().timestamp();
    let id = r["job_id"].as_str().expect("id").to_owned();
    assert!(id == format!("s@{now}") || id == format!("s@{}", now + 1), "{id}");
    let g = get(&w, "s").await;
    assert_eq!(
        (g["perform_at"].clone(), g["occurrences"].as_u64()),
        (next, Some(0)),
        "the schedule and count untouched: {g}"
    );
    assert_eq!(queue.sent().len(), 2);

    // Paused (the queue, or the job), unknown, or held by a poller: nothing is sent.
    schedule(&w, "b", 3600).await;
    call(&w, json!({"action": "pause", "queue": "orders", "job_id": "b"})).await;
    assert_eq!(
        call(&w, json!({"action": "trigger", "queue": "orders", "job_id": "b"})).await["status"],
        "paused"
    );
    assert_eq!(
        call(&w, json!({"action": "trigger", "queue": "orders", "job_id": "nope"})).await["status"],
        "not_found"
    );
    schedule(&w, "c", 3600).await;
    poller_holds_orders(&store, &clock, TimeDelta::hours(2)).await;
    assert_eq!(
        call(&w, json!({"action": "trigger", "queue": "orders", "job_id": "c"})).await["status"],
        "dispatching"
    );
    poller_releases_orders(&store).await;
    call(&w, json!({"action": "pause", "queue": "orders"})).await;
    assert_eq!(
        call(&w, json!({"action": "trigger", "queue": "orders", "job_id": "c"})).await["status"],
        "paused"
    );
    assert_eq!(queue.sent().len(), 2);
}

#[tokio::test]
async fn preview_lists_a_schedules_next_occurrences_marking_a_clock_change_and_a_stored_series_within_its_count() {
    let (w, _, _, _) = test_waiter("orders", &[]);
    let r = call(
        &w,
        json!({"action": "preview", "repeat": {"cron": "30 2 * * *"}, "time_zone": "Europe/Berlin",
               "from": "2027-03-27T00:00:00Z", "count": 3}),
    )
    .await;
    assert_eq!(
        r,
        json!({"occurrences": [
            {"at": "2027-03-27T01:30:00Z", "local": "2027-03-27T02:30:00+01:00"},
            {"at": "2027-03-28T01:00:00Z", "local": "2027-03-28T03:00:00+02:00", "shifted": true},
            {"at": "2027-03-29T00:30:00Z", "local": "2027-03-29T02:30:00+02:00"}
        ]})
    );
    call(
        &w,
        json!({"queue": "orders", "message_body": "tick", "job_id": "s", "delay_seconds": 3600,
               "repeat": {"every_s": 3600, "count": 3}}),
    )
    .await;
    let r = call(&w, json!({"action": "preview", "queue": "orders", "job_id": "s"})).await;
    assert_eq!(
        r["occurrences"].as_array().map(Vec::len),
        Some(3),
        "within its count: {r}"
    );
    assert_eq!(r["occurrences"][0]["at"], get(&w, "s").await["perform_at"]);
    let r = call(&w, json!({"action": "preview", "queue": "orders", "job_id": "nope"})).await;
    assert_eq!(r, json!({"occurrences": [], "status": "not_found"}));
    schedule(&w, "one-off", 3600).await;
    let e = refused(&w, json!({"action": "preview", "queue": "orders", "job_id": "one-off"})).await;
    assert_eq!(e.field, "job_id");
    for (bad, field) in [
        (
            json!({"action": "preview", "repeat": {"every_s": 3600}, "count": 101}),
            "count",
        ),
        (
            json!({"action": "preview", "repeat": {"cron": "61 * * * *"}}),
            "repeat.cron",
        ),
        (
            json!({"action": "preview", "repeat": {"every_s": 3600}, "queue": "orders", "job_id": "s"}),
            "repeat",
        ),
        (
            json!({"action": "preview", "queue": "orders", "job_id": "s", "from": "2027-01-01T00:00:00Z"}),
            "from",
        ),
        (json!({"action": "preview"}), "repeat"),
    ] {
        assert_eq!(refused(&w, bad.clone()).await.field, field, "{bad}");
    }
}
