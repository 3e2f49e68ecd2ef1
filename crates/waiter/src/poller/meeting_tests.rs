//! The dispatch loop against the in-memory fakes, where features meet (issue 23): removals
//! retried after they were applied, parking, resends retimed, windows under a rate limit, FIFO
//! groups after a failed entry.

use super::tests::{dispatcher, ms, D};
use super::*;

use crate::config::QueueName;
use crate::ports::{EntryOutcome, Jobs, OutgoingMessage, Partition};
use crate::testing::{config, stored, FakeClock, FakeQueue, MemStore};

#[tokio::test(start_paused = true)]
async fn a_removal_retried_after_it_was_applied_never_takes_a_job_enqueued_meanwhile() {
    // History off: once the first removal call is applied, the id is free, and a caller stores
    // a new job under it before the retry of that call (the run's final flush) goes out. A full
    // call's worth of jobs, so that the first removal goes out during the run.
    let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1")]);
    let now = clock.now();
    let q = QueueName::parse("orders").unwrap();
    store.insert(stored("orders", "a", now, 1));
    for i in 1..REMOVALS_PER_CALL {
        store.insert(stored("orders", &format!("j{i}"), now, 1));
    }
    let later = StoredJob {
        enqueued_at: now + ms(1),
        ..stored("orders", "a", now + TimeDelta::hours(1), 1)
    };
    let new_life = later.clone();
    *store.retire_applied_then_fails.lock().unwrap() = Some(Box::new(move |s: &MemStore| s.insert(new_life)));
    let summary = d.run(now + TimeDelta::seconds(60)).await;
    assert_eq!(summary.dispatched, REMOVALS_PER_CALL as u64, "{summary:?}");
    assert_eq!(queue.sent().len(), REMOVALS_PER_CALL);
    assert_eq!(store.len(), 1, "the sent jobs are removed by the retry");
    assert_eq!(
        store.get(&q, Partition::Shard(0), "a"),
        Some(later),
        "the job enqueued under the freed id is still stored"
    );
}

#[tokio::test(start_paused = true)]
async fn a_removal_that_failed_for_a_retryable_reason_is_sent_again_and_the_partition_drains() {
    // Two calls' worth of jobs: the first removal call is applied and answered with a timeout.
    // It is sent again in the run (each removal conditioned on its edition), the partition goes
    // on to send the rest, and the run ends drained, without an error.
    let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1")]);
    let now = clock.now();
    for i in 0..2 * REMOVALS_PER_CALL {
        store.insert(stored("orders", &format!("j{i}"), now, 1));
    }
    *store.retire_applied_then_fails.lock().unwrap() = Some(Box::new(|_: &MemStore| {}));
    let summary = d.run(now + TimeDelta::seconds(60)).await;
    assert_eq!(summary.dispatched, 2 * REMOVALS_PER_CALL as u64, "{summary:?}");
    assert!(summary.errors.is_empty() && summary.drained, "{summary:?}");
    assert_eq!(queue.sent().len(), 2 * REMOVALS_PER_CALL, "none sent twice");
    assert_eq!(store.len(), 0, "all removed");
    // A removal that keeps failing stops the partition after `REMOVAL_RETRIES` more tries.
    let (d, store, _queue, clock) = dispatcher(&[("WAITER_SHARDS", "1")]);
    for i in 0..2 * REMOVALS_PER_CALL {
        store.insert(stored("orders", &format!("k{i}"), clock.now(), 1));
    }
    store.fail_deletes.store(true, std::sync::atomic::Ordering::SeqCst);
    let summary = d.run(clock.now() + TimeDelta::seconds(60)).await;
    assert!(!summary.errors.is_empty() && !summary.drained, "{:?}", summary.errors);
    assert!(
        summary.dispatched < 2 * REMOVALS_PER_CALL as u64,
        "no more sends once removals keep failing: {}",
        summary.dispatched
    );
    assert_eq!(store.len(), 2 * REMOVALS_PER_CALL, "nothing removed");
}

