//! Series (DESIGN "Recurring jobs") through `enqueue`, `get`, `cancel` and poller runs on the
//! in-memory fakes: one occurrence a pass, never early, the item moved on by the write that
//! removes a one-off job, and `catch_up` for occurrences found late.

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{json, Value};

use crate::ports::Clock;
use crate::testing::{attribute_text, dispatcher_for, test_waiter, FakeClock, FakeQueue, MemStore, TestWaiter};
use sqs_waiter_contract::{JOB_ID_ATTRIBUTE, OCCURRENCE_ATTRIBUTE};

fn waiter() -> (TestWaiter, MemStore, FakeQueue, FakeClock) {
    test_waiter(
        "orders,billing.fifo",
        &[
            ("WAITER_LOOKAHEAD", "0"),
            ("WAITER_SHARDS", "2"),
            ("WAITER_HISTORY_DAYS", "7"),
        ],
    )
}

pub(super) fn rfc3339(t: DateTime<Utc>) -> String {
    crate::time::format_rfc3339(t)
}

pub(super) async fn run(w: &TestWaiter, clock: &FakeClock) -> crate::poller::RunSummary {
    dispatcher_for(w).run(clock.now() + TimeDelta::seconds(30)).await
}

pub(super) async fn get(w: &TestWaiter, id: &str) -> Value {
    w.handle(&json!({"action": "get", "queue": "orders", "job_id": id}))
        .await
        .expect("get")
}

/// The `waiter.occurrence` of each message SQS received that carries one, in order.
pub(super) fn sent_occurrences(queue: &FakeQueue) -> Vec<String> {
    queue
        .sent()
        .iter()
        .filter_map(|s| attribute_text(&s.message, OCCURRENCE_ATTRIBUTE))
        .collect()
}

