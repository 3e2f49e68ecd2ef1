//! The requests of the managing actions, validated from their contract types into their domain
//! form: `list`, `cancel_many`, `reschedule` and `stats`.

use chrono::{DateTime, Utc};

use super::decode::Decoded;
use super::field_rules::*;
use crate::config::QueueName;
use crate::error::InvalidRequest;
use crate::job::{without_reserved, Attributes, Tags};
use crate::windows::Windows;
use crate::wire::normalise::Given;

pub use sqs_waiter_contract::ListStatus;
use sqs_waiter_contract::{Action, DEFAULT_PRIORITY, DEFAULT_WEIGHT};

/// `{"action": "list", ...}`.
#[derive(Debug, PartialEq)]
pub struct ListQuery {
    /// The action the listing serves (`list`, `cancel_many`): a cursor continues only its own.
    pub action: &'static str,
    pub queue: QueueName,
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub prefix: Option<String>,
    /// Only jobs carrying every one of these tags; `None`: any.
    pub tags: Option<Tags>,
    pub status: ListStatus,
    pub limit: usize,
    pub cursor: Option<String>,
    pub with_body: bool,
}

/// The selection fields `list` and `cancel_many` share, as decoded.
struct Selection {
    from: Option<DateTime<Utc>>,
    to: Option<DateTime<Utc>>,
    prefix: Option<String>,
    tags: Option<Tags>,
    status: Option<ListStatus>,
    limit: Option<usize>,
    cursor: Option<String>,
}

/// The selection fields of a decoded `List` or `CancelMany` (two contract types with these
/// fields in common).
macro_rules! selection_of {
    ($r:expr) => {
        Selection {
            from: $r.from,
            to: $r.to,
            prefix: $r.prefix,
            tags: $r.tags,
            status: $r.status,
            limit: $r.limit,
            cursor: $r.cursor,
        }
    };
}

impl Selection {
    fn check(self, queue: QueueName, action: &'static str, with_body: bool) -> Result<ListQuery, InvalidRequest> {
        if let (Some(a), Some(b)) = (self.from, self.to) {
            if a > b {
                return Err(InvalidRequest::new("from", "is after to"));
            }
        }
        Ok(ListQuery {
            action,
            queue,
            from: self.from,
            to: self.to,
            prefix: self.prefix.map(|p| check_job_id("prefix", p)).transpose()?,
            tags: self.tags.map(|t| check_tags(&Given::default(), t, true)).transpose()?,
            status: self.status.unwrap_or_default(),
            limit: check_limit(self.limit)?,
            cursor: self.cursor,
            with_body,
        })
    }
}

impl TryFrom<Decoded<'_, sqs_waiter_contract::List>> for ListQuery {
    type Error = InvalidRequest;

    fn try_from(d: Decoded<'_, sqs_waiter_contract::List>) -> Result<Self, InvalidRequest> {
        let r = d.request;
        let queue = check_queue(&d.given, &r.queue, d.config)?;
        selection_of!(r).check(queue, sqs_waiter_contract::List::NAME, r.with_body.unwrap_or(false))
    }
}

/// `{"action": "cancel_many", ...}`.
#[derive(Debug, PartialEq)]
pub enum CancelMany {
    Ids {
        queue: QueueName,
        job_ids: Vec<String>,
    },
    /// One page of the jobs `list` would show with these filters.
    Selected(ListQuery),
}

impl TryFrom<Decoded<'_, sqs_waiter_contract::CancelMany>> for CancelMany {
    type Error = InvalidRequest;

    fn try_from(d: Decoded<'_, sqs_waiter_contract::CancelMany>) -> Result<Self, InvalidRequest> {
        let r = d.request;
        let queue = check_queue(&d.given, &r.queue, d.config)?;
        let ids = r.job_ids.map(check_job_ids).transpose()?;
        let selection = selection_of!(r).check(queue.clone(), sqs_waiter_contract::CancelMany::NAME, false)?;
        let selects = selection.prefix.is_some()
            || selection.tags.is_some()
            || selection.from.is_some()
            || selection.to.is_some();
        match ids {
            Some(job_ids) => {
                if selects || selection.cursor.is_some() || selection.status != ListStatus::Scheduled {
                    return Err(InvalidRequest::new(
                        "job_ids",
                        "give job_ids, or select jobs with prefix, tags, from and to; not both",
                    ));
                }
                Ok(CancelMany::Ids { queue, job_ids })
            }
            // Never "everything" by omission: a selection names at least one bound.
            None if selects || selection.cursor.is_some() => Ok(CancelMany::Selected(selection)),
            None => Err(InvalidRequest::new(
                "job_ids",
                "is required, or select jobs with prefix, tags, from or to (from: 0 selects every job)",
            )),
        }
    }
}

