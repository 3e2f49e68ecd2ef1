//! In-memory fakes of the ports, for domain tests. They keep the contract's semantics
//! (conditional put, lease-aware cancel, paged due query) without any AWS types.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};
use futures::stream::{self, BoxStream, StreamExt};

use crate::config::{Config, QueueName};
use crate::error::PortError;
use crate::ports::*;

type Key = (QueueName, Partition, String);

/// Where an injected fault strikes: before the call takes effect, or after (the reply is lost).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    None,
    Before,
    After,
}

/// Seeded fault injection shared by the fakes; off unless seeded. It can also make each call
/// take a random time (paused tokio time), so that calls in flight at once finish in any order.
#[derive(Clone, Default)]
pub struct Faults {
    /// The seeded schedule and the fault rate; `None` when off.
    plan: Arc<Mutex<Option<(rand::rngs::StdRng, f64)>>>,
    max_latency_ms: u64,
}

impl Faults {
    pub fn seeded(seed: u64, rate: f64) -> Self {
        use rand::SeedableRng;
        Self {
            plan: Arc::new(Mutex::new(Some((rand::rngs::StdRng::seed_from_u64(seed), rate)))),
            max_latency_ms: 0,
        }
    }

    /// Each call then takes from 0 to `max_ms` ms, drawn from the seeded schedule.
    pub fn with_latency(self, max_ms: u64) -> Self {
        Self {
            max_latency_ms: max_ms,
            ..self
        }
    }

    pub async fn pause(&self) {
        use rand::Rng;
        let ms = match self.plan.lock().unwrap().as_mut() {
            Some((rng, _)) if self.max_latency_ms > 0 => rng.random_range(0..=self.max_latency_ms),
            _ => 0,
        };
        if ms > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        }
    }

    pub fn off(&self) {
        *self.plan.lock().unwrap() = None;
    }

    pub fn roll(&self) -> Fault {
        use rand::Rng;
        let mut plan = self.plan.lock().unwrap();
        let Some((rng, rate)) = plan.as_mut() else {
            return Fault::None;
        };
        if !rng.random_bool(*rate) {
            Fault::None
        } else if rng.random_bool(0.5) {
            Fault::Before
        } else {
            Fault::After
        }
    }

    /// Whether one batch entry fails on its own (not sent).
    pub fn entry_fails(&self) -> bool {
        use rand::Rng;
        self.plan
            .lock()
            .unwrap()
            .as_mut()
            .is_some_and(|(rng, rate)| rng.random_bool(*rate / 2.0))
    }
}

fn injected(operation: &'static str) -> PortError {
    PortError::Transient {
        operation,
        source: "injected fault".into(),
    }
}

/// Runs `op` under the fault plan: it may fail before taking effect or after.
macro_rules! faulty {
    ($faults:expr, $name:literal, $op:expr) => {{
        $faults.pause().await;
        let fault = $faults.roll();
        if fault == Fault::Before {
            return Err(injected($name));
        }
        let out = $op;
        if fault == Fault::After {
            return Err(injected($name));
        }
        out
    }};
}

/// A store whose every call may fail, before or after it takes effect.
#[derive(Clone)]
pub struct FaultyStore<S> {
    pub inner: S,
    pub faults: Faults,
}

