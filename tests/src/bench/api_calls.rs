//! AWS calls per operation, and enqueue throughput.

use std::sync::Arc;
use std::time::Instant;

use chrono::{TimeDelta, Utc};
use serde::Serialize;
use serde_json::{json, Value};

use waiter::poller::REMOVALS_PER_CALL;

use crate::runtime_api::{binary_path, Profile};
use crate::{Emulator, Function};

use super::*;

#[derive(Debug, Clone, Serialize)]
pub struct ApiEfficiency {
    pub jobs: usize,
    /// `WAITER_HISTORY_DAYS` of the run (0: history off).
    pub history_days: u32,
    pub calls: std::collections::BTreeMap<String, usize>,
    /// 1 PutItem per job, 1 SendMessageBatch per 10, 1 BatchExecuteStatement of conditional
    /// removals per `REMOVALS_PER_CALL` jobs (deletes, or with history the updates into their
    /// records), 1 BatchGetItem per 100, plus the Query pages.
    pub floor: usize,
    /// PutItem + SendMessageBatch + DeleteItem + TransactWriteItems + BatchExecuteStatement +
    /// BatchGetItem + Query, the
    /// calls the floor counts (the DeleteItems are lone removals; the PutItems include a lone
    /// removal's record).
    pub data_calls: usize,
    pub ratio_to_floor: f64,
    /// Lease takes and releases (UpdateItem): per partition per run, not per job.
    pub lease_calls: usize,
    pub poller_runs: usize,
    /// On-demand cost per million jobs, USD.
    pub cost_per_million: std::collections::BTreeMap<String, f64>,
    /// What both functions printed (JSON logs and EMF lines, at the deployed default `info`),
    /// per job: CloudWatch Logs bills these bytes.
    pub log_bytes_per_job: f64,
    /// The functions' log lines that name one of the run's jobs, at `info`: none expected.
    pub job_lines_at_info: usize,
    /// Each job's body, in bytes.
    pub body_bytes: usize,
    pub enqueue_invocations: usize,
    /// The invocations' time, enqueue and poller, on this machine.
    pub enqueue_ms: f64,
    pub poller_ms: f64,
    /// The put and delete of one job's item, table and index, as DynamoDB reported them, and
    /// as `cost` models them: the check of the unit model.
    pub measured_put_delete_units: f64,
    pub modelled_put_delete_units: f64,
}

