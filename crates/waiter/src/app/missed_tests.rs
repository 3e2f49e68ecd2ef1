//! The amended rule for missed occurrences (issue 60, defects 2, 3 and 4; DESIGN "Missed
//! occurrences"): an occurrence the first run after its instant finds is on time, however late
//! that run is; one a window holds is not missed; a series the rate held back catches up.

use chrono::{DateTime, TimeDelta};
use serde_json::json;

use super::repeat_tests::{rfc3339, run, sent_occurrences};
use crate::ports::Clock;
use crate::testing::attribute_text;
use crate::testing::{call, test_waiter};
use sqs_waiter_contract::OCCURRENCE_ATTRIBUTE;

#[tokio::test(start_paused = true)]
async fn a_daily_occurrence_held_for_its_window_is_sent_at_the_opening_under_skip() {
    // Defect 2: at 08:00, windows 09:00-17:00. The 08:00 occurrence is found on time and held;
    // at the opening it is more than a minute old, which used to count it missed and skip it,
    // every day.
    let (w, _, queue, clock) = test_waiter("orders", &[("WAITER_LOOKAHEAD", "0"), ("WAITER_SHARDS", "1")]);
    let day0 = clock.now().date_naive();
    let r = call(
        &w,
        json!({"queue": "orders", "message_body": "report", "job_id": "daily", "delay_seconds": 0,
               "windows": [{"from": "09:00", "to": "17:00"}], "time_zone": "UTC",
               "repeat": {"cron": "0 8 * * *", "catch_up": "skip"}}),
    )
    .await;
    assert_eq!(r["status"], "scheduled", "{r}");
    for day in 1..=3u64 {
        let date = day0 + chrono::Days::new(day);
        // The poller every minute from 07:58 to 09:01.
        let first = date.and_hms_opt(7, 58, 0).expect("07:58").and_utc();
        clock.advance(first - clock.now());
        for _ in 0..64 {
            run(&w, &clock).await;
            clock.advance(TimeDelta::minutes(1));
        }
        let sent = queue.sent();
        assert_eq!(sent.len() as u64, day, "day {day}: one occurrence a day");
        let last = sent.last().expect("sent");
        let arrival = last.at + TimeDelta::seconds(i64::from(last.message.delay_seconds.unwrap_or(0)));
        let opening = date.and_hms_opt(9, 0, 0).expect("09:00").and_utc();
        assert!(
            arrival >= opening && arrival < opening + TimeDelta::seconds(2),
            "day {day}: arrived at {arrival}, not at the opening"
        );
        assert_eq!(
            attribute_text(&last.message, OCCURRENCE_ATTRIBUTE),
            Some(rfc3339(date.and_hms_opt(8, 0, 0).expect("08:00").and_utc())),
            "day {day}: the held occurrence"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn on_a_fifo_queue_every_occurrence_the_next_run_finds_is_sent_however_late_the_run() {
    // Defect 3: `WAITER_FIFO_HOLD` 0, so an occurrence is read only by the first run after it;
    // EventBridge starts runs 65 s apart here, so some are found more than 60 s late, which used
    // to count them missed and, under `skip`, drop them.
    let (w, _, queue, clock) = test_waiter("jobs.fifo", &[("WAITER_SHARDS", "1")]);
    run(&w, &clock).await;
    // A series that starts now: `enqueue` hands none over, the next run finds it.
    let start = clock.now();
    let r = call(
        &w,
        json!({"queue": "jobs.fifo", "message_body": "tick", "job_id": "tick", "message_group_id": "g",
               "perform_at": rfc3339(start), "repeat": {"every_s": 60, "catch_up": "skip"}}),
    )
    .await;
    assert_eq!(r["status"], "scheduled", "{r}");
    let mut skipped = 0;
    for _ in 0..12 {
        clock.advance(TimeDelta::seconds(65));
        skipped += run(&w, &clock).await.skipped_occurrences;
    }
    let due = (clock.now() - start).num_seconds() / 60 + 1;
    let sent = sent_occurrences(&queue);
    let expected: Vec<String> = (0..due).map(|i| rfc3339(start + TimeDelta::seconds(60 * i))).collect();
    assert_eq!(sent, expected, "every occurrence due, in order");
    assert_eq!(skipped, 0);
}

#[tokio::test(start_paused = true)]
async fn after_an_outage_the_first_run_skips_what_fell_due_meanwhile() {
    // The other side of defect 3: runs ten minutes apart are an outage between them, so
    // `skip` still skips what fell due during it.
    let (w, _, queue, clock) = test_waiter("orders", &[("WAITER_LOOKAHEAD", "0"), ("WAITER_SHARDS", "1")]);
    run(&w, &clock).await;
    let start = clock.now() + TimeDelta::seconds(5);
    call(
        &w,
        json!({"queue": "orders", "message_body": "tick", "job_id": "tick", "perform_at": rfc3339(start),
               "repeat": {"every_s": 60, "catch_up": "skip"}}),
    )
    .await;
    clock.advance(TimeDelta::minutes(10));
    let s = run(&w, &clock).await;
    assert_eq!(queue.sent().len(), 1, "only the one on time: {s:?}");
    assert_eq!(s.skipped_occurrences, 9);
}

#[tokio::test(start_paused = true)]
async fn under_the_rate_a_series_that_fell_behind_catches_up_and_runs_on_time_again() {
    // Defect 4: a run used to make one round under `WAITER_MAX_RATE`, one occurrence per
    // series: an every-60 s series that starts behind sent each later occurrence a run late,
    // for good.
    for policy in ["one", "all"] {
        let (w, _, queue, clock) = test_waiter(
            "orders",
            &[
                ("WAITER_LOOKAHEAD", "0"),
                ("WAITER_SHARDS", "1"),
                ("WAITER_MAX_RATE", "10"),
            ],
        );
        run(&w, &clock).await;
        let start = clock.now() - TimeDelta::seconds(125);
        call(
            &w,
            json!({"queue": "orders", "message_body": "tick", "job_id": "tick", "perform_at": rfc3339(start),
                   "repeat": {"every_s": 60, "catch_up": policy}}),
        )
        .await;
        for _ in 0..5 {
            clock.advance(TimeDelta::seconds(60));
            run(&w, &clock).await;
        }
        let caught_up = start + TimeDelta::seconds(180);
        for s in queue.sent() {
            let at = attribute_text(&s.message, OCCURRENCE_ATTRIBUTE).expect("occurrence");
            let at = DateTime::parse_from_rfc3339(&at).expect("time").to_utc();
            if at >= caught_up {
                assert!(
                    s.at - at < TimeDelta::seconds(60),
                    "{policy}: {at} sent at {}, a run late",
                    s.at
                );
            }
        }
        let last = start + TimeDelta::seconds(60 * ((clock.now() - start).num_seconds() / 60));
        let sent = sent_occurrences(&queue);
        assert_eq!(sent.last(), Some(&rfc3339(last)), "{policy}: the latest due is sent");
    }
}

#[tokio::test(start_paused = true)]
async fn an_occurrence_the_rate_held_back_is_not_missed() {
    // A backlog of one-off jobs ahead of it fills `WAITER_MAX_RATE` for runs on end: the
    // series' occurrence waits behind it, found on time by the run after it, and `skip` must
    // still send it once the budget reaches it (the rate delays it; it is not an outage).
    let (w, _, queue, clock) = test_waiter(
        "orders",
        &[
            ("WAITER_LOOKAHEAD", "0"),
            ("WAITER_SHARDS", "1"),
            ("WAITER_MAX_RATE", "1"),
        ],
    );
    // Past SQS's 900 s, so stored.
    let due = clock.now() + TimeDelta::seconds(1000);
    let jobs: Vec<serde_json::Value> = (0..300)
        .map(|i| json!({"queue": "orders", "message_body": "b", "job_id": format!("j{i}"), "perform_at": rfc3339(due)}))
        .collect();
    let r = call(&w, json!({"jobs": jobs})).await;
    assert!(r["results"][0]["status"] == "scheduled", "{r}");
    let start = due + TimeDelta::seconds(1);
    call(
        &w,
        json!({"queue": "orders", "message_body": "tick", "job_id": "tick", "perform_at": rfc3339(start),
               "repeat": {"every_s": 3600, "catch_up": "skip"}}),
    )
    .await;
    clock.advance(start - clock.now() - TimeDelta::seconds(30));
    let mut skipped = 0;
    for _ in 0..8 {
        skipped += run(&w, &clock).await.skipped_occurrences;
        clock.advance(TimeDelta::seconds(60));
    }
    assert_eq!(queue.sent().len(), 301, "the backlog drained at the rate");
    let sent = sent_occurrences(&queue);
    assert_eq!(sent, [rfc3339(start)], "the occurrence the rate held back");
    assert_eq!(skipped, 0);
}
