//! Pause and resume end to end (issue 61): the guarantee, with a run's `SendMessageBatch` held
//! at the fault proxy while the queue is paused. After `pause` answers, only that call (in
//! flight) goes out: the run stops before its next batch, a run started later sends nothing,
//! and `enqueue` stores what it would have sent straight to SQS. `resume` sends the rest, once.
//! Then debounce (`on_duplicate`) over a sent job's history record and over a stored job.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use chrono::{TimeDelta, Utc};
use e2e::rig::{assert_all_scheduled, Rig};
use e2e::Function;
use serde_json::{json, Value};

fn bodies(got: &[e2e::emulator::Received]) -> Vec<String> {
    got.iter().filter_map(|r| r.message.body().map(str::to_owned)).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn after_pause_answers_only_the_send_in_flight_goes_out_resume_sends_the_rest_and_debounce_replaces() {
    let rig = Rig::builder(&["orders"])
        .table_prefix("waiter-")
        .proxy(0, 0.0)
        .settings(&[("WAITER_SHARDS", "1"), ("WAITER_LOOKAHEAD", "0")])
        .start()
        .await;
    let mut enqueue = Function::start("enqueue", &rig.env).await;
    let mut poller = Function::start("poller", &rig.env).await;
    let jobs: Vec<Value> = (0..30)
        .map(|i| json!({"queue": "orders", "job_id": format!("p{i}"), "message_body": format!("p{i}"), "delay_seconds": 3600}))
        .collect();
    assert_all_scheduled(&enqueue.invoke_ok(&json!({ "jobs": jobs })).await);
    assert_eq!(
        rig.make_all_due("waiter-orders", Utc::now() - TimeDelta::seconds(1))
            .await,
        30
    );

    // The run's first batch (10 entries) is held at the proxy, in flight, while `pause` answers.
    let proxy = rig.proxy();
    proxy.hold("SendMessageBatch");
    let run = tokio::spawn(async move {
        let summary = poller.invoke_ok(&json!({})).await;
        (poller, summary)
    });
    let until = Instant::now() + Duration::from_secs(30);
    while proxy.held() == 0 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(proxy.held() >= 1, "the run's first send reached the proxy");
    let paused = enqueue.invoke_ok(&json!({"action": "pause", "queue": "orders"})).await;
    assert_eq!(paused["status"], "paused", "{paused}");
    let direct = enqueue
        .invoke_ok(&json!({"queue": "orders", "job_id": "direct", "message_body": "direct", "delay_seconds": 1}))
        .await;
    assert_eq!(direct["status"], "scheduled", "stored, not sent: {direct}");
    proxy.release_held();
    let (mut poller, summary) = run.await.expect("the run");
    assert_eq!(summary["dispatched"], 10, "{summary}");
    let again = poller.invoke_ok(&json!({})).await;
    assert_eq!(
        (again["dispatched"].as_u64(), again["paused_queues"].clone()),
        (Some(0), json!(["orders"])),
        "{again}"
    );
    let got = rig
        .emu
        .receive_for(&rig.urls[0], Duration::from_secs(3), usize::MAX)
        .await;
    assert_eq!(got.len(), 10, "only the call in flight went out: {:?}", bodies(&got));
    let stats = enqueue.invoke_ok(&json!({"action": "stats", "queue": "orders"})).await;
    assert_eq!(
        (stats["paused"].as_bool(), stats["scheduled"].as_u64()),
        (Some(true), Some(21)),
        "{stats}"
    );

    let resumed = enqueue.invoke_ok(&json!({"action": "resume", "queue": "orders"})).await;
    assert_eq!(resumed["status"], "resumed", "{resumed}");
    let queues = enqueue.invoke_ok(&json!({"action": "queues"})).await;
    assert_eq!(
        queues,
        json!({"queues": [{"queue": "orders", "fifo": false, "paused": false}]})
    );
    let mut rest = Vec::new();
    let until = Instant::now() + Duration::from_secs(30);
    while rest.len() < 21 && Instant::now() < until {
        poller.invoke_ok(&json!({})).await;
        rest.extend(
            rig.emu
                .receive_for(&rig.urls[0], Duration::from_secs(1), 21 - rest.len())
                .await,
        );
    }
    rest.extend(
        rig.emu
            .receive_for(&rig.urls[0], Duration::from_millis(1500), usize::MAX)
            .await,
    );
    let all: Vec<String> = bodies(&got).into_iter().chain(bodies(&rest)).collect();
    let distinct: BTreeSet<&String> = all.iter().collect();
    assert_eq!((all.len(), distinct.len()), (31, 31), "every job once: {all:?}");
    assert_eq!(rig.emu.job_count("waiter-orders").await, 0);

    // Debounce (`on_duplicate`) on the real table: over the history record a sent job left, a
    // new job (`replaced: false`); then that job replaced in place; one message, the last body.
    let again = json!({"queue": "orders", "job_id": "p0", "message_body": "p0-again", "delay_seconds": 1, "on_duplicate": "replace"});
    let r = enqueue.invoke_ok(&again).await;
    assert_eq!(
        (r["status"].as_str(), r["replaced"].as_bool(), r["duplicate"].as_bool()),
        (Some("scheduled"), Some(false), Some(true)),
        "{r}"
    );
    let last = json!({"queue": "orders", "job_id": "p0", "message_body": "p0-last", "delay_seconds": 2, "on_duplicate": "replace"});
    let r2 = enqueue.invoke_ok(&last).await;
    assert_eq!(
        (r2["replaced"].as_bool(), r2["version"].as_u64()),
        (Some(true), r["version"].as_u64().map(|v| v + 1)),
        "{r2}"
    );
    let mut debounced = Vec::new();
    let until = Instant::now() + Duration::from_secs(20);
    while debounced.is_empty() && Instant::now() < until {
        tokio::time::sleep(Duration::from_secs(1)).await;
        poller.invoke_ok(&json!({})).await;
        debounced.extend(
            rig.emu
                .receive_for(&rig.urls[0], Duration::from_secs(2), usize::MAX)
                .await,
        );
    }
    assert_eq!(bodies(&debounced), ["p0-last"]);
}
