//! `WAITER_MAX_RATE`: at most this many of the poller's messages arrive in any one second, per
//! queue, whatever the number of poller groups and runs at once.
//!
//! The budget is kept by arrival second, not by send instant: a standard-queue job is often sent
//! ahead with `DelaySeconds`, so a thundering herd due at one instant is sent over many runs'
//! lookahead but arrives at once. A job whose arrival second is full moves to the first second
//! with room: a standard-queue message by a longer `DelaySeconds` (nothing is held in the run),
//! a FIFO message (no per-message delay) by holding its send.
//!
//! The bookings are the queue's, not a run's: the store keeps them (`ports::RateLedger`), one
//! ledger per queue that every run books into. `Bookings` is the ledger's logic, without I/O.
//!
//! When the budget holds due jobs back, who books first is `WAITER_PRIORITY_ORDER`'s
//! (`PriorityOrder::rank`). A job counts as its `weight` messages (at most the whole second's
//! budget: a heavier job takes a second to itself), and a critical job (priority 0) books
//! nothing.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

mod claims;
pub use claims::{Booked, Claim, Head, DONE_FOR, HEAD_TTL};

/// One arrival to book: its own second, the latest second it may move to (Unix seconds), and
/// the messages it counts as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArrivalWant {
    pub second: i64,
    pub latest: i64,
    pub weight: u32,
}

impl ArrivalWant {
    /// What it takes of a second's budget (`units_of`).
    pub fn units(&self, rate: u32) -> u32 {
        units_of(self.weight, rate)
    }
}

/// What a job of `weight` takes of a second's budget: its weight, but never more than the whole
/// second.
pub fn units_of(weight: u32, rate: u32) -> u32 {
    weight.clamp(1, rate.max(1))
}

/// A booking made: the second, and the units of that second's budget it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Booking {
    pub second: i64,
    pub units: u32,
}

/// Wants booked in rank order do not overtake: a want may not take a second before the one a
/// better-ranked want of its own second (or an earlier one) was moved to, or, if that one found
/// no room, any second. Without it a light job would fill the last unit of a second that a
/// heavier, better-ranked one did not fit in.
#[derive(Debug, Clone, Default)]
pub struct Floors(BTreeMap<i64, i64>);

impl Floors {
    /// `want`, starting no earlier than better-ranked wants were moved to.
    pub fn raise(&self, want: ArrivalWant) -> ArrivalWant {
        let floor = self.0.range(..=want.second).map(|(_, f)| *f).max();
        ArrivalWant {
            second: floor.map_or(want.second, |f| f.max(want.second)),
            ..want
        }
    }

    /// What `want` (as it was before `raise`) got: a move or no room sets a floor.
    pub fn record(&mut self, want: ArrivalWant, booked: Option<i64>) {
        let floor = match booked {
            Some(s) if s > want.second => s,
            Some(_) => return,
            None => want.latest.saturating_add(1),
        };
        let f = self.0.entry(want.second).or_insert(floor);
        *f = (*f).max(floor);
    }
}

/// `WAITER_PRIORITY_ORDER`: which due jobs take the budget's earliest seconds first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PriorityOrder {
    /// Earliest `perform_at` first; among jobs due in the same second, lower `priority` first.
    #[default]
    Time,
    /// Lower `priority` first, then earliest `perform_at`. A steady stream of urgent jobs can
    /// starve the others.
    Priority,
}

/// The place of a due job in `PriorityOrder`: smaller goes first. The ledger keeps it (a
/// partition's `Head`) as `a:b:c`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rank(i64, u16, i64);

impl Rank {
    /// Before every job: the head of a partition still reading its due jobs.
    pub const FIRST: Rank = Rank(i64::MIN, 0, i64::MIN);
    /// After every job: a partition with nothing (more) to book.
    pub const LAST: Rank = Rank(i64::MAX, u16::MAX, i64::MAX);

    pub fn encode(&self) -> String {
        format!("{}:{}:{}", self.0, self.1, self.2)
    }

    pub fn decode(s: &str) -> Option<Self> {
        let mut parts = s.split(':');
        let rank = Rank(
            parts.next()?.parse().ok()?,
            parts.next()?.parse().ok()?,
            parts.next()?.parse().ok()?,
        );
        parts.next().is_none().then_some(rank)
    }
}

/// The class of a priority in the lateness metric: `0` (critical), `1-99`, `100` (the
/// default) and `101+`.
pub fn priority_class(priority: u16) -> &'static str {
    match priority {
        0 => "0",
        1..=99 => "1-99",
        100 => "100",
        _ => "101+",
    }
}

