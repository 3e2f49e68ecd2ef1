//! EventBridge Scheduler's expressions: AWS's documented examples, the refusals, `rate` and
//! `at`, and property tests of `cron(...)` against a reference that reads each field the way
//! AWS's page describes it (the month's days listed and counted, not the parser's rules), day
//! by day over several years and minute by minute across clock changes.

use chrono::{DateTime, Datelike, Days, NaiveDate, NaiveDateTime, TimeDelta, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
use proptest::prelude::*;

use super::*;
use crate::tests::{brute, changes, ZONES};
use crate::Rule;

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).expect("time").to_utc()
}

fn aws(text: &str) -> Cron {
    match Expression::parse(text) {
        Ok(Expression::Cron(c)) => c,
        other => panic!("{text}: {other:?}"),
    }
}

/// Every UTC minute of three weeks from 2027-01-01, as `cron(...)` fires and as the
/// description in AWS's examples table says.
fn check_example(text: &str, says: impl Fn(NaiveDateTime) -> bool) {
    let rule = Rule::Cron(aws(text), Tz::UTC);
    let start = utc("2027-01-01T00:00:00Z");
    let mut want = Vec::new();
    let mut t = start;
    while t < start + TimeDelta::days(21) {
        if says(t.naive_utc()) {
            want.push(t);
        }
        t += TimeDelta::minutes(1);
    }
    let mut got = Vec::new();
    let mut next = rule.at_or_after(start);
    while let Some(at) = next.filter(|t| *t < start + TimeDelta::days(21)) {
        got.push(at);
        next = rule.after(at);
    }
    assert!(!want.is_empty(), "{text}");
    assert_eq!(got, want, "{text}");
}

fn weekday(t: NaiveDateTime) -> chrono::Weekday {
    t.date().weekday()
}

fn monday_to_friday(t: NaiveDateTime) -> bool {
    t.date().weekday().number_from_monday() <= 5
}

#[test]
fn the_examples_on_aws_pages_fire_when_their_descriptions_say() {
    use chrono::Weekday::Mon;
    let at = |h: u32, m: u32| move |t: NaiveDateTime| t.hour() == h && t.minute() == m;
    // "Run at 10:00 am (UTC+0) every day", and the rest of the EventBridge cron table.
    check_example("cron(0 10 * * ? *)", at(10, 0));
    check_example("cron(15 12 * * ? *)", at(12, 15));
    check_example("cron(0 18 ? * MON-FRI *)", |t| at(18, 0)(t) && monday_to_friday(t));
    check_example("cron(0 8 1 * ? *)", |t| at(8, 0)(t) && t.day() == 1);
    check_example("cron(0/15 * * * ? *)", |t| t.minute() % 15 == 0);
    check_example("cron(0/10 * ? * MON-FRI *)", |t| {
        t.minute() % 10 == 0 && monday_to_friday(t)
    });
    check_example("cron(0/5 8-17 ? * MON-FRI *)", |t| {
        t.minute() % 5 == 0 && (8..=17).contains(&t.hour()) && monday_to_friday(t)
    });
    check_example("cron(0/30 20-23 ? * MON-FRI *)", |t| {
        t.minute() % 30 == 0 && t.hour() >= 20 && monday_to_friday(t)
    });
    check_example("cron(0/30 0-2 ? * MON-FRI *)", |t| {
        t.minute() % 30 == 0 && t.hour() <= 2 && monday_to_friday(t)
    });
    // "9:00 AM on the first Monday of each month" (Scheduler's page).
    check_example("cron(0 9 ? * 2#1 *)", |t| {
        at(9, 0)(t) && weekday(t) == Mon && t.day() <= 7
    });
    // The case: 2-6 is Monday to Friday here, where five fields read Tuesday to Saturday.
    check_example("cron(0 9 ? * 2-6 *)", |t| at(9, 0)(t) && monday_to_friday(t));
    // A range running round midnight fires on the listed days' own hours (each field alone).
    check_example("cron(0 22-2 ? * MON *)", |t| {
        t.minute() == 0 && (t.hour() >= 22 || t.hour() <= 2) && weekday(t) == Mon
    });
}