/// Counts every AWS call per operation (through the proxy, faults off) for `jobs` long-delay
/// jobs, end to end: enqueue in batches of 100, then poller runs until the table is empty. The
/// table is where PartiQL runs (`Rig::for_partiql`: DynamoDB Local on moto), so the removals
/// are measured as AWS runs them.
pub async fn api_efficiency(
    jobs: usize,
    shards: u32,
    history_days: u32,
    body_bytes: usize,
    profile: Profile,
) -> ApiEfficiency {
    let shards_s = shards.to_string();
    let history_s = history_days.to_string();
    let rig = crate::rig::Rig::builder(&["orders"])
        .proxy(0, 0.0)
        .for_partiql()
        .settings(&[
            ("WAITER_DIRECT_MAX_DELAY", "0"),
            ("WAITER_LOOKAHEAD", "0"),
            ("WAITER_SHARDS", &shards_s),
            ("WAITER_HISTORY_DAYS", &history_s),
            // As deployed: the stacks' default level, JSON logs.
            ("RUST_LOG", "info"),
            ("AWS_LAMBDA_LOG_FORMAT", "JSON"),
        ])
        .start()
        .await;
    let (emu, env, url) = (&rig.emu, &rig.env, rig.urls[0].clone());
    let proxies = proxies_of(&rig);
    let mut enqueue = Function::start_binary(binary_path("enqueue", profile), "enqueue", env).await;
    let mut poller = Function::start_binary(binary_path("poller", profile), "poller", env).await;
    // Far enough out that every job is stored however long the enqueueing takes.
    let due_at = Utc::now() + TimeDelta::seconds(15);
    let due = rfc3339(due_at);
    let (mut enqueue_invocations, mut enqueue_ms, mut poller_ms) = (0, 0.0, 0.0);
    for chunk in 0..jobs.div_ceil(100) {
        let batch: Vec<Value> = (chunk * 100..((chunk + 1) * 100).min(jobs))
            .map(|i| json!({"queue": "orders", "job_id": format!("j{i}"), "message_body": super::json_body(i, body_bytes), "perform_at": due}))
            .collect();
        let t0 = Instant::now();
        enqueue.invoke(&json!({"jobs": batch})).await.expect("enqueue");
        enqueue_ms += t0.elapsed().as_secs_f64() * 1000.0;
        enqueue_invocations += 1;
    }
    if let Ok(wait) = (due_at - Utc::now() + TimeDelta::seconds(1)).to_std() {
        tokio::time::sleep(wait).await;
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let arrivals: Arrivals = Arc::default();
    let consumer = spawn_consumer(emu.sqs.clone(), url, arrivals.clone(), stop.clone());
    let mut poller_runs = 0;
    loop {
        let t0 = Instant::now();
        let s = poller.invoke(&json!({})).await.expect("poller");
        poller_ms += t0.elapsed().as_secs_f64() * 1000.0;
        poller_runs += 1;
        if s["drained"] == true || poller_runs >= 20 {
            break;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = consumer.await;
    let logs = enqueue.log() + &poller.log();
    let job_lines_at_info = logs
        .lines()
        .filter(|l| (0..jobs).any(|i| l.contains(&format!("\"j{i}\""))))
        .count();
    let ops = [
        "PutItem",
        "SendMessageBatch",
        "Query",
        "UpdateItem",
        "DeleteItem",
        "TransactWriteItems",
        "TransactWriteItems/items",
        "BatchExecuteStatement",
        "BatchExecuteStatement/statements",
        "GetQueueUrl",
        "BatchGetItem",
        "GetItem",
        "GetItem/pause",
        "SendMessage",
    ];
    let calls: std::collections::BTreeMap<String, usize> = ops
        .iter()
        .map(|o| (o.to_string(), proxies.iter().map(|p| p.calls(o)).sum()))
        .collect();
    let query_pages = calls["Query"];
    // The consistent re-read reads at most 100 keys a call, per partition.
    let floor = jobs + jobs.div_ceil(10) + jobs.div_ceil(REMOVALS_PER_CALL) + jobs.div_ceil(100) + query_pages;
    let data_calls = calls["PutItem"]
        + calls["SendMessageBatch"]
        + calls["DeleteItem"]
        + calls["TransactWriteItems"]
        + calls["BatchExecuteStatement"]
        + calls["BatchGetItem"]
        + query_pages;
    // Public on-demand prices: DynamoDB $0.625 per million write request units (an item of up to
    // 1 KB; the GSI costs the same again on put and on delete, a transaction's write costs
    // the table two and a PartiQL statement one), SQS $0.40 per million requests (a batch of
    // 10 small messages is one), Lambda $0.20 per million requests.
    let per_job = |n: usize| n as f64 / jobs as f64;
    let write_units = (calls["PutItem"] + calls["DeleteItem"]) * 2
        + calls["TransactWriteItems/items"] * 3
        + calls["BatchExecuteStatement/statements"] * 2;
    let dynamodb_writes = per_job(write_units) * 0.625;
    // The consistent re-read: 1 read request unit per job (items under 4 KB) at $0.125 per
    // million; the index Query reads are eventually consistent and a fraction of that.
    let dynamodb_reads = per_job(jobs) * 0.125;
    let sqs = per_job(calls["SendMessageBatch"]) * 0.40;
    let lambda_batched = 0.01 * 0.20;
    let mut cost = std::collections::BTreeMap::new();
    cost.insert("dynamodb_writes_incl_gsi".into(), dynamodb_writes);
    cost.insert("dynamodb_consistent_reads".into(), dynamodb_reads);
    cost.insert("sqs_send".into(), sqs);
    cost.insert("lambda_enqueue_requests_batched_100".into(), lambda_batched);
    cost.insert("lambda_enqueue_requests_one_per_job".into(), 0.20);
    cost.insert(
        "total_batched".into(),
        dynamodb_writes + dynamodb_reads + sqs + lambda_batched,
    );
    cost.insert("eventbridge_scheduler_reference".into(), 1.00);
    let job = super::bench_job(body_bytes);
    let measured_put_delete_units =
        super::put_delete_units(&rig.table_client().await, "orders", &waiter::aws::codec::encode(&job)).await;
    ApiEfficiency {
        jobs,
        history_days,
        body_bytes,
        enqueue_invocations,
        enqueue_ms,
        poller_ms,
        measured_put_delete_units,
        modelled_put_delete_units: super::modelled_put_delete_units(&job),
        lease_calls: calls["UpdateItem"],
        calls,
        floor,
        data_calls,
        ratio_to_floor: data_calls as f64 / floor as f64,
        poller_runs,
        cost_per_million: cost,
        log_bytes_per_job: logs.len() as f64 / jobs as f64,
        job_lines_at_info,
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct EnqueueThroughput {
    pub jobs: usize,
    pub batch: usize,
    pub seconds: f64,
    pub jobs_per_s: f64,
}

/// Jobs per second through the release `enqueue` with batches of 100, stored path, on moto.
pub async fn enqueue_throughput(jobs: usize, profile: Profile) -> EnqueueThroughput {
    let emu = Emulator::start().await;
    emu.create_queue("orders").await;
    emu.create_table("orders").await;
    let env = emu.function_env(&[
        ("WAITER_QUEUES", "orders"),
        ("WAITER_DIRECT_MAX_DELAY", "0"),
        ("RUST_LOG", "warn"),
    ]);
    let mut enqueue = Function::start_binary(binary_path("enqueue", profile), "enqueue", &env).await;
    let t = Instant::now();
    for chunk in 0..jobs.div_ceil(100) {
        let batch: Vec<Value> = (chunk * 100..((chunk + 1) * 100).min(jobs))
            .map(|i| json!({"queue": "orders", "job_id": format!("t{i}"), "message_body": format!("{{\"order\":{i}}}"), "delay_seconds": 3600}))
            .collect();
        enqueue.invoke(&json!({"jobs": batch})).await.expect("enqueue");
    }
    let seconds = t.elapsed().as_secs_f64();
    EnqueueThroughput {
        jobs,
        batch: 100,
        seconds,
        jobs_per_s: jobs as f64 / seconds,
    }
}
