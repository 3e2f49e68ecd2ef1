//! The priority bench (issue 38): what one poller run reads, books and sends of a backlog that
//! `WAITER_MAX_RATE` holds back, with every tenth job urgent.

use serde::Serialize;

use crate::runtime_api::Profile;
use crate::throughput::{calls, timed_run, Backend, TableBackend, TABLE};

/// One row of `target/bench/priority.json`: one poller run over a held-back backlog.
#[derive(Debug, Clone, Serialize)]
pub struct RankedRow {
    pub jobs: usize,
    pub shards: u32,
    pub max_rate: u32,
    pub order: &'static str,
    /// Seconds the jobs were due over (the last ones).
    pub spread_s: usize,
    /// Jobs of priority 1, the rest 100.
    pub urgent: usize,
    pub dispatched: u64,
    pub held_back: u64,
    pub run_s: f64,
    /// Urgent jobs dispatched in the run, and whether every one of them arrives before every
    /// other job dispatched in it.
    pub urgent_dispatched: usize,
    pub urgent_first: bool,
    /// The run's calls by operation.
    pub calls: std::collections::BTreeMap<String, usize>,
}

/// A backlog of `jobs` overdue jobs over `shards`, every tenth of priority 1, drained by one
/// poller run under `max_rate` in `order`: what a run reads, books and sends.
pub async fn ranked_backlog(
    jobs: usize,
    shards: u32,
    max_rate: u32,
    order: &'static str,
    profile: Profile,
) -> RankedRow {
    backlog(jobs, shards, max_rate, order, 1, 10, profile).await
}

/// `jobs` overdue jobs over `shards`, due over the last `spread_s` seconds, every `urgent_every`th
/// of priority 1 (0: none), drained by one poller run under `max_rate` in `order`.
pub async fn backlog(
    jobs: usize,
    shards: u32,
    max_rate: u32,
    order: &'static str,
    spread_s: usize,
    urgent_every: usize,
    profile: Profile,
) -> RankedRow {
    let b = Backend::start(TableBackend::InMemory, 15).await;
    let rate = max_rate.to_string();
    let extra = [("WAITER_MAX_RATE", rate.as_str()), ("WAITER_PRIORITY_ORDER", order)];
    let mut poller = b.function("poller", shards, &extra, profile).await;
    poller.invoke(&serde_json::json!({})).await.expect("warm-up run");
    b.set_latency(std::time::Duration::ZERO);
    let now = chrono::Utc::now();
    let urgent = |i: usize| urgent_every > 0 && i % urgent_every == 0;
    let due = |i: usize| now - chrono::TimeDelta::seconds(1 + (i % spread_s.max(1)) as i64);
    crate::bench::load_ranked_items(&b.direct, TABLE, jobs, shards, |i| {
        (due(i), if urgent(i) { 1 } else { 100 })
    })
    .await;
    b.set_latency(b.latency);
    let before = calls(&b.ddb, &b.sqs);
    let (summary, run_s) = timed_run(&mut poller).await;
    let ranked = b.sink.ranked_arrivals_ms();
    let all = b.sink.arrivals_ms();
    let last_urgent = ranked.iter().max().copied().unwrap_or(i64::MIN);
    // Other jobs: every arrival not among the ranked ones.
    let mut others = all.clone();
    for r in &ranked {
        if let Some(i) = others.iter().position(|a| a == r) {
            others.swap_remove(i);
        }
    }
    let first_other = others.iter().min().copied().unwrap_or(i64::MAX);
    RankedRow {
        jobs,
        shards,
        max_rate,
        order,
        spread_s,
        urgent: (0..jobs).filter(|i| urgent(*i)).count(),
        dispatched: summary["dispatched"].as_u64().unwrap_or(0),
        held_back: summary["held_back"].as_u64().unwrap_or(0),
        run_s,
        urgent_dispatched: ranked.len(),
        // By arrival second: a second's messages arrive together.
        urgent_first: last_urgent.div_euclid(1000) <= first_other.div_euclid(1000),
        calls: calls(&b.ddb, &b.sqs)
            .into_iter()
            .map(|(op, n)| (op.clone(), n - before.get(&op).copied().unwrap_or(0)))
            .filter(|(_, n)| *n > 0)
            .collect(),
    }
}
