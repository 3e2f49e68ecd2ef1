//! The in-memory store: the contract's semantics (conditional put, lease-aware cancel, paged
//! due query) without any AWS types.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::*;
use crate::config::QueueName;
use crate::error::PortError;
use crate::ports::*;

#[derive(Default)]
pub struct MemState {
    pub items: BTreeMap<Key, StoredJob>,
    /// History records, each in place of the job it was (never in the index).
    pub history: BTreeMap<Key, History>,
    pub leases: HashMap<(QueueName, u32), Lease>,
    /// Jobs handed on with a lease (`hand_on`), and who handed them on; kept until the lease
    /// item is released or handed on again, as on the lease item.
    pub lease_debts: HashMap<(QueueName, u32), (Vec<Retired>, String)>,
    /// What each partition's last run left for the next, and that run's owner (kept on
    /// release).
    pub previous_runs: HashMap<(QueueName, u32), (String, PreviousRun)>,
    pub shard_counts: HashMap<QueueName, Vec<u32>>,
    /// Each queue's `WAITER_MAX_RATE` ledger, shared by every dispatcher over this store.
    pub bookings: HashMap<QueueName, crate::rate::Bookings>,
    /// The largest ledger item any booking wrote, in bytes as DynamoDB counts them.
    pub ledger_max_bytes: usize,
    /// Ledger calls as DynamoDB bills them: a change writes the item (`PutItem`), a call that
    /// changes nothing reads it (`GetItem`: `DynamoStore` reads afresh before it answers so).
    pub ledger_puts: usize,
    pub ledger_gets: usize,
    /// Paused queues, since when.
    pub paused_queues: HashMap<QueueName, DateTime<Utc>>,
    /// Each queue's last pauses that ended, from and to (kept on its pause item).
    pub resumed_queues: HashMap<QueueName, Vec<EndedPause>>,
    /// Items a later release wrote in a format this code does not read (docs/upgrades.md): the
    /// index shows them; a read by key refuses them (`read_any`) or hands them back as
    /// `Unreadable` (`read_to_send`), as `DynamoStore` does.
    pub unreadable: std::collections::BTreeSet<Key>,
    /// Queues whose table is missing: reading their pause answers `NotFound` naming the table,
    /// as a deployment whose table was deleted does.
    pub missing_tables: std::collections::BTreeSet<QueueName>,
    /// What the due index shows: `items` as it was `index_lag` ago (a GSI is eventually
    /// consistent), fed by `index_log`.
    pub(super) index: BTreeMap<Key, StoredJob>,
    index_log: VecDeque<(tokio::time::Instant, Key, Option<StoredJob>)>,
}

#[derive(Clone)]
pub struct MemStore {
    pub state: Arc<Mutex<MemState>>,
    pub page_size: usize,
    /// How far the due index trails the table.
    pub index_lag: std::time::Duration,
    /// When set, every delete fails (after nothing was removed), as a DynamoDB outage would.
    pub fail_deletes: Arc<std::sync::atomic::AtomicBool>,
    /// When set, every read waits forever, as a call whose connection is never answered.
    pub hang_reads: Arc<std::sync::atomic::AtomicBool>,
    /// When set, every removal waits forever: a run that sent is cut before it could remove.
    pub hang_retires: Arc<std::sync::atomic::AtomicBool>,
    /// When set, the next `retire` is applied, then this runs on the store (what others did
    /// while the reply was lost), then the call fails: a call applied and answered with an
    /// error, which the caller retries.
    pub retire_applied_then_fails: Arc<Mutex<Option<AfterApplied>>>,
    /// Items the due index has handed out, page by page as they are read.
    pub index_items_read: Arc<std::sync::atomic::AtomicUsize>,
    /// When set, every series move `retire` is given is kept here, so that a test can land it
    /// again later: a write the SDK sent again after its caller had moved on.
    pub moves_sent: Arc<Mutex<Option<MovesSent>>>,
    /// How long each ledger change takes, the partitions of a process taking turns as
    /// `DynamoStore`'s do (one conditional `PutItem` at a time): under a herd a booking waits
    /// for every other partition's. Zero: no turns, no wait.
    pub ledger_turn: std::time::Duration,
    pub ledger_turns: Arc<tokio::sync::Mutex<()>>,
    /// How long each read of a queue's pause item takes, in turn (a slow call, an SDK retry's
    /// backoff); no time once they are used up.
    pub pause_reads: Arc<Mutex<std::collections::VecDeque<std::time::Duration>>>,
}

