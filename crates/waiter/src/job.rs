//! The job model and the parsing of caller requests into it.
//!
//! Parsing is by hand from `serde_json::Value` rather than `#[derive(Deserialize)]` because every
//! refusal must name the field and the rule, and serde's derive errors do neither reliably.

use std::collections::{BTreeMap, HashSet};

use base64::Engine as _;
use chrono::{DateTime, TimeDelta, Utc};
use serde_json::{Map, Value};

use crate::config::{Config, QueueName};
use crate::error::InvalidRequest;
use crate::limits::{
    SQS_MAX_ATTRIBUTE_NAME_CHARS, SQS_MAX_FIFO_ID_CHARS, SQS_MAX_MESSAGE_ATTRIBUTES, SQS_MAX_MESSAGE_BYTES,
    SQS_NUMBER_MAX_DIGITS, SQS_NUMBER_MAX_EXPONENT, SQS_NUMBER_MIN_EXPONENT,
};
use crate::time;
use crate::windows::Windows;

/// Jobs accepted in one `{"jobs": [...]}` request. The contract asks for at least 100; a Lambda
/// synchronous payload (6 MB) rarely holds more than this many useful jobs anyway.
pub const MAX_JOBS_PER_REQUEST: usize = 1000;
/// Longest `job_id`.
pub const MAX_JOB_ID_CHARS: usize = 128;

/// A message attribute value, kept exactly as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttributeData {
    String(String),
    Binary(Vec<u8>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageAttribute {
    pub data_type: String,
    pub data: AttributeData,
}

impl MessageAttribute {
    /// Bytes SQS counts toward the message size: name, type and value.
    pub fn size_with_name(&self, name: &str) -> usize {
        name.len()
            + self.data_type.len()
            + match &self.data {
                AttributeData::String(s) => s.len(),
                AttributeData::Binary(b) => b.len(),
            }
    }
}

pub type Attributes = BTreeMap<String, MessageAttribute>;

/// A validated job.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub queue: QueueName,
    pub job_id: String,
    /// Whether the caller chose the id (only then can it already exist).
    pub job_id_given: bool,
    pub message_body: String,
    pub message_attributes: Attributes,
    pub perform_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub message_group_id: Option<String>,
    pub message_deduplication_id: Option<String>,
    /// Daily windows the job may be sent in; `perform_at` is always inside one.
    pub windows: Option<Windows>,
}

impl Job {
    /// Body plus attributes, as SQS counts a message's size.
    pub fn message_bytes(&self) -> usize {
        message_bytes(&self.message_body, &self.message_attributes)
    }

    /// The one expiry rule: a job that would arrive after `expires_at` is not sent.
    pub fn arrives_expired(&self, arrival: DateTime<Utc>) -> bool {
        self.expires_at.is_some_and(|e| e < arrival)
    }
}

pub fn message_bytes(body: &str, attributes: &Attributes) -> usize {
    body.len() + attributes.iter().map(|(n, a)| a.size_with_name(n)).sum::<usize>()
}

/// An invocation payload that always deserialises: malformed JSON (or nesting past serde_json's
/// recursion limit) is kept as the parser's message, so that it can be refused as
/// `InvalidRequest` naming the request instead of failing inside the Lambda runtime.
#[derive(Debug)]
pub struct Payload(pub Result<Value, String>);

impl<'de> serde::Deserialize<'de> for Payload {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Payload(Value::deserialize(d).map_err(|e| e.to_string())))
    }
}

impl Payload {
    pub fn into_value(self) -> Result<Value, InvalidRequest> {
        self.0
            .map_err(|e| InvalidRequest::new("request", format!("is not valid JSON: {e}")))
    }
}

