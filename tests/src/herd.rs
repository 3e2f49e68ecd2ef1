//! The herd bench: a backlog of jobs all overdue at once, drained by `groups` poller groups
//! running at the same time (each its own release process, invoked with
//! `{"group": i, "groups": n}`), on the throughput bench's in-memory table and SQS sink with the
//! same added latency per call. Reports the drain rate, the pollers' CPU, the lateness of every
//! arrival, and whether any job arrived twice or early.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::runtime_api::Profile;
use crate::throughput::{cpu_ms, Backend, TableBackend};

#[derive(Debug, Clone, Serialize)]
pub struct HerdRow {
    pub jobs: usize,
    pub shards: u32,
    pub groups: u32,
    pub latency_ms: u64,
    pub dispatched: u64,
    /// From the invocations to the last poller's reply.
    pub seconds: f64,
    pub jobs_per_s: f64,
    /// All the pollers' user + system CPU, per 1000 jobs.
    pub cpu_ms_per_1000: f64,
    /// Arrival (send plus `DelaySeconds`) after the later of `perform_at` and the runs' start.
    pub lateness_p50_ms: f64,
    pub lateness_p99_ms: f64,
    pub lateness_max_ms: f64,
    /// Arrivals before `perform_at`.
    pub early: usize,
    /// Messages whose job had arrived already.
    pub sent_twice: u64,
}

impl HerdRow {
    pub fn line(&self) -> String {
        format!(
            "{} jobs, {} shards, {} groups at once, {} ms a call: {} dispatched in {:.1} s ({:.0} jobs/s), CPU {:.0} ms per 1000, lateness p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms, early {}, sent twice {}",
            self.jobs,
            self.shards,
            self.groups,
            self.latency_ms,
            self.dispatched,
            self.seconds,
            self.jobs_per_s,
            self.cpu_ms_per_1000,
            self.lateness_p50_ms,
            self.lateness_p99_ms,
            self.lateness_max_ms,
            self.early,
            self.sent_twice
        )
    }
}

/// `jobs` jobs due a second before the runs start, over `shards` shards, drained by `groups`
/// pollers at once.
pub async fn herd(jobs: usize, shards: u32, groups: u32, latency_ms: u64, profile: Profile) -> HerdRow {
    let b = Backend::start(TableBackend::InMemory, latency_ms).await;
    let n = groups.to_string();
    let extra = [("WAITER_POLLER_GROUPS", n.as_str())];
    let mut pollers = Vec::new();
    for _ in 0..groups {
        let mut p = b.function("poller", shards, &extra, profile).await;
        p.invoke(&serde_json::json!({})).await.expect("warm-up run");
        pollers.push(p);
    }
    let due = chrono::Utc::now();
    b.load(jobs, shards, Some(due)).await;
    let cpu_before: f64 = pollers.iter().map(|p| cpu_ms(p.pid())).sum();
    let started = chrono::Utc::now();
    let t = Instant::now();
    let runs = pollers.iter_mut().enumerate().map(|(i, p)| async move {
        let event = serde_json::json!({"group": i, "groups": groups});
        p.invoke_raw(event.to_string().into_bytes(), Duration::from_secs(900))
            .await
            .expect("poller run")
    });
    let replies = futures::future::join_all(runs).await;
    let seconds = t.elapsed().as_secs_f64();
    let cpu: f64 = pollers.iter().map(|p| cpu_ms(p.pid())).sum::<f64>() - cpu_before;
    let dispatched: u64 = replies.iter().map(|r| r["dispatched"].as_u64().unwrap_or(0)).sum();
    let from = due.max(started).timestamp_millis();
    let mut lateness: Vec<i64> = b.sink.arrivals_ms().iter().map(|a| a - from).collect();
    lateness.sort_unstable();
    let early = b
        .sink
        .arrivals_ms()
        .iter()
        .filter(|a| **a < due.timestamp_millis())
        .count();
    HerdRow {
        jobs,
        shards,
        groups,
        latency_ms,
        dispatched,
        seconds,
        jobs_per_s: dispatched as f64 / seconds,
        cpu_ms_per_1000: cpu / jobs.max(1) as f64 * 1000.0,
        lateness_p50_ms: percentile(&lateness, 0.50),
        lateness_p99_ms: percentile(&lateness, 0.99),
        lateness_max_ms: lateness.last().copied().unwrap_or(0) as f64,
        early,
        sent_twice: b.sink.repeated(),
    }
}

fn percentile(sorted: &[i64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i] as f64
}
