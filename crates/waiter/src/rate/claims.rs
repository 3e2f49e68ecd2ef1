//! The rank order across a queue's partitions. Each partition run books its own jobs, in
//! rank order (`PriorityOrder`); for the order to hold across partitions (other shards, other
//! poller groups, other processes), a partition that has ready jobs puts its best unbooked one
//! in the queue's ledger as its head. A job books only if no other partition's head is ranked
//! before it and wants its second or an earlier one (or is due now); otherwise it is blocked, and its run
//! tries again shortly (the better-ranked partition books meanwhile, and its head moves on).
//!
//! A ranked want moved past its second (a full second, a heavy job) leaves a floor: no
//! worse-ranked want books before where it went, in any partition, so that a light job never
//! slips into the room a better one did not fit in. Floors go when their second has passed.
//!
//! The partition with the best head is never blocked, so the queue always moves. A head lives
//! `HEAD_TTL` unless its run renews it: a run that stopped holds no one up for longer.

use chrono::{DateTime, TimeDelta, Utc};

use super::{ArrivalWant, Bookings, Floors, Rank};

/// How long a head holds other partitions back unless its run renews it.
pub const HEAD_TTL: TimeDelta = TimeDelta::seconds(3);

/// The most floors a queue's ledger keeps (each about 40 bytes in the item): beyond it,
/// neighbouring floors merge (`Bookings::merge_closest_floors`).
pub const MAX_FLOORS: usize = 48;

/// A partition's best-ranked job that it has still to book, and the second it wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub rank: Rank,
    pub second: i64,
    /// Unix milliseconds after which the head is forgotten.
    pub until_ms: i64,
}

/// How long a partition that has nothing (more) to book counts as having read its due jobs in
/// this round of runs: longer than runs of one round start apart, shorter than the schedule's
/// minute between rounds.
pub const DONE_FOR: TimeDelta = TimeDelta::seconds(10);

impl Head {
    /// The mark of a partition with nothing (more) to book among the jobs due up to second
    /// `read_to`: ranked after every job.
    pub fn done(read_to: i64, until_ms: i64) -> Self {
        Self {
            rank: Rank::LAST,
            second: read_to,
            until_ms,
        }
    }

    /// Whether the partition has checked in for wants of `second` of jobs enqueued up to
    /// `enqueued_ms`: it has a job to book, or has read (and booked) everything due up to that
    /// second after those jobs were enqueued (a read before them, an earlier run's, may have
    /// missed jobs enqueued with them).
    fn checked_in_for(&self, second: i64, enqueued_ms: i64) -> bool {
        let written_ms = self.until_ms - DONE_FOR.num_milliseconds();
        self.rank != Rank::LAST || (self.second >= second && written_ms >= enqueued_ms)
    }
}

/// A ranked booking: the partition (its shard), each want's rank, the partition's next job
/// after these (rank and wanted second), if it has one, the partitions of other poller groups
/// it waits for (until each of them has checked in, none of its wants books), the second up to
/// which this partition has read its due jobs (its run's horizon), and when the latest of the
/// wanted jobs was enqueued.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Claim {
    pub shard: u32,
    pub ranks: Vec<Rank>,
    pub next: Option<(Rank, i64)>,
    pub awaits: Vec<u32>,
    pub read_to: i64,
    /// When the latest of the jobs being booked was enqueued (Unix milliseconds).
    pub enqueued_ms: i64,
}

/// What a want got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Booked {
    /// Booked into this second.
    At(i64),
    /// No second up to its `latest` has room: nothing booked.
    Full,
    /// Another partition's better-ranked job wants its second or an earlier one: nothing
    /// booked; try again.
    Blocked,
}

impl Booked {
    pub fn second(self) -> Option<i64> {
        match self {
            Booked::At(s) => Some(s),
            Booked::Full | Booked::Blocked => None,
        }
    }
}

impl Bookings {
    /// The second a want of `rank` may not book before: the latest a better-ranked want was
    /// moved to (whatever second either wanted: two due jobs want "now", which moves on
    /// between two runs' calls).
    fn floor_for(&self, rank: Rank) -> Option<i64> {
        self.2.range(..rank).map(|(_, f)| *f).max()
    }

