//! A job's tags (docs/contract.md "Tags") as one map attribute of strings, `tags`, on its item
//! and on its history record; absent when it has none, so an untagged job costs no byte more.
//!
//! An item that carries tags is marked `item_format` 2 (`TAGS_FORMAT`): a release before tags
//! would read it, drop the tags when it rewrites it (a `reschedule`, a series' next occurrence),
//! and a later `cancel_many` by tag would then miss the job. Marked, that release leaves the
//! item untouched instead (docs/upgrades.md).

use aws_sdk_dynamodb::types::AttributeValue;

use super::format::A_ITEM_FORMAT;
use super::Item;
use crate::job::Tags;

pub const A_TAGS: &str = "tags";
/// The item format of an item with tags: the first release that reads them.
pub const TAGS_FORMAT: u64 = 2;

pub(crate) fn encode_tags(item: &mut Item, tags: &Tags) {
    if tags.is_empty() {
        return;
    }
    let map = tags
        .iter()
        .map(|(k, v)| (k.clone(), AttributeValue::S(v.clone())))
        .collect();
    item.insert(A_TAGS.into(), AttributeValue::M(map));
    item.insert(A_ITEM_FORMAT.into(), AttributeValue::N(TAGS_FORMAT.to_string()));
}

/// The item's tags (none when absent). Errors name the attribute.
pub(crate) fn decode_tags(item: &Item) -> Result<Tags, String> {
    match item.get(A_TAGS) {
        None => Ok(Tags::new()),
        Some(AttributeValue::M(m)) => m
            .iter()
            .map(|(k, v)| match v {
                AttributeValue::S(s) => Ok((k.clone(), s.clone())),
                _ => Err(format!("tags.{k} is not a string")),
            })
            .collect(),
        Some(_) => Err("tags is not a map".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aws::codec::{decode, decode_any, encode, encode_history, newer_format};
    use crate::ports::{Found, History, HistoryStatus, Retired};
    use crate::testing::stored;

    #[test]
    fn tags_round_trip_on_a_job_and_its_record_and_mark_the_item_format_2() {
        let mut job = stored("orders", "a", chrono::Utc::now(), 1);
        let queue = job.job.queue.clone();
        let plain = encode(&job);
        assert!(
            !plain.contains_key(A_TAGS) && !plain.contains_key(A_ITEM_FORMAT),
            "no byte more"
        );
        job.job.tags = Tags::from([("customer".into(), "42".into()), ("e".into(), String::new())]);
        let item = encode(&job);
        assert_eq!(item.get(A_ITEM_FORMAT), Some(&AttributeValue::N("2".into())));
        assert_eq!(newer_format(&item), None, "this release reads its own tags");
        assert_eq!(decode(&queue, item).expect("decodes").job.tags, job.job.tags);
        let record = History::of(
            &job,
            HistoryStatus::Dispatched,
            job.job.perform_at,
            None,
            chrono::TimeDelta::days(1),
        );
        let item = encode_history(&record);
        assert_eq!(item.get(A_ITEM_FORMAT), Some(&AttributeValue::N("2".into())));
        match decode_any(&queue, item).expect("decodes") {
            Found::History(h) => assert_eq!(h.tags, job.job.tags),
            Found::Job(_) => panic!("a record"),
        }
        // Debts holding a tagged record mark the lease item; untagged ones do not.
        let debt = |record: History| Retired {
            key: job.key(),
            edition: job.edition(),
            record: Some(record),
            advance: None,
        };
        assert_eq!(super::super::debts_format(&[debt(record.clone())]), Some(TAGS_FORMAT));
        let bare = History {
            tags: Tags::new(),
            ..record
        };
        assert_eq!(super::super::debts_format(&[debt(bare)]), None);
        let mut damaged = encode(&job);
        damaged.insert(
            A_TAGS.into(),
            AttributeValue::M([("k".to_owned(), AttributeValue::N("1".into()))].into()),
        );
        assert_eq!(decode(&queue, damaged).expect_err("refused"), "tags.k is not a string");
    }
}
