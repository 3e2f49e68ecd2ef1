//! Where `preview` and `replay` meet the other features (docs/intersections.md P51, P61, P100,
//! P105, P116, P126, P135, P138, P143, P168). A stored series previews its own rule from its next
//! occurrence, before windows, whatever was done to it (replaced, rescheduled, triggered, paused
//! and resumed); once it has left the table `preview` answers `not_found`. `replay` copies what
//! history kept of a job that left, as a one-off job, and a job still stored (paused or not) is
//! a `conflict`.

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{json, Value};

use crate::ports::Clock;
use crate::testing::*;
use sqs_waiter_contract::{JOB_ID_ATTRIBUTE, OCCURRENCE_ATTRIBUTE};

const BODY_ON: (&str, &str) = ("WAITER_HISTORY_BODY", "true");
const NO_LOOKAHEAD: (&str, &str) = ("WAITER_LOOKAHEAD", "0");
const ONE_SHARD: (&str, &str) = ("WAITER_SHARDS", "1");

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).expect("a time").to_utc()
}

fn time(v: &Value) -> DateTime<Utc> {
    utc(v.as_str().unwrap_or_else(|| panic!("a time, got {v}")))
}

async fn run(w: &TestWaiter, clock: &FakeClock) -> crate::poller::RunSummary {
    dispatcher_for(w).run(clock.now() + TimeDelta::seconds(30)).await
}

async fn get(w: &TestWaiter, id: &str) -> Value {
    call(w, json!({"action": "get", "queue": "orders", "job_id": id})).await
}

/// Enqueues `request`, which must be stored.
async fn enqueue(w: &TestWaiter, request: Value) -> Value {
    let r = call(w, request).await;
    assert_eq!(r["status"], "scheduled", "{r}");
    r
}

/// Series `id` on `orders`, every hour from an hour ahead, with body `tick-{id}`.
async fn hourly(w: &TestWaiter, id: &str, count: Option<u64>) -> Value {
    let mut repeat = json!({"every_s": 3600});
    if let Some(n) = count {
        repeat["count"] = json!(n);
    }
    enqueue(
        w,
        json!({"queue": "orders", "message_body": format!("tick-{id}"), "job_id": id, "delay_seconds": 3600,
               "repeat": repeat}),
    )
    .await
}

async fn preview(w: &TestWaiter, id: &str, count: u64) -> Value {
    call(
        w,
        json!({"action": "preview", "queue": "orders", "job_id": id, "count": count}),
    )
    .await
}

fn not_found() -> Value {
    json!({"occurrences": [], "status": "not_found"})
}

/// The instants a preview lists.
fn instants(r: &Value) -> Vec<DateTime<Utc>> {
    let listed = r["occurrences"]
        .as_array()
        .unwrap_or_else(|| panic!("occurrences: {r}"));
    listed.iter().map(|o| time(&o["at"])).collect()
}

/// `n` instants `step` apart from `first`.
fn grid(first: DateTime<Utc>, step: TimeDelta, n: i32) -> Vec<DateTime<Utc>> {
    (0..n).map(|i| first + step * i).collect()
}

fn replay(id: &str) -> Value {
    json!({"action": "replay", "queue": "orders", "job_id": id})
}

/// P51 windows × preview: a series whose first occurrence falls outside its windows is stored at
/// the opening (`get`'s `perform_at`), and `preview` lists its rule's instants from the held
/// occurrence, before windows: the hours outside the window too, and an `every_s` grid on its
/// start, not on the opening.
#[tokio::test(start_paused = true)]
async fn preview_of_a_windowed_series_lists_the_rules_instants_before_windows() {
    let (w, _, _, clock) = test_waiter("orders", &[NO_LOOKAHEAD, ONE_SHARD]);
    let windows = json!([{"from": "12:00", "to": "13:00"}]);
    let opening = utc("2026-12-01T12:00:00Z");
    let r = enqueue(
        &w,
        json!({"queue": "orders", "message_body": "h", "job_id": "h", "windows": windows, "time_zone": "UTC",
               "repeat": {"cron": "0 * * * *"}}),
    )
    .await;
    assert_eq!(time(&r["perform_at"]), opening, "stored at the opening: {r}");
    let p = preview(&w, "h", 5).await;
    assert_eq!(
        instants(&p),
        grid(utc("2026-12-01T10:00:00Z"), TimeDelta::hours(1), 5),
        "every hour from 10:00, inside the window or not: {p}"
    );

    let start = clock.now() + TimeDelta::hours(1);
    let r = enqueue(
        &w,
        json!({"queue": "orders", "message_body": "g", "job_id": "g", "perform_at": crate::time::format_rfc3339(start),
               "windows": windows, "time_zone": "UTC", "repeat": {"every_s": 3600}}),
    )
    .await;
    assert_eq!(time(&r["perform_at"]), opening, "{r}");
    let p = preview(&w, "g", 4).await;
    assert_eq!(
        instants(&p),
        grid(start, TimeDelta::hours(1), 4),
        "the grid of its start, not of the opening: {p}"
    );
}