#[tokio::test(start_paused = true)]
async fn parking_never_overwrites_an_earlier_parked_job_with_the_same_id() {
    let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1")]);
    let now = clock.now();
    let q = QueueName::parse("orders").unwrap();
    let earlier = StoredJob {
        partition: Partition::Parked,
        enqueued_at: now - TimeDelta::days(1),
        ..stored("orders", "a", now - TimeDelta::days(1), 1)
    };
    store.insert(earlier.clone());
    store.insert(stored("orders", "a", now, 1));
    *queue.entry_fault.lock().unwrap() = Some(Box::new(|_: &OutgoingMessage| {
        Some(EntryOutcome::Failed {
            code: "InvalidParameterValue".into(),
            message: "bad".into(),
            sender_fault: true,
        })
    }));
    let s = d.run(now + TimeDelta::seconds(60)).await;
    assert_eq!((s.parked, s.failed, s.drained), (0, 1, false), "{s:?}");
    assert_eq!(
        store.get(&q, Partition::Parked, "a"),
        Some(earlier),
        "the parked job is kept"
    );
    assert!(
        store.get(&q, Partition::Shard(0), "a").is_some(),
        "the rejected job stays stored"
    );
}

#[tokio::test(start_paused = true)]
async fn a_job_of_the_largest_stored_size_can_be_parked_with_a_long_reason() {
    use crate::limits::{DDB_MAX_ITEM_BYTES, MAX_STORED_ITEM_BYTES};
    let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1")]);
    let now = clock.now();
    let q = QueueName::parse("orders").unwrap();
    let mut big = stored("orders", "big", now, 1);
    let room = MAX_STORED_ITEM_BYTES - store.item_bytes(&big);
    big.job.message_body.push_str(&"x".repeat(room));
    assert_eq!(
        store.item_bytes(&big),
        MAX_STORED_ITEM_BYTES,
        "as large as enqueue stores"
    );
    store.insert(big);
    *queue.entry_fault.lock().unwrap() = Some(Box::new(|_: &OutgoingMessage| {
        Some(EntryOutcome::Failed {
            code: "InvalidParameterValue".into(),
            message: "é".repeat(5_000),
            sender_fault: true,
        })
    }));
    let s = d.run(now + TimeDelta::seconds(60)).await;
    assert_eq!((s.parked, s.failed), (1, 0), "{s:?}");
    let parked = store.get(&q, Partition::Parked, "big").expect("parked");
    assert!(store.item_bytes(&parked) <= DDB_MAX_ITEM_BYTES);
    let reason = &parked.parked.as_ref().unwrap().message;
    assert!(
        reason.ends_with('…') && reason.starts_with('é'),
        "shortened on a character boundary"
    );
    assert!(store.get(&q, Partition::Shard(0), "big").is_none());
}

#[tokio::test(start_paused = true)]
async fn an_entry_sent_again_on_its_own_later_is_retimed_and_never_sent_expired() {
    let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1"), ("WAITER_LOOKAHEAD", "60")]);
    let now = clock.now();
    let due = now + TimeDelta::seconds(10);
    let mut tight = stored("orders", "tight", due, 1);
    tight.job.expires_at = Some(due + TimeDelta::seconds(1));
    store.insert(tight);
    store.insert(stored("orders", "loose", due, 1));
    // The batch is refused for its content after 12 s: its entries go again on their own.
    let slow = clock.clone();
    *queue.batch_fault.lock().unwrap() = Some(Box::new(move |ms: &[OutgoingMessage]| {
        (ms.len() > 1).then(|| {
            slow.advance(TimeDelta::seconds(12));
            PortError::Rejected {
                operation: "SendMessageBatch",
                code: "AWS.SimpleQueueService.BatchRequestTooLong".into(),
                source: None,
            }
        })
    }));
    let s = d.run(now + TimeDelta::seconds(60)).await;
    assert_eq!((s.dispatched, s.expired), (1, 1), "{s:?}");
    let sent = queue.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].message.body, "body-loose");
    let arrival = sent[0].at + TimeDelta::seconds(i64::from(sent[0].message.delay_seconds.unwrap()));
    assert!(
        arrival >= due && arrival - due <= TimeDelta::seconds(3),
        "{arrival} vs {due}"
    );
}

