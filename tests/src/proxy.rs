//! A fault-injecting HTTP proxy between the functions (via `AWS_ENDPOINT_URL`) and the emulator.
//!
//! On a seeded schedule, at a configurable rate, a request gets one of:
//! - a throttling error (`ProvisionedThroughputExceededException`, SQS `RequestThrottled`);
//! - a 500 or 503, before the request reaches the emulator or after it was applied;
//! - a connection reset (the response body is cut off mid-way);
//! - a slow response;
//! - for `SendMessageBatch`: some entries reported `Failed` (and not sent);
//! - for `BatchWriteItem`: some requests returned as `UnprocessedItems` (and not applied).
//!
//! `force(op, Forced)`: every request of `op` gets that answer until `clear_forced`: a whole-call
//! AWS error shaped as AWS sends it (status, JSON `__type` body, SQS's `x-amzn-query-error`
//! header, extra body fields such as `CancellationReasons`), or a connection that is accepted
//! and never answered; or, for the next few `BatchExecuteStatement` calls, an error on each
//! statement (`Forced::StatementErrors`), which DynamoDB answers with HTTP 200.
//!
//! `lose_reply_then_hold(op)`: the next request of `op` is applied and answered 500 (its reply
//! lost), and every later request of `op` (the SDK's retries) is held until `release_held`, so
//! that a test can act between a call being applied and its retry arriving.
//!
//! `hang_next(op)`: the next request of `op` is accepted and never answered nor forwarded (the
//! caller's attempt timeout ends it); later ones are forwarded as usual. `hold(op)`: every
//! request of `op` (the SDK's retries too) waits until `release_held`, then is forwarded.
//!
//! `freeze_after(op, n)`: after the n-th response of `op` has been returned, every later request
//! hangs, so that a test can SIGKILL the caller at exactly that step.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use tokio::sync::Notify;

#[path = "proxy_answers.rs"]
mod answers;
use answers::aws_error;
pub use answers::Forced;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultKind {
    Throttle,
    ServerErrorBefore,
    ServerErrorAfter,
    Reset,
    Slow,
    PartialBatch,
    Unprocessed,
}

struct Inner {
    forced: Mutex<HashMap<String, Forced>>,
    upstream: String,
    http: reqwest::Client,
    rng: Mutex<StdRng>,
    rate: Mutex<f64>,
    counts: Mutex<HashMap<FaultKind, u64>>,
    calls: Mutex<HashMap<String, usize>>,
    freeze: Mutex<Option<(String, usize)>>,
    frozen: AtomicBool,
    froze: Notify,
    requests: AtomicU64,
    /// Requests past the freeze check and not yet answered.
    inflight: AtomicU64,
    /// Bumped by `unfreeze`: a request that waited across it belongs to a killed caller.
    generation: AtomicU64,
    /// The added latency (an AWS-like round trip for the benches) and the time each call took.
    meter: CallMeter,
    /// `lose_reply_then_hold`: the operation, and whether its reply was lost already.
    lost_reply: Mutex<Option<(String, bool)>>,
    held: AtomicU64,
    released: AtomicBool,
    /// `hang_next` and `hold_next`: the operation whose next request hangs, and whether it is
    /// forwarded once released.
    hang_next: Mutex<Option<(String, bool)>>,
    /// The IAM side of each call (tests/iam/check_calls.py).
    iam: crate::iam_calls::Recorder,
}

/// A running proxy; aborted on drop.
pub struct FaultProxy {
    inner: Arc<Inner>,
    pub endpoint: String,
    server: tokio::task::JoinHandle<()>,
}

impl FaultProxy {
    pub async fn start(upstream: &str, seed: u64, rate: f64) -> Self {
        let inner = Arc::new(Inner {
            forced: Mutex::default(),
            upstream: upstream.trim_end_matches('/').to_owned(),
            http: reqwest::Client::new(),
            rng: Mutex::new(StdRng::seed_from_u64(seed)),
            rate: Mutex::new(rate),
            counts: Mutex::default(),
            calls: Mutex::default(),
            freeze: Mutex::new(None),
            frozen: AtomicBool::new(false),
            froze: Notify::new(),
            requests: AtomicU64::new(0),
            inflight: AtomicU64::new(0),
            generation: AtomicU64::new(0),
            meter: CallMeter::default(),
            lost_reply: Mutex::new(None),
            held: AtomicU64::new(0),
            released: AtomicBool::new(false),
            hang_next: Mutex::new(None),
            iam: crate::iam_calls::Recorder::default(),
        });
        let app = Router::new().fallback(handle).with_state(inner.clone());
        let (addr, server) = crate::serve_local(app).await;
        let endpoint = format!("http://{addr}");
        Self {
            inner,
            endpoint,
            server,
        }
    }

