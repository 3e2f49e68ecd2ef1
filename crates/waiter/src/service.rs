//! The `enqueue` function's logic: its entry point for every action, and enqueue, get and cancel.
//! The other actions live in `manage`, `bulk`, `stats` and `parked`; replies in `reply`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, TimeDelta, Utc};
use futures::future::join_all;
use serde_json::{json, Value};
use tokio::sync::{OnceCell, Semaphore};
use tracing::{info, warn};

use crate::config::{Config, QueueName};
use crate::error::{display_chain, InvalidRequest, PortError};
use crate::job::Job;
use crate::limits::DDB_MAX_ITEM_BYTES;
use crate::ports::{
    CancelOutcome, Clock, Found, History, HistoryStatus, JobKey, JobStore, MessageQueue, OutgoingMessage, Partition,
    PutOutcome, StoredJob,
};
use crate::reply::{describe, describe_history, duplicate, error_result, reply, reply_for_job};
use crate::request::{parse_request, Request};
use crate::routing::{aligned_send_instant, delay_for, route, shard_for, Route};

/// Jobs of one batch worked at once. A stored job is one conditional `PutItem` (no batch write
/// takes a condition), so 1000 jobs at 15 ms a call take 1000 / 16 × 15 ms ≈ 1 s of latency.
const BATCH_PARALLELISM: usize = 16;
/// Budget of `handle` when no deadline is given (Lambda's default `enqueue` timeout).
const DEFAULT_BUDGET: TimeDelta = TimeDelta::seconds(30);
/// Stop this long before the invocation's deadline, so the reply gets out in time.
pub const DEADLINE_MARGIN: TimeDelta = TimeDelta::milliseconds(1_500);

/// Why an invocation failed as a whole.
#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    #[error(transparent)]
    Invalid(#[from] InvalidRequest),
    #[error(transparent)]
    Port(#[from] PortError),
}

impl HandlerError {
    /// The Lambda `errorType`.
    pub fn error_type(&self) -> &'static str {
        match self {
            Self::Invalid(_) => sqs_waiter_contract::ErrorType::InvalidRequest.as_str(),
            Self::Port(e) => e.error_type(),
        }
    }

    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Port(e) if e.is_retryable())
    }

    /// The Lambda `errorMessage`: the whole source chain, so the caller sees the AWS error code.
    pub fn message(&self) -> String {
        display_chain(self)
    }
}

pub struct Waiter<S, Q, C> {
    pub config: Arc<Config>,
    pub store: S,
    pub queue: Q,
    pub clock: C,
    /// Per queue, every `WAITER_SHARDS` value its table was written with (read once per process:
    /// a change of the variable starts new processes).
    shard_counts: Mutex<HashMap<QueueName, Arc<OnceCell<Vec<u32>>>>>,
}

/// A job that could not be finished before the invocation's deadline.
fn timed_out() -> HandlerError {
    HandlerError::Port(PortError::Transient {
        operation: "enqueue",
        source: "the invocation's deadline came first; retry with the same job_id".into(),
    })
}

impl<S: JobStore + Clone, Q: MessageQueue + Clone, C: Clock + Clone> Waiter<S, Q, C> {
    pub fn new(config: Arc<Config>, store: S, queue: Q, clock: C) -> Self {
        Self {
            config,
            store,
            queue,
            clock,
            shard_counts: Mutex::new(HashMap::new()),
        }
    }

    /// Handles one invocation with a default budget (tests, local runs).
    pub async fn handle(&self, event: &Value) -> Result<Value, HandlerError> {
        self.handle_until(event, self.clock.now() + DEFAULT_BUDGET).await
    }

