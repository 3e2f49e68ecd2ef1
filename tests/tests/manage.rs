//! Managing stored jobs end to end, through the real `enqueue` function: `reschedule` (versions,
//! conflicts, a job moved near arriving on time) and `list` (every shard, in time order, paged).

use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use e2e::rig::{histogram_counts, in_secs, parse_time, setup};
use serde_json::{json, Value};

#[path = "manage/expressions.rs"]
mod expressions;
#[path = "manage/format_writes.rs"]
mod format_writes;
#[path = "manage/pause.rs"]
mod pause;
#[path = "manage/rights.rs"]
mod rights;
#[path = "manage/series.rs"]
mod series;
#[path = "manage/tags.rs"]
mod tags;
#[path = "manage/upgrades.rs"]
mod upgrades;

#[tokio::test(flavor = "multi_thread")]
async fn reschedule_changes_a_stored_job_by_version_and_a_job_moved_near_arrives_on_time() {
    let mut s = setup(
        &["orders"],
        &[("WAITER_LOOKAHEAD", "120"), ("WAITER_DIRECT_MAX_DELAY", "0")],
    )
    .await;
    for id in ["a", "b"] {
        let r = s
            .enqueue_ok(
                json!({"queue": "orders", "job_id": id, "message_body": format!("old-{id}"), "delay_seconds": 86_400}),
            )
            .await;
        assert_eq!(r["status"], "scheduled", "{r}");
    }

    let week = in_secs(7.0 * 86_400.0);
    let r = s
        .enqueue_ok(
            json!({"action": "reschedule", "queue": "orders", "job_id": "a", "perform_at": week, "if_version": 1}),
        )
        .await;
    assert_eq!(r["status"], "rescheduled", "{r}");
    assert_eq!(r["version"], 2);
    let got = s
        .enqueue_ok(json!({"action": "get", "queue": "orders", "job_id": "a"}))
        .await;
    assert_eq!(
        parse_time(got["perform_at"].as_str().unwrap()),
        parse_time(r["perform_at"].as_str().unwrap())
    );
    assert_eq!(got["message_body"], "old-a", "fields not given keep their values");
    assert_eq!(got["version"], 2);

    let stale = s
        .enqueue_ok(
            json!({"action": "reschedule", "queue": "orders", "job_id": "a", "delay_seconds": 60, "if_version": 1}),
        )
        .await;
    assert_eq!(stale["status"], "conflict", "{stale}");
    assert_eq!(stale["version"], 2);
    let missing = s
        .enqueue_ok(json!({"action": "reschedule", "queue": "orders", "job_id": "zz", "delay_seconds": 60}))
        .await;
    assert_eq!(missing["status"], "not_found");

    // From tomorrow to "in 4 s", with a new body: sent by the reschedule itself, on time.
    let due = in_secs(4.0);
    let r = s
        .enqueue_ok(json!({"action": "reschedule", "queue": "orders", "job_id": "b", "perform_at": due, "message_body": "new-b"}))
        .await;
    assert_eq!(r["status"], "rescheduled", "{r}");
    let due = parse_time(r["perform_at"].as_str().unwrap());
    let url = s.urls[0].clone();
    let got = s.emu.receive_for(&url, Duration::from_secs(10), 1).await;
    assert_eq!(got.len(), 1, "the job moved near arrived without a poller run");
    assert_eq!(got[0].message.body(), Some("new-b"), "the new version was sent");
    assert!(got[0].at >= due, "early: {} before {due}", got[0].at);
    assert!(
        got[0].at - due < chrono::TimeDelta::milliseconds(2_500),
        "late: {} after {due}",
        got[0].at
    );
    assert_eq!(s.table_len("orders").await, 1, "only a is still stored");
    let polled = s.poll().await;
    assert_eq!(polled["dispatched"], 0, "nothing left to send: {polled}");
    // The reply names the release that ran (docs/upgrades.md).
    assert_eq!(polled["version"], env!("CARGO_PKG_VERSION"), "{polled}");
}

/// Every page of a listing, following cursors until `null`.
async fn list_all(s: &mut e2e::rig::Setup, mut request: Value) -> Vec<Value> {
    let mut all = Vec::new();
    for _ in 0..1_000 {
        let r = s.enqueue_ok(request.clone()).await;
        all.extend(r["jobs"].as_array().expect("jobs").iter().cloned());
        match &r["cursor"] {
            Value::Null => return all,
            c => request["cursor"] = c.clone(),
        }
    }
    panic!("the listing never ended");
}

