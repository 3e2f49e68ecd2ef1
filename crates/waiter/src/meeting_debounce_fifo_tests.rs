//! Pairs of features that docs/intersections.md listed as `uncovered:`, over the in-memory fakes:
//! FIFO with a job's and a queue's pause (P85, P86), debounce with cancel, reschedule and parking
//! (P94, P95, P101), and a queue's pause across shards and poller groups (P148).

use chrono::TimeDelta;
use serde_json::{json, Value};

use crate::app::Waiter;
use crate::poller::{Dispatcher, PollerGroup, RunSummary};
use crate::ports::{Clock, EntryOutcome, OutgoingMessage};
use crate::testing::*;

const FIFO: &str = "jobs.fifo";

type Racing = Waiter<FaultyStore<MemStore>, FakeQueue, FakeClock>;

/// The reply of a request the racing waiter must accept.
async fn ask(w: &Racing, v: Value) -> Value {
    w.handle(&v).await.unwrap_or_else(|e| panic!("{v}: {e:?}"))
}

async fn get(w: &TestWaiter, queue: &str, id: &str) -> Value {
    call(w, json!({"action": "get", "queue": queue, "job_id": id})).await
}

async fn run(w: &TestWaiter) -> RunSummary {
    dispatcher_for(w).run(w.clock.now() + TimeDelta::seconds(30)).await
}

/// One run of each of `groups` poller groups at once, each its own dispatcher (another process).
async fn run_groups(w: &TestWaiter, groups: u32) -> Vec<RunSummary> {
    let deadline = w.clock.now() + TimeDelta::seconds(30);
    let runs = (0..groups).map(|group| {
        let d = dispatcher_for(w);
        async move { d.run_group(deadline, Some(PollerGroup { group, groups })).await }
    });
    futures::future::join_all(runs).await
}

fn bodies(queue: &FakeQueue) -> Vec<String> {
    queue.sent().iter().map(|s| s.message.body.clone()).collect()
}

/// The bodies SQS received in FIFO message group `group`, in the order it received them.
fn in_group(queue: &FakeQueue, group: &str) -> Vec<String> {
    queue
        .sent()
        .iter()
        .filter(|s| s.message.group_id.as_deref() == Some(group))
        .map(|s| s.message.body.clone())
        .collect()
}

fn fifo_job(id: &str, group: &str, in_s: u64) -> Value {
    json!({"queue": FIFO, "job_id": id, "message_body": id, "message_group_id": group, "delay_seconds": in_s})
}

/// `enqueue` on queue `orders` with `on_duplicate` `kind`.
fn enqueue(id: &str, body: &str, delay_s: u64, kind: &str) -> Value {
    json!({"queue": "orders", "job_id": id, "message_body": body, "delay_seconds": delay_s, "on_duplicate": kind})
}

/// P85, FIFO × pause-job (docs/steering.md, "On a FIFO queue"): pausing one job of a message
/// group lets the group's later jobs go ahead of it, since SQS orders a group by arrival; the
/// paused job keeps its time, and `resume` sends it after them.
#[tokio::test(start_paused = true)]
async fn a_paused_fifo_job_lets_its_groups_later_jobs_go_first_and_resume_sends_it_after_them() {
    let (w, _, queue, clock) = test_waiter(FIFO, &[("WAITER_SHARDS", "1")]);
    for (id, in_s) in [("g1", 10), ("g2", 20), ("g3", 30)] {
        let r = call(&w, fifo_job(id, "g", in_s)).await;
        assert_eq!(r["status"], "scheduled", "{r}");
    }
    let due = get(&w, FIFO, "g2").await["perform_at"].clone();
    let r = call(&w, json!({"action": "pause", "queue": FIFO, "job_id": "g2"})).await;
    assert_eq!(r["status"], "paused", "{r}");
    clock.advance(TimeDelta::seconds(60));
    run(&w).await;
    assert_eq!(
        in_group(&queue, "g"),
        ["g1", "g3"],
        "the later job goes ahead of the paused one"
    );
    let g = get(&w, FIFO, "g2").await;
    assert_eq!(
        (g["status"].as_str(), g["paused"].as_bool(), &g["perform_at"]),
        (Some("scheduled"), Some(true), &due),
        "still stored, paused, at its own time: {g}"
    );
    let r = call(&w, json!({"action": "resume", "queue": FIFO, "job_id": "g2"})).await;
    assert_eq!(r["status"], "resumed", "{r}");
    run(&w).await;
    assert_eq!(
        in_group(&queue, "g"),
        ["g1", "g3", "g2"],
        "sent once resumed, after them"
    );
    run(&w).await;
    assert_eq!(queue.sent().len(), 3, "each once");
}

