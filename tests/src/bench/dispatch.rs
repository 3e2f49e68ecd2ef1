//! Dispatch throughput of one poller run against the minimal baseline, and the helpers the
//! throughput bench shares with it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{TimeDelta, Utc};
use serde::Serialize;
use serde_json::json;

use crate::runtime_api::{binary_path, Profile};
use crate::{Emulator, Function};

use super::*;
use crate::dynamo_local::DynamoLocal;

#[derive(Debug, Clone, Serialize)]
pub struct DispatchThroughput {
    pub backend: String,
    pub jobs: usize,
    pub shards: u32,
    pub runs: usize,
    pub poller_s: f64,
    pub poller_jobs_per_s: f64,
    pub baseline_s: f64,
    pub baseline_jobs_per_s: f64,
    /// Median of the per-run poller/baseline ratios (the timings above are medians too).
    pub ratio: f64,
    pub run_ratios: Vec<f64>,
}

/// One BatchWriteItem request list, retried until nothing is left unprocessed.
pub(crate) async fn write_all(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    requests: Vec<aws_sdk_dynamodb::types::WriteRequest>,
) {
    let mut pending = requests;
    while !pending.is_empty() {
        let out = ddb
            .batch_write_item()
            .request_items(table, pending)
            .send()
            .await
            .expect("BatchWriteItem");
        pending = out
            .unprocessed_items
            .unwrap_or_default()
            .remove(table)
            .unwrap_or_default();
    }
}

/// Writes `jobs` items due a second ago straight into the table with the waiter's own codec.
pub(crate) async fn load_due_items(ddb: &aws_sdk_dynamodb::Client, table: &str, jobs: usize, shards: u32) {
    load_items_due_at(ddb, table, jobs, shards, Utc::now() - TimeDelta::seconds(1)).await;
}

/// Writes `jobs` items due at `due` straight into the table with the waiter's own codec.
pub(crate) async fn load_items_due_at(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    jobs: usize,
    shards: u32,
    due: chrono::DateTime<Utc>,
) {
    load_ranked_items(ddb, table, jobs, shards, |_| (due, sqs_waiter_client::DEFAULT_PRIORITY)).await;
}

/// `load_items_due_at` with job `i` due at and of the priority `each(i)` says.
pub(crate) async fn load_ranked_items(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    jobs: usize,
    shards: u32,
    each: impl Fn(usize) -> (chrono::DateTime<Utc>, u16),
) {
    use aws_sdk_dynamodb::types::{PutRequest, WriteRequest};
    use futures::StreamExt;
    let queue = waiter::QueueName::parse(table).expect("queue name");
    let items: Vec<WriteRequest> = (0..jobs)
        .map(|i| {
            let id = format!("t{i}");
            let (due, priority) = each(i);
            let job = waiter::ports::StoredJob {
                paused_at: None,
                partition: waiter::ports::Partition::Shard(waiter::routing::shard_for(&id, shards)),
                job: waiter::job::Job {
                    on_duplicate: Default::default(),
                    queue: queue.clone(),
                    job_id: id.clone(),
                    job_id_given: true,
                    message_body: format!("{{\"order\":{i}}}"),
                    message_attributes: Default::default(),
                    perform_at: due,
                    expires_at: None,
                    message_group_id: None,
                    message_deduplication_id: None,
                    windows: None,
                    priority,
                    weight: sqs_waiter_client::DEFAULT_WEIGHT,
                    attempt: 1,
                    names_itself: false,
                    trace_header: None,
                    repeat: None,
                    occurrence: None,
                    tags: Default::default(),
                },
                enqueued_at: due,
                parked: None,
                version: 1,
                maybe_delivered_at: None,
            };
            let put = PutRequest::builder()
                .set_item(Some(waiter::aws::codec::encode(&job)))
                .build()
                .expect("put");
            WriteRequest::builder().put_request(put).build()
        })
        .collect();
    let chunks: Vec<Vec<WriteRequest>> = items.chunks(25).map(<[WriteRequest]>::to_vec).collect();
    futures::stream::iter(chunks)
        .for_each_concurrent(8, |chunk| async move {
            write_all(ddb, table, chunk).await;
        })
        .await;
}

