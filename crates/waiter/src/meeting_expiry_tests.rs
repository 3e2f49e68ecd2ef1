//! `expires_at` where it meets `trigger`, a job's and a queue's pause, `replay` and parking
//! (docs/intersections.md P26, P27, P28, P30 and P31). A job found after its `expires_at` is
//! dropped and recorded `expired`, whichever path finds it: it is never sent. A replayed copy
//! is a new job, due now, without the expiry of the job it copies.

use chrono::TimeDelta;
use serde_json::{json, Value};

use crate::config::QueueName;
use crate::job::AttributeData;
use crate::poller::RunSummary;
use crate::ports::{Clock, Partition};
use crate::testing::{call, dispatcher_for, schedule, test_waiter, FakeQueue, TestWaiter};

/// One shard and no lookahead: nothing is handed over ahead of its time, and only the runs and
/// calls a test makes send anything.
const SETTINGS: [(&str, &str); 2] = [("WAITER_SHARDS", "1"), ("WAITER_LOOKAHEAD", "0")];

/// `{"action": action, "queue": "orders", "job_id": id}`'s reply.
async fn act(w: &TestWaiter, action: &str, id: &str) -> Value {
    call(w, json!({"action": action, "queue": "orders", "job_id": id})).await
}

/// Stores job `id` on `orders` (body `body-{id}`), due `delay_s` from now, expiring
/// `expires_in_s` from now.
async fn expiring(w: &TestWaiter, id: &str, delay_s: u64, expires_in_s: i64) {
    let expires_at = crate::time::format_rfc3339(w.clock.now() + TimeDelta::seconds(expires_in_s));
    let r = call(
        w,
        json!({"queue": "orders", "job_id": id, "message_body": format!("body-{id}"), "delay_seconds": delay_s,
               "expires_at": expires_at}),
    )
    .await;
    assert_eq!(r["status"], "scheduled", "{id}: {r}");
}

/// One poller run over every shard.
async fn run(w: &TestWaiter) -> RunSummary {
    dispatcher_for(w).run(w.clock.now() + TimeDelta::seconds(30)).await
}

/// The bodies SQS received, in order.
fn bodies(queue: &FakeQueue) -> Vec<String> {
    queue.sent().iter().map(|s| s.message.body.clone()).collect()
}

/// `get` answers the `expired` record for `id`.
async fn assert_expired(w: &TestWaiter, id: &str) {
    let g = act(w, "get", id).await;
    assert_eq!(g["status"], "expired", "{id}: {g}");
    assert!(g["expired_at"].is_string(), "{id}: {g}");
}

/// P26, expires_at × trigger: `trigger` moves a one-off job to now and "`expires_at` still
/// applies" (docs/steering.md, "Run now"). A job no poller run reached (an outage) whose expiry
/// has passed is dropped by the trigger's own run: nothing is sent, the call answers with the
/// job as it is now (its `expired` record), and a job within its expiry is triggered as usual.
#[tokio::test(start_paused = true)]
async fn trigger_of_a_job_past_its_expires_at_drops_it_as_expired_and_sends_nothing() {
    let (w, store, queue, clock) = test_waiter("orders", &SETTINGS);
    expiring(&w, "t", 3600, 3660).await;
    expiring(&w, "u", 7200, 7300).await;
    // No run for an hour: `t` is overdue and past its expiry, still stored.
    clock.advance(TimeDelta::seconds(3700));
    assert_eq!(act(&w, "get", "t").await["status"], "scheduled");

    let r = act(&w, "trigger", "t").await;
    assert_eq!(r["status"], "expired", "{r}");
    assert!(r["message_id"].is_null(), "{r}");
    assert!(queue.sent().is_empty(), "nothing sent after its expires_at");
    assert_expired(&w, "t").await;
    assert_eq!(store.len(), 1, "only `u` is still stored");

    // Within its expiry, a job not yet due is triggered and sent.
    let r = act(&w, "trigger", "u").await;
    assert_eq!(r["status"], "sent", "{r}");
    assert!(r["message_id"].is_string(), "{r}");
    assert_eq!(bodies(&queue), ["body-u"]);
    assert_eq!(store.len(), 0);
}

