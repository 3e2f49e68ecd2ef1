//! The `enqueue` Lambda: schedules SQS messages for any time in the future.

use lambda_runtime::{run, service_fn, Diagnostic, Error, LambdaEvent};
use waiter::aws::{Adapters, DynamoStore, SqsQueue};
use waiter::ports::SystemClock;
use waiter::rights::Rights;
use waiter::wire::reply::Reply;
use waiter::wire::Payload;
use waiter::{metrics, Waiter};

type App = Waiter<DynamoStore, SqsQueue, SystemClock>;

/// Budget when the invocation carries no usable deadline: the default function timeout.
const FALLBACK_BUDGET: chrono::TimeDelta = chrono::TimeDelta::seconds(30);

async fn handler(app: &App, event: LambdaEvent<Payload>) -> Result<Reply, Diagnostic> {
    let (result, is_enqueue, is_retry) = match event.payload.into_value() {
        Ok(request) => {
            let is_enqueue = request.get("action").is_none_or(|a| a == "enqueue");
            let is_retry = request.get("action").is_some_and(|a| a == "retry");
            let now = chrono::Utc::now();
            let deadline = chrono::DateTime::<chrono::Utc>::from(event.context.deadline());
            // Local emulators may send no usable deadline (cargo-lambda sends one near 1970).
            let deadline = if deadline > now {
                deadline
            } else {
                now + FALLBACK_BUDGET
            };
            let trace = event.context.xray_trace_id.as_deref();
            // The alias the caller named, if any, and what it may do (docs/security.md).
            let rights = Rights::of_invoked_arn(&event.context.invoked_function_arn, &app.config);
            (
                app.respond_as(&request, deadline, trace, &rights).await,
                is_enqueue,
                is_retry,
            )
        }
        Err(invalid) => (Err(invalid.into()), true, false),
    };
    // Every invocation prints its line: the enqueue alarm subtracts `Refused` from Lambda's
    // `Errors`, whatever the action.
    let invocation = match &result {
        Ok(reply) => metrics::Invocation::Replied { reply, is_enqueue },
        Err(e) => metrics::Invocation::Failed {
            error_type: e.kind(),
            is_enqueue,
        },
    };
    let function_name = &event.context.env_config.function_name;
    let at = chrono::Utc::now();
    println!("{}", metrics::enqueue_line(function_name, invocation, at));
    for line in metrics::enqueue_error_lines(function_name, invocation, at) {
        println!("{line}");
    }
    if let (true, Ok(Reply::Job(reply))) = (is_retry, &result) {
        println!(
            "{}",
            metrics::retry_line(function_name, reply, app.config.queue_metrics, at)
        );
    }
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
    waiter::logging::init();
    tracing::info!(version = waiter::VERSION, "enqueue starting");
    let Adapters { config, store, queue } = Adapters::from_env().await?;
    let app = Waiter::new(config, store, queue, SystemClock);
    run(service_fn(|event| handler(&app, event))).await
}