    /// Records that no want ranked after `rank` books before `floor`. The floors stay a
    /// staircase (each one higher than every better rank's), and at most `MAX_FLOORS` of them:
    /// the ledger is one item, written whole by every booking, so its size is both DynamoDB's
    /// 400 KB limit and the write units each booking bills.
    fn raise_floor(&mut self, rank: Rank, floor: i64) {
        if self.2.range(..=rank).any(|(_, f)| *f >= floor) {
            return; // A better (or this) rank's floor says as much already.
        }
        self.2.insert(rank, floor);
        let implied: Vec<Rank> = self
            .2
            .range((std::ops::Bound::Excluded(rank), std::ops::Bound::Unbounded))
            .filter(|(_, f)| **f <= floor)
            .map(|(r, _)| *r)
            .collect();
        for r in implied {
            self.2.remove(&r);
        }
        while self.2.len() > MAX_FLOORS {
            self.merge_closest_floors();
        }
    }

    /// Merges the two neighbouring floors closest in second into the better rank, with the
    /// higher floor: the ranks between them are held back a little longer than they need, and
    /// none books before a better-ranked want was moved to (the order holds; only delay grows).
    fn merge_closest_floors(&mut self) {
        let entries: Vec<(Rank, i64)> = self.2.iter().map(|(r, f)| (*r, *f)).collect();
        let Some(i) = (0..entries.len().saturating_sub(1)).min_by_key(|i| entries[i + 1].1.abs_diff(entries[*i].1))
        else {
            return;
        };
        let ((better, f1), (worse, f2)) = (entries[i], entries[i + 1]);
        self.2.remove(&worse);
        self.2.insert(better, f1.max(f2));
    }