/// `got` lists exactly the jobs of `want`, each once and at its `perform_at`, in `perform_at`
/// order (equal `perform_at` in no promised order).
fn assert_listed(got: &[Value], want: &[(chrono::DateTime<chrono::Utc>, String)]) {
    let at = |j: &Value| parse_time(j["perform_at"].as_str().unwrap());
    assert!(
        got.windows(2).all(|w| at(&w[0]) <= at(&w[1])),
        "not in perform_at order: {got:?}"
    );
    let mut listed: Vec<(i64, String)> = got
        .iter()
        .map(|j| (at(j).timestamp_millis(), j["job_id"].as_str().unwrap().to_owned()))
        .collect();
    let mut want: Vec<(i64, String)> = want.iter().map(|(t, id)| (t.timestamp_millis(), id.clone())).collect();
    listed.sort();
    want.sort();
    assert_eq!(listed, want);
}

#[tokio::test(flavor = "multi_thread")]
async fn list_pages_every_shard_in_time_order() {
    let mut s = setup(&["orders"], &[("WAITER_SHARDS", "4"), ("WAITER_DIRECT_MAX_DELAY", "0")]).await;
    // 40 jobs over 8 instants: ties across and within shards, ids not in time order.
    let base = chrono::Utc::now() + chrono::TimeDelta::hours(3);
    let mut expected = Vec::new();
    let jobs: Vec<Value> = (0..40u32)
        .map(|i| {
            let id = format!("{}-{:02}", if i % 4 == 0 { "vip" } else { "job" }, (i * 17) % 40);
            let at = base + chrono::TimeDelta::minutes(i64::from(i % 8));
            expected.push((at, id.clone()));
            json!({"queue": "orders", "job_id": id, "message_body": "x", "perform_at": at.to_rfc3339()})
        })
        .collect();
    s.enqueue_ok(json!({"jobs": jobs})).await;
    expected.sort();

    let got = list_all(&mut s, json!({"action": "list", "queue": "orders", "limit": 7})).await;
    assert_listed(&got, &expected);
    assert!(got
        .iter()
        .all(|j| j["status"] == "scheduled" && j.get("message_body").is_none()));

    let vip = list_all(
        &mut s,
        json!({"action": "list", "queue": "orders", "prefix": "vip-", "limit": 3}),
    )
    .await;
    let want_vip: Vec<_> = expected
        .iter()
        .filter(|(_, id)| id.starts_with("vip-"))
        .cloned()
        .collect();
    assert_listed(&vip, &want_vip);

    let first = s
        .enqueue_ok(json!({"action": "list", "queue": "orders", "limit": 2, "with_body": true}))
        .await;
    assert_eq!(first["jobs"][0]["message_body"], "x");
    let err = s
        .enqueue
        .invoke(&json!({"action": "list", "queue": "orders", "status": "parked", "cursor": first["cursor"]}))
        .await
        .expect_err("a cursor of another listing");
    assert_eq!(err.error_type, "InvalidRequest");
    assert!(err.error_message.starts_with("cursor:"), "{}", err.error_message);
}

