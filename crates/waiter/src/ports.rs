//! The two ports the domain talks through, plus the clock. Adapters in `aws` implement them for
//! DynamoDB and SQS; `testing` implements them in memory.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures::stream::BoxStream;

use crate::config::QueueName;
use crate::error::PortError;
use crate::job::{Attributes, Job};

/// Where an item lives in its queue's table.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Partition {
    /// One of the `WAITER_SHARDS` partitions the poller works.
    Shard(u32),
    /// Jobs SQS rejected permanently, kept for inspection and re-drive.
    Parked,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobKey {
    pub partition: Partition,
    pub job_id: String,
}

impl JobKey {
    /// The keys a job id has in each of these partitions.
    pub fn in_each(job_id: &str, partitions: &[Partition]) -> Vec<JobKey> {
        partitions
            .iter()
            .map(|p| JobKey {
                partition: p.clone(),
                job_id: job_id.to_owned(),
            })
            .collect()
    }
}

/// Why a job was parked.
#[derive(Debug, Clone, PartialEq)]
pub struct ParkInfo {
    pub parked_at: DateTime<Utc>,
    pub code: String,
    pub message: String,
}

/// A job as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredJob {
    pub job: Job,
    pub partition: Partition,
    pub enqueued_at: DateTime<Utc>,
    pub parked: Option<ParkInfo>,
    /// 1 when first stored; grows with every change. Items written before versions existed
    /// read as 1.
    pub version: u64,
}

impl StoredJob {
    pub fn key(&self) -> JobKey {
        JobKey {
            partition: self.partition.clone(),
            job_id: self.job.job_id.clone(),
        }
    }
}

/// How a job left the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryStatus {
    Dispatched,
    Cancelled,
    Expired,
}

impl HistoryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Dispatched => "dispatched",
            Self::Cancelled => "cancelled",
            Self::Expired => "expired",
        }
    }
}

/// What is kept of a job that left the table, in its place (same key) and without its message,
/// until `purge_at` (DynamoDB's TTL removes it; until then reads treat it as gone). It has no
/// `perform_at`, so it is never in the due index.
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    pub queue: QueueName,
    pub partition: Partition,
    pub job_id: String,
    pub status: HistoryStatus,
    /// When it was sent, cancelled or found expired.
    pub at: DateTime<Utc>,
    /// SQS's id of the message, when dispatched.
    pub message_id: Option<String>,
    pub perform_at: DateTime<Utc>,
    pub version: u64,
    pub purge_at: DateTime<Utc>,
}

impl History {
    pub fn of(
        job: &StoredJob,
        status: HistoryStatus,
        at: DateTime<Utc>,
        message_id: Option<String>,
        keep: chrono::TimeDelta,
    ) -> Self {
        Self {
            queue: job.job.queue.clone(),
            partition: job.partition.clone(),
            job_id: job.job.job_id.clone(),
            status,
            at,
            message_id,
            perform_at: job.job.perform_at,
            version: job.version,
            purge_at: at + keep,
        }
    }

    pub fn key(&self) -> JobKey {
        JobKey {
            partition: self.partition.clone(),
            job_id: self.job_id.clone(),
        }
    }

    /// Still in force (DynamoDB's TTL removes expired items only eventually).
    pub fn is_live(&self, now: DateTime<Utc>) -> bool {
        self.purge_at > now
    }
}

/// What a key holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    Job(StoredJob),
    History(History),
}

/// A job leaving the table: its key, and the record left in its place (`None`: nothing).
#[derive(Debug, Clone, PartialEq)]
pub struct Retired {
    pub key: JobKey,
    pub record: Option<History>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum PutOutcome {
    Created,
    /// An item with this `job_id` is already stored; nothing was changed.
    Duplicate(Box<StoredJob>),
    /// The job was sent, cancelled or expired already (a live history record); nothing changed.
    Done(Box<History>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    Cancelled,
    NotFound,
    /// A poller's lease item covers this job (its `perform_at` is within the lease's horizon):
    /// it may be in SQS already, so it is not reported as cancelled. The lease item stays until
    /// every job its run handed to SQS has been removed, even past the lease's `until`.
    Dispatching,
}

/// The fate of a conditional replacement of a stored job by its next version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplaceOutcome {
    Replaced,
    /// The stored item is gone or is no longer the version that was read.
    Changed,
    /// A poller's lease item covers the job's current time: it may be in SQS already.
    Dispatching,
}

/// One page of a listing, and where the next one starts (`None`: this was the last).
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub next: Option<String>,
}

/// A poller's exclusive hold on one partition for one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Lease {
    pub owner: String,
    /// The lease lapses at this time, so a crashed poller's successor can take over.
    pub until: DateTime<Utc>,
    /// The poller may hand over jobs with `perform_at` up to this time.
    pub horizon: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum LeaseOutcome {
    /// Ours now, with this horizon (the lapsed lease's, when that reached further).
    /// `inherited`: it was taken over from another run's lapsed lease, whose sends may not all
    /// have been removed.
    Acquired { horizon: DateTime<Utc>, inherited: bool },
    /// Another poller holds it; its lease when the store could tell.
    Held(Option<Lease>),
}

