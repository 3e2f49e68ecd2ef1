//! In-memory fakes of the ports, for domain tests. They keep the contract's semantics
//! (conditional put, lease-aware cancel, paged due query) without any AWS types.

use std::collections::{BTreeMap, HashMap};
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

/// Seeded fault injection shared by the fakes; off unless seeded.
#[derive(Clone, Default)]
pub struct Faults(Arc<Mutex<Option<(rand::rngs::StdRng, f64)>>>);

impl Faults {
    pub fn seeded(seed: u64, rate: f64) -> Self {
        use rand::SeedableRng;
        Self(Arc::new(Mutex::new(Some((
            rand::rngs::StdRng::seed_from_u64(seed),
            rate,
        )))))
    }

    pub fn off(&self) {
        *self.0.lock().unwrap() = None;
    }

    pub fn roll(&self) -> Fault {
        use rand::Rng;
        let mut plan = self.0.lock().unwrap();
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
        self.0
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
    async fn find(&self, q: &QueueName, id: &str, p: &[Partition]) -> Result<Option<StoredJob>, PortError> {
        faulty!(self.faults, "BatchGetItem", self.inner.find(q, id, p).await)
    }
    async fn cancel(
        &self,
        q: &QueueName,
        k: &JobKey,
        at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<CancelOutcome, PortError> {
        faulty!(
            self.faults,
            "TransactWriteItems",
            self.inner.cancel(q, k, at, now).await
        )
    }
    fn due<'a>(
        &'a self,
        q: &'a QueueName,
        shard: u32,
        h: DateTime<Utc>,
    ) -> BoxStream<'a, Result<Vec<StoredJob>, PortError>> {
        if self.faults.roll() == Fault::None {
            self.inner.due(q, shard, h)
        } else {
            stream::once(async { Err(injected("Query")) }).boxed()
        }
    }
    async fn parked(&self, q: &QueueName) -> Result<Vec<StoredJob>, PortError> {
        faulty!(self.faults, "Query", self.inner.parked(q).await)
    }
    async fn delete(&self, q: &QueueName, keys: &[JobKey]) -> Result<(), PortError> {
        faulty!(self.faults, "BatchWriteItem", self.inner.delete(q, keys).await)
    }
    async fn park(&self, job: &StoredJob, info: &ParkInfo) -> Result<(), PortError> {
        faulty!(self.faults, "PutItem", self.inner.park(job, info).await)
    }
    async fn unpark(&self, parked: &StoredJob, into: &StoredJob) -> Result<(), PortError> {
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
    pub leases: HashMap<(QueueName, u32), Lease>,
}

#[derive(Clone)]
pub struct MemStore {
    pub state: Arc<Mutex<MemState>>,
    pub page_size: usize,
}

impl Default for MemStore {
    fn default() -> Self {
        Self {
            state: Arc::default(),
            page_size: 7,
        }
    }
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
            .get(&(queue.clone(), partition, job_id.to_owned()))
            .cloned()
    }

    pub fn insert(&self, job: StoredJob) {
        let k = (job.job.queue.clone(), job.partition.clone(), job.job.job_id.clone());
        self.state.lock().unwrap().items.insert(k, job);
    }
}

#[async_trait]
impl JobStore for MemStore {
    fn item_bytes(&self, job: &StoredJob) -> usize {
        job.job.message_bytes() + 200
    }

    async fn put_new(&self, job: &StoredJob) -> Result<PutOutcome, PortError> {
        let k = (job.job.queue.clone(), job.partition.clone(), job.job.job_id.clone());
        let mut s = self.state.lock().unwrap();
        if let Some(existing) = s.items.get(&k) {
            return Ok(PutOutcome::Duplicate(Box::new(existing.clone())));
        }
        s.items.insert(k, job.clone());
        Ok(PutOutcome::Created)
    }

    async fn find(
        &self,
        queue: &QueueName,
        job_id: &str,
        partitions: &[Partition],
    ) -> Result<Option<StoredJob>, PortError> {
        let s = self.state.lock().unwrap();
        Ok(partitions
            .iter()
            .find_map(|p| s.items.get(&(queue.clone(), p.clone(), job_id.to_owned())).cloned()))
    }

    async fn cancel(
        &self,
        queue: &QueueName,
        key: &JobKey,
        perform_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<CancelOutcome, PortError> {
        let mut s = self.state.lock().unwrap();
        if let Partition::Shard(shard) = key.partition {
            if let Some(l) = s.leases.get(&(queue.clone(), shard)) {
                if l.until >= now && l.horizon >= perform_at {
                    return Ok(CancelOutcome::Dispatching);
                }
            }
        }
        Ok(
            match s
                .items
                .remove(&(queue.clone(), key.partition.clone(), key.job_id.clone()))
            {
                Some(_) => CancelOutcome::Cancelled,
                None => CancelOutcome::NotFound,
            },
        )
    }

    fn due<'a>(
        &'a self,
        queue: &'a QueueName,
        shard: u32,
        horizon: DateTime<Utc>,
    ) -> BoxStream<'a, Result<Vec<StoredJob>, PortError>> {
        let mut due: Vec<StoredJob> = self
            .state
            .lock()
            .unwrap()
            .items
            .values()
            .filter(|j| &j.job.queue == queue && j.partition == Partition::Shard(shard) && j.job.perform_at <= horizon)
            .cloned()
            .collect();
        due.sort_by_key(|j| j.job.perform_at);
        let pages: Vec<_> = due.chunks(self.page_size.max(1)).map(|c| Ok(c.to_vec())).collect();
        stream::iter(pages).boxed()
    }

    async fn parked(&self, queue: &QueueName) -> Result<Vec<StoredJob>, PortError> {
        let s = self.state.lock().unwrap();
        Ok(s.items
            .values()
            .filter(|j| &j.job.queue == queue && j.partition == Partition::Parked)
            .cloned()
            .collect())
    }

    async fn delete(&self, queue: &QueueName, keys: &[JobKey]) -> Result<(), PortError> {
        let mut s = self.state.lock().unwrap();
        for k in keys {
            s.items.remove(&(queue.clone(), k.partition.clone(), k.job_id.clone()));
        }
        Ok(())
    }

    async fn park(&self, job: &StoredJob, info: &ParkInfo) -> Result<(), PortError> {
        let mut parked = job.clone();
        parked.partition = Partition::Parked;
        parked.parked = Some(info.clone());
        self.insert(parked);
        self.delete(&job.job.queue, &[job.key()]).await
    }

    async fn unpark(&self, parked: &StoredJob, into: &StoredJob) -> Result<(), PortError> {
        self.put_new(into).await?;
        self.delete(&parked.job.queue, &[parked.key()]).await
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
            _ => {
                s.leases.insert(k, lease.clone());
                Ok(LeaseOutcome::Acquired)
            }
        }
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
