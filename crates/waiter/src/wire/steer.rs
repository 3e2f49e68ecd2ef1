//! The requests that steer the schedule, validated into their domain form: `pause`, `resume`
//! and `queues`.

use super::decode::Decoded;
use super::field_rules::{check_job_id, check_queue};
use super::normalise::Given;
use crate::config::QueueName;
use crate::error::InvalidRequest;
use crate::job::OnDuplicate;

/// `on_duplicate` of an `enqueue`: `replace` and `extend` name a job by its id, and `extend`
/// moves a one-off job only (a series' times are its schedule).
pub(crate) fn check_on_duplicate(
    given: &Given,
    on_duplicate: Option<OnDuplicate>,
    job_id_given: bool,
    series: bool,
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
