//! Latency and call accounting inside the bench's own endpoints (the minimal SQS and the
//! in-memory table), so that no proxy hop sits in front of them: the machine's time per call is
//! then mostly the client's. DynamoDB Local, which is not ours, gets the same from the fault
//! proxy.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

#[derive(Default)]
struct Inner {
    latency: Mutex<Duration>,
    /// Per operation: total time from a call's arrival to its answer, and how many.
    served: Mutex<HashMap<String, (Duration, usize)>>,
    /// Every call: its operation, arrival and answer (the stage table, `crate::stages`).
    log: Mutex<Vec<Call>>,
}

/// One call an endpoint answered.
#[derive(Debug, Clone)]
pub struct Call {
    pub operation: String,
    pub arrived: Instant,
    pub answered: Instant,
}

/// Shared by an endpoint and the bench that reads it.
#[derive(Clone, Default)]
pub struct CallMeter(Arc<Inner>);

impl CallMeter {
    /// Every call is held this long before it is answered.
    pub fn set_latency(&self, latency: Duration) {
        *self.0.latency.lock().unwrap_or_else(PoisonError::into_inner) = latency;
    }

    /// Holds a call for the latency; returns when it arrived, for `record`.
    pub async fn hold(&self) -> Instant {
        let arrived = Instant::now();
        let latency = *self.0.latency.lock().unwrap_or_else(PoisonError::into_inner);
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        arrived
    }

    /// Counts an answered call and the time it took.
    pub fn record(&self, operation: &str, arrived: Instant) {
        let answered = Instant::now();
        {
            let mut served = self.0.served.lock().unwrap_or_else(PoisonError::into_inner);
            let entry = served.entry(operation.to_owned()).or_default();
            entry.0 += answered - arrived;
            entry.1 += 1;
        }
        self.0.log.lock().unwrap_or_else(PoisonError::into_inner).push(Call {
            operation: operation.to_owned(),
            arrived,
            answered,
        });
    }

    /// The calls that arrived within `[from, to]`.
    pub fn calls_between(&self, from: Instant, to: Instant) -> Vec<Call> {
        let log = self.0.log.lock().unwrap_or_else(PoisonError::into_inner);
        log.iter()
            .filter(|c| c.arrived >= from && c.arrived <= to)
            .cloned()
            .collect()
    }

    /// Calls answered so far, by operation.
    pub fn calls(&self) -> HashMap<String, usize> {
        self.served().into_iter().map(|(op, (_, n))| (op, n)).collect()
    }

    /// One operation's total time taken and calls answered so far.
    pub fn served_by(&self, operation: &str) -> (Duration, usize) {
        self.served().get(operation).copied().unwrap_or_default()
    }

    /// Per operation: total time taken and calls answered so far.
    pub fn served(&self) -> HashMap<String, (Duration, usize)> {
        self.0.served.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// The operation an AWS JSON-protocol call names (`X-Amz-Target: Service.Operation`).
pub fn operation(headers: &axum::http::HeaderMap) -> String {
    headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .and_then(|t| t.rsplit('.').next())
        .unwrap_or("unknown")
        .to_owned()
}
