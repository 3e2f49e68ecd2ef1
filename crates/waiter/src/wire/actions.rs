//! The requests of the managing actions, read into their domain form: `list`, `cancel_many`,
//! `reschedule` and `stats`.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::field_rules::*;
use super::fields::{kind, Fields};
use crate::config::{Config, QueueName};
use crate::error::InvalidRequest;
use crate::job::Attributes;
use crate::windows::Windows;

pub use sqs_waiter_contract::ListStatus;

/// `{"action": "list", ...}`.
#[derive(Debug, PartialEq)]
pub struct ListQuery {
    /// The action the listing serves (`list`, `cancel_many`): a cursor continues only its own.
    pub action: &'static str,
    pub queue: QueueName,
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub prefix: Option<String>,
    pub status: ListStatus,
    pub limit: usize,
    pub cursor: Option<String>,
    pub with_body: bool,
}

pub(crate) fn parse_list(mut f: Fields<'_>, config: &Config) -> Result<ListQuery, InvalidRequest> {
    f.take("action", None)?;
    let queue = take_queue(&mut f, config)?;
    let query = parse_selection(&mut f, queue, "list")?;
    f.finish()?;
    Ok(query)
}

/// The selection fields `list` and `cancel_many` share.
pub(crate) fn parse_selection(
    f: &mut Fields<'_>,
    queue: QueueName,
    action: &'static str,
) -> Result<ListQuery, InvalidRequest> {
    let mut time = |name: &'static str| -> Result<Option<DateTime<Utc>>, InvalidRequest> {
        match f.take(name, None)? {
            None | Some((_, Value::Null)) => Ok(None),
            Some((field, v)) => parse_time_value(&field, &v).map(Some),
        }
    };
    let from = time("from")?;
    let to = time("to")?;
    if let (Some(a), Some(b)) = (from, to) {
        if a > b {
            return Err(InvalidRequest::new("from", "is after to"));
        }
    }
    let prefix = match f.take("prefix", None)? {
        None | Some((_, Value::Null)) => None,
        Some((name, v)) => Some(parse_job_id(&name, &v)?),
    };
    let status = match f.take("status", None)? {
        None | Some((_, Value::Null)) => ListStatus::Scheduled,
        Some((_, Value::String(s))) if s == "scheduled" => ListStatus::Scheduled,
        Some((_, Value::String(s))) if s == "parked" => ListStatus::Parked,
        Some((name, _)) => return Err(InvalidRequest::new(name, "must be \"scheduled\" or \"parked\"")),
    };
    let with_body = match f.take("with_body", None)? {
        None | Some((_, Value::Null)) => false,
        Some((_, Value::Bool(b))) => b,
        Some((name, other)) => {
            return Err(InvalidRequest::new(
                name,
                format!("must be true or false, got {}", kind(&other)),
            ))
        }
    };
    let (limit, cursor) = take_page(f)?;
    Ok(ListQuery {
        action,
        queue,
        from,
        to,
        prefix,
        status,
        limit,
        cursor,
        with_body,
    })
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

pub(crate) fn parse_cancel_many(mut f: Fields<'_>, config: &Config) -> Result<CancelMany, InvalidRequest> {
    f.take("action", None)?;
    let queue = take_queue(&mut f, config)?;
    let ids = take_job_ids(&mut f)?;
    let selection = parse_selection(&mut f, queue.clone(), "cancel_many")?;
    f.finish()?;
    let selects = selection.prefix.is_some() || selection.from.is_some() || selection.to.is_some();
    match ids {
        Some(job_ids) => {
            if selects || selection.cursor.is_some() || selection.status != ListStatus::Scheduled {
                return Err(InvalidRequest::new(
                    "job_ids",
                    "give job_ids, or select jobs with prefix, from and to; not both",
                ));
            }
            Ok(CancelMany::Ids { queue, job_ids })
        }
        // Never "everything" by omission: a selection names at least one bound.
        None if selects || selection.cursor.is_some() => Ok(CancelMany::Selected(selection)),
        None => Err(InvalidRequest::new(
            "job_ids",
            "is required, or select jobs with prefix, from or to (from: 0 selects every job)",
        )),
    }
}

/// `{"action": "reschedule", ...}`.
#[derive(Debug, PartialEq)]
pub struct Reschedule {
    pub queue: QueueName,
    pub job_id: String,
    pub perform_at: DateTime<Utc>,
    pub message_body: Option<String>,
    pub message_attributes: Option<Attributes>,
    /// `Some(None)`: remove the expiry.
    pub expires_at: Option<Option<DateTime<Utc>>>,
    /// `Some(None)`: remove the windows.
    pub windows: Option<Option<Windows>>,
    pub if_version: Option<u64>,
}

pub(crate) fn parse_reschedule(
    mut f: Fields<'_>,
    config: &Config,
    now: DateTime<Utc>,
) -> Result<Reschedule, InvalidRequest> {
    f.take("action", None)?;
    let queue = take_queue(&mut f, config)?;
    let job_id = take_job_id(&mut f)?.ok_or_else(|| InvalidRequest::new("job_id", "is required"))?;
    let (_, perform_at) =
        take_when(&mut f, now)?.ok_or_else(|| InvalidRequest::new("perform_at", "is required (or delay_seconds)"))?;
    let message_body = take_message_body(&mut f)?;
    let message_attributes = take_message_attributes(&mut f)?;
    let windows = take_windows(&mut f)?;
    let expires_at = match take_expires_at(&mut f, now)? {
        Some((name, Some(t))) => {
            // Checked again against the windows the job ends up with.
            check_expiry(&name, t, perform_at)?;
            Some(Some(t))
        }
        Some((_, None)) => Some(None),
        None => None,
    };
    let if_version = match f.take("if_version", None)? {
        None | Some((_, Value::Null)) => None,
        Some((name, v)) => match v.as_u64() {
            Some(n) if n >= 1 => Some(n),
            _ => {
                return Err(InvalidRequest::new(
                    name,
                    format!("must be a version number (a whole number from 1), got {}", kind(&v)),
                ))
            }
        },
    };
    f.finish()?;
    Ok(Reschedule {
        queue,
        job_id,
        perform_at,
        message_body,
        message_attributes,
        expires_at,
        windows,
        if_version,
    })
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
}

pub(crate) fn parse_stats(mut f: Fields<'_>, config: &Config) -> Result<StatsQuery, InvalidRequest> {
    f.take("action", None)?;
    let queue = take_queue(&mut f, config)?;
    let mut number = |name: &'static str, default: u32, max: u32| -> Result<u32, InvalidRequest> {
        match f.take(name, None)? {
            None | Some((_, Value::Null)) => Ok(default),
            Some((field, v)) => v
                .as_u64()
                .filter(|n| (1..=u64::from(max)).contains(n))
                .map(|n| n as u32)
                .ok_or_else(|| InvalidRequest::new(field, format!("must be a whole number from 1 to {max}"))),
        }
    };
    let buckets = number("buckets", DEFAULT_BUCKETS, MAX_BUCKETS)?;
    let bucket_s = number("bucket_s", DEFAULT_BUCKET_S, MAX_BUCKET_S)?;
    f.finish()?;
    Ok(StatsQuery {
        queue,
        buckets,
        bucket_s,
    })
}
