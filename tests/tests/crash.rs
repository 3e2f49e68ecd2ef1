//! SIGKILL at each distinct step of a dispatch, and mid-batch in enqueue, then a fresh process:
//! nothing is lost, and duplicates are counted. The fault proxy freezes every AWS call after the
//! chosen one, so the kill lands exactly after that step.

use std::collections::HashMap;
use std::time::Duration;

use e2e::proxy::FaultProxy;
use e2e::{Emulator, Env, Function};
use serde_json::{json, Value};

struct World {
    emu: Emulator,
    proxy: FaultProxy,
    url: String,
    env: Env,
}

async fn world() -> World {
    let emu = Emulator::start().await;
    let url = emu.create_queue("orders").await;
    emu.create_table("orders").await;
    let proxy = FaultProxy::start(&emu.endpoint, 1, 0.0).await;
    let env = emu.function_env_via(
        &proxy.endpoint,
        &[
            ("WAITER_QUEUES", "orders"),
            ("WAITER_DIRECT_MAX_DELAY", "0"),
            ("WAITER_LOOKAHEAD", "0"),
            ("WAITER_SHARDS", "1"),
        ],
    );
    World { emu, proxy, url, env }
}

fn batch(n: usize) -> Value {
    json!({"jobs": (0..n).map(|i| json!({"queue": "orders", "job_id": format!("j{i}"), "message_body": format!("j{i}"), "delay_seconds": 1})).collect::<Vec<_>>()})
}

async fn table_len(w: &World) -> usize {
    w.emu
        .scan("orders")
        .await
        .iter()
        .filter(|i| i.contains_key("perform_at"))
        .count()
}

/// Runs `f`'s invocation until the proxy freezes after `op` #`nth`, then SIGKILLs the process.
async fn kill_after(w: &World, f: &mut Function, payload: Value, op: &str, nth: usize) {
    // Counted from this invocation on: the other function's calls came before.
    w.proxy.freeze_after(op, w.proxy.calls(op) + nth);
    let invocation = f.invoke_raw(serde_json::to_vec(&payload).unwrap(), Duration::from_secs(4));
    tokio::select! {
        r = invocation => panic!("finished before the {op} #{nth} crash point: {r:?}"),
        frozen = w.proxy.wait_frozen(Duration::from_secs(30)) => assert!(frozen, "never reached {op} #{nth}"),
    }
    let pid = f.pid();
    f.kill();
    println!("SIGKILLed pid {pid} after {op} #{nth}");
    // Calls that passed before the freeze finish landing; those held by it are dropped.
    w.proxy.wait_idle(Duration::from_secs(10)).await;
    w.proxy.unfreeze();
}

/// Fresh pollers until the table is empty (the crashed one's lease lapses after its deadline + 5 s).
async fn drain(w: &World, n: usize) -> (usize, usize) {
    let mut poller = Function::start("poller", &w.env).await;
    let mut got = Vec::new();
    for _ in 0..40 {
        let _ = poller.invoke_raw(b"{}".to_vec(), Duration::from_secs(20)).await;
        got.extend(w.emu.receive_for(&w.url, Duration::from_millis(500), usize::MAX).await);
        if table_len(w).await == 0 && got.len() >= n {
            break;
        }
    }
    got.extend(w.emu.receive_for(&w.url, Duration::from_secs(2), usize::MAX).await);
    let mut seen: HashMap<String, usize> = HashMap::new();
    for r in &got {
        *seen.entry(r.message.body().unwrap_or_default().to_owned()).or_default() += 1;
    }
    (seen.len(), seen.values().map(|c| c - 1).sum())
}

async fn poller_killed_after(op: &str, nth: usize, n: usize) -> usize {
    let w = world().await;
    let mut enqueue = Function::start("enqueue", &w.env).await;
    let reply = enqueue.invoke(&batch(n)).await.expect("enqueue");
    assert!(reply["results"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["status"] == "scheduled"));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let mut poller = Function::start("poller", &w.env).await;
    kill_after(&w, &mut poller, json!({}), op, nth).await;
    let (unique, duplicates) = drain(&w, n).await;
    println!("crash after {op} #{nth}: {unique}/{n} delivered, {duplicates} duplicates");
    assert_eq!(unique, n, "lost jobs after a crash after {op} #{nth}");
    assert_eq!(table_len(&w).await, 0);
    duplicates
}

#[tokio::test(flavor = "multi_thread")]
async fn poller_killed_after_the_query() {
    assert_eq!(
        poller_killed_after("Query", 1, 30).await,
        0,
        "nothing was sent before the crash"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn poller_killed_after_the_claim() {
    assert_eq!(
        poller_killed_after("UpdateItem", 1, 30).await,
        0,
        "nothing was sent before the crash"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn poller_killed_after_send_message_batch() {
    let duplicates = poller_killed_after("SendMessageBatch", 1, 30).await;
    assert!(
        duplicates <= 10,
        "at most the batch in flight is sent twice: {duplicates}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn poller_killed_midway_through_removal() {
    // 60 jobs: deletes go out in three BatchWriteItem calls; the kill lands after the first.
    let duplicates = poller_killed_after("BatchWriteItem", 1, 60).await;
    assert!(
        duplicates <= waiter_bound(),
        "{duplicates} duplicates exceed the documented bound"
    );
}

fn waiter_bound() -> usize {
    // MAX_UNDELETED_PER_PARTITION in crates/waiter/src/dispatch.rs, documented in README.
    34
}

#[tokio::test(flavor = "multi_thread")]
async fn enqueue_killed_mid_batch_then_resent_creates_no_duplicates() {
    let w = world().await;
    let mut enqueue = Function::start("enqueue", &w.env).await;
    kill_after(&w, &mut enqueue, batch(100), "PutItem", 30).await;
    let stored_before = table_len(&w).await;
    assert!(
        (30..100).contains(&stored_before),
        "{stored_before} stored before the crash"
    );

    // The caller was told nothing; it re-sends the same batch to a fresh instance.
    let mut enqueue = Function::start("enqueue", &w.env).await;
    let reply = enqueue.invoke(&batch(100)).await.expect("re-sent batch");
    let results = reply["results"].as_array().unwrap();
    assert!(
        results.iter().all(|r| r["status"] == "scheduled"),
        "every job is acknowledged"
    );
    let duplicates = results.iter().filter(|r| r["duplicate"] == true).count();
    assert_eq!(
        duplicates, stored_before,
        "exactly the jobs stored before the crash are reported as duplicates"
    );
    assert_eq!(table_len(&w).await, 100, "every acknowledged job exists, once");

    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (unique, duplicates) = drain(&w, 100).await;
    assert_eq!((unique, duplicates), (100, 0));
}