/// A table item as the SDK returns it.
pub(crate) type Item = HashMap<String, aws_sdk_dynamodb::types::AttributeValue>;

/// A shard's due jobs on the index, oldest first: the baselines' one query.
pub(crate) fn due_pages(
    ddb: &aws_sdk_dynamodb::Client,
    table: &str,
    shard: u32,
) -> aws_sdk_dynamodb::operation::query::paginator::QueryPaginator {
    use aws_sdk_dynamodb::types::AttributeValue;
    ddb.query()
        .table_name(table)
        .index_name(waiter::aws::codec::INDEX_NAME)
        .key_condition_expression("scheduler = :s AND perform_at <= :h")
        .expression_attribute_values(":s", AttributeValue::S(format!("{table}#{shard}")))
        .expression_attribute_values(":h", AttributeValue::N(Utc::now().timestamp().to_string()))
        .into_paginator()
}

/// Sends up to 10 items' bodies in one SendMessageBatch, with no delay.
pub(crate) async fn send_items(sqs: &aws_sdk_sqs::Client, url: &str, items: &[Item]) {
    use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
    let entries = items.iter().enumerate().map(|(i, item)| {
        // As given or deflated (`message_body_deflate`): the codec reads either.
        let body = waiter::aws::codec::body_of(item).ok().flatten().unwrap_or_default();
        SendMessageBatchRequestEntry::builder()
            .id(i.to_string())
            .message_body(body)
            .delay_seconds(0)
            .build()
            .expect("entry")
    });
    sqs.send_message_batch()
        .queue_url(url)
        .set_entries(Some(entries.collect()))
        .send()
        .await
        .expect("SendMessageBatch");
}

/// An item's primary key (`scheduler`, `job_id`).
pub(crate) fn item_key(item: &Item) -> Item {
    ["scheduler", "job_id"]
        .into_iter()
        .filter_map(|k| Some((k.to_owned(), item.get(k)?.clone())))
        .collect()
}

/// Removes sent items as the guarantee needs and no more: one `BatchExecuteStatement` of
/// conditional deletes (each on the item's own `perform_at` as read, standing in for the
/// poller's edition condition at the same cost), items whose condition fails left alone.
pub(crate) async fn remove_sent(ddb: &aws_sdk_dynamodb::Client, table: &str, items: Vec<Item>) {
    use aws_sdk_dynamodb::types::BatchStatementRequest;
    if items.is_empty() {
        return;
    }
    let statements = items
        .iter()
        .map(|item| {
            let key = item_key(item);
            BatchStatementRequest::builder()
                .statement(format!(
                    r#"DELETE FROM "{table}" WHERE "scheduler" = ? AND "job_id" = ? AND "perform_at" = ?"#
                ))
                .set_parameters(Some(vec![
                    key["scheduler"].clone(),
                    key["job_id"].clone(),
                    item["perform_at"].clone(),
                ]))
                .build()
                .expect("statement")
        })
        .collect();
    ddb.batch_execute_statement()
        .set_statements(Some(statements))
        .send()
        .await
        .expect("BatchExecuteStatement");
}

/// The floor a dispatcher can reach: per shard, Query pages, SendMessageBatch of 10 and a
/// `BatchExecuteStatement` of 25 conditional deletes (`remove_sent`), nothing else, with all
/// shards at once.
pub(crate) async fn baseline_dispatch(
    ddb: &aws_sdk_dynamodb::Client,
    sqs: &aws_sdk_sqs::Client,
    table: &str,
    url: &str,
    shards: u32,
) -> usize {
    let per_shard = (0..shards).map(|shard| async move {
        let mut sent = 0;
        let mut pages = due_pages(ddb, table, shard).send();
        let mut deletes = Vec::new();
        while let Some(page) = pages.next().await {
            let items = page.expect("Query").items.unwrap_or_default();
            for chunk in items.chunks(10) {
                send_items(sqs, url, chunk).await;
                sent += chunk.len();
                deletes.extend(chunk.iter().cloned());
                while deletes.len() >= 25 {
                    remove_sent(ddb, table, deletes.drain(..25).collect()).await;
                }
            }
        }
        remove_sent(ddb, table, deletes).await;
        sent
    });
    futures::future::join_all(per_shard).await.into_iter().sum()
}

