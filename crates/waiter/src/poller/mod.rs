//! The poller's dispatch loop: fan-out over partitions (here), each partition's lease
//! (`lease`), its run (`drain`) and the pure planning of sends (`plan`).
//!
//! Per (queue, shard) partition, one run:
//! 1. takes the partition's lease (a conditional write), so two pollers never work it at once;
//! 2. pages through `scheduler-perform_at-index` for jobs with `perform_at <= now + window`;
//! 3. plans each job's send instant so that the time left is a whole number of seconds
//!    (standard queues) or the job is due (FIFO), and groups jobs with nearby instants into
//!    batches of at most 10 entries and 1 MiB;
//! 4. sends each batch at its instant, then removes the accepted entries, 25 at a time, each by
//!    a conditional write that is skipped if its key holds another edition by then.
//!
//! The steps overlap: the next page is read while batches are in flight, several batches are in
//! flight at once, and deletes go out while later batches are sent (see `PartitionRun::drain`).
//! A job leaves the table only after SQS accepted it. A crash re-sends at most the entries not
//! yet deleted: see `MAX_UNDELETED_PER_PARTITION`.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, TimeDelta, Utc};
use futures::{stream, StreamExt};
use serde::Serialize;
use tracing::{debug, error};

use crate::config::{Config, QueueName};
use crate::error::{display_chain, PortError};
use crate::limits::SQS_MAX_BATCH_ENTRIES;
use crate::ports::{Clock, JobStore, MessageQueue, PauseGate, StoredJob};
use crate::time::seconds_between;

mod call;
mod drain;
pub mod groups;
mod lease;
#[cfg(test)]
mod meeting_tests;
mod park;
mod plan;
mod prepare;
mod rank;
mod retire;
mod roll_call;
mod send;
#[cfg(test)]
mod tests;
mod untouched;

use drain::PartitionRun;
pub use groups::PollerGroup;
pub use plan::{batch_len, next_batch};
use plan::{fate_at, plan, Plan};
pub use rank::SEND_GUARD;

/// Jobs whose send instants lie this close together share a batch; it is also the most a job is
/// held back past its instant by batching.
pub const BATCH_WINDOW: TimeDelta = TimeDelta::milliseconds(40);
/// Stop starting batches this long before the Lambda deadline. What was started is cut at
/// instants of its own before the deadline (below), so a run always ends inside its budget,
/// even when a call never answers: the drain at `DRAIN_CUT`, the final delete flush at
/// `FLUSH_CUT`, the lease release at `RELEASE_CUT`. Whatever a cut leaves undone is safe: the
/// lease item stays (cancel answers `dispatching`) and the next run re-sends and removes it.
pub const STOP_MARGIN: TimeDelta = TimeDelta::seconds(3);
pub const DRAIN_CUT: TimeDelta = TimeDelta::milliseconds(2_000);
pub const FLUSH_CUT: TimeDelta = TimeDelta::milliseconds(1_000);
pub const RELEASE_CUT: TimeDelta = TimeDelta::milliseconds(400);
/// How often a FIFO run holding for due jobs re-reads the index for jobs enqueued meanwhile.
pub const FIFO_REQUERY: TimeDelta = TimeDelta::seconds(1);
/// A lease outlives its run's deadline by this much (clock skew between pollers).
pub const LEASE_GRACE: TimeDelta = TimeDelta::seconds(5);
/// A busy partition whose holder's window ends within this long is taken over when it ends.
pub const HANDOVER_WAIT: TimeDelta = TimeDelta::seconds(5);
/// How long past the holder's window end a successor keeps trying to take over.
const HANDOVER_SLACK: TimeDelta = TimeDelta::seconds(2);
const HANDOVER_POLL: TimeDelta = TimeDelta::milliseconds(100);
/// Lateness values kept per run for the metric.
const LATENESS_SAMPLE: usize = 100;
/// The next index page is read while fewer jobs than this are planned (and fewer bytes than
/// `MAX_PENDING_BYTES`): what a partition holds is this plus one page (500 items, see the
/// DynamoDB adapter), however deep the backlog.
const READ_AHEAD: usize = 1_000;
const MAX_PENDING_BYTES: usize = 8 << 20;
/// `SendMessageBatch` calls a standard-queue partition has in flight at once, at most (see
/// `QUICK_SEND`). At 15 ms a call, 4 × 10 entries make about 2 700 jobs/s per partition.
pub const SENDS_IN_FLIGHT: usize = 4;
/// A `SendMessageBatch` answered within this lets the partition put one more batch in flight
/// (up to `SENDS_IN_FLIGHT`); a slower one takes it back to one.
pub const QUICK_SEND: TimeDelta = TimeDelta::milliseconds(250);
/// Sent jobs handed to the store's removal (`retire`) at once.
pub const REMOVALS_PER_CALL: usize = 25;
/// `retire` calls in flight at once per partition: 2 × 25 keeps up with 4 × 10.
pub const DELETES_IN_FLIGHT: usize = 2;
/// Removals a partition run sends again after a retryable failure (the store's own retries
/// spent: a throttle, a timeout) before it stops starting calls; the run's closing flush and
/// the lease's debts remain after that.
pub const REMOVAL_RETRIES: u32 = 3;
/// A crash re-sends at most this many jobs per partition: the batches in flight, the deletes in
/// flight and a delete call not yet full. A batch is started only while it keeps the jobs sent
/// and not yet removed within this bound.
pub const MAX_UNDELETED_PER_PARTITION: usize =
    SENDS_IN_FLIGHT * SQS_MAX_BATCH_ENTRIES + DELETES_IN_FLIGHT * REMOVALS_PER_CALL + REMOVALS_PER_CALL - 1;

