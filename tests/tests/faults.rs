//! Jobs through enqueue and poller while a proxy injects faults into 10 % of AWS calls:
//! every acknowledged job is delivered at least once and none early. Duplicates are reported.
//! `FAULT_JOBS` sets the job count (default 2000).

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};
use e2e::bench::{spawn_consumer, Arrivals};
use e2e::Function;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread")]
async fn every_job_is_delivered_at_least_once_and_never_early_through_a_faulty_network() {
    let n: usize = std::env::var("FAULT_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    // The poller removes what it sent 25 to a transaction: on moto, whose transactions copy the
    // table per item, the table is on DynamoDB Local, behind a fault proxy of its own.
    let e2e::rig::Rig {
        emu,
        proxy,
        mut urls,
        env,
        tables,
    } = e2e::rig::Rig::builder(&["orders"])
        .proxy(20261122, 0.10)
        .settings(&[
            ("WAITER_DIRECT_MAX_DELAY", "0"),
            ("WAITER_LOOKAHEAD", "5"),
            ("WAITER_SHARDS", "4"),
        ])
        .for_many_transactions()
        .start()
        .await;
    let url = urls.remove(0);
    let proxies: Vec<&e2e::proxy::FaultProxy> = proxy
        .iter()
        .chain(tables.iter().filter_map(|(_, p)| p.as_ref()))
        .collect();
    let mut enqueue = Function::start("enqueue", &env).await;
    let mut poller = Function::start("poller", &env).await;

    // A consumer drains from the start (moto's sends slow down as a queue fills).
    let arrivals: Arrivals = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let consumer = spawn_consumer(emu.sqs.clone(), url.clone(), arrivals.clone(), stop.clone());

    // Enqueue like a careful caller: retry what was not acknowledged, with the same job_id.
    let t0 = Utc::now() + TimeDelta::seconds(10);
    let mut due: HashMap<String, DateTime<Utc>> = HashMap::new();
    let mut pending: Vec<Value> = (0..n)
        .map(|i| {
            let at = t0 + TimeDelta::milliseconds((i as i64 * 15_000) / n as i64);
            json!({"queue": "orders", "job_id": format!("j{i}"), "message_body": format!("j{i}"),
                   "perform_at": at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)})
        })
        .collect();
    let mut enqueue_rounds = 0;
    while !pending.is_empty() && enqueue_rounds < 20 {
        enqueue_rounds += 1;
        let mut retry = Vec::new();
        for chunk in pending.chunks(100) {
            match enqueue.invoke(&json!({"jobs": chunk})).await {
                Ok(reply) => {
                    for (job, r) in chunk.iter().zip(reply["results"].as_array().expect("results")) {
                        // Acknowledged: stored, or already due and sent straight to SQS.
                        if r["status"] == "scheduled" || r["status"] == "sent" {
                            // "Never early" is against the time the caller asked for: a retry
                            // after that time is acknowledged as "now", while a copy stored by a
                            // first attempt whose reply was lost rightly runs at the original time.
                            let asked = job["perform_at"].as_str().unwrap();
                            let at = DateTime::parse_from_rfc3339(asked).unwrap().with_timezone(&Utc);
                            due.insert(job["job_id"].as_str().unwrap().to_owned(), at);
                        } else {
                            retry.push(job.clone());
                        }
                    }
                }
                Err(_) => retry.extend(chunk.iter().cloned()),
            }
        }
        pending = retry;
    }
    assert!(pending.is_empty(), "{} jobs never acknowledged", pending.len());

    let unique = |a: &Arrivals| {
        let a = a.lock().unwrap();
        a.iter()
            .map(|(b, _)| b.clone())
            .collect::<std::collections::HashSet<_>>()
            .len()
    };
    // Poller runs through the faults for three minutes, then without them, as after an outage,
    // until every job arrived or none has for a minute: what is missing then is lost. (A fixed
    // deadline measured the machine: a cold CI run on a loaded machine drained 1663 of 2000 in
    // its 240 s and called the rest lost while the table still held them.)
    let faults_end = Instant::now() + Duration::from_secs(180);
    let (mut runs, mut progress) = (0, (Instant::now(), 0));
    while unique(&arrivals) < n {
        let faulty = Instant::now() < faults_end;
        if !faulty {
            proxies.iter().for_each(|p| p.set_rate(0.0));
        }
        let _ = poller.invoke_raw(b"{}".to_vec(), Duration::from_secs(30)).await;
        runs += 1;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let delivered = unique(&arrivals);
        if delivered > progress.1 {
            progress = (Instant::now(), delivered);
        } else if !faulty && progress.0.max(faults_end).elapsed() > Duration::from_secs(60) {
            break;
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    consumer.await.unwrap();

    let arrivals = arrivals.lock().unwrap().clone();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut early = Vec::new();
    for (body, at) in &arrivals {
        *seen.entry(body.as_str()).or_default() += 1;
        if let Some(d) = due.get(body) {
            if at < d {
                early.push(format!("{body} {} ms early", (*d - *at).num_milliseconds()));
            }
        }
    }
    let lost: Vec<&String> = due.keys().filter(|k| !seen.contains_key(k.as_str())).collect();
    let duplicates: usize = seen.values().map(|c| c - 1).sum();
    println!(
        "faults: {n} jobs, {} proxied requests, faults injected {:?}, enqueue rounds {enqueue_rounds}, poller runs {runs}, \
         delivered {} unique, {duplicates} duplicates, {} lost, {} early",
        proxies.iter().map(|p| p.requests()).sum::<u64>(),
        fault_counts(&proxies),
        seen.len(),
        lost.len(),
        early.len()
    );
    assert!(
        lost.is_empty(),
        "lost {} jobs, e.g. {:?}",
        lost.len(),
        &lost[..lost.len().min(5)]
    );
    assert!(early.is_empty(), "early: {:?}", &early[..early.len().min(5)]);
    assert!(
        fault_counts(&proxies).values().sum::<u64>() > 0,
        "no fault was injected"
    );
}

/// The faults every proxy injected, by kind.
fn fault_counts(proxies: &[&e2e::proxy::FaultProxy]) -> HashMap<e2e::proxy::FaultKind, u64> {
    let mut all = HashMap::new();
    for p in proxies {
        for (kind, n) in p.fault_counts() {
            *all.entry(kind).or_default() += n;
        }
    }
    all
}
