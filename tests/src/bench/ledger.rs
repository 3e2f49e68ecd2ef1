//! Contention on `WAITER_MAX_RATE`'s ledger: poller processes (each its own store, as separate
//! Lambda instances are) booking one queue's rate at once on Amazon DynamoDB Local, through the
//! real adapter. Rounds per booking are the conditional writes each booking took (1 when it won
//! its first race).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use chrono::{TimeDelta, Utc};
use serde::Serialize;
use waiter::aws::DynamoStore;
use waiter::config::Config;
use waiter::ports::RateLedger;
use waiter::rate::ArrivalWant;
use waiter::QueueName;

use crate::dynamo_local::DynamoLocal;
use crate::emulator::{create_waiter_table, sdk_config, IndexKind};

#[derive(Debug, Clone, Serialize)]
pub struct LedgerRow {
    pub backend: &'static str,
    pub writers: usize,
    pub bookings: u64,
    /// Arrivals per booking (one send batch).
    pub batch: usize,
    pub seconds: f64,
    pub bookings_per_s: f64,
    /// Conditional writes per booking: 1 + the races it lost.
    pub rounds_per_booking: f64,
    /// The most rounds any one writer's booking took, on average over its bookings.
    pub worst_writer_rounds: f64,
    /// The most races one booking lost in a row (the rule before was to give up at 16).
    pub most_lost_in_a_row: u64,
    /// Bookings that failed (only time running out may fail one; the bench gives each 120 s).
    pub failed: u64,
}

/// DynamoDB Local with the `orders` queue's table, and the config and name of that queue.
async fn orders_ledger() -> (DynamoLocal, aws_sdk_dynamodb::Client, Arc<Config>, QueueName) {
    let local = DynamoLocal::start().await;
    let ddb = aws_sdk_dynamodb::Client::new(&sdk_config(&local.endpoint).await);
    create_waiter_table(&ddb, "orders", IndexKind::Global).await;
    let config =
        Arc::new(Config::from_lookup(|k| (k == "WAITER_QUEUES").then(|| "orders".to_string())).expect("config"));
    let queue = QueueName::parse("orders").expect("queue");
    (local, ddb, config, queue)
}

/// `writers` stores book `bookings_each` batches of 10 arrivals each, all at once, into one
/// queue's ledger at 1000 a second.
pub async fn ledger_contention(writers: usize, bookings_each: usize) -> LedgerRow {
    const BATCH: usize = 10;
    let (local, ddb, config, queue) = orders_ledger().await;
    let now = Utc::now();
    let until = now + TimeDelta::seconds(120);
    let want = ArrivalWant {
        second: now.timestamp() + 5,
        latest: now.timestamp() + 100_000,
        weight: 1,
    };
    let started = Instant::now();
    let tasks = (0..writers).map(|_| {
        let store = DynamoStore::new(ddb.clone(), config.clone());
        let queue = queue.clone();
        tokio::spawn(async move {
            let mut failed = 0u64;
            for _ in 0..bookings_each {
                if store
                    .book(&queue, 1000, &[want; BATCH], None, now, until)
                    .await
                    .is_err()
                {
                    failed += 1;
                }
            }
            let c = store.ledger_counts();
            (
                c.changes.load(Relaxed),
                c.writes.load(Relaxed),
                failed,
                c.most_lost_in_a_row.load(Relaxed),
            )
        })
    });
    let per_writer: Vec<(u64, u64, u64, u64)> = futures::future::join_all(tasks)
        .await
        .into_iter()
        .map(|t| t.expect("writer task"))
        .collect();
    let seconds = started.elapsed().as_secs_f64();
    drop(local);
    let changes: u64 = per_writer.iter().map(|w| w.0).sum();
    let writes: u64 = per_writer.iter().map(|w| w.1).sum();
    LedgerRow {
        backend: "DynamoDB Local",
        writers,
        bookings: changes,
        batch: BATCH,
        seconds,
        bookings_per_s: changes as f64 / seconds,
        rounds_per_booking: writes as f64 / changes.max(1) as f64,
        worst_writer_rounds: per_writer
            .iter()
            .map(|w| w.1 as f64 / w.0.max(1) as f64)
            .fold(0.0, f64::max),
        failed: per_writer.iter().map(|w| w.2).sum(),
        most_lost_in_a_row: per_writer.iter().map(|w| w.3).max().unwrap_or(0),
    }
}