/// What one poller run did. Serialised as the poller's reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunSummary {
    /// The poller group this run worked (`{"group": i, "groups": n}` in the reply); none: every
    /// partition.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub group: Option<PollerGroup>,
    /// Messages SQS accepted.
    pub dispatched: u64,
    /// Jobs dropped because they would have been sent after `expires_at`.
    pub expired: u64,
    /// Jobs SQS rejected permanently, moved to the parked partition.
    pub parked: u64,
    /// Entries that failed for a retryable reason; they stay stored for the next run.
    pub failed: u64,
    /// Jobs found outside their time windows, moved to the next opening instead of sent.
    pub moved: u64,
    /// Jobs whose arrival second `WAITER_MAX_RATE` had no room in: moved to a later second, or
    /// left for a later run.
    pub held_back: u64,
    /// Items of a later release's format (or damaged) met and left untouched: not sent,
    /// removed or rewritten (docs/upgrades.md). The `Unreadable` metric and its alarm.
    pub unreadable: u64,
    /// Occurrences of series that SQS accepted (counted in `dispatched` too).
    pub occurrences: u64,
    /// Missed occurrences of series that `catch_up` left unsent.
    pub skipped_occurrences: u64,
    /// Partitions (queue × shard) worked.
    pub partitions: u32,
    /// Partitions skipped because another poller holds their lease.
    pub busy_partitions: u32,
    /// Whether every due job this run was responsible for was handed over.
    pub drained: bool,
    /// How overdue the oldest job found was, in seconds (0 when none was overdue).
    pub backlog_age_s: f64,
    /// The same, leaving out the jobs `WAITER_MAX_RATE` held back (their wait is the rate's, by
    /// design): only a job sent in the second it wanted counts. The `BacklogAge` metric and its
    /// alarm; equal to `backlog_age_s` without a rate.
    pub overdue_beyond_rate_s: f64,
    /// Largest lateness (arrival after `perform_at`) of a dispatched job, in milliseconds.
    pub max_lateness_ms: f64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// Queues this run found paused and left alone.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub paused_queues: Vec<String>,
    /// How long the queue has been paused, in seconds (one queue's summary; the `PausedFor`
    /// metric), not serialised.
    #[serde(skip)]
    pub paused_for_s: Option<f64>,
    /// Strongly consistent reads of queue pause items this run made (the bench's price of
    /// the pause check), not serialised.
    #[serde(skip)]
    pub pause_checks: u64,
    /// Lateness of the first dispatched jobs (for the `Lateness` metric), not serialised.
    #[serde(skip)]
    pub lateness_sample_ms: Vec<f64>,
    /// Lateness samples by priority class (`rate::priority_class`), not serialised.
    #[serde(skip)]
    pub lateness_by_class: BTreeMap<&'static str, Vec<f64>>,
    /// The same per queue, merged as the run's total is, for the per-queue metrics (the
    /// dashboard), not serialised.
    #[serde(skip)]
    pub by_queue: BTreeMap<String, RunSummary>,
}

