//! Both routes end to end: direct SendMessage for short delays, store-then-poll for long ones.

use std::time::Duration;

use e2e::rig::{in_secs, parse_time, setup};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn short_delay_goes_direct_and_long_delay_is_stored_then_delivered_never_early() {
    let mut s = setup(
        &["orders"],
        &[
            ("WAITER_DIRECT_MAX_DELAY", "2"),
            ("WAITER_LOOKAHEAD", "3"),
            ("WAITER_SHARDS", "2"),
        ],
    )
    .await;

    let direct = s
        .enqueue_ok(json!({"queue": "orders", "message_body": "direct", "delay_seconds": 1, "job_id": "d-1"}))
        .await;
    assert_eq!(direct["status"], "sent", "{direct}");
    assert!(direct["message_id"].as_str().is_some_and(|m| !m.is_empty()));
    assert_eq!(s.table_len("orders").await, 0, "the direct route stores nothing");

    let perform_at = in_secs(6.5);
    let stored = s
        .enqueue_ok(json!({"queue": "orders", "message_body": "stored", "perform_at": perform_at, "job_id": "s-1"}))
        .await;
    assert_eq!(stored["status"], "scheduled", "{stored}");
    assert_eq!(stored["duplicate"], false);
    assert_eq!(s.table_len("orders").await, 1);

    let got = s
        .poll_and_receive(0, 2, Duration::from_secs(1), Duration::from_secs(20))
        .await;
    let bodies: Vec<_> = got
        .iter()
        .map(|r| r.message.body().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(got.len(), 2, "exactly the two jobs, once each: {bodies:?}");
    let stored_msg = got
        .iter()
        .find(|r| r.message.body() == Some("stored"))
        .expect("stored job delivered");
    let due = parse_time(&perform_at);
    let lateness = (stored_msg.at - due).num_milliseconds();
    assert!(lateness >= 0, "never early: arrived {lateness} ms before perform_at");
    assert!(lateness < 3_000, "loose bound: {lateness} ms late");
    assert_eq!(s.table_len("orders").await, 0, "removed after SQS accepted it");
}

#[tokio::test(flavor = "multi_thread")]
async fn json_logs_and_emf_metrics_never_carry_message_bodies() {
    let mut s = setup(
        &["orders"],
        &[
            ("WAITER_DIRECT_MAX_DELAY", "0"),
            ("WAITER_LOOKAHEAD", "2"),
            ("AWS_LAMBDA_LOG_FORMAT", "JSON"),
            // The poller names each dispatched job at debug (its counts are in the run summary),
            // so that line is read here too.
            ("RUST_LOG", "info,waiter=debug"),
        ],
    )
    .await;
    let secret = "card-4111-1111-1111-1111";
    s.enqueue_ok(json!({"queue": "orders", "message_body": secret, "delay_seconds": 1, "job_id": "emf-1"}))
        .await;
    let got = s
        .poll_and_receive(0, 1, Duration::from_secs(1), Duration::from_secs(15))
        .await;
    assert_eq!(got.len(), 1);
    for (name, log) in [("enqueue", s.enqueue.log()), ("poller", s.poller.log())] {
        assert!(!log.contains(secret), "{name} logged a message body:\n{log}");
        let lines: Vec<serde_json::Value> = log
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("{name}: not JSON: {l}")))
            .collect();
        assert!(
            lines.iter().any(|l| l.get("_aws").is_some()),
            "{name} wrote no EMF line"
        );
        assert!(
            lines.iter().any(|l| l["fields"]["job_id"] == "emf-1"),
            "{name} logs lack structured job_id:\n{log}"
        );
    }
    let emf: Vec<serde_json::Value> = e2e::json_lines(&s.poller.log())
        .into_iter()
        .filter(|l| l.get("_aws").is_some())
        .collect();
    // The function's lines, and beside them its per-queue lines (the dashboard's): each counts
    // the one job once.
    let dispatched = |per_queue: bool| {
        emf.iter()
            .filter(|l| l.get("Queue").is_some() == per_queue)
            .map(|l| l["Dispatched"].as_f64().unwrap_or(0.0))
            .sum::<f64>()
    };
    assert_eq!((dispatched(false), dispatched(true)), (1.0, 1.0));
    assert_eq!(emf[0]["_aws"]["CloudWatchMetrics"][0]["Namespace"], "SqsWaiter");
}

