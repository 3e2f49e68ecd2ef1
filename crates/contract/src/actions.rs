//! The requests other than a single job, one type per action, each with its reply type.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};

use crate::job::{Job, MessageAttribute, Window};
use crate::reply::{BatchReply, CancelManyReply, JobReply, ListReply, ParkedReply, RedriveAllReply, StatsReply};

/// A request the function answers: its `action` name on the wire and the reply it gets.
pub trait Action: Serialize {
    /// The `"action"` field.
    const NAME: &'static str;
    /// The reply the function answers it with.
    type Reply: DeserializeOwned;

    /// The request as sent: its fields with `"action"` added.
    fn tagged(&self) -> Tagged<'_, Self>
    where
        Self: Sized,
    {
        Tagged {
            action: Self::NAME,
            request: self,
        }
    }
}

/// A request with its `"action"` field, as it goes on the wire.
#[derive(Debug, Serialize)]
pub struct Tagged<'a, A: Serialize> {
    /// The `"action"` field.
    pub action: &'static str,
    #[serde(flatten)]
    /// The request's own fields.
    pub request: &'a A,
}

macro_rules! action {
    ($ty:ty, $name:literal, $reply:ty) => {
        impl Action for $ty {
            const NAME: &'static str = $name;
            type Reply = $reply;
        }
    };
}
pub(crate) use action;

action!(Job, "enqueue", JobReply);
action!(EnqueueMany, "enqueue", BatchReply);
action!(Get, "get", JobReply);
action!(Cancel, "cancel", JobReply);
action!(Reschedule, "reschedule", JobReply);
action!(List, "list", ListReply);
action!(CancelMany, "cancel_many", CancelManyReply);
action!(ListParked, "list_parked", ParkedReply);
action!(Redrive, "redrive", JobReply);
action!(RedriveMany, "redrive", BatchReply);
action!(RedriveAll, "redrive", RedriveAllReply);
action!(Stats, "stats", StatsReply);
action!(Replay, "replay", JobReply);
action!(crate::retry::Retry, "retry", JobReply);

/// Up to 1000 jobs in one request; each succeeds or fails on its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct EnqueueMany {
    /// The jobs of this page, in order.
    pub jobs: Vec<Job>,
}

/// A job as stored, or what history knows of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Get {
    /// The queue, one of the deployment's `WAITER_QUEUES`.
    pub queue: String,
    /// The job's id, its idempotency key.
    pub job_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
/// Cancels a stored job: it never reaches SQS unless a poller is handing it over now.
pub struct Cancel {
    /// The queue, one of the deployment's `WAITER_QUEUES`.
    pub queue: String,
    /// The job's id, its idempotency key.
    pub job_id: String,
}

/// Schedules a copy of a job that has left the table (dispatched, cancelled or expired), from
/// what history kept of its message (`WAITER_HISTORY_BODY=true`), under a new id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Replay {
    /// The queue, one of the deployment's `WAITER_QUEUES`.
    pub queue: String,
    /// The id of the job to copy.
    pub job_id: String,
    /// The copy's id; `{job_id}~{version}` when absent, so that replaying twice is a duplicate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_job_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Whole seconds from now; give this or `perform_at`, or neither for now.
    pub delay_seconds: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// When the copy is due.
    pub perform_at: Option<DateTime<Utc>>,
}

impl Replay {
    /// A copy of `job_id`, due now, under the default new id.
    pub fn now(queue: impl Into<String>, job_id: impl Into<String>) -> Self {
        Self {
            queue: queue.into(),
            job_id: job_id.into(),
            new_job_id: None,
            delay_seconds: None,
            perform_at: None,
        }
    }
}

/// Moves a stored job and may change what it carries. A field left `None` keeps its value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Reschedule {
    /// The queue, one of the deployment's `WAITER_QUEUES`.
    pub queue: String,
    /// The job's id, its idempotency key.
    pub job_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Whole seconds from now; give this or `perform_at`.
    pub delay_seconds: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// When the job is due.
    pub perform_at: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// EventBridge Scheduler's `at(yyyy-mm-ddThh:mm:ss)`, read in `time_zone` (UTC when absent),
    /// as on `enqueue`; instead of `delay_seconds` or `perform_at`.
    pub schedule: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The message body, passed to SQS unaltered.
    pub message_body: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// SQS message attributes, sent with the message unaltered.
    #[cfg_attr(
        feature = "schema",
        schemars(
            description = "SQS message attributes, sent with the message unaltered; `null` or `{}` removes them."
        )
    )]
    pub message_attributes: Option<BTreeMap<String, MessageAttribute>>,
    /// `Some(None)` removes the expiry.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(description = "`null` removes the expiry."))]
    pub expires_at: Option<Option<DateTime<Utc>>>,
    /// `Some(None)` removes the windows.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(description = "`null` removes the windows."))]
    pub windows: Option<Option<Vec<Window>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The IANA zone of `windows`; `UTC` when absent.
    pub time_zone: Option<String>,
    /// Only if the stored version is this one (else the reply is `conflict`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_version: Option<u64>,
    /// A new priority (0 to 1000); kept when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u64>,
    /// A new weight (1 to 100); kept when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<u64>,
    /// A new repetition (a cron read in `time_zone`), kept when absent; the series restarts at
    /// `perform_at` either way, its `occurrences` kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<crate::Repeat>,
    /// New tags, replacing the job's; `Some(None)` removes them, `None` keeps them.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(description = "New tags, replacing the job's; `null` or `{}` removes them.")
    )]
    pub tags: Option<Option<crate::Tags>>,
}

