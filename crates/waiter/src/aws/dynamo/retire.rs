//! Removing what the poller sent: each job's item, conditioned on the edition SQS accepted, or
//! its history record put in its place. `BatchWriteItem` takes no conditions, so the removals
//! go as conditional PartiQL statements, 25 to a `BatchExecuteStatement` (`statements`), at
//! 1 write unit each; a backend without PartiQL (moto) gets them in `TransactWriteItems` of up
//! to 100 conditional writes instead, at 2 write units each, with a client token derived from
//! the batch (docs/cost.md, "Calls per job").
//!
//! A removal never takes a newer edition of the job (one enqueued or rescheduled meanwhile):
//! - every write carries the edition condition, so a statement or transaction sent again (by
//!   the SDK, or as a new call by a later run) cannot delete what was stored since;
//! - a transaction's token makes DynamoDB answer the SDK's retry of an applied transaction as
//!   it answered the first, without applying it again, for 10 minutes;
//! - a removal whose condition failed is done: the job is gone already or is another writer's.

use aws_sdk_dynamodb::types::{AttributeValue, Delete, Put, TransactWriteItem, Update};
use futures::StreamExt;
use sha2::{Digest, Sha256};
use tracing::warn;

use super::statements::{Statements, PARTIQL_ABSENT, PARTIQL_RUNS, PARTIQL_UNKNOWN};
use super::*;
use crate::limits::{
    DDB_MAX_BATCH_STATEMENTS, DDB_MAX_CLIENT_TOKEN_CHARS, DDB_MAX_TRANSACT_BYTES, DDB_MAX_TRANSACT_ITEMS,
};
use crate::ports::Advance;

/// Transactions one `retire` has in flight at once.
const TRANSACTIONS_IN_FLIGHT: usize = 4;
/// Rounds of a transaction refused only for a conflict or short capacity before its removals
/// are left for the next run (they stay in the lease's debts).
const CONFLICT_ROUNDS: u32 = 3;
/// Room per item for its key, condition and request framing, on top of a record's own size.
const ITEM_OVERHEAD_BYTES: usize = 512;

/// An update builder (`UpdateItem`, or a transaction's `Update`) with `SET` of every attribute
/// of `set`, written once for both.
macro_rules! setting {
    ($builder:expr, $set:expr) => {{
        let (expression, names, values) = set_expression($set);
        let mut b = $builder.update_expression(expression);
        for (k, v) in names {
            b = b.expression_attribute_names(k, v);
        }
        for (k, v) in values {
            b = b.expression_attribute_values(k, v);
        }
        b
    }};
}

impl DynamoStore {
    pub(super) async fn retire_all(&self, queue: &QueueName, items: &[Retired]) -> Result<(), PortError> {
        let table = self.table(queue);
        // A key named twice keeps its last write, as two calls in order would leave it (and a
        // transaction may not name one item twice).
        let newest_first: Vec<&Retired> = items.iter().rev().collect();
        let mut last: Vec<Removal> = distinct(&newest_first, |r| &r.key)
            .into_iter()
            .map(|r| Removal::new(r))
            .collect();
        last.reverse();
        let calls: Vec<_> = transaction_batches(last, Removal::bytes, DDB_MAX_BATCH_STATEMENTS)
            .into_iter()
            .map(|batch| self.retire_by_statements(queue, &table, batch))
            .collect();
        let results: Vec<Result<(), PortError>> = futures::stream::iter(calls)
            .buffer_unordered(TRANSACTIONS_IN_FLIGHT)
            .collect()
            .await;
        results.into_iter().collect()
    }

    /// One batch of statements; where the backend runs none, the same batch as transactions.
    async fn retire_by_statements(
        &self,
        queue: &QueueName,
        table: &str,
        batch: Vec<Removal<'_>>,
    ) -> Result<(), PortError> {
        use std::sync::atomic::Ordering::Relaxed;
        let known = self.statements.load(Relaxed);
        if batch.len() > 1 && known != PARTIQL_ABSENT {
            let statements = batch.iter().map(|r| (r.retired, r.record.as_ref())).collect();
            match self
                .retire_statements(queue, table, statements, known == PARTIQL_UNKNOWN)
                .await?
            {
                Statements::Done => {
                    let _ = self
                        .statements
                        .compare_exchange(PARTIQL_UNKNOWN, PARTIQL_RUNS, Relaxed, Relaxed);
                    return Ok(());
                }
                Statements::Unsupported => {
                    if self.statements.swap(PARTIQL_ABSENT, Relaxed) != PARTIQL_ABSENT {
                        warn!(
                            table,
                            "BatchExecuteStatement is not supported here (an emulator?): removals go by \
                             TransactWriteItems, at 2 write units each instead of 1"
                        );
                    }
                }
            }
        }
        self.retire_batch(queue, table, batch).await
    }