/// What a request asks for.
#[derive(Debug)]
pub enum Request {
    Enqueue(Box<Result<Job, InvalidRequest>>),
    Batch(Vec<Result<Job, InvalidRequest>>),
    Get {
        queue: QueueName,
        job_id: String,
    },
    Cancel {
        queue: QueueName,
        job_id: String,
    },
    ListParked {
        queue: QueueName,
        limit: usize,
        cursor: Option<String>,
    },
    Redrive {
        queue: QueueName,
        target: RedriveTarget,
    },
    Reschedule(Box<crate::manage::Reschedule>),
    List(Box<crate::manage::ListQuery>),
    CancelMany(Box<crate::bulk::CancelMany>),
    Stats(crate::stats::StatsQuery),
}

/// Which parked jobs a `redrive` moves back.
#[derive(Debug, PartialEq)]
pub enum RedriveTarget {
    One(String),
    Many(Vec<String>),
    /// A page of the parked partition (`all: true`), continued with a cursor.
    All {
        limit: usize,
        cursor: Option<String>,
    },
}

/// Default and largest `limit` of a paged listing, so one reply stays far below Lambda's 6 MB.
pub const DEFAULT_PAGE_LIMIT: usize = 100;
pub const MAX_PAGE_LIMIT: usize = 1000;

/// Parses any invocation payload. An `Err` is a refusal of the whole request; inside a batch each
/// job carries its own result so that one bad job never blocks the others.
pub fn parse_request(event: &Value, config: &Config, now: DateTime<Utc>) -> Result<Request, InvalidRequest> {
    let Value::Object(map) = event else {
        return Err(InvalidRequest::new(
            "request",
            format!("must be a JSON object, got {}", kind(event)),
        ));
    };
    let action = match map.get("action") {
        None => "enqueue",
        Some(Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(InvalidRequest::new(
                "action",
                format!("must be a string, got {}", kind(other)),
            ))
        }
    };
    match action {
        "enqueue" => {
            if let Some(jobs) = map.get("jobs") {
                if let Some(extra) = map.keys().find(|k| !matches!(k.as_str(), "jobs" | "action")) {
                    return Err(InvalidRequest::new(
                        extra.clone(),
                        "is not allowed beside \"jobs\": put it inside each job",
                    ));
                }
                let Value::Array(items) = jobs else {
                    return Err(InvalidRequest::new(
                        "jobs",
                        format!("must be an array, got {}", kind(jobs)),
                    ));
                };
                if items.is_empty() {
                    return Err(InvalidRequest::new("jobs", "must hold at least one job"));
                }
                if items.len() > MAX_JOBS_PER_REQUEST {
                    return Err(InvalidRequest::new(
                        "jobs",
                        format!("must hold at most {MAX_JOBS_PER_REQUEST} jobs, got {}", items.len()),
                    ));
                }
                Ok(Request::Batch(
                    items.iter().map(|j| parse_job(j, config, now)).collect(),
                ))
            } else {
                Ok(Request::Enqueue(Box::new(parse_job(event, config, now))))
            }
        }
        "get" | "cancel" => {
            let mut f = Fields::new(map);
            f.take("action", None)?;
            let queue = take_queue(&mut f, config)?;
            let job_id = take_job_id(&mut f)?.ok_or_else(|| InvalidRequest::new("job_id", "is required"))?;
            f.finish()?;
            Ok(match action {
                "get" => Request::Get { queue, job_id },
                _ => Request::Cancel { queue, job_id },
            })
        }
        "redrive" => {
            let mut f = Fields::new(map);
            f.take("action", None)?;
            let queue = take_queue(&mut f, config)?;
            let one = take_job_id(&mut f)?;
            let many = match f.take("job_ids", None)? {
                None => None,
                Some((name, Value::Array(ids))) => {
                    if ids.is_empty() || ids.len() > MAX_PAGE_LIMIT {
                        return Err(InvalidRequest::new(
                            name,
                            format!("must hold 1 to {MAX_PAGE_LIMIT} job ids"),
                        ));
                    }
                    let ids = ids
                        .iter()
                        .enumerate()
                        .map(|(i, v)| parse_job_id(&format!("{name}[{i}]"), v))
                        .collect::<Result<Vec<_>, _>>()?;
                    Some(ids)
                }
                Some((name, other)) => {
                    return Err(InvalidRequest::new(
                        name,
                        format!("must be an array, got {}", kind(&other)),
                    ))
                }
            };
            let all = match f.take("all", None)? {
                None => false,
                Some((_, Value::Bool(b))) => b,
                Some((name, other)) => {
                    return Err(InvalidRequest::new(
                        name,
                        format!("must be true or false, got {}", kind(&other)),
                    ))
                }
            };
            let (limit, cursor) = take_page(&mut f)?;
            f.finish()?;
            if !all && (limit != DEFAULT_PAGE_LIMIT || cursor.is_some()) {
                return Err(InvalidRequest::new("limit", "limit and cursor go with all: true"));
            }
            let target = match (one, many, all) {
                (Some(id), None, false) => RedriveTarget::One(id),
                (None, Some(ids), false) => RedriveTarget::Many(ids),
                (None, None, true) => RedriveTarget::All { limit, cursor },
                (None, None, false) => {
                    return Err(InvalidRequest::new("job_id", "is required (or job_ids, or all: true)"))
                }
                _ => {
                    return Err(InvalidRequest::new(
                        "job_id",
                        "give one of job_id, job_ids or all: true",
                    ))
                }
            };
            Ok(Request::Redrive { queue, target })
        }
        "list_parked" => {
            let mut f = Fields::new(map);
            f.take("action", None)?;
            let queue = take_queue(&mut f, config)?;
            let (limit, cursor) = take_page(&mut f)?;
            f.finish()?;
            Ok(Request::ListParked { queue, limit, cursor })
        }
        "reschedule" => Ok(Request::Reschedule(Box::new(crate::manage::parse_reschedule(
            Fields::new(map),
            config,
            now,
        )?))),
        "list" => Ok(Request::List(Box::new(crate::manage::parse_list(
            Fields::new(map),
            config,
        )?))),
        "cancel_many" => Ok(Request::CancelMany(Box::new(crate::bulk::parse_cancel_many(
            Fields::new(map),
            config,
        )?))),
        "stats" => Ok(Request::Stats(crate::stats::parse_stats(Fields::new(map), config)?)),
        other => Err(InvalidRequest::new(
            "action",
            format!(
                "must be one of enqueue, get, cancel, cancel_many, reschedule, list, stats, list_parked, redrive; got {other:?}"
            ),
        )),
    }
}