    /// Handles one invocation of the `enqueue` function; work not finished `DEADLINE_MARGIN`
    /// before `deadline` is answered as a retryable error, so the reply always gets out.
    pub async fn handle_until(&self, event: &Value, deadline: DateTime<Utc>) -> Result<Value, HandlerError> {
        let now = self.clock.now();
        let cut = deadline - DEADLINE_MARGIN;
        match parse_request(event, &self.config, now)? {
            Request::Enqueue(job) => {
                let job = (*job)?;
                let precise_at = self.precise_instant(&job);
                self.within(cut, self.enqueue(job, precise_at))
                    .await
                    .unwrap_or_else(|| Err(timed_out()))
            }
            Request::Batch(jobs) => {
                // I/O is bounded by the permits; a precise direct job waits for its phase
                // holding none, so the whole batch waits at most once (under a second).
                let permits = Semaphore::new(BATCH_PARALLELISM);
                let results = join_all(jobs.into_iter().map(|job| {
                    let permits = &permits;
                    async move {
                        let outcome = match job {
                            Ok(job) => {
                                let precise_at = self.precise_instant(&job);
                                self.within(cut, async {
                                    if let Some(at) = precise_at {
                                        self.clock.sleep_until(at).await;
                                    }
                                    let _permit = permits.acquire().await;
                                    self.enqueue(job, None).await
                                })
                                .await
                                .unwrap_or_else(|| Err(timed_out()))
                            }
                            Err(e) => Err(HandlerError::Invalid(e)),
                        };
                        outcome.unwrap_or_else(|e| error_result(&e))
                    }
                }))
                .await;
                Ok(json!({ "results": results }))
            }
            Request::Get { queue, job_id } => self.get(&queue, &job_id).await,
            Request::Cancel { queue, job_id } => self.cancel(&queue, &job_id).await,
            Request::ListParked { queue, limit, cursor } => self.list_parked(&queue, limit, cursor.as_deref()).await,
            Request::Redrive { queue, target } => self.redrive(&queue, target).await,
            Request::Reschedule(r) => self.reschedule(*r, cut).await,
            Request::List(q) => self.list(*q).await,
            Request::CancelMany(r) => self.cancel_many(*r).await,
            Request::Stats(q) => self.stats(q).await,
        }
    }

    async fn within<T>(&self, until: DateTime<Utc>, f: impl std::future::Future<Output = T>) -> Option<T> {
        crate::dispatch::within(&self.clock, until, f).await
    }

    /// With `WAITER_DIRECT_PRECISE`, the instant a direct job should be sent at so that its
    /// `DelaySeconds` is exact.
    fn precise_instant(&self, job: &Job) -> Option<DateTime<Utc>> {
        let now = self.clock.now();
        match route(job, now, self.config.direct_max_delay) {
            Route::Direct { delay_seconds: Some(_) } if self.config.direct_precise => {
                Some(aligned_send_instant(job.perform_at, now))
            }
            _ => None,
        }
    }

    /// Every `WAITER_SHARDS` value the queue's table was written with.
    pub(crate) async fn shard_counts(&self, queue: &QueueName) -> Result<Vec<u32>, PortError> {
        let cell = match self.shard_counts.lock() {
            Ok(mut m) => m.entry(queue.clone()).or_default().clone(),
            Err(_) => Arc::new(OnceCell::new()),
        };
        cell.get_or_try_init(|| self.store.shard_counts(queue, self.config.shards))
            .await
            .cloned()
    }

    /// Every shard of the queue's table that holds jobs: all the shards of the largest shard
    /// count it was ever written with (and of the current one).
    pub(crate) async fn shards_in_use(&self, queue: &QueueName) -> Result<Vec<Partition>, PortError> {
        let largest = self.shard_counts(queue).await?.into_iter().max().unwrap_or(0);
        Ok((0..largest.max(self.config.shards)).map(Partition::Shard).collect())
    }

    /// Every shard a job id may be stored in: its shard under each shard count ever used.
    pub(crate) async fn candidate_partitions(
        &self,
        queue: &QueueName,
        job_id: &str,
    ) -> Result<Vec<Partition>, PortError> {
        let mut shards: Vec<u32> = self
            .shard_counts(queue)
            .await?
            .into_iter()
            .chain([self.config.shards])
            .map(|n| shard_for(job_id, n))
            .collect();
        shards.sort_unstable();
        shards.dedup();
        Ok(shards.into_iter().map(Partition::Shard).collect())
    }

