//! What a debounced enqueue costs (issue 61, item 2): `ids` jobs stored once, then each called
//! again `calls` times with `on_duplicate: replace` and a later time, through the real
//! `enqueue` function, one call per invocation as a caller debouncing events makes them. Every
//! AWS call is counted at the proxy; the units are DynamoDB's billing rules applied to the calls
//! counted and the item's size (no emulator reports a transaction's units). Then the poller
//! sends them: one message per id, the last call's body.

use std::collections::BTreeMap;

use chrono::{TimeDelta, Utc};
use serde::Serialize;
use serde_json::json;

use crate::runtime_api::{binary_path, Profile};
use crate::Function;

use super::*;

/// The operations a debounced call may make.
const OPERATIONS: [&str; 8] = [
    "GetItem",
    "GetItem/pause",
    "BatchGetItem",
    "Query",
    "PutItem",
    "UpdateItem",
    "TransactWriteItems",
    "TransactWriteItems/items",
];

#[derive(Debug, Clone, Serialize)]
pub struct DebounceCost {
    pub ids: usize,
    /// Replacing calls per id, after the first call that stores it.
    pub replacing_calls_each: usize,
    pub item_bytes: usize,
    /// Calls per replacing call, by operation, counted at the proxy.
    pub calls_per_replacing_call: BTreeMap<String, f64>,
    /// The same for the first call of an id (it stores a new job).
    pub calls_per_first_call: BTreeMap<String, f64>,
    /// Per replacing call, by DynamoDB's billing rules: strongly consistent reads of the item
    /// (1 unit per 4 KB), each transaction item 2 write units per KB (a `ConditionCheck` too:
    /// the higher reading, AWS's pages do not say which it is), and the due index's entry moved
    /// (2 units: out at the old time, in at the new).
    pub read_units_per_call: f64,
    pub write_units_per_call: f64,
    pub on_demand_per_million_calls: f64,
    pub provisioned_per_million_calls: f64,
    /// After the poller: messages in the queue, and how many carry their id's last body.
    pub messages: usize,
    pub messages_with_last_body: usize,
}