#[tokio::test(start_paused = true)]
async fn max_rate_never_spreads_a_job_past_its_window() {
    // Six jobs due at 09:00:57 in a window that closes at 09:01 (UTC); one arrival a second.
    let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1"), ("WAITER_MAX_RATE", "1")]);
    let now = clock.now();
    let window = sqs_waiter_contract::Window {
        from: "08:00".into(),
        to: "09:01".into(),
    };
    let windows = crate::windows::Windows::parse(&[window], Some("UTC")).unwrap();
    let close = DateTime::parse_from_rfc3339("2026-12-01T09:01:00Z").unwrap().to_utc();
    let due = close - TimeDelta::seconds(3);
    assert!(now < due);
    for i in 0..6 {
        let mut j = stored("orders", &format!("w{i}"), due, 1);
        j.job.windows = Some(windows.clone());
        store.insert(j);
    }
    let s = d.run(now + TimeDelta::seconds(60)).await;
    let sent = queue.sent();
    assert_eq!(sent.len(), 3, "{s:?}");
    for m in &sent {
        let arrival = m.at + TimeDelta::seconds(i64::from(m.message.delay_seconds.unwrap()));
        assert!(
            windows.contains(arrival) && arrival >= due,
            "{arrival} is outside its window"
        );
    }
    assert_eq!(store.len(), 3, "the others wait for a later run");
    assert!(!s.drained);
}

#[tokio::test(start_paused = true)]
async fn a_fifo_group_whose_message_failed_sends_nothing_later_in_that_run() {
    // A run that holds for FIFO jobs falling due sends each of these in its own call.
    let (d, store, queue, clock) = dispatcher(&[
        ("WAITER_SHARDS", "1"),
        ("WAITER_LOOKAHEAD", "60"),
        ("WAITER_FIFO_HOLD", "10"),
    ]);
    let now = clock.now();
    // One group, due a second apart (so in separate calls), and another group beside it.
    for (i, id) in ["a", "b", "c"].into_iter().enumerate() {
        store.insert(stored("billing.fifo", id, now + TimeDelta::seconds(i as i64 + 1), 1));
    }
    let mut other = stored("billing.fifo", "other", now + TimeDelta::seconds(2), 1);
    other.job.message_group_id = Some("h".into());
    store.insert(other);
    *queue.entry_fault.lock().unwrap() = Some(Box::new(|m: &OutgoingMessage| {
        (m.body == "body-a").then(|| EntryOutcome::Failed {
            code: "InternalError".into(),
            message: "try again".into(),
            sender_fault: false,
        })
    }));
    let s = d.run(now + TimeDelta::seconds(60)).await;
    let bodies = |q: &FakeQueue| q.sent().iter().map(|m| m.message.body.clone()).collect::<Vec<_>>();
    assert_eq!(bodies(&queue), ["body-other"], "{s:?}");
    assert_eq!(store.len(), 3, "a, b and c wait");
    *queue.entry_fault.lock().unwrap() = None;
    let s = d.run(clock.now() + TimeDelta::seconds(60)).await;
    assert_eq!(bodies(&queue), ["body-other", "body-a", "body-b", "body-c"], "{s:?}");
}

/// Issue 74: a job of a later release's format (as an old poller meets it in a stack update's
/// minutes) is not sent, removed or changed, is counted, and holds its FIFO group: the group's
/// later job waits, another group's goes. Once readable, the group goes in order.
#[tokio::test(start_paused = true)]
async fn a_job_of_a_later_format_is_left_counted_and_holds_its_fifo_group() {
    let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1"), ("WAITER_LOOKAHEAD", "60")]);
    let now = clock.now();
    for (i, id) in ["a", "b"].into_iter().enumerate() {
        store.insert(stored("billing.fifo", id, now - TimeDelta::seconds(5 - i as i64), 1));
    }
    let mut other = stored("billing.fifo", "other", now - TimeDelta::seconds(4), 1);
    other.job.message_group_id = Some("h".into());
    store.insert(other);
    let queue_name = crate::config::QueueName::parse("billing.fifo").expect("a queue name");
    let a = store.get(&queue_name, Partition::Shard(0), "a").expect("stored");
    assert!(store.set_unreadable(&queue_name, &a.key(), true));
    let s = d.run(now + TimeDelta::seconds(60)).await;
    let bodies = |q: &FakeQueue| q.sent().iter().map(|m| m.message.body.clone()).collect::<Vec<_>>();
    assert_eq!(bodies(&queue), ["body-other"], "{s:?}");
    assert_eq!(s.unreadable, 1, "{s:?}");
    // It and its group wait for an update, not a run: the run drained (a run that cannot keeps
    // a lease it took over, and `cancel` answering `dispatching`, for as long as they wait).
    assert!(s.drained, "{s:?}");
    assert_eq!(
        store.get(&queue_name, Partition::Shard(0), "a"),
        Some(a.clone()),
        "a untouched"
    );
    assert_eq!(store.len(), 2, "a and b wait");
    store.set_unreadable(&queue_name, &a.key(), false);
    let s = d.run(clock.now() + TimeDelta::seconds(60)).await;
    assert_eq!(bodies(&queue), ["body-other", "body-a", "body-b"], "{s:?}");
    assert_eq!(s.unreadable, 0);
}