/// P86, FIFO × pause-queue: the queue is paused while a FIFO run holds its partition for jobs
/// falling due (`WAITER_FIFO_HOLD`). After `pause` answers, the run sends nothing more; the jobs
/// it was holding stay stored (not sent, dropped or lost), nothing goes out while paused, and
/// after `resume` each message group arrives in its own order.
#[tokio::test(start_paused = true)]
async fn a_queue_paused_during_a_fifo_hold_keeps_the_held_jobs_stored_and_each_groups_order() {
    let (w, store, queue, clock) = test_waiter(FIFO, &[("WAITER_SHARDS", "1"), ("WAITER_FIFO_HOLD", "30")]);
    // Two groups, interleaved, falling due within the run's hold.
    let jobs = [
        ("g1", "g", 1),
        ("h1", "h", 2),
        ("g2", "g", 4),
        ("h2", "h", 5),
        ("g3", "g", 8),
        ("h3", "h", 9),
    ];
    for (id, group, in_s) in jobs {
        let r = call(&w, fifo_job(id, group, in_s)).await;
        assert_eq!(r["status"], "scheduled", "{r}");
    }
    let d = dispatcher_for(&w);
    let steer = async {
        // The run holds the partition and has sent g1 and h1 by now.
        tokio::time::sleep(std::time::Duration::from_millis(2_500)).await;
        let r = call(&w, json!({"action": "pause", "queue": FIFO})).await;
        assert_eq!(r["status"], "paused", "{r}");
        bodies(&queue)
    };
    let (summary, at_answer) = tokio::join!(d.run(clock.now() + TimeDelta::seconds(60)), steer);
    assert_eq!(at_answer, ["g1", "h1"], "what fell due before the pause");
    assert_eq!(
        bodies(&queue),
        at_answer,
        "nothing after the pause answered: {summary:?}"
    );
    assert_eq!(summary.dispatched, 2, "{summary:?}");
    assert_eq!(store.len(), 4, "the jobs the run held stay stored");
    for id in ["g2", "h2", "g3", "h3"] {
        let g = get(&w, FIFO, id).await;
        assert_eq!(g["status"], "scheduled", "{id}: {g}");
    }
    assert_eq!(get(&w, FIFO, "g1").await["status"], "dispatched");
    // Paused, all of them due: nothing goes out.
    clock.advance(TimeDelta::seconds(30));
    let paused = run(&w).await;
    assert_eq!(paused.paused_queues, vec![FIFO]);
    assert_eq!(queue.sent().len(), 2, "nothing while paused");
    let r = call(&w, json!({"action": "resume", "queue": FIFO})).await;
    assert_eq!(r["status"], "resumed", "{r}");
    run(&w).await;
    assert_eq!(in_group(&queue, "g"), ["g1", "g2", "g3"]);
    assert_eq!(in_group(&queue, "h"), ["h1", "h2", "h3"]);
    assert_eq!(store.len(), 0);
}

