//! `trigger`: run a stored job now (DESIGN "Run now"). A one-off job is moved to now (out of its
//! windows) by `reschedule`'s conditional write; a series is given one extra occurrence, due
//! now, in its own item (`Series::extra`), so that a later `cancel`, `pause` or `reschedule` of
//! the series covers it as it covers the series. Then the job's shard is worked as a poller run
//! works it, so the send keeps every guarantee a run's has (the lease, the pause check, the
//! rate, the removal after SQS accepted). The run reads the job by its key, not through the
//! due index it was just written to, which lags on AWS.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::config::QueueName;
use crate::error::{HandlerError, PortError};
use crate::job::Job;
use crate::poller::Dispatcher;
use crate::ports::{Clock, JobStore, MessageQueue, Partition, ReplaceOutcome, StoredJob};
use crate::wire::reply::{reply_for_job, status_only};
use sqs_waiter_contract::{JobReply, JobStatus};

use super::handover::HANDOVER_BUDGET;
use super::Waiter;

/// Attempts at moving a job that changes between its read and its write.
const TRIGGER_ATTEMPTS: usize = 5;

/// The job as `trigger` leaves it to be sent now: a one-off job moved to `now` outside its
/// windows; a series with an extra occurrence at `Series::extra_at` (its own second, so that
/// its id is its alone), returning to where it stood once SQS has it. A series with an extra
/// occurrence already waiting is left as it is: that one is sent.
fn triggered(current: &StoredJob, now: DateTime<Utc>) -> Option<StoredJob> {
    let job = &current.job;
    let job = match job.repeat.as_deref() {
        Some(series) if series.extra.returns_to.is_some() => return None,
        Some(series) => {
            let mut series = series.clone();
            let at = series.extra_at(job.perform_at, now);
            series.extra.returns_to = Some(job.perform_at);
            Job {
                perform_at: crate::time::ceil_to_micros(at).unwrap_or(at),
                repeat: Some(Box::new(series)),
                ..job.clone()
            }
        }
        None => Job {
            perform_at: now,
            windows: None,
            ..job.clone()
        },
    };
    Some(StoredJob {
        job,
        version: current.version + 1,
        ..current.clone()
    })
}

/// What the reply shows as sent: the job, or a series' extra occurrence as the job of its own
/// its message names (`{job_id}@{epoch}`).
fn sent_as(due: &StoredJob) -> Job {
    due.job
        .pending_extra()
        .and_then(|extra| extra.occurrence_as_job())
        .unwrap_or_else(|| due.job.clone())
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
            let Some(next) = triggered(&current, self.clock.now()) else {
                return self.send_now(&current, cut).await;
            };
            match self.store.replace(&current, &next).await? {
                ReplaceOutcome::Replaced => return self.send_now(&next, cut).await,
                ReplaceOutcome::Dispatching => return Ok(status_only(JobStatus::Dispatching, queue, job_id)),
                ReplaceOutcome::Changed => continue,
            }
        }
        Err(PortError::Throttled {
            operation: "trigger",
            source: "the job changed under every attempt; retry".into(),
        }
        .into())
    }

    /// Works the shard of `due` as a poller run, and answers with the message SQS accepted for
    /// it; `dispatching` when a poller holds the shard (that run sends it). The run looks no
    /// further ahead than `due` (an extra occurrence may be due in the next second), and holds
    /// no FIFO queue's lease past it (`WAITER_FIFO_HOLD`), so that the regular run finds the
    /// lease free, or about to be.
    async fn send_now(&self, due: &StoredJob, cut: DateTime<Utc>) -> Result<JobReply, HandlerError> {
        let Partition::Shard(shard) = due.partition else {
            return Ok(status_only(JobStatus::NotFound, &due.job.queue, &due.job.job_id));
        };
        let ahead = u32::from(due.job.perform_at > self.clock.now());
        let config = Arc::new(crate::config::Config {
            fifo_hold: ahead,
            lookahead: self.config.lookahead.max(ahead),
            ..(*self.config).clone()
        });
        let dispatcher = Dispatcher::new(config, self.store.clone(), self.queue.clone(), self.clock.clone());
        let deadline = cut.min(self.clock.now() + HANDOVER_BUDGET);
        let (summary, message_id) =
            Box::pin(dispatcher.run_shard_watching(&due.job.queue, shard, deadline, Some(&due.key()))).await;
        Ok(match message_id {
            Some(message_id) => JobReply {
                message_id: Some(message_id),
                ..reply_for_job(&sent_as(due), JobStatus::Sent, false)
            },
            None if summary.busy_partitions > 0 => status_only(JobStatus::Dispatching, &due.job.queue, &due.job.job_id),
            // Paused since the call looked: nothing goes out until `resume`.
            None if !summary.paused_queues.is_empty() => {
                status_only(JobStatus::Paused, &due.job.queue, &due.job.job_id)
            }
            // Not sent by this run (expired, refused and parked, a send that failed, or left
            // to a later second by `WAITER_MAX_RATE`): what it is now. A series' extra
            // occurrence that SQS refused is parked alone, under its own id: that is the answer
            // (the series, untouched, would read `scheduled`, as if a later run sent it).
            None => {
                let occurrence = sent_as(due).job_id;
                let parked = occurrence != due.job.job_id
                    && self
                        .store
                        .find(&due.job.queue, &occurrence, &[Partition::Parked])
                        .await?
                        .is_some();
                let named = if parked { &occurrence } else { &due.job.job_id };
                self.get(&due.job.queue, named).await?
            }
        })
    }
}
