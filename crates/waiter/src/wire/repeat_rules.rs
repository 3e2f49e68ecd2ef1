//! The rules of `repeat` (DESIGN "Recurring jobs") and of a one-off job's `schedule`
//! (EventBridge Scheduler's `at(...)`): a refusal names the field (`repeat.cron`,
//! `repeat.expression`, `schedule`, ...) and the rule it broke.

use chrono::{DateTime, Utc};
use sqs_waiter_contract::{CatchUp, Repeat, MAX_COUNT, MAX_EVERY_S, MIN_EVERY_S};

use super::normalise::Given;
use crate::error::InvalidRequest;
use crate::repeat::{instant_of, parse_at, Cron, Every, Expression, Series};
use crate::windows::{zone_named, Windows};

/// The series `repeat` names, read in `time_zone`, and its first occurrence at or after `start`.
pub(crate) fn check_repeat(
    given: &Given,
    r: Repeat,
    time_zone: Option<&str>,
    start: DateTime<Utc>,
) -> Result<(Series, DateTime<Utc>), InvalidRequest> {
    let field = given.name("repeat");
    let sub = |name: &str| format!("{field}.{name}");
    let (every, rule_field) = match (r.cron, r.every_s, r.expression) {
        (Some(expr), None, None) => {
            let cron = Cron::parse(&expr).map_err(|e| InvalidRequest::new(sub("cron"), e))?;
            (Every::Cron(cron, zone(given, time_zone)?), "cron")
        }
        (None, None, Some(expr)) => {
            let expression = Expression::parse(&expr).map_err(|e| InvalidRequest::new(sub("expression"), e))?;
            (Every::expression(expression, zone(given, time_zone)?), "expression")
        }
        (None, Some(s), None) => {
            if !(MIN_EVERY_S..=MAX_EVERY_S).contains(&s) {
                return Err(InvalidRequest::new(
                    sub("every_s"),
                    format!("must be {MIN_EVERY_S} to {MAX_EVERY_S} seconds, got {s}"),
                ));
            }
            zone(given, time_zone)?;
            (Every::Seconds(u32::try_from(s).unwrap_or(u32::MAX)), "every_s")
        }
        _ => {
            return Err(InvalidRequest::new(
                field,
                "must hold exactly one of cron, every_s and expression",
            ))
        }
    };
    // Read leniently for replies (`Unknown`), refused here as serde refused it before.
    if r.catch_up == Some(CatchUp::Unknown) {
        return Err(InvalidRequest::new(
            sub("catch_up"),
            r#"must be one of "skip", "one", "all""#,
        ));
    }
    if let Some(c) = r.count {
        if !(1..=MAX_COUNT).contains(&c) {
            return Err(InvalidRequest::new(
                sub("count"),
                format!("must be 1 to {MAX_COUNT} occurrences, got {c}"),
            ));
        }
    }
    let series = Series {
        every,
        until: r.until,
        count: r.count,
        catch_up: r.catch_up.unwrap_or_default(),
        occurrences: 0,
        held: None,
        extra: Default::default(),
    };
    if let Some(u) = r.until.filter(|u| *u < start) {
        return Err(InvalidRequest::new(
            sub("until"),
            format!("{} is before the series' start {}", u.to_rfc3339(), start.to_rfc3339()),
        ));
    }
    let first = series.first(start).ok_or_else(|| match r.until {
        Some(u) => InvalidRequest::new(
            sub("until"),
            format!("{} comes before the series' first occurrence", u.to_rfc3339()),
        ),
        None => InvalidRequest::new(sub(rule_field), "has no occurrence after the start"),
    })?;
    Ok((series, first))
}

/// `schedule`, `at(yyyy-mm-ddThh:mm:ss)` read in `time_zone`: the instant a one-off job is due
/// (a skipped local time at the gap's end, a repeated one the first time; a past one now).
/// `timed`: `delay_seconds` or `perform_at` was given too.
pub(crate) fn check_schedule(
    given: &Given,
    at: &str,
    timed: bool,
    repeat: bool,
    time_zone: Option<&str>,
    now: DateTime<Utc>,
) -> Result<DateTime<Utc>, InvalidRequest> {
    let field = given.name("schedule");
    if timed {
        let rule = format!(
            "give one of {}, {} and {field}",
            given.name("delay_seconds"),
            given.name("perform_at")
        );
        return Err(InvalidRequest::new(field, rule));
    }
    if repeat {
        return Err(InvalidRequest::new(
            field,
            "is a one-off job's at(...): a series starts at its perform_at and repeats by repeat.expression",
        ));
    }
    let local = parse_at(at).map_err(|e| InvalidRequest::new(&field, e))?;
    let at = instant_of(zone(given, time_zone)?, local);
    Ok(crate::time::ceil_to_micros(at.max(now)).unwrap_or(at))
}

fn zone(given: &Given, name: Option<&str>) -> Result<chrono_tz::Tz, InvalidRequest> {
    zone_named(given.name("time_zone"), name)
}

/// Which of `windows` and a series' cron `time_zone` is for: the cron's when `repeat` is given,
/// and the windows' too when both are (one zone for both); the windows' alone otherwise.
pub(crate) fn split_zone(repeat: bool, windows: bool, zone: Option<String>) -> (Option<String>, Option<String>) {
    match (repeat, windows) {
        (true, true) => (zone.clone(), zone),
        (true, false) => (None, zone),
        (false, _) => (zone, None),
    }
}

/// Where a series starting with the occurrence `first` is stored: at `first`, or, outside its
/// windows, at the next opening with `first` held for it.
pub(crate) fn start_in_windows(series: &mut Series, first: DateTime<Utc>, windows: Option<&Windows>) -> DateTime<Utc> {
    let open = windows.map_or(first, |w| w.next_open(first));
    series.held = (open != first).then_some(first);
    open
}
