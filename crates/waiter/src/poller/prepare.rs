//! Turning a planned batch into a send call: each entry's delay, `WAITER_MAX_RATE`'s arrival
//! second booked in the queue's ledger, and expiry at the real arrival.

use chrono::{DateTime, TimeDelta, Utc};
use tracing::{debug, warn};

use super::call::Call;
use super::drain::PartitionRun;
use super::plan::delay_at;
use super::Planned;
use crate::error::{display_chain, PortError};
use crate::ports::{Clock, HistoryStatus, JobStore, MessageQueue};
use crate::rate::{units_of, Booked, Booking};

impl<S: JobStore, Q: MessageQueue, C: Clock> PartitionRun<'_, S, Q, C> {
    /// Turns a batch into a call at `now`: each entry's delay, `WAITER_MAX_RATE`'s arrival
    /// second (booked in the queue's ledger, one call for the batch), and expiry at the real
    /// arrival (a late send must not deliver an expired job). Returns the call and, on a FIFO
    /// queue whose arrival second is later, when to send it.
    pub(super) async fn prepare(
        &mut self,
        batch: Vec<Planned>,
        now: DateTime<Utc>,
    ) -> Result<(Call, Option<DateTime<Utc>>), PortError> {
        let queue = self.queue;
        let fifo = queue.is_fifo();
        let blocked: Vec<bool> = batch
            .iter()
            .map(|p| fifo && group_of(p).is_some_and(|g| self.blocked_groups.contains_key(g)))
            .collect();
        let arrival_of = |p: &Planned| {
            let delay = delay_at(&p.job, fifo, now);
            (delay, now + TimeDelta::seconds(i64::from(delay.unwrap_or(0))))
        };
        let rate = self.d.config.max_rate;
        let booked = self.book_batch(&batch, &blocked, now).await?;
        let mut booked = booked.into_iter();
        let mut unused = Vec::new();
        let mut call = Vec::with_capacity(batch.len());
        let mut fifo_second: Option<i64> = None;
        let mut later = Vec::new();
        let mut rebook = Vec::new();
        for (mut p, blocked) in batch.into_iter().zip(blocked) {
            let mut arrive_in = None;
            let from_ledger = booked.next().flatten();
            // Booked ahead (ranked): its second is held already.
            let booking = p
                .booked
                .map(|(second, wanted)| (Booked::At(second), wanted))
                .or(from_ledger);
            let units = units_of(u32::from(p.job.job.weight), rate.unwrap_or(1));
            let held = |second| Booking { second, units };
            if !later.is_empty() {
                // Back to `pending`; a booking made ahead stays with it, and so does a FIFO
                // entry's second (released, the run's floors would still keep the next call
                // past it, one call per booked batch).
                match from_ledger {
                    Some((Booked::At(second), wanted)) if fifo && p.booked.is_none() => {
                        p.booked = Some((second, wanted));
                    }
                    other => unused.extend(other.and_then(|(b, _)| b.second()).map(held)),
                }
                later.push(p);
                continue;
            }
            // Held in this batch: an earlier entry of its group was left for a later run.
            let group_held = fifo && group_of(&p).is_some_and(|g| self.blocked_groups.contains_key(g));
            if blocked || group_held {
                unused.extend(booking.and_then(|(b, _)| b.second()).map(held));
                debug!(queue = %queue, job_id = %p.job.job.job_id, "an earlier message of its group waits: left for a later run");
                // Behind an item this release cannot read, it waits for an update, not a run:
                // the run still drains, and a lease it took over is not kept for it.
                let untouched = group_of(&p).and_then(|g| self.blocked_groups.get(g)) == Some(&true);
                self.left_behind |= !untouched;
                continue;
            }
            let (mut delay, mut arrival) = arrival_of(&p);
            let mut second_used = None;
            let mut waits_for_budget = false;
            match booking {
                None => {}
                // A better-ranked job of another partition books first: back to `pending`,
                // with every entry after it.
                Some((Booked::Blocked, _)) => {
                    later.push(p);
                    continue;
                }
                Some((Booked::Full, _)) => {
                    debug!(queue = %queue, job_id = %p.job.job.job_id, "arrival budget full: left for a later run");
                    self.hold_group_of(&p);
                    self.found_no_room();
                    continue;
                }
                // A FIFO call is sent at one instant: entries booked into a later second wait
                // for the next call, in order.
                Some((Booked::At(second), wanted)) if fifo && fifo_second.is_some_and(|f| f != second) => {
                    p.booked = Some((second, wanted));
                    later.push(p);
                    continue;
                }
                // Booked ahead, but sent too late to land in its second (a send held up): the
                // second goes back, and it books again. On a standard queue the rest of the
                // batch goes on without it: every entry that missed books again in one ledger
                // call (`book_ahead`), not one call each with the batch sent back behind it
                // (issue 72: a herd under the rate missed its first second, and the run made
                // two ledger writes per job, one job per round). A FIFO group's later entries
                // wait behind it.
                Some((Booked::At(second), _)) if p.booked.is_some() && second < arrival.timestamp() => {
                    unused.push(held(second));
                    p.booked = None;
                    if fifo {
                        later.push(p);
                    } else {
                        rebook.push(p);
                    }
                    continue;
                }
                Some((Booked::At(second), wanted)) => {
                    second_used = Some(held(second));
                    // A send that would now miss this second books again (`Fate::Missed`).
                    p.booked = Some((second, wanted));
                    let moved = second - arrival.timestamp();
                    // Its own second was full: it waits for the budget (counted once sent).
                    waits_for_budget = second > wanted;
                    arrive_in = (moved > 0 && delay.is_some()).then_some(second);
                    if let Some(dl) = delay.as_mut() {
                        *dl += u32::try_from(moved).unwrap_or(0);
                        arrival += TimeDelta::seconds(moved);
                    } else if moved > 0 {
                        arrival = DateTime::from_timestamp(second, 0).unwrap_or(arrival);
                    }
                    if fifo {
                        fifo_second = Some(second);
                    }
                }
            }
            if p.job.job.outside_windows_in_flight(arrival) {
                // The arrival budget moved it past its window's close: not sent. The next run
                // sends it if the window is still open then, or moves it to the next opening.
                unused.extend(second_used);
                debug!(queue = %queue, job_id = %p.job.job.job_id, "spread past its window: left for a later run");
                self.hold_group_of(&p);
                self.left_behind = true;
                continue;
            }
            if p.job.job.expires_in_flight(arrival) {
                unused.extend(second_used);
                debug!(queue = %queue, job_id = %p.job.job.job_id, "expired: dropped, not sent");
                self.summary.expired += 1;
                self.retire(&p.job, HistoryStatus::Expired, None);
                continue;
            }
            p.arrive_in = arrive_in;
            // A call is pinned to booked seconds for all its entries or none: a pinned call may
            // wait for the next second (`clear_of_second_end`), which would move an unpinned
            // entry off its own instant. The other kind goes in the next call, its second kept.
            if call.first().is_some_and(|(c, _)| pinned(c) != pinned(&p)) {
                later.push(p);
                continue;
            }
            self.summary.held_back += u64::from(waits_for_budget);
            if !waits_for_budget {
                self.summary.overdue_beyond_rate_s = self.summary.overdue_beyond_rate_s.max(p.overdue_s);
            }
            call.push((p, delay));
        }
        for p in later.into_iter().rev().chain(rebook.into_iter().rev()) {
            self.pending_bytes += p.bytes;
            self.pending.push_front(p);
        }
        // A second already past is gone from the ledger (`Bookings::forget_before`): giving
        // it back would only cost a call (a read, as nothing changes).
        unused.retain(|b| b.second >= now.timestamp());
        if !unused.is_empty() {
            // A booking not given back only leaves a slot of that second unused.
            if let Err(e) = self.d.store.release(queue, &unused, now, self.stop_at).await {
                warn!(queue = %queue, bookings = unused.len(), error = %display_chain(&e), "giving back unused arrival bookings failed");
            }
        }
        let hold = fifo_second
            .and_then(|s| DateTime::from_timestamp(s, 0))
            .filter(|t| *t > now);
        Ok((call, hold))
    }

    /// A job found no second with room up to its latest: it is held back for a later run, and
    /// (ranked) so is everything after it, unread.
    pub(super) fn found_no_room(&mut self) {
        self.budget_full |= self.ranks();
        self.summary.held_back += 1;
        self.left_behind = true;
    }

    /// A FIFO entry left for a later run holds back the rest of its group for this run: SQS
    /// must receive a group's messages in order, and priority reorders nothing there (a
    /// critical job books nothing, so it would otherwise go first).
    pub(super) fn hold_group_of(&mut self, p: &Planned) {
        if let Some(g) = group_of(p).filter(|_| self.queue.is_fifo()) {
            self.blocked_groups.insert(g.clone(), false);
        }
    }
}

/// Whether its delay is taken at the send from the second booked for it.
pub(super) fn pinned(p: &Planned) -> bool {
    p.arrive_in.is_some()
}

fn group_of(p: &Planned) -> Option<&String> {
    p.job.job.message_group_id.as_ref()
}
