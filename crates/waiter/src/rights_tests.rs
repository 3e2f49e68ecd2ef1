//! The table of rights for every action of the contract and every class, per queue and for
//! every queue, and the function refusing, in each job of a batch, what its alias does not allow.

use serde_json::{json, Value};

use super::*;
use crate::testing::{call, config, test_waiter, TestWaiter};
use crate::wire::request::parse_request;

const FUNCTION: &str = "arn:aws:lambda:eu-west-1:123456789012:function:sqs-waiter-enqueue";

fn rights(qualifier: Option<&str>) -> Rights {
    let arn = qualifier.map_or_else(|| FUNCTION.to_owned(), |q| format!("{FUNCTION}:{q}"));
    Rights::of_invoked_arn(&arn, &config("orders,billing.fifo", &[]))
}

/// One request of each action of the contract, on `orders` where it takes a queue.
fn every_action() -> Vec<(&'static str, Value)> {
    let on = |action: &str, extra: Value| {
        let mut v = json!({"action": action, "queue": "orders"});
        v.as_object_mut()
            .expect("an object")
            .extend(extra.as_object().cloned().unwrap_or_default());
        v
    };
    vec![
        (
            "enqueue",
            json!({"queue": "orders", "message_body": "b", "delay_seconds": 3600}),
        ),
        ("enqueue", json!({"jobs": [{"queue": "orders", "message_body": "b"}]})),
        ("get", on("get", json!({"job_id": "j"}))),
        ("cancel", on("cancel", json!({"job_id": "j"}))),
        (
            "reschedule",
            on("reschedule", json!({"job_id": "j", "delay_seconds": 60})),
        ),
        ("preview", on("preview", json!({"job_id": "j"}))),
        ("preview", json!({"action": "preview", "repeat": {"every_s": 60}})),
        (
            "retry",
            on("retry", json!({"job_id": "j", "attempt": 1, "message_body": "b"})),
        ),
        ("replay", on("replay", json!({"job_id": "j"}))),
        ("list", on("list", json!({}))),
        ("stats", on("stats", json!({}))),
        ("queues", json!({"action": "queues"})),
        ("list_parked", on("list_parked", json!({}))),
        ("cancel_many", on("cancel_many", json!({"job_ids": ["j"]}))),
        ("redrive", on("redrive", json!({"job_id": "j"}))),
        ("trigger", on("trigger", json!({"job_id": "j"}))),
        ("pause", on("pause", json!({}))),
        ("resume", on("resume", json!({"job_id": "j"}))),
    ]
}

/// The table as docs/security.md writes it, apart from the code's: send, view, operate.
fn expected(action: &str) -> [bool; 3] {
    match action {
        "enqueue" | "cancel" | "reschedule" | "retry" | "replay" => [true, false, true],
        "get" | "preview" => [true, true, true],
        "list" | "stats" | "queues" | "list_parked" => [false, true, true],
        "cancel_many" | "redrive" | "trigger" | "pause" | "resume" => [false, false, true],
        other => panic!("{other} is not in the table"),
    }
}

#[test]
fn every_action_of_the_contract_has_its_row_and_each_class_its_rights() {
    let cfg = config("orders,billing.fifo", &[]);
    let now = chrono::Utc::now();
    let mut seen: Vec<&str> = Vec::new();
    for (name, request) in every_action() {
        let parsed = parse_request(&request, &cfg, now).expect("a valid request");
        assert_eq!(parsed.action(), name, "{request}");
        seen.push(name);
        for (class, allowed) in Class::ALL.into_iter().zip(expected(name)) {
            // For every queue, and for this request's queue (or none); an operator's alias is
            // the stack's alone.
            let own = (class != Class::Operate).then(|| alias_name(class, Some("orders")));
            for alias in [Some(alias_name(class, None)), own].into_iter().flatten() {
                let got = rights(Some(&alias)).check(parsed.action(), parsed.queue());
                assert_eq!(got.is_ok(), allowed, "{alias} {name}: {got:?}");
            }
        }
        assert_eq!(
            rights(None).check(parsed.action(), parsed.queue()),
            Ok(()),
            "unqualified: everything"
        );
        // Another queue's aliases never reach this one's jobs, whatever their class.
        if parsed.queue().is_some() {
            for class in [Class::Send, Class::View] {
                let other = alias_name(class, Some("billing.fifo"));
                let got = rights(Some(&other)).check(parsed.action(), parsed.queue());
                assert!(got.is_err(), "{other} {name} on orders: {got:?}");
            }
        }
    }
    let mut table: Vec<&str> = RIGHTS.iter().map(|(name, _)| *name).collect();
    table.sort_unstable();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(table, seen, "one row per action, and every action in a row");
}

