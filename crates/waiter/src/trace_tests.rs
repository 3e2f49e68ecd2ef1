//! Trace propagation through both routes and a reschedule, against the in-memory fakes: the
//! poller's batch path is what moto cannot show (`Quirk::BatchDropsTraceHeader`).

use chrono::TimeDelta;
use serde_json::json;

use crate::ports::Clock;
use crate::testing::*;

const INVOCATION: &str = "Root=1-67891233-abcdef012345678912345678;Parent=463ac35c9f6413ad;Sampled=1";

#[tokio::test(start_paused = true)]
async fn the_invocations_trace_reaches_sqs_on_both_routes_and_survives_a_reschedule() {
    let (w, store, queue, clock) = test_waiter(
        "orders",
        &[("WAITER_DIRECT_MAX_DELAY", "10"), ("WAITER_LOOKAHEAD", "0")],
    );
    let d = dispatcher_for(&w);
    let deadline = clock.now() + TimeDelta::seconds(30);
    for (id, delay) in [("direct", 5), ("stored", 60)] {
        let request = json!({"queue": "orders", "job_id": id, "message_body": id, "delay_seconds": delay});
        w.respond_traced(&request, deadline, Some(INVOCATION)).await.unwrap();
    }
    let untraced = json!({"queue": "orders", "job_id": "untraced", "message_body": "u", "delay_seconds": 60});
    w.respond_traced(&untraced, deadline, None).await.unwrap();
    // A reschedule is a call of its own: the job keeps the trace it was enqueued under.
    let moved = json!({"action": "reschedule", "queue": "orders", "job_id": "stored", "delay_seconds": 90});
    w.respond_traced(&moved, deadline, None).await.unwrap();
    assert_eq!(store.len(), 2);

    tokio::time::sleep(std::time::Duration::from_secs(91)).await;
    assert_eq!(d.run(clock.now() + TimeDelta::seconds(30)).await.dispatched, 2);
    let trace = |body: &str| {
        let sent = queue.sent();
        let m = sent.iter().find(|s| s.message.body == body).expect("sent");
        m.message.trace_header.clone()
    };
    assert_eq!(trace("direct").as_deref(), Some(INVOCATION), "SendMessage");
    assert_eq!(
        trace("stored").as_deref(),
        Some(INVOCATION),
        "the poller's batch, after a reschedule"
    );
    assert_eq!(trace("u"), None);
}
