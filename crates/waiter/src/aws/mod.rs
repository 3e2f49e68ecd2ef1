//! Adapters for DynamoDB and SQS. Only this module sees SDK and `AttributeValue` types.

pub mod codec;
pub mod dynamo;
pub mod retime;
pub mod sqs;

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};

pub use dynamo::DynamoStore;
pub use sqs::SqsQueue;

use std::sync::Arc;

use crate::config::{Config, ConfigError};
use crate::error::PortError;

/// What both functions build once per cold start: validated config and the two adapters.
pub struct Adapters {
    pub config: Arc<Config>,
    pub store: DynamoStore,
    pub queue: SqsQueue,
}

impl Adapters {
    /// Reads `WAITER_*` (failing fast, naming the variable) and builds the SDK clients from the
    /// standard AWS environment, `AWS_ENDPOINT_URL` included.
    pub async fn from_env() -> Result<Self, ConfigError> {
        let config = Arc::new(Config::from_env().inspect_err(|e| {
            tracing::error!(variable = e.variable, "invalid configuration: {e}");
        })?);
        let aws = sdk_config().await;
        Ok(Self {
            store: DynamoStore::new(aws_sdk_dynamodb::Client::new(&aws), config.clone()),
            queue: SqsQueue::new(aws_sdk_sqs::Client::new(&aws)),
            config,
        })
    }
}

/// Error codes AWS uses for "slow down" or "try again" across DynamoDB, SQS and KMS. SQS on its
/// JSON protocol reports the query-compatible code in `x-amzn-query-error` (`code;Sender`).
const RETRYABLE_CODES: &[&str] = &[
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "ThrottlingException",
    "Throttling",
    "RequestThrottled",
    "AWS.SimpleQueueService.RequestThrottled",
    "KmsThrottled",
    "KMS.ThrottlingException",
    "TransactionInProgressException",
    "TransactionConflictException",
];

const NOT_FOUND_CODES: &[&str] = &[
    "ResourceNotFoundException",
    "QueueDoesNotExist",
    "AWS.SimpleQueueService.NonExistentQueue",
];

/// Classifies an SDK error by its code and HTTP status, keeping the SDK error as the source.
pub(crate) fn classify<E>(operation: &'static str, resource: &str, err: SdkError<E, HttpResponse>) -> PortError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let code = query_error_code(&err).or_else(|| err.code().map(str::to_owned));
    let status = err.raw_response().map(|r| r.status().as_u16());
    let is_service = matches!(err, SdkError::ServiceError(_));
    match code.as_deref() {
        Some(c) if NOT_FOUND_CODES.contains(&c) => PortError::NotFound {
            resource: resource.to_owned(),
            source: Some(Box::new(err)),
        },
        Some(c) if RETRYABLE_CODES.contains(&c) => PortError::Throttled {
            operation,
            source: Box::new(err),
        },
        _ if is_service && status.is_some_and(|s| (400..500).contains(&s)) && status != Some(429) => {
            PortError::Rejected {
                operation,
                code: code.unwrap_or_else(|| format!("HTTP{}", status.unwrap_or_default())),
                source: Some(Box::new(err)),
            }
        }
        _ => PortError::Transient {
            operation,
            source: Box::new(err),
        },
    }
}

/// The query-compatible code from SQS's `x-amzn-query-error: Code;Fault` header, if present.
fn query_error_code<E>(err: &SdkError<E, HttpResponse>) -> Option<String> {
    let header = err.raw_response()?.headers().get("x-amzn-query-error")?;
    let code = header.split(';').next()?.trim();
    (!code.is_empty()).then(|| code.to_owned())
}

/// The standard AWS environment (`AWS_ENDPOINT_URL` included) with our HTTPS client and timeouts.
pub async fn sdk_config() -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(http_client())
        .timeout_config(timeout_config())
        .load()
        .await
}

/// The one HTTPS client of both functions: hyper 1 with rustls on ring, trusting the system's
/// roots (`SSL_CERT_FILE` and `SSL_CERT_DIR` too). The SDK's default client is not compiled in
/// (see the workspace Cargo.toml), so without this the first call would fail at run time.
pub fn http_client() -> aws_sdk_dynamodb::config::SharedHttpClient {
    use aws_smithy_http_client::tls;
    aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(tls::rustls_provider::CryptoMode::Ring))
        .build_https()
}

/// Timeouts on every SDK call, so that a connection that never answers cannot hold a run past
/// its budget. A poller run also cuts its own calls at its deadline (see `dispatch`); these
/// bound `enqueue` and the SDK's retries. DynamoDB and SQS answer in milliseconds; the
/// attempt timeout leaves room for a large Query page on a busy table.
pub const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);
pub const ATTEMPT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
pub const OPERATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(12);

pub fn timeout_config() -> aws_config::timeout::TimeoutConfig {
    aws_config::timeout::TimeoutConfig::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .operation_attempt_timeout(ATTEMPT_TIMEOUT)
        .operation_timeout(OPERATION_TIMEOUT)
        .build()
}

#[cfg(test)]
mod tests {
    /// The SDK's default HTTPS client is compiled nowhere in the workspace, so a config without
    /// ours would build and then fail at its first call.
    #[tokio::test]
    async fn the_sdk_config_carries_our_https_client() {
        assert!(super::sdk_config().await.http_client().is_some());
    }
}
