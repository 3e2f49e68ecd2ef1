//! `retry`: the next attempt of a job a consumer failed on, at exponential backoff, or the job
//! parked when its attempts ran out.
//!
//! A job keeps its `job_id` across its attempts: attempt k is the job's item with `attempt` = k
//! (its messages carry `waiter.attempt`), written over the record attempt k−1 left when it was
//! sent, conditional on that record's version. What the id holds when the `retry` of attempt n
//! is read decides (`decide`): attempt n+1 already (a duplicate), a later one (`conflict`), a
//! cancelled one (`cancelled`), or attempt n or nothing (schedule n+1, or park it). Attempt n
//! may still be stored when its retry comes (the poller removes what it sent in batches, at the
//! end of a FIFO hold, or in its next run): the message proves it was sent, so n+1 is written
//! over it, conditional on its edition, and the poller's removal of n then finds a newer one.

use chrono::{DateTime, Utc};
use tracing::debug;

use crate::backoff;
use crate::error::{HandlerError, InvalidRequest, PortError};
use crate::job::{Job, Tags};
use crate::ports::{
    Clock, Found, History, HistoryStatus, JobKey, JobStore, MessageQueue, Over, ParkInfo, Partition, PutOutcome,
    ReplaceOutcome, StoredJob,
};
use crate::windows::Windows;
use crate::wire::field_rules::{check_message, check_stored_size};
use crate::wire::normalise::Given;
use crate::wire::reply::{describe, reply, status_only};
use crate::wire::retry::Retry;

use super::handover::{HANDOVER_BUDGET, HANDOVER_RECHECK};
use super::*;
use sqs_waiter_contract::{
    JobReply, JobStatus, ATTEMPTS_EXHAUSTED, JOB_ID_ATTRIBUTE, OCCURRENCE_ATTRIBUTE, OCCURRENCE_SEPARATOR,
};

/// Reads and conditional writes of one `retry` before it gives up: each lost race is to another
/// change of the same job (a concurrent `retry`, `cancel` or `redrive`).
const RETRY_ROUNDS: usize = 4;

/// What the job's id holds, as far as the chain of its attempts goes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Current {
    /// An attempt is stored: pending, or parked.
    Stored(StoredJob),
    /// An attempt left the table (a live record): sent, cancelled or expired.
    Left(History),
}

impl Current {
    fn of(found: &Found) -> Self {
        match found {
            Found::Job(j) => Self::Stored(j.clone()),
            Found::History(h) => Self::Left(h.clone()),
        }
    }

    fn attempt(&self) -> u32 {
        match self {
            Self::Stored(j) => j.job.attempt,
            Self::Left(h) => h.attempt,
        }
    }

    /// A series (stored, or its record): never an attempt of anything.
    fn is_series(&self) -> bool {
        match self {
            Self::Stored(j) => j.job.repeat.is_some(),
            Self::Left(h) => h.occurrences.is_some(),
        }
    }

    fn windows(&self) -> Option<Windows> {
        match self {
            Self::Stored(j) => j.job.windows.clone(),
            Self::Left(h) => h.windows.clone(),
        }
    }

    /// The stored attempt, when a message of it may be in a consumer's hands: SQS holds one
    /// until it is due (`StoredJob::may_have_been_sent`).
    fn sent_and_stored(&self, now: DateTime<Utc>) -> Option<&StoredJob> {
        match self {
            Self::Stored(j) if j.may_have_been_sent(now) => Some(j),
            _ => None,
        }
    }
}

/// What a `retry` of attempt `failed` does, given what the job's id holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Decision {
    /// Attempt `failed + 1` exists already: the first reply again.
    Duplicate,
    /// The job has moved past `failed + 1` (or is pending at an attempt this report cannot
    /// have come from): nothing is scheduled; the reply names the current attempt.
    Conflict(u32),
    /// The chain was cancelled at this attempt: nothing is scheduled.
    Cancelled(u32),
    /// Attempt `failed` (or an earlier one, or nothing) is what is known: the next is made.
    Next,
}

