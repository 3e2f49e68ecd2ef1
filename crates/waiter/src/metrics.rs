//! CloudWatch Embedded Metric Format lines: one JSON object on stdout per invocation, which
//! CloudWatch Logs turns into metrics with no API calls from the function.
//! <https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html>

use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

use sqs_waiter_contract::{BatchResult, ErrorType, JobReply, JobStatus};

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
    emf_line_in(&[(DIMENSION, function_name)], metrics, at)
}

/// `emf_line` with these dimensions (name, value), in one dimension set.
fn emf_line_in(dimensions: &[(&str, &str)], metrics: &[(&str, Vec<f64>, Unit)], at: DateTime<Utc>) -> String {
    let mut root = Map::new();
    let definitions: Vec<Value> = metrics
        .iter()
        .map(|(name, _, unit)| json!({"Name": name, "Unit": unit.as_str()}))
        .collect();
    root.insert(
        "_aws".into(),
        json!({
            "Timestamp": at.timestamp_millis(),
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": [dimensions.iter().map(|(name, _)| *name).collect::<Vec<_>>()],
                "Metrics": definitions
            }]
        }),
    );
    for (name, value) in dimensions {
        root.insert((*name).into(), json!(value));
    }
    for (name, values, _) in metrics {
        let v = match values.as_slice() {
            [one] => json!(one),
            many => json!(many.iter().take(MAX_VALUES).collect::<Vec<_>>()),
        };
        root.insert((*name).into(), v);
    }
    Value::Object(root).to_string()
}

