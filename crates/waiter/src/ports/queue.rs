//! The queue port: messages on their way to SQS.

use async_trait::async_trait;

use sha2::{Digest, Sha256};

use super::Edition;
use crate::config::QueueName;
use crate::error::PortError;
use crate::job::{Attributes, Job};

/// A message on its way to SQS.
#[derive(Debug, Clone, PartialEq)]
pub struct OutgoingMessage {
    pub body: String,
    pub attributes: Attributes,
    /// `None` on FIFO queues, which take no per-message delay.
    pub delay_seconds: Option<u32>,
    pub group_id: Option<String>,
    pub deduplication_id: Option<String>,
    /// The job's `expires_at`: a retry of the send that would arrive after it is not sent.
    pub expires_at: Option<chrono::DateTime<chrono::Utc>>,
    /// Sent as the `AWSTraceHeader` system attribute: outside the message's size and its
    /// attributes.
    pub trace_header: Option<String>,
}

impl OutgoingMessage {
    /// The message for this edition of a job. On a FIFO queue without a deduplication id given,
    /// the id is `default_deduplication_id`.
    pub fn for_job(job: &Job, edition: Edition, delay_seconds: Option<u32>) -> Self {
        Self {
            body: job.message_body.clone(),
            attributes: job.sent_attributes(),
            delay_seconds,
            group_id: job.message_group_id.clone(),
            deduplication_id: match job.occurrence_id() {
                // One id per occurrence: a given id would drop every occurrence within SQS's
                // 5 minutes of the first, so it is mixed in, not used as it is.
                Some(id) if job.queue.is_fifo() => {
                    let given = job.message_deduplication_id.as_deref().unwrap_or_default();
                    Some(default_deduplication_id(
                        &id,
                        edition,
                        &format!("{given}\0{}", job.message_body),
                    ))
                }
                _ => job.message_deduplication_id.clone().or_else(|| {
                    job.queue
                        .is_fifo()
                        .then(|| default_deduplication_id(&job.job_id, edition, &job.message_body))
                }),
            },
            expires_at: job.expires_at,
            trace_header: job.trace_header.clone(),
        }
    }

    /// With the job's `waiter.job_id` where it leaves room (`Job::id_attribute`), unless the
    /// deployment turned that off (`WAITER_JOB_ID_ATTRIBUTE=false`).
    pub fn carrying_id(mut self, job: &Job, on: bool) -> Self {
        if let Some((name, attribute)) = job.id_attribute().filter(|_| on) {
            self.attributes.insert(name.to_owned(), attribute);
        }
        self
    }

    pub fn bytes(&self) -> usize {
        crate::job::message_bytes(&self.body, &self.attributes)
    }
}

/// A FIFO message's deduplication id when none was given: a digest of the job's id, edition and
/// body (64 hex digits, within SQS's 128 characters). A re-send of the same edition (after a
/// crash, or an SDK retry) is deduplicated by SQS within its 5-minute window; a new job under the
/// same id, a new version, or another body under the same id in the same instant (two jobs of one
/// batch request), is not. With the id alone, SQS would drop a new job whose id was sent less
/// than 5 minutes before, and the poller would remove it as sent.
pub fn default_deduplication_id(job_id: &str, edition: Edition, body: &str) -> String {
    let mut h = Sha256::new();
    for part in [
        job_id,
        &crate::time::format_epoch(edition.enqueued_at),
        &edition.version.to_string(),
        body,
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The fate of one entry of a batch send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryOutcome {
    Sent {
        message_id: String,
    },
    Failed {
        code: String,
        message: String,
        sender_fault: bool,
    },
}

#[async_trait]
pub trait MessageQueue: Send + Sync + 'static {
    async fn send(&self, queue: &QueueName, message: &OutgoingMessage) -> Result<String, PortError>;

    /// Sends up to `SQS_MAX_BATCH_ENTRIES` messages; outcomes come back in input order.
    async fn send_batch(&self, queue: &QueueName, messages: &[OutgoingMessage])
        -> Result<Vec<EntryOutcome>, PortError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_deduplication_id_is_the_same_for_one_edition_and_differs_across_editions() {
        let t = chrono::DateTime::from_timestamp(1_796_000_000, 250_000_000).unwrap();
        let e = |enqueued_at, version| Edition { enqueued_at, version };
        let first = default_deduplication_id("a", e(t, 1), "x");
        assert_eq!(
            first,
            default_deduplication_id("a", e(t, 1), "x"),
            "a re-send is deduplicated"
        );
        assert_eq!(first.len(), 64);
        assert!(first.chars().all(|c| c.is_ascii_hexdigit()));
        let later_life = default_deduplication_id("a", e(t + chrono::TimeDelta::microseconds(1), 1), "x");
        let next_version = default_deduplication_id("a", e(t, 2), "x");
        let other_id = default_deduplication_id("b", e(t, 1), "x");
        let other_body = default_deduplication_id("a", e(t, 1), "y");
        for other in [&later_life, &next_version, &other_id, &other_body] {
            assert_ne!(&first, other);
        }
    }
}