/// `stored_sent`: the stored attempt's message may be in a consumer's hands (`sent_attempt`).
pub(crate) fn decide(failed: u32, current: Option<&Current>, stored_sent: bool) -> Decision {
    let Some(current) = current else {
        return Decision::Next;
    };
    let (attempt, next) = (current.attempt(), failed + 1);
    match current {
        Current::Left(h) if h.status == HistoryStatus::Cancelled => {
            if failed <= attempt {
                Decision::Cancelled(attempt)
            } else {
                Decision::Conflict(attempt)
            }
        }
        _ if attempt == next => Decision::Duplicate,
        Current::Left(_) if attempt < next => Decision::Next,
        // The failed attempt, sent and not yet removed: its message proves the send.
        Current::Stored(_) if attempt == failed && stored_sent => Decision::Next,
        _ => Decision::Conflict(attempt),
    }
}

/// The stored attempt, as the message the consumer failed on may be of it.
enum Stored<'c> {
    /// None is stored that a run may have sent.
    Unsent,
    /// Sent as far as the item tells: due and unpaused, or marked as maybe delivered
    /// (`StoredJob::may_have_been_sent`), with the body the consumer hands back.
    Sent(&'c StoredJob),
    /// As `Sent`, with another body: a debounced `replace` may have stored it as the id's new
    /// life after the message that failed (keeping the mark of that message's delivery), or the
    /// consumer edited the body it hands back. It was sent only if a run holding its shard's
    /// lease sent it (`Leases::lease_covers`).
    Unsure(&'c StoredJob),
}

fn stored_attempt<'c>(r: &Retry, current: Option<&'c Current>, now: DateTime<Utc>) -> Stored<'c> {
    match current.and_then(|c| c.sent_and_stored(now)) {
        None => Stored::Unsent,
        Some(j) if j.job.message_body == r.message_body => Stored::Sent(j),
        Some(j) => Stored::Unsure(j),
    }
}

/// The chain's state among the items read under one id: the latest attempt, a stored one
/// before a record of the same attempt; records past their time are forgotten.
pub(crate) fn current_of(found: &[Found], now: DateTime<Utc>) -> Option<Current> {
    found
        .iter()
        .filter(|f| match f {
            Found::Job(_) => true,
            Found::History(h) => h.is_live(now),
        })
        .map(Current::of)
        .max_by_key(|c| (c.attempt(), matches!(c, Current::Stored(_))))
}