    /// One batch: a transaction, sent again without the items whose condition failed.
    async fn retire_batch(&self, queue: &QueueName, table: &str, mut batch: Vec<Removal<'_>>) -> Result<(), PortError> {
        let mut round = 0;
        loop {
            match batch.as_slice() {
                [] => return Ok(()),
                // A lone write costs half the write units of a one-item transaction.
                [one] => return self.retire_one(queue, table, one).await,
                _ => {}
            }
            let items = batch
                .iter()
                .map(|r| transact_item(queue, table, r))
                .collect::<Result<Vec<_>, _>>()?;
            let token = client_token(table, &batch, round);
            let sent = self
                .client
                .transact_write_items()
                .set_transact_items(Some(items))
                .client_request_token(token)
                .send()
                .await;
            let e = match sent {
                Ok(_) => return Ok(()),
                Err(e) => e,
            };
            let reasons = cancellation_reasons(&e);
            if reasons.len() == batch.len() && reasons.iter().any(|r| r.as_deref() == Some("ConditionalCheckFailed")) {
                batch = batch
                    .into_iter()
                    .zip(&reasons)
                    .filter(|(_, r)| r.as_deref() != Some("ConditionalCheckFailed"))
                    .map(|(item, _)| item)
                    .collect();
                continue;
            }
            if !is_retryable_cancellation(&e, &reasons) {
                return Err(classify("TransactWriteItems", &self.resource(queue), e));
            }
            round += 1;
            if round >= CONFLICT_ROUNDS {
                return Err(PortError::Throttled {
                    operation: "TransactWriteItems",
                    source: Box::new(e),
                });
            }
            backoff(round).await;
        }
    }

    /// One job's removal on its own: its conditional delete, or its history record put in its
    /// place. A failed condition means the job is gone already (an SDK retry of an applied
    /// write) or the key holds another job: done either way.
    async fn retire_one(&self, queue: &QueueName, table: &str, r: &Removal<'_>) -> Result<(), PortError> {
        let edition = r.retired.edition;
        // A key that holds another edition by now was enqueued meanwhile: it is not ours to take.
        macro_rules! unless_taken {
            ($op:literal, $call:expr) => {
                match $call.send().await {
                    Ok(_) => Ok(()),
                    Err(e) if is_condition_failed(&e) => Ok(()),
                    Err(e) => Err(classify($op, &self.resource(queue), e)),
                }
            };
        }
        match &r.record {
            None => {
                let delete = self
                    .client
                    .delete_item()
                    .table_name(table)
                    .set_key(Some(key(queue, &r.retired.key)));
                unless_taken!("DeleteItem", if_same_edition!(delete, edition))
            }
            Some(set) if r.retired.advance.is_some() => {
                let update = self
                    .client
                    .update_item()
                    .table_name(table)
                    .set_key(Some(key(queue, &r.retired.key)));
                unless_taken!("UpdateItem", if_same_edition!(setting!(update, set), edition))
            }
            Some(record) => {
                let put = self.client.put_item().table_name(table).set_item(Some(record.clone()));
                unless_taken!("PutItem", if_same_edition!(put, edition))
            }
        }
    }
}

/// One job's removal, its history record encoded once for its size, its write and its token.
/// A series' move is the attributes it sets (`advance_set`), the rest of the item kept.
pub(super) struct Removal<'a> {
    retired: &'a Retired,
    record: Option<Item>,
}

impl<'a> Removal<'a> {
    fn new(retired: &'a Retired) -> Self {
        Self {
            record: match (&retired.record, &retired.advance) {
                (Some(h), _) => Some(encode_history(h)),
                (None, Some(a)) => Some(advance_set(retired, a)),
                (None, None) => None,
            },
            retired,
        }
    }

    /// What it adds to a transaction's 4 MB: its history record, or only its key.
    fn bytes(&self) -> usize {
        self.record.as_ref().map_or(0, item_size) + ITEM_OVERHEAD_BYTES
    }
}