#[async_trait]
impl<S: JobStore> JobStore for FaultyStore<S> {
    fn item_bytes(&self, job: &StoredJob) -> usize {
        self.inner.item_bytes(job)
    }
    async fn put_new(&self, job: &StoredJob) -> Result<PutOutcome, PortError> {
        faulty!(self.faults, "PutItem", self.inner.put_new(job).await)
    }
    async fn read_any(&self, q: &QueueName, keys: &[JobKey]) -> Result<Vec<Found>, PortError> {
        faulty!(self.faults, "BatchGetItem", self.inner.read_any(q, keys).await)
    }
    async fn record(&self, h: &History) -> Result<(), PortError> {
        faulty!(self.faults, "PutItem", self.inner.record(h).await)
    }
    async fn cancel(
        &self,
        q: &QueueName,
        k: &JobKey,
        at: DateTime<Utc>,
        record: Option<&History>,
    ) -> Result<CancelOutcome, PortError> {
        faulty!(
            self.faults,
            "TransactWriteItems",
            self.inner.cancel(q, k, at, record).await
        )
    }
    fn by_time<'a>(
        &'a self,
        q: &'a QueueName,
        partition: Partition,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> BoxStream<'a, Result<Vec<StoredJob>, PortError>> {
        if self.faults.roll() == Fault::None {
            self.inner.by_time(q, partition, from, to)
        } else {
            stream::once(async { Err(injected("Query")) }).boxed()
        }
    }
    async fn rewrite(&self, current: &StoredJob, next: &StoredJob) -> Result<ReplaceOutcome, PortError> {
        faulty!(self.faults, "PutItem", self.inner.rewrite(current, next).await)
    }
    async fn count(
        &self,
        q: &QueueName,
        p: Partition,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<u64, PortError> {
        faulty!(self.faults, "Query", self.inner.count(q, p, from, to).await)
    }
    async fn replace(&self, current: &StoredJob, next: &StoredJob) -> Result<ReplaceOutcome, PortError> {
        faulty!(
            self.faults,
            "TransactWriteItems",
            self.inner.replace(current, next).await
        )
    }
    async fn parked(&self, q: &QueueName, limit: usize, after: Option<&str>) -> Result<Page<StoredJob>, PortError> {
        faulty!(self.faults, "Query", self.inner.parked(q, limit, after).await)
    }
    async fn shard_counts(&self, q: &QueueName, current: u32) -> Result<Vec<u32>, PortError> {
        faulty!(self.faults, "GetItem", self.inner.shard_counts(q, current).await)
    }
    async fn retire(&self, q: &QueueName, items: &[Retired]) -> Result<(), PortError> {
        faulty!(self.faults, "BatchWriteItem", self.inner.retire(q, items).await)
    }
    async fn park(&self, job: &StoredJob, info: &ParkInfo) -> Result<(), PortError> {
        faulty!(self.faults, "PutItem", self.inner.park(job, info).await)
    }
    async fn unpark(&self, parked: &StoredJob, into: &StoredJob) -> Result<PutOutcome, PortError> {
        faulty!(self.faults, "PutItem", self.inner.unpark(parked, into).await)
    }
    async fn acquire_lease(
        &self,
        q: &QueueName,
        shard: u32,
        l: &Lease,
        now: DateTime<Utc>,
    ) -> Result<LeaseOutcome, PortError> {
        faulty!(
            self.faults,
            "UpdateItem",
            self.inner.acquire_lease(q, shard, l, now).await
        )
    }
    async fn release_lease(&self, q: &QueueName, shard: u32, owner: &str) -> Result<(), PortError> {
        faulty!(
            self.faults,
            "DeleteItem",
            self.inner.release_lease(q, shard, owner).await
        )
    }
}

/// A queue whose calls may fail before or after sending, and whose batch entries may fail alone.
#[derive(Clone)]
pub struct FaultyQueue<Q> {
    pub inner: Q,
    pub faults: Faults,
}

#[async_trait]
impl<Q: MessageQueue> MessageQueue for FaultyQueue<Q> {
    async fn send(&self, queue: &QueueName, m: &OutgoingMessage) -> Result<String, PortError> {
        faulty!(self.faults, "SendMessage", self.inner.send(queue, m).await)
    }

    async fn send_batch(
        &self,
        queue: &QueueName,
        messages: &[OutgoingMessage],
    ) -> Result<Vec<EntryOutcome>, PortError> {
        faulty!(self.faults, "SendMessageBatch", {
            let fails: Vec<bool> = messages.iter().map(|_| self.faults.entry_fails()).collect();
            let passing: Vec<OutgoingMessage> = messages
                .iter()
                .zip(&fails)
                .filter(|(_, f)| !**f)
                .map(|(m, _)| m.clone())
                .collect();
            let mut sent = if passing.is_empty() {
                Vec::new()
            } else {
                self.inner.send_batch(queue, &passing).await?
            }
            .into_iter();
            let failed = || EntryOutcome::Failed {
                code: "InternalError".into(),
                message: "injected entry failure".into(),
                sender_fault: false,
            };
            Ok(fails
                .iter()
                .map(|f| {
                    if *f {
                        failed()
                    } else {
                        sent.next().unwrap_or_else(failed)
                    }
                })
                .collect())
        })
    }
}

