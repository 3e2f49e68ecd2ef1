//! A partition's lease: taken before a run works the partition, released after it, and kept
//! when the run could not settle what it sent.

use std::collections::{HashMap, HashSet, VecDeque};

use chrono::{DateTime, TimeDelta, Utc};
use tracing::{debug, info, warn};

use super::*;
use crate::config::QueueName;
use crate::error::display_chain;
use crate::ports::{Clock, JobStore, Lease, LeaseOutcome, MessageQueue, Retired};

impl<S: JobStore, Q: MessageQueue, C: Clock> Dispatcher<S, Q, C> {
    pub(super) async fn run_partition(
        &self,
        queue: &QueueName,
        shard: u32,
        deadline: DateTime<Utc>,
        scope: &RunScope,
        others: std::sync::Arc<[u32]>,
        presence: roll_call::Presence,
    ) -> RunSummary {
        let owner = scope.owner.as_str();
        let mut sum = RunSummary {
            partitions: 1,
            ..RunSummary::default()
        };
        let now = self.clock.now();
        let stop_at = deadline - STOP_MARGIN;
        if now >= stop_at {
            return sum;
        }
        let window = TimeDelta::seconds(i64::from(if queue.is_fifo() {
            self.config.fifo_hold
        } else {
            self.config.lookahead
        }));
        let horizon_at = |now: DateTime<Utc>| {
            if queue.is_fifo() {
                now + window
            } else {
                to_end_of_second(now + window)
            }
        };
        let mut lease = Lease {
            owner: owner.to_owned(),
            until: deadline + LEASE_GRACE,
            horizon: horizon_at(now),
        };
        let mut handover_until: Option<DateTime<Utc>> = None;
        let (horizon, inherited, debts, previous) = loop {
            let attempt = self
                .within(
                    deadline - DRAIN_CUT,
                    self.store.acquire_lease(queue, shard, &lease, self.clock.now()),
                )
                .await;
            match attempt {
                Some(Ok(LeaseOutcome::Acquired {
                    horizon,
                    inherited,
                    debts,
                    previous,
                })) => break (horizon, inherited, debts, previous),
                Some(Ok(LeaseOutcome::Held(other))) => {
                    // A previous run about to finish its window (a FIFO hold, typically): take
                    // over when it ends rather than skip the partition for a whole interval.
                    let now = self.clock.now();
                    let wait_until = *handover_until.get_or_insert_with(|| {
                        other
                            .filter(|o| o.horizon <= now + HANDOVER_WAIT)
                            .map_or(now, |o| o.horizon + HANDOVER_SLACK)
                    });
                    if now >= wait_until || wait_until >= stop_at {
                        debug!(queue = %queue, shard, "partition busy: another poller holds its lease");
                        sum.busy_partitions = 1;
                        return sum;
                    }
                    self.clock.sleep_until((now + HANDOVER_POLL).min(wait_until)).await;
                    lease.horizon = horizon_at(self.clock.now());
                }
                Some(Err(e)) => {
                    report_error(&mut sum, queue, Some(shard), &e);
                    return sum;
                }
                None => {
                    // The lease may have been written: it lapses at `until`, and covers only
                    // jobs no run has sent, so keeping it is safe.
                    sum.errors.push(format!("{queue}#{shard}: taking the lease timed out"));
                    sum.drained = false;
                    return sum;
                }
            }
        };
        let mut run = PartitionRun {
            d: self,
            scope,
            queue,
            shard,
            horizon,
            inherited,
            previous,
            stop_at,
            pending: VecDeque::new(),
            pending_bytes: 0,
            deletes: Vec::new(),
            sending: 0,
            deleting: 0,
            seen: HashSet::new(),
            uncertain: false,
            left_behind: false,
            paused: false,
            blocked_groups: HashMap::new(),
            floors: crate::rate::Floors::default(),
            announced: false,
            gathered: false,
            budget_full: false,
            rank_wait: None,
            head_written: None,
            others,
            presence,
            started: now,
            summary: sum,
            due_again: 0,
        };
        // What the previous holder sent and could not remove goes first, and is not sent again.
        let settled = debts.is_empty() || self.settle_debts(&mut run, debts, deadline).await;
        let mut rounds = 0;
        let removed = loop {
            let worked = if settled {
                Some(self.within(deadline - DRAIN_CUT, run.drain()).await)
            } else {
                None
            };
            let drained = match worked {
                None => false,
                Some(Some(Ok(drained))) => drained,
                Some(Some(Err(e))) => {
                    report_error(&mut run.summary, queue, Some(shard), &e);
                    false
                }
                Some(None) => {
                    // Cut in the middle of a call: a send may have reached SQS.
                    warn!(queue = %queue, shard, "run cut at its deadline: a call did not answer in time");
                    run.summary.errors.push(format!(
                        "{queue}#{shard}: cut at the deadline (a call did not answer in time)"
                    ));
                    run.uncertain = true;
                    false
                }
            };
            run.summary.drained = drained;
            // A run that took over a lapsed lease keeps it until it has handled every job its
            // predecessor could have sent: a run that stopped short (failed, at its margin, at the
            // rate budget, with an entry left stored) may not have re-sent them all, and `cancel`
            // must keep answering `dispatching` for them.
            run.uncertain |= inherited.is_some() && !drained;
            // Whatever happened, remove what SQS already accepted.
            let removed = run.deletes.is_empty()
                || match self
                    .within(deadline - FLUSH_CUT, self.store.retire(queue, &run.deletes))
                    .await
                {
                    Some(Ok(())) => true,
                    Some(Err(e)) => {
                        report_error(&mut run.summary, queue, Some(shard), &e);
                        false
                    }
                    None => false,
                };
            // Series moved to an occurrence that is due already (`catch_up: all` walking its
            // missed ones, or `one` past its latest missed) send it in another round of this
            // run, once their moves are settled: one occurrence per series a round, up to
            // `MAX_CATCH_UP_PER_RUN` rounds. Under `WAITER_MAX_RATE` too, each round booking
            // as the first did, or a series the rate held back would stay behind for good.
            let again = std::mem::take(&mut run.due_again) > 0
                && drained
                && removed
                && !run.uncertain
                && rounds < crate::repeat::MAX_CATCH_UP_PER_RUN
                && self.clock.now() < stop_at;
            if !again {
                break removed;
            }
            rounds += 1;
            run.deletes.clear();
            run.seen.clear();
        };
        if !removed && !run.uncertain {
            // Only removals are left, and `deletes` names them all: hand them on with the lease,
            // so that the next run removes them and works the partition on time, instead of
            // waiting for this lease to lapse.
            let undeleted = run.deletes.len();
            // Lapsed already, so that the next run takes it at once.
            let until = self.clock.now() - TimeDelta::milliseconds(1);
            match self
                .within(
                    deadline - RELEASE_CUT,
                    self.store.hand_on(queue, shard, owner, &run.deletes, until),
                )
                .await
            {
                Some(Ok(true)) => {
                    warn!(queue = %queue, shard, undeleted, "removals failed: lease handed on with the jobs to remove");
                    run.summary.drained = false;
                    return run.summary;
                }
                Some(Ok(false)) => {}
                Some(Err(e)) => warn!(queue = %queue, shard, error = %display_chain(&e), "handing the lease on failed"),
                None => warn!(queue = %queue, shard, "handing the lease on timed out"),
            }
        }
        if removed && !run.uncertain {
            match self
                .within(
                    deadline - RELEASE_CUT,
                    self.store.release_lease(queue, shard, owner, run.held_back_from()),
                )
                .await
            {
                Some(Ok(())) => {}
                // It lapses for other pollers at `until`; cancel keeps answering `dispatching`
                // for its horizon until the next run of this partition releases it.
                Some(Err(e)) => warn!(queue = %queue, shard, error = %display_chain(&e), "lease release failed"),
                None => warn!(queue = %queue, shard, "lease release timed out"),
            }
        } else {
            // SQS may hold messages for jobs still stored: the lease item stays, so `cancel`
            // answers `dispatching` for them, until the next run re-sends, removes and releases.
            warn!(queue = %queue, shard, undeleted = run.deletes.len(), uncertain = run.uncertain, "lease kept: sent jobs may not be removed yet");
            run.summary.drained = false;
        }
        run.summary
    }