/// Parses and validates one job.
pub fn parse_job(value: &Value, config: &Config, now: DateTime<Utc>) -> Result<Job, InvalidRequest> {
    let Value::Object(map) = value else {
        return Err(InvalidRequest::new(
            "job",
            format!("must be a JSON object, got {}", kind(value)),
        ));
    };
    let mut f = Fields::new(map);
    if let Some((name, v)) = f.take("action", None)? {
        if v != Value::String("enqueue".into()) {
            return Err(InvalidRequest::new(name, "must be \"enqueue\" inside a batch"));
        }
    }
    let queue = take_queue(&mut f, config)?;

    let message_body = take_message_body(&mut f)?.ok_or_else(|| InvalidRequest::new("message_body", "is required"))?;
    let message_attributes = take_message_attributes(&mut f)?.unwrap_or_default();
    check_message_size(&message_body, &message_attributes)?;
    let perform_at = take_when(&mut f, now)?.map_or_else(|| time::ceil_to_micros(now).unwrap_or(now), |(_, t)| t);
    let windows = take_windows(&mut f)?.flatten();
    let perform_at = windows.as_ref().map_or(perform_at, |w| w.next_open(perform_at));
    let expires_at = match take_expires_at(&mut f, now)? {
        Some((name, Some(t))) => {
            check_expiry(&name, t, perform_at)?;
            Some(t)
        }
        _ => None,
    };

    let (job_id, job_id_given) = match f.take("job_id", Some("JobId"))? {
        None | Some((_, Value::Null)) => (uuid::Uuid::new_v4().to_string(), false),
        Some((name, v)) => (parse_job_id(&name, &v)?, true),
    };

    let mut message_group_id = take_fifo_id(&mut f, "message_group_id", "MessageGroupId")?;
    let mut message_deduplication_id = take_fifo_id(&mut f, "message_deduplication_id", "MessageDeduplicationId")?;
    f.finish()?;

    if queue.is_fifo() {
        if message_group_id.is_none() {
            return Err(InvalidRequest::new("message_group_id", "is required for a FIFO queue"));
        }
        // A re-sent job is then deduplicated by SQS within its 5-minute window.
        message_deduplication_id.get_or_insert_with(|| job_id.clone());
    } else if message_deduplication_id.is_some() {
        return Err(InvalidRequest::new(
            "message_deduplication_id",
            "is only valid for FIFO queues (names ending .fifo)",
        ));
    }
    // Empty strings were refused above; normalise away nothing else.
    message_group_id = message_group_id.filter(|g| !g.is_empty());
    message_deduplication_id = message_deduplication_id.filter(|d| !d.is_empty());

    Ok(Job {
        queue,
        job_id,
        job_id_given,
        message_body,
        message_attributes,
        perform_at,
        expires_at,
        message_group_id,
        message_deduplication_id,
        windows,
    })
}

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