/// Defect 8 of issue 23, across shards: jobs were sharded by id, so a group's messages sat in
/// several partitions, worked by runs in parallel, and a failure in one could not hold back
/// the group's later messages in another. A FIFO queue now has one shard.
#[tokio::test(start_paused = true)]
async fn a_fifo_groups_later_message_waits_for_an_earlier_one_that_failed_whatever_the_shards() {
    use crate::testing::{call, dispatcher_for, test_waiter};
    let (w, store, queue, clock) = test_waiter(
        "billing.fifo",
        &[
            ("WAITER_SHARDS", "4"),
            ("WAITER_FIFO_HOLD", "10"),
            ("WAITER_DIRECT_MAX_DELAY", "0"),
        ],
    );
    let d = dispatcher_for(&w);
    let now = clock.now();
    // Under 4 shards by id, "g-1" and "g-2" would sit in different shards.
    assert_ne!(crate::routing::shard_for("g-1", 4), crate::routing::shard_for("g-2", 4));
    for (i, id) in ["g-1", "g-2"].into_iter().enumerate() {
        let at = crate::time::format_rfc3339(now + TimeDelta::seconds(2 + i as i64));
        let r = call(
            &w,
            serde_json::json!({"queue": "billing.fifo", "job_id": id, "message_body": id,
                               "message_group_id": "g", "perform_at": at}),
        )
        .await;
        assert_eq!(r["status"], "scheduled", "{r}");
    }
    *queue.entry_fault.lock().unwrap() = Some(Box::new(|m: &OutgoingMessage| {
        (m.body == "g-1").then(|| EntryOutcome::Failed {
            code: "InternalError".into(),
            message: "try again".into(),
            sender_fault: false,
        })
    }));
    let s = d.run(now + TimeDelta::seconds(30)).await;
    assert!(queue.sent().is_empty(), "g-2 must wait for g-1: {s:?}");
    assert_eq!(store.len(), 2);
    *queue.entry_fault.lock().unwrap() = None;
    d.run(clock.now() + TimeDelta::seconds(30)).await;
    let bodies: Vec<String> = queue.sent().iter().map(|m| m.message.body.clone()).collect();
    assert_eq!(bodies, ["g-1", "g-2"]);
}

