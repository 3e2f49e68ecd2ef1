//! `pause`, `resume`, `queues` and `preview` (DESIGN "Steering the schedule").
//!
//! A queue's pause is one item (`Pauses`), checked before every send (`ports::PauseGate`); its
//! `pause` answers `PAUSE_SETTLE` after the write, so that no send admitted by an older check
//! starts after the answer. A job's pause is a field of the job (`paused_at`), written by the
//! same conditional write as a reschedule: never while a poller's lease covers the job (then
//! `dispatching`), and a poller skips a paused job as it re-reads it.

use chrono::{DateTime, Utc};
use futures::future::try_join_all;
use tracing::info;

use crate::config::QueueName;
use crate::error::{HandlerError, InvalidRequest, PortError};
use crate::ports::{Clock, JobStore, MessageQueue, ReplaceOutcome, StoredJob, PAUSE_SETTLE};
use crate::repeat::Pass;
use crate::wire::steer::PreviewQuery;
use crate::wire::PauseTarget;
use sqs_waiter_contract::{JobStatus, PauseReply, PreviewOccurrence, PreviewReply, QueueInfo, QueuesReply};

use super::Waiter;

/// Attempts at pausing or resuming a job that changes between its read and its write.
const STEER_ATTEMPTS: usize = 5;

fn answer(status: JobStatus, t: &PauseTarget) -> PauseReply {
    PauseReply {
        status,
        queue: t.queue.as_str().to_owned(),
        job_id: t.job_id.clone(),
        paused_at: None,
        version: None,
    }
}

/// A paused job resumed at `now`. A series goes on by its `catch_up`, as after an outage:
/// every occurrence that fell due during the pause is missed (a poller run found it paused),
/// so the series moves to what `catch_up` sends of them (`one`: the latest; `all`: each, from
/// where it stands; `skip`: none), or to its next occurrence. A series a window holds is left
/// to the poller, which sends the held occurrence at the opening. A `trigger`'s extra
/// occurrence that waited is sent once resumed (what `trigger` answered `dispatching` for); the
/// series returns to what `catch_up` chose after it.
fn resumed(current: &StoredJob, now: DateTime<Utc>) -> StoredJob {
    let mut next = StoredJob {
        paused_at: None,
        ..current.clone()
    };
    let moved = next
        .job
        .repeat
        .as_deref()
        .filter(|s| s.held.is_none())
        .and_then(|series| {
            let step = series.step(
                series.from(current.job.perform_at),
                None,
                Pass { now, on_time_from: now },
            );
            step.send.or(step.next)
        });
    if let Some(at) = moved {
        next.job.move_to(at);
    }
    next
}

impl<S: JobStore + Clone, Q: MessageQueue + Clone, C: Clock + Clone> Waiter<S, Q, C> {
    pub(super) async fn pause(&self, t: PauseTarget) -> Result<PauseReply, HandlerError> {
        let Some(job_id) = &t.job_id else {
            let paused_at = self.store.pause_queue(&t.queue, self.clock.now()).await?;
            // Sends admitted by a check older than this are under way by now (ports::pause).
            tokio::time::sleep(PAUSE_SETTLE).await;
            info!(queue = %t.queue, paused_at = %paused_at, "queue paused");
            return Ok(PauseReply {
                paused_at: Some(paused_at),
                ..answer(JobStatus::Paused, &t)
            });
        };
        let now = self.clock.now();
        self.steer_job(&t, job_id, |current| {
            current.paused_at.is_none().then(|| StoredJob {
                paused_at: Some(now),
                ..current.clone()
            })
        })
        .await
    }

    pub(super) async fn resume(&self, t: PauseTarget) -> Result<PauseReply, HandlerError> {
        let Some(job_id) = &t.job_id else {
            let was_paused = self.store.resume_queue(&t.queue, self.clock.now()).await?;
            info!(queue = %t.queue, was_paused, "queue resumed");
            return Ok(answer(JobStatus::Resumed, &t));
        };
        let now = self.clock.now();
        self.steer_job(&t, job_id, |current| {
            current.paused_at.is_some().then(|| resumed(current, now))
        })
        .await
    }

