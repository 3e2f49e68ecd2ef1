//! The adapter's own calls: table names, the due-index query and batched reads, with their
//! retries, and how many of them go out at once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use aws_sdk_dynamodb::Client;
use chrono::{DateTime, Utc};
use tracing::{error, warn};

use super::*;
use crate::aws::classify;
use crate::aws::codec::{decode_partition, group_as_given, newer_format};
use crate::config::{Config, QueueName};
use crate::error::PortError;
use crate::ports::{Found, JobKey, Partition, StoredJob, Unreadable, View};

/// Items per page of the due index read by `by_time` (and so by the poller).
pub(super) const DUE_PAGE_ITEMS: i32 = 500;
/// `BatchGetItem` calls one read has in flight at once.
pub(super) const READS_IN_FLIGHT: usize = 4;
/// Attempts at items DynamoDB left unprocessed before giving up (they stay for the next run).
pub(super) const UNPROCESSED_ATTEMPTS: u32 = 8;

impl DynamoStore {
    pub fn new(client: Client, config: Arc<Config>) -> Self {
        Self {
            client,
            config,
            ledgers: Arc::default(),
            ledger_turn: Arc::default(),
            ledger_counts: Arc::default(),
            statements: Arc::new(std::sync::atomic::AtomicU8::new(super::statements::PARTIQL_UNKNOWN)),
        }
    }

    pub(super) fn table(&self, queue: &QueueName) -> String {
        self.config.table_name(queue)
    }

    pub(super) fn resource(&self, queue: &QueueName) -> String {
        format!("table {}", self.table(queue))
    }

