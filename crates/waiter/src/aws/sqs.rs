//! SQS adapter: `SendMessage` and `SendMessageBatch`, queue URLs from `GetQueueUrl` cached for the
//! life of the process (one Lambda cold start).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

use async_trait::async_trait;
use aws_sdk_sqs::primitives::Blob;
use aws_sdk_sqs::types::{
    MessageAttributeValue, MessageSystemAttributeNameForSends, MessageSystemAttributeValue,
    SendMessageBatchRequestEntry,
};
use aws_sdk_sqs::Client;

use super::classify;
use super::retime::{is_all_expired, AllExpired, Retime};
use crate::config::QueueName;
use crate::error::PortError;
use crate::job::{AttributeData, Attributes};
use crate::limits::SQS_MAX_BATCH_ENTRIES;
use crate::ports::{EntryOutcome, MessageQueue, OutgoingMessage};

/// The failure code of an entry taken out of a send because, by the SDK's retry, it would have
/// arrived after its `expires_at` (not sent: it stays stored, and the next run drops it).
pub const EXPIRED_DURING_RETRIES: &str = "ExpiredDuringRetries";

#[derive(Clone)]
pub struct SqsQueue {
    client: Client,
    /// One cell per queue, so concurrent first uses share a single GetQueueUrl (shared by
    /// clones).
    urls: Arc<Mutex<HashMap<QueueName, Arc<OnceCell<String>>>>>,
}

impl SqsQueue {
    pub fn new(client: Client) -> Self {
        Self {
            client,
            urls: Arc::default(),
        }
    }

    async fn url(&self, queue: &QueueName) -> Result<String, PortError> {
        let cell = match self.urls.lock() {
            Ok(mut m) => m.entry(queue.clone()).or_default().clone(),
            Err(_) => Arc::new(OnceCell::new()),
        };
        cell.get_or_try_init(|| async {
            let out = self
                .client
                .get_queue_url()
                .queue_name(queue.as_str())
                .send()
                .await
                .map_err(|e| classify("GetQueueUrl", &format!("queue {queue}"), e))?;
            out.queue_url.ok_or_else(|| PortError::Rejected {
                operation: "GetQueueUrl",
                code: "MissingQueueUrl".into(),
                source: None,
            })
        })
        .await
        .cloned()
    }
}

/// The job's trace as SQS's `AWSTraceHeader` system attribute (a String), if it has one.
fn trace_attribute(
    m: &OutgoingMessage,
) -> Result<Option<HashMap<MessageSystemAttributeNameForSends, MessageSystemAttributeValue>>, PortError> {
    let Some(header) = &m.trace_header else {
        return Ok(None);
    };
    let value = MessageSystemAttributeValue::builder()
        .data_type("String")
        .string_value(header)
        .build()
        .map_err(|e| PortError::Internal {
            operation: "SendMessage",
            source: Box::new(e),
        })?;
    Ok(Some(HashMap::from([(
        MessageSystemAttributeNameForSends::AwsTraceHeader,
        value,
    )])))
}

fn to_sqs_attributes(attrs: &Attributes) -> Result<Option<HashMap<String, MessageAttributeValue>>, PortError> {
    if attrs.is_empty() {
        return Ok(None);
    }
    attrs
        .iter()
        .map(|(name, a)| {
            let b = MessageAttributeValue::builder().data_type(&a.data_type);
            let b = match &a.data {
                AttributeData::String(s) => b.string_value(s),
                AttributeData::Binary(bytes) => b.binary_value(Blob::new(bytes.clone())),
            };
            b.build().map(|v| (name.clone(), v)).map_err(|e| PortError::Internal {
                operation: "SendMessage",
                source: Box::new(e),
            })
        })
        .collect::<Result<HashMap<_, _>, _>>()
        .map(Some)
}