    async fn enqueue(&self, job: Job, precise_at: Option<DateTime<Utc>>) -> Result<Value, HandlerError> {
        let now = self.clock.now();
        let home = Partition::Shard(shard_for(&job.job_id, self.config.shards));
        match route(&job, now, self.config.direct_max_delay) {
            Route::Direct { delay_seconds } => {
                // A caller-chosen id may name a job that is still stored; sending it again would
                // break the idempotency promise.
                if job.job_id_given {
                    let candidates = self.candidate_partitions(&job.queue, &job.job_id).await?;
                    if let Some(existing) = self.existing(&job.queue, &job.job_id, &candidates, now).await? {
                        info!(queue = %job.queue, job_id = %job.job_id, "duplicate");
                        return Ok(duplicate(&existing));
                    }
                }
                if let Some(at) = precise_at {
                    self.clock.sleep_until(at).await;
                }
                let delay_seconds = match delay_seconds {
                    Some(_) if self.config.direct_precise => Some(delay_for(job.perform_at, self.clock.now())),
                    other => other,
                };
                let sent_at = self.clock.now();
                let message_id = self
                    .queue
                    .send(&job.queue, &OutgoingMessage::for_job(&job, delay_seconds))
                    .await?;
                info!(queue = %job.queue, job_id = %job.job_id, delay_s = delay_seconds, "sent direct");
                if let (Some(keep), true, true) =
                    (self.config.history_keep(), self.config.direct_history, job.job_id_given)
                {
                    // So that a retry after this send is a duplicate. The message is out: a
                    // failure here is logged, not answered (a retry would send it again).
                    let sent = StoredJob {
                        partition: home.clone(),
                        job: job.clone(),
                        enqueued_at: sent_at,
                        parked: None,
                        version: 1,
                    };
                    let record = History::of(
                        &sent,
                        HistoryStatus::Dispatched,
                        sent_at,
                        Some(message_id.clone()),
                        keep,
                    );
                    if let Err(e) = self.store.record(&record).await {
                        warn!(queue = %job.queue, job_id = %job.job_id, error = %display_chain(&e), "history record of a direct send failed");
                    }
                }
                let mut r = reply_for_job(&job, "sent", false);
                r["message_id"] = json!(message_id);
                if let Some(d) = delay_seconds {
                    r["delay_seconds"] = json!(d);
                }
                Ok(r)
            }
            Route::Store => {
                let stored = StoredJob {
                    partition: home.clone(),
                    job,
                    enqueued_at: now,
                    parked: None,
                    version: 1,
                };
                let bytes = self.store.item_bytes(&stored);
                if bytes > DDB_MAX_ITEM_BYTES {
                    return Err(InvalidRequest::new(
                        "message_body",
                        format!("the stored item would be {bytes} bytes; DynamoDB allows at most {DDB_MAX_ITEM_BYTES}"),
                    )
                    .into());
                }
                // After WAITER_SHARDS changed, the id may sit in its shard under an older count.
                let elsewhere: Vec<Partition> = self
                    .candidate_partitions(&stored.job.queue, &stored.job.job_id)
                    .await?
                    .into_iter()
                    .filter(|p| *p != home)
                    .collect();
                if !elsewhere.is_empty() {
                    if let Some(existing) = self
                        .existing(&stored.job.queue, &stored.job.job_id, &elsewhere, now)
                        .await?
                    {
                        info!(queue = %stored.job.queue, job_id = %stored.job.job_id, "duplicate");
                        return Ok(duplicate(&existing));
                    }
                }
                match self.store.put_new(&stored).await? {
                    PutOutcome::Created => {
                        let delay_s = (stored.job.perform_at - now).num_seconds();
                        info!(queue = %stored.job.queue, job_id = %stored.job.job_id, delay_s, "scheduled");
                        Ok(reply(&stored, "scheduled", false))
                    }
                    PutOutcome::Duplicate(existing) => {
                        info!(queue = %existing.job.queue, job_id = %existing.job.job_id, "duplicate");
                        Ok(reply(&existing, "scheduled", true))
                    }
                    PutOutcome::Done(history) => {
                        info!(queue = %history.queue, job_id = %history.job_id, status = history.status.as_str(), "duplicate of a finished job");
                        Ok(duplicate(&Found::History(*history)))
                    }
                }
            }
        }
    }

    async fn get(&self, queue: &QueueName, job_id: &str) -> Result<Value, HandlerError> {
        let mut partitions = self.candidate_partitions(queue, job_id).await?;
        partitions.push(Partition::Parked);
        Ok(
            match self.existing(queue, job_id, &partitions, self.clock.now()).await? {
                Some(Found::Job(found)) => describe(&found),
                Some(Found::History(h)) => describe_history(&h),
                None => json!({"status": "not_found", "queue": queue.as_str(), "job_id": job_id}),
            },
        )
    }