const DRAIN_WORKERS_PER_SHARD: u32 = 2;

/// Dispatch throughput of one poller invocation versus the minimal baseline, in one run against
/// the same emulators: DynamoDB Local for the table, moto for SQS with consumers draining it.
pub async fn dispatch_throughput(jobs: usize, shards: u32, runs: usize, profile: Profile) -> DispatchThroughput {
    let emu = Emulator::start().await;
    let ddb_local = DynamoLocal::start().await;
    let ddb = aws_sdk_dynamodb::Client::new(&crate::emulator::sdk_config(&ddb_local.endpoint).await);
    let table = "orders";
    let url = emu.create_queue(table).await;
    // The baseline's one query reads whole items from the index, as the seed's did: its table
    // projects all (the poller reads the keys either way).
    crate::emulator::create_waiter_table(&ddb, table, crate::emulator::IndexKind::GlobalAll).await;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let arrivals: Arrivals = Arc::default();
    // moto's receive and delete scan the whole queue, so a consumer that falls behind slows every
    // later call: drain with several loops so the queue stays short for both sides.
    let consumers: Vec<_> = (0..DRAIN_WORKERS_PER_SHARD * shards)
        .map(|_| spawn_consumer(emu.sqs.clone(), url.clone(), arrivals.clone(), stop.clone()))
        .collect();

    let shards_s = shards.to_string();
    let mut env = emu.function_env(&[
        ("WAITER_QUEUES", table),
        ("WAITER_SHARDS", &shards_s),
        ("WAITER_CONCURRENCY", &shards_s),
        ("WAITER_LOOKAHEAD", "0"),
        ("RUST_LOG", "warn"),
    ]);
    env.push(("AWS_ENDPOINT_URL_DYNAMODB".into(), ddb_local.endpoint.clone()));
    let mut poller = Function::start_binary(binary_path("poller", profile), "poller", &env).await;
    // Warm the process (cold start is measured separately) on an empty table.
    poller.invoke(&json!({})).await.expect("warm-up run");

    // Alternate the two sides, each starting on a drained queue (moto's SQS slows as its queue
    // fills), and take medians: the machine is shared, so single timings are noisy.
    let mut delivered = 0;
    let (mut poller_s, mut baseline_s, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        load_due_items(&ddb, table, jobs, shards).await;
        let t = Instant::now();
        let summary = poller
            .invoke_raw(b"{}".to_vec(), Duration::from_secs(900))
            .await
            .expect("poller run");
        let poller_run_s = t.elapsed().as_secs_f64();
        assert_eq!(summary["dispatched"].as_u64(), Some(jobs as u64), "{summary}");
        delivered += jobs;
        wait_delivered(&arrivals, delivered).await;

        load_due_items(&ddb, table, jobs, shards).await;
        let t = Instant::now();
        let sent = baseline_dispatch(&ddb, &emu.sqs, table, &url, shards).await;
        let baseline_run_s = t.elapsed().as_secs_f64();
        assert_eq!(sent, jobs);
        delivered += jobs;
        wait_delivered(&arrivals, delivered).await;

        poller_s.push(poller_run_s);
        baseline_s.push(baseline_run_s);
        ratios.push(baseline_run_s / poller_run_s);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    futures::future::join_all(consumers).await;

    let (poller_s, baseline_s) = (median(poller_s), median(baseline_s));
    DispatchThroughput {
        backend: format!(
            "DynamoDB Local (table) + {} (SQS, {} consumer loops draining)",
            emu.backend.name(),
            DRAIN_WORKERS_PER_SHARD * shards
        ),
        jobs,
        shards,
        runs,
        poller_s,
        poller_jobs_per_s: jobs as f64 / poller_s,
        baseline_s,
        baseline_jobs_per_s: jobs as f64 / baseline_s,
        ratio: median(ratios.clone()),
        run_ratios: ratios,
    }
}

/// Waits until the consumers have received `expected` messages in all; panics if they never do.
async fn wait_delivered(arrivals: &Arrivals, expected: usize) {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let got = arrivals.lock().expect("lock").len();
        if got >= expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "consumers received {got} of {expected} messages"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