    /// Writes `change(current)` over a stored job (version + 1), or leaves a job it has nothing
    /// to change in (`None`) as it is; `paused` or `resumed` by the state it ends in.
    async fn steer_job(
        &self,
        t: &PauseTarget,
        job_id: &str,
        change: impl Fn(&StoredJob) -> Option<StoredJob>,
    ) -> Result<PauseReply, HandlerError> {
        let partitions = self.candidate_partitions(&t.queue, job_id).await?;
        for _ in 0..STEER_ATTEMPTS {
            let Some(current) = self.store.find(&t.queue, job_id, &partitions).await? else {
                return Ok(answer(JobStatus::NotFound, t));
            };
            let done = |j: &StoredJob| PauseReply {
                paused_at: j.paused_at,
                version: Some(j.version),
                ..answer(
                    if j.paused_at.is_some() {
                        JobStatus::Paused
                    } else {
                        JobStatus::Resumed
                    },
                    t,
                )
            };
            let Some(next) = change(&current) else {
                return Ok(done(&current));
            };
            let next = StoredJob {
                version: current.version + 1,
                ..next
            };
            // A pause must not slip under a run that holds the job (`replace` checks the
            // lease). A resume may: no run sends or moves a paused job, so none holds it.
            let outcome = if next.paused_at.is_some() {
                self.store.replace(&current, &next).await?
            } else {
                self.store.rewrite(&current, &next).await?
            };
            match outcome {
                ReplaceOutcome::Replaced => return Ok(done(&next)),
                ReplaceOutcome::Dispatching => return Ok(answer(JobStatus::Dispatching, t)),
                ReplaceOutcome::Changed => continue,
            }
        }
        Err(PortError::Throttled {
            operation: "pause",
            source: "the job changed under every attempt; retry".into(),
        }
        .into())
    }

    pub(super) async fn preview(&self, q: PreviewQuery) -> Result<PreviewReply, HandlerError> {
        let (series, first, zone, count) = match q {
            PreviewQuery::Schedule {
                series,
                first,
                zone,
                count,
            } => (*series, first, zone, count),
            PreviewQuery::Stored { queue, job_id, count } => {
                let partitions = self.candidate_partitions(&queue, &job_id).await?;
                let Some(found) = self.store.find(&queue, &job_id, &partitions).await? else {
                    return Ok(PreviewReply {
                        occurrences: Vec::new(),
                        status: Some(JobStatus::NotFound),
                    });
                };
                let Some(series) = found.job.repeat else {
                    return Err(InvalidRequest::new(
                        "job_id",
                        "names a one-off job: only a series has occurrences to preview",
                    )
                    .into());
                };
                let first = series.from(found.job.perform_at);
                (*series, first, chrono_tz::Tz::UTC, count)
            }
        };
        let occurrences = crate::repeat::preview(&series, first, zone, count)
            .into_iter()
            .map(|p| PreviewOccurrence {
                at: p.at,
                local: p.local,
                shifted: p.shifted,
            })
            .collect();
        Ok(PreviewReply {
            occurrences,
            status: None,
        })
    }

    /// The queues the function serves, or only `only` (a queue's alias, which sees its own
    /// queue alone): the other queues' tables are not read, so none of their failures, nor
    /// their names, reach a caller who may not see them (issue 82, defect 14).
    pub(super) async fn queues(&self, only: Option<&QueueName>) -> Result<QueuesReply, HandlerError> {
        let served = self.config.queues.iter().filter(|q| only.is_none_or(|o| o == *q));
        let queues = try_join_all(served.map(|q: &QueueName| async move {
            let paused_at = self.store.queue_paused(q).await?;
            Ok::<_, PortError>(QueueInfo {
                queue: q.as_str().to_owned(),
                fifo: q.is_fifo(),
                paused: paused_at.is_some(),
                paused_at,
            })
        }))
        .await?;
        Ok(QueuesReply { queues })
    }
}
