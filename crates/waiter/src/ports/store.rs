//! The store port, as small capabilities: the jobs themselves (`Jobs`), the due index
//! (`DueIndex`), the parked partition (`Parking`), the pollers' leases (`Leases`) and the
//! queues' arrival budgets (`RateLedger`). A store is all five (`JobStore`). Moving a job in or
//! out of the parked partition is domain logic built on the capabilities (`Parking::park`,
//! `Parking::unpark`), not something an adapter does.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures::stream::BoxStream;

use super::{
    Found, History, IndexPosition, JobKey, Lease, LeaseOutcome, Over, Page, ParkInfo, Partition, PutOutcome,
    RemoveOutcome, ReplaceOutcome, Retired, StoredJob, Unreadable,
};
use crate::config::QueueName;
use crate::error::PortError;
use crate::limits::DDB_MAX_ITEM_BYTES;
use crate::rate::{ArrivalWant, Booked, Booking, Claim};

/// Jobs by key: conditional writes, consistent reads and removal.
#[async_trait]
pub trait Jobs: Send + Sync + 'static {
    /// Size of the item this job would be stored as, as DynamoDB counts it.
    fn item_bytes(&self, job: &StoredJob) -> usize;

    /// Stores a new job unless its key holds a job or a history record live at
    /// `job.enqueued_at` (a conditional put). Over a history record past its time, the job is
    /// stored with a `version` one more than that record's (if its own is not higher), so that
    /// versions keep growing across lives of an id while history knows the id.
    async fn put_new(&self, job: &StoredJob) -> Result<PutOutcome, PortError>;

    /// Writes the job at its key if the key is free or holds this same edition (a retry of the
    /// same copy); `false`, and nothing written, when it holds another job.
    async fn place(&self, job: &StoredJob) -> Result<bool, PortError>;

    /// Removes the job at its key if the key still holds this edition; a key that holds
    /// nothing or another job is left as it is (done already, or not ours to remove).
    async fn remove(&self, job: &StoredJob) -> Result<(), PortError>;

    /// Strongly consistent reads of these keys (the base table, not the index): jobs and
    /// history records (live or not). Missing keys are left out; order is not kept.
    async fn read_any(&self, queue: &QueueName, keys: &[JobKey]) -> Result<Vec<Found>, PortError>;

    /// The jobs among these keys (history records left out).
    async fn read(&self, queue: &QueueName, keys: &[JobKey]) -> Result<Vec<StoredJob>, PortError> {
        Ok(self
            .read_any(queue, keys)
            .await?
            .into_iter()
            .filter_map(|f| match f {
                Found::Job(j) => Some(j),
                Found::History(_) => None,
            })
            .collect())
    }

    /// `read`, for handing jobs over: also the keys that hold an item this release cannot read,
    /// which the poller leaves untouched, counts, and holds its FIFO group behind.
    async fn read_to_send(
        &self,
        queue: &QueueName,
        keys: &[JobKey],
    ) -> Result<(Vec<StoredJob>, Vec<Unreadable>), PortError> {
        Ok((self.read(queue, keys).await?, Vec::new()))
    }

    /// Writes a job's next attempt in place of the history record its last attempt left (the
    /// same key), if the key still holds that record (its version); `false`, and nothing
    /// written, when it holds anything else.
    async fn put_over(&self, job: &StoredJob, record: &History) -> Result<bool, PortError>;

    /// Parks a job whose attempts ran out and leaves `home` at its key, in one transaction: only
    /// if that key still holds `over` (the record's version, or the sent attempt's edition), and
    /// the parked partition holds nothing under the id. `false`, and nothing written, otherwise:
    /// a concurrent `retry` scheduled or parked it first.
    async fn park_exhausted(&self, parked: &StoredJob, home: &History, over: Over<'_>) -> Result<bool, PortError>;

    /// Cancels the parked attempt of a retried job and leaves `record` (cancelled) at its home
    /// key, in one transaction: only if the parked item is still `parked`'s edition and the home
    /// key still holds `over`. `Changed`, and nothing written, otherwise.
    async fn cancel_parked_chain(
        &self,
        parked: &StoredJob,
        record: &History,
        over: Over<'_>,
    ) -> Result<RemoveOutcome, PortError>;

    /// Moves a parked attempt of a retried job back to its home key (`into`), in one
    /// transaction: only if the parked item is still `parked`'s edition and the home key still
    /// holds `over`. `false`, and nothing written, otherwise. (A copy-then-remove that failed
    /// between its steps would leave the parked copy, and every `retry` of the attempt would
    /// then meet it.)
    async fn unpark_over(&self, parked: &StoredJob, into: &StoredJob, over: Over<'_>) -> Result<bool, PortError>;

    /// Writes a history record for a job sent straight to SQS, unless its key holds a job.
    async fn record(&self, history: &History) -> Result<(), PortError>;

    /// Every stored copy of a job id among the given partitions, active ones first.
    async fn find_all(
        &self,
        queue: &QueueName,
        job_id: &str,
        partitions: &[Partition],
    ) -> Result<Vec<StoredJob>, PortError> {
        let keys = JobKey::in_each(job_id, partitions);
        let mut found = self.read(queue, &keys).await?;
        found.sort_by_key(|j| j.partition.clone());
        Ok(found)
    }

    /// Looks a job up by id in any of the given partitions; an active copy wins over a parked one.
    async fn find(
        &self,
        queue: &QueueName,
        job_id: &str,
        partitions: &[Partition],
    ) -> Result<Option<StoredJob>, PortError> {
        Ok(self.find_all(queue, job_id, partitions).await?.into_iter().next())
    }

    /// Removes `current` (leaving `record` in its place, if given) if the stored item is still
    /// `current`'s version and no poller's lease item covers `current`'s `perform_at`,
    /// atomically with both checks. Conditioned on the version, a removal decided on a stale
    /// read (a reschedule committed meanwhile, a lagging index) never takes a newer version.
    async fn cancel(&self, current: &StoredJob, record: Option<&History>) -> Result<RemoveOutcome, PortError>;

    /// Writes `next` (same key, `version` one more) in place of `current`, if the stored item is
    /// still `current`'s version and no poller's lease item covers `current`'s `perform_at`
    /// (atomically with both checks).
    async fn replace(&self, current: &StoredJob, next: &StoredJob) -> Result<ReplaceOutcome, PortError>;

    /// `replace` for the holder of the job's shard lease (the poller moving a job to its next
    /// window): conditional on the version only.
    async fn rewrite(&self, current: &StoredJob, next: &StoredJob) -> Result<ReplaceOutcome, PortError>;

    /// Removes jobs that left the table, each replaced by its history record if it has one,
    /// each only if its key still holds the edition that left: a key that holds nothing or
    /// another job (enqueued under the id once it was free) is skipped. Retries what a
    /// retryable failure left until all are done or an error is returned.
    async fn retire(&self, queue: &QueueName, items: &[Retired]) -> Result<(), PortError>;
}

/// The due index: jobs of a partition in `perform_at` order, eventually consistent.
#[async_trait]
pub trait DueIndex: Send + Sync + 'static {
    /// Jobs of a partition with `from <= perform_at <= to`, in the index's order (`perform_at`
    /// first; among equal `perform_at`, an order of the index's own, the same on every read),
    /// one page at a time, read from the due index (eventually consistent). With `after`, the
    /// read resumes just past that job (`perform_at`, `job_id`) in that order, as DynamoDB's
    /// `ExclusiveStartKey` does. Pages are read as the stream is polled, so a caller that stops
    /// early reads no more.
    fn by_time_after<'a>(
        &'a self,
        queue: &'a QueueName,
        partition: Partition,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        after: Option<IndexPosition>,
        view: View,
    ) -> BoxStream<'a, Result<Vec<StoredJob>, PortError>>;

    /// `by_time_after` from the start of the range, whole jobs.
    fn by_time<'a>(
        &'a self,
        queue: &'a QueueName,
        partition: Partition,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> BoxStream<'a, Result<Vec<StoredJob>, PortError>> {
        self.by_time_after(queue, partition, from, to, None, View::Whole)
    }

    /// How many jobs of a partition have `from <= perform_at <= to`, counted on the due index
    /// without returning them.
    async fn count(
        &self,
        queue: &QueueName,
        partition: Partition,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<u64, PortError>;

    /// How many jobs of a partition with `from <= perform_at <= to` are of each priority class
    /// (`rate::priority_class`); only classes with jobs. Reads the keys, priority and weight.
    async fn count_by_priority(
        &self,
        queue: &QueueName,
        partition: Partition,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<std::collections::BTreeMap<&'static str, u64>, PortError> {
        use futures::StreamExt;
        let mut classes = std::collections::BTreeMap::new();
        let mut pages = self.by_time_after(queue, partition, from, to, None, View::Keys);
        while let Some(page) = pages.next().await {
            for j in page? {
                *classes.entry(crate::rate::priority_class(j.job.priority)).or_default() += 1;
            }
        }
        Ok(classes)
    }

    /// The job of a partition with the earliest `perform_at` in `from..=to`, as the index holds
    /// it (`View::Keys`: its time and place, no message).
    async fn first(
        &self,
        queue: &QueueName,
        partition: Partition,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Option<StoredJob>, PortError> {
        use futures::StreamExt;
        let mut pages = self.by_time_after(queue, partition, from, to, None, View::Keys);
        while let Some(page) = pages.next().await {
            if let Some(j) = page?.into_iter().next() {
                return Ok(Some(j));
            }
        }
        Ok(None)
    }

    /// Jobs in a shard with `perform_at <= horizon`, oldest first, one page at a time, read as
    /// `View::Keys` (re-read them from the table for anything else).
    fn due<'a>(
        &'a self,
        queue: &'a QueueName,
        shard: u32,
        horizon: DateTime<Utc>,
    ) -> BoxStream<'a, Result<Vec<StoredJob>, PortError>> {
        self.by_time_after(
            queue,
            Partition::Shard(shard),
            DateTime::<Utc>::UNIX_EPOCH,
            horizon,
            None,
            View::Keys,
        )
    }

    /// Every `WAITER_SHARDS` value this queue's table has been written with, `current` included
    /// (recorded first if it is new). Items may sit in any shard any of them maps to.
    async fn shard_counts(&self, queue: &QueueName, current: u32) -> Result<Vec<u32>, PortError>;
}

