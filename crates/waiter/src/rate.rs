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

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

/// One arrival to book: its own second, and the latest second it may move to (Unix seconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArrivalWant {
    pub second: i64,
    pub latest: i64,
}

/// A queue's bookings: messages booked per arrival second, from the current second on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bookings(BTreeMap<i64, u32>);

impl Bookings {
    pub fn from_counts(counts: impl IntoIterator<Item = (i64, u32)>) -> Self {
        Self(counts.into_iter().filter(|(_, n)| *n > 0).collect())
    }

    pub fn counts(&self) -> impl Iterator<Item = (i64, u32)> + '_ {
        self.0.iter().map(|(s, n)| (*s, *n))
    }

    /// Seconds already past can take no more arrivals: forgets them.
    pub fn forget_before(&mut self, now: DateTime<Utc>) {
        self.0 = self.0.split_off(&now.timestamp());
    }

    /// Books one arrival: in its own second if that has room, else in the first later second
    /// that has. The booked second, or `None` (nothing booked) when no second up to `latest`
    /// has room.
    pub fn book(&mut self, rate: u32, want: ArrivalWant) -> Option<i64> {
        let rate = rate.max(1);
        let mut second = want.second;
        while second <= want.latest {
            let n = self.0.entry(second).or_insert(0);
            if *n < rate {
                *n += 1;
                return Some(second);
            }
            second += 1;
        }
        None
    }

    /// Books each want in order (see `book`).
    pub fn book_all(&mut self, rate: u32, wants: &[ArrivalWant]) -> Vec<Option<i64>> {
        wants.iter().map(|w| self.book(rate, *w)).collect()
    }

    /// Gives back a booking that was not used.
    pub fn release(&mut self, second: i64) {
        if let Some(n) = self.0.get_mut(&second) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.0.remove(&second);
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
        ArrivalWant { second, latest }
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
        b.release(107);
        b.release(107);
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
        b.release(6);
        assert_eq!(b.counts().collect::<Vec<_>>(), vec![(5, 2)]);
        assert_eq!(Bookings::from_counts([(5, 2), (7, 0)]), b);
    }
}
