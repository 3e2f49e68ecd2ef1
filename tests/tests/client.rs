//! `sqs-waiter-client` end to end: real Lambda Invoke calls (aws-sdk-lambda) to `cargo lambda
//! watch`, which runs the real `enqueue` binary against the emulator.

use std::time::Duration;

use chrono::{TimeDelta, Utc};
use e2e::watch::serve_enqueue;
use sqs_waiter_client::{
    CancelMany, Client, Error, ErrorType, Job, JobStatus, List, ListParked, MessageAttribute, Reschedule, Stats,
};

#[tokio::test(flavor = "multi_thread")]
async fn the_client_drives_every_action_through_lambda_invoke() {
    let (emu, watch, url) = serve_enqueue("orders").await;
    let client = Client::new(watch.lambda_client().await, "enqueue");

    let tomorrow = Job::new("orders", "later")
        .delay(Duration::from_secs(86_400))
        .id("c-1")
        .attribute("kind", MessageAttribute::string("invoice"));
    let first = client
        .enqueue(&tomorrow)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", watch.log()));
    assert_eq!((first.status, first.duplicate), (JobStatus::Scheduled, Some(false)));
    assert_eq!(client.enqueue(&tomorrow).await.unwrap().duplicate, Some(true));

    // Due now: straight to SQS, and it arrives.
    let now = client.enqueue(&Job::new("orders", "now").id("c-now")).await.unwrap();
    assert_eq!(now.status, JobStatus::Sent);
    let got = emu.receive_for(&url, Duration::from_secs(15), 1).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].message.body(), Some("now"));
    assert_eq!(got[0].message.message_id(), now.message_id.as_deref());

    let results = client
        .enqueue_many(&[
            Job::new("orders", "a").at(Utc::now() + TimeDelta::days(2)).id("c-2"),
            Job::new("nope", "b").delay(Duration::from_secs(3600)),
            Job::new("orders", "c").at(Utc::now() + TimeDelta::days(3)).id("c-3"),
        ])
        .await
        .unwrap();
    assert!(results[0].is_ok() && results[2].is_ok());
    let failure = results[1].as_ref().unwrap_err();
    assert_eq!(failure.error_type, ErrorType::InvalidRequest);
    assert!(failure.message.starts_with("queue: "), "{}", failure.message);

    let job = client.get("orders", "c-1").await.unwrap();
    assert_eq!((job.status, job.version), (JobStatus::Scheduled, Some(1)));
    assert_eq!(job.message_body.as_deref(), Some("later"));
    assert_eq!(
        job.message_attributes.unwrap()["kind"].string_value.as_deref(),
        Some("invoice")
    );

    let week = Utc::now() + TimeDelta::days(7);
    let moved = client
        .reschedule(&Reschedule {
            if_version: Some(1),
            ..Reschedule::to("orders", "c-1", week)
        })
        .await
        .unwrap();
    assert_eq!((moved.status, moved.version), (JobStatus::Rescheduled, Some(2)));
    let stale = client
        .reschedule(&Reschedule {
            if_version: Some(1),
            ..Reschedule::after("orders", "c-1", Duration::from_secs(60))
        })
        .await
        .unwrap();
    assert_eq!((stale.status, stale.version), (JobStatus::Conflict, Some(2)));

    let page = client
        .list(&List {
            prefix: Some("c-".into()),
            ..List::queue("orders")
        })
        .await
        .unwrap();
    let ids: Vec<&str> = page.jobs.iter().map(|j| j.job_id.as_str()).collect();
    assert_eq!(ids, ["c-2", "c-3", "c-1"], "in due order");
    assert_eq!(page.cursor, None);

    let stats = client
        .stats(&Stats {
            queue: "orders".into(),
            ..Stats::default()
        })
        .await
        .unwrap();
    assert_eq!((stats.scheduled, stats.parked, stats.overdue), (3, 0, 0));
    assert_eq!(stats.histogram.iter().map(|b| b.count).sum::<u64>(), 3);

    let parked = client
        .parked(&ListParked {
            queue: "orders".into(),
            ..ListParked::default()
        })
        .await
        .unwrap();
    assert_eq!((parked.count, parked.cursor), (0, None));
    assert_eq!(
        client.redrive("orders", "c-1").await.unwrap().status,
        JobStatus::NotFound
    );

    assert_eq!(
        client.cancel("orders", "c-1").await.unwrap().status,
        JobStatus::Cancelled
    );
    let history = client.get("orders", "c-1").await.unwrap();
    assert_eq!(history.status, JobStatus::Cancelled);
    assert!(history.cancelled_at.is_some());
    let bulk = client
        .cancel_many(&CancelMany {
            queue: "orders".into(),
            job_ids: Some(vec!["c-2".into(), "c-3".into(), "ghost".into()]),
            ..CancelMany::default()
        })
        .await
        .unwrap();
    assert_eq!((bulk.cancelled, bulk.not_found), (2, 1));
}

