//! The `WAITER_MAX_RATE` ledger item of the one codec: a queue's bookings, its partitions'
//! heads and its floors (docs/contract.md "Table schema").

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use super::*;
use crate::rate::{Bookings, Head, Rank};

/// The ledger item for these bookings at `version`.
pub(crate) fn encode_rate(queue: &QueueName, version: u64, bookings: &Bookings) -> Item {
    let mut item = rate_key(queue);
    let booked = bookings
        .counts()
        .map(|(s, n)| (s.to_string(), AttributeValue::N(n.to_string())))
        .collect();
    item.insert(A_RATE_BOOKED.to_owned(), AttributeValue::M(booked));
    let heads: HashMap<String, AttributeValue> = bookings
        .heads()
        .map(|(shard, h)| {
            let head = format!("{}|{}|{}", h.rank.encode(), h.second, h.until_ms);
            (shard.to_string(), AttributeValue::S(head))
        })
        .collect();
    if !heads.is_empty() {
        item.insert(A_RATE_HEADS.to_owned(), AttributeValue::M(heads));
    }
    let floors: HashMap<String, AttributeValue> = bookings
        .floors()
        .map(|(rank, floor)| (rank.encode(), AttributeValue::N(floor.to_string())))
        .collect();
    if !floors.is_empty() {
        item.insert(A_RATE_FLOORS.to_owned(), AttributeValue::M(floors));
    }
    item.insert(A_RATE_VERSION.to_owned(), AttributeValue::N(version.to_string()));
    item
}

/// A partition's head as the ledger keeps it: `rank|second|until_ms`.
fn decode_head(shard: &str, v: &AttributeValue) -> Result<(u32, Head), String> {
    let bad = || format!("{A_RATE_HEADS}.{shard}: not a shard and rank|second|until");
    let (Ok(shard), AttributeValue::S(s)) = (shard.parse::<u32>(), v) else {
        return Err(bad());
    };
    let mut parts = s.split('|');
    let (Some(rank), Some(second), Some(until), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(bad());
    };
    match (Rank::decode(rank), second.parse(), until.parse()) {
        (Some(rank), Ok(second), Ok(until_ms)) => Ok((shard, Head { rank, second, until_ms })),
        _ => Err(bad()),
    }
}

/// A ledger item's version and bookings (version 0 and none for no item). Errors name the
/// attribute.
pub(crate) fn decode_rate(item: Option<&Item>) -> Result<(u64, Bookings), String> {
    let Some(item) = item.filter(|i| i.contains_key(A_RATE_VERSION)) else {
        return Ok((0, Bookings::default()));
    };
    let version = match item.get(A_RATE_VERSION) {
        Some(AttributeValue::N(v)) => v.parse().map_err(|_| format!("{A_RATE_VERSION}: not a whole number"))?,
        _ => return Err(format!("{A_RATE_VERSION}: not a number")),
    };
    let counts = match item.get(A_RATE_BOOKED) {
        None => Vec::new(),
        Some(AttributeValue::M(m)) => m
            .iter()
            .map(|(s, n)| match (s.parse::<i64>(), n) {
                (Ok(s), AttributeValue::N(n)) => n
                    .parse::<u32>()
                    .map(|n| (s, n))
                    .map_err(|_| format!("{A_RATE_BOOKED}.{s}: not a whole number")),
                _ => Err(format!("{A_RATE_BOOKED}.{s}: not a second and a count")),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(format!("{A_RATE_BOOKED}: not a map")),
    };
    let heads: Vec<(u32, Head)> = match item.get(A_RATE_HEADS) {
        None => Vec::new(),
        Some(AttributeValue::M(m)) => m.iter().map(|(s, v)| decode_head(s, v)).collect::<Result<_, _>>()?,
        Some(_) => return Err(format!("{A_RATE_HEADS}: not a map")),
    };
    let floors: Vec<(Rank, i64)> = match item.get(A_RATE_FLOORS) {
        None => Vec::new(),
        Some(AttributeValue::M(m)) => m
            .iter()
            .map(|(k, v)| {
                let bad = || format!("{A_RATE_FLOORS}.{k}: not a rank and a second");
                match (Rank::decode(k), v) {
                    (Some(rank), AttributeValue::N(f)) => f.parse().map(|f| (rank, f)).map_err(|_| bad()),
                    _ => Err(bad()),
                }
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(format!("{A_RATE_FLOORS}: not a map")),
    };
    Ok((
        version,
        Bookings::from_counts(counts).with_heads(heads).with_floors(floors),
    ))
}
