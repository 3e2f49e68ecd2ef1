//! What a stored job costs in billed units and dollars (issue 45, item 1): the calls the API
//! bench counted, the item sizes the product's codec makes, and DynamoDB's billing rules. The
//! put-and-delete units of the model are checked against what DynamoDB Local reports
//! (`ConsumedCapacity`); the rest follow the rules below, since no emulator reports them.
//!
//! Billing rules (DynamoDB developer guide, "Read/write capacity mode"; the pricing pages below):
//! - a write bills 1 unit per KB of the larger of the item before and after; inside a
//!   `TransactWriteItems`, 2; a PartiQL statement bills as the single write it is;
//! - a global secondary index bills its own writes by the projected entry's size, on the put
//!   and on the entry's removal: the stacks' index (`IndexProjection` INCLUDE) holds the keys,
//!   `priority` and `weight`, so its entry bills 1 unit whatever the body's size;
//! - a strongly consistent read 1 unit per 4 KB, an eventually consistent one half that;
//! - SQS bills each 64 KB chunk of a request's payload as a request.

use serde::Serialize;

use waiter::aws::codec::{encode, encode_history, item_size, ATTRIBUTES_OF_KEYS};
use waiter::job::Job;
use waiter::ports::{History, HistoryStatus, Partition, StoredJob};
use waiter::QueueName;

use super::ApiEfficiency;

/// List prices, us-east-1, in US dollars, as the pages show them (November 2026).
pub mod prices {
    /// On-demand, per write request unit. <https://aws.amazon.com/dynamodb/pricing/on-demand/>
    pub const DDB_WRITE_REQUEST_UNIT: f64 = 0.625e-6;
    /// On-demand, per read request unit. <https://aws.amazon.com/dynamodb/pricing/on-demand/>
    pub const DDB_READ_REQUEST_UNIT: f64 = 0.125e-6;
    /// Provisioned, per write capacity unit-hour. <https://aws.amazon.com/dynamodb/pricing/provisioned/>
    pub const DDB_WCU_HOUR: f64 = 0.00065;
    /// Provisioned, per read capacity unit-hour. <https://aws.amazon.com/dynamodb/pricing/provisioned/>
    pub const DDB_RCU_HOUR: f64 = 0.00013;
    /// Provisioned capacity is paid whether used or not: autoscaling's usual target keeps it
    /// about 70 % used, so each unit used costs 1/0.7 of a unit-second.
    pub const PROVISIONED_UTILISATION: f64 = 0.7;
    /// Standard queue, per request (each 64 KB chunk of payload). <https://aws.amazon.com/sqs/pricing/>
    pub const SQS_REQUEST: f64 = 0.40e-6;
    /// Lambda on arm64 (the stacks' default), per GB-second. <https://aws.amazon.com/lambda/pricing/>
    pub const LAMBDA_ARM64_GB_SECOND: f64 = 0.000_013_333_4;
    /// Lambda, per request. <https://aws.amazon.com/lambda/pricing/>
    pub const LAMBDA_REQUEST: f64 = 0.20e-6;
    /// CloudWatch Logs, standard class, per GB ingested. <https://aws.amazon.com/cloudwatch/pricing/>
    pub const LOGS_INGESTED_GB: f64 = 0.50;
    /// EventBridge Scheduler, per invocation past the free tier. <https://aws.amazon.com/eventbridge/pricing/>
    pub const SCHEDULER_INVOCATION: f64 = 1.00e-6;
    /// EventBridge Scheduler's free invocations each month. <https://aws.amazon.com/eventbridge/pricing/>
    pub const SCHEDULER_FREE_PER_MONTH: f64 = 14e6;
}

/// Memory of both functions as the stacks deploy them (template.yaml `MemorySize`, `PollerMemory`).
pub const FUNCTION_MEMORY_MB: f64 = 256.0;
/// SQS bills a request per 64 KB chunk of its payload.
const SQS_CHUNK_BYTES: usize = 64 * 1024;

