//! `enqueue`, `get` and `cancel` against the in-memory fakes.

use super::*;
use crate::ports::{CancelOutcome, DueIndex, Jobs, Lease, Leases, Partition};
use crate::testing::{call, config, test_waiter, FakeClock, FakeQueue, MemStore};
use chrono::TimeDelta;
use serde_json::{json, Value};

fn waiter(extra: &[(&str, &str)]) -> (Waiter<MemStore, FakeQueue, FakeClock>, MemStore, FakeQueue, FakeClock) {
    test_waiter("orders,billing.fifo", extra)
}

impl<S: JobStore, Q: MessageQueue, C: Clock> Waiter<S, Q, C> {
    pub(crate) fn shard_partitions(&self) -> Vec<Partition> {
        (0..self.config.shards).map(Partition::Shard).collect()
    }
}

#[tokio::test(start_paused = true)]
async fn short_delay_is_sent_direct_and_long_delay_stored() {
    let (w, store, queue, _) = waiter(&[("WAITER_DIRECT_MAX_DELAY", "60")]);
    let r = w
        .handle(&json!({"queue": "orders", "message_body": "a", "delay_seconds": 60}))
        .await
        .unwrap();
    assert_eq!(r["status"], "sent");
    assert_eq!(r["delay_seconds"], 60);
    assert_eq!(queue.sent()[0].message.delay_seconds, Some(60));
    let r = w
        .handle(&json!({"queue": "orders", "message_body": "b", "delay_seconds": 61, "job_id": "b"}))
        .await
        .unwrap();
    assert_eq!(r["status"], "scheduled");
    assert_eq!(r["job_id"], "b");
    assert_eq!(r["perform_at"], "2026-12-01T09:01:01.123456Z");
    assert_eq!(store.len(), 1);
    assert_eq!(queue.sent().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn precise_direct_sends_hold_for_the_fraction_and_are_exact() {
    let (w, _, queue, clock) = waiter(&[("WAITER_DIRECT_PRECISE", "true")]);
    let due = clock.now() + TimeDelta::milliseconds(5_300);
    let r = w
        .handle(&json!({"queue": "orders", "message_body": "a", "perform_at": crate::time::format_rfc3339(due)}))
        .await
        .unwrap();
    assert_eq!(r["status"], "sent");
    let sent = &queue.sent()[0];
    assert_eq!(sent.message.delay_seconds, Some(5));
    let arrival = sent.at + TimeDelta::seconds(5);
    assert!(
        arrival >= due && arrival - due < TimeDelta::milliseconds(5),
        "{arrival} vs {due}"
    );
}

#[tokio::test(start_paused = true)]
async fn same_job_id_is_a_duplicate_and_changes_nothing() {
    let (w, store, _, _) = waiter(&[]);
    let first = json!({"queue": "orders", "message_body": "one", "delay_seconds": 3600, "job_id": "inv-1"});
    assert_eq!(w.handle(&first).await.unwrap()["duplicate"], false);
    let again = json!({"queue": "orders", "message_body": "two", "delay_seconds": 7200, "job_id": "inv-1"});
    let r = w.handle(&again).await.unwrap();
    assert_eq!(r["duplicate"], true);
    assert_eq!(r["perform_at"], "2026-12-01T10:00:00.123456Z", "reports the stored job");
    assert_eq!(store.len(), 1);
    let q = QueueName::parse("orders").unwrap();
    let stored = w.store.find(&q, "inv-1", &w.shard_partitions()).await.unwrap().unwrap();
    assert_eq!(stored.job.message_body, "one");
}

#[tokio::test(start_paused = true)]
async fn direct_route_with_a_stored_job_id_is_a_duplicate() {
    let (w, _, queue, _) = waiter(&[]);
    w.handle(&json!({"queue": "orders", "message_body": "x", "delay_seconds": 3600, "job_id": "j"}))
        .await
        .unwrap();
    let r = w
        .handle(&json!({"queue": "orders", "message_body": "x", "job_id": "j"}))
        .await
        .unwrap();
    assert_eq!(r["duplicate"], true);
    assert!(queue.sent().is_empty());
}

#[tokio::test(start_paused = true)]
async fn batch_results_keep_input_order_and_bad_jobs_do_not_block_others() {
    let (w, store, queue, _) = waiter(&[]);
    let mut jobs: Vec<Value> = (0..100)
        .map(|i| json!({"queue": "orders", "message_body": format!("m{i}"), "delay_seconds": if i % 2 == 0 { 5 } else { 5000 }, "job_id": format!("j{i}")}))
        .collect();
    jobs[7] = json!({"queue": "nope", "message_body": "x"});
    jobs[8] = json!("not an object");
    let r = w.handle(&json!({"jobs": jobs})).await.unwrap();
    let results = r["results"].as_array().unwrap();
    assert_eq!(results.len(), 100);
    for (i, res) in results.iter().enumerate() {
        match i {
            7 => assert_eq!(res["error"]["type"], "InvalidRequest", "{res}"),
            8 => assert!(res["error"]["message"].as_str().unwrap().starts_with("job:"), "{res}"),
            _ => {
                assert_eq!(res["job_id"], format!("j{i}"));
                assert_eq!(res["status"], if i % 2 == 0 { "sent" } else { "scheduled" });
            }
        }
    }
    assert_eq!(store.len(), 49);
    assert_eq!(queue.sent().len(), 49);
}

#[tokio::test(start_paused = true)]
async fn too_large_for_dynamodb_is_refused_on_the_stored_path_only() {
    let (w, store, queue, _) = waiter(&[]);
    let body = "x".repeat(500 * 1024);
    let err = w
        .handle(&json!({"queue": "orders", "message_body": body, "delay_seconds": 5000}))
        .await
        .unwrap_err();
    assert_eq!(err.error_type(), "InvalidRequest");
    assert!(err.message().starts_with("message_body:"), "{}", err.message());
    assert_eq!(store.len(), 0);
    let ok = w
        .handle(&json!({"queue": "orders", "message_body": body, "delay_seconds": 5}))
        .await
        .unwrap();
    assert_eq!(ok["status"], "sent");
    assert_eq!(queue.sent().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn fifo_jobs_without_a_dedup_id_are_sent_with_one_derived_from_id_and_edition() {
    let (w, store, queue, clock) = waiter(&[]);
    let r = w
        .handle(&json!({"queue": "billing.fifo", "message_body": "x", "delay_seconds": 1, "job_id": "c-1", "message_group_id": "g"}))
        .await
        .unwrap();
    assert_eq!(r["status"], "scheduled");
    let q = QueueName::parse("billing.fifo").unwrap();
    let stored = store
        .state
        .lock()
        .unwrap()
        .items
        .values()
        .find(|j| j.job.queue == q)
        .cloned()
        .unwrap();
    assert_eq!(stored.job.message_deduplication_id, None, "none given, none stored");
    let r = w
        .handle(&json!({"queue": "billing.fifo", "message_body": "now", "message_group_id": "g", "job_id": "c-2"}))
        .await
        .unwrap();
    assert_eq!(r["status"], "sent");
    assert_eq!(queue.sent()[0].queue.as_str(), "billing.fifo");
    let sent = &queue.sent()[0].message;
    assert_eq!(sent.delay_seconds, None, "FIFO queues take no per-message delay");
    let edition = crate::ports::Edition {
        enqueued_at: clock.now(),
        version: 1,
    };
    let derived = crate::ports::default_deduplication_id("c-2", edition, "now");
    assert_eq!(sent.deduplication_id.as_deref(), Some(derived.as_str()));
}

#[tokio::test(start_paused = true)]
async fn get_and_cancel() {
    let (w, store, _, clock) = waiter(&[]);
    w.handle(&json!({"queue": "orders", "message_body": "x", "delay_seconds": 5000, "job_id": "j"}))
        .await
        .unwrap();
    let got = w
        .handle(&json!({"action": "get", "queue": "orders", "job_id": "j"}))
        .await
        .unwrap();
    assert_eq!(got["status"], "scheduled");
    assert_eq!(got["message_body"], "x");
    let c = w
        .handle(&json!({"action": "cancel", "queue": "orders", "job_id": "j"}))
        .await
        .unwrap();
    assert_eq!(c["status"], "cancelled");
    assert_eq!(store.len(), 0);
    let c = w
        .handle(&json!({"action": "cancel", "queue": "orders", "job_id": "j"}))
        .await
        .unwrap();
    assert_eq!(c["status"], "not_found");
    let got = w
        .handle(&json!({"action": "get", "queue": "orders", "job_id": "j"}))
        .await
        .unwrap();
    assert_eq!(got["status"], "cancelled", "history: {got}");
    assert!(got["cancelled_at"].is_string());
    assert!(got.get("message_body").is_none(), "history keeps no body");

    // A job inside a live poller lease's window is being handed over: not cancelled.
    w.handle(&json!({"queue": "orders", "message_body": "y", "delay_seconds": 5000, "job_id": "k"}))
        .await
        .unwrap();
    let shard = crate::routing::shard_for("k", w.config.shards);
    let q = QueueName::parse("orders").unwrap();
    let now = clock.now();
    let lease = Lease {
        owner: "p".into(),
        until: now + TimeDelta::seconds(30),
        horizon: now + TimeDelta::seconds(6000),
    };
    assert!(matches!(
        store.acquire_lease(&q, shard, &lease, now).await.unwrap(),
        crate::ports::LeaseOutcome::Acquired { .. }
    ));
    let c = w
        .handle(&json!({"action": "cancel", "queue": "orders", "job_id": "k"}))
        .await
        .unwrap();
    assert_eq!(c["status"], "dispatching");
    assert_eq!(store.len(), 1);
    // Past `until`, the lease item still covers the job: the run that holds it may have
    // handed the job to SQS and failed to remove it (only `release_lease` ends that).
    clock.advance(TimeDelta::seconds(31));
    let c = w
        .handle(&json!({"action": "cancel", "queue": "orders", "job_id": "k"}))
        .await
        .unwrap();
    assert_eq!(c["status"], "dispatching", "a lapsed lease item still protects the job");
    store.release_lease(&q, shard, "p", None).await.unwrap();
    let c = w
        .handle(&json!({"action": "cancel", "queue": "orders", "job_id": "k"}))
        .await
        .unwrap();
    assert_eq!(c["status"], "cancelled", "a released lease no longer protects it");
}

#[tokio::test(start_paused = true)]
async fn a_batch_with_precise_direct_jobs_waits_at_most_once() {
    let (w, _, queue, clock) = waiter(&[("WAITER_DIRECT_PRECISE", "true")]);
    let start = clock.now();
    let jobs: Vec<Value> = (0..1000)
        .map(|i| {
            let due = start + TimeDelta::milliseconds(5_000 + (i * 7919) % 1000);
            json!({"queue": "orders", "message_body": format!("m{i}"), "perform_at": crate::time::format_rfc3339(due)})
        })
        .collect();
    let r = w.handle(&json!({"jobs": jobs})).await.unwrap();
    assert!(r["results"].as_array().unwrap().iter().all(|r| r["status"] == "sent"));
    let took = clock.now() - start;
    assert!(
        took <= TimeDelta::milliseconds(1_100),
        "1000 precise jobs took {took:?}"
    );
    for sent in queue.sent() {
        let i: i64 = sent.message.body[1..].parse().unwrap();
        let due = start + TimeDelta::milliseconds(5_000 + (i * 7919) % 1000);
        let arrival = sent.at + TimeDelta::seconds(i64::from(sent.message.delay_seconds.unwrap()));
        assert!(
            arrival >= due && arrival - due < TimeDelta::milliseconds(5),
            "m{i}: {arrival} vs {due}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_batch_past_its_deadline_answers_retryable_errors_for_what_is_left() {
    let (w, store, _, clock) = waiter(&[]);
    let jobs: Vec<Value> = (0..50)
        .map(|i| json!({"queue": "orders", "message_body": "x", "delay_seconds": 5000, "job_id": format!("d{i}")}))
        .collect();
    // A deadline already inside the margin: nothing may start.
    let r = w
        .handle_until(&json!({"jobs": jobs}), clock.now() + TimeDelta::milliseconds(100))
        .await
        .unwrap();
    let results = r["results"].as_array().unwrap();
    assert!(
        results
            .iter()
            .all(|r| r["status"] == "error" && r["error"]["retryable"] == true),
        "{r}"
    );
    assert_eq!(store.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_shard_count_change_keeps_idempotency_get_and_cancel_across_shards() {
    let clock = FakeClock::default();
    let store = MemStore::default();
    let queue = FakeQueue::new(clock.clone());
    let before = Waiter::new(
        config("orders", &[("WAITER_SHARDS", "3")]),
        store.clone(),
        queue.clone(),
        clock.clone(),
    );
    let ids: Vec<String> = (0..40).map(|i| format!("s{i}")).collect();
    for id in &ids {
        before
            .handle(&json!({"queue": "orders", "message_body": "one", "delay_seconds": 5000, "job_id": id}))
            .await
            .unwrap();
    }
    for shards in ["7", "2"] {
        // Grown, then shrunk below the first count: every id is still found where it is.
        let after = Waiter::new(
            config("orders", &[("WAITER_SHARDS", shards)]),
            store.clone(),
            queue.clone(),
            clock.clone(),
        );
        for id in &ids {
            let r = after
                .handle(&json!({"queue": "orders", "message_body": "two", "delay_seconds": 5000, "job_id": id}))
                .await
                .unwrap();
            assert_eq!(r["duplicate"], true, "{id} with {shards} shards: {r}");
            let got = after
                .handle(&json!({"action": "get", "queue": "orders", "job_id": id}))
                .await
                .unwrap();
            assert_eq!(got["message_body"], "one");
        }
        assert_eq!(store.len(), ids.len());
    }
    let after = Waiter::new(
        config("orders", &[("WAITER_SHARDS", "2")]),
        store.clone(),
        queue,
        clock.clone(),
    );
    for id in &ids {
        let c = after
            .handle(&json!({"action": "cancel", "queue": "orders", "job_id": id}))
            .await
            .unwrap();
        assert_eq!(c["status"], "cancelled");
    }
    assert_eq!(store.len(), 0);
    let q = QueueName::parse("orders").unwrap();
    assert_eq!(store.shard_counts(&q, 2).await.unwrap(), vec![2, 3, 7]);
}

/// A cancel decided on a version read before a reschedule (issue sequence): cancel reads
/// version 1, due tomorrow; a reschedule to now commits version 2; the hand-over sends version 2
/// and its removal fails; then the cancel's removal runs. It must not answer `cancelled`.
#[tokio::test(start_paused = true)]
async fn a_cancel_of_a_version_read_before_a_reschedule_never_answers_cancelled_for_the_sent_one() {
    let (w, store, queue, _) = test_waiter(
        "orders",
        &[
            ("WAITER_SHARDS", "1"),
            ("WAITER_DIRECT_MAX_DELAY", "0"),
            ("WAITER_LOOKAHEAD", "60"),
        ],
    );
    call(
        &w,
        json!({"queue": "orders", "job_id": "a", "message_body": "b", "delay_seconds": 86_400}),
    )
    .await;
    let q = QueueName::parse("orders").unwrap();
    let read_by_cancel = store.get(&q, Partition::Shard(0), "a").unwrap();
    store.fail_deletes.store(true, std::sync::atomic::Ordering::SeqCst);
    let r = call(
        &w,
        json!({"action": "reschedule", "queue": "orders", "job_id": "a", "delay_seconds": 2}),
    )
    .await;
    assert_eq!(r["status"], "rescheduled", "{r}");
    assert_eq!(queue.sent().len(), 1, "the hand-over sent version 2");
    assert_eq!(
        w.cancel_copy(&read_by_cancel, |_| true).await.unwrap(),
        CancelOutcome::Dispatching
    );
    assert!(store.get(&q, Partition::Shard(0), "a").is_some(), "still stored");
}

#[tokio::test(start_paused = true)]
async fn every_action_answers_a_retryable_error_before_the_deadline_when_the_store_hangs() {
    let (w, store, _, clock) = waiter(&[("WAITER_DIRECT_MAX_DELAY", "0")]);
    call(
        &w,
        json!({"queue": "orders", "job_id": "a", "message_body": "b", "delay_seconds": 3600}),
    )
    .await;
    store.hang_reads.store(true, std::sync::atomic::Ordering::SeqCst);
    for request in [
        json!({"action": "get", "queue": "orders", "job_id": "a"}),
        json!({"action": "cancel", "queue": "orders", "job_id": "a"}),
        json!({"action": "list", "queue": "orders"}),
        json!({"action": "list_parked", "queue": "orders"}),
        json!({"action": "cancel_many", "queue": "orders", "job_ids": ["a"]}),
        json!({"action": "cancel_many", "queue": "orders", "prefix": "a"}),
        json!({"action": "redrive", "queue": "orders", "job_ids": ["a"]}),
        json!({"action": "reschedule", "queue": "orders", "job_id": "a", "delay_seconds": 60}),
        json!({"action": "stats", "queue": "orders"}),
    ] {
        let deadline = clock.now() + TimeDelta::seconds(5);
        let answer = tokio::time::timeout(std::time::Duration::from_secs(60), w.respond(&request, deadline)).await;
        match answer {
            Err(_) => panic!("{request}: no answer (a Lambda timeout)"),
            Ok(Err(e)) => assert!(e.is_retryable(), "{request}: {e:?}"),
            Ok(Ok(r)) => panic!("{request}: answered {r:?} from a hung store"),
        }
        assert!(clock.now() < deadline, "{request}: answered after the deadline");
    }
}

/// Defect 11d of issue 23: `version` restarted at 1 when an id was enqueued again over its last
/// life's history record (past its time, not yet removed by TTL), so a caller still holding the
/// first life's version 1 could reschedule the new job with `if_version: 1`.
#[tokio::test(start_paused = true)]
async fn versions_keep_growing_across_lives_of_an_id_while_history_knows_it() {
    let (w, store, _, clock) = waiter(&[("WAITER_HISTORY_DAYS", "1")]);
    let enqueue = json!({"queue": "orders", "message_body": "x", "delay_seconds": 5000, "job_id": "j"});
    assert_eq!(call(&w, enqueue.clone()).await["status"], "scheduled");
    let r = call(
        &w,
        json!({"action": "reschedule", "queue": "orders", "job_id": "j", "delay_seconds": 6000}),
    )
    .await;
    assert_eq!(r["version"], 2);
    assert_eq!(
        call(&w, json!({"action": "cancel", "queue": "orders", "job_id": "j"})).await["status"],
        "cancelled"
    );
    // Past the record's time; TTL has not removed it yet.
    clock.advance(TimeDelta::days(2));
    assert_eq!(store.state.lock().unwrap().history.len(), 1);
    let again = call(&w, enqueue).await;
    assert_eq!(again["status"], "scheduled", "{again}");
    let got = call(&w, json!({"action": "get", "queue": "orders", "job_id": "j"})).await;
    assert_eq!(got["version"], 3, "the new life follows the last one's versions");
    for stale in [1, 2] {
        let r = call(
            &w,
            json!({"action": "reschedule", "queue": "orders", "job_id": "j", "delay_seconds": 7000, "if_version": stale}),
        )
        .await;
        assert_eq!(r["status"], "conflict", "a version of the last life: {r}");
    }
}
