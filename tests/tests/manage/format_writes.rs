//! Issue 82 (3), through the real adapter: every write of a job read a moment ago is
//! conditional on the item being still of a format this release reads. A later release that
//! wrote the item since (its own attribute added, `item_format` raised, `version` kept) is
//! never written over, so what it added is never dropped.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::TimeDelta;
use e2e::emulator::scan_all;
use e2e::rig::setup;
use serde_json::json;
use waiter::aws::codec::{A_ITEM_FORMAT, A_JOB_ID, ITEM_FORMAT};
use waiter::ports::{History, HistoryStatus, JobKey, Jobs, Partition, RemoveOutcome, ReplaceOutcome, StoredJob};

type Item = HashMap<String, AttributeValue>;

#[tokio::test(flavor = "multi_thread")]
async fn no_write_lands_on_an_item_that_a_later_release_wrote_since_it_was_read() {
    let mut s = setup(&["orders"], &[("WAITER_SHARDS", "1"), ("WAITER_DIRECT_MAX_DELAY", "0")]).await;
    s.enqueue_ok(json!({"queue": "orders", "job_id": "a", "message_body": "a", "delay_seconds": 3600}))
        .await;
    let env: HashMap<String, String> = s.env.iter().cloned().collect();
    let config = std::sync::Arc::new(waiter::Config::from_lookup(|k| env.get(k).cloned()).expect("config"));
    let ddb = s.emu.dynamodb.clone();
    let store = waiter::aws::DynamoStore::new(ddb.clone(), config);
    let queue = waiter::QueueName::parse("orders").expect("queue");
    let read: StoredJob = store
        .read(&queue, &[JobKey::in_each("a", &[Partition::Shard(0)]).remove(0)])
        .await
        .expect("read")
        .pop()
        .expect("stored");

    // Meanwhile a later release writes the item: its format, its attribute, the same version.
    let item_of = || async {
        scan_all(&ddb, "waiter-orders")
            .await
            .into_iter()
            .find(|i: &Item| i.get(A_JOB_ID) == Some(&AttributeValue::S("a".into())))
            .expect("stored")
    };
    let mut later = item_of().await;
    later.insert(A_ITEM_FORMAT.into(), AttributeValue::N((ITEM_FORMAT + 1).to_string()));
    later.insert("a_later_field".into(), AttributeValue::S("kept".into()));
    ddb.put_item()
        .table_name("waiter-orders")
        .set_item(Some(later.clone()))
        .send()
        .await
        .expect("PutItem");

    let mut next = read.clone();
    next.job.perform_at += TimeDelta::minutes(5);
    next.version += 1;
    assert_eq!(
        store.rewrite(&read, &next).await.expect("rewrite"),
        ReplaceOutcome::Changed
    );
    assert_eq!(
        store.replace(&read, &next).await.expect("replace"),
        ReplaceOutcome::Changed
    );
    let record = History::of(
        &read,
        HistoryStatus::Cancelled,
        chrono::Utc::now(),
        None,
        TimeDelta::days(1),
    );
    assert_eq!(
        store.cancel(&read, Some(&record)).await.expect("cancel"),
        RemoveOutcome::Changed
    );
    assert!(!store.put_over(&read, &record).await.expect("put_over"));
    assert_eq!(item_of().await, later, "byte for byte what the later release wrote");
}