    /// What an id names among these partitions: a stored job (an active one first), else a
    /// history record still in force.
    async fn existing(
        &self,
        queue: &QueueName,
        job_id: &str,
        partitions: &[Partition],
        now: DateTime<Utc>,
    ) -> Result<Option<Found>, PortError> {
        let keys = JobKey::in_each(job_id, partitions);
        let mut jobs = Vec::new();
        let mut history = None;
        for found in self.store.read_any(queue, &keys).await? {
            match found {
                Found::Job(j) => jobs.push(j),
                Found::History(h) if h.is_live(now) => history = Some(h),
                Found::History(_) => {}
            }
        }
        jobs.sort_by_key(|j| j.partition.clone());
        Ok(jobs.into_iter().next().map(Found::Job).or(history.map(Found::History)))
    }

    /// Cancels every stored copy of the job; `cancelled` only if none may be in SQS.
    pub(crate) async fn cancel_outcome(&self, queue: &QueueName, job_id: &str) -> Result<CancelOutcome, PortError> {
        let mut partitions = self.candidate_partitions(queue, job_id).await?;
        partitions.push(Partition::Parked);
        let mut status = CancelOutcome::NotFound;
        for found in self.store.find_all(queue, job_id, &partitions).await? {
            let outcome = self.cancel_copy(&found).await?;
            status = match (status, outcome) {
                (CancelOutcome::Dispatching, _) | (_, CancelOutcome::Dispatching) => CancelOutcome::Dispatching,
                (CancelOutcome::Cancelled, _) | (_, CancelOutcome::Cancelled) => CancelOutcome::Cancelled,
                _ => CancelOutcome::NotFound,
            };
        }
        Ok(status)
    }

    /// Cancels one stored job as found; a cancelled scheduled job stays known to `get` (parked
    /// ones leave no record).
    pub(crate) async fn cancel_copy(&self, found: &StoredJob) -> Result<CancelOutcome, PortError> {
        let record = match (&found.partition, self.config.history_keep()) {
            (Partition::Shard(_), Some(keep)) => Some(History::of(
                found,
                HistoryStatus::Cancelled,
                self.clock.now(),
                None,
                keep,
            )),
            _ => None,
        };
        self.store
            .cancel(&found.job.queue, &found.key(), found.job.perform_at, record.as_ref())
            .await
    }

