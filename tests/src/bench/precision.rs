//! Lateness of stored, direct and FIFO jobs end to end, and its chart.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};
use rand::{Rng, SeedableRng};
use serde::Serialize;
use serde_json::json;

use crate::runtime_api::{binary_path, Profile};
use crate::{Emulator, Function};

use super::*;

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
