//! Benchmarks that print figures (`make bench`), kept in the library so that a tiny-N smoke test
//! in `make test` keeps them from rotting.

mod api_calls;
mod bodies;
mod catch_up;
mod cold_start;
mod compression;
mod console_bench;
mod cost;
mod debounce_cost;
mod dispatch;
mod ledger;
mod precision;
mod series_cost;
mod tag_search;
mod tags_cost;
mod trace_cost;

pub use api_calls::*;
pub use bodies::*;
pub use catch_up::*;
pub use cold_start::*;
pub use compression::*;
pub use console_bench::*;
pub use cost::*;
pub use debounce_cost::*;
pub use dispatch::*;
pub use ledger::*;
pub use precision::*;
pub use series_cost::*;
pub use tag_search::*;
pub use tags_cost::*;
pub use trace_cost::*;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

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

/// A time as the benches write it into requests: RFC 3339 with microseconds.
/// Every fault proxy of a rig (SQS's and each table's), where a bench counts calls.
pub(crate) fn proxies_of(rig: &crate::rig::Rig) -> Vec<&crate::proxy::FaultProxy> {
    rig.proxy
        .iter()
        .chain(rig.tables.iter().filter_map(|(_, p)| p.as_ref()))
        .collect()
}

pub(crate) fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}
