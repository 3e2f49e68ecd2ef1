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
    /// When it was read from its file (epoch seconds): what `aged` measures a young set by.
    pub read_at: i64,
    pub tables: BTreeMap<String, Vec<Item>>,
}

impl FixtureSet {
    /// `item` as old as it was when written: each `purge_at` (history records' TTL, at any
    /// depth, as in a lease's debts) moved on by the set's age, so a record read years later is
    /// as live as it was. The rest keeps its times: jobs due then are overdue now.
    ///
    /// A set younger than `MATURITY_S` (read just after `make fixtures`) has its times moved
    /// back by what it lacks, all of them by the same span, so its `due-*` jobs are due and
    /// `expired` past its `expires_at` as in a set read later (issue 82).
    pub fn aged(&self, item: &Item) -> Item {
        let age = chrono::Utc::now().timestamp() - self.written_at;
        // From when the set was read, not now: every item of a set moves by the same span
        // (a lease's debts name their jobs' editions).
        let early = (MATURITY_S - (self.read_at - self.written_at)).max(0);
        item.iter()
            .map(|(k, v)| (k.clone(), aged_value(k, v, age, early)))
            .collect()
    }
}

/// How old a set must be for what its writer made due in 600 s and expiring in 660 s to be so.
pub const MATURITY_S: i64 = 720;

/// The attributes that hold epoch seconds, at any depth (a lease's debts hold records).
const TIMES: &[&str] = &[
    "perform_at",
    "expires_at",
    "enqueued_at",
    "parked_at",
    "maybe_delivered_at",
    "paused_at",
    "left_at",
    "scheduled_for",
    "lease_until",
    "lease_horizon",
    "lease_started",
    "lease_on_time_from",
    "repeat_until",
    "repeat_held",
    "repeat_extra_last",
    "repeat_extra_returns_to",
    "advance_to",
];

/// Epoch seconds as DynamoDB holds them (`1795926704.300497`), `by` whole seconds earlier; the
/// fraction is kept as written (an `f64` would round it).
fn earlier(n: &str, by: i64) -> Option<String> {
    let (whole, fraction) = n.split_once('.').map_or((n, None), |(w, f)| (w, Some(f)));
    let whole = whole.parse::<i64>().ok()? - by;
    Some(match fraction {
        Some(f) => format!("{whole}.{f}"),
        None => whole.to_string(),
    })
}

fn aged_value(name: &str, v: &AttributeValue, age: i64, early: i64) -> AttributeValue {
    match v {
        AttributeValue::N(n) if name == "purge_at" => match n.parse::<f64>() {
            Ok(t) => AttributeValue::N(format!("{}", t as i64 + age)),
            Err(_) => v.clone(),
        },
        AttributeValue::N(n) if early > 0 && TIMES.contains(&name) => {
            earlier(n, early).map_or_else(|| v.clone(), AttributeValue::N)
        }
        AttributeValue::M(m) => AttributeValue::M(
            m.iter()
                .map(|(k, v)| (k.clone(), aged_value(k, v, age, early)))
                .collect(),
        ),
        AttributeValue::L(l) => AttributeValue::L(l.iter().map(|v| aged_value(name, v, age, early)).collect()),
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
        read_at: chrono::Utc::now().timestamp(),
        tables,
    }
}