#[test]
fn a_queues_alias_serves_that_queue_only_and_other_qualifiers_nothing() {
    let orders = QueueName::parse("orders").expect("a name");
    let billing = QueueName::parse("billing.fifo").expect("a name");
    let send_orders = rights(Some("orders--send"));
    assert_eq!(send_orders.check("enqueue", Some(&orders)), Ok(()));
    let denied = send_orders.check("enqueue", Some(&billing)).expect_err("another queue");
    assert_eq!(
        (denied.alias.as_str(), denied.action.as_str(), denied.queue.as_deref()),
        ("orders--send", "enqueue", Some("billing.fifo"))
    );
    assert!(denied.to_string().contains("serves queue orders only"), "{denied}");
    // A FIFO queue's key: `.fifo` becomes `-fifo`.
    assert_eq!(alias_name(Class::View, Some("billing.fifo")), "billing-fifo--view");
    assert_eq!(rights(Some("billing-fifo--view")).only_queue(), Some(&billing));
    let pause = rights(Some("send"))
        .check("pause", Some(&orders))
        .expect_err("not a producer's");
    assert_eq!(pause.kind(), ErrorType::AccessDenied);
    assert!(
        pause
            .to_string()
            .starts_with("alias send may not call pause on queue orders"),
        "{pause}"
    );
    // A version, `$LATEST`, an alias the stack did not make, a queue it does not serve: nothing.
    for qualifier in [
        "7",
        "$LATEST",
        "live",
        "stock--send",
        "orders--write",
        "--send",
        "orders--operate",
    ] {
        let r = rights(Some(qualifier));
        assert!(matches!(r, Rights::None { .. }), "{qualifier}: {r:?}");
        assert!(r.check("get", Some(&orders)).is_err(), "{qualifier}");
    }
    // No ARN at all (local tooling: lambda_runtime's placeholder without the header, cargo
    // lambda watch's `function-arn`): as unqualified.
    let of = |arn: &str| Rights::of_invoked_arn(arn, &config("orders", &[]));
    assert_eq!(of("No header lambda-runtime-invoked-function-arn found."), Rights::Full);
    assert_eq!(of(""), Rights::Full);
    assert_eq!(of("function-arn"), Rights::Full);
    assert_eq!(of("arn:aws-cn:lambda:cn-north-1:123456789012:function:f"), Rights::Full);
    // An ARN of another shape is none Lambda sends: no rights, never every right.
    for odd in [
        "arn:aws:lambda:us-east-1:1:function:f:a:b",
        "arn:aws:s3:::bucket",
        "arn:",
    ] {
        assert!(matches!(of(odd), Rights::None { .. }), "{odd}: {:?}", of(odd));
    }
    // A queue's alias may call no queue-less action but a batch, `queues` and a rule's preview.
    assert!(send_orders.check("list", None).is_err(), "list with no queue");
    assert_eq!(send_orders.check("preview", None), Ok(()));
}

async fn as_alias(w: &TestWaiter, alias: &str, request: Value) -> Result<Value, crate::error::HandlerError> {
    let deadline = crate::ports::Clock::now(&w.clock) + chrono::TimeDelta::seconds(30);
    let r = Rights::of_invoked_arn(&format!("{FUNCTION}:{alias}"), &w.config);
    w.respond_as(&request, deadline, None, &r)
        .await
        .map(|reply| reply.to_value())
}

