//! A queue's pause item of the one codec: since when the queue is paused, and its last pauses
//! that ended (docs/steering.md "Pause and resume").

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use super::*;
use crate::ports::EndedPause;

/// On a queue's pause item: its last pauses that ended, each a list of two numbers (from, to).
pub const A_ENDED_PAUSES: &str = "ended_pauses";

pub(crate) fn pause_key(queue: &QueueName) -> Item {
    HashMap::from([
        (A_SCHEDULER.to_owned(), AttributeValue::S(format!("{queue}#pause"))),
        (A_JOB_ID.to_owned(), AttributeValue::S(PAUSE_SORT_KEY.to_owned())),
    ])
}

/// Since when a pause item says its queue is paused.
pub(crate) fn decode_pause(item: &Item) -> Option<DateTime<Utc>> {
    epoch_in(item, A_PAUSED_AT)
}

/// The queue's last pauses that ended, on its pause item (an unreadable entry is left out).
pub(crate) fn decode_ended_pauses(item: &Item) -> Vec<EndedPause> {
    let Some(AttributeValue::L(list)) = item.get(A_ENDED_PAUSES) else {
        return Vec::new();
    };
    let time = |v: &AttributeValue| match v {
        AttributeValue::N(n) => parse_epoch_decimal(n),
        _ => None,
    };
    list.iter()
        .filter_map(|pair| match pair {
            AttributeValue::L(p) if p.len() == 2 => Some((time(&p[0])?, time(&p[1])?)),
            _ => None,
        })
        .collect()
}

/// `ended` as the pause item keeps it.
pub(crate) fn encode_ended_pauses(ended: &[EndedPause]) -> AttributeValue {
    AttributeValue::L(
        ended
            .iter()
            .map(|(from, to)| AttributeValue::L(vec![n(*from), n(*to)]))
            .collect(),
    )
}