/// Stores `ids` jobs a day out, replaces each `calls` times, then moves them due and drains.
pub async fn debounce_cost(ids: usize, calls: usize, profile: Profile) -> DebounceCost {
    let rig = crate::rig::Rig::builder(&["orders"])
        .proxy(0, 0.0)
        .settings(&[
            ("WAITER_DIRECT_MAX_DELAY", "0"),
            ("WAITER_LOOKAHEAD", "0"),
            ("RUST_LOG", "warn"),
        ])
        .start()
        .await;
    let (emu, env, url) = (&rig.emu, &rig.env, rig.urls[0].clone());
    let proxies = proxies_of(&rig);
    let counted = || -> BTreeMap<String, usize> {
        OPERATIONS
            .iter()
            .map(|op| (op.to_string(), proxies.iter().map(|p| p.calls(op)).sum()))
            .collect()
    };
    let per_call = |before: &BTreeMap<String, usize>, n: usize| -> BTreeMap<String, f64> {
        counted()
            .into_iter()
            .map(|(op, c)| {
                let d = c - before[&op];
                (op, d as f64 / n.max(1) as f64)
            })
            .collect()
    };
    let mut enqueue = Function::start_binary(binary_path("enqueue", profile), "enqueue", env).await;
    let mut poller = Function::start_binary(binary_path("poller", profile), "poller", env).await;
    let call = |i: usize, k: usize, at: chrono::DateTime<Utc>| {
        json!({"queue": "orders", "job_id": format!("d{i}"), "message_body": format!("{{\"cart\":{i},\"event\":{k}}}"),
               "perform_at": rfc3339(at), "on_duplicate": "replace"})
    };
    let day = Utc::now() + TimeDelta::days(1);
    let before = counted();
    for i in 0..ids {
        enqueue.invoke(&call(i, 0, day)).await.expect("enqueue");
    }
    let calls_per_first_call = per_call(&before, ids);
    let before = counted();
    for k in 1..=calls {
        for i in 0..ids {
            let r = enqueue
                .invoke(&call(i, k, day + TimeDelta::seconds(k as i64)))
                .await
                .expect("enqueue");
            assert_eq!(r["replaced"], true, "{r}");
        }
    }
    let calls_per_replacing_call = per_call(&before, ids * calls);
    // The last replacement: due now, for the poller to send.
    for i in 0..ids {
        enqueue.invoke(&call(i, calls + 1, Utc::now())).await.expect("enqueue");
    }
    for _ in 0..5 {
        let s = poller.invoke(&json!({})).await.expect("poller");
        if s["drained"] == true {
            break;
        }
    }
    // One more than expected, so that a message beside the last body would be counted.
    let received: Vec<String> = emu
        .receive_for(&url, std::time::Duration::from_secs(5), ids + 1)
        .await
        .iter()
        .filter_map(|r| r.message.body().map(str::to_owned))
        .collect();
    let last = |i: usize| format!("{{\"cart\":{i},\"event\":{}}}", calls + 1);
    let messages_with_last_body = (0..ids)
        .filter(|i| received.iter().any(|body| *body == last(*i)))
        .count();
    let item_bytes = waiter::aws::codec::item_size(&waiter::aws::codec::encode(&super::bench_job(20)));
    let c = |op: &str| calls_per_replacing_call.get(op).copied().unwrap_or(0.0);
    let read_units_per_call = (c("GetItem") + c("GetItem/pause") + c("BatchGetItem")) * strong_read_units(item_bytes);
    let write_units_per_call = c("TransactWriteItems/items") * 2.0 * write_units(item_bytes)
        + (c("PutItem") + c("UpdateItem")) * write_units(item_bytes)
        + 2.0;
    use prices::*;
    let on_demand =
        write_units_per_call * DDB_WRITE_REQUEST_UNIT + read_units_per_call * DDB_READ_REQUEST_UNIT + LAMBDA_REQUEST;
    let provisioned =
        (write_units_per_call * DDB_WCU_HOUR + read_units_per_call * DDB_RCU_HOUR) / 3600.0 / PROVISIONED_UTILISATION
            + LAMBDA_REQUEST;
    DebounceCost {
        ids,
        replacing_calls_each: calls,
        item_bytes,
        calls_per_replacing_call,
        calls_per_first_call,
        read_units_per_call,
        write_units_per_call,
        on_demand_per_million_calls: on_demand * 1e6,
        provisioned_per_million_calls: provisioned * 1e6,
        messages: received.len(),
        messages_with_last_body,
    }
}

impl DebounceCost {
    /// What `make bench` prints.
    pub fn report(&self) -> String {
        let calls = |m: &BTreeMap<String, f64>| {
            m.iter()
                .filter(|(_, n)| **n > 0.0)
                .map(|(op, n)| format!("{op} {n:.2}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "a debounced enqueue (issue 61): {} ids stored, each replaced {} times (`on_duplicate: replace`, a new time each), one call per invocation, at the proxy:\n  \
             first call: {}\n  replacing call: {}\n  \
             per replacing call ({}-byte item): {:.2} read units, {:.2} write units (billing rules on the calls counted, index entry moved: 2): ${:.2} per million calls on demand with Lambda's request, ${:.2} provisioned at 70 %\n  \
             then the poller: {} messages, {} with their id's last body",
            self.ids,
            self.replacing_calls_each,
            calls(&self.calls_per_first_call),
            calls(&self.calls_per_replacing_call),
            self.item_bytes,
            self.read_units_per_call,
            self.write_units_per_call,
            self.on_demand_per_million_calls,
            self.provisioned_per_million_calls,
            self.messages,
            self.messages_with_last_body
        )
    }
}