/// P105 debounce × preview: a stored series replaced (`on_duplicate: replace`) by one with a new
/// `repeat`, zone and `count` previews the new rule from the call's time, in the new zone,
/// within the new count; nothing of the old rule is left.
#[tokio::test(start_paused = true)]
async fn preview_of_a_series_replaced_with_a_new_repeat_lists_the_new_rule() {
    let (w, _, _, _) = test_waiter("orders", &[NO_LOOKAHEAD, ONE_SHARD]);
    hourly(&w, "s", None).await;
    let r = call(
        &w,
        json!({"queue": "orders", "message_body": "v2", "job_id": "s", "on_duplicate": "replace",
               "time_zone": "Europe/Berlin", "repeat": {"cron": "30 6 * * *", "count": 2}}),
    )
    .await;
    assert_eq!(
        (r["status"].as_str(), r["replaced"].as_bool()),
        (Some("scheduled"), Some(true)),
        "{r}"
    );
    assert_eq!(
        preview(&w, "s", 10).await,
        json!({"occurrences": [
            {"at": "2026-12-02T05:30:00Z", "local": "2026-12-02T06:30:00+01:00"},
            {"at": "2026-12-03T05:30:00Z", "local": "2026-12-03T06:30:00+01:00"}
        ]}),
        "06:30 in Berlin, twice (the new count)"
    );
}

/// P116 cancel × preview: a series cancelled by `cancel` or `cancel_many` is no longer stored;
/// `preview` answers `not_found`, though its `cancelled` record is still known to `get`.
#[tokio::test(start_paused = true)]
async fn preview_of_a_cancelled_series_answers_not_found() {
    let (w, _, _, _) = test_waiter("orders", &[NO_LOOKAHEAD, ONE_SHARD]);
    hourly(&w, "c", None).await;
    hourly(&w, "m", None).await;
    assert_eq!(instants(&preview(&w, "c", 3).await).len(), 3);
    let r = call(&w, json!({"action": "cancel", "queue": "orders", "job_id": "c"})).await;
    assert_eq!(r["status"], "cancelled", "{r}");
    assert_eq!(preview(&w, "c", 3).await, not_found());
    assert_eq!(get(&w, "c").await["status"], "cancelled", "its record is left");
    let r = call(
        &w,
        json!({"action": "cancel_many", "queue": "orders", "job_ids": ["m"]}),
    )
    .await;
    assert_eq!(r["cancelled"].as_u64(), Some(1), "{r}");
    assert_eq!(preview(&w, "m", 3).await, not_found());
}

/// P126 reschedule × preview: a reschedule with a new `repeat` (no time: the series goes on from
/// its next occurrence) previews the new rule; a `time_zone` alone then re-reads the cron in that
/// zone, and `preview` shows its instants and local times there.
#[tokio::test(start_paused = true)]
async fn preview_after_a_reschedule_with_a_new_repeat_or_time_zone_lists_the_new_rules_instants() {
    let (w, _, _, _) = test_waiter("orders", &[NO_LOOKAHEAD, ONE_SHARD]);
    hourly(&w, "s", None).await;
    let r = call(
        &w,
        json!({"action": "reschedule", "queue": "orders", "job_id": "s", "repeat": {"cron": "0 */6 * * *"}}),
    )
    .await;
    assert_eq!(r["status"], "rescheduled", "{r}");
    let p = preview(&w, "s", 4).await;
    assert_eq!(
        instants(&p),
        grid(utc("2026-12-01T12:00:00Z"), TimeDelta::hours(6), 4),
        "every six hours from the old next occurrence (10:00:00.123456): {p}"
    );
    let r = call(
        &w,
        json!({"action": "reschedule", "queue": "orders", "job_id": "s", "time_zone": "Asia/Tokyo"}),
    )
    .await;
    assert_eq!(r["status"], "rescheduled", "{r}");
    assert_eq!(
        preview(&w, "s", 3).await,
        json!({"occurrences": [
            {"at": "2026-12-01T15:00:00Z", "local": "2026-12-02T00:00:00+09:00"},
            {"at": "2026-12-01T21:00:00Z", "local": "2026-12-02T06:00:00+09:00"},
            {"at": "2026-12-02T03:00:00Z", "local": "2026-12-02T12:00:00+09:00"}
        ]}),
        "the cron read in Tokyo"
    );
}

