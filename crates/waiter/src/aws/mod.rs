//! Adapters for DynamoDB and SQS. Only this module sees SDK and `AttributeValue` types.

pub mod dynamo;
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
        let aws = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        Ok(Self {
            store: DynamoStore::new(aws_sdk_dynamodb::Client::new(&aws), config.clone()),
            queue: SqsQueue::new(aws_sdk_sqs::Client::new(&aws)),
            config,
        })
    }
}

/// Error codes AWS uses for "slow down" across DynamoDB, SQS and KMS.
const THROTTLING_CODES: &[&str] = &[
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "ThrottlingException",
    "Throttling",
    "RequestThrottled",
    "AWS.SimpleQueueService.RequestThrottled",
    "KmsThrottled",
    "TransactionInProgressException",
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
    let code = err.code().map(str::to_owned);
    let status = err.raw_response().map(|r| r.status().as_u16());
    let is_service = matches!(err, SdkError::ServiceError(_));
    match code.as_deref() {
        Some(c) if NOT_FOUND_CODES.contains(&c) => PortError::NotFound {
            resource: resource.to_owned(),
            source: Some(Box::new(err)),
        },
        Some(c) if THROTTLING_CODES.contains(&c) => PortError::Throttled {
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
