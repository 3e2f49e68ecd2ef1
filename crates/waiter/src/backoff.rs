//! The retry schedule: exponential backoff, optionally jittered.

use chrono::TimeDelta;
use sha2::{Digest, Sha256};

/// The schedule of attempts, every field given or defaulted (ranges are checked by `wire`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    pub base_s: u64,
    pub factor: f64,
    pub max_s: u64,
    pub jitter: bool,
}

impl Backoff {
    /// Seconds before the attempt after `failed`: `min(max_s, base_s × factor^(failed−1))`.
    /// Computed in floating point, so a high attempt saturates at `max_s` instead of overflowing.
    pub fn ceiling_s(&self, failed: u32) -> f64 {
        let exponent = i32::try_from(failed.saturating_sub(1)).unwrap_or(i32::MAX);
        let d = self.base_s as f64 * self.factor.powi(exponent);
        let max = self.max_s as f64;
        if d.is_finite() {
            d.min(max)
        } else {
            max
        }
    }

    /// The delay before the attempt after `failed`. With jitter, `draw` (in `[0, 1)`) places it
    /// uniformly in `[d/2, d]`.
    pub fn delay(&self, failed: u32, draw: f64) -> TimeDelta {
        let d = self.ceiling_s(failed);
        let s = if self.jitter {
            d / 2.0 + draw.clamp(0.0, 1.0) * d / 2.0
        } else {
            d
        };
        TimeDelta::microseconds((s * 1e6).round() as i64)
    }
}

/// A draw in `[0, 1)` from the job and the attempt: jobs that failed together are spread, and
/// the same `retry` (a consumer retrying its call) draws the same delay.
pub fn draw(job_id: &str, failed: u32) -> f64 {
    let digest = Sha256::new()
        .chain_update(job_id.as_bytes())
        .chain_update([0])
        .chain_update(failed.to_be_bytes())
        .finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    // The top 53 bits: every value exactly representable, uniform in [0, 1).
    (u64::from_be_bytes(first) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backoff(base_s: u64, factor: f64, max_s: u64, jitter: bool) -> Backoff {
        Backoff {
            base_s,
            factor,
            max_s,
            jitter,
        }
    }

    #[test]
    fn delays_grow_by_the_factor_up_to_max_s() {
        let b = backoff(30, 2.0, 3600, false);
        let secs: Vec<i64> = (1..=10).map(|n| b.delay(n, 0.5).num_seconds()).collect();
        assert_eq!(secs, [30, 60, 120, 240, 480, 960, 1920, 3600, 3600, 3600]);
        let fixed = backoff(5, 1.0, 5, false);
        assert!((1..100).all(|n| fixed.delay(n, 0.0) == TimeDelta::seconds(5)));
        assert_eq!(backoff(2, 1.5, 100, false).ceiling_s(3), 4.5);
    }

    #[test]
    fn high_attempts_saturate_at_max_s_without_overflow() {
        let b = backoff(86_400, 10.0, 31_536_000, false);
        for n in [20, 400, 10_000, u32::MAX] {
            assert_eq!(b.delay(n, 0.0), TimeDelta::seconds(31_536_000), "attempt {n}");
        }
    }

    #[test]
    fn jitter_stays_in_the_upper_half_and_spreads_over_it() {
        let b = backoff(100, 1.0, 100, true);
        let draws: Vec<f64> = (0..2000).map(|i| draw(&format!("job-{i}"), 1)).collect();
        assert!(draws.iter().all(|d| (0.0..1.0).contains(d)));
        let delays: Vec<f64> = draws.iter().map(|d| b.delay(1, *d).as_seconds_f64()).collect();
        assert!(delays.iter().all(|d| (50.0..=100.0).contains(d)), "{delays:?}");
        // Every tenth of the range is hit, none by more than twice its share.
        let mut tenths = [0usize; 10];
        for d in &delays {
            tenths[(((d - 50.0) / 5.0) as usize).min(9)] += 1;
        }
        assert!(tenths.iter().all(|n| (100..=400).contains(n)), "{tenths:?}");
        assert_eq!(b.delay(1, 0.0), TimeDelta::seconds(50));
        assert_eq!(b.delay(1, 1.0), TimeDelta::seconds(100));
    }

    #[test]
    fn the_same_retry_draws_the_same_delay() {
        assert_eq!(draw("o-1", 3), draw("o-1", 3));
        assert_ne!(draw("o-1", 3), draw("o-1", 4));
        assert_ne!(draw("o-1", 3), draw("o-2", 3));
    }
}
