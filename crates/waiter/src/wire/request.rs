//! Caller requests: the invocation payload, the actions, and the parsing of each into the job
//! model.
//!
//! Parsing is by hand from `serde_json::Value` rather than `#[derive(Deserialize)]` because every
//! refusal must name the field and the rule, and serde's derive errors do neither reliably.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::config::{Config, QueueName};
use crate::error::InvalidRequest;
use crate::job::{Job, MAX_JOBS_PER_REQUEST};
use crate::time;
use crate::wire::field_rules::{
    check_expiry, check_message_size, kind, parse_job_id, take_expires_at, take_fifo_id, take_job_id, take_job_ids,
    take_message_attributes, take_message_body, take_page, take_queue, take_when, take_windows, Fields,
    DEFAULT_PAGE_LIMIT,
};

/// An invocation payload that always deserialises: malformed JSON (or nesting past serde_json's
/// recursion limit) is kept as the parser's message, so that it can be refused as
/// `InvalidRequest` naming the request instead of failing inside the Lambda runtime.
#[derive(Debug)]
pub struct Payload(pub Result<Value, String>);

impl<'de> serde::Deserialize<'de> for Payload {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Payload(Value::deserialize(d).map_err(|e| e.to_string())))
    }
}

impl Payload {
    pub fn into_value(self) -> Result<Value, InvalidRequest> {
        self.0
            .map_err(|e| InvalidRequest::new("request", format!("is not valid JSON: {e}")))
    }
}

/// What a request asks for.
#[derive(Debug)]
pub enum Request {
    Enqueue(Box<Result<Job, InvalidRequest>>),
    Batch(Vec<Result<Job, InvalidRequest>>),
    Get {
        queue: QueueName,
        job_id: String,
    },
    Cancel {
        queue: QueueName,
        job_id: String,
    },
    ListParked {
        queue: QueueName,
        limit: usize,
        cursor: Option<String>,
    },
    Redrive {
        queue: QueueName,
        target: RedriveTarget,
    },
    Reschedule(Box<super::actions::Reschedule>),
    List(Box<super::actions::ListQuery>),
    CancelMany(Box<super::actions::CancelMany>),
    Stats(super::actions::StatsQuery),
}

/// Which parked jobs a `redrive` moves back.
#[derive(Debug, PartialEq)]
pub enum RedriveTarget {
    One(String),
    Many(Vec<String>),
    /// A page of the parked partition (`all: true`), continued with a cursor.
    All {
        limit: usize,
        cursor: Option<String>,
    },
}

