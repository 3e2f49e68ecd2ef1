//! The function's replies. Fields a reply may leave out are `Option`s; a client built against an
//! older contract reads a newer reply (unknown fields are ignored, an unknown status is
//! [`JobStatus::Unknown`]).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::Failure;
use crate::job::{MessageAttribute, Window};

/// Where a job stands, as one reply tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// Went straight to SQS (`message_id`, `delay_seconds`).
    Sent,
    /// Stored, waiting for its time.
    Scheduled,
    /// SQS rejected it permanently; see `error`, then `redrive` it.
    Parked,
    /// History: a poller handed it to SQS (`sent_at`, `message_id`).
    Dispatched,
    /// Cancelled now, or (history) earlier (`cancelled_at`).
    Cancelled,
    /// History: found after `expires_at` and dropped (`expired_at`).
    Expired,
    /// No job by that id is stored (never, or already handed to SQS).
    NotFound,
    /// A poller may be handing it to SQS now: it was not changed and may be delivered.
    Dispatching,
    /// Moved (`perform_at`, `version`).
    Rescheduled,
    /// History: a series reached its `until` or `count` (`occurrences`).
    Finished,
    /// `if_version` did not match; `version` is the stored one. For `replay`: the job is
    /// still stored (active), so there is nothing to replay yet.
    Conflict,
    /// `replay`: history keeps no message for this job (`WAITER_HISTORY_BODY` was off when it
    /// left the table, or history no longer knows it).
    NotReplayable,
    /// `pause`: the queue or job is paused (`paused_at`).
    Paused,
    /// `resume`: the queue or job is no longer paused.
    Resumed,
    /// A status this contract does not know (a newer function). Never on the wire, so not in
    /// the schema.
    #[serde(other)]
    #[cfg_attr(feature = "schema", schemars(skip))]
    Unknown,
}

impl JobStatus {
    /// The name on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Sent => "sent",
            Self::Scheduled => "scheduled",
            Self::Parked => "parked",
            Self::Dispatched => "dispatched",
            Self::Cancelled => "cancelled",
            Self::Expired => "expired",
            Self::NotFound => "not_found",
            Self::Dispatching => "dispatching",
            Self::Rescheduled => "rescheduled",
            Self::Finished => "finished",
            Self::Conflict => "conflict",
            Self::NotReplayable => "not_replayable",
            Self::Paused => "paused",
            Self::Resumed => "resumed",
            Self::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for JobStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The reply about one job, for every action that names one (and each job of `list`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct JobReply {
    /// Where the job stands.
    pub status: JobStatus,
    /// The job's id, its idempotency key.
    pub job_id: String,
    /// The queue, one of the deployment's `WAITER_QUEUES`.
    pub queue: String,
    /// `true` when the job existed already and nothing was changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// When the job is due.
    pub perform_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// `perform_at` as epoch seconds.
    pub perform_at_epoch: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// When the job was stored.
    pub enqueued_at: Option<DateTime<Utc>>,
    /// SQS's id of the message (`sent`, `dispatched`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// The `DelaySeconds` a direct send used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_seconds: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The message body, passed to SQS unaltered.
    pub message_body: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// SQS message attributes, sent with the message unaltered.
    pub message_attributes: Option<BTreeMap<String, MessageAttribute>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// A job found after this instant is dropped, not sent.
    pub expires_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The FIFO message group.
    pub message_group_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The FIFO deduplication id.
    pub message_deduplication_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Local-time windows the job may arrive in.
    pub windows: Option<Vec<Window>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The IANA zone of `windows`; `UTC` when absent.
    pub time_zone: Option<String>,
    /// One more on every change; `if_version` of `reschedule` checks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// When SQS rejected the job and it was parked.
    pub parked_at: Option<DateTime<Utc>>,
    /// Why SQS rejected a parked job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ParkedError>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// History: when a poller handed the job to SQS.
    pub sent_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// History: when the job was cancelled.
    pub cancelled_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// History: when the job was found expired and dropped.
    pub expired_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// `replay`: the job this one is a copy of.
    pub replay_of: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// `retry`: the attempt scheduled (for `conflict` and `cancelled`, the job's latest). `get`,
    /// `list`, history: the attempt of a retried job (its messages' `waiter.attempt`), when past 1.
    pub attempt: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Parked because its attempts ran out: how many were made.
    pub attempts: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Why the job was parked without a send: `attempts_exhausted`.
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// A stored or parked job's priority (0 to 1000, lower first).
    pub priority: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// A stored or parked job's weight against the rate budget (1 to 100).
    pub weight: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// A poller run that crashed may have delivered this job at this instant already; the
    /// stored job is its delivery at the next opening of its windows. `cancel` and
    /// `reschedule` act on that later delivery only.
    pub maybe_delivered_at: Option<DateTime<Utc>>,
    /// The X-Ray trace header the job's messages carry as `AWSTraceHeader` (get, list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_header: Option<String>,
    /// A series: how it repeats (get, list, enqueue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<crate::Repeat>,
    /// A series: the occurrences sent so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occurrences: Option<u64>,
    /// `true` on a paused job (get, list): nothing of it is sent until `resume`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
    /// Since when a paused job is paused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_at: Option<DateTime<Utc>>,
    /// `enqueue` with `on_duplicate` `replace` or `extend`: `true` when a stored job took this
    /// call's message or time, `false` when a new job was stored (none was, or its message had
    /// left for SQS already).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced: Option<bool>,
    /// The job's tags (get, list); absent when it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<crate::Tags>,
}

/// SQS's code and message for a parked job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ParkedError {
    /// SQS's error code.
    pub code: String,
    /// The error message, naming the field and the rule for `InvalidRequest`.
    pub message: String,
}

/// One result per job or id, in request order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct BatchReply {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The queue, one of the deployment's `WAITER_QUEUES`.
    pub queue: Option<String>,
    /// One result per job or id, in request order.
    pub results: Vec<BatchResult>,
}

