//! `WAITER_MAX_RATE`'s ledger on the emulator's DynamoDB, through the real adapter: pollers in
//! separate processes (separate stores, each with its own remembered copy of the ledger) book
//! into one budget at once, and never past it; a booking that loses races fails only when its
//! run's time is up.

use std::collections::BTreeMap;
use std::sync::Arc;

use e2e::rig::shared;
use waiter::aws::DynamoStore;
use waiter::config::Config;
use waiter::ports::RateLedger;
use waiter::rate::{ArrivalWant, Booked, Booking, Claim, PriorityOrder};
use waiter::QueueName;

/// The `orders` table, and what a store over it needs. The ledger's guarantee is DynamoDB's
/// isolation of conditional writes to one item, which moto does not give
/// (Quirk::UnlockedConditionalWrites): there, DynamoDB Local holds it.
async fn ledger() -> (e2e::rig::Rig, aws_sdk_dynamodb::Client, Arc<Config>, QueueName) {
    let rig = e2e::rig::Rig::builder(&["orders"])
        .for_concurrent_writes()
        .start()
        .await;
    let ddb = rig.table_client().await;
    let config =
        Arc::new(Config::from_lookup(|k| (k == "WAITER_QUEUES").then(|| "orders".to_string())).expect("config"));
    (rig, ddb, config, QueueName::parse("orders").expect("queue"))
}

/// What a run's booking may take: the poller's stop instant is minutes away in these tests.
fn run_ends(now: chrono::DateTime<chrono::Utc>) -> chrono::DateTime<chrono::Utc> {
    now + chrono::TimeDelta::seconds(120)
}

