//! `retry`: the next attempt of a job a consumer failed on, at exponential backoff, or the job
//! parked when its attempts ran out.
//!
//! Attempt k of job `X` is a stored job of its own, `X:ak` (`attempt_job_id`), carrying
//! `waiter.attempt` = k. Its conditional put (over the job, or the history record it leaves) is
//! the idempotency of `retry` by (`job_id`, `attempt`), and `get`, `cancel`, `list_parked` and
//! `redrive` work on an attempt as on any job.

use chrono::{DateTime, Utc};
use tracing::info;

use crate::backoff;
use crate::error::HandlerError;
use crate::job::{AttributeData, Job, MessageAttribute};
use crate::ports::{
    Clock, Found, HistoryStatus, JobKey, JobStore, MessageQueue, ParkInfo, Partition, PutOutcome, StoredJob,
};
use crate::routing::shard_for;
use crate::wire::field_rules::{check_message, check_stored_size};
use crate::wire::normalise::Given;
use crate::wire::reply::{describe, reply, status_only};
use crate::wire::retry::{attempt_job_id, Retry};

use super::get_cancel::what_an_id_names;
use super::*;
use sqs_waiter_contract::{JobReply, JobStatus, ATTEMPTS_EXHAUSTED, ATTEMPT_ATTRIBUTE};

impl<S: JobStore + Clone, Q: MessageQueue + Clone, C: Clock + Clone> Waiter<S, Q, C> {
    pub(super) async fn retry(&self, r: Retry, cut: DateTime<Utc>) -> Result<JobReply, HandlerError> {
        let now = self.clock.now();
        let next = r.attempt + 1;
        let next_id = attempt_job_id(&r.job_id, next);
        let later_id = attempt_job_id(&r.job_id, next + 1);
        // One consistent read of both ids, wherever they may be (any shard count, parked).
        let mut keys = Vec::new();
        for id in [&next_id, &later_id] {
            let mut partitions = self.candidate_partitions(&r.queue, id).await?;
            partitions.push(Partition::Parked);
            keys.extend(JobKey::in_each(id, &partitions));
        }
        let (mut of_next, mut of_later) = (Vec::new(), Vec::new());
        for found in self.store.read_any(&r.queue, &keys).await? {
            let id = match &found {
                Found::Job(j) => &j.job.job_id,
                Found::History(h) => &h.job_id,
            };
            if *id == next_id {
                of_next.push(found);
            } else {
                of_later.push(found);
            }
        }
        if what_an_id_names(of_later, now).is_some() {
            // Attempt `next` was scheduled and has failed in turn: this report is stale.
            info!(queue = %r.queue, job_id = %r.job_id, attempt = r.attempt, "stale retry");
            return Ok(JobReply {
                attempt: Some(next + 1),
                ..status_only(JobStatus::Conflict, &r.queue, &r.job_id)
            });
        }
        if let Some(found) = what_an_id_names(of_next, now) {
            info!(queue = %r.queue, job_id = %r.job_id, attempt = r.attempt, "duplicate retry");
            return Ok(retry_reply(&r, &next_id, &found));
        }

        let mut attributes = r.message_attributes.clone();
        attributes.insert(
            ATTEMPT_ATTRIBUTE.to_owned(),
            MessageAttribute {
                data_type: "Number".to_owned(),
                data: AttributeData::String(next.to_string()),
            },
        );
        let mut job = Job {
            queue: r.queue.clone(),
            job_id: next_id.clone(),
            job_id_given: true,
            message_body: r.message_body.clone(),
            message_attributes: attributes,
            perform_at: crate::time::ceil_to_micros(now).unwrap_or(now),
            expires_at: None,
            message_group_id: r.message_group_id.clone(),
            message_deduplication_id: None,
            windows: None,
            priority: r.priority,
            weight: r.weight,
        };
        check_message(&Given::default(), &job)?;

        if r.attempt >= r.max_attempts {
            return self.park_exhausted(&r, job, &next_id).await;
        }

        let delay = r.backoff.delay(r.attempt, backoff::draw(&r.job_id, r.attempt));
        let due = now + delay;
        job.perform_at = crate::time::ceil_to_micros(due).unwrap_or(due);
        // Always stored, never sent straight: the conditional put is what makes a repeated
        // `retry` a duplicate, even when a write fails after SQS took the message. A near
        // attempt is handed over at once, as `reschedule` does.
        let stored = StoredJob {
            partition: Partition::Shard(shard_for(&next_id, self.config.shards_for(&r.queue))),
            job,
            enqueued_at: now,
            parked: None,
            version: 1,
            maybe_delivered_at: None,
        };
        check_stored_size(self.store.item_bytes(&stored))?;
        let stored = match self.store.put_new(&stored).await? {
            PutOutcome::Created { version } => StoredJob { version, ..stored },
            PutOutcome::Duplicate(existing) => return Ok(retry_reply(&r, &next_id, &Found::Job(*existing))),
            PutOutcome::Done(history) => return Ok(retry_reply(&r, &next_id, &Found::History(*history))),
        };
        info!(
            queue = %r.queue, job_id = %r.job_id, attempt = next,
            delay_ms = delay.num_milliseconds(), "retry scheduled"
        );
        self.hand_over_if_near(&stored, cut).await;
        Ok(JobReply {
            job_id: r.job_id.clone(),
            attempt: Some(next),
            attempt_job_id: Some(next_id),
            version: Some(stored.version),
            ..reply(&stored, JobStatus::Scheduled, false)
        })
    }