/// Per stored job, what the user pays for.
#[derive(Debug, Clone, Serialize)]
pub struct JobCost {
    pub body_bytes: usize,
    /// The stored job's item, and (history on) its record, as the codec makes them.
    pub item_bytes: usize,
    pub record_bytes: usize,
    pub table_write_units: f64,
    pub index_write_units: f64,
    pub read_units: f64,
    /// Of `read_units`: the pause checks (a strongly consistent read of the queue's pause
    /// item, under 4 KB: 1 unit each), counted at the proxy (`GetItem/pause`).
    pub pause_check_read_units: f64,
    /// Pause checks per poller run.
    pub pause_checks_per_run: f64,
    pub sqs_requests: f64,
    pub lambda_requests: f64,
    /// The invocations' time on this machine at the stacks' memory: Lambda bills duration.
    pub lambda_gb_seconds: f64,
    pub log_bytes: f64,
    pub on_demand_per_million: f64,
    /// Tables at `PROVISIONED_UTILISATION`; the rest as on demand.
    pub provisioned_per_million: f64,
}

pub(crate) fn write_units(bytes: usize) -> f64 {
    bytes.div_ceil(1024).max(1) as f64
}

pub(crate) fn strong_read_units(bytes: usize) -> f64 {
    bytes.div_ceil(4096).max(1) as f64
}

/// A job as the API bench enqueues it, with a body of `body_bytes`.
pub fn bench_job(body_bytes: usize) -> StoredJob {
    let queue = QueueName::parse("orders").expect("queue name");
    let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).expect("instant");
    StoredJob {
        paused_at: None,
        partition: Partition::Shard(0),
        job: Job {
            on_duplicate: Default::default(),
            queue,
            job_id: "j999".into(),
            job_id_given: true,
            message_body: super::json_body(999, body_bytes),
            message_attributes: Default::default(),
            perform_at: at,
            expires_at: None,
            message_group_id: None,
            message_deduplication_id: None,
            windows: None,
            priority: sqs_waiter_client::DEFAULT_PRIORITY,
            weight: sqs_waiter_client::DEFAULT_WEIGHT,
            attempt: 1,
            names_itself: false,
            trace_header: None,
            repeat: None,
            occurrence: None,
            tags: Default::default(),
        },
        enqueued_at: at,
        parked: None,
        version: 1,
        maybe_delivered_at: None,
    }
}

/// The size of `job`'s entry in the stacks' due index: what it projects of the item.
pub fn index_entry_bytes(job: &StoredJob) -> usize {
    let mut entry = encode(job);
    entry.retain(|name, _| ATTRIBUTES_OF_KEYS.contains(&name.as_str()));
    item_size(&entry)
}

/// The put and the delete of `job`'s item, table and index, in write units by the rules above.
pub fn modelled_put_delete_units(job: &StoredJob) -> f64 {
    2.0 * write_units(item_size(&encode(job))) + 2.0 * write_units(index_entry_bytes(job))
}