/// P94, debounce × cancel (history on): `keep` of an id whose job was cancelled is a duplicate
/// of its record (nothing stored); `replace` and `extend` store a new life over the record, a
/// later version, and only the new lives are sent. A `cancel` racing a `replace` answers
/// `cancelled`, and the version it cancelled is never sent: when the replace came first, the
/// cancel took its version and nothing goes out; when the cancel came first, the replace
/// stored a new life over its record, which goes out once.
#[tokio::test(start_paused = true)]
async fn a_debounce_over_a_cancelled_job_stores_a_new_life_and_a_cancelled_version_is_never_sent() {
    let settings = [
        ("WAITER_HISTORY_DAYS", "7"),
        ("WAITER_SHARDS", "1"),
        ("WAITER_LOOKAHEAD", "0"),
    ];
    let (w, store, queue, clock) = test_waiter("orders", &settings);
    for id in ["a", "b"] {
        schedule(&w, id, 3600).await;
        let c = call(&w, json!({"action": "cancel", "queue": "orders", "job_id": id})).await;
        assert_eq!(c["status"], "cancelled", "{c}");
    }
    let r = call(&w, enqueue("a", "kept", 3600, "keep")).await;
    assert_eq!(
        (r["status"].as_str(), r["duplicate"].as_bool()),
        (Some("cancelled"), Some(true)),
        "keep: a duplicate of the record: {r}"
    );
    assert_eq!(store.len(), 0, "nothing stored");
    for (id, kind) in [("a", "replace"), ("b", "extend")] {
        let body = format!("{id}-new");
        let r = call(&w, enqueue(id, &body, 60, kind)).await;
        assert_eq!(
            (r["status"].as_str(), r["replaced"].as_bool(), r["duplicate"].as_bool()),
            (Some("scheduled"), Some(false), Some(true)),
            "{kind}: a new job over the record: {r}"
        );
        assert!(
            r["version"].as_u64() > Some(1),
            "{kind}: past the record's version: {r}"
        );
        assert_eq!(get(&w, "orders", id).await["message_body"], body.as_str());
    }
    clock.advance(TimeDelta::seconds(61));
    run(&w).await;
    let mut sent = bodies(&queue);
    sent.sort();
    assert_eq!(sent, ["a-new", "b-new"], "the new lives, never a cancelled one");

    // How often each call wrote first: both orders must come up.
    let mut orders = [0; 2];
    for seed in 0..30 {
        let (w, mem, queue, clock) = racing_waiter(seed, &settings);
        let r = ask(&w, enqueue("d", "v1", 3600, "keep")).await;
        assert_eq!(r["status"], "scheduled", "seed {seed}: {r}");
        let cancel = json!({"action": "cancel", "queue": "orders", "job_id": "d"});
        let replace = enqueue("d", "v2", 60, "replace");
        let (c, r) = tokio::join!(w.handle(&cancel), w.handle(&replace));
        let (c, r) = (c.unwrap(), r.unwrap());
        assert_eq!(c["status"], "cancelled", "seed {seed}: {c}");
        clock.advance(TimeDelta::hours(2));
        Dispatcher::new(w.config.clone(), mem.clone(), queue.clone(), clock.clone())
            .run(clock.now() + TimeDelta::seconds(30))
            .await;
        let got = ask(&w, json!({"action": "get", "queue": "orders", "job_id": "d"})).await;
        orders[usize::from(r["replaced"] == false)] += 1;
        let expected: (Vec<&str>, &str) = match r["replaced"].as_bool() {
            // The replace wrote first; the cancel then took that version.
            Some(true) => (vec![], "cancelled"),
            // The cancel first: the replace stored a new life over its record.
            Some(false) => (vec!["v2"], "dispatched"),
            None => panic!("seed {seed}: {r}"),
        };
        assert_eq!(bodies(&queue), expected.0, "seed {seed}: {c} {r}");
        assert_eq!(got["status"], expected.1, "seed {seed}: {got}");
        assert_eq!(mem.len(), 0, "seed {seed}");
    }
    assert!(orders.iter().all(|n| *n > 0), "replace first, cancel first: {orders:?}");
}

fn reschedule(id: &str, if_version: Option<u64>) -> Value {
    let mut r = json!({"action": "reschedule", "queue": "orders", "job_id": id, "delay_seconds": 5400,
                       "message_body": "r"});
    if let Some(v) = if_version {
        r["if_version"] = json!(v);
    }
    r
}

