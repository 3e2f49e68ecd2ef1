//! The replies of `enqueue`'s actions, built as the contract's types: one shape per job state,
//! shared by every action. The field names live once, in `sqs_waiter_contract`.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::Serialize;
use sqs_waiter_contract::{
    BatchReply, BatchResult, CancelManyReply, FailedStatus, Failure, JobReply, JobStatus, ListReply, MessageAttribute,
    ParkedError, ParkedReply, PauseReply, QueuesReply, RedriveAllReply, StatsReply, Window, ATTEMPTS_EXHAUSTED,
};

use crate::config::QueueName;
use crate::error::HandlerError;
use crate::job::{AttributeData, Attributes, Job};
use crate::ports::{Found, History, HistoryStatus, StoredJob};
use crate::time::format_epoch;
use crate::windows::Windows;

/// What one invocation of `enqueue` answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Reply {
    Job(Box<JobReply>),
    Batch(BatchReply),
    List(ListReply),
    Parked(ParkedReply),
    CancelMany(CancelManyReply),
    RedriveAll(RedriveAllReply),
    Stats(Box<StatsReply>),
    Pause(PauseReply),
    Queues(QueuesReply),
    Preview(sqs_waiter_contract::PreviewReply),
}

impl From<JobReply> for Reply {
    fn from(r: JobReply) -> Self {
        Self::Job(Box::new(r))
    }
}

