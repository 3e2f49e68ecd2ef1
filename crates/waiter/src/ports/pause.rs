//! The pause check before a send (DESIGN "Pause and resume"; docs/guarantees.md).
//!
//! `pause` answers `PAUSE_SETTLE` after its write has committed. A sender hands a message to
//! SQS only while its latest check of the queue's pause item (strongly consistent) began less
//! than `PAUSE_CHECK_FRESH` earlier, by its own monotonic clock, and found the queue running.
//! A check that found it running was served before the pause's write, so any send it admits
//! starts before `read start + PAUSE_CHECK_FRESH < write + PAUSE_SETTLE`, before `pause`
//! answered. After the answer only calls started earlier (in flight) still go out. The bound
//! rests on two durations, never on two clocks agreeing.
//!
//! The check is shared by every send of a run (or of one `enqueue` request) to that queue: a
//! queue that is never paused pays about one read per `PAUSE_CHECK_FRESH` of sending (two
//! senders that find it stale at once both read), not per job.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::time::Instant;

use super::Pauses;
use crate::config::QueueName;
use crate::error::PortError;

/// How long `pause` waits after its write before it answers.
pub const PAUSE_SETTLE: Duration = Duration::from_millis(1_000);
/// A check admits sends for this long after it began: `PAUSE_SETTLE` less room for the
/// difference in the two machines' clock rates and the answer's way back.
pub const PAUSE_CHECK_FRESH: Duration = Duration::from_millis(800);

/// What the last check found.
#[derive(Debug)]
struct Checked {
    began: Instant,
    paused_at: Option<DateTime<Utc>>,
    ended: Vec<super::EndedPause>,
}

/// The pause checks of one run or one request, per queue. No lock is held across a read:
/// the senders of a run are polled by different partitions' loops, and one that waited on
/// another's read would wait on that loop (a rate's arrival second hangs on the send).
#[derive(Debug, Default)]
pub struct PauseGate {
    checks: std::sync::Mutex<HashMap<QueueName, Checked>>,
    /// Reads made, for the run's summary and the bench.
    reads: std::sync::atomic::AtomicU64,
}

impl PauseGate {
    pub fn new() -> Self {
        Self::default()
    }

    /// The latest check of `queue`, if it still holds: a pause found holds for the gate's
    /// life (resumed queues go on at the next run); a running queue for `PAUSE_CHECK_FRESH`.
    /// The pause a check that still holds read: `Some(paused_at)`.
    fn holding(&self, queue: &QueueName) -> Option<Option<DateTime<Utc>>> {
        let checks = self.checks.lock().ok()?;
        checks
            .get(queue)
            .filter(|c| c.paused_at.is_some() || c.began.elapsed() < PAUSE_CHECK_FRESH)
            .map(|c| c.paused_at)
    }

    /// Whether the queue is paused, as a check that began less than `PAUSE_CHECK_FRESH` ago
    /// found it: reads again when the last check is older.
    pub async fn paused<S: Pauses + ?Sized>(
        &self,
        store: &S,
        queue: &QueueName,
    ) -> Result<Option<DateTime<Utc>>, PortError> {
        if let Some(paused_at) = self.holding(queue) {
            return Ok(paused_at);
        }
        let began = Instant::now();
        let super::QueuePause { paused_at, ended } = store.queue_pause(queue).await?;
        self.reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Ok(mut checks) = self.checks.lock() {
            let keep = checks
                .get(queue)
                .is_some_and(|c| c.paused_at.is_some() || c.began > began);
            if !keep {
                checks.insert(
                    queue.clone(),
                    Checked {
                        began,
                        paused_at,
                        ended,
                    },
                );
            }
        }
        Ok(paused_at)
    }

    /// Whether a check that began less than `PAUSE_CHECK_FRESH` ago found the queue running:
    /// a send may start now without another read.
    pub fn admits(&self, queue: &QueueName) -> bool {
        self.holding(queue).is_some_and(|paused_at| paused_at.is_none())
    }

    /// Strongly consistent reads of pause items this gate made.
    /// The queue's last pauses that ended, from and to, as its last check read (none before
    /// any check).
    pub fn ended_pauses(&self, queue: &QueueName) -> Vec<super::EndedPause> {
        self.checks
            .lock()
            .ok()
            .and_then(|c| c.get(queue).map(|c| c.ended.clone()))
            .unwrap_or_default()
    }

    pub fn reads(&self) -> u64 {
        self.reads.load(std::sync::atomic::Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::MemStore;

    #[tokio::test(start_paused = true)]
    async fn a_check_admits_sends_only_while_fresh_and_a_pause_is_seen_at_the_next_check() {
        let store = MemStore::default();
        let q = QueueName::parse("orders").unwrap();
        let gate = PauseGate::new();
        assert_eq!(gate.paused(&store, &q).await.unwrap(), None);
        let at = Utc::now();
        store.pause_queue(&q, at).await.unwrap();
        // Within the check's freshness the earlier read still admits: the pause has not
        // answered yet (it waits PAUSE_SETTLE, longer than PAUSE_CHECK_FRESH).
        tokio::time::advance(PAUSE_CHECK_FRESH - Duration::from_millis(1)).await;
        assert_eq!(gate.paused(&store, &q).await.unwrap(), None);
        assert_eq!(gate.reads(), 1);
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(
            gate.paused(&store, &q).await.unwrap().is_some(),
            "a stale check reads again"
        );
        assert_eq!(gate.reads(), 2);
        store.resume_queue(&q, Utc::now()).await.unwrap();
        tokio::time::advance(PAUSE_SETTLE).await;
        assert!(
            gate.paused(&store, &q).await.unwrap().is_some(),
            "a run that saw a pause keeps it"
        );
        assert!(PAUSE_CHECK_FRESH < PAUSE_SETTLE);
    }
}
