//! Where `trigger` meets a consumer's `retry`, `replay` and parking (docs/intersections.md P129,
//! P130, P131). A triggered one-off job leaves as any sent job does, so its retries and replays
//! are any job's; a series' extra occurrence is a job of its own under `{id}@{epoch}` for its
//! consumer, for parking and `redrive`, and for the copy `replay` makes of it.

use chrono::TimeDelta;
use serde_json::{json, Value};

use crate::ports::Clock;
use crate::testing::*;
use sqs_waiter_contract::{ATTEMPT_ATTRIBUTE, JOB_ID_ATTRIBUTE};

const BODY_ON: (&str, &str) = ("WAITER_HISTORY_BODY", "true");
const NO_LOOKAHEAD: (&str, &str) = ("WAITER_LOOKAHEAD", "0");
const ONE_SHARD: (&str, &str) = ("WAITER_SHARDS", "1");

async fn run(w: &TestWaiter, clock: &FakeClock) -> crate::poller::RunSummary {
    dispatcher_for(w).run(clock.now() + TimeDelta::seconds(30)).await
}

async fn get(w: &TestWaiter, id: &str) -> Value {
    call(w, json!({"action": "get", "queue": "orders", "job_id": id})).await
}

async fn trigger(w: &TestWaiter, id: &str) -> Value {
    call(w, json!({"action": "trigger", "queue": "orders", "job_id": id})).await
}

/// Series `s` on `orders`, every hour from an hour ahead, with body `tick`.
async fn hourly(w: &TestWaiter) -> Value {
    let r = call(
        w,
        json!({"queue": "orders", "message_body": "tick", "job_id": "s", "delay_seconds": 3600,
               "repeat": {"every_s": 3600}}),
    )
    .await;
    assert_eq!(r["status"], "scheduled", "{r}");
    r
}

/// A consumer's retry of `attempt` of `id`, which it received with `body` (without asking SQS
/// for its attributes), due 2 s later.
fn retry(id: &str, attempt: u64, body: &str) -> Value {
    json!({"action": "retry", "queue": "orders", "job_id": id, "attempt": attempt, "message_body": body,
           "backoff": {"base_s": 2, "jitter": false}})
}

fn replay(id: &str) -> Value {
    json!({"action": "replay", "queue": "orders", "job_id": id})
}

/// The ids `list_parked` shows.
async fn parked_ids(w: &TestWaiter) -> Vec<String> {
    let r = call(w, json!({"action": "list_parked", "queue": "orders"})).await;
    let jobs = r["jobs"].as_array().unwrap_or_else(|| panic!("jobs: {r}"));
    jobs.iter()
        .filter_map(|j| j["job_id"].as_str().map(str::to_owned))
        .collect()
}

/// P129 trigger × retry, a one-off job: the consumer of a triggered job's message retries it;
/// attempt 2 is scheduled over the `dispatched` record the trigger left and arrives with
/// `waiter.attempt` 2.
#[tokio::test(start_paused = true)]
async fn a_triggered_job_is_retried_and_its_second_attempt_arrives() {
    let (w, _, queue, clock) = test_waiter("orders", &[NO_LOOKAHEAD, ONE_SHARD]);
    schedule(&w, "a", 3600).await;
    assert_eq!(trigger(&w, "a").await["status"], "sent");
    let r = call(&w, retry("a", 1, "body-a")).await;
    assert_eq!(
        (r["status"].as_str(), r["attempt"].as_u64()),
        (Some("scheduled"), Some(2)),
        "{r}"
    );
    clock.advance(TimeDelta::seconds(3));
    run(&w, &clock).await;
    let sent = queue.sent();
    assert_eq!(sent.len(), 2, "the triggered send, then attempt 2");
    assert_eq!(sent[1].message.body, "body-a");
    assert_eq!(
        attribute_text(&sent[1].message, ATTEMPT_ATTRIBUTE).as_deref(),
        Some("2")
    );
    let g = get(&w, "a").await;
    assert_eq!(
        (g["status"].as_str(), g["attempt"].as_u64()),
        (Some("dispatched"), Some(2)),
        "{g}"
    );
}

