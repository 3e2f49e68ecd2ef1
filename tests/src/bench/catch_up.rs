//! What catching a series up costs the poller in CPU (issue 60, defect 9): the passes a run makes
//! over a `* * * * *` series found far behind, timed on this thread with no I/O. Under `all` a run
//! makes one pass per occurrence it sends (up to `MAX_CATCH_UP_PER_RUN`); under `one` and `skip`
//! one pass counts every missed occurrence (up to `MAX_COUNTED_MISSES`).

use std::time::Instant;

use chrono::{DateTime, TimeDelta, Utc};
use serde::Serialize;
use waiter::repeat::{CatchUp, Cron, Every, Series, MAX_CATCH_UP_PER_RUN};

#[derive(Debug, Clone, Serialize)]
pub struct CatchUpCpu {
    pub expression: String,
    pub behind: u64,
    /// `all`: the passes of one run, the occurrences they chose, and the CPU they took.
    pub all_passes: usize,
    pub all_ms: f64,
    /// `one`: one pass over every missed occurrence, what it left unsent, and its CPU.
    pub one_skipped: u64,
    pub one_ms: f64,
}

/// A `* * * * *` series `behind` minutes late, caught up as a run does it.
pub fn catch_up_cpu(behind: u64) -> CatchUpCpu {
    let expression = "* * * * *";
    let series = |catch_up| Series {
        every: Every::Cron(Cron::parse(expression).expect("cron"), chrono_tz::UTC),
        until: None,
        count: None,
        catch_up,
        occurrences: 0,
        held: None,
        extra: Default::default(),
    };
    let now: DateTime<Utc> = DateTime::from_timestamp(1_800_000_000, 0).expect("time");
    let start = now - TimeDelta::minutes(behind as i64);
    let all = series(CatchUp::All);
    let clock = Instant::now();
    let pass = waiter::repeat::Pass::new(now, None);
    let (mut from, mut all_passes) = (start, 0);
    while all_passes < MAX_CATCH_UP_PER_RUN {
        let step = all.step(from, None, pass);
        let (Some(sent), Some(next)) = (step.send, step.next) else {
            break;
        };
        assert_eq!(sent, from, "all sends each missed occurrence in order");
        all_passes += 1;
        if next > pass.on_time_from {
            break;
        }
        from = next;
    }
    let all_ms = clock.elapsed().as_secs_f64() * 1e3;
    let clock = Instant::now();
    let one = series(CatchUp::One).step(start, None, pass);
    let one_ms = clock.elapsed().as_secs_f64() * 1e3;
    CatchUpCpu {
        expression: expression.to_owned(),
        behind,
        all_passes,
        all_ms,
        one_skipped: one.skipped,
        one_ms,
    }
}