    async fn cancel(&self, queue: &QueueName, job_id: &str) -> Result<Value, HandlerError> {
        let status = self.cancel_outcome(queue, job_id).await?;
        let status = match status {
            CancelOutcome::Cancelled => "cancelled",
            CancelOutcome::NotFound => "not_found",
            CancelOutcome::Dispatching => "dispatching",
        };
        info!(queue = %queue, job_id, status, "cancel");
        Ok(json!({"status": status, "queue": queue.as_str(), "job_id": job_id}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::Lease;
    use crate::testing::{config, test_waiter, FakeClock, FakeQueue, MemStore};
    use chrono::TimeDelta;

    fn waiter(extra: &[(&str, &str)]) -> (Waiter<MemStore, FakeQueue, FakeClock>, MemStore, FakeQueue, FakeClock) {
        test_waiter("orders,billing.fifo", extra)
    }

    impl<S: JobStore, Q: MessageQueue, C: Clock> Waiter<S, Q, C> {
        pub(crate) fn shard_partitions(&self) -> Vec<Partition> {
            (0..self.config.shards).map(Partition::Shard).collect()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn short_delay_is_sent_direct_and_long_delay_stored() {
        let (w, store, queue, _) = waiter(&[("WAITER_DIRECT_MAX_DELAY", "60")]);
        let r = w
            .handle(&json!({"queue": "orders", "message_body": "a", "delay_seconds": 60}))
            .await
            .unwrap();
        assert_eq!(r["status"], "sent");
        assert_eq!(r["delay_seconds"], 60);
        assert_eq!(queue.sent()[0].message.delay_seconds, Some(60));
        let r = w
            .handle(&json!({"queue": "orders", "message_body": "b", "delay_seconds": 61, "job_id": "b"}))
            .await
            .unwrap();
        assert_eq!(r["status"], "scheduled");
        assert_eq!(r["job_id"], "b");
        assert_eq!(r["perform_at"], "2026-12-01T09:01:01.123456Z");
        assert_eq!(store.len(), 1);
        assert_eq!(queue.sent().len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn precise_direct_sends_hold_for_the_fraction_and_are_exact() {
        let (w, _, queue, clock) = waiter(&[("WAITER_DIRECT_PRECISE", "true")]);
        let due = clock.now() + TimeDelta::milliseconds(5_300);
        let r = w
            .handle(&json!({"queue": "orders", "message_body": "a", "perform_at": crate::time::format_rfc3339(due)}))
            .await
            .unwrap();
        assert_eq!(r["status"], "sent");
        let sent = &queue.sent()[0];
        assert_eq!(sent.message.delay_seconds, Some(5));
        let arrival = sent.at + TimeDelta::seconds(5);
        assert!(
            arrival >= due && arrival - due < TimeDelta::milliseconds(5),
            "{arrival} vs {due}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn same_job_id_is_a_duplicate_and_changes_nothing() {
        let (w, store, _, _) = waiter(&[]);
        let first = json!({"queue": "orders", "message_body": "one", "delay_seconds": 3600, "job_id": "inv-1"});
        assert_eq!(w.handle(&first).await.unwrap()["duplicate"], false);
        let again = json!({"queue": "orders", "message_body": "two", "delay_seconds": 7200, "job_id": "inv-1"});
        let r = w.handle(&again).await.unwrap();
        assert_eq!(r["duplicate"], true);
        assert_eq!(r["perform_at"], "2026-12-01T10:00:00.123456Z", "reports the stored job");
        assert_eq!(store.len(), 1);
        let q = QueueName::parse("orders").unwrap();
        let stored = w.store.find(&q, "inv-1", &w.shard_partitions()).await.unwrap().unwrap();
        assert_eq!(stored.job.message_body, "one");
    }

    #[tokio::test(start_paused = true)]
    async fn direct_route_with_a_stored_job_id_is_a_duplicate() {
        let (w, _, queue, _) = waiter(&[]);
        w.handle(&json!({"queue": "orders", "message_body": "x", "delay_seconds": 3600, "job_id": "j"}))
            .await
            .unwrap();
        let r = w
            .handle(&json!({"queue": "orders", "message_body": "x", "job_id": "j"}))
            .await
            .unwrap();
        assert_eq!(r["duplicate"], true);
        assert!(queue.sent().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn batch_results_keep_input_order_and_bad_jobs_do_not_block_others() {
        let (w, store, queue, _) = waiter(&[]);
        let mut jobs: Vec<Value> = (0..100)
            .map(|i| json!({"queue": "orders", "message_body": format!("m{i}"), "delay_seconds": if i % 2 == 0 { 5 } else { 5000 }, "job_id": format!("j{i}")}))
            .collect();
        jobs[7] = json!({"queue": "nope", "message_body": "x"});
        jobs[8] = json!("not an object");
        let r = w.handle(&json!({"jobs": jobs})).await.unwrap();
        let results = r["results"].as_array().unwrap();
        assert_eq!(results.len(), 100);
        for (i, res) in results.iter().enumerate() {
            match i {
                7 => assert_eq!(res["error"]["type"], "InvalidRequest", "{res}"),
                8 => assert!(res["error"]["message"].as_str().unwrap().starts_with("job:"), "{res}"),
                _ => {
                    assert_eq!(res["job_id"], format!("j{i}"));
                    assert_eq!(res["status"], if i % 2 == 0 { "sent" } else { "scheduled" });
                }
            }
        }
        assert_eq!(store.len(), 49);
        assert_eq!(queue.sent().len(), 49);
    }

    #[tokio::test(start_paused = true)]
    async fn too_large_for_dynamodb_is_refused_on_the_stored_path_only() {
        let (w, store, queue, _) = waiter(&[]);
        let body = "x".repeat(500 * 1024);
        let err = w
            .handle(&json!({"queue": "orders", "message_body": body, "delay_seconds": 5000}))
            .await
            .unwrap_err();
        assert_eq!(err.error_type(), "InvalidRequest");
        assert!(err.message().starts_with("message_body:"), "{}", err.message());
        assert_eq!(store.len(), 0);
        let ok = w
            .handle(&json!({"queue": "orders", "message_body": body, "delay_seconds": 5}))
            .await
            .unwrap();
        assert_eq!(ok["status"], "sent");
        assert_eq!(queue.sent().len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn fifo_jobs_with_a_delay_are_stored_with_a_derived_dedup_id() {
        let (w, store, queue, _) = waiter(&[]);
        let r = w
            .handle(&json!({"queue": "billing.fifo", "message_body": "x", "delay_seconds": 1, "job_id": "c-1", "message_group_id": "g"}))
            .await
            .unwrap();
        assert_eq!(r["status"], "scheduled");
        let q = QueueName::parse("billing.fifo").unwrap();
        let stored = store
            .state
            .lock()
            .unwrap()
            .items
            .values()
            .find(|j| j.job.queue == q)
            .cloned()
            .unwrap();
        assert_eq!(stored.job.message_deduplication_id.as_deref(), Some("c-1"));
        let r = w
            .handle(&json!({"queue": "billing.fifo", "message_body": "now", "message_group_id": "g", "job_id": "c-2"}))
            .await
            .unwrap();
        assert_eq!(r["status"], "sent");
        assert_eq!(queue.sent()[0].queue.as_str(), "billing.fifo");
        let sent = &queue.sent()[0].message;
        assert_eq!(sent.delay_seconds, None, "FIFO queues take no per-message delay");
        assert_eq!(sent.deduplication_id.as_deref(), Some("c-2"));
    }

    #[tokio::test(start_paused = true)]
    async fn get_and_cancel() {
        let (w, store, _, clock) = waiter(&[]);
        w.handle(&json!({"queue": "orders", "message_body": "x", "delay_seconds": 5000, "job_id": "j"}))
            .await
            .unwrap();
        let got = w
            .handle(&json!({"action": "get", "queue": "orders", "job_id": "j"}))
            .await
            .unwrap();
        assert_eq!(got["status"], "scheduled");
        assert_eq!(got["message_body"], "x");
        let c = w
            .handle(&json!({"action": "cancel", "queue": "orders", "job_id": "j"}))
            .await
            .unwrap();
        assert_eq!(c["status"], "cancelled");
        assert_eq!(store.len(), 0);
        let c = w
            .handle(&json!({"action": "cancel", "queue": "orders", "job_id": "j"}))
            .await
            .unwrap();
        assert_eq!(c["status"], "not_found");
        let got = w
            .handle(&json!({"action": "get", "queue": "orders", "job_id": "j"}))
            .await
            .unwrap();
        assert_eq!(got["status"], "cancelled", "history: {got}");
        assert!(got["cancelled_at"].is_string());
        assert!(got.get("message_body").is_none(), "history keeps no body");

        // A job inside a live poller lease's window is being handed over: not cancelled.
        w.handle(&json!({"queue": "orders", "message_body": "y", "delay_seconds": 5000, "job_id": "k"}))
            .await
            .unwrap();
        let shard = crate::routing::shard_for("k", w.config.shards);
        let q = QueueName::parse("orders").unwrap();
        let now = clock.now();
        let lease = Lease {
            owner: "p".into(),
            until: now + TimeDelta::seconds(30),
            horizon: now + TimeDelta::seconds(6000),
        };
        assert!(matches!(
            store.acquire_lease(&q, shard, &lease, now).await.unwrap(),
            crate::ports::LeaseOutcome::Acquired { .. }
        ));
        let c = w
            .handle(&json!({"action": "cancel", "queue": "orders", "job_id": "k"}))
            .await
            .unwrap();
        assert_eq!(c["status"], "dispatching");
        assert_eq!(store.len(), 1);
        // Past `until`, the lease item still covers the job: the run that holds it may have
        // handed the job to SQS and failed to remove it (only `release_lease` ends that).
        clock.advance(TimeDelta::seconds(31));
        let c = w
            .handle(&json!({"action": "cancel", "queue": "orders", "job_id": "k"}))
            .await
            .unwrap();
        assert_eq!(c["status"], "dispatching", "a lapsed lease item still protects the job");
        store.release_lease(&q, shard, "p").await.unwrap();
        let c = w
            .handle(&json!({"action": "cancel", "queue": "orders", "job_id": "k"}))
            .await
            .unwrap();
        assert_eq!(c["status"], "cancelled", "a released lease no longer protects it");
    }

    #[tokio::test(start_paused = true)]
    async fn a_batch_with_precise_direct_jobs_waits_at_most_once() {
        let (w, _, queue, clock) = waiter(&[("WAITER_DIRECT_PRECISE", "true")]);
        let start = clock.now();
        let jobs: Vec<Value> = (0..1000)
            .map(|i| {
                let due = start + TimeDelta::milliseconds(5_000 + (i * 7919) % 1000);
                json!({"queue": "orders", "message_body": format!("m{i}"), "perform_at": crate::time::format_rfc3339(due)})
            })
            .collect();
        let r = w.handle(&json!({"jobs": jobs})).await.unwrap();
        assert!(r["results"].as_array().unwrap().iter().all(|r| r["status"] == "sent"));
        let took = clock.now() - start;
        assert!(
            took <= TimeDelta::milliseconds(1_100),
            "1000 precise jobs took {took:?}"
        );
        for sent in queue.sent() {
            let i: i64 = sent.message.body[1..].parse().unwrap();
            let due = start + TimeDelta::milliseconds(5_000 + (i * 7919) % 1000);
            let arrival = sent.at + TimeDelta::seconds(i64::from(sent.message.delay_seconds.unwrap()));
            assert!(
                arrival >= due && arrival - due < TimeDelta::milliseconds(5),
                "m{i}: {arrival} vs {due}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_batch_past_its_deadline_answers_retryable_errors_for_what_is_left() {
        let (w, store, _, clock) = waiter(&[]);
        let jobs: Vec<Value> = (0..50)
            .map(|i| json!({"queue": "orders", "message_body": "x", "delay_seconds": 5000, "job_id": format!("d{i}")}))
            .collect();
        // A deadline already inside the margin: nothing may start.
        let r = w
            .handle_until(&json!({"jobs": jobs}), clock.now() + TimeDelta::milliseconds(100))
            .await
            .unwrap();
        let results = r["results"].as_array().unwrap();
        assert!(
            results
                .iter()
                .all(|r| r["status"] == "error" && r["error"]["retryable"] == true),
            "{r}"
        );
        assert_eq!(store.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_shard_count_change_keeps_idempotency_get_and_cancel_across_shards() {
        let clock = FakeClock::default();
        let store = MemStore::default();
        let queue = FakeQueue::new(clock.clone());
        let before = Waiter::new(
            config("orders", &[("WAITER_SHARDS", "3")]),
            store.clone(),
            queue.clone(),
            clock.clone(),
        );
        let ids: Vec<String> = (0..40).map(|i| format!("s{i}")).collect();
        for id in &ids {
            before
                .handle(&json!({"queue": "orders", "message_body": "one", "delay_seconds": 5000, "job_id": id}))
                .await
                .unwrap();
        }
        for shards in ["7", "2"] {
            // Grown, then shrunk below the first count: every id is still found where it is.
            let after = Waiter::new(
                config("orders", &[("WAITER_SHARDS", shards)]),
                store.clone(),
                queue.clone(),
                clock.clone(),
            );
            for id in &ids {
                let r = after
                    .handle(&json!({"queue": "orders", "message_body": "two", "delay_seconds": 5000, "job_id": id}))
                    .await
                    .unwrap();
                assert_eq!(r["duplicate"], true, "{id} with {shards} shards: {r}");
                let got = after
                    .handle(&json!({"action": "get", "queue": "orders", "job_id": id}))
                    .await
                    .unwrap();
                assert_eq!(got["message_body"], "one");
            }
            assert_eq!(store.len(), ids.len());
        }
        let after = Waiter::new(
            config("orders", &[("WAITER_SHARDS", "2")]),
            store.clone(),
            queue,
            clock.clone(),
        );
        for id in &ids {
            let c = after
                .handle(&json!({"action": "cancel", "queue": "orders", "job_id": id}))
                .await
                .unwrap();
            assert_eq!(c["status"], "cancelled");
        }
        assert_eq!(store.len(), 0);
        let q = QueueName::parse("orders").unwrap();
        assert_eq!(store.shard_counts(&q, 2).await.unwrap(), vec![2, 3, 7]);
    }
}
