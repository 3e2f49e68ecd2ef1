//! The poller's dispatch loop.
//!
//! Per (queue, shard) partition, one run:
//! 1. takes the partition's lease (a conditional write), so two pollers never work it at once;
//! 2. pages through `scheduler-perform_at-index` for jobs with `perform_at <= now + window`;
//! 3. plans each job's send instant so that the time left is a whole number of seconds
//!    (standard queues) or the job is due (FIFO), and groups jobs with nearby instants into
//!    batches of at most 10 entries and 1 MiB;
//! 4. sends each batch at its instant, then deletes the accepted entries (BatchWriteItem of 25).
//!
//! The steps overlap: the next page is read while batches are in flight, several batches are in
//! flight at once, and deletes go out while later batches are sent (see `PartitionRun::drain`).
//! A job leaves the table only after SQS accepted it. A crash re-sends at most the entries not
//! yet deleted: see `MAX_UNDELETED_PER_PARTITION`.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use chrono::{DateTime, TimeDelta, Utc};
use futures::future::BoxFuture;
use futures::stream::{BoxStream, FuturesUnordered};
use futures::{stream, StreamExt};
use serde::Serialize;
use tracing::{debug, error, info, warn};

use crate::config::{Config, QueueName};
use crate::error::{display_chain, PortError};
use crate::limits::{DDB_MAX_BATCH_WRITE_ITEMS, SQS_MAX_BATCH_ENTRIES, SQS_MAX_DELAY_SECONDS, SQS_MAX_MESSAGE_BYTES};
use crate::ports::{
    Clock, EntryOutcome, History, HistoryStatus, JobKey, JobStore, Lease, LeaseOutcome, MessageQueue, OutgoingMessage,
    ParkInfo, ReplaceOutcome, Retired, StoredJob,
};
use crate::rate::ArrivalBudget;
use crate::routing::{aligned_send_instant, delay_for};
use crate::time::seconds_between;

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
/// `BatchWriteItem` calls removing sent jobs in flight at once per partition: 2 × 25 keeps up
/// with 4 × 10.
pub const DELETES_IN_FLIGHT: usize = 2;
/// A crash re-sends at most this many jobs per partition: the batches in flight, the deletes in
/// flight and a delete call not yet full. A batch is started only while it keeps the jobs sent
/// and not yet removed within this bound.
pub const MAX_UNDELETED_PER_PARTITION: usize =
    SENDS_IN_FLIGHT * SQS_MAX_BATCH_ENTRIES + DELETES_IN_FLIGHT * DDB_MAX_BATCH_WRITE_ITEMS + DDB_MAX_BATCH_WRITE_ITEMS
        - 1;

/// What one poller run did. Serialised as the poller's reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunSummary {
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
    /// Partitions (queue × shard) worked.
    pub partitions: u32,
    /// Partitions skipped because another poller holds their lease.
    pub busy_partitions: u32,
    /// Whether every due job this run was responsible for was handed over.
    pub drained: bool,
    /// How overdue the oldest job found was, in seconds (0 when none was overdue).
    pub backlog_age_s: f64,
    /// Largest lateness (arrival after `perform_at`) of a dispatched job, in milliseconds.
    pub max_lateness_ms: f64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
    /// Lateness of the first dispatched jobs (for the `Lateness` metric), not serialised.
    #[serde(skip)]
    pub lateness_sample_ms: Vec<f64>,
}

impl RunSummary {
    fn merge(&mut self, o: RunSummary) {
        self.dispatched += o.dispatched;
        self.expired += o.expired;
        self.parked += o.parked;
        self.failed += o.failed;
        self.moved += o.moved;
        self.partitions += o.partitions;
        self.busy_partitions += o.busy_partitions;
        self.drained &= o.drained;
        self.backlog_age_s = self.backlog_age_s.max(o.backlog_age_s);
        self.max_lateness_ms = self.max_lateness_ms.max(o.max_lateness_ms);
        self.errors.extend(o.errors);
        let room = LATENESS_SAMPLE.saturating_sub(self.lateness_sample_ms.len());
        self.lateness_sample_ms
            .extend(o.lateness_sample_ms.into_iter().take(room));
    }
}

/// A due job and the instant it should be sent.
#[derive(Debug, Clone)]
pub struct Planned {
    pub send_at: DateTime<Utc>,
    pub job: StoredJob,
    pub bytes: usize,
}

pub struct Dispatcher<S, Q, C> {
    pub config: Arc<Config>,
    pub store: S,
    pub queue: Q,
    pub clock: C,
    /// `WAITER_MAX_RATE`'s arrivals per second per queue, kept across runs of this process.
    pub budget: Option<ArrivalBudget>,
}

impl<S: JobStore, Q: MessageQueue, C: Clock> Dispatcher<S, Q, C> {
    pub fn new(config: Arc<Config>, store: S, queue: Q, clock: C) -> Self {
        Self {
            budget: config.max_rate.map(ArrivalBudget::new),
            config,
            store,
            queue,
            clock,
        }
    }

