//! Issue 46, through the real adapter: the writes of a chain that replace what a key held when
//! read, each refused when it changed meanwhile.

use chrono::{TimeDelta, Utc};
use e2e::rig::Rig;
use waiter::aws::DynamoStore;
use waiter::ports::Found;
use waiter::QueueName;

/// What job `x-1` holds in its shard and in the parked partition, read consistently.
async fn both_keys(store: &DynamoStore, queue: &QueueName) -> Vec<Found> {
    use waiter::ports::{JobKey, Jobs, Partition};
    store
        .read_any(
            queue,
            &JobKey::in_each("x-1", &[Partition::Shard(0), Partition::Parked]),
        )
        .await
        .expect("read")
}

/// Issue 46, through the real adapter, the transactions of a chain, each conditional on what was
/// read and refused when it changed meanwhile (defects 1, 3 and 4):
/// - the last attempt, sent and still stored (the poller had not removed it yet), is parked,
///   conditional on its edition, and its key fenced;
/// - `cancel` of the parked attempt deletes it and records the cancel over the fence at once;
/// - `redrive` moves a parked attempt home over the record there and deletes it at once.
#[tokio::test(flavor = "multi_thread")]
async fn the_chains_transactions_are_conditional_on_what_was_read() {
    use waiter::job::Job;
    use waiter::ports::{History, HistoryStatus, Jobs, Over, ParkInfo, Partition, RemoveOutcome, StoredJob};
    let rig = Rig::builder(&["orders"]).start().await;
    let config = std::sync::Arc::new(
        waiter::Config::from_lookup(|k| (k == "WAITER_QUEUES").then(|| "orders".to_string())).expect("config"),
    );
    let store = waiter::aws::DynamoStore::new(rig.table_client().await, config);
    let queue = waiter::QueueName::parse("orders").expect("queue");
    let now = Utc::now();
    let sent = StoredJob {
        paused_at: None,
        job: Job {
            on_duplicate: Default::default(),
            queue: queue.clone(),
            job_id: "x-1".into(),
            job_id_given: true,
            message_body: "b".into(),
            message_attributes: Default::default(),
            perform_at: now - TimeDelta::seconds(1),
            expires_at: None,
            message_group_id: None,
            message_deduplication_id: None,
            windows: None,
            priority: 100,
            weight: 1,
            attempt: 3,
            names_itself: false,
            repeat: None,
            occurrence: None,
            tags: Default::default(),
            trace_header: None,
        },
        partition: Partition::Shard(0),
        enqueued_at: now - TimeDelta::minutes(1),
        parked: None,
        version: 4,
        maybe_delivered_at: None,
    };
    assert!(matches!(
        store.put_new(&sent).await.expect("put"),
        waiter::ports::PutOutcome::Created { .. }
    ));
    let parked = StoredJob {
        partition: Partition::Parked,
        parked: Some(ParkInfo {
            parked_at: now,
            code: "attempts_exhausted".into(),
            message: "boom".into(),
        }),
        version: 1,
        job: Job {
            attempt: 4,
            ..sent.job.clone()
        },
        ..sent.clone()
    };
    let fence = History {
        version: 5,
        ..History::of(&sent, HistoryStatus::Dispatched, now, None, TimeDelta::days(1))
    };
    let changed = StoredJob {
        version: 5,
        ..sent.clone()
    };
    assert!(
        !store
            .park_exhausted(&parked, &fence, Over::Sent(&changed))
            .await
            .expect("park"),
        "another edition than the one stored: nothing written"
    );
    assert!(store
        .park_exhausted(&parked, &fence, Over::Sent(&sent))
        .await
        .expect("park"));
    let found = both_keys(&store, &queue).await;
    let home = found.iter().find_map(|f| match f {
        Found::History(h) => Some((h.version, h.attempt)),
        Found::Job(_) => None,
    });
    let in_parked = found.iter().find_map(|f| match f {
        Found::Job(j) => Some((j.partition.clone(), j.job.attempt)),
        Found::History(_) => None,
    });
    assert_eq!(home, Some((5, 3)), "the sent attempt's key holds the fence: {found:?}");
    assert_eq!(in_parked, Some((Partition::Parked, 4)), "{found:?}");
    assert!(
        !store
            .park_exhausted(&parked, &fence, Over::Sent(&sent))
            .await
            .expect("park"),
        "the same transaction again finds the fence, not the attempt"
    );

    let cancelled = History {
        version: 6,
        attempt: 4,
        ..History::of(&sent, HistoryStatus::Cancelled, now, None, TimeDelta::days(1))
    };
    let stale_fence = History {
        version: 4,
        ..fence.clone()
    };
    assert_eq!(
        store
            .cancel_parked_chain(&parked, &cancelled, Over::Record(&stale_fence))
            .await
            .expect("cancel"),
        RemoveOutcome::Changed
    );
    assert_eq!(
        store
            .cancel_parked_chain(&parked, &cancelled, Over::Record(&fence))
            .await
            .expect("cancel"),
        RemoveOutcome::Removed
    );
    let found = both_keys(&store, &queue).await;
    assert!(
        matches!(found.as_slice(), [Found::History(h)] if h.status == HistoryStatus::Cancelled && h.version == 6),
        "the parked attempt gone, the cancel recorded: {found:?}"
    );

    // Parked again over the cancel's record, then redriven over the new fence.
    let fence = History { version: 7, ..fence };
    assert!(store
        .park_exhausted(&parked, &fence, Over::Record(&cancelled))
        .await
        .expect("park"));
    let home = StoredJob {
        partition: Partition::Shard(0),
        parked: None,
        version: 8,
        ..parked.clone()
    };
    assert!(!store
        .unpark_over(&parked, &home, Over::Record(&cancelled))
        .await
        .expect("unpark"));
    assert!(store
        .unpark_over(&parked, &home, Over::Record(&fence))
        .await
        .expect("unpark"));
    let found = both_keys(&store, &queue).await;
    assert!(
        matches!(found.as_slice(), [Found::Job(j)] if j.partition == Partition::Shard(0) && j.job.attempt == 4 && j.version == 8),
        "the attempt home, the parked copy gone: {found:?}"
    );
}
