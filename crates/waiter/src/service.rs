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
use crate::ports::{
    CancelOutcome, Clock, JobStore, MessageQueue, OutgoingMessage, Partition, PutOutcome, StoredJob,
};
use crate::routing::{route, shard_for, Route};
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
        let jobs: Vec<Value> = self
            .store
            .parked(queue)
            .await?
            .iter()
            .map(describe)
            .collect();
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
        if stored.parked.is_some() {
            "parked"
        } else {
            "scheduled"
        },
        false,
    );
    let o = v.as_object_mut().expect("reply is an object");
    o.remove("duplicate");
    o.insert(
        "perform_at_epoch".into(),
        json!(format_epoch(job.perform_at)
            .parse::<f64>()
            .unwrap_or_default()),
    );
    o.insert(
        "enqueued_at".into(),
        json!(format_rfc3339(stored.enqueued_at)),
    );
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
        o.insert(
            "error".into(),
            json!({"code": p.code, "message": p.message}),
        );
    }
    v
}
