//! Shared setup for the e2e tests.
#![allow(dead_code)]

use std::time::Duration;

use e2e::{Emulator, Function};
use serde_json::{json, Value};

pub struct Setup {
    pub emu: Emulator,
    pub enqueue: Function,
    pub poller: Function,
    pub urls: Vec<String>,
    pub env: e2e::Env,
}

/// Starts moto, creates the queues and their tables, starts both functions with `settings`.
pub async fn setup(queues: &[&str], settings: &[(&str, &str)]) -> Setup {
    let emu = Emulator::start().await;
    let mut urls = Vec::new();
    for q in queues {
        urls.push(emu.create_queue(q).await);
        emu.create_table(&format!("waiter-{q}")).await;
    }
    let joined = queues.join(",");
    let mut all: Vec<(&str, &str)> = vec![("WAITER_QUEUES", &joined), ("WAITER_TABLE_PREFIX", "waiter-")];
    all.extend_from_slice(settings);
    let env = emu.function_env(&all);
    let enqueue = Function::start("enqueue", &env).await;
    let poller = Function::start("poller", &env).await;
    Setup {
        emu,
        enqueue,
        poller,
        urls,
        env,
    }
}

impl Setup {
    pub async fn enqueue_ok(&mut self, req: Value) -> Value {
        match self.enqueue.invoke(&req).await {
            Ok(v) => v,
            Err(e) => panic!("enqueue failed: {e:?}\nlog:\n{}", self.enqueue.log()),
        }
    }

    pub async fn poll(&mut self) -> Value {
        match self.poller.invoke(&json!({})).await {
            Ok(v) => v,
            Err(e) => panic!("poller failed: {e:?}\nlog:\n{}", self.poller.log()),
        }
    }

    /// Runs the poller every `every` while collecting messages from queue `i`, until `expect`
    /// messages arrived or `within` passed.
    pub async fn poll_and_receive(
        &mut self,
        i: usize,
        expect: usize,
        every: Duration,
        within: Duration,
    ) -> Vec<e2e::emulator::Received> {
        let until = std::time::Instant::now() + within;
        let mut got = Vec::new();
        while got.len() < expect && std::time::Instant::now() < until {
            self.poll().await;
            let url = self.urls[i].clone();
            got.extend(self.emu.receive_for(&url, every, expect - got.len()).await);
        }
        // Anything else that arrives shortly after is a duplicate worth seeing.
        let url = self.urls[i].clone();
        got.extend(
            self.emu
                .receive_for(&url, Duration::from_millis(1500), usize::MAX)
                .await,
        );
        got
    }

    pub async fn table_len(&self, queue: &str) -> usize {
        self.emu
            .scan(&format!("waiter-{queue}"))
            .await
            .iter()
            .filter(|i| i.contains_key("perform_at"))
            .count()
    }
}

pub fn in_secs(s: f64) -> String {
    (chrono::Utc::now() + chrono::TimeDelta::milliseconds((s * 1000.0) as i64))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

pub fn parse_time(s: &str) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(s)
        .expect("rfc3339")
        .with_timezone(&chrono::Utc)
}

/// The counts of a `stats` reply's histogram, bucket by bucket.
pub fn histogram_counts(stats: &Value) -> Vec<u64> {
    stats["histogram"]
        .as_array()
        .expect("histogram")
        .iter()
        .map(|b| b["count"].as_u64().expect("count"))
        .collect()
}