/// A job's result in a batch: its reply, or why it failed (others are not affected).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum BatchResult {
    /// The job's reply.
    Done(Box<JobReply>),
    /// The job failed; the others are not affected.
    Failed {
        /// Always `"error"`.
        status: FailedStatus,
        /// Why it failed.
        error: Failure,
    },
}

/// The `"status": "error"` of a failed batch entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum FailedStatus {
    /// The job failed; see `error`.
    Error,
}

impl BatchResult {
    /// The job's reply, or why it failed.
    pub fn into_result(self) -> Result<JobReply, Failure> {
        match self {
            Self::Done(reply) => Ok(*reply),
            Self::Failed { error, .. } => Err(error),
        }
    }
}

impl BatchReply {
    /// Each job's reply or failure, in request order.
    pub fn into_results(self) -> Vec<Result<JobReply, Failure>> {
        self.results.into_iter().map(BatchResult::into_result).collect()
    }
}

/// One page of `list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ListReply {
    /// The queue, one of the deployment's `WAITER_QUEUES`.
    pub queue: String,
    /// The jobs of this page, in order.
    pub jobs: Vec<JobReply>,
    /// Pass it back for the next page; `None` means done.
    pub cursor: Option<String>,
    /// With `tags`: how many stored jobs this call read to find the page (each billed by its
    /// size, docs/cost.md "Finding jobs by tag").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scanned: Option<u64>,
}

