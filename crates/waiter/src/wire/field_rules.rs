//! The rules of each request field, applied to the decoded contract types: a refusal names the
//! field as the caller gave it (see `normalise::Given`) and the rule it broke.

use chrono::{DateTime, TimeDelta, Utc};

use super::decode::truncate;
use super::normalise::Given;
use crate::config::{Config, QueueName};
use crate::error::InvalidRequest;
use crate::job::{message_bytes, Attributes, Job, MAX_JOB_ID_CHARS};
use crate::limits::{
    DDB_MAX_ITEM_BYTES, MAX_STORED_ITEM_BYTES, PARK_RESERVE_BYTES, SQS_MAX_FIFO_ID_CHARS, SQS_MAX_MESSAGE_ATTRIBUTES,
    SQS_MAX_MESSAGE_BYTES,
};
use crate::time;
use crate::windows::Windows;
use sqs_waiter_contract::{
    Tags, DEFAULT_PRIORITY, DEFAULT_WEIGHT, MAX_PRIORITY, MAX_TAGS, MAX_TAG_KEY_CHARS, MAX_TAG_VALUE_CHARS, MAX_WEIGHT,
};

pub(crate) use super::sqs_rules::{check_attributes, check_sqs_chars};
/// Default and largest `limit` of a paged listing, so one reply stays far below Lambda's 6 MB.
pub use sqs_waiter_contract::{DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT};

/// `tags`: at most `MAX_TAGS` pairs, each key 1 to `MAX_TAG_KEY_CHARS` characters and each
/// value at most `MAX_TAG_VALUE_CHARS` (docs/contract.md "Tags"). The same rules hold for a
/// selection by tags, which must also name at least one pair (`selection`).
pub(crate) fn check_tags(given: &Given, tags: Tags, selection: bool) -> Result<Tags, InvalidRequest> {
    let field = given.name("tags");
    if tags.len() > MAX_TAGS {
        return Err(InvalidRequest::new(
            field,
            format!("at most {MAX_TAGS} tags, got {}", tags.len()),
        ));
    }
    if selection && tags.is_empty() {
        return Err(InvalidRequest::new(
            field,
            "must name at least one tag to select by (leave it out to select every job)",
        ));
    }
    for (key, value) in &tags {
        let chars = key.chars().count();
        if !(1..=MAX_TAG_KEY_CHARS).contains(&chars) {
            return Err(InvalidRequest::new(
                field,
                format!(
                    "a key must be 1 to {MAX_TAG_KEY_CHARS} characters, got {chars} ({:?})",
                    truncate(key, 64)
                ),
            ));
        }
        let chars = value.chars().count();
        if chars > MAX_TAG_VALUE_CHARS {
            return Err(InvalidRequest::new(
                format!("{field}.{}", truncate(key, 64)),
                format!("a value must be at most {MAX_TAG_VALUE_CHARS} characters, got {chars}"),
            ));
        }
    }
    Ok(tags)
}

/// The queue must be one this deployment manages.
pub(crate) fn check_queue(given: &Given, name: &str, config: &Config) -> Result<QueueName, InvalidRequest> {
    config.queue(name).cloned().ok_or_else(|| {
        InvalidRequest::new(
            given.name("queue"),
            format!(
                "{:?} is not managed by this deployment (not in WAITER_QUEUES)",
                truncate(name, 100)
            ),
        )
    })
}

/// `message_body`: a non-empty string of characters SQS accepts.
pub(crate) fn check_message_body(given: &Given, body: String) -> Result<String, InvalidRequest> {
    let field = given.name("message_body");
    if body.is_empty() {
        return Err(InvalidRequest::new(field, "must not be empty"));
    }
    check_sqs_chars(&field, &body)?;
    Ok(body)
}

/// Body and attributes together within SQS's message size.
/// The stored item of a job must leave room for parking it (`MAX_STORED_ITEM_BYTES`).
pub(crate) fn check_stored_size(bytes: usize) -> Result<(), InvalidRequest> {
    if bytes > MAX_STORED_ITEM_BYTES {
        return Err(InvalidRequest::new(
            "message_body",
            format!(
                "the stored item would be {bytes} bytes; at most {MAX_STORED_ITEM_BYTES} (DynamoDB's \
                 {DDB_MAX_ITEM_BYTES} less {PARK_RESERVE_BYTES} kept for parking it)"
            ),
        ));
    }
    Ok(())
}

/// A whole number from `min` to `max`.
pub(crate) fn in_range(field: &str, n: u64, min: u64, max: u64) -> Result<u64, InvalidRequest> {
    if (min..=max).contains(&n) {
        Ok(n)
    } else {
        Err(InvalidRequest::new(
            field,
            format!("must be a whole number from {min} to {max}, got {n}"),
        ))
    }
}

