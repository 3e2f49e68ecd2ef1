//! `replay` end to end (issue 25): a job that left the table sent again as a new job, from the
//! message history keeps with `WAITER_HISTORY_BODY=true`, and nothing without it. The copy's
//! messages name it (`waiter.job_id`), so its consumer retries the copy, not the original
//! (issue 35); replaying twice makes one copy, even with `WAITER_DIRECT_HISTORY=false`.

use std::time::Duration;

use e2e::rig::setup;
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn a_dispatched_job_is_replayed_once_with_its_body_and_attributes() {
    let mut s = setup(
        &["orders"],
        &[
            ("WAITER_HISTORY_BODY", "true"),
            ("WAITER_DIRECT_MAX_DELAY", "0"),
            ("WAITER_LOOKAHEAD", "2"),
            ("WAITER_DIRECT_HISTORY", "false"),
        ],
    )
    .await;
    let job = json!({"queue": "orders", "job_id": "r-1", "message_body": "replay me", "delay_seconds": 1,
                     "message_attributes": {"kind": {"data_type": "String", "string_value": "invoice"}}});
    assert_eq!(s.enqueue_ok(job).await["status"], "scheduled");
    let first = s
        .poll_and_receive(0, 1, Duration::from_secs(1), Duration::from_secs(15))
        .await;
    assert_eq!(first.len(), 1, "delivered once");
    assert_eq!(s.table_len("orders").await, 0);

    let r = s
        .enqueue_ok(json!({"action": "replay", "queue": "orders", "job_id": "r-1"}))
        .await;
    assert_eq!(
        (r["status"].as_str(), r["job_id"].as_str(), r["replay_of"].as_str()),
        (Some("scheduled"), Some("r-1~1"), Some("r-1")),
        "{r}"
    );
    let url = s.urls[0].clone();
    let copy = s.emu.receive_for(&url, Duration::from_secs(10), 1).await;
    assert_eq!(copy.len(), 1, "the copy is delivered");
    assert_eq!(copy[0].message.body(), Some("replay me"));
    let kind = copy[0]
        .message
        .message_attributes()
        .and_then(|a| a.get("kind"))
        .and_then(|k| k.string_value());
    assert_eq!(kind, Some("invoice"));
    let named = copy[0]
        .message
        .message_attributes()
        .and_then(|a| a.get("waiter.job_id"))
        .and_then(|k| k.string_value());
    assert_eq!(named, Some("r-1~1"), "the copy's message names the copy");

    let again = s
        .enqueue_ok(json!({"action": "replay", "queue": "orders", "job_id": "r-1"}))
        .await;
    assert_eq!(again["duplicate"], true, "{again}");
    assert!(
        s.emu.receive_for(&url, Duration::from_secs(3), 1).await.is_empty(),
        "a replay retried sends nothing more"
    );

    // The copy's consumer retries the id its message names: attempt 2 of the copy.
    let retry = json!({"action": "retry", "queue": "orders", "job_id": "r-1~1", "attempt": 1,
                       "message_body": "replay me", "backoff": {"base_s": 1, "jitter": false},
                       "message_attributes": {"kind": {"data_type": "String", "string_value": "invoice"},
                                              "waiter.job_id": {"data_type": "String", "string_value": "r-1~1"}}});
    let r = s.enqueue_ok(retry).await;
    assert_eq!(
        (r["status"].as_str(), r["attempt"].as_u64(), r["duplicate"].as_bool()),
        (Some("scheduled"), Some(2), Some(false)),
        "{r}"
    );
    let second = s.emu.receive_for(&url, Duration::from_secs(10), 1).await;
    assert_eq!(second.len(), 1, "attempt 2 of the copy is delivered");
    let attribute = |name: &str| {
        second[0]
            .message
            .message_attributes()
            .and_then(|a| a.get(name))
            .and_then(|k| k.string_value())
            .map(str::to_owned)
    };
    assert_eq!(
        (
            attribute("waiter.job_id").as_deref(),
            attribute("waiter.attempt").as_deref()
        ),
        (Some("r-1~1"), Some("2"))
    );
    let original = s
        .enqueue_ok(json!({"action": "get", "queue": "orders", "job_id": "r-1"}))
        .await;
    assert_eq!(
        (original["status"].as_str(), original.get("attempt")),
        (Some("dispatched"), None),
        "the original is untouched: {original}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_history_body_a_job_that_left_is_not_replayable_and_an_active_one_conflicts() {
    let mut s = setup(&["orders"], &[]).await;
    let job = json!({"queue": "orders", "job_id": "n-1", "message_body": "b", "delay_seconds": 3600});
    assert_eq!(s.enqueue_ok(job).await["status"], "scheduled");
    let r = s
        .enqueue_ok(json!({"action": "replay", "queue": "orders", "job_id": "n-1"}))
        .await;
    assert_eq!(r["status"], "conflict", "still stored: {r}");
    s.enqueue_ok(json!({"action": "cancel", "queue": "orders", "job_id": "n-1"}))
        .await;
    let r = s
        .enqueue_ok(json!({"action": "replay", "queue": "orders", "job_id": "n-1"}))
        .await;
    assert_eq!(r["status"], "not_replayable", "{r}");
    assert_eq!(s.table_len("orders").await, 0, "nothing stored");
    let url = s.urls[0].clone();
    assert!(s.emu.receive_for(&url, Duration::from_secs(2), 1).await.is_empty());
}