    /// Heads the proxy's IAM call record with the deployment the calls are made for.
    pub fn describe_deployment(&self, queues: &[&str], table_prefix: &str) {
        self.inner.iam.deployment(queues, table_prefix);
    }

    pub fn force(&self, operation: &str, answer: Forced) {
        self.inner
            .forced
            .lock()
            .expect("lock")
            .insert(operation.to_owned(), answer);
    }

    /// Applies the next request of `operation` and answers it 500; holds every later one until
    /// `release_held`.
    pub fn lose_reply_then_hold(&self, operation: &str) {
        self.inner.released.store(false, Ordering::SeqCst);
        *self.inner.lost_reply.lock().expect("lock") = Some((operation.to_owned(), false));
    }

    /// The next request of `operation` is accepted and never answered (nor forwarded).
    pub fn hang_next(&self, operation: &str) {
        *self.inner.hang_next.lock().expect("lock") = Some((operation.to_owned(), false));
    }

    /// Every request of `operation` waits until `release_held` (each counted in `held`), then
    /// is forwarded as usual: a call in flight, whatever the SDK's attempt timeouts.
    pub fn hold(&self, operation: &str) {
        self.inner.released.store(false, Ordering::SeqCst);
        *self.inner.hang_next.lock().expect("lock") = Some((operation.to_owned(), true));
    }

    /// Requests held by `lose_reply_then_hold` so far.
    pub fn held(&self) -> u64 {
        self.inner.held.load(Ordering::SeqCst)
    }

    /// Forwards the held requests, and every later one, as usual.
    pub fn release_held(&self) {
        *self.inner.lost_reply.lock().expect("lock") = None;
        self.inner
            .hang_next
            .lock()
            .expect("lock")
            .take_if(|(_, forwarded)| *forwarded);
        self.inner.released.store(true, Ordering::SeqCst);
    }

    pub fn clear_forced(&self) {
        self.inner.forced.lock().expect("lock").clear();
    }

    pub fn set_rate(&self, rate: f64) {
        *self.inner.rate.lock().expect("lock") = rate;
    }

    /// After the n-th (1-based) response of `operation` (e.g. `"SendMessageBatch"`), hang every
    /// later request. Returns when that has happened.
    pub fn freeze_after(&self, operation: &str, n: usize) {
        *self.inner.freeze.lock().expect("lock") = Some((operation.to_owned(), n));
    }

    pub async fn wait_frozen(&self, within: Duration) -> bool {
        if self.inner.frozen.load(Ordering::SeqCst) {
            return true;
        }
        tokio::time::timeout(within, self.inner.froze.notified()).await.is_ok()
            || self.inner.frozen.load(Ordering::SeqCst)
    }

    /// Lifts the freeze. Requests held by it are answered 503 and never forwarded: they came
    /// from the process the test killed.
    pub fn unfreeze(&self) {
        *self.inner.freeze.lock().expect("lock") = None;
        self.inner.generation.fetch_add(1, Ordering::SeqCst);
        self.inner.frozen.store(false, Ordering::SeqCst);
    }