#[tokio::test(flavor = "multi_thread")]
async fn history_answers_get_and_idempotency_after_dispatch_and_ttl_removes_it() {
    let mut s = setup(
        &["orders"],
        &[("WAITER_DIRECT_MAX_DELAY", "0"), ("WAITER_LOOKAHEAD", "5")],
    )
    .await;
    let enqueue = json!({"queue": "orders", "job_id": "h-1", "message_body": "secret body", "delay_seconds": 2});
    assert_eq!(s.enqueue_ok(enqueue.clone()).await["status"], "scheduled");
    let got = s
        .poll_and_receive(0, 1, Duration::from_secs(1), Duration::from_secs(20))
        .await;
    assert_eq!(got.len(), 1);
    let message_id = got[0].message.message_id().expect("message id").to_owned();

    let h = s
        .enqueue_ok(json!({"action": "get", "queue": "orders", "job_id": "h-1"}))
        .await;
    assert_eq!(h["status"], "dispatched", "{h}");
    assert_eq!(h["message_id"], message_id.as_str());
    assert!(h["sent_at"].is_string() && h.get("message_body").is_none(), "{h}");

    // A retry that arrives after the dispatch sends nothing.
    let again = s.enqueue_ok(enqueue).await;
    assert_eq!(again["duplicate"], true, "{again}");
    assert_eq!(again["status"], "dispatched");
    assert_eq!(s.table_len("orders").await, 0, "nothing stored");
    assert!(s
        .emu
        .receive_for(&s.urls[0].clone(), Duration::from_secs(3), 1)
        .await
        .is_empty());

    // The record: the job's key, no body, no perform_at (so never in the index), a TTL.
    let items = s.emu.scan("waiter-orders").await;
    let record = items
        .iter()
        .find(|i| i.get("job_id").and_then(|v| v.as_s().ok()).map(String::as_str) == Some("h-1"))
        .expect("a history record");
    assert!(
        !record.contains_key("message_body") && !record.contains_key("perform_at"),
        "{record:?}"
    );
    let purge: i64 = record["purge_at"]
        .as_n()
        .expect("purge_at is a number")
        .parse()
        .expect("whole seconds");
    let week = chrono::Utc::now().timestamp() + 7 * 86_400;
    assert!((purge - week).abs() < 60, "purge_at {purge}, expected about {week}");

    // Past its time, and not yet removed by TTL (which takes up to days): the id takes a new
    // job, whose versions follow the last life's (issue 23, 11d).
    let mut past = record.clone();
    past.insert(
        "purge_at".into(),
        AttributeValue::N((chrono::Utc::now().timestamp() - 60).to_string()),
    );
    past.insert("version".into(), AttributeValue::N("4".into()));
    s.emu
        .dynamodb
        .put_item()
        .table_name("waiter-orders")
        .set_item(Some(past))
        .send()
        .await
        .expect("PutItem");
    let later = json!({"queue": "orders", "job_id": "h-1", "message_body": "next life", "delay_seconds": 3600});
    assert_eq!(s.enqueue_ok(later).await["status"], "scheduled");
    let got = s
        .enqueue_ok(json!({"action": "get", "queue": "orders", "job_id": "h-1"}))
        .await;
    assert_eq!(got["status"], "scheduled", "{got}");
    assert_eq!(got["version"], 5, "the new life follows the last one's versions: {got}");
    let stale = s
        .enqueue_ok(
            json!({"action": "reschedule", "queue": "orders", "job_id": "h-1", "delay_seconds": 60, "if_version": 1}),
        )
        .await;
    assert_eq!(stale["status"], "conflict", "{stale}");
}

#[tokio::test(flavor = "multi_thread")]
async fn cancel_many_and_stats_through_the_function() {
    let mut s = setup(&["orders"], &[("WAITER_SHARDS", "4"), ("WAITER_DIRECT_MAX_DELAY", "0")]).await;
    let jobs: Vec<Value> = (0..12)
        .map(|i| {
            json!({"queue": "orders", "job_id": format!("{}-{i}", if i < 4 { "x" } else { "y" }),
                   "message_body": "b", "delay_seconds": 600 + 3600 * (i % 3)})
        })
        .collect();
    s.enqueue_ok(json!({"jobs": jobs})).await;

    let stats = s
        .enqueue_ok(json!({"action": "stats", "queue": "orders", "buckets": 3, "bucket_s": 3600}))
        .await;
    assert_eq!(stats["scheduled"], 12, "{stats}");
    assert_eq!(stats["overdue"], 0);
    assert_eq!(stats["parked"], 0);
    let counts = histogram_counts(&stats);
    assert_eq!(counts, [4, 4, 4], "{stats}");
    assert!(stats["next_due"].is_string());

    let r = s
        .enqueue_ok(json!({"action": "cancel_many", "queue": "orders", "job_ids": ["x-0", "x-1", "nope"]}))
        .await;
    assert_eq!(
        (r["cancelled"].as_u64(), r["not_found"].as_u64()),
        (Some(2), Some(1)),
        "{r}"
    );
    // Ids named twice: cancelled once, and read once (DynamoDB refuses a BatchGetItem that
    // names a key twice).
    let r = s
        .enqueue_ok(json!({"action": "cancel_many", "queue": "orders", "job_ids": ["x-2", "x-2"]}))
        .await;
    assert_eq!(
        (r["cancelled"].as_u64(), r["not_found"].as_u64()),
        (Some(1), Some(0)),
        "{r}"
    );
    let r = s
        .enqueue_ok(json!({"action": "redrive", "queue": "orders", "job_ids": ["ghost", "ghost"]}))
        .await;
    assert_eq!(r["results"][0]["status"], "not_found", "{r}");
    assert_eq!(r["results"][1]["status"], "not_found", "{r}");
    let r = s
        .enqueue_ok(json!({"action": "cancel_many", "queue": "orders", "prefix": "x-", "limit": 1000}))
        .await;
    assert_eq!(r["cancelled"], 1, "{r}");
    assert_eq!(r["cursor"], Value::Null);
    assert_eq!(s.table_len("orders").await, 8);
    let got = s
        .enqueue_ok(json!({"action": "get", "queue": "orders", "job_id": "x-3"}))
        .await;
    assert_eq!(got["status"], "cancelled");
    let err = s
        .enqueue
        .invoke(&json!({"action": "cancel_many", "queue": "orders"}))
        .await
        .expect_err("cancel_many without a selection");
    assert!(err.error_message.starts_with("job_ids:"), "{}", err.error_message);
    assert_eq!(s.table_len("orders").await, 8);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_found_outside_its_windows_is_moved_by_the_poller_not_sent() {
    let mut s = setup(&["orders"], &[("WAITER_SHARDS", "1"), ("WAITER_DIRECT_MAX_DELAY", "0")]).await;
    // A one-hour window starting three hours from now (UTC), as clock times.
    let open = chrono::Utc::now() + chrono::TimeDelta::hours(3);
    let from = open.format("%H:00").to_string();
    let to = (open + chrono::TimeDelta::hours(1)).format("%H:00").to_string();
    let r = s
        .enqueue_ok(
            json!({"queue": "orders", "job_id": "win", "message_body": "b", "windows": [{"from": from, "to": to}]}),
        )
        .await;
    assert_eq!(r["status"], "scheduled", "{r}");
    let opening = r["perform_at"].clone();
    assert!(
        parse_time(opening.as_str().unwrap()) > chrono::Utc::now() + chrono::TimeDelta::hours(2),
        "{r}"
    );

    // As after an outage: the stored job is overdue, and now is outside its window.
    let overdue = (chrono::Utc::now().timestamp() - 30).to_string();
    s.emu
        .dynamodb
        .update_item()
        .table_name("waiter-orders")
        .key(
            "scheduler",
            aws_sdk_dynamodb::types::AttributeValue::S("orders#0".into()),
        )
        .key("job_id", aws_sdk_dynamodb::types::AttributeValue::S("win".into()))
        .update_expression("SET perform_at = :p")
        .expression_attribute_values(":p", aws_sdk_dynamodb::types::AttributeValue::N(overdue))
        .send()
        .await
        .expect("make the job overdue");
    let mut summary = json!({});
    for _ in 0..10 {
        summary = s.poll().await;
        if summary["moved"] == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(300)).await; // the index may lag
    }
    assert_eq!(
        (summary["moved"].as_u64(), summary["dispatched"].as_u64()),
        (Some(1), Some(0)),
        "{summary}"
    );
    let got = s
        .enqueue_ok(json!({"action": "get", "queue": "orders", "job_id": "win"}))
        .await;
    assert_eq!(got["perform_at"], opening, "moved back to the next opening: {got}");
    assert!(
        got["maybe_delivered_at"].is_null(),
        "no run could have sent it: it is not marked as maybe delivered: {got}"
    );
    assert!(
        s.emu
            .receive_for(&s.urls[0].clone(), Duration::from_secs(2), 1)
            .await
            .is_empty(),
        "nothing sent"
    );
}