impl RunSummary {
    fn merge(&mut self, o: RunSummary) {
        self.dispatched += o.dispatched;
        self.expired += o.expired;
        self.parked += o.parked;
        self.failed += o.failed;
        self.moved += o.moved;
        self.held_back += o.held_back;
        self.unreadable += o.unreadable;
        self.occurrences += o.occurrences;
        self.skipped_occurrences += o.skipped_occurrences;
        self.partitions += o.partitions;
        self.busy_partitions += o.busy_partitions;
        self.drained &= o.drained;
        self.backlog_age_s = self.backlog_age_s.max(o.backlog_age_s);
        self.overdue_beyond_rate_s = self.overdue_beyond_rate_s.max(o.overdue_beyond_rate_s);
        self.max_lateness_ms = self.max_lateness_ms.max(o.max_lateness_ms);
        self.errors.extend(o.errors);
        self.paused_queues.extend(o.paused_queues);
        self.paused_for_s = match (self.paused_for_s, o.paused_for_s) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.pause_checks += o.pause_checks;
        let room = LATENESS_SAMPLE.saturating_sub(self.lateness_sample_ms.len());
        self.lateness_sample_ms
            .extend(o.lateness_sample_ms.into_iter().take(room));
        for (class, sample) in o.lateness_by_class {
            let mine = self.lateness_by_class.entry(class).or_default();
            let room = LATENESS_SAMPLE.saturating_sub(mine.len());
            mine.extend(sample.into_iter().take(room));
        }
    }
}

/// A due job and the instant it should be sent.
#[derive(Debug, Clone)]
pub struct Planned {
    pub send_at: DateTime<Utc>,
    pub job: StoredJob,
    pub bytes: usize,
    /// The arrival second `WAITER_MAX_RATE` moved it to (standard queues): its delay is taken
    /// from the instant of the send itself, so that it lands in that second.
    pub arrive_in: Option<i64>,
    /// Ranked: the second booked for it ahead of its send (`rank::book_ahead`), and the one it
    /// wanted.
    pub booked: Option<(i64, i64)>,
    /// How overdue it was when read (0 if not): the run's `overdue_beyond_rate_s` counts it,
    /// under `WAITER_MAX_RATE` only once it is sent in the second it wanted.
    pub overdue_s: f64,
}

impl Planned {
    /// The order sends start in: by the instant to send, then by the job's own time and id. A
    /// FIFO group's overdue jobs all send now, and their re-read answers in no order
    /// (BatchGetItem keeps none; DynamoDB Local gave a group reversed), so their own times keep the
    /// group in order.
    pub fn send_order(&self) -> (DateTime<Utc>, DateTime<Utc>, &str) {
        (self.send_at, self.job.job.perform_at, &self.job.job.job_id)
    }
}

/// Each message moved to a booked second gets the delay that lands it there when sent at
/// `sent_at` (the booking was made a call earlier, maybe across a second's boundary). A moved
/// job's second is after the one it is due in, so its start is never early.
fn pin_arrivals(call: &call::Call, messages: &mut [crate::ports::OutgoingMessage], sent_at: DateTime<Utc>) {
    for ((p, _), m) in call.iter().zip(messages.iter_mut()) {
        if let (Some(second), Some(_)) = (p.arrive_in, m.delay_seconds) {
            let delay = (second - sent_at.timestamp()).clamp(0, i64::from(crate::limits::SQS_MAX_DELAY_SECONDS));
            m.delay_seconds = Some(delay as u32);
        }
    }
}

