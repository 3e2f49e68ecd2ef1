//! History (docs/contract.md "History"): what `get` and idempotency know of jobs that left the table.

use chrono::TimeDelta;
use serde_json::json;

use crate::poller::Dispatcher;
use crate::ports::Clock;
use crate::testing::*;

fn setup(
    extra: &[(&str, &str)],
) -> (
    TestWaiter,
    Dispatcher<MemStore, FakeQueue, FakeClock>,
    MemStore,
    FakeQueue,
    FakeClock,
) {
    let (w, store, queue, clock) = test_waiter("orders", extra);
    let d = dispatcher_for(&w);
    (w, d, store, queue, clock)
}

#[tokio::test(start_paused = true)]
async fn a_dispatched_job_stays_known_and_a_retry_after_dispatch_sends_nothing() {
    let (w, d, store, queue, clock) = setup(&[("WAITER_DIRECT_MAX_DELAY", "0"), ("WAITER_LOOKAHEAD", "0")]);
    let enqueue = json!({"queue": "orders", "job_id": "j", "message_body": "secret", "delay_seconds": 5});
    assert_eq!(call(&w, enqueue.clone()).await["status"], "scheduled");
    tokio::time::sleep(std::time::Duration::from_secs(6)).await;
    assert_eq!(d.run(clock.now() + TimeDelta::seconds(30)).await.dispatched, 1);
    assert_eq!(store.len(), 0, "no job left in the table");

    let got = call(&w, json!({"action": "get", "queue": "orders", "job_id": "j"})).await;
    assert_eq!(got["status"], "dispatched", "{got}");
    assert!(got["sent_at"].is_string() && got["message_id"].is_string(), "{got}");
    assert!(got.get("message_body").is_none(), "history keeps no body: {got}");
    let record = store.state.lock().unwrap().history.values().next().cloned().unwrap();
    assert_eq!(
        record.purge_at - record.at,
        TimeDelta::days(7),
        "WAITER_HISTORY_DAYS defaults to 7"
    );

    // The caller's retry arrives after the dispatch: a duplicate, nothing stored or sent.
    let again = call(&w, enqueue).await;
    assert_eq!(again["duplicate"], true, "{again}");
    assert_eq!(again["status"], "dispatched");
    assert_eq!(store.len(), 0);
    assert_eq!(queue.sent().len(), 1);
    assert_eq!(d.run(clock.now() + TimeDelta::seconds(30)).await.dispatched, 0);

    // Past purge_at (TTL has not run yet) the record no longer counts.
    tokio::time::sleep(std::time::Duration::from_secs(8 * 86_400)).await;
    let got = call(&w, json!({"action": "get", "queue": "orders", "job_id": "j"})).await;
    assert_eq!(got["status"], "not_found");
    let fresh = call(
        &w,
        json!({"queue": "orders", "job_id": "j", "message_body": "b", "delay_seconds": 5}),
    )
    .await;
    assert_eq!(fresh["duplicate"], false, "{fresh}");
    assert_eq!(store.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn cancelled_and_expired_jobs_are_history_and_block_their_ids() {
    let (w, d, store, queue, clock) = setup(&[("WAITER_DIRECT_MAX_DELAY", "0"), ("WAITER_LOOKAHEAD", "0")]);
    call(
        &w,
        json!({"queue": "orders", "job_id": "c", "message_body": "b", "delay_seconds": 5000}),
    )
    .await;
    assert_eq!(
        call(&w, json!({"action": "cancel", "queue": "orders", "job_id": "c"})).await["status"],
        "cancelled"
    );
    let again = call(
        &w,
        json!({"queue": "orders", "job_id": "c", "message_body": "b", "delay_seconds": 5000}),
    )
    .await;
    assert_eq!(
        (again["status"].as_str(), again["duplicate"].as_bool()),
        (Some("cancelled"), Some(true))
    );

    let expires = crate::time::format_rfc3339(clock.now() + TimeDelta::seconds(6));
    call(
        &w,
        json!({"queue": "orders", "job_id": "e", "message_body": "b", "delay_seconds": 5, "expires_at": expires}),
    )
    .await;
    tokio::time::sleep(std::time::Duration::from_secs(60)).await;
    let s = d.run(clock.now() + TimeDelta::seconds(30)).await;
    assert_eq!(s.expired, 1, "{s:?}");
    let got = call(&w, json!({"action": "get", "queue": "orders", "job_id": "e"})).await;
    assert_eq!(got["status"], "expired", "{got}");
    assert!(queue.sent().is_empty());
    assert_eq!(store.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_retried_direct_send_is_a_duplicate_unless_direct_history_is_off() {
    for (direct_history, sends) in [("true", 1), ("false", 2)] {
        let (w, _, store, queue, _) = setup(&[("WAITER_DIRECT_HISTORY", direct_history)]);
        let request = json!({"queue": "orders", "job_id": "d", "message_body": "b", "delay_seconds": 30});
        assert_eq!(call(&w, request.clone()).await["status"], "sent");
        let again = call(&w, request).await;
        assert_eq!(
            queue.sent().len(),
            sends,
            "WAITER_DIRECT_HISTORY={direct_history}: {again}"
        );
        let records = store.state.lock().unwrap().history.len();
        assert_eq!(records, if direct_history == "true" { 1 } else { 0 });
        if direct_history == "true" {
            assert_eq!(again["status"], "dispatched");
            assert_eq!(again["duplicate"], true);
        }
        // A job without a caller-chosen id cannot be retried by id: no record.
        call(&w, json!({"queue": "orders", "message_body": "b"})).await;
        assert_eq!(store.state.lock().unwrap().history.len(), records);
    }
}

#[tokio::test(start_paused = true)]
async fn with_history_off_jobs_leave_nothing_behind() {
    let (w, d, store, _, clock) = setup(&[
        ("WAITER_HISTORY_DAYS", "0"),
        ("WAITER_DIRECT_MAX_DELAY", "0"),
        ("WAITER_LOOKAHEAD", "0"),
    ]);
    call(
        &w,
        json!({"queue": "orders", "job_id": "a", "message_body": "b", "delay_seconds": 5}),
    )
    .await;
    call(
        &w,
        json!({"queue": "orders", "job_id": "c", "message_body": "b", "delay_seconds": 5000}),
    )
    .await;
    call(&w, json!({"action": "cancel", "queue": "orders", "job_id": "c"})).await;
    tokio::time::sleep(std::time::Duration::from_secs(6)).await;
    assert_eq!(d.run(clock.now() + TimeDelta::seconds(30)).await.dispatched, 1);
    let left = {
        let st = store.state.lock().unwrap();
        st.items.len() + st.history.len()
    };
    assert_eq!(left, 0, "no job and no record left");
    for id in ["a", "c"] {
        let got = call(&w, json!({"action": "get", "queue": "orders", "job_id": id})).await;
        assert_eq!(got["status"], "not_found");
    }
}
