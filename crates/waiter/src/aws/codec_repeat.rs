//! What a series' item holds besides a job's (DESIGN "Recurring jobs"): its rule, its end, its
//! catch-up policy and the occurrences sent. Flat attributes, so that the move to the next
//! occurrence is one `UPDATE` of `perform_at`, `version` and `occurrences`.

use aws_sdk_dynamodb::types::AttributeValue;

use super::{n, parse_epoch_decimal, Item};
use crate::repeat::{CatchUp, Cron, Every, Expression, Extra, Series};

pub const A_REPEAT_CRON: &str = "repeat_cron";
/// EventBridge Scheduler's `cron(...)` or `rate(...)`, as given.
pub const A_REPEAT_EXPRESSION: &str = "repeat_expression";
pub const A_REPEAT_EVERY_S: &str = "repeat_every_s";
pub const A_REPEAT_TIME_ZONE: &str = "repeat_time_zone";
pub const A_REPEAT_UNTIL: &str = "repeat_until";
pub const A_REPEAT_COUNT: &str = "repeat_count";
pub const A_REPEAT_CATCH_UP: &str = "repeat_catch_up";
pub const A_OCCURRENCES: &str = "occurrences";
pub const A_REPEAT_HELD: &str = "repeat_held";
/// `trigger`'s pending extra occurrence: where the item returns once SQS has it.
pub const A_REPEAT_EXTRA_RETURNS_TO: &str = "repeat_extra_returns_to";
/// The instant of the last extra occurrence sent.
pub const A_REPEAT_EXTRA_LAST: &str = "repeat_extra_last";

fn number(v: u64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

pub(crate) fn encode_repeat(item: &mut Item, series: Option<&Series>) {
    let Some(s) = series else { return };
    match &s.every {
        Every::Cron(cron, zone) => {
            let name = if cron.is_aws() {
                A_REPEAT_EXPRESSION
            } else {
                A_REPEAT_CRON
            };
            item.insert(name.into(), AttributeValue::S(cron.as_str().to_owned()));
            item.insert(A_REPEAT_TIME_ZONE.into(), AttributeValue::S(zone.name().to_owned()));
        }
        Every::Seconds(seconds) => {
            item.insert(A_REPEAT_EVERY_S.into(), number(u64::from(*seconds)));
        }
        Every::Rate(rate) => {
            item.insert(A_REPEAT_EXPRESSION.into(), AttributeValue::S(rate.as_str().to_owned()));
        }
    }
    if let Some(u) = s.until {
        item.insert(A_REPEAT_UNTIL.into(), n(u));
    }
    if let Some(c) = s.count {
        item.insert(A_REPEAT_COUNT.into(), number(c));
    }
    item.insert(
        A_REPEAT_CATCH_UP.into(),
        AttributeValue::S(s.catch_up.as_str().to_owned()),
    );
    item.insert(A_OCCURRENCES.into(), number(s.occurrences));
    if let Some(h) = s.held {
        item.insert(A_REPEAT_HELD.into(), n(h));
    }
    if let Some(r) = s.extra.returns_to {
        item.insert(A_REPEAT_EXTRA_RETURNS_TO.into(), n(r));
    }
    if let Some(l) = s.extra.last {
        item.insert(A_REPEAT_EXTRA_LAST.into(), n(l));
    }
}

fn s<'a>(item: &'a Item, name: &str) -> Result<Option<&'a str>, String> {
    match item.get(name) {
        None => Ok(None),
        Some(AttributeValue::S(v)) => Ok(Some(v)),
        Some(_) => Err(format!("{name} is not a string")),
    }
}

fn whole(item: &Item, name: &str) -> Result<Option<u64>, String> {
    match item.get(name) {
        None => Ok(None),
        Some(AttributeValue::N(v)) => v
            .parse()
            .map(Some)
            .map_err(|_| format!("{name} is not a whole number: {v}")),
        Some(_) => Err(format!("{name} is not a number")),
    }
}

/// The item's series, if it is one. Errors name the attribute.
pub(crate) fn decode_repeat(item: &Item) -> Result<Option<Series>, String> {
    let zone = || {
        let zone = s(item, A_REPEAT_TIME_ZONE)?.unwrap_or("UTC");
        zone.parse()
            .map_err(|_| format!("{A_REPEAT_TIME_ZONE} is not a time zone: {zone}"))
    };
    let rules = (
        s(item, A_REPEAT_CRON)?,
        whole(item, A_REPEAT_EVERY_S)?,
        s(item, A_REPEAT_EXPRESSION)?,
    );
    let every = match rules {
        (None, None, None) => return Ok(None),
        (Some(expr), None, None) => {
            let cron = Cron::parse(expr).map_err(|e| format!("{A_REPEAT_CRON}: {e}"))?;
            Every::Cron(cron, zone()?)
        }
        (None, Some(seconds), None) => {
            Every::Seconds(u32::try_from(seconds).map_err(|_| format!("{A_REPEAT_EVERY_S} is too large: {seconds}"))?)
        }
        (None, None, Some(expr)) => {
            let expression = Expression::parse(expr).map_err(|e| format!("{A_REPEAT_EXPRESSION}: {e}"))?;
            Every::expression(expression, zone()?)
        }
        _ => {
            return Err(format!(
                "more than one of {A_REPEAT_CRON}, {A_REPEAT_EVERY_S} and {A_REPEAT_EXPRESSION} is set"
            ))
        }
    };
    let time = |name: &str| match item.get(name) {
        None => Ok(None),
        Some(AttributeValue::N(v)) => parse_epoch_decimal(v)
            .map(Some)
            .ok_or_else(|| format!("{name} is not epoch seconds: {v}")),
        Some(_) => Err(format!("{name} is not a number")),
    };
    let until = time(A_REPEAT_UNTIL)?;
    let catch_up = match s(item, A_REPEAT_CATCH_UP)? {
        None => CatchUp::One,
        Some(name) => {
            CatchUp::parse(name).ok_or_else(|| format!("{A_REPEAT_CATCH_UP} is not skip, one or all: {name}"))?
        }
    };
    Ok(Some(Series {
        every,
        until,
        count: whole(item, A_REPEAT_COUNT)?,
        catch_up,
        occurrences: whole(item, A_OCCURRENCES)?.unwrap_or(0),
        held: time(A_REPEAT_HELD)?,
        extra: Extra {
            returns_to: time(A_REPEAT_EXTRA_RETURNS_TO)?,
            last: time(A_REPEAT_EXTRA_LAST)?,
        },
    }))
}
