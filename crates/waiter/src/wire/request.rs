//! Caller requests: the invocation payload, the action it names, and each request decoded into
//! its contract type (`decode`) and validated into the domain's form (`TryFrom<Decoded<_>>`).
//!
//! What stays by hand is what serde cannot say: the dispatch on `action` (which defaults to
//! `enqueue`, with `jobs` for a batch whose jobs fail one by one), the aliases and times
//! (`normalise`), and the rules across fields and SQS's own rules (`field_rules`, `sqs_rules`).

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use sqs_waiter_contract::{
    Action, Cancel, CancelMany as CancelManyRequest, Get, Job as JobRequest, List as ListRequest, ListParked, Pause,
    Preview as PreviewRequest, Queues, Redrive as RedriveOne, RedriveRequest, Replay as ReplayRequest,
    Reschedule as RescheduleRequest, Resume, Retry as RetryRequest, Stats as StatsRequest, Trigger as TriggerRequest,
};

use super::decode::Decoded;
use super::normalise::kind;
use super::repeat_rules::{check_repeat, check_schedule, split_zone, start_in_windows};
use super::steer::check_on_duplicate;
use crate::config::{Config, QueueName};
use crate::error::InvalidRequest;
use crate::job::{without_reserved, Job, MAX_JOBS_PER_REQUEST};
use crate::time;
use crate::wire::field_rules::{
    check_attributes, check_expires_at, check_expiry, check_fifo_id, check_job_id, check_job_ids, check_limit,
    check_message, check_message_body, check_new_job_id, check_priority, check_queue, check_tags, check_trace_header,
    check_weight, check_windows, when, DEFAULT_PAGE_LIMIT,
};
use sqs_waiter_contract::{DEFAULT_PRIORITY, DEFAULT_WEIGHT};

/// The field that names a request's action.
const ACTION: &str = "action";
/// The field of a batch's jobs (`EnqueueMany`), each decoded on its own.
const JOBS: &str = "jobs";

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
    Reschedule(Box<super::actions::Reschedule>),
    List(Box<super::actions::ListQuery>),
    CancelMany(Box<super::actions::CancelMany>),
    Stats(super::actions::StatsQuery),
    Replay(Box<super::actions::Replay>),
    Retry(Box<super::retry::Retry>),
    Pause(super::steer::PauseTarget),
    Trigger {
        queue: QueueName,
        job_id: String,
    },
    Resume(super::steer::PauseTarget),
    Queues,
    Preview(super::steer::PreviewQuery),
}

