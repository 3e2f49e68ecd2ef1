//! EventBridge Scheduler's expressions (DESIGN "EventBridge Scheduler expressions"), read as AWS
//! reads them, so that a schedule copied across fires on the same days:
//! - `cron(minutes hours day-of-month month day-of-week year)`: day of week 1–7 with 1 = Sunday;
//!   exactly one day field is `?`; `L` (the month's last day; alone in day-of-week, Saturday),
//!   `LW`, `nW` (the weekday nearest the nth, within its month), `dL` (the month's last such
//!   weekday), `d#n` (its nth, alone in its field); ranges may run round (`FRI-MON`, `22-2`);
//!   years 1970–2199. <https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-cron-expressions.html>
//! - `rate(value unit)`: a positive whole number of minute(s), hour(s) or day(s), singular for 1
//!   and plural otherwise. <https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html>
//! - `at(yyyy-mm-ddThh:mm:ss)`: a one-off job's local time.

use chrono::NaiveDateTime;
use sqs_waiter_contract::{MAX_EVERY_S, MIN_EVERY_S};

use crate::cron::Cron;
use crate::days::{AwsDates, Days, MonthDays, WeekDays, Years, FIRST_YEAR, LAST_YEAR};
use crate::fields::{field_bits, field_values, value, Bits, Field, MONTH_NAMES, WEEKDAY_NAMES};

const MINUTES: Field = Field::new("minutes", 0, 59, &[]);
const HOURS: Field = Field::new("hours", 0, 23, &[]);
const DAY_OF_MONTH: Field = Field::new("day-of-month", 1, 31, &[]);
const MONTH: Field = Field::new("month", 1, 12, MONTH_NAMES);
const DAY_OF_WEEK: Field = Field::new("day-of-week", 1, 7, WEEKDAY_NAMES);
const YEAR: Field = Field::new("year", FIRST_YEAR, LAST_YEAR, &[]);

/// A parsed EventBridge Scheduler expression for a series.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expression {
    Cron(Cron),
    Rate(Rate),
}

/// `rate(value unit)`: every so many seconds from the series' start, as `every_s`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rate {
    seconds: u32,
    text: String,
}

impl Rate {
    pub fn seconds(&self) -> u32 {
        self.seconds
    }

    /// As given.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl Expression {
    /// Parses `cron(...)` or `rate(...)`; the error names the part and the rule.
    pub fn parse(text: &str) -> Result<Self, String> {
        if let Some(inner) = wrapped(text, "cron") {
            return parse_cron(inner, text).map(Expression::Cron);
        }
        if let Some(inner) = wrapped(text, "rate") {
            return parse_rate(inner, text).map(Expression::Rate);
        }
        if wrapped(text, "at").is_some() {
            return Err("at(...) is a one-off job's schedule, not a series' repeat".into());
        }
        Err(format!("{text:?} is not cron(...) or rate(...)"))
    }
}

/// `at(yyyy-mm-ddThh:mm:ss)`: a local date and time.
pub fn parse_at(text: &str) -> Result<NaiveDateTime, String> {
    let Some(inner) = wrapped(text, "at") else {
        let hint = if wrapped(text, "cron").is_some() || wrapped(text, "rate").is_some() {
            ": cron(...) and rate(...) repeat, in repeat.expression"
        } else {
            ""
        };
        return Err(format!("must be at(yyyy-mm-ddThh:mm:ss){hint}"));
    };
    NaiveDateTime::parse_from_str(inner, "%Y-%m-%dT%H:%M:%S")
        .ok()
        .filter(|_| inner.len() == "yyyy-mm-ddThh:mm:ss".len())
        .ok_or_else(|| format!("{inner:?} is not a date and time yyyy-mm-ddThh:mm:ss"))
}

/// The text inside `name(...)`, if `text` is that.
fn wrapped<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.strip_prefix(name)?.strip_prefix('(')?.strip_suffix(')')
}

fn parse_rate(inner: &str, text: &str) -> Result<Rate, String> {
    let parts: Vec<&str> = inner.split_whitespace().collect();
    let [value, unit] = parts[..] else {
        return Err(format!("{text:?} needs a value and a unit: rate(5 minutes)"));
    };
    let n: u64 = value
        .parse()
        .ok()
        .filter(|n| *n > 0 && value.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| format!("value {value:?} is not a positive whole number"))?;
    let (unit_s, singular) = match unit {
        "minute" => (60, true),
        "minutes" => (60, false),
        "hour" => (3_600, true),
        "hours" => (3_600, false),
        "day" => (86_400, true),
        "days" => (86_400, false),
        _ => return Err(format!("unit {unit:?} is not minute(s), hour(s) or day(s)")),
    };
    if singular != (n == 1) {
        return Err(format!(
            "unit {unit:?} does not go with {n}: singular for 1, plural otherwise"
        ));
    }
    let seconds = n.saturating_mul(unit_s);
    if !(MIN_EVERY_S..=MAX_EVERY_S).contains(&seconds) {
        return Err(format!("is at most 365 days, got {text}"));
    }
    Ok(Rate {
        seconds: u32::try_from(seconds).unwrap_or(u32::MAX),
        text: text.to_owned(),
    })
}

