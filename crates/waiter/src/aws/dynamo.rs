//! DynamoDB adapter: the item codec, conditional writes, the due-items query and leases.
//!
//! Table `{WAITER_TABLE_PREFIX}{queue}`, keys `scheduler` (S) / `job_id` (S), index
//! `scheduler-perform_at-index` on `scheduler` (S) / `perform_at` (N). `scheduler` values:
//! - `{queue}#{n}`: shard `n` of `WAITER_SHARDS`, the partitions the poller works;
//! - `{queue}#parked`: jobs SQS rejected permanently;
//! - `{queue}#lease#{n}`: the poller lease of shard `n` (no `perform_at`, so never in the index).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, DeleteRequest, KeysAndAttributes, Put, PutRequest, ReturnValue,
    ReturnValuesOnConditionCheckFailure, Select, TransactWriteItem, WriteRequest,
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
use crate::limits::{DDB_MAX_BATCH_GET_KEYS, DDB_MAX_BATCH_WRITE_ITEMS};

/// Items per page of the due index read by `by_time` (and so by the poller).
const DUE_PAGE_ITEMS: i32 = 500;
/// `BatchGetItem` calls one read has in flight at once.
const READS_IN_FLIGHT: usize = 4;
use crate::ports::{
    CancelOutcome, Found, History, JobKey, JobStore, Lease, LeaseOutcome, Page, ParkInfo, Partition, PutOutcome,
    ReplaceOutcome, Retired, StoredJob,
};

/// Transaction cancellation reasons that a retry can clear.
/// <https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html>
const RETRYABLE_CANCELLATION_REASONS: &[&str] = &[
    "TransactionConflict",
    "ThrottlingError",
    "ProvisionedThroughputExceeded",
];

/// Attempts at items DynamoDB left unprocessed before giving up (they stay for the next run).
const UNPROCESSED_ATTEMPTS: u32 = 8;

/// The check that no poller's lease item covers a job due at `perform_at`. The lease's `until`
/// does not matter: a run that could not remove what it sent keeps its lease item, so a job
/// whose message SQS accepted is never changed or reported cancelled.
fn lease_does_not_cover(
    table: &str,
    queue: &QueueName,
    shard: u32,
    perform_at: DateTime<Utc>,
) -> Result<ConditionCheck, PortError> {
    ConditionCheck::builder()
        .table_name(table)
        .set_key(Some(lease_key(queue, shard)))
        .condition_expression("attribute_not_exists(#horizon) OR #horizon < :perform_at")
        .expression_attribute_names("#horizon", A_LEASE_HORIZON)
        .expression_attribute_values(":perform_at", n(perform_at))
        .build()
        .map_err(|e| internal("TransactWriteItems", e))
}

/// The condition that the stored item is still `current`'s version (and a job). Items written
/// before versions existed read as version 1.
fn same_version(current: &StoredJob) -> &'static str {
    if current.version == 1 {
        "attribute_exists(perform_at) AND (attribute_not_exists(#v) OR #v = :v)"
    } else {
        "attribute_exists(perform_at) AND #v = :v"
    }
}

/// Why a transaction was refused.
enum TransactionFailure {
    /// The condition of the item at this index failed.
    Condition(usize),
    /// A conflict or throttling: a retry can succeed.
    Retryable,
    Other,
}

fn transaction_failure(
    e: &SdkError<aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError, HttpResponse>,
) -> TransactionFailure {
    let reasons = cancellation_reasons(e);
    if let Some(i) = reasons
        .iter()
        .position(|r| r.as_deref() == Some("ConditionalCheckFailed"))
    {
        TransactionFailure::Condition(i)
    } else if reasons
        .iter()
        .flatten()
        .any(|r| RETRYABLE_CANCELLATION_REASONS.contains(&r.as_str()))
        || e.code() == Some("TransactionConflictException")
    {
        TransactionFailure::Retryable
    } else {
        TransactionFailure::Other
    }
}

#[derive(Clone)]
pub struct DynamoStore {
    client: Client,
    config: Arc<Config>,
}

impl DynamoStore {
    pub fn new(client: Client, config: Arc<Config>) -> Self {
        Self { client, config }
    }

    fn table(&self, queue: &QueueName) -> String {
        self.config.table_name(queue)
    }

    fn resource(&self, queue: &QueueName) -> String {
        format!("table {}", self.table(queue))
    }