/// Which attributes an index read returns. The index holds only `View::Keys` in tables the
/// stacks create (docs/cost.md), so the other views are a consistent re-read of the page's
/// jobs from the table: a job that moved or left since the index was written is not in them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Whole,
    /// Everything but `message_body` (read as empty) and `message_attributes` (read as none).
    WithoutMessage,
    /// The keys, `perform_at`, `priority` and `weight` only; everything else reads as absent (the body empty, the
    /// version 1). The poller's index pages: it re-reads each job from the table before it
    /// plans it, so the index need not carry the message to it.
    Keys,
}

/// The parked partition: jobs SQS rejected permanently.
#[async_trait]
pub trait Parking: Jobs {
    /// Up to `limit` jobs of the parked partition in `job_id` order, after `after`.
    async fn parked(&self, queue: &QueueName, limit: usize, after: Option<&str>) -> Result<Page<StoredJob>, PortError>;

    /// Moves a job into the parked partition: copy first, then remove, so that a crash between
    /// leaves a duplicate, never a loss. `false`, and nothing moved, when the parked partition
    /// holds another job under this id (an earlier life, parked and not yet redriven).
    async fn park(&self, job: &StoredJob, info: &ParkInfo) -> Result<bool, PortError> {
        if !self.place(&self.parked_copy(job, info)).await? {
            return Ok(false);
        }
        self.remove(job).await?;
        Ok(true)
    }

