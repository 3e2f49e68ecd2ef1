//! Removals at 1 write unit each (issue 45): up to 25 conditional PartiQL statements in one
//! `BatchExecuteStatement`. A `TransactWriteItems` bills 2 write units per item; a statement
//! bills as the single-item write it is (docs/cost.md, "Calls per job").
//!
//! Each statement carries the edition condition of `conditions::same_edition`, so a statement
//! sent again (by the SDK after a lost reply, or by a later run) never takes a newer edition:
//! - a removal is `DELETE ... WHERE <keys> AND <edition>`;
//! - a removal that leaves a history record is `UPDATE ... SET <record> REMOVE <the job's other
//!   attributes> WHERE <keys> AND <edition>`: the record has no `perform_at`, so the same
//!   statement again finds its condition false.
//!
//! DynamoDB answers each statement on its own (`ConditionalCheckFailed`, a throttle), so only
//! the statements that need it are sent again. Moto does not run parameterised PartiQL
//! (`Quirk::NoPartiql` in the e2e crate): it answers with an HTML 500, which is what `unsupported`
//! recognises, and the store then removes by transaction for the rest of the process. The
//! process's first batch is sent without the SDK's retries, so that finding out costs one call.

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::batch_execute_statement::BatchExecuteStatementError;
use aws_sdk_dynamodb::types::{AttributeValue, BatchStatementErrorCodeEnum, BatchStatementRequest};

use super::*;
use crate::error::BoxError;
use crate::ports::Edition;

/// Rounds of statements refused only for throttling or a conflict before their removals are
/// left for the next run (they stay in the lease's debts).
const THROTTLED_ROUNDS: u32 = 3;
/// Room for a removal's text: a record's update, with every clause, is about 900 bytes.
const STATEMENT_CAPACITY: usize = 1024;

/// Every attribute a job's item may hold besides its keys (`codec::encode`): what an `UPDATE`
/// that turns the job into its history record removes, less what the record sets.
fn job_attributes() -> impl Iterator<Item = &'static str> {
    ATTRIBUTES_WITHOUT_MESSAGE
        .iter()
        .copied()
        .filter(|a| *a != A_SCHEDULER && *a != A_JOB_ID)
        .chain([A_MESSAGE_BODY, A_MESSAGE_BODY_DEFLATE, A_MESSAGE_ATTRIBUTES])
}

/// What this process knows of the backend's PartiQL (`DynamoStore::statements`).
pub(super) const PARTIQL_UNKNOWN: u8 = 0;
pub(super) const PARTIQL_RUNS: u8 = 1;
pub(super) const PARTIQL_ABSENT: u8 = 2;

/// How a batch of statements ended.
pub(super) enum Statements {
    Done,
    /// The backend does not run PartiQL: nothing was applied.
    Unsupported,
}

/// Appends a PartiQL identifier: in double quotes, a quote inside doubled. (Statements are built
/// in one buffer: a run builds one per job it sends, and a record's has some 30 clauses.)
fn push_quoted(text: &mut String, name: &str) {
    text.push('"');
    for part in name.split_inclusive('"') {
        text.push_str(part);
        if part.ends_with('"') {
            text.push('"');
        }
    }
    text.push('"');
}

/// Appends ` <keyword> "<name>"<tail>`: one clause.
fn push_clause(text: &mut String, keyword: &str, name: &str, tail: &str) {
    text.push(' ');
    text.push_str(keyword);
    text.push(' ');
    push_quoted(text, name);
    text.push_str(tail);
}

