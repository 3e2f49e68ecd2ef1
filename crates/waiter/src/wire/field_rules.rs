//! The rules of each request field: read by name (see `fields`), refused by name with its rule.

use chrono::{DateTime, TimeDelta, Utc};
use serde_json::Value;

pub(crate) use super::fields::{as_str, kind, truncate, Fields};
use super::sqs_rules::{check_sqs_chars, parse_attributes};
use crate::config::{Config, QueueName};
use crate::error::InvalidRequest;
use crate::job::{message_bytes, Attributes, MAX_JOB_ID_CHARS};
use crate::limits::{SQS_MAX_FIFO_ID_CHARS, SQS_MAX_MESSAGE_BYTES};
use crate::time;
use crate::windows::Windows;

/// Default and largest `limit` of a paged listing, so one reply stays far below Lambda's 6 MB.
pub use sqs_waiter_contract::{DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT};

/// `message_body`: a non-empty string of characters SQS accepts.
pub(crate) fn take_message_body(f: &mut Fields<'_>) -> Result<Option<String>, InvalidRequest> {
    match f.take("message_body", Some("MessageBody"))? {
        None => Ok(None),
        Some((name, Value::String(s))) => {
            if s.is_empty() {
                return Err(InvalidRequest::new(name, "must not be empty"));
            }
            check_sqs_chars(&name, &s)?;
            Ok(Some(s))
        }
        Some((name, other)) => Err(InvalidRequest::new(
            name,
            format!("must be a string, got {}", kind(&other)),
        )),
    }
}

/// `message_attributes`; `null` reads as none.
pub(crate) fn take_message_attributes(f: &mut Fields<'_>) -> Result<Option<Attributes>, InvalidRequest> {
    match f.take("message_attributes", Some("MessageAttributes"))? {
        None => Ok(None),
        Some((_, Value::Null)) => Ok(Some(Attributes::new())),
        Some((name, v)) => parse_attributes(&name, &v).map(Some),
    }
}

/// Body and attributes together within SQS's message size.
pub(crate) fn check_message_size(body: &str, attributes: &Attributes) -> Result<(), InvalidRequest> {
    let size = message_bytes(body, attributes);
    if size > SQS_MAX_MESSAGE_BYTES {
        return Err(InvalidRequest::new(
            "message_body",
            format!("body and attributes are {size} bytes; SQS allows at most {SQS_MAX_MESSAGE_BYTES}"),
        ));
    }
    Ok(())
}

/// `delay_seconds` or `perform_at` (not both), as the instant it names: a time in the past
/// means now, and stored times have microsecond resolution, rounded up. `None` if neither.
pub(crate) fn take_when(
    f: &mut Fields<'_>,
    now: DateTime<Utc>,
) -> Result<Option<(String, DateTime<Utc>)>, InvalidRequest> {
    let delay = f.take("delay_seconds", Some("DelaySeconds"))?;
    let perform = f.take("perform_at", Some("PerformAt"))?;
    let (field, at) = match (delay, perform) {
        (Some((d, _)), Some((p, _))) => {
            let rule = format!("give either {d} or {p}, not both");
            return Err(InvalidRequest::new(d, rule));
        }
        (Some((name, v)), None) => {
            let secs = match &v {
                Value::Number(n) => match n.as_u64() {
                    Some(s) => s,
                    None if n.as_i64().is_some() => return Err(InvalidRequest::new(name, "must not be negative")),
                    None => return Err(InvalidRequest::new(name, "must be a whole number of seconds")),
                },
                other => {
                    return Err(InvalidRequest::new(
                        name,
                        format!("must be an integer, got {}", kind(other)),
                    ))
                }
            };
            let at = i64::try_from(secs)
                .ok()
                .and_then(TimeDelta::try_seconds)
                .and_then(|d| now.checked_add_signed(d))
                .filter(|t| *t <= time::max_time())
                .ok_or_else(|| InvalidRequest::new(name.clone(), "is too large: the time would be after year 9999"))?;
            (name, at)
        }
        (None, Some((name, v))) => {
            let at = parse_time_value(&name, &v)?;
            (name, at)
        }
        (None, None) => return Ok(None),
    };
    Ok(Some((field, time::ceil_to_micros(at.max(now)).unwrap_or(at))))
}