/// A run's (or one queue's) outcome counts, then `extra`, then `Lateness` when a job was sent.
fn run_metrics(s: &RunSummary, extra: &[(&'static str, f64, Unit)]) -> Vec<(&'static str, Vec<f64>, Unit)> {
    let mut metrics = vec![
        ("Dispatched", vec![s.dispatched as f64], Unit::Count),
        ("Expired", vec![s.expired as f64], Unit::Count),
        ("Parked", vec![s.parked as f64], Unit::Count),
        ("FailedEntries", vec![s.failed as f64], Unit::Count),
        ("HeldBack", vec![s.held_back as f64], Unit::Count),
    ];
    metrics.extend(extra.iter().map(|(name, v, unit)| (*name, vec![*v], *unit)));
    if !s.lateness_sample_ms.is_empty() {
        metrics.push(("Lateness", s.lateness_sample_ms.clone(), Unit::Milliseconds));
    }
    metrics
}

/// The poller's metrics for one run.
pub fn poller_line(function_name: &str, s: &RunSummary, at: DateTime<Utc>) -> String {
    let mut extra = vec![
        ("PartitionErrors", s.errors.len() as f64, Unit::Count),
        ("BacklogAge", s.overdue_beyond_rate_s, Unit::Seconds),
    ];
    // Only from a run that met a series: each metric name is a custom metric billed monthly,
    // and a deployment without series should not pay for these two.
    if s.occurrences + s.skipped_occurrences > 0 {
        extra.push(("Occurrences", s.occurrences as f64, Unit::Count));
        extra.push(("OccurrencesSkipped", s.skipped_occurrences as f64, Unit::Count));
    }
    // Only when met (a stack update's minutes, a rollback): no custom metric to pay otherwise.
    if s.unreadable > 0 {
        extra.push(("Unreadable", s.unreadable as f64, Unit::Count));
    }
    emf_line(function_name, &run_metrics(s, &extra), at)
}

/// The poller's metrics per queue for one run, in dimensions `FunctionName` and `Queue` (the
/// dashboard's per-queue graphs): one line per queue worked. Six metrics a queue, each a
/// custom metric CloudWatch bills (docs/operations.md). A queue that sent a job of a priority
/// other than the default also gets `Lateness` by `PriorityClass` (`0`, `1-99`, `100`,
/// `101+`), one line per class sent; a queue without priorities pays for none of them.
pub fn poller_queue_lines(function_name: &str, s: &RunSummary, at: DateTime<Utc>) -> Vec<String> {
    let mut lines = Vec::new();
    for (queue, q) in &s.by_queue {
        // Only while paused: how long (the dashboard's graph); a queue never paused pays for
        // no such metric.
        let paused: Vec<(&'static str, f64, Unit)> = q
            .paused_for_s
            .map(|s| ("PausedFor", s, Unit::Seconds))
            .into_iter()
            .collect();
        lines.push(emf_line_in(
            &[(DIMENSION, function_name), (QUEUE_DIMENSION, queue)],
            &run_metrics(q, &paused),
            at,
        ));
        if q.lateness_by_class.keys().any(|c| *c != DEFAULT_CLASS) {
            for (class, sample) in &q.lateness_by_class {
                lines.push(emf_line_in(
                    &[
                        (DIMENSION, function_name),
                        (QUEUE_DIMENSION, queue),
                        (PRIORITY_CLASS_DIMENSION, class),
                    ],
                    &[("Lateness", sample.clone(), Unit::Milliseconds)],
                    at,
                ));
            }
        }
    }
    lines
}

/// The dimension of `Lateness` by priority class beside the function's and the queue's name.
pub const PRIORITY_CLASS_DIMENSION: &str = "PriorityClass";
const DEFAULT_CLASS: &str = "100";

/// How one invocation of the enqueue function ended, for its metrics line.
#[derive(Debug, Clone, Copy)]
pub enum Invocation<'a> {
    /// It replied: an enqueue (`is_enqueue`), a batch, or another action.
    Replied { reply: &'a Reply, is_enqueue: bool },
    /// It failed as a whole, with this `errorType`.
    Failed { error_type: ErrorType, is_enqueue: bool },
}

/// The enqueue function's metrics for one invocation.
///
/// For enqueue requests: `Scheduled`, `SentDirect` and `Rejected` (invalid requests and failed
/// jobs). For every action: `Refused`, invocations refused as `InvalidRequest` or
/// `AccessDenied` (the caller's mistake, which Lambda still counts in `Errors`), and `Failures`, invocations or batch jobs
/// that failed on our side (every other error type). The enqueue alarm watches
/// `Errors - Refused + Failures`, so a caller's mistake never pages, while a crash or timeout
/// (which prints no line) still does.
pub fn enqueue_line(function_name: &str, invocation: Invocation<'_>, at: DateTime<Utc>) -> String {
    let (refused, is_enqueue) = match invocation {
        Invocation::Failed { error_type, is_enqueue } => (error_type.is_refusal(), is_enqueue),
        Invocation::Replied { is_enqueue, .. } => (false, is_enqueue),
    };
    let results = results(invocation);
    let count = |status: JobStatus| {
        results
            .iter()
            .flatten()
            .filter(|r| r.status == status && r.duplicate != Some(true))
            .count() as f64
    };
    let ours = |e: &&ErrorType| !e.is_refusal();
    let failures = results.iter().filter_map(|r| r.as_ref().err()).filter(ours).count() as f64;
    let refused = f64::from(u8::from(refused));
    let mut metrics = Vec::new();
    if is_enqueue {
        let rejected = results.iter().filter(|r| r.is_err()).count() as f64;
        metrics.extend([
            ("Scheduled", vec![count(JobStatus::Scheduled)], Unit::Count),
            ("SentDirect", vec![count(JobStatus::Sent)], Unit::Count),
            ("Rejected", vec![rejected], Unit::Count),
        ]);
    }
    metrics.extend([
        ("Refused", vec![refused], Unit::Count),
        ("Failures", vec![failures], Unit::Count),
    ]);
    emf_line(function_name, &metrics, at)
}

/// The dimension of the per-queue metrics (poller counts, retries) beside the function's name.
pub const QUEUE_DIMENSION: &str = "Queue";
/// The dimension of the enqueue function's `Errors` by type beside the function's name.
pub const ERROR_TYPE_DIMENSION: &str = "ErrorType";

/// The enqueue function's errors of one invocation by `errorType` (`InvalidRequest` included):
/// one line per type seen, metric `Errors` in dimensions `FunctionName` and `ErrorType`, for the
/// dashboard's "errors by type". An invocation without errors prints none.
pub fn enqueue_error_lines(function_name: &str, invocation: Invocation<'_>, at: DateTime<Utc>) -> Vec<String> {
    let mut by_type: std::collections::BTreeMap<&'static str, usize> = std::collections::BTreeMap::new();
    for error_type in results(invocation).into_iter().filter_map(Result::err) {
        *by_type.entry(error_type.as_str()).or_default() += 1;
    }
    by_type
        .into_iter()
        .map(|(error_type, n)| {
            emf_line_in(
                &[(DIMENSION, function_name), (ERROR_TYPE_DIMENSION, error_type)],
                &[("Errors", vec![n as f64], Unit::Count)],
                at,
            )
        })
        .collect()
}

/// What an invocation answered, job by job: its reply, its batch's results, or its own error.
/// Replies of other actions (lists, stats) count as none.
fn results(invocation: Invocation<'_>) -> Vec<Result<&JobReply, ErrorType>> {
    match invocation {
        Invocation::Failed { error_type, .. } => vec![Err(error_type)],
        Invocation::Replied { reply, .. } => match reply {
            Reply::Job(r) => vec![Ok(r)],
            Reply::Batch(b) => b
                .results
                .iter()
                .map(|r| match r {
                    BatchResult::Done(r) => Ok(&**r),
                    BatchResult::Failed { error, .. } => Err(error.error_type),
                })
                .collect(),
            _ => Vec::new(),
        },
    }
}

/// The metrics of one `retry` reply, per queue (`per_queue`, `WAITER_QUEUE_METRICS`) or per
/// function: `Retried` (an attempt scheduled) and `Exhausted` (the job parked because its
/// attempts ran out). A duplicate counts as neither.
pub fn retry_line(function_name: &str, reply: &JobReply, per_queue: bool, at: DateTime<Utc>) -> String {
    let new = reply.duplicate != Some(true);
    let count = |status: JobStatus| f64::from(u8::from(new && reply.status == status));
    let by_queue = [(DIMENSION, function_name), (QUEUE_DIMENSION, reply.queue.as_str())];
    emf_line_in(
        if per_queue { &by_queue } else { &by_queue[..1] },
        &[
            ("Retried", vec![count(JobStatus::Scheduled)], Unit::Count),
            ("Exhausted", vec![count(JobStatus::Parked)], Unit::Count),
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
            backlog_age_s: 9.0,
            overdue_beyond_rate_s: 3.5,
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
        for n in &names {
            assert!(v.get(n).is_some(), "{n} has no value");
        }
        assert!(!names.contains(&"Occurrences"), "no series met: no series metrics");
        let series = RunSummary {
            occurrences: 3,
            skipped_occurrences: 2,
            ..s
        };
        let v: Value = serde_json::from_str(&poller_line("poller-fn", &series, Utc::now())).unwrap();
        assert_eq!(
            (v["Occurrences"].as_f64(), v["OccurrencesSkipped"].as_f64()),
            (Some(3.0), Some(2.0))
        );
    }

    #[test]
    fn enqueue_counts_statuses_but_not_duplicates() {
        let v = batch_line(json!([
            {"status": "scheduled", "job_id": "a", "queue": "q", "duplicate": false},
            {"status": "scheduled", "job_id": "b", "queue": "q", "duplicate": true},
            {"status": "sent", "job_id": "c", "queue": "q", "duplicate": false},
            {"status": "error", "error": {"type": "Throttled", "message": "m", "retryable": true}}
        ]));
        assert_eq!(
            (
                v["Scheduled"].as_f64(),
                v["SentDirect"].as_f64(),
                v["Rejected"].as_f64(),
                v["Failures"].as_f64()
            ),
            (Some(1.0), Some(1.0), Some(1.0), Some(1.0))
        );
    }

    /// The metrics line of an enqueue invocation that replied with these batch results.
    fn batch_line(results: Value) -> Value {
        let reply: sqs_waiter_contract::BatchReply = serde_json::from_value(json!({ "results": results })).unwrap();
        let reply = Reply::Batch(reply);
        let invocation = Invocation::Replied {
            reply: &reply,
            is_enqueue: true,
        };
        serde_json::from_str(&enqueue_line("enqueue-fn", invocation, Utc::now())).unwrap()
    }

    fn failed(error_type: ErrorType, is_enqueue: bool) -> Value {
        let line = enqueue_line("f", Invocation::Failed { error_type, is_enqueue }, Utc::now());
        serde_json::from_str(&line).unwrap()
    }

    #[test]
    fn a_refused_request_counts_as_refused_never_as_a_failure_whatever_the_action() {
        for (is_enqueue, refusal) in [true, false]
            .into_iter()
            .flat_map(|e| [(e, ErrorType::InvalidRequest), (e, ErrorType::AccessDenied)])
        {
            let v = failed(refusal, is_enqueue);
            assert_eq!((v["Refused"].as_f64(), v["Failures"].as_f64()), (Some(1.0), Some(0.0)));
            assert_eq!(
                v.get("Scheduled").is_some(),
                is_enqueue,
                "enqueue counts only for enqueue"
            );
        }
    }

    #[test]
    fn every_error_on_our_side_is_a_failure_and_not_refused() {
        for error_type in ErrorType::ALL.into_iter().filter(|t| !t.is_refusal()) {
            for is_enqueue in [true, false] {
                let v = failed(error_type, is_enqueue);
                assert_eq!(
                    (v["Refused"].as_f64(), v["Failures"].as_f64()),
                    (Some(0.0), Some(1.0)),
                    "{error_type:?}"
                );
            }
        }
    }

    #[test]
    fn retries_count_per_queue_and_duplicates_count_as_neither() {
        let line = |v: Value| -> Value {
            let reply: JobReply = serde_json::from_value(v).unwrap();
            serde_json::from_str(&retry_line("fn", &reply, true, Utc::now())).unwrap()
        };
        let v = line(json!({"status": "scheduled", "job_id": "a", "queue": "orders", "duplicate": false}));
        assert_eq!(
            v["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            json!([[DIMENSION, QUEUE_DIMENSION]])
        );
        assert_eq!(
            (v[QUEUE_DIMENSION].as_str(), v[DIMENSION].as_str()),
            (Some("orders"), Some("fn"))
        );
        assert_eq!((v["Retried"].as_f64(), v["Exhausted"].as_f64()), (Some(1.0), Some(0.0)));
        let v = line(json!({"status": "parked", "job_id": "a", "queue": "orders", "duplicate": false}));
        assert_eq!((v["Retried"].as_f64(), v["Exhausted"].as_f64()), (Some(0.0), Some(1.0)));
        for status in ["scheduled", "parked"] {
            let v = line(json!({"status": status, "job_id": "a", "queue": "orders", "duplicate": true}));
            assert_eq!((v["Retried"].as_f64(), v["Exhausted"].as_f64()), (Some(0.0), Some(0.0)));
        }
        let v = line(json!({"status": "conflict", "job_id": "a", "queue": "orders"}));
        assert_eq!((v["Retried"].as_f64(), v["Exhausted"].as_f64()), (Some(0.0), Some(0.0)));
        // With WAITER_QUEUE_METRICS=false: the same counts, per function only.
        let reply: JobReply =
            serde_json::from_value(json!({"status": "scheduled", "job_id": "a", "queue": "orders"})).unwrap();
        let v: Value = serde_json::from_str(&retry_line("fn", &reply, false, Utc::now())).unwrap();
        assert_eq!(v["_aws"]["CloudWatchMetrics"][0]["Dimensions"], json!([[DIMENSION]]));
        assert!(v.get(QUEUE_DIMENSION).is_none(), "{v}");
        assert_eq!(v["Retried"].as_f64(), Some(1.0));
    }

    /// docs/operations.md "Metrics" counts them: what one more queue adds to CloudWatch's
    /// custom metrics (each name and dimension set is one, billed by the month).
    #[test]
    fn a_queue_adds_six_poller_metrics_two_retry_metrics_and_four_lateness_classes_at_most() {
        use std::collections::BTreeSet;
        let metrics_of = |lines: &[String]| -> BTreeSet<String> {
            lines
                .iter()
                .flat_map(|l| {
                    let v: Value = serde_json::from_str(l).unwrap();
                    let dims: Vec<String> = v["_aws"]["CloudWatchMetrics"][0]["Dimensions"][0]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|d| format!("{}={}", d.as_str().unwrap(), v[d.as_str().unwrap()]))
                        .collect();
                    v["_aws"]["CloudWatchMetrics"][0]["Metrics"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|m| format!("{} {}", m["Name"].as_str().unwrap(), dims.join(",")))
                        .collect::<Vec<_>>()
                })
                .collect()
        };
        let mut s = RunSummary::default();
        s.by_queue.insert("orders".into(), Default::default());
        let idle = metrics_of(&poller_queue_lines("fn", &s, Utc::now()));
        assert_eq!(idle.len(), 5, "no Lateness until a job is sent: {idle:?}");
        s.by_queue.get_mut("orders").unwrap().lateness_sample_ms = vec![3.0];
        let plain = metrics_of(&poller_queue_lines("fn", &s, Utc::now()));
        assert_eq!(plain.len(), 6, "{plain:?}");
        s.by_queue.get_mut("orders").unwrap().paused_for_s = Some(90.0);
        let paused = metrics_of(&poller_queue_lines("fn", &s, Utc::now()));
        assert_eq!(paused.len(), 7, "PausedFor only while paused: {paused:?}");
        s.by_queue.get_mut("orders").unwrap().paused_for_s = None;
        let classes = ["0", "1-99", "100", "101+"];
        let q = s.by_queue.get_mut("orders").unwrap();
        for c in classes {
            q.lateness_by_class.insert(c, vec![1.0]);
        }
        let ranked = metrics_of(&poller_queue_lines("fn", &s, Utc::now()));
        assert_eq!(ranked.len(), 6 + classes.len(), "{ranked:?}");
        let reply: JobReply =
            serde_json::from_value(json!({"status": "scheduled", "job_id": "a", "queue": "orders"})).unwrap();
        let retry = metrics_of(&[retry_line("fn", &reply, true, Utc::now())]);
        assert_eq!(retry.len(), 2, "{retry:?}");
    }

    #[test]
    fn per_queue_lines_carry_each_queues_counts_and_lateness() {
        let mut s = RunSummary::default();
        s.by_queue.insert(
            "orders".into(),
            RunSummary {
                dispatched: 7,
                parked: 1,
                lateness_sample_ms: vec![12.0, 30.0],
                ..RunSummary::default()
            },
        );
        s.by_queue.insert("idle".into(), RunSummary::default());
        let lines: Vec<Value> = poller_queue_lines("poller-fn", &s, Utc::now())
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        let orders = lines.iter().find(|v| v[QUEUE_DIMENSION] == "orders").unwrap();
        assert_eq!(
            orders["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
            json!([[DIMENSION, QUEUE_DIMENSION]])
        );
        assert_eq!(
            (orders["Dispatched"].as_f64(), orders["Parked"].as_f64()),
            (Some(7.0), Some(1.0))
        );
        assert_eq!(orders["Lateness"], json!([12.0, 30.0]));
        let idle = lines.iter().find(|v| v[QUEUE_DIMENSION] == "idle").unwrap();
        assert_eq!(idle["Dispatched"].as_f64(), Some(0.0));
        assert!(idle.get("Lateness").is_none(), "no lateness without a dispatch");
    }

    #[test]
    fn lateness_by_priority_class_only_for_a_queue_that_sent_another_priority_than_the_default() {
        let mut s = RunSummary::default();
        let queue = |classes: &[(&'static str, f64)]| RunSummary {
            held_back: 3,
            lateness_by_class: classes.iter().map(|(c, ms)| (*c, vec![*ms])).collect(),
            ..RunSummary::default()
        };
        s.by_queue.insert("plain".into(), queue(&[("100", 5.0)]));
        s.by_queue
            .insert("ranked".into(), queue(&[("0", 1.0), ("100", 900.0), ("101+", 4000.0)]));
        let lines: Vec<Value> = poller_queue_lines("poller-fn", &s, Utc::now())
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let classes = |queue: &str| -> Vec<(String, Value)> {
            lines
                .iter()
                .filter(|v| v[QUEUE_DIMENSION] == queue && v.get(PRIORITY_CLASS_DIMENSION).is_some())
                .map(|v| {
                    (
                        v[PRIORITY_CLASS_DIMENSION].as_str().unwrap().to_owned(),
                        v["Lateness"].clone(),
                    )
                })
                .collect()
        };
        assert!(classes("plain").is_empty());
        assert_eq!(
            classes("ranked"),
            vec![
                ("0".to_owned(), json!(1.0)),
                ("100".to_owned(), json!(900.0)),
                ("101+".to_owned(), json!(4000.0))
            ]
        );
        let ranked = lines
            .iter()
            .find(|v| v[QUEUE_DIMENSION] == "ranked" && v.get(PRIORITY_CLASS_DIMENSION).is_none())
            .unwrap();
        assert_eq!(ranked["HeldBack"].as_f64(), Some(3.0));
    }

    #[test]
    fn errors_are_counted_by_type_and_a_clean_invocation_prints_none() {
        let reply: sqs_waiter_contract::BatchReply = serde_json::from_value(json!({ "results": [
            {"status": "error", "error": {"type": "InvalidRequest", "message": "m", "retryable": false}},
            {"status": "error", "error": {"type": "Throttled", "message": "m", "retryable": true}},
            {"status": "error", "error": {"type": "Throttled", "message": "m", "retryable": true}},
            {"status": "scheduled", "job_id": "a", "queue": "q", "duplicate": false}
        ]}))
        .unwrap();
        let reply = Reply::Batch(reply);
        let invocation = Invocation::Replied {
            reply: &reply,
            is_enqueue: true,
        };
        let lines: Vec<Value> = enqueue_error_lines("fn", invocation, Utc::now())
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let counts: Vec<(String, f64)> = lines
            .iter()
            .map(|v| {
                (
                    v[ERROR_TYPE_DIMENSION].as_str().unwrap().to_owned(),
                    v["Errors"].as_f64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            counts,
            [("InvalidRequest".to_owned(), 1.0), ("Throttled".to_owned(), 2.0)]
        );
        let failed = Invocation::Failed {
            error_type: ErrorType::DependencyFailure,
            is_enqueue: false,
        };
        assert_eq!(enqueue_error_lines("fn", failed, Utc::now()).len(), 1);
        let ok = Reply::Job(Box::new(
            serde_json::from_value(json!({"status": "sent", "job_id": "a", "queue": "q"})).unwrap(),
        ));
        let clean = Invocation::Replied {
            reply: &ok,
            is_enqueue: true,
        };
        assert!(enqueue_error_lines("fn", clean, Utc::now()).is_empty());
    }

    #[test]
    fn a_batch_counts_only_its_failed_jobs_on_our_side_as_failures() {
        let v = batch_line(json!([
            {"status": "error", "error": {"type": "InvalidRequest", "message": "m", "retryable": false}},
            {"status": "error", "error": {"type": "DependencyFailure", "message": "m", "retryable": true}},
            {"status": "scheduled", "job_id": "a", "queue": "q", "duplicate": false}
        ]));
        assert_eq!(
            (v["Refused"].as_f64(), v["Failures"].as_f64(), v["Rejected"].as_f64()),
            (Some(0.0), Some(1.0), Some(2.0))
        );
    }
}