/// P135 trigger × preview: `trigger` leaves the series' schedule and `count` untouched, so
/// `preview` lists the same instants after an extra occurrence was sent, and while one waits in
/// the series' item (a run held the shard): it is not one of the series' occurrences.
#[tokio::test(start_paused = true)]
async fn preview_after_a_trigger_lists_the_series_own_schedule() {
    let (w, store, queue, clock) = test_waiter("orders", &[NO_LOOKAHEAD, ONE_SHARD]);
    let next = time(&hourly(&w, "s", Some(3)).await["perform_at"]);
    let before = preview(&w, "s", 10).await;
    assert_eq!(instants(&before), grid(next, TimeDelta::hours(1), 3), "{before}");
    let r = call(&w, json!({"action": "trigger", "queue": "orders", "job_id": "s"})).await;
    assert_eq!(r["status"], "sent", "{r}");
    assert_eq!(preview(&w, "s", 10).await, before, "after an extra occurrence was sent");

    poller_holds_orders(&store, &clock, TimeDelta::seconds(-1)).await;
    let r = call(&w, json!({"action": "trigger", "queue": "orders", "job_id": "s"})).await;
    assert_eq!(r["status"], "dispatching", "{r}");
    assert_eq!(preview(&w, "s", 10).await, before, "while an extra occurrence waits");
    poller_releases_orders(&store).await;
    clock.advance(TimeDelta::seconds(2));
    run(&w, &clock).await;
    assert_eq!(queue.sent().len(), 2, "both extra occurrences sent");
    assert_eq!(preview(&w, "s", 10).await, before, "and after the waiting one went");
    assert_eq!(get(&w, "s").await["occurrences"], 0);
}

/// P143 pause-job × preview: a paused series keeps its times, so `preview` lists them while it
/// is paused; `resume` moves it by its `catch_up` (`one`: to the latest occurrence that fell due
/// in the pause, which the next run sends; `skip`: to the next one), and `preview` starts there.
#[tokio::test(start_paused = true)]
async fn preview_of_a_paused_series_keeps_its_times_and_after_resume_starts_where_catch_up_moved_it() {
    for (catch_up, resumed_at) in [("one", 540), ("skip", 600)] {
        let (w, _, queue, clock) = test_waiter("orders", &[NO_LOOKAHEAD, ONE_SHARD]);
        let r = enqueue(
            &w,
            json!({"queue": "orders", "message_body": "tick", "job_id": "tick", "delay_seconds": 60,
                   "repeat": {"every_s": 60, "catch_up": catch_up}}),
        )
        .await;
        let first = time(&r["perform_at"]);
        let minute = TimeDelta::seconds(60);
        let paused = call(&w, json!({"action": "pause", "queue": "orders", "job_id": "tick"})).await;
        assert_eq!(paused["status"], "paused", "{paused}");
        let p = preview(&w, "tick", 3).await;
        assert_eq!(instants(&p), grid(first, minute, 3), "{catch_up}: {p}");
        for _ in 0..10 {
            clock.advance(minute);
            run(&w, &clock).await;
        }
        clock.advance(TimeDelta::seconds(30));
        assert!(queue.sent().is_empty(), "{catch_up}: nothing while paused");
        assert_eq!(preview(&w, "tick", 3).await, p, "{catch_up}: the pause kept its times");

        let r = call(&w, json!({"action": "resume", "queue": "orders", "job_id": "tick"})).await;
        assert_eq!(r["status"], "resumed", "{r}");
        let from = first + TimeDelta::seconds(resumed_at);
        let p = preview(&w, "tick", 3).await;
        assert_eq!(instants(&p), grid(from, minute, 3), "{catch_up}: {p}");
        run(&w, &clock).await;
        let ids: Vec<String> = queue
            .sent()
            .iter()
            .filter_map(|s| attribute_text(&s.message, JOB_ID_ATTRIBUTE))
            .collect();
        let expected: Vec<String> = (from <= clock.now())
            .then(|| format!("tick@{}", from.timestamp()))
            .into_iter()
            .collect();
        assert_eq!(
            ids, expected,
            "{catch_up}: the run sends what preview listed first, if due"
        );
        let p = preview(&w, "tick", 3).await;
        assert_eq!(
            instants(&p),
            grid(first + TimeDelta::seconds(600), minute, 3),
            "{catch_up}: {p}"
        );
    }
}