/// A field's name as given, and its value (`None`: given as `null`).
pub(crate) type GivenTime = (String, Option<DateTime<Utc>>);

/// `expires_at`: `Some((field, None))` when given as `null`. It must be in the future.
pub(crate) fn take_expires_at(f: &mut Fields<'_>, now: DateTime<Utc>) -> Result<Option<GivenTime>, InvalidRequest> {
    match f.take("expires_at", Some("ExpiresAt"))? {
        None => Ok(None),
        Some((name, Value::Null)) => Ok(Some((name, None))),
        Some((name, v)) => {
            let t = parse_time_value(&name, &v)?;
            if t <= now {
                return Err(InvalidRequest::new(name, "is already past"));
            }
            Ok(Some((name, Some(t))))
        }
    }
}

/// `windows` and `time_zone`: `Some(None)` when `windows` is given as `null` (reschedule clears
/// them); `time_zone` goes with `windows`.
pub(crate) fn take_windows(f: &mut Fields<'_>) -> Result<Option<Option<Windows>>, InvalidRequest> {
    let windows = f.take("windows", None)?;
    let zone = f.take("time_zone", None)?;
    match (windows, zone) {
        (None, None) => Ok(None),
        (None, Some((name, _))) | (Some((_, Value::Null)), Some((name, _))) => {
            Err(InvalidRequest::new(name, "goes with windows"))
        }
        (Some((_, Value::Null)), None) => Ok(Some(None)),
        (Some((wf, wv)), zone) => {
            Windows::parse((&wf, &wv), zone.as_ref().map(|(zf, zv)| (zf.as_str(), zv))).map(|w| Some(Some(w)))
        }
    }
}

/// A job must be able to run before it expires.
pub(crate) fn check_expiry(
    field: &str,
    expires_at: DateTime<Utc>,
    perform_at: DateTime<Utc>,
) -> Result<(), InvalidRequest> {
    if expires_at < perform_at {
        return Err(InvalidRequest::new(
            field,
            "is before perform_at: the job could never run",
        ));
    }
    Ok(())
}

pub(crate) fn take_queue(f: &mut Fields<'_>, config: &Config) -> Result<QueueName, InvalidRequest> {
    let by_name = f.take("queue", Some("Queue"))?;
    let by_url = f.take("queue_url", Some("QueueUrl"))?;
    let (field, name) = match (by_name, by_url) {
        (Some(_), Some(_)) => return Err(InvalidRequest::new("queue", "give either queue or queue_url, not both")),
        (None, None) => return Err(InvalidRequest::new("queue", "is required (or queue_url)")),
        (Some((field, v)), None) => (field.clone(), as_str(&field, &v)?.to_owned()),
        (None, Some((field, v))) => {
            let url = as_str(&field, &v)?;
            let name = url.trim_end_matches('/').rsplit('/').next().unwrap_or_default();
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                return Err(InvalidRequest::new(field, "must be an SQS queue URL (https://...)"));
            }
            (field.clone(), name.to_owned())
        }
    };
    config.queue(&name).cloned().ok_or_else(|| {
        InvalidRequest::new(
            field,
            format!(
                "{:?} is not managed by this deployment (not in WAITER_QUEUES)",
                truncate(&name, 100)
            ),
        )
    })
}

pub(crate) fn take_job_id(f: &mut Fields<'_>) -> Result<Option<String>, InvalidRequest> {
    match f.take("job_id", Some("JobId"))? {
        Some((name, v)) => parse_job_id(&name, &v).map(Some),
        None => Ok(None),
    }
}

