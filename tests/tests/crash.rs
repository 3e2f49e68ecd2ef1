//! SIGKILL at each distinct step of a dispatch, and mid-batch in enqueue, then a fresh process:
//! nothing is lost, and duplicates are counted. The fault proxy freezes every AWS call after the
//! chosen one, so the kill lands exactly after that step.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use e2e::Function;
use serde_json::{json, Value};

type World = e2e::rig::Proxied;

async fn world() -> World {
    e2e::rig::orders_via_proxy(
        1,
        0.0,
        &[
            ("WAITER_DIRECT_MAX_DELAY", "0"),
            ("WAITER_LOOKAHEAD", "0"),
            ("WAITER_SHARDS", "1"),
        ],
    )
    .await
}

/// `n` jobs due at `due`, a fixed instant, so that the same batch re-sent is the same jobs and
/// none falls due (and goes straight to SQS) while a slow backend is still storing the batch.
fn batch(n: usize, due: chrono::DateTime<chrono::Utc>) -> Value {
    let perform_at = due.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    json!({"jobs": (0..n).map(|i| json!({"queue": "orders", "job_id": format!("j{i}"), "message_body": format!("j{i}"), "perform_at": perform_at})).collect::<Vec<_>>()})
}

fn due_in(seconds: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now() + chrono::TimeDelta::seconds(seconds)
}

async fn sleep_until(due: chrono::DateTime<chrono::Utc>) {
    if let Ok(wait) = (due - chrono::Utc::now()).to_std() {
        tokio::time::sleep(wait + Duration::from_millis(300)).await;
    }
}

/// The table's job items (leases and the meta item have no `perform_at`).
async fn stored_jobs(w: &World) -> Vec<HashMap<String, AttributeValue>> {
    w.emu.stored_jobs("orders").await
}

async fn table_len(w: &World) -> usize {
    w.emu.job_count("orders").await
}

/// The deadline of a run that is killed midway. Its lease lapses 5 s after it, so the shorter
/// the sooner the next run drains; but a run stops sending when its time runs short, and 4 s
/// was too little on a loaded machine: a cold CI run's poller gave up before its first removal
/// (`dispatched 0, drained false`) and never reached the crash point.
const CRASHED_RUN_DEADLINE: Duration = Duration::from_secs(10);