    /// A query of the due index for one partition's jobs with `from <= perform_at <= to`.
    fn index_query(
        &self,
        queue: &QueueName,
        partition: &Partition,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        self.client
            .query()
            .table_name(self.table(queue))
            .index_name(INDEX_NAME)
            .key_condition_expression("#s = :s AND #p BETWEEN :f AND :t")
            .expression_attribute_names("#s", A_SCHEDULER)
            .expression_attribute_names("#p", A_PERFORM_AT)
            .expression_attribute_values(":s", AttributeValue::S(partition_key(queue, partition)))
            .expression_attribute_values(":f", n(from))
            .expression_attribute_values(":t", n(to))
    }

    /// One `BatchGetItem` of at most 100 keys, retrying what comes back unprocessed.
    async fn read_chunk(&self, queue: &QueueName, chunk: &[JobKey]) -> Result<Vec<Found>, PortError> {
        let table = self.table(queue);
        let mut found: Vec<Found> = Vec::new();
        let mut request = Some(
            KeysAndAttributes::builder()
                .set_keys(Some(chunk.iter().map(|k| key(queue, k)).collect()))
                .consistent_read(true)
                .build()
                .map_err(|e| internal("BatchGetItem", e))?,
        );
        let mut attempt = 0;
        while let Some(req) = request.take() {
            let out = self
                .client
                .batch_get_item()
                .request_items(&table, req)
                .send()
                .await
                .map_err(|e| classify("BatchGetItem", &self.resource(queue), e))?;
            for item in out.responses.unwrap_or_default().remove(&table).unwrap_or_default() {
                match decode_any(queue, &item) {
                    Ok(j) => found.push(j),
                    Err(reason) => error!(queue = %queue, reason, "unreadable item skipped"),
                }
            }
            request = out
                .unprocessed_keys
                .unwrap_or_default()
                .remove(&table)
                .filter(|k| !k.keys.is_empty());
            if request.is_some() {
                attempt += 1;
                if attempt > UNPROCESSED_ATTEMPTS {
                    return Err(PortError::Throttled {
                        operation: "BatchGetItem",
                        source: "keys left unprocessed after retries".into(),
                    });
                }
                backoff(attempt).await;
            }
        }
        Ok(found)
    }

    async fn delete_one(&self, queue: &QueueName, k: &JobKey) -> Result<(), PortError> {
        self.client
            .delete_item()
            .table_name(self.table(queue))
            .set_key(Some(key(queue, k)))
            .send()
            .await
            .map_err(|e| classify("DeleteItem", &self.resource(queue), e))?;
        Ok(())
    }
}

/// An SDK builder refused what we built: our bug, never the job's.
fn internal(operation: &'static str, e: aws_sdk_dynamodb::error::BuildError) -> PortError {
    PortError::Internal {
        operation,
        source: Box::new(e),
    }
}

/// The one "conditional check failed" test, for every conditional write.
fn is_condition_failed<E: ProvideErrorMetadata>(e: &SdkError<E, HttpResponse>) -> bool {
    e.code() == Some("ConditionalCheckFailedException")
}

