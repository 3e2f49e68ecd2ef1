//! `WAITER_MAX_RATE`: at most this many of the poller's messages arrive in any one second, per
//! queue.
//!
//! The budget is kept by arrival second, not by send instant: a standard-queue job is often sent
//! ahead with `DelaySeconds`, so a thundering herd due at one instant is sent over many runs'
//! lookahead but arrives at once. A job whose arrival second is full moves to the first second
//! with room: a standard-queue message by a longer `DelaySeconds` (nothing is held in the run),
//! a FIFO message (no per-message delay) by holding its send. The budget is per poller process:
//! two pollers running at once each have their own.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use chrono::{DateTime, Utc};

use crate::config::QueueName;

#[derive(Debug)]
pub struct ArrivalBudget {
    rate: u32,
    /// Per queue: messages booked per arrival second (Unix seconds), from the current second on.
    booked: Mutex<HashMap<QueueName, BTreeMap<i64, u32>>>,
}

impl ArrivalBudget {
    pub fn new(rate: u32) -> Self {
        Self {
            rate: rate.max(1),
            booked: Mutex::default(),
        }
    }

    /// Books one arrival for a message that would arrive at `arrival`: in its own second if that
    /// has room, else in the first later second that has. Returns the booked second (Unix
    /// seconds), or `None` (nothing booked) when no second up to `latest` has room.
    pub fn book(&self, queue: &QueueName, arrival: DateTime<Utc>, latest: i64, now: DateTime<Utc>) -> Option<i64> {
        let mut booked = self.booked.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let seconds = booked.entry(queue.clone()).or_default();
        // Seconds already past can take no more arrivals: forget them.
        *seconds = seconds.split_off(&now.timestamp());
        let mut second = arrival.timestamp();
        while second <= latest {
            let n = seconds.entry(second).or_insert(0);
            if *n < self.rate {
                *n += 1;
                return Some(second);
            }
            second += 1;
        }
        None
    }

    /// Gives back a booking that was not used.
    pub fn release(&self, queue: &QueueName, second: i64) {
        let mut booked = self.booked.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = booked.get_mut(queue).and_then(|s| s.get_mut(&second)) {
            *n = n.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64, ms: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(s * 1000 + ms).expect("time")
    }

    #[test]
    fn a_full_second_moves_arrivals_to_the_next_seconds_with_room() {
        let q = QueueName::parse("orders").expect("name");
        let budget = ArrivalBudget::new(3);
        let now = at(100, 0);
        let seconds: Vec<Option<i64>> = (0..7).map(|_| budget.book(&q, at(105, 500), 200, now)).collect();
        assert_eq!(
            seconds,
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
        // Another queue has its own budget.
        let other = QueueName::parse("billing").expect("name");
        assert_eq!(budget.book(&other, at(105, 0), 200, now), Some(105));
        // Nothing up to `latest` has room: nothing is booked.
        assert_eq!(budget.book(&q, at(105, 0), 106, now), None);
        assert_eq!(budget.book(&q, at(107, 0), 200, now), Some(107));
        budget.release(&q, 107);
        budget.release(&q, 107);
        // 107 holds none now: three fit again before 108 is used.
        for _ in 0..3 {
            assert_eq!(budget.book(&q, at(107, 0), 200, now), Some(107));
        }
        assert_eq!(budget.book(&q, at(107, 0), 200, now), Some(108));
    }

    #[test]
    fn past_seconds_are_forgotten() {
        let q = QueueName::parse("orders").expect("name");
        let budget = ArrivalBudget::new(1);
        assert_eq!(budget.book(&q, at(10, 0), 100, at(10, 0)), Some(10));
        assert_eq!(budget.book(&q, at(10, 0), 100, at(10, 0)), Some(11));
        assert_eq!(budget.book(&q, at(12, 0), 100, at(12, 0)), Some(12));
        let booked = budget.booked.lock().expect("lock");
        assert_eq!(booked[&q].keys().copied().collect::<Vec<_>>(), vec![12]);
    }
}