/// `{"action": "reschedule", ...}`.
#[derive(Debug, PartialEq)]
pub struct Reschedule {
    pub queue: QueueName,
    pub job_id: String,
    /// The new time (a past one means now); `None`: a series goes on from its next occurrence,
    /// and a one-off job is refused (it needs one).
    pub perform_at: Option<DateTime<Utc>>,
    /// A series' new start as given: a past one stays in the past, as on `enqueue`.
    pub start: Option<DateTime<Utc>>,
    /// The zone given: the job's windows' and cron's. `None`: the job's own is kept, and a new
    /// `repeat` or new `windows` are read in it.
    pub time_zone: Option<chrono_tz::Tz>,
    pub message_body: Option<String>,
    pub message_attributes: Option<Attributes>,
    /// `Some(None)`: remove the expiry.
    pub expires_at: Option<Option<DateTime<Utc>>>,
    /// `Some(None)`: remove the windows.
    pub windows: Option<Option<Windows>>,
    pub if_version: Option<u64>,
    /// `None`: kept.
    pub priority: Option<u16>,
    pub weight: Option<u16>,
    /// A new repetition, `None`: kept (a series restarts at `perform_at` either way).
    pub repeat: Option<Box<crate::repeat::Series>>,
    /// New tags (`Some(empty)`: removed); `None`: kept.
    pub tags: Option<Tags>,
}

impl TryFrom<Decoded<'_, sqs_waiter_contract::Reschedule>> for Reschedule {
    type Error = InvalidRequest;

    fn try_from(d: Decoded<'_, sqs_waiter_contract::Reschedule>) -> Result<Self, InvalidRequest> {
        let (r, given, now) = (d.request, d.given, d.now);
        let queue = check_queue(&given, &r.queue, d.config)?;
        let job_id = check_job_id(&given.name("job_id"), r.job_id)?;
        let timed = r.delay_seconds.is_some() || r.perform_at.is_some();
        let perform_at = match &r.schedule {
            Some(at) => Some(super::repeat_rules::check_schedule(
                &given,
                at,
                timed,
                r.repeat.is_some(),
                r.time_zone.as_deref(),
                now,
            )?),
            None => when(&given, r.delay_seconds, r.perform_at, now)?,
        };
        let start = r.perform_at.and_then(crate::time::ceil_to_micros).or(perform_at);
        let message_body = r.message_body.map(|b| check_message_body(&given, b)).transpose()?;
        // Checked as given, then ours replace any `waiter.*` ones (the job's attempt is kept).
        let message_attributes = r
            .message_attributes
            .map(|a| check_attributes(&given, a).map(without_reserved))
            .transpose()?;
        // One zone for the job's windows and cron: the one given, else the job's own, which
        // `reschedule` puts on what this reads (in UTC meanwhile).
        let time_zone = r
            .time_zone
            .as_deref()
            .map(|z| crate::windows::zone_named(given.name("time_zone"), Some(z)))
            .transpose()?
            // With `schedule` alone, the zone is its `at(...)`'s, as on `enqueue`.
            .filter(|_| r.schedule.is_none() || r.windows.is_some() || r.repeat.is_some());
        let windows = check_windows(r.windows, None)?;
        let repeat = r
            .repeat
            .map(|rep| super::repeat_rules::check_repeat(&given, rep, None, start.unwrap_or(now)))
            .transpose()?
            .map(|(series, _)| Box::new(series));
        let expires_at = match r.expires_at {
            Some(Some(t)) => {
                let t = check_expires_at(&given, t, now)?;
                // Checked again against the time and windows the job ends up with.
                if let Some(at) = perform_at {
                    check_expiry(&given.name("expires_at"), t, at)?;
                }
                Some(Some(t))
            }
            Some(None) => Some(None),
            None => None,
        };
        let if_version = match r.if_version {
            Some(0) => {
                return Err(InvalidRequest::new(
                    "if_version",
                    "must be a version number (a whole number from 1), got a number",
                ))
            }
            v => v,
        };
        let priority = r
            .priority
            .map(|p| check_priority(&given, Some(p), DEFAULT_PRIORITY))
            .transpose()?;
        let weight = r
            .weight
            .map(|w| check_weight(&given, Some(w), DEFAULT_WEIGHT))
            .transpose()?;
        // `null` and `{}` both remove them.
        let tags = r
            .tags
            .map(|t| check_tags(&given, t.unwrap_or_default(), false))
            .transpose()?;
        Ok(Reschedule {
            queue,
            job_id,
            perform_at,
            start,
            time_zone,
            message_body,
            message_attributes,
            expires_at,
            windows,
            if_version,
            priority,
            weight,
            repeat,
            tags,
        })
    }
}