impl<S: JobStore + Clone, Q: MessageQueue + Clone, C: Clock + Clone> Waiter<S, Q, C> {
    pub(super) async fn retry(&self, r: Retry, cut: DateTime<Utc>) -> Result<JobReply, HandlerError> {
        let wait_until = cut.min(self.clock.now() + HANDOVER_BUDGET);
        let mut rounds = 0;
        while rounds < RETRY_ROUNDS {
            let now = self.clock.now();
            let mut home = self.home_of(&r.queue, &r.job_id);
            let mut partitions = self.candidate_partitions(&r.queue, &r.job_id).await?;
            partitions.push(Partition::Parked);
            let mut keys = JobKey::in_each(&r.job_id, &partitions);
            // The first retry of a series' occurrence finds nothing under its id: the attempt
            // takes the series' windows, so the series is read in the same call.
            let series_id = sqs_waiter_contract::occurrence_of(&r.job_id)
                .map(|(series, _)| series)
                .filter(|_| r.attempt == 1);
            if let Some(series) = series_id {
                let theirs = self.candidate_partitions(&r.queue, series).await?;
                keys.extend(JobKey::in_each(series, &theirs));
            }
            let (found, series): (Vec<Found>, Vec<Found>) = self
                .store
                .read_any(&r.queue, &keys)
                .await?
                .into_iter()
                .partition(|f| f.job_id() == r.job_id);
            // What a write at the home key must find there: any record, live or past its time.
            let at_home = found.iter().find_map(|f| match f {
                Found::History(h) if h.partition == home => Some(h.clone()),
                _ => None,
            });
            let current = current_of(&found, now);
            if current.as_ref().is_some_and(Current::is_series) {
                // The series is not an attempt of anything: a retry under its id would replace
                // it with a one-off job. Its occurrences' retries go under their own ids.
                return Err(InvalidRequest::new(
                    "job_id",
                    format!(
                        "names a series: retry the occurrence under the id its message carries in {JOB_ID_ATTRIBUTE} \
                         ({}{OCCURRENCE_SEPARATOR}{{epoch seconds of its {OCCURRENCE_ATTRIBUTE}}}), never the \
                         series' own id",
                        r.job_id
                    ),
                )
                .into());
            }
            let sent = match stored_attempt(&r, current.as_ref(), now) {
                Stored::Unsent => None,
                Stored::Sent(j) => Some(j),
                Stored::Unsure(j) => {
                    if !self.may_be_in_flight(j).await? {
                        None
                    } else if self.clock.now() < wait_until {
                        // A run holds it: once that run has removed it (sent) or let its lease
                        // go (not sent), what it was is known.
                        tokio::time::sleep(HANDOVER_RECHECK).await;
                        continue;
                    } else {
                        return Err(PortError::Throttled {
                            operation: "retry",
                            source: "a poller is handing the stored job over; retry".into(),
                        }
                        .into());
                    }
                }
            };
            let decision = decide(r.attempt, current.as_ref(), sent.is_some());
            match decision {
                Decision::Duplicate => {
                    debug!(queue = %r.queue, job_id = %r.job_id, attempt = r.attempt, "duplicate retry");
                    return Ok(retry_reply(&r, current.as_ref()));
                }
                Decision::Conflict(attempt) | Decision::Cancelled(attempt) => {
                    let status = match decision {
                        Decision::Cancelled(_) => JobStatus::Cancelled,
                        _ => JobStatus::Conflict,
                    };
                    debug!(queue = %r.queue, job_id = %r.job_id, attempt = r.attempt, current = attempt, status = status.as_str(), "stale retry");
                    return Ok(JobReply {
                        attempt: Some(attempt),
                        ..status_only(status, &r.queue, &r.job_id)
                    });
                }
                Decision::Next => {}
            }
            let job = self.next_attempt(&r, current.as_ref(), series_keeps(&series), now)?;
            // The next attempt goes where the failed one is still stored, else to the home key.
            let over = match sent {
                Some(sent) if sent.job.attempt == r.attempt => {
                    home = sent.partition.clone();
                    Over::Sent(sent)
                }
                _ => at_home.as_ref().map_or(Over::Free, Over::Record),
            };
            let written = if r.attempt >= r.max_attempts {
                self.park_exhausted(&r, job, home, over).await?
            } else {
                self.schedule_next(&r, job, home, over, cut).await?
            };
            if let Some(reply) = written {
                return Ok(reply);
            }
            rounds += 1;
        }
        Err(PortError::Throttled {
            operation: "retry",
            source: "the job changed under every attempt; retry".into(),
        }
        .into())
    }

    /// Whether a run holding the job's shard may have sent it (`Leases::lease_covers`): one
    /// strongly consistent read of the lease item, made only for an unsure stored attempt.
    async fn may_be_in_flight(&self, stored: &StoredJob) -> Result<bool, PortError> {
        let Partition::Shard(shard) = stored.partition else {
            return Ok(false);
        };
        self.store
            .lease_covers(&stored.job.queue, shard, stored.job.perform_at, stored.enqueued_at)
            .await
    }

