//! `get` and `cancel` of one job.

use chrono::{DateTime, Utc};
use tracing::info;

use crate::config::QueueName;
use crate::error::PortError;
use crate::ports::{
    CancelOutcome, Clock, Found, History, HistoryStatus, JobKey, JobStore, MessageQueue, Over, Partition,
    RemoveOutcome, StoredJob,
};
use crate::wire::reply::{describe, describe_history};

use super::*;
use crate::error::HandlerError;
use crate::wire::reply::status_only;
use sqs_waiter_contract::{JobReply, JobStatus};

/// Attempts at cancelling a job that changes between its read and its removal.
const CANCEL_ATTEMPTS: usize = 5;

impl<S: JobStore + Clone, Q: MessageQueue + Clone, C: Clock + Clone> Waiter<S, Q, C> {
    pub(super) async fn get(&self, queue: &QueueName, job_id: &str) -> Result<JobReply, HandlerError> {
        let mut partitions = self.candidate_partitions(queue, job_id).await?;
        partitions.push(Partition::Parked);
        Ok(
            match self.existing(queue, job_id, &partitions, self.clock.now()).await? {
                Some(Found::Job(found)) => describe(&found),
                Some(Found::History(h)) => describe_history(&h),
                None => status_only(JobStatus::NotFound, queue, job_id),
            },
        )
    }

    /// What an id names among these partitions: a stored job (an active one first), else a
    /// history record still in force.
    pub(super) async fn existing(
        &self,
        queue: &QueueName,
        job_id: &str,
        partitions: &[Partition],
        now: DateTime<Utc>,
    ) -> Result<Option<Found>, PortError> {
        let keys = JobKey::in_each(job_id, partitions);
        Ok(what_an_id_names(self.store.read_any(queue, &keys).await?, now))
    }

    /// Cancels every stored copy of the job; `cancelled` only if none may be in SQS.
    pub(crate) async fn cancel_outcome(&self, queue: &QueueName, job_id: &str) -> Result<CancelOutcome, PortError> {
        let mut partitions = self.candidate_partitions(queue, job_id).await?;
        partitions.push(Partition::Parked);
        let mut status = CancelOutcome::NotFound;
        for found in self.store.find_all(queue, job_id, &partitions).await? {
            let outcome = self.cancel_copy(&found, |_| true).await?;
            status = match (status, outcome) {
                (CancelOutcome::Dispatching, _) | (_, CancelOutcome::Dispatching) => CancelOutcome::Dispatching,
                (
                    CancelOutcome::Cancelled { maybe_delivered_at: a },
                    CancelOutcome::Cancelled { maybe_delivered_at: b },
                ) => CancelOutcome::Cancelled {
                    maybe_delivered_at: a.or(b),
                },
                (c @ CancelOutcome::Cancelled { .. }, _) | (_, c @ CancelOutcome::Cancelled { .. }) => c,
                _ => CancelOutcome::NotFound,
            };
        }
        Ok(status)
    }

