//! The days an EventBridge Scheduler `cron(...)` fires on: its years, and the one day field
//! that is not `?`, with AWS's `L`, `W` and `#`.

use chrono::{Datelike, Months, NaiveDate};

use crate::fields::Bits;

/// The years a `cron(...)` may name.
pub(crate) const FIRST_YEAR: u32 = 1970;
pub(crate) const LAST_YEAR: u32 = 2199;

/// The days an EventBridge `cron(...)` fires on (besides its months).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AwsDates {
    years: Years,
    days: Days,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Days {
    /// Day-of-week is `?`.
    Month(MonthDays),
    /// Day-of-month is `?`.
    Week(WeekDays),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MonthDays {
    Days(Bits),
    Last,
    LastWeekday,
    /// The weekday nearest this day, within the month (none where the month is shorter).
    NearestWeekday(u32),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WeekDays {
    /// Days of the week, 1 = Sunday.
    Days(Bits),
    /// The month's last such day.
    Last(u32),
    /// The month's nth such day.
    Nth(u32, u32),
}

/// Years 1970–2199, as bits from 1970.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Years([u64; 4]);

impl Years {
    pub(crate) fn of(years: &[u32]) -> Self {
        let mut bits = [0u64; 4];
        for y in years {
            let i = y - FIRST_YEAR;
            bits[(i / 64) as usize] |= 1 << (i % 64);
        }
        Self(bits)
    }

    fn has(&self, year: i32) -> bool {
        u32::try_from(year)
            .ok()
            .filter(|y| (FIRST_YEAR..=LAST_YEAR).contains(y))
            .is_some_and(|y| {
                let i = y - FIRST_YEAR;
                self.0[(i / 64) as usize] & (1 << (i % 64)) != 0
            })
    }
}

impl AwsDates {
    pub(crate) fn new(years: Years, days: Days) -> Self {
        Self { years, days }
    }

    /// Whether a local date is one of its days (its month is checked by the caller).
    pub(crate) fn matches(&self, date: NaiveDate) -> bool {
        if !self.years.has(date.year()) {
            return false;
        }
        let day = date.day();
        let last = last_day(date);
        // 1 = Sunday, as AWS counts.
        let weekday = date.weekday().number_from_sunday();
        match &self.days {
            Days::Month(MonthDays::Days(bits)) => bits.has(day),
            Days::Month(MonthDays::Last) => day == last,
            Days::Month(MonthDays::LastWeekday) => Some(day) == nearest_weekday(date, last, last),
            Days::Month(MonthDays::NearestWeekday(n)) => Some(day) == nearest_weekday(date, *n, last),
            Days::Week(WeekDays::Days(bits)) => bits.has(weekday),
            Days::Week(WeekDays::Last(d)) => weekday == *d && day + 7 > last,
            Days::Week(WeekDays::Nth(d, n)) => weekday == *d && (day - 1) / 7 + 1 == *n,
        }
    }
}

/// The month's last day.
fn last_day(date: NaiveDate) -> u32 {
    date.with_day(1)
        .and_then(|first| first.checked_add_months(Months::new(1)))
        .and_then(|next| next.pred_opt())
        .map_or(31, |d| d.day())
}

/// The weekday (Monday to Friday) nearest day `n` of `date`'s month, not leaving the month:
/// a Saturday moves to the Friday before (the 1st to Monday the 3rd), a Sunday to the Monday
/// after (the last day to the Friday before). `None` where the month has no day `n`.
fn nearest_weekday(date: NaiveDate, n: u32, last: u32) -> Option<u32> {
    let target = date.with_day(n)?;
    Some(match target.weekday().number_from_sunday() {
        7 if n == 1 => 3,
        7 => n - 1,
        1 if n == last => n - 2,
        1 => n + 1,
        _ => n,
    })
}
