//! Where windows and `WAITER_MAX_RATE` (with `priority` and `weight`) meet debounce, trigger,
//! pause, replay and parking (docs/intersections.md P39, P42–P44, P46, P47, P68, P72, P73, P75
//! and P76), through the handler and poller runs on the fakes. The clock starts at
//! 2026-12-01T09:00:00.123456Z; windows here are UTC.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{json, Value};
use sqs_waiter_contract::{Window, JOB_ID_ATTRIBUTE, PRIORITY_ATTRIBUTE, WEIGHT_ATTRIBUTE};

use crate::job::{number_in, AttributeData};
use crate::poller::RunSummary;
use crate::ports::Clock;
use crate::testing::*;
use crate::time::format_rfc3339;
use crate::windows::Windows;

const BODY_ON: (&str, &str) = ("WAITER_HISTORY_BODY", "true");
const PRIORITY_FIRST: (&str, &str) = ("WAITER_PRIORITY_ORDER", "priority");
const RATE_3: (&str, &str) = ("WAITER_MAX_RATE", "3");

/// A `Waiter` on queue `orders` with one shard, that neither sends a job straight nor hands one
/// over (poller runs send what is stored), with `extra` settings.
fn waiter(extra: &[(&str, &str)]) -> (TestWaiter, MemStore, FakeQueue, FakeClock) {
    let mut all = vec![
        ("WAITER_SHARDS", "1"),
        ("WAITER_LOOKAHEAD", "0"),
        ("WAITER_DIRECT_MAX_DELAY", "0"),
    ];
    all.extend_from_slice(extra);
    test_waiter("orders", &all)
}

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().to_utc()
}

fn time_of(v: &Value) -> DateTime<Utc> {
    crate::time::parse_time_str(v.as_str().expect("a time")).expect("a time")
}

/// The daily window `from`–`to` in UTC, to check arrivals against.
fn windows(from: &str, to: &str) -> Windows {
    Windows::parse(&[Window::new(from, to)], Some("UTC")).unwrap()
}

/// An `enqueue` of job `id` (body `body-{id}`) at `at`, inside the window `from`–`to` (UTC).
fn windowed(id: &str, at: DateTime<Utc>, from: &str, to: &str) -> Value {
    json!({"queue": "orders", "job_id": id, "message_body": format!("body-{id}"), "perform_at": format_rfc3339(at),
           "windows": [{"from": from, "to": to}]})
}

async fn get(w: &TestWaiter, id: &str) -> Value {
    call(w, json!({"action": "get", "queue": "orders", "job_id": id})).await
}

async fn run(w: &TestWaiter, clock: &FakeClock) -> RunSummary {
    dispatcher_for(w).run(clock.now() + TimeDelta::seconds(30)).await
}

fn arrival(s: &Sent) -> DateTime<Utc> {
    s.at + TimeDelta::seconds(i64::from(s.message.delay_seconds.unwrap_or(0)))
}

/// The id a message names: its `waiter.job_id`, else its body without `body-`.
fn id_of(s: &Sent) -> String {
    match s.message.attributes.get(JOB_ID_ATTRIBUTE).map(|a| &a.data) {
        // An occurrence's or a copy's id; every other message names its own job, whose id is
        // not its name here.
        Some(AttributeData::String(id)) if id.contains(['@', '~']) => id.clone(),
        _ => s.message.body.trim_start_matches("body-").to_owned(),
    }
}

/// Budget units arriving in each second: a message counts its `waiter.weight`, else 1.
fn units(sent: &[Sent]) -> BTreeMap<i64, u16> {
    let mut units = BTreeMap::new();
    for s in sent {
        *units.entry(arrival(s).timestamp()).or_default() +=
            number_in::<u16>(&s.message.attributes, WEIGHT_ATTRIBUTE).unwrap_or(1);
    }
    units
}

/// What `get` shows of a job's rank: its priority and weight.
fn rank(g: &Value) -> (Option<u64>, Option<u64>) {
    (g["priority"].as_u64(), g["weight"].as_u64())
}

/// Jobs `a` and `b` of the default priority and weight, due two seconds ago: by due time they
/// would go first, so only a priority kept can put another job ahead of them.
fn two_due_earlier(store: &MemStore, clock: &FakeClock) {
    for id in ["a", "b"] {
        store.insert(stored("orders", id, clock.now() - TimeDelta::seconds(2), 1));
    }
}