fn parse_cron(inner: &str, text: &str) -> Result<Cron, String> {
    let parts: Vec<&str> = inner.split_whitespace().collect();
    let [minutes, hours, dom, month, dow, year] = parts[..] else {
        return Err(format!(
            "needs 6 fields (minutes, hours, day-of-month, month, day-of-week, year) separated by spaces, got {}",
            parts.len()
        ));
    };
    let named = |field: &Field, part: &str, e: String| format!("{} field {part:?}: {e}", field.name);
    let plain = |field: &Field, part: &str| {
        only(part, ",-*/")
            .and_then(|()| field_bits(field, part, true))
            .map_err(|e| named(field, part, e))
    };
    let minutes = plain(&MINUTES, minutes)?;
    let hours = plain(&HOURS, hours)?;
    let months = plain(&MONTH, month)?;
    let days = match (dom, dow) {
        ("?", "?") => return Err("day-of-month and day-of-week are both ?: one of them names the days".into()),
        (_, "?") => Days::Month(month_days(dom).map_err(|e| named(&DAY_OF_MONTH, dom, e))?),
        ("?", _) => Days::Week(week_days(dow).map_err(|e| named(&DAY_OF_WEEK, dow, e))?),
        _ => return Err("one of day-of-month and day-of-week must be ?: AWS reads one day field, not both".into()),
    };
    let years = only(year, ",-*/")
        .and_then(|()| field_values(&YEAR, year, false))
        .map_err(|e| named(&YEAR, year, e))?;
    let dates = AwsDates::new(Years::of(&years), days);
    Ok(Cron::aws(minutes, hours, months, dates, text.to_owned()))
}

/// Refuses any sign outside `allowed` (letters are names or numbers, which the field reads).
fn only(part: &str, allowed: &str) -> Result<(), String> {
    match part
        .chars()
        .find(|c| !c.is_ascii_alphanumeric() && !allowed.contains(*c))
    {
        Some(c) => Err(format!("{c:?} is not allowed here: this field takes {allowed}")),
        None => Ok(()),
    }
}

fn month_days(part: &str) -> Result<MonthDays, String> {
    let upper = part.to_ascii_uppercase();
    match upper.as_str() {
        "L" => return Ok(MonthDays::Last),
        "LW" => return Ok(MonthDays::LastWeekday),
        _ => {}
    }
    if let Some(day) = upper.strip_suffix('W') {
        return value(&DAY_OF_MONTH, day)
            .map(MonthDays::NearestWeekday)
            .map_err(|e| format!("{e} (nW takes one day: 15W)"));
    }
    if upper.contains(['L', 'W']) {
        return Err("L, LW and nW stand alone in the field".into());
    }
    only(part, ",-*/")?;
    field_bits(&DAY_OF_MONTH, part, true).map(MonthDays::Days)
}

fn week_days(part: &str) -> Result<WeekDays, String> {
    let upper = part.to_ascii_uppercase();
    if upper == "L" {
        // The week's last day.
        return Ok(WeekDays::Days(Bits::of(&[7])));
    }
    if let Some((day, nth)) = upper.split_once('#') {
        if upper.contains(',') {
            return Err("with #, the field holds one expression only (3#1,6#3 is two)".into());
        }
        let day = value(&DAY_OF_WEEK, day)?;
        let nth: u32 = nth
            .parse()
            .ok()
            .filter(|n| (1..=5).contains(n))
            .ok_or_else(|| format!("# takes a week of the month 1-5, got {nth:?}"))?;
        return Ok(WeekDays::Nth(day, nth));
    }
    if let Some(day) = upper.strip_suffix('L') {
        return value(&DAY_OF_WEEK, day)
            .map(WeekDays::Last)
            .map_err(|e| format!("{e} (dL takes one day: 6L)"));
    }
    only(part, ",-*")?;
    field_bits(&DAY_OF_WEEK, part, true).map(WeekDays::Days)
}

#[cfg(test)]
#[path = "aws_tests.rs"]
mod tests;
