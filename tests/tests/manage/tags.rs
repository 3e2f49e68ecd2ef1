//! Tags end to end (issue 83), through the real `enqueue` and poller on the emulator: tagged and
//! untagged jobs, a `list` by tags paged, a retried attempt that keeps its tags, a refused job
//! that leaves nothing, and a `cancel_many` by tag that cancels exactly the tagged jobs while
//! the rest are delivered. Tags are never message attributes.

use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{TimeDelta, Utc};
use e2e::rig::{assert_all_scheduled, make_all_due, setup};
use serde_json::{json, Value};

/// Every page of a request that answers with a cursor, until `null`.
async fn pages(s: &mut e2e::rig::Setup, mut request: Value) -> Vec<Value> {
    let mut all = Vec::new();
    for _ in 0..200 {
        let r = s.enqueue_ok(request.clone()).await;
        let cursor = r["cursor"].clone();
        all.push(r);
        if cursor.is_null() {
            return all;
        }
        request["cursor"] = cursor;
    }
    panic!("the listing never ended");
}

#[tokio::test(flavor = "multi_thread")]
async fn jobs_are_listed_and_cancelled_by_tag_exactly_and_the_rest_are_delivered() {
    let mut s = setup(
        &["orders"],
        &[
            ("WAITER_SHARDS", "4"),
            ("WAITER_DIRECT_MAX_DELAY", "0"),
            ("WAITER_HISTORY_DAYS", "0"),
        ],
    )
    .await;
    // 30 jobs: every third of customer 42 (half of those in the xmas campaign), the rest of
    // customer 7 or untagged.
    let mut tagged = Vec::new();
    let jobs: Vec<Value> = (0..30)
        .map(|i| {
            let id = format!("t{i:02}");
            let tags = match i % 3 {
                0 if i % 2 == 0 => json!({"customer": "42", "campaign": "xmas"}),
                0 => json!({"customer": "42"}),
                1 => json!({"customer": "7"}),
                _ => json!({}),
            };
            if i % 3 == 0 {
                tagged.push(id.clone());
            }
            json!({"queue": "orders", "job_id": id, "message_body": id, "delay_seconds": 3600 + i, "tags": tags})
        })
        .collect();
    assert_all_scheduled(&s.enqueue_ok(json!({ "jobs": jobs })).await);
    // Refused tags leave nothing behind.
    let too_many: serde_json::Map<String, Value> = (0..11).map(|i| (format!("k{i}"), json!("v"))).collect();
    let refused = s
        .enqueue
        .invoke(
            &json!({"queue": "orders", "job_id": "bad", "message_body": "x", "delay_seconds": 3600, "tags": too_many}),
        )
        .await
        .expect_err("refused");
    assert_eq!(refused.error_type, "InvalidRequest");
    assert_eq!(refused.error_message, "tags: at most 10 tags, got 11");
    assert_eq!(s.table_len("orders").await, 30, "nothing stored");
    // Stored as one map, and marked format 2 so that an earlier release leaves the item alone.
    let item = s
        .emu
        .stored_jobs("waiter-orders")
        .await
        .into_iter()
        .find(|i| i.get("job_id") == Some(&AttributeValue::S("t00".into())))
        .expect("t00 stored");
    assert_eq!(item.get("item_format"), Some(&AttributeValue::N("2".into())));

    let listed = pages(
        &mut s,
        json!({"action": "list", "queue": "orders", "tags": {"customer": "42"}, "limit": 3}),
    )
    .await;
    let mut ids: Vec<String> = listed
        .iter()
        .flat_map(|p| p["jobs"].as_array().cloned().unwrap_or_default())
        .map(|j| {
            assert_eq!(j["tags"]["customer"], "42", "{j}");
            j["job_id"].as_str().unwrap_or_default().to_owned()
        })
        .collect();
    ids.sort();
    assert_eq!(ids, tagged, "every page of the listing");
    assert!(listed.iter().all(|p| p["scanned"].is_u64()), "{listed:?}");
    let both = pages(
        &mut s,
        json!({"action": "list", "queue": "orders", "tags": {"customer": "42", "campaign": "xmas"}}),
    )
    .await;
    assert_eq!(
        both.iter()
            .map(|p| p["jobs"].as_array().map_or(0, Vec::len))
            .sum::<usize>(),
        5
    );

    // A tagged job sent and retried: its attempt 2 keeps the tags (history is off: a tagged
    // job's record is kept whatever the settings).
    let ddb = s.emu.dynamodb.clone();
    s.enqueue_ok(
        json!({"queue": "orders", "job_id": "r-1", "message_body": "r-1", "delay_seconds": 3600,
                        "tags": {"customer": "42"}}),
    )
    .await;
    make_all_due(&ddb, "waiter-orders", Utc::now() - TimeDelta::seconds(1)).await;
    let r1 = "r-1".to_owned();
    let got = s
        .poll_and_receive(0, 31, Duration::from_secs(2), Duration::from_secs(60))
        .await;
    assert_eq!(got.len(), 31, "every job delivered once");
    assert!(
        got.iter().all(|m| m
            .message
            .message_attributes()
            .is_none_or(|a| !a.keys().any(|k| k.contains("customer") || k.contains("campaign")))),
        "tags are not message attributes"
    );
    let retried = s
        .enqueue_ok(
            json!({"action": "retry", "queue": "orders", "job_id": r1, "attempt": 1, "message_body": "r-1",
                           "backoff": {"base_s": 3600, "factor": 2, "jitter": false}}),
        )
        .await;
    assert_eq!(retried["status"], "scheduled", "{retried}");
    let g = s
        .enqueue_ok(json!({"action": "get", "queue": "orders", "job_id": "r-1"}))
        .await;
    assert_eq!(
        (g["attempt"].as_u64(), &g["tags"]),
        (Some(2), &json!({"customer": "42"})),
        "{g}"
    );

    // Enqueued again, tagged as before: cancel_many by tag takes exactly those and the attempt.
    let again: Vec<Value> = (0..30)
        .map(|i| {
            let tags = if i % 3 == 0 {
                json!({"customer": "42"})
            } else {
                json!({})
            };
            json!({"queue": "orders", "job_id": format!("u{i:02}"), "message_body": format!("u{i:02}"),
                   "delay_seconds": 3600 + i, "tags": tags})
        })
        .collect();
    assert_all_scheduled(&s.enqueue_ok(json!({ "jobs": again })).await);
    let cancelled = pages(
        &mut s,
        json!({"action": "cancel_many", "queue": "orders", "tags": {"customer": "42"}, "limit": 4}),
    )
    .await;
    let count = |field: &str| cancelled.iter().map(|p| p[field].as_u64().unwrap_or(0)).sum::<u64>();
    assert_eq!((count("cancelled"), count("dispatching")), (11, 0), "{cancelled:?}");
    assert_eq!(s.table_len("orders").await, 20, "the untagged stay");
    make_all_due(&ddb, "waiter-orders", Utc::now() - TimeDelta::seconds(1)).await;
    let got = s
        .poll_and_receive(0, 20, Duration::from_secs(2), Duration::from_secs(60))
        .await;
    let mut bodies: Vec<String> = got.iter().filter_map(|m| m.message.body().map(str::to_owned)).collect();
    bodies.sort();
    let want: Vec<String> = (0..30).filter(|i| i % 3 != 0).map(|i| format!("u{i:02}")).collect();
    assert_eq!(bodies, want, "the rest delivered, once, and none of the cancelled");
}