/// Under `WAITER_PRIORITY_ORDER=priority` and a rate of 3: `first` (priority 5, weight 3) takes
/// a second of the budget to itself, ahead of `a` and `b`, no second holds more than 3 units,
/// and `first`'s message carries its priority and weight.
fn assert_first_within_the_budget(sent: &[Sent], first: &str) {
    let at: BTreeMap<String, i64> = sent.iter().map(|s| (id_of(s), arrival(s).timestamp())).collect();
    assert!(at[first] < at["a"] && at[first] < at["b"], "{first} goes first: {at:?}");
    let per_second = units(sent);
    assert!(per_second.values().all(|n| *n <= 3), "{per_second:?}");
    let m = &sent.iter().find(|s| id_of(s) == first).expect("sent").message;
    assert_eq!(
        (
            number_in::<u16>(&m.attributes, PRIORITY_ATTRIBUTE),
            number_in::<u16>(&m.attributes, WEIGHT_ATTRIBUTE)
        ),
        (Some(5), Some(3)),
        "{m:?}"
    );
}

/// P39 windows × debounce: an `extend` takes the call's time inside the stored job's windows
/// (the call's own windows are not taken), and a `replace` takes the call's windows with the
/// rest of the call (none when it gives none); the message arrives inside the windows it has.
#[tokio::test(start_paused = true)]
async fn extend_lands_inside_the_stored_windows_and_replace_takes_the_calls() {
    let (w, store, queue, clock) = waiter(&[]);
    let r = call(&w, windowed("d", utc("2026-12-01T09:10:00Z"), "10:00", "11:00")).await;
    assert_eq!(r["perform_at"], "2026-12-01T10:00:00Z", "{r}");
    // 12:00 is past the day's window: the next opening, whatever windows the call names.
    for call_windows in [Value::Null, json!([{"from": "20:00", "to": "21:00"}])] {
        let mut extend = json!({"queue": "orders", "job_id": "d", "message_body": "ignored",
                                "perform_at": "2026-12-01T12:00:00Z", "on_duplicate": "extend"});
        if !call_windows.is_null() {
            extend["windows"] = call_windows;
        }
        let r = call(&w, extend).await;
        assert_eq!(
            (r["replaced"].as_bool(), r["perform_at"].as_str()),
            (Some(true), Some("2026-12-02T10:00:00Z")),
            "{r}"
        );
    }
    let g = get(&w, "d").await;
    assert_eq!(g["message_body"], "body-d", "{g}");
    assert_eq!(
        g["windows"],
        json!([{"from": "10:00", "to": "11:00"}]),
        "extend keeps the job's: {g}"
    );

    let r = call(
        &w,
        json!({"queue": "orders", "job_id": "d", "message_body": "v2", "perform_at": "2026-12-01T12:00:00Z",
               "windows": [{"from": "20:00", "to": "21:00"}], "on_duplicate": "replace"}),
    )
    .await;
    assert_eq!(
        (r["replaced"].as_bool(), r["perform_at"].as_str()),
        (Some(true), Some("2026-12-01T20:00:00Z")),
        "inside the call's windows: {r}"
    );
    assert_eq!(get(&w, "d").await["windows"], json!([{"from": "20:00", "to": "21:00"}]));
    // A `replace` that gives no windows leaves the job none.
    call(&w, windowed("e", utc("2026-12-03T09:10:00Z"), "10:00", "11:00")).await;
    let r = call(
        &w,
        json!({"queue": "orders", "job_id": "e", "message_body": "v2", "perform_at": "2026-12-03T12:00:00Z",
               "on_duplicate": "replace"}),
    )
    .await;
    assert_eq!(r["perform_at"], "2026-12-03T12:00:00Z", "{r}");
    assert!(get(&w, "e").await["windows"].is_null());

    // Nothing before the replaced job's opening; then its body, inside its windows.
    clock.sleep_until(utc("2026-12-01T19:59:00Z")).await;
    run(&w, &clock).await;
    assert!(queue.sent().is_empty());
    clock.sleep_until(utc("2026-12-01T20:00:00Z")).await;
    assert_eq!(run(&w, &clock).await.dispatched, 1);
    let sent = queue.sent();
    let at = arrival(&sent[0]);
    assert_eq!(sent[0].message.body, "v2");
    assert!(
        windows("20:00", "21:00").contains(at) && at >= utc("2026-12-01T20:00:00Z"),
        "{at}"
    );
    assert_eq!(store.len(), 1, "only e is left");
}