/// One page of `list_parked`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ParkedReply {
    /// The queue, one of the deployment's `WAITER_QUEUES`.
    pub queue: String,
    /// How many items this page holds.
    pub count: usize,
    /// The jobs of this page, in order.
    pub jobs: Vec<JobReply>,
    /// Where the next page starts: pass it back as given; `None` means done.
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
/// What one `cancel_many` request did.
pub struct CancelManyReply {
    /// The queue, one of the deployment's `WAITER_QUEUES`.
    pub queue: String,
    /// Jobs cancelled: none of them reaches SQS from now on.
    pub cancelled: u64,
    /// Of the `cancelled`, those a crashed poller run may have delivered before
    /// (`maybe_delivered_at`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub maybe_delivered: u64,
    /// A poller may be handing these to SQS: not cancelled, may be delivered.
    pub dispatching: u64,
    /// Ids not stored (never, or already handed to SQS).
    pub not_found: u64,
    /// Where the next page starts: pass it back as given; `None` means done.
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
/// One page of `redrive` with `all: true`.
pub struct RedriveAllReply {
    /// The queue, one of the deployment's `WAITER_QUEUES`.
    pub queue: String,
    /// Parked jobs moved back, due now.
    pub redriven: u64,
    /// Ids active again: nothing moved, the parked copy stays listed.
    pub duplicates: u64,
    /// Where the next page starts: pass it back as given; `None` means done.
    pub cursor: Option<String>,
}

/// What a queue holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StatsReply {
    /// The queue, one of the deployment's `WAITER_QUEUES`.
    pub queue: String,
    /// The function's clock when it counted.
    pub now: DateTime<Utc>,
    /// Every stored job that is not parked, overdue and paused ones included.
    pub scheduled: u64,
    /// Whether the queue is paused (`pause` without `job_id`).
    #[serde(default)]
    pub paused: bool,
    /// Since when the queue is paused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_at: Option<DateTime<Utc>>,
    /// Stored jobs paused one by one (`pause` with `job_id`), counted in `scheduled` too.
    #[serde(default)]
    pub paused_jobs: u64,
    /// Jobs SQS rejected permanently, waiting for `redrive`.
    pub parked: u64,
    /// Due before `now`, not yet handed to SQS.
    pub overdue: u64,
    /// `overdue` by priority class (`0`, `1-99`, `100`, `101+`): what waits for the rate budget.
    /// Only classes with jobs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub overdue_by_priority: BTreeMap<String, u64>,
    /// Age of the oldest overdue job, `0` when none.
    pub oldest_overdue_s: f64,
    /// When the next job not yet overdue is due; `None` when there is none.
    pub next_due: Option<DateTime<Utc>>,
    /// The width of each histogram bucket, in seconds.
    pub bucket_s: u64,
    /// Jobs due in `[from, to)`; the last bucket is open-ended.
    pub histogram: Vec<Bucket>,
    /// With `formats`: the queue's items (jobs, parked jobs, history records, leases) by item
    /// format (`"1"`, `"2"`, ...; one the function cannot read as a whole number is `"?"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub formats: Option<BTreeMap<String, u64>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
/// Jobs due in one span of a `stats` histogram.
pub struct Bucket {
    /// Only jobs due at or after this instant.
    pub from: DateTime<Utc>,
    /// Only jobs due at or before this instant.
    pub to: Option<DateTime<Utc>>,
    /// How many items this page holds.
    pub count: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn status_names_are_the_wire_names() {
        use JobStatus::*;
        for s in [
            Sent,
            Scheduled,
            Parked,
            Dispatched,
            Cancelled,
            Expired,
            NotFound,
            Dispatching,
            Rescheduled,
            Conflict,
            NotReplayable,
        ] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
        for s in [crate::ListStatus::Scheduled, crate::ListStatus::Parked] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.as_str());
        }
    }

    #[test]
    fn batches_split_into_results_and_unknown_statuses_still_read() {
        let reply: BatchReply = serde_json::from_value(json!({"results": [
            {"status": "scheduled", "job_id": "a", "queue": "q", "duplicate": false, "perform_at": "2026-12-01T09:00:00Z"},
            {"status": "error", "error": {"type": "InvalidRequest", "message": "queue: is required", "retryable": false}},
            {"status": "teleported", "job_id": "b", "queue": "q", "colour": "red"}
        ]}))
        .unwrap();
        let results = reply.into_results();
        assert_eq!(results[0].as_ref().unwrap().status, JobStatus::Scheduled);
        let failure = results[1].as_ref().unwrap_err();
        assert_eq!(failure.error_type, crate::ErrorType::InvalidRequest);
        assert!(!failure.retryable);
        assert_eq!(results[2].as_ref().unwrap().status, JobStatus::Unknown);
    }

    /// Issue 82 (8): a newer function's reply, with a field this contract does not know in
    /// each type a reply holds, a `catch_up` and a batch error type it does not know, is read
    /// (for `enqueue_many` after the jobs were stored: an error here would have a caller resend).
    #[test]
    fn a_newer_functions_replies_read_whatever_they_add() {
        let job = json!({"status": "scheduled", "job_id": "a", "queue": "q", "perform_at": "2026-12-01T09:00:00Z",
            "message_attributes": {"k": {"data_type": "String", "string_value": "v", "later": 1}},
            "windows": [{"from": "09:00", "to": "17:00", "weekdays": ["MON"]}],
            "time_zone": "Europe/Berlin",
            "repeat": {"every_s": 60, "jitter_s": 5, "catch_up": "spread"}});
        let reply: JobReply = serde_json::from_value(job.clone()).unwrap();
        let repeat = reply.repeat.expect("repeat");
        assert_eq!(
            (repeat.every_s, repeat.catch_up),
            (Some(60), Some(crate::CatchUp::Unknown))
        );
        assert_eq!(reply.windows.map(|w| w.len()), Some(1));
        let batch: BatchReply = serde_json::from_value(json!({"results": [job,
            {"status": "error", "error": {"type": "QuotaExceeded", "message": "later", "retryable": true}}]}))
        .unwrap();
        let results = batch.into_results();
        assert!(results[0].is_ok());
        let failure = results[1].as_ref().unwrap_err();
        assert_eq!(
            (failure.error_type, failure.retryable),
            (crate::ErrorType::Unknown, true)
        );
        let list: ListReply =
            serde_json::from_value(json!({"queue": "q", "jobs": [results[0].as_ref().unwrap()], "cursor": null}))
                .unwrap();
        assert_eq!(list.jobs.len(), 1);
    }
}
