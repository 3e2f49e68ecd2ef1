//! The rules of `repeat` (DESIGN "Recurring jobs"): a refusal names the field (`repeat.cron`,
//! `repeat.every_s`, ...) and the rule it broke.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use sqs_waiter_contract::{Repeat, MAX_COUNT, MAX_EVERY_S, MIN_EVERY_S};

use super::normalise::Given;
use crate::error::InvalidRequest;
use crate::repeat::{Cron, Every, Series};

/// The series `repeat` names, read in `time_zone`, and its first occurrence at or after `start`.
pub(crate) fn check_repeat(
    given: &Given,
    r: Repeat,
    time_zone: Option<&str>,
    start: DateTime<Utc>,
) -> Result<(Series, DateTime<Utc>), InvalidRequest> {
    let field = given.name("repeat");
    let sub = |name: &str| format!("{field}.{name}");
    let every = match (r.cron, r.every_s) {
        (Some(expr), None) => {
            let cron = Cron::parse(&expr).map_err(|e| InvalidRequest::new(sub("cron"), e))?;
            Every::Cron(cron, zone(given, time_zone)?)
        }
        (None, Some(s)) => {
            if !(MIN_EVERY_S..=MAX_EVERY_S).contains(&s) {
                return Err(InvalidRequest::new(
                    sub("every_s"),
                    format!("must be {MIN_EVERY_S} to {MAX_EVERY_S} seconds, got {s}"),
                ));
            }
            zone(given, time_zone)?;
            Every::Seconds(u32::try_from(s).unwrap_or(u32::MAX))
        }
        _ => return Err(InvalidRequest::new(field, "must hold exactly one of cron and every_s")),
    };
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
        None => InvalidRequest::new(sub("cron"), "has no occurrence within 8 years"),
    })?;
    Ok((series, first))
}

fn zone(given: &Given, name: Option<&str>) -> Result<Tz, InvalidRequest> {
    match name {
        None => Ok(Tz::UTC),
        Some(name) => name.parse().map_err(|_| {
            InvalidRequest::new(
                given.name("time_zone"),
                format!("must be an IANA time zone name such as Europe/Berlin, got {name:?}"),
            )
        }),
    }
}
