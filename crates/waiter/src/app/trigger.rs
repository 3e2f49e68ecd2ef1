//! `trigger`: run a stored job now (DESIGN "Run now"). A one-off job is moved to now (out of its
//! windows) by `reschedule`'s conditional write, then its shard is worked as a poller run
//! works it, so the send keeps every guarantee a run's has (the lease, the pause check, the
//! removal after SQS accepted). A series stores one extra occurrence, due now, as a job of its
//! own under `{job_id}@{epoch of now}` (as a parked occurrence is), and sends it the same way.

use chrono::{DateTime, Utc};

use crate::config::QueueName;
use crate::error::{HandlerError, PortError};
use crate::job::Job;
use crate::poller::Dispatcher;
use crate::ports::{Clock, JobStore, MessageQueue, Partition, ReplaceOutcome, StoredJob};
use crate::repeat::Occurrence;
use crate::wire::reply::{reply_for_job, status_only};
use sqs_waiter_contract::{JobReply, JobStatus};

use super::handover::HANDOVER_BUDGET;
use super::Waiter;

/// Attempts at moving a job that changes between its read and its write.
const TRIGGER_ATTEMPTS: usize = 5;

/// The series' occurrence at `now`, as a job of its own due now.
fn extra_occurrence(series: &Job, now: DateTime<Utc>) -> Option<Job> {
    let at = crate::time::ceil_to_micros(now).unwrap_or(now);
    let mut job = Job {
        occurrence: Some(Occurrence {
            at,
            next: None,
            from: at,
            skipped: 0,
        }),
        ..series.clone()
    }
    .occurrence_as_job()?;
    job.perform_at = at;
    job.windows = None;
    // Its own id makes its deduplication id, apart from the series' occurrences'.
    job.message_deduplication_id = None;
    Some(job)
}

impl<S: JobStore + Clone, Q: MessageQueue + Clone, C: Clock + Clone> Waiter<S, Q, C> {
    pub(super) async fn trigger(
        &self,
        queue: &QueueName,
        job_id: &str,
        cut: DateTime<Utc>,
    ) -> Result<JobReply, HandlerError> {
        if self.store.queue_paused(queue).await?.is_some() {
            return Ok(status_only(JobStatus::Paused, queue, job_id));
        }
        let partitions = self.candidate_partitions(queue, job_id).await?;
        for _ in 0..TRIGGER_ATTEMPTS {
            let Some(current) = self.store.find(queue, job_id, &partitions).await? else {
                return Ok(status_only(JobStatus::NotFound, queue, job_id));
            };
            if current.paused_at.is_some() {
                return Ok(status_only(JobStatus::Paused, queue, job_id));
            }
            let now = self.clock.now();
            let due = if current.job.repeat.is_some() {
                let Some(job) = extra_occurrence(&current.job, now) else {
                    return Ok(status_only(JobStatus::NotFound, queue, job_id));
                };
                match self.store_new(job, now).await? {
                    (_, Some(stored)) => stored,
                    // An extra occurrence of this very second is stored already: send that.
                    (_, None) => continue,
                }
            } else {
                let next = StoredJob {
                    job: Job {
                        perform_at: now,
                        windows: None,
                        ..current.job.clone()
                    },
                    version: current.version + 1,
                    ..current.clone()
                };
                match self.store.replace(&current, &next).await? {
                    ReplaceOutcome::Replaced => next,
                    ReplaceOutcome::Dispatching => return Ok(status_only(JobStatus::Dispatching, queue, job_id)),
                    ReplaceOutcome::Changed => continue,
                }
            };
            return self.send_now(&due, cut).await;
        }
        Err(PortError::Throttled {
            operation: "trigger",
            source: "the job changed under every attempt; retry".into(),
        }
        .into())
    }

    /// Works the shard of `due` (due now) as a poller run, and answers with the message SQS
    /// accepted for it; `dispatching` when a poller holds the shard (that run sends it).
    async fn send_now(&self, due: &StoredJob, cut: DateTime<Utc>) -> Result<JobReply, HandlerError> {
        let Partition::Shard(shard) = due.partition else {
            return Ok(status_only(JobStatus::NotFound, &due.job.queue, &due.job.job_id));
        };
        let dispatcher = Dispatcher::new(
            self.config.clone(),
            self.store.clone(),
            self.queue.clone(),
            self.clock.clone(),
        );
        let deadline = cut.min(self.clock.now() + HANDOVER_BUDGET);
        let (summary, message_id) =
            Box::pin(dispatcher.run_shard_watching(&due.job.queue, shard, deadline, Some(&due.job.job_id))).await;
        Ok(match message_id {
            Some(message_id) => JobReply {
                message_id: Some(message_id),
                ..reply_for_job(&due.job, JobStatus::Sent, false)
            },
            None if summary.busy_partitions > 0 => status_only(JobStatus::Dispatching, &due.job.queue, &due.job.job_id),
            // Not sent by this run (expired, refused and parked, or a send that failed): what
            // it is now.
            None => self.get(&due.job.queue, &due.job.job_id).await?,
        })
    }
}
