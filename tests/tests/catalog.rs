//! The bad-input catalog (tests/data/bad_requests.json): every malformed or hostile request gets
//! its clear error, and afterwards the tables and queues are exactly as before.

use std::time::Duration;

use e2e::rig::setup;
use serde_json::{json, Value};

async fn snapshot(s: &e2e::rig::Setup) -> Vec<String> {
    let mut state = Vec::new();
    for table in ["waiter-orders", "waiter-billing.fifo"] {
        let mut items: Vec<String> = s
            .emu
            .scan(table)
            .await
            .iter()
            .map(|item| {
                let mut kv: Vec<String> = item.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
                kv.sort();
                kv.join(",")
            })
            .collect();
        items.sort();
        state.push(format!("{table}: {items:?}"));
    }
    for url in &s.urls {
        let mut a: Vec<String> = s
            .emu
            .queue_counts(url)
            .await
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        a.sort();
        state.push(format!("{url}: {a:?}"));
    }
    state
}

fn generate(kind: &str) -> Vec<u8> {
    let v = match kind {
        "huge_body" => json!({"queue": "orders", "message_body": "x".repeat(1024 * 1024 + 1)}),
        // Random printable ASCII deflates by about a fifth only: 900 KB stays over 400 KB
        // deflated, so the stored item is too large either way.
        "stored_too_big" => {
            json!({"queue": "orders", "message_body": e2e::bench::incompressible_text(900 * 1024), "delay_seconds": 3600})
        }
        "batch_10000" => {
            json!({"jobs": (0..10_000).map(|i| json!({"queue": "orders", "message_body": format!("m{i}")})).collect::<Vec<_>>()})
        }
        "nested_bomb" => return format!("{}{}", "[".repeat(200_000), "]".repeat(200_000)).into_bytes(),
        other => panic!("unknown generator {other}"),
    };
    serde_json::to_vec(&v).expect("serialise")
}

#[tokio::test(flavor = "multi_thread")]
async fn every_catalogued_bad_request_is_refused_and_nothing_changes() {
    let catalog: Value = serde_json::from_str(include_str!("../data/bad_requests.json")).expect("catalog is JSON");
    let cases = catalog["cases"].as_array().expect("cases");
    assert!(cases.len() >= 40, "the catalog holds {} cases", cases.len());

    let mut s = setup(&["orders", "billing.fifo"], &[("WAITER_DIRECT_MAX_DELAY", "10")]).await;
    // State that must survive the catalog untouched: a stored job and a queued message.
    s.enqueue_ok(json!({"queue": "orders", "message_body": "keep", "delay_seconds": 3600, "job_id": "keep"}))
        .await;
    s.enqueue_ok(json!({"queue": "orders", "message_body": "queued", "job_id": "queued"}))
        .await;
    let before = snapshot(&s).await;

    for case in cases {
        let name = case["name"].as_str().expect("name");
        let bytes = if let Some(raw) = case.get("raw") {
            raw.as_str().expect("raw is a string").as_bytes().to_vec()
        } else if let Some(kind) = case.get("generate") {
            generate(kind.as_str().expect("generator name"))
        } else {
            serde_json::to_vec(&case["payload"]).expect("serialise payload")
        };
        let err = match s.enqueue.invoke_raw(bytes, Duration::from_secs(30)).await {
            Ok(reply) => panic!("{name}: accepted, replied {reply}"),
            Err(e) => e,
        };
        assert_eq!(err.error_type, case["error_type"].as_str().unwrap(), "{name}: {err:?}");
        let field = case["field"].as_str().expect("field");
        assert!(
            err.error_message.starts_with(&format!("{field}:")),
            "{name}: message does not name {field}: {}",
            err.error_message
        );
        assert!(
            err.error_message.len() < 2_000,
            "{name}: message is {} bytes",
            err.error_message.len()
        );
    }
    assert_eq!(snapshot(&s).await, before, "the catalog changed tables or queues");
}
