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

    /// The record a sent job leaves.
    fn sent(job: &crate::ports::StoredJob) -> History {
        History::of(
            job,
            HistoryStatus::Dispatched,
            job.job.perform_at,
            None,
            chrono::TimeDelta::days(1),
        )
    }

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
        let record = sent(&job);
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
        // A tagged series' move marks them too, and its debt says so when read back.
        let advance = crate::ports::Advance {
            perform_at: job.job.perform_at,
            occurrences: 1,
            arriving_at: None,
            extra_sent: None,
            tagged: true,
        };
        let moved = Retired {
            key: job.key(),
            edition: job.edition(),
            record: None,
            advance: Some(advance),
        };
        assert_eq!(
            super::super::debts_format(std::slice::from_ref(&moved)),
            Some(TAGS_FORMAT)
        );
        let lease = Item::from([(
            "lease_debts".to_owned(),
            super::super::encode_debts(&queue, std::slice::from_ref(&moved)),
        )]);
        let read = super::super::decode_debts(&queue, &lease).expect("debts");
        assert!(read[0].advance.is_some_and(|a| a.tagged), "{read:?}");
        let untagged = Retired {
            advance: Some(crate::ports::Advance {
                tagged: false,
                ..advance
            }),
            ..moved
        };
        assert_eq!(super::super::debts_format(&[untagged]), None);
        let mut damaged = encode(&job);
        damaged.insert(
            A_TAGS.into(),
            AttributeValue::M([("k".to_owned(), AttributeValue::N("1".into()))].into()),
        );
        assert_eq!(decode(&queue, damaged).expect_err("refused"), "tags.k is not a string");
    }

    #[test]
    fn debts_whose_records_tags_would_overfill_the_lease_item_go_without_the_tags() {
        let mut job = stored("orders", "a", chrono::Utc::now(), 1);
        let queue = job.job.queue.clone();
        // The longest tags: 10 keys of 128 and values of 256 four-byte characters.
        job.job.tags = (0..10)
            .map(|i| (format!("{i}{}", "𝄞".repeat(127)), "𝄞".repeat(256)))
            .collect();
        let record = sent(&job);
        let debts = |n: usize| -> Vec<Retired> {
            (0..n)
                .map(|i| Retired {
                    key: crate::ports::JobKey {
                        partition: job.partition.clone(),
                        job_id: format!("j{i}"),
                    },
                    edition: job.edition(),
                    record: Some(History {
                        job_id: format!("j{i}"),
                        ..record.clone()
                    }),
                    advance: None,
                })
                .collect()
        };
        let lease = |d: &[Retired]| Item::from([("lease_debts".to_owned(), super::super::encode_debts(&queue, d))]);
        let few = super::super::decode_debts(&queue, &lease(&debts(3))).expect("debts");
        assert!(few
            .iter()
            .all(|r| r.record.as_ref().is_some_and(|h| h.tags == job.job.tags)));
        let most = debts(crate::poller::MAX_UNDELETED_PER_PARTITION);
        let item = lease(&most);
        assert!(
            crate::aws::codec::item_size(&item) < 350 * 1024,
            "room for the lease's own attributes"
        );
        let read = super::super::decode_debts(&queue, &item).expect("debts");
        assert_eq!(read.len(), most.len());
        assert!(read
            .iter()
            .all(|r| r.record.as_ref().is_some_and(|h| h.tags.is_empty())));
    }
}
