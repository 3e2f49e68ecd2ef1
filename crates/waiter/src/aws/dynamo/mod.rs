//! DynamoDB adapter: the item codec, conditional writes, the due-items query and leases.
//!
//! Table `{WAITER_TABLE_PREFIX}{queue}`, keys `scheduler` (S) / `job_id` (S), index
//! `scheduler-perform_at-index` on `scheduler` (S) / `perform_at` (N). `scheduler` values:
//! - `{queue}#{n}`: shard `n` of `WAITER_SHARDS`, the partitions the poller works;
//! - `{queue}#parked`: jobs SQS rejected permanently;
//! - `{queue}#lease#{n}`: the poller lease of shard `n` (no `perform_at`, so never in the index);
//! - `{queue}#meta`: the `WAITER_SHARDS` values written with; `{queue}#rate`: the rate ledger.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{
    AttributeValue, Delete, Put, ReturnValue, ReturnValuesOnConditionCheckFailure, Select, TransactWriteItem,
};
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, Utc};
use futures::stream::BoxStream;
use futures::StreamExt;
use tracing::error;

use super::classify;
use super::codec::*;
use crate::config::{Config, QueueName};
use crate::error::PortError;
use crate::limits::DDB_MAX_BATCH_GET_KEYS;
use crate::ports::{
    DueIndex, Found, History, IndexPosition, JobKey, Jobs, Over, Page, Parking, Partition, PutOutcome, RemoveOutcome,
    ReplaceOutcome, Retired, StoredJob, Unreadable, View,
};

mod calls;
mod census;
mod chain;
mod conditions;
mod lease;
mod pause;
mod rate;
mod retire;
mod statements;

pub use rate::LedgerCounts;

use calls::*;
use conditions::*;

#[derive(Clone)]
pub struct DynamoStore {
    client: Client,
    config: Arc<Config>,
    /// The last version of each queue's rate ledger this process wrote or read (see `rate`).
    ledgers: Arc<std::sync::Mutex<HashMap<QueueName, (u64, crate::rate::Bookings)>>>,
    /// One ledger change at a time in this process, so that its partitions never race each
    /// other for the item (only other processes' runs can).
    ledger_turn: Arc<tokio::sync::Mutex<()>>,
    ledger_counts: Arc<rate::LedgerCounts>,
    /// Whether the backend runs the removals' PartiQL statements (1 write unit each):
    /// `statements::PARTIQL_*`. Where it does not (moto) the process removes by transaction.
    statements: Arc<std::sync::atomic::AtomicU8>,
}

#[async_trait]
impl Jobs for DynamoStore {
    fn item_bytes(&self, job: &StoredJob) -> usize {
        item_size(&encode(job))
    }

    async fn put_new(&self, job: &StoredJob) -> Result<PutOutcome, PortError> {
        let queue = &job.job.queue;
        let mut job = job.clone();
        // Into a free key; then, if it held a history record past its time (TTL removes it
        // late), over exactly that record, with the next version after its life's. A few
        // rounds at most: each lost race is to another enqueue or a record's own expiry.
        let mut over: Option<u64> = None;
        for _ in 0..3 {
            let put = self
                .client
                .put_item()
                .table_name(self.table(queue))
                .set_item(Some(encode(&job)))
                .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
            let put = match over {
                None => put.condition_expression("attribute_not_exists(job_id)"),
                Some(version) => put
                    .condition_expression("#purge < :now AND #ver = :ver")
                    .expression_attribute_names("#purge", A_PURGE_AT)
                    .expression_attribute_names("#ver", A_VERSION)
                    .expression_attribute_values(":now", AttributeValue::N(job.enqueued_at.timestamp().to_string()))
                    .expression_attribute_values(":ver", AttributeValue::N(version.to_string())),
            };
            let e = match put.send().await {
                Ok(_) => return Ok(PutOutcome::Created { version: job.version }),
                Err(e) if is_condition_failed(&e) => e,
                Err(e) => return Err(classify("PutItem", &self.resource(queue), e)),
            };
            let returned = match e.into_service_error() {
                aws_sdk_dynamodb::operation::put_item::PutItemError::ConditionalCheckFailedException(c) => {
                    c.item.and_then(|i| decode_any(queue, i).ok())
                }
                _ => None,
            };
            let existing = match returned {
                Some(x) => Some(x),
                // Emulators may not return the old item; read it.
                None => self.read_any(queue, &[job.key()]).await?.into_iter().next(),
            };
            match existing {
                Some(Found::History(h)) if !h.is_live(job.enqueued_at) => {
                    over = Some(h.version);
                    job.version = job.version.max(h.version + 1);
                }
                Some(Found::History(h)) => return Ok(PutOutcome::Done(Box::new(h))),
                Some(Found::Job(j)) => return Ok(PutOutcome::Duplicate(Box::new(j))),
                // Gone meanwhile (TTL): the key is free again.
                None => over = None,
            }
        }
        Err(PortError::Transient {
            operation: "PutItem",
            source: "the key kept changing while the job was stored; try again".into(),
        })
    }

