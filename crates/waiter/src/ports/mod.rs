//! The ports the domain talks through: the store's capabilities (`store`), the queue (`queue`)
//! and the clock. Adapters in `aws` implement them for DynamoDB and SQS; `testing` implements
//! them in memory.

mod pause;
mod queue;
mod store;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::config::QueueName;
use crate::job::Job;

pub use pause::{PauseGate, PAUSE_CHECK_FRESH, PAUSE_SETTLE};
pub use queue::{default_deduplication_id, EntryOutcome, MessageQueue, OutgoingMessage};
pub use store::{
    with_ended, Census, DueIndex, EndedPause, JobStore, Jobs, Leases, Parking, Pauses, QueuePause, RateLedger, View,
    RECENT_PAUSES,
};

/// A job's place in the due index: its `perform_at`, then its `job_id`.
pub type IndexPosition = (DateTime<Utc>, String);

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
    /// A poller run that crashed may have delivered this job at this instant: a run that took
    /// over its lease found the job outside its windows and moved it to the next opening
    /// instead of re-sending it (which would arrive outside them). Kept through later changes.
    pub maybe_delivered_at: Option<DateTime<Utc>>,
    /// Paused (`pause` with its id) since then: no poller sends or moves it until `resume`.
    /// Kept through a reschedule.
    pub paused_at: Option<DateTime<Utc>>,
}

/// A stored job this close to its `perform_at` may already be in a consumer's hands, as far as
/// one process's clock can tell: the poller that sent it (never early by its own clock) may run
/// ahead of it by this much.
pub const SENT_CLOCK_SKEW: chrono::TimeDelta = chrono::TimeDelta::seconds(1);

impl StoredJob {
    /// Whether a message of this edition may be in SQS, as far as the item tells: it is due and
    /// not paused (a run may have sent it and not yet removed it, or crashed before), or it was
    /// moved after a send that may have happened. A parked job was refused, never sent as it
    /// is; a paused one is sent by no run (a pause is refused while a lease covers the job).
    pub fn may_have_been_sent(&self, now: DateTime<Utc>) -> bool {
        let due_unpaused = self.paused_at.is_none() && self.job.perform_at <= now + SENT_CLOCK_SKEW;
        self.parked.is_none() && (self.maybe_delivered_at.is_some() || due_unpaused)
    }

    /// The shard whose lease a change of this edition must find not covering it, since a run
    /// holding that lease may be sending it: none for a parked job, or a paused one (runs skip
    /// it, and its pause was written while no lease covered it, so no run has it in flight).
    /// `cancel` and `reschedule` of a paused job therefore never answer `dispatching`.
    pub fn lease_shard(&self) -> Option<u32> {
        match self.partition {
            Partition::Shard(shard) if self.paused_at.is_none() => Some(shard),
            _ => None,
        }
    }

    pub fn key(&self) -> JobKey {
        JobKey {
            partition: self.partition.clone(),
            job_id: self.job.job_id.clone(),
        }
    }

    pub fn edition(&self) -> Edition {
        Edition {
            enqueued_at: self.enqueued_at,
            version: self.version,
        }
    }
}

/// Which job a key holds: its life (when it was enqueued, since an id is free again once its
/// job left the table) and its version within that life. Every conditional write names the
/// edition it read, so that a write decided on a stale read, or an SDK retry of a call that was
/// applied, never takes another job enqueued under the same id meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edition {
    pub enqueued_at: DateTime<Utc>,
    pub version: u64,
}

/// How a job left the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryStatus {
    Dispatched,
    Cancelled,
    Expired,
    /// A series reached its `until` or `count`.
    Finished,
}

impl HistoryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Dispatched => "dispatched",
            Self::Cancelled => "cancelled",
            Self::Expired => "expired",
            Self::Finished => "finished",
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
    /// The job's message, kept for `replay` only with `WAITER_HISTORY_BODY=true`.
    pub message: Option<Box<KeptMessage>>,
    /// The job's `maybe_delivered_at`: a crashed run may have delivered it before it left.
    pub maybe_delivered_at: Option<DateTime<Utc>>,
    /// The attempt that left (1 for a job never retried): a `retry` of it schedules the next
    /// over this record; a `retry` of an earlier one is stale.
    pub attempt: u32,
    /// What the job's next attempt keeps (docs/contract.md "One job across its attempts").
    pub names_itself: bool,
    pub expires_at: Option<DateTime<Utc>>,
    pub windows: Option<crate::windows::Windows>,
    /// A series: the occurrences it sent.
    pub occurrences: Option<u64>,
    /// The job's tags: its next attempt and a replayed copy keep them.
    pub tags: crate::job::Tags,
}

