//! Queue pauses on DynamoDB: one item per queue (`{queue}#pause` / `pause`), outside the due
//! index (no `perform_at`). Pausing sets its `paused_at`; resuming removes it and adds the pause
//! to `ended_pauses`, the last `RECENT_PAUSES` (the poller's runs judge a series' occurrences
//! that fell due in one missed); senders read it strongly consistent (`ports::PauseGate`).

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, Select};
use chrono::{DateTime, Utc};

use super::super::classify;
use super::super::codec::*;
use super::conditions::is_condition_failed;
use super::DynamoStore;
use crate::config::QueueName;
use crate::error::PortError;
use crate::ports::{with_ended, Partition, Pauses, QueuePause};

#[async_trait]
impl Pauses for DynamoStore {
    async fn queue_pause(&self, queue: &QueueName) -> Result<QueuePause, PortError> {
        let out = self
            .client
            .get_item()
            .table_name(self.table(queue))
            .set_key(Some(pause_key(queue)))
            .consistent_read(true)
            .projection_expression("#at, #ended")
            .expression_attribute_names("#at", A_PAUSED_AT)
            .expression_attribute_names("#ended", A_ENDED_PAUSES)
            .send()
            .await
            .map_err(|e| classify("GetItem", &self.resource(queue), e))?;
        Ok(QueuePause {
            paused_at: out.item.as_ref().and_then(decode_pause),
            ended: out.item.as_ref().map(decode_ended_pauses).unwrap_or_default(),
        })
    }

    async fn pause_queue(&self, queue: &QueueName, at: DateTime<Utc>) -> Result<DateTime<Utc>, PortError> {
        let out = self
            .client
            .update_item()
            .table_name(self.table(queue))
            .set_key(Some(pause_key(queue)))
            .update_expression("SET #at = if_not_exists(#at, :at)")
            .expression_attribute_names("#at", A_PAUSED_AT)
            .expression_attribute_values(":at", n(at))
            .return_values(ReturnValue::AllNew)
            .send()
            .await
            .map_err(|e| classify("UpdateItem", &self.resource(queue), e))?;
        Ok(out.attributes.as_ref().and_then(decode_pause).unwrap_or(at))
    }

    /// A read of the pause item, then its write conditional on the `paused_at` read: the list of
    /// ended pauses takes this one (an update expression cannot put a stored value in a list).
    async fn resume_queue(&self, queue: &QueueName, at: DateTime<Utc>) -> Result<bool, PortError> {
        let pause = self.queue_pause(queue).await?;
        let Some(paused_at) = pause.paused_at else {
            return Ok(false);
        };
        let ended = with_ended(pause.ended, (paused_at, at));
        let out = self
            .client
            .update_item()
            .table_name(self.table(queue))
            .set_key(Some(pause_key(queue)))
            .update_expression("SET #ended = :ended REMOVE #at")
            .condition_expression("#at = :paused")
            .expression_attribute_names("#at", A_PAUSED_AT)
            .expression_attribute_names("#ended", A_ENDED_PAUSES)
            .expression_attribute_values(":ended", encode_ended_pauses(&ended))
            .expression_attribute_values(":paused", n(paused_at))
            .send()
            .await;
        match out {
            Ok(_) => Ok(true),
            Err(e) if is_condition_failed(&e) => Ok(false),
            Err(e) => Err(classify("UpdateItem", &self.resource(queue), e)),
        }
    }

    async fn count_paused(&self, queue: &QueueName, partition: Partition) -> Result<u64, PortError> {
        let mut count = 0u64;
        let mut start = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(self.table(queue))
                .key_condition_expression("#s = :s")
                .filter_expression("attribute_exists(#at)")
                .expression_attribute_names("#s", A_SCHEDULER)
                .expression_attribute_names("#at", A_PAUSED_AT)
                .expression_attribute_values(":s", AttributeValue::S(partition_key(queue, &partition)))
                .select(Select::Count)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| classify("Query", &self.resource(queue), e))?;
            count += u64::try_from(out.count).unwrap_or_default();
            start = out.last_evaluated_key;
            if start.is_none() {
                return Ok(count);
            }
        }
    }
}
