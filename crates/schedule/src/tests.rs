//! The rule and the next occurrence: the cron grammar and its refusals, the clock-change rules
//! at fixed dates, the catch-up policies, and property tests against a brute-force scan of
//! every UTC minute, in zones with every kind of change.

use chrono::{NaiveDate, Offset, Timelike};
use proptest::prelude::*;

use super::*;

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).expect("time").to_utc()
}

fn cron(expr: &str, zone: &str) -> Rule {
    Rule::Cron(Cron::parse(expr).expect("cron"), zone.parse().expect("zone"))
}

#[test]
fn the_grammar_reads_lists_ranges_steps_and_names() {
    let c = Cron::parse("*/15 9-17 * JAN,jul mon-FRI").expect("cron");
    assert_eq!(c.as_str(), "*/15 9-17 * JAN,jul mon-FRI");
    let times = c.times();
    assert_eq!(times.first(), Some(&(9, 0)));
    assert_eq!(times.last(), Some(&(17, 45)));
    assert_eq!(times.len(), 9 * 4);
    let monday = NaiveDate::from_ymd_opt(2026, 1, 5).expect("date");
    assert!(c.matches_date(monday));
    assert!(!c.matches_date(monday + Days::new(5)), "a Saturday");
    assert!(
        !c.matches_date(NaiveDate::from_ymd_opt(2026, 2, 2).expect("date")),
        "February"
    );
    // `5/20` runs from 5 to the end; 7 is Sunday as 0 is.
    let c = Cron::parse("5/20 0 * * 7").expect("cron");
    assert_eq!(c.times(), vec![(0, 5), (0, 25), (0, 45)]);
    assert!(c.matches_date(NaiveDate::from_ymd_opt(2026, 1, 4).expect("a Sunday")));
}

#[test]
fn both_day_fields_restricted_fire_on_either_and_a_star_field_narrows() {
    // The 13th, or any Friday.
    let either = Cron::parse("0 0 13 * FRI").expect("cron");
    let date = |d| NaiveDate::from_ymd_opt(2026, 2, d).expect("date");
    assert!(either.matches_date(date(13)), "the 13th (a Friday too)");
    assert!(either.matches_date(date(6)), "a Friday");
    assert!(!either.matches_date(date(7)));
    // `*/2` starts with `*`: the day fields combine with AND.
    let both = Cron::parse("0 0 */2 * FRI").expect("cron");
    assert!(both.matches_date(date(13)), "odd and a Friday");
    assert!(!both.matches_date(date(6)), "even");
    assert!(!both.matches_date(date(7)), "odd, a Saturday");
    // The same days written without the `*`: restricted, so either fires (docs/series.md).
    let either = Cron::parse("0 0 1-31/2 * FRI").expect("cron");
    assert!(either.matches_date(date(6)), "a Friday");
    assert!(either.matches_date(date(7)), "an odd day");
    assert!(!either.matches_date(date(8)), "even, a Sunday");
}

#[test]
fn a_date_decades_apart_is_found_however_far_it_is() {
    // Issue 60, defect 8: a 29 February that is a Sunday comes 28 or 40 years apart; the search
    // of 8 years found 2032's, and then the series finished.
    use chrono::{Datelike, Weekday};
    let rule = cron("0 0 29 2 */7", "UTC");
    let sundays: Vec<DateTime<Utc>> = (2026..2300)
        .filter_map(|y| NaiveDate::from_ymd_opt(y, 2, 29))
        .filter(|d| d.weekday() == Weekday::Sun)
        .filter_map(|d| d.and_hms_opt(0, 0, 0))
        .map(|d| d.and_utc())
        .collect();
    assert!(sundays.len() > 6, "{sundays:?}");
    let mut t = utc("2026-01-01T00:00:00Z");
    for (i, sunday) in sundays.iter().enumerate() {
        assert_eq!(rule.at_or_after(t), Some(*sunday), "after {t}");
        if let Some(earlier) = i.checked_sub(1).map(|k| sundays[k]) {
            assert_eq!(rule.before(*sunday), Some(earlier), "before {sunday}");
        }
        t = *sunday + TimeDelta::seconds(1);
    }
}

