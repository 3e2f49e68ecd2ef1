//! The pollers' leases on DynamoDB: one lease item per shard, taken, handed on and released by
//! conditional `UpdateItem`s. A release keeps the item with its run's start only (and, when
//! the rate held jobs back, its threshold), which the next run reads as its `PreviousRun` (one
//! write unit, as a `DeleteItem` of it would cost).

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};
use chrono::{DateTime, Utc};
use tracing::error;

use super::super::classify;
use super::super::codec::*;
use super::conditions::is_condition_failed;
use super::DynamoStore;
use crate::config::QueueName;
use crate::error::PortError;
use crate::ports::{Lease, LeaseOutcome, Leases, Retired};

#[async_trait]
impl Leases for DynamoStore {
    async fn acquire_lease(
        &self,
        queue: &QueueName,
        shard: u32,
        lease: &Lease,
        now: DateTime<Utc>,
    ) -> Result<LeaseOutcome, PortError> {
        let update = |horizon: DateTime<Utc>| {
            self.client
                .update_item()
                .table_name(self.table(queue))
                .set_key(Some(lease_key(queue, shard)))
                // Debts stay on the item until it is released or handed on again, so that an
                // SDK retry of this call (whose first attempt was applied) still reads them.
                .update_expression("SET #owner = :owner, #until = :until, #horizon = :horizon, #started = :now")
                // A lease a later release marked (`item_format`: its debts hold a record of its
                // format) is not written at all: taking it over would move its times and lock
                // that release out (issue 82).
                .condition_expression(
                    "(attribute_not_exists(#until) OR #until < :now OR #owner = :owner) \
                     AND (attribute_not_exists(#format) OR #format <= :format)",
                )
                .expression_attribute_names("#owner", A_LEASE_OWNER)
                .expression_attribute_names("#until", A_LEASE_UNTIL)
                .expression_attribute_names("#horizon", A_LEASE_HORIZON)
                .expression_attribute_names("#started", A_LEASE_STARTED)
                .expression_attribute_names("#format", A_ITEM_FORMAT)
                .expression_attribute_values(":format", AttributeValue::N(ITEM_FORMAT.to_string()))
                .expression_attribute_values(":owner", AttributeValue::S(lease.owner.clone()))
                .expression_attribute_values(":until", n(lease.until))
                .expression_attribute_values(":horizon", n(horizon))
                .expression_attribute_values(":now", n(now))
                .return_values(ReturnValue::AllOld)
                .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
                .send()
        };
        match update(lease.horizon).await {
            Ok(out) => {
                let old = out.attributes.unwrap_or_default();
                if let Some(format) = debts_newer_format(&old) {
                    // A record of a later format in debts that the lease item does not mark
                    // (the condition above keeps out every marked one): settling them is that
                    // release's. This run leaves the partition and the debts as they are.
                    return Err(later_release(queue, shard, format));
                }
                let debts = decode_debts(queue, &old).unwrap_or_else(|reason| {
                    // The next run re-reads and re-sends what its index shows, as after a crash.
                    error!(queue = %queue, shard, reason, "unreadable lease debts ignored");
                    Vec::new()
                });
                // A lapsed lease left by a run that could not clean up: keep covering its
                // horizon.
                let previous = decode_lease(&old);
                let handed_on_by = match old.get(A_LEASE_HANDED_ON_BY) {
                    Some(AttributeValue::S(o)) => Some(o.as_str()),
                    _ => None,
                };
                let inherited = previous
                    .as_ref()
                    .filter(|l| l.left_unsettled(handed_on_by))
                    .map(|l| l.horizon);
                // An SDK retry whose first attempt was applied reads this run's own start.
                let ours = previous.as_ref().is_some_and(|l| l.owner == lease.owner);
                let previous_run = decode_previous_run(&old).filter(|_| !ours);
                let horizon = match previous.map(|l| l.horizon) {
                    Some(h) if h > lease.horizon => {
                        update(h)
                            .await
                            .map_err(|e| classify("UpdateItem", &self.resource(queue), e))?;
                        h
                    }
                    _ => lease.horizon,
                };
                Ok(LeaseOutcome::Acquired {
                    horizon,
                    inherited,
                    debts,
                    previous: previous_run,
                })
            }
            Err(e) if is_condition_failed(&e) => {
                let old = match e.into_service_error() {
                    aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(c) => {
                        c.item
                    }
                    _ => None,
                };
                if let Some(format) = old.as_ref().and_then(debts_newer_format) {
                    // Marked by a later release, held or not: nothing was written, and the
                    // partition waits for the functions to be updated.
                    return Err(later_release(queue, shard, format));
                }
                Ok(LeaseOutcome::Held(old.as_ref().and_then(decode_lease)))
            }
            Err(e) => Err(classify("UpdateItem", &self.resource(queue), e)),
        }
    }