    /// Books `wants` in order as `book_all` does; with a claim, a want that another partition's
    /// head is ranked before (and wants its second or an earlier one) is blocked, and so is
    /// every want after it. The partition's own head becomes its first blocked want, or else
    /// its `next` job, or none.
    pub fn book_claimed(
        &mut self,
        rate: u32,
        wants: &[ArrivalWant],
        claim: Option<&Claim>,
        now: DateTime<Utc>,
    ) -> Vec<Booked> {
        let Some(claim) = claim else {
            return self
                .book_all(rate, wants)
                .into_iter()
                .map(|b| b.map_or(Booked::Full, Booked::At))
                .collect();
        };
        let own = self.1.remove(&claim.shard);
        let mut floors = Floors::default();
        let mut blocked: Option<(Rank, i64)> = None;
        // Another group's partition has not read its due jobs yet (up to the seconds these
        // want): it may hold better ones.
        let earliest = wants.iter().map(|w| w.second).min().unwrap_or(i64::MAX);
        if claim.awaits.iter().any(|s| {
            self.1
                .get(s)
                .is_none_or(|h| !h.checked_in_for(earliest, claim.enqueued_ms))
        }) {
            blocked = claim.ranks.first().zip(wants.first()).map(|(r, w)| (*r, w.second));
        }
        let mut out = Vec::with_capacity(wants.len());
        for (w, rank) in wants.iter().zip(&claim.ranks) {
            if blocked.is_some() {
                out.push(Booked::Blocked);
                continue;
            }
            let mut raised = floors.raise(*w);
            // Across partitions: not before a better-ranked want of this second (or an earlier
            // one) was moved to.
            if let Some(floor) = self.floor_for(*rank) {
                raised.second = raised.second.max(floor);
            }
            let Some(second) = self.book(rate, raised) else {
                floors.record(*w, None);
                self.raise_floor(*rank, w.latest.saturating_add(1));
                out.push(Booked::Full);
                continue;
            };
            // A better head competes if it wants this second or an earlier one, or is due now
            // (a due job wants "now", whichever second its last call saw).
            let due_by = second.max(now.timestamp() + 1);
            let behind = self.1.values().any(|h| h.rank < *rank && h.second <= due_by);
            if behind {
                self.unbook(second, w.units(rate));
                blocked = Some((*rank, w.second));
                out.push(Booked::Blocked);
            } else {
                floors.record(*w, Some(second));
                if second > w.second {
                    self.raise_floor(*rank, second);
                }
                out.push(Booked::At(second));
            }
        }
        let now_ms = now.timestamp_millis();
        // A blocked head wants the earliest second of any of the partition's jobs still to
        // book, not only its own: the ones after it in this claim, and its next job.
        let blocked = blocked.map(|(rank, second)| {
            let later = out
                .iter()
                .zip(wants)
                .filter(|(b, _)| **b == Booked::Blocked)
                .map(|(_, w)| w.second);
            let earliest = later.chain(claim.next.map(|(_, s)| s)).fold(second, i64::min);
            (rank, earliest)
        });
        let Some((rank, second)) = blocked.or(claim.next) else {
            // Nothing (more) to book: checked in for this round, blocking no one.
            let until_ms = now_ms + DONE_FOR.num_milliseconds();
            self.1.insert(claim.shard, Head::done(claim.read_to, until_ms));
            return out;
        };
        // Renewed only when half its time is gone: a run waiting on a better head writes
        // nothing while its own stays the same.
        let until_ms = match own {
            Some(h)
                if h.rank == rank && h.second == second && h.until_ms - now_ms > HEAD_TTL.num_milliseconds() / 2 =>
            {
                h.until_ms
            }
            _ => now_ms + HEAD_TTL.num_milliseconds(),
        };
        self.1.insert(claim.shard, Head { rank, second, until_ms });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::PriorityOrder;
    use super::*;

    fn at(ms: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(ms).expect("time")
    }

    fn want(second: i64) -> ArrivalWant {
        ArrivalWant {
            second,
            latest: second + 100,
            weight: 1,
        }
    }

    fn rank(priority: u16) -> Rank {
        PriorityOrder::Time.rank(at(100_000), priority)
    }

    #[test]
    fn a_want_behind_another_partitions_better_head_is_blocked_until_that_one_books() {
        let now = at(100_000);
        let mut b = Bookings::default();
        // Shard 1 has an urgent job ready (a claim with nothing to book yet: its head).
        let urgent = Claim {
            shard: 1,
            ranks: vec![],
            next: Some((rank(1), 100)),
            awaits: Vec::new(),
            read_to: 0,
            enqueued_ms: 0,
        };
        assert!(b.book_claimed(4, &[], Some(&urgent), now).is_empty());
        // Shard 0's default jobs of the same second are blocked, all of them.
        let plain = Claim {
            shard: 0,
            ranks: vec![rank(100), rank(100)],
            next: None,
            awaits: Vec::new(),
            read_to: 0,
            enqueued_ms: 0,
        };
        assert_eq!(
            b.book_claimed(4, &[want(100), want(100)], Some(&plain), now),
            vec![Booked::Blocked, Booked::Blocked]
        );
        assert_eq!(b.counts().count(), 0, "nothing booked");
        assert_eq!(b.heads().map(|(s, _)| s).collect::<Vec<_>>(), vec![0, 1]);
        // Shard 1 books and has nothing more: its head goes.
        let booked = Claim {
            shard: 1,
            ranks: vec![rank(1)],
            next: None,
            awaits: Vec::new(),
            read_to: 0,
            enqueued_ms: 0,
        };
        assert_eq!(
            b.book_claimed(4, &[want(100)], Some(&booked), now),
            vec![Booked::At(100)]
        );
        assert_eq!(waiting(&b), vec![0]);
        // Now shard 0 books after it.
        assert_eq!(
            b.book_claimed(4, &[want(100), want(100)], Some(&plain), now),
            vec![Booked::At(100), Booked::At(100)]
        );
        assert!(waiting(&b).is_empty());
        assert_eq!(b.heads().count(), 2, "both checked in for the round, done");
    }

    /// The partitions whose heads rank a job (not done).
    fn waiting(b: &Bookings) -> Vec<u32> {
        b.heads()
            .filter(|(_, h)| h.rank != Rank::LAST)
            .map(|(s, _)| s)
            .collect()
    }

    #[test]
    fn a_partition_waits_for_the_other_groups_partitions_to_check_in_and_not_for_done_ones() {
        let now = at(100_000);
        let mut b = Bookings::default();
        let waits = Claim {
            shard: 0,
            ranks: vec![rank(200)],
            next: None,
            awaits: vec![1, 2],
            read_to: 130,
            enqueued_ms: 0,
        };
        assert_eq!(
            b.book_claimed(4, &[want(100)], Some(&waits), now),
            vec![Booked::Blocked]
        );
        // Shard 1 has nothing due; shard 2 reads and finds an urgent job.
        let idle = Claim {
            shard: 1,
            read_to: 130,
            ..Claim::default()
        };
        b.book_claimed(4, &[], Some(&idle), now);
        let urgent = Claim {
            shard: 2,
            next: Some((rank(1), 100)),
            ..Claim::default()
        };
        b.book_claimed(4, &[], Some(&urgent), now);
        assert_eq!(
            b.book_claimed(4, &[want(100)], Some(&waits), now),
            vec![Booked::Blocked],
            "checked in, with a better job of the same second"
        );
        let urgent_booked = Claim {
            shard: 2,
            ranks: vec![rank(1)],
            read_to: 130,
            ..Claim::default()
        };
        assert_eq!(
            b.book_claimed(4, &[want(100)], Some(&urgent_booked), now),
            vec![Booked::At(100)]
        );
        assert_eq!(
            b.book_claimed(4, &[want(100)], Some(&waits), now),
            vec![Booked::At(100)]
        );
        // A done mark written before the jobs were enqueued (an earlier run's read) does not
        // count: that read may have missed jobs enqueued with them.
        let newer = Claim {
            enqueued_ms: now.timestamp_millis() + 1,
            ..waits.clone()
        };
        assert_eq!(
            b.book_claimed(4, &[want(100)], Some(&newer), now),
            vec![Booked::Blocked]
        );
        // A done mark counts for the seconds that partition read up to, for `DONE_FOR`.
        assert_eq!(
            b.book_claimed(4, &[want(131)], Some(&waits), now),
            vec![Booked::Blocked]
        );
        b.forget_before(now + DONE_FOR);
        assert_eq!(
            b.book_claimed(4, &[want(120)], Some(&waits), now + DONE_FOR),
            vec![Booked::Blocked]
        );
    }

    #[test]
    fn a_head_that_wants_a_later_second_or_ranks_after_blocks_nothing_and_a_stale_head_is_forgotten() {
        let now = at(100_000);
        let mut b = Bookings::default().with_heads([
            (
                1,
                Head {
                    rank: rank(1),
                    second: 140,
                    until_ms: 103_000,
                },
            ),
            (
                2,
                Head {
                    rank: rank(500),
                    second: 100,
                    until_ms: 103_000,
                },
            ),
        ]);
        let claim = Claim {
            shard: 0,
            ranks: vec![rank(100)],
            next: None,
            awaits: Vec::new(),
            read_to: 0,
            enqueued_ms: 0,
        };
        assert_eq!(
            b.book_claimed(4, &[want(100)], Some(&claim), now),
            vec![Booked::At(100)]
        );
        // Full up to 100's latest: full, not blocked (waiting would not make room).
        let mut full = Bookings::from_counts((100..=200).map(|s| (s, 4)));
        assert_eq!(
            full.book_claimed(4, &[want(100)], Some(&claim), now),
            vec![Booked::Full]
        );
        // Past its time, a head is forgotten; a done mark after `DONE_FOR`.
        b.forget_before(at(103_500));
        assert!(waiting(&b).is_empty());
        b.forget_before(at(100_000) + DONE_FOR);
        assert_eq!(b.heads().count(), 0);
    }

    #[test]
    fn a_waiting_partitions_head_is_renewed_only_when_half_its_time_is_gone() {
        let mut b = Bookings::default();
        let claim = Claim {
            shard: 3,
            ranks: vec![],
            next: Some((rank(7), 100)),
            awaits: Vec::new(),
            read_to: 0,
            enqueued_ms: 0,
        };
        b.book_claimed(4, &[], Some(&claim), at(100_000));
        let first = b.clone();
        b.book_claimed(4, &[], Some(&claim), at(101_000));
        assert_eq!(b, first, "unchanged: nothing to write");
        b.book_claimed(4, &[], Some(&claim), at(102_000));
        assert_eq!(b.heads().next().map(|(_, h)| h.until_ms), Some(105_000));
    }

    /// Issue 46 defect 5: one floor per distinct (second, priority) of every moved booking made
    /// the ledger item grow without bound (400 KB, after which every booking fails; long before,
    /// tens of write units per booking on one hot key).
    #[test]
    fn floors_stay_few_and_never_let_a_worse_rank_book_earlier_than_it_would_have() {
        let mut capped = Bookings::default();
        // Every floor as the uncapped ledger kept it, to compare against.
        let mut all: Vec<(Rank, i64)> = Vec::new();
        let mut seed = 7u64;
        for i in 0..2_000i64 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let priority = (seed >> 33) as u16 % 300;
            let due = 100 + (seed >> 20) as i64 % 600;
            let r = PriorityOrder::Time.coarse_rank(at(due * 1000), priority);
            let floor = due + 1 + i % 120;
            capped.raise_floor(r, floor);
            all.push((r, floor));
        }
        assert!(capped.floors().count() <= MAX_FLOORS, "{}", capped.floors().count());
        let floors: Vec<(Rank, i64)> = capped.floors().collect();
        assert!(
            floors.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1),
            "a staircase: {floors:?}"
        );
        // For every rank, the capped floor is at least the true one: the order holds.
        for (probe, _) in &all {
            let exact = all.iter().filter(|(r, _)| r < probe).map(|(_, f)| *f).max();
            let kept = capped.floor_for(*probe);
            assert!(kept >= exact, "{probe:?}: {kept:?} < {exact:?}");
        }
    }

    #[test]
    fn ranks_round_trip_through_their_encoding() {
        let r = PriorityOrder::Priority.rank(at(1_796_115_600_123), 42);
        assert_eq!(Rank::decode(&r.encode()), Some(r));
        assert_eq!(Rank::decode("1:2"), None);
        assert_eq!(Rank::decode("1:2:3:4"), None);
    }
}
