//! `replay`: a copy of a job that has left the table, sent from what history kept of its message.

use crate::error::{HandlerError, InvalidRequest};
use crate::job::{number_in, without_reserved, Job, MAX_JOB_ID_CHARS};
use crate::ports::{Clock, Found, JobStore, MessageQueue, Partition};
use crate::wire::actions::Replay;
use crate::wire::field_rules::COPY_MARK;
use crate::wire::reply::status_only;

use super::*;
use sqs_waiter_contract::{
    JobReply, JobStatus, DEFAULT_PRIORITY, DEFAULT_WEIGHT, PRIORITY_ATTRIBUTE, WEIGHT_ATTRIBUTE,
};

/// The copy's id when none is given, `{job_id}~{version}` (DESIGN's): the same replay twice is
/// then a duplicate, not a second copy, and `~`, which a caller's own id may not hold, keeps it
/// apart from every id a caller can enqueue.
fn default_replay_id(job_id: &str, version: u64) -> String {
    format!("{job_id}{}{version}", char::from(COPY_MARK))
}

impl<S: JobStore + Clone, Q: MessageQueue + Clone, C: Clock + Clone> Waiter<S, Q, C> {
    pub(super) async fn replay(&self, r: Replay, cut: chrono::DateTime<chrono::Utc>) -> Result<JobReply, HandlerError> {
        let now = self.clock.now();
        let mut partitions = self.candidate_partitions(&r.queue, &r.job_id).await?;
        partitions.push(Partition::Parked);
        let record = match self.existing(&r.queue, &r.job_id, &partitions, now).await? {
            // Still stored (or parked): nothing has left the table to be replayed.
            Some(Found::Job(_)) => return Ok(status_only(JobStatus::Conflict, &r.queue, &r.job_id)),
            Some(Found::History(h)) => h,
            None => return Ok(status_only(JobStatus::NotReplayable, &r.queue, &r.job_id)),
        };
        let Some(kept) = record.message else {
            return Ok(status_only(JobStatus::NotReplayable, &r.queue, &r.job_id));
        };
        let new_job_id = match r.new_job_id {
            Some(id) => id,
            None => {
                let id = default_replay_id(&r.job_id, record.version);
                if id.chars().count() > MAX_JOB_ID_CHARS {
                    return Err(InvalidRequest::new(
                        "new_job_id",
                        format!("is required here: the default, {id}, is longer than {MAX_JOB_ID_CHARS} characters"),
                    )
                    .into());
                }
                id
            }
        };
        // The message as sent: the job's priority and weight travel in it; ours are put back
        // for the copy at its send.
        let priority = number_in(&kept.attributes, PRIORITY_ATTRIBUTE).unwrap_or(DEFAULT_PRIORITY);
        let weight = number_in(&kept.attributes, WEIGHT_ATTRIBUTE).unwrap_or(DEFAULT_WEIGHT);
        let copy = Job {
            on_duplicate: Default::default(),
            queue: r.queue,
            job_id: new_job_id,
            job_id_given: true,
            message_body: kept.body,
            message_attributes: without_reserved(kept.attributes),
            perform_at: r
                .perform_at
                .unwrap_or_else(|| crate::time::ceil_to_micros(now).unwrap_or(now)),
            expires_at: None,
            message_group_id: kept.group_id,
            message_deduplication_id: None,
            windows: None,
            priority,
            weight,
            // A new job, whose consumer retries it under its own id: its messages say which.
            attempt: 1,
            names_itself: true,
            trace_header: r.trace_header,
            repeat: None,
            occurrence: None,
            // The copy is found as its job was (a `cancel_many` by tag reaches it too).
            tags: record.tags,
        };
        // Always stored, never sent straight: the conditional put is what makes a second
        // `replay` a duplicate, whatever the history settings. A near copy is handed over at once.
        let reply = self.store_and_hand_over(copy, cut).await?;
        tracing::info!(queue = %reply.queue, job_id = %reply.job_id, replay_of = %r.job_id, status = %reply.status, "replayed");
        Ok(JobReply {
            replay_of: Some(r.job_id),
            ..reply
        })
    }
}
