//! `parse_request` and `parse_job`: every rule names its field, SQS's names are accepted.

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
    assert_eq!(
        fifo.message_deduplication_id, None,
        "derived when sent, from the edition"
    );
}

const SAMPLED: &str = "Root=1-67891233-abcdef012345678912345678;Parent=463ac35c9f6413ad;Sampled=1";
const CALLER: &str = "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1";

#[test]
fn a_trace_header_is_taken_as_given_or_refused_naming_the_field() {
    let j = job(json!({"queue": "orders", "message_body": "x", "trace_header": CALLER})).unwrap();
    assert_eq!(j.trace_header.as_deref(), Some(CALLER));
    let err = job(json!({"queue": "orders", "message_body": "x", "trace_header": "Root=oops"})).unwrap_err();
    assert_eq!(err.field, "trace_header");
    assert!(err.to_string().contains("Root"), "{err}");
    let plain = job(json!({"queue": "orders", "message_body": "x"})).unwrap();
    assert_eq!(plain.trace_header, None);
}

fn traced(request: Value, invocation: Option<&str>) -> Request {
    parse_request(&request, &cfg(), now()).unwrap().traced(invocation)
}

#[test]
fn what_a_sampled_invocation_creates_keeps_its_trace_and_a_callers_header_wins() {
    let Request::Enqueue(j) = traced(json!({"queue": "orders", "message_body": "x"}), Some(SAMPLED)) else {
        panic!("an enqueue")
    };
    assert_eq!(j.unwrap().trace_header.as_deref(), Some(SAMPLED));
    let own = json!({"queue": "orders", "message_body": "x", "trace_header": CALLER});
    let Request::Enqueue(j) = traced(own, Some(SAMPLED)) else {
        panic!("an enqueue")
    };
    assert_eq!(
        j.unwrap().trace_header.as_deref(),
        Some(CALLER),
        "the caller's header wins"
    );
    let batch = json!({"jobs": [{"queue": "orders", "message_body": "a"}, {"queue": "nope", "message_body": "b"}]});
    let Request::Batch(jobs) = traced(batch, Some(SAMPLED)) else {
        panic!("a batch")
    };
    assert_eq!(jobs[0].as_ref().unwrap().trace_header.as_deref(), Some(SAMPLED));
    assert!(jobs[1].is_err(), "a refused job stays refused");
    let retry = json!({"action": "retry", "queue": "orders", "job_id": "j", "attempt": 1, "message_body": "x"});
    let Request::Retry(r) = traced(retry, Some(SAMPLED)) else {
        panic!("a retry")
    };
    assert_eq!(
        r.trace_header.as_deref(),
        Some(SAMPLED),
        "the next attempt is traced to the retry call"
    );
    let replay = json!({"action": "replay", "queue": "orders", "job_id": "j"});
    let Request::Replay(r) = traced(replay, Some(SAMPLED)) else {
        panic!("a replay")
    };
    assert_eq!(r.trace_header.as_deref(), Some(SAMPLED));
}

#[test]
fn an_unsampled_or_absent_invocation_trace_is_not_kept() {
    for invocation in [
        Some("Root=1-67891233-abcdef012345678912345678;Sampled=0"),
        Some("garbage"),
        None,
    ] {
        let Request::Enqueue(j) = traced(json!({"queue": "orders", "message_body": "x"}), invocation) else {
            panic!("an enqueue")
        };
        assert_eq!(j.unwrap().trace_header, None, "{invocation:?}");
    }
}