#[derive(Default)]
pub struct MemState {
    pub items: BTreeMap<Key, StoredJob>,
    /// History records, each in place of the job it was (never in the index).
    pub history: BTreeMap<Key, History>,
    pub leases: HashMap<(QueueName, u32), Lease>,
    pub shard_counts: HashMap<QueueName, Vec<u32>>,
    /// What the due index shows: `items` as it was `index_lag` ago (a GSI is eventually
    /// consistent), fed by `index_log`.
    index: BTreeMap<Key, StoredJob>,
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
}

impl Default for MemStore {
    fn default() -> Self {
        Self {
            state: Arc::default(),
            page_size: 7,
            index_lag: std::time::Duration::ZERO,
            fail_deletes: Arc::default(),
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

    fn catch_up_index(&mut self) {
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

    fn remove(&self, queue: &QueueName, key: &JobKey) -> Option<StoredJob> {
        let k = mem_key(queue, &key.partition, &key.job_id);
        let mut s = self.state.lock().unwrap();
        let old = s.items.get(&k).cloned();
        if old.is_some() {
            s.write(k, None, self.index_lag);
        }
        old
    }
}

#[async_trait]
impl JobStore for MemStore {
    fn item_bytes(&self, job: &StoredJob) -> usize {
        job.job.message_bytes() + 200
    }

    async fn put_new(&self, job: &StoredJob) -> Result<PutOutcome, PortError> {
        let k = mem_key(&job.job.queue, &job.partition, &job.job.job_id);
        let mut s = self.state.lock().unwrap();
        if let Some(existing) = s.items.get(&k) {
            return Ok(PutOutcome::Duplicate(Box::new(existing.clone())));
        }
        if let Some(done) = s.history.get(&k).filter(|h| h.is_live(job.enqueued_at)) {
            return Ok(PutOutcome::Done(Box::new(done.clone())));
        }
        s.write(k, Some(job.clone()), self.index_lag);
        Ok(PutOutcome::Created)
    }

    async fn read_any(&self, queue: &QueueName, keys: &[JobKey]) -> Result<Vec<Found>, PortError> {
        let s = self.state.lock().unwrap();
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

    async fn record(&self, history: &History) -> Result<(), PortError> {
        let k = mem_key(&history.queue, &history.partition, &history.job_id);
        let mut s = self.state.lock().unwrap();
        if !s.items.contains_key(&k) {
            s.history.insert(k, history.clone());
        }
        Ok(())
    }

    async fn cancel(
        &self,
        queue: &QueueName,
        key: &JobKey,
        perform_at: DateTime<Utc>,
        record: Option<&History>,
    ) -> Result<CancelOutcome, PortError> {
        if let Partition::Shard(shard) = key.partition {
            let s = self.state.lock().unwrap();
            if s.leases
                .get(&(queue.clone(), shard))
                .is_some_and(|l| l.horizon >= perform_at)
            {
                return Ok(CancelOutcome::Dispatching);
            }
        }
        Ok(match self.remove(queue, key) {
            Some(_) => {
                if let Some(h) = record {
                    let k = mem_key(queue, &key.partition, &key.job_id);
                    self.state.lock().unwrap().history.insert(k, h.clone());
                }
                CancelOutcome::Cancelled
            }
            None => CancelOutcome::NotFound,
        })
    }

    fn by_time<'a>(
        &'a self,
        queue: &'a QueueName,
        partition: Partition,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> BoxStream<'a, Result<Vec<StoredJob>, PortError>> {
        let mut due: Vec<StoredJob> = {
            let mut s = self.state.lock().unwrap();
            s.catch_up_index();
            s.index
                .values()
                .filter(|j| {
                    &j.job.queue == queue && j.partition == partition && (from..=to).contains(&j.job.perform_at)
                })
                .cloned()
                .collect()
        };
        // A GSI keeps no order among equal sort keys: neither does this.
        due.sort_by_key(|j| (j.job.perform_at, std::cmp::Reverse(j.job.job_id.clone())));
        let pages: Vec<_> = due.chunks(self.page_size.max(1)).map(|c| Ok(c.to_vec())).collect();
        stream::iter(pages).boxed()
    }

    async fn parked(&self, queue: &QueueName, limit: usize, after: Option<&str>) -> Result<Page<StoredJob>, PortError> {
        let s = self.state.lock().unwrap();
        let mut items: Vec<StoredJob> = s
            .items
            .values()
            .filter(|j| {
                &j.job.queue == queue
                    && j.partition == Partition::Parked
                    && after.is_none_or(|a| j.job.job_id.as_str() > a)
            })
            .take(limit.saturating_add(1))
            .cloned()
            .collect();
        let next = (items.len() > limit).then(|| {
            items.truncate(limit);
            items.last().map(|j| j.job.job_id.clone())
        });
        Ok(Page {
            items,
            next: next.flatten(),
        })
    }

    async fn shard_counts(&self, queue: &QueueName, current: u32) -> Result<Vec<u32>, PortError> {
        let mut s = self.state.lock().unwrap();
        let counts = s.shard_counts.entry(queue.clone()).or_default();
        if !counts.contains(&current) {
            counts.push(current);
            counts.sort_unstable();
        }
        Ok(counts.clone())
    }

    async fn retire(&self, queue: &QueueName, items: &[Retired]) -> Result<(), PortError> {
        if self.fail_deletes.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(PortError::Transient {
                operation: "BatchWriteItem",
                source: "injected: deletes fail".into(),
            });
        }
        for r in items {
            self.remove(queue, &r.key);
            // A put in place of the delete: unconditional, as in BatchWriteItem.
            if let Some(h) = &r.record {
                let k = mem_key(queue, &r.key.partition, &r.key.job_id);
                self.state.lock().unwrap().history.insert(k, h.clone());
            }
        }
        Ok(())
    }

    async fn park(&self, job: &StoredJob, info: &ParkInfo) -> Result<(), PortError> {
        let mut parked = job.clone();
        parked.partition = Partition::Parked;
        parked.parked = Some(info.clone());
        self.insert(parked);
        self.remove(&job.job.queue, &job.key());
        Ok(())
    }

    async fn unpark(&self, parked: &StoredJob, into: &StoredJob) -> Result<PutOutcome, PortError> {
        let outcome = self.put_new(into).await?;
        if outcome == PutOutcome::Created {
            self.remove(&parked.job.queue, &parked.key());
        }
        Ok(outcome)
    }

    async fn acquire_lease(
        &self,
        queue: &QueueName,
        shard: u32,
        lease: &Lease,
        now: DateTime<Utc>,
    ) -> Result<LeaseOutcome, PortError> {
        let mut s = self.state.lock().unwrap();
        let k = (queue.clone(), shard);
        match s.leases.get(&k) {
            Some(l) if l.until >= now && l.owner != lease.owner => Ok(LeaseOutcome::Held(Some(l.clone()))),
            previous => {
                let horizon = previous.map_or(lease.horizon, |p| p.horizon.max(lease.horizon));
                let inherited = previous.is_some_and(|p| p.owner != lease.owner);
                s.leases.insert(
                    k,
                    Lease {
                        horizon,
                        ..lease.clone()
                    },
                );
                Ok(LeaseOutcome::Acquired { horizon, inherited })
            }
        }
    }

    async fn count(
        &self,
        queue: &QueueName,
        partition: Partition,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<u64, PortError> {
        let mut s = self.state.lock().unwrap();
        s.catch_up_index();
        Ok(s.index
            .values()
            .filter(|j| &j.job.queue == queue && j.partition == partition && (from..=to).contains(&j.job.perform_at))
            .count() as u64)
    }

    async fn replace(&self, current: &StoredJob, next: &StoredJob) -> Result<ReplaceOutcome, PortError> {
        let queue = &current.job.queue;
        let k = mem_key(queue, &current.partition, &current.job.job_id);
        let mut s = self.state.lock().unwrap();
        if let Partition::Shard(shard) = current.partition {
            if s.leases
                .get(&(queue.clone(), shard))
                .is_some_and(|l| l.horizon >= current.job.perform_at)
            {
                return Ok(ReplaceOutcome::Dispatching);
            }
        }
        if s.items.get(&k).is_none_or(|stored| stored.version != current.version) {
            return Ok(ReplaceOutcome::Changed);
        }
        s.write(k, Some(next.clone()), self.index_lag);
        Ok(ReplaceOutcome::Replaced)
    }

    async fn rewrite(&self, current: &StoredJob, next: &StoredJob) -> Result<ReplaceOutcome, PortError> {
        let k = mem_key(&current.job.queue, &current.partition, &current.job.job_id);
        let mut s = self.state.lock().unwrap();
        if s.items.get(&k).is_none_or(|stored| stored.version != current.version) {
            return Ok(ReplaceOutcome::Changed);
        }
        s.write(k, Some(next.clone()), self.index_lag);
        Ok(ReplaceOutcome::Replaced)
    }

    async fn release_lease(&self, queue: &QueueName, shard: u32, owner: &str) -> Result<(), PortError> {
        let mut s = self.state.lock().unwrap();
        let k = (queue.clone(), shard);
        if s.leases.get(&k).is_some_and(|l| l.owner == owner) {
            s.leases.remove(&k);
        }
        Ok(())
    }
}

/// A message as the fake queue received it.
#[derive(Debug, Clone)]
pub struct Sent {
    pub queue: QueueName,
    pub message: OutgoingMessage,
    pub at: DateTime<Utc>,
}

type EntryFault = Box<dyn Fn(&OutgoingMessage) -> Option<EntryOutcome> + Send + Sync>;
type BatchFault = Box<dyn Fn(&[OutgoingMessage]) -> Option<PortError> + Send + Sync>;

/// Records what was sent; can fail entries or whole batches on demand.
#[derive(Clone, Default)]
pub struct FakeQueue {
    pub sent: Arc<Mutex<Vec<Sent>>>,
    pub entry_fault: Arc<Mutex<Option<EntryFault>>>,
    pub batch_fault: Arc<Mutex<Option<BatchFault>>>,
    pub clock: FakeClock,
}

impl FakeQueue {
    pub fn new(clock: FakeClock) -> Self {
        Self {
            clock,
            ..Self::default()
        }
    }

    pub fn sent(&self) -> Vec<Sent> {
        self.sent.lock().unwrap().clone()
    }
}

#[async_trait]
impl MessageQueue for FakeQueue {
    async fn send(&self, queue: &QueueName, message: &OutgoingMessage) -> Result<String, PortError> {
        match self.send_batch(queue, std::slice::from_ref(message)).await?.remove(0) {
            EntryOutcome::Sent { message_id } => Ok(message_id),
            EntryOutcome::Failed { code, .. } => Err(PortError::Rejected {
                operation: "SendMessage",
                code,
                source: None,
            }),
        }
    }

    async fn send_batch(
        &self,
        queue: &QueueName,
        messages: &[OutgoingMessage],
    ) -> Result<Vec<EntryOutcome>, PortError> {
        assert!(
            messages.len() <= crate::limits::SQS_MAX_BATCH_ENTRIES,
            "batch of {}",
            messages.len()
        );
        if let Some(e) = self.batch_fault.lock().unwrap().as_ref().and_then(|f| f(messages)) {
            return Err(e);
        }
        let at = self.clock.now();
        let fault = self.entry_fault.lock().unwrap();
        Ok(messages
            .iter()
            .map(|m| {
                if let Some(failed) = fault.as_ref().and_then(|f| f(m)) {
                    return failed;
                }
                self.sent.lock().unwrap().push(Sent {
                    queue: queue.clone(),
                    message: m.clone(),
                    at,
                });
                EntryOutcome::Sent {
                    message_id: uuid::Uuid::new_v4().to_string(),
                }
            })
            .collect())
    }
}

/// Wall time derived from tokio's clock, so with `start_paused = true` sleeps of concurrent
/// tasks overlap as in real time and tests run instantly. `advance` adds a manual jump.
#[derive(Clone)]
pub struct FakeClock {
    base: DateTime<Utc>,
    start: tokio::time::Instant,
    offset: Arc<Mutex<TimeDelta>>,
}

impl Default for FakeClock {
    fn default() -> Self {
        Self {
            // A fixed, odd sub-second phase so alignment is exercised.
            base: DateTime::parse_from_rfc3339("2026-12-01T09:00:00.123456Z")
                .unwrap()
                .with_timezone(&Utc),
            start: tokio::time::Instant::now(),
            offset: Arc::default(),
        }
    }
}

impl FakeClock {
    pub fn advance(&self, d: TimeDelta) {
        *self.offset.lock().unwrap() += d;
    }
}

#[async_trait]
impl Clock for FakeClock {
    fn now(&self) -> DateTime<Utc> {
        let elapsed = TimeDelta::from_std(self.start.elapsed()).unwrap();
        self.base + elapsed + *self.offset.lock().unwrap()
    }

    async fn sleep_until(&self, t: DateTime<Utc>) {
        if let Ok(d) = (t - self.now()).to_std() {
            tokio::time::sleep(d).await;
        }
    }
}

pub fn config(queues: &str, extra: &[(&str, &str)]) -> Arc<Config> {
    let mut map: HashMap<String, String> = extra.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    map.insert("WAITER_QUEUES".into(), queues.into());
    Arc::new(Config::from_lookup(|k| map.get(k).cloned()).unwrap())
}

pub type TestWaiter = crate::service::Waiter<MemStore, FakeQueue, FakeClock>;

/// A `Waiter` over fresh fakes for `queues`, with `extra` settings.
pub fn test_waiter(queues: &str, extra: &[(&str, &str)]) -> (TestWaiter, MemStore, FakeQueue, FakeClock) {
    let store = MemStore::default();
    let (w, queue, clock) = test_waiter_on(store.clone(), queues, extra);
    (w, store, queue, clock)
}

/// A `Waiter` over `store` and a fresh queue and clock.
pub fn test_waiter_on(store: MemStore, queues: &str, extra: &[(&str, &str)]) -> (TestWaiter, FakeQueue, FakeClock) {
    let clock = FakeClock::default();
    let queue = FakeQueue::new(clock.clone());
    let w = crate::service::Waiter::new(config(queues, extra), store, queue.clone(), clock.clone());
    (w, queue, clock)
}

/// The dispatcher (a poller) over what `w` works with.
pub fn dispatcher_for(w: &TestWaiter) -> crate::dispatch::Dispatcher<MemStore, FakeQueue, FakeClock> {
    crate::dispatch::Dispatcher::new(w.config.clone(), w.store.clone(), w.queue.clone(), w.clock.clone())
}

/// A stored job with body `body-{id}` in its shard under `shards`, as `enqueue` would store it.
pub fn stored(queue: &str, id: &str, perform_at: DateTime<Utc>, shards: u32) -> StoredJob {
    let q = QueueName::parse(queue).unwrap();
    StoredJob {
        partition: Partition::Shard(crate::routing::shard_for(id, shards)),
        job: crate::job::Job {
            job_id: id.into(),
            job_id_given: true,
            message_body: format!("body-{id}"),
            message_attributes: Default::default(),
            perform_at,
            expires_at: None,
            message_group_id: q.is_fifo().then(|| "g".to_owned()),
            message_deduplication_id: q.is_fifo().then(|| id.to_owned()),
            windows: None,
            queue: q,
        },
        enqueued_at: perform_at,
        parked: None,
        version: 1,
    }
}

/// The reply of a request `w` must accept.
pub async fn call(w: &TestWaiter, v: serde_json::Value) -> serde_json::Value {
    w.handle(&v).await.unwrap()
}

/// The refusal of a request `w` must refuse as `InvalidRequest`.
pub async fn refused(w: &TestWaiter, v: serde_json::Value) -> crate::error::InvalidRequest {
    match w.handle(&v).await {
        Err(crate::service::HandlerError::Invalid(e)) => e,
        other => panic!("expected InvalidRequest for {v}, got {other:?}"),
    }
}

/// Stores job `id` on queue `orders`, `delay_s` from now, with body `body-{id}`.
pub async fn schedule(w: &TestWaiter, id: &str, delay_s: u64) {
    let r = call(
        w,
        serde_json::json!({"queue": "orders", "job_id": id, "message_body": format!("body-{id}"), "delay_seconds": delay_s}),
    )
    .await;
    assert_eq!(r["status"], "scheduled", "{r}");
}