/// Parses any invocation payload. An `Err` is a refusal of the whole request; inside a batch each
/// job carries its own result so that one bad job never blocks the others.
pub fn parse_request(event: &Value, config: &Config, now: DateTime<Utc>) -> Result<Request, InvalidRequest> {
    let Value::Object(map) = event else {
        return Err(InvalidRequest::new(
            "request",
            format!("must be a JSON object, got {}", kind(event)),
        ));
    };
    let action = match map.get("action") {
        None => "enqueue",
        Some(Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(InvalidRequest::new(
                "action",
                format!("must be a string, got {}", kind(other)),
            ))
        }
    };
    match action {
        "enqueue" => {
            if let Some(jobs) = map.get("jobs") {
                if let Some(extra) = map.keys().find(|k| !matches!(k.as_str(), "jobs" | "action")) {
                    return Err(InvalidRequest::new(
                        extra.clone(),
                        "is not allowed beside \"jobs\": put it inside each job",
                    ));
                }
                let Value::Array(items) = jobs else {
                    return Err(InvalidRequest::new(
                        "jobs",
                        format!("must be an array, got {}", kind(jobs)),
                    ));
                };
                if items.is_empty() {
                    return Err(InvalidRequest::new("jobs", "must hold at least one job"));
                }
                if items.len() > MAX_JOBS_PER_REQUEST {
                    return Err(InvalidRequest::new(
                        "jobs",
                        format!("must hold at most {MAX_JOBS_PER_REQUEST} jobs, got {}", items.len()),
                    ));
                }
                Ok(Request::Batch(
                    items.iter().map(|j| parse_job(j, config, now)).collect(),
                ))
            } else {
                Ok(Request::Enqueue(Box::new(parse_job(event, config, now))))
            }
        }
        "get" | "cancel" => {
            let mut f = Fields::new(map);
            f.take("action", None)?;
            let queue = take_queue(&mut f, config)?;
            let job_id = take_job_id(&mut f)?.ok_or_else(|| InvalidRequest::new("job_id", "is required"))?;
            f.finish()?;
            Ok(match action {
                "get" => Request::Get { queue, job_id },
                _ => Request::Cancel { queue, job_id },
            })
        }
        "redrive" => {
            let mut f = Fields::new(map);
            f.take("action", None)?;
            let queue = take_queue(&mut f, config)?;
            let one = take_job_id(&mut f)?;
            let many = take_job_ids(&mut f)?;
            let all = match f.take("all", None)? {
                None => false,
                Some((_, Value::Bool(b))) => b,
                Some((name, other)) => {
                    return Err(InvalidRequest::new(
                        name,
                        format!("must be true or false, got {}", kind(&other)),
                    ))
                }
            };
            let (limit, cursor) = take_page(&mut f)?;
            f.finish()?;
            if !all && (limit != DEFAULT_PAGE_LIMIT || cursor.is_some()) {
                return Err(InvalidRequest::new("limit", "limit and cursor go with all: true"));
            }
            let target = match (one, many, all) {
                (Some(id), None, false) => RedriveTarget::One(id),
                (None, Some(ids), false) => RedriveTarget::Many(ids),
                (None, None, true) => RedriveTarget::All { limit, cursor },
                (None, None, false) => {
                    return Err(InvalidRequest::new("job_id", "is required (or job_ids, or all: true)"))
                }
                _ => {
                    return Err(InvalidRequest::new(
                        "job_id",
                        "give one of job_id, job_ids or all: true",
                    ))
                }
            };
            Ok(Request::Redrive { queue, target })
        }
        "list_parked" => {
            let mut f = Fields::new(map);
            f.take("action", None)?;
            let queue = take_queue(&mut f, config)?;
            let (limit, cursor) = take_page(&mut f)?;
            f.finish()?;
            Ok(Request::ListParked { queue, limit, cursor })
        }
        "reschedule" => Ok(Request::Reschedule(Box::new(super::actions::parse_reschedule(
            Fields::new(map),
            config,
            now,
        )?))),
        "list" => Ok(Request::List(Box::new(super::actions::parse_list(
            Fields::new(map),
            config,
        )?))),
        "cancel_many" => Ok(Request::CancelMany(Box::new(super::actions::parse_cancel_many(
            Fields::new(map),
            config,
        )?))),
        "stats" => Ok(Request::Stats(super::actions::parse_stats(Fields::new(map), config)?)),
        other => Err(InvalidRequest::new(
            "action",
            format!(
                "must be one of enqueue, get, cancel, cancel_many, reschedule, list, stats, list_parked, redrive; got {other:?}"
            ),
        )),
    }
}

