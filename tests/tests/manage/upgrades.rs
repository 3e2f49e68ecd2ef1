//! Issue 74, mixed versions: today's functions over items of a later release's format (an
//! `item_format` above `ITEM_FORMAT`, and an attribute they do not know), as an old poller
//! meets them during a stack update's minutes or after a rollback. Built from this code: the
//! "later release" is today's items with the format raised, not a second checkout.
//! Nothing of such an item is sent, removed or rewritten; the poller counts it, and a FIFO
//! group waits behind it. Once the format is one the functions read, everything goes, in order.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{TimeDelta, Utc};
use e2e::emulator::scan_all;
use e2e::rig::{assert_all_scheduled, make_all_due, setup};
use serde_json::json;
use waiter::aws::codec::{A_ITEM_FORMAT, A_JOB_ID, ITEM_FORMAT};

type Item = HashMap<String, AttributeValue>;

async fn item_of(ddb: &aws_sdk_dynamodb::Client, table: &str, job_id: &str) -> Option<Item> {
    scan_all(ddb, table)
        .await
        .into_iter()
        .find(|i| i.get(A_JOB_ID) == Some(&AttributeValue::S(job_id.to_owned())))
}

/// Rewrites a stored job as a later release would write a kind this one does not know.
async fn as_later_release(ddb: &aws_sdk_dynamodb::Client, table: &str, job_id: &str) -> Item {
    let mut item = item_of(ddb, table, job_id).await.expect("stored");
    item.insert(A_ITEM_FORMAT.into(), AttributeValue::N((ITEM_FORMAT + 1).to_string()));
    item.insert("a_later_field".into(), AttributeValue::S("meaning unknown here".into()));
    ddb.put_item()
        .table_name(table)
        .set_item(Some(item.clone()))
        .send()
        .await
        .expect("PutItem");
    item
}

#[tokio::test(flavor = "multi_thread")]
async fn items_of_a_later_format_are_left_untouched_counted_and_hold_their_fifo_group() {
    let mut s = setup(
        &["orders", "billing.fifo"],
        &[("WAITER_SHARDS", "1"), ("WAITER_DIRECT_MAX_DELAY", "0")],
    )
    .await;
    let job = |queue: &str, id: &str, group: Option<&str>| {
        let mut j = json!({"queue": queue, "job_id": id, "message_body": id, "delay_seconds": 3600});
        if let Some(g) = group {
            j["message_group_id"] = json!(g);
        }
        j
    };
    assert_all_scheduled(
        &s.enqueue_ok(json!({"jobs": [job("orders", "a", None), job("orders", "b", None)]}))
            .await,
    );
    // f1 before f2 in group g (due in job_id order at one time), h1 alone in group h.
    assert_all_scheduled(
        &s.enqueue_ok(
            json!({"jobs": [job("billing.fifo", "f1", Some("g")), job("billing.fifo", "f2", Some("g")),
                                      job("billing.fifo", "h1", Some("h"))]}),
        )
        .await,
    );
    let ddb = s.emu.dynamodb.clone();
    let due = Utc::now() - TimeDelta::seconds(1);
    for table in ["waiter-orders", "waiter-billing.fifo"] {
        make_all_due(&ddb, table, due).await;
    }
    let b = as_later_release(&ddb, "waiter-orders", "b").await;
    let f1 = as_later_release(&ddb, "waiter-billing.fifo", "f1").await;

    let run = s.poll().await;
    assert_eq!(run["unreadable"], 2, "b and f1 met and counted: {run}");
    assert_eq!(run["dispatched"], 2, "a and h1 only: {run}");
    assert_eq!(run["drained"], false, "what was left is due: {run}");
    let mut got = Vec::new();
    for i in 0..2 {
        let url = s.urls[i].clone();
        got.extend(s.emu.receive_for(&url, Duration::from_secs(3), usize::MAX).await);
    }
    let mut bodies: Vec<_> = got.iter().filter_map(|r| r.message.body().map(str::to_owned)).collect();
    bodies.sort();
    assert_eq!(bodies, ["a", "h1"], "f2 waits behind f1 in group g");
    // Untouched: byte for byte what the later release wrote.
    assert_eq!(item_of(&ddb, "waiter-orders", "b").await.as_ref(), Some(&b));
    assert_eq!(item_of(&ddb, "waiter-billing.fifo", "f1").await.as_ref(), Some(&f1));
    assert!(
        item_of(&ddb, "waiter-billing.fifo", "f2").await.is_some(),
        "f2 still stored"
    );

    // The enqueue function refuses, retryably, to act on what it cannot read, and names why.
    for request in [
        json!({"action": "get", "queue": "orders", "job_id": "b"}),
        json!({"action": "cancel", "queue": "orders", "job_id": "b"}),
        json!({"action": "reschedule", "queue": "orders", "job_id": "b", "delay_seconds": 60}),
        json!({"queue": "orders", "job_id": "b", "message_body": "again", "delay_seconds": 3600}),
    ] {
        let e = s.enqueue.invoke(&request).await.expect_err("refused");
        assert_eq!(e.error_type, "DependencyFailure", "{request}: {e:?}");
        assert!(e.error_message.contains("item_format"), "{request}: {e:?}");
    }
    assert_eq!(
        item_of(&ddb, "waiter-orders", "b").await.as_ref(),
        Some(&b),
        "still untouched"
    );

    // The functions read the format now (the update reached them): everything goes, f1 before f2.
    for (table, id) in [("waiter-orders", "b"), ("waiter-billing.fifo", "f1")] {
        let mut item = item_of(&ddb, table, id).await.expect("stored");
        item.remove(A_ITEM_FORMAT);
        ddb.put_item()
            .table_name(table)
            .set_item(Some(item))
            .send()
            .await
            .expect("PutItem");
    }
    let run = s.poll().await;
    assert_eq!(
        (run["dispatched"].clone(), run["unreadable"].clone()),
        (json!(3), json!(0)),
        "{run}"
    );
    let url = s.urls[1].clone();
    let fifo = s.emu.receive_for(&url, Duration::from_secs(3), usize::MAX).await;
    let order: Vec<_> = fifo.iter().filter_map(|r| r.message.body()).collect();
    assert_eq!(order, ["f1", "f2"]);
}
