//! Seeded fault injection, and the faulty store and queue that wrap the fakes with it.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures::stream::{self, BoxStream, StreamExt};

use crate::config::QueueName;
use crate::error::PortError;
use crate::ports::*;

/// Where an injected fault strikes: before the call takes effect, or after (the reply is lost).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    None,
    Before,
    After,
    /// After, and the SDK retries the call a while later (what others did meanwhile included):
    /// the caller sees the retry's answer.
    Retried,
}

/// Seeded fault injection shared by the fakes; off unless seeded. It can also make each call
/// take a random time (paused tokio time), so that calls in flight at once finish in any order.
#[derive(Clone, Default)]
pub struct Faults {
    /// The seeded schedule and the fault rate; `None` when off.
    plan: Arc<Mutex<Option<(rand::rngs::StdRng, f64)>>>,
    max_latency_ms: u64,
    /// A partition whose due-index query answers this late (a loaded backend answers one
    /// partition's query long after another's): (shard, ms).
    slow_index: Option<(u32, u64)>,
    /// FIFO batches that split a group: (the body of an entry that failed, the body of a later
    /// entry of its group accepted in the same batch). SQS does not document whether it
    /// accepts that later entry; these fakes do (docs/guarantees.md, FIFO).
    pub split_groups: Arc<Mutex<Vec<(String, String)>>>,
}

impl Faults {
    pub fn seeded(seed: u64, rate: f64) -> Self {
        use rand::SeedableRng;
        Self {
            plan: Arc::new(Mutex::new(Some((rand::rngs::StdRng::seed_from_u64(seed), rate)))),
            max_latency_ms: 0,
            slow_index: None,
            split_groups: Arc::default(),
        }
    }

    /// The due-index query of `shard` then answers `ms` late.
    pub fn with_slow_index(self, shard: u32, ms: u64) -> Self {
        Self {
            slow_index: Some((shard, ms)),
            ..self
        }
    }