#[async_trait]
impl MessageQueue for SqsQueue {
    async fn send(&self, queue: &QueueName, m: &OutgoingMessage) -> Result<String, PortError> {
        let url = self.url(queue).await?;
        let out = self
            .client
            .send_message()
            .queue_url(url)
            .message_body(&m.body)
            .set_message_attributes(to_sqs_attributes(&m.attributes)?)
            .set_delay_seconds(m.delay_seconds.map(|d| d as i32))
            .set_message_group_id(m.group_id.clone())
            .set_message_deduplication_id(m.deduplication_id.clone())
            .set_message_system_attributes(trace_attribute(m)?)
            .customize()
            .interceptor(Retime::new(vec![m.expires_at]))
            .send()
            .await
            .map_err(|e| {
                if is_all_expired(&e) {
                    PortError::Transient {
                        operation: "SendMessage",
                        source: Box::new(AllExpired),
                    }
                } else {
                    classify("SendMessage", &format!("queue {queue}"), e)
                }
            })?;
        Ok(out.message_id.unwrap_or_default())
    }

    async fn send_batch(
        &self,
        queue: &QueueName,
        messages: &[OutgoingMessage],
    ) -> Result<Vec<EntryOutcome>, PortError> {
        debug_assert!(messages.len() <= SQS_MAX_BATCH_ENTRIES);
        let url = self.url(queue).await?;
        let entries = messages
            .iter()
            .enumerate()
            .map(|(i, m)| {
                SendMessageBatchRequestEntry::builder()
                    .id(i.to_string())
                    .message_body(&m.body)
                    .set_message_attributes(to_sqs_attributes(&m.attributes)?)
                    .set_delay_seconds(m.delay_seconds.map(|d| d as i32))
                    .set_message_group_id(m.group_id.clone())
                    .set_message_deduplication_id(m.deduplication_id.clone())
                    .set_message_system_attributes(trace_attribute(m)?)
                    .build()
                    .map_err(|e| PortError::Internal {
                        operation: "SendMessageBatch",
                        source: Box::new(e),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let retime = Retime::new(messages.iter().map(|m| m.expires_at).collect());
        let expired_by_retry = || EntryOutcome::Failed {
            code: EXPIRED_DURING_RETRIES.into(),
            message: AllExpired.to_string(),
            sender_fault: false,
        };
        let out = match self
            .client
            .send_message_batch()
            .queue_url(url)
            .set_entries(Some(entries))
            .customize()
            .interceptor(retime.clone())
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if is_all_expired(&e) => return Ok(messages.iter().map(|_| expired_by_retry()).collect()),
            Err(e) => return Err(classify("SendMessageBatch", &format!("queue {queue}"), e)),
        };
        let mut outcomes: Vec<Option<EntryOutcome>> = vec![None; messages.len()];
        for i in retime.expired() {
            if let Some(slot) = outcomes.get_mut(i) {
                *slot = Some(expired_by_retry());
            }
        }
        for ok in out.successful() {
            if let Some(slot) = ok.id().parse::<usize>().ok().and_then(|i| outcomes.get_mut(i)) {
                *slot = Some(EntryOutcome::Sent {
                    message_id: ok.message_id().to_owned(),
                });
            }
        }
        for failed in out.failed() {
            if let Some(slot) = failed.id().parse::<usize>().ok().and_then(|i| outcomes.get_mut(i)) {
                *slot = Some(EntryOutcome::Failed {
                    code: failed.code().to_owned(),
                    message: failed.message().unwrap_or_default().to_owned(),
                    sender_fault: failed.sender_fault(),
                });
            }
        }
        // An entry SQS reported neither way is treated as not sent: it stays stored and is retried.
        Ok(outcomes
            .into_iter()
            .map(|o| {
                o.unwrap_or(EntryOutcome::Failed {
                    code: "MissingResult".into(),
                    message: "SQS reported no result for this entry".into(),
                    sender_fault: false,
                })
            })
            .collect())
    }
}
