//! The `enqueue` Lambda: schedules SQS messages for any time in the future.

use std::sync::Arc;

use aws_config::BehaviorVersion;
use lambda_runtime::{run, service_fn, Diagnostic, Error, LambdaEvent};
use serde_json::Value;
use waiter::aws::{DynamoStore, SqsQueue};
use waiter::job::Payload;
use waiter::ports::SystemClock;
use waiter::{Config, Waiter};

type App = Waiter<DynamoStore, SqsQueue, SystemClock>;

async fn handler(app: &App, event: LambdaEvent<Payload>) -> Result<Value, Diagnostic> {
    let result = match event.payload.into_value() {
        Ok(request) => app.handle(&request).await,
        Err(invalid) => Err(invalid.into()),
    };
    result.map_err(|e| {
        tracing::warn!(error_type = e.error_type(), retryable = e.is_retryable(), error = %e.message(), "request failed");
        Diagnostic {
            error_type: e.error_type().to_owned(),
            error_message: e.message(),
        }
    })
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_runtime::tracing::init_default_subscriber();
    let config = match Config::from_env() {
        Ok(c) => Arc::new(c),
        Err(e) => {
            tracing::error!(variable = e.variable, "invalid configuration: {e}");
            return Err(e.into());
        }
    };
    let aws = aws_config::load_defaults(BehaviorVersion::latest()).await;
    let app = Waiter::new(
        config.clone(),
        DynamoStore::new(aws_sdk_dynamodb::Client::new(&aws), config),
        SqsQueue::new(aws_sdk_sqs::Client::new(&aws)),
        SystemClock,
    );
    run(service_fn(|event| handler(&app, event))).await
}
