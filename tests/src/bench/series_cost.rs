//! What one occurrence of a series costs (issue 47): the calls counted at the proxy while the
//! poller sends series' occurrences (one per series a run), the move's write units as DynamoDB
//! Local reports them for a series' item, and dollars per million occurrences.
//!
//! The move is an `UPDATE` of `perform_at`, `occurrences` and `version`: 1 write unit per KB of
//! the item on the table, and, since `perform_at` keys the due index, 2 on the index (the entry
//! at the old time out, the new one in; DynamoDB developer guide, "Provisioned throughput
//! considerations for global secondary indexes").

use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity};
use chrono::{TimeDelta, Utc};
use serde::Serialize;
use serde_json::{json, Value};

use crate::runtime_api::{binary_path, Profile};
use crate::Function;

use super::*;

#[derive(Debug, Clone, Serialize)]
pub struct SeriesCost {
    pub series: usize,
    /// Occurrences each series sends (its `count`).
    pub occurrences_each: u64,
    /// Messages SQS accepted, and the calls the moves took, counted at the proxy.
    pub messages: usize,
    pub send_batches: usize,
    pub statements: usize,
    pub transaction_items: usize,
    pub poller_runs: usize,
    pub item_bytes: usize,
    /// Per occurrence: send entries, SQS requests, and write units of the move (table and
    /// index), as modelled and as DynamoDB Local reported them for one series' move.
    pub entries_per_occurrence: f64,
    pub sqs_requests_per_occurrence: f64,
    pub statements_per_occurrence: f64,
    pub modelled_table_write_units: f64,
    pub modelled_index_write_units: f64,
    pub measured_move_units: f64,
    pub on_demand_per_million: f64,
    pub provisioned_per_million: f64,
}

/// Enqueues `series` series every 60 s over `shards`, each `count` occurrences all missed (`catch_up: all`),
/// then runs the poller until every one has sent them all; counts the calls at the proxy. The
/// table is on DynamoDB Local where the backend has no PartiQL (`Rig::for_partiql`).
pub async fn series_cost(series: usize, count: u64, shards: u32, profile: Profile) -> SeriesCost {
    let shards = shards.to_string();
    let rig = crate::rig::Rig::builder(&["orders"])
        .proxy(0, 0.0)
        .for_partiql()
        .settings(&[
            ("WAITER_DIRECT_MAX_DELAY", "0"),
            ("WAITER_LOOKAHEAD", "0"),
            ("WAITER_SHARDS", &shards),
            ("WAITER_HISTORY_DAYS", "7"),
            ("RUST_LOG", "warn"),
        ])
        .start()
        .await;
    let (emu, env, url) = (&rig.emu, &rig.env, rig.urls[0].clone());
    let proxies = proxies_of(&rig);
    let calls = |op: &str| proxies.iter().map(|p| p.calls(op)).sum::<usize>();
    let mut enqueue = Function::start_binary(binary_path("enqueue", profile), "enqueue", env).await;
    let mut poller = Function::start_binary(binary_path("poller", profile), "poller", env).await;
    let start = rfc3339(Utc::now() - TimeDelta::seconds(60 * count as i64 + 120));
    for chunk in 0..series.div_ceil(100) {
        let batch: Vec<Value> = (chunk * 100..((chunk + 1) * 100).min(series))
            .map(|i| {
                json!({"queue": "orders", "job_id": format!("s{i}"), "message_body": super::json_body(i, 200),
                       "perform_at": start, "repeat": {"every_s": 60, "count": count, "catch_up": "all"}})
            })
            .collect();
        enqueue.invoke(&json!({"jobs": batch})).await.expect("enqueue");
    }
    let before = |op: &str| calls(op);
    let (batches0, statements0, items0) = (
        before("SendMessageBatch"),
        before("BatchExecuteStatement/statements"),
        before("TransactWriteItems/items"),
    );
    let mut poller_runs = 0;
    while poller_runs < count as usize + 3 {
        poller.invoke(&json!({})).await.expect("poller");
        poller_runs += 1;
        if rig_tables_empty(&rig).await {
            break;
        }
    }
    // Nothing consumes: every message SQS accepted is in the queue (all were due, no delay).
    let messages = emu.queue_counts(&url).await.values().sum();
    let send_batches = calls("SendMessageBatch") - batches0;
    let statements = calls("BatchExecuteStatement/statements") - statements0;
    let transaction_items = calls("TransactWriteItems/items") - items0;
    let occurrences = (series as u64 * count).max(1) as f64;
    // One series' item as stored, and its move, as DynamoDB Local bills them.
    let item = series_item();
    let item_bytes = waiter::aws::codec::item_size(&item);
    let measured_move_units = move_units(&rig.table_client().await, "orders", &item).await;
    let modelled_table_write_units = write_units(item_bytes);
    let modelled_index_write_units = 2.0;
    let sqs_requests_per_occurrence = send_batches as f64 / occurrences;
    let writes = modelled_table_write_units + modelled_index_write_units;
    // The consistent re-read of the item, one strongly consistent read unit.
    let reads = 1.0;
    use prices::*;
    let on_demand =
        writes * DDB_WRITE_REQUEST_UNIT + reads * DDB_READ_REQUEST_UNIT + sqs_requests_per_occurrence * SQS_REQUEST;
    let provisioned = (writes * DDB_WCU_HOUR + reads * DDB_RCU_HOUR) / 3600.0 / PROVISIONED_UTILISATION
        + sqs_requests_per_occurrence * SQS_REQUEST;
    SeriesCost {
        series,
        occurrences_each: count,
        messages,
        send_batches,
        statements,
        transaction_items,
        poller_runs,
        item_bytes,
        entries_per_occurrence: messages as f64 / occurrences,
        sqs_requests_per_occurrence,
        statements_per_occurrence: statements as f64 / occurrences,
        modelled_table_write_units,
        modelled_index_write_units,
        measured_move_units,
        on_demand_per_million: on_demand * 1e6,
        provisioned_per_million: provisioned * 1e6,
    }
}