/// P168 history × preview: a series previews within what its `count` leaves; once it finished,
/// only its `finished` record is left, and `preview` answers `not_found`.
#[tokio::test(start_paused = true)]
async fn preview_of_a_finished_series_answers_not_found() {
    let (w, _, queue, clock) = test_waiter("orders", &[NO_LOOKAHEAD, ONE_SHARD]);
    let first = clock.now() + TimeDelta::seconds(60);
    enqueue(
        &w,
        json!({"queue": "orders", "message_body": "tick", "job_id": "f", "perform_at": crate::time::format_rfc3339(first),
               "repeat": {"every_s": 60, "count": 2}}),
    )
    .await;
    assert_eq!(instants(&preview(&w, "f", 10).await).len(), 2);
    clock.advance(TimeDelta::seconds(61));
    run(&w, &clock).await;
    let p = preview(&w, "f", 10).await;
    assert_eq!(instants(&p), vec![first + TimeDelta::seconds(60)], "one left: {p}");
    clock.advance(TimeDelta::seconds(60));
    run(&w, &clock).await;
    assert_eq!(queue.sent().len(), 2);
    let g = get(&w, "f").await;
    assert_eq!(
        (g["status"].as_str(), g["occurrences"].as_u64()),
        (Some("finished"), Some(2)),
        "{g}"
    );
    assert_eq!(preview(&w, "f", 10).await, not_found());
}

/// P61 series × replay: a series still stored is a `conflict`; one that finished, or was
/// cancelled, is replayed from its record as a one-off copy (its `repeat` dropped, as
/// docs/intersections.md P161 says), sent once with the series' body under the copy's id. An
/// occurrence's `{id}@{epoch}` names no record of its own (its send moved the series on):
/// history knows nothing to replay under it.
#[tokio::test(start_paused = true)]
async fn a_series_that_left_is_replayed_as_a_one_off_copy_and_a_bare_occurrence_is_not_replayable() {
    let (w, _, queue, clock) = test_waiter("orders", &[BODY_ON, NO_LOOKAHEAD, ONE_SHARD]);
    let first = clock.now() + TimeDelta::seconds(60);
    enqueue(
        &w,
        json!({"queue": "orders", "message_body": "tick", "job_id": "f", "perform_at": crate::time::format_rfc3339(first),
               "repeat": {"every_s": 60, "count": 1}}),
    )
    .await;
    assert_eq!(call(&w, replay("f")).await["status"], "conflict", "still stored");
    clock.advance(TimeDelta::seconds(61));
    run(&w, &clock).await;
    assert_eq!(get(&w, "f").await["status"], "finished");
    let occurrence = format!("f@{}", first.timestamp());
    assert_eq!(
        attribute_text(&queue.sent()[0].message, JOB_ID_ATTRIBUTE),
        Some(occurrence.clone())
    );
    let r = call(&w, replay(&occurrence)).await;
    assert_eq!(r["status"], "not_replayable", "{r}");

    let r = call(&w, replay("f")).await;
    assert_eq!(
        (r["status"].as_str(), r["replay_of"].as_str()),
        (Some("scheduled"), Some("f")),
        "{r}"
    );
    let copy = r["job_id"].as_str().expect("the copy's id").to_owned();
    assert!(copy.starts_with("f~"), "{copy}");
    assert!(get(&w, &copy).await["repeat"].is_null(), "a one-off copy");
    clock.advance(TimeDelta::seconds(1));
    run(&w, &clock).await;
    clock.advance(TimeDelta::seconds(120));
    run(&w, &clock).await;
    let sent = queue.sent();
    assert_eq!(sent.len(), 2, "the copy, once: no occurrence after it");
    let m = &sent[1].message;
    assert_eq!(m.body, "tick");
    assert_eq!(
        attribute_text(m, JOB_ID_ATTRIBUTE),
        Some(copy.clone()),
        "named by its own id"
    );
    assert_eq!(attribute_text(m, OCCURRENCE_ATTRIBUTE), None, "not an occurrence");

    hourly(&w, "c", None).await;
    let r = call(&w, json!({"action": "cancel", "queue": "orders", "job_id": "c"})).await;
    assert_eq!(r["status"], "cancelled", "{r}");
    let r = call(&w, replay("c")).await;
    assert_eq!(
        (r["status"].as_str(), r["replay_of"].as_str()),
        (Some("scheduled"), Some("c")),
        "{r}"
    );
    let g = get(&w, r["job_id"].as_str().expect("the copy's id")).await;
    assert_eq!(g["message_body"], "tick-c", "{g}");
    assert!(g["repeat"].is_null(), "a one-off copy: {g}");
}