impl Reschedule {
    /// Whether the request changes the job's tags and nothing else.
    pub fn changes_tags_only(&self) -> bool {
        self.tags.is_some()
            && self.perform_at.is_none()
            && self.time_zone.is_none()
            && self.message_body.is_none()
            && self.message_attributes.is_none()
            && self.expires_at.is_none()
            && self.windows.is_none()
            && self.priority.is_none()
            && self.weight.is_none()
            && self.repeat.is_none()
    }
}

/// `{"action": "replay", ...}`.
#[derive(Debug, PartialEq)]
pub struct Replay {
    pub queue: QueueName,
    pub job_id: String,
    /// `None`: the default, `{job_id}~{version}` of the record replayed.
    pub new_job_id: Option<String>,
    /// `None`: now.
    pub perform_at: Option<DateTime<Utc>>,
    /// The trace the copy's messages carry: the replay call's own (set by the handler).
    pub trace_header: Option<String>,
}

impl TryFrom<Decoded<'_, sqs_waiter_contract::Replay>> for Replay {
    type Error = InvalidRequest;

    fn try_from(d: Decoded<'_, sqs_waiter_contract::Replay>) -> Result<Self, InvalidRequest> {
        let (r, given, now) = (d.request, d.given, d.now);
        Ok(Replay {
            queue: check_queue(&given, &r.queue, d.config)?,
            job_id: check_job_id(&given.name("job_id"), r.job_id)?,
            new_job_id: r
                .new_job_id
                .map(|id| check_new_job_id(&given.name("new_job_id"), id))
                .transpose()?,
            perform_at: when(&given, r.delay_seconds, r.perform_at, now)?,
            trace_header: None,
        })
    }
}

pub const DEFAULT_BUCKETS: u32 = 24;
pub const MAX_BUCKETS: u32 = 100;
pub const DEFAULT_BUCKET_S: u32 = 3600;
/// 30 days.
pub const MAX_BUCKET_S: u32 = 2_592_000;

/// `{"action": "stats", ...}`.
#[derive(Debug, PartialEq)]
pub struct StatsQuery {
    pub queue: QueueName,
    pub buckets: u32,
    pub bucket_s: u32,
    /// Count the queue's items by format too (a read of every item).
    pub formats: bool,
}

impl TryFrom<Decoded<'_, sqs_waiter_contract::Stats>> for StatsQuery {
    type Error = InvalidRequest;

    fn try_from(d: Decoded<'_, sqs_waiter_contract::Stats>) -> Result<Self, InvalidRequest> {
        let r = d.request;
        let number = |field: &str, n: Option<u64>, default: u32, max: u32| -> Result<u32, InvalidRequest> {
            match n {
                None => Ok(default),
                Some(n) => u32::try_from(n)
                    .ok()
                    .filter(|n| (1..=max).contains(n))
                    .ok_or_else(|| InvalidRequest::new(field, format!("must be a whole number from 1 to {max}"))),
            }
        };
        Ok(StatsQuery {
            queue: check_queue(&d.given, &r.queue, d.config)?,
            buckets: number("buckets", r.buckets.map(u64::from), DEFAULT_BUCKETS, MAX_BUCKETS)?,
            bucket_s: number("bucket_s", r.bucket_s, DEFAULT_BUCKET_S, MAX_BUCKET_S)?,
            formats: r.formats.unwrap_or(false),
        })
    }
}
