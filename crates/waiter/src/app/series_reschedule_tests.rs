//! `reschedule` of a series (issue 60, defect 5; DESIGN: it "may change repeat, time_zone,
//! body and attributes (a new perform_at restarts the series there)"): the job's zone is kept
//! unless one is given, `time_zone` alone re-reads the cron and windows, a change without a
//! time goes on from the next occurrence, and a past start stays in the past.

use chrono::{DateTime, TimeDelta, Timelike, Utc};
use serde_json::json;

use super::repeat_tests::{get, occurrences, rfc3339, run};
use crate::ports::Clock;
use crate::testing::{call, refused, test_waiter, FakeClock, FakeQueue, TestWaiter};

fn time(v: &serde_json::Value) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(v.as_str().expect("a time"))
        .expect("time")
        .to_utc()
}

/// A daily 09:00 series in Berlin, arriving only 08:00-18:00 Berlin time, due from tomorrow.
async fn berlin() -> (TestWaiter, FakeQueue, FakeClock) {
    let (w, _, queue, clock) = test_waiter("orders", &[("WAITER_LOOKAHEAD", "0"), ("WAITER_SHARDS", "1")]);
    let r = call(
        &w,
        json!({"queue": "orders", "message_body": "v1", "job_id": "d", "delay_seconds": 86_400,
               "windows": [{"from": "08:00", "to": "18:00"}], "time_zone": "Europe/Berlin",
               "repeat": {"cron": "0 9 * * *"}}),
    )
    .await;
    assert_eq!(r["status"], "scheduled", "{r}");
    (w, queue, clock)
}

/// A one-off job `plain`, neither in windows nor a series, due in an hour.
async fn plain(w: &TestWaiter) {
    call(
        w,
        json!({"queue": "orders", "message_body": "b", "job_id": "plain", "delay_seconds": 3600}),
    )
    .await;
}

fn berlin_hour(t: DateTime<Utc>) -> u32 {
    t.with_timezone(&chrono_tz::Europe::Berlin).hour()
}

#[tokio::test(start_paused = true)]
async fn a_new_repeat_without_a_zone_is_read_in_the_series_own() {
    let (w, _, _) = berlin().await;
    let r = call(
        &w,
        json!({"action": "reschedule", "queue": "orders", "job_id": "d", "repeat": {"cron": "0 10 * * *"}}),
    )
    .await;
    assert_eq!(r["status"], "rescheduled", "{r}");
    let g = get(&w, "d").await;
    assert_eq!(g["time_zone"], "Europe/Berlin", "{g}");
    assert_eq!(berlin_hour(time(&g["perform_at"])), 10, "read in UTC: {g}");
    assert_eq!(g["windows"][0]["from"], "08:00", "{g}");
}

#[tokio::test(start_paused = true)]
async fn a_time_zone_alone_moves_the_cron_and_the_windows_to_it() {
    let (w, _, _) = berlin().await;
    let r = call(
        &w,
        json!({"action": "reschedule", "queue": "orders", "job_id": "d", "time_zone": "America/New_York"}),
    )
    .await;
    assert_eq!(r["status"], "rescheduled", "{r}");
    let g = get(&w, "d").await;
    assert_eq!(g["time_zone"], "America/New_York", "{g}");
    let next = time(&g["perform_at"]).with_timezone(&chrono_tz::America::New_York);
    assert_eq!((next.hour(), next.minute()), (9, 0), "{g}");
    // A job with neither windows nor a cron has no zone to move.
    plain(&w).await;
    let e = refused(
        &w,
        json!({"action": "reschedule", "queue": "orders", "job_id": "plain", "time_zone": "UTC", "delay_seconds": 60}),
    )
    .await;
    assert_eq!(
        (e.field.as_str(), e.rule.as_str()),
        ("time_zone", "goes with windows or repeat")
    );
}

