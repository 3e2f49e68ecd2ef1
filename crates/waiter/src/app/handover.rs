//! Handing a stored job due within the lookahead to SQS at once, as a poller run would, for the
//! actions that store or move one near (`reschedule`, `retry`).

use chrono::{DateTime, TimeDelta, Utc};
use tracing::debug;

use crate::app::Waiter;
use crate::poller::Dispatcher;
use crate::ports::{Clock, JobStore, MessageQueue, Partition, StoredJob};

/// The longest an action spends handing a job near over to SQS itself.
/// How long a call waits for a poller to finish handing a job over before it looks again.
pub(super) const HANDOVER_RECHECK: std::time::Duration = std::time::Duration::from_millis(250);
pub(super) const HANDOVER_BUDGET: TimeDelta = TimeDelta::seconds(10);

impl<S, Q, C> Waiter<S, Q, C>
where
    S: JobStore + Clone,
    Q: MessageQueue + Clone,
    C: Clock + Clone,
{
    /// A job stored or moved within the lookahead may fall between two poller runs: work its shard
    /// now, as a poller run would (same lease, same order), so it is sent on time. If a poller
    /// holds the shard, that run or the next one sends it. Not with `WAITER_MAX_RATE`: the
    /// poller sends the job (late by at most one interval). This was needed while the budget
    /// lived in the poller's process; since it is the table's ledger, a run here would keep the
    /// rate too, and handing over with a rate is left as a possible change.
    pub(super) async fn hand_over_if_near(&self, job: &StoredJob, cut: DateTime<Utc>) {
        let now = self.clock.now();
        let (Partition::Shard(shard), false, None) = (&job.partition, job.job.queue.is_fifo(), self.config.max_rate)
        else {
            return;
        };
        if self.config.lookahead == 0 || job.job.perform_at > now + TimeDelta::seconds(i64::from(self.config.lookahead))
        {
            return;
        }
        let dispatcher = Dispatcher::new(
            self.config.clone(),
            self.store.clone(),
            self.queue.clone(),
            self.clock.clone(),
        );
        // On the heap: a poller run is a large future, and inline it would grow every action's
        // future that may hand over (reschedule, retry), and so the invocation's.
        let summary = Box::pin(dispatcher.run_shard(&job.job.queue, *shard, cut.min(now + HANDOVER_BUDGET))).await;
        debug!(
            queue = %job.job.queue,
            shard,
            dispatched = summary.dispatched,
            busy = summary.busy_partitions > 0,
            errors = summary.errors.len(),
            "handed over the shard of a job due near"
        );
    }
}
