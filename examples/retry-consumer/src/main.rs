//! An SQS consumer Lambda that retries what it fails on through sqs-waiter: attempt n+1 comes
//! back at exponential backoff with `waiter.attempt` = n+1, for as long as the policy allows
//! (past SQS's 12-hour visibility limit), then the job is parked for `redrive`.
//!
//! Only a record it could not hand back is reported as a batch item failure, so SQS redelivers
//! that one (the event source mapping needs `FunctionResponseTypes: [ReportBatchItemFailures]`).
//! On a FIFO queue it stops at that record and reports it and every later one, unprocessed, as
//! AWS requires of a FIFO batch handler, so no later message of its group runs before it
//! (<https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html>).
//!
//! The job a message is retried under: its `waiter.job_id` (a replayed copy names itself), else
//! the body's `order_id`; its attempt is `waiter.attempt` (absent: 1).
//!
//! Settings: `SQS_WAITER_FUNCTION` (default `sqs-waiter-enqueue`). Bodies are JSON with an
//! `order_id`, the job's id across attempts; `"outcome": "fail"` makes the work fail.

use std::collections::BTreeMap;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent, SqsMessage};
use aws_smithy_http_client::tls;
use base64::Engine as _;
use lambda_runtime::{run, service_fn, Error, LambdaEvent};
use sqs_waiter_client::{attempt_of, job_id_of, Client, JobStatus, MessageAttribute, Retry, RetryPolicy};

/// Seconds before the second attempt; each next one waits twice as long, at most a day.
const RETRY_BASE_S: u64 = 2;
const MAX_ATTEMPTS: u32 = 5;

#[derive(serde::Deserialize)]
struct Order {
    order_id: String,
    #[serde(default)]
    outcome: Option<String>,
}

/// The work itself: here, an order fails when it says so.
fn process(order: &Order, attempt: u32) -> Result<(), String> {
    match order.outcome.as_deref() {
        Some("fail") => Err(format!("payment API timed out (attempt {attempt})")),
        _ => Ok(()),
    }
}

/// The queue's name: the last part of the record's `eventSourceARN`.
fn queue_of(record: &SqsMessage) -> Option<&str> {
    record.event_source_arn.as_deref()?.rsplit(':').next()
}

/// The record's message attributes as sqs-waiter takes them.
fn attributes_of(record: &SqsMessage) -> BTreeMap<String, MessageAttribute> {
    record
        .message_attributes
        .iter()
        .map(|(name, a)| {
            let attribute = MessageAttribute {
                data_type: a.data_type.clone().unwrap_or_else(|| "String".into()),
                string_value: a.string_value.clone(),
                binary_value: a
                    .binary_value
                    .as_ref()
                    .map(|b| base64::engine::general_purpose::STANDARD.encode(&b.0)),
            };
            (name.clone(), attribute)
        })
        .collect()
}

/// Processes one record; on failure hands it back to `retry`. `Err` only when it could not be
/// handed back: then SQS must redeliver it.
async fn handle(client: &Client, policy: &RetryPolicy, record: &SqsMessage) -> Result<(), String> {
    let body = record.body.as_deref().unwrap_or_default();
    let attributes = attributes_of(record);
    let attempt = attempt_of(&attributes);
    let order: Order = serde_json::from_str(body).map_err(|e| format!("unreadable body: {e}"))?;
    let Err(error) = process(&order, attempt) else {
        return Ok(());
    };
    let queue = queue_of(record).ok_or("no eventSourceARN")?;
    let job_id = job_id_of(&attributes, &order.order_id).to_owned();
    let mut retry = Retry::new(queue, &job_id, attempt, body)
        .attributes(attributes)
        .policy(policy)
        .error(error);
    if let Some(group) = record.attributes.get("MessageGroupId") {
        retry = retry.group(group.clone());
    }
    let reply = client.retry_request(&retry).await.map_err(|e| e.to_string())?;
    tracing::info!(job_id = %job_id, attempt, status = %reply.status, next = ?reply.attempt, "handed back");
    match reply.status {
        // Scheduled (or already), parked for good, stale, cancelled by an operator, or past its
        // expiry: either way this delivery is done.
        JobStatus::Scheduled | JobStatus::Parked | JobStatus::Conflict | JobStatus::Cancelled | JobStatus::Expired => {
            Ok(())
        }
        other => Err(format!("retry answered {other}")),
    }
}

async fn handler(
    client: &Client,
    policy: &RetryPolicy,
    event: LambdaEvent<SqsEvent>,
) -> Result<SqsBatchResponse, Error> {
    let mut response = SqsBatchResponse::default();
    let mut stopped = false;
    for record in &event.payload.records {
        let id = record.message_id.clone().unwrap_or_default();
        if stopped {
            response.add_failure(id);
            continue;
        }
        if let Err(e) = handle(client, policy, record).await {
            tracing::warn!(message_id = %id, error = %e, "left for SQS to redeliver");
            response.add_failure(id);
            stopped = queue_of(record).is_some_and(|q| q.ends_with(".fifo"));
        }
    }
    Ok(response)
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let function = std::env::var("SQS_WAITER_FUNCTION").unwrap_or_else(|_| "sqs-waiter-enqueue".into());
    // rustls on ring, as sqs-waiter's functions: this workspace leaves out the SDK's default
    // HTTPS client (rustls on aws-lc). With aws-config's default features, `load_defaults`
    // alone is enough.
    let https = aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(tls::rustls_provider::CryptoMode::Ring))
        .build_https();
    let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(https)
        .load()
        .await;
    let client = Client::new(aws_sdk_lambda::Client::new(&config), function);
    let policy = RetryPolicy::exponential(RETRY_BASE_S, 2.0, 86_400)
        .jitter(false)
        .max_attempts(MAX_ATTEMPTS);
    run(service_fn(|event| handler(&client, &policy, event))).await
}