    /// Parks one occurrence of a series, a job of its own under its occurrence id
    /// (`Job::occurrence_as_job`); the series goes on (its caller moves it). `false`, and
    /// nothing written, when the parked partition holds another job under that id.
    async fn park_occurrence(&self, occurrence: &StoredJob, info: &ParkInfo) -> Result<bool, PortError> {
        self.place(&self.parked_copy(occurrence, info)).await
    }

    /// The parked copy of `job`, with SQS's reason, shortened so that the copy fits an item.
    fn parked_copy(&self, job: &StoredJob, info: &ParkInfo) -> StoredJob {
        let parked_as = |info: ParkInfo| StoredJob {
            partition: Partition::Parked,
            parked: Some(info),
            ..job.clone()
        };
        // SQS's reason is shortened, never the job, so that the parked copy fits an item.
        let mut info = ParkInfo {
            code: truncate_chars(&info.code, PARK_CODE_MAX_CHARS),
            ..info.clone()
        };
        let over = self
            .item_bytes(&parked_as(info.clone()))
            .saturating_sub(DDB_MAX_ITEM_BYTES);
        if over > 0 {
            info.message = shorten_to_bytes(&info.message, info.message.len().saturating_sub(over));
        }
        parked_as(info)
    }

    /// Moves a parked job back into a shard, due at `into.job.perform_at`, unless that key is
    /// taken (then nothing moves). Copy first, then remove, as in `park`.
    async fn unpark(&self, parked: &StoredJob, into: &StoredJob) -> Result<PutOutcome, PortError> {
        let outcome = self.put_new(into).await?;
        if matches!(outcome, PutOutcome::Created { .. }) {
            self.remove(parked).await?;
        }
        Ok(outcome)
    }
}