impl Reschedule {
    /// Moves `job_id` to `t`, changing nothing else.
    pub fn to(queue: impl Into<String>, job_id: impl Into<String>, t: DateTime<Utc>) -> Self {
        Self {
            perform_at: Some(t),
            ..Self::bare(queue.into(), job_id.into())
        }
    }

    /// Moves `job_id` to `d` from now (rounded up to whole seconds).
    pub fn after(queue: impl Into<String>, job_id: impl Into<String>, d: std::time::Duration) -> Self {
        Self {
            delay_seconds: Some(crate::job::whole_seconds_up(d)),
            ..Self::bare(queue.into(), job_id.into())
        }
    }

    fn bare(queue: String, job_id: String) -> Self {
        Self {
            queue,
            job_id,
            delay_seconds: None,
            perform_at: None,
            schedule: None,
            message_body: None,
            message_attributes: None,
            expires_at: None,
            windows: None,
            time_zone: None,
            if_version: None,
            priority: None,
            weight: None,
            repeat: None,
            tags: None,
        }
    }
}

/// A field given as `null` is `Some(None)`, unlike one left out.
fn present<'de, T: Deserialize<'de>, D: Deserializer<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// Which partition `list` and `cancel_many` read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ListStatus {
    #[default]
    /// Jobs waiting for their time (the default).
    Scheduled,
    /// Jobs SQS rejected permanently.
    Parked,
}

impl ListStatus {
    /// The name on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Scheduled => "scheduled",
            Self::Parked => "parked",
        }
    }
}

/// One page of a queue's jobs in `perform_at` order. Every filter is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct List {
    /// The queue, one of the deployment's `WAITER_QUEUES`.
    pub queue: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Only jobs due at or after this instant.
    pub from: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Only jobs due at or before this instant.
    pub to: Option<DateTime<Utc>>,
    /// Of `job_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Only jobs carrying every one of these tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<crate::Tags>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Where the job stands.
    pub status: Option<ListStatus>,
    /// 1 to 1000, 100 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Include each job's body and attributes.
    pub with_body: Option<bool>,
    /// From the previous page's reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

impl List {
    /// Every job of `queue`, the first page, with no filter.
    pub fn queue(queue: impl Into<String>) -> Self {
        Self {
            queue: queue.into(),
            ..Self::default()
        }
    }
}

/// Cancels the jobs named, or one page of a selection (`prefix`, `tags`, `from`, `to`; at
/// least one).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CancelMany {
    /// The queue, one of the deployment's `WAITER_QUEUES`.
    pub queue: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The ids, 1 to [`MAX_JOBS_PER_REQUEST`](crate::MAX_JOBS_PER_REQUEST) of them.
    pub job_ids: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Only jobs whose id starts with this.
    pub prefix: Option<String>,
    /// Only jobs carrying every one of these tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<crate::Tags>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Only jobs due at or after this instant.
    pub from: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Only jobs due at or before this instant.
    pub to: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Where the job stands.
    pub status: Option<ListStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The most items one page holds (1 to [`MAX_PAGE_LIMIT`](crate::MAX_PAGE_LIMIT)).
    pub limit: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Where the next page starts: pass it back as given; `None` means done.
    pub cursor: Option<String>,
}

/// One page of the jobs SQS rejected permanently.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ListParked {
    /// The queue, one of the deployment's `WAITER_QUEUES`.
    pub queue: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The most items one page holds (1 to [`MAX_PAGE_LIMIT`](crate::MAX_PAGE_LIMIT)).
    pub limit: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Where the next page starts: pass it back as given; `None` means done.
    pub cursor: Option<String>,
}

/// Moves one parked job back, due now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Redrive {
    /// The queue, one of the deployment's `WAITER_QUEUES`.
    pub queue: String,
    /// The job's id, its idempotency key.
    pub job_id: String,
}

/// Moves the parked jobs named back, due now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RedriveMany {
    /// The queue, one of the deployment's `WAITER_QUEUES`.
    pub queue: String,
    /// The ids, 1 to [`MAX_JOBS_PER_REQUEST`](crate::MAX_JOBS_PER_REQUEST) of them.
    pub job_ids: Vec<String>,
}

