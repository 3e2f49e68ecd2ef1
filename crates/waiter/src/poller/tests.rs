//! The dispatch loop against the in-memory fakes.

use super::*;
use std::collections::VecDeque;

use crate::config::QueueName;
use crate::ports::{EntryOutcome, Lease, LeaseOutcome, OutgoingMessage};
use crate::ports::{Jobs, Leases, Partition};
use crate::testing::{config, stored, FakeClock, FakeQueue, MemStore};

pub(super) type D = Dispatcher<MemStore, FakeQueue, FakeClock>;

pub(super) fn dispatcher(extra: &[(&str, &str)]) -> (D, MemStore, FakeQueue, FakeClock) {
    let clock = FakeClock::default();
    let store = MemStore::default();
    let queue = FakeQueue::new(clock.clone());
    let d = Dispatcher::new(
        config("orders,billing.fifo", extra),
        store.clone(),
        queue.clone(),
        clock.clone(),
    );
    (d, store, queue, clock)
}

pub(super) fn ms(n: i64) -> TimeDelta {
    TimeDelta::milliseconds(n)
}

#[tokio::test(start_paused = true)]
async fn due_jobs_arrive_on_time_never_early_and_are_removed() {
    let (d, store, queue, clock) = dispatcher(&[("WAITER_LOOKAHEAD", "60"), ("WAITER_SHARDS", "3")]);
    let now = clock.now();
    // Overdue, due in odd fractions of a second, and beyond the window.
    let offsets = [-5_000, 0, 250, 1_700, 2_999, 30_123, 59_999, 61_000, 3_600_000];
    for (i, off) in offsets.iter().enumerate() {
        store.insert(stored("orders", &format!("j{i}"), now + ms(*off), 3));
    }
    let summary = d.run(now + TimeDelta::seconds(60)).await;
    assert_eq!(summary.dispatched, 7, "{summary:?}");
    assert!(summary.drained);
    assert_eq!(store.len(), 2, "the two jobs beyond the window stay stored");
    for s in queue.sent() {
        let i: usize = s.message.body.trim_start_matches("body-j").parse().unwrap();
        let due = now + ms(offsets[i]);
        let arrival = s.at + TimeDelta::seconds(i64::from(s.message.delay_seconds.unwrap()));
        assert!(arrival >= due, "job {i} early: arrives {arrival}, due {due}");
        let late = arrival - due.max(now);
        assert!(late <= BATCH_WINDOW, "job {i} {late:?} late");
    }
    assert!((summary.backlog_age_s - 5.0).abs() < 1e-3, "{}", summary.backlog_age_s);
}

#[tokio::test(start_paused = true)]
async fn transient_failures_stay_stored_and_sender_faults_are_parked() {
    let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1")]);
    let now = clock.now();
    for i in 0..6 {
        store.insert(stored("orders", &format!("j{i}"), now, 1));
    }
    *queue.entry_fault.lock().unwrap() = Some(Box::new(|m: &OutgoingMessage| match m.body.as_str() {
        "body-j1" => Some(EntryOutcome::Failed {
            code: "InternalError".into(),
            message: "try again".into(),
            sender_fault: false,
        }),
        "body-j2" => Some(EntryOutcome::Failed {
            code: "InvalidParameterValue".into(),
            message: "bad".into(),
            sender_fault: true,
        }),
        _ => None,
    }));
    let s = d.run(now + TimeDelta::seconds(60)).await;
    assert_eq!((s.dispatched, s.failed, s.parked), (4, 1, 1), "{s:?}");
    assert!(!s.drained, "a failed entry stays stored: not drained");
    let q = QueueName::parse("orders").unwrap();
    assert!(
        store.get(&q, Partition::Shard(0), "j1").is_some(),
        "retryable failure stays"
    );
    let parked = store.get(&q, Partition::Parked, "j2").expect("parked");
    assert_eq!(parked.parked.unwrap().code, "InvalidParameterValue");
    assert_eq!(store.len(), 2);

    *queue.entry_fault.lock().unwrap() = None;
    let s = d.run(clock.now() + TimeDelta::seconds(60)).await;
    assert_eq!(s.dispatched, 1, "retried on the next run");
    assert!(s.drained, "{s:?}");
    assert_eq!(store.len(), 1, "only the parked job is left");
}