/// `TransactionCanceledException` reasons, in the order of the transaction's items.
fn cancellation_reasons(
    e: &SdkError<aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError, HttpResponse>,
) -> Vec<Option<String>> {
    match e.as_service_error() {
        Some(
            aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError::TransactionCanceledException(c),
        ) => c
            .cancellation_reasons()
            .iter()
            .map(|r| r.code().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

async fn backoff(attempt: u32) {
    tokio::time::sleep(Duration::from_millis(25u64 << attempt.min(6))).await;
}

#[async_trait]
impl JobStore for DynamoStore {
    fn item_bytes(&self, job: &StoredJob) -> usize {
        item_size(&encode(job))
    }

    async fn put_new(&self, job: &StoredJob) -> Result<PutOutcome, PortError> {
        let queue = &job.job.queue;
        let res = self
            .client
            .put_item()
            .table_name(self.table(queue))
            .set_item(Some(encode(job)))
            // Free, or a history record past its time that TTL has not removed yet.
            .condition_expression("attribute_not_exists(job_id) OR #purge < :now")
            .expression_attribute_names("#purge", A_PURGE_AT)
            .expression_attribute_values(":now", AttributeValue::N(job.enqueued_at.timestamp().to_string()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match res {
            Ok(_) => Ok(PutOutcome::Created),
            Err(e) if is_condition_failed(&e) => {
                let old = e.into_service_error();
                let existing = match &old {
                    aws_sdk_dynamodb::operation::put_item::PutItemError::ConditionalCheckFailedException(c) => {
                        c.item.as_ref().and_then(|i| decode_any(queue, i).ok())
                    }
                    _ => None,
                };
                let existing = match existing {
                    Some(x) => Some(x),
                    // Emulators may not return the old item; read it.
                    None => self.read_any(queue, &[job.key()]).await?.into_iter().next(),
                };
                Ok(match existing {
                    Some(Found::History(h)) => PutOutcome::Done(Box::new(h)),
                    Some(Found::Job(j)) => PutOutcome::Duplicate(Box::new(j)),
                    None => PutOutcome::Duplicate(Box::new(job.clone())),
                })
            }
            Err(e) => Err(classify("PutItem", &self.resource(queue), e)),
        }
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

    async fn read_any(&self, queue: &QueueName, keys: &[JobKey]) -> Result<Vec<Found>, PortError> {
        // A page of the due index holds thousands of keys: its chunks are read a few at once.
        let reads: Vec<_> = keys
            .chunks(DDB_MAX_BATCH_GET_KEYS)
            .map(|chunk| self.read_chunk(queue, chunk))
            .collect();
        let chunks: Vec<Vec<Found>> = futures::stream::iter(reads)
            .buffered(READS_IN_FLIGHT)
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .collect::<Result<_, _>>()?;
        Ok(chunks.into_iter().flatten().collect())
    }

    async fn cancel(
        &self,
        queue: &QueueName,
        k: &JobKey,
        perform_at: DateTime<Utc>,
        record: Option<&History>,
    ) -> Result<CancelOutcome, PortError> {
        let table = self.table(queue);
        let Partition::Shard(shard) = k.partition else {
            // Parked jobs leave no history: they were never going to be sent as they were.
            let res = self
                .client
                .delete_item()
                .table_name(&table)
                .set_key(Some(key(queue, k)))
                .condition_expression("attribute_exists(perform_at)")
                .send()
                .await;
            return match res {
                Ok(_) => Ok(CancelOutcome::Cancelled),
                Err(e) if is_condition_failed(&e) => Ok(CancelOutcome::NotFound),
                Err(e) => Err(classify("DeleteItem", &self.resource(queue), e)),
            };
        };
        // Remove the job (or put its history record in its place) only while no lease item
        // covers it, atomically with that check.
        let remove = match record {
            None => TransactWriteItem::builder()
                .delete(
                    Delete::builder()
                        .table_name(&table)
                        .set_key(Some(key(queue, k)))
                        .condition_expression("attribute_exists(perform_at)")
                        .build()
                        .map_err(|e| internal("TransactWriteItems", e))?,
                )
                .build(),
            Some(h) => TransactWriteItem::builder()
                .put(
                    Put::builder()
                        .table_name(&table)
                        .set_item(Some(encode_history(h)))
                        .condition_expression("attribute_exists(perform_at)")
                        .build()
                        .map_err(|e| internal("TransactWriteItems", e))?,
                )
                .build(),
        };
        let res = self
            .client
            .transact_write_items()
            .transact_items(remove)
            .transact_items(
                TransactWriteItem::builder()
                    .condition_check(lease_does_not_cover(&table, queue, shard, perform_at)?)
                    .build(),
            )
            .send()
            .await;
        match res {
            Ok(_) => Ok(CancelOutcome::Cancelled),
            Err(e) => match transaction_failure(&e) {
                TransactionFailure::Condition(0) => Ok(CancelOutcome::NotFound),
                TransactionFailure::Condition(_) => Ok(CancelOutcome::Dispatching),
                // Another transaction touched the item, or capacity ran short: try again.
                TransactionFailure::Retryable => Err(PortError::Throttled {
                    operation: "TransactWriteItems",
                    source: Box::new(e),
                }),
                TransactionFailure::Other => Err(classify("TransactWriteItems", &self.resource(queue), e)),
            },
        }
    }

    fn by_time<'a>(
        &'a self,
        queue: &'a QueueName,
        partition: Partition,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> BoxStream<'a, Result<Vec<StoredJob>, PortError>> {
        // Pages of at most DUE_PAGE_ITEMS rather than DynamoDB's 1 MB: a reader holds a page
        // at a time, so memory stays the same however deep the backlog.
        let pages = self
            .index_query(queue, &partition, from, to)
            .limit(DUE_PAGE_ITEMS)
            .into_paginator()
            .send();
        futures::stream::unfold(pages, |mut pages| async move {
            pages.next().await.map(|page| (page, pages))
        })
        .map(move |page| {
            let page = page.map_err(|e| classify("Query", &self.resource(queue), e))?;
            Ok(page
                .items
                .unwrap_or_default()
                .iter()
                .filter_map(|item| match decode(queue, item) {
                    Ok(j) => Some(j),
                    Err(reason) => {
                        error!(queue = %queue, partition = ?partition, reason, "unreadable item skipped");
                        None
                    }
                })
                .collect())
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
        let out = self
            .index_query(queue, &partition, from, to)
            .limit(1)
            .send()
            .await
            .map_err(|e| classify("Query", &self.resource(queue), e))?;
        Ok(out
            .items
            .unwrap_or_default()
            .first()
            .and_then(|item| decode(queue, item).ok()))
    }

    async fn rewrite(&self, current: &StoredJob, next: &StoredJob) -> Result<ReplaceOutcome, PortError> {
        let queue = &current.job.queue;
        let res = self
            .client
            .put_item()
            .table_name(self.table(queue))
            .set_item(Some(encode(next)))
            .condition_expression(same_version(current))
            .expression_attribute_names("#v", A_VERSION)
            .expression_attribute_values(":v", AttributeValue::N(current.version.to_string()))
            .send()
            .await;
        match res {
            Ok(_) => Ok(ReplaceOutcome::Replaced),
            Err(e) if is_condition_failed(&e) => Ok(ReplaceOutcome::Changed),
            Err(e) => Err(classify("PutItem", &self.resource(queue), e)),
        }
    }

    async fn replace(&self, current: &StoredJob, next: &StoredJob) -> Result<ReplaceOutcome, PortError> {
        let queue = &current.job.queue;
        let table = self.table(queue);
        let put = Put::builder()
            .table_name(&table)
            .set_item(Some(encode(next)))
            .condition_expression(same_version(current))
            .expression_attribute_names("#v", A_VERSION)
            .expression_attribute_values(":v", AttributeValue::N(current.version.to_string()))
            .build()
            .map_err(|e| internal("TransactWriteItems", e))?;
        let mut items = vec![TransactWriteItem::builder().put(put).build()];
        if let Partition::Shard(shard) = current.partition {
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
            Err(e) => match transaction_failure(&e) {
                TransactionFailure::Condition(0) => Ok(ReplaceOutcome::Changed),
                TransactionFailure::Condition(_) => Ok(ReplaceOutcome::Dispatching),
                TransactionFailure::Retryable => Err(PortError::Throttled {
                    operation: "TransactWriteItems",
                    source: Box::new(e),
                }),
                TransactionFailure::Other => Err(classify("TransactWriteItems", &self.resource(queue), e)),
            },
        }
    }

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
            match decode(queue, &item) {
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

    async fn retire(&self, queue: &QueueName, items: &[Retired]) -> Result<(), PortError> {
        let table = self.table(queue);
        for chunk in items.chunks(DDB_MAX_BATCH_WRITE_ITEMS) {
            let mut requests: Vec<WriteRequest> = chunk
                .iter()
                .map(|r| match &r.record {
                    None => DeleteRequest::builder()
                        .set_key(Some(key(queue, &r.key)))
                        .build()
                        .map(|d| WriteRequest::builder().delete_request(d).build()),
                    Some(h) => PutRequest::builder()
                        .set_item(Some(encode_history(h)))
                        .build()
                        .map(|p| WriteRequest::builder().put_request(p).build()),
                })
                .collect::<Result<_, _>>()
                .map_err(|e| internal("BatchWriteItem", e))?;
            let mut attempt = 0;
            while !requests.is_empty() {
                let out = self
                    .client
                    .batch_write_item()
                    .request_items(&table, requests)
                    .send()
                    .await
                    .map_err(|e| classify("BatchWriteItem", &self.resource(queue), e))?;
                requests = out
                    .unprocessed_items
                    .unwrap_or_default()
                    .remove(&table)
                    .unwrap_or_default();
                if !requests.is_empty() {
                    attempt += 1;
                    if attempt > UNPROCESSED_ATTEMPTS {
                        return Err(PortError::Throttled {
                            operation: "BatchWriteItem",
                            source: format!("{} deletes left unprocessed after retries", requests.len()).into(),
                        });
                    }
                    backoff(attempt).await;
                }
            }
        }
        Ok(())
    }

    async fn park(&self, job: &StoredJob, info: &ParkInfo) -> Result<(), PortError> {
        let queue = &job.job.queue;
        let parked = StoredJob {
            partition: Partition::Parked,
            parked: Some(info.clone()),
            ..job.clone()
        };
        self.client
            .put_item()
            .table_name(self.table(queue))
            .set_item(Some(encode(&parked)))
            .send()
            .await
            .map_err(|e| classify("PutItem", &self.resource(queue), e))?;
        self.delete_one(queue, &job.key()).await
    }

    async fn unpark(&self, parked: &StoredJob, into: &StoredJob) -> Result<PutOutcome, PortError> {
        // Copy first, then delete: a crash between leaves a duplicate, never a loss.
        let outcome = self.put_new(into).await?;
        if outcome == PutOutcome::Created {
            self.delete_one(&into.job.queue, &parked.key()).await?;
        }
        Ok(outcome)
    }

    async fn acquire_lease(
        &self,
        queue: &QueueName,
        shard: u32,
        lease: &Lease,
        now: DateTime<Utc>,
    ) -> Result<LeaseOutcome, PortError> {
        let update = |horizon: DateTime<Utc>| {
            self.client
                .update_item()
                .table_name(self.table(queue))
                .set_key(Some(lease_key(queue, shard)))
                .update_expression("SET #owner = :owner, #until = :until, #horizon = :horizon")
                .condition_expression("attribute_not_exists(#until) OR #until < :now OR #owner = :owner")
                .expression_attribute_names("#owner", A_LEASE_OWNER)
                .expression_attribute_names("#until", A_LEASE_UNTIL)
                .expression_attribute_names("#horizon", A_LEASE_HORIZON)
                .expression_attribute_values(":owner", AttributeValue::S(lease.owner.clone()))
                .expression_attribute_values(":until", n(lease.until))
                .expression_attribute_values(":horizon", n(horizon))
                .expression_attribute_values(":now", n(now))
                .return_values(ReturnValue::AllOld)
                .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
                .send()
        };
        match update(lease.horizon).await {
            Ok(out) => {
                // A lapsed lease left by a run that could not clean up: keep covering its horizon.
                let previous = out.attributes.as_ref().and_then(decode_lease);
                let inherited = previous.as_ref().is_some_and(|l| l.owner != lease.owner);
                match previous.map(|l| l.horizon) {
                    Some(h) if h > lease.horizon => {
                        update(h)
                            .await
                            .map_err(|e| classify("UpdateItem", &self.resource(queue), e))?;
                        Ok(LeaseOutcome::Acquired { horizon: h, inherited })
                    }
                    _ => Ok(LeaseOutcome::Acquired {
                        horizon: lease.horizon,
                        inherited,
                    }),
                }
            }
            Err(e) if is_condition_failed(&e) => {
                let held = match e.into_service_error() {
                    aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(c) => {
                        c.item.as_ref().and_then(decode_lease)
                    }
                    _ => None,
                };
                Ok(LeaseOutcome::Held(held))
            }
            Err(e) => Err(classify("UpdateItem", &self.resource(queue), e)),
        }
    }

    async fn release_lease(&self, queue: &QueueName, shard: u32, owner: &str) -> Result<(), PortError> {
        let res = self
            .client
            .delete_item()
            .table_name(self.table(queue))
            .set_key(Some(lease_key(queue, shard)))
            .condition_expression("#owner = :owner")
            .expression_attribute_names("#owner", A_LEASE_OWNER)
            .expression_attribute_values(":owner", AttributeValue::S(owner.to_owned()))
            .send()
            .await;
        match res {
            Ok(_) => Ok(()),
            // Someone took over a lapsed lease: theirs now.
            Err(e) if is_condition_failed(&e) => Ok(()),
            Err(e) => Err(classify("DeleteItem", &self.resource(queue), e)),
        }
    }
}