#[test]
fn bad_expressions_name_the_field_and_the_rule() {
    for (expr, wanted) in [
        ("* * * *", "needs 5 fields"),
        ("* * * * * *", "needs 5 fields"),
        ("60 * * * *", "minute field \"60\": 60 is out of range 0-59"),
        ("* 24 * * *", "hour field"),
        ("* * 0 * *", "day of month field \"0\": 0 is out of range 1-31"),
        ("* * * 13 *", "month field"),
        ("* * * * 8", "day of week field \"8\": 8 is out of range 0-7"),
        ("* * * FOO *", "is not a number or one of JAN"),
        ("5-1 * * * *", "runs backwards"),
        ("*/0 * * * *", "a step must be at least 1"),
        ("1,,2 * * * *", "an empty list item"),
        ("0 0 30 2 *", "matches no date"),
    ] {
        let e = Cron::parse(expr).expect_err(expr);
        assert!(e.contains(wanted), "{expr}: {e}");
    }
    // February 29 comes every four years.
    assert!(Cron::parse("0 0 29 2 *").is_ok());
}

#[test]
fn a_time_the_clock_skips_fires_at_the_first_instant_after_the_gap() {
    // Berlin, 29 March 2026: 02:00 becomes 03:00 (01:00 UTC).
    let r = cron("30 2 * * *", "Europe/Berlin");
    assert_eq!(
        r.at_or_after(utc("2026-03-28T12:00:00Z")),
        Some(utc("2026-03-29T01:00:00Z"))
    );
    assert_eq!(r.after(utc("2026-03-29T01:00:00Z")), Some(utc("2026-03-30T00:30:00Z")));
    // Every quarter hour of the skipped hour is one occurrence at 03:00 (the same instant as
    // 03:00's own), then 03:15.
    let r = cron("*/15 2-3 * * *", "Europe/Berlin");
    assert_eq!(
        r.at_or_after(utc("2026-03-29T00:50:00Z")),
        Some(utc("2026-03-29T01:00:00Z"))
    );
    assert_eq!(r.after(utc("2026-03-29T01:00:00Z")), Some(utc("2026-03-29T01:15:00Z")));
}

#[test]
fn a_time_the_clock_repeats_fires_once_the_first_time() {
    // Berlin, 25 October 2026: 03:00 becomes 02:00 again (01:00 UTC).
    let r = cron("30 2 * * *", "Europe/Berlin");
    assert_eq!(
        r.at_or_after(utc("2026-10-24T12:00:00Z")),
        Some(utc("2026-10-25T00:30:00Z"))
    );
    assert_eq!(
        r.after(utc("2026-10-25T00:30:00Z")),
        Some(utc("2026-10-26T01:30:00Z")),
        "not again at 01:30 UTC, the second 02:30"
    );
    assert_eq!(r.before(utc("2026-10-26T01:30:00Z")), Some(utc("2026-10-25T00:30:00Z")));
}

#[test]
fn lord_howe_moves_its_clock_by_half_an_hour() {
    // Lord Howe Island, 4 October 2026: 02:00 becomes 02:30 (+10:30 to +11:00).
    let r = cron("15 2 * * *", "Australia/Lord_Howe");
    let at = r.at_or_after(utc("2026-10-03T12:00:00Z")).expect("occurrence");
    assert_eq!(
        at.with_timezone(&chrono_tz::Australia::Lord_Howe).time().to_string(),
        "02:30:00"
    );
    assert_eq!(at, utc("2026-10-03T15:30:00Z"));
}