    async fn release_lease(
        &self,
        queue: &QueueName,
        shard: u32,
        owner: &str,
        held_back_from: Option<DateTime<Utc>>,
    ) -> Result<(), PortError> {
        let update = match held_back_from {
            // The lease's format mark goes with its debts (`hand_on`).
            Some(_) => "SET #held = :held REMOVE #owner, #until, #horizon, #debts, #by, #format",
            None => "REMOVE #owner, #until, #horizon, #debts, #by, #held, #format",
        };
        let res = self
            .client
            .update_item()
            .table_name(self.table(queue))
            .set_key(Some(lease_key(queue, shard)))
            .update_expression(update)
            .expression_attribute_names("#held", A_LEASE_ON_TIME_FROM)
            .set_expression_attribute_values(held_back_from.map(|t| HashMap::from([(":held".to_owned(), n(t))])))
            .condition_expression("#owner = :owner")
            .expression_attribute_names("#owner", A_LEASE_OWNER)
            .expression_attribute_names("#until", A_LEASE_UNTIL)
            .expression_attribute_names("#horizon", A_LEASE_HORIZON)
            .expression_attribute_names("#debts", A_LEASE_DEBTS)
            .expression_attribute_names("#by", A_LEASE_HANDED_ON_BY)
            .expression_attribute_names("#format", A_ITEM_FORMAT)
            .expression_attribute_values(":owner", AttributeValue::S(owner.to_owned()))
            .send()
            .await;
        match res {
            Ok(_) => Ok(()),
            // Someone took over a lapsed lease: theirs now.
            Err(e) if is_condition_failed(&e) => Ok(()),
            Err(e) => Err(classify("UpdateItem", &self.resource(queue), e)),
        }
    }

    async fn hand_on(
        &self,
        queue: &QueueName,
        shard: u32,
        owner: &str,
        debts: &[Retired],
        until: DateTime<Utc>,
    ) -> Result<bool, PortError> {
        // Debts holding a record of format 2 (tags) mark the lease item with it, so that an
        // earlier release neither takes the lease over nor settles them (docs/upgrades.md).
        let format = debts_format(debts);
        let update = match format {
            Some(_) => "SET #until = :until, #debts = :debts, #by = :owner, #format = :format",
            None => "SET #until = :until, #debts = :debts, #by = :owner REMOVE #format",
        };
        let res = self
            .client
            .update_item()
            .table_name(self.table(queue))
            .set_key(Some(lease_key(queue, shard)))
            .update_expression(update)
            .expression_attribute_names("#format", A_ITEM_FORMAT)
            .set_expression_attribute_values(
                format.map(|f| HashMap::from([(":format".to_owned(), AttributeValue::N(f.to_string()))])),
            )
            .condition_expression("#owner = :owner")
            .expression_attribute_names("#owner", A_LEASE_OWNER)
            .expression_attribute_names("#until", A_LEASE_UNTIL)
            .expression_attribute_names("#debts", A_LEASE_DEBTS)
            .expression_attribute_names("#by", A_LEASE_HANDED_ON_BY)
            .expression_attribute_values(":owner", AttributeValue::S(owner.to_owned()))
            .expression_attribute_values(":until", n(until))
            .expression_attribute_values(":debts", encode_debts(queue, debts))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if is_condition_failed(&e) => Ok(false),
            Err(e) => Err(classify("UpdateItem", &self.resource(queue), e)),
        }
    }

    async fn lease_covers(
        &self,
        queue: &QueueName,
        shard: u32,
        perform_at: DateTime<Utc>,
        since: DateTime<Utc>,
    ) -> Result<bool, PortError> {
        let out = self
            .client
            .get_item()
            .table_name(self.table(queue))
            .set_key(Some(lease_key(queue, shard)))
            .consistent_read(true)
            .projection_expression("#horizon, #until")
            .expression_attribute_names("#horizon", A_LEASE_HORIZON)
            .expression_attribute_names("#until", A_LEASE_UNTIL)
            .send()
            .await
            .map_err(|e| classify("GetItem", &self.resource(queue), e))?;
        let time = |name: &str| {
            out.item.as_ref().and_then(|item| match item.get(name) {
                Some(AttributeValue::N(v)) => crate::time::parse_epoch_decimal(v),
                _ => None,
            })
        };
        let (horizon, until) = (time(A_LEASE_HORIZON), time(A_LEASE_UNTIL));
        Ok(horizon.is_some_and(|h| h >= perform_at) && until.is_some_and(|u| u >= since))
    }
}

/// A lease that a later release handed on: retryable, naming the format and the release.
fn later_release(queue: &QueueName, shard: u32, format: u64) -> PortError {
    PortError::Transient {
        operation: "UpdateItem",
        source: format!("the lease of {queue}#{shard}: {}", newer_reason(format)).into(),
    }
}