/// Eight poller groups on one rate-limited queue is the documented way to drain a herd: their
/// bookings race for the one ledger item, and lose many rounds in a row on a loaded machine.
/// None of them may fail while its run has time left.
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_bookings_from_separate_pollers_never_pass_the_rate() {
    let _machine = shared().await;
    let (_rig, ddb, config, queue) = ledger().await;
    let now = chrono::Utc::now();
    let second = now.timestamp() + 60;
    let (rate, pollers, rounds, per_call) = (7u32, 8usize, 4usize, 4usize);
    // Every booking wants `second` and may move up to 100 s later.
    let wants = vec![
        ArrivalWant {
            second,
            latest: second + 100,
            weight: 1,
        };
        per_call
    ];
    let tasks = (0..pollers).map(|_| {
        let store = DynamoStore::new(ddb.clone(), config.clone());
        let (queue, wants) = (queue.clone(), wants.clone());
        tokio::spawn(async move {
            let mut booked = Vec::new();
            for _ in 0..rounds {
                let got = store
                    .book(&queue, rate, &wants, None, now, run_ends(now))
                    .await
                    .expect("no booking fails while its run has time left");
                booked.extend(got.into_iter().map(Booked::second));
            }
            booked
        })
    });
    let booked: Vec<Option<i64>> = futures::future::join_all(tasks)
        .await
        .into_iter()
        .flat_map(|t| t.expect("task"))
        .collect();
    assert_eq!(booked.len(), pollers * rounds * per_call);
    assert!(
        booked.iter().all(Option::is_some),
        "room up to 100 s later for all of them"
    );
    let mut per_second = BTreeMap::<i64, u32>::new();
    for s in booked.into_iter().flatten() {
        *per_second.entry(s).or_default() += 1;
    }
    // 128 arrivals at 7 a second: the seconds fill in order, none past the rate.
    assert!(per_second.values().all(|n| *n <= rate), "{per_second:?}");
    let full = (pollers * rounds * per_call) as u32 / rate;
    let expected: Vec<i64> = (second..=second + i64::from(full)).collect();
    assert_eq!(
        per_second.keys().copied().collect::<Vec<_>>(),
        expected,
        "{per_second:?}"
    );

    // A booking given back is booked again, by a poller that had not seen it given back.
    let giver = DynamoStore::new(ddb.clone(), config.clone());
    let taker = DynamoStore::new(ddb.clone(), config.clone());
    let one = [ArrivalWant {
        second,
        latest: second,
        weight: 1,
    }];
    assert_eq!(
        taker
            .book(&queue, rate, &one, None, now, run_ends(now))
            .await
            .expect("book"),
        vec![Booked::Full],
        "second full"
    );
    giver
        .release(&queue, &[Booking { second, units: 1 }], now, run_ends(now))
        .await
        .expect("release");
    assert_eq!(
        taker
            .book(&queue, rate, &one, None, now, run_ends(now))
            .await
            .expect("book"),
        vec![Booked::At(second)]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_partitions_head_in_the_ledger_holds_back_worse_ranked_bookings_of_another_process() {
    let _machine = shared().await;
    let (_rig, ddb, config, queue) = ledger().await;
    let now = chrono::Utc::now();
    let second = now.timestamp();
    let order = PriorityOrder::Priority;
    let (urgent, plain) = (order.coarse_rank(now, 1), order.coarse_rank(now, 100));
    let want = |weight| ArrivalWant {
        second,
        latest: second + 100,
        weight,
    };
    let (first, second_process) = (
        DynamoStore::new(ddb.clone(), config.clone()),
        DynamoStore::new(ddb.clone(), config.clone()),
    );
    // Process 1's shard 0 has an urgent job ready: its head goes in the ledger.
    let head = Claim {
        shard: 0,
        ranks: vec![],
        next: Some((urgent, second)),
        awaits: Vec::new(),
        read_to: 0,
        enqueued_ms: 0,
    };
    first
        .book(&queue, 4, &[], Some(&head), now, run_ends(now))
        .await
        .expect("head");
    // Process 2's shard 1 reads the head from DynamoDB: its plain jobs wait.
    let plain_claim = Claim {
        shard: 1,
        ranks: vec![plain, plain],
        next: None,
        awaits: Vec::new(),
        read_to: 0,
        enqueued_ms: 0,
    };
    assert_eq!(
        second_process
            .book(&queue, 4, &[want(1), want(1)], Some(&plain_claim), now, run_ends(now))
            .await
            .expect("book"),
        vec![Booked::Blocked, Booked::Blocked]
    );
    // The urgent one is heavy (3 of 4) and takes the first second; its head goes.
    let booked = Claim {
        shard: 0,
        ranks: vec![urgent],
        next: None,
        awaits: Vec::new(),
        read_to: 0,
        enqueued_ms: 0,
    };
    assert_eq!(
        first
            .book(&queue, 4, &[want(3)], Some(&booked), now, run_ends(now))
            .await
            .expect("book"),
        vec![Booked::At(second)]
    );
    // Now the plain ones book: one fits beside it, the other moves on.
    assert_eq!(
        second_process
            .book(&queue, 4, &[want(1), want(1)], Some(&plain_claim), now, run_ends(now))
            .await
            .expect("book"),
        vec![Booked::At(second), Booked::At(second + 1)]
    );
}

/// A booking that loses its race with no time left before its run's stop instant fails with a
/// retryable error and writes nothing; with time left, the same booking retries on the
/// winner's item and succeeds.
#[tokio::test(flavor = "multi_thread")]
async fn a_booking_that_loses_its_race_gives_up_only_when_its_run_has_no_time_left() {
    let _machine = shared().await;
    let (_rig, ddb, config, queue) = ledger().await;
    let now = chrono::Utc::now();
    let second = now.timestamp() + 30;
    let one = [ArrivalWant {
        second,
        latest: second + 10,
        weight: 1,
    }];
    let (late, other) = (
        DynamoStore::new(ddb.clone(), config.clone()),
        DynamoStore::new(ddb.clone(), config.clone()),
    );
    // `late` remembers version 1; `other` writes version 2, so `late`'s next write loses.
    late.book(&queue, 1, &one, None, now, run_ends(now))
        .await
        .expect("book");
    other
        .book(&queue, 1, &one, None, now, run_ends(now))
        .await
        .expect("book");
    let out_of_time = late.book(&queue, 1, &one, None, now, now).await;
    match out_of_time {
        Err(e) => assert!(e.is_retryable(), "a lost race at the stop instant is retryable: {e}"),
        Ok(b) => panic!("booked {b:?} although the run had no time left"),
    }
    assert_eq!(late.ledger_counts().lost.load(std::sync::atomic::Ordering::Relaxed), 1);
    // It wrote nothing: the next free second is still `second + 2`, and with time left the
    // loser (which forgot its stale copy) books it.
    let third = late
        .book(&queue, 1, &one, None, now, run_ends(now))
        .await
        .expect("with time left the booking goes through");
    assert_eq!(third, vec![Booked::At(second + 2)]);
}
