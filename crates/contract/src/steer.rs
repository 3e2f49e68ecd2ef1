//! Steering the schedule (DESIGN "Steering the schedule"): `pause`, `resume` and `queues`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::actions::Action;
use crate::reply::JobStatus;

/// What `enqueue` does when a job with the same `job_id` is stored (debounce).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum OnDuplicate {
    /// Nothing is changed; the reply shows the stored job with `duplicate: true`.
    #[default]
    Keep,
    /// The stored job takes this call's body, attributes and time (`version` + 1).
    Replace,
    /// The stored job keeps its body and attributes and takes this call's time.
    Extend,
}

impl OnDuplicate {
    /// The name on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Keep => "keep",
            Self::Replace => "replace",
            Self::Extend => "extend",
        }
    }
}

/// Pauses a queue, or with `job_id` one stored job or series: nothing of it is handed to SQS
/// until `resume`. A paused job keeps its times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Pause {
    /// The queue, one of the deployment's `WAITER_QUEUES`.
    pub queue: String,
    /// One stored job or series of the queue; the whole queue when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
}

impl Pause {
    /// Pauses the whole queue.
    pub fn queue(queue: impl Into<String>) -> Self {
        Self {
            queue: queue.into(),
            job_id: None,
        }
    }

    /// Pauses one job or series of the queue.
    pub fn job(queue: impl Into<String>, job_id: impl Into<String>) -> Self {
        Self {
            queue: queue.into(),
            job_id: Some(job_id.into()),
        }
    }
}

/// Ends a pause of a queue, or with `job_id` of one job or series: what fell due meanwhile is
/// sent as any overdue job is (series by their `catch_up`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Resume {
    /// The queue, one of the deployment's `WAITER_QUEUES`.
    pub queue: String,
    /// One stored job or series of the queue; the whole queue when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
}

impl Resume {
    /// Resumes the whole queue.
    pub fn queue(queue: impl Into<String>) -> Self {
        Self {
            queue: queue.into(),
            job_id: None,
        }
    }

    /// Resumes one job or series of the queue.
    pub fn job(queue: impl Into<String>, job_id: impl Into<String>) -> Self {
        Self {
            queue: queue.into(),
            job_id: Some(job_id.into()),
        }
    }
}

/// The reply of `pause` and `resume`: `paused`, `resumed`, `not_found` (no such stored job) or
/// `dispatching` (a poller is handing the job to SQS now; nothing was changed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PauseReply {
    /// What the call did.
    pub status: JobStatus,
    /// The queue, one of the deployment's `WAITER_QUEUES`.
    pub queue: String,
    /// The job, when the call named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// `paused`: since when (a second `pause` keeps the first one's time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_at: Option<DateTime<Utc>>,
    /// A job's version after the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
}

/// The queues the function serves (its `WAITER_QUEUES`), with their pause state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Queues {}

/// The reply of `queues`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct QueuesReply {
    /// In the order of `WAITER_QUEUES`.
    pub queues: Vec<QueueInfo>,
}

/// One queue the function serves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct QueueInfo {
    /// The queue's name.
    pub queue: String,
    /// A FIFO queue (its name ends in `.fifo`).
    pub fifo: bool,
    /// Whether the queue is paused.
    pub paused: bool,
    /// Since when, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_at: Option<DateTime<Utc>>,
}

/// Runs a stored job now: a one-off job is handed to SQS at once (and leaves as any sent job
/// does); a series sends one extra occurrence now, as `{job_id}@{epoch of now}`, its schedule
/// and `count` untouched. Replies `sent` with `message_id`, `not_found`, `dispatching` (a poller
/// holds the job or its shard: it sends it), or `paused` (resume first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Trigger {
    /// The queue, one of the deployment's `WAITER_QUEUES`.
    pub queue: String,
    /// The stored job or series.
    pub job_id: String,
}

crate::actions::action!(Trigger, "trigger", crate::JobReply);

/// The next occurrences of a schedule (`repeat`, read in `time_zone`, from `from`), or of a
/// stored series (`queue` and `job_id`, from its next occurrence), before windows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Preview {
    /// A schedule as `enqueue` takes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<crate::Repeat>,
    /// The IANA zone of `repeat`; `UTC` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// Occurrences at or after this; now when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<DateTime<Utc>>,
    /// How many, 1 to 100; 10 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// With `job_id`: a stored series of this queue instead of `repeat`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// The stored series.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
}

/// The reply of `preview`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PreviewReply {
    /// In time order.
    pub occurrences: Vec<PreviewOccurrence>,
    /// `not_found` when `job_id` names no stored job; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<JobStatus>,
}

/// One occurrence of a preview.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PreviewOccurrence {
    /// The instant, UTC.
    pub at: DateTime<Utc>,
    /// The same instant in the schedule's zone, with its offset.
    pub local: DateTime<chrono::FixedOffset>,
    /// A clock change moved it off the local time its rule names.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shifted: bool,
}

crate::actions::action!(Preview, "preview", PreviewReply);
crate::actions::action!(Pause, "pause", PauseReply);
crate::actions::action!(Resume, "resume", PauseReply);
crate::actions::action!(Queues, "queues", QueuesReply);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pause_resume_and_queues_carry_their_action_and_only_the_fields_given() {
        assert_eq!(
            serde_json::to_value(Pause::queue("orders").tagged()).unwrap(),
            json!({"action": "pause", "queue": "orders"})
        );
        assert_eq!(
            serde_json::to_value(Resume::job("orders", "j").tagged()).unwrap(),
            json!({"action": "resume", "queue": "orders", "job_id": "j"})
        );
        assert_eq!(
            serde_json::to_value(Queues {}.tagged()).unwrap(),
            json!({"action": "queues"})
        );
        let reply: PauseReply = serde_json::from_value(json!({"status": "paused", "queue": "q"})).unwrap();
        assert_eq!((reply.status, reply.job_id), (JobStatus::Paused, None));
    }
}