/// Defect 1, window variant (issue 23): a run crashes after its send; its successor takes the
/// lapsed lease after the job's window has closed. Re-sending would arrive outside the window
/// whenever the crashed send had not reached SQS, so the job moves to the next opening, and
/// from then on says it may have been delivered already: `cancel` never answers a bare
/// `cancelled` for a job whose message SQS may hold.
#[tokio::test(start_paused = true)]
async fn a_job_moved_by_a_run_that_inherited_a_lapsed_lease_says_it_may_have_been_delivered() {
    use crate::testing::{dispatcher_for, test_waiter};
    use serde_json::json;
    let (w, store, queue, clock) = test_waiter("orders", &[("WAITER_SHARDS", "1"), ("WAITER_LOOKAHEAD", "60")]);
    let d = dispatcher_for(&w);
    let q = QueueName::parse("orders").unwrap();
    let window = sqs_waiter_contract::Window {
        from: "08:00".into(),
        to: "09:01".into(),
    };
    let windows = crate::windows::Windows::parse(&[window], Some("UTC")).unwrap();
    let due = DateTime::parse_from_rfc3339("2026-12-01T09:00:57Z").unwrap().to_utc();
    let mut job = stored("orders", "w", due, 1);
    job.job.windows = Some(windows.clone());
    store.insert(job);

    // The first run crashes after SQS took the message, while its removal is under way: its
    // lease is left unsettled.
    store.hang_retires.store(true, std::sync::atomic::Ordering::SeqCst);
    let crashed = tokio::select! {
        _ = d.run(clock.now() + TimeDelta::seconds(60)) => false,
        _ = async {
            while queue.sent().is_empty() {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
        } => true,
    };
    store.hang_retires.store(false, std::sync::atomic::Ordering::SeqCst);
    assert!(crashed, "the run ended before its send");
    let first = queue.sent()[0].clone();
    let arrival = first.at + TimeDelta::seconds(i64::from(first.message.delay_seconds.unwrap()));
    assert!(windows.contains(arrival) && arrival >= due, "{arrival}");
    assert!(
        store.get(&q, Partition::Shard(0), "w").is_some(),
        "not removed before the crash"
    );

    // After the window closed and the lease lapsed (deadline + 5 s), the next run takes over.
    clock.advance(TimeDelta::seconds(70));
    let s = d.run(clock.now() + TimeDelta::seconds(60)).await;
    assert_eq!((s.moved, s.dispatched), (1, 0), "{s:?}");
    assert_eq!(queue.sent().len(), 1, "not re-sent outside the window");
    let moved = store.get(&q, Partition::Shard(0), "w").expect("still stored");
    let next_open = DateTime::parse_from_rfc3339("2026-12-02T08:00:00Z").unwrap().to_utc();
    assert_eq!(moved.job.perform_at, next_open);
    assert_eq!(moved.maybe_delivered_at, Some(due));

    let got = w
        .handle(&json!({"action": "get", "queue": "orders", "job_id": "w"}))
        .await
        .unwrap();
    assert_eq!(got["maybe_delivered_at"], "2026-12-01T09:00:57Z", "{got}");
    let later = w
        .handle(&json!({"action": "reschedule", "queue": "orders", "job_id": "w", "delay_seconds": 86_400 * 2}))
        .await
        .unwrap();
    assert_eq!(
        (later["status"].as_str(), later["maybe_delivered_at"].as_str()),
        (Some("rescheduled"), Some("2026-12-01T09:00:57Z")),
        "the mark stays through later changes: {later}"
    );
    let cancelled = w
        .handle(&json!({"action": "cancel", "queue": "orders", "job_id": "w"}))
        .await
        .unwrap();
    assert_eq!(
        (cancelled["status"].as_str(), cancelled["maybe_delivered_at"].as_str()),
        (Some("cancelled"), Some("2026-12-01T09:00:57Z")),
        "{cancelled}"
    );
    assert_eq!(store.len(), 0, "the later delivery is cancelled");
    let after = w
        .handle(&json!({"action": "get", "queue": "orders", "job_id": "w"}))
        .await
        .unwrap();
    assert_eq!(
        (after["status"].as_str(), after["maybe_delivered_at"].as_str()),
        (Some("cancelled"), Some("2026-12-01T09:00:57Z")),
        "history keeps the mark: {after}"
    );
}

/// Issue 46 defect 2: on a FIFO queue under `WAITER_MAX_RATE`, entries whose second was full
/// were left for a later run without holding back their group, and critical jobs are never
/// booked, so a priority-0 job was sent before the earlier jobs of its group. Priority reorders
/// nothing on a FIFO queue: the group's order holds, whatever the budget.
#[tokio::test(start_paused = true)]
async fn a_critical_fifo_job_never_overtakes_earlier_jobs_of_its_group_held_by_the_rate() {
    let (d, store, queue, clock) = dispatcher(&[
        ("WAITER_SHARDS", "1"),
        ("WAITER_MAX_RATE", "1"),
        ("WAITER_LOOKAHEAD", "0"),
    ]);
    let now = clock.now();
    // More than a short run can book at one a second: the later ones come back full.
    let ids: Vec<String> = (0..12).map(|i| format!("a{i:02}")).collect();
    for (i, id) in ids.iter().enumerate() {
        store.insert(stored("billing.fifo", id, now - ms(500 - i as i64 * 10), 1));
    }
    let mut critical = stored("billing.fifo", "crit", now - ms(100), 1);
    critical.job.priority = 0;
    store.insert(critical);
    let mut order = Vec::new();
    for _ in 0..20 {
        d.run(clock.now() + TimeDelta::seconds(5)).await;
        order = queue.sent().iter().map(|s| s.message.body.clone()).collect::<Vec<_>>();
        if order.len() == ids.len() + 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
    let expected: Vec<String> = ids
        .iter()
        .map(|id| format!("body-{id}"))
        .chain(["body-crit".to_owned()])
        .collect();
    assert_eq!(order, expected);
}

/// A poller over `billing.fifo` (one shard, history kept) under `WAITER_MAX_RATE` = `rate`,
/// whose reads of the queue's pause item take `pause_reads` in turn.
fn fifo_under_the_rate(rate: &str, pause_reads: &[std::time::Duration]) -> (D, MemStore, FakeQueue, FakeClock) {
    let clock = FakeClock::default();
    let store = MemStore::default();
    store
        .pause_reads
        .lock()
        .expect("the store")
        .extend(pause_reads.iter().copied());
    let queue = FakeQueue::new(clock.clone());
    let settings = [
        ("WAITER_SHARDS", "1"),
        ("WAITER_LOOKAHEAD", "0"),
        ("WAITER_MAX_RATE", rate),
        ("WAITER_HISTORY_DAYS", "7"),
    ];
    let d = Dispatcher::new(
        config("billing.fifo", &settings),
        store.clone(),
        queue.clone(),
        clock.clone(),
    );
    (d, store, queue, clock)
}

/// Issue 71 (found by the whole-system simulation's longer run, seed 1137): a FIFO call held
/// for the second it booked under `WAITER_MAX_RATE`, whose pause check then took half a second,
/// was sent after its job's `expires_at`. The held call is judged again when it starts: the job
/// is dropped as expired, not sent.
#[tokio::test(start_paused = true)]
async fn a_fifo_call_held_for_its_second_and_sent_late_drops_what_expired_meanwhile() {
    // Every pause read takes half a second. The run's first read, at 09:00:00.123, is fresh
    // for `PAUSE_CHECK_FRESH` (800 ms): the send held for 09:00:01 reads again.
    let (d, store, queue, clock) = fifo_under_the_rate("1", &[std::time::Duration::from_millis(500); 4]);
    let now = clock.now();
    let second = |n: i64| DateTime::from_timestamp(now.timestamp() + n, 0).expect("a second");
    store.insert(stored("billing.fifo", "a", now - ms(2), 1));
    let mut b = stored("billing.fifo", "b", now - ms(1), 1);
    // The rate puts `b` into the next second; the send held for it starts half a second in.
    b.job.expires_at = Some(second(1) + ms(300));
    store.insert(b);
    d.run(now + TimeDelta::seconds(10)).await;
    let sent: Vec<(String, DateTime<Utc>)> = queue.sent().iter().map(|s| (s.message.body.clone(), s.at)).collect();
    assert_eq!(sent.len(), 1, "only `a`: {sent:?}");
    assert_eq!(sent[0].0, "body-a");
    let q = QueueName::parse("billing.fifo").expect("a queue");
    assert!(store.get(&q, Partition::Shard(0), "b").is_none(), "`b` left the table");
    let record = store
        .state
        .lock()
        .expect("the store")
        .history
        .values()
        .find(|h| h.job_id == "b")
        .map(|h| h.status);
    assert_eq!(record, Some(crate::ports::HistoryStatus::Expired), "recorded expired");
}

/// Issue 71 (review): a FIFO call held for its booked second and started past it (a pause read
/// of 1.2 s) books its entries again, and they keep their group's order: settled first to last,
/// each went to the front of the run's queue, and the group went out reversed.
#[tokio::test(start_paused = true)]
async fn a_fifo_call_held_past_its_second_books_again_and_keeps_its_groups_order() {
    // The run's first read is quick; the call held for 09:00:01 reads again (the first is no
    // longer fresh), and that read takes 1.2 s.
    let (d, store, queue, clock) = fifo_under_the_rate(
        "2",
        &[std::time::Duration::ZERO, std::time::Duration::from_millis(1_200)],
    );
    let now = clock.now();
    for (i, id) in ["a", "b", "c", "d"].iter().enumerate() {
        store.insert(stored("billing.fifo", id, now - ms(10 - i as i64), 1));
    }
    d.run(now + TimeDelta::seconds(20)).await;
    let sent: Vec<String> = queue.sent().iter().map(|s| s.message.body.clone()).collect();
    assert_eq!(
        sent,
        ["body-a", "body-b", "body-c", "body-d"],
        "the group in order, each once"
    );
    assert!(
        store.pause_reads.lock().expect("the store").is_empty(),
        "the slow read was made"
    );
}
