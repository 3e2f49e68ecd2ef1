//! The next occurrences of a schedule, as `preview` shows them: each instant, its local time in
//! the schedule's zone, and whether a clock change moved it off the time its rule names.

use chrono::{DateTime, FixedOffset, Utc};
use chrono_tz::Tz;

use super::{Every, Series};

/// The most occurrences one preview lists.
pub const MAX_PREVIEW: usize = 100;
/// What a preview lists when not told.
pub const DEFAULT_PREVIEW: usize = 10;

/// One occurrence as a preview shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Previewed {
    pub at: DateTime<Utc>,
    /// `at` in the schedule's zone (UTC for `every_s` without one).
    pub local: DateTime<FixedOffset>,
    /// A clock change moved it: the local time its rule names did not exist that day (02:30 on
    /// a spring-forward night fires at 03:00).
    pub shifted: bool,
}

/// Up to `n` occurrences of `series` from `first` (an occurrence, before windows), within its
/// `until` and the occurrences its `count` leaves; `zone` shows `every_s` ones (a cron's own
/// zone shows a cron's).
pub fn preview(series: &Series, first: DateTime<Utc>, zone: Tz, n: usize) -> Vec<Previewed> {
    let rule = series.rule(first);
    let left = series.count.map(|c| c.saturating_sub(series.occurrences));
    let limit = left.map_or(n, |l| n.min(usize::try_from(l).unwrap_or(usize::MAX)));
    let mut out = Vec::with_capacity(limit);
    let mut next = Some(first);
    while let Some(at) = next.filter(|t| out.len() < limit && series.until.is_none_or(|u| *t <= u)) {
        out.push(previewed(&series.every, at, zone));
        next = rule.after(at);
    }
    out
}

fn previewed(every: &Every, at: DateTime<Utc>, zone: Tz) -> Previewed {
    let (zone, shifted) = match every {
        Every::Cron(cron, z) => {
            let local = at.with_timezone(z).naive_local();
            (
                *z,
                !(cron.matches_date(local.date()) && cron.matches_time(local.time())),
            )
        }
        Every::Seconds(_) | Every::Rate(_) => (zone, false),
    };
    Previewed {
        at,
        local: at.with_timezone(&zone).fixed_offset(),
        shifted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CatchUp, Cron};

    fn series(every: Every) -> Series {
        Series {
            every,
            until: None,
            count: None,
            catch_up: CatchUp::One,
            occurrences: 0,
            held: None,
            extra: crate::Extra::default(),
        }
    }

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).expect("time").with_timezone(&Utc)
    }

    #[test]
    fn a_time_a_clock_change_skips_is_shown_moved_and_marked() {
        let berlin: Tz = "Europe/Berlin".parse().expect("zone");
        let s = series(Every::Cron(Cron::parse("30 2 * * *").expect("cron"), berlin));
        let first = s.first(t("2027-03-27T00:00:00Z")).expect("first");
        let got = preview(&s, first, berlin, 3);
        let shown: Vec<(String, bool)> = got.iter().map(|p| (p.local.to_rfc3339(), p.shifted)).collect();
        assert_eq!(
            shown,
            [
                ("2027-03-27T02:30:00+01:00".to_owned(), false),
                ("2027-03-28T03:00:00+02:00".to_owned(), true),
                ("2027-03-29T02:30:00+02:00".to_owned(), false),
            ]
        );
    }

    #[test]
    fn a_preview_keeps_to_until_and_to_what_count_leaves() {
        let start = t("2027-01-01T00:00:00Z");
        let mut s = series(Every::Seconds(3600));
        s.count = Some(5);
        s.occurrences = 3;
        assert_eq!(preview(&s, start, Tz::UTC, 10).len(), 2);
        s.count = None;
        s.until = Some(start + chrono::TimeDelta::hours(4));
        let got = preview(&s, start, Tz::UTC, 10);
        assert_eq!(got.len(), 5, "every hour from the start through until");
        assert!(got
            .iter()
            .all(|p| !p.shifted && p.local.offset().local_minus_utc() == 0));
    }
}
