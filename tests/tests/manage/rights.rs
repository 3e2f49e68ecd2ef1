//! Rights per alias end to end (issue 73): the real `enqueue` binary, invoked as Lambda invokes
//! it through an alias (`Lambda-Runtime-Invoked-Function-Arn` ends in the alias the caller
//! named), over the emulator. A producer's alias for `orders` enqueues there and is refused
//! everything else, with nothing stored or sent; the viewer's alias reads and changes nothing.

use e2e::rig::setup;
use serde_json::{json, Value};

fn job(queue: &str, id: &str) -> Value {
    let mut j = json!({"queue": queue, "job_id": id, "message_body": id, "delay_seconds": 3600});
    if queue.ends_with(".fifo") {
        j["message_group_id"] = json!("g");
    }
    j
}

#[tokio::test(flavor = "multi_thread")]
async fn a_producers_alias_enqueues_on_its_queue_only_and_the_viewers_reads_only() {
    let mut s = setup(&["orders", "billing.fifo"], &[("WAITER_DIRECT_MAX_DELAY", "0")]).await;
    s.enqueue.alias = Some("orders--send".to_owned());
    assert_eq!(s.enqueue_ok(job("orders", "a")).await["status"], "scheduled");
    let batch = s
        .enqueue_ok(json!({"jobs": [job("orders", "b"), job("billing.fifo", "c")]}))
        .await;
    assert_eq!(batch["results"][0]["status"], "scheduled", "{batch}");
    assert_eq!(batch["results"][1]["error"]["type"], "AccessDenied", "{batch}");
    for request in [
        json!({"action": "pause", "queue": "orders"}),
        json!({"action": "cancel_many", "queue": "orders", "job_ids": ["a", "b"]}),
        job("billing.fifo", "d"),
        json!({"action": "get", "queue": "billing.fifo", "job_id": "c"}),
    ] {
        let e = s.enqueue.invoke(&request).await.expect_err("refused");
        assert_eq!(e.error_type, "AccessDenied", "{request}: {e:?}");
        assert!(e.error_message.starts_with("alias orders--send may not call"), "{e:?}");
    }
    assert_eq!(s.table_len("orders").await, 2, "a and b");
    assert_eq!(s.table_len("billing.fifo").await, 0, "nothing stored on billing.fifo");

    s.enqueue.alias = Some("view".to_owned());
    let listed = s.enqueue_ok(json!({"action": "list", "queue": "orders"})).await;
    assert_eq!(listed["jobs"].as_array().map(Vec::len), Some(2), "{listed}");
    for request in [
        json!({"action": "cancel", "queue": "orders", "job_id": "a"}),
        json!({"action": "trigger", "queue": "orders", "job_id": "b"}),
        job("orders", "e"),
    ] {
        let e = s.enqueue.invoke(&request).await.expect_err("refused");
        assert_eq!(e.error_type, "AccessDenied", "{request}: {e:?}");
    }
    // A version or an alias the stack did not make has no rights.
    s.enqueue.alias = Some("7".to_owned());
    let e = s
        .enqueue
        .invoke(&json!({"action": "get", "queue": "orders", "job_id": "a"}))
        .await
        .expect_err("refused");
    assert_eq!(e.error_type, "AccessDenied", "{e:?}");

    // Unqualified: the operator's view, and nothing changed or sent.
    s.enqueue.alias = None;
    assert_eq!(s.table_len("orders").await, 2);
    let got = s
        .enqueue_ok(json!({"action": "get", "queue": "orders", "job_id": "a"}))
        .await;
    assert_eq!(got["status"], "scheduled", "{got}");
    for url in s.urls.clone() {
        let sent = s.emu.receive_for(&url, std::time::Duration::from_millis(500), 10).await;
        assert!(sent.is_empty(), "nothing sent to {url}");
    }
}