    async fn place(&self, job: &StoredJob) -> Result<bool, PortError> {
        let queue = &job.job.queue;
        let put = self
            .client
            .put_item()
            .table_name(self.table(queue))
            .set_item(Some(encode(job)));
        match if_same_edition!(put, job.edition(), or_free).send().await {
            Ok(_) => Ok(true),
            Err(e) if is_condition_failed(&e) => Ok(false),
            Err(e) => Err(classify("PutItem", &self.resource(queue), e)),
        }
    }

    async fn remove(&self, job: &StoredJob) -> Result<(), PortError> {
        let queue = &job.job.queue;
        let delete = self
            .client
            .delete_item()
            .table_name(self.table(queue))
            .set_key(Some(key(queue, &job.key())));
        match if_same_edition!(delete, job.edition()).send().await {
            Ok(_) => Ok(()),
            Err(e) if is_condition_failed(&e) => Ok(()),
            Err(e) => Err(classify("DeleteItem", &self.resource(queue), e)),
        }
    }

    /// A key that holds an item of a later release's format is not answered as absent: the
    /// caller would take it for free and write over it. The call fails, retryably (the item
    /// is read once the functions are updated), and nothing is written. A damaged item is left
    /// out, as before.
    async fn read_any(&self, queue: &QueueName, keys: &[JobKey]) -> Result<Vec<Found>, PortError> {
        let (found, unreadable) = self.read_split(queue, keys).await?;
        match unreadable.iter().find(|u| u.newer_format.is_some()) {
            Some(u) => Err(PortError::Transient {
                operation: "BatchGetItem",
                source: format!(
                    "job {} of {queue}: {}",
                    u.key.job_id,
                    newer_reason(u.newer_format.unwrap_or(u64::MAX))
                )
                .into(),
            }),
            None => Ok(found),
        }
    }

    async fn read_to_send(
        &self,
        queue: &QueueName,
        keys: &[JobKey],
    ) -> Result<(Vec<StoredJob>, Vec<Unreadable>), PortError> {
        let (found, unreadable) = self.read_split(queue, keys).await?;
        let jobs = found
            .into_iter()
            .filter_map(|f| match f {
                Found::Job(j) => Some(j),
                Found::History(_) => None,
            })
            .collect();
        Ok((jobs, unreadable))
    }

    async fn put_over(&self, job: &StoredJob, record: &History) -> Result<bool, PortError> {
        self.put_job_over(job, record).await
    }

    async fn park_exhausted(&self, parked: &StoredJob, home: &History, over: Over<'_>) -> Result<bool, PortError> {
        self.park_attempts_exhausted(parked, home, over).await
    }

    async fn cancel_parked_chain(
        &self,
        parked: &StoredJob,
        record: &History,
        over: Over<'_>,
    ) -> Result<RemoveOutcome, PortError> {
        let left = self.leave_parked(parked, encode_history(record), over).await?;
        Ok(if left {
            RemoveOutcome::Removed
        } else {
            RemoveOutcome::Changed
        })
    }

    async fn unpark_over(&self, parked: &StoredJob, into: &StoredJob, over: Over<'_>) -> Result<bool, PortError> {
        self.leave_parked(parked, encode(into), over).await
    }

    async fn record(&self, history: &History) -> Result<(), PortError> {
        let queue = &history.queue;
        let res = self
            .client
            .put_item()
            .table_name(self.table(queue))
            .set_item(Some(encode_history(history)))
            // Never in place of a job stored meanwhile under the same id.
            .condition_expression("attribute_not_exists(perform_at)")
            .send()
            .await;
        match res {
            Ok(_) => Ok(()),
            Err(e) if is_condition_failed(&e) => Ok(()),
            Err(e) => Err(classify("PutItem", &self.resource(queue), e)),
        }
    }