/// When a call of jobs booked into arrival seconds may start: not within `SEND_GUARD` of a
/// second's end, where the time the request takes to reach SQS (which starts the delay when it
/// receives it) would move the arrivals into the next second, past its budget. Such a call
/// waits for the next second (its delays are then one shorter).
async fn clear_of_second_end<C: Clock>(clock: &C, call: &call::Call) -> DateTime<Utc> {
    let now = clock.now();
    let pinned = call.iter().any(|(p, _)| prepare::pinned(p));
    let into_second = TimeDelta::milliseconds(i64::from(now.timestamp_subsec_millis()));
    if !pinned || into_second < TimeDelta::seconds(1) - rank::SEND_GUARD {
        return now;
    }
    let next = DateTime::from_timestamp(now.timestamp() + 1, 0).unwrap_or(now);
    clock.sleep_until(next).await;
    clock.now()
}

/// What every partition of one run shares: the run's lease owner and its pause checks; and,
/// for `trigger`, the job whose message id the run reports, which the run reads by its key
/// (the due index lags behind the write that just made it due).
pub(super) struct RunScope {
    pub(super) owner: String,
    pub(super) gate: PauseGate,
    pub(super) watch: Option<crate::ports::JobKey>,
    pub(super) watched: std::sync::Mutex<Option<String>>,
}

impl RunScope {
    fn new() -> Self {
        Self {
            owner: uuid::Uuid::new_v4().to_string(),
            gate: PauseGate::new(),
            watch: None,
            watched: std::sync::Mutex::default(),
        }
    }

    /// SQS accepted `job`'s message as this one: the watched job's, if it is that job (for a
    /// series, its extra occurrence, not a regular one sent by the same run).
    pub(super) fn saw(&self, job: &crate::job::Job, message_id: &str) {
        let watched_job = self.watch.as_ref().is_some_and(|k| k.job_id == job.job_id);
        if watched_job && job.occurrence.is_none_or(|o| o.extra) {
            if let Ok(mut watched) = self.watched.lock() {
                watched.get_or_insert_with(|| message_id.to_owned());
            }
        }
    }
}

pub struct Dispatcher<S, Q, C> {
    pub config: Arc<Config>,
    pub store: S,
    pub queue: Q,
    pub clock: C,
}

impl<S: JobStore, Q: MessageQueue, C: Clock> Dispatcher<S, Q, C> {
    pub fn new(config: Arc<Config>, store: S, queue: Q, clock: C) -> Self {
        Self {
            config,
            store,
            queue,
            clock,
        }
    }

    /// One poller run over every managed queue and shard.
    pub async fn run(&self, deadline: DateTime<Utc>) -> RunSummary {
        self.run_group(deadline, None).await
    }

    /// One poller run over the partitions of `group` (every managed queue and shard without
    /// one). Standard and FIFO partitions have a pool of `WAITER_CONCURRENCY` each, so FIFO runs
    /// holding for due jobs never delay the standard ones.
    pub async fn run_group(&self, deadline: DateTime<Utc>, group: Option<PollerGroup>) -> RunSummary {
        let scope = &RunScope::new();
        let gate = &scope.gate;
        let mut total = RunSummary {
            group,
            drained: true,
            ..RunSummary::default()
        };
        let (mut standard, mut fifo) = (Vec::new(), Vec::new());
        for q in &self.config.queues {
            match self.within(deadline - DRAIN_CUT, gate.paused(&self.store, q)).await {
                Some(Ok(None)) => {}
                Some(Ok(Some(since))) => {
                    debug!(queue = %q, paused_at = %since, "queue paused: left alone");
                    let paused = RunSummary {
                        paused_queues: vec![q.to_string()],
                        paused_for_s: Some(seconds_between(since, self.clock.now()).max(0.0)),
                        drained: true,
                        ..RunSummary::default()
                    };
                    total.by_queue.entry(q.to_string()).or_default().merge(paused.clone());
                    total.merge(paused);
                    continue;
                }
                Some(Err(e)) => {
                    report_error(&mut total, q, None, &e);
                    continue;
                }
                None => {
                    total.errors.push(format!("{q}: reading its pause timed out"));
                    total.drained = false;
                    continue;
                }
            }
            // Every shard any past WAITER_SHARDS value maps to, so that no shard is left unread.
            let current = self.config.shards_for(q);
            let shards = match self
                .within(deadline - DRAIN_CUT, self.store.shard_counts(q, current))
                .await
            {
                Some(Ok(counts)) => counts.into_iter().max().unwrap_or(current),
                Some(Err(e)) => {
                    report_error(&mut total, q, None, &e);
                    current
                }
                None => {
                    total.errors.push(format!("{q}: reading the shard counts timed out"));
                    total.drained = false;
                    continue;
                }
            };
            let target = if q.is_fifo() { &mut fifo } else { &mut standard };
            // The queue's partitions that other groups work: a ranked partition waits for them
            // to check in before it books.
            let others: std::sync::Arc<[u32]> = (0..shards).filter(|s| !groups::owns(group, q, *s)).collect();
            // And the ones this run works: they wait for each other in memory.
            let roll_call = roll_call::RollCall::default();
            target.extend(
                (0..shards)
                    .filter(|s| groups::owns(group, q, *s))
                    .map(|s| (q.clone(), s, others.clone(), roll_call.clone())),
            );
        }
        let pool = |partitions: Vec<(QueueName, u32, std::sync::Arc<[u32]>, roll_call::RollCall)>| {
            stream::iter(partitions)
                .map(move |(q, s, others, roll_call)| {
                    // Enrolled as it starts (the pool fills every free place before it polls).
                    let presence = roll_call.enrol(s);
                    async move { (self.run_partition(&q, s, deadline, scope, others, presence).await, q) }
                })
                .buffer_unordered(self.config.concurrency as usize)
        };
        let mut results = stream::select(pool(standard), pool(fifo));
        while let Some((part, queue)) = results.next().await {
            total.by_queue.entry(queue.to_string()).or_default().merge(part.clone());
            total.merge(part);
        }
        total.pause_checks = gate.reads();
        total
    }

