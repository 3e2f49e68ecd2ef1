//! A send's `DelaySeconds` and expiry, recomputed at each SDK attempt. The poller plans each
//! delay for the moment it sends; an attempt that times out or fails is retried by the SDK
//! seconds later, with the request as first built. `Retime` is an interceptor that, before each
//! attempt after the first, shortens every delay by the whole seconds since the first attempt
//! (so the arrival is never early and at most a second later than planned) and takes out the
//! entries that would now arrive after their `expires_at` (they stay stored; the next run finds
//! them expired). A send whose every entry expired fails with `AllExpired`.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use aws_sdk_sqs::config::interceptors::BeforeTransmitInterceptorContextMut;
use aws_sdk_sqs::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_sqs::error::BoxError;
use aws_smithy_types::body::SdkBody;
use chrono::{DateTime, TimeDelta, Utc};
use serde_json::Value;

use crate::job::SEND_ALLOWANCE;

/// Every entry of a send would arrive after its `expires_at` by the time the SDK retried it.
#[derive(Debug, thiserror::Error)]
#[error("every message would arrive after its expires_at by this retry; none sent")]
pub struct AllExpired;

/// The interceptor of one send: the entries' `expires_at` by entry index (`Id` of a batch
/// entry; 0 for `SendMessage`), and what it learnt across attempts (shared by its clones, so
/// that the caller reads what the SDK's copy saw).
#[derive(Debug, Clone)]
pub struct Retime {
    expires: Arc<Vec<Option<DateTime<Utc>>>>,
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    first_attempt: Option<Instant>,
    /// Entry indexes taken out for expiry.
    expired: Vec<usize>,
}

impl Retime {
    pub fn new(expires: Vec<Option<DateTime<Utc>>>) -> Self {
        Self {
            expires: Arc::new(expires),
            state: Arc::default(),
        }
    }

    /// The entries taken out because they would have arrived expired.
    pub fn expired(&self) -> Vec<usize> {
        self.state.lock().map(|s| s.expired.clone()).unwrap_or_default()
    }
}

impl Intercept for Retime {
    fn name(&self) -> &'static str {
        "Retime"
    }

    fn modify_before_signing(
        &self,
        context: &mut BeforeTransmitInterceptorContextMut<'_>,
        _components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let late = {
            let mut state = self.state.lock().map_err(|_| "retime state poisoned")?;
            match state.first_attempt {
                // The first attempt goes as planned.
                None => {
                    state.first_attempt = Some(Instant::now());
                    return Ok(());
                }
                Some(first) => first.elapsed(),
            }
        };
        let request = context.request_mut();
        let Some(bytes) = request.body().bytes() else {
            return Ok(());
        };
        let mut body: Value = serde_json::from_slice(bytes)?;
        let expired = retime(&mut body, late.as_secs(), Utc::now(), &self.expires)?;
        // Each attempt starts again from the request as first built, so the latest attempt's
        // set is the whole answer.
        if let Ok(mut state) = self.state.lock() {
            state.expired = expired;
        }
        let bytes = serde_json::to_vec(&body)?;
        request.headers_mut().insert("content-length", bytes.len().to_string());
        *request.body_mut() = SdkBody::from(bytes);
        Ok(())
    }
}

