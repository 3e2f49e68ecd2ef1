//! The dispatch throughput bench against a backend that is not the bottleneck (issue 15):
//! - the table on Amazon DynamoDB Local (strict, and fast on queries);
//! - SQS as [`SqsSink`]: `SendMessageBatch` answered at once, every entry accepted and counted;
//! - a fault proxy in front of each, faults off, adding an AWS-like per-call latency.
//!
//! The poller (one invocation, all shards) and the minimal baseline client run against the same
//! backend, each on a freshly loaded overdue backlog. The ideal is the latency-bound rate of the
//! calls a job needs (one `SendMessageBatch` per 10, one `BatchWriteItem` per 25) made one after
//! another within a shard, all shards at once.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::bench::{baseline_dispatch, load_due_items, peak_rss_mib, DynamoLocal};
use crate::emulator::function_env_at;
use crate::proxy::FaultProxy;
use crate::runtime_api::{binary_path, Profile};
use crate::sqs_sink::SqsSink;
use crate::{Env, Function};

/// One row of `target/bench/throughput.json`.
#[derive(Debug, Clone, Serialize)]
pub struct ThroughputRow {
    pub shards: u32,
    pub latency_ms: u64,
    pub jobs: usize,
    pub jobs_per_s: f64,
    pub ideal_jobs_per_s: f64,
    pub baseline_jobs_per_s: f64,
    /// The poller process's user + system time per 1000 jobs dispatched.
    pub cpu_ms_per_1000: f64,
    /// The poller process's peak resident set.
    pub rss_mb: f64,
    /// The poller run's AWS calls per 1000 jobs, by operation (counted at the proxies).
    pub poller_calls_per_1000: std::collections::BTreeMap<String, f64>,
}

/// Sequential calls per job within a shard: a tenth of a `SendMessageBatch` and a 25th of a
/// `BatchWriteItem` (the query pages hold thousands of items and are left out).
pub const CALLS_PER_JOB: f64 = 1.0 / 10.0 + 1.0 / 25.0;

pub fn ideal_jobs_per_s(shards: u32, latency_ms: u64) -> f64 {
    f64::from(shards) / (CALLS_PER_JOB * latency_ms.max(1) as f64 / 1e3)
}

/// The poller's user + system CPU time so far, in ms (from /proc; clock ticks of 10 ms).
fn cpu_ms(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(f64::NAN);
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after the name and state.
    (ticks(11) + ticks(12)) * 10.0
}

/// Calls so far through both proxies, by operation.
fn calls(ddb: &FaultProxy, sqs: &FaultProxy) -> std::collections::BTreeMap<String, usize> {
    ddb.all_calls().into_iter().chain(sqs.all_calls()).collect()
}

/// The poller's environment: DynamoDB at `ddb`, SQS (everything else) at `sqs`.
fn env(ddb: &str, sqs: &str, shards: u32) -> Env {
    let shards = shards.to_string();
    let mut env = function_env_at(
        sqs,
        &[
            ("RUST_LOG", "warn"),
            ("WAITER_QUEUES", "orders"),
            ("WAITER_SHARDS", shards.as_str()),
            ("WAITER_CONCURRENCY", shards.as_str()),
            ("WAITER_LOOKAHEAD", "0"),
        ],
    );
    env.push(("AWS_ENDPOINT_URL_DYNAMODB".into(), ddb.into()));
    env
}