pub fn write_set(set: &FixtureSet) -> PathBuf {
    let dir = fixtures_dir().join(&set.release);
    // A release's set is what that release wrote: never written over by later code unless
    // asked (before the release is tagged).
    if dir.join("items.json").exists() && std::env::var_os("FIXTURES_REWRITE").is_none() {
        panic!(
            "{} exists: a release's set is what it wrote. Bump the version for new code, or set \
             FIXTURES_REWRITE=1 to write {} again before it is released",
            dir.join("items.json").display(),
            set.release
        );
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_young_set_is_read_as_a_mature_one_its_fractions_kept() {
        assert_eq!(earlier("1795926704.300497", 100).as_deref(), Some("1795926604.300497"));
        assert_eq!(earlier("1795926704", 1).as_deref(), Some("1795926703"));
        let now = chrono::Utc::now().timestamp();
        let item: Item = [
            ("perform_at".to_owned(), AttributeValue::N(format!("{}.5", now + 600))),
            ("version".to_owned(), AttributeValue::N("3".into())),
        ]
        .into();
        let young = FixtureSet {
            release: "x".into(),
            item_format: 1,
            written_at: now,
            read_at: now,
            tables: BTreeMap::new(),
        };
        let aged = young.aged(&item);
        let due: f64 = match &aged["perform_at"] {
            AttributeValue::N(n) => n.parse().unwrap(),
            _ => unreachable!(),
        };
        assert!(due <= (now - MATURITY_S + 600 + 2) as f64, "{due}");
        assert_eq!(aged["version"], item["version"], "a number that is no time is kept");
        let mature = FixtureSet {
            written_at: now - MATURITY_S,
            ..young
        };
        assert_eq!(mature.aged(&item)["perform_at"], item["perform_at"]);
    }

    /// Attributes the codec writes that no release's set holds yet, each with why (issue 82
    /// defect 4): the test fails for any other, so a new attribute comes with its fixture, and
    /// for one of these once a set holds it, so the list only shrinks.
    const NOT_YET_IN_A_FIXTURE: &[(&str, &str)] = &[
        (
            "item_format",
            "format 1 items carry none; a tagged item's (2) joins the next release's set",
        ),
        (
            "tags",
            "new since 0.2.0: the next release's set (make fixtures at its release) holds a tagged job, record and debt",
        ),
        ("lease_on_time_from", "needs a run that the rate held back at its end"),
        ("rate_floors", "needs bookings a later rank overtook in the ledger"),
        ("repeat_held", "needs a windowed series held for its opening"),
        ("advance_to", "needs a series' occurrence in a lease's debts"),
        (
            "repeat_extra_returns_to",
            "held only while `trigger`'s extra occurrence is on its way to SQS",
        ),
    ];

    /// Every attribute name the item codec can write: its `A_*` constants.
    fn codec_attributes() -> std::collections::BTreeSet<String> {
        let root = crate::workspace_root().join("crates/waiter/src/aws");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
            .expect("crates/waiter/src/aws")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("codec")))
            .collect();
        files.push(root.join("codec.rs"));
        // `const A_NAME: &str = "name";`
        files
            .iter()
            .flat_map(|f| {
                let text = std::fs::read_to_string(f).expect("codec source");
                text.lines()
                    .filter_map(|l| {
                        let rest = l.split_once("const A_")?.1;
                        let value = rest.split_once(": &str = \"")?.1;
                        Some(value.split_once('"')?.0.to_owned())
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    fn names_in(v: &AttributeValue, into: &mut std::collections::BTreeSet<String>) {
        match v {
            AttributeValue::M(m) => {
                for (k, v) in m {
                    into.insert(k.clone());
                    names_in(v, into);
                }
            }
            AttributeValue::L(l) => l.iter().for_each(|v| names_in(v, into)),
            _ => {}
        }
    }

    #[test]
    fn every_attribute_the_codec_writes_is_in_some_releases_fixtures() {
        let codec = codec_attributes();
        assert!(codec.len() > 40 && codec.contains("perform_at"), "{codec:?}");
        let mut held = std::collections::BTreeSet::new();
        for set in all_sets() {
            for item in set.tables.values().flatten() {
                for (k, v) in item {
                    held.insert(k.clone());
                    names_in(v, &mut held);
                }
            }
        }
        let exempt: std::collections::BTreeSet<&str> = NOT_YET_IN_A_FIXTURE.iter().map(|(n, _)| *n).collect();
        let missing: Vec<&String> = codec
            .iter()
            .filter(|n| !held.contains(*n) && !exempt.contains(n.as_str()))
            .collect();
        assert!(
            missing.is_empty(),
            "written by the codec, in no fixture (make fixtures): {missing:?}"
        );
        let now_held: Vec<&&str> = exempt.iter().filter(|n| held.contains(**n)).collect();
        assert!(
            now_held.is_empty(),
            "in a fixture now: take them off NOT_YET_IN_A_FIXTURE: {now_held:?}"
        );
    }
}