/// P27, expires_at × pause-job: a paused job keeps its times and no run sends, moves or drops
/// it; after `resume`, "windows and `expires_at` apply (a job that expired meanwhile leaves its
/// `expired` record)" (docs/steering.md, "What a pause does"). The job paused beside it, still
/// within its expiry, goes out on the same run.
#[tokio::test(start_paused = true)]
async fn a_job_that_expired_while_paused_is_dropped_after_resume_not_sent() {
    let (w, _, queue, clock) = test_waiter("orders", &SETTINGS);
    expiring(&w, "x", 3600, 3660).await;
    expiring(&w, "k", 3600, 86_400).await;
    for id in ["x", "k"] {
        let r = act(&w, "pause", id).await;
        assert_eq!(r["status"], "paused", "{id}: {r}");
    }
    clock.advance(TimeDelta::seconds(3700));
    let s = run(&w).await;
    assert_eq!(
        (s.dispatched, s.expired),
        (0, 0),
        "paused: not sent, not dropped: {s:?}"
    );
    let g = act(&w, "get", "x").await;
    assert_eq!(
        (g["status"].as_str(), g["paused"].as_bool()),
        (Some("scheduled"), Some(true)),
        "{g}"
    );

    for id in ["x", "k"] {
        let r = act(&w, "resume", id).await;
        assert_eq!(r["status"], "resumed", "{id}: {r}");
    }
    let s = run(&w).await;
    assert_eq!((s.dispatched, s.expired), (1, 1), "{s:?}");
    assert_eq!(bodies(&queue), ["body-k"], "the job past its expiry is not sent");
    assert_expired(&w, "x").await;
    assert_eq!(run(&w).await.dispatched, 0, "nothing left to send");
}

/// P28, expires_at × pause-queue: a paused queue sends nothing, and `enqueue` stores what it
/// would have sent straight to SQS (docs/steering.md). After `resume`, the stored job and the
/// direct one that expired meanwhile are dropped and recorded `expired`, not sent; a job
/// without an expiry goes out.
#[tokio::test(start_paused = true)]
async fn jobs_that_expired_while_their_queue_was_paused_are_dropped_after_resume_not_sent() {
    let (w, _, queue, clock) = test_waiter("orders", &SETTINGS);
    expiring(&w, "a", 3600, 3660).await;
    let r = call(&w, json!({"action": "pause", "queue": "orders"})).await;
    assert_eq!(r["status"], "paused", "{r}");
    // Due in 10 s: sent straight to SQS on a running queue, stored (`scheduled`) on a paused one.
    expiring(&w, "d", 10, 60).await;
    schedule(&w, "k", 10).await;
    assert!(queue.sent().is_empty(), "nothing sent straight while paused");

    clock.advance(TimeDelta::seconds(3700));
    let s = run(&w).await;
    assert_eq!(s.paused_queues, ["orders"], "{s:?}");
    assert_eq!((s.dispatched, s.expired), (0, 0), "a paused queue is left alone: {s:?}");

    let r = call(&w, json!({"action": "resume", "queue": "orders"})).await;
    assert_eq!(r["status"], "resumed", "{r}");
    let s = run(&w).await;
    assert_eq!((s.dispatched, s.expired), (1, 2), "{s:?}");
    assert_eq!(bodies(&queue), ["body-k"], "no job past its expiry is sent");
    for id in ["a", "d"] {
        assert_expired(&w, id).await;
    }
}

