//! `{"action": "retry", ...}`, validated into its domain form: the failed attempt, the message to
//! send again and the backoff with its defaults applied.

use sqs_waiter_contract::{
    DEFAULT_BASE_S, DEFAULT_FACTOR, DEFAULT_MAX_ATTEMPTS, DEFAULT_MAX_S, DEFAULT_PRIORITY, DEFAULT_WEIGHT,
    JOB_ID_ATTRIBUTE, MAX_ATTEMPT, MAX_ATTEMPT_NUMBER, MAX_BASE_S, MAX_ERROR_CHARS, MAX_FACTOR, MAX_MAX_S,
    PRIORITY_ATTRIBUTE, WEIGHT_ATTRIBUTE,
};

use super::decode::Decoded;
use super::field_rules::*;
use crate::backoff::Backoff;
use crate::config::QueueName;
use crate::error::InvalidRequest;
use crate::job::{without_reserved, Attributes};
use crate::limits::SQS_MAX_MESSAGE_ATTRIBUTES;

/// `{"action": "retry", ...}`.
#[derive(Debug, PartialEq)]
pub struct Retry {
    pub queue: QueueName,
    pub job_id: String,
    /// The attempt that failed, 1 to `MAX_ATTEMPT_NUMBER`.
    pub attempt: u32,
    /// The message named the job (`waiter.job_id`: a replayed copy's, or a series' occurrence's):
    /// its next attempt does too, even when no record of the copy or occurrence says so.
    pub names_itself: bool,
    pub message_body: String,
    /// The caller's attributes, `waiter.*` ones left out (ours replace them).
    pub message_attributes: Attributes,
    pub message_group_id: Option<String>,
    pub backoff: Backoff,
    pub max_attempts: u32,
    pub error: Option<String>,
    /// The next attempt's: as given, else the job's (the message's `waiter.priority`).
    pub priority: u16,
    pub weight: u16,
    /// The trace the next attempt's messages carry: the retry call's own (set by the handler).
    pub trace_header: Option<String>,
}

impl TryFrom<Decoded<'_, sqs_waiter_contract::Retry>> for Retry {
    type Error = InvalidRequest;

    fn try_from(d: Decoded<'_, sqs_waiter_contract::Retry>) -> Result<Self, InvalidRequest> {
        let (r, given) = (d.request, d.given);
        let queue = check_queue(&given, &r.queue, d.config)?;
        let job_id = check_job_id(&given.name("job_id"), r.job_id)?;
        let attempt = in_range("attempt", r.attempt, 1, u64::from(MAX_ATTEMPT_NUMBER))? as u32;
        let max_attempts = in_range(
            "max_attempts",
            r.max_attempts.unwrap_or(u64::from(DEFAULT_MAX_ATTEMPTS)),
            1,
            u64::from(MAX_ATTEMPT),
        )? as u32;
        let message_body = check_message_body(&given, r.message_body)?;
        let attributes = r.message_attributes;
        // The job's priority and weight, as its message carried them, unless given anew.
        let carried = |name: &str| {
            attributes
                .get(name)
                .and_then(|a| a.string_value.as_deref())
                .and_then(|v| v.parse::<u64>().ok())
        };
        let priority = check_priority(
            &given,
            r.priority.or_else(|| carried(PRIORITY_ATTRIBUTE)),
            DEFAULT_PRIORITY,
        )?;
        let weight = check_weight(&given, r.weight.or_else(|| carried(WEIGHT_ATTRIBUTE)), DEFAULT_WEIGHT)?;
        // An occurrence's id (`{series}@{epoch}`, which no caller can choose) is named in every
        // attempt's message whether or not the consumer handed its attributes back: a consumer
        // that falls back to the id it enqueued would otherwise retry the series' id.
        // Every message carries its job's id where it leaves room (`Job::id_attribute`), so the
        // attribute alone says a copy only of a copy's default id (`~`); a copy named by the
        // caller names itself through its stored item or record (app::retry). A plain job's
        // attempts carry its id where they leave room, never forced (issue 82).
        let named = attributes
            .get(JOB_ID_ATTRIBUTE)
            .is_some_and(|a| a.string_value.as_deref() == Some(job_id.as_str()));
        let names_itself =
            sqs_waiter_contract::occurrence_of(&job_id).is_some() || (named && job_id.bytes().any(|b| b == COPY_MARK));
        let attributes = without_reserved(attributes);
        if attributes.len() >= SQS_MAX_MESSAGE_ATTRIBUTES {
            return Err(InvalidRequest::new(
                given.name("message_attributes"),
                format!(
                    "leaves no room for waiter.attempt: at most {} attributes besides waiter.* ones, got {} (SQS allows {SQS_MAX_MESSAGE_ATTRIBUTES})",
                    SQS_MAX_MESSAGE_ATTRIBUTES - 1,
                    attributes.len()
                ),
            ));
        }
        let message_attributes = check_attributes(&given, attributes)?;
        let message_group_id = r
            .message_group_id
            .map(|id| check_fifo_id(&given.name("message_group_id"), id))
            .transpose()?;
        if queue.is_fifo() && message_group_id.is_none() {
            return Err(InvalidRequest::new("message_group_id", "is required for a FIFO queue"));
        }
        let b = r.backoff.unwrap_or_default();
        let base_s = in_range("backoff.base_s", b.base_s.unwrap_or(DEFAULT_BASE_S), 1, MAX_BASE_S)?;
        let factor = b.factor.unwrap_or(DEFAULT_FACTOR);
        if !(1.0..=MAX_FACTOR).contains(&factor) {
            return Err(InvalidRequest::new(
                "backoff.factor",
                format!("must be a number from 1 to {MAX_FACTOR}, got {factor}"),
            ));
        }
        let max_s = in_range(
            "backoff.max_s",
            b.max_s.unwrap_or(DEFAULT_MAX_S.max(base_s)),
            base_s,
            MAX_MAX_S,
        )?;
        let error = r.error.filter(|e| !e.is_empty());
        if let Some(e) = &error {
            let chars = e.chars().count();
            if chars > MAX_ERROR_CHARS {
                return Err(InvalidRequest::new(
                    "error",
                    format!("must be at most {MAX_ERROR_CHARS} characters, got {chars}"),
                ));
            }
        }
        Ok(Retry {
            queue,
            job_id,
            attempt,
            names_itself,
            message_body,
            message_attributes,
            message_group_id,
            backoff: Backoff {
                base_s,
                factor,
                max_s,
                jitter: b.jitter.unwrap_or(true),
            },
            max_attempts,
            error,
            priority,
            weight,
            trace_header: None,
        })
    }
}