impl Request {
    /// The request with the invocation's trace (`trace::kept_from_invocation`) on what it
    /// creates: a job without a caller's `trace_header`, a retry's next attempt, a replayed copy.
    pub fn traced(self, invocation: Option<&str>) -> Self {
        let Some(trace) = crate::trace::kept_from_invocation(invocation) else {
            return self;
        };
        let on_job = |job: Result<Job, InvalidRequest>| {
            job.map(|mut j| {
                j.trace_header.get_or_insert_with(|| trace.clone());
                j
            })
        };
        match self {
            Request::Enqueue(job) => Request::Enqueue(Box::new(on_job(*job))),
            Request::Batch(jobs) => Request::Batch(jobs.into_iter().map(on_job).collect()),
            Request::Retry(mut r) => {
                r.trace_header = Some(trace);
                Request::Retry(r)
            }
            Request::Replay(mut r) => {
                r.trace_header = Some(trace);
                Request::Replay(r)
            }
            other => other,
        }
    }
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

/// Decodes and validates one request object into `D`.
fn read<T: DeserializeOwned, D>(
    object: Map<String, Value>,
    config: &Config,
    now: DateTime<Utc>,
) -> Result<D, InvalidRequest>
where
    D: for<'a> TryFrom<Decoded<'a, T>, Error = InvalidRequest>,
{
    D::try_from(Decoded::read(object, config, now)?)
}

/// Parses any invocation payload. An `Err` is a refusal of the whole request; inside a batch each
/// job carries its own result so that one bad job never blocks the others.
pub fn parse_request(event: &Value, config: &Config, now: DateTime<Utc>) -> Result<Request, InvalidRequest> {
    let Value::Object(map) = event else {
        return Err(InvalidRequest::new(
            "request",
            format!("must be a JSON object, got {}", kind(event)),
        ));
    };
    let action = match map.get(ACTION) {
        None => JobRequest::NAME,
        Some(Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(InvalidRequest::new(
                ACTION,
                format!("must be a string, got {}", kind(other)),
            ))
        }
    };
    if action == JobRequest::NAME {
        return match map.get(JOBS) {
            Some(jobs) => parse_batch(map, jobs, config, now),
            None => Ok(Request::Enqueue(Box::new(parse_job(event, config, now)))),
        };
    }
    let mut object = map.clone();
    object.remove(ACTION);
    match action {
        a if a == Get::NAME => {
            let (queue, job_id) = read::<Get, JobRef>(object, config, now)?.into();
            Ok(Request::Get { queue, job_id })
        }
        a if a == Cancel::NAME => {
            let (queue, job_id) = read::<Cancel, JobRef>(object, config, now)?.into();
            Ok(Request::Cancel { queue, job_id })
        }
        a if a == RedriveOne::NAME => {
            let Redrive { queue, target } = read::<RedriveRequest, _>(object, config, now)?;
            Ok(Request::Redrive { queue, target })
        }
        a if a == ListParked::NAME => {
            let d: Decoded<'_, ListParked> = Decoded::read(object, config, now)?;
            Ok(Request::ListParked {
                queue: check_queue(&d.given, &d.request.queue, config)?,
                limit: check_limit(d.request.limit)?,
                cursor: d.request.cursor,
            })
        }
        a if a == RescheduleRequest::NAME => {
            read::<RescheduleRequest, _>(object, config, now).map(|r| Request::Reschedule(Box::new(r)))
        }
        a if a == ListRequest::NAME => read::<ListRequest, _>(object, config, now).map(|q| Request::List(Box::new(q))),
        a if a == CancelManyRequest::NAME => {
            read::<CancelManyRequest, _>(object, config, now).map(|r| Request::CancelMany(Box::new(r)))
        }
        a if a == StatsRequest::NAME => read::<StatsRequest, _>(object, config, now).map(Request::Stats),
        a if a == ReplayRequest::NAME => {
            read::<ReplayRequest, _>(object, config, now).map(|r| Request::Replay(Box::new(r)))
        }
        a if a == RetryRequest::NAME => read::<RetryRequest, _>(object, config, now).map(|r| Request::Retry(Box::new(r))),
        a if a == Pause::NAME => read::<Pause, _>(object, config, now).map(Request::Pause),
        a if a == TriggerRequest::NAME => {
            let (queue, job_id) = read::<TriggerRequest, JobRef>(object, config, now)?.into();
            Ok(Request::Trigger { queue, job_id })
        }
        a if a == Resume::NAME => read::<Resume, _>(object, config, now).map(Request::Resume),
        a if a == PreviewRequest::NAME => read::<PreviewRequest, _>(object, config, now).map(Request::Preview),
        a if a == Queues::NAME => read::<Queues, super::steer::QueuesQuery>(object, config, now).map(|_| Request::Queues),
        other => Err(InvalidRequest::new(
            ACTION,
            format!(
                "must be one of enqueue, get, cancel, cancel_many, reschedule, list, stats, list_parked, redrive, replay, retry, pause, resume, queues, trigger, preview; got {other:?}"
            ),
        )),
    }
}

/// `{"jobs": [...]}`: up to `MAX_JOBS_PER_REQUEST` jobs, each parsed on its own.
fn parse_batch(
    object: &Map<String, Value>,
    jobs: &Value,
    config: &Config,
    now: DateTime<Utc>,
) -> Result<Request, InvalidRequest> {
    if let Some(extra) = object.keys().find(|k| k.as_str() != JOBS && k.as_str() != ACTION) {
        return Err(InvalidRequest::new(
            extra.clone(),
            "is not allowed beside \"jobs\": put it inside each job",
        ));
    }
    let Value::Array(items) = jobs else {
        return Err(InvalidRequest::new(
            JOBS,
            format!("must be an array, got {}", kind(jobs)),
        ));
    };
    if items.is_empty() {
        return Err(InvalidRequest::new(JOBS, "must hold at least one job"));
    }
    if items.len() > MAX_JOBS_PER_REQUEST {
        return Err(InvalidRequest::new(
            JOBS,
            format!("must hold at most {MAX_JOBS_PER_REQUEST} jobs, got {}", items.len()),
        ));
    }
    Ok(Request::Batch(
        items.iter().map(|j| parse_job(j, config, now)).collect(),
    ))
}

/// Parses and validates one job.
pub fn parse_job(value: &Value, config: &Config, now: DateTime<Utc>) -> Result<Job, InvalidRequest> {
    let Value::Object(map) = value else {
        return Err(InvalidRequest::new(
            "job",
            format!("must be a JSON object, got {}", kind(value)),
        ));
    };
    let mut object = map.clone();
    if let Some(v) = object.remove(ACTION) {
        if v != Value::String(JobRequest::NAME.into()) {
            return Err(InvalidRequest::new(ACTION, "must be \"enqueue\" inside a batch"));
        }
    }
    read::<JobRequest, Job>(object, config, now)
}

impl TryFrom<Decoded<'_, JobRequest>> for Job {
    type Error = InvalidRequest;