/// Through a producer's alias for `orders`: its jobs go in, a batch's job on `billing.fifo`
/// is refused alone, and the actions of other classes are refused whole; nothing of what was
/// refused is stored or sent.
#[tokio::test(start_paused = true)]
async fn the_function_refuses_what_its_alias_does_not_allow_in_each_job_of_a_batch() {
    let (w, store, queue, _) = test_waiter("orders,billing.fifo", &[("WAITER_DIRECT_MAX_DELAY", "0")]);
    let batch = json!({"jobs": [
        {"queue": "orders", "job_id": "a", "message_body": "a", "delay_seconds": 3600},
        {"queue": "billing.fifo", "job_id": "b", "message_body": "b", "delay_seconds": 3600, "message_group_id": "g"},
    ]});
    let r = as_alias(&w, "orders--send", batch).await.expect("a batch reply");
    assert_eq!(r["results"][0]["status"], "scheduled", "{r}");
    assert_eq!(r["results"][1]["status"], "error", "{r}");
    assert_eq!(r["results"][1]["error"]["type"], "AccessDenied", "{r}");
    assert_eq!(r["results"][1]["error"]["retryable"], false, "{r}");
    assert_eq!(store.len(), 1, "only `a` stored");
    for request in [
        json!({"action": "pause", "queue": "orders"}),
        json!({"action": "cancel_many", "queue": "orders", "job_ids": ["a"]}),
        json!({"action": "get", "queue": "billing.fifo", "job_id": "b"}),
    ] {
        let e = as_alias(&w, "orders--send", request.clone())
            .await
            .expect_err("refused");
        assert_eq!(e.error_type(), "AccessDenied", "{request}: {e}");
        assert!(!e.is_retryable());
    }
    assert_eq!(
        call(&w, json!({"action": "get", "queue": "orders", "job_id": "a"})).await["status"],
        "scheduled"
    );
    // The viewer reads, and changes nothing.
    let listed = as_alias(&w, "view", json!({"action": "list", "queue": "orders"}))
        .await
        .expect("a list");
    assert_eq!(listed["jobs"].as_array().map(Vec::len), Some(1), "{listed}");
    let e = as_alias(
        &w,
        "view",
        json!({"action": "cancel", "queue": "orders", "job_id": "a"}),
    )
    .await;
    assert_eq!(e.expect_err("refused").error_type(), "AccessDenied");
    // A queue's viewer sees its own queue among the `queues`.
    let q = as_alias(&w, "billing-fifo--view", json!({"action": "queues"}))
        .await
        .expect("queues");
    assert_eq!(q["queues"].as_array().map(Vec::len), Some(1), "{q}");
    assert_eq!(q["queues"][0]["queue"], "billing.fifo", "{q}");
    assert_eq!(store.len(), 1, "nothing else stored");
    assert!(queue.sent().is_empty(), "nothing sent");
    let queues = call(&w, json!({"action": "queues"})).await;
    assert!(
        queues["queues"]
            .as_array()
            .into_iter()
            .flatten()
            .all(|q| q["paused"] == false),
        "the refused pause paused nothing: {queues}"
    );
    // Refused by its class before its fields are read: no queue names learnt from the refusal.
    let e = as_alias(&w, "orders--send", json!({"action": "pause", "queue": "secret-queue"})).await;
    assert_eq!(e.expect_err("refused").error_type(), "AccessDenied");
}