#[tokio::test(flavor = "multi_thread")]
async fn refusals_are_typed_by_error_type_and_a_missing_function_is_named() {
    let (_emu, watch, _url) = serve_enqueue("orders").await;
    let lambda = watch.lambda_client().await;
    let client = Client::new(lambda.clone(), "enqueue");

    let err = client
        .enqueue(&Job::new("other", "x").delay(Duration::from_secs(5)))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidRequest { field, .. } if field == "queue"),
        "{err}"
    );
    assert!(!err.is_retryable());
    assert_eq!(err.error_type(), Some(ErrorType::InvalidRequest));

    let err = client
        .list(&List {
            limit: Some(5000),
            ..List::queue("orders")
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidRequest { field, .. } if field == "limit"),
        "{err}"
    );

    let missing = Client::new(lambda, "no-such-function")
        .get("orders", "x")
        .await
        .unwrap_err();
    assert!(missing.is_function_missing(), "{missing:?}");
    assert!(!missing.is_retryable());
    assert_eq!(missing.error_type(), None);
}

/// Lambda's own answers, as AWS sends them (cargo lambda watch answers a function error with a
/// 500 instead): a function error is a 200 with `X-Amz-Function-Error`, Lambda's throttling a 429.
#[tokio::test(flavor = "multi_thread")]
async fn aws_shaped_lambda_answers_read_as_their_error_types() {
    use axum::extract::Path;
    use axum::http::StatusCode;
    use axum::response::IntoResponse;

    async fn invoke(Path(name): Path<String>) -> axum::response::Response {
        let function_error =
            |body: &'static str| (StatusCode::OK, [("X-Amz-Function-Error", "Unhandled")], body).into_response();
        match name.as_str() {
            "throttled" => function_error(r#"{"errorType":"Throttled","errorMessage":"DynamoDB: ThrottlingException"}"#),
            "invalid" => function_error(r#"{"errorType":"InvalidRequest","errorMessage":"delay_seconds: must not be negative"}"#),
            "crashed" => function_error(r#"{"errorType":"Runtime.ExitError","errorMessage":"RequestId: x Error: Runtime exited with error: exit status 101"}"#),
            "busy" => (
                StatusCode::TOO_MANY_REQUESTS,
                [("x-amzn-errortype", "TooManyRequestsException")],
                r#"{"message":"Rate Exceeded.","Reason":"ReservedFunctionConcurrentInvocationLimitExceeded"}"#,
            )
                .into_response(),
            "missing" => (
                StatusCode::NOT_FOUND,
                [("x-amzn-errortype", "ResourceNotFoundException")],
                r#"{"Type":"User","message":"Function not found: arn:aws:lambda:us-east-1:123456789012:function:missing"}"#,
            )
                .into_response(),
            _ => r#"{"status":"scheduled","job_id":"a","queue":"orders","duplicate":false,"perform_at":"2026-12-01T09:00:00Z"}"#
                .into_response(),
        }
    }
    let app = axum::Router::new().route("/2015-03-31/functions/{name}/invocations", axum::routing::post(invoke));
    let (addr, server) = e2e::serve_local(app).await;
    let endpoint = format!("http://{addr}");
    let config = e2e::emulator::sdk_config(&endpoint).await;
    let lambda = aws_sdk_lambda::Client::from_conf(
        aws_sdk_lambda::config::Builder::from(&config)
            .retry_config(aws_sdk_lambda::config::retry::RetryConfig::disabled())
            .build(),
    );
    let call = |name: &str| {
        let client = Client::new(lambda.clone(), name);
        async move { client.get("orders", "a").await }
    };

    assert_eq!(call("ok").await.unwrap().status, JobStatus::Scheduled);
    let throttled = call("throttled").await.unwrap_err();
    assert!(
        matches!(throttled, Error::Throttled { .. }) && throttled.is_retryable(),
        "{throttled:?}"
    );
    let invalid = call("invalid").await.unwrap_err();
    assert!(
        matches!(&invalid, Error::InvalidRequest { field, .. } if field == "delay_seconds"),
        "{invalid:?}"
    );
    let crashed = call("crashed").await.unwrap_err();
    assert!(
        matches!(&crashed, Error::Function { error_type, .. } if error_type == "Runtime.ExitError"),
        "{crashed:?}"
    );
    let busy = call("busy").await.unwrap_err();
    assert!(matches!(busy, Error::Invoke { .. }) && busy.is_retryable(), "{busy:?}");
    let missing = call("missing").await.unwrap_err();
    assert!(missing.is_function_missing() && !missing.is_retryable(), "{missing:?}");
    server.abort();
}