/// The occurrences SQS received, by `waiter.occurrence`, with their `waiter.job_id`.
pub(super) fn occurrences(queue: &FakeQueue) -> Vec<(String, String)> {
    let text = |m: &crate::ports::OutgoingMessage, name: &str| attribute_text(m, name).unwrap_or_default();
    queue
        .sent()
        .iter()
        .map(|s| {
            (
                text(&s.message, OCCURRENCE_ATTRIBUTE),
                text(&s.message, JOB_ID_ATTRIBUTE),
            )
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn an_every_n_series_sends_each_occurrence_once_never_early_and_finishes_at_its_count() {
    let (w, _, queue, clock) = waiter();
    let start = clock.now() + TimeDelta::seconds(90);
    let r = w
        .handle(
            &json!({"queue": "orders", "message_body": "tick", "job_id": "tick", "perform_at": rfc3339(start),
                        "repeat": {"every_s": 60, "count": 3}}),
        )
        .await
        .expect("enqueue");
    assert_eq!(r["status"], "scheduled");
    assert_eq!(r["repeat"], json!({"every_s": 60, "count": 3, "catch_up": "one"}));
    assert_eq!(r["occurrences"], 0);
    for _ in 0..10 {
        clock.advance(TimeDelta::seconds(30));
        run(&w, &clock).await;
    }
    let sent = queue.sent();
    assert_eq!(sent.len(), 3, "count 3: {:?}", occurrences(&queue));
    for (i, s) in sent.iter().enumerate() {
        let due = start + TimeDelta::seconds(60 * i as i64);
        let arrival = s.at + TimeDelta::seconds(i64::from(s.message.delay_seconds.unwrap_or(0)));
        assert!(arrival >= due, "occurrence {i} early: {arrival} < {due}");
        assert_eq!(
            occurrences(&queue)[i],
            (rfc3339(due).replace(".000000", ""), format!("tick@{}", due.timestamp()))
        );
        assert_eq!(s.message.body, "tick");
    }
    let g = get(&w, "tick").await;
    assert_eq!(
        (g["status"].as_str(), g["occurrences"].as_u64()),
        (Some("finished"), Some(3)),
        "{g}"
    );
}

#[tokio::test(start_paused = true)]
async fn missed_occurrences_follow_catch_up() {
    // Occurrences at now - 290, now - 230, ..., now + 10: four missed (more than 60 s late), then
    // one on time, then one ahead.
    // One run: a series moved to an occurrence due already sends it in another round.
    for (policy, sent) in [
        ("skip", vec![240]),
        ("one", vec![180, 240]),
        ("all", vec![0, 60, 120, 180, 240]),
    ] {
        let (w, _, queue, clock) = waiter();
        let start = clock.now() - TimeDelta::seconds(290);
        w.handle(
            &json!({"queue": "orders", "message_body": "b", "job_id": "s", "perform_at": rfc3339(start),
                         "repeat": {"every_s": 60, "catch_up": policy}}),
        )
        .await
        .expect("enqueue");
        let s = run(&w, &clock).await;
        // skip sends the one on time, one the latest missed and then it, all every one.
        let ids: Vec<String> = occurrences(&queue).into_iter().map(|(_, id)| id).collect();
        let expected: Vec<String> = sent
            .iter()
            .map(|k| format!("s@{}", (start + TimeDelta::seconds(*k)).timestamp()))
            .collect();
        assert_eq!(ids, expected, "{policy}: {s:?}");
        let skipped = match policy {
            "skip" => 4,
            "one" => 3,
            _ => 0,
        };
        assert_eq!(s.skipped_occurrences, skipped, "{policy}");
        let g = get(&w, "s").await;
        let next = DateTime::parse_from_rfc3339(g["perform_at"].as_str().expect("perform_at")).expect("time");
        assert_eq!(next, start + TimeDelta::seconds(300), "{policy}: {g}");
        assert_eq!(g["occurrences"], sent.len(), "{policy}: {g}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_series_sends_nothing_more() {
    let (w, store, queue, clock) = waiter();
    w.handle(&json!({"queue": "orders", "message_body": "b", "job_id": "c", "repeat": {"every_s": 60}}))
        .await
        .expect("enqueue");
    run(&w, &clock).await;
    assert_eq!(queue.sent().len(), 1);
    let r = w
        .handle(&json!({"action": "cancel", "queue": "orders", "job_id": "c"}))
        .await
        .expect("cancel");
    assert_eq!(r["status"], "cancelled");
    assert_eq!(store.len(), 0);
    clock.advance(TimeDelta::seconds(600));
    run(&w, &clock).await;
    assert_eq!(queue.sent().len(), 1, "nothing after cancelled");
}

#[tokio::test(start_paused = true)]
async fn bad_series_are_refused_by_field_and_store_nothing() {
    let (w, store, _, clock) = waiter();
    let past = rfc3339(clock.now() - TimeDelta::seconds(10));
    let cases = [
        (json!({"cron": "61 * * * *"}), "repeat.cron"),
        (json!({"cron": "* * * *"}), "repeat.cron"),
        (json!({"cron": "* * * * *", "every_s": 60}), "repeat"),
        (json!({}), "repeat"),
        (json!({"every_s": 59}), "repeat.every_s"),
        (json!({"every_s": 60, "catch_up": "sometimes"}), "repeat.catch_up"),
        (json!({"every_s": 60, "count": 0}), "repeat.count"),
        (json!({"every_s": 60, "until": past}), "repeat.until"),
        (json!({"every_s": 60, "count": 1_000_001}), "repeat.count"),
        // After the start, before the first 09:00 (the start is 09:00:00.123 UTC).
        (
            json!({"cron": "0 9 * * *", "until": rfc3339(clock.now() + TimeDelta::hours(1))}),
            "repeat.until",
        ),
        // Dates that never come.
        (json!({"cron": "0 0 30 2 *"}), "repeat.cron"),
        (json!({"cron": "0 0 31 4,6,9,11 *"}), "repeat.cron"),
    ];
    for (repeat, field) in cases {
        let e = w
            .handle(&json!({"queue": "orders", "message_body": "b", "repeat": repeat}))
            .await
            .expect_err("refused");
        assert!(
            e.message().starts_with(&format!("{field}:")),
            "{repeat}: {}",
            e.message()
        );
    }
    let e = w
        .handle(&json!({"queue": "orders", "message_body": "b", "repeat": {"cron": "0 9 * * *"}, "time_zone": "Mars/Olympus"}))
        .await
        .expect_err("zone");
    assert!(e.message().starts_with("time_zone:"), "{}", e.message());
    let e = w
        .handle(&json!({"queue": "orders", "message_body": "b", "job_id": "a@1", "delay_seconds": 3600}))
        .await
        .expect_err("@");
    assert!(e.message().starts_with("job_id:"), "{}", e.message());
    // A series' messages carry two attributes of ours: 8 of the caller's, not 10.
    let attributes = |n: usize| -> serde_json::Map<String, Value> {
        (0..n)
            .map(|i| (format!("a{i}"), json!({"data_type": "String", "string_value": "v"})))
            .collect()
    };
    let e = w
        .handle(
            &json!({"queue": "orders", "message_body": "b", "repeat": {"every_s": 60},
                        "message_attributes": attributes(9)}),
        )
        .await
        .expect_err("nine attributes");
    assert!(e.message().starts_with("message_attributes:"), "{}", e.message());
    assert_eq!(store.len(), 0);
    let r = w
        .handle(
            &json!({"queue": "orders", "message_body": "b", "repeat": {"every_s": 60},
                        "message_attributes": attributes(8)}),
        )
        .await
        .expect("eight attributes");
    assert_eq!(r["status"], "scheduled", "{r}");
}

#[tokio::test(start_paused = true)]
async fn a_cron_whose_next_date_is_decades_away_is_taken_at_any_start() {
    // Issue 60, defect 8: from March 2032 the next 29 February that is a Sunday is in 2060,
    // past the 8 years searched, and `enqueue` refused the series.
    let (w, _, _, _) = waiter();
    let r = w
        .handle(
            &json!({"queue": "orders", "message_body": "b", "job_id": "leap", "perform_at": "2032-03-01T00:00:00Z",
                        "repeat": {"cron": "0 0 29 2 */7"}}),
        )
        .await
        .expect("enqueue");
    assert_eq!(
        DateTime::parse_from_rfc3339(r["perform_at"].as_str().expect("perform_at")).expect("time"),
        DateTime::parse_from_rfc3339("2060-02-29T00:00:00Z").expect("time"),
        "{r}"
    );
}

#[tokio::test(start_paused = true)]
async fn reschedule_changes_the_rule_and_restarts_the_series_at_its_time() {
    let (w, _, _, clock) = waiter();
    w.handle(
        &json!({"queue": "orders", "message_body": "b", "job_id": "r", "delay_seconds": 3600,
                     "repeat": {"every_s": 3600}}),
    )
    .await
    .expect("enqueue");
    let from = clock.now() + TimeDelta::days(1);
    let r = w
        .handle(
            &json!({"action": "reschedule", "queue": "orders", "job_id": "r", "perform_at": rfc3339(from),
                        "repeat": {"cron": "0 9 * * *"}, "time_zone": "Europe/Berlin"}),
        )
        .await
        .expect("reschedule");
    assert_eq!(r["status"], "rescheduled", "{r}");
    let g = get(&w, "r").await;
    assert_eq!(g["repeat"]["cron"], "0 9 * * *", "{g}");
    assert_eq!(g["time_zone"], "Europe/Berlin", "{g}");
    let next = DateTime::parse_from_rfc3339(g["perform_at"].as_str().expect("perform_at"))
        .expect("time")
        .with_timezone(&chrono_tz::Europe::Berlin);
    let utc = next.with_timezone(&Utc);
    assert!(utc >= from && utc - from <= TimeDelta::days(1), "{g}");
    assert_eq!(next.format("%H:%M:%S").to_string(), "09:00:00", "{g}");
    // An expiry does not go with a series.
    let e = w
        .handle(
            &json!({"action": "reschedule", "queue": "orders", "job_id": "r", "perform_at": rfc3339(from),
                        "expires_at": rfc3339(from + TimeDelta::days(2))}),
        )
        .await
        .expect_err("an expiry on a series");
    assert!(e.message().starts_with("expires_at:"), "{}", e.message());
}

#[tokio::test(start_paused = true)]
async fn a_reschedule_to_a_count_the_series_has_reached_is_refused() {
    // Issue 60, defect 12: such a count was accepted, and the poller then finished the series
    // without a send.
    let (w, _, queue, clock) = waiter();
    let start = clock.now() + TimeDelta::seconds(90);
    w.handle(
        &json!({"queue": "orders", "message_body": "b", "job_id": "c", "perform_at": rfc3339(start),
                "repeat": {"every_s": 60, "count": 5}}),
    )
    .await
    .expect("enqueue");
    for step in [90, 60] {
        clock.advance(TimeDelta::seconds(step));
        run(&w, &clock).await;
    }
    assert_eq!(queue.sent().len(), 2, "{:?}", occurrences(&queue));
    let before = get(&w, "c").await;
    let at = rfc3339(clock.now() + TimeDelta::seconds(300));
    for count in [1, 2] {
        let e = crate::testing::refused(
            &w,
            json!({"action": "reschedule", "queue": "orders", "job_id": "c", "perform_at": at,
                   "repeat": {"every_s": 60, "count": count}}),
        )
        .await;
        assert_eq!(e.field, "repeat.count", "{e}");
        assert!(e.to_string().contains("more than the 2 occurrences"), "{e}");
        assert_eq!(
            get(&w, "c").await,
            before,
            "count {count}: the refusal changed the series"
        );
    }
    let r = w
        .handle(
            &json!({"action": "reschedule", "queue": "orders", "job_id": "c", "perform_at": at,
                    "repeat": {"every_s": 60, "count": 3}}),
        )
        .await
        .expect("count 3");
    assert_eq!(r["status"], "rescheduled", "{r}");
    for _ in 0..10 {
        clock.advance(TimeDelta::seconds(60));
        run(&w, &clock).await;
    }
    assert_eq!(
        queue.sent().len(),
        3,
        "the one occurrence left: {:?}",
        occurrences(&queue)
    );
    let g = get(&w, "c").await;
    assert_eq!(
        (g["status"].as_str(), g["occurrences"].as_u64()),
        (Some("finished"), Some(3)),
        "{g}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_mark_of_an_occurrence_that_may_have_been_delivered_clears_when_the_series_moves_on() {
    // Issue 60, defect 10: a run that inherits a lease and moves a series to its window's
    // opening marks it `maybe_delivered_at` (the run before may have sent that occurrence). The
    // move after the next send kept the mark, so `get` and `cancel` reported it for good.
    let (w, store, queue, clock) = waiter();
    let start = clock.now() + TimeDelta::seconds(90);
    w.handle(
        &json!({"queue": "orders", "message_body": "b", "job_id": "m", "perform_at": rfc3339(start),
                "repeat": {"every_s": 3600}}),
    )
    .await
    .expect("enqueue");
    let mut marked = store
        .state
        .lock()
        .unwrap()
        .items
        .values()
        .next()
        .cloned()
        .expect("the series");
    marked.maybe_delivered_at = Some(start - TimeDelta::days(1));
    store.insert(marked);
    assert!(
        get(&w, "m").await.get("maybe_delivered_at").is_some(),
        "the mark is shown"
    );
    clock.advance(TimeDelta::seconds(90));
    run(&w, &clock).await;
    assert_eq!(queue.sent().len(), 1);
    let g = get(&w, "m").await;
    assert_eq!(g["occurrences"], 1, "{g}");
    assert!(
        g.get("maybe_delivered_at").is_none(),
        "the mark outlived its occurrence: {g}"
    );
}

#[tokio::test(start_paused = true)]
async fn occurrences_outside_the_windows_wait_for_the_opening_and_catch_up_there() {
    for (policy, sent) in [
        ("one", vec![50, 60]),
        ("all", vec![0, 10, 20, 30, 40, 50, 60]),
        // Held, not missed (issue 60, defect 2): skip sends the latest held one, as one does.
        ("skip", vec![50, 60]),
    ] {
        let (w, _, queue, clock) = waiter();
        // The clock starts at 09:00:00.123 UTC; every 10 minutes from 09:00, arriving only
        // between 10:00 and 10:05.
        let now = clock.now().timestamp();
        let start = DateTime::from_timestamp(now - now % 60, 0).expect("09:00");
        let r = w
            .handle(
                &json!({"queue": "orders", "message_body": "w", "job_id": "w", "perform_at": rfc3339(start),
                            "windows": [{"from": "10:00", "to": "10:05"}], "time_zone": "UTC",
                            "repeat": {"every_s": 600, "catch_up": policy}}),
            )
            .await
            .expect("enqueue");
        let opening = start + TimeDelta::hours(1);
        assert_eq!(
            DateTime::parse_from_rfc3339(r["perform_at"].as_str().expect("perform_at")).expect("time"),
            opening,
            "{r}"
        );
        for _ in 0..14 {
            run(&w, &clock).await;
            clock.advance(TimeDelta::minutes(5));
        }
        let ids: Vec<String> = occurrences(&queue).into_iter().map(|(_, id)| id).collect();
        let expected: Vec<String> = sent
            .iter()
            .map(|m| format!("w@{}", (start + TimeDelta::minutes(*m)).timestamp()))
            .collect();
        assert_eq!(ids, expected, "{policy}");
        for s in queue.sent() {
            let arrival = s.at + TimeDelta::seconds(i64::from(s.message.delay_seconds.unwrap_or(0)));
            assert!(
                arrival >= opening && arrival < opening + TimeDelta::minutes(5),
                "{policy}: arrived {arrival}, outside its window"
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn missed_occurrences_are_counted_once_when_a_window_holds_the_series() {
    // Every minute from 09:00, arriving only between 09:00 and 09:05; the first run comes at
    // 09:10, outside the window, and finds nine missed. It sends nothing and holds the series
    // for the next day's opening, where the run sends the latest held occurrence and counts
    // what it left unsent: the occurrences the first run found are counted there, once.
    for (policy, skipped_at_opening) in [("skip", 1439), ("one", 1439)] {
        let (w, _, queue, clock) = waiter();
        let now = clock.now().timestamp();
        let start = DateTime::from_timestamp(now - now % 60, 0).expect("09:00");
        w.handle(
            &json!({"queue": "orders", "message_body": "w", "job_id": "w", "perform_at": rfc3339(start),
                    "windows": [{"from": "09:00", "to": "09:05"}], "time_zone": "UTC",
                    "repeat": {"every_s": 60, "catch_up": policy}}),
        )
        .await
        .expect("enqueue");
        clock.advance(TimeDelta::minutes(10));
        let held = run(&w, &clock).await;
        assert!(queue.sent().is_empty(), "{policy}: sent outside the window");
        assert_eq!(
            held.skipped_occurrences, 0,
            "{policy}: counted before the series moved: {held:?}"
        );
        clock.advance(TimeDelta::days(1) - TimeDelta::minutes(10));
        let opening = run(&w, &clock).await;
        assert!(!queue.sent().is_empty(), "{policy}: nothing sent at the opening");
        assert_eq!(opening.skipped_occurrences, skipped_at_opening, "{policy}: {opening:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_time_zone_alone_is_refused_naming_both_fields_it_goes_with() {
    let (w, _, _, _) = waiter();
    match w
        .handle(&json!({"queue": "orders", "message_body": "b", "time_zone": "UTC"}))
        .await
    {
        Err(crate::error::HandlerError::Invalid(e)) => {
            assert_eq!(e.field, "time_zone", "{e}");
            assert!(e.to_string().contains("goes with windows or repeat"), "{e}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_held_occurrence_is_handed_over_to_arrive_at_the_opening_and_not_rewritten_before() {
    // Issue 60, defect 13: daily at 08:00, arriving only from 09:00, with a lookahead of 120 s
    // and a run every minute. `enqueue` stores the series at 09:00 holding 08:00; the run at
    // 08:58 hands the occurrence over to arrive at 09:00 (the move after the send). Each run
    // from 08:58 used to move the series to the same opening again, and the first run after
    // 09:00 sent it.
    let (w, _, queue, clock) = test_waiter("orders", &[("WAITER_LOOKAHEAD", "120"), ("WAITER_SHARDS", "2")]);
    let now = clock.now().timestamp();
    let opening = DateTime::from_timestamp(now - now % 86_400 + 86_400 + 9 * 3600, 0).expect("09:00 tomorrow");
    let occurrence = opening - TimeDelta::hours(1);
    w.handle(
        &json!({"queue": "orders", "message_body": "daily", "job_id": "d", "perform_at": rfc3339(occurrence),
                "windows": [{"from": "09:00", "to": "17:00"}], "time_zone": "UTC", "repeat": {"every_s": 86_400}}),
    )
    .await
    .expect("enqueue");
    clock.advance(occurrence - TimeDelta::minutes(3) - clock.now());
    while clock.now() < opening + TimeDelta::minutes(3) {
        run(&w, &clock).await;
        clock.advance(TimeDelta::minutes(1));
    }
    let sent = queue.sent();
    assert_eq!(sent.len(), 1, "{:?}", occurrences(&queue));
    let arrival = sent[0].at + TimeDelta::seconds(i64::from(sent[0].message.delay_seconds.unwrap_or(0)));
    assert!(
        arrival >= opening && arrival < opening + TimeDelta::seconds(1),
        "arrived at {arrival}, not at the opening {opening}"
    );
    assert_eq!(occurrences(&queue)[0].1, format!("d@{}", occurrence.timestamp()));
    let g = get(&w, "d").await;
    assert_eq!(
        (g["occurrences"].as_u64(), g["version"].as_u64()),
        (Some(1), Some(2)),
        "stored, then moved on once: {g}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_cancel_while_an_occurrence_waits_in_the_sqs_delay_says_it_is_on_its_way() {
    // Issue 60, defect 11: handed over ahead of its time, the occurrence is in SQS when the
    // series moves on; `cancel` answered `cancelled` as if nothing more would arrive.
    let (w, _, queue, clock) =
        crate::testing::test_waiter("orders", &[("WAITER_LOOKAHEAD", "120"), ("WAITER_SHARDS", "1")]);
    let at = DateTime::from_timestamp(clock.now().timestamp() + 100, 0).expect("time");
    w.handle(
        &json!({"queue": "orders", "message_body": "b", "job_id": "d", "perform_at": rfc3339(at),
                "repeat": {"every_s": 3600}}),
    )
    .await
    .expect("enqueue");
    run(&w, &clock).await;
    let sent = queue.sent();
    assert_eq!(sent.len(), 1);
    assert!(
        sent[0].message.delay_seconds.is_some_and(|d| d >= 99),
        "{:?}",
        sent[0].message.delay_seconds
    );
    clock.advance(TimeDelta::seconds(50));
    let r = w
        .handle(&json!({"action": "cancel", "queue": "orders", "job_id": "d"}))
        .await
        .expect("cancel");
    assert_eq!(r["status"], "cancelled", "{r}");
    assert_eq!(r["maybe_delivered_at"], rfc3339(at), "the occurrence on its way: {r}");
}

#[tokio::test(start_paused = true)]
async fn a_series_ends_at_until_through_the_poller() {
    let (w, _, queue, clock) = waiter();
    let start = clock.now() + TimeDelta::seconds(90);
    let until = start + TimeDelta::seconds(150);
    w.handle(
        &json!({"queue": "orders", "message_body": "b", "job_id": "u", "perform_at": rfc3339(start),
                "repeat": {"every_s": 60, "until": rfc3339(until)}}),
    )
    .await
    .expect("enqueue");
    for _ in 0..12 {
        clock.advance(TimeDelta::seconds(30));
        run(&w, &clock).await;
    }
    let sent: Vec<String> = occurrences(&queue).into_iter().map(|(at, _)| at).collect();
    let expected: Vec<String> = [0, 60, 120]
        .iter()
        .map(|s| rfc3339(start + TimeDelta::seconds(*s)))
        .collect();
    assert_eq!(sent, expected, "none after until");
    let g = get(&w, "u").await;
    assert_eq!(
        (g["status"].as_str(), g["occurrences"].as_u64()),
        (Some("finished"), Some(3)),
        "{g}"
    );
}