/// Parses and validates one job.
pub fn parse_job(value: &Value, config: &Config, now: DateTime<Utc>) -> Result<Job, InvalidRequest> {
    let Value::Object(map) = value else {
        return Err(InvalidRequest::new(
            "job",
            format!("must be a JSON object, got {}", kind(value)),
        ));
    };
    let mut f = Fields::new(map);
    if let Some((name, v)) = f.take("action", None)? {
        if v != Value::String("enqueue".into()) {
            return Err(InvalidRequest::new(name, "must be \"enqueue\" inside a batch"));
        }
    }
    let queue = take_queue(&mut f, config)?;

    let message_body = take_message_body(&mut f)?.ok_or_else(|| InvalidRequest::new("message_body", "is required"))?;
    let message_attributes = take_message_attributes(&mut f)?.unwrap_or_default();
    check_message_size(&message_body, &message_attributes)?;
    let perform_at = take_when(&mut f, now)?.map_or_else(|| time::ceil_to_micros(now).unwrap_or(now), |(_, t)| t);
    let windows = take_windows(&mut f)?.flatten();
    let perform_at = windows.as_ref().map_or(perform_at, |w| w.next_open(perform_at));
    let expires_at = match take_expires_at(&mut f, now)? {
        Some((name, Some(t))) => {
            check_expiry(&name, t, perform_at)?;
            Some(t)
        }
        _ => None,
    };

    let (job_id, job_id_given) = match f.take("job_id", Some("JobId"))? {
        None | Some((_, Value::Null)) => (uuid::Uuid::new_v4().to_string(), false),
        Some((name, v)) => (parse_job_id(&name, &v)?, true),
    };

    let mut message_group_id = take_fifo_id(&mut f, "message_group_id", "MessageGroupId")?;
    let mut message_deduplication_id = take_fifo_id(&mut f, "message_deduplication_id", "MessageDeduplicationId")?;
    f.finish()?;

    if queue.is_fifo() {
        if message_group_id.is_none() {
            return Err(InvalidRequest::new("message_group_id", "is required for a FIFO queue"));
        }
        // A re-sent job is then deduplicated by SQS within its 5-minute window.
        message_deduplication_id.get_or_insert_with(|| job_id.clone());
    } else if message_deduplication_id.is_some() {
        return Err(InvalidRequest::new(
            "message_deduplication_id",
            "is only valid for FIFO queues (names ending .fifo)",
        ));
    }
    // Empty strings were refused above; normalise away nothing else.
    message_group_id = message_group_id.filter(|g| !g.is_empty());
    message_deduplication_id = message_deduplication_id.filter(|d| !d.is_empty());

    Ok(Job {
        queue,
        job_id,
        job_id_given,
        message_body,
        message_attributes,
        perform_at,
        expires_at,
        message_group_id,
        message_deduplication_id,
        windows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::AttributeData;
    use crate::limits::SQS_MAX_MESSAGE_BYTES;
    use chrono::TimeDelta;
    use serde_json::{json, Map};

    fn cfg() -> Config {
        Config::from_lookup(|k| (k == "WAITER_QUEUES").then(|| "orders,billing.fifo".to_owned())).unwrap()
    }

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-22T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn job(v: Value) -> Result<Job, InvalidRequest> {
        parse_job(&v, &cfg(), now())
    }

    #[test]
    fn every_rule_names_its_field() {
        let big = "x".repeat(SQS_MAX_MESSAGE_BYTES + 1);
        let eleven: Map<String, Value> = (0..11)
            .map(|i| (format!("a{i}"), json!({"data_type": "String", "string_value": "v"})))
            .collect();
        let cases: Vec<(Value, &str)> = vec![
            (json!({"message_body": "x"}), "queue"),
            (json!({"queue": "other", "message_body": "x"}), "queue"),
            (json!({"queue": "../orders", "message_body": "x"}), "queue"),
            (
                json!({"queue_url": "https://sqs.us-east-1.amazonaws.com/1/other", "message_body": "x"}),
                "queue_url",
            ),
            (json!({"QueueUrl": "orders", "message_body": "x"}), "QueueUrl"),
            (
                json!({"queue": "orders", "queue_url": "https://x/orders", "message_body": "x"}),
                "queue",
            ),
            (json!({"queue": 5, "message_body": "x"}), "queue"),
            (json!({"queue": "orders"}), "message_body"),
            (json!({"queue": "orders", "message_body": ""}), "message_body"),
            (json!({"queue": "orders", "message_body": 42}), "message_body"),
            (json!({"queue": "orders", "message_body": big}), "message_body"),
            (json!({"queue": "orders", "message_body": "a\u{0}b"}), "message_body"),
            (json!({"queue": "orders", "message_body": "a\u{FFFE}b"}), "message_body"),
            (
                json!({"queue": "orders", "MessageBody": "x", "message_body": "y"}),
                "message_body",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "delay_seconds": 5, "perform_at": "2026-12-01T00:00:00Z"}),
                "delay_seconds",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "delay_seconds": -1}),
                "delay_seconds",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "delay_seconds": 1.5}),
                "delay_seconds",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "delay_seconds": "10"}),
                "delay_seconds",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "DelaySeconds": u64::MAX}),
                "DelaySeconds",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "perform_at": "next tuesday"}),
                "perform_at",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "perform_at": "10000-01-01T00:00:00Z"}),
                "perform_at",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "perform_at": 1e300}),
                "perform_at",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "perform_at": -5}),
                "perform_at",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "perform_at": true}),
                "perform_at",
            ),
            (json!({"queue": "orders", "message_body": "x", "job_id": ""}), "job_id"),
            (
                json!({"queue": "orders", "message_body": "x", "job_id": "a/b"}),
                "job_id",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "job_id": "x' OR 1=1"}),
                "job_id",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "job_id": "a".repeat(129)}),
                "job_id",
            ),
            (json!({"queue": "orders", "message_body": "x", "job_id": 7}), "job_id"),
            (
                json!({"queue": "orders", "message_body": "x", "expires_at": "2020-01-01T00:00:00Z"}),
                "expires_at",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "delay_seconds": 100, "expires_at": "2026-11-22T10:00:30Z"}),
                "expires_at",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "message_attributes": eleven}),
                "message_attributes",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "message_attributes": []}),
                "message_attributes",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "message_attributes": {"a": {"data_type": "Date", "string_value": "x"}}}),
                "message_attributes.a.data_type",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "message_attributes": {"a": {"string_value": "x"}}}),
                "message_attributes.a.data_type",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "message_attributes": {"a": {"data_type": "Binary", "binary_value": "not base64!"}}}),
                "message_attributes.a.binary_value",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "message_attributes": {"a": {"data_type": "Number", "string_value": "12abc"}}}),
                "message_attributes.a.string_value",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "message_attributes": {"a": {"data_type": "String"}}}),
                "message_attributes.a.string_value",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "message_attributes": {"AWS.trace": {"data_type": "String", "string_value": "x"}}}),
                "message_attributes.AWS.trace",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "message_attributes": {"a": {"data_type": "String", "string_value": "x", "extra": 1}}}),
                "message_attributes.a.extra",
            ),
            (
                json!({"queue": "billing.fifo", "message_body": "x"}),
                "message_group_id",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "message_deduplication_id": "d"}),
                "message_deduplication_id",
            ),
            (
                json!({"queue": "billing.fifo", "message_body": "x", "message_group_id": "a b"}),
                "message_group_id",
            ),
            (json!({"queue": "orders", "message_body": "x", "delay": 5}), "delay"),
        ];
        for (input, field) in cases {
            let err = job(input.clone()).expect_err(&format!("accepted {input}"));
            assert_eq!(err.field, field, "{input} -> {err}");
            assert!(err.to_string().starts_with(&format!("{field}: ")));
        }
    }

    #[test]
    fn requests_and_actions() {
        let c = cfg();
        let n = now();
        assert_eq!(parse_request(&json!([]), &c, n).unwrap_err().field, "request");
        assert_eq!(parse_request(&json!({"jobs": {}}), &c, n).unwrap_err().field, "jobs");
        assert_eq!(parse_request(&json!({"jobs": []}), &c, n).unwrap_err().field, "jobs");
        let many: Vec<Value> = (0..=MAX_JOBS_PER_REQUEST).map(|_| json!({})).collect();
        assert_eq!(parse_request(&json!({"jobs": many}), &c, n).unwrap_err().field, "jobs");
        assert_eq!(
            parse_request(&json!({"jobs": [], "queue": "orders"}), &c, n)
                .unwrap_err()
                .field,
            "queue"
        );
        assert_eq!(
            parse_request(&json!({"action": "explode"}), &c, n).unwrap_err().field,
            "action"
        );
        assert_eq!(
            parse_request(&json!({"action": "get", "queue": "orders"}), &c, n)
                .unwrap_err()
                .field,
            "job_id"
        );
        assert!(matches!(
            parse_request(&json!({"action": "cancel", "queue": "orders", "job_id": "a"}), &c, n).unwrap(),
            Request::Cancel { .. }
        ));
    }

    #[test]
    fn sqs_aliases_times_and_attributes_are_accepted_unaltered() {
        let j = job(json!({
            "QueueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/orders",
            "MessageBody": "{\"order\":42} \u{1F600}\t",
            "DelaySeconds": 30,
            "MessageAttributes": {
                "kind": {"DataType": "String", "StringValue": "invoice"},
                "n": {"DataType": "Number.int", "StringValue": "-1.5e3"},
                "blob": {"DataType": "Binary.gz", "BinaryValue": "AAH/"}
            }
        }))
        .unwrap();
        assert_eq!(j.queue.as_str(), "orders");
        assert_eq!(j.message_body, "{\"order\":42} \u{1F600}\t");
        assert_eq!(j.perform_at, now() + TimeDelta::seconds(30));
        assert_eq!(
            j.message_attributes["blob"].data,
            AttributeData::Binary(vec![0, 1, 255])
        );
        assert_eq!(j.message_attributes["n"].data_type, "Number.int");
        assert!(!j.job_id_given);

        let at = job(json!({"queue": "orders", "message_body": "x", "perform_at": 1796000000.25})).unwrap();
        assert_eq!(crate::time::format_epoch(at.perform_at), "1796000000.25");
        let past = job(json!({"queue": "orders", "message_body": "x", "perform_at": "2001-01-01T00:00:00Z"})).unwrap();
        assert_eq!(past.perform_at, now(), "a past time means now");
        let fifo =
            job(json!({"queue": "billing.fifo", "message_body": "x", "message_group_id": "g", "job_id": "k"})).unwrap();
        assert_eq!(fifo.message_deduplication_id.as_deref(), Some("k"));
    }
}