/// P42 windows × trigger: `trigger` sends a one-off job now, moved out of its windows, and a
/// windowed series' extra occurrence now too; the series keeps its windows and its time.
#[tokio::test(start_paused = true)]
async fn trigger_sends_a_windowed_job_and_a_windowed_series_extra_occurrence_outside_their_windows() {
    let (w, _, queue, clock) = waiter(&[]);
    let evening = windows("22:00", "23:00");
    let r = call(&w, windowed("w", utc("2026-12-01T12:00:00Z"), "22:00", "23:00")).await;
    assert_eq!(r["perform_at"], "2026-12-01T22:00:00Z", "{r}");
    let r = call(
        &w,
        json!({"queue": "orders", "job_id": "s", "message_body": "tick", "perform_at": "2026-12-01T22:00:00Z",
               "windows": [{"from": "22:00", "to": "23:00"}], "repeat": {"every_s": 3600}}),
    )
    .await;
    assert_eq!(r["perform_at"], "2026-12-01T22:00:00Z", "{r}");

    let asked = clock.now();
    for id in ["w", "s"] {
        let t = call(&w, json!({"action": "trigger", "queue": "orders", "job_id": id})).await;
        assert_eq!(t["status"], "sent", "{t}");
        assert!(time_of(&t["perform_at"]) < utc("2026-12-01T22:00:00Z"), "{t}");
    }
    let sent = queue.sent();
    let bodies: Vec<&str> = sent.iter().map(|s| s.message.body.as_str()).collect();
    assert_eq!(bodies, ["body-w", "tick"]);
    for s in &sent {
        let at = arrival(s);
        assert!(
            at >= asked && at - asked <= TimeDelta::seconds(3) && !evening.contains(at),
            "now, outside the windows: {at}"
        );
    }
    assert_eq!(get(&w, "w").await["status"], "dispatched");
    let g = get(&w, "s").await;
    assert_eq!(
        (g["perform_at"].as_str(), g["occurrences"].as_u64()),
        (Some("2026-12-01T22:00:00Z"), Some(0)),
        "the series where it stood: {g}"
    );
    assert_eq!(g["windows"], json!([{"from": "22:00", "to": "23:00"}]), "{g}");
}

/// P43 windows × pause-job: a paused windowed job is neither sent nor moved while its window
/// passes; once resumed outside its windows, it is moved to the next opening, and sent there.
#[tokio::test(start_paused = true)]
async fn a_paused_windowed_job_resumed_after_its_window_closed_goes_at_the_next_opening() {
    let (w, _, queue, clock) = waiter(&[]);
    let minute = windows("09:00", "09:01");
    let due = clock.now() + TimeDelta::seconds(10);
    call(&w, windowed("p", due, "09:00", "09:01")).await;
    let r = call(&w, json!({"action": "pause", "queue": "orders", "job_id": "p"})).await;
    assert_eq!(r["status"], "paused", "{r}");
    clock.sleep_until(utc("2026-12-01T09:05:00Z")).await;
    let s = run(&w, &clock).await;
    assert_eq!((s.dispatched, s.moved), (0, 0), "paused: {s:?}");
    assert_eq!(get(&w, "p").await["perform_at"], format_rfc3339(due));

    let r = call(&w, json!({"action": "resume", "queue": "orders", "job_id": "p"})).await;
    assert_eq!(r["status"], "resumed", "{r}");
    let s = run(&w, &clock).await;
    assert_eq!((s.dispatched, s.moved), (0, 1), "{s:?}");
    assert!(queue.sent().is_empty(), "not sent outside its windows");
    let g = get(&w, "p").await;
    assert_eq!(
        (g["perform_at"].as_str(), g["paused"].is_null()),
        (Some("2026-12-02T09:00:00Z"), true),
        "{g}"
    );
    clock.sleep_until(utc("2026-12-02T09:00:00Z")).await;
    assert_eq!(run(&w, &clock).await.dispatched, 1);
    let at = arrival(&queue.sent()[0]);
    assert!(minute.contains(at) && at >= utc("2026-12-02T09:00:00Z"), "{at}");
}

