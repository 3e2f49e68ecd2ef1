//! `enqueue`: one job routed straight to SQS or stored.

use chrono::{DateTime, Utc};
use tracing::{debug, warn};

use crate::error::display_chain;
use crate::job::{Job, OnDuplicate};
use crate::ports::{
    Clock, Found, History, HistoryStatus, JobStore, MessageQueue, OutgoingMessage, Partition, PauseGate, PutOutcome,
    StoredJob,
};
use crate::routing::{delay_for, route, Route};
use crate::wire::field_rules::check_stored_size;
use crate::wire::reply::{duplicate, reply, reply_for_job};

use super::*;
use crate::error::HandlerError;
use crate::ports::Edition;
use sqs_waiter_contract::{JobReply, JobStatus};

impl<S: JobStore + Clone, Q: MessageQueue + Clone, C: Clock + Clone> Waiter<S, Q, C> {
    pub(super) async fn enqueue(
        &self,
        job: Job,
        precise_at: Option<DateTime<Utc>>,
        gate: &PauseGate,
    ) -> Result<JobReply, HandlerError> {
        // Debounced: always stored, so that a later call can still replace it.
        if job.on_duplicate != OnDuplicate::Keep {
            return self.debounce(job).await;
        }
        let now = self.clock.now();
        let home = self.home_of(&job.queue, &job.job_id);
        let mut routed = route(&job, now, self.config.direct_max_delay);
        if matches!(routed, Route::Direct { .. }) {
            // A caller-chosen id may name a job that is still stored; sending it again would
            // break the idempotency promise.
            if job.job_id_given {
                let candidates = self.candidate_partitions(&job.queue, &job.job_id).await?;
                if let Some(existing) = self.existing(&job.queue, &job.job_id, &candidates, now).await? {
                    debug!(queue = %job.queue, job_id = %job.job_id, "duplicate");
                    return Ok(duplicate(&existing));
                }
            }
            // A paused queue gets nothing straight from here: the job is stored, and sent when
            // the queue is resumed. One strongly consistent read per request and queue, made
            // before the routing at the send's instant (so that it never makes a send late),
            // and again only when older than `PAUSE_CHECK_FRESH` by then (ports::pause).
            let mut paused = gate.paused(&self.store, &job.queue).await?.is_some();
            if !paused {
                if let Some(at) = precise_at {
                    self.clock.sleep_until(at).await;
                }
                // A check answered too late to admit the send stores the job: storing is always
                // safe, and the poller sends it.
                if !gate.admits(&job.queue) {
                    paused = gate.paused(&self.store, &job.queue).await?.is_some() || !gate.admits(&job.queue);
                }
            }
            // Routed again at the send's own instant: the reads above may have taken a while
            // (the SDK's retries), and a job that would now arrive after its expiry is stored
            // instead, for the poller to drop or send exactly.
            routed = if paused {
                debug!(queue = %job.queue, job_id = %job.job_id, "queue paused: stored instead of sent");
                Route::Store
            } else {
                route(&job, self.clock.now(), self.config.direct_max_delay)
            };
        }
        match routed {
            Route::Direct { delay_seconds } => {
                let delay_seconds = match delay_seconds {
                    Some(_) if self.config.direct_precise => Some(delay_for(job.perform_at, self.clock.now())),
                    other => other,
                };
                let sent_at = self.clock.now();
                let message_id = self
                    .queue
                    .send(
                        &job.queue,
                        &OutgoingMessage::for_job(
                            &job,
                            Edition {
                                enqueued_at: now,
                                version: 1,
                            },
                            delay_seconds,
                        )
                        .carrying_id(&job, self.config.job_id_attribute),
                    )
                    .await?;
                debug!(queue = %job.queue, job_id = %job.job_id, delay_s = delay_seconds, "sent direct");
                // A tagged job is recorded whatever the settings: its record is where a retry of
                // its message finds its tags (one write unit more than an untagged direct send).
                let records = job.keeps_record_when_sent() || (self.config.direct_history && job.job_id_given);
                if let (Some(keep), true) = (self.config.history_keep_for(job.keeps_record_when_sent()), records) {
                    // So that a retry after this send is a duplicate. The message is out: a
                    // failure here is logged, not answered (a retry would send it again).
                    let sent = StoredJob {
                        paused_at: None,
                        partition: home.clone(),
                        job: job.clone(),
                        enqueued_at: sent_at,
                        parked: None,
                        version: 1,
                        maybe_delivered_at: None,
                    };
                    let record = History::of(
                        &sent,
                        HistoryStatus::Dispatched,
                        sent_at,
                        Some(message_id.clone()),
                        keep,
                    )
                    .keeping_message(&sent.job, self.config.history_body);
                    if let Err(e) = self.store.record(&record).await {
                        warn!(queue = %job.queue, job_id = %job.job_id, error = %display_chain(&e), "history record of a direct send failed");
                    }
                }
                Ok(JobReply {
                    message_id: Some(message_id),
                    delay_seconds: delay_seconds.map(u64::from),
                    ..reply_for_job(&job, JobStatus::Sent, false)
                })
            }
            Route::Store => Ok(self.store_new(job, now).await?.0),
        }
    }