/// Series moves as `retire` was given them, with their queue.
pub type MovesSent = Vec<(QueueName, Retired)>;

/// DynamoDB refuses an item over 400 KB (a `ValidationException`).
pub(super) fn too_large(bytes: usize) -> Result<(), PortError> {
    if bytes > crate::limits::DDB_MAX_ITEM_BYTES {
        return Err(PortError::Rejected {
            operation: "PutItem",
            code: "ValidationException".into(),
            source: Some(format!("Item size {bytes} has exceeded the maximum allowed size").into()),
        });
    }
    Ok(())
}

/// What happens between a call being applied and its lost reply.
pub type AfterApplied = Box<dyn FnOnce(&MemStore) + Send>;

impl Default for MemStore {
    fn default() -> Self {
        Self {
            state: Arc::default(),
            page_size: 7,
            index_lag: std::time::Duration::ZERO,
            fail_deletes: Arc::default(),
            hang_reads: Arc::default(),
            hang_retires: Arc::default(),
            retire_applied_then_fails: Arc::default(),
            index_items_read: Arc::default(),
            moves_sent: Arc::default(),
            ledger_turn: std::time::Duration::ZERO,
            ledger_turns: Arc::default(),
            pause_reads: Arc::default(),
        }
    }
}

impl MemStore {
    pub(super) async fn maybe_hang(&self) {
        if self.hang_reads.load(std::sync::atomic::Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
    }
}

impl MemState {
    /// Every change to an item goes through here, so the index sees it, `lag` later.
    fn write(&mut self, k: Key, v: Option<StoredJob>, lag: std::time::Duration) {
        match &v {
            Some(j) => {
                self.history.remove(&k);
                self.items.insert(k.clone(), j.clone())
            }
            None => self.items.remove(&k),
        };
        self.index_log.push_back((tokio::time::Instant::now() + lag, k, v));
    }

    /// Whether `key` holds what `over` says it held when read.
    fn holds(&self, key: &Key, over: Over<'_>) -> bool {
        match over {
            Over::Free => !self.items.contains_key(key) && !self.history.contains_key(key),
            Over::Record(r) => {
                !self.items.contains_key(key) && self.history.get(key).is_some_and(|h| h.version == r.version)
            }
            Over::Sent(j) => self
                .items
                .get(key)
                .is_some_and(|stored| stored.edition() == j.edition()),
        }
    }

    /// The first half of a transaction that moves a job out of the parked partition: if the
    /// parked item is that edition and the home key holds `over`, the parked item and whatever
    /// job the home key held are removed; else nothing changes.
    fn leaves_parked(&mut self, parked: &StoredJob, home_key: &Key, over: Over<'_>, lag: std::time::Duration) -> bool {
        let parked_key = mem_key(&parked.job.queue, &Partition::Parked, &parked.job.job_id);
        let parked_as_read = self
            .items
            .get(&parked_key)
            .is_some_and(|j| j.edition() == parked.edition());
        if !(parked_as_read && self.holds(home_key, over)) {
            return false;
        }
        self.write(parked_key, None, lag);
        if self.items.contains_key(home_key) {
            self.write(home_key.clone(), None, lag);
        }
        true
    }

    pub(super) fn catch_up_index(&mut self) {
        let now = tokio::time::Instant::now();
        while self.index_log.front().is_some_and(|(at, _, _)| *at <= now) {
            if let Some((_, k, v)) = self.index_log.pop_front() {
                match v {
                    Some(j) => self.index.insert(k, j),
                    None => self.index.remove(&k),
                };
            }
        }
    }
}

fn mem_key(queue: &QueueName, partition: &Partition, job_id: &str) -> Key {
    (queue.clone(), partition.clone(), job_id.to_owned())
}

impl MemStore {
    pub fn len(&self) -> usize {
        self.state.lock().unwrap().items.len()
    }

