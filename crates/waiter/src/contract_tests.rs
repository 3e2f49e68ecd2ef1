//! The function against `sqs-waiter-contract`, the types the client and the CLI use: every
//! action is sent as the contract writes it, and every reply must read as the reply type the
//! client expects for that action. (The function decodes requests into these types and builds
//! replies from them, so their field names cannot drift; what this checks is that each action
//! answers with its own reply type, and what each answers.)

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::TimeDelta;
use sqs_waiter_contract::{
    Action, Cancel, CancelMany, EnqueueMany, ErrorType, Get, Job, JobStatus, List, ListParked, ListStatus,
    MessageAttribute, Redrive, RedriveAll, RedriveMany, Reschedule, Stats, Window,
};

use crate::config::QueueName;
use crate::ports::{Clock, Jobs, ParkInfo, Parking};
use crate::testing::*;

/// Sends `request` as the contract writes it; its reply must read as `A::Reply`, the type the
/// client expects for that action.
async fn roundtrip<A: Action>(w: &TestWaiter, request: &A) -> A::Reply {
    let sent = serde_json::to_value(request.tagged()).unwrap();
    let reply = call(w, sent.clone()).await;
    serde_json::from_value(reply.clone()).unwrap_or_else(|e| {
        panic!(
            "the {} reply to {sent} does not read as the contract's: {e}\n{reply}",
            A::NAME
        )
    })
}