/// What a history record keeps of its job's message (`WAITER_HISTORY_BODY`): enough to send a
/// copy. Not the deduplication id: a copy is a new message.
#[derive(Debug, Clone, PartialEq)]
pub struct KeptMessage {
    pub body: String,
    pub attributes: crate::job::Attributes,
    pub group_id: Option<String>,
}

impl KeptMessage {
    /// The job's message, if a history record has room for it.
    pub fn of(job: &Job) -> Option<Box<Self>> {
        // As kept: without the id a message carries where it leaves room.
        let bytes = job.bytes_without_id() + job.message_group_id.as_ref().map_or(0, String::len);
        (bytes <= crate::limits::MAX_HISTORY_MESSAGE_BYTES).then(|| {
            Box::new(Self {
                body: job.message_body.clone(),
                // As sent: a non-default priority and weight with it, for `replay`.
                attributes: job.sent_attributes(),
                group_id: job.message_group_id.clone(),
            })
        })
    }
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
            message: None,
            maybe_delivered_at: job.maybe_delivered_at,
            attempt: job.job.attempt,
            names_itself: job.job.names_itself,
            expires_at: job.job.expires_at,
            windows: job.job.windows.clone(),
            occurrences: job.job.repeat.as_ref().map(|s| s.occurrences),
            tags: job.job.tags.clone(),
        }
    }

    /// The record with its job's message kept (`WAITER_HISTORY_BODY`), when it has room.
    pub fn keeping_message(self, job: &Job, keep: bool) -> Self {
        Self {
            message: if keep { KeptMessage::of(job) } else { None },
            ..self
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

/// An item this release cannot read: of a later release's format (docs/upgrades.md), or
/// damaged. It is left untouched: not sent, removed or rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    pub key: JobKey,
    /// The FIFO group the item names, read as given: its group waits behind it.
    pub group: Option<String>,
    /// The format it needs, when a later release wrote it; `None`: damaged.
    pub newer_format: Option<u64>,
}

/// What a key holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    Job(StoredJob),
    History(History),
}

impl Found {
    pub fn job_id(&self) -> &str {
        match self {
            Self::Job(j) => &j.job.job_id,
            Self::History(h) => &h.job_id,
        }
    }
}

/// What the key a job's next attempt (or its fence) is written to holds, as it was read: the
/// write is conditional on it still holding exactly that.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Over<'a> {
    /// Nothing.
    Free,
    /// The record the last attempt left when it was sent.
    Record(&'a History),
    /// The last attempt itself, still stored: sent, and not yet removed by the poller.
    Sent(&'a StoredJob),
}

impl Over<'_> {
    /// The version of what the key holds (0: nothing); what is written over it takes more.
    pub fn version(self) -> u64 {
        match self {
            Self::Free => 0,
            Self::Record(h) => h.version,
            Self::Sent(j) => j.version,
        }
    }
}

/// A job leaving the table: its key, the edition that left (a removal of any other edition is
/// skipped), and the record left in its place (`None`: nothing). A series' occurrence does not
/// leave: `advance` moves the same item on, in the same conditional write.
#[derive(Debug, Clone, PartialEq)]
pub struct Retired {
    pub key: JobKey,
    pub edition: Edition,
    pub record: Option<History>,
    /// A series moving to its next occurrence (then `record` is `None`).
    pub advance: Option<Advance>,
}

