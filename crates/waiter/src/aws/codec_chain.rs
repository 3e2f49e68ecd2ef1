//! What a job's item and its history record keep of the job across its attempts: the attempt
//! (`attempt`, written from 2 on), whether its messages name it (`names_itself`, a replayed
//! copy), and its windows. Absent attributes read as a first attempt that names nothing, so
//! items written before wave 4 decode unchanged.

use aws_sdk_dynamodb::types::AttributeValue;

use super::{Item, A_TIME_ZONE, A_WINDOWS};
use crate::job::{attempt_in, Attributes};
use crate::windows::Windows;
use sqs_waiter_contract::{ATTEMPT_ATTRIBUTE, MAX_ATTEMPT_NUMBER};

pub const A_ATTEMPT: &str = "attempt";
pub const A_NAMES_ITSELF: &str = "names_itself";

pub(crate) fn encode_chain(item: &mut Item, attempt: u32, names_itself: bool) {
    if attempt > 1 {
        item.insert(A_ATTEMPT.into(), AttributeValue::N(attempt.to_string()));
    }
    if names_itself {
        item.insert(A_NAMES_ITSELF.into(), AttributeValue::Bool(true));
    }
}

/// The item's attempt and whether it names itself. An attempt stored by the version before
/// wave 4 (as a job `{job_id}:a{n}` whose attributes carry `waiter.attempt`) reads as that
/// attempt, its `waiter.attempt` taken out of `attributes` (the send puts it back).
pub(crate) fn decode_chain(item: &Item, attributes: &mut Attributes) -> Result<(u32, bool), String> {
    let attempt = match item.get(A_ATTEMPT) {
        Some(AttributeValue::N(v)) => v
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=MAX_ATTEMPT_NUMBER + 1).contains(n))
            .ok_or_else(|| {
                format!(
                    "attempt is not a whole number from 1 to {}: {v}",
                    MAX_ATTEMPT_NUMBER + 1
                )
            })?,
        Some(_) => return Err("attempt is not a number".into()),
        None => match attempt_in(attributes) {
            Some(n) => {
                attributes.remove(ATTEMPT_ATTRIBUTE);
                n.max(1)
            }
            None => 1,
        },
    };
    let names_itself = match item.get(A_NAMES_ITSELF) {
        None => false,
        Some(AttributeValue::Bool(b)) => *b,
        Some(_) => return Err("names_itself is not a boolean".into()),
    };
    Ok((attempt, names_itself))
}

pub(crate) fn encode_windows(item: &mut Item, windows: &Option<Windows>) {
    if let Some(w) = windows {
        let (spans, zone) = w.encode();
        item.insert(A_WINDOWS.into(), AttributeValue::S(spans));
        item.insert(A_TIME_ZONE.into(), AttributeValue::S(zone));
    }
}

pub(crate) fn decode_windows(item: &Item) -> Result<Option<Windows>, String> {
    match (item.get(A_WINDOWS), item.get(A_TIME_ZONE)) {
        (Some(AttributeValue::S(spans)), Some(AttributeValue::S(zone))) => Ok(Some(Windows::decode(spans, zone)?)),
        (None, None) => Ok(None),
        _ => Err("windows and time_zone go together, as strings".into()),
    }
}