/// `priority` (0 to 1000), `default` when absent.
pub(crate) fn check_priority(given: &Given, priority: Option<u64>, default: u16) -> Result<u16, InvalidRequest> {
    let n = priority.unwrap_or(u64::from(default));
    // At most MAX_PRIORITY, so the cast keeps the value.
    in_range(&given.name("priority"), n, 0, u64::from(MAX_PRIORITY)).map(|n| n as u16)
}

/// `weight` (1 to 100), `default` when absent.
pub(crate) fn check_weight(given: &Given, weight: Option<u64>, default: u16) -> Result<u16, InvalidRequest> {
    let n = weight.unwrap_or(u64::from(default));
    in_range(&given.name("weight"), n, 1, u64::from(MAX_WEIGHT)).map(|n| n as u16)
}

/// The message a job sends, as SQS takes it: body and attributes within SQS's size, and at
/// most `SQS_MAX_MESSAGE_ATTRIBUTES` attributes once `waiter.priority` and `waiter.weight`
/// (a non-default priority and weight travel with the message) are added.
pub(crate) fn check_message(given: &Given, job: &Job) -> Result<(), InvalidRequest> {
    let sent = job.sent_attributes();
    if sent.len() > SQS_MAX_MESSAGE_ATTRIBUTES {
        let field = if job.weight != DEFAULT_WEIGHT {
            "weight"
        } else if job.priority != DEFAULT_PRIORITY {
            "priority"
        } else {
            "message_attributes"
        };
        return Err(InvalidRequest::new(
            given.name(field),
            format!(
                "leaves no room in message_attributes: ours travel with the message (waiter.attempt from the \
                 second attempt, waiter.job_id on a replayed copy, waiter.priority and waiter.weight when not \
                 the defaults), and SQS allows at most {SQS_MAX_MESSAGE_ATTRIBUTES} attributes ({} given)",
                job.message_attributes.len()
            ),
        ));
    }
    check_message_size(&job.message_body, &sent)
}

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
pub(crate) fn when(
    given: &Given,
    delay_seconds: Option<u64>,
    perform_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, InvalidRequest> {
    let at = match (delay_seconds, perform_at) {
        (Some(_), Some(_)) => {
            let (d, p) = (given.name("delay_seconds"), given.name("perform_at"));
            let rule = format!("give either {d} or {p}, not both");
            return Err(InvalidRequest::new(d, rule));
        }
        (Some(secs), None) => i64::try_from(secs)
            .ok()
            .and_then(TimeDelta::try_seconds)
            .and_then(|d| now.checked_add_signed(d))
            .filter(|t| *t <= time::max_time())
            .ok_or_else(|| {
                InvalidRequest::new(
                    given.name("delay_seconds"),
                    "is too large: the time would be after year 9999",
                )
            })?,
        (None, Some(t)) => t,
        (None, None) => return Ok(None),
    };
    Ok(Some(time::ceil_to_micros(at.max(now)).unwrap_or(at)))
}

/// `expires_at` must be in the future.
pub(crate) fn check_expires_at(
    given: &Given,
    expires_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<DateTime<Utc>, InvalidRequest> {
    if expires_at <= now {
        return Err(InvalidRequest::new(given.name("expires_at"), "is already past"));
    }
    Ok(expires_at)
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

/// `windows` with `time_zone` (which goes with them, or with `repeat`, whose cron it reads: a
/// series without windows takes its zone before this): `Some(None)` when `windows` is given as
/// `null` (a reschedule then clears them).
pub(crate) fn check_windows(
    windows: Option<Option<Vec<sqs_waiter_contract::Window>>>,
    time_zone: Option<String>,
) -> Result<Option<Option<Windows>>, InvalidRequest> {
    match (windows, time_zone) {
        (None | Some(None), Some(_)) => Err(InvalidRequest::new("time_zone", "goes with windows or repeat")),
        (None, None) => Ok(None),
        (Some(None), None) => Ok(Some(None)),
        (Some(Some(spans)), zone) => Windows::parse(&spans, zone.as_deref()).map(|w| Some(Some(w))),
    }
}

/// A job id where a job is named: 1 to 128 of `[A-Za-z0-9_.:-]` (and `~`), an occurrence's
/// `{job_id}@{epoch seconds}` (the id its retries go under), or a replayed copy's of either,
/// `{id}~{version}`, copies of copies too: the ids `replay` gives and their messages carry.
pub(crate) fn check_job_id(field: &str, id: String) -> Result<String, InvalidRequest> {
    if id.is_empty() || id.chars().count() > MAX_JOB_ID_CHARS {
        return Err(InvalidRequest::new(
            field,
            format!("must be 1 to {MAX_JOB_ID_CHARS} characters"),
        ));
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let mut named = id.as_str();
    while let Some((copied, _)) = named.rsplit_once(char::from(COPY_MARK)).filter(|(_, v)| digits(v)) {
        named = copied;
    }
    let named = match named.rsplit_once(char::from(OCCURRENCE_MARK)) {
        Some((series, epoch)) if digits(epoch) => series,
        _ => named,
    };
    let plain = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-' | COPY_MARK);
    if named.is_empty() || !named.bytes().all(plain) {
        return Err(InvalidRequest::new(
            field,
            "must contain only A-Z, a-z, 0-9 and _ . : - (and ~ in a replayed copy's id, @ in an occurrence's)",
        ));
    }
    Ok(id)
}

/// Marks a replayed copy's default id, `{job_id}~{version}`: the one character a caller's own
/// `job_id` may not hold, so that no caller's id can ever name a copy.
pub(crate) const COPY_MARK: u8 = b'~';
/// Joins a series' id and an occurrence's instant (`{job_id}@{epoch}`); never in a caller's id.
const OCCURRENCE_MARK: u8 = sqs_waiter_contract::OCCURRENCE_SEPARATOR as u8;

/// A `job_id` the caller chooses for a new job (`enqueue`, `replay`'s `new_job_id`): as any id,
/// without `~`.
pub(crate) fn check_new_job_id(field: &str, id: String) -> Result<String, InvalidRequest> {
    let id = check_job_id(field, id)?;
    if id.bytes().any(|b| b == COPY_MARK || b == OCCURRENCE_MARK) {
        return Err(InvalidRequest::new(
            field,
            "must contain only A-Z, a-z, 0-9 and _ . : - (~ is kept for the ids of replayed copies, @ for \
             a series' occurrences)",
        ));
    }
    Ok(id)
}

/// `job_ids`: 1 to `MAX_PAGE_LIMIT` job ids, each refused by its index.
pub(crate) fn check_job_ids(ids: Vec<String>) -> Result<Vec<String>, InvalidRequest> {
    if ids.is_empty() || ids.len() > MAX_PAGE_LIMIT {
        return Err(InvalidRequest::new(
            "job_ids",
            format!("must hold 1 to {MAX_PAGE_LIMIT} job ids"),
        ));
    }
    ids.into_iter()
        .enumerate()
        .map(|(i, id)| check_job_id(&format!("job_ids[{i}]"), id))
        .collect()
}

/// `message_group_id` and `message_deduplication_id`: SQS's 128 ASCII letters, digits and
/// punctuation.
pub(crate) fn check_fifo_id(field: &str, id: String) -> Result<String, InvalidRequest> {
    if id.is_empty() || id.chars().count() > SQS_MAX_FIFO_ID_CHARS {
        return Err(InvalidRequest::new(
            field,
            format!("must be 1 to {SQS_MAX_FIFO_ID_CHARS} characters"),
        ));
    }
    if !id.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(InvalidRequest::new(
            field,
            "must contain only ASCII letters, digits and punctuation",
        ));
    }
    Ok(id)
}

/// `limit` (1 to `MAX_PAGE_LIMIT`, default `DEFAULT_PAGE_LIMIT`).
/// A caller's `trace_header`: an X-Ray trace header, as SQS's `AWSTraceHeader` must be.
pub(crate) fn check_trace_header(given: &Given, header: String) -> Result<String, InvalidRequest> {
    match crate::trace::problem(&header) {
        None => Ok(header),
        Some(rule) => Err(InvalidRequest::new(given.name("trace_header"), rule)),
    }
}

pub(crate) fn check_limit(limit: Option<usize>) -> Result<usize, InvalidRequest> {
    match limit {
        None => Ok(DEFAULT_PAGE_LIMIT),
        Some(n) if (1..=MAX_PAGE_LIMIT).contains(&n) => Ok(n),
        Some(_) => Err(InvalidRequest::new(
            "limit",
            format!("must be a whole number from 1 to {MAX_PAGE_LIMIT}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where a job is named: a caller's id, an occurrence's, a replayed copy's of either (and
    /// copies of copies, as `replay` names them); nothing else with `@`.
    #[test]
    fn a_named_job_id_is_a_callers_an_occurrences_or_a_copys() {
        for id in [
            "invoice-42",
            "a~3",
            "s@1796115600",
            "s@1796115600~1",
            "s@1796115600~1~2",
            "a~1~2",
        ] {
            assert_eq!(check_job_id("job_id", id.to_owned()).ok().as_deref(), Some(id), "{id}");
        }
        for id in [
            "", "@5", "s@", "s@-5", "s@+5~1", "a@1~2@3", "a@1@2", "s@5~x", "a b", "s@5~",
        ] {
            let e = check_job_id("job_id", id.to_owned()).expect_err(id);
            assert_eq!(e.field, "job_id", "{id}");
        }
        let long = format!("{}@1796115600~1", "s".repeat(MAX_JOB_ID_CHARS - 12));
        assert!(check_job_id("job_id", long).is_err(), "over 128 characters");
    }
}