/// Runs `f`'s invocation until the proxy freezes after `op` #`nth`, then SIGKILLs the process.
/// `timeout` is the invocation's: a killed poller's lease lapses 5 s after it.
async fn kill_after(w: &World, f: &mut Function, payload: Value, op: &str, nth: usize, timeout: Duration) {
    // Counted from this invocation on: the other function's calls came before.
    w.proxy.freeze_after(op, w.proxy.calls(op) + nth);
    let invocation = f.invoke_raw(serde_json::to_vec(&payload).unwrap(), timeout);
    tokio::select! {
        r = invocation => panic!(
            "finished before the {op} #{nth} crash point ({} {op} calls): {}",
            w.proxy.calls(op),
            r.map(|v| v.to_string()).unwrap_or_else(|e| format!("{e:?}")).chars().take(3000).collect::<String>()
        ),
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
    let sends = e2e::emulator::Sends::count(&got);
    (sends.jobs, sends.extra)
}

async fn poller_killed_after(op: &str, nth: usize, n: usize) -> usize {
    let w = world().await;
    let mut enqueue = Function::start("enqueue", &w.env).await;
    let due = due_in(5);
    let reply = enqueue.invoke(&batch(n, due)).await.expect("enqueue");
    assert!(reply["results"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["status"] == "scheduled"));
    sleep_until(due).await;
    let mut poller = Function::start("poller", &w.env).await;
    kill_after(&w, &mut poller, json!({}), op, nth, CRASHED_RUN_DEADLINE).await;
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
    // The batches in flight when the kill lands.
    assert!(
        duplicates <= waiter::poller::SENDS_IN_FLIGHT * 10,
        "at most the batches in flight are sent twice: {duplicates}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn poller_killed_midway_through_removal() {
    // 60 jobs, removed 25 to a BatchExecuteStatement of conditional statements (history is on:
    // the update of each job into its record); the kill lands after the first batch. Where
    // PartiQL does not run (moto, `Quirk::NoPartiql`) they go 25 to a TransactWriteItems.
    let op = if e2e::emulator::Backend::current().has(e2e::quirks::Quirk::NoPartiql) {
        "TransactWriteItems"
    } else {
        "BatchExecuteStatement"
    };
    let duplicates = poller_killed_after(op, 1, 60).await;
    assert!(
        duplicates <= waiter_bound(),
        "{duplicates} duplicates exceed the documented bound"
    );
}

fn waiter_bound() -> usize {
    waiter::poller::MAX_UNDELETED_PER_PARTITION
}

#[tokio::test(flavor = "multi_thread")]
async fn enqueue_killed_mid_batch_then_resent_creates_no_duplicates() {
    let w = world().await;
    let mut enqueue = Function::start("enqueue", &w.env).await;
    // Far enough out to cover the kill, a fresh instance and the re-send on a slow backend.
    let due = due_in(25);
    // A 30 s invocation: time enough for 30 puts on a slow backend (nothing waits for it).
    let timeout = Duration::from_secs(30);
    kill_after(&w, &mut enqueue, batch(100, due), "PutItem", 30, timeout).await;
    let stored_before: HashSet<String> = stored_jobs(&w)
        .await
        .iter()
        .filter_map(|i| i.get("job_id")?.as_s().ok().cloned())
        .collect();
    assert!(
        (30..100).contains(&stored_before.len()),
        "{} stored before the crash",
        stored_before.len()
    );

    // The caller was told nothing; it re-sends the same batch to a fresh instance, and then, as
    // any caller does, what was not acknowledged (a slow backend can time a job out:
    // DependencyFailure, retryable).
    let mut enqueue = Function::start("enqueue", &w.env).await;
    let mut pending = batch(100, due);
    let mut unacknowledged = 100;
    for round in 0..5 {
        let reply = enqueue.invoke(&pending).await.expect("re-sent batch");
        let results = reply["results"].as_array().expect("results");
        let mut retry = Vec::new();
        for (job, r) in pending["jobs"].as_array().expect("jobs").iter().zip(results) {
            let id = job["job_id"].as_str().expect("job_id");
            match r["status"].as_str() {
                // Only the first re-send can tell exactly: a job timed out there may have landed.
                Some("scheduled") if round == 0 => assert_eq!(
                    r["duplicate"] == true,
                    stored_before.contains(id),
                    "{id}: duplicate exactly when stored before the crash: {r}"
                ),
                Some("scheduled") => {}
                _ => {
                    assert_eq!(r["error"]["retryable"], true, "{id}: {r}");
                    retry.push(job.clone());
                }
            }
        }
        unacknowledged = retry.len();
        if retry.is_empty() {
            break;
        }
        println!("round {round}: {} jobs not acknowledged, re-sent", retry.len());
        pending = json!({ "jobs": retry });
    }
    assert_eq!(unacknowledged, 0, "every job is acknowledged within 5 re-sends");
    assert_eq!(table_len(&w).await, 100, "every acknowledged job exists, once");

    sleep_until(due).await;
    let sends_before = w.proxy.calls("SendMessageBatch");
    let (unique, duplicates) = drain(&w, 100).await;
    // 100 jobs leave in 10 batches. A batch sent again is the SDK retrying an attempt that timed
    // out on a slow backend after it landed: at-least-once, not a second copy of a stored job.
    let retried = (w.proxy.calls("SendMessageBatch") - sends_before).saturating_sub(10);
    println!("re-sent batch: {unique}/100 delivered, {duplicates} sent twice, {retried} batches retried by the SDK");
    assert_eq!(unique, 100);
    assert!(
        duplicates <= retried * 10,
        "{duplicates} jobs sent twice, but only {retried} batches were retried"
    );
}

/// Issue 23, defect 1's window variant: the poller is killed right after SQS took a windowed
/// job's message; its window has closed when the next run takes the lapsed lease over. That run
/// must not re-send it (it would arrive outside the window) and moves it to the next opening,
/// marked `maybe_delivered_at`, so that `get`, `cancel` and `reschedule` say it may have arrived.
#[tokio::test(flavor = "multi_thread")]
async fn a_windowed_job_whose_window_closed_after_a_crashed_send_is_moved_and_says_it_may_have_arrived() {
    let w = world().await;
    let mut enqueue = Function::start("enqueue", &w.env).await;
    // A window that closes at the first whole minute at least 8 s after the job is due.
    let due = due_in(5);
    let close =
        chrono::DurationRound::duration_trunc(due + chrono::TimeDelta::seconds(68), chrono::TimeDelta::minutes(1))
            .expect("a whole minute");
    let from = (close - chrono::TimeDelta::minutes(30)).format("%H:%M").to_string();
    let to = close.format("%H:%M").to_string();
    let r = enqueue
        .invoke(
            &json!({"queue": "orders", "job_id": "win", "message_body": "win", "windows": [{"from": from, "to": to}],
                        "perform_at": due.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)}),
        )
        .await
        .expect("enqueue");
    assert_eq!(r["status"], "scheduled", "{r}");
    let perform_at = r["perform_at"].clone();
    sleep_until(due).await;

    let mut poller = Function::start("poller", &w.env).await;
    let crashed_at = chrono::Utc::now();
    kill_after(&w, &mut poller, json!({}), "SendMessageBatch", 1, CRASHED_RUN_DEADLINE).await;
    let first = w.emu.receive_for(&w.url, Duration::from_secs(2), 1).await;
    assert_eq!(first.len(), 1, "the crashed run's send reached SQS");
    // The next run must come after the close and after the crashed run's lease lapses
    // (`LEASE_GRACE` after its deadline), whichever is later: the close may come 8 s after
    // `due`, before the lapse (a cold run failed so, the partition busy at every try, once the
    // crashed run's deadline went from 4 s to 10 s).
    let lapse = crashed_at
        + chrono::TimeDelta::from_std(CRASHED_RUN_DEADLINE).expect("a deadline")
        + waiter::poller::LEASE_GRACE;
    sleep_until(close.max(lapse)).await;

    let mut poller = Function::start("poller", &w.env).await;
    let mut summary = json!({});
    for _ in 0..10 {
        summary = poller
            .invoke_raw(b"{}".to_vec(), Duration::from_secs(20))
            .await
            .expect("poller run");
        if summary["moved"] == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await; // the index may lag
    }
    assert_eq!(
        (summary["moved"].as_u64(), summary["dispatched"].as_u64()),
        (Some(1), Some(0)),
        "{summary}"
    );
    assert!(
        w.emu.receive_for(&w.url, Duration::from_secs(2), 1).await.is_empty(),
        "not re-sent outside its window"
    );
    let got = enqueue
        .invoke(&json!({"action": "get", "queue": "orders", "job_id": "win"}))
        .await
        .expect("get");
    assert_eq!(got["status"], "scheduled", "{got}");
    assert_eq!(got["maybe_delivered_at"], perform_at, "{got}");
    assert!(
        got["perform_at"].as_str() > perform_at.as_str(),
        "moved to the next opening: {got}"
    );
    let cancelled = enqueue
        .invoke(&json!({"action": "cancel", "queue": "orders", "job_id": "win"}))
        .await
        .expect("cancel");
    assert_eq!(
        (&cancelled["status"], &cancelled["maybe_delivered_at"]),
        (&json!("cancelled"), &perform_at),
        "{cancelled}"
    );
    let after = enqueue
        .invoke(&json!({"action": "get", "queue": "orders", "job_id": "win"}))
        .await
        .expect("get after cancel");
    assert_eq!(
        (&after["status"], &after["maybe_delivered_at"]),
        (&json!("cancelled"), &perform_at),
        "history keeps the mark: {after}"
    );
    assert_eq!(table_len(&w).await, 0);
}