#[test]
fn last_weekday_and_nth_read_as_aws_describes_them() {
    let date = |y, m, d| NaiveDate::from_ymd_opt(y, m, d).expect("date");
    let days = |text: &str, y: i32, m: u32| -> Vec<u32> {
        let c = aws(text);
        (1..=31)
            .filter_map(|d| NaiveDate::from_ymd_opt(y, m, d))
            .filter(|d| c.matches_date(*d))
            .map(|d| d.day())
            .collect()
    };
    assert_eq!(days("cron(0 0 L * ? *)", 2028, 2), vec![29], "a leap February");
    // May 2027 ends on a Monday; January 2027 on a Sunday, so its last weekday is Friday the 29th.
    assert_eq!(days("cron(0 0 LW * ? *)", 2027, 5), vec![31]);
    assert_eq!(days("cron(0 0 LW * ? *)", 2027, 1), vec![29]);
    // 1 May 2027 is a Saturday: 1W does not leave the month, so Monday the 3rd.
    assert_eq!(days("cron(0 0 1W * ? *)", 2027, 5), vec![3]);
    // The 15th of May 2027 is a Saturday (Friday the 14th), of August a Sunday (Monday the 16th).
    assert_eq!(days("cron(0 0 15W * ? *)", 2027, 5), vec![14]);
    assert_eq!(days("cron(0 0 15W * ? *)", 2027, 8), vec![16]);
    // 31 October 2027 is a Sunday: the Friday before, not Monday in November.
    assert_eq!(days("cron(0 0 31W * ? *)", 2027, 10), vec![29]);
    assert_eq!(days("cron(0 0 31W * ? *)", 2027, 11), Vec::<u32>::new(), "no 31st");
    assert_eq!(days("cron(0 0 ? * 6L *)", 2027, 1), vec![29], "the last Friday");
    assert_eq!(days("cron(0 0 ? * FRIL *)", 2027, 1), vec![29]);
    assert_eq!(
        days("cron(0 0 ? * L *)", 2027, 1),
        vec![2, 9, 16, 23, 30],
        "L alone: Saturdays"
    );
    assert_eq!(days("cron(0 0 ? * 3#2 *)", 2027, 1), vec![12], "the second Tuesday");
    assert_eq!(days("cron(0 0 ? * 6#5 *)", 2027, 1), vec![29], "a fifth Friday");
    assert_eq!(days("cron(0 0 ? * 6#5 *)", 2027, 2), Vec::<u32>::new());
    assert_eq!(days("cron(0 0 ? * FRI-MON *)", 2027, 1).len(), 19, "Fri, Sat, Sun, Mon");
    // Years bound it: nothing after the last year named.
    let c = aws("cron(0 0 1 1 ? 2027-2028)");
    assert!(c.matches_date(date(2028, 1, 1)));
    assert!(!c.matches_date(date(2029, 1, 1)));
    let rule = Rule::Cron(c, Tz::UTC);
    assert_eq!(rule.after(utc("2028-01-01T00:00:00Z")), None);
    assert_eq!(
        rule.before(utc("2030-01-01T00:00:00Z")),
        Some(utc("2028-01-01T00:00:00Z"))
    );
}

