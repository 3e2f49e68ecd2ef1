//! The console's own time (issue 62): from starting `sqs-waiter console` to its `console:` line,
//! and what a page costs beside the function's time: the queues page (one `queues` and one
//! `stats`) through the real `enqueue` function under `cargo lambda watch` on moto, against
//! the same two calls made by the client directly, and a page that calls nothing (a 404).

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::runtime_api::{binary_path, Profile};

use super::median;

#[derive(Debug, Clone, Serialize)]
pub struct ConsoleBench {
    pub runs: usize,
    /// From spawning the CLI to its `console:` line, median.
    pub start_ms: f64,
    /// The queues page, served (median), and the function calls it makes, made directly.
    pub queues_page_ms: f64,
    pub queues_calls_ms: f64,
    /// A page that calls nothing: the server's own time, with the guard.
    pub own_page_ms: f64,
}

pub async fn console_bench(runs: usize, profile: Profile) -> ConsoleBench {
    let (_emu, watch, _url) = crate::watch::serve_enqueue("orders").await;
    let client = sqs_waiter_client::Client::new(watch.lambda_client().await, "enqueue");
    // Warm the function (its first call builds it).
    client.queues().await.expect("queues");
    let mut starts = Vec::new();
    let mut served = None;
    for _ in 0..runs {
        let t0 = Instant::now();
        let mut child = tokio::process::Command::new(binary_path("sqs-waiter", profile))
            .env_clear()
            .envs(watch.cli_env())
            .args(["console", "--no-open"])
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start the console");
        let stdout = child.stdout.take().expect("stdout");
        let line = tokio::time::timeout(Duration::from_secs(10), BufReader::new(stdout).lines().next_line())
            .await
            .expect("the console's address")
            .expect("read")
            .expect("a line");
        starts.push(t0.elapsed().as_secs_f64() * 1000.0);
        served = Some((child, line.trim_start_matches("console: ").to_owned()));
    }
    let (_child, url) = served.expect("a console");
    let (home, token) = url.split_once("/?token=").expect("token");
    let http = reqwest::Client::new();
    let cookie = format!("sqs_waiter_console={token}");
    let timed = |path: &'static str| {
        let (http, cookie, home) = (http.clone(), cookie.clone(), home.to_owned());
        async move {
            let t0 = Instant::now();
            let r = http
                .get(format!("{home}{path}"))
                .header("cookie", cookie)
                .send()
                .await
                .expect("page");
            let _ = r.bytes().await;
            t0.elapsed().as_secs_f64() * 1000.0
        }
    };
    let (mut page, mut calls, mut own) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs.max(5) {
        page.push(timed("/").await);
        own.push(timed("/no-such-page").await);
        let t0 = Instant::now();
        client.queues().await.expect("queues");
        client
            .stats(&sqs_waiter_client::Stats {
                queue: "orders".into(),
                buckets: Some(24),
                bucket_s: Some(3600),
                formats: None,
            })
            .await
            .expect("stats");
        calls.push(t0.elapsed().as_secs_f64() * 1000.0);
    }
    ConsoleBench {
        runs,
        start_ms: median(starts),
        queues_page_ms: median(page),
        queues_calls_ms: median(calls),
        own_page_ms: median(own),
    }
}

impl ConsoleBench {
    /// What `make bench` prints.
    pub fn report(&self) -> String {
        format!(
            "the console (issue 62), on moto through cargo lambda watch, medians of {} runs: `sqs-waiter console` ready in {:.0} ms; the queues page {:.1} ms against {:.1} ms for its two calls made directly ({:.1} ms the console's own); a page that calls nothing {:.1} ms",
            self.runs,
            self.start_ms,
            self.queues_page_ms,
            self.queues_calls_ms,
            self.queues_page_ms - self.queues_calls_ms,
            self.own_page_ms
        )
    }
}
