//! CloudWatch Embedded Metric Format lines: one JSON object on stdout per invocation, which
//! CloudWatch Logs turns into metrics with no API calls from the function.
//! <https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html>

use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

use sqs_waiter_contract::{BatchResult, JobReply, JobStatus};

use crate::poller::RunSummary;
use crate::wire::reply::Reply;

pub const NAMESPACE: &str = "SqsWaiter";
/// The one dimension: the function's name, which SAM and CDK know for their alarms.
pub const DIMENSION: &str = "FunctionName";
/// EMF accepts at most 100 values per metric in one line.
const MAX_VALUES: usize = 100;

#[derive(Debug, Clone, Copy)]
pub enum Unit {
    Count,
    Milliseconds,
    Seconds,
}

impl Unit {
    fn as_str(self) -> &'static str {
        match self {
            Unit::Count => "Count",
            Unit::Milliseconds => "Milliseconds",
            Unit::Seconds => "Seconds",
        }
    }
}

/// One EMF line with the given metrics; a metric with several values is sent as an array.
pub fn emf_line(function_name: &str, metrics: &[(&str, Vec<f64>, Unit)], at: DateTime<Utc>) -> String {
    let mut root = Map::new();
    let definitions: Vec<Value> = metrics
        .iter()
        .map(|(name, _, unit)| json!({"Name": name, "Unit": unit.as_str()}))
        .collect();
    root.insert(
        "_aws".into(),
        json!({
            "Timestamp": at.timestamp_millis(),
            "CloudWatchMetrics": [{"Namespace": NAMESPACE, "Dimensions": [[DIMENSION]], "Metrics": definitions}]
        }),
    );
    root.insert(DIMENSION.into(), json!(function_name));
    for (name, values, _) in metrics {
        let v = match values.as_slice() {
            [one] => json!(one),
            many => json!(many.iter().take(MAX_VALUES).collect::<Vec<_>>()),
        };
        root.insert((*name).into(), v);
    }
    Value::Object(root).to_string()
}

/// The poller's metrics for one run.
pub fn poller_line(function_name: &str, s: &RunSummary, at: DateTime<Utc>) -> String {
    let mut metrics = vec![
        ("Dispatched", vec![s.dispatched as f64], Unit::Count),
        ("Expired", vec![s.expired as f64], Unit::Count),
        ("Parked", vec![s.parked as f64], Unit::Count),
        ("FailedEntries", vec![s.failed as f64], Unit::Count),
        ("PartitionErrors", vec![s.errors.len() as f64], Unit::Count),
        ("BacklogAge", vec![s.backlog_age_s], Unit::Seconds),
    ];
    if !s.lateness_sample_ms.is_empty() {
        metrics.push(("Lateness", s.lateness_sample_ms.clone(), Unit::Milliseconds));
    }
    emf_line(function_name, &metrics, at)
}

/// The enqueue function's metrics for one invocation, counted from its reply; `None` when the
/// invocation failed as a whole (one rejected request).
pub fn enqueue_line(function_name: &str, reply: Option<&Reply>, at: DateTime<Utc>) -> String {
    let results: Vec<Option<&JobReply>> = match reply {
        None => vec![None],
        Some(Reply::Job(r)) => vec![Some(r)],
        Some(Reply::Batch(b)) => b
            .results
            .iter()
            .map(|r| match r {
                BatchResult::Done(r) => Some(&**r),
                BatchResult::Failed { .. } => None,
            })
            .collect(),
        Some(_) => Vec::new(),
    };
    let count = |status: JobStatus| {
        results
            .iter()
            .flatten()
            .filter(|r| r.status == status && r.duplicate != Some(true))
            .count() as f64
    };
    let rejected = results.iter().filter(|r| r.is_none()).count() as f64;
    emf_line(
        function_name,
        &[
            ("Scheduled", vec![count(JobStatus::Scheduled)], Unit::Count),
            ("SentDirect", vec![count(JobStatus::Sent)], Unit::Count),
            ("Rejected", vec![rejected], Unit::Count),
        ],
        at,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_follow_the_emf_shape() {
        let s = RunSummary {
            dispatched: 12,
            backlog_age_s: 3.5,
            lateness_sample_ms: (0..150).map(f64::from).collect(),
            ..RunSummary::default()
        };
        let v: Value = serde_json::from_str(&poller_line("poller-fn", &s, Utc::now())).unwrap();
        let def = &v["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(def["Namespace"], NAMESPACE);
        assert_eq!(def["Dimensions"][0][0], DIMENSION);
        assert_eq!(v[DIMENSION], "poller-fn");
        assert_eq!(v["Dispatched"], 12.0);
        assert_eq!(v["BacklogAge"], 3.5);
        assert_eq!(v["Lateness"].as_array().unwrap().len(), 100);
        let names: Vec<&str> = def["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["Name"].as_str().unwrap())
            .collect();
        for n in names {
            assert!(v.get(n).is_some(), "{n} has no value");
        }
    }

    #[test]
    fn enqueue_counts_statuses_but_not_duplicates() {
        let reply: sqs_waiter_contract::BatchReply = serde_json::from_value(json!({"results": [
            {"status": "scheduled", "job_id": "a", "queue": "q", "duplicate": false},
            {"status": "scheduled", "job_id": "b", "queue": "q", "duplicate": true},
            {"status": "sent", "job_id": "c", "queue": "q", "duplicate": false},
            {"status": "error", "error": {"type": "Throttled", "message": "m", "retryable": true}}
        ]}))
        .unwrap();
        let reply = Reply::Batch(reply);
        let v: Value = serde_json::from_str(&enqueue_line("enqueue-fn", Some(&reply), Utc::now())).unwrap();
        assert_eq!(
            (
                v["Scheduled"].as_f64(),
                v["SentDirect"].as_f64(),
                v["Rejected"].as_f64()
            ),
            (Some(1.0), Some(1.0), Some(1.0))
        );
    }
}