/// Units, requests and dollars per job of one API bench run.
pub fn job_cost(e: &ApiEfficiency) -> JobCost {
    use prices::*;
    let n = e.jobs.max(1) as f64;
    let job = bench_job(e.body_bytes);
    let item_bytes = item_size(&encode(&job));
    let record_bytes = match e.history_days {
        0 => 0,
        _ => {
            let at = job.job.perform_at;
            let message_id = Some("2f1e5a0c-8d6b-4b7e-9c3a-1d2e3f4a5b6c".to_owned());
            let record = History::of(
                &job,
                HistoryStatus::Dispatched,
                at,
                message_id,
                chrono::TimeDelta::days(7),
            );
            item_size(&encode_history(&record.keeping_message(&job.job, false)))
        }
    };
    let calls = |op: &str| e.calls.get(op).copied().unwrap_or(0) as f64;
    let statements = calls("BatchExecuteStatement/statements");
    let in_transactions = calls("TransactWriteItems/items");
    let lone = (n - statements - in_transactions).max(0.0);
    let removal = write_units(item_bytes.max(record_bytes));
    let table_write_units =
        write_units(item_bytes) + ((statements + lone) * removal + in_transactions * 2.0 * removal) / n;
    // The index entry, put and removed.
    let index_bytes = index_entry_bytes(&job);
    let index_write_units = 2.0 * write_units(index_bytes);
    // The consistent re-read, and the index pages read eventually consistently.
    let pause_check_read_units = calls("GetItem/pause") / n;
    let read_units = strong_read_units(item_bytes) + 0.5 * index_bytes as f64 / 4096.0 + pause_check_read_units;
    let batches = calls("SendMessageBatch").max(1.0);
    let per_batch = (e.body_bytes as f64 * n / batches).ceil() as usize;
    let sqs_requests = batches * per_batch.div_ceil(SQS_CHUNK_BYTES).max(1) as f64 / n;
    let lambda_requests = (e.enqueue_invocations + e.poller_runs) as f64 / n;
    let lambda_gb_seconds = (e.enqueue_ms + e.poller_ms) / 1000.0 * FUNCTION_MEMORY_MB / 1024.0 / n;
    let log_bytes = e.log_bytes_per_job;
    let others = sqs_requests * SQS_REQUEST
        + lambda_requests * LAMBDA_REQUEST
        + lambda_gb_seconds * LAMBDA_ARM64_GB_SECOND
        + log_bytes / 1e9 * LOGS_INGESTED_GB;
    let writes = table_write_units + index_write_units;
    let on_demand = writes * DDB_WRITE_REQUEST_UNIT + read_units * DDB_READ_REQUEST_UNIT + others;
    let provisioned = (writes * DDB_WCU_HOUR + read_units * DDB_RCU_HOUR) / 3600.0 / PROVISIONED_UTILISATION + others;
    JobCost {
        body_bytes: e.body_bytes,
        item_bytes,
        record_bytes,
        table_write_units,
        index_write_units,
        read_units,
        pause_check_read_units,
        pause_checks_per_run: calls("GetItem/pause") / e.poller_runs.max(1) as f64,
        sqs_requests,
        lambda_requests,
        lambda_gb_seconds,
        log_bytes,
        on_demand_per_million: on_demand * 1e6,
        provisioned_per_million: provisioned * 1e6,
    }
}

/// EventBridge Scheduler for `jobs` a month, all in: its invocations past the free tier and the
/// SQS request each one makes.
pub fn scheduler_per_month(jobs: f64) -> f64 {
    use prices::*;
    (jobs - SCHEDULER_FREE_PER_MONTH).max(0.0) * SCHEDULER_INVOCATION + jobs * SQS_REQUEST
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_units_round_up_per_kilobyte_and_reads_per_four() {
        assert_eq!(write_units(1), 1.0);
        assert_eq!(write_units(1024), 1.0);
        assert_eq!(write_units(1025), 2.0);
        assert_eq!(strong_read_units(4096), 1.0);
        assert_eq!(strong_read_units(4097), 2.0);
    }

    #[test]
    fn the_index_entry_bills_one_unit_whatever_the_body() {
        for body in [13, 900, 4000, 64 * 1024] {
            let job = bench_job(body);
            assert!(index_entry_bytes(&job) < 200, "{body}: {}", index_entry_bytes(&job));
            let table = write_units(item_size(&encode(&job)));
            assert_eq!(modelled_put_delete_units(&job), 2.0 * table + 2.0, "{body}");
        }
    }

    #[test]
    fn scheduler_is_free_up_to_fourteen_million_but_for_the_sqs_call() {
        assert!((scheduler_per_month(1e6) - 0.40).abs() < 1e-9);
        assert!((scheduler_per_month(20e6) - (6.0 + 8.0)).abs() < 1e-9);
    }
}
