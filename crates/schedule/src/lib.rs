//! Recurring jobs (issue 47): a series is one job whose `perform_at` is its next occurrence.
//! This module is the pure part: the rule (`cron` in a time zone, or `every_s`), the next
//! occurrence with the contract's clock-change rules, and which occurrences a run sends under
//! each `catch_up` policy. Storing, sending and moving a series build on it.

mod aws;
pub mod cron;
mod days;
mod fields;
mod preview;
mod series;

use chrono::{DateTime, Days, LocalResult, NaiveDate, NaiveDateTime, TimeDelta, TimeZone, Utc};
use chrono_tz::Tz;

pub use aws::{parse_at, Expression, Rate};
pub use cron::Cron;
pub use preview::{preview, Previewed, DEFAULT_PREVIEW, MAX_PREVIEW};
pub use series::{Every, Extra, Occurrence, Series, Step};

/// Without a recent previous run of its partition to go by, an occurrence found this long
/// after its instant is missed (`catch_up` decides): the poller's interval.
pub const MISSED_AFTER: TimeDelta = TimeDelta::seconds(60);
/// A partition's previous run that started longer than this before a run (three times the
/// poller's interval) leaves an outage between them: the first run after it goes by
/// `MISSED_AFTER`. Within it, an occurrence is missed only if the previous run started after it.
pub const MAX_RUN_GAP: TimeDelta = TimeDelta::seconds(180);
/// How long before the previous run's start an occurrence may be and still be on time: that
/// run's index read may not have shown it yet (GSIs lag), and its clock is another Lambda's.
pub const FOUND_SLACK: TimeDelta = TimeDelta::seconds(10);
/// Missed occurrences `catch_up: all` sends per series in one run; the rest wait for the next.
pub const MAX_CATCH_UP_PER_RUN: usize = 1000;
/// How far a cron's next (or last) date is searched: one whole Gregorian cycle, 400 years, after
/// which dates and weekdays repeat (146,097 days are 20,871 weeks), so a date it matches is
/// found however far it is (`0 0 29 2 */7`, a 29 February that is a Sunday, comes 28 or 40
/// years apart), and one not found in the cycle never comes. Two days more for the day searched
/// on either side. A search walks only the days: a date test is a few bit tests.
const SEARCH_DAYS: u64 = 146_097 + 2;
/// Gaps end within a day (Samoa skipped 30 December 2011 whole): minutes stepped through one.
const MAX_GAP_MINUTES: u32 = 25 * 60;

/// How a series repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// A cron expression read in a time zone.
    Cron(Cron, Tz),
    /// Every so many seconds from the series' start; the zone does not matter.
    Every { seconds: u32, start: DateTime<Utc> },
}

/// What a series does with occurrences found more than `MISSED_AFTER` late (the contract's).
pub use sqs_waiter_contract::CatchUp;

impl Rule {
    /// The first occurrence at or after `t`; `None` when there is none (a cron whose dates never
    /// come, which `Cron::parse` already refuses, or a date past chrono's range).
    pub fn at_or_after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            Rule::Cron(cron, zone) => cron_at_or_after(cron, *zone, t),
            Rule::Every { seconds, start } => {
                if t <= *start {
                    return Some(*start);
                }
                let step = i64::from(*seconds) * 1_000_000;
                let since = (t - *start).num_microseconds()?;
                let steps = since.div_euclid(step) + i64::from(since.rem_euclid(step) != 0);
                start.checked_add_signed(TimeDelta::microseconds(steps.checked_mul(step)?))
            }
        }
    }

    /// The first occurrence strictly after `t`.
    pub fn after(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.at_or_after(t + TimeDelta::microseconds(1))
    }

    /// The last occurrence strictly before `t`.
    pub fn before(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        match self {
            Rule::Cron(cron, zone) => cron_before(cron, *zone, t),
            Rule::Every { seconds, start } => {
                if t <= *start {
                    return None;
                }
                let step = i64::from(*seconds) * 1_000_000;
                let since = (t - *start).num_microseconds()?;
                let steps = (since - 1).div_euclid(step);
                start.checked_add_signed(TimeDelta::microseconds(steps.checked_mul(step)?))
            }
        }
    }
}