    async fn cancel(&self, current: &StoredJob, record: Option<&History>) -> Result<RemoveOutcome, PortError> {
        let queue = &current.job.queue;
        let k = current.key();
        let table = self.table(queue);
        let Partition::Shard(shard) = k.partition else {
            // Parked jobs leave no history: they were never going to be sent as they were.
            let delete = self
                .client
                .delete_item()
                .table_name(&table)
                .set_key(Some(key(queue, &k)));
            let res = if_same_edition!(delete, current.edition()).send().await;
            return match res {
                Ok(_) => Ok(RemoveOutcome::Removed),
                Err(e) if is_condition_failed(&e) => Ok(RemoveOutcome::Changed),
                Err(e) => Err(classify("DeleteItem", &self.resource(queue), e)),
            };
        };
        // Remove the version read (or put its history record in its place) only while no lease
        // item covers its time, atomically with that check.
        let remove = match record {
            None => TransactWriteItem::builder()
                .delete(
                    if_same_edition!(
                        Delete::builder().table_name(&table).set_key(Some(key(queue, &k))),
                        current.edition()
                    )
                    .build()
                    .map_err(|e| internal("TransactWriteItems", e))?,
                )
                .build(),
            Some(h) => TransactWriteItem::builder()
                .put(
                    if_same_edition!(
                        Put::builder().table_name(&table).set_item(Some(encode_history(h))),
                        current.edition()
                    )
                    .build()
                    .map_err(|e| internal("TransactWriteItems", e))?,
                )
                .build(),
        };
        let mut items = vec![remove];
        if current.lease_shard() == Some(shard) {
            items.push(
                TransactWriteItem::builder()
                    .condition_check(lease_does_not_cover(&table, queue, shard, current.job.perform_at)?)
                    .build(),
            );
        }
        let res = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await;
        match res {
            Ok(_) => Ok(RemoveOutcome::Removed),
            Err(e) => match failed_condition(e, &self.resource(queue))? {
                0 => Ok(RemoveOutcome::Changed),
                _ => Ok(RemoveOutcome::Dispatching),
            },
        }
    }

    async fn replace(&self, current: &StoredJob, next: &StoredJob) -> Result<ReplaceOutcome, PortError> {
        let queue = &current.job.queue;
        let table = self.table(queue);
        let put = if_same_edition!(
            Put::builder().table_name(&table).set_item(Some(encode(next))),
            current.edition()
        )
        .build()
        .map_err(|e| internal("TransactWriteItems", e))?;
        let mut items = vec![TransactWriteItem::builder().put(put).build()];
        if let Some(shard) = current.lease_shard() {
            items.push(
                TransactWriteItem::builder()
                    .condition_check(lease_does_not_cover(&table, queue, shard, current.job.perform_at)?)
                    .build(),
            );
        }
        match self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await
        {
            Ok(_) => Ok(ReplaceOutcome::Replaced),
            Err(e) => match failed_condition(e, &self.resource(queue))? {
                0 => Ok(ReplaceOutcome::Changed),
                _ => Ok(ReplaceOutcome::Dispatching),
            },
        }
    }

    async fn rewrite(&self, current: &StoredJob, next: &StoredJob) -> Result<ReplaceOutcome, PortError> {
        let queue = &current.job.queue;
        let put = self
            .client
            .put_item()
            .table_name(self.table(queue))
            .set_item(Some(encode(next)));
        let res = if_same_edition!(put, current.edition()).send().await;
        match res {
            Ok(_) => Ok(ReplaceOutcome::Replaced),
            Err(e) if is_condition_failed(&e) => Ok(ReplaceOutcome::Changed),
            Err(e) => Err(classify("PutItem", &self.resource(queue), e)),
        }
    }

    async fn retire(&self, queue: &QueueName, items: &[Retired]) -> Result<(), PortError> {
        self.retire_all(queue, items).await
    }
}