    /// Each call then takes from 0 to `max_ms` ms, drawn from the seeded schedule.
    /// `store` and `queue` behind this schedule of faults: what the simulations drive.
    pub fn around<S: Clone, Q: Clone>(&self, store: &S, queue: &Q) -> (FaultyStore<S>, FaultyQueue<Q>) {
        (
            FaultyStore {
                inner: store.clone(),
                faults: self.clone(),
            },
            FaultyQueue {
                inner: queue.clone(),
                faults: self.clone(),
            },
        )
    }

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
        match rng.random_range(0..3) {
            _ if !rng.random_bool(*rate) => Fault::None,
            0 => Fault::Before,
            1 => Fault::After,
            _ => Fault::Retried,
        }
    }

    /// The SDK's backoff before a retry: up to a second, from the seeded schedule.
    pub async fn backoff(&self) {
        use rand::Rng;
        let ms = match self.plan.lock().unwrap().as_mut() {
            Some((rng, _)) => rng.random_range(0..1_000),
            None => 0,
        };
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
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

/// Runs `op` under the fault plan: it may fail before taking effect or after, or be applied
/// and then retried by the SDK a while later. What a retry answers depends on the call:
/// - by default the call is applied again (`op` is evaluated twice) and its answer returned;
/// - `token:` transactions: the SDK fills in `ClientRequestToken`, so DynamoDB answers a retry
///   of an applied call as it answered the call (within 10 minutes), without applying it again;
/// - `once:` sends: a retry re-sends with the delay first planned, which the real adapter
///   retimes (`aws::retime`); the fakes do not model that, so a retried send is a lost reply.
macro_rules! faulty {
    (once: $faults:expr, $name:literal, $op:expr) => {
        faulty!(@ $faults, $name, $op, lost)
    };
    (token: $faults:expr, $name:literal, $op:expr) => {
        faulty!(@ $faults, $name, $op, first)
    };
    ($faults:expr, $name:literal, $op:expr) => {
        faulty!(@ $faults, $name, $op, again)
    };
    (@ $faults:expr, $name:literal, $op:expr, $retry:ident) => {{
        $faults.pause().await;
        let fault = $faults.roll();
        if fault == Fault::Before {
            return Err(injected($name));
        }
        let out = $op;
        match fault {
            Fault::After => return Err(injected($name)),
            Fault::Retried => faulty!(@retry $retry, $faults, $name, $op, out),
            _ => out,
        }
    }};
    (@retry lost, $faults:expr, $name:literal, $op:expr, $out:ident) => {
        return Err(injected($name))
    };
    (@retry first, $faults:expr, $name:literal, $op:expr, $out:ident) => {{
        $faults.backoff().await;
        $out
    }};
    (@retry again, $faults:expr, $name:literal, $op:expr, $out:ident) => {{
        let _lost = $out;
        $faults.backoff().await;
        $op
    }};
}

/// A store whose every call may fail, before or after it takes effect.
#[derive(Clone)]
pub struct FaultyStore<S> {
    pub inner: S,
    pub faults: Faults,
}

#[async_trait]
impl<S: JobStore> Jobs for FaultyStore<S> {
    fn item_bytes(&self, job: &StoredJob) -> usize {
        self.inner.item_bytes(job)
    }

    async fn put_new(&self, job: &StoredJob) -> Result<PutOutcome, PortError> {
        faulty!(self.faults, "PutItem", self.inner.put_new(job).await)
    }

    async fn place(&self, job: &StoredJob) -> Result<bool, PortError> {
        faulty!(self.faults, "PutItem", self.inner.place(job).await)
    }

    async fn remove(&self, job: &StoredJob) -> Result<(), PortError> {
        faulty!(self.faults, "DeleteItem", self.inner.remove(job).await)
    }

    async fn read_any(&self, q: &QueueName, keys: &[JobKey]) -> Result<Vec<Found>, PortError> {
        faulty!(self.faults, "BatchGetItem", self.inner.read_any(q, keys).await)
    }

    async fn read_to_send(
        &self,
        q: &QueueName,
        keys: &[JobKey],
    ) -> Result<(Vec<StoredJob>, Vec<Unreadable>), PortError> {
        faulty!(self.faults, "BatchGetItem", self.inner.read_to_send(q, keys).await)
    }

    async fn record(&self, h: &History) -> Result<(), PortError> {
        faulty!(self.faults, "PutItem", self.inner.record(h).await)
    }

    async fn put_over(&self, job: &StoredJob, record: &History) -> Result<bool, PortError> {
        faulty!(self.faults, "PutItem", self.inner.put_over(job, record).await)
    }

    async fn park_exhausted(&self, parked: &StoredJob, home: &History, over: Over<'_>) -> Result<bool, PortError> {
        faulty!(
            self.faults,
            "TransactWriteItems",
            self.inner.park_exhausted(parked, home, over).await
        )
    }

    async fn cancel_parked_chain(
        &self,
        parked: &StoredJob,
        record: &History,
        over: Over<'_>,
    ) -> Result<RemoveOutcome, PortError> {
        faulty!(
            token: self.faults,
            "TransactWriteItems",
            self.inner.cancel_parked_chain(parked, record, over).await
        )
    }

    async fn unpark_over(&self, parked: &StoredJob, into: &StoredJob, over: Over<'_>) -> Result<bool, PortError> {
        faulty!(
            token: self.faults,
            "TransactWriteItems",
            self.inner.unpark_over(parked, into, over).await
        )
    }

    async fn cancel(&self, current: &StoredJob, record: Option<&History>) -> Result<RemoveOutcome, PortError> {
        faulty!(
            token: self.faults,
            "TransactWriteItems",
            self.inner.cancel(current, record).await
        )
    }

    async fn replace(&self, current: &StoredJob, next: &StoredJob) -> Result<ReplaceOutcome, PortError> {
        faulty!(
            token: self.faults,
            "TransactWriteItems",
            self.inner.replace(current, next).await
        )
    }

    async fn rewrite(&self, current: &StoredJob, next: &StoredJob) -> Result<ReplaceOutcome, PortError> {
        faulty!(self.faults, "PutItem", self.inner.rewrite(current, next).await)
    }

    async fn retire(&self, q: &QueueName, items: &[Retired]) -> Result<(), PortError> {
        faulty!(self.faults, "DeleteItem", self.inner.retire(q, items).await)
    }
}

#[async_trait]
impl<S: JobStore> DueIndex for FaultyStore<S> {
    fn by_time_after<'a>(
        &'a self,
        q: &'a QueueName,
        partition: Partition,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        after: Option<IndexPosition>,
        view: View,
    ) -> BoxStream<'a, Result<Vec<StoredJob>, PortError>> {
        if self.faults.roll() == Fault::None {
            let inner = self.inner.by_time_after(q, partition.clone(), from, to, after, view);
            match self.faults.slow_index {
                Some((shard, ms)) if partition == Partition::Shard(shard) => stream::once(async move {
                    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                    inner
                })
                .flatten()
                .boxed(),
                _ => inner,
            }
        } else {
            stream::once(async { Err(injected("Query")) }).boxed()
        }
    }

    async fn count(
        &self,
        q: &QueueName,
        p: Partition,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<u64, PortError> {
        faulty!(self.faults, "Query", self.inner.count(q, p.clone(), from, to).await)
    }

    async fn shard_counts(&self, q: &QueueName, current: u32) -> Result<Vec<u32>, PortError> {
        faulty!(self.faults, "GetItem", self.inner.shard_counts(q, current).await)
    }
}

