//! The requests that steer the schedule, validated into their domain form: `pause`, `resume`
//! and `queues`.

use super::decode::Decoded;
use super::field_rules::{check_job_id, check_queue};
use crate::config::QueueName;
use crate::error::InvalidRequest;

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
