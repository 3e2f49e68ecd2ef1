//! Property tests at volume over the request parser and the item codec: random JSON built from
//! the contract's field names, hostile strings and numbers. Nothing panics, every refusal names
//! a field, and every accepted job round-trips through the DynamoDB codec unchanged, never
//! earlier than the time it asked for. `PROPTEST_CASES=n` sets the volume (`make soak` raises it).

use chrono::{DateTime, Utc};
use proptest::prelude::*;
use serde_json::{Map, Value};

use crate::aws::codec::{decode, decode_view, encode, ATTRIBUTES_OF_KEYS, ATTRIBUTES_WITHOUT_MESSAGE};
use crate::config::Config;
use crate::ports::{Partition, StoredJob, View};
use crate::wire::request::{parse_request, Request};

const FIELDS: &[&str] = &[
    "queue",
    "queue_url",
    "QueueUrl",
    "message_body",
    "MessageBody",
    "message_attributes",
    "MessageAttributes",
    "delay_seconds",
    "DelaySeconds",
    "perform_at",
    "job_id",
    "expires_at",
    "message_group_id",
    "message_deduplication_id",
    "action",
    "jobs",
    "limit",
    "cursor",
    "job_ids",
    "all",
    "data_type",
    "DataType",
    "string_value",
    "StringValue",
    "binary_value",
    "BinaryValue",
    "kind",
    "x",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u32>().prop_map(Value::from),
        (0u64..2_000_000_000).prop_map(Value::from),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop::sample::select(vec![
            "orders",
            "billing.fifo",
            "nope",
            "https://sqs.us-east-1.amazonaws.com/1/orders",
            "",
            "String",
            "Number",
            "Binary",
            "Binary.gz",
            "AAH/",
            "not base64",
            "1e200",
            "-12.5",
            "2026-12-01T09:00:00Z",
            "2027-01-01T00:00:60.9999999Z",
            "9999-12-31T23:59:60Z",
            "1796115600.1234567",
            "get",
            "cancel",
            "enqueue",
            "list_parked",
            "redrive",
            "a\u{0}b",
            "a\u{FFFE}",
            "g",
            "job-1",
            "x' OR 1=1",
        ])
        .prop_map(|s| Value::String(s.to_owned())),
        "[ -~]{0,40}".prop_map(Value::String),
        "\\PC{0,20}".prop_map(Value::String),
    ]
}

fn json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(FIELDS), inner), 0..8).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_owned(), v)).collect::<Map<_, _>>())
            }),
        ]
    })
}

/// A request-shaped object: mostly valid fields, some random.
fn request() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(vec!["orders", "billing.fifo"]),
        "[ -~]{1,60}",
        prop::option::of(prop_oneof![
            3 => (1_700_000_000u64..1_900_000_000, "[0-9]{0,12}").prop_map(|(s, f)| {
                let text = if f.is_empty() { s.to_string() } else { format!("{s}.{f}") };
                serde_json::from_str::<Value>(&text).unwrap_or(Value::Null)
            }),
            3 => (2026i32..2040, 1u32..=12, 1u32..=28, 0u32..24, 0u32..=60, "[0-9]{0,10}").prop_map(|(y, mo, d, h, s, f)| {
                let dot = if f.is_empty() { String::new() } else { format!(".{f}") };
                Value::String(format!("{y:04}-{mo:02}-{d:02}T{h:02}:59:{s:02}{dot}Z"))
            }),
            1 => json(),
        ]),
        prop::collection::vec((prop::sample::select(FIELDS), json()), 0..2),
    )
        .prop_map(|(queue, body, when, extra)| {
            let mut m = Map::new();
            m.insert("queue".into(), Value::from(queue));
            m.insert("message_body".into(), Value::from(body));
            if queue.ends_with(".fifo") {
                m.insert("message_group_id".into(), Value::from("g"));
            }
            if let Some(w) = when {
                m.insert("perform_at".into(), w);
            }
            for (k, v) in extra {
                m.insert(k.to_owned(), v);
            }
            Value::Object(m)
        })
}

fn config() -> Config {
    Config::from_lookup(|k| (k == "WAITER_QUEUES").then(|| "orders,billing.fifo".to_owned())).expect("config")
}

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-22T10:00:00.5Z")
        .expect("time")
        .with_timezone(&Utc)
}

fn check(v: &Value) -> Result<(), TestCaseError> {
    let cfg = config();
    match parse_request(v, &cfg, now()) {
        Err(e) => {
            prop_assert!(!e.field.is_empty(), "refusal without a field: {e}");
            let prefix = format!("{}: ", e.field);
            prop_assert!(e.to_string().starts_with(&prefix), "{}", e);
        }
        Ok(Request::Enqueue(job)) => match *job {
            Err(e) => prop_assert!(!e.field.is_empty()),
            Ok(mut job) => {
                prop_assert!(job.perform_at >= now(), "stored in the past");
                // The codec does not keep whether the caller chose the id.
                job.job_id_given = true;
                let stored = StoredJob {
                    paused_at: None,
                    partition: Partition::Shard(3),
                    enqueued_at: now(),
                    parked: None,
                    version: 1,
                    // Half the cases carry the mark a move after a lapsed lease leaves.
                    maybe_delivered_at: (job.job_id.len() % 2 == 0).then(now),
                    job,
                };
                let item = encode(&stored);
                let back = decode(&stored.job.queue, item.clone()).map_err(TestCaseError::fail)?;
                prop_assert_eq!(&back, &stored);
                // What `list` reads without bodies: every attribute but the message survives.
                let projected: crate::aws::codec::Item = item
                    .into_iter()
                    .filter(|(name, _)| ATTRIBUTES_WITHOUT_MESSAGE.contains(&name.as_str()))
                    .collect();
                let keys: crate::aws::codec::Item = projected
                    .iter()
                    .filter(|(name, _)| ATTRIBUTES_OF_KEYS.contains(&name.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                let light =
                    decode_view(&stored.job.queue, projected, View::WithoutMessage).map_err(TestCaseError::fail)?;
                // What the poller's index pages read: the keys and `perform_at`, nothing else.
                let bare = decode_view(&stored.job.queue, keys, View::Keys).map_err(TestCaseError::fail)?;
                prop_assert_eq!(bare.key(), stored.key());
                prop_assert_eq!(bare.job.perform_at, stored.job.perform_at);
                prop_assert!(bare.job.message_body.is_empty() && bare.job.expires_at.is_none() && bare.version == 1);
                let mut without = stored;
                without.job.message_body.clear();
                without.job.message_attributes.clear();
                prop_assert_eq!(light, without);
            }
        },
        Ok(_) => {}
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(4096)
    ))]

    #[test]
    fn random_json_never_panics_and_refusals_name_a_field(v in json()) {
        check(&v)?;
    }

    #[test]
    fn request_shaped_json_is_refused_by_name_or_round_trips_never_earlier(v in request()) {
        check(&v)?;
    }
}