async fn rig_tables_empty(rig: &crate::rig::Rig) -> bool {
    let client = rig.table_client().await;
    let items = crate::emulator::scan_all(&client, "orders").await;
    !items.iter().any(|i| i.contains_key(waiter::aws::codec::A_PERFORM_AT))
}

/// A series' item as the codec stores it: a 200-byte JSON body, every 60 s, a count.
fn series_item() -> waiter::aws::codec::Item {
    let mut job = super::bench_job(200);
    job.job.repeat = Some(Box::new(waiter::repeat::Series {
        every: waiter::repeat::Every::Seconds(60),
        until: None,
        count: Some(1000),
        catch_up: waiter::repeat::CatchUp::All,
        occurrences: 3,
        held: None,
        extra: Default::default(),
    }));
    waiter::aws::codec::encode(&job)
}

/// Puts `item`, then moves it as the poller does (`perform_at`, `occurrences`, `version`, on
/// the edition), and returns the move's units, table and index, as DynamoDB reports them.
async fn move_units(dynamodb: &aws_sdk_dynamodb::Client, table: &str, item: &waiter::aws::codec::Item) -> f64 {
    dynamodb
        .put_item()
        .table_name(table)
        .set_item(Some(item.clone()))
        .send()
        .await
        .expect("PutItem");
    let key = ["scheduler", "job_id"].map(|k| (k.to_owned(), item[k].clone()));
    let moved = dynamodb
        .update_item()
        .table_name(table)
        .set_key(Some(key.iter().cloned().collect()))
        .update_expression("SET #p = :p, #o = :o, #v = :nv")
        .condition_expression("#v = :v")
        .expression_attribute_names("#p", "perform_at")
        .expression_attribute_names("#o", "occurrences")
        .expression_attribute_names("#v", "version")
        .expression_attribute_values(":p", AttributeValue::N("1800000060".into()))
        .expression_attribute_values(":o", AttributeValue::N("4".into()))
        .expression_attribute_values(":nv", AttributeValue::N("2".into()))
        .expression_attribute_values(":v", AttributeValue::N("1".into()))
        .return_consumed_capacity(ReturnConsumedCapacity::Indexes)
        .send()
        .await
        .expect("UpdateItem");
    let units = moved
        .consumed_capacity()
        .and_then(|c| c.capacity_units())
        .unwrap_or(f64::NAN);
    dynamodb
        .delete_item()
        .table_name(table)
        .set_key(Some(key.into_iter().collect()))
        .send()
        .await
        .expect("DeleteItem");
    units
}
