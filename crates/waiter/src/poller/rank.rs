//! Booking `WAITER_MAX_RATE`'s budget in `WAITER_PRIORITY_ORDER` (standard queues; a FIFO
//! queue's groups keep their own order). Within a partition, the ready jobs are ranked before
//! each batch (`rank_ready`), and a batch never overtakes an earlier one (`rate::Floors`).
//! Across the queue's partitions, whatever group or process works them, each partition puts
//! its best unbooked job in the queue's ledger (`rate::claims`) and books only what no other
//! partition's head ranks before. A partition that finds due jobs says so at once (a head
//! ranked first, `announce`), and once it has read them puts its best in and waits `GATHER`
//! (`gather`), so that partitions whose runs start together all have theirs in before the
//! first booking. Only partitions with due jobs write these two `PutItem`s per run, beside
//! their bookings' one per batch.

use chrono::{DateTime, TimeDelta, Utc};
use tracing::warn;

use super::drain::PartitionRun;
use super::plan::delay_at;
use super::Planned;
use crate::error::{display_chain, PortError};
use crate::limits::SQS_MAX_DELAY_SECONDS;
use crate::ports::{Clock, JobStore, MessageQueue};
use crate::rate::{units_of, ArrivalWant, Booked, Booking, Claim, Rank, HEAD_TTL};
use crate::routing::aligned_send_instant;

/// A ranked partition's first head waits this long before it books: the other partitions of
/// runs started together read their due jobs and put their heads in meanwhile.
pub const GATHER: TimeDelta = TimeDelta::milliseconds(100);
/// A booking wants the second its job arrives in if sent this much after the booking: a send
/// that crosses into the next second then still lands in the second booked (the delay of a
/// job moved to a later second is taken at the send, `Planned::arrive_in`).
pub const SEND_GUARD: TimeDelta = TimeDelta::milliseconds(100);
/// Booking waits while a job that may go is to be sent within this: a ledger call under a herd
/// takes up to a few hundred milliseconds, and a job sent after its instant may miss its second.
pub const SEND_SOON: TimeDelta = TimeDelta::seconds(1);
/// A blocked partition tries again after this (one ledger read while nothing changed).
pub const BLOCKED_RETRY: TimeDelta = TimeDelta::milliseconds(100);
/// With poller groups, a ranked partition waits up to this long after its run started for the
/// partitions of the other groups to check in (their runs start apart: each group's schedule
/// fires on its own, and a cold start adds to it). A group that does not run costs the others
/// this much latency per run.
pub const CHECK_IN_WAIT: TimeDelta = TimeDelta::seconds(5);
/// Jobs a ranked partition books ahead in one ledger call (the ledger item is written once per
/// call, whatever the number).
pub const AHEAD_PER_CALL: usize = 100;
/// A ranked partition books no further ahead than this (or `WAITER_LOOKAHEAD`, if longer):
/// jobs held back past it stay stored, so that a better-ranked job that falls due meanwhile
/// waits at most this long behind the booked ones. The next run (a minute later) books on.
pub const RANK_HORIZON: TimeDelta = TimeDelta::seconds(120);