    fn try_from(d: Decoded<'_, JobRequest>) -> Result<Self, InvalidRequest> {
        let (j, given, now) = (d.request, d.given, d.now);
        let queue = check_queue(&given, &j.queue, d.config)?;
        let message_body = check_message_body(&given, j.message_body)?;
        // Checked as given, then ours replace any `waiter.*` ones.
        let message_attributes = without_reserved(check_attributes(&given, j.message_attributes)?);
        let priority = check_priority(&given, j.priority, DEFAULT_PRIORITY)?;
        let weight = check_weight(&given, j.weight, DEFAULT_WEIGHT)?;
        let timed = j.delay_seconds.is_some() || j.perform_at.is_some();
        let perform_at = match &j.schedule {
            Some(at) => check_schedule(&given, at, timed, j.repeat.is_some(), j.time_zone.as_deref(), now)?,
            None => when(&given, j.delay_seconds, j.perform_at, now)?
                .unwrap_or_else(|| time::ceil_to_micros(now).unwrap_or(now)),
        };
        // `time_zone` is the windows' and a series' cron's (one zone for both), and `schedule`'s.
        let (windows_zone, repeat_zone) = split_zone(j.repeat.is_some(), j.windows.is_some(), j.time_zone);
        let windows_zone = windows_zone.filter(|_| j.schedule.is_none() || j.windows.is_some());
        if j.repeat.is_some() && j.expires_at.is_some() {
            return Err(InvalidRequest::new(
                given.name("expires_at"),
                "does not go with repeat: end a series with repeat.until",
            ));
        }
        let windows = check_windows(j.windows.map(Some), windows_zone)?.flatten();
        let (repeat, perform_at) = match j.repeat {
            None => (None, windows.as_ref().map_or(perform_at, |w| w.next_open(perform_at))),
            Some(r) => {
                // A start in the past stays where it is: its occurrences since are missed ones.
                let start = j.perform_at.and_then(time::ceil_to_micros).unwrap_or(perform_at);
                let (mut series, first) = check_repeat(&given, r, repeat_zone.as_deref(), start)?;
                // Outside the windows, the first occurrence waits for the next opening.
                let at = start_in_windows(&mut series, first, windows.as_ref());
                (Some(Box::new(series)), at)
            }
        };
        let expires_at = match j.expires_at {
            Some(t) => {
                let t = check_expires_at(&given, t, now)?;
                check_expiry(&given.name("expires_at"), t, perform_at)?;
                Some(t)
            }
            None => None,
        };
        let (job_id, job_id_given) = match j.job_id {
            None => (uuid::Uuid::new_v4().to_string(), false),
            Some(id) => (check_new_job_id(&given.name("job_id"), id)?, true),
        };
        let fifo_id = |field: &str, id: Option<String>| id.map(|id| check_fifo_id(&given.name(field), id)).transpose();
        let message_group_id = fifo_id("message_group_id", j.message_group_id)?;
        let message_deduplication_id = fifo_id("message_deduplication_id", j.message_deduplication_id)?;
        if queue.is_fifo() {
            if message_group_id.is_none() {
                return Err(InvalidRequest::new("message_group_id", "is required for a FIFO queue"));
            }
        } else if message_deduplication_id.is_some() {
            return Err(InvalidRequest::new(
                "message_deduplication_id",
                "is only valid for FIFO queues (names ending .fifo)",
            ));
        }
        let on_duplicate = check_on_duplicate(
            &given,
            j.on_duplicate,
            job_id_given,
            repeat.is_some(),
            message_deduplication_id.is_some(),
        )?;
        let job = Job {
            on_duplicate,
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
            priority,
            weight,
            attempt: 1,
            names_itself: false,
            trace_header: j.trace_header.map(|t| check_trace_header(&given, t)).transpose()?,
            repeat,
            occurrence: None,
            tags: check_tags(&given, j.tags, false)?,
        };
        check_message(&given, &job)?;
        Ok(job)
    }
}