    /// A query of the due index for one partition's jobs with `from <= perform_at <= to`.
    pub(super) fn index_query(
        &self,
        queue: &QueueName,
        partition: &Partition,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> QueryFluentBuilder {
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

    /// The jobs of a page of the due index as the table holds them now, in the page's order.
    /// The index of a table the stacks create projects only `ATTRIBUTES_OF_KEYS`, and a global
    /// index lags its table: so views with more than the keys come from a consistent re-read.
    /// A job that left since, or moved to another `perform_at` (it shows there once the index
    /// has it), is not in the answer.
    pub(super) async fn reread_page(
        &self,
        queue: &QueueName,
        indexed: Vec<StoredJob>,
        view: View,
    ) -> Result<Vec<StoredJob>, PortError> {
        let keys: Vec<JobKey> = indexed.iter().map(StoredJob::key).collect();
        // Items this release cannot read are left out, as they are of `list` (docs/upgrades.md).
        let mut current: HashMap<JobKey, StoredJob> = self
            .read_split(queue, &keys)
            .await?
            .0
            .into_iter()
            .filter_map(|found| match found {
                Found::Job(j) => Some((j.key(), j)),
                Found::History(_) => None,
            })
            .collect();
        Ok(indexed
            .into_iter()
            .filter_map(|i| {
                let mut j = current.remove(&i.key())?;
                if j.job.perform_at != i.job.perform_at {
                    return None;
                }
                if view == View::WithoutMessage {
                    j.job.message_body = String::new();
                    j.job.message_attributes.clear();
                }
                Some(j)
            })
            .collect())
    }

    /// Strongly consistent reads of these keys: what this release reads, and the items it
    /// cannot (a later release's format, or damaged), which it leaves untouched.
    pub(super) async fn read_split(
        &self,
        queue: &QueueName,
        keys: &[JobKey],
    ) -> Result<(Vec<Found>, Vec<Unreadable>), PortError> {
        let keys: Vec<JobKey> = distinct(keys, |k| k).into_iter().cloned().collect();
        // A page of the due index holds thousands of keys: its chunks are read a few at once.
        let reads: Vec<_> = keys
            .chunks(DDB_MAX_BATCH_GET_KEYS)
            .map(|chunk| self.read_chunk(queue, chunk))
            .collect();
        let chunks: Vec<Vec<Result<Found, Unreadable>>> = futures::stream::iter(reads)
            .buffered(READS_IN_FLIGHT)
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .collect::<Result<_, _>>()?;
        let (mut found, mut unreadable) = (Vec::new(), Vec::new());
        for item in chunks.into_iter().flatten() {
            match item {
                Ok(f) => found.push(f),
                Err(u) => unreadable.push(u),
            }
        }
        Ok((found, unreadable))
    }

    /// One `BatchGetItem` of at most 100 keys, retrying what comes back unprocessed.
    pub(super) async fn read_chunk(
        &self,
        queue: &QueueName,
        chunk: &[JobKey],
    ) -> Result<Vec<Result<Found, Unreadable>>, PortError> {
        let table = self.table(queue);
        let first = KeysAndAttributes::builder()
            .set_keys(Some(chunk.iter().map(|k| key(queue, k)).collect()))
            .consistent_read(true)
            .build()
            .map_err(|e| internal("BatchGetItem", e))?;
        until_processed("BatchGetItem", "keys", first, |req| {
            let table = &table;
            async move {
                let out = self
                    .client
                    .batch_get_item()
                    .request_items(table, req)
                    .send()
                    .await
                    .map_err(|e| classify("BatchGetItem", &self.resource(queue), e))?;
                let found: Vec<Result<Found, Unreadable>> = out
                    .responses
                    .unwrap_or_default()
                    .remove(table)
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|item| read_item(queue, item))
                    .collect();
                let left = out
                    .unprocessed_keys
                    .unwrap_or_default()
                    .remove(table)
                    .filter(|k| !k.keys.is_empty())
                    .map(|k| {
                        let n = k.keys.len();
                        (k, n)
                    });
                Ok((found, left))
            }
        })
        .await
    }
}

/// An item read by key: what it holds, or why this release leaves it untouched. `None` for an
/// item that names no key of this queue (nothing to hold or count).
fn read_item(queue: &QueueName, item: Item) -> Option<Result<Found, Unreadable>> {
    let newer = newer_format(&item);
    let group = group_as_given(&item);
    let key = |item: &Item| -> Option<JobKey> {
        Some(JobKey {
            partition: decode_partition(queue, item).ok()?,
            job_id: match item.get(A_JOB_ID) {
                Some(AttributeValue::S(id)) => id.clone(),
                _ => return None,
            },
        })
    };
    if let Some(format) = newer {
        warn!(queue = %queue, format, "item of a later release's format left untouched");
        return Some(Err(Unreadable {
            key: key(&item)?,
            group,
            newer_format: Some(format),
        }));
    }
    let unreadable_key = key(&item);
    match decode_any(queue, item) {
        Ok(found) => Some(Ok(found)),
        Err(reason) => {
            error!(queue = %queue, reason, "unreadable item skipped");
            Some(Err(Unreadable {
                key: unreadable_key?,
                group,
                newer_format: None,
            }))
        }
    }
}

/// Reads only `ATTRIBUTES_OF_KEYS` of a due-index query: what every index of the table holds,
/// whatever its projection (`ALL`, the seed's, or the stacks' `INCLUDE`).
pub(super) fn project_keys(mut query: QueryFluentBuilder) -> QueryFluentBuilder {
    let mut aliases = Vec::with_capacity(ATTRIBUTES_OF_KEYS.len());
    for (i, name) in ATTRIBUTES_OF_KEYS.iter().enumerate() {
        let alias = format!("#k{i}");
        query = query.expression_attribute_names(&alias, *name);
        aliases.push(alias);
    }
    query.projection_expression(aliases.join(","))
}

/// Sends `first`, then what DynamoDB answers it left unprocessed (`BatchGetItem`'s
/// `UnprocessedKeys`), with backoff, until nothing is left. `call` returns what one call answered and the leftover request with how many keys or
/// items it holds; the answers are collected. After `UNPROCESSED_ATTEMPTS` retries what is left
/// counts as throttled (it stays for the next run).
pub(super) async fn until_processed<R, T, F, Fut>(
    operation: &'static str,
    what: &str,
    first: R,
    mut call: F,
) -> Result<Vec<T>, PortError>
where
    F: FnMut(R) -> Fut,
    Fut: std::future::Future<Output = Result<(Vec<T>, Option<(R, usize)>), PortError>>,
{
    let mut request = first;
    let mut answered = Vec::new();
    let mut attempt = 0;
    loop {
        let (got, left) = call(request).await?;
        answered.extend(got);
        let Some((left, n)) = left else {
            return Ok(answered);
        };
        attempt += 1;
        if attempt > UNPROCESSED_ATTEMPTS {
            return Err(PortError::Throttled {
                operation,
                source: format!("{n} {what} left unprocessed after retries").into(),
            });
        }
        backoff(attempt).await;
        request = left;
    }
}

/// An SDK builder refused what we built: our bug, never the job's.
pub(super) fn internal(operation: &'static str, e: aws_sdk_dynamodb::error::BuildError) -> PortError {
    PortError::Internal {
        operation,
        source: Box::new(e),
    }
}

/// Each key once, in first-seen order: `BatchGetItem` refuses a request that names one key
/// twice, and two writes of one key in flight at once could land in either order (ValidationException), although a caller may name an id twice.
pub(super) fn distinct<T>(items: &[T], key: impl Fn(&T) -> &JobKey) -> Vec<&T> {
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    items.iter().filter(|i| seen.insert(key(i))).collect()
}

pub(super) async fn backoff(attempt: u32) {
    tokio::time::sleep(Duration::from_millis(25u64 << attempt.min(6))).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_keeps_the_first_of_each_key_in_order() {
        let k = |id: &str, p: Partition| JobKey {
            partition: p,
            job_id: id.into(),
        };
        let keys = [
            k("a", Partition::Shard(0)),
            k("b", Partition::Shard(0)),
            k("a", Partition::Shard(0)),
            k("a", Partition::Parked),
            k("b", Partition::Shard(0)),
        ];
        let once: Vec<&JobKey> = distinct(&keys, |k| k);
        assert_eq!(once, [&keys[0], &keys[1], &keys[3]]);
    }
}