    /// One poller run over every managed queue and shard. Standard and FIFO partitions have a
    /// pool of `WAITER_CONCURRENCY` each, so FIFO runs holding for due jobs never delay the
    /// standard ones.
    pub async fn run(&self, deadline: DateTime<Utc>) -> RunSummary {
        let owner = uuid::Uuid::new_v4().to_string();
        let mut total = RunSummary {
            drained: true,
            ..RunSummary::default()
        };
        let (mut standard, mut fifo) = (Vec::new(), Vec::new());
        for q in &self.config.queues {
            // Every shard any past WAITER_SHARDS value maps to, so that no shard is left unread.
            let shards = match self
                .within(deadline - DRAIN_CUT, self.store.shard_counts(q, self.config.shards))
                .await
            {
                Some(Ok(counts)) => counts.into_iter().max().unwrap_or(self.config.shards),
                Some(Err(e)) => {
                    report_error(&mut total, q, None, &e);
                    self.config.shards
                }
                None => {
                    total.errors.push(format!("{q}: reading the shard counts timed out"));
                    total.drained = false;
                    continue;
                }
            };
            let target = if q.is_fifo() { &mut fifo } else { &mut standard };
            target.extend((0..shards).map(|s| (q.clone(), s)));
        }
        let pool = |partitions: Vec<(QueueName, u32)>| {
            let owner = owner.clone();
            stream::iter(partitions)
                .map(move |(q, s)| {
                    let owner = owner.clone();
                    async move { self.run_partition(&q, s, deadline, &owner).await }
                })
                .buffer_unordered(self.config.concurrency as usize)
        };
        let mut results = stream::select(pool(standard), pool(fifo));
        while let Some(part) = results.next().await {
            total.merge(part);
        }
        total
    }

    /// Runs `f` until the clock reaches `until`; `None` if it was cut (or never started).
    async fn within<T>(&self, until: DateTime<Utc>, f: impl std::future::Future<Output = T>) -> Option<T> {
        within(&self.clock, until, f).await
    }

    /// One shard of one queue, worked as a poller run works it (`reschedule` uses it for a job
    /// it moved near).
    pub async fn run_shard(&self, queue: &QueueName, shard: u32, deadline: DateTime<Utc>) -> RunSummary {
        let owner = uuid::Uuid::new_v4().to_string();
        self.run_partition(queue, shard, deadline, &owner).await
    }