#[async_trait]
impl<S: JobStore> Parking for FaultyStore<S> {
    async fn parked(&self, q: &QueueName, limit: usize, after: Option<&str>) -> Result<Page<StoredJob>, PortError> {
        faulty!(self.faults, "Query", self.inner.parked(q, limit, after).await)
    }
}

#[async_trait]
impl<S: JobStore> Leases for FaultyStore<S> {
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

    async fn release_lease(
        &self,
        q: &QueueName,
        shard: u32,
        owner: &str,
        held_back_from: Option<DateTime<Utc>>,
    ) -> Result<(), PortError> {
        faulty!(
            self.faults,
            "UpdateItem",
            self.inner.release_lease(q, shard, owner, held_back_from).await
        )
    }

    async fn lease_covers(
        &self,
        q: &QueueName,
        shard: u32,
        perform_at: DateTime<Utc>,
        since: DateTime<Utc>,
    ) -> Result<bool, PortError> {
        faulty!(
            self.faults,
            "GetItem",
            self.inner.lease_covers(q, shard, perform_at, since).await
        )
    }

    async fn hand_on(
        &self,
        q: &QueueName,
        shard: u32,
        owner: &str,
        debts: &[Retired],
        until: DateTime<Utc>,
    ) -> Result<bool, PortError> {
        faulty!(
            self.faults,
            "UpdateItem",
            self.inner.hand_on(q, shard, owner, debts, until).await
        )
    }
}

#[async_trait]
impl<S: JobStore> RateLedger for FaultyStore<S> {
    async fn book(
        &self,
        q: &QueueName,
        rate: u32,
        wants: &[crate::rate::ArrivalWant],
        claim: Option<&crate::rate::Claim>,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<Vec<crate::rate::Booked>, PortError> {
        faulty!(
            self.faults,
            "PutItem",
            self.inner.book(q, rate, wants, claim, now, until).await
        )
    }

    async fn release(
        &self,
        q: &QueueName,
        bookings: &[crate::rate::Booking],
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<(), PortError> {
        faulty!(
            self.faults,
            "PutItem",
            self.inner.release(q, bookings, now, until).await
        )
    }
}

/// A queue whose calls may fail before or after sending, and whose batch entries may fail alone.
#[derive(Clone)]
pub struct FaultyQueue<Q> {
    pub inner: Q,
    pub faults: Faults,
}

impl<Q> FaultyQueue<Q> {
    fn record_split_groups(&self, messages: &[OutgoingMessage], fails: &[bool]) {
        let mut split = self.faults.split_groups.lock().unwrap();
        for (i, failed) in messages.iter().enumerate().filter(|(i, _)| fails[*i]) {
            for (later, _) in messages[i + 1..]
                .iter()
                .zip(&fails[i + 1..])
                .filter(|(m, f)| !**f && m.group_id.is_some() && m.group_id == failed.group_id)
            {
                split.push((failed.body.clone(), later.body.clone()));
            }
        }
    }
}

#[async_trait]
impl<Q: MessageQueue> MessageQueue for FaultyQueue<Q> {
    async fn send(&self, queue: &QueueName, m: &OutgoingMessage) -> Result<String, PortError> {
        faulty!(once: self.faults, "SendMessage", self.inner.send(queue, m).await)
    }

    async fn send_batch(
        &self,
        queue: &QueueName,
        messages: &[OutgoingMessage],
    ) -> Result<Vec<EntryOutcome>, PortError> {
        faulty!(once: self.faults, "SendMessageBatch", {
            let fails: Vec<bool> = messages.iter().map(|_| self.faults.entry_fails()).collect();
            self.record_split_groups(messages, &fails);
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

#[async_trait]
impl<S: JobStore> crate::ports::Census for FaultyStore<S> {
    async fn count_formats(
        &self,
        q: &QueueName,
        shards: &[u32],
    ) -> Result<std::collections::BTreeMap<String, u64>, PortError> {
        faulty!(self.faults, "Query", self.inner.count_formats(q, shards).await)
    }
}

#[async_trait]
impl<S: JobStore> Pauses for FaultyStore<S> {
    async fn queue_pause(&self, q: &QueueName) -> Result<QueuePause, PortError> {
        faulty!(self.faults, "GetItem", self.inner.queue_pause(q).await)
    }

    async fn pause_queue(&self, q: &QueueName, at: DateTime<Utc>) -> Result<DateTime<Utc>, PortError> {
        faulty!(self.faults, "UpdateItem", self.inner.pause_queue(q, at).await)
    }

    async fn resume_queue(&self, q: &QueueName, at: DateTime<Utc>) -> Result<bool, PortError> {
        faulty!(self.faults, "UpdateItem", self.inner.resume_queue(q, at).await)
    }

    async fn count_paused(&self, q: &QueueName, p: Partition) -> Result<u64, PortError> {
        faulty!(self.faults, "Query", self.inner.count_paused(q, p.clone()).await)
    }
}