/// Tracks which keys were read, so that unknown or doubled fields are refused by name.
pub(crate) struct Fields<'a> {
    map: &'a Map<String, Value>,
    used: HashSet<&'a str>,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(map: &'a Map<String, Value>) -> Self {
        Self {
            map,
            used: HashSet::new(),
        }
    }

    /// Takes a field by its snake_case name or its SQS PascalCase alias.
    pub(crate) fn take(
        &mut self,
        name: &'static str,
        alias: Option<&'static str>,
    ) -> Result<Option<(String, Value)>, InvalidRequest> {
        let a = self.map.get_key_value(name);
        let b = alias.and_then(|al| self.map.get_key_value(al));
        match (a, b) {
            (Some((k1, _)), Some((k2, _))) => Err(InvalidRequest::new(name, format!("given twice, as {k1} and {k2}"))),
            (Some((k, v)), None) | (None, Some((k, v))) => {
                self.used.insert(k.as_str());
                Ok(Some((k.clone(), v.clone())))
            }
            (None, None) => Ok(None),
        }
    }

    pub(crate) fn finish(self) -> Result<(), InvalidRequest> {
        match self.map.keys().find(|k| !self.used.contains(k.as_str())) {
            Some(k) => Err(InvalidRequest::new(truncate(k, 64), "is not a known field")),
            None => Ok(()),
        }
    }
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