#[async_trait]
impl DueIndex for DynamoStore {
    fn by_time_after<'a>(
        &'a self,
        queue: &'a QueueName,
        partition: Partition,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        after: Option<IndexPosition>,
        view: View,
    ) -> BoxStream<'a, Result<Vec<StoredJob>, PortError>> {
        // An index's LastEvaluatedKey is the last item's index and table keys: built from a
        // job's place, it resumes just past that job, inside a group of equal `perform_at` too.
        let start = after.map(|(t, id)| {
            HashMap::from([
                (
                    A_SCHEDULER.to_owned(),
                    AttributeValue::S(partition_key(queue, &partition)),
                ),
                (A_PERFORM_AT.to_owned(), n(t)),
                (A_JOB_ID.to_owned(), AttributeValue::S(id)),
            ])
        });
        // The query reads what every index has (the keys, `priority` and `weight`): the index
        // of a table the stacks create projects no more. Other views re-read each page's jobs
        // from the table (`reread_page`).
        let pages = self
            .index_query(queue, &partition, from, to)
            .set_exclusive_start_key(start)
            // Pages of at most DUE_PAGE_ITEMS rather than DynamoDB's 1 MB: a reader holds a
            // page at a time, so memory stays the same however deep the backlog.
            .limit(DUE_PAGE_ITEMS);
        let pages = project_keys(pages).into_paginator().send();
        futures::stream::unfold(pages, |mut pages| async move {
            pages.next().await.map(|page| (page, pages))
        })
        .then(move |page| {
            let partition = partition.clone();
            async move {
                let page = page.map_err(|e| classify("Query", &self.resource(queue), e))?;
                let indexed: Vec<StoredJob> = page
                    .items
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|item| match decode_index_entry(queue, item) {
                        Ok(j) => Some(j),
                        Err(reason) => {
                            error!(queue = %queue, partition = ?partition, reason, "unreadable item skipped");
                            None
                        }
                    })
                    .collect();
                match view {
                    View::Keys => Ok(indexed),
                    View::Whole | View::WithoutMessage => self.reread_page(queue, indexed, view).await,
                }
            }
        })
        .boxed()
    }

    async fn count(
        &self,
        queue: &QueueName,
        partition: Partition,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<u64, PortError> {
        let mut pages = self
            .index_query(queue, &partition, from, to)
            .select(Select::Count)
            .into_paginator()
            .send();
        let mut total = 0u64;
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| classify("Query", &self.resource(queue), e))?;
            total += u64::try_from(page.count).unwrap_or(0);
        }
        Ok(total)
    }

    async fn first(
        &self,
        queue: &QueueName,
        partition: Partition,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Option<StoredJob>, PortError> {
        // No filter: a page of one holds the first item if there is one.
        let out = project_keys(self.index_query(queue, &partition, from, to).limit(1))
            .send()
            .await
            .map_err(|e| classify("Query", &self.resource(queue), e))?;
        Ok(out
            .items
            .unwrap_or_default()
            .into_iter()
            .next()
            .and_then(|item| decode_index_entry(queue, item).ok()))
    }

    async fn shard_counts(&self, queue: &QueueName, current: u32) -> Result<Vec<u32>, PortError> {
        let read = |item: Option<&Item>| -> Vec<u32> {
            match item.and_then(|i| i.get(A_SHARD_COUNTS)) {
                Some(AttributeValue::Ns(v)) => v.iter().filter_map(|n| n.parse().ok()).collect(),
                _ => Vec::new(),
            }
        };
        let out = self
            .client
            .get_item()
            .table_name(self.table(queue))
            .set_key(Some(meta_key(queue)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| classify("GetItem", &self.resource(queue), e))?;
        let mut counts = read(out.item.as_ref());
        if !counts.contains(&current) {
            let out = self
                .client
                .update_item()
                .table_name(self.table(queue))
                .set_key(Some(meta_key(queue)))
                .update_expression("ADD #c :c")
                .expression_attribute_names("#c", A_SHARD_COUNTS)
                .expression_attribute_values(":c", AttributeValue::Ns(vec![current.to_string()]))
                .return_values(ReturnValue::AllNew)
                .send()
                .await
                .map_err(|e| classify("UpdateItem", &self.resource(queue), e))?;
            counts = read(out.attributes.as_ref());
        }
        counts.sort_unstable();
        counts.dedup();
        Ok(counts)
    }
}

#[async_trait]
impl Parking for DynamoStore {
    async fn parked(&self, queue: &QueueName, limit: usize, after: Option<&str>) -> Result<Page<StoredJob>, PortError> {
        let scheduler = partition_key(queue, &Partition::Parked);
        let start = after.map(|job_id| {
            HashMap::from([
                (A_SCHEDULER.to_owned(), AttributeValue::S(scheduler.clone())),
                (A_JOB_ID.to_owned(), AttributeValue::S(job_id.to_owned())),
            ])
        });
        // One more than asked, to know whether another page follows.
        let want = limit.saturating_add(1);
        let mut pages = self
            .client
            .query()
            .table_name(self.table(queue))
            .key_condition_expression("#s = :s")
            .expression_attribute_names("#s", A_SCHEDULER)
            .expression_attribute_values(":s", AttributeValue::S(scheduler.clone()))
            .set_exclusive_start_key(start)
            .limit(i32::try_from(want).unwrap_or(i32::MAX))
            .into_paginator()
            .items()
            .send();
        let mut items = Vec::new();
        while items.len() < want {
            let Some(item) = pages.next().await else { break };
            let item = item.map_err(|e| classify("Query", &self.resource(queue), e))?;
            match decode(queue, item) {
                Ok(j) => items.push(j),
                Err(reason) => error!(queue = %queue, reason, "unreadable parked item skipped"),
            }
        }
        let next = if items.len() > limit {
            items.truncate(limit);
            items.last().map(|j| j.job.job_id.clone())
        } else {
            None
        };
        Ok(Page { items, next })
    }
}
