//! `list`, `cancel_many` and `stats` at scale: 10 000 stored jobs across 16 shards on Amazon
//! DynamoDB Local (strict, and fast on queries), through the real `enqueue` function. Ties are
//! many: the jobs share 100 instants.

use std::collections::HashSet;
use std::time::Duration;

use e2e::rig::histogram_counts;
use e2e::DynamoLocal;
use e2e::{Emulator, Function};
use serde_json::{json, Value};

const JOBS: usize = 10_000;
const INSTANTS: usize = 100;

async fn call(f: &mut Function, request: &Value) -> Value {
    match f
        .invoke_raw(serde_json::to_vec(request).expect("json"), Duration::from_secs(120))
        .await
    {
        Ok(v) => v,
        Err(e) => panic!("{request}: {e:?}\nlog:\n{}", f.log()),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn ten_thousand_jobs_over_sixteen_shards_list_cancel_and_count_exactly() {
    // Ten thousand jobs through DynamoDB Local: beside other tests on 2 cores, a page's
    // BatchGetItem of 1000 keys outlasted the SDK's 5 s attempt timeout (a cold CI run).
    let _machine = e2e::rig::alone().await;
    let emu = Emulator::start().await;
    let ddb_local = DynamoLocal::start().await;
    let ddb = aws_sdk_dynamodb::Client::new(&e2e::emulator::sdk_config(&ddb_local.endpoint).await);
    emu.create_queue("orders").await;
    e2e::emulator::create_waiter_table(&ddb, "waiter-orders", e2e::emulator::IndexKind::Global).await;
    let mut env = emu.function_env(&[
        ("WAITER_QUEUES", "orders"),
        ("WAITER_TABLE_PREFIX", "waiter-"),
        ("WAITER_SHARDS", "16"),
        ("WAITER_DIRECT_MAX_DELAY", "0"),
        ("RUST_LOG", "warn"),
    ]);
    env.push(("AWS_ENDPOINT_URL_DYNAMODB".into(), ddb_local.endpoint.clone()));
    let mut enqueue = Function::start("enqueue", &env).await;

    let base = chrono::Utc::now() + chrono::TimeDelta::days(1);
    let mut expected = Vec::with_capacity(JOBS);
    for batch in 0..JOBS / 1000 {
        let jobs: Vec<Value> = (0..1000)
            .map(|i| {
                let n = batch * 1000 + i;
                let id = format!("{}-{n:05}", if n % 4 == 0 { "promo" } else { "order" });
                let at = base + chrono::TimeDelta::minutes((n % INSTANTS) as i64);
                expected.push((at, id.clone()));
                json!({"queue": "orders", "job_id": id, "message_body": format!("body {n} {}", "x".repeat(200)),
                       "perform_at": at.to_rfc3339()})
            })
            .collect();
        let r = call(&mut enqueue, &json!({"jobs": jobs})).await;
        let scheduled = r["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["status"] == "scheduled")
            .count();
        assert_eq!(scheduled, 1000, "batch {batch}");
    }
    expected.sort();

    // Every job once, in perform_at order (equal perform_at in the index's order), in bounded
    // pages.
    let mut request = json!({"action": "list", "queue": "orders", "limit": 1000, "with_body": true});
    let (mut ids, mut calls, mut largest) = (Vec::new(), 0, 0);
    loop {
        let r = call(&mut enqueue, &request).await;
        calls += 1;
        largest = largest.max(r.to_string().len());
        ids.extend(r["jobs"].as_array().unwrap().iter().map(|j| {
            (
                j["perform_at_epoch"].as_f64().unwrap(),
                j["job_id"].as_str().unwrap().to_owned(),
            )
        }));
        match &r["cursor"] {
            Value::Null => break,
            c => request["cursor"] = c.clone(),
        }
        assert!(calls < 100, "the listing never ended");
    }
    assert_eq!(ids.len(), JOBS);
    assert!(ids.windows(2).all(|w| w[0].0 <= w[1].0), "time order across shards");
    let at_of: std::collections::HashMap<&str, f64> = expected
        .iter()
        .map(|(at, id)| (id.as_str(), at.timestamp_micros() as f64 / 1e6))
        .collect();
    for (at, id) in &ids {
        assert!((at - at_of[id.as_str()]).abs() < 1e-3, "{id} listed at {at}");
    }
    let listed: HashSet<&str> = ids.iter().map(|(_, id)| id.as_str()).collect();
    assert_eq!(listed.len(), JOBS, "every job once");
    assert!(largest < 6 * 1024 * 1024, "a reply of {largest} bytes");
    println!("list: {JOBS} jobs over 16 shards in {calls} calls, largest reply {largest} bytes");

    let stats = call(
        &mut enqueue,
        &json!({"action": "stats", "queue": "orders", "buckets": 4, "bucket_s": 86_400}),
    )
    .await;
    assert_eq!(stats["scheduled"], JOBS as u64, "{stats}");
    let counts = histogram_counts(&stats);
    let day = |d: i64| chrono::Utc::now() + chrono::TimeDelta::days(d);
    let in_day = |d: i64| {
        expected
            .iter()
            .filter(|(at, _)| *at >= day(d) && (d == 3 || *at < day(d + 1)))
            .count() as u64
    };
    // Counted against the request's own clock, so the edges sit within the same second.
    assert_eq!(counts.iter().sum::<u64>(), JOBS as u64, "{stats}");
    assert_eq!(counts[0] + counts[1], in_day(0) + in_day(1), "{stats}");

    // Cancel the promos page by page; nothing else goes.
    let mut request = json!({"action": "cancel_many", "queue": "orders", "prefix": "promo-", "limit": 500});
    let (mut cancelled, mut calls) = (0, 0);
    loop {
        let r = call(&mut enqueue, &request).await;
        calls += 1;
        cancelled += r["cancelled"].as_u64().unwrap();
        assert_eq!(r["dispatching"], 0);
        match &r["cursor"] {
            Value::Null => break,
            c => request["cursor"] = c.clone(),
        }
        assert!(calls < 100, "cancel_many never ended");
    }
    assert_eq!(cancelled, (JOBS / 4) as u64);
    let stats = call(&mut enqueue, &json!({"action": "stats", "queue": "orders"})).await;
    assert_eq!(stats["scheduled"], (JOBS - JOBS / 4) as u64, "{stats}");
    let mut request = json!({"action": "list", "queue": "orders", "prefix": "promo-", "limit": 1000});
    let mut left = HashSet::new();
    loop {
        let r = call(&mut enqueue, &request).await;
        left.extend(r["jobs"].as_array().unwrap().iter().map(|j| j["job_id"].to_string()));
        match &r["cursor"] {
            Value::Null => break,
            c => request["cursor"] = c.clone(),
        }
    }
    assert!(left.is_empty(), "promos left: {}", left.len());
    println!("cancel_many: {cancelled} jobs in {calls} calls");
}
