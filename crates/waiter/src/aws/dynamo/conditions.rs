//! Conditions and transaction failures: the checks every conditional write shares.

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::types::ConditionCheck;
use chrono::{DateTime, Utc};

use super::*;
use crate::config::QueueName;
use crate::error::PortError;
use crate::ports::StoredJob;

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

/// The condition that the stored item is still `current`'s version (and a job). Items written
/// before versions existed read as version 1.
pub(super) fn same_version(current: &StoredJob) -> &'static str {
    if current.version == 1 {
        "attribute_exists(perform_at) AND (attribute_not_exists(#v) OR #v = :v)"
    } else {
        "attribute_exists(perform_at) AND #v = :v"
    }
}

/// Conditions a write (`DeleteItem`, `PutItem`, or a transaction's `Delete` or `Put`) on the
/// stored item being still `current`'s version: `same_version` with the name and the value it
/// uses, written once.
macro_rules! if_same_version {
    ($builder:expr, $current:expr) => {
        $builder
            .condition_expression(same_version($current))
            .expression_attribute_names("#v", A_VERSION)
            .expression_attribute_values(":v", AttributeValue::N($current.version.to_string()))
    };
}
pub(super) use if_same_version;

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
    } else if reasons
        .iter()
        .flatten()
        .any(|r| RETRYABLE_CANCELLATION_REASONS.contains(&r.as_str()))
        || e.code() == Some("TransactionConflictException")
    {
        Err(PortError::Throttled {
            operation: "TransactWriteItems",
            source: Box::new(e),
        })
    } else {
        Err(classify("TransactWriteItems", resource, e))
    }
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
