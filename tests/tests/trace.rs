//! Trace propagation end to end (issue 48, item 4): a job keeps the X-Ray trace of the call that
//! enqueued it (the invocation's, when sampled) or the caller's `trace_header`, and its message
//! carries it as SQS's `AWSTraceHeader` system attribute, on the direct route and the stored one.

use std::time::Duration;

use aws_sdk_sqs::types::MessageSystemAttributeName;
use e2e::quirks::Quirk;
use e2e::rig::{in_secs, setup};
use serde_json::json;

const CALLER: &str = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
const INVOCATION: &str = "Root=1-67891233-abcdef012345678912345678;Parent=463ac35c9f6413ad;Sampled=1";
const UNSAMPLED: &str = "Root=1-67891233-00000000000000000000abcd;Parent=463ac35c9f6413ad;Sampled=0";

fn trace_of(m: &aws_sdk_sqs::types::Message) -> Option<String> {
    m.attributes
        .as_ref()
        .and_then(|a| a.get(&MessageSystemAttributeName::AwsTraceHeader))
        .cloned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_carries_the_trace_it_was_enqueued_under_to_sqs() {
    let mut s = setup(
        &["orders"],
        &[("WAITER_DIRECT_MAX_DELAY", "1"), ("WAITER_LOOKAHEAD", "2")],
    )
    .await;
    let job = |id: &str, delay: Option<u64>| {
        let mut j = json!({"queue": "orders", "message_body": id, "job_id": id});
        match delay {
            Some(d) => j["delay_seconds"] = json!(d),
            None => j["perform_at"] = json!(in_secs(4.0)),
        }
        j
    };
    // An invocation traced and sampled: its jobs keep its header unless they bring their own.
    s.enqueue.trace_id = INVOCATION.to_owned();
    s.enqueue_ok(job("direct-invocation", Some(0))).await;
    let mut own = job("direct-caller", Some(0));
    own["trace_header"] = json!(CALLER);
    s.enqueue_ok(own).await;
    let stored = s.enqueue_ok(job("stored-invocation", None)).await;
    assert_eq!(stored["status"], "scheduled", "{stored}");
    let mut own = job("stored-caller", None);
    own["trace_header"] = json!(CALLER);
    s.enqueue_ok(own).await;
    // An unsampled invocation leaves nothing to link to: its job keeps no header.
    s.enqueue.trace_id = UNSAMPLED.to_owned();
    s.enqueue_ok(job("stored-unsampled", None)).await;

    for (id, want) in [
        ("stored-invocation", Some(INVOCATION)),
        ("stored-caller", Some(CALLER)),
        ("stored-unsampled", None),
    ] {
        let got = s
            .enqueue_ok(json!({"action": "get", "queue": "orders", "job_id": id}))
            .await;
        assert_eq!(
            got.get("trace_header").and_then(|t| t.as_str()),
            want,
            "get shows the stored trace: {got}"
        );
    }

    let received = s
        .poll_and_receive(0, 5, Duration::from_secs(1), Duration::from_secs(20))
        .await;
    let by_body = |body: &str| {
        let found: Vec<_> = received.iter().filter(|r| r.message.body() == Some(body)).collect();
        assert_eq!(found.len(), 1, "{body} delivered once");
        trace_of(&found[0].message)
    };
    // The direct route sends with SendMessage.
    assert_eq!(by_body("direct-invocation").as_deref(), Some(INVOCATION));
    assert_eq!(by_body("direct-caller").as_deref(), Some(CALLER));
    // The stored route: the poller's SendMessageBatch.
    let backend = s.emu.backend;
    for (body, want) in [("stored-invocation", INVOCATION), ("stored-caller", CALLER)] {
        let sent = by_body(body);
        if backend.has(Quirk::BatchDropsTraceHeader) {
            assert_eq!(sent, None, "{}: the quirk's table is stale", backend.name());
        } else {
            assert_eq!(sent.as_deref(), Some(want), "{body}");
        }
    }
    // A job without a trace goes with its sending call's: the AWS SDK passes the poller
    // invocation's `_X_AMZN_TRACE_ID` as the `X-Amzn-Trace-Id` header, which SQS gives the
    // messages of a call without `AWSTraceHeader` (AWS's X-Ray guide, "Amazon SQS"). Never the
    // enqueue call's unsampled one.
    let sent = by_body("stored-unsampled");
    if backend.has(Quirk::BatchDropsTraceHeader) {
        assert_eq!(sent, None);
    } else {
        assert_eq!(
            sent.as_deref(),
            Some(s.poller.trace_id.as_str()),
            "the poller run's own trace"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_trace_header_is_refused_naming_the_field_and_nothing_is_stored() {
    let mut s = setup(&["orders"], &[("WAITER_DIRECT_MAX_DELAY", "0")]).await;
    for bad in [
        "Sampled=1",
        "Root=1-123-456",
        "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=xyz",
    ] {
        let reply = s
            .enqueue
            .invoke(&json!({"queue": "orders", "message_body": "x", "delay_seconds": 600, "trace_header": bad}))
            .await;
        let err = reply.expect_err("refused");
        assert_eq!(err.error_type, "InvalidRequest", "{bad}: {err:?}");
        assert!(
            err.error_message.contains("trace_header"),
            "{bad}: {}",
            err.error_message
        );
    }
    assert_eq!(s.table_len("orders").await, 0, "nothing stored");
}