#[test]
fn what_aws_refuses_is_refused_naming_the_part_and_the_rule() {
    let refused = |text: &str, says: &str| {
        let e = Expression::parse(text).expect_err(text);
        assert!(e.contains(says), "{text}: {e}");
    };
    refused("cron(0 18 ? * MON-FRI)", "needs 6 fields");
    refused("cron(0 18 * * * *)", "one of day-of-month and day-of-week must be ?");
    refused("cron(0 18 1 * MON *)", "must be ?");
    refused("cron(0 18 ? * ? *)", "both ?");
    refused("cron(60 10 * * ? *)", "minutes field \"60\": 60 is out of range 0-59");
    refused("cron(0 24 * * ? *)", "hours field");
    refused("cron(0 10 ? * 0 *)", "day-of-week field \"0\": 0 is out of range 1-7");
    refused("cron(0 10 ? * 8 *)", "out of range 1-7");
    refused(
        "cron(0 10 * * ? 2200)",
        "year field \"2200\": 2200 is out of range 1970-2199",
    );
    refused("cron(0 10 * * ? 1969)", "year field");
    refused("cron(0 10 * * ? 2030-2027)", "runs backwards");
    refused("cron(0 10 ? * 3#1,6#3 *)", "one expression only");
    refused("cron(0 10 ? * 3#6 *)", "1-5");
    refused("cron(0 10 ? * 1/2 *)", "'/' is not allowed here");
    refused("cron(0 10 L * L *)", "must be ?");
    refused("cron(0 ? * * ? *)", "hours field \"?\"");
    refused("cron(0 10 L-2 * ? *)", "stand alone");
    refused("cron(0 10 1,L * ? *)", "stand alone");
    refused("cron(0 10 32W * ? *)", "out of range 1-31");
    refused("cron(0 10 * 13 ? *)", "month field");
    refused("0 10 * * ? *", "is not cron(...) or rate(...)");
    refused("at(2027-01-01T09:00:00)", "one-off job's schedule");
    refused("rate(0 minutes)", "positive whole number");
    refused("rate(-5 minutes)", "positive whole number");
    refused("rate(1.5 hours)", "positive whole number");
    refused("rate(5 minute)", "singular for 1, plural otherwise");
    refused("rate(1 hours)", "singular for 1");
    refused("rate(5 weeks)", "minute(s), hour(s) or day(s)");
    refused("rate(5)", "a value and a unit");
    refused("rate(366 days)", "at most 365 days");
}

#[test]
fn rate_and_at_read_as_aws_writes_them() {
    for (text, seconds) in [
        ("rate(1 minute)", 60),
        ("rate(5 minutes)", 300),
        ("rate(1 hour)", 3_600),
        ("rate(12 hours)", 43_200),
        ("rate(1 day)", 86_400),
        ("rate(365 days)", 31_536_000),
    ] {
        match Expression::parse(text) {
            Ok(Expression::Rate(r)) => assert_eq!((r.seconds(), r.as_str()), (seconds, text)),
            other => panic!("{text}: {other:?}"),
        }
    }
    let at = parse_at("at(2027-01-01T09:00:00)").expect("at");
    assert_eq!(at.to_string(), "2027-01-01 09:00:00");
    for bad in [
        "at(2027-01-01T09:00)",
        "at(2027-01-01 09:00:00)",
        "at(2027-02-30T09:00:00)",
        "at(2027-01-01T09:00:00Z)",
        "2027-01-01T09:00:00",
    ] {
        assert!(parse_at(bad).is_err(), "{bad}");
    }
    let e = parse_at("rate(5 minutes)").expect_err("rate");
    assert!(e.contains("repeat.expression"), "{e}");
}

