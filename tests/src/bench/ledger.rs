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

use crate::emulator::{create_waiter_table, sdk_config, DynamoLocal, IndexKind};

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

/// `writers` stores book `bookings_each` batches of 10 arrivals each, all at once, into one
/// queue's ledger at 1000 a second.
pub async fn ledger_contention(writers: usize, bookings_each: usize) -> LedgerRow {
    const BATCH: usize = 10;
    let local = DynamoLocal::start().await;
    let ddb = aws_sdk_dynamodb::Client::new(&sdk_config(&local.endpoint).await);
    create_waiter_table(&ddb, "orders", IndexKind::Global).await;
    let config =
        Arc::new(Config::from_lookup(|k| (k == "WAITER_QUEUES").then(|| "orders".to_string())).expect("config"));
    let queue = QueueName::parse("orders").expect("queue");
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
