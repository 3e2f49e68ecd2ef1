//! A queue's items by item format (`stats` with `formats`): one `Query` per partition that
//! holds jobs, history records or a lease, projecting `item_format` only. Each item is read
//! once, eventually consistent: 0.5 read units per 4 KB of item (a projection does not lower
//! the bill; docs/cost.md).

use std::collections::BTreeMap;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;

use super::super::classify;
use super::super::codec::*;
use super::DynamoStore;
use crate::config::QueueName;
use crate::error::PortError;
use crate::ports::{Census, Partition};

#[async_trait]
impl Census for DynamoStore {
    async fn count_formats(&self, queue: &QueueName, shards: &[u32]) -> Result<BTreeMap<String, u64>, PortError> {
        let mut partitions: Vec<String> = shards
            .iter()
            .map(|n| partition_key(queue, &Partition::Shard(*n)))
            .collect();
        partitions.push(partition_key(queue, &Partition::Parked));
        partitions.extend(
            shards
                .iter()
                .filter_map(|n| match lease_key(queue, *n).remove(A_SCHEDULER) {
                    Some(AttributeValue::S(p)) => Some(p),
                    _ => None,
                }),
        );
        let mut formats = BTreeMap::new();
        for partition in partitions {
            let mut pages = self
                .client
                .query()
                .table_name(self.table(queue))
                .key_condition_expression("#p = :p")
                .projection_expression("#f")
                .expression_attribute_names("#p", A_SCHEDULER)
                .expression_attribute_names("#f", A_ITEM_FORMAT)
                .expression_attribute_values(":p", AttributeValue::S(partition))
                .into_paginator()
                .send();
            while let Some(page) = pages.next().await {
                let page = page.map_err(|e| classify("Query", &self.resource(queue), e))?;
                for item in page.items.unwrap_or_default() {
                    *formats.entry(format_named(item.get(A_ITEM_FORMAT))).or_default() += 1;
                }
            }
        }
        Ok(formats)
    }
}

/// An item's format as `stats` names it: `"1"` when unmarked, `"?"` when no whole number.
pub(crate) fn format_named(value: Option<&AttributeValue>) -> String {
    match value {
        None => "1".to_owned(),
        Some(AttributeValue::N(v)) => v.parse::<u64>().map_or_else(|_| "?".to_owned(), |n| n.to_string()),
        Some(_) => "?".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_named_as_the_format_check_reads_them() {
        assert_eq!(format_named(None), "1");
        assert_eq!(format_named(Some(&AttributeValue::N("2".into()))), "2");
        assert_eq!(format_named(Some(&AttributeValue::N("2.5".into()))), "?");
        assert_eq!(format_named(Some(&AttributeValue::S("2".into()))), "?");
    }
}
