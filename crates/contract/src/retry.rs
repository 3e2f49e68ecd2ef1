//! `retry`: a consumer hands back a message it failed on, and the next attempt is scheduled at
//! exponential backoff.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::job::MessageAttribute;

/// The message attribute every message of a retried job carries: the attempt it is
/// (`DataType` `Number`). The first delivery, before any `retry`, carries none: it is attempt 1.
pub const ATTEMPT_ATTRIBUTE: &str = "waiter.attempt";
/// Attributes under this prefix are the waiter's: a caller's are replaced by ours.
pub const RESERVED_ATTRIBUTE_PREFIX: &str = "waiter.";
/// The message attribute a replayed copy's messages carry: the copy's own `job_id`, the id its
/// consumer retries it under (`DataType` `String`).
pub const JOB_ID_ATTRIBUTE: &str = "waiter.job_id";
/// `max_attempts` is from 1 to this.
pub const MAX_ATTEMPT: u32 = 10_000;
/// `attempt` is from 1 to this: past `MAX_ATTEMPT`, since each `redrive` of a job whose attempts
/// ran out sends one more attempt, which can fail in turn.
pub const MAX_ATTEMPT_NUMBER: u32 = 1_000_000;
/// `max_attempts` when none is given.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 10;
/// The longest `error`, in characters.
pub const MAX_ERROR_CHARS: usize = 1024;
/// `backoff.base_s` when none is given, and its range.
pub const DEFAULT_BASE_S: u64 = 30;
/// The largest `backoff.base_s` (one day).
pub const MAX_BASE_S: u64 = 86_400;
/// `backoff.factor` when none is given.
pub const DEFAULT_FACTOR: f64 = 2.0;
/// The largest `backoff.factor` (the smallest is 1: a fixed delay).
pub const MAX_FACTOR: f64 = 10.0;
/// `backoff.max_s` when none is given (one day).
pub const DEFAULT_MAX_S: u64 = 86_400;
/// The largest `backoff.max_s` (365 days).
pub const MAX_MAX_S: u64 = 31_536_000;
/// `park_code` (and `reason`) of a job parked because its attempts ran out.
pub const ATTEMPTS_EXHAUSTED: &str = "attempts_exhausted";

/// Hands back a message the consumer failed on: the next attempt is due after the backoff, or,
/// when `attempt` reached `max_attempts`, the job is parked. Idempotent per (`job_id`,
/// `attempt`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Retry {
    /// The queue, one of the deployment's `WAITER_QUEUES`.
    pub queue: String,
    /// The job's id, the same for every attempt: the one its message names in `waiter.job_id`
    /// (a replayed copy), else the one it was enqueued under.
    pub job_id: String,
    /// The attempt that just failed, from 1 (the first delivery). The next is `attempt + 1`.
    pub attempt: u64,
    /// The message body, sent again unaltered.
    pub message_body: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    /// SQS message attributes, sent again; `waiter.*` ones are replaced by ours.
    pub message_attributes: BTreeMap<String, MessageAttribute>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The FIFO message group, kept (required on `.fifo` queues).
    pub message_group_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The schedule of attempts; every field has a default.
    pub backoff: Option<Backoff>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The attempt after which the job is parked instead of retried (default 10).
    pub max_attempts: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Why the attempt failed, kept when the job is parked (up to 1024 characters).
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The next attempt's priority (0 to 1000); when absent, the job's (`waiter.priority` in
    /// `message_attributes`, else 100).
    pub priority: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The next attempt's weight (1 to 100); when absent, the job's (`waiter.weight`, else 1).
    pub weight: Option<u64>,
}

/// Exponential backoff: attempt n+1 is due `min(max_s, base_s × factor^(n−1))` seconds after the
/// `retry` of attempt n; with `jitter`, a uniform draw from the upper half of that.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Backoff {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Seconds before the second attempt, 1 to 86400 (default 30).
    pub base_s: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Growth per attempt, 1 to 10 (default 2).
    pub factor: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The longest delay, `base_s` to 31536000 (default 86400).
    pub max_s: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Spread the delay over its upper half (default true), so that jobs that failed together
    /// do not come back together.
    pub jitter: Option<bool>,
}