/// A queue and a job id: what `get` and `cancel` name.
struct JobRef {
    queue: QueueName,
    job_id: String,
}

impl From<JobRef> for (QueueName, String) {
    fn from(r: JobRef) -> Self {
        (r.queue, r.job_id)
    }
}

/// The requests that name one job.
trait NamesJob {
    fn into_parts(self) -> (String, String);
}

impl NamesJob for Get {
    fn into_parts(self) -> (String, String) {
        (self.queue, self.job_id)
    }
}

impl NamesJob for TriggerRequest {
    fn into_parts(self) -> (String, String) {
        (self.queue, self.job_id)
    }
}

impl NamesJob for Cancel {
    fn into_parts(self) -> (String, String) {
        (self.queue, self.job_id)
    }
}

impl<T: NamesJob> TryFrom<Decoded<'_, T>> for JobRef {
    type Error = InvalidRequest;

    fn try_from(d: Decoded<'_, T>) -> Result<Self, InvalidRequest> {
        let (queue, job_id) = d.request.into_parts();
        Ok(Self {
            queue: check_queue(&d.given, &queue, d.config)?,
            job_id: check_job_id(&d.given.name("job_id"), job_id)?,
        })
    }
}

/// `redrive`: a queue and which parked jobs.
struct Redrive {
    queue: QueueName,
    target: RedriveTarget,
}

impl TryFrom<Decoded<'_, RedriveRequest>> for Redrive {
    type Error = InvalidRequest;

    fn try_from(d: Decoded<'_, RedriveRequest>) -> Result<Self, InvalidRequest> {
        let r = d.request;
        let queue = check_queue(&d.given, &r.queue, d.config)?;
        let all = r.all.unwrap_or(false);
        let limit = check_limit(r.limit)?;
        if !all && (limit != DEFAULT_PAGE_LIMIT || r.cursor.is_some()) {
            return Err(InvalidRequest::new("limit", "limit and cursor go with all: true"));
        }
        let target = match (r.job_id, r.job_ids, all) {
            (Some(id), None, false) => RedriveTarget::One(check_job_id(&d.given.name("job_id"), id)?),
            (None, Some(ids), false) => RedriveTarget::Many(check_job_ids(ids)?),
            (None, None, true) => RedriveTarget::All {
                limit,
                cursor: r.cursor,
            },
            (None, None, false) => return Err(InvalidRequest::new("job_id", "is required (or job_ids, or all: true)")),
            _ => {
                return Err(InvalidRequest::new(
                    "job_id",
                    "give one of job_id, job_ids or all: true",
                ))
            }
        };
        Ok(Self { queue, target })
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
