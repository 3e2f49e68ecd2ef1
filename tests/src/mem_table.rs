//! An in-memory DynamoDB endpoint for the throughput bench: it answers the calls a poller run
//! makes (`GetItem`, `UpdateItem`, `DeleteItem`, `Query` on `scheduler-perform_at-index`,
//! `BatchGetItem`, `BatchWriteItem`, `TransactWriteItems`, `BatchExecuteStatement` of the
//! removals' `DELETE` and `UPDATE`) and what the bench needs to set up (`CreateTable`,
//! `DescribeTable`, `PutItem`), from maps in memory.
//!
//! It models a table that is never the bottleneck, so that the poller's own ceiling shows when
//! DynamoDB Local on 2 cores is the limit. It is not a DynamoDB: it checks no condition
//! expression (the bench runs one poller, which never loses its lease), applies `SET` and `ADD`
//! update expressions only, pages the index at 1 MB like DynamoDB and reads it consistently.
//! It holds every call for the bench's per-call latency itself ([`CallMeter`]), so no proxy hop
//! is needed in front of it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Map, Value};

use crate::meter::CallMeter;

const PAGE_BYTES: usize = 1 << 20;

type Item = Map<String, Value>;
/// (`scheduler`, `job_id`).
type Key = (String, String);
/// (`scheduler`, `perform_at` in microseconds, `job_id`).
type IndexKey = (String, i64, String);

#[derive(Default)]
struct Table {
    items: HashMap<Key, Item>,
    index: BTreeSet<IndexKey>,
}

impl Table {
    fn put(&mut self, item: Item) {
        let Some(key) = key_of(&item) else { return };
        self.delete(&key);
        if let Some(at) = perform_at(&item) {
            self.index.insert((key.0.clone(), at, key.1.clone()));
        }
        self.items.insert(key, item);
    }

    fn delete(&mut self, key: &Key) -> Option<Item> {
        let old = self.items.remove(key)?;
        if let Some(at) = perform_at(&old) {
            self.index.remove(&(key.0.clone(), at, key.1.clone()));
        }
        Some(old)
    }
}

#[derive(Default)]
struct Tables {
    tables: Mutex<HashMap<String, Table>>,
    meter: CallMeter,
}

/// A running endpoint; aborted on drop.
pub struct MemTable {
    pub endpoint: String,
    meter: CallMeter,
    server: tokio::task::JoinHandle<()>,
}

impl MemTable {
    pub async fn start() -> Self {
        let tables = Arc::new(Tables::default());
        let meter = tables.meter.clone();
        let app = Router::new().fallback(handle).with_state(tables);
        let (addr, server) = crate::serve_local(app).await;
        Self {
            endpoint: format!("http://{addr}"),
            meter,
            server,
        }
    }

    /// Its latency and call accounting.
    pub fn meter(&self) -> CallMeter {
        self.meter.clone()
    }
}

impl Drop for MemTable {
    fn drop(&mut self) {
        self.server.abort();
    }
}

fn s_of(v: Option<&Value>) -> Option<String> {
    v?.get("S")?.as_str().map(str::to_owned)
}

fn key_of(item: &Item) -> Option<Key> {
    Some((s_of(item.get("scheduler"))?, s_of(item.get("job_id"))?))
}

/// An `N` value in microseconds.
fn micros(v: Option<&Value>) -> Option<i64> {
    let n: f64 = v?.get("N")?.as_str()?.parse().ok()?;
    Some((n * 1e6).round() as i64)
}

fn perform_at(item: &Item) -> Option<i64> {
    micros(item.get("perform_at"))
}

fn reply(body: Value) -> Response {
    (
        StatusCode::OK,
        [("content-type", "application/x-amz-json-1.0")],
        body.to_string(),
    )
        .into_response()
}

fn refuse(message: String) -> Response {
    (
        StatusCode::BAD_REQUEST,
        [("content-type", "application/x-amz-json-1.0")],
        json!({"__type": "com.amazon.coral.validate#ValidationException", "message": message}).to_string(),
    )
        .into_response()
}

/// `#name` or a literal attribute name.
fn name<'a>(token: &'a str, request: &'a Value) -> &'a str {
    request["ExpressionAttributeNames"][token].as_str().unwrap_or(token)
}

fn value<'a>(token: &str, request: &'a Value) -> &'a Value {
    &request["ExpressionAttributeValues"][token]
}

async fn handle(State(state): State<Arc<Tables>>, headers: HeaderMap, body: Bytes) -> Response {
    let arrived = state.meter.hold().await;
    let operation = crate::meter::operation(&headers);
    let response = answer(&state, &operation, &body);
    state.meter.record(&operation, arrived);
    response
}