/// P129 trigger × retry, a series: the extra occurrence's consumer retries it under the id its
/// message carries, `{id}@{epoch}`; attempt 2 arrives under that id, the series untouched, and a
/// retry under the series' own id is still refused.
#[tokio::test(start_paused = true)]
async fn an_extra_occurrence_is_retried_under_its_own_id_and_the_series_is_untouched() {
    let (w, _, queue, clock) = test_waiter("orders", &[NO_LOOKAHEAD, ONE_SHARD]);
    let next = hourly(&w).await["perform_at"].clone();
    let r = trigger(&w, "s").await;
    assert_eq!(r["status"], "sent", "{r}");
    let extra = r["job_id"].as_str().expect("the occurrence's id").to_owned();
    assert_eq!(
        attribute_text(&queue.sent()[0].message, JOB_ID_ATTRIBUTE).as_ref(),
        Some(&extra)
    );
    let r = call(&w, retry(&extra, 1, "tick")).await;
    assert_eq!(
        (r["status"].as_str(), r["job_id"].as_str(), r["attempt"].as_u64()),
        (Some("scheduled"), Some(extra.as_str()), Some(2)),
        "{r}"
    );
    clock.advance(TimeDelta::seconds(3));
    run(&w, &clock).await;
    let sent = queue.sent();
    assert_eq!(sent.len(), 2);
    assert_eq!(
        attribute_text(&sent[1].message, JOB_ID_ATTRIBUTE).as_ref(),
        Some(&extra)
    );
    assert_eq!(
        attribute_text(&sent[1].message, ATTEMPT_ATTRIBUTE).as_deref(),
        Some("2")
    );
    let g = get(&w, "s").await;
    assert_eq!(
        (g["perform_at"].clone(), g["occurrences"].as_u64()),
        (next, Some(0)),
        "{g}"
    );
    let e = match w.handle(&retry("s", 1, "tick")).await {
        Err(crate::error::HandlerError::Invalid(e)) => e,
        other => panic!("a retry under the series' id must be refused, got {other:?}"),
    };
    assert_eq!(e.field, "job_id", "{e:?}");
}

/// P130 trigger × replay, a one-off job: a triggered job leaves a `dispatched` record (version 2:
/// the trigger moved it), which `replay` copies once, with its body.
#[tokio::test(start_paused = true)]
async fn a_triggered_job_is_replayed_once_from_its_record() {
    let (w, _, queue, clock) = test_waiter("orders", &[BODY_ON, NO_LOOKAHEAD, ONE_SHARD]);
    schedule(&w, "a", 3600).await;
    assert_eq!(trigger(&w, "a").await["status"], "sent");
    let r = call(&w, replay("a")).await;
    assert_eq!(
        (r["status"].as_str(), r["job_id"].as_str(), r["replay_of"].as_str()),
        (Some("scheduled"), Some("a~2"), Some("a")),
        "{r}"
    );
    clock.advance(TimeDelta::seconds(1));
    run(&w, &clock).await;
    let again = call(&w, replay("a")).await;
    assert_eq!(again["duplicate"], true, "{again}");
    run(&w, &clock).await;
    let sent = queue.sent();
    assert_eq!(sent.len(), 2, "the triggered send and one copy");
    assert_eq!(sent[1].message.body, "body-a");
    assert_eq!(
        attribute_text(&sent[1].message, JOB_ID_ATTRIBUTE).as_deref(),
        Some("a~2")
    );
}

/// P130 trigger × replay, an extra occurrence: its send leaves no record under `{id}@{epoch}`
/// (the series' item moved back), so `replay` of it is `not_replayable`, and of the series (still
/// stored) a `conflict`. Once its consumer retried it and attempt 2 was sent, that attempt's
/// record is replayed: the copy is sent under an id of its own, which every action that names a
/// job must take (`get`, and its consumer's `retry`).
#[tokio::test(start_paused = true)]
async fn an_extra_occurrence_is_replayed_from_its_retrys_record_under_an_id_that_can_be_named() {
    let (w, _, queue, clock) = test_waiter("orders", &[BODY_ON, NO_LOOKAHEAD, ONE_SHARD]);
    hourly(&w).await;
    let r = trigger(&w, "s").await;
    assert_eq!(r["status"], "sent", "{r}");
    let extra = r["job_id"].as_str().expect("the occurrence's id").to_owned();
    assert_eq!(call(&w, replay(&extra)).await["status"], "not_replayable");
    assert_eq!(call(&w, replay("s")).await["status"], "conflict");

    assert_eq!(call(&w, retry(&extra, 1, "tick")).await["attempt"], 2);
    clock.advance(TimeDelta::seconds(3));
    run(&w, &clock).await;
    assert_eq!(queue.sent().len(), 2, "attempt 2 sent");
    let r = call(&w, replay(&extra)).await;
    assert_eq!(
        (r["status"].as_str(), r["replay_of"].as_str()),
        (Some("scheduled"), Some(extra.as_str())),
        "{r}"
    );
    let copy = r["job_id"].as_str().expect("the copy's id").to_owned();
    clock.advance(TimeDelta::seconds(1));
    run(&w, &clock).await;
    let sent = queue.sent();
    assert_eq!(sent.len(), 3, "the copy");
    assert_eq!(sent[2].message.body, "tick");
    assert_eq!(attribute_text(&sent[2].message, JOB_ID_ATTRIBUTE).as_ref(), Some(&copy));

    // The consumer of the copy's message can look it up and retry it under the id it carries.
    let got = w
        .handle(&json!({"action": "get", "queue": "orders", "job_id": copy}))
        .await;
    let got = got.unwrap_or_else(|e| panic!("get of the copy {copy} refused: {e:?}"));
    assert_eq!(got["status"], "dispatched", "{got}");
    let r = w.handle(&retry(&copy, 1, "tick")).await;
    let r = r.unwrap_or_else(|e| panic!("retry of the copy {copy} refused: {e:?}"));
    assert_eq!(
        (r["status"].as_str(), r["attempt"].as_u64()),
        (Some("scheduled"), Some(2)),
        "{r}"
    );
}