    /// Waits until no request is being forwarded (those that passed before a freeze settle).
    pub async fn wait_idle(&self, within: Duration) {
        let until = std::time::Instant::now() + within;
        while self.inner.inflight.load(Ordering::SeqCst) > 0 && std::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn fault_counts(&self) -> HashMap<FaultKind, u64> {
        self.inner.counts.lock().expect("lock").clone()
    }

    pub fn requests(&self) -> u64 {
        self.inner.requests.load(Ordering::Relaxed)
    }

    /// Its latency and call accounting: with a latency set, every request waits that long before
    /// it is handled (faults and forwarding alike).
    pub fn meter(&self) -> CallMeter {
        self.inner.meter.clone()
    }

    pub fn calls(&self, operation: &str) -> usize {
        self.inner
            .calls
            .lock()
            .expect("lock")
            .get(operation)
            .copied()
            .unwrap_or(0)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// `DynamoDB_20120810.BatchWriteItem` -> `BatchWriteItem`.
use crate::meter::{operation, CallMeter};

fn is_sqs(headers: &HeaderMap) -> bool {
    headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("AmazonSQS"))
}

impl Inner {
    fn pick_fault(&self, op: &str) -> Option<FaultKind> {
        let rate = *self.rate.lock().expect("lock");
        let mut rng = self.rng.lock().expect("lock");
        if rate <= 0.0 || !rng.random_bool(rate.min(1.0)) {
            return None;
        }
        let mut kinds = vec![
            FaultKind::Throttle,
            FaultKind::ServerErrorBefore,
            FaultKind::ServerErrorAfter,
            FaultKind::Reset,
            FaultKind::Slow,
        ];
        match op {
            "SendMessageBatch" => kinds.extend([FaultKind::PartialBatch, FaultKind::PartialBatch]),
            "BatchWriteItem" => kinds.extend([FaultKind::Unprocessed, FaultKind::Unprocessed]),
            _ => {}
        }
        Some(kinds[rng.random_range(0..kinds.len())])
    }

    fn count(&self, kind: FaultKind) {
        *self.counts.lock().expect("lock").entry(kind).or_default() += 1;
    }

    async fn forward(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<(StatusCode, HeaderMap, Bytes), String> {
        let url = format!("{}{}", self.upstream, uri.path_and_query().map_or("/", |p| p.as_str()));
        let mut req = self.http.request(method.clone(), url).body(body);
        for (k, v) in headers {
            if k != "host" && k != "content-length" {
                req = req.header(k, v);
            }
        }
        let resp = req.send().await.map_err(|e| e.to_string())?;
        let status = resp.status();
        let mut out = HeaderMap::new();
        for (k, v) in resp.headers() {
            if k != "content-length" && k != "transfer-encoding" && k != "connection" {
                out.insert(k, v.clone());
            }
        }
        let bytes = resp.bytes().await.map_err(|e| e.to_string())?;
        Ok((status, out, bytes))
    }
}

fn respond(status: StatusCode, headers: HeaderMap, body: Bytes) -> Response {
    let mut r = (status, body).into_response();
    r.headers_mut().extend(headers);
    r
}

async fn handle(State(p): State<Arc<Inner>>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    p.requests.fetch_add(1, Ordering::Relaxed);
    // A frozen proxy never answers: the caller is about to be killed.
    let generation = p.generation.load(Ordering::SeqCst);
    while p.frozen.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    if p.generation.load(Ordering::SeqCst) != generation {
        return aws_error(503, is_sqs(&headers), "ServiceUnavailable");
    }
    p.inflight.fetch_add(1, Ordering::SeqCst);
    p.iam.record(&headers, &body);
    let op = operation(&headers);
    // Write units follow the items, not the calls: counted as `TransactWriteItems/items` and
    // `BatchExecuteStatement/statements`, once the call is answered, as the call itself is
    // (`handle_live`): a call its client gave up on (an attempt's timeout on a loaded machine,
    // then the SDK's retry) is counted neither way, so the items stay the calls' own.
    let parts = match op.as_str() {
        "TransactWriteItems" => Some(("items", "TransactItems")),
        "BatchExecuteStatement" => Some(("statements", "Statements")),
        _ => None,
    }
    .map(|(counted, field)| {
        let items = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|b| b[field].as_array().map(Vec::len))
            .unwrap_or(0);
        (format!("{op}/{counted}"), items)
    });
    // The pause checks among the reads, for the bench's price of the pause (`GetItem/pause`).
    if op == "GetItem" && body.windows(7).any(|w| w == b"#pause\"") {
        *p.calls.lock().expect("lock").entry("GetItem/pause".into()).or_default() += 1;
    }
    let arrived = p.meter.hold().await;
    let response = handle_live(&p, method, uri, headers, body).await;
    if let Some((counted, items)) = parts {
        *p.calls.lock().expect("lock").entry(counted).or_default() += items;
    }
    p.inflight.fetch_sub(1, Ordering::SeqCst);
    p.meter.record(&op, arrived);
    response
}

async fn handle_live(p: &Inner, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let op = operation(&headers);
    let sqs = is_sqs(&headers);
    let hang = {
        let mut next = p.hang_next.lock().expect("lock");
        // A hold stays until `release_held`; a hang takes only the next request.
        next.take_if(|(o, forwarded)| *o == op && !*forwarded)
            .map(|_| false)
            .or_else(|| next.as_ref().filter(|(o, _)| *o == op).map(|_| true))
    };
    match hang {
        Some(false) => {
            *p.calls.lock().expect("lock").entry(op.clone()).or_default() += 1;
            std::future::pending::<()>().await;
        }
        Some(true) => {
            p.held.fetch_add(1, Ordering::SeqCst);
            while !p.released.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        None => {}
    }
    let lost = match p.lost_reply.lock().expect("lock").as_mut() {
        Some((o, lost)) if *o == op => Some(std::mem::replace(lost, true)),
        _ => None,
    };
    match lost {
        Some(false) => {
            *p.calls.lock().expect("lock").entry(op).or_default() += 1;
            let _ = p.forward(&method, &uri, &headers, body).await;
            return aws_error(500, sqs, "InternalFailure");
        }
        Some(true) => {
            p.held.fetch_add(1, Ordering::SeqCst);
            while !p.released.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        None => {}
    }
    let forced = {
        let mut all = p.forced.lock().expect("lock");
        match all.get_mut(&op) {
            Some(Forced::StatementErrors { remaining: 0, .. }) => None,
            Some(Forced::StatementErrors { code, remaining }) => {
                *remaining -= 1;
                Some(Forced::StatementErrors {
                    code: code.clone(),
                    remaining: *remaining,
                })
            }
            other => other.cloned(),
        }
    };
    match forced {
        Some(Forced::StatementErrors { code, .. }) => {
            *p.calls.lock().expect("lock").entry(op).or_default() += 1;
            return answers::statement_errors(&body, &code);
        }
        Some(Forced::Hang) => {
            *p.calls.lock().expect("lock").entry(op.clone()).or_default() += 1;
            std::future::pending::<()>().await;
        }
        Some(Forced::Error {
            status,
            code,
            query_error,
            extra,
        }) => {
            *p.calls.lock().expect("lock").entry(op).or_default() += 1;
            let mut body = json!({"__type": code, "message": "forced by the fault proxy"});
            if let (Some(Value::Object(extra)), Some(b)) = (extra, body.as_object_mut()) {
                b.extend(extra);
            }
            let mut r = (
                StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
                body.to_string(),
            )
                .into_response();
            r.headers_mut()
                .insert("content-type", HeaderValue::from_static("application/x-amz-json-1.0"));
            if let Some(v) = query_error.and_then(|q| HeaderValue::from_str(&q).ok()) {
                r.headers_mut().insert("x-amzn-query-error", v);
            }
            return r;
        }
        None => {}
    }
    let fault = p.pick_fault(&op);
    if let Some(kind) = fault {
        p.count(kind);
    }
    let response = match fault {
        Some(FaultKind::Throttle) => {
            if sqs {
                aws_error(400, true, "RequestThrottled")
            } else {
                aws_error(
                    400,
                    false,
                    "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
                )
            }
        }
        Some(FaultKind::ServerErrorBefore) => aws_error(503, sqs, "ServiceUnavailable"),
        Some(FaultKind::ServerErrorAfter) => {
            let _ = p.forward(&method, &uri, &headers, body).await;
            aws_error(500, sqs, "InternalFailure")
        }
        Some(FaultKind::Reset) => {
            // Promise more than we send, then fail the stream: the client sees the connection cut.
            let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
                Ok(Bytes::from_static(b"{\"trunc")),
                Err(std::io::Error::other("injected reset")),
            ];
            let mut r = Response::new(Body::from_stream(futures::stream::iter(chunks)));
            r.headers_mut()
                .insert("content-length", HeaderValue::from_static("4096"));
            r
        }
        Some(FaultKind::Slow) => {
            let ms = p.rng.lock().expect("lock").random_range(300..1500);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            forward_or_502(p, &method, &uri, &headers, body).await
        }
        Some(FaultKind::PartialBatch) => partial_send_batch(p, &method, &uri, &headers, body).await,
        Some(FaultKind::Unprocessed) => unprocessed_write(p, &method, &uri, &headers, body).await,
        None => forward_or_502(p, &method, &uri, &headers, body).await,
    };
    let nth = {
        let mut calls = p.calls.lock().expect("lock");
        let c = calls.entry(op.clone()).or_default();
        *c += 1;
        *c
    };
    if p.freeze
        .lock()
        .expect("lock")
        .as_ref()
        .is_some_and(|(o, n)| *o == op && *n == nth)
    {
        p.frozen.store(true, Ordering::SeqCst);
        p.froze.notify_waiters();
    }
    response
}

async fn forward_or_502(p: &Inner, method: &Method, uri: &Uri, headers: &HeaderMap, body: Bytes) -> Response {
    match p.forward(method, uri, headers, body).await {
        Ok((status, h, b)) => respond(status, h, b),
        Err(e) => (StatusCode::BAD_GATEWAY, e).into_response(),
    }
}

/// Sends only some entries on; reports the others `Failed` (`SenderFault: false`).
async fn partial_send_batch(p: &Inner, method: &Method, uri: &Uri, headers: &HeaderMap, body: Bytes) -> Response {
    let Ok(mut req) = serde_json::from_slice::<Value>(&body) else {
        return forward_or_502(p, method, uri, headers, body).await;
    };
    let entries = req["Entries"].as_array().cloned().unwrap_or_default();
    let (mut keep, mut fail) = (Vec::new(), Vec::new());
    {
        let mut rng = p.rng.lock().expect("lock");
        for e in entries {
            if rng.random_bool(0.4) {
                fail.push(e);
            } else {
                keep.push(e);
            }
        }
    }
    let mut successful = Vec::new();
    let mut emulator_failed = Vec::new();
    if !keep.is_empty() {
        req["Entries"] = Value::Array(keep);
        match p.forward(method, uri, headers, Bytes::from(req.to_string())).await {
            Ok((status, h, b)) if status.is_success() => {
                let v: Value = serde_json::from_slice(&b).unwrap_or(Value::Null);
                successful = v["Successful"].as_array().cloned().unwrap_or_default();
                emulator_failed = v["Failed"].as_array().cloned().unwrap_or_default();
                drop(h);
            }
            Ok((status, h, b)) => return respond(status, h, b),
            Err(e) => return (StatusCode::BAD_GATEWAY, e).into_response(),
        }
    }
    let mut failed: Vec<Value> = fail
        .iter()
        .map(|e| json!({"Id": e["Id"], "SenderFault": false, "Code": "InternalError", "Message": "injected by the fault proxy"}))
        .collect();
    failed.extend(emulator_failed);
    let mut r = Json(json!({"Successful": successful, "Failed": failed})).into_response();
    r.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/x-amz-json-1.0"));
    r
}

/// Applies only some write requests; returns the rest as `UnprocessedItems`.
async fn unprocessed_write(p: &Inner, method: &Method, uri: &Uri, headers: &HeaderMap, body: Bytes) -> Response {
    let Ok(mut req) = serde_json::from_slice::<Value>(&body) else {
        return forward_or_502(p, method, uri, headers, body).await;
    };
    let mut unprocessed = serde_json::Map::new();
    let mut any_kept = false;
    if let Some(items) = req["RequestItems"].as_object_mut() {
        let mut rng = p.rng.lock().expect("lock");
        for (table, reqs) in items.iter_mut() {
            let all = reqs.as_array().cloned().unwrap_or_default();
            let (mut keep, mut left) = (Vec::new(), Vec::new());
            for r in all {
                if rng.random_bool(0.5) {
                    left.push(r);
                } else {
                    keep.push(r);
                }
            }
            any_kept |= !keep.is_empty();
            if !left.is_empty() {
                unprocessed.insert(table.clone(), Value::Array(left));
            }
            *reqs = Value::Array(keep);
        }
        items.retain(|_, v| v.as_array().is_some_and(|a| !a.is_empty()));
    }
    if any_kept {
        match p.forward(method, uri, headers, Bytes::from(req.to_string())).await {
            Ok((status, _, _)) if status.is_success() => {}
            Ok((status, h, b)) => return respond(status, h, b),
            Err(e) => return (StatusCode::BAD_GATEWAY, e).into_response(),
        }
    }
    let mut r = Json(json!({"UnprocessedItems": unprocessed})).into_response();
    r.headers_mut()
        .insert("content-type", HeaderValue::from_static("application/x-amz-json-1.0"));
    r
}