#[test]
fn a_skipped_day_fires_at_the_first_instant_of_the_next() {
    // Samoa crossed the date line at the end of 29 December 2011 (local): the 30th never
    // happened, and 10:00 UTC was 00:00 on the 31st. Its 12:30 fires then, found from the 31st
    // as from before the gap.
    let r = cron("30 12 30 12 *", "Pacific/Apia");
    let gap_end = utc("2011-12-30T10:00:00Z");
    assert_eq!(r.at_or_after(utc("2011-12-30T09:00:00Z")), Some(gap_end));
    assert_eq!(r.at_or_after(gap_end), Some(gap_end));
    // (+14:00 then, Samoa's summer time.)
    assert_eq!(r.after(gap_end), Some(utc("2012-12-29T22:30:00Z")));
}

#[test]
fn every_counts_from_the_start_in_whole_steps() {
    let start = utc("2026-01-01T00:00:00Z");
    let r = Rule::Every { seconds: 3600, start };
    assert_eq!(r.at_or_after(utc("2025-12-31T00:00:00Z")), Some(start));
    assert_eq!(r.at_or_after(start), Some(start));
    assert_eq!(r.after(start), Some(utc("2026-01-01T01:00:00Z")));
    assert_eq!(
        r.at_or_after(utc("2026-01-01T01:00:00.5Z")),
        Some(utc("2026-01-01T02:00:00Z"))
    );
    assert_eq!(r.before(utc("2026-01-01T02:00:00Z")), Some(utc("2026-01-01T01:00:00Z")));
    assert_eq!(r.before(start), None);
}

fn every_minute_from(start: DateTime<Utc>) -> Rule {
    Rule::Every { seconds: 60, start }
}

#[test]
fn missed_occurrences_follow_the_policy_and_those_on_time_always_go() {
    let now = utc("2026-06-01T12:00:00Z");
    let start = now - TimeDelta::minutes(10);
    let r = every_minute_from(start);
    // Eleven occurrences up to now: nine missed (more than 60 s late), two on time.
    let skip = due(&r, start, Pass::new(now, None), CatchUp::Skip, None, None);
    assert_eq!(skip.send, vec![now - TimeDelta::minutes(1), now]);
    assert_eq!((skip.skipped, skip.next), (9, Some(now + TimeDelta::minutes(1))));
    let one = due(&r, start, Pass::new(now, None), CatchUp::One, None, None);
    assert_eq!(
        one.send,
        vec![now - TimeDelta::minutes(2), now - TimeDelta::minutes(1), now]
    );
    assert_eq!(one.skipped, 8);
    let all = due(&r, start, Pass::new(now, None), CatchUp::All, None, None);
    assert_eq!((all.send.len(), all.skipped), (11, 0));
    assert_eq!(all.next, Some(now + TimeDelta::minutes(1)));
}

#[test]
fn an_occurrence_is_missed_only_if_the_previous_run_started_after_it_unless_an_outage_came_between() {
    let now = utc("2026-06-01T12:00:00Z");
    let ran = |started: DateTime<Utc>| PreviousRun {
        started,
        on_time_from: None,
    };
    // No previous run on record: the poller's interval.
    assert_eq!(Pass::new(now, None).on_time_from, now - MISSED_AFTER);
    // The previous run 100 s ago (EventBridge's jitter): what fell due after it started, less
    // the slack for its index read and clock, is on time.
    let previous = now - TimeDelta::seconds(100);
    assert_eq!(Pass::new(now, Some(ran(previous))).on_time_from, previous - FOUND_SLACK);
    // Never stricter than the interval: a run 5 s after the previous one.
    let close = now - TimeDelta::seconds(5);
    assert_eq!(Pass::new(now, Some(ran(close))).on_time_from, now - MISSED_AFTER);
    // The rate held jobs back in the previous run: what it judged on time stays so.
    let held = PreviousRun {
        on_time_from: Some(now - TimeDelta::minutes(30)),
        ..ran(previous)
    };
    assert_eq!(Pass::new(now, Some(held)).on_time_from, now - TimeDelta::minutes(30));
    // Past `MAX_RUN_GAP`, an outage: the interval again.
    let outage = now - MAX_RUN_GAP - TimeDelta::seconds(1);
    assert_eq!(Pass::new(now, Some(ran(outage))).on_time_from, now - MISSED_AFTER);
    let r = every_minute_from(now - TimeDelta::seconds(100));
    let found = due(
        &r,
        now - TimeDelta::seconds(100),
        Pass::new(now, Some(ran(previous))),
        CatchUp::Skip,
        None,
        None,
    );
    assert_eq!((found.send.len(), found.skipped), (2, 0), "both found on time");
}

