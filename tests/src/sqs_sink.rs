//! A minimal SQS endpoint for the throughput bench: it answers `GetQueueUrl` and
//! `SendMessageBatch` (the only SQS calls a poller makes) at once, accepts every entry and counts
//! what it got. It models an SQS that is never the bottleneck (a standard queue on AWS takes
//! nearly unlimited throughput) while the poller keeps its real SDK request and reply path.
//! It holds every call for the bench's per-call latency itself ([`CallMeter`]), so no proxy hop
//! is needed in front of it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};

use crate::meter::CallMeter;

#[derive(Default)]
struct Counts {
    meter: CallMeter,
    messages: AtomicU64,
    batches: AtomicU64,
    /// Messages per arrival second (receipt plus `DelaySeconds`).
    arrivals: std::sync::Mutex<std::collections::BTreeMap<i64, u64>>,
    /// Each message's arrival (receipt plus `DelaySeconds`), in epoch milliseconds, and the
    /// bodies seen (a body seen again is a job sent twice: the bench's bodies are unique).
    arrival_ms: std::sync::Mutex<Vec<i64>>,
    bodies: std::sync::Mutex<std::collections::HashSet<u64>>,
    repeated: AtomicU64,
    /// The arrivals of messages that carry `waiter.priority` (a job ranked otherwise than the
    /// default), in epoch milliseconds.
    ranked_ms: std::sync::Mutex<Vec<i64>>,
}

/// A running sink; aborted on drop.
pub struct SqsSink {
    counts: Arc<Counts>,
    pub endpoint: String,
    server: tokio::task::JoinHandle<()>,
}

impl SqsSink {
    pub async fn start() -> Self {
        let counts = Arc::new(Counts::default());
        let app = Router::new().fallback(handle).with_state(counts.clone());
        let (addr, server) = crate::serve_local(app).await;
        let endpoint = format!("http://{addr}");
        Self {
            counts,
            endpoint,
            server,
        }
    }

    /// Messages accepted so far.
    pub fn messages(&self) -> u64 {
        self.counts.messages.load(Ordering::SeqCst)
    }

    /// Its latency and call accounting.
    pub fn meter(&self) -> CallMeter {
        self.counts.meter.clone()
    }

    /// Seconds the arrivals so far spread over (last arrival second minus first, plus one).
    pub fn arrival_seconds(&self) -> u64 {
        let arrivals = self
            .counts
            .arrivals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match (arrivals.keys().next(), arrivals.keys().next_back()) {
            (Some(first), Some(last)) => (last - first + 1) as u64,
            _ => 0,
        }
    }

    /// Each message's arrival so far (receipt plus `DelaySeconds`), in epoch milliseconds.
    pub fn arrivals_ms(&self) -> Vec<i64> {
        self.counts
            .arrival_ms
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The arrivals so far of messages with `waiter.priority`, in epoch milliseconds.
    pub fn ranked_arrivals_ms(&self) -> Vec<i64> {
        self.counts
            .ranked_ms
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Messages whose body had been sent before (the bench's bodies are unique per job).
    pub fn repeated(&self) -> u64 {
        self.counts.repeated.load(Ordering::SeqCst)
    }

    /// `SendMessageBatch` calls so far.
    pub fn batches(&self) -> u64 {
        self.counts.batches.load(Ordering::SeqCst)
    }
}

impl Drop for SqsSink {
    fn drop(&mut self) {
        self.server.abort();
    }
}

fn body_hash(body: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    body.hash(&mut h);
    h.finish()
}

fn json_reply(status: StatusCode, body: Value) -> Response {
    (
        status,
        [("content-type", "application/x-amz-json-1.0")],
        body.to_string(),
    )
        .into_response()
}

async fn handle(State(counts): State<Arc<Counts>>, headers: HeaderMap, body: Bytes) -> Response {
    let arrived = counts.meter.hold().await;
    let response = answer(&counts, &headers, &body);
    counts.meter.record(&crate::meter::operation(&headers), arrived);
    response
}

fn answer(counts: &Counts, headers: &HeaderMap, body: &Bytes) -> Response {
    let target = headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    match target {
        "AmazonSQS.GetQueueUrl" => {
            let name = request["QueueName"].as_str().unwrap_or("queue");
            json_reply(
                StatusCode::OK,
                json!({"QueueUrl": format!("http://sqs.us-east-1.localhost/000000000000/{name}")}),
            )
        }
        "AmazonSQS.SendMessageBatch" => {
            let entries = request["Entries"].as_array().cloned().unwrap_or_default();
            counts.batches.fetch_add(1, Ordering::SeqCst);
            counts.messages.fetch_add(entries.len() as u64, Ordering::SeqCst);
            let now_ms = chrono::Utc::now().timestamp_millis();
            let now = now_ms.div_euclid(1000);
            {
                let mut arrivals = counts
                    .arrivals
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let mut arrival_ms = counts
                    .arrival_ms
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let mut bodies = counts.bodies.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                let mut ranked = counts
                    .ranked_ms
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                for e in &entries {
                    let delay = e["DelaySeconds"].as_i64().unwrap_or(0);
                    *arrivals.entry(now + delay).or_default() += 1;
                    arrival_ms.push(now_ms + delay * 1000);
                    if !e["MessageAttributes"]["waiter.priority"].is_null() {
                        ranked.push(now_ms + delay * 1000);
                    }
                    let body = e["MessageBody"].as_str().unwrap_or_default();
                    if !bodies.insert(body_hash(body)) {
                        counts.repeated.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }
            let successful: Vec<Value> = entries
                .iter()
                .map(|e| {
                    json!({
                        "Id": e["Id"],
                        "MessageId": uuid::Uuid::new_v4().to_string(),
                        // Not checked by the SDK; present because the model requires it.
                        "MD5OfMessageBody": "00000000000000000000000000000000",
                    })
                })
                .collect();
            json_reply(StatusCode::OK, json!({"Successful": successful, "Failed": []}))
        }
        other => json_reply(
            StatusCode::BAD_REQUEST,
            json!({"__type": "com.amazonaws.sqs#UnsupportedOperation", "message": format!("the bench sink does not answer {other:?}")}),
        ),
    }
}