#[tokio::test(start_paused = true)]
async fn a_batch_refused_for_its_content_is_split_and_only_the_bad_entry_parked() {
    let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1")]);
    let now = clock.now();
    for i in 0..5 {
        store.insert(stored("orders", &format!("j{i}"), now, 1));
    }
    *queue.batch_fault.lock().unwrap() = Some(Box::new(|ms: &[OutgoingMessage]| {
        ms.iter().any(|m| m.body == "body-j3").then(|| PortError::Rejected {
            operation: "SendMessageBatch",
            code: "AWS.SimpleQueueService.BatchRequestTooLong".into(),
            source: None,
        })
    }));
    let s = d.run(now + TimeDelta::seconds(60)).await;
    assert_eq!((s.dispatched, s.parked, s.errors.len()), (4, 1, 0), "{s:?}");
    let q = QueueName::parse("orders").unwrap();
    assert!(store.get(&q, Partition::Parked, "j3").is_some());
    assert_eq!(store.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn queue_level_errors_park_nothing_and_the_next_run_retries() {
    for code in [
        "KMS.AccessDeniedException",
        "AccessDenied",
        "KMS.DisabledException",
        "InvalidSecurity",
        "AWS.SimpleQueueService.NonExistentQueue",
    ] {
        let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1"), ("WAITER_QUEUES", "orders")]);
        let now = clock.now();
        for i in 0..12 {
            store.insert(stored("orders", &format!("j{i}"), now, 1));
        }
        *queue.batch_fault.lock().unwrap() = Some(Box::new(move |_: &[OutgoingMessage]| {
            Some(PortError::Rejected {
                operation: "SendMessageBatch",
                code: code.into(),
                source: None,
            })
        }));
        let s = d.run(now + TimeDelta::seconds(60)).await;
        assert_eq!((s.dispatched, s.parked), (0, 0), "{code}: {s:?}");
        assert!(!s.drained && s.errors[0].contains(code), "{code}: {s:?}");
        assert_eq!(store.len(), 12, "{code}: everything stays stored");
        *queue.batch_fault.lock().unwrap() = None;
        let s = d.run(clock.now() + TimeDelta::seconds(60)).await;
        assert_eq!(s.dispatched, 12, "{code}: the next run sends them");
    }
}

/// Defect 12 of issue 23: after a failed removal the run kept its lease until it lapsed
/// (deadline + 5 s), so the next run found the partition busy and every other job of the
/// partition waited that long. The lease is now handed on with the jobs to remove.
#[tokio::test(start_paused = true)]
async fn a_failed_removal_hands_the_lease_on_and_the_partition_is_worked_on_time() {
    let (d, store, queue, clock) = dispatcher(&[
        ("WAITER_SHARDS", "1"),
        ("WAITER_QUEUES", "orders"),
        ("WAITER_LOOKAHEAD", "5"),
    ]);
    let start = clock.now();
    store.insert(stored("orders", "sent", start, 1));
    let due_next = start + TimeDelta::seconds(10);
    store.insert(stored("orders", "next", due_next, 1));
    store.fail_deletes.store(true, std::sync::atomic::Ordering::SeqCst);
    // "next" is past this run's horizon; the run's lease would last until 35 s from now.
    let s = d.run(start + TimeDelta::seconds(30)).await;
    assert_eq!((s.dispatched, s.drained), (1, false), "{s:?}");
    store.fail_deletes.store(false, std::sync::atomic::Ordering::SeqCst);
    // The next run, when "next" falls due, well before the first run's lease would lapse.
    clock.advance(due_next - clock.now() - TimeDelta::seconds(1));
    let s = d.run(clock.now() + TimeDelta::seconds(30)).await;
    assert_eq!(s.busy_partitions, 0, "the partition is not left busy: {s:?}");
    assert_eq!((s.dispatched, s.drained), (1, true), "{s:?}");
    let sent = queue.sent();
    assert_eq!(sent.len(), 2, "each job once: {sent:?}");
    let s1 = &sent[1];
    let lateness = s1.at + TimeDelta::seconds(i64::from(s1.message.delay_seconds.unwrap_or(0))) - due_next;
    assert!(lateness < TimeDelta::seconds(1), "late by {lateness}");
    println!(
        "defect 12: the partition's next job arrived {} ms after its time",
        lateness.num_milliseconds()
    );
    assert_eq!(store.len(), 0);
}

/// A run handed a lease whose removals fail again sends nothing (it would send those jobs a
/// second time) and hands the lease on again; a later run removes them.
#[tokio::test(start_paused = true)]
async fn debts_that_cannot_be_removed_are_handed_on_again_and_never_sent_twice() {
    let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1"), ("WAITER_QUEUES", "orders")]);
    let now = clock.now();
    store.insert(stored("orders", "sent", now, 1));
    store.fail_deletes.store(true, std::sync::atomic::Ordering::SeqCst);
    for _ in 0..3 {
        let s = d.run(clock.now() + TimeDelta::seconds(30)).await;
        assert!(!s.drained && s.busy_partitions == 0, "{s:?}");
        assert_eq!(queue.sent().len(), 1, "never sent again");
        let q = QueueName::parse("orders").unwrap();
        let sent = store.get(&q, Partition::Shard(0), "sent").unwrap();
        assert_eq!(
            store.cancel(&sent, None).await.unwrap(),
            crate::ports::RemoveOutcome::Dispatching
        );
        clock.advance(TimeDelta::seconds(60));
    }
    store.fail_deletes.store(false, std::sync::atomic::Ordering::SeqCst);
    let s = d.run(clock.now() + TimeDelta::seconds(30)).await;
    assert!(s.drained, "{s:?}");
    assert_eq!((store.len(), queue.sent().len()), (0, 1));
}

#[tokio::test(start_paused = true)]
async fn after_a_failed_delete_cancel_never_answers_cancelled_for_a_sent_job() {
    let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1"), ("WAITER_QUEUES", "orders")]);
    let now = clock.now();
    store.insert(stored("orders", "sent", now + TimeDelta::seconds(5), 1));
    store.fail_deletes.store(true, std::sync::atomic::Ordering::SeqCst);
    let s = d.run(now + TimeDelta::seconds(30)).await;
    assert_eq!(s.dispatched, 1);
    assert!(!s.drained);
    let q = QueueName::parse("orders").unwrap();
    let sent = store.get(&q, Partition::Shard(0), "sent").unwrap();
    // Long after the run and its lease's `until`: still not cancellable.
    clock.advance(TimeDelta::seconds(120));
    assert_eq!(
        store.cancel(&sent, None).await.unwrap(),
        crate::ports::RemoveOutcome::Dispatching
    );
    // The run handed its lease on with the job to remove: the next run removes it without
    // sending it again, and releases the lease.
    store.fail_deletes.store(false, std::sync::atomic::Ordering::SeqCst);
    let s = d.run(clock.now() + TimeDelta::seconds(30)).await;
    assert_eq!((s.dispatched, s.drained), (0, true));
    assert_eq!(store.len(), 0);
    assert_eq!(queue.sent().len(), 1, "sent once");
    assert_eq!(
        store.cancel(&sent, None).await.unwrap(),
        crate::ports::RemoveOutcome::Changed,
        "gone"
    );
}

#[tokio::test(start_paused = true)]
async fn a_stale_index_never_sends_or_removes_a_newer_version() {
    let (_, _, queue, clock) = dispatcher(&[]);
    let store = MemStore {
        index_lag: std::time::Duration::from_secs(3),
        ..MemStore::default()
    };
    let d = Dispatcher::new(
        config("orders", &[("WAITER_SHARDS", "1")]),
        store.clone(),
        queue.clone(),
        clock.clone(),
    );
    let now = clock.now();
    let q = QueueName::parse("orders").unwrap();
    store.insert(stored("orders", "j", now + TimeDelta::seconds(10), 1));
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    // Cancelled and enqueued again for next week, while the index still shows the old item.
    let old = store.get(&q, Partition::Shard(0), "j").unwrap();
    store.cancel(&old, None).await.unwrap();
    let mut newer = stored("orders", "j", clock.now() + TimeDelta::days(7), 1);
    newer.job.message_body = "body-newer".into();
    newer.version = 2;
    store.insert(newer.clone());
    let s = d.run(clock.now() + TimeDelta::seconds(30)).await;
    assert_eq!(s.dispatched, 0, "{s:?}");
    assert!(queue.sent().is_empty(), "the cancelled version was sent");
    assert_eq!(
        store.get(&q, Partition::Shard(0), "j"),
        Some(newer),
        "the newer version was removed"
    );
}

#[tokio::test(start_paused = true)]
async fn a_holding_fifo_run_picks_up_jobs_enqueued_during_its_hold_and_never_starves_standard_ones() {
    let (_, store, queue, clock) = dispatcher(&[]);
    let d = Dispatcher::new(
        config(
            "billing.fifo,orders",
            &[
                ("WAITER_SHARDS", "1"),
                ("WAITER_FIFO_HOLD", "60"),
                ("WAITER_CONCURRENCY", "1"),
            ],
        ),
        store.clone(),
        queue.clone(),
        clock.clone(),
    );
    let now = clock.now();
    store.insert(stored("billing.fifo", "early", now + TimeDelta::seconds(2), 1));
    store.insert(stored("orders", "std", now, 1));
    let late_due = now + TimeDelta::milliseconds(20_500);
    let enqueuer = {
        let store = store.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_secs(10)).await;
            store.insert(stored("billing.fifo", "late", late_due, 1));
        })
    };
    let s = d.run(now + TimeDelta::seconds(70)).await;
    enqueuer.await.unwrap();
    assert_eq!(s.dispatched, 3, "{s:?}");
    let sent = queue.sent();
    let at = |body: &str| sent.iter().find(|m| m.message.body == body).map(|m| m.at).unwrap();
    assert!(
        at("body-std") - now < TimeDelta::milliseconds(100),
        "standard waited for the FIFO hold"
    );
    let late = at("body-late") - late_due;
    assert!(
        late >= TimeDelta::zero() && late <= TimeDelta::milliseconds(1_100),
        "late FIFO job off by {late:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_throttled_batch_leaves_everything_stored() {
    let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1")]);
    let now = clock.now();
    for i in 0..3 {
        store.insert(stored("orders", &format!("j{i}"), now, 1));
    }
    *queue.batch_fault.lock().unwrap() = Some(Box::new(|_: &[OutgoingMessage]| {
        Some(PortError::Throttled {
            operation: "SendMessageBatch",
            source: "slow down".into(),
        })
    }));
    let s = d.run(now + TimeDelta::seconds(60)).await;
    assert_eq!((s.dispatched, s.failed), (0, 3));
    assert_eq!(store.len(), 3);
}