#[test]
fn catching_up_all_stops_at_a_runs_worth_and_until_and_count_end_the_series() {
    let now = utc("2026-06-01T12:00:00Z");
    let start = now - TimeDelta::minutes(2000);
    let r = every_minute_from(start);
    let all = due(&r, start, Pass::new(now, None), CatchUp::All, None, None);
    assert_eq!(all.send.len(), MAX_CATCH_UP_PER_RUN);
    assert_eq!(all.next, Some(start + TimeDelta::minutes(1000)), "the rest next run");
    // `until` two minutes ago: the on-time ones are past it, the series ends.
    let until = now - TimeDelta::minutes(2);
    let ended = due(&r, start, Pass::new(now, None), CatchUp::One, Some(until), None);
    assert_eq!((ended.send, ended.next), (vec![until], None));
    // One left of `count`: the series ends with it.
    let counted = due(
        &r,
        now - TimeDelta::minutes(1),
        Pass::new(now, None),
        CatchUp::All,
        None,
        Some(1),
    );
    assert_eq!((counted.send, counted.next), (vec![now - TimeDelta::minutes(1)], None));
    // Nothing due yet: nothing sent, the next unchanged.
    let later = now + TimeDelta::minutes(5);
    let idle = due(&r, later, Pass::new(now, None), CatchUp::One, None, None);
    assert_eq!((idle.send.len(), idle.skipped, idle.next), (0, 0, Some(later)));
}

pub(crate) const ZONES: &[&str] = &[
    "UTC",
    "Europe/Berlin",
    "America/New_York",
    "Australia/Sydney",
    "Australia/Lord_Howe",
    "Australia/Adelaide",
    "America/Santiago",
    "America/Havana",
    "America/Sao_Paulo",
    "Asia/Kolkata",
    "Asia/Tehran",
    "Pacific/Apia",
    "Pacific/Chatham",
];

const MINUTES: &[&str] = &["*", "*/15", "0", "30", "0,30", "5-10", "59", "*/7"];
const HOURS: &[&str] = &["*", "0", "1", "2", "3", "2-3", "0-4", "*/6", "23", "1,2,3"];
const DAYS: &[&str] = &["*", "*", "*", "1", "15", "31", "1-7", "*/2"];
const MONTHS: &[&str] = &["*", "*", "*", "3,4,9,10", "*/2", "OCT-DEC"];
const WEEKDAYS: &[&str] = &["*", "*", "*", "MON-FRI", "0", "SUN,SAT", "7"];