/// P95, debounce × reschedule: a `replace` and a `reschedule` of one id each write only over the
/// version they read. In turn, a `reschedule` with the `if_version` read before a `replace`
/// answers `conflict` with the replace's version and changes nothing. At once, one wins and the
/// other reads again: neither write is lost (the last writer's body and time are stored, the
/// version counts both), and a reschedule with `if_version` 1 that lost answers `conflict`.
#[tokio::test(start_paused = true)]
async fn a_replace_and_a_reschedule_of_one_id_each_write_over_the_version_they_read() {
    let (w, _, _, _) = test_waiter("orders", &[("WAITER_LOOKAHEAD", "0")]);
    schedule(&w, "d", 3600).await;
    let read = get(&w, "orders", "d").await["version"].as_u64();
    assert_eq!(read, Some(1));
    let r = call(&w, enqueue("d", "v2", 7200, "replace")).await;
    assert_eq!(
        (r["replaced"].as_bool(), r["version"].as_u64()),
        (Some(true), Some(2)),
        "{r}"
    );
    let c = call(&w, reschedule("d", read)).await;
    assert_eq!(
        (c["status"].as_str(), c["version"].as_u64()),
        (Some("conflict"), Some(2)),
        "{c}"
    );
    let g = get(&w, "orders", "d").await;
    assert_eq!(
        (&g["message_body"], &g["perform_at"], g["version"].as_u64()),
        (&json!("v2"), &r["perform_at"], Some(2)),
        "the conflict changed nothing: {g}"
    );

    // Each of the three outcomes must come up.
    let mut outcomes = [0; 3];
    for seed in 0..30 {
        for if_version in [Some(1), None] {
            let (w, _, _, _) = racing_waiter(seed, &[("WAITER_LOOKAHEAD", "0"), ("WAITER_SHARDS", "1")]);
            let r = ask(&w, enqueue("d", "v1", 3600, "keep")).await;
            assert_eq!(r["status"], "scheduled", "{r}");
            let moved = reschedule("d", if_version);
            let replace = enqueue("d", "v2", 7200, "replace");
            let (rs, rp) = tokio::join!(w.handle(&moved), w.handle(&replace));
            let (rs, rp) = (rs.unwrap(), rp.unwrap());
            let case = format!("seed {seed}, if_version {if_version:?}: {rs} {rp}");
            assert_eq!(rp["replaced"], true, "{case}");
            let (body, at, version) = match (rs["status"].as_str(), rs["version"].as_u64(), rp["version"].as_u64()) {
                // The reschedule first: the replace read again and wrote over it.
                (Some("rescheduled"), Some(2), Some(3)) => {
                    outcomes[0] += 1;
                    ("v2", &rp["perform_at"], 3)
                }
                // The replace first: a reschedule without `if_version` read again, wrote over it…
                (Some("rescheduled"), Some(3), Some(2)) if if_version.is_none() => {
                    outcomes[1] += 1;
                    ("r", &rs["perform_at"], 3)
                }
                // …and one with `if_version` 1 found version 2.
                (Some("conflict"), Some(2), Some(2)) if if_version.is_some() => {
                    outcomes[2] += 1;
                    ("v2", &rp["perform_at"], 2)
                }
                _ => panic!("{case}"),
            };
            let g = ask(&w, json!({"action": "get", "queue": "orders", "job_id": "d"})).await;
            assert_eq!(g["message_body"], body, "{case}: {g}");
            assert_eq!(&g["perform_at"], at, "{case}: {g}");
            assert_eq!(g["version"].as_u64(), Some(version), "{case}: {g}");
        }
    }
    assert!(outcomes.iter().all(|n| *n > 0), "each outcome came up: {outcomes:?}");
}

/// P101, debounce × parking: `replace` and `extend` of an id whose job SQS refused for good
/// (parked) store one new active job under the id, as `enqueue` of a parked id does (the
/// debounce reads only the shards; nothing is replaced, `replaced: false`). The parked copy
/// stays listed and is never sent: `redrive` finds the id active again and moves nothing
/// (`duplicate: true`), and once the new job was sent, `redrive` answers its history record.
/// One message per id, the debounced one.
#[tokio::test(start_paused = true)]
async fn a_debounce_of_a_parked_id_stores_one_active_job_and_redrive_never_sends_the_parked_copy() {
    let (w, _, queue, clock) = test_waiter("orders", &[("WAITER_SHARDS", "1"), ("WAITER_LOOKAHEAD", "0")]);
    schedule(&w, "p", 3600).await;
    schedule(&w, "q", 3600).await;
    *queue.entry_fault.lock().unwrap() = Some(Box::new(|m: &OutgoingMessage| {
        m.body.starts_with("body-").then(|| EntryOutcome::Failed {
            code: "InvalidParameterValue".into(),
            message: "refused for good".into(),
            sender_fault: true,
        })
    }));
    clock.advance(TimeDelta::seconds(3601));
    assert_eq!(run(&w).await.parked, 2);
    *queue.entry_fault.lock().unwrap() = None;
    let parked = || json!({"action": "list_parked", "queue": "orders"});
    assert_eq!(call(&w, parked()).await["count"], 2);

    let mut due = Vec::new();
    for (id, kind) in [("p", "replace"), ("q", "extend")] {
        let body = format!("{id}-new");
        let r = call(&w, enqueue(id, &body, 60, kind)).await;
        assert_eq!(
            (r["status"].as_str(), r["replaced"].as_bool()),
            (Some("scheduled"), Some(false)),
            "{kind}: a new active job: {r}"
        );
        let g = get(&w, "orders", id).await;
        assert_eq!(
            (g["status"].as_str(), g["message_body"].as_str()),
            (Some("scheduled"), Some(body.as_str())),
            "{kind}: the active job is what the id names: {g}"
        );
        due.push(r["perform_at"].clone());
    }
    assert_eq!(call(&w, parked()).await["count"], 2, "the parked copies stay listed");
    let r = call(&w, json!({"action": "redrive", "queue": "orders", "job_id": "p"})).await;
    assert_eq!(
        (r["duplicate"].as_bool(), &r["perform_at"]),
        (Some(true), &due[0]),
        "the id is active again: nothing moves: {r}"
    );
    let r = call(&w, json!({"action": "redrive", "queue": "orders", "all": true})).await;
    assert_eq!(
        (r["redriven"].as_u64(), r["duplicates"].as_u64()),
        (Some(0), Some(2)),
        "{r}"
    );
    assert_eq!(call(&w, parked()).await["count"], 2);

    clock.advance(TimeDelta::seconds(61));
    run(&w).await;
    let mut sent = bodies(&queue);
    sent.sort();
    assert_eq!(sent, ["p-new", "q-new"], "one message per id, the debounced one");
    // Sent, the id is known by its record: a redrive still sends nothing.
    let r = call(
        &w,
        json!({"action": "redrive", "queue": "orders", "job_ids": ["p", "q"]}),
    )
    .await;
    for (i, one) in r["results"].as_array().expect("results").iter().enumerate() {
        assert_eq!(
            (one["status"].as_str(), one["duplicate"].as_bool()),
            (Some("dispatched"), Some(true)),
            "{i}: {r}"
        );
    }
    clock.advance(TimeDelta::seconds(60));
    run(&w).await;
    assert_eq!(queue.sent().len(), 2, "never the parked copy, never twice");
}