/// P131 trigger × parking, a one-off job: SQS refuses the triggered send for good; the job is
/// parked and `trigger` answers what it is (`parked`, with SQS's error). `redrive` sends it.
#[tokio::test(start_paused = true)]
async fn a_triggered_job_that_sqs_refuses_is_parked_and_redriven() {
    let (w, _, queue, clock) = test_waiter("orders", &[NO_LOOKAHEAD, ONE_SHARD]);
    schedule(&w, "a", 3600).await;
    queue.refuse_every_message();
    let r = trigger(&w, "a").await;
    assert_eq!(
        (r["status"].as_str(), r["job_id"].as_str(), r["error"]["code"].as_str()),
        (Some("parked"), Some("a"), Some("InvalidParameterValue")),
        "{r}"
    );
    assert!(queue.sent().is_empty());
    assert_eq!(parked_ids(&w).await, ["a"]);

    *queue.entry_fault.lock().unwrap() = None;
    let r = call(&w, json!({"action": "redrive", "queue": "orders", "job_id": "a"})).await;
    assert_eq!(r["status"], "scheduled", "{r}");
    run(&w, &clock).await;
    let bodies: Vec<String> = queue.sent().iter().map(|s| s.message.body.clone()).collect();
    assert_eq!(bodies, ["body-a"]);
    assert_eq!(get(&w, "a").await["status"], "dispatched");
    assert!(parked_ids(&w).await.is_empty());
}

/// P131 trigger × parking, a series: SQS refuses the extra occurrence for good; it is parked
/// alone under `{id}@{epoch}`, the series untouched, and `redrive` sends it under that id. The
/// trigger's answer says what happened to what it was asked to send: the occurrence is
/// `parked`, under its id (not the series' `scheduled`, which reads as if the occurrence were
/// still to go, as under `WAITER_MAX_RATE`).
#[tokio::test(start_paused = true)]
async fn a_triggered_extra_occurrence_that_sqs_refuses_is_parked_alone_and_trigger_says_so() {
    let (w, _, queue, clock) = test_waiter("orders", &[NO_LOOKAHEAD, ONE_SHARD]);
    let next = hourly(&w).await["perform_at"].clone();
    queue.refuse_every_message();
    let answer = trigger(&w, "s").await;
    assert!(queue.sent().is_empty());
    let parked = parked_ids(&w).await;
    assert_eq!(parked.len(), 1, "{parked:?}");
    let extra = parked[0].clone();
    assert!(extra.starts_with("s@"), "{extra}");
    let g = get(&w, "s").await;
    assert_eq!(
        (g["status"].as_str(), g["perform_at"].clone(), g["occurrences"].as_u64()),
        (Some("scheduled"), next, Some(0)),
        "the series where it stood: {g}"
    );

    *queue.entry_fault.lock().unwrap() = None;
    let r = call(&w, json!({"action": "redrive", "queue": "orders", "job_id": extra})).await;
    assert_eq!(r["status"], "scheduled", "{r}");
    // Its instant may be the start of the next second (`Series::extra_at`): never sent early.
    clock.advance(TimeDelta::seconds(2));
    run(&w, &clock).await;
    let sent = queue.sent();
    assert_eq!(sent.len(), 1, "the extra occurrence, once");
    assert_eq!(
        attribute_text(&sent[0].message, JOB_ID_ATTRIBUTE).as_ref(),
        Some(&extra)
    );

    assert_eq!(
        (answer["status"].as_str(), answer["job_id"].as_str()),
        (Some("parked"), Some(extra.as_str())),
        "trigger's answer: {answer}"
    );
}