    /// Attempt `r.attempt + 1`: the consumer's message, with what the job keeps across its
    /// attempts (its expiry, windows, and whether its messages name it) from what was read; the
    /// first retry of an occurrence, with no attempt of its own to read, keeps its series'
    /// windows.
    fn next_attempt(
        &self,
        r: &Retry,
        current: Option<&Current>,
        series: SeriesKeeps,
        now: DateTime<Utc>,
    ) -> Result<Job, HandlerError> {
        let (expires_at, windows, names_itself, tags) = match current {
            Some(Current::Left(h)) => (h.expires_at, h.windows.clone(), h.names_itself, h.tags.clone()),
            Some(Current::Stored(j)) => (
                j.job.expires_at,
                j.job.windows.clone(),
                j.job.names_itself,
                j.job.tags.clone(),
            ),
            None => (None, series.0, false, series.1),
        };
        let job = Job {
            on_duplicate: Default::default(),
            queue: r.queue.clone(),
            job_id: r.job_id.clone(),
            job_id_given: true,
            message_body: r.message_body.clone(),
            message_attributes: r.message_attributes.clone(),
            perform_at: crate::time::ceil_to_micros(now).unwrap_or(now),
            expires_at,
            message_group_id: r.message_group_id.clone(),
            message_deduplication_id: None,
            windows,
            priority: r.priority,
            weight: r.weight,
            attempt: r.attempt + 1,
            names_itself: names_itself || r.names_itself,
            trace_header: r.trace_header.clone(),
            repeat: None,
            occurrence: None,
            tags,
        };
        check_message(&Given::default(), &job)?;
        Ok(job)
    }

    /// Stores the next attempt at its backoff (in its windows), over what its key held when read
    /// (the record the last attempt left, that attempt still stored, or nothing); `None` when the
    /// key changed since. A near attempt is handed over at once, as `reschedule` does.
    async fn schedule_next(
        &self,
        r: &Retry,
        mut job: Job,
        home: Partition,
        over: Over<'_>,
        cut: DateTime<Utc>,
    ) -> Result<Option<JobReply>, HandlerError> {
        let now = self.clock.now();
        let delay = r.backoff.delay(r.attempt, backoff::draw(&r.job_id, r.attempt));
        let due = crate::time::ceil_to_micros(now + delay).unwrap_or(now + delay);
        job.perform_at = job.windows.as_ref().map_or(due, |w| w.next_open(due));
        if job.arrives_expired(job.perform_at) {
            // Never sent after its expiry: nothing is stored, and the same `retry` again
            // answers the same (the backoff's draw is the job's and the attempt's).
            debug!(queue = %r.queue, job_id = %r.job_id, attempt = job.attempt, "next attempt would arrive expired");
            return Ok(Some(JobReply {
                attempt: Some(job.attempt),
                perform_at: Some(job.perform_at),
                expires_at: job.expires_at,
                ..status_only(JobStatus::Expired, &r.queue, &r.job_id)
            }));
        }
        // A pause of the job holds its next attempt too: `resume` sends it.
        let paused_at = match &over {
            Over::Sent(sent) => sent.paused_at,
            _ => None,
        };
        let stored = StoredJob {
            paused_at,
            partition: home,
            version: over.version() + 1,
            job,
            enqueued_at: now,
            parked: None,
            maybe_delivered_at: None,
        };
        check_stored_size(self.store.item_bytes(&stored))?;
        let stored = match over {
            Over::Record(record) => {
                if !self.store.put_over(&stored, record).await? {
                    return Ok(None);
                }
                stored
            }
            Over::Sent(sent) => {
                if self.store.rewrite(sent, &stored).await? != ReplaceOutcome::Replaced {
                    return Ok(None);
                }
                stored
            }
            Over::Free => match self.store.put_new(&stored).await? {
                PutOutcome::Created { version } => StoredJob { version, ..stored },
                PutOutcome::Duplicate(_) | PutOutcome::Done(_) => return Ok(None),
            },
        };
        debug!(
            queue = %r.queue, job_id = %r.job_id, attempt = stored.job.attempt,
            delay_ms = delay.num_milliseconds(), "retry scheduled"
        );
        self.hand_over_if_near(&stored, cut).await;
        Ok(Some(JobReply {
            attempt: Some(stored.job.attempt),
            version: Some(stored.version),
            ..reply(&stored, JobStatus::Scheduled, false)
        }))
    }