impl Reply {
    /// The reply as the invocation returns it.
    pub fn to_value(&self) -> serde_json::Value {
        // Every field is a string, number, bool, list or map with string keys.
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// A failed job of a batch: `{"status": "error", "error": {...}}`.
pub(crate) fn error_result(e: &HandlerError) -> BatchResult {
    BatchResult::Failed {
        status: FailedStatus::Error,
        error: Failure {
            error_type: e.kind(),
            message: e.message(),
            retryable: e.is_retryable(),
        },
    }
}

/// A reply naming only the job: `not_found`, `cancelled`, `dispatching`, `conflict`, ...
pub(crate) fn status_only(status: JobStatus, queue: &QueueName, job_id: &str) -> JobReply {
    JobReply {
        status,
        job_id: job_id.to_owned(),
        queue: queue.as_str().to_owned(),
        duplicate: None,
        perform_at: None,
        perform_at_epoch: None,
        enqueued_at: None,
        message_id: None,
        delay_seconds: None,
        message_body: None,
        message_attributes: None,
        expires_at: None,
        message_group_id: None,
        message_deduplication_id: None,
        windows: None,
        time_zone: None,
        version: None,
        parked_at: None,
        error: None,
        sent_at: None,
        cancelled_at: None,
        expired_at: None,
        replay_of: None,
        attempt: None,
        attempts: None,
        reason: None,
        priority: None,
        weight: None,
        maybe_delivered_at: None,
        trace_header: None,
        repeat: None,
        occurrences: None,
        paused: None,
        paused_at: None,
        replaced: None,
        tags: None,
    }
}

/// The reply to a request naming a job that exists already: nothing was changed.
pub(crate) fn duplicate(existing: &Found) -> JobReply {
    match existing {
        Found::Job(j) => reply(j, JobStatus::Scheduled, true),
        Found::History(h) => JobReply {
            duplicate: Some(true),
            ..describe_history(h)
        },
    }
}

/// What `get` shows of a job that left the table.
pub(crate) fn describe_history(h: &History) -> JobReply {
    let status = match h.status {
        HistoryStatus::Dispatched => JobStatus::Dispatched,
        HistoryStatus::Cancelled => JobStatus::Cancelled,
        HistoryStatus::Expired => JobStatus::Expired,
        HistoryStatus::Finished => JobStatus::Finished,
    };
    let mut r = JobReply {
        perform_at: Some(h.perform_at),
        version: Some(h.version),
        attempt: (h.attempt > 1).then_some(h.attempt),
        maybe_delivered_at: h.maybe_delivered_at,
        occurrences: h.occurrences,
        tags: tags_view(&h.tags),
        ..status_only(status, &h.queue, &h.job_id)
    };
    match h.status {
        HistoryStatus::Dispatched => {
            r.sent_at = Some(h.at);
            r.message_id = h.message_id.clone();
        }
        HistoryStatus::Cancelled => r.cancelled_at = Some(h.at),
        HistoryStatus::Expired => r.expired_at = Some(h.at),
        HistoryStatus::Finished => r.sent_at = Some(h.at),
    }
    r
}

pub(crate) fn reply(stored: &StoredJob, status: JobStatus, duplicate: bool) -> JobReply {
    JobReply {
        maybe_delivered_at: stored.maybe_delivered_at,
        ..reply_for_job(&stored.job, status, duplicate)
    }
}

pub(crate) fn reply_for_job(job: &Job, status: JobStatus, duplicate: bool) -> JobReply {
    JobReply {
        duplicate: Some(duplicate),
        perform_at: Some(job.perform_at),
        attempt: job.is_retried().then_some(job.attempt),
        repeat: job.repeat.as_ref().map(|s| s.to_contract()),
        occurrences: job.repeat.as_ref().map(|s| s.occurrences),
        ..status_only(status, &job.queue, &job.job_id)
    }
}

/// The full view of a stored job, for `get`, `list` and `list_parked`.
pub(crate) fn describe(stored: &StoredJob) -> JobReply {
    let job = &stored.job;
    let status = if stored.parked.is_some() {
        JobStatus::Parked
    } else {
        JobStatus::Scheduled
    };
    let exhausted = stored.parked.as_ref().is_some_and(|p| p.code == ATTEMPTS_EXHAUSTED);
    let (windows, time_zone) = match &job.windows {
        Some(w) => {
            let (spans, zone) = windows_view(w);
            (Some(spans), Some(zone))
        }
        None => (
            None,
            job.repeat.as_ref().and_then(|s| s.zone()).map(|z| z.name().to_owned()),
        ),
    };
    JobReply {
        perform_at: Some(job.perform_at),
        perform_at_epoch: Some(format_epoch(job.perform_at).parse::<f64>().unwrap_or_default()),
        enqueued_at: Some(stored.enqueued_at),
        message_body: Some(job.message_body.clone()),
        message_attributes: (!job.message_attributes.is_empty()).then(|| attributes_view(&job.message_attributes)),
        expires_at: job.expires_at,
        message_group_id: job.message_group_id.clone(),
        message_deduplication_id: job.message_deduplication_id.clone(),
        windows,
        time_zone,
        version: Some(stored.version),
        parked_at: stored.parked.as_ref().map(|p| p.parked_at),
        error: stored.parked.as_ref().map(|p| ParkedError {
            code: p.code.clone(),
            message: p.message.clone(),
        }),
        attempt: job.is_retried().then_some(job.attempt),
        attempts: exhausted.then(|| job.attempt.saturating_sub(1)),
        reason: exhausted.then(|| ATTEMPTS_EXHAUSTED.to_owned()),
        priority: Some(job.priority),
        weight: Some(job.weight),
        maybe_delivered_at: stored.maybe_delivered_at,
        trace_header: job.trace_header.clone(),
        repeat: job.repeat.as_ref().map(|s| s.to_contract()),
        occurrences: job.repeat.as_ref().map(|s| s.occurrences),
        paused: stored.paused_at.map(|_| true),
        paused_at: stored.paused_at,
        tags: tags_view(&job.tags),
        ..status_only(status, &job.queue, &job.job_id)
    }
}

/// A job as `list` shows it: `get`'s view, without the message unless asked for.
pub(crate) fn list_view(j: &StoredJob, with_body: bool) -> JobReply {
    let mut v = describe(j);
    if !with_body {
        v.message_body = None;
        v.message_attributes = None;
    }
    v
}

/// A job's tags as replies show them: absent when it has none.
fn tags_view(tags: &crate::job::Tags) -> Option<crate::job::Tags> {
    (!tags.is_empty()).then(|| tags.clone())
}

/// Message attributes as requests give them (binary values in standard base64).
fn attributes_view(attributes: &Attributes) -> BTreeMap<String, MessageAttribute> {
    attributes
        .iter()
        .map(|(name, a)| {
            let value = match &a.data {
                AttributeData::String(s) => MessageAttribute::typed(a.data_type.clone(), s.clone()),
                AttributeData::Binary(b) => MessageAttribute {
                    data_type: a.data_type.clone(),
                    string_value: None,
                    binary_value: Some(base64::engine::general_purpose::STANDARD.encode(b)),
                },
            };
            (name.clone(), value)
        })
        .collect()
}

/// Windows as requests give them: the spans and the zone's name.
fn windows_view(w: &Windows) -> (Vec<Window>, String) {
    let (spans, zone) = w.spans_and_zone();
    (
        spans.into_iter().map(|(from, to)| Window::new(from, to)).collect(),
        zone,
    )
}