impl PriorityOrder {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "time" => Some(Self::Time),
            "priority" => Some(Self::Priority),
            _ => None,
        }
    }

    pub fn rank(self, perform_at: DateTime<Utc>, priority: u16) -> Rank {
        match self {
            Self::Time => Rank(perform_at.timestamp(), priority, perform_at.timestamp_micros()),
            Self::Priority => Rank(i64::from(priority), 0, perform_at.timestamp_micros()),
        }
    }

    /// `rank` to the second: what the order promises across partitions (jobs of one priority
    /// due in the same second are equals there, so partitions full of them do not take turns).
    pub fn coarse_rank(self, perform_at: DateTime<Utc>, priority: u16) -> Rank {
        match self {
            Self::Time => Rank(perform_at.timestamp(), priority, 0),
            Self::Priority => Rank(i64::from(priority), 0, perform_at.timestamp()),
        }
    }
}

/// A queue's bookings: messages booked per arrival second, from the current second on, and
/// the heads of the partitions that wait to book in rank order (`claims`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bookings(BTreeMap<i64, u32>, BTreeMap<u32, Head>, BTreeMap<Rank, i64>);

impl Bookings {
    pub fn from_counts(counts: impl IntoIterator<Item = (i64, u32)>) -> Self {
        Self(
            counts.into_iter().filter(|(_, n)| *n > 0).collect(),
            BTreeMap::new(),
            BTreeMap::new(),
        )
    }

    pub fn with_heads(mut self, heads: impl IntoIterator<Item = (u32, Head)>) -> Self {
        self.1 = heads.into_iter().collect();
        self
    }