/// One row: `jobs` overdue jobs over `shards`, `latency_ms` per call, poller and baseline.
pub async fn latency_bound_throughput(jobs: usize, shards: u32, latency_ms: u64, profile: Profile) -> ThroughputRow {
    let ddb_local = DynamoLocal::start().await;
    let sink = SqsSink::start().await;
    let latency = Duration::from_millis(latency_ms);
    let ddb_proxy = FaultProxy::start(&ddb_local.endpoint, 1, 0.0).await;
    ddb_proxy.set_latency(latency);
    let sqs_proxy = FaultProxy::start(&sink.endpoint, 2, 0.0).await;
    sqs_proxy.set_latency(latency);

    let table = "orders";
    let direct = aws_sdk_dynamodb::Client::new(&crate::emulator::sdk_config(&ddb_local.endpoint).await);
    crate::emulator::create_waiter_table(&direct, table, crate::emulator::IndexKind::Global).await;
    let mut poller = Function::start_binary(
        binary_path("poller", profile),
        "poller",
        &env(&ddb_proxy.endpoint, &sqs_proxy.endpoint, shards),
    )
    .await;
    poller.invoke(&serde_json::json!({})).await.expect("warm-up run");

    load_due_items(&direct, table, jobs, shards).await;
    let calls_before = calls(&ddb_proxy, &sqs_proxy);
    let sent_before = sink.messages();
    let cpu_before = cpu_ms(poller.pid());
    let t = Instant::now();
    let summary = poller
        .invoke_raw(b"{}".to_vec(), Duration::from_secs(900))
        .await
        .expect("poller run");
    let poller_s = t.elapsed().as_secs_f64();
    let cpu = cpu_ms(poller.pid()) - cpu_before;
    let rss_mb = peak_rss_mib(poller.pid());
    let poller_calls_per_1000 = calls(&ddb_proxy, &sqs_proxy)
        .into_iter()
        .map(|(op, n)| {
            let delta = n - calls_before.get(&op).copied().unwrap_or(0);
            (op, delta as f64 * 1000.0 / jobs as f64)
        })
        .filter(|(_, n)| *n > 0.0)
        .collect();
    assert_eq!(summary["dispatched"].as_u64(), Some(jobs as u64), "{summary}");
    assert_eq!(sink.messages() - sent_before, jobs as u64, "SQS got every job once");

    load_due_items(&direct, table, jobs, shards).await;
    let ddb = aws_sdk_dynamodb::Client::new(&crate::emulator::sdk_config(&ddb_proxy.endpoint).await);
    let sqs = aws_sdk_sqs::Client::new(&crate::emulator::sdk_config(&sqs_proxy.endpoint).await);
    let url = sqs
        .get_queue_url()
        .queue_name(table)
        .send()
        .await
        .expect("GetQueueUrl")
        .queue_url
        .unwrap_or_default();
    let t = Instant::now();
    let sent = baseline_dispatch(&ddb, &sqs, table, &url, shards).await;
    let baseline_s = t.elapsed().as_secs_f64();
    assert_eq!(sent, jobs);

    ThroughputRow {
        shards,
        latency_ms,
        jobs,
        jobs_per_s: jobs as f64 / poller_s,
        ideal_jobs_per_s: ideal_jobs_per_s(shards, latency_ms),
        baseline_jobs_per_s: jobs as f64 / baseline_s,
        cpu_ms_per_1000: cpu / jobs as f64 * 1000.0,
        rss_mb,
        poller_calls_per_1000,
    }
}

/// The rows as a table, with each side's share of the ideal.
pub fn table(rows: &[ThroughputRow]) -> String {
    let mut out = String::from(
        "| shards | latency | jobs | poller jobs/s | baseline jobs/s | ideal jobs/s | poller / ideal | CPU ms per 1000 | peak RSS MB |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {} ms | {} | {:.0} | {:.0} | {:.0} | {:.2} | {:.0} | {:.1} |\n",
            r.shards,
            r.latency_ms,
            r.jobs,
            r.jobs_per_s,
            r.baseline_jobs_per_s,
            r.ideal_jobs_per_s,
            r.jobs_per_s / r.ideal_jobs_per_s,
            r.cpu_ms_per_1000,
            r.rss_mb
        ));
    }
    out
}

/// Jobs per second against shards, for the poller, the baseline and the ideal (SVG).
pub fn chart(rows: &[ThroughputRow], path: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    use plotters::prelude::*;
    let x_max = rows.iter().map(|r| r.shards).max().unwrap_or(1) as f64 + 1.0;
    let y_max = rows.iter().map(|r| r.ideal_jobs_per_s).fold(100.0_f64, f64::max) * 1.1;
    let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let latency = rows.first().map_or(0, |r| r.latency_ms);
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("sqs-waiter dispatch throughput, {latency} ms per call (DynamoDB Local + minimal SQS)"),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
    chart
        .configure_mesh()
        .x_desc("shards")
        .y_desc("jobs per second")
        .draw()?;
    type Figure = fn(&ThroughputRow) -> f64;
    let series: [(&str, Figure, RGBColor); 3] = [
        ("poller", |r| r.jobs_per_s, RED),
        ("baseline client", |r| r.baseline_jobs_per_s, BLUE),
        ("latency-bound ideal", |r| r.ideal_jobs_per_s, GREEN),
    ];
    for (name, value, color) in series {
        let points: Vec<(f64, f64)> = rows.iter().map(|r| (f64::from(r.shards), value(r))).collect();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart.draw_series(points.into_iter().map(|p| Circle::new(p, 4, color.filled())))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ideal_is_latency_bound_per_shard() {
        // 15 ms a call, 0.14 calls a job: about 476 jobs/s per shard.
        assert!((ideal_jobs_per_s(1, 15) - 476.19).abs() < 0.01);
        assert!((ideal_jobs_per_s(16, 15) / ideal_jobs_per_s(1, 15) - 16.0).abs() < 1e-9);
    }
}