/// P148, pause-queue × shards: a queue of 4 shards worked by 2 poller groups at once, each
/// group its own run (process) with its own pause checks. The queue is paused while each
/// partition's first `SendMessageBatch` is held at SQS: after `pause` answers, only those calls
/// go out (one per partition, at most 10 entries each), later runs of both groups send nothing
/// while paused, and after `resume` every job arrives, each once.
#[tokio::test(start_paused = true)]
async fn a_queue_paused_across_four_shards_and_two_poller_groups_sends_only_the_calls_in_flight() {
    let (w, store, queue, clock) = test_waiter(
        "orders",
        &[
            ("WAITER_SHARDS", "4"),
            ("WAITER_POLLER_GROUPS", "2"),
            ("WAITER_LOOKAHEAD", "0"),
            ("WAITER_DIRECT_MAX_DELAY", "0"),
        ],
    );
    let ids: Vec<String> = (0..200).map(|i| format!("j{i:03}")).collect();
    for id in &ids {
        schedule(&w, id, 60).await;
    }
    clock.advance(TimeDelta::minutes(2));
    let permits = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    *queue.hold_batches.lock().unwrap() = Some(permits.clone());
    let steer = async {
        // Each partition's first call is waiting at SQS by now; none has answered, so none has
        // a second one in flight.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let r = call(&w, json!({"action": "pause", "queue": "orders"})).await;
        assert_eq!(r["status"], "paused", "{r}");
        let at_answer = queue.sent().len();
        permits.add_permits(10_000);
        at_answer
    };
    let (summaries, at_answer) = tokio::join!(run_groups(&w, 2), steer);
    *queue.hold_batches.lock().unwrap() = None;
    assert_eq!(at_answer, 0, "every call was still held at SQS");
    for s in &summaries {
        assert_eq!(s.partitions, 2, "each group works two of the four shards: {s:?}");
    }
    let sent = bodies(&queue);
    let dispatched: u64 = summaries.iter().map(|s| s.dispatched).sum();
    assert_eq!(dispatched, sent.len() as u64, "{summaries:?}");
    let mut per_shard = [0usize; 4];
    for b in &sent {
        per_shard[crate::routing::shard_for(b.trim_start_matches("body-"), 4) as usize] += 1;
    }
    assert!(
        per_shard
            .iter()
            .all(|n| (1..=crate::limits::SQS_MAX_BATCH_ENTRIES).contains(n)),
        "each partition's call in flight, and nothing after it: {per_shard:?}"
    );
    assert_eq!(store.len(), ids.len() - sent.len(), "the rest stays stored");

    clock.advance(TimeDelta::minutes(1));
    for s in run_groups(&w, 2).await {
        assert_eq!(s.paused_queues, vec!["orders"], "{s:?}");
    }
    assert_eq!(queue.sent().len(), sent.len(), "nothing while paused");

    let r = call(&w, json!({"action": "resume", "queue": "orders"})).await;
    assert_eq!(r["status"], "resumed", "{r}");
    run_groups(&w, 2).await;
    let mut all = bodies(&queue);
    all.sort();
    let expected: Vec<String> = ids.iter().map(|id| format!("body-{id}")).collect();
    assert_eq!(all, expected, "every job arrives, each once");
    assert_eq!(store.len(), 0);
}