/// Defect 4 of issue 23: more jobs at one `perform_at` in one shard than a call reads. The
/// cursor resumes inside the group (an exclusive start key on the index), so a prefix that
/// skips the whole group still gets past it, and paging lists every job once.
#[tokio::test(flavor = "multi_thread")]
async fn a_cursor_gets_through_a_tie_group_larger_than_a_call_reads() {
    const GROUP: usize = 2_400;
    let mut s = setup(&["orders"], &[("WAITER_SHARDS", "1"), ("WAITER_DIRECT_MAX_DELAY", "0")]).await;
    let at = chrono::Utc::now() + chrono::TimeDelta::hours(3);
    let later = at + chrono::TimeDelta::seconds(1);
    let mut expected: Vec<_> = (0..GROUP).map(|i| (at, format!("tie-{i:05}"))).collect();
    expected.push((later, "needle".to_owned()));
    for chunk in expected.chunks(600) {
        let jobs: Vec<Value> = chunk
            .iter()
            .map(|(t, id)| json!({"queue": "orders", "job_id": id, "message_body": "x", "perform_at": t.to_rfc3339()}))
            .collect();
        s.enqueue_ok(json!({"jobs": jobs})).await;
    }
    let mut request = json!({"action": "list", "queue": "orders", "prefix": "needle"});
    let (mut found, mut calls) = (Vec::new(), 0);
    loop {
        calls += 1;
        assert!(calls <= 10, "the cursor does not get past the group");
        let r = s.enqueue_ok(request.clone()).await;
        found.extend(r["jobs"].as_array().unwrap().iter().map(|j| j["job_id"].clone()));
        match &r["cursor"] {
            Value::Null => break,
            c => request["cursor"] = c.clone(),
        }
    }
    assert_eq!(found, [json!("needle")]);
    let all = list_all(&mut s, json!({"action": "list", "queue": "orders", "limit": 1000})).await;
    assert_listed(&all, &expected);
}