#[tokio::test(start_paused = true)]
async fn a_body_alone_changes_what_the_next_occurrence_carries_and_not_when() {
    let (w, queue, clock) = berlin().await;
    let before = get(&w, "d").await;
    let r = call(
        &w,
        json!({"action": "reschedule", "queue": "orders", "job_id": "d", "message_body": "v2"}),
    )
    .await;
    assert_eq!(r["status"], "rescheduled", "{r}");
    assert_eq!(r["perform_at"], before["perform_at"], "{r}");
    let due = time(&before["perform_at"]);
    clock.advance(due - clock.now() + TimeDelta::seconds(1));
    run(&w, &clock).await;
    let sent = queue.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].message.body, "v2");
    // A one-off job still needs its time.
    plain(&w).await;
    let e = refused(
        &w,
        json!({"action": "reschedule", "queue": "orders", "job_id": "plain", "message_body": "c"}),
    )
    .await;
    assert_eq!(e.field, "perform_at", "{e}");
}

#[tokio::test(start_paused = true)]
async fn a_past_start_stays_on_its_grid_and_catch_up_decides() {
    let (w, _, queue, clock) = test_waiter("orders", &[("WAITER_LOOKAHEAD", "0"), ("WAITER_SHARDS", "1")]);
    call(
        &w,
        json!({"queue": "orders", "message_body": "b", "job_id": "e", "delay_seconds": 3600,
               "repeat": {"every_s": 600, "catch_up": "all"}}),
    )
    .await;
    // 25 minutes ago: occurrences at -25, -15 and -5 minutes, on the given start's grid (a start
    // clamped to now put the grid at an arbitrary instant).
    let start = clock.now() - TimeDelta::minutes(25);
    let r = call(
        &w,
        json!({"action": "reschedule", "queue": "orders", "job_id": "e", "perform_at": rfc3339(start)}),
    )
    .await;
    assert_eq!(time(&r["perform_at"]), start, "{r}");
    run(&w, &clock).await;
    let sent: Vec<String> = occurrences(&queue).into_iter().map(|(at, _)| at).collect();
    let expected: Vec<String> = [0, 10, 20]
        .iter()
        .map(|m| rfc3339(start + TimeDelta::minutes(*m)))
        .collect();
    assert_eq!(sent, expected);
    let g = get(&w, "e").await;
    assert_eq!(time(&g["perform_at"]), start + TimeDelta::minutes(30), "{g}");
}

/// Issue 71, item 4: `reschedule` takes EventBridge's `at(...)` as `enqueue` does, read in
/// `time_zone`, and refuses it beside another time.
#[tokio::test(start_paused = true)]
async fn reschedule_takes_an_at_schedule_read_in_its_zone_and_refuses_it_beside_a_time() {
    let (w, _, _, _) = test_waiter("orders", &[("WAITER_SHARDS", "1")]);
    crate::testing::schedule(&w, "j", 3600).await;
    let r = call(
        &w,
        json!({"action": "reschedule", "queue": "orders", "job_id": "j",
               "schedule": "at(2031-03-01T09:00:00)", "time_zone": "Asia/Tokyo"}),
    )
    .await;
    assert_eq!(r["status"], "rescheduled", "{r}");
    assert_eq!(get(&w, "j").await["perform_at"], "2031-03-01T00:00:00Z");
    let e = refused(
        &w,
        json!({"action": "reschedule", "queue": "orders", "job_id": "j",
               "schedule": "at(2031-03-01T09:00:00)", "delay_seconds": 60}),
    )
    .await;
    assert_eq!(e.field, "schedule", "{e:?}");
    let e = refused(
        &w,
        json!({"action": "reschedule", "queue": "orders", "job_id": "j", "schedule": "at(tomorrow)"}),
    )
    .await;
    assert_eq!(e.field, "schedule", "{e:?}");
    assert_eq!(get(&w, "j").await["version"], 2, "nothing changed by the refusals");
}