/// Appends the edition condition of `conditions::same_edition` in PartiQL; returns its two
/// parameters.
fn push_edition_condition(text: &mut String, edition: Edition) -> [AttributeValue; 2] {
    push_quoted(text, A_PERFORM_AT);
    text.push_str(" IS NOT MISSING AND (");
    push_quoted(text, A_ENQUEUED_AT);
    text.push_str(" IS MISSING OR ");
    push_quoted(text, A_ENQUEUED_AT);
    text.push_str(" = ?) AND ");
    if edition.version == 1 {
        // Items in the seed's format carry no version: the first edition may lack one.
        text.push('(');
        push_quoted(text, A_VERSION);
        text.push_str(" IS MISSING OR ");
        push_quoted(text, A_VERSION);
        text.push_str(" = ?)");
    } else {
        push_quoted(text, A_VERSION);
        text.push_str(" = ?");
    }
    // Of a format this release reads, as `same_edition` (issue 82).
    text.push_str(" AND (");
    push_quoted(text, A_ITEM_FORMAT);
    text.push_str(" IS MISSING OR ");
    push_quoted(text, A_ITEM_FORMAT);
    text.push_str(&format!(" <= {ITEM_FORMAT})"));
    [n(edition.enqueued_at), AttributeValue::N(edition.version.to_string())]
}

/// One removal as a statement: the conditional delete, or the update into its history record.
pub(super) fn removal_statement(
    queue: &QueueName,
    table: &str,
    retired: &Retired,
    record: Option<&Item>,
) -> Result<BatchStatementRequest, PortError> {
    let keys = key(queue, &retired.key);
    let mut parameters: Vec<AttributeValue> = Vec::new();
    let mut text = String::with_capacity(STATEMENT_CAPACITY);
    match record {
        None => {
            text.push_str("DELETE FROM ");
            push_quoted(&mut text, table);
        }
        Some(record) => {
            text.push_str("UPDATE ");
            push_quoted(&mut text, table);
            let mut set: Vec<(&String, &AttributeValue)> = record
                .iter()
                .filter(|(name, _)| name.as_str() != A_SCHEDULER && name.as_str() != A_JOB_ID)
                .collect();
            set.sort_by(|a, b| a.0.cmp(b.0));
            parameters.reserve(set.len() + 4);
            for (name, value) in set {
                push_clause(&mut text, "SET", name, " = ?");
                parameters.push(value.clone());
            }
            // A series' move keeps the rest of its item.
            let keeps_the_rest = retired.advance.is_some() && retired.record.is_none();
            for name in job_attributes().filter(|a| !keeps_the_rest && !record.contains_key(*a)) {
                push_clause(&mut text, "REMOVE", name, "");
            }
            if keeps_the_rest {
                // What the move removes, as `set_expression` does.
                for name in advance_removes(record) {
                    push_clause(&mut text, "REMOVE", name, "");
                }
            }
        }
    }
    push_clause(&mut text, "WHERE", A_SCHEDULER, " = ? AND ");
    push_quoted(&mut text, A_JOB_ID);
    text.push_str(" = ? AND ");
    let edition_values = push_edition_condition(&mut text, retired.edition);
    for name in [A_SCHEDULER, A_JOB_ID] {
        let value = keys.get(name).cloned().ok_or_else(|| PortError::Internal {
            operation: "BatchExecuteStatement",
            source: format!("the key has no {name}").into(),
        })?;
        parameters.push(value);
    }
    parameters.extend(edition_values);
    BatchStatementRequest::builder()
        .statement(text)
        .set_parameters(Some(parameters))
        .build()
        .map_err(|e| internal("BatchExecuteStatement", e))
}

/// What to do with one statement's answer.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    /// Applied; or its condition failed: the job is gone already (the statement applied
    /// before, its reply lost) or the key holds another edition. Done either way.
    Done,
    /// Throttled, a conflict or a fault on DynamoDB's side: the same statement may succeed.
    Again,
    /// Refused for what it is: the same statement fails again.
    Refused(String),
}

fn answer(code: Option<&BatchStatementErrorCodeEnum>) -> Answer {
    use BatchStatementErrorCodeEnum as C;
    match code {
        None | Some(C::ConditionalCheckFailed) => Answer::Done,
        Some(
            C::ProvisionedThroughputExceeded
            | C::RequestLimitExceeded
            | C::ThrottlingError
            | C::TransactionConflict
            | C::InternalServerError,
        ) => Answer::Again,
        Some(other) => Answer::Refused(other.as_str().to_owned()),
    }
}