#[async_trait]
pub trait JobStore: Send + Sync + 'static {
    /// Size of the item this job would be stored as, as DynamoDB counts it.
    fn item_bytes(&self, job: &StoredJob) -> usize;

    /// Stores a new job unless its key holds a job or a history record live at
    /// `job.enqueued_at` (a conditional put).
    async fn put_new(&self, job: &StoredJob) -> Result<PutOutcome, PortError>;

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

    /// Removes a job (leaving `record` in its place, if given) unless a poller's lease item
    /// covers it, atomically with that check. A key holding no job is `NotFound`.
    async fn cancel(
        &self,
        queue: &QueueName,
        key: &JobKey,
        perform_at: DateTime<Utc>,
        record: Option<&History>,
    ) -> Result<CancelOutcome, PortError>;

    /// Jobs of a partition with `from <= perform_at <= to`, in `perform_at` order, one page at
    /// a time, read from the due index (eventually consistent). Pages are read as the stream is
    /// polled, so a caller that stops early reads no more.
    fn by_time<'a>(
        &'a self,
        queue: &'a QueueName,
        partition: Partition,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> BoxStream<'a, Result<Vec<StoredJob>, PortError>>;

    /// How many jobs of a partition have `from <= perform_at <= to`, counted on the due index
    /// without returning them.
    async fn count(
        &self,
        queue: &QueueName,
        partition: Partition,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<u64, PortError>;

    /// The job of a partition with the earliest `perform_at` in `from..=to`.
    async fn first(
        &self,
        queue: &QueueName,
        partition: Partition,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Option<StoredJob>, PortError> {
        use futures::StreamExt;
        let mut pages = self.by_time(queue, partition, from, to);
        while let Some(page) = pages.next().await {
            if let Some(j) = page?.into_iter().next() {
                return Ok(Some(j));
            }
        }
        Ok(None)
    }

    /// Jobs in a shard with `perform_at <= horizon`, oldest first, one page at a time.
    fn due<'a>(
        &'a self,
        queue: &'a QueueName,
        shard: u32,
        horizon: DateTime<Utc>,
    ) -> BoxStream<'a, Result<Vec<StoredJob>, PortError>> {
        self.by_time(queue, Partition::Shard(shard), DateTime::<Utc>::UNIX_EPOCH, horizon)
    }

    /// Writes `next` (same key, `version` one more) in place of `current`, if the stored item is
    /// still `current`'s version and no poller's lease item covers `current`'s `perform_at`
    /// (atomically with both checks).
    async fn replace(&self, current: &StoredJob, next: &StoredJob) -> Result<ReplaceOutcome, PortError>;

    /// `replace` for the holder of the job's shard lease (the poller moving a job to its next
    /// window): conditional on the version only.
    async fn rewrite(&self, current: &StoredJob, next: &StoredJob) -> Result<ReplaceOutcome, PortError>;

    /// Up to `limit` jobs of the parked partition in `job_id` order, after `after`.
    async fn parked(&self, queue: &QueueName, limit: usize, after: Option<&str>) -> Result<Page<StoredJob>, PortError>;

    /// Every `WAITER_SHARDS` value this queue's table has been written with, `current` included
    /// (recorded first if it is new). Items may sit in any shard any of them maps to.
    async fn shard_counts(&self, queue: &QueueName, current: u32) -> Result<Vec<u32>, PortError>;

    /// Removes jobs that left the table, each replaced by its history record if it has one (a
    /// put in place of the delete: the same call); retries unprocessed ones until all are done
    /// or an error is returned.
    async fn retire(&self, queue: &QueueName, items: &[Retired]) -> Result<(), PortError>;

    /// Moves a job into the parked partition (copy first, then delete: a crash leaves a
    /// duplicate, never a loss).
    async fn park(&self, job: &StoredJob, info: &ParkInfo) -> Result<(), PortError>;

    /// Moves a parked job back into a shard, due at `into.job.perform_at`, unless that key is
    /// taken (then nothing moves).
    async fn unpark(&self, parked: &StoredJob, into: &StoredJob) -> Result<PutOutcome, PortError>;

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

    /// Removes the lease item. Call only once every job the run handed to SQS has been removed.
    async fn release_lease(&self, queue: &QueueName, shard: u32, owner: &str) -> Result<(), PortError>;
}

/// A message on its way to SQS.
#[derive(Debug, Clone, PartialEq)]
pub struct OutgoingMessage {
    pub body: String,
    pub attributes: Attributes,
    /// `None` on FIFO queues, which take no per-message delay.
    pub delay_seconds: Option<u32>,
    pub group_id: Option<String>,
    pub deduplication_id: Option<String>,
}

impl OutgoingMessage {
    pub fn for_job(job: &Job, delay_seconds: Option<u32>) -> Self {
        Self {
            body: job.message_body.clone(),
            attributes: job.message_attributes.clone(),
            delay_seconds,
            group_id: job.message_group_id.clone(),
            deduplication_id: job.message_deduplication_id.clone(),
        }
    }

    pub fn bytes(&self) -> usize {
        crate::job::message_bytes(&self.body, &self.attributes)
    }
}

/// The fate of one entry of a batch send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryOutcome {
    Sent {
        message_id: String,
    },
    Failed {
        code: String,
        message: String,
        sender_fault: bool,
    },
}

#[async_trait]
pub trait MessageQueue: Send + Sync + 'static {
    async fn send(&self, queue: &QueueName, message: &OutgoingMessage) -> Result<String, PortError>;

    /// Sends up to `SQS_MAX_BATCH_ENTRIES` messages; outcomes come back in input order.
    async fn send_batch(&self, queue: &QueueName, messages: &[OutgoingMessage])
        -> Result<Vec<EntryOutcome>, PortError>;
}

#[async_trait]
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> DateTime<Utc>;
    async fn sleep_until(&self, t: DateTime<Utc>);
}

/// Wall-clock time and tokio sleeps.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

#[async_trait]
impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }

    async fn sleep_until(&self, t: DateTime<Utc>) {
        if let Ok(d) = (t - Utc::now()).to_std() {
            tokio::time::sleep(d).await;
        }
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
