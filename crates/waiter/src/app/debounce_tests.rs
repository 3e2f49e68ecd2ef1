//! `enqueue` with `on_duplicate` (DESIGN "Debounce"): each case of the stored job, against the
//! in-memory store and the poller. The promise under interleavings, crashes and faults is the
//! simulation's (`simulation::debounce`).

use chrono::TimeDelta;
use serde_json::json;

use super::repeat_tests::{get, run};
use crate::error::HandlerError;
use crate::ports::Clock;
use crate::testing::{call, poller_holds_orders, poller_releases_orders, refused, test_waiter};

fn bodies(queue: &crate::testing::FakeQueue) -> Vec<String> {
    queue.sent().iter().map(|s| s.message.body.clone()).collect()
}

#[tokio::test(start_paused = true)]
async fn replace_takes_the_new_message_and_time_and_extend_only_the_time() {
    let (w, _, queue, clock) = test_waiter("orders", &[("WAITER_LOOKAHEAD", "0")]);
    let first = call(
        &w,
        json!({"queue": "orders", "job_id": "d", "message_body": "v1", "delay_seconds": 5, "on_duplicate": "replace"}),
    )
    .await;
    assert_eq!(
        (
            first["status"].as_str(),
            first["replaced"].as_bool(),
            first["duplicate"].as_bool()
        ),
        (Some("scheduled"), Some(false), Some(false)),
        "stored, never sent directly: {first}"
    );
    let r = call(
        &w,
        json!({"queue": "orders", "job_id": "d", "message_body": "v2", "delay_seconds": 60, "on_duplicate": "replace",
                            "message_attributes": {"k": {"data_type": "String", "string_value": "x"}}}),
    )
    .await;
    assert_eq!(
        (r["replaced"].as_bool(), r["duplicate"].as_bool(), r["version"].as_u64()),
        (Some(true), Some(true), Some(2)),
        "{r}"
    );
    let g = get(&w, "d").await;
    assert_eq!(
        (
            g["message_body"].as_str(),
            g["message_attributes"]["k"]["string_value"].as_str()
        ),
        (Some("v2"), Some("x")),
        "{g}"
    );
    let r = call(&w, json!({"queue": "orders", "job_id": "d", "message_body": "ignored", "delay_seconds": 120, "on_duplicate": "extend"})).await;
    assert_eq!(
        (r["replaced"].as_bool(), r["version"].as_u64()),
        (Some(true), Some(3)),
        "{r}"
    );
    let g = get(&w, "d").await;
    assert_eq!(g["message_body"], "v2", "extend keeps the message");
    let due = crate::time::parse_time_str(g["perform_at"].as_str().expect("perform_at")).expect("a time");
    assert!(due >= clock.now() + TimeDelta::seconds(119), "{g}");
    // Nothing before the last call's time; then the one message, with the job's body.
    clock.advance(TimeDelta::seconds(100));
    run(&w, &clock).await;
    assert!(queue.sent().is_empty());
    clock.advance(TimeDelta::seconds(30));
    run(&w, &clock).await;
    assert_eq!(bodies(&queue), vec!["v2"]);
}

#[tokio::test(start_paused = true)]
async fn a_job_already_sent_is_replaced_by_a_new_one_and_a_held_one_is_waited_for() {
    let (w, store, queue, clock) = test_waiter("orders", &[("WAITER_LOOKAHEAD", "0"), ("WAITER_SHARDS", "1")]);
    call(
        &w,
        json!({"queue": "orders", "job_id": "d", "message_body": "v1", "delay_seconds": 60, "on_duplicate": "replace"}),
    )
    .await;
    clock.advance(TimeDelta::seconds(61));
    run(&w, &clock).await;
    assert_eq!(bodies(&queue), vec!["v1"]);
    // Only its history record remains: a new job in its place, a later version.
    let r = call(
        &w,
        json!({"queue": "orders", "job_id": "d", "message_body": "v2", "delay_seconds": 60, "on_duplicate": "replace"}),
    )
    .await;
    assert_eq!(
        (r["status"].as_str(), r["replaced"].as_bool(), r["duplicate"].as_bool()),
        (Some("scheduled"), Some(false), Some(true)),
        "{r}"
    );
    assert!(r["version"].as_u64() > Some(1), "{r}");

    // A poller's lease covers the job: the call neither writes nor answers until it lapses
    // into a removal; here the deadline comes first, and nothing changed.
    poller_holds_orders(&store, &clock, TimeDelta::hours(1)).await;
    let held = w
        .handle_until(
            &json!({"queue": "orders", "job_id": "d", "message_body": "v3", "delay_seconds": 60, "on_duplicate": "replace"}),
            clock.now() + TimeDelta::seconds(5),
        )
        .await;
    assert!(
        matches!(&held, Err(e @ HandlerError::Port(_)) if e.is_retryable()),
        "{held:?}"
    );
    assert_eq!(get(&w, "d").await["message_body"], "v2");
    poller_releases_orders(&store).await;
    let r = call(
        &w,
        json!({"queue": "orders", "job_id": "d", "message_body": "v3", "delay_seconds": 60, "on_duplicate": "replace"}),
    )
    .await;
    assert_eq!(r["replaced"], true, "{r}");
}

