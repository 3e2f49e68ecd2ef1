//! The debts a lease item carries when its holder hands it on: the jobs SQS accepted that it
//! could not remove, each with its key, edition, the history record to leave, or the next
//! occurrence a series moves to.

use aws_sdk_dynamodb::types::AttributeValue;

use super::*;
use crate::job::Tags;
use crate::ports::Advance;

/// In a debt: the history record to leave in the job's place.
const A_DEBT_RECORD: &str = "record";
/// A debt that moves a series on: its next occurrence.
const A_DEBT_ADVANCE_TO: &str = "advance_to";

/// What the debts may take of the lease item's 400 KB; the rest is the lease's own attributes.
const DEBTS_BUDGET_BYTES: usize = 300 * 1024;

/// Jobs handed on with a lease, for the lease item: each its key and edition, and its history
/// record when it has one. Debts whose records' tags would take them past `DEBTS_BUDGET_BYTES`
/// (up to about 15 KB of tags a record, some 114 debts at most) are handed on with records
/// without tags: the hand-over's promise (nothing sent twice) outranks a record's tags, which
/// those jobs' later retries then lack (docs/contract.md "Tags").
pub(crate) fn encode_debts(queue: &QueueName, debts: &[Retired]) -> AttributeValue {
    let whole = encode_debts_keeping_tags(queue, debts, true);
    let size = item_size(&Item::from([(A_LEASE_DEBTS.to_owned(), whole.clone())]));
    if size <= DEBTS_BUDGET_BYTES {
        return whole;
    }
    tracing::warn!(queue = %queue, debts = debts.len(), bytes = size, "lease debts too large with their records' tags: handed on without them");
    encode_debts_keeping_tags(queue, debts, false)
}

fn encode_debts_keeping_tags(queue: &QueueName, debts: &[Retired], keep_tags: bool) -> AttributeValue {
    AttributeValue::L(
        debts
            .iter()
            .map(|r| {
                let mut m = key(queue, &r.key);
                m.insert(A_ENQUEUED_AT.into(), n(r.edition.enqueued_at));
                m.insert(A_VERSION.into(), AttributeValue::N(r.edition.version.to_string()));
                if let Some(h) = &r.record {
                    // Without the message: a lease item holds many debts within one item's
                    // 400 KB, so a job retired through a debt is not replayable.
                    let bare = History {
                        message: None,
                        tags: if keep_tags { h.tags.clone() } else { Tags::new() },
                        ..h.clone()
                    };
                    m.insert(A_DEBT_RECORD.into(), AttributeValue::M(encode_history(&bare)));
                }
                if let Some(a) = &r.advance {
                    m.insert(A_DEBT_ADVANCE_TO.into(), n(a.perform_at));
                    m.insert(A_OCCURRENCES.into(), AttributeValue::N(a.occurrences.to_string()));
                    if let Some(t) = a.arriving_at {
                        m.insert(A_MAYBE_DELIVERED_AT.into(), n(t));
                    }
                    if let Some(t) = a.extra_sent {
                        m.insert(A_REPEAT_EXTRA_LAST.into(), n(t));
                    }
                    // The move of a tagged series is of its item's format (`debts_format`).
                    if a.tagged {
                        m.insert(A_ITEM_FORMAT.into(), AttributeValue::N(TAGS_FORMAT.to_string()));
                    }
                }
                AttributeValue::M(m)
            })
            .collect(),
    )
}

/// The item format the lease item must carry with these debts (docs/upgrades.md: a release
/// that writes debts of a new format marks the lease item with it); `None`: format 1.
pub(crate) fn debts_format(debts: &[Retired]) -> Option<u64> {
    debts
        .iter()
        .any(|r| r.record.as_ref().is_some_and(|h| !h.tags.is_empty()) || r.advance.is_some_and(|a| a.tagged))
        .then_some(super::TAGS_FORMAT)
}