/// The longest `park_code` kept (SQS's codes are far shorter).
pub const PARK_CODE_MAX_CHARS: usize = 64;

fn truncate_chars(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

/// `s` cut to at most `max` bytes on a character boundary, ending in `…` when cut.
fn shorten_to_bytes(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let keep = max.saturating_sub('…'.len_utf8());
    let end = (0..=keep).rev().find(|i| s.is_char_boundary(*i)).unwrap_or(0);
    format!("{}…", &s[..end])
}

/// The pollers' leases: one run at a time per shard.
#[async_trait]
pub trait Leases: Send + Sync + 'static {
    /// Takes the partition's lease if it is free, lapsed, or already ours. A lapsed lease's
    /// horizon is kept if it reaches further than the new one: the jobs under it may have been
    /// handed to SQS by a run that never cleaned up.
    async fn acquire_lease(
        &self,
        queue: &QueueName,
        shard: u32,
        lease: &Lease,
        now: DateTime<Utc>,
    ) -> Result<LeaseOutcome, PortError>;

    /// Ends the lease: the item keeps only when its run started, and `held_back_from` (the
    /// next run's `PreviousRun`). Call only once every job the run handed to SQS has been
    /// removed.
    async fn release_lease(
        &self,
        queue: &QueueName,
        shard: u32,
        owner: &str,
        held_back_from: Option<DateTime<Utc>>,
    ) -> Result<(), PortError>;

    /// Hands the lease on to the next run, with the jobs SQS accepted that this run could not
    /// remove (`debts`): the lease item keeps covering its horizon, so `cancel` answers
    /// `dispatching` for them, but its `until` becomes `until`, so that the next run can take
    /// it from then on, remove them first and work the partition on time. `false` when the
    /// lease is no longer ours.
    async fn hand_on(
        &self,
        queue: &QueueName,
        shard: u32,
        owner: &str,
        debts: &[Retired],
        until: DateTime<Utc>,
    ) -> Result<bool, PortError>;

    /// Whether a run may have handed a job of the shard, due at `perform_at` and stored since
    /// `since`, to SQS and not yet removed it: the shard's lease item covers `perform_at` (the
    /// check `cancel` makes in its write, read alone, strongly consistent), and its run held it
    /// after `since` (a run that crashed, or handed the lease on, before the job was stored never
    /// saw it). Without such a lease a stored job was not sent: a run removes what it sent
    /// before it releases its lease, and hands on what it could not.
    async fn lease_covers(
        &self,
        queue: &QueueName,
        shard: u32,
        perform_at: DateTime<Utc>,
        since: DateTime<Utc>,
    ) -> Result<bool, PortError>;
}