/// Shortens the delays of a `SendMessage` or `SendMessageBatch` request body by `late_s` and
/// takes out the batch entries that, sent at `now`, would arrive after their expiry. Returns the
/// indexes taken out; `AllExpired` when nothing is left to send.
pub fn retime(
    request: &mut Value,
    late_s: u64,
    now: DateTime<Utc>,
    expires: &[Option<DateTime<Utc>>],
) -> Result<Vec<usize>, AllExpired> {
    let arrives_expired = |message: &mut Value, index: usize| {
        let delay = message
            .get("DelaySeconds")
            .and_then(Value::as_u64)
            .map(|d| d.saturating_sub(late_s));
        if let Some(d) = delay {
            message["DelaySeconds"] = Value::from(d);
        }
        let arrival = now + TimeDelta::seconds(i64::try_from(delay.unwrap_or(0)).unwrap_or(i64::MAX / 2));
        expires
            .get(index)
            .copied()
            .flatten()
            .is_some_and(|e| e < arrival + SEND_ALLOWANCE)
    };
    if request.get("Entries").is_none() {
        return if arrives_expired(request, 0) {
            Err(AllExpired)
        } else {
            Ok(Vec::new())
        };
    }
    match request.get_mut("Entries").and_then(Value::as_array_mut) {
        Some(entries) => {
            let mut expired = Vec::new();
            entries.retain_mut(|entry| {
                let index = entry
                    .get("Id")
                    .and_then(Value::as_str)
                    .and_then(|id| id.parse::<usize>().ok());
                match index {
                    Some(i) if arrives_expired(entry, i) => {
                        expired.push(i);
                        false
                    }
                    _ => true,
                }
            });
            if entries.is_empty() {
                return Err(AllExpired);
            }
            Ok(expired)
        }
        None => Ok(Vec::new()),
    }
}

/// Whether an error (or one of its sources) is `AllExpired`.
pub fn is_all_expired(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(e);
    while let Some(c) = cause {
        if c.is::<AllExpired>() {
            return true;
        }
        cause = c.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_796_000_000 + s, 0).unwrap()
    }

    #[test]
    fn delays_shrink_by_the_whole_seconds_late_and_never_below_zero() {
        let mut batch = json!({"QueueUrl": "q", "Entries": [
            {"Id": "0", "MessageBody": "a", "DelaySeconds": 10},
            {"Id": "1", "MessageBody": "b", "DelaySeconds": 3},
            {"Id": "2", "MessageBody": "c"},
        ]});
        let expired = retime(&mut batch, 5, at(0), &[None, None, None]).unwrap();
        assert!(expired.is_empty());
        assert_eq!(batch["Entries"][0]["DelaySeconds"], 5);
        assert_eq!(batch["Entries"][1]["DelaySeconds"], 0);
        assert!(
            batch["Entries"][2].get("DelaySeconds").is_none(),
            "FIFO entries take none"
        );
        assert_eq!(batch["Entries"][0]["MessageBody"], "a");
    }

    #[test]
    fn entries_that_would_arrive_expired_are_taken_out_by_index() {
        // Planned at 0 with 10 s to arrive at 10; retried at 6, arriving at 10 again. Entry 1
        // expires at 10.1, within the send allowance; entry 2 at 9.
        let mut batch = json!({"Entries": [
            {"Id": "0", "MessageBody": "keep", "DelaySeconds": 10},
            {"Id": "1", "MessageBody": "tight", "DelaySeconds": 10},
            {"Id": "2", "MessageBody": "gone", "DelaySeconds": 10},
        ]});
        let tight = at(10) + TimeDelta::milliseconds(100);
        let expired = retime(&mut batch, 6, at(6), &[Some(at(60)), Some(tight), Some(at(9))]).unwrap();
        assert_eq!(expired, [1, 2]);
        assert_eq!(batch["Entries"].as_array().unwrap().len(), 1);
        assert_eq!(batch["Entries"][0]["MessageBody"], "keep");
        assert_eq!(batch["Entries"][0]["DelaySeconds"], 4);
    }

    #[test]
    fn a_send_with_nothing_left_is_all_expired() {
        let mut batch = json!({"Entries": [{"Id": "0", "MessageBody": "x", "DelaySeconds": 2}]});
        assert!(retime(&mut batch, 3, at(3), &[Some(at(3))]).is_err());
        let mut single = json!({"MessageBody": "x", "DelaySeconds": 2});
        assert!(retime(&mut single, 1, at(1), &[Some(at(1))]).is_err());
        let mut single = json!({"MessageBody": "x", "DelaySeconds": 2});
        assert_eq!(
            retime(&mut single, 1, at(1), &[Some(at(60))]).unwrap(),
            Vec::<usize>::new()
        );
        assert_eq!(single["DelaySeconds"], 1);
        let boxed: Box<dyn std::error::Error> = Box::new(AllExpired);
        assert!(is_all_expired(boxed.as_ref()));
    }
}