/// The enqueue alarm watches Lambda's `Errors` minus `Refused` plus `Failures` (template.yaml
/// `EnqueueFailuresAlarm`): a caller's mistake must move `Refused` only, our own failure
/// `Failures` only.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_request_never_counts_as_a_failure_and_our_own_failure_does() {
    let mut s = setup(&["orders"], &[("AWS_LAMBDA_LOG_FORMAT", "JSON")]).await;
    let sums = |log: String| {
        let emf: Vec<serde_json::Value> = e2e::json_lines(&log)
            .into_iter()
            .filter(|l| l.get("_aws").is_some())
            .collect();
        let sum = |name: &str| emf.iter().map(|l| l[name].as_f64().unwrap_or(0.0)).sum::<f64>();
        // One invocation line each (it carries Refused), besides the errors-by-type lines.
        let invocations = emf.iter().filter(|l| l.get("Refused").is_some()).count();
        (invocations, sum("Refused"), sum("Failures"))
    };
    // The errors-by-type lines (the dashboard's graph): count per ErrorType.
    let by_type = |log: String| {
        let mut counts = std::collections::BTreeMap::<String, f64>::new();
        for l in e2e::json_lines(&log) {
            if let (Some(t), Some(n)) = (l["ErrorType"].as_str(), l["Errors"].as_f64()) {
                *counts.entry(t.to_owned()).or_default() += n;
            }
        }
        counts
    };

    // Two callers' mistakes, an enqueue and a cancel: both Lambda errors.
    for bad in [
        json!({"queue": "orders", "message_body": "x", "delay_seconds": -1}),
        json!({"action": "cancel", "queue": "orders"}),
    ] {
        let e = s.enqueue.invoke(&bad).await.expect_err("refused");
        assert_eq!(e.error_type, "InvalidRequest", "{bad}");
    }
    assert_eq!(sums(s.enqueue.log()), (2, 2.0, 0.0), "refused, never failures");
    assert_eq!(by_type(s.enqueue.log()), [("InvalidRequest".to_owned(), 2.0)].into());

    // Our own failure: the queue's table is gone.
    s.emu
        .dynamodb
        .delete_table()
        .table_name("waiter-orders")
        .send()
        .await
        .expect("delete table");
    let e = s
        .enqueue
        .invoke(&json!({"queue": "orders", "message_body": "x", "delay_seconds": 3600}))
        .await
        .expect_err("no table");
    assert_ne!(e.error_type, "InvalidRequest");
    let batch = s
        .enqueue_ok(json!({"jobs": [
            {"queue": "orders", "message_body": "x", "delay_seconds": 3600},
            {"queue": "orders", "message_body": "", "delay_seconds": 3600}
        ]}))
        .await;
    assert_eq!(batch["results"][1]["error"]["type"], "InvalidRequest", "{batch}");
    assert_ne!(batch["results"][0]["error"]["type"], "InvalidRequest", "{batch}");
    assert_eq!(
        sums(s.enqueue.log()),
        (4, 2.0, 2.0),
        "the failed invocation and the batch's failed job are failures; the batch's invalid job is not"
    );
    let types = by_type(s.enqueue.log());
    assert_eq!(types.get("InvalidRequest"), Some(&3.0), "{types:?}");
    assert_eq!(
        types.values().sum::<f64>(),
        5.0,
        "and two of ours, by their type: {types:?}"
    );
}

/// The functions carry one HTTPS client of their own (hyper 1 + rustls on ring), chosen by
/// Cargo features; a missing TLS feature compiles and fails only at the first request. Both
/// routes go through a TLS front here, trusted through `SSL_CERT_FILE` as a private CA would be;
/// without that trust the same call is refused, so the handshake really is checked.
#[tokio::test(flavor = "multi_thread")]
async fn both_routes_work_over_https_and_an_untrusted_certificate_is_refused() {
    let emu = e2e::Emulator::start().await;
    let url = emu.create_queue("orders").await;
    emu.create_table("orders").await;
    let front = e2e::tls_front::TlsFront::start(&emu.endpoint).await;
    let settings = [
        ("WAITER_QUEUES", "orders"),
        ("WAITER_DIRECT_MAX_DELAY", "2"),
        ("WAITER_LOOKAHEAD", "3"),
    ];
    let mut trusted = emu.function_env_via(&front.endpoint, &settings);
    trusted.push(("SSL_CERT_FILE".into(), front.ca_file.display().to_string()));
    let mut enqueue = e2e::Function::start("enqueue", &trusted).await;
    let mut poller = e2e::Function::start("poller", &trusted).await;

    let direct = enqueue
        .invoke_ok(&json!({"queue": "orders", "message_body": "direct", "delay_seconds": 0, "job_id": "tls-d"}))
        .await;
    assert_eq!(direct["status"], "sent", "{direct}");
    let stored = enqueue
        .invoke_ok(&json!({"queue": "orders", "message_body": "stored", "perform_at": in_secs(4.0), "job_id": "tls-s"}))
        .await;
    assert_eq!(stored["status"], "scheduled", "{stored}");
    assert_eq!(emu.job_count("orders").await, 1);
    // Within the lookahead: the poller sends it with the rest of its delay.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let run = poller.invoke_ok(&json!({})).await;
    let got = emu.receive_for(&url, Duration::from_secs(15), 2).await;
    let mut bodies: Vec<_> = got.iter().filter_map(|r| r.message.body()).collect();
    bodies.sort_unstable();
    assert_eq!(bodies, ["direct", "stored"], "poller run: {run}");
    assert_eq!(emu.job_count("orders").await, 0, "removed over HTTPS too");

    // The same function without the front's certificate in its trust store: refused, nothing stored.
    let mut untrusted_env = emu.function_env_via(&front.endpoint, &settings);
    untrusted_env.push(("SSL_CERT_FILE".into(), "/dev/null".into()));
    let mut untrusted = e2e::Function::start("enqueue", &untrusted_env).await;
    let refused = untrusted
        .invoke(&json!({"queue": "orders", "message_body": "x", "delay_seconds": 3600, "job_id": "tls-u"}))
        .await;
    assert!(refused.is_err(), "an untrusted certificate was accepted: {refused:?}");
    assert_eq!(emu.job_count("orders").await, 0);
}