/// `WAITER_MAX_RATE`'s ledger: each queue's arrivals booked per second, shared by every poller
/// run (every group, every process), so that the rate is the queue's, never a run's.
#[async_trait]
pub trait RateLedger: Send + Sync + 'static {
    /// Books each want in order, at most `rate` units per second (see `rate::Bookings::book`);
    /// with a claim, in rank order across the queue's partitions (`rate::Bookings::book_claimed`).
    /// A store shared by several writers tries again after every lost race until `until` (the
    /// run's stop instant), never for a fixed number of rounds: only time left running out
    /// fails a booking (a retryable error).
    async fn book(
        &self,
        queue: &QueueName,
        rate: u32,
        wants: &[ArrivalWant],
        claim: Option<&Claim>,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Vec<Booked>, PortError>;

    /// Gives back bookings that were not used, trying until `until` as `book` does.
    async fn release(
        &self,
        queue: &QueueName,
        bookings: &[Booking],
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<(), PortError>;
}

/// Pauses of whole queues (one item per queue) and the count of jobs paused one by one.
#[async_trait]
pub trait Pauses: Send + Sync + 'static {
    /// The queue's pause, read strongly consistent: since when it is paused, and its last pauses
    /// that ended.
    async fn queue_pause(&self, queue: &QueueName) -> Result<QueuePause, PortError>;

    /// Since when the queue is paused; `None` when it is not.
    async fn queue_paused(&self, queue: &QueueName) -> Result<Option<DateTime<Utc>>, PortError> {
        Ok(self.queue_pause(queue).await?.paused_at)
    }

    /// Pauses the queue from `at`; a queue paused already keeps its first time, which is
    /// returned.
    async fn pause_queue(&self, queue: &QueueName, at: DateTime<Utc>) -> Result<DateTime<Utc>, PortError>;

    /// Ends the queue's pause, noting it among the last `RECENT_PAUSES` pauses, from its
    /// `paused_at` to `at` (a series' occurrences that fell due during one are missed); `false`
    /// when it was not paused.
    async fn resume_queue(&self, queue: &QueueName, at: DateTime<Utc>) -> Result<bool, PortError>;

    /// How many jobs of a partition are paused one by one. Reads the whole partition from the
    /// table (the due index does not hold the pause): an operator's count, not the poller's.
    async fn count_paused(&self, queue: &QueueName, partition: Partition) -> Result<u64, PortError>;
}

/// A queue's pause item.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueuePause {
    pub paused_at: Option<DateTime<Utc>>,
    /// The last pauses that ended (up to `RECENT_PAUSES`, oldest first): when each began, and
    /// when `resume` ended it.
    pub ended: Vec<EndedPause>,
}

/// A queue's pause that ended: when it began, and when `resume` ended it.
pub type EndedPause = (DateTime<Utc>, DateTime<Utc>);

/// `ended` with the pause `resume` just ended: the last `RECENT_PAUSES`, oldest first.
pub fn with_ended(mut ended: Vec<EndedPause>, pause: EndedPause) -> Vec<EndedPause> {
    ended.push(pause);
    let older = ended.len().saturating_sub(RECENT_PAUSES);
    ended.drain(..older);
    ended
}

/// How many ended pauses a queue's pause item keeps: a series' occurrence that fell due in one
/// is missed, however many pauses came before the next run that reaches the series.
pub const RECENT_PAUSES: usize = 10;

/// A queue's items counted by the item format they carry (docs/upgrades.md "Rolling back").
#[async_trait]
pub trait Census: Send + Sync + 'static {
    /// The jobs and history records in `shards` and the parked partition, and the shards'
    /// leases, by item format (`"1"`, `"2"`, ...; `"?"` for a value that is no whole number).
    /// Reads each such item once: billed by size, eventually consistent.
    async fn count_formats(
        &self,
        queue: &QueueName,
        shards: &[u32],
    ) -> Result<std::collections::BTreeMap<String, u64>, PortError>;
}

/// A whole store: every capability. Implemented for anything that has them all.
pub trait JobStore: Jobs + DueIndex + Parking + Leases + RateLedger + Pauses + Census {}

impl<T: Jobs + DueIndex + Parking + Leases + RateLedger + Pauses + Census> JobStore for T {}