    pub fn get(&self, queue: &QueueName, partition: Partition, job_id: &str) -> Option<StoredJob> {
        self.state
            .lock()
            .unwrap()
            .items
            .get(&mem_key(queue, &partition, job_id))
            .cloned()
    }

    pub fn insert(&self, job: StoredJob) {
        let k = mem_key(&job.job.queue, &job.partition, &job.job.job_id);
        self.state.lock().unwrap().write(k, Some(job), self.index_lag);
    }

    /// Makes the job at `key` one of a later release's format (`unreadable`), or readable
    /// again (the functions were updated); whether a job is there.
    pub fn set_unreadable(&self, queue: &QueueName, key: &JobKey, unreadable: bool) -> bool {
        let k = mem_key(queue, &key.partition, &key.job_id);
        let mut s = self.state.lock().unwrap();
        let there = s.items.contains_key(&k);
        match unreadable && there {
            true => s.unreadable.insert(k),
            false => s.unreadable.remove(&k),
        };
        there
    }

    /// Refuses a read by key of an item of a later format, as `DynamoStore::read_any` does.
    fn refuse_unreadable(s: &MemState, k: &Key) -> Result<(), PortError> {
        match s.unreadable.contains(k) && s.items.contains_key(k) {
            true => Err(PortError::Transient {
                operation: "BatchGetItem",
                source: format!(
                    "job {}: {}",
                    k.2,
                    crate::aws::codec::newer_reason(crate::aws::codec::ITEM_FORMAT + 1)
                )
                .into(),
            }),
            false => Ok(()),
        }
    }

    /// Removes the job at `key` if it is this edition; whether it did.
    fn remove_edition(&self, queue: &QueueName, key: &JobKey, edition: Edition) -> bool {
        let k = mem_key(queue, &key.partition, &key.job_id);
        let mut s = self.state.lock().unwrap();
        let ours = s.items.get(&k).is_some_and(|j| j.edition() == edition);
        if ours {
            s.write(k, None, self.index_lag);
        }
        ours
    }
}

#[async_trait]
impl Jobs for MemStore {
    fn item_bytes(&self, job: &StoredJob) -> usize {
        let tags: usize = job.job.tags.iter().map(|(k, v)| k.len() + v.len() + 2).sum();
        job.job.bytes_without_id() + 200 + tags + job.parked.as_ref().map_or(0, |p| 40 + p.code.len() + p.message.len())
    }

    async fn put_new(&self, job: &StoredJob) -> Result<PutOutcome, PortError> {
        let k = mem_key(&job.job.queue, &job.partition, &job.job.job_id);
        let mut s = self.state.lock().unwrap();
        // The condition fails on it, and the read of what is there refuses it.
        MemStore::refuse_unreadable(&s, &k)?;
        if let Some(existing) = s.items.get(&k) {
            return Ok(PutOutcome::Duplicate(Box::new(existing.clone())));
        }
        let mut job = job.clone();
        if let Some(h) = s.history.get(&k) {
            if h.is_live(job.enqueued_at) {
                return Ok(PutOutcome::Done(Box::new(h.clone())));
            }
            job.version = job.version.max(h.version + 1);
        }
        let version = job.version;
        s.write(k, Some(job), self.index_lag);
        Ok(PutOutcome::Created { version })
    }

    async fn place(&self, job: &StoredJob) -> Result<bool, PortError> {
        too_large(self.item_bytes(job))?;
        let k = mem_key(&job.job.queue, &job.partition, &job.job.job_id);
        let mut s = self.state.lock().unwrap();
        if s.items.get(&k).is_some_and(|stored| stored.edition() != job.edition()) {
            return Ok(false);
        }
        s.write(k, Some(job.clone()), self.index_lag);
        Ok(true)
    }

    async fn remove(&self, job: &StoredJob) -> Result<(), PortError> {
        self.remove_edition(&job.job.queue, &job.key(), job.edition());
        Ok(())
    }

