//! What a parsed request touches, for the rights of the alias it came through
//! (`crate::rights`): its action's wire name and its queue.

use super::actions::CancelMany;
use super::request::Request;
use super::steer::PreviewQuery;
use crate::config::QueueName;

impl Request {
    /// The contract action's wire name (`enqueue` for one job and for a batch).
    pub fn action(&self) -> &'static str {
        match self {
            Request::Enqueue(_) | Request::Batch(_) => "enqueue",
            Request::Get { .. } => "get",
            Request::Cancel { .. } => "cancel",
            Request::ListParked { .. } => "list_parked",
            Request::Redrive { .. } => "redrive",
            Request::Reschedule(_) => "reschedule",
            Request::List(_) => "list",
            Request::CancelMany(_) => "cancel_many",
            Request::Stats(_) => "stats",
            Request::Replay(_) => "replay",
            Request::Retry(_) => "retry",
            Request::Pause(_) => "pause",
            Request::Trigger { .. } => "trigger",
            Request::Resume(_) => "resume",
            Request::Queues => "queues",
            Request::Preview(_) => "preview",
        }
    }

    /// The one queue the request acts on: `None` for a batch (each job names its own), for
    /// `queues` (every one) and for a preview of a rule (none).
    pub fn queue(&self) -> Option<&QueueName> {
        match self {
            Request::Enqueue(job) => job.as_ref().as_ref().ok().map(|j| &j.queue),
            Request::Batch(_) | Request::Queues => None,
            Request::Get { queue, .. }
            | Request::Cancel { queue, .. }
            | Request::ListParked { queue, .. }
            | Request::Redrive { queue, .. }
            | Request::Trigger { queue, .. } => Some(queue),
            Request::Reschedule(r) => Some(&r.queue),
            Request::List(q) => Some(&q.queue),
            Request::CancelMany(c) => Some(match c.as_ref() {
                CancelMany::Ids { queue, .. } => queue,
                CancelMany::Selected(q) => &q.queue,
            }),
            Request::Stats(q) => Some(&q.queue),
            Request::Replay(r) => Some(&r.queue),
            Request::Retry(r) => Some(&r.queue),
            Request::Pause(t) | Request::Resume(t) => Some(&t.queue),
            Request::Preview(PreviewQuery::Stored { queue, .. }) => Some(queue),
            Request::Preview(PreviewQuery::Schedule { .. }) => None,
        }
    }
}
