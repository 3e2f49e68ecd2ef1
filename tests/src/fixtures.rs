//! The stored-item fixtures of each release (issue 74): tests/fixtures/{version}/items.json
//! holds every item a release's functions wrote in a run over every kind of job, as DynamoDB
//! JSON by queue. `manage::upgrades` writes this release's set (`make fixtures`) and runs
//! today's functions over every set.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use base64::Engine;
use serde_json::{json, Map, Value};

pub type Item = HashMap<String, AttributeValue>;

/// One release's items, by queue.
pub struct FixtureSet {
    pub release: String,
    pub item_format: u64,
    /// When the set was written (epoch seconds).
    pub written_at: i64,
    pub tables: BTreeMap<String, Vec<Item>>,
}

impl FixtureSet {
    /// `item` as old as it was when written: each `purge_at` (history records' TTL, at any
    /// depth, as in a lease's debts) moved on by the set's age, so a record read years later is
    /// as live as it was. The rest keeps its times: jobs due then are overdue now.
    pub fn aged(&self, item: &Item) -> Item {
        let age = chrono::Utc::now().timestamp() - self.written_at;
        item.iter().map(|(k, v)| (k.clone(), aged_value(k, v, age))).collect()
    }
}

fn aged_value(name: &str, v: &AttributeValue, age: i64) -> AttributeValue {
    match v {
        AttributeValue::N(n) if name == "purge_at" => match n.parse::<f64>() {
            Ok(t) => AttributeValue::N(format!("{}", t as i64 + age)),
            Err(_) => v.clone(),
        },
        AttributeValue::M(m) => AttributeValue::M(m.iter().map(|(k, v)| (k.clone(), aged_value(k, v, age))).collect()),
        AttributeValue::L(l) => AttributeValue::L(l.iter().map(|v| aged_value(name, v, age)).collect()),
        _ => v.clone(),
    }
}

pub fn fixtures_dir() -> PathBuf {
    crate::workspace_root().join("tests/fixtures")
}

/// Every release's set, oldest first (by version).
pub fn all_sets() -> Vec<FixtureSet> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixtures_dir())
        .expect("tests/fixtures")
        .flatten()
        .map(|e| e.path().join("items.json"))
        .filter(|p| p.is_file())
        .collect();
    dirs.sort();
    dirs.iter().map(|p| read_set(p)).collect()
}

pub fn read_set(path: &std::path::Path) -> FixtureSet {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let tables = doc["tables"]
        .as_object()
        .expect("tables")
        .iter()
        .map(|(queue, items)| {
            let items = items.as_array().expect("items").iter().map(item_of_json).collect();
            (queue.clone(), items)
        })
        .collect();
    FixtureSet {
        release: doc["release"].as_str().expect("release").to_owned(),
        item_format: doc["item_format"].as_u64().expect("item_format"),
        written_at: doc["written_at"].as_i64().expect("written_at"),
        tables,
    }
}

pub fn write_set(set: &FixtureSet) -> PathBuf {
    let dir = fixtures_dir().join(&set.release);
    std::fs::create_dir_all(&dir).expect("create the fixture directory");
    let tables: Map<String, Value> = set
        .tables
        .iter()
        .map(|(queue, items)| {
            let mut items: Vec<Value> = items.iter().map(json_of_item).collect();
            // A stable order, so a set written again diffs only where items differ.
            items.sort_by_key(|i| (i["scheduler"].to_string(), i["job_id"].to_string()));
            (queue.clone(), Value::Array(items))
        })
        .collect();
    let doc =
        json!({"release": set.release, "item_format": set.item_format, "written_at": set.written_at, "tables": tables});
    let path = dir.join("items.json");
    std::fs::write(&path, serde_json::to_string_pretty(&doc).expect("json") + "\n").expect("write the fixtures");
    path
}

/// DynamoDB JSON (`{"S": "..."}`) of an item, keys sorted.
pub fn json_of_item(item: &Item) -> Value {
    let sorted: BTreeMap<&String, &AttributeValue> = item.iter().collect();
    Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), json_of(v))).collect())
}

fn json_of(v: &AttributeValue) -> Value {
    let b64 = |b: &Blob| Value::from(base64::engine::general_purpose::STANDARD.encode(b.as_ref()));
    match v {
        AttributeValue::S(s) => json!({ "S": s }),
        AttributeValue::N(n) => json!({ "N": n }),
        AttributeValue::B(b) => json!({ "B": b64(b) }),
        AttributeValue::Bool(b) => json!({ "BOOL": b }),
        AttributeValue::Null(_) => json!({ "NULL": true }),
        AttributeValue::Ss(v) => json!({ "SS": sorted(v.clone()) }),
        AttributeValue::Ns(v) => json!({ "NS": sorted(v.clone()) }),
        AttributeValue::Bs(v) => json!({ "BS": v.iter().map(b64).collect::<Vec<_>>() }),
        AttributeValue::L(v) => json!({ "L": v.iter().map(json_of).collect::<Vec<_>>() }),
        AttributeValue::M(m) => json!({ "M": json_of_item(m) }),
        other => panic!("no DynamoDB JSON for {other:?}"),
    }
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

pub fn item_of_json(v: &Value) -> Item {
    v.as_object()
        .expect("an item is an object")
        .iter()
        .map(|(k, v)| (k.clone(), value_of_json(v)))
        .collect()
}

fn value_of_json(v: &Value) -> AttributeValue {
    let (tag, inner) = v.as_object().and_then(|o| o.iter().next()).expect("a typed value");
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .expect("a set")
            .iter()
            .map(|s| s.as_str().expect("a string").to_owned())
            .collect()
    };
    let blob = |v: &Value| {
        Blob::new(
            base64::engine::general_purpose::STANDARD
                .decode(v.as_str().expect("base64"))
                .expect("base64"),
        )
    };
    match tag.as_str() {
        "S" => AttributeValue::S(inner.as_str().expect("S").to_owned()),
        "N" => AttributeValue::N(inner.as_str().expect("N").to_owned()),
        "B" => AttributeValue::B(blob(inner)),
        "BOOL" => AttributeValue::Bool(inner.as_bool().expect("BOOL")),
        "NULL" => AttributeValue::Null(true),
        "SS" => AttributeValue::Ss(strings(inner)),
        "NS" => AttributeValue::Ns(strings(inner)),
        "BS" => AttributeValue::Bs(inner.as_array().expect("BS").iter().map(blob).collect()),
        "L" => AttributeValue::L(inner.as_array().expect("L").iter().map(value_of_json).collect()),
        "M" => AttributeValue::M(item_of_json(inner)),
        other => panic!("unknown DynamoDB JSON type {other}"),
    }
}