    async fn read_any(&self, queue: &QueueName, keys: &[JobKey]) -> Result<Vec<Found>, PortError> {
        self.maybe_hang().await;
        let s = self.state.lock().unwrap();
        for k in keys {
            MemStore::refuse_unreadable(&s, &mem_key(queue, &k.partition, &k.job_id))?;
        }
        Ok(keys
            .iter()
            .filter_map(|k| {
                let k = mem_key(queue, &k.partition, &k.job_id);
                s.items
                    .get(&k)
                    .cloned()
                    .map(Found::Job)
                    .or_else(|| s.history.get(&k).cloned().map(Found::History))
            })
            .collect())
    }

    async fn read_to_send(
        &self,
        queue: &QueueName,
        keys: &[JobKey],
    ) -> Result<(Vec<StoredJob>, Vec<Unreadable>), PortError> {
        let (later, readable): (Vec<JobKey>, Vec<JobKey>) = {
            let s = self.state.lock().unwrap();
            keys.iter().cloned().partition(|k| {
                let k = mem_key(queue, &k.partition, &k.job_id);
                s.unreadable.contains(&k) && s.items.contains_key(&k)
            })
        };
        let unreadable = later
            .into_iter()
            .map(|key| Unreadable {
                group: self
                    .get(queue, key.partition.clone(), &key.job_id)
                    .and_then(|j| j.job.message_group_id),
                key,
                newer_format: Some(crate::aws::codec::ITEM_FORMAT + 1),
            })
            .collect();
        Ok((self.read(queue, &readable).await?, unreadable))
    }

    async fn put_over(&self, job: &StoredJob, record: &History) -> Result<bool, PortError> {
        too_large(self.item_bytes(job))?;
        let k = mem_key(&job.job.queue, &job.partition, &job.job.job_id);
        let mut s = self.state.lock().unwrap();
        let holds_record = !s.items.contains_key(&k) && s.history.get(&k).is_some_and(|h| h.version == record.version);
        if holds_record {
            s.write(k, Some(job.clone()), self.index_lag);
        }
        Ok(holds_record)
    }

    async fn park_exhausted(&self, parked: &StoredJob, home: &History, over: Over<'_>) -> Result<bool, PortError> {
        too_large(self.item_bytes(parked))?;
        let queue = &parked.job.queue;
        let home_key = mem_key(queue, &home.partition, &home.job_id);
        let parked_key = mem_key(queue, &Partition::Parked, &parked.job.job_id);
        let mut s = self.state.lock().unwrap();
        let home_as_read = s.holds(&home_key, over);
        let parked_free = !s.items.contains_key(&parked_key) && !s.history.contains_key(&parked_key);
        if !(home_as_read && parked_free) {
            return Ok(false);
        }
        if matches!(over, Over::Sent(_)) {
            s.write(home_key.clone(), None, self.index_lag);
        }
        s.history.insert(home_key, home.clone());
        s.write(parked_key, Some(parked.clone()), self.index_lag);
        Ok(true)
    }

    async fn cancel_parked_chain(
        &self,
        parked: &StoredJob,
        record: &History,
        over: Over<'_>,
    ) -> Result<RemoveOutcome, PortError> {
        let home_key = mem_key(&record.queue, &record.partition, &record.job_id);
        let mut s = self.state.lock().unwrap();
        if !s.leaves_parked(parked, &home_key, over, self.index_lag) {
            return Ok(RemoveOutcome::Changed);
        }
        s.history.insert(home_key, record.clone());
        Ok(RemoveOutcome::Removed)
    }

    async fn unpark_over(&self, parked: &StoredJob, into: &StoredJob, over: Over<'_>) -> Result<bool, PortError> {
        too_large(self.item_bytes(into))?;
        let home_key = mem_key(&into.job.queue, &into.partition, &into.job.job_id);
        let mut s = self.state.lock().unwrap();
        if !s.leaves_parked(parked, &home_key, over, self.index_lag) {
            return Ok(false);
        }
        s.write(home_key, Some(into.clone()), self.index_lag);
        Ok(true)
    }

    async fn record(&self, history: &History) -> Result<(), PortError> {
        let k = mem_key(&history.queue, &history.partition, &history.job_id);
        let mut s = self.state.lock().unwrap();
        if !s.items.contains_key(&k) {
            s.history.insert(k, history.clone());
        }
        Ok(())
    }