fn take_fifo_id(f: &mut Fields<'_>, name: &'static str, alias: &'static str) -> Result<Option<String>, InvalidRequest> {
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

fn parse_attributes(field: &str, v: &Value) -> Result<Attributes, InvalidRequest> {
    let Value::Object(map) = v else {
        return Err(InvalidRequest::new(
            field,
            format!("must be an object, got {}", kind(v)),
        ));
    };
    if map.len() > SQS_MAX_MESSAGE_ATTRIBUTES {
        return Err(InvalidRequest::new(
            field,
            format!("at most {SQS_MAX_MESSAGE_ATTRIBUTES} attributes, got {}", map.len()),
        ));
    }
    let mut out = Attributes::new();
    for (name, value) in map {
        let path = format!("{field}.{}", truncate(name, 64));
        check_attribute_name(&path, name)?;
        let Value::Object(attr) = value else {
            return Err(InvalidRequest::new(
                path,
                format!("must be an object, got {}", kind(value)),
            ));
        };
        let mut f = Fields::new(attr);
        let data_type = match f.take("data_type", Some("DataType"))? {
            Some((k, v)) => as_str(&format!("{path}.{k}"), &v)?.to_owned(),
            None => return Err(InvalidRequest::new(format!("{path}.data_type"), "is required")),
        };
        let string_value = f.take("string_value", Some("StringValue"))?;
        let binary_value = f.take("binary_value", Some("BinaryValue"))?;
        f.finish()
            .map_err(|e| InvalidRequest::new(format!("{path}.{}", e.field), e.rule))?;

        let base = check_data_type(&format!("{path}.data_type"), &data_type)?;
        let data = match (base, string_value, binary_value) {
            (_, Some(_), Some(_)) => {
                return Err(InvalidRequest::new(path, "give string_value or binary_value, not both"));
            }
            ("Binary", Some(_), None) => {
                return Err(InvalidRequest::new(
                    format!("{path}.binary_value"),
                    "is required for a Binary attribute (base64)",
                ));
            }
            ("Binary", None, Some((k, v))) => {
                let p = format!("{path}.{k}");
                let s = as_str(&p, &v)?;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(s)
                    .map_err(|_| InvalidRequest::new(p.clone(), "must be standard base64"))?;
                if bytes.is_empty() {
                    return Err(InvalidRequest::new(p, "must not be empty"));
                }
                AttributeData::Binary(bytes)
            }
            (_, None, Some(_)) => {
                return Err(InvalidRequest::new(
                    format!("{path}.string_value"),
                    format!("is required for a {base} attribute"),
                ));
            }
            (_, None, None) => {
                return Err(InvalidRequest::new(
                    format!("{path}.string_value"),
                    format!("is required for a {base} attribute"),
                ));
            }
            (_, Some((k, v)), None) => {
                let p = format!("{path}.{k}");
                let s = as_str(&p, &v)?;
                if s.is_empty() {
                    return Err(InvalidRequest::new(p, "must not be empty"));
                }
                check_sqs_chars(&p, s)?;
                if base == "Number" && !is_sqs_number(s) {
                    return Err(InvalidRequest::new(
                        p,
                        "must be a number with up to 38 significant digits, zero or between 1e-128 and 1e126 in magnitude (e.g. -12.5 or 1e10)",
                    ));
                }
                AttributeData::String(s.to_owned())
            }
        };
        out.insert(name.clone(), MessageAttribute { data_type, data });
    }
    Ok(out)
}

/// SQS attribute names: up to 256 of `[A-Za-z0-9_.-]`, no leading, trailing or doubled `.`, and
/// not starting with the reserved `AWS.` or `Amazon.`.
fn check_attribute_name(path: &str, name: &str) -> Result<(), InvalidRequest> {
    if name.is_empty() || name.chars().count() > SQS_MAX_ATTRIBUTE_NAME_CHARS {
        return Err(InvalidRequest::new(
            path,
            format!("attribute name must be 1 to {SQS_MAX_ATTRIBUTE_NAME_CHARS} characters"),
        ));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    {
        return Err(InvalidRequest::new(
            path,
            "attribute name must contain only A-Z, a-z, 0-9, _, - and .",
        ));
    }
    if name.starts_with('.') || name.ends_with('.') || name.contains("..") {
        return Err(InvalidRequest::new(
            path,
            "attribute name must not start or end with '.' or hold '..'",
        ));
    }
    let lower = name.to_ascii_lowercase();
    if lower.starts_with("aws.") || lower.starts_with("amazon.") {
        return Err(InvalidRequest::new(
            path,
            "attribute names starting with AWS. or Amazon. are reserved",
        ));
    }
    Ok(())
}

/// Returns the base type of `String`, `Number`, `Binary`, optionally with a `.custom` suffix.
fn check_data_type<'a>(path: &str, data_type: &'a str) -> Result<&'a str, InvalidRequest> {
    if data_type.chars().count() > SQS_MAX_ATTRIBUTE_NAME_CHARS {
        return Err(InvalidRequest::new(
            path,
            format!("must be at most {SQS_MAX_ATTRIBUTE_NAME_CHARS} characters"),
        ));
    }
    let (base, custom) = match data_type.split_once('.') {
        Some((b, c)) => (b, Some(c)),
        None => (data_type, None),
    };
    if !matches!(base, "String" | "Number" | "Binary") {
        return Err(InvalidRequest::new(
            path,
            format!(
                "must be String, Number or Binary, optionally with a .suffix; got {:?}",
                truncate(data_type, 64)
            ),
        ));
    }
    if let Some(c) = custom {
        if c.is_empty()
            || !c
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        {
            return Err(InvalidRequest::new(
                path,
                "custom type suffix must be A-Z, a-z, 0-9, _, - or .",
            ));
        }
    }
    Ok(base)
}