impl Retry {
    /// The retry of `attempt` of `job_id`, with the default backoff and `max_attempts`.
    pub fn new(
        queue: impl Into<String>,
        job_id: impl Into<String>,
        attempt: u32,
        message_body: impl Into<String>,
    ) -> Self {
        Self {
            queue: queue.into(),
            job_id: job_id.into(),
            attempt: u64::from(attempt),
            message_body: message_body.into(),
            message_attributes: BTreeMap::new(),
            message_group_id: None,
            backoff: None,
            max_attempts: None,
            error: None,
            priority: None,
            weight: None,
        }
    }

    /// The job's message attributes (`waiter.*` ones are replaced by the function).
    pub fn attributes(mut self, attributes: BTreeMap<String, MessageAttribute>) -> Self {
        self.message_attributes = attributes;
        self
    }

    /// The FIFO message group.
    pub fn group(mut self, message_group_id: impl Into<String>) -> Self {
        self.message_group_id = Some(message_group_id.into());
        self
    }

    /// The schedule and the last attempt.
    pub fn policy(mut self, policy: &RetryPolicy) -> Self {
        self.backoff = Some(policy.backoff.clone());
        self.max_attempts = policy.max_attempts.map(u64::from);
        self
    }

    /// Why the attempt failed.
    pub fn error(mut self, error: impl Into<String>) -> Self {
        self.error = Some(error.into());
        self
    }
}

/// A consumer's retry settings: the backoff and the attempt after which a job is parked.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RetryPolicy {
    /// The schedule of attempts.
    pub backoff: Backoff,
    /// `None`: the function's default, 10.
    pub max_attempts: Option<u32>,
}

impl RetryPolicy {
    /// `base_s × factor^(n−1)` seconds, at most `max_s`, jittered.
    pub fn exponential(base_s: u64, factor: f64, max_s: u64) -> Self {
        Self {
            backoff: Backoff {
                base_s: Some(base_s),
                factor: Some(factor),
                max_s: Some(max_s),
                jitter: None,
            },
            max_attempts: None,
        }
    }

    /// With or without jitter.
    pub fn jitter(mut self, jitter: bool) -> Self {
        self.backoff.jitter = Some(jitter);
        self
    }

    /// Park the job after this attempt fails.
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = Some(n);
        self
    }
}

/// The id to `retry` a received message under: its `waiter.job_id` (a replayed copy names
/// itself), else `enqueued`, the id the job was enqueued under.
pub fn job_id_of<'a>(attributes: &'a BTreeMap<String, MessageAttribute>, enqueued: &'a str) -> &'a str {
    attributes
        .get(JOB_ID_ATTRIBUTE)
        .and_then(|a| a.string_value.as_deref())
        .filter(|id| !id.is_empty())
        .unwrap_or(enqueued)
}

/// The attempt a received message is, from its `waiter.attempt` attribute: 1 when it has none
/// (a first delivery) or the value is not a whole number.
pub fn attempt_of(attributes: &BTreeMap<String, MessageAttribute>) -> u32 {
    attributes
        .get(ATTEMPT_ATTRIBUTE)
        .and_then(|a| a.string_value.as_deref())
        .and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|n| *n >= 1)
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Action;

    #[test]
    fn a_retry_goes_on_the_wire_with_its_action_and_policy() {
        let r = Retry::new("orders", "o-1", 2, "{}")
            .policy(&RetryPolicy::exponential(2, 2.0, 60).jitter(false).max_attempts(5))
            .error("timeout");
        let v = serde_json::to_value(r.tagged()).unwrap();
        assert_eq!(v["action"], "retry");
        assert_eq!(v["attempt"], 2);
        assert_eq!(v["backoff"]["base_s"], 2);
        assert_eq!(v["backoff"]["jitter"], false);
        assert_eq!(v["max_attempts"], 5);
        assert_eq!(v["error"], "timeout");
        assert!(v.get("message_attributes").is_none());
    }

    #[test]
    fn the_attempt_of_a_message_is_its_attribute_or_one() {
        let mut attrs = BTreeMap::new();
        assert_eq!(attempt_of(&attrs), 1);
        let number = |v: &str| MessageAttribute {
            data_type: "Number".into(),
            string_value: Some(v.into()),
            binary_value: None,
        };
        attrs.insert(ATTEMPT_ATTRIBUTE.into(), number("3"));
        assert_eq!(attempt_of(&attrs), 3);
        attrs.insert(ATTEMPT_ATTRIBUTE.into(), number("2.5"));
        assert_eq!(attempt_of(&attrs), 1);
        attrs.insert(ATTEMPT_ATTRIBUTE.into(), number("0"));
        assert_eq!(attempt_of(&attrs), 1);
    }
}