impl<S: JobStore, Q: MessageQueue, C: Clock> PartitionRun<'_, S, Q, C> {
    /// Whether due jobs are ranked.
    pub(super) fn ranks(&self) -> bool {
        self.d.config.max_rate.is_some() && !self.queue.is_fifo()
    }

    /// A job's place in the order across partitions (`PriorityOrder::coarse_rank`).
    fn rank_of(&self, p: &Planned) -> Rank {
        self.d
            .config
            .priority_order
            .coarse_rank(p.job.job.perform_at, p.job.job.priority)
    }

    /// Whether a job may go now: critical, or booked into a second it can still arrive in.
    fn may_go(&self, p: &Planned, now: DateTime<Utc>) -> bool {
        p.job.job.is_critical() || p.booked.is_some_and(|(second, _)| !self.misses(p, second, now))
    }

    /// Whether a job that may go is to be sent within `SEND_SOON` of `now`: booking more first
    /// would hold its send (the ledger call is awaited in the partition's loop).
    pub(super) fn booked_soon(&self, now: DateTime<Utc>) -> bool {
        self.pending
            .iter()
            .take_while(|p| p.send_at <= now + SEND_SOON)
            .any(|p| self.may_go(p, now))
    }

    /// Whether the partition's head in the ledger may soon be forgotten (`HEAD_TTL`) while it
    /// still has jobs to book: the next booking writes it again. A write renews the head only
    /// once half its time is gone (`Bookings::book_claimed`), so a third of it after the last
    /// write leaves room for a slow ledger call.
    pub(super) fn head_due(&self, now: DateTime<Utc>) -> bool {
        self.head_written.is_some_and(|t| now - t >= HEAD_TTL / 3)
            && self
                .pending
                .iter()
                .any(|p| p.booked.is_none() && !p.job.job.is_critical())
    }

    /// Ranked: puts the jobs ready to be sent by `now` that may go (booked ahead, or critical)
    /// first, in `WAITER_PRIORITY_ORDER`; how many there are. `None`: not ranked (no rate, a
    /// FIFO queue), or nothing ready. A ready job not booked yet waits for `book_ahead`.
    pub(super) fn rank_ready(&mut self, now: DateTime<Utc>) -> Option<usize> {
        if !self.ranks() {
            return None;
        }
        let ready = self.pending.partition_point(|p| p.send_at <= now);
        if ready == 0 {
            return None;
        }
        let order = self.d.config.priority_order;
        let may_go: Vec<bool> = self.pending.range(..ready).map(|p| self.may_go(p, now)).collect();
        let mut ranked: Vec<(bool, Planned)> = may_go.into_iter().zip(self.pending.drain(..ready)).collect();
        // A stable sort: already ranked entries (the rest of the last batch's) cost little.
        ranked.sort_by_key(|(go, p)| (!go, order.rank(p.job.job.perform_at, p.job.job.priority)));
        let going = ranked.iter().take_while(|(go, _)| *go).count();
        for (_, p) in ranked.into_iter().rev() {
            self.pending.push_front(p);
        }
        Some(going)
    }

    /// When a job not sent yet will be: its own send instant, or (a standard one, whose
    /// instant has passed while it waited to book) the next instant at which its time left is
    /// whole seconds, so that it still arrives exactly when due, in the second it booked.
    fn send_instant(&self, p: &Planned, now: DateTime<Utc>) -> DateTime<Utc> {
        if p.send_at >= now || self.queue.is_fifo() {
            p.send_at.max(now)
        } else {
            aligned_send_instant(p.job.job.perform_at, now)
        }
    }

    /// Books the partition's jobs in rank order before they are sent, as soon as they are
    /// read (after `GATHER`), ready or not: a job read ahead of its time (a standard one is
    /// sent within the second before it is due) holds its second from then on, so that the
    /// queue's order does not depend on when each job's send instant comes. One ledger call
    /// for up to `AHEAD_PER_CALL` jobs. A job that finds no room up to the horizon is left
    /// for a later run.
    pub(super) async fn book_ahead(&mut self, now: DateTime<Utc>) -> Result<(), PortError> {
        if !self.ranks() {
            return Ok(());
        }
        self.unbook_missed(now).await;
        let order = self.d.config.priority_order;
        let mut picked: Vec<usize> = (0..self.pending.len())
            .filter(|i| self.pending[*i].booked.is_none() && !self.pending[*i].job.job.is_critical())
            .collect();
        if picked.is_empty() {
            return Ok(());
        }
        picked.sort_by_key(|i| {
            let p = &self.pending[*i];
            order.rank(p.job.job.perform_at, p.job.job.priority)
        });
        picked.truncate(AHEAD_PER_CALL);
        let batch: Vec<Planned> = picked.iter().map(|i| self.pending[*i].clone()).collect();
        // Taken for now, so that the partition's next head is the job after these.
        for i in &picked {
            self.pending[*i].booked = Some((i64::MIN, i64::MIN));
        }
        let booked = self.book_batch(&batch, &vec![false; batch.len()], now).await;
        let booked = match booked {
            Ok(b) => b,
            Err(e) => {
                for i in &picked {
                    self.pending[*i].booked = None;
                }
                return Err(e);
            }
        };
        let mut full = Vec::new();
        for (i, b) in picked.into_iter().zip(booked) {
            self.pending[i].booked = match b {
                Some((Booked::At(second), wanted)) => {
                    // Sent when its booking assumed.
                    self.pending[i].send_at = self.send_instant(&self.pending[i], now);
                    Some((second, wanted))
                }
                Some((Booked::Full, _)) => {
                    full.push(i);
                    None
                }
                Some((Booked::Blocked, _)) | None => None,
            };
        }
        // No room up to the horizon: left stored for a later run (which reads on from there).
        full.sort_unstable_by(|a, b| b.cmp(a));
        for i in full {
            if let Some(p) = self.pending.remove(i) {
                self.pending_bytes -= p.bytes;
                self.found_no_room();
            }
        }
        self.pending
            .make_contiguous()
            .sort_by(|a, b| a.send_order().cmp(&b.send_order()));
        Ok(())
    }

    /// Whether a job booked into `second` would arrive after it when sent at its next instant
    /// from `now` (its send was held up past that second): it has to book again.
    fn misses(&self, p: &Planned, second: i64, now: DateTime<Utc>) -> bool {
        let at = self.send_instant(p, now);
        let delay = delay_at(&p.job, self.queue.is_fifo(), at);
        second < (at + TimeDelta::seconds(i64::from(delay.unwrap_or(0)))).timestamp()
    }

    /// Every pending job whose booked second it can no longer arrive in books again, all in the
    /// next ledger call: found one batch at a time, each miss cost a round of the ledger, and the
    /// jobs booked again waited behind the other missed ones until their new seconds had passed
    /// too (issue 72: a herd under the rate went round this way until the run's end).
    async fn unbook_missed(&mut self, now: DateTime<Utc>) {
        let mut unused = Vec::new();
        let rate = self.d.config.max_rate.unwrap_or(1);
        for i in 0..self.pending.len() {
            let p = &self.pending[i];
            let Some((second, _)) = p.booked else { continue };
            if !self.misses(p, second, now) {
                continue;
            }
            if second >= now.timestamp() {
                unused.push(Booking {
                    second,
                    units: units_of(u32::from(p.job.job.weight), rate),
                });
            }
            let p = &mut self.pending[i];
            p.booked = None;
            p.arrive_in = None;
        }
        if unused.is_empty() {
            return;
        }
        if let Err(e) = self.d.store.release(self.queue, &unused, now, self.stop_at).await {
            warn!(queue = %self.queue, bookings = unused.len(), error = %display_chain(&e), "giving back unused arrival bookings failed");
        }
    }

    /// The arrival second a job wants if sent at `now` (or at its own send instant, if later;
    /// or up to `SEND_GUARD` after either), and the latest it may move to.
    fn want_of(&self, p: &Planned, now: DateTime<Utc>) -> ArrivalWant {
        let now = self.send_instant(p, now);
        let delay = delay_at(&p.job, self.queue.is_fifo(), now);
        let second = (now + SEND_GUARD + TimeDelta::seconds(i64::from(delay.unwrap_or(0)))).timestamp();
        let latest = match delay {
            // A standard message moves by a longer delay, up to SQS's maximum (ranked: up to
            // the horizon); a FIFO one by holding its send, within this run.
            Some(dl) => {
                let by_delay = second + i64::from(SQS_MAX_DELAY_SECONDS.saturating_sub(dl));
                if self.ranks() {
                    let horizon = RANK_HORIZON.max(TimeDelta::seconds(i64::from(self.d.config.lookahead)));
                    by_delay.min((now + horizon).timestamp())
                } else {
                    by_delay
                }
            }
            None => self.stop_at.timestamp() - 1,
        };
        ArrivalWant {
            second,
            latest,
            weight: u32::from(p.job.job.weight),
        }
    }

    /// The partition's head: the best rank of the jobs it has still to book (after the batch
    /// taken off `pending`), ready now or read ahead of their time (a standard job is sent in
    /// the second before it is due), and the earliest second they want when sent. It holds
    /// worse-ranked jobs of other partitions back from that second on, until this partition
    /// has booked them.
    fn next_head(&self, now: DateTime<Utc>) -> Option<(Rank, i64)> {
        let unbooked = || {
            self.pending
                .iter()
                .filter(|p| p.booked.is_none() && !p.job.job.is_critical())
        };
        let best = unbooked().map(|p| self.rank_of(p)).min()?;
        // The earliest second any of them wants (not only the best one): a worse-ranked job of
        // another partition must not take a second that this partition's second-best wants
        // either. Conservative, never a deadlock: each partition books its own in rank order,
        // and the one with the best job is never blocked.
        let earliest = unbooked().map(|p| self.want_of(p, now).second).min()?;
        Some((best, earliest))
    }

    /// The partition's first page of due jobs: its head in the ledger says "reading" (ranked
    /// before everything), so that no other partition books before this one has ranked them.
    pub(super) async fn announce(&mut self, now: DateTime<Utc>) -> Result<(), PortError> {
        let Some(rate) = self.d.config.max_rate.filter(|_| self.ranks() && !self.announced) else {
            return Ok(());
        };
        self.announced = true;
        let reading = Claim {
            shard: self.shard,
            next: Some((Rank::FIRST, i64::MIN)),
            ..Claim::default()
        };
        let written = self
            .d
            .store
            .book(self.queue, rate, &[], Some(&reading), now, self.stop_at)
            .await;
        if written.is_ok() {
            self.head_written = Some(now);
        }
        // Failed or not, waiting longer for it would not put it in.
        self.presence.check_in();
        written.map(|_| ())
    }

    /// The other groups' partitions this one still waits for to check in: all of them, until
    /// `CHECK_IN_WAIT` after the run started.
    fn awaits(&self, now: DateTime<Utc>) -> Vec<u32> {
        if now < self.started + CHECK_IN_WAIT {
            self.others.to_vec()
        } else {
            Vec::new()
        }
    }

    /// Nothing due in this partition: with poller groups, it says so in the ledger (one
    /// `PutItem` per run), so that the other groups' partitions need not wait for it.
    pub(super) async fn check_in_idle(&mut self, now: DateTime<Utc>) -> Result<(), PortError> {
        let Some(rate) = self.d.config.max_rate.filter(|_| self.ranks() && !self.announced) else {
            return Ok(());
        };
        if self.others.is_empty() {
            return Ok(());
        }
        self.announced = true;
        let done = Claim {
            shard: self.shard,
            read_to: self.horizon.timestamp(),
            ..Claim::default()
        };
        self.d
            .store
            .book(self.queue, rate, &[], Some(&done), now, self.stop_at)
            .await
            .map(|_| ())
    }

    /// Read: the partition's best ready job becomes its head, and it waits `GATHER` for the
    /// other partitions to read theirs before it books.
    pub(super) async fn gather(&mut self, now: DateTime<Utc>) -> Result<(), PortError> {
        let Some(rate) = self.d.config.max_rate else {
            return Ok(());
        };
        self.gathered = true;
        self.rank_ready(now);
        let head = Claim {
            shard: self.shard,
            next: self.next_head(now),
            read_to: self.horizon.timestamp(),
            ..Claim::default()
        };
        self.d
            .store
            .book(self.queue, rate, &[], Some(&head), now, self.stop_at)
            .await?;
        self.head_written = Some(now);
        // This run's other partitions of the queue: each has said it is reading (its head
        // holds everyone back until it has ranked its jobs), or has nothing due.
        let until = (self.started + CHECK_IN_WAIT).min(self.stop_at);
        crate::ports::within(&self.d.clock, until, self.presence.siblings_in()).await;
        self.rank_wait = Some(self.d.clock.now() + GATHER);
        Ok(())
    }

    /// Books the budget for a batch: one answer per entry with the second it wanted, `None` for
    /// one that books nothing (no rate, a critical job, an entry held back for its FIFO group).
    /// `Blocked` entries go back to `pending`, and the run tries again at `rank_wait`.
    pub(super) async fn book_batch(
        &mut self,
        batch: &[Planned],
        held_for_group: &[bool],
        now: DateTime<Utc>,
    ) -> Result<Vec<Option<(Booked, i64)>>, PortError> {
        let mut out = vec![None; batch.len()];
        let Some(rate) = self.d.config.max_rate else {
            return Ok(out);
        };
        let booking: Vec<usize> = (0..batch.len())
            .filter(|i| !held_for_group[*i] && !batch[*i].job.job.is_critical() && batch[*i].booked.is_none())
            .collect();
        if booking.is_empty() {
            return Ok(out);
        }
        let wants: Vec<ArrivalWant> = booking.iter().map(|i| self.want_of(&batch[*i], now)).collect();
        let claim = self.ranks().then(|| Claim {
            shard: self.shard,
            ranks: booking.iter().map(|i| self.rank_of(&batch[*i])).collect(),
            next: self.next_head(now),
            awaits: self.awaits(now),
            read_to: self.horizon.timestamp(),
            enqueued_ms: booking
                .iter()
                .map(|i| batch[*i].job.enqueued_at.timestamp_millis())
                .max()
                .unwrap_or(i64::MIN),
        });
        // Earlier batches of this run were better ranked: none of these overtakes them. Ranked,
        // the ledger's floors say so for every partition (and need each job's own second).
        let raised: Vec<ArrivalWant> = match claim {
            Some(_) => wants.clone(),
            None => wants.iter().map(|w| self.floors.raise(*w)).collect(),
        };
        let booked = self
            .d
            .store
            .book(self.queue, rate, &raised, claim.as_ref(), now, self.stop_at)
            .await?;
        if claim.is_some() {
            self.head_written = Some(now);
        }
        for ((i, w), b) in booking.into_iter().zip(&wants).zip(booked) {
            match b {
                Booked::At(s) => self.floors.record(*w, Some(s)),
                Booked::Full => self.floors.record(*w, None),
                Booked::Blocked => self.rank_wait = Some(now + BLOCKED_RETRY),
            }
            out[i] = Some((b, w.second));
        }
        Ok(out)
    }
}