    /// Stores a new job at its home key (a duplicate when its id names a job, or a record
    /// still in force); with the job as stored when it was created.
    pub(super) async fn store_new(
        &self,
        job: Job,
        now: DateTime<Utc>,
    ) -> Result<(JobReply, Option<StoredJob>), HandlerError> {
        let home = self.home_of(&job.queue, &job.job_id);
        let stored = StoredJob {
            paused_at: None,
            partition: home.clone(),
            job,
            enqueued_at: now,
            parked: None,
            version: 1,
            maybe_delivered_at: None,
        };
        check_stored_size(self.store.item_bytes(&stored))?;
        // After WAITER_SHARDS changed, the id may sit in its shard under an older count.
        let elsewhere: Vec<Partition> = self
            .candidate_partitions(&stored.job.queue, &stored.job.job_id)
            .await?
            .into_iter()
            .filter(|p| *p != home)
            .collect();
        if !elsewhere.is_empty() {
            if let Some(existing) = self
                .existing(&stored.job.queue, &stored.job.job_id, &elsewhere, now)
                .await?
            {
                debug!(queue = %stored.job.queue, job_id = %stored.job.job_id, "duplicate");
                return Ok((duplicate(&existing), None));
            }
        }
        match self.store.put_new(&stored).await? {
            PutOutcome::Created { version } => {
                let delay_s = (stored.job.perform_at - now).num_seconds();
                debug!(queue = %stored.job.queue, job_id = %stored.job.job_id, delay_s, version, "scheduled");
                let stored = StoredJob { version, ..stored };
                Ok((reply(&stored, JobStatus::Scheduled, false), Some(stored)))
            }
            PutOutcome::Duplicate(existing) => {
                debug!(queue = %existing.job.queue, job_id = %existing.job.job_id, "duplicate");
                Ok((reply(&existing, JobStatus::Scheduled, true), None))
            }
            PutOutcome::Done(history) => {
                debug!(queue = %history.queue, job_id = %history.job_id, status = history.status.as_str(), "duplicate of a finished job");
                Ok((duplicate(&Found::History(*history)), None))
            }
        }
    }

    /// `store_new`, then the hand-over of a job due within the lookahead, as `reschedule` does.
    pub(super) async fn store_and_hand_over(&self, job: Job, cut: DateTime<Utc>) -> Result<JobReply, HandlerError> {
        let (reply, created) = self.store_new(job, self.clock.now()).await?;
        if let Some(stored) = created {
            self.hand_over_if_near(&stored, cut).await;
        }
        Ok(reply)
    }
}