#[tokio::test(start_paused = true)]
async fn expired_jobs_are_dropped_not_sent() {
    let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1")]);
    let now = clock.now();
    let mut late = stored("orders", "late", now - TimeDelta::seconds(10), 1);
    late.job.expires_at = Some(now - TimeDelta::seconds(1));
    store.insert(late);
    let mut fine = stored("orders", "fine", now + TimeDelta::seconds(10), 1);
    fine.job.expires_at = Some(now + TimeDelta::seconds(11));
    store.insert(fine);
    let s = d.run(now + TimeDelta::seconds(60)).await;
    assert_eq!((s.dispatched, s.expired), (1, 1), "{s:?}");
    assert_eq!(queue.sent()[0].message.body, "body-fine");
    assert_eq!(store.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_held_partition_is_skipped() {
    let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1"), ("WAITER_QUEUES", "orders")]);
    let now = clock.now();
    store.insert(stored("orders", "j", now, 1));
    let q = QueueName::parse("orders").unwrap();
    let other = Lease {
        owner: "other".into(),
        until: now + TimeDelta::seconds(30),
        horizon: now,
    };
    assert!(matches!(
        store.acquire_lease(&q, 0, &other, now).await.unwrap(),
        crate::ports::LeaseOutcome::Acquired { .. }
    ));
    let s = d.run(now + TimeDelta::seconds(60)).await;
    assert_eq!(s.busy_partitions, 1);
    assert_eq!(s.dispatched, 0);
    assert!(queue.sent().is_empty());
    // After the other poller's lease lapses (it crashed), this one takes over.
    clock.advance(TimeDelta::seconds(31));
    let s = d.run(clock.now() + TimeDelta::seconds(60)).await;
    assert_eq!(s.dispatched, 1);
}

#[tokio::test(start_paused = true)]
async fn a_run_finishing_its_window_hands_over_instead_of_being_skipped() {
    let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1"), ("WAITER_QUEUES", "orders")]);
    let now = clock.now();
    store.insert(stored("orders", "j", now, 1));
    let q = QueueName::parse("orders").unwrap();
    let previous = Lease {
        owner: "previous".into(),
        until: now + TimeDelta::seconds(60),
        horizon: now + TimeDelta::seconds(2),
    };
    assert!(matches!(
        store.acquire_lease(&q, 0, &previous, now).await.unwrap(),
        LeaseOutcome::Acquired { .. }
    ));
    let releaser = {
        let (store, q) = (store.clone(), q.clone());
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(2300)).await;
            store.release_lease(&q, 0, "previous", None).await.unwrap();
        })
    };
    let s = d.run(now + TimeDelta::seconds(60)).await;
    releaser.await.unwrap();
    assert_eq!((s.dispatched, s.busy_partitions), (1, 0), "{s:?}");
    assert!(queue.sent()[0].at >= now + TimeDelta::milliseconds(2300));
}