    /// Removes the jobs a lease was handed on with (each only if it still holds the edition
    /// that was sent). `false` when that failed: they are then this run's removals, kept out of
    /// its sends, and the run does nothing else.
    async fn settle_debts(
        &self,
        run: &mut PartitionRun<'_, S, Q, C>,
        debts: Vec<Retired>,
        deadline: DateTime<Utc>,
    ) -> bool {
        let (queue, shard) = (run.queue, run.shard);
        match self
            .within(deadline - DRAIN_CUT, self.store.retire(queue, &debts))
            .await
        {
            Some(Ok(())) => {
                info!(queue = %queue, shard, removed = debts.len(), "removed the jobs the lease was handed on with");
                true
            }
            failed => {
                if let Some(Err(e)) = &failed {
                    report_error(&mut run.summary, queue, Some(shard), e);
                }
                run.seen.extend(debts.iter().map(|r| r.key.job_id.clone()));
                run.deletes = debts;
                false
            }
        }
    }
}

/// The last instant of the second `t` is in: a standard run reads whole seconds of due jobs,
/// so that jobs due in one second (a herd) are read, ranked and booked by one run, never split
/// between two runs' lookaheads.
fn to_end_of_second(t: DateTime<Utc>) -> DateTime<Utc> {
    DateTime::from_timestamp(t.timestamp() + 1, 0).map_or(t, |end| end - TimeDelta::microseconds(1))
}