async fn park(w: &TestWaiter, store: &MemStore, id: &str) {
    let q = QueueName::parse("orders").unwrap();
    let job = w.store.find(&q, id, &w.shard_partitions()).await.unwrap().unwrap();
    let info = ParkInfo {
        parked_at: w.clock.now(),
        code: "InvalidParameterValue".into(),
        message: "rejected".into(),
    };
    store.park(&job, &info).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn every_action_is_read_as_the_contract_writes_it_and_every_reply_reads_back() {
    let (w, store, _queue, clock) = test_waiter(
        "orders,billing.fifo",
        &[("WAITER_DIRECT_MAX_DELAY", "0"), ("WAITER_LOOKAHEAD", "0")],
    );
    let now = clock.now();
    let orders = || "orders".to_owned();

    let sent = roundtrip(&w, &Job::new("orders", "now").id("direct")).await;
    assert_eq!(sent.status, JobStatus::Sent);
    assert!(sent.message_id.is_some() && sent.delay_seconds.is_some());

    let full = Job::new("orders", "body")
        .at(now + TimeDelta::days(2))
        .id("full")
        .attribute("s", MessageAttribute::string("v"))
        .attribute("n", MessageAttribute::number(12))
        .attribute("b", MessageAttribute::binary_base64("AAH/"))
        .expires_at(now + TimeDelta::days(3))
        .windows(vec![Window::new("05:00", "07:00")], "Europe/Berlin");
    let first = roundtrip(&w, &full).await;
    assert_eq!((first.status, first.duplicate), (JobStatus::Scheduled, Some(false)));
    assert_eq!(roundtrip(&w, &full).await.duplicate, Some(true));
    let fifo = Job::new("billing.fifo", "f")
        .delay(Duration::from_secs(3600))
        .id("fifo")
        .group("g")
        .deduplication_id("d");
    assert_eq!(roundtrip(&w, &fifo).await.status, JobStatus::Scheduled);

    let batch = roundtrip(
        &w,
        &EnqueueMany {
            jobs: vec![
                Job::new("orders", "a").delay(Duration::from_secs(3600)).id("a1"),
                Job::new("nope", "x"),
            ],
        },
    )
    .await
    .into_results();
    assert!(batch[0].is_ok());
    assert_eq!(batch[1].as_ref().unwrap_err().error_type, ErrorType::InvalidRequest);

    let got = roundtrip(
        &w,
        &Get {
            queue: orders(),
            job_id: "full".into(),
        },
    )
    .await;
    assert_eq!(got.message_attributes.as_ref().map(BTreeMap::len), Some(3));
    assert_eq!((got.windows.is_some(), got.version), (true, Some(1)));
    let got_fifo = roundtrip(
        &w,
        &Get {
            queue: "billing.fifo".into(),
            job_id: "fifo".into(),
        },
    )
    .await;
    assert_eq!(got_fifo.message_deduplication_id.as_deref(), Some("d"));

    let moved = roundtrip(
        &w,
        &Reschedule {
            message_body: Some("v2".into()),
            message_attributes: Some(BTreeMap::from([("k".into(), MessageAttribute::string("v"))])),
            expires_at: Some(None),
            windows: Some(None),
            if_version: Some(1),
            ..Reschedule::to("orders", "full", now + TimeDelta::days(1))
        },
    )
    .await;
    assert_eq!((moved.status, moved.version), (JobStatus::Rescheduled, Some(2)));
    let windowed = Reschedule {
        windows: Some(Some(vec![Window::new("22:00", "23:00")])),
        time_zone: Some("Asia/Tokyo".into()),
        ..Reschedule::after("orders", "full", Duration::from_secs(86_400))
    };
    assert_eq!(roundtrip(&w, &windowed).await.status, JobStatus::Rescheduled);
    let stale = Reschedule {
        if_version: Some(1),
        ..Reschedule::after("orders", "full", Duration::from_secs(7200))
    };
    let conflict = roundtrip(&w, &stale).await;
    assert_eq!((conflict.status, conflict.version), (JobStatus::Conflict, Some(3)));

    let page = roundtrip(
        &w,
        &List {
            from: Some(now),
            to: Some(now + TimeDelta::days(10)),
            prefix: Some("f".into()),
            status: Some(ListStatus::Scheduled),
            limit: Some(10),
            with_body: Some(true),
            ..List::queue("orders")
        },
    )
    .await;
    assert_eq!(page.jobs.len(), 1);
    assert_eq!(page.jobs[0].message_body.as_deref(), Some("v2"));

    park(&w, &store, "a1").await;
    let parked_list = List {
        status: Some(ListStatus::Parked),
        ..List::queue("orders")
    };
    assert_eq!(roundtrip(&w, &parked_list).await.jobs.len(), 1);
    let parked = roundtrip(
        &w,
        &ListParked {
            queue: orders(),
            limit: Some(10),
            cursor: None,
        },
    )
    .await;
    assert_eq!(parked.count, 1);
    assert!(parked.jobs[0].error.is_some() && parked.jobs[0].parked_at.is_some());
    let a1 = Get {
        queue: orders(),
        job_id: "a1".into(),
    };
    assert_eq!(roundtrip(&w, &a1).await.status, JobStatus::Parked);
    let redriven = roundtrip(
        &w,
        &Redrive {
            queue: orders(),
            job_id: "a1".into(),
        },
    )
    .await;
    assert_eq!(redriven.status, JobStatus::Scheduled);
    park(&w, &store, "a1").await;
    let many = roundtrip(
        &w,
        &RedriveMany {
            queue: orders(),
            job_ids: vec!["a1".into(), "ghost".into()],
        },
    )
    .await
    .into_results();
    assert_eq!(many[1].as_ref().unwrap().status, JobStatus::NotFound);
    park(&w, &store, "a1").await;
    assert_eq!(roundtrip(&w, &RedriveAll::page("orders", None)).await.redriven, 1);

    let stats = roundtrip(
        &w,
        &Stats {
            queue: orders(),
            buckets: Some(4),
            bucket_s: Some(86_400),
            formats: None,
        },
    )
    .await;
    assert_eq!((stats.scheduled, stats.histogram.len()), (2, 4));

    let cancelled = roundtrip(
        &w,
        &Cancel {
            queue: orders(),
            job_id: "a1".into(),
        },
    )
    .await;
    assert_eq!(cancelled.status, JobStatus::Cancelled);
    assert!(roundtrip(&w, &a1).await.cancelled_at.is_some());
    let bulk = roundtrip(
        &w,
        &CancelMany {
            queue: orders(),
            job_ids: Some(vec!["full".into(), "ghost".into()]),
            ..CancelMany::default()
        },
    )
    .await;
    assert_eq!((bulk.cancelled, bulk.not_found), (1, 1));
    let selection = CancelMany {
        queue: orders(),
        prefix: Some("x".into()),
        from: Some(now),
        to: Some(now + TimeDelta::days(1)),
        status: Some(ListStatus::Scheduled),
        limit: Some(5),
        ..CancelMany::default()
    };
    assert_eq!(roundtrip(&w, &selection).await.cancelled, 0);

    // History of a dispatched job.
    roundtrip(&w, &Job::new("orders", "soon").delay(Duration::from_secs(5)).id("soon")).await;
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(
        dispatcher_for(&w)
            .run(clock.now() + TimeDelta::seconds(30))
            .await
            .dispatched,
        1
    );
    let history = roundtrip(
        &w,
        &Get {
            queue: orders(),
            job_id: "soon".into(),
        },
    )
    .await;
    assert_eq!(history.status, JobStatus::Dispatched);
    assert!(history.sent_at.is_some());
    let gone = Get {
        queue: orders(),
        job_id: "never".into(),
    };
    assert_eq!(roundtrip(&w, &gone).await.status, JobStatus::NotFound);
}

#[test]
fn the_function_and_the_contract_agree_on_error_types_and_limits() {
    use crate::error::PortError;
    let e = PortError::Throttled {
        operation: "x",
        source: "y".into(),
    };
    assert_eq!(ErrorType::parse(e.error_type()), Some(ErrorType::Throttled));
    assert_eq!(
        e.is_retryable(),
        ErrorType::Throttled.is_retryable(),
        "the function and the contract agree on retrying"
    );
}
