//! The queue port: messages on their way to SQS.

use async_trait::async_trait;

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
}

impl OutgoingMessage {
    pub fn for_job(job: &Job, delay_seconds: Option<u32>) -> Self {
        Self {
            body: job.message_body.clone(),
            attributes: job.message_attributes.clone(),
            delay_seconds,
            group_id: job.message_group_id.clone(),
            deduplication_id: job.message_deduplication_id.clone(),
        }
    }

    pub fn bytes(&self) -> usize {
        crate::job::message_bytes(&self.body, &self.attributes)
    }
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