    /// `attempt` reached `max_attempts`: the next attempt is parked with the consumer's error,
    /// and the home key fenced with a record of the failed attempt, in one transaction, so the
    /// job is parked or scheduled, never both. `redrive` sends it.
    async fn park_exhausted(
        &self,
        r: &Retry,
        job: Job,
        home: Partition,
        over: Over<'_>,
    ) -> Result<Option<JobReply>, HandlerError> {
        let now = self.clock.now();
        let parked = StoredJob {
            paused_at: None,
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
        let keep = self
            .config
            .history_keep_for(true)
            .unwrap_or(crate::config::RETRY_RECORD_KEEP);
        let fence = History {
            partition: home,
            version: over.version() + 1,
            attempt: r.attempt,
            ..History::of(&parked, HistoryStatus::Dispatched, now, None, keep)
        };
        if !self.store.park_exhausted(&parked, &fence, over).await? {
            return Ok(None);
        }
        debug!(queue = %r.queue, job_id = %r.job_id, attempts = r.attempt, "attempts exhausted; parked");
        Ok(Some(JobReply {
            duplicate: Some(false),
            ..exhausted_reply(r, &parked)
        }))
    }
}

/// The reply when the attempt after `r.attempt` exists already: the first reply again, with
/// `duplicate: true`.
fn retry_reply(r: &Retry, current: Option<&Current>) -> JobReply {
    let reply = match current {
        Some(Current::Stored(j)) if j.parked.as_ref().is_some_and(|p| p.code == ATTEMPTS_EXHAUSTED) => {
            exhausted_reply(r, j)
        }
        // SQS refused the attempt: it is parked like any refused job.
        Some(Current::Stored(j)) if j.parked.is_some() => describe(j),
        Some(Current::Stored(j)) => JobReply {
            perform_at: Some(j.job.perform_at),
            version: Some(j.version),
            ..status_only(JobStatus::Scheduled, &r.queue, &r.job_id)
        },
        Some(Current::Left(h)) => JobReply {
            perform_at: Some(h.perform_at),
            version: Some(h.version),
            message_id: h.message_id.clone().filter(|_| h.status == HistoryStatus::Dispatched),
            ..status_only(JobStatus::Scheduled, &r.queue, &r.job_id)
        },
        None => status_only(JobStatus::Scheduled, &r.queue, &r.job_id),
    };
    JobReply {
        duplicate: Some(true),
        attempt: Some(r.attempt + 1),
        ..reply
    }
}

fn exhausted_reply(r: &Retry, parked: &StoredJob) -> JobReply {
    JobReply {
        reason: Some(ATTEMPTS_EXHAUSTED.to_owned()),
        attempts: Some(r.attempt),
        attempt: Some(parked.job.attempt),
        parked_at: parked.parked.as_ref().map(|p| p.parked_at),
        ..status_only(JobStatus::Parked, &r.queue, &r.job_id)
    }
}

/// What an occurrence's first retry keeps of its series: its windows and its tags.
type SeriesKeeps = (Option<Windows>, Tags);

/// What the series among `found` (read with an occurrence's first retry), stored or its record,
/// passes to that retry: its windows and its tags.
fn series_keeps(found: &[Found]) -> SeriesKeeps {
    found
        .iter()
        .map(Current::of)
        .find(Current::is_series)
        .map(|series| {
            let tags = match &series {
                Current::Stored(j) => j.job.tags.clone(),
                Current::Left(h) => h.tags.clone(),
            };
            (series.windows(), tags)
        })
        .unwrap_or_default()
}

#[cfg(test)]
#[path = "retry_decide_tests.rs"]
mod decide_tests;
