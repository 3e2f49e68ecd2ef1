//! Windows through the handler and the poller on the fakes: a job due at the first instant inside
//! its windows, one found outside them moved to the next opening, and reschedule with windows
//! (moved out of windows.rs, which passed 600 lines; the tests are unchanged).

use crate::error::HandlerError;
use crate::poller::Dispatcher;
use crate::ports::Clock;
use crate::testing::*;
use crate::time::format_rfc3339;
use chrono::{DateTime, TimeDelta, Utc};
use serde_json::json;

fn setup() -> (
    TestWaiter,
    Dispatcher<MemStore, FakeQueue, FakeClock>,
    MemStore,
    FakeQueue,
    FakeClock,
) {
    // The clock starts at 2026-12-01T09:00:00.123456Z.
    let (w, store, queue, clock) =
        test_waiter("orders", &[("WAITER_DIRECT_MAX_DELAY", "0"), ("WAITER_LOOKAHEAD", "0")]);
    let d = dispatcher_for(&w);
    (w, d, store, queue, clock)
}

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

#[tokio::test(start_paused = true)]
async fn a_job_is_due_at_the_first_instant_inside_its_windows_and_shows_them() {
    let (w, _, _, _, _) = setup();
    let r = call(
        &w,
        json!({"queue": "orders", "job_id": "w", "message_body": "b", "perform_at": "2026-12-01T18:00:00Z",
               "windows": [{"from": "05:00", "to": "07:00"}, {"from": "22:00", "to": "23:00"}], "time_zone": "Europe/Berlin"}),
    )
    .await;
    assert_eq!(r["perform_at"], "2026-12-01T21:00:00Z", "22:00 CET: {r}");
    let got = call(&w, json!({"action": "get", "queue": "orders", "job_id": "w"})).await;
    assert_eq!(got["perform_at"], "2026-12-01T21:00:00Z");
    assert_eq!(got["time_zone"], "Europe/Berlin");
    assert_eq!(got["windows"][1], json!({"from": "22:00", "to": "23:00"}));

    // Spring forward in Berlin (2027-03-28): a 02:30 opening happens at 03:00 CEST.
    let r = call(
        &w,
        json!({"queue": "orders", "job_id": "dst", "message_body": "b", "perform_at": "2027-03-27T23:00:00Z",
               "windows": [{"from": "02:30", "to": "04:00"}], "time_zone": "Europe/Berlin"}),
    )
    .await;
    assert_eq!(r["perform_at"], "2027-03-28T01:00:00Z", "{r}");
}

#[tokio::test(start_paused = true)]
async fn a_job_found_outside_its_windows_is_moved_to_the_next_opening_not_sent() {
    let (w, d, store, queue, clock) = setup();
    // Window 09:00-09:01 UTC today; the job is due inside it.
    let due = clock.now() + TimeDelta::seconds(10);
    call(
        &w,
        json!({"queue": "orders", "job_id": "late", "message_body": "b", "perform_at": format_rfc3339(due),
               "windows": [{"from": "09:00", "to": "09:01"}]}),
    )
    .await;
    // An outage: the first poller run comes at 09:05, outside the window.
    tokio::time::sleep(std::time::Duration::from_secs(5 * 60)).await;
    let s = d.run(clock.now() + TimeDelta::seconds(30)).await;
    assert_eq!((s.dispatched, s.moved), (0, 1), "{s:?}");
    assert!(queue.sent().is_empty(), "not sent outside its windows");
    let got = call(&w, json!({"action": "get", "queue": "orders", "job_id": "late"})).await;
    assert_eq!(got["perform_at"], "2026-12-02T09:00:00Z", "{got}");
    assert_eq!(got["version"], 2);
    assert_eq!(store.len(), 1);
    // Sent at the next opening.
    clock.sleep_until(utc("2026-12-02T09:00:00Z")).await;
    let s = d.run(clock.now() + TimeDelta::seconds(30)).await;
    assert_eq!(s.dispatched, 1, "{s:?}");
}

#[tokio::test(start_paused = true)]
async fn reschedule_keeps_replaces_or_clears_windows_and_expiry_must_allow_an_opening() {
    let (w, _, _, _, _) = setup();
    call(
        &w,
        json!({"queue": "orders", "job_id": "r", "message_body": "b", "perform_at": "2026-12-01T12:00:00Z",
               "windows": [{"from": "05:00", "to": "07:00"}]}),
    )
    .await;
    let r = call(
        &w,
        json!({"action": "reschedule", "queue": "orders", "job_id": "r", "perform_at": "2026-12-03T12:00:00Z"}),
    )
    .await;
    assert_eq!(r["perform_at"], "2026-12-04T05:00:00Z", "kept windows: {r}");
    let r = call(
        &w,
        json!({"action": "reschedule", "queue": "orders", "job_id": "r", "perform_at": "2026-12-03T12:00:00Z",
               "windows": [{"from": "20:00", "to": "21:00"}], "time_zone": "America/New_York"}),
    )
    .await;
    assert_eq!(r["perform_at"], "2026-12-04T01:00:00Z", "20:00 EST: {r}");
    let r = call(
        &w,
        json!({"action": "reschedule", "queue": "orders", "job_id": "r", "perform_at": "2026-12-03T12:00:00Z", "windows": null}),
    )
    .await;
    assert_eq!(r["perform_at"], "2026-12-03T12:00:00Z", "cleared: {r}");

    let refused = w
        .handle(
            &json!({"queue": "orders", "message_body": "b", "perform_at": "2026-12-01T12:00:00Z",
                        "expires_at": "2026-12-01T18:00:00Z", "windows": [{"from": "05:00", "to": "07:00"}]}),
        )
        .await;
    match refused {
        Err(HandlerError::Invalid(e)) => assert_eq!(e.field, "expires_at", "{e}"),
        other => panic!("{other:?}"),
    }
    for (request, field) in [
        (
            json!({"queue": "orders", "message_body": "b", "time_zone": "UTC"}),
            "time_zone",
        ),
        (
            json!({"queue": "orders", "message_body": "b", "windows": [{"from": "25:00", "to": "07:00"}]}),
            "windows[0].from",
        ),
        (
            json!({"queue": "orders", "message_body": "b", "windows": [{"from": "05:00", "to": "07:00"}], "time_zone": "CEST+2"}),
            "time_zone",
        ),
    ] {
        match w.handle(&request).await {
            Err(HandlerError::Invalid(e)) => assert_eq!(e.field, field, "{request}: {e}"),
            other => panic!("{request}: {other:?}"),
        }
    }
}