    /// `attempt` reached `max_attempts`: the next attempt is parked, not scheduled, with the
    /// consumer's error; `redrive` of its id sends it.
    async fn park_exhausted(&self, r: &Retry, job: Job, next_id: &str) -> Result<JobReply, HandlerError> {
        let now = self.clock.now();
        let parked = StoredJob {
            partition: Partition::Parked,
            job,
            enqueued_at: now,
            parked: Some(ParkInfo {
                parked_at: now,
                code: ATTEMPTS_EXHAUSTED.to_owned(),
                message: r.error.clone().unwrap_or_default(),
            }),
            version: 1,
            maybe_delivered_at: None,
        };
        check_stored_size(self.store.item_bytes(&parked))?;
        if !self.store.place(&parked).await? {
            // A concurrent `retry` of the same attempt parked it first.
            if let Some(found) = self.store.find(&r.queue, next_id, &[Partition::Parked]).await? {
                return Ok(retry_reply(r, next_id, &Found::Job(found)));
            }
        }
        info!(queue = %r.queue, job_id = %r.job_id, attempts = r.attempt, "attempts exhausted; parked");
        Ok(JobReply {
            duplicate: Some(false),
            ..exhausted_reply(r, next_id, &parked)
        })
    }
}

/// The reply when the attempt after `r.attempt` exists already: the first reply again, with
/// `duplicate: true`.
fn retry_reply(r: &Retry, next_id: &str, found: &Found) -> JobReply {
    let reply = match found {
        Found::Job(j) if j.parked.as_ref().is_some_and(|p| p.code == ATTEMPTS_EXHAUSTED) => {
            exhausted_reply(r, next_id, j)
        }
        // SQS refused the attempt: it is parked like any refused job.
        Found::Job(j) if j.parked.is_some() => describe(j),
        Found::Job(j) => JobReply {
            perform_at: Some(j.job.perform_at),
            version: Some(j.version),
            ..status_only(JobStatus::Scheduled, &r.queue, &r.job_id)
        },
        Found::History(h) => JobReply {
            perform_at: Some(h.perform_at),
            version: Some(h.version),
            message_id: h.message_id.clone().filter(|_| h.status == HistoryStatus::Dispatched),
            ..status_only(JobStatus::Scheduled, &r.queue, &r.job_id)
        },
    };
    JobReply {
        job_id: r.job_id.clone(),
        duplicate: Some(true),
        attempt: Some(r.attempt + 1),
        attempt_job_id: Some(next_id.to_owned()),
        ..reply
    }
}

fn exhausted_reply(r: &Retry, next_id: &str, parked: &StoredJob) -> JobReply {
    JobReply {
        reason: Some(ATTEMPTS_EXHAUSTED.to_owned()),
        attempts: Some(r.attempt),
        attempt_job_id: Some(next_id.to_owned()),
        parked_at: parked.parked.as_ref().map(|p| p.parked_at),
        ..status_only(JobStatus::Parked, &r.queue, &r.job_id)
    }
}