#[tokio::test(start_paused = true)]
async fn bad_debounces_name_on_duplicate_and_change_nothing() {
    let (w, store, queue, _) = test_waiter("orders", &[]);
    let e = refused(
        &w,
        json!({"queue": "orders", "message_body": "x", "on_duplicate": "replace"}),
    )
    .await;
    assert_eq!(e.field, "on_duplicate", "{e:?}");
    let e = refused(
        &w,
        json!({"queue": "orders", "job_id": "d", "message_body": "x", "on_duplicate": "merge"}),
    )
    .await;
    assert_eq!(e.field, "on_duplicate", "{e:?}");
    let e = refused(
        &w,
        json!({"queue": "orders", "job_id": "s", "message_body": "x", "on_duplicate": "extend", "repeat": {"every_s": 60}}),
    )
    .await;
    assert_eq!(e.field, "on_duplicate", "{e:?}");
    call(
        &w,
        json!({"queue": "orders", "job_id": "s", "message_body": "x", "delay_seconds": 60, "repeat": {"every_s": 60}}),
    )
    .await;
    let e = refused(
        &w,
        json!({"queue": "orders", "job_id": "s", "message_body": "y", "delay_seconds": 90, "on_duplicate": "extend"}),
    )
    .await;
    assert_eq!(e.field, "on_duplicate", "{e:?}");
    assert_eq!(get(&w, "s").await["version"], 1, "nothing changed");
    assert_eq!(store.state.lock().unwrap().items.len(), 1);
    assert!(queue.sent().is_empty());
}

/// Issue 71, defect 1: `extend` kept the stored `expires_at` and moved the job past it; the call
/// answered `replaced`, and the poller then dropped the job as expired. It is refused now, naming
/// `expires_at`, and the job stays as it was: it is still delivered at its own time.
#[tokio::test(start_paused = true)]
async fn an_extend_past_the_jobs_expires_at_is_refused_and_the_job_is_delivered_as_stored() {
    let (w, _, queue, clock) = test_waiter("orders", &[("WAITER_LOOKAHEAD", "0")]);
    let expires = crate::time::format_rfc3339(clock.now() + TimeDelta::seconds(60));
    call(
        &w,
        json!({"queue": "orders", "job_id": "e", "message_body": "v1", "delay_seconds": 30, "expires_at": expires, "on_duplicate": "extend"}),
    )
    .await;
    let e = refused(
        &w,
        json!({"queue": "orders", "job_id": "e", "message_body": "v1", "delay_seconds": 120, "on_duplicate": "extend"}),
    )
    .await;
    assert_eq!(e.field, "expires_at", "{e:?}");
    assert!(e.rule.contains("use replace"), "{e:?}");
    assert_eq!(get(&w, "e").await["version"], 1, "nothing changed");
    // Within its expiry an extend still moves it.
    let r = call(
        &w,
        json!({"queue": "orders", "job_id": "e", "message_body": "v1", "delay_seconds": 45, "on_duplicate": "extend"}),
    )
    .await;
    assert_eq!(r["replaced"].as_bool(), Some(true), "{r}");
    clock.advance(TimeDelta::seconds(50));
    run(&w, &clock).await;
    assert_eq!(
        bodies(&queue),
        vec!["v1"],
        "delivered at the extended time, before its expiry"
    );
}

/// A `replace` of a stored series by a series keeps what the series' life has: the occurrences
/// it sent (its `count` goes on from them) and a `trigger`'s extra occurrence still waiting,
/// sent once; a `count` it has already reached is refused (found in review, issue 71).
#[tokio::test(start_paused = true)]
async fn a_replace_of_a_series_keeps_its_occurrences_and_a_waiting_extra_occurrence() {
    let (w, store, queue, clock) = test_waiter("orders", &[("WAITER_LOOKAHEAD", "0"), ("WAITER_SHARDS", "1")]);
    let series = |body: &str, count: u64| {
        json!({"queue": "orders", "job_id": "s", "message_body": body, "delay_seconds": 60,
               "repeat": {"every_s": 3600, "count": count}, "on_duplicate": "replace"})
    };
    call(&w, series("v1", 3)).await;
    clock.advance(TimeDelta::seconds(61));
    run(&w, &clock).await;
    assert_eq!(get(&w, "s").await["occurrences"], 1);
    // A trigger whose run finds the shard held: its extra occurrence waits in the series.
    poller_holds_orders(&store, &clock, TimeDelta::seconds(-1)).await;
    let t = call(&w, json!({"action": "trigger", "queue": "orders", "job_id": "s"})).await;
    assert_eq!(t["status"], "dispatching", "{t}");
    poller_releases_orders(&store).await;
    let r = call(&w, series("v2", 3)).await;
    assert_eq!(
        (r["status"].as_str(), r["replaced"].as_bool()),
        (Some("scheduled"), Some(true)),
        "{r}"
    );
    assert_eq!(get(&w, "s").await["occurrences"], 1, "its count goes on");
    run(&w, &clock).await;
    assert_eq!(
        bodies(&queue),
        ["v1", "v2"],
        "the waiting extra occurrence, once, with the new body"
    );
    let e = refused(&w, series("v3", 1)).await;
    assert_eq!(e.field, "repeat.count", "{e:?}");
}