fn answer(state: &Tables, operation: &str, body: &Bytes) -> Response {
    let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let table_name = request["TableName"].as_str().unwrap_or_default().to_owned();
    let mut tables = state.tables.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let key = || request["Key"].as_object().and_then(key_of);
    match operation {
        "CreateTable" | "DescribeTable" => {
            tables.entry(table_name.clone()).or_default();
            let field = if operation == "CreateTable" {
                "TableDescription"
            } else {
                "Table"
            };
            reply(json!({ field: {"TableName": table_name, "TableStatus": "ACTIVE"} }))
        }
        "PutItem" => {
            if let Some(item) = request["Item"].as_object() {
                tables.entry(table_name).or_default().put(item.clone());
            }
            reply(json!({}))
        }
        "GetItem" => {
            let item = key().and_then(|k| tables.get(&table_name)?.items.get(&k).cloned());
            reply(item.map_or_else(|| json!({}), |i| json!({ "Item": i })))
        }
        "DeleteItem" => {
            if let (Some(k), Some(t)) = (key(), tables.get_mut(&table_name)) {
                t.delete(&k);
            }
            reply(json!({}))
        }
        "UpdateItem" => {
            let Some(k) = key() else {
                return refuse("UpdateItem without a key".into());
            };
            let table = tables.entry(table_name).or_default();
            let old = table.items.get(&k).cloned();
            let mut item = old
                .clone()
                .unwrap_or_else(|| request["Key"].as_object().cloned().unwrap_or_default());
            let expression = request["UpdateExpression"].as_str().unwrap_or_default();
            if let Some(sets) = expression.strip_prefix("SET ") {
                for assignment in sets.split(',') {
                    let Some((n, v)) = assignment.split_once('=') else {
                        continue;
                    };
                    item.insert(name(n.trim(), &request).to_owned(), value(v.trim(), &request).clone());
                }
            } else if let Some(add) = expression.strip_prefix("ADD ") {
                let mut parts = add.split_whitespace();
                let (Some(n), Some(v)) = (parts.next(), parts.next()) else {
                    return refuse(format!("cannot apply {expression:?}"));
                };
                let attribute = name(n, &request).to_owned();
                let mut set: BTreeSet<String> = item
                    .get(&attribute)
                    .and_then(|a| a["NS"].as_array())
                    .into_iter()
                    .flatten()
                    .filter_map(|n| n.as_str().map(str::to_owned))
                    .collect();
                set.extend(
                    value(v, &request)["NS"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|n| n.as_str().map(str::to_owned)),
                );
                item.insert(attribute, json!({ "NS": set }));
            } else {
                return refuse(format!("the bench table applies SET and ADD only, not {expression:?}"));
            }
            table.put(item.clone());
            let attributes = match request["ReturnValues"].as_str() {
                Some("ALL_OLD") => old.map(Value::Object),
                Some("ALL_NEW") => Some(Value::Object(item)),
                _ => None,
            };
            reply(attributes.map_or_else(|| json!({}), |a| json!({ "Attributes": a })))
        }
        "Query" => query(tables.entry(table_name).or_default(), &request),
        "BatchGetItem" => {
            let mut responses = Map::new();
            for (name, wanted) in request["RequestItems"].as_object().into_iter().flatten() {
                let table = tables.get(name);
                let found: Vec<Value> = wanted["Keys"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|k| {
                        let k = key_of(k.as_object()?)?;
                        table?.items.get(&k).cloned().map(Value::Object)
                    })
                    .collect();
                responses.insert(name.clone(), Value::Array(found));
            }
            reply(json!({"Responses": responses, "UnprocessedKeys": {}}))
        }
        "BatchWriteItem" => {
            for (name, writes) in request["RequestItems"].as_object().into_iter().flatten() {
                let table = tables.entry(name.clone()).or_default();
                for w in writes.as_array().into_iter().flatten() {
                    if let Some(item) = w["PutRequest"]["Item"].as_object() {
                        table.put(item.clone());
                    } else if let Some(k) = w["DeleteRequest"]["Key"].as_object().and_then(key_of) {
                        table.delete(&k);
                    }
                }
            }
            reply(json!({"UnprocessedItems": {}}))
        }
        // The poller's batched removals: each item's Put or Delete, conditions unchecked.
        "TransactWriteItems" => {
            for w in request["TransactItems"].as_array().into_iter().flatten() {
                let (put, delete) = (&w["Put"], &w["Delete"]);
                let name = put["TableName"]
                    .as_str()
                    .or(delete["TableName"].as_str())
                    .unwrap_or_default();
                let table = tables.entry(name.to_owned()).or_default();
                if let Some(item) = put["Item"].as_object() {
                    table.put(item.clone());
                } else if let Some(k) = delete["Key"].as_object().and_then(key_of) {
                    table.delete(&k);
                }
            }
            reply(json!({}))
        }
        // The poller's removals as PartiQL: each `DELETE`, or `UPDATE` into the record,
        // conditions unchecked.
        "BatchExecuteStatement" => {
            let mut responses = Vec::new();
            for st in request["Statements"].as_array().into_iter().flatten() {
                let text = st["Statement"].as_str().unwrap_or_default();
                let params: Vec<Value> = st["Parameters"].as_array().cloned().unwrap_or_default();
                match statement(text, &params) {
                    Some((name, Change::Delete(k))) => {
                        tables.entry(name).or_default().delete(&k);
                    }
                    Some((name, Change::Update(k, set, remove))) => {
                        let table = tables.entry(name).or_default();
                        if let Some(mut item) = table.items.get(&k).cloned() {
                            item.extend(set);
                            remove.iter().for_each(|r| drop(item.remove(r)));
                            table.put(item);
                        }
                    }
                    None => return refuse(format!("the bench table cannot run {text:?}")),
                }
                responses.push(json!({}));
            }
            reply(json!({"Responses": responses}))
        }
        other => refuse(format!("the bench table does not answer {other:?}")),
    }
}

