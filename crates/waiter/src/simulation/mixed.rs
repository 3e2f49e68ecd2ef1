//! Mixed versions (issue 74): now and then a poller run meets items of a later release's
//! format, as an old poller does in a stack update's minutes (docs/upgrades.md). Up to three
//! jobs stored since the last run (what a new `enqueue` would have written) are unreadable for
//! that run. It must not send, remove or change any of them, and holds a FIFO group behind one;
//! every other invariant holds as before, and once they are readable again (the update reached
//! the poller) the later runs and the calm deliver them. Drawn from a schedule of their own, so
//! a seed's other draws are as they were.

use std::collections::HashSet;

use rand::seq::{IndexedRandom, SliceRandom};

use crate::ports::StoredJob;

use super::*;

impl World {
    /// Before a run: marks up to three jobs stored since the last run ended as a later
    /// release's, and returns them as they were.
    pub(super) fn mark_later_format(&mut self) -> Vec<StoredJob> {
        let Some(draws) = self.steering.later_format_draws.as_mut() else {
            return Vec::new();
        };
        if !draws.random_bool(0.2) {
            return Vec::new();
        }
        // Written after the last run ended (by `enqueue`'s clock, up to 100 ms off): no run has
        // read them, as no old poller reads what a new `enqueue` wrote.
        let since = self.steering.last_run_end.map(|t| t + TimeDelta::milliseconds(200));
        let (mut candidates, ahead_of_their_group): (Vec<StoredJob>, Vec<StoredJob>) = {
            let state = self.mem.state.lock().unwrap();
            let owed: HashSet<&str> = state
                .lease_debts
                .values()
                .flat_map(|(debts, _)| debts.iter().map(|r| r.key.job_id.as_str()))
                .collect();
            let stored: Vec<&StoredJob> = state
                .items
                .values()
                .filter(|j| j.partition != Partition::Parked)
                .collect();
            let new: Vec<StoredJob> = stored
                .iter()
                .filter(|j| !owed.contains(j.job.job_id.as_str()))
                .filter(|j| since.is_none_or(|since| j.enqueued_at > since))
                .map(|j| (*j).clone())
                .collect();
            // A FIFO job with a later one of its group stored: the hold is what keeps that one
            // back.
            let ahead = new
                .iter()
                .filter(|j| {
                    j.job.message_group_id.is_some()
                        && stored.iter().any(|o| {
                            o.job.message_group_id == j.job.message_group_id && o.job.perform_at > j.job.perform_at
                        })
                })
                .cloned()
                .collect();
            (new, ahead)
        };
        candidates.shuffle(draws);
        candidates.truncate(draws.random_range(1..=3));
        if let Some(first) = ahead_of_their_group.choose(draws).filter(|_| draws.random_bool(0.7)) {
            candidates.retain(|j| j.job.job_id != first.job.job_id);
            candidates.push(first.clone());
        }
        for j in &candidates {
            self.mem.set_unreadable(&j.job.queue, &j.key(), true);
        }
        candidates
    }

    /// After the run: none of `marked` was sent by it (what SQS got from `sent_before` on),
    /// removed or changed; then they are readable again.
    pub(super) fn check_later_format(&mut self, marked: Vec<StoredJob>, sent_before: usize) {
        self.steering.last_run_end = Some(self.clock.now());
        let sent = self.sink.sent();
        for j in marked {
            let queue = j.job.queue.clone();
            if sent[sent_before.min(sent.len())..]
                .iter()
                .any(|s| s.queue == queue && s.message.body == j.job.message_body)
            {
                self.out.violations.push(format!(
                    "{queue}/{}: of a later format, sent by an old poller",
                    j.job.job_id
                ));
            }
            match self.mem.get(&queue, j.partition.clone(), &j.job.job_id) {
                Some(now) if now == j => {}
                other => self.out.violations.push(format!(
                    "{queue}/{}: of a later format, changed by an old poller's run: {other:?}",
                    j.job.job_id
                )),
            }
            self.mem.set_unreadable(&queue, &j.key(), false);
            self.steering.later_format += 1;
        }
    }
}