/// A series' item after a pass: `perform_at` its next occurrence, `occurrences` sent so far,
/// and `version` one more than the edition that was sent (so the same write again finds its
/// condition false).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Advance {
    pub perform_at: DateTime<Utc>,
    pub occurrences: u64,
    /// The occurrence sent arrives at this instant, after the move: handed over ahead of its
    /// time, its message waits in SQS's delay. The series' `maybe_delivered_at`, so that a
    /// `cancel` meanwhile says one occurrence is still on its way (issue 60, defect 11).
    pub arriving_at: Option<DateTime<Utc>>,
    /// A `trigger`'s extra occurrence was sent, at this instant: the item returns to
    /// `perform_at` and keeps its windows' hold (`Series::held`); `occurrences` is unchanged.
    pub extra_sent: Option<DateTime<Utc>>,
    /// The series carries tags: its item is of format 2, and so is the debt of this move (a
    /// release before tags must neither take over nor settle a lease handed on with it).
    pub tagged: bool,
}

impl Advance {
    /// The series' item after this move, as `advance_set` and `advance_removes` write it on
    /// DynamoDB: on to `perform_at` (version + 1) with `occurrences`, no longer held for a
    /// window, with the arrival mark of the occurrence just sent; back from an extra occurrence,
    /// as it was before it (its hold and its mark kept) less the pending extra.
    pub fn applied_to(&self, current: &StoredJob) -> StoredJob {
        let mut next = current.clone();
        next.job.perform_at = self.perform_at;
        next.version += 1;
        match (self.extra_sent, next.job.repeat.as_mut()) {
            (Some(sent), Some(series)) => {
                series.extra.returns_to = None;
                series.extra.last = Some(sent);
                if self.arriving_at.is_some() {
                    next.maybe_delivered_at = self.arriving_at;
                }
            }
            (_, series) => {
                next.maybe_delivered_at = self.arriving_at;
                if let Some(series) = series {
                    series.occurrences = self.occurrences;
                    series.held = None;
                }
            }
        }
        next
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum PutOutcome {
    /// Stored, with this `version`: the job's own, or one more than the last life's under this
    /// id when the key held that life's history record, past its time (TTL removes it late).
    Created { version: u64 },
    /// An item with this `job_id` is already stored; nothing was changed.
    Duplicate(Box<StoredJob>),
    /// The job was sent, cancelled or expired already (a live history record); nothing changed.
    Done(Box<History>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelOutcome {
    /// Removed: it never reaches SQS from now on. `maybe_delivered_at`: the stored job's mark
    /// that a crashed run may have delivered it before.
    Cancelled {
        maybe_delivered_at: Option<DateTime<Utc>>,
    },
    NotFound,
    /// A poller's lease item covers this job (its `perform_at` is within the lease's horizon):
    /// it may be in SQS already, so it is not reported as cancelled. The lease item stays until
    /// every job its run handed to SQS has been removed, even past the lease's `until`.
    Dispatching,
}

/// The fate of a conditional removal of the version of a job that was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoveOutcome {
    Removed,
    /// The stored item is gone or is no longer the version that was read: read it again.
    Changed,
    /// A poller's lease item covers the job's time: it may be in SQS already.
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

impl Lease {
    /// Whether this lease item, found when taking the lease, was left by a run that did not
    /// clean up. One its holder handed on (`handed_on_by` is its owner) names all that run
    /// left unsettled; any other was left by a crash, a run unsure of what SQS accepted, or is
    /// our own, taken by an SDK retry of the same call, which hides what it replaced.
    pub fn left_unsettled(&self, handed_on_by: Option<&str>) -> bool {
        handed_on_by != Some(self.owner.as_str())
    }
}

pub use crate::repeat::PreviousRun;

#[derive(Debug, Clone, PartialEq)]
pub enum LeaseOutcome {
    /// Ours now, with this horizon (the lapsed lease's, when that reached further).
    /// `inherited`: taken over from another run's lapsed lease, whose sends may not all have
    /// been removed: that lease's horizon (every job due by then may be in SQS already).
    /// `debts`: jobs SQS accepted that the lease's previous holder could not remove, handed on
    /// with the lease (`Leases::hand_on`); remove them before anything else.
    Acquired {
        horizon: DateTime<Utc>,
        inherited: Option<DateTime<Utc>>,
        debts: Vec<Retired>,
        /// What the partition's previous run (another run than this one) left for the next:
        /// which occurrences are missed (DESIGN "Missed occurrences"). `None` when unknown (the
        /// partition's first run, or an item written before this was recorded).
        previous: Option<PreviousRun>,
    },
    /// Another poller holds it; its lease when the store could tell.
    Held(Option<Lease>),
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
