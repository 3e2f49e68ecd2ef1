//! `enqueue` with `on_duplicate: replace | extend` (DESIGN "Debounce"): the stored job of that
//! id takes this call's message and time (`replace`) or its time (`extend`), by the conditional
//! write `reschedule` uses, so never under a poller that is handing it to SQS; where its message
//! left (only its history record remains), a new job is stored in its place.
//!
//! The promise: once the call answers, a message with this call's body (`replace`) or the job's
//! (`extend`) arrives at or after this call's time. Each branch answers only after a write that
//! stores such a job has committed, or fails (retryable) without one.

use chrono::{DateTime, Utc};
use tracing::debug;

use crate::error::{HandlerError, InvalidRequest};
use crate::job::{Job, OnDuplicate};
use crate::ports::{Clock, Found, JobStore, MessageQueue, ReplaceOutcome, StoredJob};
use crate::wire::field_rules::check_stored_size;
use crate::wire::reply::reply;
use sqs_waiter_contract::{JobReply, JobStatus};

use super::handover::HANDOVER_RECHECK;
use super::Waiter;

/// `current` with what a debounced call brings: all of `job` (`replace`; its tags only when it
/// gives some), or its time only (`extend`, inside the stored job's windows). The id's life goes on: its version, the time it
/// was first stored, its attempt in a retry chain, a pause and a possible earlier delivery; for
/// a series replaced by a series, the occurrences it sent (its `count` goes on from them) and
/// a `trigger`'s extra occurrence still waiting (sent first, the series returning to the call's
/// time after it), as `reschedule` keeps them.
fn debounced(current: &StoredJob, job: &Job) -> StoredJob {
    let mut next_job = match job.on_duplicate {
        OnDuplicate::Extend => Job {
            perform_at: current
                .job
                .windows
                .as_ref()
                .map_or(job.perform_at, |w| w.next_open(job.perform_at)),
            ..current.job.clone()
        },
        _ => Job {
            attempt: current.job.attempt,
            names_itself: current.job.names_itself,
            on_duplicate: OnDuplicate::Keep,
            // A call that gives no tags keeps the job's (a `cancel_many` by tag still finds
            // it); one that gives some replaces them.
            tags: if job.tags.is_empty() {
                current.job.tags.clone()
            } else {
                job.tags.clone()
            },
            ..job.clone()
        },
    };
    if let (Some(was), Some(series)) = (current.job.repeat.as_deref(), next_job.repeat.as_deref_mut()) {
        if job.on_duplicate != OnDuplicate::Extend {
            series.occurrences = was.occurrences;
            series.extra = was.extra;
            let at = std::mem::replace(&mut next_job.perform_at, current.job.perform_at);
            next_job.move_to(at);
        }
    }
    StoredJob {
        job: next_job,
        version: current.version + 1,
        ..current.clone()
    }
}

impl<S: JobStore + Clone, Q: MessageQueue + Clone, C: Clock + Clone> Waiter<S, Q, C> {
    pub(super) async fn debounce(&self, job: Job) -> Result<JobReply, HandlerError> {
        loop {
            let now = self.clock.now();
            let partitions = self.candidate_partitions(&job.queue, &job.job_id).await?;
            match self.existing(&job.queue, &job.job_id, &partitions, now).await? {
                None => {
                    if let (created, Some(_)) = self.store_new(job.clone(), now).await? {
                        return Ok(JobReply {
                            replaced: Some(false),
                            ..created
                        });
                    }
                    // Stored by another caller meanwhile: replace that one.
                }
                Some(Found::Job(current)) => {
                    if job.on_duplicate == OnDuplicate::Extend && current.job.repeat.is_some() {
                        return Err(InvalidRequest::new(
                            "on_duplicate",
                            "extend does not go with a stored series: its times are its schedule; use replace",
                        )
                        .into());
                    }
                    let next = debounced(&current, &job);
                    if let Some(s) = next
                        .job
                        .repeat
                        .as_deref()
                        .filter(|s| s.count.is_some_and(|c| c <= s.occurrences))
                    {
                        // The poller would finish the series at once, without a send.
                        return Err(InvalidRequest::new(
                            "repeat.count",
                            format!(
                                "must be more than the {} occurrences the stored series has sent, got {}",
                                s.occurrences,
                                s.count.unwrap_or_default()
                            ),
                        )
                        .into());
                    }
                    // `extend` keeps the stored `expires_at`: a time past it would be dropped
                    // as expired by the poller after this call answered `replaced` (issue 71,
                    // defect 1), so it is refused, as `reschedule` refuses one.
                    if let Some(expires_at) = next.job.expires_at.filter(|e| *e < next.job.perform_at) {
                        return Err(InvalidRequest::new(
                            "expires_at",
                            format!(
                                "the stored job expires at {}, before the time extend moves it to ({}): extend keeps expires_at; use replace with a later one",
                                crate::time::format_rfc3339(expires_at),
                                crate::time::format_rfc3339(next.job.perform_at)
                            ),
                        )
                        .into());
                    }
                    check_stored_size(self.store.item_bytes(&next))?;
                    match self.store.replace(&current, &next).await? {
                        ReplaceOutcome::Replaced => {
                            debug!(queue = %job.queue, job_id = %job.job_id, version = next.version, "debounced");
                            return Ok(JobReply {
                                replaced: Some(true),
                                version: Some(next.version),
                                ..reply(&next, JobStatus::Scheduled, true)
                            });
                        }
                        ReplaceOutcome::Changed => {}
                        // Its message is on its way: once the run has removed it, a new job
                        // goes in its place (the invocation's deadline bounds the wait).
                        ReplaceOutcome::Dispatching => tokio::time::sleep(HANDOVER_RECHECK).await,
                    }
                }
                Some(Found::History(record)) => {
                    let stored = self.new_over_history(&job, &record, now);
                    check_stored_size(self.store.item_bytes(&stored))?;
                    if self.store.put_over(&stored, &record).await? {
                        debug!(queue = %job.queue, job_id = %job.job_id, version = stored.version, "stored over its history");
                        return Ok(JobReply {
                            replaced: Some(false),
                            version: Some(stored.version),
                            ..reply(&stored, JobStatus::Scheduled, true)
                        });
                    }
                }
            }
        }
    }

    /// A new life of the id in place of the record its last one left: the versions go on.
    fn new_over_history(&self, job: &Job, record: &crate::ports::History, now: DateTime<Utc>) -> StoredJob {
        StoredJob {
            job: Job {
                on_duplicate: OnDuplicate::Keep,
                ..job.clone()
            },
            partition: record.partition.clone(),
            enqueued_at: now,
            parked: None,
            version: record.version + 1,
            maybe_delivered_at: None,
            paused_at: None,
        }
    }
}
