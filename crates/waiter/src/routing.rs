//! The one routing rule and the one shard rule.

use chrono::{DateTime, Utc};

use crate::job::Job;
use crate::limits::SQS_MAX_DELAY_SECONDS;
use crate::time::seconds_between;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// SendMessage now. `None` means no DelaySeconds (FIFO).
    Direct { delay_seconds: Option<u32> },
    /// Store it; the poller hands it over when due.
    Store,
}

/// Standard queues: a delay of at most `direct_max_delay` goes straight to SQS, rounded *up* to
/// whole seconds (never early, up to 1 s late). FIFO queues take no per-message delay, so only a
/// job due now goes direct. A series is always stored: it is the item that moves on.
pub fn route(job: &Job, now: DateTime<Utc>, direct_max_delay: u32) -> Route {
    if job.repeat.is_some() {
        return Route::Store;
    }
    let remaining = seconds_between(now, job.perform_at);
    if job.queue.is_fifo() {
        // About to expire: stored, the poller drops it (or sends it) at the real send instant.
        return if remaining <= 0.0 && !job.expires_in_flight(now) {
            Route::Direct { delay_seconds: None }
        } else {
            Route::Store
        };
    }
    let delay = whole_seconds_up(remaining);
    // Rounding up must not carry the job past its expiry; stored, the poller sends it exactly.
    let arrives_expired = i64::try_from(delay)
        .ok()
        .and_then(chrono::TimeDelta::try_seconds)
        .and_then(|d| now.checked_add_signed(d))
        .is_some_and(|arrival| job.expires_in_flight(arrival));
    if delay <= u64::from(direct_max_delay.min(SQS_MAX_DELAY_SECONDS)) && !arrives_expired {
        Route::Direct {
            delay_seconds: Some(delay as u32),
        }
    } else {
        Route::Store
    }
}

/// The instant, no earlier than `now` and within the next second, at which the time left until
/// `perform_at` is a whole number of seconds (capped at the SQS maximum). Sending then makes
/// `DelaySeconds` exact instead of up to a second late.
pub fn aligned_send_instant(perform_at: DateTime<Utc>, now: DateTime<Utc>) -> DateTime<Utc> {
    if perform_at <= now {
        return now;
    }
    let remaining_us = (perform_at - now).num_microseconds().unwrap_or(i64::MAX);
    let whole_s = (remaining_us / 1_000_000).min(i64::from(SQS_MAX_DELAY_SECONDS));
    (perform_at - chrono::TimeDelta::seconds(whole_s)).max(now)
}

/// The `DelaySeconds` for a message sent at `sent_at`: the time left rounded up, so never early.
pub fn delay_for(perform_at: DateTime<Utc>, sent_at: DateTime<Utc>) -> u32 {
    whole_seconds_up(seconds_between(sent_at, perform_at)).min(u64::from(SQS_MAX_DELAY_SECONDS)) as u32
}

/// Rounds a non-negative remaining time up to whole seconds; a past time is 0.
pub fn whole_seconds_up(remaining: f64) -> u64 {
    if remaining <= 0.0 {
        0
    } else {
        // Times have microsecond resolution; 1 ns of slack absorbs float noise only.
        (remaining - 1e-9).ceil().max(0.0) as u64
    }
}

/// The shard a job id lives in: FNV-1a, stable across releases and platforms.
pub fn shard_for(job_id: &str, shards: u32) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in job_id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % u64::from(shards.max(1))) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::QueueName;
    use chrono::TimeDelta;

    fn job(queue: &str, perform_at: DateTime<Utc>) -> Job {
        Job {
            on_duplicate: Default::default(),
            queue: QueueName::parse(queue).unwrap(),
            job_id: "j".into(),
            job_id_given: false,
            message_body: "b".into(),
            message_attributes: Default::default(),
            perform_at,
            expires_at: None,
            message_group_id: None,
            message_deduplication_id: None,
            windows: None,
            priority: sqs_waiter_contract::DEFAULT_PRIORITY,
            weight: sqs_waiter_contract::DEFAULT_WEIGHT,
            attempt: 1,
            names_itself: false,
            trace_header: None,
            repeat: None,
            occurrence: None,
            tags: Default::default(),
        }
    }

    #[test]
    fn standard_routes_by_delay_rounded_up() {
        let now = Utc::now();
        let at = |ms| now + TimeDelta::milliseconds(ms);
        assert_eq!(
            route(&job("q", now), now, 900),
            Route::Direct { delay_seconds: Some(0) }
        );
        assert_eq!(
            route(&job("q", at(1)), now, 900),
            Route::Direct { delay_seconds: Some(1) }
        );
        assert_eq!(
            route(&job("q", at(900_000)), now, 900),
            Route::Direct {
                delay_seconds: Some(900)
            }
        );
        assert_eq!(route(&job("q", at(900_001)), now, 900), Route::Store);
        assert_eq!(
            route(&job("q", at(10_000)), now, 10),
            Route::Direct {
                delay_seconds: Some(10)
            }
        );
        assert_eq!(route(&job("q", at(10_500)), now, 10), Route::Store);
        assert_eq!(route(&job("q", at(1)), now, 0), Route::Store);
        let mut expiring = job("q", at(500));
        expiring.expires_at = Some(at(800));
        assert_eq!(
            route(&expiring, now, 900),
            Route::Store,
            "a 1 s rounded delay would arrive expired"
        );
        expiring.expires_at = Some(at(1100));
        assert_eq!(
            route(&expiring, now, 900),
            Route::Store,
            "arriving within the send allowance of its expiry"
        );
        expiring.expires_at = Some(at(1200));
        assert_eq!(route(&expiring, now, 900), Route::Direct { delay_seconds: Some(1) });
    }

    #[test]
    fn fifo_only_goes_direct_when_due() {
        let now = Utc::now();
        assert_eq!(
            route(&job("q.fifo", now), now, 900),
            Route::Direct { delay_seconds: None }
        );
        assert_eq!(
            route(&job("q.fifo", now + TimeDelta::seconds(1)), now, 900),
            Route::Store
        );
    }

    #[test]
    fn shards_are_stable_and_spread() {
        assert_eq!(shard_for("invoice-42", 1), 0);
        assert_eq!(shard_for("invoice-42", 8), shard_for("invoice-42", 8));
        let mut counts = [0u32; 4];
        for i in 0..4000 {
            counts[shard_for(&format!("job-{i}"), 4) as usize] += 1;
        }
        assert!(counts.iter().all(|c| (800..1200).contains(c)), "{counts:?}");
    }

    #[test]
    fn rounding_up() {
        assert_eq!(whole_seconds_up(-3.0), 0);
        assert_eq!(whole_seconds_up(0.0), 0);
        assert_eq!(whole_seconds_up(0.001), 1);
        assert_eq!(whole_seconds_up(5.0), 5);
        assert_eq!(whole_seconds_up(5.000001), 6);
        assert_eq!(whole_seconds_up(5.01), 6);
    }
}