/// The reference: every UTC minute from `t` on, up to `horizon`. A minute fires when its local
/// time matches and happens for the first time (not the second pass of a repeated hour), or
/// when a local time that the change just before it skipped matches.
pub(crate) fn brute(
    matches: impl Fn(NaiveDateTime) -> bool,
    zone: Tz,
    t: DateTime<Utc>,
    horizon: TimeDelta,
) -> Option<DateTime<Utc>> {
    let minute = TimeDelta::minutes(1);
    let secs = t.timestamp();
    let aligned = secs.rem_euclid(60) == 0 && t.nanosecond() == 0;
    let mut u = DateTime::from_timestamp(if aligned { secs } else { (secs.div_euclid(60) + 1) * 60 }, 0)?;
    while u <= t + horizon {
        let local = u.with_timezone(&zone).naive_local();
        let before = (u - minute).with_timezone(&zone).naive_local();
        let first_pass = match zone.from_local_datetime(&local) {
            LocalResult::Ambiguous(a, _) => a.with_timezone(&Utc) == u,
            _ => true,
        };
        let mut skipped = before + minute;
        let mut skipped_match = false;
        while skipped < local {
            skipped_match |= matches(skipped);
            skipped += minute;
        }
        if (first_pass && matches(local)) || skipped_match {
            return Some(u);
        }
        u += minute;
    }
    None
}

/// Instants in `year` at which `zone`'s offset changes, to the minute.
pub(crate) fn changes(zone: Tz, year: i32) -> Vec<DateTime<Utc>> {
    let start = Utc.with_ymd_and_hms(year, 1, 1, 0, 0, 0).single().expect("start");
    let offset = |t: DateTime<Utc>| t.with_timezone(&zone).offset().fix();
    let mut out = Vec::new();
    for h in 0..(366 * 24) {
        let (a, b) = (start + TimeDelta::hours(h), start + TimeDelta::hours(h + 1));
        if offset(a) != offset(b) {
            let mut m = a;
            while offset(m) == offset(a) {
                m += TimeDelta::minutes(1);
            }
            out.push(m);
        }
    }
    out
}

pub(crate) fn pick(list: &'static [&'static str]) -> impl Strategy<Value = &'static str> {
    proptest::sample::select(list)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    /// The next occurrence is the brute-force scan's, in many zones and years, half the cases
    /// within two days before one of the year's clock changes.
    #[test]
    fn the_next_occurrence_is_the_first_minute_a_scan_finds(
        fields in (pick(MINUTES), pick(HOURS), pick(DAYS), pick(MONTHS), pick(WEEKDAYS)),
        zone in pick(ZONES),
        year in 2000i32..2040,
        at_change in any::<bool>(),
        which in any::<prop::sample::Index>(),
        offset_minutes in 0i64..(2 * 24 * 60),
        second in 0u32..60,
    ) {
        let expr = format!("{} {} {} {} {}", fields.0, fields.1, fields.2, fields.3, fields.4);
        let Ok(c) = Cron::parse(&expr) else { return Ok(()) };
        let zone: Tz = zone.parse().expect("zone");
        let year_start = Utc.with_ymd_and_hms(year, 1, 1, 0, 0, 0).single().expect("start");
        let found = changes(zone, year);
        let base = match (at_change, found.is_empty()) {
            (true, false) => found[which.index(found.len())] - TimeDelta::minutes(offset_minutes),
            _ => year_start + TimeDelta::minutes(which.index(365 * 24 * 60) as i64),
        };
        let t = base + TimeDelta::seconds(i64::from(second));
        let horizon = TimeDelta::days(3);
        let rule = Rule::Cron(c.clone(), zone);
        let ours = rule.at_or_after(t);
        let matches = |l: NaiveDateTime| c.matches_date(l.date()) && c.matches_time(l.time());
        match brute(matches, zone, t, horizon) {
            Some(want) => prop_assert_eq!(ours, Some(want), "{} in {} from {}", expr, zone, t),
            None => prop_assert!(ours.is_none_or(|o| o > t + horizon), "{} in {} from {}: {:?}", expr, zone, t, ours),
        }
        // `before` and `after` agree with it.
        if let Some(o) = ours {
            prop_assert!(o >= t);
            prop_assert_eq!(rule.before(o + TimeDelta::microseconds(1)), Some(o));
            if let Some(b) = rule.before(o) {
                prop_assert!(b < o);
                prop_assert_eq!(rule.after(b), Some(o), "{} in {}: before {} then after", expr, zone, o);
            }
        }
    }
}
