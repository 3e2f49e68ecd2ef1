//! What a stored trace header costs in write units (issue 48, item 4): each job's item encoded by
//! the product's codec with and without a Lambda trace header, put and deleted on a table with
//! the contract's index (projecting all attributes, as the stacks create it), and the units
//! DynamoDB reports (`ReturnConsumedCapacity` INDEXES) summed for table and index.

use aws_sdk_dynamodb::types::ReturnConsumedCapacity;
use serde::Serialize;

use waiter::aws::codec::{encode, item_size};
use waiter::ports::StoredJob;
use waiter::QueueName;

use crate::emulator::{create_waiter_table, IndexKind};

/// A trace header as Lambda hands one to a sampled invocation, with the `Lineage` field its
/// recursion detection adds: the longest a job keeps from an invocation in practice.
pub const LAMBDA_TRACE_HEADER: &str =
    "Root=1-67891233-abcdef012345678912345678;Parent=463ac35c9f6413ad;Sampled=1;Lineage=1:a87bb9cd:0";

#[derive(Debug, Clone, Serialize)]
pub struct TraceCostRow {
    pub body_bytes: usize,
    pub item_bytes_without: usize,
    pub item_bytes_with: usize,
    /// Write units of the put and the delete, table and index, as DynamoDB reported them.
    pub write_units_without: f64,
    pub write_units_with: f64,
}

/// Puts and deletes one job of each body size, with and without the header, on `dynamodb`.
pub async fn trace_cost(dynamodb: &aws_sdk_dynamodb::Client, body_sizes: &[usize]) -> Vec<TraceCostRow> {
    let table = "trace-cost";
    create_waiter_table(dynamodb, table, IndexKind::Global).await;
    let queue = QueueName::parse(table).expect("queue name");
    let mut rows = Vec::new();
    for &body_bytes in body_sizes {
        let mut measured = [(0, 0.0); 2];
        for (slot, header) in [None, Some(LAMBDA_TRACE_HEADER)].into_iter().enumerate() {
            let job = stored(&queue, body_bytes, header);
            let item = encode(&job);
            let units = put_delete_units(dynamodb, table, &item).await;
            measured[slot] = (item_size(&item), units);
        }
        rows.push(TraceCostRow {
            body_bytes,
            item_bytes_without: measured[0].0,
            item_bytes_with: measured[1].0,
            write_units_without: measured[0].1,
            write_units_with: measured[1].1,
        });
    }
    rows
}

/// Puts `item` and deletes it again: the write units DynamoDB reports for both, table and
/// indexes (`ReturnConsumedCapacity` INDEXES; NaN where the backend reports none).
pub async fn put_delete_units(
    dynamodb: &aws_sdk_dynamodb::Client,
    table: &str,
    item: &std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>,
) -> f64 {
    let mut units = 0.0;
    let put = dynamodb
        .put_item()
        .table_name(table)
        .set_item(Some(item.clone()))
        .return_consumed_capacity(ReturnConsumedCapacity::Indexes)
        .send()
        .await
        .expect("PutItem");
    units += put
        .consumed_capacity()
        .and_then(|c| c.capacity_units())
        .unwrap_or(f64::NAN);
    let key = ["scheduler", "job_id"].map(|k| (k.to_owned(), item[k].clone()));
    let delete = dynamodb
        .delete_item()
        .table_name(table)
        .set_key(Some(key.into_iter().collect()))
        .return_consumed_capacity(ReturnConsumedCapacity::Indexes)
        .send()
        .await
        .expect("DeleteItem");
    units += delete
        .consumed_capacity()
        .and_then(|c| c.capacity_units())
        .unwrap_or(f64::NAN);
    units
}

fn stored(queue: &QueueName, body_bytes: usize, trace_header: Option<&str>) -> StoredJob {
    let mut job = super::bench_job(body_bytes);
    job.job.queue = queue.clone();
    job.job.job_id = "3f1c2b9e-5d7a-4c1e-9b8f-0a6d2e4c8b1f".into();
    job.job.job_id_given = false;
    job.job.trace_header = trace_header.map(str::to_owned);
    job
}
