//! `WAITER_MAX_RATE`'s ledger on DynamoDB: one item per queue (`{queue}#rate`) with the arrivals
//! booked per second from now on and a version. A booking is a read-modify-write of the whole
//! item, conditioned on the version it read, so runs of every group and process book into one
//! budget and never past it: a run that lost the race reads the winner's item from the
//! condition failure and books again. The partitions of one process take turns (a lock), so a
//! race is only ever with another process. Only queues with a rate pay for it: one `PutItem`
//! per send batch (two when another run wrote meanwhile), sized by the seconds booked ahead.
//!
//! A lost race is tried again, after a jittered backoff, until the run's stop instant: eight
//! poller groups booking one queue at once is the documented way to drain a herd, so losing
//! many rounds in a row is normal under load and must not fail the run. Only time running out
//! does (a retryable error: the jobs stay stored for the next run).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use chrono::{DateTime, Utc};

use super::super::classify;
use super::super::codec::*;
use super::conditions::is_condition_failed;
use super::DynamoStore;
use crate::config::QueueName;
use crate::error::PortError;
use crate::ports::RateLedger;
use crate::rate::{ArrivalWant, Booked, Booking, Bookings, Claim};

/// After a lost race, a booking waits a random time up to this, doubled per round from 5 ms
/// (full jitter, as the SDK's own retries), so that runs writing at once spread out.
const LEDGER_BACKOFF_CAP: std::time::Duration = std::time::Duration::from_millis(200);

/// Counts of this store's ledger changes, for the bench's contention figures: changes asked
/// for, conditional writes sent, writes that lost the race to another process, and the most
/// races one change lost in a row.
#[derive(Debug, Default)]
pub struct LedgerCounts {
    pub changes: AtomicU64,
    pub writes: AtomicU64,
    pub lost: AtomicU64,
    pub most_lost_in_a_row: AtomicU64,
}

/// The backoff before round `round + 1` of a booking that lost round `round`.
fn backoff(round: u32) -> std::time::Duration {
    let ceiling = std::time::Duration::from_millis(5 << round.min(6)).min(LEDGER_BACKOFF_CAP);
    ceiling.mul_f64(fastrand::f64())
}

impl DynamoStore {
    async fn read_ledger(&self, queue: &QueueName) -> Result<(u64, Bookings), PortError> {
        let out = self
            .client
            .get_item()
            .table_name(self.table(queue))
            .set_key(Some(rate_key(queue)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| classify("GetItem", &self.resource(queue), e))?;
        decode_rate(out.item.as_ref()).map_err(|reason| unreadable(queue, reason))
    }

    /// Applies `change` to the queue's ledger and writes it, conditioned on the version it was
    /// applied to. Starts from the version this process last saw (no read when nothing else
    /// wrote since); a change that writes nothing from a remembered version is redone on a
    /// fresh read, so that bookings given back by other runs are seen. A lost race is redone
    /// on the winner's item while `until` leaves time for the backoff.
    async fn change_ledger<T>(
        &self,
        queue: &QueueName,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        change: impl Fn(&mut Bookings) -> T + Send,
    ) -> Result<T, PortError> {
        let _turn = self.ledger_turn.lock().await;
        self.ledger_counts.changes.fetch_add(1, Relaxed);
        let remembered = self.remembered(queue);
        let mut fresh = remembered.is_none();
        let mut state = match remembered {
            Some(s) => s,
            None => self.read_ledger(queue).await?,
        };
        let mut round = 0u32;
        loop {
            let (version, read) = &state;
            let mut next = read.clone();
            next.forget_before(now);
            let out = change(&mut next);
            if next == *read {
                if fresh {
                    return Ok(out);
                }
                state = self.read_ledger(queue).await?;
                fresh = true;
                continue;
            }
            let put = self
                .client
                .put_item()
                .table_name(self.table(queue))
                .set_item(Some(encode_rate(queue, version + 1, &next)))
                .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
            let put = if *version == 0 {
                put.condition_expression("attribute_not_exists(#v)")
            } else {
                put.condition_expression("#v = :v")
                    .expression_attribute_values(":v", AttributeValue::N(version.to_string()))
            };
            self.ledger_counts.writes.fetch_add(1, Relaxed);
            match put.expression_attribute_names("#v", A_RATE_VERSION).send().await {
                Ok(_) => {
                    self.remember(queue, (version + 1, next));
                    return Ok(out);
                }
                Err(e) if is_condition_failed(&e) => {
                    self.ledger_counts.lost.fetch_add(1, Relaxed);
                    let pause = backoff(round);
                    round += 1;
                    self.ledger_counts
                        .most_lost_in_a_row
                        .fetch_max(u64::from(round), Relaxed);
                    if Utc::now() + pause >= until {
                        self.forget(queue);
                        return Err(PortError::Throttled {
                            operation: "PutItem",
                            source: format!(
                                "the rate ledger of {queue} changed under {round} bookings in a row, until the run's stop instant"
                            )
                            .into(),
                        });
                    }
                    // Another run wrote first: its item comes back with the failure (AWS and
                    // moto; read it where an emulator leaves it out).
                    let theirs = match e.into_service_error() {
                        aws_sdk_dynamodb::operation::put_item::PutItemError::ConditionalCheckFailedException(c) => {
                            c.item
                        }
                        _ => None,
                    };
                    tokio::time::sleep(pause).await;
                    state = match theirs {
                        Some(item) => decode_rate(Some(&item)).map_err(|r| unreadable(queue, r))?,
                        None => self.read_ledger(queue).await?,
                    };
                    fresh = true;
                }
                Err(e) => {
                    // Whether it was written is open: read before the next change.
                    self.forget(queue);
                    return Err(classify("PutItem", &self.resource(queue), e));
                }
            }
        }
    }

    /// This store's ledger changes so far (`LedgerCounts`).
    pub fn ledger_counts(&self) -> &LedgerCounts {
        &self.ledger_counts
    }

    fn remembered(&self, queue: &QueueName) -> Option<(u64, Bookings)> {
        let ledgers = self.ledgers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        ledgers.get(queue).cloned()
    }

    fn remember(&self, queue: &QueueName, state: (u64, Bookings)) {
        let mut ledgers = self.ledgers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        ledgers.insert(queue.clone(), state);
    }

    fn forget(&self, queue: &QueueName) {
        let mut ledgers = self.ledgers.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        ledgers.remove(queue);
    }
}

fn unreadable(queue: &QueueName, reason: String) -> PortError {
    PortError::Internal {
        operation: "GetItem",
        source: format!("the rate ledger of {queue} is unreadable: {reason}").into(),
    }
}

#[async_trait]
impl RateLedger for DynamoStore {
    async fn book(
        &self,
        queue: &QueueName,
        rate: u32,
        wants: &[ArrivalWant],
        claim: Option<&Claim>,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Vec<Booked>, PortError> {
        self.change_ledger(queue, now, until, |b| b.book_claimed(rate, wants, claim, now))
            .await
    }

    async fn release(
        &self,
        queue: &QueueName,
        bookings: &[Booking],
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<(), PortError> {
        self.change_ledger(queue, now, until, |b| {
            for booking in bookings {
                b.release(*booking);
            }
        })
        .await
    }
}
