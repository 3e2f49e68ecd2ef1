//! Receiving what the functions sent: every message that becomes visible, with the time it was
//! received, and how often each job was sent.

use std::time::{Duration, Instant};

use crate::Emulator;

impl Emulator {
    /// Receives every message that becomes visible within `wait`, with the local time it arrived.
    /// Short polls every 20 ms, so arrival times are exact to that: moto's long poll wakes up to
    /// 0.5 s after a delay ends (measured), where AWS answers as soon as a message is visible.
    pub async fn receive_for(&self, url: &str, wait: Duration, expect: usize) -> Vec<Received> {
        let mut out = Vec::new();
        let until = Instant::now() + wait;
        while Instant::now() < until && out.len() < expect {
            let res = self
                .sqs
                .receive_message()
                .queue_url(url)
                .max_number_of_messages(10)
                .wait_time_seconds(0)
                .message_attribute_names("All")
                .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
                .send()
                .await
                .expect("ReceiveMessage");
            let at = chrono::Utc::now();
            let messages = res.messages.unwrap_or_default();
            if messages.is_empty() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            delete_received(&self.sqs, url, &messages)
                .await
                .expect("DeleteMessageBatch");
            out.extend(messages.into_iter().map(|message| Received { at, message }));
        }
        out
    }

    /// `receive_for` with `workers` receivers at once, for herds, until `expect` messages came
    /// or none came for `stall`: one receiver takes about a second per 10 messages from a moto
    /// queue holding thousands, so a fixed deadline measured the machine, not the code.
    pub async fn receive_many(&self, url: &str, stall: Duration, expect: usize, workers: usize) -> Vec<Received> {
        use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
        let (started, got, last_arrival_ms) = (Instant::now(), AtomicUsize::new(0), AtomicU64::new(0));
        let stalled =
            || started.elapsed().as_millis() as u64 >= last_arrival_ms.load(SeqCst) + stall.as_millis() as u64;
        let receivers = (0..workers.max(1)).map(|_| {
            let (got, last_arrival_ms) = (&got, &last_arrival_ms);
            async move {
                let mut out = Vec::new();
                while !stalled() && got.load(SeqCst) < expect {
                    let batch = self.receive_for(url, Duration::from_millis(1), 10).await;
                    if batch.is_empty() {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    } else {
                        last_arrival_ms.fetch_max(started.elapsed().as_millis() as u64, SeqCst);
                    }
                    got.fetch_add(batch.len(), SeqCst);
                    out.extend(batch);
                }
                out
            }
        });
        futures::future::join_all(receivers)
            .await
            .into_iter()
            .flatten()
            .collect()
    }
}

/// Deletes the messages one ReceiveMessage returned (so at most 10) in one DeleteMessageBatch.
pub async fn delete_received(
    sqs: &aws_sdk_sqs::Client,
    url: &str,
    messages: &[aws_sdk_sqs::types::Message],
) -> Result<(), aws_sdk_sqs::Error> {
    let entries: Vec<_> = messages
        .iter()
        .enumerate()
        .filter_map(|(i, m)| {
            let entry = aws_sdk_sqs::types::DeleteMessageBatchRequestEntry::builder()
                .id(i.to_string())
                .receipt_handle(m.receipt_handle()?)
                .build()
                .expect("id and receipt handle are set");
            Some(entry)
        })
        .collect();
    if entries.is_empty() {
        return Ok(());
    }
    sqs.delete_message_batch()
        .queue_url(url)
        .set_entries(Some(entries))
        .send()
        .await?;
    Ok(())
}

#[derive(Debug, Clone)]
pub struct Received {
    pub at: chrono::DateTime<chrono::Utc>,
    pub message: aws_sdk_sqs::types::Message,
}

impl Received {
    /// The message attribute `name`, when it is a string.
    pub fn attribute(&self, name: &str) -> Option<&str> {
        self.message.message_attributes()?.get(name)?.string_value()
    }
}

/// How often each job (message body) was *sent*: distinct SQS message ids per body. A standard
/// queue may deliver one message twice (same id, as AWS documents for standard queues), which is
/// SQS's at-least-once delivery, not a job sent twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sends {
    /// Distinct bodies delivered.
    pub jobs: usize,
    /// Copies sent beyond one per job.
    pub extra: usize,
    /// Deliveries of a message id already seen.
    pub redelivered: usize,
}

impl Sends {
    pub fn count(got: &[Received]) -> Self {
        let mut ids: std::collections::HashMap<&str, std::collections::HashSet<&str>> = Default::default();
        for r in got {
            ids.entry(r.message.body().unwrap_or_default())
                .or_default()
                .insert(r.message.message_id().unwrap_or_default());
        }
        let distinct: usize = ids.values().map(|set| set.len()).sum();
        let sends = Sends {
            jobs: ids.len(),
            extra: distinct - ids.len(),
            redelivered: got.len() - distinct,
        };
        if sends.redelivered > 0 {
            println!(
                "{} messages delivered again by SQS (same message id)",
                sends.redelivered
            );
        }
        sends
    }
}