impl LedgerRow {
    pub fn line(&self) -> String {
        format!(
            "{:>2} writers: {} bookings of {} in {:.1} s, {:.0} bookings/s, {:.2} rounds per booking (worst writer {:.2}, most lost in a row {}), {} failed",
            self.writers,
            self.bookings,
            self.batch,
            self.seconds,
            self.bookings_per_s,
            self.rounds_per_booking,
            self.worst_writer_rounds,
            self.most_lost_in_a_row,
            self.failed
        )
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct LedgerSizeRow {
    pub backend: &'static str,
    pub partitions: u32,
    pub jobs: usize,
    pub rate: u32,
    pub bookings: usize,
    /// The ledger item's size after each booking, as DynamoDB counts it (names and values).
    pub mean_item_bytes: f64,
    pub max_item_bytes: usize,
    /// Write units of the bookings' `PutItem`s: each bills the larger of the item before and
    /// after, 1 unit per KB rounded up.
    pub write_units_per_booking: f64,
    pub floors_at_end: usize,
}

/// A ranked herd booked as `WAITER_PRIORITY_ORDER` books it: `partitions` partitions each book
/// their share of `jobs` (random priorities, weights 1-8) in rank order, 100 jobs per ledger
/// call, through the real adapter on DynamoDB Local; the item is read back after each booking.
pub async fn ledger_size(partitions: u32, jobs: usize, rate: u32) -> LedgerSizeRow {
    use aws_sdk_dynamodb::types::AttributeValue;
    use rand::{Rng, SeedableRng};
    use waiter::rate::{Claim, PriorityOrder};
    const PER_CALL: usize = 100;
    let (local, ddb, config, queue) = orders_ledger().await;
    let store = DynamoStore::new(ddb.clone(), config);
    let mut rng = rand::rngs::StdRng::seed_from_u64(46);
    let now = Utc::now();
    let until = now + TimeDelta::seconds(600);
    let due = now.timestamp() + 5;
    // Each partition's share, in rank order (priority, then due instant).
    let mut shares: Vec<Vec<(waiter::rate::Rank, ArrivalWant)>> = (0..partitions)
        .map(|_| {
            let mut share: Vec<_> = (0..jobs / partitions as usize)
                .map(|_| {
                    let at = now + TimeDelta::milliseconds(5_000 + rng.random_range(0..1_000));
                    let rank = PriorityOrder::Priority.rank(at, rng.random_range(1..=1000));
                    let want = ArrivalWant {
                        second: due,
                        latest: due + 900,
                        weight: if rng.random_bool(0.3) {
                            rng.random_range(1..=8)
                        } else {
                            1
                        },
                    };
                    (rank, want)
                })
                .collect();
            share.sort_by_key(|(r, _)| *r);
            share
        })
        .collect();
    let key = std::collections::HashMap::from([
        ("scheduler".to_owned(), AttributeValue::S("orders#rate".to_owned())),
        ("job_id".to_owned(), AttributeValue::S("rate".to_owned())),
    ]);
    let (mut sizes, mut units, mut previous) = (Vec::new(), 0usize, 0usize);
    let mut floors_at_end = 0;
    // Round robin over the partitions, one call each, as runs at once interleave.
    while shares.iter().any(|s| !s.is_empty()) {
        for (shard, share) in shares.iter_mut().enumerate() {
            if share.is_empty() {
                continue;
            }
            let batch: Vec<_> = share.drain(..PER_CALL.min(share.len())).collect();
            let claim = Claim {
                shard: shard as u32,
                ranks: batch.iter().map(|(r, _)| *r).collect(),
                next: share.first().map(|(r, w)| (*r, w.second)),
                read_to: due,
                ..Claim::default()
            };
            let wants: Vec<ArrivalWant> = batch.iter().map(|(_, w)| *w).collect();
            let booked = store
                .book(&queue, rate, &wants, Some(&claim), now, until)
                .await
                .expect("book");
            // Blocked wants (a better head elsewhere) go back to the front of the share.
            let blocked: Vec<_> = batch
                .into_iter()
                .zip(&booked)
                .filter(|(_, b)| matches!(b, waiter::rate::Booked::Blocked))
                .map(|(x, _)| x)
                .collect();
            share.splice(0..0, blocked);
            let item = ddb
                .get_item()
                .table_name("orders")
                .set_key(Some(key.clone()))
                .consistent_read(true)
                .send()
                .await
                .expect("the ledger item")
                .item
                .unwrap_or_default();
            let bytes = waiter::aws::codec::item_size(&item);
            units += previous.max(bytes).div_ceil(1024);
            previous = bytes;
            sizes.push(bytes);
            floors_at_end = match item.get("rate_floors") {
                Some(AttributeValue::M(m)) => m.len(),
                _ => 0,
            };
        }
    }
    drop(local);
    LedgerSizeRow {
        backend: "DynamoDB Local",
        partitions,
        jobs,
        rate,
        bookings: sizes.len(),
        mean_item_bytes: sizes.iter().sum::<usize>() as f64 / sizes.len().max(1) as f64,
        max_item_bytes: sizes.iter().copied().max().unwrap_or(0),
        write_units_per_booking: units as f64 / sizes.len().max(1) as f64,
        floors_at_end,
    }
}

impl LedgerSizeRow {
    pub fn line(&self) -> String {
        format!(
            "{} jobs over {} partitions at {}/s: {} bookings, ledger item {:.0} bytes on average, {} at most, {:.2} write units per booking, {} floors at the end",
            self.jobs,
            self.partitions,
            self.rate,
            self.bookings,
            self.mean_item_bytes,
            self.max_item_bytes,
            self.write_units_per_booking,
            self.floors_at_end
        )
    }
}