#[test]
fn eventbridge_at_is_read_in_its_zone_and_its_expressions_repeat() {
    let at = |v: Value| job(v).map(|j| j.perform_at.to_rfc3339());
    // 09:00 in Tokyo is midnight UTC; without a zone, UTC.
    let tokyo = json!({"queue": "orders", "message_body": "x", "schedule": "at(2027-01-01T09:00:00)", "time_zone": "Asia/Tokyo"});
    assert_eq!(at(tokyo).unwrap(), "2027-01-01T00:00:00+00:00");
    let utc = json!({"queue": "orders", "message_body": "x", "schedule": "at(2027-01-01T09:00:00)"});
    assert_eq!(at(utc).unwrap(), "2027-01-01T09:00:00+00:00");
    // A local time the clock skips comes at the gap's end; a past one is now.
    let gap = json!({"queue": "orders", "message_body": "x", "schedule": "at(2027-03-28T02:30:00)", "time_zone": "Europe/Berlin"});
    assert_eq!(at(gap).unwrap(), "2027-03-28T01:00:00+00:00");
    let past = json!({"queue": "orders", "message_body": "x", "schedule": "at(2020-01-01T09:00:00)"});
    assert_eq!(at(past).unwrap(), now().to_rfc3339());
    // With windows, `time_zone` is both's.
    let windowed = json!({"queue": "orders", "message_body": "x", "schedule": "at(2027-01-01T07:00:00)",
        "time_zone": "Asia/Tokyo", "windows": [{"from": "08:00", "to": "18:00"}]});
    assert_eq!(at(windowed).unwrap(), "2026-12-31T23:00:00+00:00");
    for (v, field) in [
        (
            json!({"schedule": "at(2027-01-01T09:00:00)", "perform_at": "2027-01-01T00:00:00Z"}),
            "schedule",
        ),
        (
            json!({"schedule": "at(2027-01-01T09:00:00)", "DelaySeconds": 5}),
            "schedule",
        ),
        (
            json!({"schedule": "at(2027-01-01T09:00:00)", "repeat": {"expression": "rate(1 hour)"}}),
            "schedule",
        ),
        (json!({"schedule": "cron(0 9 ? * MON-FRI *)"}), "schedule"),
        (
            json!({"schedule": "at(2027-01-01T09:00:00)", "time_zone": "Mars/Olympus"}),
            "time_zone",
        ),
        (
            json!({"delay_seconds": 60, "repeat": {"expression": "cron(0 9 * * * *)"}}),
            "repeat.expression",
        ),
        (
            json!({"delay_seconds": 60, "repeat": {"expression": "cron(0 9 ? * * 2020)"}}),
            "repeat.expression",
        ),
        (
            json!({"delay_seconds": 60, "repeat": {"expression": "rate(1 hour)", "every_s": 60}}),
            "repeat",
        ),
    ] {
        let mut v = v;
        v["queue"] = json!("orders");
        v["message_body"] = json!("x");
        assert_eq!(job(v.clone()).unwrap_err().field, field, "{v}");
    }
    let e =
        job(json!({"queue": "orders", "message_body": "x", "DelaySeconds": 5, "schedule": "at(2027-01-01T09:00:00)"}))
            .unwrap_err();
    assert_eq!(e.rule, "give one of DelaySeconds, perform_at and schedule");
    // A series on AWS's cron: the first weekday at 09:00 in its zone after its start.
    let series = job(
        json!({"queue": "orders", "message_body": "x", "perform_at": "2026-11-28T00:00:00Z",
        "repeat": {"expression": "cron(0 9 ? * MON-FRI *)"}, "time_zone": "Europe/Berlin"}),
    )
    .unwrap();
    assert_eq!(series.perform_at.to_rfc3339(), "2026-11-30T08:00:00+00:00");
    let shown = series.repeat.expect("a series").to_contract();
    assert_eq!(shown.expression.as_deref(), Some("cron(0 9 ? * MON-FRI *)"));
    assert_eq!((shown.cron, shown.every_s), (None, None));
}

/// `catch_up` reads a name it does not know as `Unknown` (an older client reads a newer
/// function's replies); in a request it is refused with the rule serde gave before.
#[test]
fn a_catch_up_this_release_does_not_know_is_refused_naming_the_policies() {
    let e = job(json!({"queue": "orders", "message_body": "x", "repeat": {"every_s": 60, "catch_up": "later"}}))
        .unwrap_err();
    assert_eq!(
        (e.field.as_str(), e.rule.as_str()),
        ("repeat.catch_up", r#"must be one of "skip", "one", "all""#)
    );
}

/// Issue 82: every message names its job now, so the attribute alone marks a copy only by a
/// copy's id: a plain job's retry does not force its id onto every later attempt.
#[test]
fn a_retry_names_itself_from_the_attribute_only_for_a_copys_id() {
    let retry = |id: &str| {
        json!({"action": "retry", "queue": "orders", "job_id": id, "attempt": 1, "message_body": "b",
               "message_attributes": {"waiter.job_id": {"data_type": "String", "string_value": id}}})
    };
    for (id, names_itself) in [("plain-1", false), ("plain-1~3", true), ("s@1800000000", true)] {
        let Ok(Request::Retry(r)) = parse_request(&retry(id), &cfg(), now()) else {
            panic!("{id}: a retry");
        };
        assert_eq!(r.names_itself, names_itself, "{id}");
    }
}