/// P100 debounce × replay: a job replaced twice in place, then sent, is replayed from the record
/// its last life left: the copy carries the last call's body and attributes.
#[tokio::test(start_paused = true)]
async fn replay_of_a_debounced_job_that_left_copies_the_last_calls_body() {
    let (w, _, queue, clock) = test_waiter("orders", &[BODY_ON, NO_LOOKAHEAD, ONE_SHARD]);
    for (body, kind) in [("v1", "first"), ("v2", "second"), ("v3", "last")] {
        let r = call(
            &w,
            json!({"queue": "orders", "job_id": "d", "message_body": body, "delay_seconds": 60,
                   "on_duplicate": "replace",
                   "message_attributes": {"kind": {"data_type": "String", "string_value": kind}}}),
        )
        .await;
        assert_eq!(r["status"], "scheduled", "{r}");
    }
    clock.advance(TimeDelta::seconds(61));
    run(&w, &clock).await;
    assert_eq!(queue.sent().len(), 1);
    let r = call(&w, replay("d")).await;
    assert_eq!(
        (r["status"].as_str(), r["job_id"].as_str()),
        (Some("scheduled"), Some("d~3")),
        "the record of version 3, the last call's: {r}"
    );
    clock.advance(TimeDelta::seconds(1));
    run(&w, &clock).await;
    let sent = queue.sent();
    assert_eq!(sent.len(), 2);
    let m = &sent[1].message;
    assert_eq!(
        (m.body.as_str(), attribute_text(m, "kind").as_deref()),
        ("v3", Some("last"))
    );
}

/// P138 pause-job × replay: a paused job is still stored, so `replay` answers `conflict` and
/// changes nothing; a copy (of a job that left) is a job like any other: paused, it is not sent
/// when due, and goes once resumed.
#[tokio::test(start_paused = true)]
async fn replay_of_a_paused_job_is_a_conflict_and_a_copy_is_paused_as_any_job() {
    let (w, _, queue, clock) = test_waiter("orders", &[BODY_ON, NO_LOOKAHEAD, ONE_SHARD]);
    schedule(&w, "p", 3600).await;
    let r = call(&w, json!({"action": "pause", "queue": "orders", "job_id": "p"})).await;
    assert_eq!(r["status"], "paused", "{r}");
    assert_eq!(call(&w, replay("p")).await["status"], "conflict");
    assert_eq!(get(&w, "p").await["paused"], true, "still paused");

    schedule(&w, "j", 3600).await;
    clock.advance(TimeDelta::seconds(3601));
    run(&w, &clock).await;
    let bodies = |q: &FakeQueue| q.sent().iter().map(|s| s.message.body.clone()).collect::<Vec<_>>();
    assert_eq!(bodies(&queue), ["body-j"], "the paused job stays");
    let r = call(
        &w,
        json!({"action": "replay", "queue": "orders", "job_id": "j", "delay_seconds": 600}),
    )
    .await;
    assert_eq!(r["status"], "scheduled", "{r}");
    let copy = r["job_id"].as_str().expect("the copy's id").to_owned();
    let r = call(&w, json!({"action": "pause", "queue": "orders", "job_id": copy})).await;
    assert_eq!(r["status"], "paused", "{r}");
    clock.advance(TimeDelta::seconds(700));
    run(&w, &clock).await;
    assert_eq!(bodies(&queue), ["body-j"], "the paused copy is not sent");
    let r = call(&w, json!({"action": "resume", "queue": "orders", "job_id": copy})).await;
    assert_eq!(r["status"], "resumed", "{r}");
    run(&w, &clock).await;
    let sent = queue.sent();
    assert_eq!(bodies(&queue), ["body-j", "body-j"], "the copy, once resumed");
    assert_eq!(attribute_text(&sent[1].message, JOB_ID_ATTRIBUTE), Some(copy));
}