    async fn run_partition(&self, queue: &QueueName, shard: u32, deadline: DateTime<Utc>, owner: &str) -> RunSummary {
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
        let mut lease = Lease {
            owner: owner.to_owned(),
            until: deadline + LEASE_GRACE,
            horizon: now + window,
        };
        let mut handover_until: Option<DateTime<Utc>> = None;
        let (horizon, inherited) = loop {
            let attempt = self
                .within(
                    deadline - DRAIN_CUT,
                    self.store.acquire_lease(queue, shard, &lease, self.clock.now()),
                )
                .await;
            match attempt {
                Some(Ok(LeaseOutcome::Acquired { horizon, inherited })) => break (horizon, inherited),
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
                    lease.horizon = self.clock.now() + window;
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
            queue,
            shard,
            horizon,
            stop_at,
            pending: VecDeque::new(),
            pending_bytes: 0,
            deletes: Vec::new(),
            sending: 0,
            deleting: 0,
            seen: HashSet::new(),
            uncertain: false,
            left_behind: false,
            summary: sum,
        };
        let drained = match self.within(deadline - DRAIN_CUT, run.drain()).await {
            Some(Ok(drained)) => drained,
            Some(Err(e)) => {
                report_error(&mut run.summary, queue, Some(shard), &e);
                // A run that took over a lapsed lease may have failed before re-sending what
                // its predecessor sent and did not remove: then the marker stays.
                run.uncertain |= inherited;
                false
            }
            None => {
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
        if removed && !run.uncertain {
            match self
                .within(deadline - RELEASE_CUT, self.store.release_lease(queue, shard, owner))
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
}

/// Runs `f` until `clock` reaches `until`; `None` if it was cut, or if `until` had passed
/// already (then `f` is not started).
pub async fn within<C: Clock, T>(
    clock: &C,
    until: DateTime<Utc>,
    f: impl std::future::Future<Output = T>,
) -> Option<T> {
    let left = (until - clock.now()).to_std().ok().filter(|d| !d.is_zero())?;
    tokio::time::timeout(left, f).await.ok()
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

/// One run over one partition: what is planned, what is in flight, what SQS accepted and must
/// be removed, what the run has already handled.
struct PartitionRun<'a, S, Q, C> {
    d: &'a Dispatcher<S, Q, C>,
    queue: &'a QueueName,
    shard: u32,
    horizon: DateTime<Utc>,
    stop_at: DateTime<Utc>,
    pending: VecDeque<Planned>,
    /// Message bytes of the jobs in `pending`.
    pending_bytes: usize,
    /// Jobs SQS accepted (or that expired), not yet in a delete call, with their history records.
    deletes: Vec<Retired>,
    /// Entries of the send calls and of the delete calls not yet answered.
    sending: usize,
    deleting: usize,
    /// Job ids planned in this run and not yet removed: a re-read index shows them again until
    /// they are removed.
    seen: HashSet<String>,
    /// A send failed in a way that leaves open whether SQS accepted it (timeout, reset, 5xx).
    uncertain: bool,
    /// A due job had to be left for a later run.
    left_behind: bool,
    summary: RunSummary,
}

/// One `SendMessageBatch`: each entry with its `DelaySeconds`.
type Call = Vec<(Planned, Option<u32>)>;

/// A call of a partition run, answered.
enum Done<'a> {
    /// The next index page, and the stream to read the one after from.
    Page(
        BoxStream<'a, Result<Vec<StoredJob>, PortError>>,
        Option<Result<Vec<StoredJob>, PortError>>,
    ),
    /// A page's jobs re-read from the table.
    Read(Result<Vec<StoredJob>, PortError>),
    Sent {
        call: Call,
        messages: Vec<OutgoingMessage>,
        sent_at: DateTime<Utc>,
        result: Result<Vec<EntryOutcome>, PortError>,
    },
    Removed {
        items: Vec<Retired>,
        result: Result<(), PortError>,
    },
}

impl<'a, S: JobStore, Q: MessageQueue, C: Clock> PartitionRun<'a, S, Q, C> {
    /// Reads, sends and removes at once: the next index page is read while batches are in
    /// flight, up to `SENDS_IN_FLIGHT` batches are sent at once (one on FIFO queues, whose
    /// groups SQS orders by arrival of the calls), and what SQS accepted is removed by up to
    /// `DELETES_IN_FLIGHT` calls at once. A job is removed only after SQS accepted it, and a
    /// batch is never sent before its instant. Returns whether every due job this run was
    /// responsible for was handed over.
    async fn drain(&mut self) -> Result<bool, PortError> {
        let d = self.d;
        let queue = self.queue;
        let fifo = queue.is_fifo();
        let max_sends = if fifo { 1 } else { SENDS_IN_FLIGHT };
        // Batches allowed in flight now: one more after each quick answer, back to one after a
        // slow one or an error, so that a struggling queue endpoint gets one call at a time
        // per partition (and the SDK's retries of timed-out attempts, which SQS may have
        // taken, stay few).
        let mut send_limit = 1;
        // A FIFO run holding for jobs that fall due re-reads the index, so jobs enqueued during
        // the hold are found by this run, on time.
        let requery = fifo && d.config.fifo_hold > 0;
        let hold_until = self.horizon.min(self.stop_at);
        let mut pages = Some(d.store.due(queue, self.shard, self.horizon));
        let mut exhausted = false;
        let mut next_query: Option<DateTime<Utc>> = None;
        let mut failure: Option<PortError> = None;
        let mut singly: VecDeque<Call> = VecDeque::new();
        let mut in_flight: FuturesUnordered<BoxFuture<'a, Done<'a>>> = FuturesUnordered::new();
        let (mut reading, mut sends, mut removals) = (false, 0usize, 0usize);
        loop {
            let now = d.clock.now();
            let starting = failure.is_none() && now < self.stop_at;
            let mut wake_at: Option<DateTime<Utc>> = None;
            if starting {
                if let Some(t) = next_query.filter(|_| !reading) {
                    if now >= t {
                        pages = Some(d.store.due(queue, self.shard, self.horizon));
                        exhausted = false;
                        next_query = None;
                    } else {
                        wake_at = Some(t);
                    }
                }
                if !reading && !exhausted && self.pending.len() < READ_AHEAD && self.pending_bytes < MAX_PENDING_BYTES {
                    if let Some(mut p) = pages.take() {
                        reading = true;
                        in_flight.push(Box::pin(async move {
                            let next = p.next().await;
                            Done::Page(p, next)
                        }));
                    }
                }
                while removals < DELETES_IN_FLIGHT && self.deletes.len() >= DDB_MAX_BATCH_WRITE_ITEMS {
                    let items: Vec<Retired> = self.deletes.drain(..DDB_MAX_BATCH_WRITE_ITEMS).collect();
                    removals += 1;
                    self.deleting += items.len();
                    in_flight.push(Box::pin(async move {
                        let result = d.store.retire(queue, &items).await;
                        Done::Removed { items, result }
                    }));
                }
                while sends < send_limit && self.undeleted() + SQS_MAX_BATCH_ENTRIES <= MAX_UNDELETED_PER_PARTITION {
                    let (call, hold) = match singly.pop_front() {
                        Some(call) => (call, None),
                        None => {
                            let n = batch_len(&self.pending, BATCH_WINDOW);
                            let Some(ready_at) = n.checked_sub(1).and_then(|i| self.pending.get(i)).map(|p| p.send_at)
                            else {
                                break;
                            };
                            if ready_at > now {
                                wake_at = Some(wake_at.map_or(ready_at, |w| w.min(ready_at)));
                                break;
                            }
                            let batch: Vec<Planned> = self.pending.drain(..n).collect();
                            self.pending_bytes -= batch.iter().map(|p| p.bytes).sum::<usize>();
                            self.prepare(batch, now)
                        }
                    };
                    if call.is_empty() {
                        continue;
                    }
                    sends += 1;
                    self.sending += call.len();
                    let messages: Vec<OutgoingMessage> = call
                        .iter()
                        .map(|(p, delay)| OutgoingMessage::for_job(&p.job.job, *delay))
                        .collect();
                    in_flight.push(Box::pin(async move {
                        if let Some(t) = hold {
                            d.clock.sleep_until(t).await;
                        }
                        let sent_at = d.clock.now();
                        let result = d.queue.send_batch(queue, &messages).await;
                        Done::Sent {
                            call,
                            messages,
                            sent_at,
                            result,
                        }
                    }));
                }
            }
            if in_flight.is_empty() {
                if let Some(e) = failure {
                    return Err(e);
                }
                if !starting {
                    return Ok(false);
                }
                if exhausted && next_query.is_none() && self.pending.is_empty() && singly.is_empty() {
                    return Ok(!self.left_behind);
                }
                if let Some(t) = wake_at {
                    d.clock.sleep_until(t.min(self.stop_at)).await;
                }
                continue;
            }
            let done = match wake_at.filter(|_| starting) {
                Some(t) => {
                    tokio::select! {
                        done = in_flight.next() => done,
                        () = d.clock.sleep_until(t.min(self.stop_at)) => None,
                    }
                }
                None => in_flight.next().await,
            };
            let Some(done) = done else { continue };
            let error = match done {
                Done::Page(p, next) => {
                    pages = Some(p);
                    match next {
                        None => {
                            reading = false;
                            exhausted = true;
                            let now = d.clock.now();
                            if requery && now + FIFO_REQUERY < hold_until {
                                next_query = Some(now + FIFO_REQUERY);
                            }
                            None
                        }
                        Some(Err(e)) => {
                            reading = false;
                            Some(e)
                        }
                        Some(Ok(page)) => {
                            let keys: Vec<JobKey> = page
                                .iter()
                                .filter(|j| !self.seen.contains(&j.job.job_id))
                                .map(StoredJob::key)
                                .collect();
                            if keys.is_empty() {
                                reading = false;
                            } else {
                                in_flight.push(Box::pin(async move { Done::Read(d.store.read(queue, &keys).await) }));
                            }
                            None
                        }
                    }
                }
                Done::Read(result) => {
                    reading = false;
                    match result {
                        Ok(jobs) => self.plan_jobs(jobs).await.err(),
                        Err(e) => Some(e),
                    }
                }
                Done::Sent {
                    call,
                    messages,
                    sent_at,
                    result,
                } => {
                    sends -= 1;
                    self.sending -= call.len();
                    let quick = result.is_ok() && d.clock.now() - sent_at <= QUICK_SEND;
                    send_limit = if quick { (send_limit + 1).min(max_sends) } else { 1 };
                    match result {
                        Ok(outcomes) => {
                            self.settle(&call, &messages, sent_at, outcomes).await;
                            None
                        }
                        Err(e) if e.blames_message() && call.len() > 1 => {
                            // Refused for its content as a whole (too long in total, a message
                            // over the queue's own limit): sent again entry by entry to find the
                            // bad one.
                            warn!(queue = %queue, entries = call.len(), error = %display_chain(&e), "batch refused for its content; sending its entries singly");
                            singly.extend(call.into_iter().map(|c| vec![c]));
                            None
                        }
                        Err(e) if e.blames_message() => {
                            // A single entry refused for its content: the whole-call form of a
                            // `SenderFault` entry failure (moto, and SQS for some size checks).
                            if let (Some((p, _)), PortError::Rejected { code, .. }) = (call.first(), &e) {
                                self.park(&p.job, code.clone(), display_chain(&e)).await;
                            }
                            None
                        }
                        Err(e) => {
                            self.uncertain |= e.may_have_taken_effect();
                            self.summary.failed += call.len() as u64;
                            Some(e)
                        }
                    }
                }
                Done::Removed { items, result } => {
                    removals -= 1;
                    self.deleting -= items.len();
                    match result {
                        Ok(()) => {
                            // Gone from the table: a lagging index may list them, but the
                            // strongly consistent re-read does not.
                            for r in &items {
                                self.seen.remove(&r.key.job_id);
                            }
                            None
                        }
                        Err(e) => {
                            self.deletes.extend(items);
                            Some(e)
                        }
                    }
                }
            };
            if let Some(e) = error {
                // Start nothing more; what is in flight is still answered and recorded.
                match &failure {
                    None => failure = Some(e),
                    Some(_) => {
                        warn!(queue = %queue, shard = self.shard, error = %display_chain(&e), "another call failed")
                    }
                }
            }
        }
    }

    /// Jobs accepted by SQS but not yet removed (in a send call, waiting for a delete call, or
    /// in one): what a crash now would send twice.
    fn undeleted(&self) -> usize {
        self.sending + self.deletes.len() + self.deleting
    }

    /// Plans jobs re-read from the table. The index is eventually consistent: each job is
    /// re-read (strongly consistent) under the lease, and only that version is sent.
    async fn plan_jobs(&mut self, current: Vec<StoredJob>) -> Result<(), PortError> {
        let d = self.d;
        let now = d.clock.now();
        for job in current {
            // Rescheduled or re-enqueued past the horizon since the index was written.
            if job.job.perform_at > self.horizon || !self.seen.insert(job.job.job_id.clone()) {
                continue;
            }
            match plan(job, self.queue.is_fifo(), now, self.stop_at) {
                Plan::Send(p) => {
                    self.summary.backlog_age_s = self
                        .summary
                        .backlog_age_s
                        .max(seconds_between(p.job.job.perform_at, now));
                    self.pending_bytes += p.bytes;
                    self.pending.push_back(*p);
                }
                Plan::Expired(job) => {
                    info!(queue = %self.queue, job_id = %job.job.job_id, "expired: dropped, not sent");
                    self.summary.expired += 1;
                    self.retire(&job, HistoryStatus::Expired, None);
                }
                Plan::NotYet => self.left_behind = true,
                Plan::Move { current, next } => {
                    // Under this run's lease: no one else may change the job meanwhile.
                    if d.store.rewrite(&current, &next).await? == ReplaceOutcome::Replaced {
                        info!(queue = %self.queue, job_id = %next.job.job_id, perform_at = %next.job.perform_at, "outside its windows: moved to the next opening");
                        self.summary.moved += 1;
                    }
                }
            }
        }
        self.pending.make_contiguous().sort_by_key(|p| p.send_at);
        Ok(())
    }

    /// Turns a batch into a call at `now`: each entry's delay, `WAITER_MAX_RATE`'s arrival
    /// second, and expiry at the real arrival (a late send must not deliver an expired job).
    /// Returns the call and, on a FIFO queue whose arrival second is later, when to send it.
    fn prepare(&mut self, batch: Vec<Planned>, now: DateTime<Utc>) -> (Call, Option<DateTime<Utc>>) {
        let queue = self.queue;
        let fifo = queue.is_fifo();
        let mut call = Vec::with_capacity(batch.len());
        let mut fifo_second: Option<i64> = None;
        let mut later = Vec::new();
        for p in batch {
            if !later.is_empty() {
                later.push(p);
                continue;
            }
            let mut delay = delay_at(&p.job, fifo, now);
            let mut arrival = now + TimeDelta::seconds(i64::from(delay.unwrap_or(0)));
            let mut booked = None;
            if let Some(budget) = &self.d.budget {
                let own = arrival.timestamp();
                // A standard message moves by a longer delay, up to SQS's maximum; a FIFO one
                // by holding its send, within this run.
                let latest = match delay {
                    Some(dl) => own + i64::from(SQS_MAX_DELAY_SECONDS.saturating_sub(dl)),
                    None => self.stop_at.timestamp() - 1,
                };
                match budget.book(queue, arrival, latest, now) {
                    None => {
                        debug!(queue = %queue, job_id = %p.job.job.job_id, "arrival budget full: left for a later run");
                        self.left_behind = true;
                        continue;
                    }
                    // A FIFO call is sent at one instant: entries booked into a later second
                    // wait for the next call, in order.
                    Some(second) if fifo && fifo_second.is_some_and(|f| f != second) => {
                        budget.release(queue, second);
                        later.push(p);
                        continue;
                    }
                    Some(second) => {
                        booked = Some(second);
                        let moved = second - own;
                        if let Some(dl) = delay.as_mut() {
                            *dl += u32::try_from(moved).unwrap_or(0);
                            arrival += TimeDelta::seconds(moved);
                        } else if moved > 0 {
                            arrival = DateTime::from_timestamp(second, 0).unwrap_or(arrival);
                        }
                        if fifo {
                            fifo_second = Some(second);
                        }
                    }
                }
            }
            if p.job.job.expires_in_flight(arrival) {
                if let (Some(budget), Some(second)) = (&self.d.budget, booked) {
                    budget.release(queue, second);
                }
                info!(queue = %queue, job_id = %p.job.job.job_id, "expired: dropped, not sent");
                self.summary.expired += 1;
                self.retire(&p.job, HistoryStatus::Expired, None);
                continue;
            }
            call.push((p, delay));
        }
        for p in later.into_iter().rev() {
            self.pending_bytes += p.bytes;
            self.pending.push_front(p);
        }
        let hold = fifo_second
            .and_then(|s| DateTime::from_timestamp(s, 0))
            .filter(|t| *t > now);
        (call, hold)
    }

    /// Records each entry's fate. Only an entry SQS refused with `SenderFault: true` is parked;
    /// one that failed otherwise stays stored for the next run.
    async fn settle(
        &mut self,
        call: &Call,
        messages: &[OutgoingMessage],
        sent_at: DateTime<Utc>,
        outcomes: Vec<EntryOutcome>,
    ) {
        let queue = self.queue;
        for (((p, _), m), outcome) in call.iter().zip(messages).zip(outcomes) {
            match outcome {
                EntryOutcome::Sent { message_id } => {
                    let arrival = sent_at + TimeDelta::seconds(i64::from(m.delay_seconds.unwrap_or(0)));
                    let lateness_ms = seconds_between(p.job.job.perform_at, arrival) * 1e3;
                    let sum = &mut self.summary;
                    sum.max_lateness_ms = sum.max_lateness_ms.max(lateness_ms);
                    if sum.lateness_sample_ms.len() < LATENESS_SAMPLE {
                        sum.lateness_sample_ms.push(lateness_ms);
                    }
                    sum.dispatched += 1;
                    info!(queue = %queue, job_id = %p.job.job.job_id, delay_s = m.delay_seconds, lateness_ms, "dispatched");
                    self.retire(&p.job, HistoryStatus::Dispatched, Some(message_id));
                }
                EntryOutcome::Failed {
                    code,
                    message,
                    sender_fault: true,
                } => self.park(&p.job, code, message).await,
                EntryOutcome::Failed {
                    code,
                    message,
                    sender_fault: false,
                } => {
                    warn!(queue = %queue, job_id = %p.job.job.job_id, code, message, "entry failed; stays stored for the next run");
                    self.summary.failed += 1;
                }
            }
        }
    }

    /// Queues a job's removal; with history on, its record is put in its place instead.
    fn retire(&mut self, job: &StoredJob, status: HistoryStatus, message_id: Option<String>) {
        let now = self.d.clock.now();
        self.deletes.push(Retired {
            key: job.key(),
            record: self
                .d
                .config
                .history_keep()
                .map(|keep| History::of(job, status, now, message_id, keep)),
        });
    }

    async fn park(&mut self, job: &StoredJob, code: String, message: String) {
        let info = ParkInfo {
            parked_at: self.d.clock.now(),
            code,
            message,
        };
        match self.d.store.park(job, &info).await {
            Ok(()) => {
                error!(queue = %self.queue, job_id = %job.job.job_id, code = %info.code, reason = %info.message, "parked: SQS rejected the message permanently");
                self.summary.parked += 1;
            }
            Err(e) => {
                error!(queue = %self.queue, job_id = %job.job.job_id, error = %display_chain(&e), "parking failed; job stays stored");
                self.summary.failed += 1;
            }
        }
    }
}

enum Plan {
    Send(Box<Planned>),
    Expired(Box<StoredJob>),
    /// Outside its windows when it would arrive: due again at the next opening.
    Move {
        current: Box<StoredJob>,
        next: Box<StoredJob>,
    },
    /// Not sendable in this run (it would have to wait past the stop margin).
    NotYet,
}

/// When to send a job. Standard queues: the instant at which the time left is a whole number of
/// seconds (within the next second), or now if overdue. FIFO: when it is due.
fn plan(job: StoredJob, fifo: bool, now: DateTime<Utc>, stop_at: DateTime<Utc>) -> Plan {
    let perform_at = job.job.perform_at;
    let send_at = if fifo {
        perform_at.max(now)
    } else {
        aligned_send_instant(perform_at, now)
    };
    let arrival = send_at.max(perform_at);
    if let Some(w) = job.job.windows.as_ref().filter(|w| !w.contains(arrival)) {
        let mut next = job.clone();
        next.job.perform_at = w.next_open(arrival);
        next.version += 1;
        if next.job.arrives_expired(next.job.perform_at) {
            return Plan::Expired(Box::new(job));
        }
        return Plan::Move {
            current: Box::new(job),
            next: Box::new(next),
        };
    }
    if job.job.arrives_expired(arrival) {
        return Plan::Expired(Box::new(job));
    }
    if send_at >= stop_at {
        return Plan::NotYet;
    }
    let bytes = job.job.message_bytes();
    Plan::Send(Box::new(Planned { send_at, job, bytes }))
}

/// FIFO queues take no per-message delay.
fn delay_at(job: &StoredJob, fifo: bool, sent_at: DateTime<Utc>) -> Option<u32> {
    (!fifo).then(|| delay_for(job.job.perform_at, sent_at))
}

/// The one batching rule: from the front of `pending` (sorted by send instant), the jobs whose
/// instants lie within `window` of the first, up to 10 entries and 1 MiB in all. Returns how
/// many the next batch takes.
pub fn batch_len(pending: &VecDeque<Planned>, window: TimeDelta) -> usize {
    let mut bytes = 0usize;
    let mut n = 0;
    for p in pending {
        let fits = n < SQS_MAX_BATCH_ENTRIES
            && bytes + p.bytes <= SQS_MAX_MESSAGE_BYTES
            && pending.front().is_none_or(|f| p.send_at - f.send_at <= window);
        if !fits && n > 0 {
            break;
        }
        bytes += p.bytes;
        n += 1;
    }
    n
}

/// Takes the next batch off the front of `pending` (see `batch_len`).
pub fn next_batch(pending: &mut VecDeque<Planned>, window: TimeDelta) -> Vec<Planned> {
    let n = batch_len(pending, window);
    pending.drain(..n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::Partition;
    use crate::testing::{config, stored, FakeClock, FakeQueue, MemStore};

    type D = Dispatcher<MemStore, FakeQueue, FakeClock>;

    fn dispatcher(extra: &[(&str, &str)]) -> (D, MemStore, FakeQueue, FakeClock) {
        let clock = FakeClock::default();
        let store = MemStore::default();
        let queue = FakeQueue::new(clock.clone());
        let d = Dispatcher::new(
            config("orders,billing.fifo", extra),
            store.clone(),
            queue.clone(),
            clock.clone(),
        );
        (d, store, queue, clock)
    }

    fn ms(n: i64) -> TimeDelta {
        TimeDelta::milliseconds(n)
    }

    #[tokio::test(start_paused = true)]
    async fn due_jobs_arrive_on_time_never_early_and_are_removed() {
        let (d, store, queue, clock) = dispatcher(&[("WAITER_LOOKAHEAD", "60"), ("WAITER_SHARDS", "3")]);
        let now = clock.now();
        // Overdue, due in odd fractions of a second, and beyond the window.
        let offsets = [-5_000, 0, 250, 1_700, 2_999, 30_123, 59_999, 61_000, 3_600_000];
        for (i, off) in offsets.iter().enumerate() {
            store.insert(stored("orders", &format!("j{i}"), now + ms(*off), 3));
        }
        let summary = d.run(now + TimeDelta::seconds(60)).await;
        assert_eq!(summary.dispatched, 7, "{summary:?}");
        assert!(summary.drained);
        assert_eq!(store.len(), 2, "the two jobs beyond the window stay stored");
        for s in queue.sent() {
            let i: usize = s.message.body.trim_start_matches("body-j").parse().unwrap();
            let due = now + ms(offsets[i]);
            let arrival = s.at + TimeDelta::seconds(i64::from(s.message.delay_seconds.unwrap()));
            assert!(arrival >= due, "job {i} early: arrives {arrival}, due {due}");
            let late = arrival - due.max(now);
            assert!(late <= BATCH_WINDOW, "job {i} {late:?} late");
        }
        assert!((summary.backlog_age_s - 5.0).abs() < 1e-3, "{}", summary.backlog_age_s);
    }

    #[tokio::test(start_paused = true)]
    async fn transient_failures_stay_stored_and_sender_faults_are_parked() {
        let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1")]);
        let now = clock.now();
        for i in 0..6 {
            store.insert(stored("orders", &format!("j{i}"), now, 1));
        }
        *queue.entry_fault.lock().unwrap() = Some(Box::new(|m: &OutgoingMessage| match m.body.as_str() {
            "body-j1" => Some(EntryOutcome::Failed {
                code: "InternalError".into(),
                message: "try again".into(),
                sender_fault: false,
            }),
            "body-j2" => Some(EntryOutcome::Failed {
                code: "InvalidParameterValue".into(),
                message: "bad".into(),
                sender_fault: true,
            }),
            _ => None,
        }));
        let s = d.run(now + TimeDelta::seconds(60)).await;
        assert_eq!((s.dispatched, s.failed, s.parked), (4, 1, 1), "{s:?}");
        let q = QueueName::parse("orders").unwrap();
        assert!(
            store.get(&q, Partition::Shard(0), "j1").is_some(),
            "retryable failure stays"
        );
        let parked = store.get(&q, Partition::Parked, "j2").expect("parked");
        assert_eq!(parked.parked.unwrap().code, "InvalidParameterValue");
        assert_eq!(store.len(), 2);

        *queue.entry_fault.lock().unwrap() = None;
        let s = d.run(clock.now() + TimeDelta::seconds(60)).await;
        assert_eq!(s.dispatched, 1, "retried on the next run");
        assert_eq!(store.len(), 1, "only the parked job is left");
    }

    #[tokio::test(start_paused = true)]
    async fn a_batch_refused_for_its_content_is_split_and_only_the_bad_entry_parked() {
        let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1")]);
        let now = clock.now();
        for i in 0..5 {
            store.insert(stored("orders", &format!("j{i}"), now, 1));
        }
        *queue.batch_fault.lock().unwrap() = Some(Box::new(|ms: &[OutgoingMessage]| {
            ms.iter().any(|m| m.body == "body-j3").then(|| PortError::Rejected {
                operation: "SendMessageBatch",
                code: "AWS.SimpleQueueService.BatchRequestTooLong".into(),
                source: None,
            })
        }));
        let s = d.run(now + TimeDelta::seconds(60)).await;
        assert_eq!((s.dispatched, s.parked, s.errors.len()), (4, 1, 0), "{s:?}");
        let q = QueueName::parse("orders").unwrap();
        assert!(store.get(&q, Partition::Parked, "j3").is_some());
        assert_eq!(store.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn queue_level_errors_park_nothing_and_the_next_run_retries() {
        for code in [
            "KMS.AccessDeniedException",
            "AccessDenied",
            "KMS.DisabledException",
            "InvalidSecurity",
            "AWS.SimpleQueueService.NonExistentQueue",
        ] {
            let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1"), ("WAITER_QUEUES", "orders")]);
            let now = clock.now();
            for i in 0..12 {
                store.insert(stored("orders", &format!("j{i}"), now, 1));
            }
            *queue.batch_fault.lock().unwrap() = Some(Box::new(move |_: &[OutgoingMessage]| {
                Some(PortError::Rejected {
                    operation: "SendMessageBatch",
                    code: code.into(),
                    source: None,
                })
            }));
            let s = d.run(now + TimeDelta::seconds(60)).await;
            assert_eq!((s.dispatched, s.parked), (0, 0), "{code}: {s:?}");
            assert!(!s.drained && s.errors[0].contains(code), "{code}: {s:?}");
            assert_eq!(store.len(), 12, "{code}: everything stays stored");
            *queue.batch_fault.lock().unwrap() = None;
            let s = d.run(clock.now() + TimeDelta::seconds(60)).await;
            assert_eq!(s.dispatched, 12, "{code}: the next run sends them");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn after_a_failed_delete_cancel_never_answers_cancelled_for_a_sent_job() {
        let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1"), ("WAITER_QUEUES", "orders")]);
        let now = clock.now();
        store.insert(stored("orders", "sent", now + TimeDelta::seconds(5), 1));
        store.fail_deletes.store(true, std::sync::atomic::Ordering::SeqCst);
        let s = d.run(now + TimeDelta::seconds(30)).await;
        assert_eq!(s.dispatched, 1);
        assert!(!s.drained);
        let q = QueueName::parse("orders").unwrap();
        let key = store.get(&q, Partition::Shard(0), "sent").unwrap().key();
        // Long after the run and its lease's `until`: still not cancellable.
        clock.advance(TimeDelta::seconds(120));
        assert_eq!(
            store.cancel(&q, &key, now + TimeDelta::seconds(5), None).await.unwrap(),
            crate::ports::CancelOutcome::Dispatching
        );
        // The next run re-sends (at least once), removes it and releases the lease.
        store.fail_deletes.store(false, std::sync::atomic::Ordering::SeqCst);
        let s = d.run(clock.now() + TimeDelta::seconds(30)).await;
        assert_eq!((s.dispatched, s.drained), (1, true));
        assert_eq!(store.len(), 0);
        assert_eq!(queue.sent().len(), 2);
        assert_eq!(
            store.cancel(&q, &key, now, None).await.unwrap(),
            crate::ports::CancelOutcome::NotFound
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_stale_index_never_sends_or_removes_a_newer_version() {
        let (_, _, queue, clock) = dispatcher(&[]);
        let store = MemStore {
            index_lag: std::time::Duration::from_secs(3),
            ..MemStore::default()
        };
        let d = Dispatcher::new(
            config("orders", &[("WAITER_SHARDS", "1")]),
            store.clone(),
            queue.clone(),
            clock.clone(),
        );
        let now = clock.now();
        let q = QueueName::parse("orders").unwrap();
        store.insert(stored("orders", "j", now + TimeDelta::seconds(10), 1));
        tokio::time::sleep(std::time::Duration::from_secs(4)).await;
        // Cancelled and enqueued again for next week, while the index still shows the old item.
        let old = store.get(&q, Partition::Shard(0), "j").unwrap();
        store.cancel(&q, &old.key(), old.job.perform_at, None).await.unwrap();
        let mut newer = stored("orders", "j", clock.now() + TimeDelta::days(7), 1);
        newer.job.message_body = "body-newer".into();
        newer.version = 2;
        store.insert(newer.clone());
        let s = d.run(clock.now() + TimeDelta::seconds(30)).await;
        assert_eq!(s.dispatched, 0, "{s:?}");
        assert!(queue.sent().is_empty(), "the cancelled version was sent");
        assert_eq!(
            store.get(&q, Partition::Shard(0), "j"),
            Some(newer),
            "the newer version was removed"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_holding_fifo_run_picks_up_jobs_enqueued_during_its_hold_and_never_starves_standard_ones() {
        let (_, store, queue, clock) = dispatcher(&[]);
        let d = Dispatcher::new(
            config(
                "billing.fifo,orders",
                &[
                    ("WAITER_SHARDS", "1"),
                    ("WAITER_FIFO_HOLD", "60"),
                    ("WAITER_CONCURRENCY", "1"),
                ],
            ),
            store.clone(),
            queue.clone(),
            clock.clone(),
        );
        let now = clock.now();
        store.insert(stored("billing.fifo", "early", now + TimeDelta::seconds(2), 1));
        store.insert(stored("orders", "std", now, 1));
        let late_due = now + TimeDelta::milliseconds(20_500);
        let enqueuer = {
            let store = store.clone();
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_secs(10)).await;
                store.insert(stored("billing.fifo", "late", late_due, 1));
            })
        };
        let s = d.run(now + TimeDelta::seconds(70)).await;
        enqueuer.await.unwrap();
        assert_eq!(s.dispatched, 3, "{s:?}");
        let sent = queue.sent();
        let at = |body: &str| sent.iter().find(|m| m.message.body == body).map(|m| m.at).unwrap();
        assert!(
            at("body-std") - now < TimeDelta::milliseconds(100),
            "standard waited for the FIFO hold"
        );
        let late = at("body-late") - late_due;
        assert!(
            late >= TimeDelta::zero() && late <= TimeDelta::milliseconds(1_100),
            "late FIFO job off by {late:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_throttled_batch_leaves_everything_stored() {
        let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1")]);
        let now = clock.now();
        for i in 0..3 {
            store.insert(stored("orders", &format!("j{i}"), now, 1));
        }
        *queue.batch_fault.lock().unwrap() = Some(Box::new(|_: &[OutgoingMessage]| {
            Some(PortError::Throttled {
                operation: "SendMessageBatch",
                source: "slow down".into(),
            })
        }));
        let s = d.run(now + TimeDelta::seconds(60)).await;
        assert_eq!((s.dispatched, s.failed), (0, 3));
        assert_eq!(store.len(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn expired_jobs_are_dropped_not_sent() {
        let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1")]);
        let now = clock.now();
        let mut late = stored("orders", "late", now - TimeDelta::seconds(10), 1);
        late.job.expires_at = Some(now - TimeDelta::seconds(1));
        store.insert(late);
        let mut fine = stored("orders", "fine", now + TimeDelta::seconds(10), 1);
        fine.job.expires_at = Some(now + TimeDelta::seconds(11));
        store.insert(fine);
        let s = d.run(now + TimeDelta::seconds(60)).await;
        assert_eq!((s.dispatched, s.expired), (1, 1), "{s:?}");
        assert_eq!(queue.sent()[0].message.body, "body-fine");
        assert_eq!(store.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_held_partition_is_skipped() {
        let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1"), ("WAITER_QUEUES", "orders")]);
        let now = clock.now();
        store.insert(stored("orders", "j", now, 1));
        let q = QueueName::parse("orders").unwrap();
        let other = Lease {
            owner: "other".into(),
            until: now + TimeDelta::seconds(30),
            horizon: now,
        };
        assert!(matches!(
            store.acquire_lease(&q, 0, &other, now).await.unwrap(),
            crate::ports::LeaseOutcome::Acquired { .. }
        ));
        let s = d.run(now + TimeDelta::seconds(60)).await;
        assert_eq!(s.busy_partitions, 1);
        assert_eq!(s.dispatched, 0);
        assert!(queue.sent().is_empty());
        // After the other poller's lease lapses (it crashed), this one takes over.
        clock.advance(TimeDelta::seconds(31));
        let s = d.run(clock.now() + TimeDelta::seconds(60)).await;
        assert_eq!(s.dispatched, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_run_finishing_its_window_hands_over_instead_of_being_skipped() {
        let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1"), ("WAITER_QUEUES", "orders")]);
        let now = clock.now();
        store.insert(stored("orders", "j", now, 1));
        let q = QueueName::parse("orders").unwrap();
        let previous = Lease {
            owner: "previous".into(),
            until: now + TimeDelta::seconds(60),
            horizon: now + TimeDelta::seconds(2),
        };
        assert!(matches!(
            store.acquire_lease(&q, 0, &previous, now).await.unwrap(),
            LeaseOutcome::Acquired { .. }
        ));
        let releaser = {
            let (store, q) = (store.clone(), q.clone());
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(2300)).await;
                store.release_lease(&q, 0, "previous").await.unwrap();
            })
        };
        let s = d.run(now + TimeDelta::seconds(60)).await;
        releaser.await.unwrap();
        assert_eq!((s.dispatched, s.busy_partitions), (1, 0), "{s:?}");
        assert!(queue.sent()[0].at >= now + TimeDelta::milliseconds(2300));
    }

    #[tokio::test(start_paused = true)]
    async fn stops_before_the_deadline_and_says_so() {
        let (d, store, queue, clock) = dispatcher(&[("WAITER_SHARDS", "1"), ("WAITER_FIFO_HOLD", "60")]);
        let now = clock.now();
        // FIFO jobs are held until due; one falls due after the run must stop.
        store.insert(stored("billing.fifo", "soon", now + TimeDelta::seconds(2), 1));
        store.insert(stored("billing.fifo", "later", now + TimeDelta::seconds(20), 1));
        let s = d.run(now + TimeDelta::seconds(10)).await;
        assert_eq!(s.dispatched, 1);
        assert!(!s.drained, "{s:?}");
        let sent = queue.sent();
        assert_eq!(sent[0].message.delay_seconds, None);
        assert!(
            sent[0].at >= now + TimeDelta::seconds(2),
            "a FIFO job is sent no earlier than due"
        );
        assert!(clock.now() <= now + TimeDelta::seconds(10) - STOP_MARGIN);
        assert_eq!(store.len(), 1);
    }

    #[test]
    fn batches_respect_window_count_and_bytes() {
        let t0 = Utc::now();
        let p = |off: i64, bytes: usize| Planned {
            send_at: t0 + ms(off),
            job: stored("orders", "x", t0, 1),
            bytes,
        };
        let mut q: VecDeque<Planned> = (0..25).map(|_| p(0, 10)).collect();
        assert_eq!(next_batch(&mut q, BATCH_WINDOW).len(), 10);
        let mut q: VecDeque<Planned> = [p(0, 10), p(39, 10), p(41, 10)].into();
        assert_eq!(next_batch(&mut q, BATCH_WINDOW).len(), 2);
        assert_eq!(next_batch(&mut q, BATCH_WINDOW).len(), 1);
        let mut q: VecDeque<Planned> = [p(0, 600_000), p(0, 600_000), p(0, 1)].into();
        assert_eq!(next_batch(&mut q, BATCH_WINDOW).len(), 1, "1 MiB per batch");
        assert_eq!(next_batch(&mut q, BATCH_WINDOW).len(), 2);
        assert!(q.is_empty());
    }
}