    pub fn counts(&self) -> impl Iterator<Item = (i64, u32)> + '_ {
        self.0.iter().map(|(s, n)| (*s, *n))
    }

    pub fn heads(&self) -> impl Iterator<Item = (u32, Head)> + '_ {
        self.1.iter().map(|(s, h)| (*s, *h))
    }

    pub fn with_floors(mut self, floors: impl IntoIterator<Item = (Rank, i64)>) -> Self {
        self.2 = floors.into_iter().collect();
        self
    }

    /// The queue's floors (`claims`): the rank of a want moved from its second (or with no
    /// room), and the second no worse-ranked want may book before.
    pub fn floors(&self) -> impl Iterator<Item = (Rank, i64)> + '_ {
        self.2.iter().map(|(k, f)| (*k, *f))
    }

    /// Seconds already past can take no more arrivals, and heads past their time were left by
    /// runs that stopped: forgets them.
    pub fn forget_before(&mut self, now: DateTime<Utc>) {
        self.0 = self.0.split_off(&now.timestamp());
        let now_ms = now.timestamp_millis();
        self.1.retain(|_, h| h.until_ms > now_ms);
        let second = now.timestamp();
        self.2.retain(|_, floor| *floor > second);
    }

    /// Books one arrival: in its own second if that has room for its units, else in the first
    /// later second that has. The booked second, or `None` (nothing booked) when no second up
    /// to `latest` has room.
    pub fn book(&mut self, rate: u32, want: ArrivalWant) -> Option<i64> {
        let rate = rate.max(1);
        let units = want.units(rate);
        let mut second = want.second;
        while second <= want.latest {
            let n = self.0.get(&second).copied().unwrap_or(0);
            if n + units <= rate {
                self.0.insert(second, n + units);
                return Some(second);
            }
            second += 1;
        }
        None
    }

    /// Books each want in order (see `book`); a want never overtakes an earlier one (see
    /// `Floors`).
    pub fn book_all(&mut self, rate: u32, wants: &[ArrivalWant]) -> Vec<Option<i64>> {
        let mut floors = Floors::default();
        wants
            .iter()
            .map(|w| {
                let booked = self.book(rate, floors.raise(*w));
                floors.record(*w, booked);
                booked
            })
            .collect()
    }

    /// Takes back one booking of `units` in `second` (a booking `book` just made).
    fn unbook(&mut self, second: i64, units: u32) {
        self.release(Booking { second, units });
    }

    /// Gives back a booking that was not used.
    pub fn release(&mut self, booking: Booking) {
        if let Some(n) = self.0.get_mut(&booking.second) {
            *n = n.saturating_sub(booking.units);
            if *n == 0 {
                self.0.remove(&booking.second);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64, ms: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(s * 1000 + ms).expect("time")
    }

    fn want(second: i64, latest: i64) -> ArrivalWant {
        ArrivalWant {
            second,
            latest,
            weight: 1,
        }
    }

    fn one(second: i64) -> Booking {
        Booking { second, units: 1 }
    }

    #[test]
    fn a_full_second_moves_arrivals_to_the_next_seconds_with_room() {
        let mut b = Bookings::default();
        assert_eq!(
            b.book_all(3, &[want(105, 200); 7]),
            vec![
                Some(105),
                Some(105),
                Some(105),
                Some(106),
                Some(106),
                Some(106),
                Some(107)
            ]
        );
        // Nothing up to `latest` has room: nothing is booked.
        assert_eq!(b.book_all(3, &[want(105, 106)]), vec![None]);
        assert_eq!(b.book(3, want(107, 200)), Some(107));
        b.release(one(107));
        b.release(one(107));
        // 107 holds none now: three fit again before 108 is used.
        assert_eq!(
            b.book_all(3, &[want(107, 200); 4]),
            vec![Some(107), Some(107), Some(107), Some(108)]
        );
    }

    #[test]
    fn past_seconds_are_forgotten() {
        let mut b = Bookings::from_counts([(10, 1), (11, 1), (12, 1)]);
        b.forget_before(at(12, 500));
        assert_eq!(b.counts().collect::<Vec<_>>(), vec![(12, 1)]);
    }

    #[test]
    fn bookings_round_trip_through_their_counts_without_empty_seconds() {
        let mut b = Bookings::default();
        assert_eq!(b.book(2, want(5, 5)), Some(5));
        assert_eq!(b.book(2, want(5, 6)), Some(5));
        assert_eq!(b.book(2, want(5, 6)), Some(6));
        b.release(one(6));
        assert_eq!(b.counts().collect::<Vec<_>>(), vec![(5, 2)]);
        assert_eq!(Bookings::from_counts([(5, 2), (7, 0)]), b);
    }

    #[test]
    fn a_job_counts_as_its_weight_and_a_heavy_one_moves_to_a_second_with_room_for_all_of_it() {
        let heavy = |second, weight| ArrivalWant {
            second,
            latest: second + 100,
            weight,
        };
        let mut b = Bookings::default();
        // `book` alone fills what is left; `book_all` keeps rank order (below).
        assert_eq!(b.book(4, heavy(10, 3)), Some(10));
        // One unit left in 10: a weight of 2 does not fit there, a weight of 1 does.
        assert_eq!(b.book(4, heavy(10, 2)), Some(11));
        assert_eq!(b.book(4, heavy(10, 1)), Some(10));
        assert_eq!(b.counts().collect::<Vec<_>>(), vec![(10, 4), (11, 2)]);
        // Heavier than the whole budget: takes the first empty second to itself.
        assert_eq!(b.book(4, heavy(11, 9)), Some(12));
        assert_eq!(b.counts().collect::<Vec<_>>(), vec![(10, 4), (11, 2), (12, 4)]);
        b.release(Booking { second: 12, units: 4 });
        b.release(Booking { second: 11, units: 2 });
        assert_eq!(b.counts().collect::<Vec<_>>(), vec![(10, 4)]);
    }

    #[test]
    fn time_order_ranks_by_due_second_then_priority_and_priority_order_by_priority_then_time() {
        let (early, same_second, later) = (at(100, 100), at(100, 900), at(101, 0));
        let t = PriorityOrder::Time;
        // Same second: the lower priority number goes first, whatever the milliseconds.
        assert!(t.rank(same_second, 5) < t.rank(early, 50));
        // An earlier second goes first, whatever the priority.
        assert!(t.rank(early, 1000) < t.rank(later, 1));
        assert!(t.rank(early, 100) < t.rank(same_second, 100));
        let p = PriorityOrder::Priority;
        assert!(p.rank(later, 1) < p.rank(early, 2));
        assert!(p.rank(early, 7) < p.rank(later, 7));
        assert_eq!(PriorityOrder::parse("priority"), Some(p));
        assert_eq!(PriorityOrder::parse("Time"), None);
    }

    #[test]
    fn booked_in_rank_order_a_want_never_overtakes_a_better_one_that_was_moved_or_found_no_room() {
        let w = |second, latest, weight| ArrivalWant { second, latest, weight };
        let mut b = Bookings::from_counts([(10, 3)]);
        // The heavy one does not fit in 10's last unit and moves to 11: the light one after it
        // may not take 10 (it would arrive before a better-ranked job of its second).
        assert_eq!(b.book_all(4, &[w(10, 100, 2), w(10, 100, 1)]), vec![Some(11), Some(11)]);
        // A want of a later second is not held by an earlier second's floor past its own.
        let mut b = Bookings::from_counts([(10, 3)]);
        assert_eq!(b.book_all(4, &[w(10, 100, 2), w(12, 100, 1)]), vec![Some(11), Some(12)]);
        // No room up to `latest` for the better one: the worse one of that second waits too.
        let mut b = Bookings::from_counts([(10, 3)]);
        assert_eq!(b.book_all(4, &[w(10, 10, 2), w(10, 10, 1)]), vec![None, None]);
        // Across calls, a run keeps its floors.
        let mut floors = Floors::default();
        floors.record(w(10, 100, 2), Some(13));
        assert_eq!(floors.raise(w(10, 100, 1)).second, 13);
        assert_eq!(floors.raise(w(9, 100, 1)).second, 9, "an earlier second is not held");
        assert_eq!(floors.raise(w(20, 100, 1)).second, 20);
    }
}