/// `limit` (1 to `MAX_PAGE_LIMIT`, default `DEFAULT_PAGE_LIMIT`) and `cursor` (opaque; checked
/// against its queue and listing where it is used).
pub(crate) fn take_page(f: &mut Fields<'_>) -> Result<(usize, Option<String>), InvalidRequest> {
    let limit = match f.take("limit", None)? {
        None | Some((_, Value::Null)) => DEFAULT_PAGE_LIMIT,
        Some((name, v)) => match v.as_u64() {
            Some(n) if (1..=MAX_PAGE_LIMIT as u64).contains(&n) => n as usize,
            _ => {
                return Err(InvalidRequest::new(
                    name,
                    format!("must be a whole number from 1 to {MAX_PAGE_LIMIT}"),
                ))
            }
        },
    };
    let cursor = match f.take("cursor", None)? {
        None | Some((_, Value::Null)) => None,
        Some((name, v)) => Some(as_str(&name, &v)?.to_owned()),
    };
    Ok((limit, cursor))
}

/// `job_ids`: 1 to `MAX_PAGE_LIMIT` job ids, each refused by its index.
pub(crate) fn take_job_ids(f: &mut Fields<'_>) -> Result<Option<Vec<String>>, InvalidRequest> {
    match f.take("job_ids", None)? {
        None => Ok(None),
        Some((name, Value::Array(ids))) => {
            if ids.is_empty() || ids.len() > MAX_PAGE_LIMIT {
                return Err(InvalidRequest::new(
                    name,
                    format!("must hold 1 to {MAX_PAGE_LIMIT} job ids"),
                ));
            }
            ids.iter()
                .enumerate()
                .map(|(i, v)| parse_job_id(&format!("{name}[{i}]"), v))
                .collect::<Result<Vec<_>, _>>()
                .map(Some)
        }
        Some((name, other)) => Err(InvalidRequest::new(
            name,
            format!("must be an array, got {}", kind(&other)),
        )),
    }
}

pub(crate) fn parse_job_id(field: &str, v: &Value) -> Result<String, InvalidRequest> {
    let s = as_str(field, v)?;
    if s.is_empty() || s.chars().count() > MAX_JOB_ID_CHARS {
        return Err(InvalidRequest::new(
            field,
            format!("must be 1 to {MAX_JOB_ID_CHARS} characters"),
        ));
    }
    if !s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
    {
        return Err(InvalidRequest::new(
            field,
            "must contain only A-Z, a-z, 0-9 and _ . : -",
        ));
    }
    Ok(s.to_owned())
}

pub(crate) fn take_fifo_id(
    f: &mut Fields<'_>,
    name: &'static str,
    alias: &'static str,
) -> Result<Option<String>, InvalidRequest> {
    match f.take(name, Some(alias))? {
        None | Some((_, Value::Null)) => Ok(None),
        Some((field, v)) => {
            let s = as_str(&field, &v)?;
            if s.is_empty() || s.chars().count() > SQS_MAX_FIFO_ID_CHARS {
                return Err(InvalidRequest::new(
                    field,
                    format!("must be 1 to {SQS_MAX_FIFO_ID_CHARS} characters"),
                ));
            }
            // SQS: alphanumeric characters and punctuation only.
            if !s.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(InvalidRequest::new(
                    field,
                    "must contain only ASCII letters, digits and punctuation",
                ));
            }
            Ok(Some(s.to_owned()))
        }
    }
}

pub(crate) fn parse_time_value(field: &str, v: &Value) -> Result<DateTime<Utc>, InvalidRequest> {
    let parsed = match v {
        Value::String(s) => time::parse_time_str(s),
        // The literal as written (serde_json `arbitrary_precision`): exact, never float-rounded.
        Value::Number(n) => time::parse_json_epoch(&n.to_string()),
        other => Err(format!(
            "must be an RFC 3339 string or epoch seconds, got {}",
            kind(other)
        )),
    };
    parsed.map_err(|rule| InvalidRequest::new(field, rule))
}
