//! The `poller` Lambda: hands due jobs to SQS. Triggered by EventBridge; accepts any event.

use lambda_runtime::{run, service_fn, Diagnostic, Error, LambdaEvent};
use serde_json::Value;
use sqs_waiter_contract::ErrorType;
use waiter::aws::{Adapters, DynamoStore, SqsQueue};
use waiter::poller::groups::group_in;
use waiter::ports::SystemClock;
use waiter::wire::Payload;
use waiter::{metrics, Dispatcher};

type App = Dispatcher<DynamoStore, SqsQueue, SystemClock>;

/// Run budget when the invocation carries no usable deadline (local emulators only).
const FALLBACK_BUDGET_S: i64 = 30;

async fn handler(app: &App, event: LambdaEvent<Payload>) -> Result<Value, Diagnostic> {
    let now = chrono::Utc::now();
    let mut deadline = chrono::DateTime::<chrono::Utc>::from(event.context.deadline());
    if deadline <= now {
        // Lambda always sends a future deadline; some local emulators send none (cargo-lambda
        // 1.9 sends one near 1970). Work to a fixed budget instead of doing nothing.
        tracing::warn!(
            budget_s = FALLBACK_BUDGET_S,
            "invocation deadline missing or past; using a fixed budget"
        );
        deadline = now + chrono::TimeDelta::seconds(FALLBACK_BUDGET_S);
    }
    let budget_ms = (deadline - now).num_milliseconds();
    let group = match &event.payload.0 {
        Ok(v) => group_in(v, app.config.poller_groups).map_err(|e| Diagnostic {
            error_type: ErrorType::InvalidRequest.to_string(),
            error_message: e.to_string(),
        })?,
        // Any event is a run over every partition; only a group must be readable.
        Err(_) => None,
    };
    if let Some(g) = group.filter(|g| g.groups != app.config.poller_groups) {
        // Schedules of an earlier PollerGroups during a deploy: still safe, the leases keep
        // runs apart, and every partition is some group's under either number.
        tracing::warn!(
            groups = g.groups,
            configured = app.config.poller_groups,
            "the event's groups differ from WAITER_POLLER_GROUPS"
        );
    }
    let summary = app.run_group(deadline, group).await;
    tracing::info!(
        group = summary.group.map(|g| g.group),
        groups = summary.group.map(|g| g.groups),
        budget_ms,
        dispatched = summary.dispatched,
        expired = summary.expired,
        parked = summary.parked,
        failed = summary.failed,
        busy_partitions = summary.busy_partitions,
        drained = summary.drained,
        backlog_age_s = summary.backlog_age_s,
        max_lateness_ms = summary.max_lateness_ms,
        errors = summary.errors.len(),
        "run finished"
    );
    let function_name = &event.context.env_config.function_name;
    let at = chrono::Utc::now();
    println!("{}", metrics::poller_line(function_name, &summary, at));
    if app.config.queue_metrics {
        for line in metrics::poller_queue_lines(function_name, &summary, at) {
            println!("{line}");
        }
    }
    // Fail the invocation (and so the Errors alarm) only when no partition could be worked.
    if !summary.errors.is_empty() && summary.errors.len() as u32 + summary.busy_partitions >= summary.partitions {
        return Err(Diagnostic {
            error_type: "PollerFailed".into(),
            error_message: summary.errors.join("; "),
        });
    }
    let mut reply = serde_json::to_value(&summary).map_err(|e| Diagnostic {
        error_type: "InternalError".into(),
        error_message: e.to_string(),
    })?;
    // The version that ran, so a reply tells which code a stack update has reached.
    if let Value::Object(fields) = &mut reply {
        fields.insert("version".into(), Value::from(waiter::VERSION));
    }
    Ok(reply)
}

// One thread: the run waits on DynamoDB and SQS, and the bench measured 10-20 % less CPU per job
// than the multi-thread runtime (docs/performance.md, "Cold start and size").
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    waiter::logging::init();
    tracing::info!(version = waiter::VERSION, "poller starting");
    let Adapters { config, store, queue } = Adapters::from_env().await?;
    let app = Dispatcher::new(config, store, queue, SystemClock);
    run(service_fn(|event| handler(&app, event))).await
}