/// P44 windows × pause-queue: after a queue's `resume`, a windowed job whose window is still
/// open goes at once, and those whose window closed during the pause go at their next opening:
/// every arrival inside its windows.
#[tokio::test(start_paused = true)]
async fn after_a_queues_resume_its_windowed_jobs_arrive_only_inside_their_windows() {
    let (w, _, queue, clock) = waiter(&[]);
    let (minute, hour) = (windows("09:00", "09:01"), windows("09:00", "10:00"));
    let start = clock.now();
    for (id, after_s, to) in [("early", 10, "09:01"), ("late", 20, "09:01"), ("open", 30, "10:00")] {
        let r = call(&w, windowed(id, start + TimeDelta::seconds(after_s), "09:00", to)).await;
        assert_eq!(r["status"], "scheduled", "{r}");
    }
    let r = call(&w, json!({"action": "pause", "queue": "orders"})).await;
    assert_eq!(r["status"], "paused", "{r}");
    clock.sleep_until(utc("2026-12-01T09:05:00Z")).await;
    let s = run(&w, &clock).await;
    assert_eq!(s.paused_queues, ["orders"], "{s:?}");
    assert!(queue.sent().is_empty());

    let r = call(&w, json!({"action": "resume", "queue": "orders"})).await;
    assert_eq!(r["status"], "resumed", "{r}");
    let s = run(&w, &clock).await;
    assert_eq!((s.dispatched, s.moved), (1, 2), "{s:?}");
    let sent = queue.sent();
    assert_eq!(sent[0].message.body, "body-open");
    assert!(hour.contains(arrival(&sent[0])), "{}", arrival(&sent[0]));
    for id in ["early", "late"] {
        let g = get(&w, id).await;
        assert_eq!(g["perform_at"], "2026-12-02T09:00:00Z", "{g}");
    }
    clock.sleep_until(utc("2026-12-02T09:00:00Z")).await;
    assert_eq!(run(&w, &clock).await.dispatched, 2);
    for s in &queue.sent()[1..] {
        let at = arrival(s);
        assert!(
            minute.contains(at) && at >= utc("2026-12-02T09:00:00Z"),
            "{}: {at}",
            s.message.body
        );
    }
}

