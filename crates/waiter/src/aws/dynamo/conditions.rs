//! Conditions and transaction failures: the checks every conditional write shares.

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::ConditionCheck;
use chrono::{DateTime, Utc};

use super::*;
use crate::config::QueueName;
use crate::error::PortError;
use crate::ports::Edition;

/// Transaction cancellation reasons that a retry can clear.
/// <https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html>
pub(super) const RETRYABLE_CANCELLATION_REASONS: &[&str] = &[
    "TransactionConflict",
    "ThrottlingError",
    "ProvisionedThroughputExceeded",
];

/// The check that no poller's lease item covers a job due at `perform_at`. The lease's `until`
/// does not matter: a run that could not remove what it sent keeps its lease item, so a job
/// whose message SQS accepted is never changed or reported cancelled.
pub(super) fn lease_does_not_cover(
    table: &str,
    queue: &QueueName,
    shard: u32,
    perform_at: DateTime<Utc>,
) -> Result<ConditionCheck, PortError> {
    ConditionCheck::builder()
        .table_name(table)
        .set_key(Some(lease_key(queue, shard)))
        .condition_expression("attribute_not_exists(#horizon) OR #horizon < :perform_at")
        .expression_attribute_names("#horizon", A_LEASE_HORIZON)
        .expression_attribute_values(":perform_at", n(perform_at))
        .build()
        .map_err(|e| internal("TransactWriteItems", e))
}

/// The condition that the stored item is still this edition of a job: the same life
/// (`enqueued_at`) and the same version. Items written before versions existed read as version
/// 1, and items written before `enqueued_at` was stored match any life.
///
/// And of a format this release reads (issue 82): a write of an item read a moment ago never
/// lands on one a later release wrote since, whatever that release did to `version`. A whole
/// item written back drops what this release does not know; a later release whose attribute
/// must outlive an earlier one's rewrite raises the format on the items that carry it
/// (docs/upgrades.md "Item formats"), and this condition is what makes that rule hold.
pub(super) fn same_edition(edition: Edition) -> &'static str {
    if edition.version == 1 {
        "attribute_exists(perform_at) AND (attribute_not_exists(#e) OR #e = :e) \
         AND (attribute_not_exists(#v) OR #v = :v) AND (attribute_not_exists(#f) OR #f <= :f)"
    } else {
        "attribute_exists(perform_at) AND (attribute_not_exists(#e) OR #e = :e) AND #v = :v \
         AND (attribute_not_exists(#f) OR #f <= :f)"
    }
}

/// Conditions a write (`DeleteItem`, `PutItem`, or a transaction's `Delete` or `Put`) on the
/// stored item being still this edition (`same_edition`), with the names and values it uses,
/// written once. `$free` also lets the write through when the key holds nothing.
macro_rules! if_same_edition {
    ($builder:expr, $edition:expr) => {
        if_same_edition!(@with $builder, $edition, same_edition($edition).to_owned())
    };
    ($builder:expr, $edition:expr, or_free) => {
        if_same_edition!(@with $builder, $edition, format!("attribute_not_exists(job_id) OR ({})", same_edition($edition)))
    };
    (@with $builder:expr, $edition:expr, $condition:expr) => {
        $builder
            .condition_expression($condition)
            .expression_attribute_names("#v", A_VERSION)
            .expression_attribute_names("#e", A_ENQUEUED_AT)
            .expression_attribute_names("#f", A_ITEM_FORMAT)
            .expression_attribute_values(":f", AttributeValue::N(ITEM_FORMAT.to_string()))
            .expression_attribute_values(":v", AttributeValue::N($edition.version.to_string()))
            .expression_attribute_values(":e", n($edition.enqueued_at))
    };
}
pub(super) use if_same_edition;

/// Reads a refused transaction: `Ok(i)` when the condition of the item at index `i` failed, else
/// the error to return (throttled when a conflict or short capacity means a retry can succeed).
pub(super) fn failed_condition(
    e: SdkError<aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError, HttpResponse>,
    resource: &str,
) -> Result<usize, PortError> {
    let reasons = cancellation_reasons(&e);
    if let Some(i) = reasons
        .iter()
        .position(|r| r.as_deref() == Some("ConditionalCheckFailed"))
    {
        Ok(i)
    } else if is_retryable_cancellation(&e, &reasons) {
        Err(PortError::Throttled {
            operation: "TransactWriteItems",
            source: Box::new(e),
        })
    } else {
        Err(classify("TransactWriteItems", resource, e))
    }
}

/// A refused transaction that the same call may clear when sent again: a conflict with another
/// transaction, or capacity DynamoDB lacked at that moment.
pub(super) fn is_retryable_cancellation(
    e: &SdkError<aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError, HttpResponse>,
    reasons: &[Option<String>],
) -> bool {
    reasons
        .iter()
        .flatten()
        .any(|r| RETRYABLE_CANCELLATION_REASONS.contains(&r.as_str()))
        || e.code() == Some("TransactionConflictException")
}

/// The one "conditional check failed" test, for every conditional write.
pub(super) fn is_condition_failed<E: ProvideErrorMetadata>(e: &SdkError<E, HttpResponse>) -> bool {
    e.code() == Some("ConditionalCheckFailedException")
}

/// `TransactionCanceledException` reasons, in the order of the transaction's items.
pub(super) fn cancellation_reasons(
    e: &SdkError<aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError, HttpResponse>,
) -> Vec<Option<String>> {
    match e.as_service_error() {
        Some(
            aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError::TransactionCanceledException(c),
        ) => c
            .cancellation_reasons()
            .iter()
            .map(|r| r.code().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}
