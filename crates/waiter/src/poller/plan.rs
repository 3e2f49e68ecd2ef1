//! Planning, without I/O: when each job is sent, and which jobs share a batch.

use std::collections::VecDeque;

use chrono::{DateTime, TimeDelta, Utc};

use super::*;
use crate::job::SEND_ALLOWANCE;
use crate::limits::{SQS_MAX_BATCH_ENTRIES, SQS_MAX_MESSAGE_BYTES};
use crate::ports::StoredJob;
use crate::routing::{aligned_send_instant, delay_for};

pub(super) enum Plan {
    Send(Box<Planned>),
    Expired(Box<StoredJob>),
    /// Outside its windows when it would arrive: due again at the next opening.
    Move {
        current: Box<StoredJob>,
        next: Box<StoredJob>,
    },
    /// Not sendable in this run (it would have to wait past the stop margin).
    NotYet,
}

/// When to send a job. Standard queues: the instant at which the time left is a whole number of
/// seconds (within the next second), or now if overdue. FIFO: when it is due.
/// `inherited`: the horizon of a lease taken over from a run that left it unsettled.
pub(super) fn plan(
    job: StoredJob,
    fifo: bool,
    now: DateTime<Utc>,
    stop_at: DateTime<Utc>,
    inherited: Option<DateTime<Utc>>,
) -> Plan {
    let perform_at = job.job.perform_at;
    let send_at = if fifo {
        perform_at.max(now)
    } else {
        aligned_send_instant(perform_at, now)
    };
    let arrival = send_at.max(perform_at);
    if let Some(w) = job
        .job
        .windows
        .as_ref()
        .filter(|_| job.job.outside_windows_in_flight(arrival))
    {
        let mut next = job.clone();
        // Past the allowance: an arrival just before the close moves to the next opening.
        next.job.perform_at = w.next_open(arrival + SEND_ALLOWANCE);
        next.version += 1;
        // The run that left the lease may have sent it, to arrive when it was due. Re-sending
        // now would arrive outside the windows whenever that send had not reached SQS, so it
        // moves, and says it may have been delivered already.
        if inherited.is_some_and(|h| perform_at <= h) {
            next.maybe_delivered_at = job.maybe_delivered_at.or(Some(perform_at));
        }
        if next.job.arrives_expired(next.job.perform_at) {
            return Plan::Expired(Box::new(job));
        }
        return Plan::Move {
            current: Box::new(job),
            next: Box::new(next),
        };
    }
    if job.job.arrives_expired(arrival) {
        return Plan::Expired(Box::new(job));
    }
    if send_at >= stop_at {
        return Plan::NotYet;
    }
    let bytes = job.job.message_bytes();
    Plan::Send(Box::new(Planned {
        send_at,
        job,
        bytes,
        arrive_in: None,
    }))
}

/// FIFO queues take no per-message delay.
pub(super) fn delay_at(job: &StoredJob, fifo: bool, sent_at: DateTime<Utc>) -> Option<u32> {
    (!fifo).then(|| delay_for(job.job.perform_at, sent_at))
}

/// The one batching rule: from the front of `pending` (sorted by send instant), the jobs whose
/// instants lie within `window` of the first, up to 10 entries and 1 MiB in all. Returns how
/// many the next batch takes.
pub fn batch_len(pending: &VecDeque<Planned>, window: TimeDelta) -> usize {
    let mut bytes = 0usize;
    let mut n = 0;
    for p in pending {
        let fits = n < SQS_MAX_BATCH_ENTRIES
            && bytes + p.bytes <= SQS_MAX_MESSAGE_BYTES
            && pending.front().is_none_or(|f| p.send_at - f.send_at <= window);
        if !fits && n > 0 {
            break;
        }
        bytes += p.bytes;
        n += 1;
    }
    n
}

/// Takes the next batch off the front of `pending` (see `batch_len`).
pub fn next_batch(pending: &mut VecDeque<Planned>, window: TimeDelta) -> Vec<Planned> {
    let n = batch_len(pending, window);
    pending.drain(..n).collect()
}