/// The instant a local time names in `zone`: the first of two when the clock goes back, and
/// the first instant after the gap when the clock skips it.
pub fn instant_of(zone: Tz, local: NaiveDateTime) -> DateTime<Utc> {
    let mut l = local;
    for _ in 0..=MAX_GAP_MINUTES {
        match zone.from_local_datetime(&l) {
            LocalResult::Single(x) => return x.with_timezone(&Utc),
            LocalResult::Ambiguous(first, _) => return first.with_timezone(&Utc),
            // The gap's minutes: the first valid local minute after it is the change's instant.
            LocalResult::None => l += TimeDelta::minutes(1),
        }
    }
    Utc.from_utc_datetime(&local)
}

/// Candidates in local order map to instants in order (a skipped time to the gap's end, a
/// repeated one to its first instant), so the first candidate at or after `t` is the answer;
/// within a day it is found by bisection.
fn cron_at_or_after(cron: &Cron, zone: Tz, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let times = cron.times();
    // A day early: a gap across midnight moves the day before's times past it.
    let first = t.with_timezone(&zone).date_naive().checked_sub_days(Days::new(1))?;
    for day in 0..SEARCH_DAYS {
        let date = first.checked_add_days(Days::new(day))?;
        if !cron.matches_date(date) {
            continue;
        }
        let (before, at) = split_day(times, zone, date, t);
        if before < times.len() {
            return at(before);
        }
    }
    None
}

/// As `cron_at_or_after`, backwards: the last candidate before `t`.
fn cron_before(cron: &Cron, zone: Tz, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let times = cron.times();
    // A day late: a gap across midnight moves that day's first times back to its end.
    let last = t.with_timezone(&zone).date_naive().checked_add_days(Days::new(1))?;
    for day in 0..SEARCH_DAYS {
        let date = last.checked_sub_days(Days::new(day))?;
        if !cron.matches_date(date) {
            continue;
        }
        let (before, at) = split_day(times, zone, date, t);
        if before > 0 {
            return at(before - 1);
        }
    }
    None
}

/// A matching day's times as instants in `zone` (`at(i)`), and how many of them come before
/// `t`, found by bisection.
fn split_day(
    times: &[(u32, u32)],
    zone: Tz,
    date: NaiveDate,
    t: DateTime<Utc>,
) -> (usize, impl Fn(usize) -> Option<DateTime<Utc>> + '_) {
    let at = move |i: usize| date.and_hms_opt(times[i].0, times[i].1, 0).map(|l| instant_of(zone, l));
    let before = partition_point(times.len(), |i| at(i).is_some_and(|x| x < t));
    (before, at)
}

/// The first index in `0..len` where `before` is false (`before` true on a prefix).
fn partition_point(len: usize, before: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, len);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if before(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Missed occurrences counted one by one for the metrics, at most this many per run (a series
/// every minute that missed a year is reported as this many).
pub const MAX_COUNTED_MISSES: u64 = 100_000;

/// What a partition's run leaves on its lease item for the next run (`Pass`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreviousRun {
    /// When it took the lease.
    pub started: DateTime<Utc>,
    /// `WAITER_MAX_RATE` held due jobs back in it: the occurrences it judged on time from
    /// here stay on time for the next run, which the rate delayed them to.
    pub on_time_from: Option<DateTime<Utc>>,
}

/// The instants one poller pass judges a series by (DESIGN "Missed occurrences").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    pub now: DateTime<Utc>,
    /// Occurrences before this are missed; at or after it, on time.
    pub on_time_from: DateTime<Utc>,
}