/// How the reference reads a field: the values it lists, or any.
#[derive(Debug, Clone, Copy)]
enum Values {
    Any,
    Of(&'static [u32]),
}

impl Values {
    fn has(self, v: u32) -> bool {
        match self {
            Values::Any => true,
            Values::Of(list) => list.contains(&v),
        }
    }
}

/// A day field as AWS's page describes it.
#[derive(Debug, Clone, Copy)]
enum DayRef {
    Month(Values),
    LastOfMonth,
    LastWeekdayOfMonth,
    NearestWeekday(u32),
    Week(Values),
    LastInMonth(u32),
    Nth(u32, u32),
}

const MINUTES_REF: &[(&str, Values)] = &[
    ("0", Values::Of(&[0])),
    ("30", Values::Of(&[30])),
    ("0/15", Values::Of(&[0, 15, 30, 45])),
    ("15/50", Values::Of(&[15])),
    ("55-5", Values::Of(&[55, 56, 57, 58, 59, 0, 1, 2, 3, 4, 5])),
    ("*", Values::Any),
];
const HOURS_REF: &[(&str, Values)] = &[
    ("*", Values::Any),
    ("2", Values::Of(&[2])),
    ("9", Values::Of(&[9])),
    ("1-3", Values::Of(&[1, 2, 3])),
    ("22-2", Values::Of(&[22, 23, 0, 1, 2])),
    ("0/6", Values::Of(&[0, 6, 12, 18])),
    ("8-17", Values::Of(&[8, 9, 10, 11, 12, 13, 14, 15, 16, 17])),
];
const DOM_REF: &[(&str, DayRef)] = &[
    ("*", DayRef::Month(Values::Any)),
    ("1", DayRef::Month(Values::Of(&[1]))),
    ("29", DayRef::Month(Values::Of(&[29]))),
    ("31", DayRef::Month(Values::Of(&[31]))),
    ("1,15", DayRef::Month(Values::Of(&[1, 15]))),
    ("28-3", DayRef::Month(Values::Of(&[28, 29, 30, 31, 1, 2, 3]))),
    ("1/10", DayRef::Month(Values::Of(&[1, 11, 21, 31]))),
    ("L", DayRef::LastOfMonth),
    ("LW", DayRef::LastWeekdayOfMonth),
    ("1W", DayRef::NearestWeekday(1)),
    ("15W", DayRef::NearestWeekday(15)),
    ("30W", DayRef::NearestWeekday(30)),
    ("31W", DayRef::NearestWeekday(31)),
];
const DOW_REF: &[(&str, DayRef)] = &[
    ("*", DayRef::Week(Values::Any)),
    ("1", DayRef::Week(Values::Of(&[1]))),
    ("MON-FRI", DayRef::Week(Values::Of(&[2, 3, 4, 5, 6]))),
    ("sat,SUN", DayRef::Week(Values::Of(&[7, 1]))),
    ("FRI-MON", DayRef::Week(Values::Of(&[6, 7, 1, 2]))),
    ("L", DayRef::Week(Values::Of(&[7]))),
    ("6L", DayRef::LastInMonth(6)),
    ("SUNL", DayRef::LastInMonth(1)),
    ("2#1", DayRef::Nth(2, 1)),
    ("MON#1", DayRef::Nth(2, 1)),
    ("3#2", DayRef::Nth(3, 2)),
    ("6#5", DayRef::Nth(6, 5)),
];
const MONTHS_REF: &[(&str, Values)] = &[
    ("*", Values::Any),
    ("FEB", Values::Of(&[2])),
    ("3,10", Values::Of(&[3, 10])),
    ("NOV-FEB", Values::Of(&[11, 12, 1, 2])),
    ("1/3", Values::Of(&[1, 4, 7, 10])),
];
const YEARS_REF: &[(&str, Values)] = &[
    ("*", Values::Any),
    ("2027", Values::Of(&[2027])),
    ("2026-2028", Values::Of(&[2026, 2027, 2028])),
    // `2024/4` runs to 2199; the list reaches past the furthest scan (2038 plus nine years).
    ("2024/4", Values::Of(&[2024, 2028, 2032, 2036, 2040, 2044, 2048, 2052])),
    ("2025,2031", Values::Of(&[2025, 2031])),
];

/// The month's days, in order.
fn month_of(date: NaiveDate) -> Vec<NaiveDate> {
    (1..=31)
        .filter_map(|d| NaiveDate::from_ymd_opt(date.year(), date.month(), d))
        .collect()
}

fn is_weekday(d: &NaiveDate) -> bool {
    d.weekday().number_from_monday() <= 5
}

fn aws_weekday(d: &NaiveDate) -> u32 {
    d.weekday().number_from_sunday()
}

impl DayRef {
    fn matches(self, date: NaiveDate) -> bool {
        let month = month_of(date);
        match self {
            DayRef::Month(v) => v.has(date.day()),
            DayRef::LastOfMonth => month.last() == Some(&date),
            DayRef::LastWeekdayOfMonth => month.iter().rev().find(|d| is_weekday(d)) == Some(&date),
            // The weekday of the month nearest the nth (the 1st on a Saturday: the 3rd).
            DayRef::NearestWeekday(n) => {
                n as usize <= month.len()
                    && month
                        .iter()
                        .filter(|d| is_weekday(d))
                        .min_by_key(|d| (i64::from(d.day()) - i64::from(n)).abs())
                        == Some(&date)
            }
            DayRef::Week(v) => v.has(aws_weekday(&date)),
            DayRef::LastInMonth(w) => month.iter().rev().find(|d| aws_weekday(d) == w) == Some(&date),
            DayRef::Nth(w, n) => month.iter().filter(|d| aws_weekday(d) == w).nth(n as usize - 1) == Some(&date),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Reference {
    minutes: (&'static str, Values),
    hours: (&'static str, Values),
    days: (&'static str, DayRef),
    months: (&'static str, Values),
    years: (&'static str, Values),
    /// Whether `days` is the day-of-week field (day-of-month is then `?`).
    by_week: bool,
}

impl Reference {
    fn text(&self) -> String {
        let (dom, dow) = if self.by_week {
            ("?", self.days.0)
        } else {
            (self.days.0, "?")
        };
        format!(
            "cron({} {} {dom} {} {dow} {})",
            self.minutes.0, self.hours.0, self.months.0, self.years.0
        )
    }

    fn date(&self, d: NaiveDate) -> bool {
        u32::try_from(d.year()).is_ok_and(|y| self.years.1.has(y))
            && self.months.1.has(d.month())
            && self.days.1.matches(d)
    }

    fn minute(&self, t: NaiveDateTime) -> bool {
        self.date(t.date()) && self.hours.1.has(t.hour()) && self.minutes.1.has(t.minute())
    }
}

fn reference() -> impl Strategy<Value = Reference> {
    let sel = |l: &'static [(&'static str, Values)]| proptest::sample::select(l);
    (
        sel(MINUTES_REF),
        sel(HOURS_REF),
        any::<bool>(),
        proptest::sample::select(DOM_REF),
        proptest::sample::select(DOW_REF),
        sel(MONTHS_REF),
        sel(YEARS_REF),
    )
        .prop_map(|(minutes, hours, by_week, dom, dow, months, years)| Reference {
            minutes,
            hours,
            days: if by_week { dow } else { dom },
            months,
            years,
            by_week,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Every day of eight years: a `cron(...)` fires on a date exactly when the reference does.
    #[test]
    fn its_days_are_the_references_over_eight_years(r in reference()) {
        let c = aws(&r.text());
        let first = NaiveDate::from_ymd_opt(2024, 1, 1).expect("date");
        for i in 0..(8 * 366) {
            let d = first + Days::new(i);
            prop_assert_eq!(c.matches_date(d), r.date(d), "{} on {}", r.text(), d);
        }
    }

    /// In UTC the next occurrence is the first minute the reference names, however many years
    /// away (a fifth Friday in February of a leap year comes rarely).
    #[test]
    fn the_next_occurrence_is_the_references_first(r in reference(), minute in 0i64..(14 * 366 * 24 * 60)) {
        let t = utc("2024-01-01T00:00:00Z") + TimeDelta::minutes(minute);
        let rule = Rule::Cron(aws(&r.text()), Tz::UTC);
        let want = (0..(9 * 366)).find_map(|day| {
            let date = t.date_naive() + Days::new(day);
            if !r.date(date) {
                return None;
            }
            (0..24 * 60)
                .map(|m| date.and_hms_opt(m / 60, m % 60, 0).expect("time"))
                .find(|l| *l >= t.naive_utc() && r.minute(*l))
                .map(|l| Utc.from_utc_datetime(&l))
        });
        let ours = rule.at_or_after(t);
        match want {
            Some(w) => prop_assert_eq!(ours, Some(w), "{} from {}", r.text(), t),
            None => prop_assert!(ours.is_none_or(|o| o > t + TimeDelta::days(9 * 365)), "{} from {}: {:?}", r.text(), t, ours),
        }
    }

    /// Across clock changes in zones with every kind of change: the brute-force scan's minute,
    /// with the reference reading the local times.
    #[test]
    fn across_clock_changes_the_next_occurrence_is_the_scans(
        r in reference(), zone in proptest::sample::select(ZONES), year in 2024i32..2032,
        which in any::<prop::sample::Index>(), offset_minutes in 0i64..(2 * 24 * 60),
    ) {
        let zone: Tz = zone.parse().expect("zone");
        let found = changes(zone, year);
        let t = match found.is_empty() {
            false => found[which.index(found.len())] - TimeDelta::minutes(offset_minutes),
            true => Utc.with_ymd_and_hms(year, 3, 1, 0, 0, 0).single().expect("start"),
        };
        let horizon = TimeDelta::days(3);
        let ours = Rule::Cron(aws(&r.text()), zone).at_or_after(t);
        match brute(|l| r.minute(l), zone, t, horizon) {
            Some(want) => prop_assert_eq!(ours, Some(want), "{} in {} from {}", r.text(), zone, t),
            None => prop_assert!(ours.is_none_or(|o| o > t + horizon), "{} in {} from {}: {:?}", r.text(), zone, t, ours),
        }
    }
}
