//! Items this release cannot read (docs/upgrades.md "Item formats"): a later release's format,
//! met during a stack update or after a rollback, or a damaged item. The poller neither sends
//! nor removes nor rewrites them; it counts them (`Unreadable`, which has an alarm) and holds
//! a FIFO group behind one, as it holds a group behind a message that failed.

use super::drain::PartitionRun;
use crate::ports::{Clock, JobStore, MessageQueue, Unreadable};

impl<S: JobStore, Q: MessageQueue, C: Clock> PartitionRun<'_, S, Q, C> {
    pub(super) fn leave_untouched(&mut self, items: Vec<Unreadable>) {
        for item in items {
            // Once a run: a FIFO re-query shows it again.
            if !self.seen.insert(item.key.job_id.clone()) {
                continue;
            }
            // Not `left_behind`: it waits for an update, not for a run, and a run that cannot
            // drain keeps a lease it took over (and with it `cancel`'s `dispatching`) for good.
            self.summary.unreadable += 1;
            if self.queue.is_fifo() {
                match item.group {
                    Some(group) => {
                        // A group already held for a failure stays held as one.
                        self.blocked_groups.entry(group).or_insert(true);
                    }
                    // No group to hold: nothing more of this partition starts this run, so that
                    // no group's later message passes it.
                    None => self.paused = true,
                }
            }
        }
    }
}