    async fn cancel(&self, current: &StoredJob, record: Option<&History>) -> Result<RemoveOutcome, PortError> {
        let queue = &current.job.queue;
        let k = mem_key(queue, &current.partition, &current.job.job_id);
        let mut s = self.state.lock().unwrap();
        if s.items
            .get(&k)
            .is_none_or(|stored| stored.edition() != current.edition())
        {
            return Ok(RemoveOutcome::Changed);
        }
        if let Some(shard) = current.lease_shard() {
            if s.leases
                .get(&(queue.clone(), shard))
                .is_some_and(|l| l.horizon >= current.job.perform_at)
            {
                return Ok(RemoveOutcome::Dispatching);
            }
        }
        s.write(k.clone(), None, self.index_lag);
        if let Some(h) = record {
            s.history.insert(k, h.clone());
        }
        Ok(RemoveOutcome::Removed)
    }

    async fn replace(&self, current: &StoredJob, next: &StoredJob) -> Result<ReplaceOutcome, PortError> {
        let queue = &current.job.queue;
        let k = mem_key(queue, &current.partition, &current.job.job_id);
        let mut s = self.state.lock().unwrap();
        if let Some(shard) = current.lease_shard() {
            if s.leases
                .get(&(queue.clone(), shard))
                .is_some_and(|l| l.horizon >= current.job.perform_at)
            {
                return Ok(ReplaceOutcome::Dispatching);
            }
        }
        if s.items
            .get(&k)
            .is_none_or(|stored| stored.edition() != current.edition())
        {
            return Ok(ReplaceOutcome::Changed);
        }
        s.write(k, Some(next.clone()), self.index_lag);
        Ok(ReplaceOutcome::Replaced)
    }

    async fn rewrite(&self, current: &StoredJob, next: &StoredJob) -> Result<ReplaceOutcome, PortError> {
        let k = mem_key(&current.job.queue, &current.partition, &current.job.job_id);
        let mut s = self.state.lock().unwrap();
        if s.items
            .get(&k)
            .is_none_or(|stored| stored.edition() != current.edition())
        {
            return Ok(ReplaceOutcome::Changed);
        }
        s.write(k, Some(next.clone()), self.index_lag);
        Ok(ReplaceOutcome::Replaced)
    }

    async fn retire(&self, queue: &QueueName, items: &[Retired]) -> Result<(), PortError> {
        if self.hang_retires.load(std::sync::atomic::Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        if self.fail_deletes.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(PortError::Transient {
                operation: "DeleteItem",
                source: "injected: deletes fail".into(),
            });
        }
        if let Some(log) = self.moves_sent.lock().unwrap().as_mut() {
            log.extend(
                items
                    .iter()
                    .filter(|r| r.advance.is_some())
                    .map(|r| (queue.clone(), r.clone())),
            );
        }
        for r in items {
            if let Some(a) = &r.advance {
                // A series' move: the same item, on to its next occurrence, if still that edition.
                let k = mem_key(queue, &r.key.partition, &r.key.job_id);
                let mut s = self.state.lock().unwrap();
                let moved = s
                    .items
                    .get(&k)
                    .filter(|j| j.edition() == r.edition)
                    .map(|j| a.applied_to(j));
                if let Some(next) = moved {
                    s.write(k, Some(next), self.index_lag);
                }
                continue;
            }
            // Each removal conditioned on its edition, as in the adapter.
            if !self.remove_edition(queue, &r.key, r.edition) {
                continue;
            }
            if let Some(h) = &r.record {
                let k = mem_key(queue, &r.key.partition, &r.key.job_id);
                self.state.lock().unwrap().history.insert(k, h.clone());
            }
        }
        let meanwhile = self.retire_applied_then_fails.lock().unwrap().take();
        if let Some(meanwhile) = meanwhile {
            meanwhile(self);
            return Err(PortError::Transient {
                operation: "DeleteItem",
                source: "injected: applied, then the reply was lost".into(),
            });
        }
        Ok(())
    }
}
