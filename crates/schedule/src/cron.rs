//! Five-field cron expressions (minute, hour, day of month, month, day of week), as Vixie cron
//! reads them: `*`, lists, ranges, steps (`*/15`, `1-30/2`, `5/20` from 5 to the end) and the
//! names `JAN`–`DEC` and `SUN`–`SAT` (any case); day of week 0–7, both 0 and 7 Sunday. When
//! both day fields are restricted (neither starts with `*`), a day matching either fires.
//!
//! Written here rather than taken from a crate: the cron crates at hand read six or seven
//! fields (`cron`), or apply their own rules at clock changes (`croner`), where the contract
//! fixes ours (`next`); the grammar is small, and every refusal names the field and the rule.

use chrono::{Datelike, NaiveDate, Timelike};

/// One field's allowed values, as bits (bit `v` set: `v` matches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Bits(u64);

impl Bits {
    fn has(self, v: u32) -> bool {
        self.0 & (1 << v) != 0
    }
}

/// A parsed expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cron {
    minutes: Bits,
    hours: Bits,
    days: Bits,
    months: Bits,
    weekdays: Bits,
    /// Whether each day field starts with `*` (unrestricted), which decides how they combine.
    days_star: bool,
    weekdays_star: bool,
    text: String,
    /// Its times of a day (hour, minute), in order: made once, read by every next-occurrence
    /// search (rebuilt per search, they made a catch-up over a `* * * * *` series quadratic).
    times: Vec<(u32, u32)>,
}

struct Field {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const FIELDS: [Field; 5] = [
    Field {
        name: "minute",
        min: 0,
        max: 59,
        names: &[],
    },
    Field {
        name: "hour",
        min: 0,
        max: 23,
        names: &[],
    },
    Field {
        name: "day of month",
        min: 1,
        max: 31,
        names: &[],
    },
    Field {
        name: "month",
        min: 1,
        max: 12,
        names: &[
            "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
        ],
    },
    Field {
        name: "day of week",
        min: 0,
        max: 7,
        names: &["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"],
    },
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
            *out = parse_field(field, part).map_err(|e| format!("{} field {part:?}: {e}", field.name))?;
        }
        let [minutes, hours, days, months, mut weekdays] = bits;
        // 7 is Sunday too.
        if weekdays.has(7) {
            weekdays = Bits((weekdays.0 | 1) & !(1 << 7));
        }
        let times = (0..24)
            .filter(|h| hours.has(*h))
            .flat_map(|h| (0..60).filter(move |m| minutes.has(*m)).map(move |m| (h, m)))
            .collect();
        let cron = Self {
            minutes,
            hours,
            days,
            months,
            weekdays,
            days_star: parts[2].starts_with('*'),
            weekdays_star: parts[4].starts_with('*'),
            text: parts.join(" "),
            times,
        };
        if !cron.can_fire() {
            return Err("matches no date (a day of month that none of its months has)".into());
        }
        Ok(cron)
    }

    /// The expression, its fields separated by single spaces.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether a local date is one of its days.
    pub fn matches_date(&self, date: NaiveDate) -> bool {
        if !self.months.has(date.month()) {
            return false;
        }
        let day = self.days.has(date.day());
        let weekday = self.weekdays.has(date.weekday().num_days_from_sunday());
        match (self.days_star, self.weekdays_star) {
            (false, false) => day || weekday,
            _ => day && weekday,
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
        if !self.days_star && !self.weekdays_star && self.weekdays.0 != 0 {
            return true;
        }
        (1..=12).any(|m| self.months.has(m) && (1..=DAYS_IN[m as usize - 1]).any(|d| self.days.has(d)))
    }
}

fn parse_field(field: &Field, part: &str) -> Result<Bits, String> {
    let mut bits = 0u64;
    for item in part.split(',') {
        if item.is_empty() {
            return Err("an empty list item".into());
        }
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => {
                let step: u32 = step.parse().map_err(|_| format!("step {step:?} is not a number"))?;
                if step == 0 {
                    return Err("a step must be at least 1".into());
                }
                (range, step)
            }
            None => (item, 1),
        };
        let (lo, hi) = match range {
            "*" => (field.min, field.max),
            _ => match range.split_once('-') {
                Some((a, b)) => (value(field, a)?, value(field, b)?),
                // `5/20`: from 5 to the end, as `5-max/20`.
                None if step > 1 || item.contains('/') => (value(field, range)?, field.max),
                None => {
                    let v = value(field, range)?;
                    (v, v)
                }
            },
        };
        if lo > hi {
            return Err(format!("range {range:?} runs backwards"));
        }
        for v in (lo..=hi).step_by(step as usize) {
            bits |= 1 << v;
        }
    }
    Ok(Bits(bits))
}

/// A number or (for months and weekdays) a name, within the field's range.
fn value(field: &Field, s: &str) -> Result<u32, String> {
    let upper = s.to_ascii_uppercase();
    if let Some(i) = field.names.iter().position(|n| *n == upper) {
        return Ok(i as u32 + field.min);
    }
    let v: u32 = s.parse().map_err(|_| match field.names {
        [] => format!("{s:?} is not a number"),
        names => format!("{s:?} is not a number or one of {}", names.join(", ")),
    })?;
    if v < field.min || v > field.max {
        return Err(format!("{v} is out of range {}-{}", field.min, field.max));
    }
    Ok(v)
}
