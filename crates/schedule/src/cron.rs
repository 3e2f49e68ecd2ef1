//! Five-field cron expressions (minute, hour, day of month, month, day of week), as Vixie cron
//! reads them: `*`, lists, ranges, steps (`*/15`, `1-30/2`, `5/20` from 5 to the end) and the
//! names `JAN`–`DEC` and `SUN`–`SAT` (any case); day of week 0–7, both 0 and 7 Sunday. When
//! both day fields are restricted (neither starts with `*`), a day matching either fires.
//! EventBridge Scheduler's six fields (`aws`) share the grammar of their times and months.
//!
//! Written here rather than taken from a crate: the cron crates at hand read six or seven
//! fields (`cron`), or apply their own rules at clock changes (`croner`), where the contract
//! fixes ours (`next`); the grammar is small, and every refusal names the field and the rule.

use chrono::{Datelike, NaiveDate, Timelike};

use crate::days::AwsDates;
use crate::fields::{field_bits, Bits, Field, MONTH_NAMES, WEEKDAY_NAMES};

/// A parsed expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cron {
    minutes: Bits,
    hours: Bits,
    months: Bits,
    dates: Dates,
    /// As given for EventBridge's `cron(...)`; the fields joined by single spaces for five.
    text: String,
    /// Its times of a day (hour, minute), in order: made once, read by every next-occurrence
    /// search (rebuilt per search, they made a catch-up over a `* * * * *` series quadratic).
    times: Vec<(u32, u32)>,
}

/// Which days a cron fires on, in its dialect.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Dates {
    /// Vixie's: either day field when both are restricted, else both.
    Vixie {
        days: Bits,
        weekdays: Bits,
        /// Whether each day field starts with `*` (unrestricted), which decides how they combine.
        days_star: bool,
        weekdays_star: bool,
    },
    /// EventBridge's: the one day field that is not `?`, and the years.
    Aws(AwsDates),
}

const FIELDS: [Field; 5] = [
    Field::new("minute", 0, 59, &[]),
    Field::new("hour", 0, 23, &[]),
    Field::new("day of month", 1, 31, &[]),
    Field::new("month", 1, 12, MONTH_NAMES),
    Field::new("day of week", 0, 7, WEEKDAY_NAMES),
];

impl Cron {
    /// Parses an expression; the error names the field and the rule.
    pub fn parse(text: &str) -> Result<Self, String> {
        let parts: Vec<&str> = text.split_whitespace().collect();
        if parts.len() != FIELDS.len() {
            return Err(format!(
                "needs 5 fields (minute, hour, day of month, month, day of week) separated by spaces, got {}",
                parts.len()
            ));
        }
        let mut bits = [Bits(0); 5];
        for ((field, part), out) in FIELDS.iter().zip(&parts).zip(bits.iter_mut()) {
            *out = field_bits(field, part, false).map_err(|e| format!("{} field {part:?}: {e}", field.name))?;
        }
        let [minutes, hours, days, months, mut weekdays] = bits;
        // 7 is Sunday too.
        if weekdays.has(7) {
            weekdays = Bits((weekdays.0 | 1) & !(1 << 7));
        }
        let dates = Dates::Vixie {
            days,
            weekdays,
            days_star: parts[2].starts_with('*'),
            weekdays_star: parts[4].starts_with('*'),
        };
        let cron = Self::new(minutes, hours, months, dates, parts.join(" "));
        if !cron.can_fire() {
            return Err("matches no date (a day of month that none of its months has)".into());
        }
        Ok(cron)
    }

    /// An EventBridge Scheduler `cron(...)` from its parsed fields; `text` as given.
    pub(crate) fn aws(minutes: Bits, hours: Bits, months: Bits, dates: AwsDates, text: String) -> Self {
        Self::new(minutes, hours, months, Dates::Aws(dates), text)
    }

    fn new(minutes: Bits, hours: Bits, months: Bits, dates: Dates, text: String) -> Self {
        let times = (0..24)
            .filter(|h| hours.has(*h))
            .flat_map(|h| (0..60).filter(move |m| minutes.has(*m)).map(move |m| (h, m)))
            .collect();
        Self {
            minutes,
            hours,
            months,
            dates,
            text,
            times,
        }
    }

    /// Whether it is EventBridge Scheduler's `cron(...)` (shown as `repeat.expression`).
    pub fn is_aws(&self) -> bool {
        matches!(self.dates, Dates::Aws(_))
    }

    /// The expression: its five fields separated by single spaces, or a `cron(...)` as given.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether a local date is one of its days.
    pub fn matches_date(&self, date: NaiveDate) -> bool {
        if !self.months.has(date.month()) {
            return false;
        }
        match &self.dates {
            Dates::Vixie {
                days,
                weekdays,
                days_star,
                weekdays_star,
            } => {
                let day = days.has(date.day());
                let weekday = weekdays.has(date.weekday().num_days_from_sunday());
                match (days_star, weekdays_star) {
                    (false, false) => day || weekday,
                    _ => day && weekday,
                }
            }
            Dates::Aws(aws) => aws.matches(date),
        }
    }

    /// Whether a local time of day (hour and minute) is one of its times.
    pub fn matches_time(&self, t: impl Timelike) -> bool {
        self.hours.has(t.hour()) && self.minutes.has(t.minute())
    }

    /// Its times of a day (hour, minute), in order.
    pub fn times(&self) -> &[(u32, u32)] {
        &self.times
    }

    /// A date it matches exists in some year: a day of month that some chosen month has, or
    /// (both day fields restricted) any weekday.
    fn can_fire(&self) -> bool {
        const DAYS_IN: [u32; 12] = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
        let Dates::Vixie {
            days,
            weekdays,
            days_star,
            weekdays_star,
        } = &self.dates
        else {
            // EventBridge's: the search for its first occurrence says (`repeat`'s checks).
            return true;
        };
        if !days_star && !weekdays_star && weekdays.0 != 0 {
            return true;
        }
        (1..=12).any(|m| self.months.has(m) && (1..=DAYS_IN[m as usize - 1]).any(|d| days.has(d)))
    }
}