    /// Runs `f` until the clock reaches `until`; `None` if it was cut (or never started).
    async fn within<T>(&self, until: DateTime<Utc>, f: impl std::future::Future<Output = T>) -> Option<T> {
        crate::ports::within(&self.clock, until, f).await
    }

    /// One shard of one queue, worked as a poller run works it (`reschedule` uses it for a job
    /// it moved near).
    pub async fn run_shard(&self, queue: &QueueName, shard: u32, deadline: DateTime<Utc>) -> RunSummary {
        self.run_shard_watching(queue, shard, deadline, None).await.0
    }

    /// `run_shard`, with the id of the message SQS accepted for job `watch`, if this run sent it
    /// (`trigger`).
    pub async fn run_shard_watching(
        &self,
        queue: &QueueName,
        shard: u32,
        deadline: DateTime<Utc>,
        watch: Option<&crate::ports::JobKey>,
    ) -> (RunSummary, Option<String>) {
        let alone = roll_call::RollCall::default().enrol(shard);
        let scope = RunScope {
            watch: watch.cloned(),
            ..RunScope::new()
        };
        // Read before the run plans anything, as a regular run reads it: the queue's last resume
        // decides which occurrences are missed (`PartitionRun::pass`), and a paused queue is
        // left alone.
        match scope.gate.paused(&self.store, queue).await {
            Ok(None) => {}
            Ok(Some(since)) => {
                let paused = RunSummary {
                    paused_queues: vec![queue.to_string()],
                    paused_for_s: Some(seconds_between(since, self.clock.now()).max(0.0)),
                    drained: true,
                    ..RunSummary::default()
                };
                return (paused, None);
            }
            Err(e) => {
                let mut failed = RunSummary::default();
                report_error(&mut failed, queue, Some(shard), &e);
                return (failed, None);
            }
        }
        let summary = self
            .run_partition(queue, shard, deadline, &scope, std::sync::Arc::from([]), alone)
            .await;
        let watched = scope.watched.lock().ok().and_then(|w| w.clone());
        (summary, watched)
    }
}
/// Records a partition's error in the summary and the log, with its source chain.
fn report_error(sum: &mut RunSummary, queue: &QueueName, shard: Option<u32>, e: &PortError) {
    let chain = display_chain(e);
    match shard {
        Some(shard) => {
            error!(queue = %queue, shard, retryable = e.is_retryable(), error = %chain, "partition stopped");
            sum.errors.push(format!("{queue}#{shard}: {chain}"));
        }
        None => {
            error!(queue = %queue, retryable = e.is_retryable(), error = %chain, "queue skipped");
            sum.errors.push(format!("{queue}: {chain}"));
        }
    }
    sum.drained = false;
}