#[tokio::test(start_paused = true)]
async fn stops_before_the_deadline_and_says_so() {
    let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1"), ("WAITER_FIFO_HOLD", "60")]);
    let now = clock.now();
    // FIFO jobs are held until due; one falls due after the run must stop.
    store.insert(stored("billing.fifo", "soon", now + TimeDelta::seconds(2), 1));
    store.insert(stored("billing.fifo", "later", now + TimeDelta::seconds(20), 1));
    let s = d.run(now + TimeDelta::seconds(10)).await;
    assert_eq!(s.dispatched, 1);
    assert!(!s.drained, "{s:?}");
    let sent = queue.sent();
    assert_eq!(sent[0].message.delay_seconds, None);
    assert!(
        sent[0].at >= now + TimeDelta::seconds(2),
        "a FIFO job is sent no earlier than due"
    );
    assert!(clock.now() <= now + TimeDelta::seconds(10) - STOP_MARGIN);
    assert_eq!(store.len(), 1);
}

#[test]
fn batches_respect_window_count_and_bytes() {
    let t0 = Utc::now();
    let p = |off: i64, bytes: usize| Planned {
        send_at: t0 + ms(off),
        job: stored("orders", "x", t0, 1),
        bytes,
        arrive_in: None,
        booked: None,
        overdue_s: 0.0,
    };
    let mut q: VecDeque<Planned> = (0..25).map(|_| p(0, 10)).collect();
    assert_eq!(next_batch(&mut q, BATCH_WINDOW).len(), 10);
    let mut q: VecDeque<Planned> = [p(0, 10), p(39, 10), p(41, 10)].into();
    assert_eq!(next_batch(&mut q, BATCH_WINDOW).len(), 2);
    assert_eq!(next_batch(&mut q, BATCH_WINDOW).len(), 1);
    let mut q: VecDeque<Planned> = [p(0, 600_000), p(0, 600_000), p(0, 1)].into();
    assert_eq!(next_batch(&mut q, BATCH_WINDOW).len(), 1, "1 MiB per batch");
    assert_eq!(next_batch(&mut q, BATCH_WINDOW).len(), 2);
    assert!(q.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_run_that_took_over_a_lapsed_lease_keeps_it_until_it_has_handled_every_job_under_it() {
    let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1"), ("WAITER_LOOKAHEAD", "0")]);
    let now = clock.now();
    let q = QueueName::parse("orders").unwrap();
    // A crashed run's lapsed lease: it may have handed over every job due within its horizon.
    store.state.lock().unwrap().leases.insert(
        (q.clone(), 0),
        Lease {
            owner: "crashed".into(),
            until: now - TimeDelta::seconds(1),
            horizon: now + TimeDelta::seconds(60),
        },
    );
    let job = stored("orders", "a", now + ms(50_500), 1);
    store.insert(job.clone());
    // A successor with too little time to send it stops at its margin.
    let s = d.run(now + STOP_MARGIN + ms(10)).await;
    assert!(!s.drained, "{s:?}");
    assert!(queue.sent().is_empty());
    assert_eq!(
        store.cancel(&job, None).await.unwrap(),
        crate::ports::RemoveOutcome::Dispatching,
        "the predecessor may have sent it: the lease item stays"
    );
    // Once that lease lapses too, a run with time re-sends it, removes it and releases.
    clock.advance(TimeDelta::seconds(10));
    let s = d.run(clock.now() + TimeDelta::seconds(30)).await;
    assert_eq!((s.dispatched, s.drained), (1, true), "{s:?}");
    assert_eq!(store.len(), 0);
    assert!(store.state.lock().unwrap().leases.is_empty(), "released");
}