/// What a series' move sets: its next occurrence, the occurrences sent, the next version, and
/// the arrival of an occurrence still in SQS's delay (`maybe_delivered_at`).
pub(super) fn advance_set(r: &Retired, a: &Advance) -> Item {
    let mut set = Item::from([
        (A_PERFORM_AT.to_owned(), n(a.perform_at)),
        (A_OCCURRENCES.to_owned(), AttributeValue::N(a.occurrences.to_string())),
        (
            A_VERSION.to_owned(),
            AttributeValue::N((r.edition.version + 1).to_string()),
        ),
    ]);
    if let Some(t) = a.arriving_at {
        set.insert(A_MAYBE_DELIVERED_AT.to_owned(), n(t));
    }
    if let Some(t) = a.extra_sent {
        set.insert(A_REPEAT_EXTRA_LAST.to_owned(), n(t));
    }
    set
}

/// An update expression with its attribute names and values.
type Expression = (String, Vec<(String, String)>, Vec<(String, AttributeValue)>);

/// `SET` of every attribute of `set`, as an update expression with its names and values.
fn set_expression(set: &Item) -> Expression {
    let mut entries: Vec<_> = set.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let (mut parts, mut names, mut values) = (Vec::new(), Vec::new(), Vec::new());
    for (i, (name, value)) in entries.into_iter().enumerate() {
        parts.push(format!("#set{i} = :set{i}"));
        names.push((format!("#set{i}"), name.clone()));
        values.push((format!(":set{i}"), value.clone()));
    }
    let mut removed = Vec::new();
    for (i, name) in super::statements::advance_removes(set).into_iter().enumerate() {
        removed.push(format!("#rm{i}"));
        names.push((format!("#rm{i}"), name.to_owned()));
    }
    (
        format!("SET {} REMOVE {}", parts.join(", "), removed.join(", ")),
        names,
        values,
    )
}

/// A removal as one item of a transaction, with the same edition condition as `retire_one`.
fn transact_item(queue: &QueueName, table: &str, r: &Removal<'_>) -> Result<TransactWriteItem, PortError> {
    let edition = r.retired.edition;
    let built = match &r.record {
        None => {
            let delete = Delete::builder()
                .table_name(table)
                .set_key(Some(key(queue, &r.retired.key)));
            if_same_edition!(delete, edition)
                .build()
                .map(|d| TransactWriteItem::builder().delete(d).build())
        }
        Some(set) if r.retired.advance.is_some() => {
            let update = Update::builder()
                .table_name(table)
                .set_key(Some(key(queue, &r.retired.key)));
            if_same_edition!(setting!(update, set), edition)
                .build()
                .map(|u| TransactWriteItem::builder().update(u).build())
        }
        Some(record) => {
            let put = Put::builder().table_name(table).set_item(Some(record.clone()));
            if_same_edition!(put, edition)
                .build()
                .map(|p| TransactWriteItem::builder().put(p).build())
        }
    };
    built.map_err(|e| internal("TransactWriteItems", e))
}

/// Consecutive batches of at most `max_items` items (at most `DDB_MAX_TRANSACT_ITEMS`) and
/// `DDB_MAX_TRANSACT_BYTES`: a batch of statements that the backend refuses goes on as one
/// transaction, so it keeps within a transaction's limits too.
fn transaction_batches<T>(items: Vec<T>, bytes: impl Fn(&T) -> usize, max_items: usize) -> Vec<Vec<T>> {
    let max_items = max_items.min(DDB_MAX_TRANSACT_ITEMS);
    let mut batches: Vec<Vec<T>> = Vec::new();
    let mut size = 0;
    for item in items {
        let b = bytes(&item);
        match batches.last_mut() {
            Some(last) if last.len() < max_items && size + b <= DDB_MAX_TRANSACT_BYTES => {
                size += b;
                last.push(item);
            }
            _ => {
                size = b;
                batches.push(vec![item]);
            }
        }
    }
    batches
}