enum Change {
    Delete(Key),
    Update(Key, Item, Vec<String>),
}

/// The table and change of one of the poller's removal statements: `DELETE FROM "t" WHERE
/// "scheduler" = ? AND "job_id" = ? ...` or `UPDATE "t" SET "a" = ? ... REMOVE "b" ... WHERE`
/// the same, parameters in that order.
fn statement(text: &str, params: &[Value]) -> Option<(String, Change)> {
    let unquote = |t: &str| t.trim_matches('"').to_owned();
    let tokens: Vec<&str> = text.split_whitespace().collect();
    let (verb, table) = match tokens.as_slice() {
        ["DELETE", "FROM", t, ..] => ("DELETE", unquote(t)),
        ["UPDATE", t, ..] => ("UPDATE", unquote(t)),
        _ => return None,
    };
    let (mut set, mut remove) = (Item::new(), Vec::new());
    let mut used = 0;
    for pair in tokens.windows(2) {
        match pair {
            ["SET", name] => {
                set.insert(unquote(name), params.get(used)?.clone());
                used += 1;
            }
            ["REMOVE", name] => remove.push(unquote(name)),
            _ => {}
        }
    }
    let key = (s_of(params.get(used))?, s_of(params.get(used + 1))?);
    Some(match verb {
        "DELETE" => (table, Change::Delete(key)),
        _ => (table, Change::Update(key, set, remove)),
    })
}

/// `scheduler = :s AND perform_at BETWEEN :f AND :t` (or `<= :t`) on the index, oldest first,
/// 1 MB a page.
fn query(table: &Table, request: &Value) -> Response {
    if request["IndexName"].as_str() != Some(waiter::aws::codec::INDEX_NAME) {
        return refuse("the bench table answers Query on scheduler-perform_at-index only".into());
    }
    let expression = request["KeyConditionExpression"].as_str().unwrap_or_default();
    let tokens: Vec<&str> = expression.split_whitespace().collect();
    let (scheduler, from, to) = match tokens.as_slice() {
        [_, "=", s, "AND", _, "BETWEEN", f, "AND", t] => (
            s_of(Some(value(s, request))),
            micros(Some(value(f, request))),
            micros(Some(value(t, request))),
        ),
        [_, "=", s, "AND", _, "<=", t] => (
            s_of(Some(value(s, request))),
            Some(i64::MIN),
            micros(Some(value(t, request))),
        ),
        _ => return refuse(format!("the bench table cannot evaluate {expression:?}")),
    };
    let (Some(scheduler), Some(from), Some(to)) = (scheduler, from, to) else {
        return refuse(format!("missing values for {expression:?}"));
    };
    let start = match request["ExclusiveStartKey"].as_object() {
        Some(k) => match (key_of(k), perform_at(k)) {
            (Some((_, id)), Some(at)) => std::ops::Bound::Excluded((scheduler.clone(), at, id)),
            _ => return refuse("ExclusiveStartKey without job_id and perform_at".into()),
        },
        None => std::ops::Bound::Included((scheduler.clone(), from, String::new())),
    };
    let end = std::ops::Bound::Included((scheduler.clone(), to, "\u{10FFFF}".to_owned()));
    let limit = request["Limit"].as_u64().map_or(usize::MAX, |l| l as usize);
    let mut items = Vec::new();
    let mut bytes = 0;
    let mut last: Option<&IndexKey> = None;
    let mut more = false;
    for k in table.index.range((start, end)) {
        if items.len() >= limit || bytes >= PAGE_BYTES {
            more = true;
            break;
        }
        let Some(item) = table.items.get(&(k.0.clone(), k.2.clone())) else {
            continue;
        };
        bytes += serde_json::to_string(item).map_or(0, |s| s.len());
        items.push(Value::Object(item.clone()));
        last = Some(k);
    }
    let mut out = BTreeMap::new();
    out.insert("Count", json!(items.len()));
    out.insert("ScannedCount", json!(items.len()));
    if let (true, Some(k)) = (more, last) {
        let at = table
            .items
            .get(&(k.0.clone(), k.2.clone()))
            .and_then(|i| i.get("perform_at").cloned());
        out.insert(
            "LastEvaluatedKey",
            json!({"scheduler": {"S": k.0}, "job_id": {"S": k.2}, "perform_at": at}),
        );
    }
    if request["Select"].as_str() != Some("COUNT") {
        out.insert("Items", Value::Array(items));
    }
    reply(json!(out))
}