/// Whether the call was answered by something that is not DynamoDB's PartiQL: a server error
/// without a DynamoDB error type (moto's HTML 500). DynamoDB's own 500 names its type.
fn unsupported(e: &SdkError<BatchExecuteStatementError, HttpResponse>) -> bool {
    let status = e.raw_response().map(|r| r.status().as_u16());
    status.is_some_and(|s| s >= 500) && e.code().is_none()
}

impl DynamoStore {
    /// One batch of at most `DDB_MAX_BATCH_STATEMENTS` removals. With `probe` (the process's
    /// first), the first call goes without the SDK's retries, so that a backend without PartiQL
    /// is known at once instead of after the retries' backoff; any other failure of it is sent
    /// again with them.
    pub(super) async fn retire_statements(
        &self,
        queue: &QueueName,
        table: &str,
        mut batch: Vec<(&Retired, Option<&Item>)>,
        mut probe: bool,
    ) -> Result<Statements, PortError> {
        let mut round = 0;
        loop {
            if batch.is_empty() {
                return Ok(Statements::Done);
            }
            let statements = batch
                .iter()
                .map(|(r, record)| removal_statement(queue, table, r, *record))
                .collect::<Result<Vec<_>, _>>()?;
            let call = self.client.batch_execute_statement().set_statements(Some(statements));
            let sent = match probe {
                true => {
                    let once = aws_sdk_dynamodb::config::Builder::default()
                        .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled());
                    call.customize().config_override(once).send().await
                }
                false => call.send().await,
            };
            let responses = match sent {
                Ok(out) => out.responses.unwrap_or_default(),
                Err(e) if unsupported(&e) => return Ok(Statements::Unsupported),
                // The same statements again, with the SDK's retries: each carries its condition.
                Err(_) if probe => {
                    probe = false;
                    continue;
                }
                Err(e) => return Err(classify("BatchExecuteStatement", &self.resource(queue), e)),
            };
            probe = false;
            if responses.len() != batch.len() {
                return Err(PortError::Transient {
                    operation: "BatchExecuteStatement",
                    source: format!("{} answers to {} statements", responses.len(), batch.len()).into(),
                });
            }
            let mut again = Vec::new();
            for (removal, response) in batch.into_iter().zip(responses) {
                let code = response.error.as_ref().and_then(|e| e.code.as_ref());
                match answer(code) {
                    Answer::Done => {}
                    Answer::Again => again.push(removal),
                    Answer::Refused(code) => {
                        return Err(PortError::Rejected {
                            operation: "BatchExecuteStatement",
                            code,
                            source: response.error.and_then(|e| e.message).map(|m| -> BoxError { m.into() }),
                        })
                    }
                }
            }
            batch = again;
            if batch.is_empty() {
                return Ok(Statements::Done);
            }
            round += 1;
            if round >= THROTTLED_ROUNDS {
                return Err(PortError::Throttled {
                    operation: "BatchExecuteStatement",
                    source: format!("{} statements throttled {round} times", batch.len()).into(),
                });
            }
            backoff(round).await;
        }
    }
}

/// What a series' move (`advance_set`) removes from its item. Moved on, a series no longer
/// waits for a window, and its next occurrence has not been sent: the mark of one that may have
/// been is the last occurrence's, not its, unless the move sets the arrival of the one just
/// sent. Back from a `trigger`'s extra occurrence, the item is as it was before it (its hold,
/// and that mark, kept) less the pending extra.
pub(super) fn advance_removes(set: &Item) -> Vec<&'static str> {
    if set.contains_key(A_REPEAT_EXTRA_LAST) {
        return vec![A_REPEAT_EXTRA_RETURNS_TO];
    }
    [A_REPEAT_HELD, A_MAYBE_DELIVERED_AT]
        .into_iter()
        .filter(|a| !set.contains_key(*a))
        .collect()
}

#[cfg(test)]
#[path = "statements_tests.rs"]
mod tests;