impl Pass {
    /// A pass at `now` of a run after the partition's `previous` run. An occurrence that run
    /// could not have found (due after it started, less `FOUND_SLACK`) is found on time by this
    /// one, however late EventBridge's jitter made this run; so is one that run judged on time
    /// and `WAITER_MAX_RATE` held back. Never stricter than `MISSED_AFTER`. After an outage
    /// (`MAX_RUN_GAP`), or with no previous run on record, an occurrence more than
    /// `MISSED_AFTER` old is missed.
    pub fn new(now: DateTime<Utc>, previous: Option<PreviousRun>) -> Self {
        let fixed = now - MISSED_AFTER;
        let on_time_from = match previous.filter(|p| now - p.started <= MAX_RUN_GAP) {
            Some(p) => {
                let found = fixed.min(p.started - FOUND_SLACK);
                p.on_time_from.map_or(found, |held| found.min(held))
            }
            None => fixed,
        };
        Self { now, on_time_from }
    }
}

/// What a run does with a series whose next occurrence is `next`, at `now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Due {
    /// The occurrences to send now, in order.
    pub send: Vec<DateTime<Utc>>,
    /// Missed occurrences the policy leaves unsent (at most `MAX_COUNTED_MISSES`).
    pub skipped: u64,
    /// The series' next occurrence after these; `None` when it has ended (`until` or `count`
    /// reached, or none comes again).
    pub next: Option<DateTime<Utc>>,
}

/// The occurrences from `next` up to `pass.now`, chosen by `catch_up`. One before
/// `pass.on_time_from` is missed; one that is not is always sent. `until` ends the series (an
/// occurrence after it is none); `left` is how many it may still send (`count`).
pub fn due(
    rule: &Rule,
    next: DateTime<Utc>,
    pass: Pass,
    catch_up: CatchUp,
    until: Option<DateTime<Utc>>,
    left: Option<u64>,
) -> Due {
    let within = |t: Option<DateTime<Utc>>| t.filter(|t| until.is_none_or(|u| *t <= u));
    let Pass { now, on_time_from } = pass;
    // `Unknown` is never stored (the function refuses it in a request): read as the default.
    let catch_up = match catch_up {
        CatchUp::Unknown => CatchUp::One,
        known => known,
    };
    let missed = |t: &DateTime<Utc>| *t < on_time_from;
    let mut send = Vec::new();
    let mut skipped = 0u64;
    let mut at = within(Some(next));
    if at.as_ref().is_some_and(missed) {
        match catch_up {
            CatchUp::All => {
                while let Some(t) = at.filter(missed) {
                    if send.len() >= MAX_CATCH_UP_PER_RUN {
                        break;
                    }
                    send.push(t);
                    at = within(rule.after(t));
                }
            }
            CatchUp::One | CatchUp::Skip | CatchUp::Unknown => {
                let mut t = at;
                while let Some(x) = t.filter(missed) {
                    skipped += 1;
                    if skipped >= MAX_COUNTED_MISSES {
                        break;
                    }
                    t = within(rule.after(x));
                }
                if catch_up == CatchUp::One {
                    let end = match until {
                        Some(u) if u < on_time_from => u + TimeDelta::microseconds(1),
                        _ => on_time_from,
                    };
                    if let Some(latest) = rule.before(end).filter(|l| *l >= next) {
                        send.push(latest);
                        skipped -= 1;
                    }
                }
                at = within(rule.at_or_after(on_time_from));
            }
        }
    }
    // Those on time, unless `all` stopped at a run's worth of missed ones.
    if !at.as_ref().is_some_and(missed) {
        while let Some(t) = at.filter(|t| *t <= now) {
            send.push(t);
            at = within(rule.after(t));
        }
    }
    if let Some(l) = left {
        let l = usize::try_from(l).unwrap_or(usize::MAX);
        if send.len() >= l {
            send.truncate(l);
            at = None;
        }
    }
    Due {
        send,
        skipped,
        next: at,
    }
}

#[cfg(test)]
mod tests;
