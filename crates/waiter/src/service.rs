//! The `enqueue` function's logic: enqueue one or many jobs, get, cancel, list and re-drive parked
//! jobs.

use std::sync::Arc;

use futures::{stream, StreamExt};
use serde_json::{json, Map, Value};
use tracing::{info, warn};

use crate::config::{Config, QueueName};
use crate::error::{display_chain, InvalidRequest, PortError};
use crate::job::{parse_request, AttributeData, Job, Request};
use crate::limits::DDB_MAX_ITEM_BYTES;
use crate::ports::{CancelOutcome, Clock, JobStore, MessageQueue, OutgoingMessage, Partition, PutOutcome, StoredJob};
use crate::routing::{aligned_send_instant, delay_for, route, shard_for, Route};
use crate::time::{format_epoch, format_rfc3339};

/// Jobs of one batch worked at once.
const BATCH_PARALLELISM: usize = 16;

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
            Self::Invalid(_) => "InvalidRequest",
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
}

impl<S: JobStore, Q: MessageQueue, C: Clock> Waiter<S, Q, C> {
    pub fn new(config: Arc<Config>, store: S, queue: Q, clock: C) -> Self {
        Self {
            config,
            store,
            queue,
            clock,
        }
    }

    /// Handles one invocation of the `enqueue` function.
    pub async fn handle(&self, event: &Value) -> Result<Value, HandlerError> {
        let now = self.clock.now();
        match parse_request(event, &self.config, now)? {
            Request::Enqueue(job) => self.enqueue((*job)?).await,
            Request::Batch(jobs) => {
                let results: Vec<Value> = stream::iter(jobs)
                    .map(|job| async move {
                        let outcome = match job {
                            Ok(job) => self.enqueue(job).await,
                            Err(e) => Err(HandlerError::Invalid(e)),
                        };
                        outcome.unwrap_or_else(|e| {
                            json!({"status": "error", "error": {"type": e.error_type(), "message": e.message(), "retryable": e.is_retryable()}})
                        })
                    })
                    .buffered(BATCH_PARALLELISM)
                    .collect()
                    .await;
                Ok(json!({ "results": results }))
            }
            Request::Get { queue, job_id } => self.get(&queue, &job_id).await,
            Request::Cancel { queue, job_id } => self.cancel(&queue, &job_id).await,
            Request::ListParked { queue } => self.list_parked(&queue).await,
            Request::Redrive { queue, job_id } => self.redrive(&queue, &job_id).await,
        }
    }

    async fn enqueue(&self, job: Job) -> Result<Value, HandlerError> {
        let now = self.clock.now();
        match route(&job, now, self.config.direct_max_delay) {
            Route::Direct { delay_seconds } => {
                // A caller-chosen id may name a job that is still stored; sending it again would
                // break the idempotency promise.
                if job.job_id_given {
                    if let Some(existing) = self
                        .store
                        .find(&job.queue, &job.job_id, &self.shard_partitions())
                        .await?
                    {
                        info!(queue = %job.queue, job_id = %job.job_id, "duplicate");
                        return Ok(reply(&existing, "scheduled", true));
                    }
                }
                let delay_seconds = match delay_seconds {
                    // Hold the send until the time left is whole seconds: exact, but the caller
                    // waits up to a second longer.
                    Some(_) if self.config.direct_precise => {
                        self.clock
                            .sleep_until(aligned_send_instant(job.perform_at, self.clock.now()))
                            .await;
                        Some(delay_for(job.perform_at, self.clock.now()))
                    }
                    other => other,
                };
                let message_id = self
                    .queue
                    .send(&job.queue, &OutgoingMessage::for_job(&job, delay_seconds))
                    .await?;
                info!(queue = %job.queue, job_id = %job.job_id, delay_s = delay_seconds, "sent direct");
                let mut r = reply_for_job(&job, "sent", false);
                r["message_id"] = json!(message_id);
                if let Some(d) = delay_seconds {
                    r["delay_seconds"] = json!(d);
                }
                Ok(r)
            }
            Route::Store => {
                let stored = StoredJob {
                    partition: Partition::Shard(shard_for(&job.job_id, self.config.shards)),
                    job,
                    enqueued_at: now,
                    parked: None,
                };
                let bytes = self.store.item_bytes(&stored);
                if bytes > DDB_MAX_ITEM_BYTES {
                    return Err(InvalidRequest::new(
                        "message_body",
                        format!("the stored item would be {bytes} bytes; DynamoDB allows at most {DDB_MAX_ITEM_BYTES}"),
                    )
                    .into());
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
                }
            }
        }
    }