/// P30, expires_at × replay: `replay` takes a job whose record says `dispatched`, `cancelled`
/// or `expired` (DESIGN.md, "Retries and replay"). The copy carries the body, "not its
/// `expires_at` or windows" (docs/contract.md, `replay`): it is a new job, due now, sent though
/// the job it copies expired. The original's `expired` record stays, and a second `replay` of
/// it is a duplicate of the copy.
#[tokio::test(start_paused = true)]
async fn replay_of_an_expired_job_sends_a_copy_due_now_without_its_expires_at() {
    let (w, store, queue, clock) = test_waiter("orders", &[SETTINGS[0], SETTINGS[1], ("WAITER_HISTORY_BODY", "true")]);
    expiring(&w, "e", 3600, 3660).await;
    clock.advance(TimeDelta::seconds(3700));
    let s = run(&w).await;
    assert_eq!((s.dispatched, s.expired), (0, 1), "{s:?}");
    assert_expired(&w, "e").await;

    let r = act(&w, "replay", "e").await;
    assert_eq!(
        (r["status"].as_str(), r["job_id"].as_str(), r["replay_of"].as_str()),
        (Some("scheduled"), Some("e~1"), Some("e")),
        "{r}"
    );
    let q = QueueName::parse("orders").expect("queue");
    let copy = store.get(&q, Partition::Shard(0), "e~1").expect("the copy is stored");
    assert_eq!(copy.job.expires_at, None, "the copy has no expiry");
    assert!(
        copy.job.perform_at - clock.now() < TimeDelta::seconds(1),
        "due now: {}",
        copy.job.perform_at
    );
    assert!(act(&w, "get", "e~1").await["expires_at"].is_null());

    clock.advance(TimeDelta::seconds(1));
    let s = run(&w).await;
    assert_eq!((s.dispatched, s.expired), (1, 0), "{s:?}");
    let sent = queue.sent();
    assert_eq!(bodies(&queue), ["body-e"]);
    assert_eq!(
        sent[0].message.attributes["waiter.job_id"].data,
        AttributeData::String("e~1".into()),
        "the copy's message names the copy"
    );
    assert_eq!(sent[0].message.expires_at, None);
    assert_expired(&w, "e").await;
    assert_eq!(act(&w, "get", "e~1").await["status"], "dispatched");

    let again = act(&w, "replay", "e").await;
    assert_eq!(again["duplicate"], true, "{again}");
    assert_eq!(queue.sent().len(), 1, "one copy");
}

/// P31, expires_at × parking: a parked job keeps its `expires_at`; `redrive` past it must not
/// send it. "A job found after it is dropped and counted as expired, not sent"
/// (docs/contract.md, `expires_at`), and no document makes `redrive` an exception. So the
/// redriven job keeps its expiry and is dropped as expired by the next run, `get` answers
/// `expired`, and the job parked beside it, within its expiry, is sent.
///
/// Before issue 71's fix, `redrive_one` (app/parked.rs) cleared an expiry that had passed and
/// stored the job due now, so the next run sent `body-p` after its `expires_at`.
#[tokio::test(start_paused = true)]
async fn redrive_of_a_parked_job_past_its_expires_at_drops_it_as_expired_not_sent() {
    let (w, _, queue, clock) = test_waiter("orders", &SETTINGS);
    expiring(&w, "p", 3600, 3660).await;
    expiring(&w, "q", 3600, 86_400).await;
    queue.refuse_every_message();
    clock.advance(TimeDelta::seconds(3601));
    let s = run(&w).await;
    assert_eq!((s.parked, s.dispatched), (2, 0), "{s:?}");
    *queue.entry_fault.lock().expect("the fault's lock") = None;
    let g = act(&w, "get", "p").await;
    assert_eq!(g["status"], "parked", "{g}");
    assert!(g["expires_at"].is_string(), "the parked job keeps its expiry: {g}");

    // The cause is fixed, and the jobs redriven, after `p`'s expiry.
    clock.advance(TimeDelta::seconds(120));
    let r = act(&w, "redrive", "p").await;
    assert_eq!(r["status"], "scheduled", "{r}");
    let g = act(&w, "get", "p").await;
    assert!(g["expires_at"].is_string(), "redriven, it keeps its expiry: {g}");
    let r = act(&w, "redrive", "q").await;
    assert_eq!(r["status"], "scheduled", "{r}");
    run(&w).await;
    assert_eq!(bodies(&queue), ["body-q"], "a job past its expires_at is not sent");
    assert_expired(&w, "p").await;
    let parked = call(&w, json!({"action": "list_parked", "queue": "orders"})).await;
    assert_eq!(parked["count"], 0, "{parked}");
}