/// A token for this batch's transaction: the same for the same writes (so a later run that
/// sends the very same removals within 10 minutes gets the first answer), another after a
/// round refused for a conflict (so DynamoDB does not answer it with that refusal again).
fn client_token(table: &str, batch: &[Removal<'_>], round: u32) -> String {
    let mut h = Sha256::new();
    h.update(table.as_bytes());
    h.update(round.to_le_bytes());
    for Removal { retired: r, record } in batch {
        h.update([0]);
        h.update(format!("{:?}", r.key.partition).as_bytes());
        h.update([0]);
        h.update(r.key.job_id.as_bytes());
        h.update(r.edition.version.to_le_bytes());
        h.update(r.edition.enqueued_at.to_rfc3339().as_bytes());
        match record {
            None => h.update([0]),
            Some(record) => {
                h.update([1]);
                let mut item: Vec<_> = record.iter().collect();
                item.sort_by(|a, b| a.0.cmp(b.0));
                for (name, value) in &item {
                    h.update(name.as_bytes());
                    digest_value(&mut h, value);
                }
            }
        }
    }
    let hex: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    hex[..DDB_MAX_CLIENT_TOKEN_CHARS].to_owned()
}

/// A value into the digest, maps in key order (a `HashMap` iterates in no fixed order).
fn digest_value(h: &mut Sha256, v: &AttributeValue) {
    match v {
        AttributeValue::M(m) => {
            let mut entries: Vec<_> = m.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            h.update(b"M");
            for (k, v) in entries {
                h.update(k.as_bytes());
                digest_value(h, v);
            }
        }
        AttributeValue::L(l) => {
            h.update(b"L");
            l.iter().for_each(|v| digest_value(h, v));
        }
        other => h.update(format!("{other:?}").as_bytes()),
    }
    h.update([0]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_hold_at_most_a_hundred_items_and_four_megabytes() {
        let small: Vec<usize> = vec![600; 250];
        let sizes: Vec<usize> = transaction_batches(small.clone(), |b| *b, DDB_MAX_TRANSACT_ITEMS)
            .iter()
            .map(Vec::len)
            .collect();
        assert_eq!(sizes, vec![100, 100, 50]);
        // Statements: 25 to a batch, and never past a transaction's 100 items.
        let sizes: Vec<usize> = transaction_batches(small.clone(), |b| *b, DDB_MAX_BATCH_STATEMENTS)
            .iter()
            .map(Vec::len)
            .collect();
        assert_eq!(sizes, vec![25; 10]);
        assert_eq!(
            transaction_batches(small, |b| *b, 1000)[0].len(),
            DDB_MAX_TRANSACT_ITEMS
        );
        // History records with bodies: 400 KB each, so ten fit, not a hundred.
        let large: Vec<usize> = vec![400 * 1024 + ITEM_OVERHEAD_BYTES; 25];
        let batches = transaction_batches(large, |b| *b, DDB_MAX_TRANSACT_ITEMS);
        assert!(batches
            .iter()
            .all(|b| b.iter().sum::<usize>() <= DDB_MAX_TRANSACT_BYTES));
        assert_eq!(batches.iter().map(Vec::len).collect::<Vec<_>>(), vec![10, 10, 5]);
        assert!(transaction_batches(Vec::<usize>::new(), |b| *b, DDB_MAX_TRANSACT_ITEMS).is_empty());
    }

    #[test]
    fn a_token_names_its_writes_and_its_round() {
        use crate::ports::{Edition, JobKey, Partition};
        let retired = |id: &str, version: u64| Retired {
            key: JobKey {
                partition: Partition::Shard(0),
                job_id: id.to_owned(),
            },
            edition: Edition {
                version,
                enqueued_at: chrono::DateTime::from_timestamp(1_700_000_000, 0).expect("time"),
            },
            record: None,
            advance: None,
        };
        let (a, b, a2) = (retired("a", 1), retired("b", 1), retired("a", 2));
        fn batch<'a>(rs: &[&'a Retired]) -> Vec<Removal<'a>> {
            rs.iter().map(|r| Removal::new(r)).collect()
        }
        let token = client_token("t", &batch(&[&a, &b]), 0);
        assert_eq!(token.len(), DDB_MAX_CLIENT_TOKEN_CHARS);
        assert_eq!(
            token,
            client_token("t", &batch(&[&a, &b]), 0),
            "the same writes, the same token"
        );
        assert_ne!(token, client_token("t", &batch(&[&a2, &b]), 0), "another edition");
        assert_ne!(token, client_token("t", &batch(&[&a]), 0), "fewer items");
        assert_ne!(token, client_token("t", &batch(&[&a, &b]), 1), "a later round");
        assert_ne!(token, client_token("u", &batch(&[&a, &b]), 0), "another table");
    }
}
