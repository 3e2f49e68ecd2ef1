//! What leaves the table once SQS has a job: its removal (or its history record), and for a
//! series the move to its next occurrence, in the same conditional write (DESIGN "Recurring
//! jobs"). A series sends one occurrence per pass: the copy planned carries the occurrence and
//! where the series goes once SQS accepts it.

use chrono::{DateTime, Utc};
use tracing::debug;

use super::drain::PartitionRun;
use crate::ports::{Advance, Clock, History, HistoryStatus, JobStore, MessageQueue, Retired, StoredJob};
use crate::repeat::{Occurrence, Pass};

impl<S: JobStore, Q: MessageQueue, C: Clock> PartitionRun<'_, S, Q, C> {
    /// The job to plan: a one-off job as it is; for a series, a copy at the occurrence this pass
    /// sends. `None` when the series sends none now (missed ones `catch_up` skips): it is moved
    /// on, or finished, at once.
    pub(super) fn occurrence_of(&mut self, job: StoredJob, now: DateTime<Utc>) -> Option<StoredJob> {
        let Some(series) = &job.job.repeat else {
            return Some(job);
        };
        // A `trigger`'s extra occurrence first, at the instant it was asked for, outside the
        // windows and the catch-up (DESIGN "Run now"); the series' own pass comes after it.
        if let Some(extra) = job.job.pending_extra() {
            return Some(StoredJob { job: extra, ..job });
        }
        let from = series.from(job.job.perform_at);
        // A series held for its windows is stored at their opening.
        let opening = series.held.map(|_| job.job.perform_at);
        let step = series.step(from, opening, self.pass(now, series, from));
        match step.send {
            Some(at) => {
                let mut copy = job;
                // A held occurrence is due at the opening: handed over within the lookahead to
                // arrive then, as any job is, instead of moved to the same opening by every run
                // before it and sent by the first run after it.
                copy.job.perform_at = opening.map_or(at, |o| o.max(at));
                copy.job.occurrence = Some(Occurrence {
                    at,
                    next: step.next,
                    from,
                    skipped: step.skipped,
                    extra: false,
                });
                Some(copy)
            }
            None => {
                self.summary.skipped_occurrences += step.skipped;
                debug!(queue = %self.queue, job_id = %job.job.job_id, skipped = step.skipped, "missed occurrences skipped");
                self.leave(&job, step.next, 0, None, None);
                None
            }
        }
    }

    /// When `WAITER_MAX_RATE` held due jobs back in this run: where it judged occurrences on
    /// time from, which stay on time for the next run (`PreviousRun::on_time_from`).
    pub(super) fn held_back_from(&self) -> Option<DateTime<Utc>> {
        (self.budget_full || self.summary.held_back > 0).then(|| Pass::new(self.started, self.previous).on_time_from)
    }

    /// Which occurrences a pass at `now` over a series standing at `from` finds missed
    /// (`repeat::Pass`). The occurrences that fell due during one of the queue's last pauses are (DESIGN
    /// "Pause and resume": missed, sent as `catch_up` says): runs skip a paused queue without
    /// taking its leases, so the partition's previous run is the last one before the pause,
    /// and would count the whole pause as on time. An occurrence on time by the usual rule that
    /// fell due before the pause began is sent first; the pass after it finds the pause's ones
    /// missed.
    pub(super) fn pass(&self, now: DateTime<Utc>, series: &crate::repeat::Series, from: DateTime<Utc>) -> Pass {
        let mut pass = Pass::new(now, self.previous);
        // Whatever the previous run was (one after the resume may not have reached this series:
        // the rate held it back, or it crashed), the pauses' occurrences stay missed. Past one
        // pause, the next occurrence may fall in the one after it.
        let pauses = self.scope.gate.ended_pauses(self.queue);
        for _ in 0..=pauses.len() {
            let first_on_time = series.rule(from).at_or_after(pass.on_time_from.max(from));
            let held = pauses.iter().find(|(paused, resumed)| {
                *resumed > pass.on_time_from && first_on_time.is_none_or(|t| t >= *paused && t < *resumed)
            });
            let Some((_, resumed)) = held else { break };
            pass.on_time_from = pass.on_time_from.max((*resumed).min(now));
        }
        pass
    }

    /// Queues a job's removal; with history on (or for a retried job), its record is put in its
    /// place instead. A series' occurrence moves the series on instead.
    pub(super) fn retire(&mut self, job: &StoredJob, status: HistoryStatus, message_id: Option<String>) {
        match (job.job.occurrence, status) {
            (Some(o), HistoryStatus::Dispatched) => {
                self.summary.occurrences += 1;
                self.move_past(job, o, message_id);
            }
            _ => {
                let record = self.record(job, status, message_id);
                self.deletes.push(Retired {
                    key: job.key(),
                    edition: job.edition(),
                    record,
                    advance: None,
                });
            }
        }
    }

    /// A series past the occurrence `o` (sent, or parked alone): on to its next one, or for a
    /// `trigger`'s extra occurrence back to where it was, its `count` untouched.
    pub(super) fn move_past(&mut self, job: &StoredJob, o: Occurrence, message_id: Option<String>) {
        if o.extra {
            self.leave(job, o.next, 0, message_id, Some(o.at));
        } else {
            self.summary.skipped_occurrences += o.skipped;
            self.leave(job, o.next, 1, message_id, None);
        }
    }

    /// A series after a pass that sent `sent` occurrences: moved to `next`, or finished (its
    /// record says how many it sent). `extra_sent`: the pass sent a `trigger`'s extra occurrence
    /// at that instant, and `next` is where the item returns to.
    pub(super) fn leave(
        &mut self,
        job: &StoredJob,
        next: Option<DateTime<Utc>>,
        sent: u64,
        message_id: Option<String>,
        extra_sent: Option<DateTime<Utc>>,
    ) {
        let occurrences = job.job.repeat.as_ref().map_or(0, |s| s.occurrences) + sent;
        let now = self.d.clock.now();
        self.due_again += usize::from(next.is_some_and(|n| n <= now));
        // Sent ahead of its time: its message waits in SQS's delay after the move.
        let arriving_at = message_id.as_ref().map(|_| job.job.perform_at).filter(|t| *t > now);
        let (record, advance) = match next {
            Some(perform_at) => (
                None,
                Some(Advance {
                    perform_at,
                    occurrences,
                    arriving_at,
                    extra_sent,
                    tagged: !job.job.tags.is_empty(),
                }),
            ),
            None => {
                let mut done = job.clone();
                if let Some(s) = done.job.repeat.as_mut() {
                    s.occurrences = occurrences;
                }
                (self.record(&done, HistoryStatus::Finished, message_id), None)
            }
        };
        self.deletes.push(Retired {
            key: job.key(),
            edition: job.edition(),
            record,
            advance,
        });
    }

    fn record(&self, job: &StoredJob, status: HistoryStatus, message_id: Option<String>) -> Option<History> {
        let now = self.d.clock.now();
        let keeps = match status {
            HistoryStatus::Dispatched | HistoryStatus::Finished => job.job.keeps_record_when_sent(),
            HistoryStatus::Cancelled | HistoryStatus::Expired => job.job.keeps_record(),
        };
        self.d.config.history_keep_for(keeps).map(|keep| {
            History::of(job, status, now, message_id, keep).keeping_message(&job.job, self.d.config.history_body)
        })
    }
}
