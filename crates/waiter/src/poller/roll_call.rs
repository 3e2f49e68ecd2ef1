//! A run's own partitions of one queue, in one process. A ranked partition waits for its
//! siblings to check in (to put their "reading" head in the ledger, or to find nothing due)
//! before it books, however far apart their first reads come back: `GATHER` alone covered
//! reads that came back within 100 ms of each other, and a loaded backend's did not (a cold CI
//! run on LocalStack: `normal-10` and `normal-14` booked a second ahead of `urgent-1`, which a
//! partition of the same run had not read yet). The wait costs no call: it is in memory.

use std::collections::BTreeSet;
use std::sync::Arc;

use tokio::sync::watch;

/// Who of a run's partitions of one queue has still to check in.
#[derive(Clone, Default)]
pub(super) struct RollCall(Arc<watch::Sender<BTreeSet<u32>>>);

impl RollCall {
    /// A partition starts working: its siblings wait for it to check in. Only partitions that
    /// have started are waited for (a run works `WAITER_CONCURRENCY` at once).
    pub(super) fn enrol(&self, shard: u32) -> Presence {
        self.0.send_modify(|missing| {
            missing.insert(shard);
        });
        Presence {
            roll: self.clone(),
            shard,
        }
    }
}

/// One partition's place in its run's roll call; dropped, it checks in (a partition that
/// stopped holds no one up).
pub(super) struct Presence {
    roll: RollCall,
    shard: u32,
}

impl Presence {
    /// This partition's head is in the ledger, or it has nothing due.
    pub(super) fn check_in(&self) {
        self.roll.0.send_if_modified(|missing| missing.remove(&self.shard));
    }

    /// Waits until every other started partition has checked in.
    pub(super) async fn siblings_in(&self) {
        let mut rx = self.roll.0.subscribe();
        // The sender lives in `self`: the wait ends only when the siblings are in.
        let _ = rx.wait_for(|missing| missing.iter().all(|s| *s == self.shard)).await;
    }
}

impl Drop for Presence {
    fn drop(&mut self) {
        self.check_in();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_partition_waits_for_its_started_siblings_and_not_for_itself() {
        let roll = RollCall::default();
        let (a, b) = (roll.enrol(0), roll.enrol(1));
        a.check_in();
        let waited = tokio::time::timeout(std::time::Duration::from_secs(1), a.siblings_in()).await;
        assert!(waited.is_err(), "1 has not checked in");
        let b_waits = tokio::spawn(async move {
            b.siblings_in().await;
            b
        });
        tokio::time::timeout(std::time::Duration::from_secs(1), b_waits)
            .await
            .expect("0 is in, and 1 does not wait for itself")
            .expect("joined");
        let c = roll.enrol(2);
        drop(c);
        tokio::time::timeout(std::time::Duration::from_secs(1), a.siblings_in())
            .await
            .expect("1 checked in when dropped, 2 when it stopped");
    }
}