    /// Cancels one stored job as found; a cancelled scheduled job stays known to `get` (parked
    /// ones leave no record). The removal is conditioned on the version found: if the job
    /// changed since (a reschedule, a hand-over), it is read again and, while `still_wanted`
    /// says it is what the caller meant, cancelled as it is now, so that the lease check sees
    /// its current time.
    pub(crate) async fn cancel_copy(
        &self,
        found: &StoredJob,
        still_wanted: impl Fn(&StoredJob) -> bool,
    ) -> Result<CancelOutcome, PortError> {
        let mut current = found.clone();
        for _ in 0..CANCEL_ATTEMPTS {
            // A job whose message may be in SQS keeps its record whatever the history
            // settings: a `retry` of that delivery must find the chain cancelled.
            let now = self.clock.now();
            let keeps_record = current.job.keeps_record() || current.may_have_been_sent(now);
            let record = match (&current.partition, self.config.history_keep_for(keeps_record)) {
                (Partition::Shard(_), Some(keep)) => Some(
                    History::of(&current, HistoryStatus::Cancelled, now, None, keep)
                        .keeping_message(&current.job, self.config.history_body),
                ),
                _ => None,
            };
            let outcome = if current.partition == Partition::Parked && current.job.is_retried() {
                self.cancel_parked_chain(&current).await?
            } else {
                self.store.cancel(&current, record.as_ref()).await?
            };
            match outcome {
                RemoveOutcome::Removed => {
                    return Ok(CancelOutcome::Cancelled {
                        maybe_delivered_at: current.maybe_delivered_at,
                    });
                }
                RemoveOutcome::Dispatching => return Ok(CancelOutcome::Dispatching),
                RemoveOutcome::Changed => match self.store.read(&current.job.queue, &[current.key()]).await?.pop() {
                    Some(now) if still_wanted(&now) => current = now,
                    _ => return Ok(CancelOutcome::NotFound),
                },
            }
        }
        Err(PortError::Throttled {
            operation: "cancel",
            source: "the job changed under every attempt; retry".into(),
        })
    }

    /// Cancels a parked attempt of a retried job and records the cancel at its home key (over
    /// what the key holds, with a version above it and the parked item's), in one transaction:
    /// a `retry` that read the key before, or between two separate steps, finds it changed, and
    /// a later one of any attempt up to the parked one schedules nothing.
    async fn cancel_parked_chain(&self, parked: &StoredJob) -> Result<RemoveOutcome, PortError> {
        let queue = &parked.job.queue;
        let home = self.home_of(queue, &parked.job.job_id);
        let at_home = self
            .store
            .read_any(queue, &JobKey::in_each(&parked.job.job_id, std::slice::from_ref(&home)))
            .await?
            .pop();
        let over = match &at_home {
            None => Over::Free,
            Some(Found::History(h)) => Over::Record(h),
            // The chain's live attempt is stored: the caller's cancel removes it in its turn;
            // the parked copy goes alone.
            Some(Found::Job(_)) => return self.store.cancel(parked, None).await,
        };
        let keep = self
            .config
            .history_keep_for(true)
            .unwrap_or(crate::config::RETRY_RECORD_KEEP);
        let at = StoredJob {
            partition: home,
            ..parked.clone()
        };
        let record = History {
            version: parked.version.max(over.version()) + 1,
            ..History::of(&at, HistoryStatus::Cancelled, self.clock.now(), None, keep)
        };
        self.store.cancel_parked_chain(parked, &record, over).await
    }

    pub(super) async fn cancel(&self, queue: &QueueName, job_id: &str) -> Result<JobReply, HandlerError> {
        let (status, maybe_delivered_at) = match self.cancel_outcome(queue, job_id).await? {
            CancelOutcome::Cancelled { maybe_delivered_at } => (JobStatus::Cancelled, maybe_delivered_at),
            CancelOutcome::NotFound => (JobStatus::NotFound, None),
            CancelOutcome::Dispatching => (JobStatus::Dispatching, None),
        };
        info!(queue = %queue, job_id, status = status.as_str(), maybe_delivered = maybe_delivered_at.is_some(), "cancel");
        Ok(JobReply {
            maybe_delivered_at,
            ..status_only(status, queue, job_id)
        })
    }
}

/// What the items read under one id name: a stored job (an active one first), else a history
/// record still in force.
pub(super) fn what_an_id_names(found: Vec<Found>, now: DateTime<Utc>) -> Option<Found> {
    let mut jobs = Vec::new();
    let mut history = None;
    for f in found {
        match f {
            Found::Job(j) => jobs.push(j),
            Found::History(h) if h.is_live(now) => history = Some(h),
            Found::History(_) => {}
        }
    }
    jobs.sort_by_key(|j| j.partition.clone());
    jobs.into_iter().next().map(Found::Job).or(history.map(Found::History))
}
