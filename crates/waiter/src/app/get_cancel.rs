//! `get` and `cancel` of one job.

use chrono::{DateTime, Utc};
use tracing::info;

use crate::config::QueueName;
use crate::error::PortError;
use crate::ports::{
    CancelOutcome, Clock, Found, History, HistoryStatus, JobKey, JobStore, MessageQueue, Partition, StoredJob,
};
use crate::wire::reply::{describe, describe_history};

use super::*;
use crate::error::HandlerError;
use crate::wire::reply::status_only;
use sqs_waiter_contract::{JobReply, JobStatus};

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
        let mut jobs = Vec::new();
        let mut history = None;
        for found in self.store.read_any(queue, &keys).await? {
            match found {
                Found::Job(j) => jobs.push(j),
                Found::History(h) if h.is_live(now) => history = Some(h),
                Found::History(_) => {}
            }
        }
        jobs.sort_by_key(|j| j.partition.clone());
        Ok(jobs.into_iter().next().map(Found::Job).or(history.map(Found::History)))
    }

    /// Cancels every stored copy of the job; `cancelled` only if none may be in SQS.
    pub(crate) async fn cancel_outcome(&self, queue: &QueueName, job_id: &str) -> Result<CancelOutcome, PortError> {
        let mut partitions = self.candidate_partitions(queue, job_id).await?;
        partitions.push(Partition::Parked);
        let mut status = CancelOutcome::NotFound;
        for found in self.store.find_all(queue, job_id, &partitions).await? {
            let outcome = self.cancel_copy(&found).await?;
            status = match (status, outcome) {
                (CancelOutcome::Dispatching, _) | (_, CancelOutcome::Dispatching) => CancelOutcome::Dispatching,
                (CancelOutcome::Cancelled, _) | (_, CancelOutcome::Cancelled) => CancelOutcome::Cancelled,
                _ => CancelOutcome::NotFound,
            };
        }
        Ok(status)
    }

    /// Cancels one stored job as found; a cancelled scheduled job stays known to `get` (parked
    /// ones leave no record).
    pub(crate) async fn cancel_copy(&self, found: &StoredJob) -> Result<CancelOutcome, PortError> {
        let record = match (&found.partition, self.config.history_keep()) {
            (Partition::Shard(_), Some(keep)) => Some(History::of(
                found,
                HistoryStatus::Cancelled,
                self.clock.now(),
                None,
                keep,
            )),
            _ => None,
        };
        self.store
            .cancel(&found.job.queue, &found.key(), found.job.perform_at, record.as_ref())
            .await
    }

    pub(super) async fn cancel(&self, queue: &QueueName, job_id: &str) -> Result<JobReply, HandlerError> {
        let status = self.cancel_outcome(queue, job_id).await?;
        let status = match status {
            CancelOutcome::Cancelled => JobStatus::Cancelled,
            CancelOutcome::NotFound => JobStatus::NotFound,
            CancelOutcome::Dispatching => JobStatus::Dispatching,
        };
        info!(queue = %queue, job_id, status = status.as_str(), "cancel");
        Ok(status_only(status, queue, job_id))
    }
}