/// P46 windows × replay: a replayed copy carries no windows (docs/contract.md, `replay`: "nor
/// its `expires_at` or windows"): asked for after the original's window closed, it goes when
/// asked, not at the original's next opening.
#[tokio::test(start_paused = true)]
async fn a_replayed_copy_of_a_windowed_job_has_no_windows_and_goes_when_asked() {
    let (w, _, queue, clock) = waiter(&[BODY_ON]);
    let minute = windows("09:00", "09:01");
    call(
        &w,
        windowed("w", clock.now() + TimeDelta::seconds(10), "09:00", "09:01"),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert_eq!(run(&w, &clock).await.dispatched, 1);
    assert!(minute.contains(arrival(&queue.sent()[0])));

    clock.sleep_until(utc("2026-12-01T09:05:00Z")).await;
    let asked = clock.now();
    let r = call(&w, json!({"action": "replay", "queue": "orders", "job_id": "w"})).await;
    assert_eq!(
        (r["status"].as_str(), r["job_id"].as_str()),
        (Some("scheduled"), Some("w~1")),
        "{r}"
    );
    assert!(
        time_of(&r["perform_at"]) - asked < TimeDelta::seconds(1),
        "due when asked: {r}"
    );
    assert!(get(&w, "w~1").await["windows"].is_null());
    let s = run(&w, &clock).await;
    assert_eq!((s.dispatched, s.moved), (1, 0), "{s:?}");
    let sent = queue.sent();
    let at = arrival(&sent[1]);
    assert_eq!(id_of(&sent[1]), "w~1");
    assert!(
        at >= asked && at - asked <= TimeDelta::seconds(1) && !minute.contains(at),
        "{at}"
    );
}

/// P47 windows × parking: a parked windowed job redriven while its window is open is sent
/// inside it; one redriven after its window closed is moved to the next opening and sent there.
#[tokio::test(start_paused = true)]
async fn a_redriven_windowed_job_is_sent_only_inside_its_windows() {
    let (w, _, queue, clock) = waiter(&[]);
    let minute = windows("09:00", "09:01");
    for id in ["in", "out"] {
        call(&w, windowed(id, clock.now() + TimeDelta::seconds(10), "09:00", "09:01")).await;
    }
    queue.refuse_every_message();
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert_eq!(run(&w, &clock).await.parked, 2);
    *queue.entry_fault.lock().unwrap() = None;

    let redrive = |id: &str| json!({"action": "redrive", "queue": "orders", "job_id": id});
    assert_eq!(call(&w, redrive("in")).await["status"], "scheduled");
    assert_eq!(run(&w, &clock).await.dispatched, 1);
    let at = arrival(&queue.sent()[0]);
    assert_eq!(queue.sent()[0].message.body, "body-in");
    assert!(minute.contains(at), "inside the window still open: {at}");

    clock.sleep_until(utc("2026-12-01T09:05:00Z")).await;
    // Redriven after the close: placed at the next opening, as the reply says.
    let r = call(&w, redrive("out")).await;
    assert_eq!(
        (&r["status"], &r["perform_at"]),
        (&json!("scheduled"), &json!("2026-12-02T09:00:00Z")),
        "{r}"
    );
    let s = run(&w, &clock).await;
    assert_eq!(s.dispatched, 0, "{s:?}");
    assert_eq!(queue.sent().len(), 1, "not sent outside its windows");
    assert_eq!(get(&w, "out").await["perform_at"], "2026-12-02T09:00:00Z");
    clock.sleep_until(utc("2026-12-02T09:00:00Z")).await;
    assert_eq!(run(&w, &clock).await.dispatched, 1);
    let sent = queue.sent();
    let at = arrival(&sent[1]);
    assert_eq!(sent[1].message.body, "body-out");
    assert!(minute.contains(at) && at >= utc("2026-12-02T09:00:00Z"), "{at}");
}

/// P68 rate × debounce: a `replace` takes the call's `priority` and `weight`, an `extend` keeps
/// the job's; under the rate the debounced job takes the budget by them.
#[tokio::test(start_paused = true)]
async fn replace_takes_the_calls_priority_and_weight_extend_keeps_the_jobs_within_the_budget() {
    let (w, store, queue, clock) = waiter(&[RATE_3, PRIORITY_FIRST]);
    let debounced = |body: &str, delay_s: u64, priority: u64, weight: u64, kind: &str| {
        json!({"queue": "orders", "job_id": "d", "message_body": body, "delay_seconds": delay_s,
               "priority": priority, "weight": weight, "on_duplicate": kind})
    };
    let r = call(&w, debounced("v1", 60, 50, 1, "replace")).await;
    assert_eq!(r["status"], "scheduled", "{r}");
    let r = call(&w, debounced("v2", 60, 5, 3, "replace")).await;
    assert_eq!(r["replaced"], true, "{r}");
    assert_eq!(rank(&get(&w, "d").await), (Some(5), Some(3)), "the call's");
    let r = call(&w, debounced("ignored", 90, 900, 1, "extend")).await;
    assert_eq!(r["replaced"], true, "{r}");
    let g = get(&w, "d").await;
    assert_eq!(rank(&g), (Some(5), Some(3)), "the job's: {g}");
    assert_eq!(g["message_body"], "v2");

    tokio::time::sleep(Duration::from_secs(91)).await;
    two_due_earlier(&store, &clock);
    assert_eq!(run(&w, &clock).await.dispatched, 3);
    assert_first_within_the_budget(&queue.sent(), "v2");
}

/// P72 rate × pause-job: jobs that fell due while paused go out, once resumed, under
/// `WAITER_MAX_RATE`: at most the rate's arrivals a second.
#[tokio::test(start_paused = true)]
async fn jobs_that_fell_due_while_paused_go_out_under_the_rate_once_resumed() {
    let (w, _, queue, clock) = waiter(&[("WAITER_MAX_RATE", "2")]);
    let ids = ["p0", "p1", "p2", "p3", "p4"];
    for id in ids {
        schedule(&w, id, 10).await;
        let r = call(&w, json!({"action": "pause", "queue": "orders", "job_id": id})).await;
        assert_eq!(r["status"], "paused", "{r}");
    }
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(run(&w, &clock).await.dispatched, 0, "paused");
    for id in ids {
        let r = call(&w, json!({"action": "resume", "queue": "orders", "job_id": id})).await;
        assert_eq!(r["status"], "resumed", "{r}");
    }
    let resumed = clock.now();
    let s = run(&w, &clock).await;
    assert_eq!(s.dispatched, 5, "{s:?}");
    let sent = queue.sent();
    assert!(sent.iter().all(|m| arrival(m) >= resumed));
    let per_second = units(&sent);
    assert!(per_second.values().all(|n| *n <= 2), "{per_second:?}");
    assert_eq!(per_second.len(), 3, "five at two a second: {per_second:?}");
}

/// P73 rate × pause-queue: a resumed queue's backlog is spread by the rate, at most its
/// arrivals a second, none before the `resume`.
#[tokio::test(start_paused = true)]
async fn a_resumed_queues_backlog_is_spread_by_the_rate() {
    let (w, _, queue, clock) = waiter(&[("WAITER_MAX_RATE", "2")]);
    for i in 0..6 {
        schedule(&w, &format!("q{i}"), 10).await;
    }
    let r = call(&w, json!({"action": "pause", "queue": "orders"})).await;
    assert_eq!(r["status"], "paused", "{r}");
    tokio::time::sleep(Duration::from_secs(60)).await;
    let s = run(&w, &clock).await;
    assert_eq!((s.dispatched, s.paused_queues.len()), (0, 1), "{s:?}");

    let r = call(&w, json!({"action": "resume", "queue": "orders"})).await;
    assert_eq!(r["status"], "resumed", "{r}");
    let resumed = clock.now();
    let s = run(&w, &clock).await;
    assert_eq!(s.dispatched, 6, "{s:?}");
    let sent = queue.sent();
    assert!(sent.iter().all(|m| arrival(m) >= resumed));
    let per_second = units(&sent);
    assert_eq!(
        per_second.values().copied().collect::<Vec<_>>(),
        [2, 2, 2],
        "two a second: {per_second:?}"
    );
}

/// P75 rate × replay: a copy takes the `priority` and `weight` its message carried, and takes
/// the budget by them.
#[tokio::test(start_paused = true)]
async fn a_replayed_copy_takes_the_priority_and_weight_its_message_carried_under_the_rate() {
    let (w, store, queue, clock) = waiter(&[BODY_ON, RATE_3, PRIORITY_FIRST]);
    let r = call(
        &w,
        json!({"queue": "orders", "job_id": "j", "message_body": "body-j", "delay_seconds": 10,
               "priority": 5, "weight": 3}),
    )
    .await;
    assert_eq!(r["status"], "scheduled", "{r}");
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert_eq!(run(&w, &clock).await.dispatched, 1);

    let r = call(&w, json!({"action": "replay", "queue": "orders", "job_id": "j"})).await;
    assert_eq!(
        (r["status"].as_str(), r["job_id"].as_str()),
        (Some("scheduled"), Some("j~1")),
        "{r}"
    );
    assert_eq!(rank(&get(&w, "j~1").await), (Some(5), Some(3)));
    two_due_earlier(&store, &clock);
    assert_eq!(run(&w, &clock).await.dispatched, 3);
    assert_first_within_the_budget(&queue.sent()[1..], "j~1");
}

/// P76 rate × parking: a redriven job keeps its `priority` and `weight`, and takes the budget
/// by them.
#[tokio::test(start_paused = true)]
async fn a_redriven_job_keeps_its_priority_and_weight_under_the_rate() {
    let (w, store, queue, clock) = waiter(&[RATE_3, PRIORITY_FIRST]);
    let r = call(
        &w,
        json!({"queue": "orders", "job_id": "heavy", "message_body": "body-heavy", "delay_seconds": 10,
               "priority": 5, "weight": 3}),
    )
    .await;
    assert_eq!(r["status"], "scheduled", "{r}");
    queue.refuse_every_message();
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert_eq!(run(&w, &clock).await.parked, 1);
    *queue.entry_fault.lock().unwrap() = None;

    let r = call(&w, json!({"action": "redrive", "queue": "orders", "job_id": "heavy"})).await;
    assert_eq!(r["status"], "scheduled", "{r}");
    assert_eq!(rank(&get(&w, "heavy").await), (Some(5), Some(3)));
    two_due_earlier(&store, &clock);
    assert_eq!(run(&w, &clock).await.dispatched, 3);
    assert_first_within_the_budget(&queue.sent(), "heavy");
}