/// SQS `Number`: up to 38 significant digits (leading and trailing zeros do not count), and zero
/// or a magnitude from 10⁻¹²⁸ up to (not including) 10¹²⁶.
/// <https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-message-metadata.html>
pub fn is_sqs_number(s: &str) -> bool {
    let t = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (mantissa, exp) = match t.split_once(['e', 'E']) {
        Some((m, e)) => {
            let digits = e.strip_prefix(['-', '+']).unwrap_or(e);
            if digits.is_empty() || digits.len() > 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return false;
            }
            match e.parse::<i64>() {
                Ok(v) => (m, v),
                Err(_) => return false,
            }
        }
        None => (t, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.len() + frac.len() == 0
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return false;
    }
    let all = format!("{int}{frac}");
    let leading = all.len() - all.trim_start_matches('0').len();
    let significant = all.trim_start_matches('0').trim_end_matches('0');
    if significant.is_empty() {
        return true; // zero
    }
    // The value is d.ddd × 10^magnitude.
    let magnitude = int.len() as i64 - 1 - leading as i64 + exp;
    significant.len() <= SQS_NUMBER_MAX_DIGITS
        && (SQS_NUMBER_MIN_EXPONENT..SQS_NUMBER_MAX_EXPONENT).contains(&magnitude)
}

/// SQS allows #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF.
/// <https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html>
pub fn check_sqs_chars(field: &str, s: &str) -> Result<(), InvalidRequest> {
    match s.char_indices().find(|(_, c)| !is_sqs_char(*c)) {
        None => Ok(()),
        Some((i, c)) => Err(InvalidRequest::new(
            field,
            format!(
                "holds character U+{:04X} at byte {i}, which SQS does not allow",
                u32::from(c)
            ),
        )),
    }
}

fn is_sqs_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}')
}

pub(crate) fn as_str<'v>(field: &str, v: &'v Value) -> Result<&'v str, InvalidRequest> {
    v.as_str()
        .ok_or_else(|| InvalidRequest::new(field, format!("must be a string, got {}", kind(v))))
}

pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(crate) fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(max).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cfg() -> Config {
        Config::from_lookup(|k| (k == "WAITER_QUEUES").then(|| "orders,billing.fifo".to_owned())).unwrap()
    }

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-22T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn job(v: Value) -> Result<Job, InvalidRequest> {
        parse_job(&v, &cfg(), now())
    }

    #[test]
    fn every_rule_names_its_field() {
        let big = "x".repeat(SQS_MAX_MESSAGE_BYTES + 1);
        let eleven: Map<String, Value> = (0..11)
            .map(|i| (format!("a{i}"), json!({"data_type": "String", "string_value": "v"})))
            .collect();
        let cases: Vec<(Value, &str)> = vec![
            (json!({"message_body": "x"}), "queue"),
            (json!({"queue": "other", "message_body": "x"}), "queue"),
            (json!({"queue": "../orders", "message_body": "x"}), "queue"),
            (
                json!({"queue_url": "https://sqs.us-east-1.amazonaws.com/1/other", "message_body": "x"}),
                "queue_url",
            ),
            (json!({"QueueUrl": "orders", "message_body": "x"}), "QueueUrl"),
            (
                json!({"queue": "orders", "queue_url": "https://x/orders", "message_body": "x"}),
                "queue",
            ),
            (json!({"queue": 5, "message_body": "x"}), "queue"),
            (json!({"queue": "orders"}), "message_body"),
            (json!({"queue": "orders", "message_body": ""}), "message_body"),
            (json!({"queue": "orders", "message_body": 42}), "message_body"),
            (json!({"queue": "orders", "message_body": big}), "message_body"),
            (json!({"queue": "orders", "message_body": "a\u{0}b"}), "message_body"),
            (json!({"queue": "orders", "message_body": "a\u{FFFE}b"}), "message_body"),
            (
                json!({"queue": "orders", "MessageBody": "x", "message_body": "y"}),
                "message_body",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "delay_seconds": 5, "perform_at": "2026-12-01T00:00:00Z"}),
                "delay_seconds",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "delay_seconds": -1}),
                "delay_seconds",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "delay_seconds": 1.5}),
                "delay_seconds",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "delay_seconds": "10"}),
                "delay_seconds",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "DelaySeconds": u64::MAX}),
                "DelaySeconds",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "perform_at": "next tuesday"}),
                "perform_at",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "perform_at": "10000-01-01T00:00:00Z"}),
                "perform_at",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "perform_at": 1e300}),
                "perform_at",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "perform_at": -5}),
                "perform_at",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "perform_at": true}),
                "perform_at",
            ),
            (json!({"queue": "orders", "message_body": "x", "job_id": ""}), "job_id"),
            (
                json!({"queue": "orders", "message_body": "x", "job_id": "a/b"}),
                "job_id",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "job_id": "x' OR 1=1"}),
                "job_id",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "job_id": "a".repeat(129)}),
                "job_id",
            ),
            (json!({"queue": "orders", "message_body": "x", "job_id": 7}), "job_id"),
            (
                json!({"queue": "orders", "message_body": "x", "expires_at": "2020-01-01T00:00:00Z"}),
                "expires_at",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "delay_seconds": 100, "expires_at": "2026-11-22T10:00:30Z"}),
                "expires_at",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "message_attributes": eleven}),
                "message_attributes",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "message_attributes": []}),
                "message_attributes",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "message_attributes": {"a": {"data_type": "Date", "string_value": "x"}}}),
                "message_attributes.a.data_type",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "message_attributes": {"a": {"string_value": "x"}}}),
                "message_attributes.a.data_type",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "message_attributes": {"a": {"data_type": "Binary", "binary_value": "not base64!"}}}),
                "message_attributes.a.binary_value",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "message_attributes": {"a": {"data_type": "Number", "string_value": "12abc"}}}),
                "message_attributes.a.string_value",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "message_attributes": {"a": {"data_type": "String"}}}),
                "message_attributes.a.string_value",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "message_attributes": {"AWS.trace": {"data_type": "String", "string_value": "x"}}}),
                "message_attributes.AWS.trace",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "message_attributes": {"a": {"data_type": "String", "string_value": "x", "extra": 1}}}),
                "message_attributes.a.extra",
            ),
            (
                json!({"queue": "billing.fifo", "message_body": "x"}),
                "message_group_id",
            ),
            (
                json!({"queue": "orders", "message_body": "x", "message_deduplication_id": "d"}),
                "message_deduplication_id",
            ),
            (
                json!({"queue": "billing.fifo", "message_body": "x", "message_group_id": "a b"}),
                "message_group_id",
            ),
            (json!({"queue": "orders", "message_body": "x", "delay": 5}), "delay"),
        ];
        for (input, field) in cases {
            let err = job(input.clone()).expect_err(&format!("accepted {input}"));
            assert_eq!(err.field, field, "{input} -> {err}");
            assert!(err.to_string().starts_with(&format!("{field}: ")));
        }
    }

    #[test]
    fn sqs_numbers_follow_the_38_digit_and_range_rules() {
        for ok in [
            "0",
            "-0.000",
            "12",
            "-12.5",
            "+1e10",
            ".5",
            "5.",
            "1e-128",
            "9.9999e125",
            "12345678901234567890123456789012345678",
            "0.00012345678901234567890123456789012345678",
            "123456789012345678901234567890123456780000",
            "1000000000000000000000000000000000000000000000000",
        ] {
            assert!(is_sqs_number(ok), "{ok} refused");
        }
        for bad in [
            "",
            "-",
            "1e200",
            "1e126",
            "10e125",
            "1e-129",
            "0.1e-128",
            "123456789012345678901234567890123456789",
            "1.2.3",
            "12abc",
            "1e",
            "1e9999999",
            "NaN",
            "Infinity",
        ] {
            assert!(!is_sqs_number(bad), "{bad} accepted");
        }
    }

    #[test]
    fn requests_and_actions() {
        let c = cfg();
        let n = now();
        assert_eq!(parse_request(&json!([]), &c, n).unwrap_err().field, "request");
        assert_eq!(parse_request(&json!({"jobs": {}}), &c, n).unwrap_err().field, "jobs");
        assert_eq!(parse_request(&json!({"jobs": []}), &c, n).unwrap_err().field, "jobs");
        let many: Vec<Value> = (0..=MAX_JOBS_PER_REQUEST).map(|_| json!({})).collect();
        assert_eq!(parse_request(&json!({"jobs": many}), &c, n).unwrap_err().field, "jobs");
        assert_eq!(
            parse_request(&json!({"jobs": [], "queue": "orders"}), &c, n)
                .unwrap_err()
                .field,
            "queue"
        );
        assert_eq!(
            parse_request(&json!({"action": "explode"}), &c, n).unwrap_err().field,
            "action"
        );
        assert_eq!(
            parse_request(&json!({"action": "get", "queue": "orders"}), &c, n)
                .unwrap_err()
                .field,
            "job_id"
        );
        assert!(matches!(
            parse_request(&json!({"action": "cancel", "queue": "orders", "job_id": "a"}), &c, n).unwrap(),
            Request::Cancel { .. }
        ));
    }

    #[test]
    fn sqs_aliases_times_and_attributes_are_accepted_unaltered() {
        let j = job(json!({
            "QueueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/orders",
            "MessageBody": "{\"order\":42} \u{1F600}\t",
            "DelaySeconds": 30,
            "MessageAttributes": {
                "kind": {"DataType": "String", "StringValue": "invoice"},
                "n": {"DataType": "Number.int", "StringValue": "-1.5e3"},
                "blob": {"DataType": "Binary.gz", "BinaryValue": "AAH/"}
            }
        }))
        .unwrap();
        assert_eq!(j.queue.as_str(), "orders");
        assert_eq!(j.message_body, "{\"order\":42} \u{1F600}\t");
        assert_eq!(j.perform_at, now() + TimeDelta::seconds(30));
        assert_eq!(
            j.message_attributes["blob"].data,
            AttributeData::Binary(vec![0, 1, 255])
        );
        assert_eq!(j.message_attributes["n"].data_type, "Number.int");
        assert!(!j.job_id_given);

        let at = job(json!({"queue": "orders", "message_body": "x", "perform_at": 1796000000.25})).unwrap();
        assert_eq!(crate::time::format_epoch(at.perform_at), "1796000000.25");
        let past = job(json!({"queue": "orders", "message_body": "x", "perform_at": "2001-01-01T00:00:00Z"})).unwrap();
        assert_eq!(past.perform_at, now(), "a past time means now");
        let fifo =
            job(json!({"queue": "billing.fifo", "message_body": "x", "message_group_id": "g", "job_id": "k"})).unwrap();
        assert_eq!(fifo.message_deduplication_id.as_deref(), Some("k"));
    }
}
