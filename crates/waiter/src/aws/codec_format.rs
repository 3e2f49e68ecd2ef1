//! Item formats (docs/upgrades.md "Item formats"): an item that an earlier release would
//! misread carries the lowest format that reads it, `item_format`; one without it is format 1.
//! This release reads up to `ITEM_FORMAT` and leaves an item of a later format untouched: it
//! neither sends nor removes nor rewrites it, and the poller counts it (`Unreadable`).

use aws_sdk_dynamodb::types::AttributeValue;

use super::{Item, A_GROUP_ID};

pub const A_ITEM_FORMAT: &str = "item_format";

/// The item format this release reads. 1: every kind of item up to 0.2.0, none of which
/// carries `item_format` (so it costs no byte). 2: an item with tags (`TAGS_FORMAT`), which
/// an earlier release would rewrite without them. A release that adds a kind an earlier one
/// would misread (a field whose absence means something else, or one a rewrite would drop)
/// raises this and writes the new value on those items only; tests/fixtures keeps each
/// release's items.
pub const ITEM_FORMAT: u64 = 2;

/// The format an item needs when it is above what this release reads; `None` when it reads it.
/// A value that is no whole number (a later release's, say) counts as above.
pub fn newer_format(item: &Item) -> Option<u64> {
    match item.get(A_ITEM_FORMAT) {
        None => None,
        Some(AttributeValue::N(v)) => match v.parse::<u64>() {
            Ok(n) if n <= ITEM_FORMAT => None,
            Ok(n) => Some(n),
            Err(_) => Some(u64::MAX),
        },
        Some(_) => Some(u64::MAX),
    }
}

/// Why an item of `format` is not read, naming the release that reads only up to `ITEM_FORMAT`.
pub fn newer_reason(format: u64) -> String {
    format!(
        "item_format {format} was written by a later release; this one ({}) reads up to {ITEM_FORMAT} and \
         leaves it untouched until its functions are updated (docs/upgrades.md)",
        crate::VERSION
    )
}

/// The FIFO group an item names, read as a plain string whatever else it holds: the poller
/// holds that group behind an item it cannot read.
pub fn group_as_given(item: &Item) -> Option<String> {
    match item.get(A_GROUP_ID) {
        Some(AttributeValue::S(g)) => Some(g.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aws::codec::debts_newer_format;
    use crate::aws::codec::{decode, decode_any, encode};
    use crate::config::QueueName;
    use crate::testing::stored;

    #[test]
    fn an_item_of_a_later_format_is_refused_by_every_decoder_and_this_releases_items_are_read() {
        let job = stored("orders", "a", chrono::Utc::now(), 1);
        let queue: QueueName = job.job.queue.clone();
        let mut item = encode(&job);
        assert!(!item.contains_key(A_ITEM_FORMAT), "format 1 costs no byte");
        assert_eq!(newer_format(&item), None);
        for (value, newer) in [
            (AttributeValue::N(ITEM_FORMAT.to_string()), None),
            (AttributeValue::N((ITEM_FORMAT + 1).to_string()), Some(ITEM_FORMAT + 1)),
            (AttributeValue::N("2.5".into()), Some(u64::MAX)),
            (AttributeValue::S("2".into()), Some(u64::MAX)),
        ] {
            item.insert(A_ITEM_FORMAT.into(), value.clone());
            assert_eq!(newer_format(&item), newer, "{value:?}");
            match newer {
                None => assert!(decode(&queue, item.clone()).is_ok(), "{value:?}"),
                Some(_) => {
                    let why = decode(&queue, item.clone()).expect_err("refused");
                    assert!(why.contains("later release"), "{why}");
                    assert!(decode_any(&queue, item.clone()).is_err(), "{value:?}");
                }
            }
        }
    }

    #[test]
    fn a_lease_whose_debts_hold_a_record_of_a_later_format_needs_that_format() {
        let record = |format: Option<u64>| {
            let mut r = Item::new();
            if let Some(f) = format {
                r.insert(A_ITEM_FORMAT.into(), AttributeValue::N(f.to_string()));
            }
            AttributeValue::M(Item::from([("record".to_owned(), AttributeValue::M(r))]))
        };
        let lease = |debts: Vec<AttributeValue>| Item::from([("lease_debts".to_owned(), AttributeValue::L(debts))]);
        assert_eq!(
            debts_newer_format(&lease(vec![record(None), record(Some(ITEM_FORMAT))])),
            None
        );
        assert_eq!(
            debts_newer_format(&lease(vec![record(None), record(Some(ITEM_FORMAT + 1))])),
            Some(ITEM_FORMAT + 1)
        );
        let mut marked = lease(vec![]);
        marked.insert(A_ITEM_FORMAT.into(), AttributeValue::N((ITEM_FORMAT + 1).to_string()));
        assert_eq!(debts_newer_format(&marked), Some(ITEM_FORMAT + 1));
    }
}