/// Through a queue's alias, a queue the stack does not serve is refused like one it serves:
/// `AccessDenied` naming the queue as given, alone and in a batch, never the parse's
/// `InvalidRequest` "not managed by this deployment", which would tell the queues apart.
#[tokio::test(start_paused = true)]
async fn a_queues_alias_is_refused_any_other_queue_alike_served_or_not() {
    let (w, store, queue, _) = test_waiter("orders,billing.fifo", &[]);
    for other in ["billing.fifo", "no-such-queue"] {
        let url = format!("https://sqs.eu-west-1.amazonaws.com/123456789012/{other}");
        for request in [
            json!({"queue": other, "job_id": "x", "message_body": "x", "delay_seconds": 3600}),
            json!({"Queue": other, "JobId": "x", "MessageBody": "x", "DelaySeconds": 3600}),
            json!({"QueueUrl": url, "MessageBody": "x", "DelaySeconds": 3600}),
            json!({"action": "get", "queue": other, "job_id": "x"}),
            json!({"action": "get", "queue_url": url, "job_id": "x"}),
            json!({"action": "preview", "queue": other, "job_id": "x"}),
            json!({"action": "preview", "Queue": other, "job_id": "x"}),
        ] {
            let e = as_alias(&w, "orders--send", request.clone())
                .await
                .expect_err("refused");
            assert_eq!(e.error_type(), "AccessDenied", "{request}: {e}");
            assert!(e.to_string().contains(other), "{request}: {e}");
        }
        let batch = json!({"jobs": [
            {"queue": "orders", "job_id": "a", "message_body": "a", "delay_seconds": 3600},
            {"queue": other, "job_id": "b", "message_body": "b", "delay_seconds": 3600},
            {"queue": 7, "job_id": "c", "message_body": "c", "delay_seconds": 3600},
            {"Queue": other, "job_id": "d", "message_body": "d", "delay_seconds": 3600},
            {"QueueUrl": url, "job_id": "e", "message_body": "e", "delay_seconds": 3600},
        ]});
        let r = as_alias(&w, "orders--send", batch).await.expect("a batch reply");
        assert_eq!(r["results"][0]["status"], "scheduled", "{r}");
        for i in 1..=4 {
            assert_eq!(r["results"][i]["error"]["type"], "AccessDenied", "{r}");
        }
    }
    // Its own queue under any of its names is served.
    for request in [
        json!({"action": "get", "queue_url": "https://sqs.eu-west-1.amazonaws.com/1/orders", "job_id": "a"}),
        json!({"action": "get", "Queue": "orders", "job_id": "a"}),
        json!({"QueueUrl": "https://sqs.eu-west-1.amazonaws.com/1/orders/", "JobId": "a", "MessageBody": "a", "DelaySeconds": 3600}),
    ] {
        let got = as_alias(&w, "orders--send", request.clone()).await.expect("served");
        assert_eq!(got["status"], "scheduled", "{request}: {got}");
    }
    // The class aliases of every queue still get the parse's answer for a queue not served.
    let e = as_alias(
        &w,
        "send",
        json!({"action": "get", "queue": "no-such-queue", "job_id": "x"}),
    )
    .await
    .expect_err("refused");
    assert_eq!(e.error_type(), "InvalidRequest", "{e}");
    assert_eq!(store.len(), 1, "only orders' `a`, stored once");
    assert!(queue.sent().is_empty(), "nothing sent");
}

/// Issue 82, defect 14: `queues` through a queue's alias reads that queue alone. Another
/// queue's missing table once failed the call, and its error named that table.
#[tokio::test(start_paused = true)]
async fn queues_through_a_queues_alias_reads_that_queue_only() {
    let (w, store, _, _) = test_waiter("orders,billing.fifo", &[]);
    let orders = QueueName::parse("orders").expect("a name");
    store.state.lock().unwrap().missing_tables.insert(orders);
    let q = as_alias(&w, "billing-fifo--view", json!({"action": "queues"}))
        .await
        .expect("billing.fifo's viewer reads its own queue, whatever orders' table");
    assert_eq!(q["queues"].as_array().map(Vec::len), Some(1), "{q}");
    assert_eq!(q["queues"][0]["queue"], "billing.fifo", "{q}");
    // Unqualified (an operator, every queue), the missing table still fails the call.
    let e = w
        .handle(&json!({"action": "queues"}))
        .await
        .expect_err("orders' table is missing");
    assert!(e.to_string().contains("sqs-waiter-orders"), "{e}");
    // And a viewer of every queue meets it too: the class alias sees every queue.
    let e = as_alias(&w, "view", json!({"action": "queues"}))
        .await
        .expect_err("every queue read");
    assert_eq!(e.error_type(), "ResourceNotFound", "{e}");
}
