//! The requests that steer the schedule, validated into their domain form: `pause`, `resume`
//! and `queues`.

use super::decode::Decoded;
use super::field_rules::{check_job_id, check_queue};
use super::normalise::Given;
use crate::config::QueueName;
use crate::error::InvalidRequest;
use crate::job::OnDuplicate;

/// `on_duplicate` of an `enqueue`: `replace` and `extend` name a job by its id, and `extend`
/// moves a one-off job only (a series' times are its schedule). A one-off job's own
/// `message_deduplication_id` does not go with them: a new life of the id, after the last one
/// was sent, would carry the same id, and SQS drops a FIFO message whose deduplication id it
/// accepted within the last 5 minutes (the poller would then record it as dispatched). Without
/// one, each life has its own (`ports::default_deduplication_id`); a series mixes each
/// occurrence into a given one.
pub(crate) fn check_on_duplicate(
    given: &Given,
    on_duplicate: Option<OnDuplicate>,
    job_id_given: bool,
    series: bool,
    deduplication_id_given: bool,
) -> Result<OnDuplicate, InvalidRequest> {
    let field = || given.name("on_duplicate");
    match on_duplicate.unwrap_or_default() {
        OnDuplicate::Keep => Ok(OnDuplicate::Keep),
        _ if !job_id_given => Err(InvalidRequest::new(
            field(),
            "needs job_id: the id names the job a later call replaces or extends",
        )),
        OnDuplicate::Extend if series => Err(InvalidRequest::new(
            field(),
            "extend does not go with repeat: a series' times are its schedule; use replace",
        )),
        _ if deduplication_id_given && !series => Err(InvalidRequest::new(
            given.name("message_deduplication_id"),
            "does not go with on_duplicate replace or extend: SQS would drop the new message when \
             the last one under this id went out within its 5-minute deduplication interval; leave \
             it out and each life of the job gets its own",
        )),
        other => Ok(other),
    }
}

/// What `pause` or `resume` names: a whole queue, or one job or series of it.
#[derive(Debug, Clone, PartialEq)]
pub struct PauseTarget {
    pub queue: QueueName,
    pub job_id: Option<String>,
}

macro_rules! pause_target_from {
    ($contract:ty) => {
        impl TryFrom<Decoded<'_, $contract>> for PauseTarget {
            type Error = InvalidRequest;

            fn try_from(d: Decoded<'_, $contract>) -> Result<Self, InvalidRequest> {
                let r = d.request;
                Ok(Self {
                    queue: check_queue(&d.given, &r.queue, d.config)?,
                    job_id: r
                        .job_id
                        .map(|id| check_job_id(&d.given.name("job_id"), id))
                        .transpose()?,
                })
            }
        }
    };
}

pause_target_from!(sqs_waiter_contract::Pause);
pause_target_from!(sqs_waiter_contract::Resume);

/// `queues` takes no field but `action`.
pub struct QueuesQuery;

impl TryFrom<Decoded<'_, sqs_waiter_contract::Queues>> for QueuesQuery {
    type Error = InvalidRequest;

    fn try_from(_: Decoded<'_, sqs_waiter_contract::Queues>) -> Result<Self, InvalidRequest> {
        Ok(Self)
    }
}

/// `preview`: a schedule as `enqueue` takes it, or a stored series.
#[derive(Debug)]
pub enum PreviewQuery {
    Schedule {
        series: Box<crate::repeat::Series>,
        first: chrono::DateTime<chrono::Utc>,
        zone: chrono_tz::Tz,
        count: usize,
    },
    Stored {
        queue: QueueName,
        job_id: String,
        count: usize,
    },
}

impl TryFrom<Decoded<'_, sqs_waiter_contract::Preview>> for PreviewQuery {
    type Error = InvalidRequest;

    fn try_from(d: Decoded<'_, sqs_waiter_contract::Preview>) -> Result<Self, InvalidRequest> {
        use crate::repeat::{DEFAULT_PREVIEW, MAX_PREVIEW};
        let r = d.request;
        let count = match r.count {
            None => DEFAULT_PREVIEW,
            Some(n) if (1..=MAX_PREVIEW as u64).contains(&n) => n as usize,
            Some(n) => {
                return Err(InvalidRequest::new(
                    d.given.name("count"),
                    format!("must be 1 to {MAX_PREVIEW}, got {n}"),
                ))
            }
        };
        match (r.repeat, r.queue, r.job_id) {
            (Some(repeat), None, None) => {
                let start = r.from.unwrap_or(d.now);
                let (series, first) =
                    super::repeat_rules::check_repeat(&d.given, repeat, r.time_zone.as_deref(), start)?;
                let zone = crate::windows::zone_named(d.given.name("time_zone"), r.time_zone.as_deref())?;
                Ok(Self::Schedule {
                    series: Box::new(series),
                    first,
                    zone,
                    count,
                })
            }
            (None, Some(queue), Some(job_id)) => {
                if let Some(field) = [("time_zone", r.time_zone.is_some()), ("from", r.from.is_some())]
                    .into_iter()
                    .find_map(|(f, given)| given.then_some(f))
                {
                    return Err(InvalidRequest::new(
                        d.given.name(field),
                        "goes with repeat; a stored series previews from its next occurrence in its own zone",
                    ));
                }
                Ok(Self::Stored {
                    queue: check_queue(&d.given, &queue, d.config)?,
                    job_id: check_job_id(&d.given.name("job_id"), job_id)?,
                    count,
                })
            }
            (None, None, Some(_)) => Err(InvalidRequest::new("queue", "is required with job_id")),
            (None, Some(_), None) => Err(InvalidRequest::new("job_id", "is required with queue")),
            _ => Err(InvalidRequest::new(
                "repeat",
                "give a repeat to preview, or the queue and job_id of a stored series; not both",
            )),
        }
    }
}