/// The debts on a lease item (none when it has none). Errors name the attribute.
pub(crate) fn decode_debts(queue: &QueueName, item: &Item) -> Result<Vec<Retired>, String> {
    let Some(list) = item.get(A_LEASE_DEBTS) else {
        return Ok(Vec::new());
    };
    let AttributeValue::L(list) = list else {
        return Err(format!("{A_LEASE_DEBTS} is not a list"));
    };
    list.iter()
        .map(|d| {
            let AttributeValue::M(m) = d else {
                return Err(format!("{A_LEASE_DEBTS} holds a non-map"));
            };
            let job_id = match m.get(A_JOB_ID) {
                Some(AttributeValue::S(id)) => id.clone(),
                _ => return Err(format!("{A_LEASE_DEBTS}.job_id is missing")),
            };
            let enqueued_at = match m.get(A_ENQUEUED_AT) {
                Some(AttributeValue::N(v)) => parse_epoch_decimal(v),
                _ => None,
            }
            .ok_or_else(|| format!("{A_LEASE_DEBTS}.enqueued_at is missing"))?;
            let version = match m.get(A_VERSION) {
                Some(AttributeValue::N(v)) => v.parse().ok(),
                _ => None,
            }
            .ok_or_else(|| format!("{A_LEASE_DEBTS}.version is missing"))?;
            let record = match m.get(A_DEBT_RECORD) {
                None => None,
                Some(AttributeValue::M(r)) => match decode_any(queue, r.clone())? {
                    Found::History(h) => Some(h),
                    Found::Job(_) => return Err(format!("{A_LEASE_DEBTS}.record is not a history record")),
                },
                Some(_) => return Err(format!("{A_LEASE_DEBTS}.record is not a map")),
            };
            let advance =
                match (m.get(A_DEBT_ADVANCE_TO), m.get(A_OCCURRENCES)) {
                    (None, _) => None,
                    (Some(AttributeValue::N(t)), Some(AttributeValue::N(o))) => Some(Advance {
                        perform_at: parse_epoch_decimal(t)
                            .ok_or_else(|| format!("{A_LEASE_DEBTS}.{A_DEBT_ADVANCE_TO} is not epoch seconds"))?,
                        occurrences: o
                            .parse()
                            .map_err(|_| format!("{A_LEASE_DEBTS}.{A_OCCURRENCES} is not a whole number"))?,
                        arriving_at: match m.get(A_MAYBE_DELIVERED_AT) {
                            None => None,
                            Some(AttributeValue::N(t)) => Some(parse_epoch_decimal(t).ok_or_else(|| {
                                format!("{A_LEASE_DEBTS}.{A_MAYBE_DELIVERED_AT} is not epoch seconds")
                            })?),
                            Some(_) => return Err(format!("{A_LEASE_DEBTS}.{A_MAYBE_DELIVERED_AT} is not a number")),
                        },
                        extra_sent: match m.get(A_REPEAT_EXTRA_LAST) {
                            None => None,
                            Some(AttributeValue::N(t)) => Some(parse_epoch_decimal(t).ok_or_else(|| {
                                format!("{A_LEASE_DEBTS}.{A_REPEAT_EXTRA_LAST} is not epoch seconds")
                            })?),
                            Some(_) => return Err(format!("{A_LEASE_DEBTS}.{A_REPEAT_EXTRA_LAST} is not a number")),
                        },
                        tagged: m.contains_key(A_ITEM_FORMAT),
                    }),
                    _ => {
                        return Err(format!(
                            "{A_LEASE_DEBTS}.{A_DEBT_ADVANCE_TO} goes with a number of occurrences"
                        ))
                    }
                };
            Ok(Retired {
                key: JobKey {
                    partition: decode_partition(queue, m)?,
                    job_id,
                },
                edition: Edition { enqueued_at, version },
                record,
                advance,
            })
        })
        .collect()
}

/// The format a lease item needs when a later release wrote it or one of its debts' records;
/// `None` when this release reads them all. Settling those debts is that release's.
pub(crate) fn debts_newer_format(item: &Item) -> Option<u64> {
    newer_format(item).or_else(|| match item.get(A_LEASE_DEBTS) {
        Some(AttributeValue::L(debts)) => debts.iter().find_map(|debt| match debt {
            AttributeValue::M(m) => newer_format(m).or_else(|| match m.get(A_DEBT_RECORD) {
                Some(AttributeValue::M(record)) => newer_format(record),
                _ => None,
            }),
            _ => None,
        }),
        _ => None,
    })
}