/// Moves one page of the parked partition back; call again with the reply's cursor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RedriveAll {
    /// The queue, one of the deployment's `WAITER_QUEUES`.
    pub queue: String,
    /// Always `true` on the wire.
    pub all: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The most items one page holds (1 to [`MAX_PAGE_LIMIT`](crate::MAX_PAGE_LIMIT)).
    pub limit: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Where the next page starts: pass it back as given; `None` means done.
    pub cursor: Option<String>,
}

impl RedriveAll {
    /// One page of the parked jobs, continuing at `cursor` (`None` for the first).
    pub fn page(queue: impl Into<String>, cursor: Option<String>) -> Self {
        Self {
            queue: queue.into(),
            all: true,
            limit: None,
            cursor,
        }
    }
}

/// The `redrive` request as the function reads it: exactly one of `job_id`, `job_ids` or
/// `all: true`, and `limit` and `cursor` only with `all`. [`Redrive`], [`RedriveMany`] and
/// [`RedriveAll`] each write one form of it, with a typed reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RedriveRequest {
    /// The queue, one of the deployment's `WAITER_QUEUES`.
    pub queue: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// One job's id.
    pub job_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The ids, 1 to [`MAX_JOBS_PER_REQUEST`](crate::MAX_JOBS_PER_REQUEST) of them.
    pub job_ids: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// A page of the whole parked partition.
    pub all: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The most items one page holds (1 to [`MAX_PAGE_LIMIT`](crate::MAX_PAGE_LIMIT)), with `all`.
    pub limit: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Where the next page starts, with `all`.
    pub cursor: Option<String>,
}

/// Counts of what a queue holds, with a due-time histogram.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Stats {
    /// The queue, one of the deployment's `WAITER_QUEUES`.
    pub queue: String,
    /// 1 to 100, 24 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buckets: Option<u32>,
    /// 1 to 2,592,000, 3600 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket_s: Option<u64>,
    /// Also count every item of the queue by its item format (`formats` in the reply): what
    /// a rollback leaves waiting (docs/upgrades.md). Reads every item of the queue's table
    /// once, billed by size (docs/cost.md); `false` when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub formats: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_redrive_form_reads_as_the_request_the_function_decodes() {
        let forms = [
            serde_json::to_value(Redrive {
                queue: "q".into(),
                job_id: "a".into(),
            }),
            serde_json::to_value(RedriveMany {
                queue: "q".into(),
                job_ids: vec!["a".into(), "b".into()],
            }),
            serde_json::to_value(RedriveAll::page("q", Some("c".into()))),
        ];
        let read: Vec<RedriveRequest> = forms
            .into_iter()
            .map(|v| serde_json::from_value(v.unwrap()).unwrap())
            .collect();
        assert_eq!(read[0].job_id.as_deref(), Some("a"));
        assert_eq!(read[1].job_ids.as_ref().map(Vec::len), Some(2));
        assert_eq!((read[2].all, read[2].cursor.as_deref()), (Some(true), Some("c")));
    }

    #[test]
    fn requests_carry_their_action_and_only_the_fields_given() {
        let r = Reschedule {
            expires_at: Some(None),
            ..Reschedule::after("orders", "j", std::time::Duration::from_secs(60))
        };
        let v = serde_json::to_value(r.tagged()).unwrap();
        assert_eq!(
            v,
            json!({"action": "reschedule", "queue": "orders", "job_id": "j", "delay_seconds": 60, "expires_at": null})
        );
        // The function reads a request's fields once it has taken its action out.
        let mut v = v;
        v.as_object_mut().unwrap().remove("action");
        let back: Reschedule = serde_json::from_value(v).unwrap();
        assert_eq!(back.expires_at, Some(None));
        assert_eq!(back.windows, None);
        assert_eq!(
            serde_json::to_value(RedriveAll::page("q", None).tagged()).unwrap(),
            json!({"action": "redrive", "queue": "q", "all": true})
        );
        assert_eq!(
            serde_json::to_value(
                List {
                    status: Some(ListStatus::Parked),
                    ..List::queue("q")
                }
                .tagged()
            )
            .unwrap(),
            json!({"action": "list", "queue": "q", "status": "parked"})
        );
        assert_eq!(
            serde_json::to_value(Replay::now("q", "j").tagged()).unwrap(),
            json!({"action": "replay", "queue": "q", "job_id": "j"})
        );
        let later = Replay {
            new_job_id: Some("j2".into()),
            delay_seconds: Some(60),
            ..Replay::now("q", "j")
        };
        assert_eq!(
            serde_json::to_value(later.tagged()).unwrap(),
            json!({"action": "replay", "queue": "q", "job_id": "j", "new_job_id": "j2", "delay_seconds": 60})
        );
    }
}
