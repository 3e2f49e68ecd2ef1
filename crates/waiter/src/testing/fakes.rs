//! The fake queue, which records what was sent, and the fake clock.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};

use crate::config::QueueName;
use crate::error::PortError;
use crate::ports::*;

/// A message as the fake queue received it.
#[derive(Debug, Clone)]
pub struct Sent {
    pub queue: QueueName,
    pub message: OutgoingMessage,
    pub at: DateTime<Utc>,
    /// Who sent it, as `FakeQueue::as_sender` named it ("" by default).
    pub by: &'static str,
}

/// FIFO deduplication ids by queue, with when each interval began.
type DedupIds = std::collections::HashMap<(QueueName, String), DateTime<Utc>>;
type EntryFault = Box<dyn Fn(&OutgoingMessage) -> Option<EntryOutcome> + Send + Sync>;
type BatchFault = Box<dyn Fn(&[OutgoingMessage]) -> Option<PortError> + Send + Sync>;

/// SQS FIFO's deduplication interval: a message whose deduplication id was accepted less than
/// this long ago is accepted and dropped, even if the first was deleted.
/// <https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/using-messagededuplicationid-property.html>
pub const FIFO_DEDUP_INTERVAL: TimeDelta = TimeDelta::minutes(5);

/// Records what was sent; can fail entries or whole batches on demand. On FIFO queues it drops
/// what SQS drops: a message whose deduplication id it accepted within `FIFO_DEDUP_INTERVAL`.
#[derive(Clone, Default)]
pub struct FakeQueue {
    pub sent: Arc<Mutex<Vec<Sent>>>,
    /// FIFO deduplication ids by queue, with when each was first accepted.
    pub dedup: Arc<Mutex<DedupIds>>,
    pub entry_fault: Arc<Mutex<Option<EntryFault>>>,
    pub batch_fault: Arc<Mutex<Option<BatchFault>>>,
    /// When set, every `SendMessageBatch` waits for a permit first: a call in flight.
    pub hold_batches: Arc<Mutex<Option<Arc<tokio::sync::Semaphore>>>>,
    pub clock: FakeClock,
    /// The name its sends are recorded under (`as_sender`).
    pub sender: &'static str,
}

impl FakeQueue {
    pub fn new(clock: FakeClock) -> Self {
        Self {
            clock,
            ..Self::default()
        }
    }

    pub fn sent(&self) -> Vec<Sent> {
        self.sent.lock().unwrap().clone()
    }

    /// The same queue, its sends recorded as `sender`'s: one process's client of a queue
    /// others send to as well.
    pub fn as_sender(&self, sender: &'static str) -> Self {
        Self { sender, ..self.clone() }
    }

    /// From now on, SQS refuses every message for good (`InvalidParameterValue`, the sender's
    /// fault): the poller parks them. `entry_fault = None` ends it.
    pub fn refuse_every_message(&self) {
        *self.entry_fault.lock().unwrap() = Some(Box::new(|_: &OutgoingMessage| {
            Some(EntryOutcome::Failed {
                code: "InvalidParameterValue".into(),
                message: "refused".into(),
                sender_fault: true,
            })
        }));
    }
}

#[async_trait]
impl MessageQueue for FakeQueue {
    async fn send(&self, queue: &QueueName, message: &OutgoingMessage) -> Result<String, PortError> {
        match self.send_batch(queue, std::slice::from_ref(message)).await?.remove(0) {
            EntryOutcome::Sent { message_id } => Ok(message_id),
            EntryOutcome::Failed { code, .. } => Err(PortError::Rejected {
                operation: "SendMessage",
                code,
                source: None,
            }),
        }
    }

    async fn send_batch(
        &self,
        queue: &QueueName,
        messages: &[OutgoingMessage],
    ) -> Result<Vec<EntryOutcome>, PortError> {
        assert!(
            messages.len() <= crate::limits::SQS_MAX_BATCH_ENTRIES,
            "batch of {}",
            messages.len()
        );
        let hold = self.hold_batches.lock().unwrap().clone();
        if let Some(permits) = hold {
            permits.acquire().await.expect("open").forget();
        }
        if let Some(e) = self.batch_fault.lock().unwrap().as_ref().and_then(|f| f(messages)) {
            return Err(e);
        }
        let at = self.clock.now();
        let fault = self.entry_fault.lock().unwrap();
        Ok(messages
            .iter()
            .map(|m| {
                if let Some(failed) = fault.as_ref().and_then(|f| f(m)) {
                    return failed;
                }
                if let (true, Some(id)) = (queue.is_fifo(), &m.deduplication_id) {
                    let mut seen = self.dedup.lock().unwrap();
                    let first = *seen.entry((queue.clone(), id.clone())).or_insert(at);
                    if first != at && at - first < FIFO_DEDUP_INTERVAL {
                        // Accepted and dropped, as SQS does.
                        return EntryOutcome::Sent {
                            message_id: uuid::Uuid::new_v4().to_string(),
                        };
                    }
                    seen.insert((queue.clone(), id.clone()), at);
                }
                self.sent.lock().unwrap().push(Sent {
                    queue: queue.clone(),
                    message: m.clone(),
                    at,
                    by: self.sender,
                });
                EntryOutcome::Sent {
                    message_id: uuid::Uuid::new_v4().to_string(),
                }
            })
            .collect())
    }
}

/// Wall time derived from tokio's clock, so with `start_paused = true` sleeps of concurrent
/// tasks overlap as in real time and tests run instantly. `advance` adds a manual jump.
#[derive(Clone)]
pub struct FakeClock {
    base: DateTime<Utc>,
    start: tokio::time::Instant,
    offset: Arc<Mutex<TimeDelta>>,
    /// This process's clock error: how far ahead of the shared clock it reads (`off_by`).
    error: TimeDelta,
}

impl Default for FakeClock {
    fn default() -> Self {
        Self {
            // A fixed, odd sub-second phase so alignment is exercised.
            base: DateTime::parse_from_rfc3339("2026-12-01T09:00:00.123456Z")
                .unwrap()
                .with_timezone(&Utc),
            start: tokio::time::Instant::now(),
            offset: Arc::default(),
            error: TimeDelta::zero(),
        }
    }
}

impl FakeClock {
    pub fn advance(&self, d: TimeDelta) {
        *self.offset.lock().unwrap() += d;
    }

    /// Another process's clock: `by` ahead of this one (behind if negative), from now on.
    pub fn skewed(&self, by: TimeDelta) -> Self {
        Self {
            base: self.base,
            start: self.start,
            offset: Arc::new(Mutex::new(*self.offset.lock().unwrap() + by)),
            error: self.error,
        }
    }

    /// Another process's clock, `by` ahead of this one (behind if negative), that keeps that
    /// error as this one moves on or is advanced: the two functions of one deployment.
    pub fn off_by(&self, by: TimeDelta) -> Self {
        Self {
            error: self.error + by,
            ..self.clone()
        }
    }
}

#[async_trait]
impl Clock for FakeClock {
    fn now(&self) -> DateTime<Utc> {
        let elapsed = TimeDelta::from_std(self.start.elapsed()).unwrap();
        self.base + elapsed + *self.offset.lock().unwrap() + self.error
    }

    async fn sleep_until(&self, t: DateTime<Utc>) {
        if let Ok(d) = (t - self.now()).to_std() {
            tokio::time::sleep(d).await;
        }
    }
}