    async fn get(&self, queue: &QueueName, job_id: &str) -> Result<Value, HandlerError> {
        let mut partitions = self.shard_partitions();
        partitions.push(Partition::Parked);
        Ok(match self.store.find(queue, job_id, &partitions).await? {
            Some(found) => describe(&found),
            None => json!({"status": "not_found", "queue": queue.as_str(), "job_id": job_id}),
        })
    }

    async fn cancel(&self, queue: &QueueName, job_id: &str) -> Result<Value, HandlerError> {
        let mut partitions = self.shard_partitions();
        partitions.push(Partition::Parked);
        let status = match self.store.find(queue, job_id, &partitions).await? {
            None => CancelOutcome::NotFound,
            Some(found) => {
                self.store
                    .cancel(queue, &found.key(), found.job.perform_at, self.clock.now())
                    .await?
            }
        };
        let status = match status {
            CancelOutcome::Cancelled => "cancelled",
            CancelOutcome::NotFound => "not_found",
            CancelOutcome::Dispatching => "dispatching",
        };
        info!(queue = %queue, job_id, status, "cancel");
        Ok(json!({"status": status, "queue": queue.as_str(), "job_id": job_id}))
    }

    async fn list_parked(&self, queue: &QueueName) -> Result<Value, HandlerError> {
        let jobs: Vec<Value> = self.store.parked(queue).await?.iter().map(describe).collect();
        Ok(json!({"queue": queue.as_str(), "count": jobs.len(), "jobs": jobs}))
    }

    /// Moves a parked job back into its shard, due now.
    async fn redrive(&self, queue: &QueueName, job_id: &str) -> Result<Value, HandlerError> {
        let Some(parked) = self.store.find(queue, job_id, &[Partition::Parked]).await? else {
            return Ok(json!({"status": "not_found", "queue": queue.as_str(), "job_id": job_id}));
        };
        let now = self.clock.now();
        let mut job = parked.job.clone();
        job.perform_at = now;
        if job.expires_at.is_some_and(|e| e <= now) {
            job.expires_at = None;
            warn!(queue = %queue, job_id, "re-driven job had expired; its expiry is cleared");
        }
        let into = StoredJob {
            partition: Partition::Shard(shard_for(job_id, self.config.shards)),
            job,
            enqueued_at: now,
            parked: None,
        };
        self.store.unpark(&parked, &into).await?;
        info!(queue = %queue, job_id, "re-driven");
        Ok(reply(&into, "scheduled", false))
    }

    fn shard_partitions(&self) -> Vec<Partition> {
        (0..self.config.shards).map(Partition::Shard).collect()
    }
}

fn reply(stored: &StoredJob, status: &str, duplicate: bool) -> Value {
    reply_for_job(&stored.job, status, duplicate)
}

fn reply_for_job(job: &Job, status: &str, duplicate: bool) -> Value {
    json!({
        "job_id": job.job_id,
        "queue": job.queue.as_str(),
        "status": status,
        "duplicate": duplicate,
        "perform_at": format_rfc3339(job.perform_at),
    })
}

/// The full view of a stored job, for `get` and `list_parked`.
fn describe(stored: &StoredJob) -> Value {
    let job = &stored.job;
    let mut v = reply(
        stored,
        if stored.parked.is_some() { "parked" } else { "scheduled" },
        false,
    );
    let o = v.as_object_mut().expect("reply is an object");
    o.remove("duplicate");
    o.insert(
        "perform_at_epoch".into(),
        json!(format_epoch(job.perform_at).parse::<f64>().unwrap_or_default()),
    );
    o.insert("enqueued_at".into(), json!(format_rfc3339(stored.enqueued_at)));
    o.insert("message_body".into(), json!(job.message_body));
    if !job.message_attributes.is_empty() {
        let attrs: Map<String, Value> = job
            .message_attributes
            .iter()
            .map(|(name, a)| {
                let value = match &a.data {
                    AttributeData::String(s) => json!({"data_type": a.data_type, "string_value": s}),
                    AttributeData::Binary(b) => {
                        use base64::Engine as _;
                        json!({"data_type": a.data_type, "binary_value": base64::engine::general_purpose::STANDARD.encode(b)})
                    }
                };
                (name.clone(), value)
            })
            .collect();
        o.insert("message_attributes".into(), Value::Object(attrs));
    }
    if let Some(e) = job.expires_at {
        o.insert("expires_at".into(), json!(format_rfc3339(e)));
    }
    if let Some(g) = &job.message_group_id {
        o.insert("message_group_id".into(), json!(g));
    }
    if let Some(d) = &job.message_deduplication_id {
        o.insert("message_deduplication_id".into(), json!(d));
    }
    if let Some(p) = &stored.parked {
        o.insert("parked_at".into(), json!(format_rfc3339(p.parked_at)));
        o.insert("error".into(), json!({"code": p.code, "message": p.message}));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::Lease;
    use crate::testing::{config, FakeClock, FakeQueue, MemStore};
    use chrono::TimeDelta;

    fn waiter(extra: &[(&str, &str)]) -> (Waiter<MemStore, FakeQueue, FakeClock>, MemStore, FakeQueue, FakeClock) {
        let clock = FakeClock::default();
        let store = MemStore::default();
        let queue = FakeQueue::new(clock.clone());
        let w = Waiter::new(
            config("orders,billing.fifo", extra),
            store.clone(),
            queue.clone(),
            clock.clone(),
        );
        (w, store, queue, clock)
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
        assert_eq!(got["status"], "not_found");

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
        assert_eq!(
            store.acquire_lease(&q, shard, &lease, now).await.unwrap(),
            crate::ports::LeaseOutcome::Acquired
        );
        let c = w
            .handle(&json!({"action": "cancel", "queue": "orders", "job_id": "k"}))
            .await
            .unwrap();
        assert_eq!(c["status"], "dispatching");
        assert_eq!(store.len(), 1);
        clock.advance(TimeDelta::seconds(31));
        let c = w
            .handle(&json!({"action": "cancel", "queue": "orders", "job_id": "k"}))
            .await
            .unwrap();
        assert_eq!(c["status"], "cancelled", "a lapsed lease no longer protects the job");
    }

    #[tokio::test(start_paused = true)]
    async fn parked_jobs_are_listed_and_redriven() {
        let (w, store, _, _) = waiter(&[]);
        w.handle(&json!({"queue": "orders", "message_body": "x", "delay_seconds": 5000, "job_id": "p"}))
            .await
            .unwrap();
        let q = QueueName::parse("orders").unwrap();
        let job = w.store.find(&q, "p", &w.shard_partitions()).await.unwrap().unwrap();
        let info = crate::ports::ParkInfo {
            parked_at: w.clock.now(),
            code: "InvalidParameterValue".into(),
            message: "bad".into(),
        };
        store.park(&job, &info).await.unwrap();
        let list = w
            .handle(&json!({"action": "list_parked", "queue": "orders"}))
            .await
            .unwrap();
        assert_eq!(list["count"], 1);
        assert_eq!(list["jobs"][0]["error"]["code"], "InvalidParameterValue");
        let got = w
            .handle(&json!({"action": "get", "queue": "orders", "job_id": "p"}))
            .await
            .unwrap();
        assert_eq!(got["status"], "parked");
        let r = w
            .handle(&json!({"action": "redrive", "queue": "orders", "job_id": "p"}))
            .await
            .unwrap();
        assert_eq!(r["status"], "scheduled");
        let got = w
            .handle(&json!({"action": "get", "queue": "orders", "job_id": "p"}))
            .await
            .unwrap();
        assert_eq!(got["status"], "scheduled");
        assert_eq!(
            w.handle(&json!({"action": "list_parked", "queue": "orders"}))
                .await
                .unwrap()["count"],
            0
        );
    }
}
