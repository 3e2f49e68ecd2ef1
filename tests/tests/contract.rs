//! The enqueue contract end to end: batches, idempotency, attributes byte for byte, every class
//! of bad input (leaving nothing behind), get and cancel, configuration errors, LSI tables.

use std::time::Duration;

use base64::Engine as _;
use e2e::rig::{in_secs, setup};
use e2e::{Emulator, Function};
use serde_json::{json, Value};

async fn queue_depth(emu: &Emulator, url: &str) -> usize {
    emu.queue_counts(url).await.values().sum()
}

#[tokio::test(flavor = "multi_thread")]
async fn batch_of_100_keeps_order_and_idempotency_holds() {
    let mut s = setup(&["orders"], &[("WAITER_DIRECT_MAX_DELAY", "60")]).await;
    let mut jobs: Vec<Value> = (0..100)
        .map(|i| {
            let delay = if i % 2 == 0 { 30 } else { 3600 };
            json!({"queue": "orders", "message_body": format!("m{i}"), "delay_seconds": delay, "job_id": format!("j-{i}")})
        })
        .collect();
    jobs[13] = json!({"queue": "orders", "message_body": ""});
    jobs[14] = json!({"queue": "elsewhere", "message_body": "x"});
    let reply = s.enqueue_ok(json!({"jobs": jobs})).await;
    let results = reply["results"].as_array().expect("results");
    assert_eq!(results.len(), 100);
    for (i, r) in results.iter().enumerate() {
        match i {
            13 => assert!(
                r["error"]["message"].as_str().unwrap().starts_with("message_body:"),
                "{r}"
            ),
            14 => assert!(r["error"]["message"].as_str().unwrap().starts_with("queue:"), "{r}"),
            _ => {
                assert_eq!(r["job_id"], format!("j-{i}"), "results in input order");
                assert_eq!(r["status"], if i % 2 == 0 { "sent" } else { "scheduled" }, "{r}");
            }
        }
    }
    assert_eq!(s.table_len("orders").await, 49);
    let url = s.urls[0].clone();
    assert_eq!(queue_depth(&s.emu, &url).await, 49);

    // The same job_id again changes nothing, whatever else differs.
    let again = s
        .enqueue_ok(json!({"queue": "orders", "message_body": "changed", "delay_seconds": 7200, "job_id": "j-1"}))
        .await;
    assert_eq!(again["duplicate"], true, "{again}");
    assert_eq!(again["status"], "scheduled");
    assert_eq!(s.table_len("orders").await, 49);
    let got = s
        .enqueue_ok(json!({"action": "get", "queue": "orders", "job_id": "j-1"}))
        .await;
    assert_eq!(got["message_body"], "m1");
    assert_eq!(got["perform_at"], results[1]["perform_at"]);
    // A direct-route request naming a stored job_id is a duplicate too, and sends nothing.
    let direct = s
        .enqueue_ok(json!({"queue": "orders", "message_body": "now", "job_id": "j-1"}))
        .await;
    assert_eq!(direct["duplicate"], true);
    assert_eq!(queue_depth(&s.emu, &url).await, 49);
}

#[tokio::test(flavor = "multi_thread")]
async fn bodies_and_attributes_round_trip_byte_for_byte_on_both_routes() {
    let mut s = setup(
        &["orders"],
        &[("WAITER_DIRECT_MAX_DELAY", "1"), ("WAITER_LOOKAHEAD", "2")],
    )
    .await;
    let all_bytes: Vec<u8> = (0..=255u8).collect();
    let b64 = base64::engine::general_purpose::STANDARD.encode(&all_bytes);
    let body = "{\"order\":42}\r\n\tünïcødé 🚀 \u{E000} \u{10FFFF} <xml attr='1'/> \\\"";
    let attributes = json!({
        "kind": {"data_type": "String", "string_value": "invoice ✓"},
        "count": {"DataType": "Number", "StringValue": "-12.50"},
        "blob": {"data_type": "Binary", "binary_value": b64},
        "custom": {"data_type": "String.json", "string_value": "{\"a\":1}"},
        "gz": {"data_type": "Binary.gzip", "binary_value": "H4sIAAAAAAAA"}
    });
    let direct = s
        .enqueue_ok(
            json!({"queue": "orders", "message_body": body, "message_attributes": attributes, "job_id": "direct"}),
        )
        .await;
    assert_eq!(direct["status"], "sent");
    let stored = s
        .enqueue_ok(json!({"queue": "orders", "message_body": body, "message_attributes": attributes, "job_id": "stored", "perform_at": in_secs(3.0)}))
        .await;
    assert_eq!(stored["status"], "scheduled");

    let got = s
        .poll_and_receive(0, 2, Duration::from_secs(1), Duration::from_secs(20))
        .await;
    assert_eq!(got.len(), 2);
    for r in got {
        assert_eq!(r.message.body(), Some(body), "body unaltered");
        let attrs = r.message.message_attributes().expect("attributes");
        assert_eq!(attrs.len(), 6, "the five given, and the job's own id");
        assert!(attrs["waiter.job_id"].string_value().is_some_and(|id| !id.is_empty()));
        assert_eq!(attrs["kind"].string_value(), Some("invoice ✓"));
        assert_eq!(attrs["count"].data_type(), "Number");
        assert_eq!(attrs["count"].string_value(), Some("-12.50"));
        assert_eq!(
            attrs["blob"].binary_value().map(|b| b.as_ref().to_vec()),
            Some(all_bytes.clone())
        );
        assert_eq!(attrs["custom"].data_type(), "String.json");
        assert_eq!(attrs["gz"].data_type(), "Binary.gzip");
        assert_eq!(
            attrs["gz"].binary_value().map(|b| b.as_ref().to_vec()),
            Some(
                base64::engine::general_purpose::STANDARD
                    .decode("H4sIAAAAAAAA")
                    .unwrap()
            )
        );
    }
}

/// Issue 45, item 4: a body whose item bills fewer write units deflated is stored so, in
/// `message_body_deflate`, and still reaches SQS (and `get`) exactly as given: a JSON event, text
/// across SQS's character ranges, and a binary payload in base64.
#[tokio::test(flavor = "multi_thread")]
async fn large_bodies_are_stored_deflated_and_sent_byte_for_byte() {
    use aws_sdk_dynamodb::types::AttributeValue;
    let mut s = setup(
        &["orders"],
        &[("WAITER_DIRECT_MAX_DELAY", "0"), ("WAITER_LOOKAHEAD", "2")],
    )
    .await;
    let mut noise = 0x2545_F491_4F6C_DD1Du64;
    let binary: Vec<u8> = (0..6000)
        .map(|_| {
            noise ^= noise << 13;
            noise ^= noise >> 7;
            noise ^= noise << 17;
            noise as u8
        })
        .collect();
    let bodies = [
        ("json", e2e::bench::json_body(1, 8000)),
        (
            "text",
            "{\"order\":42}\r\n\tünïcødé 🚀 \u{E000} \u{10FFFF} \u{FFFD} \u{D7FF} <xml attr='1'/> \\\"".repeat(40),
        ),
        ("binary", base64::engine::general_purpose::STANDARD.encode(&binary)),
        // Over DynamoDB's 400 KB as given: stored only because it deflates.
        ("json-600k", e2e::bench::json_body(2, 600 * 1024)),
    ];
    for (id, body) in &bodies {
        let r = s
            .enqueue_ok(json!({"queue": "orders", "job_id": id, "message_body": body, "perform_at": in_secs(3.0)}))
            .await;
        assert_eq!(r["status"], "scheduled", "{r}");
        let got = s
            .enqueue_ok(json!({"action": "get", "queue": "orders", "job_id": id}))
            .await;
        assert_eq!(
            got["message_body"].as_str(),
            Some(body.as_str()),
            "{id}: get reads it back"
        );
    }
    let items = s.emu.stored_jobs("waiter-orders").await;
    let deflated = |id: &str| {
        let item = items
            .iter()
            .find(|i| i.get("job_id").and_then(|v| v.as_s().ok()).map(String::as_str) == Some(id))
            .expect("stored");
        match (item.get("message_body"), item.get("message_body_deflate")) {
            (None, Some(AttributeValue::B(z))) => Some(z.as_ref().len()),
            (Some(AttributeValue::S(_)), None) => None,
            other => panic!("{id}: {other:?}"),
        }
    };
    for id in ["json", "text"] {
        let z = deflated(id).unwrap_or_else(|| panic!("{id} stored deflated"));
        assert!(z < 2048, "{id}: {z} bytes deflated");
    }
    assert!(deflated("json-600k").is_some_and(|z| z < 200 * 1024));
    // Random bytes in base64 deflate by about a quarter: stored either way, sent the same.
    deflated("binary");

    let got = s
        .poll_and_receive(0, 4, Duration::from_secs(1), Duration::from_secs(20))
        .await;
    assert_eq!(got.len(), 4);
    for (id, body) in &bodies {
        let sent = got
            .iter()
            .find(|r| {
                r.message
                    .body()
                    .is_some_and(|b| b.len() == body.len() && b.starts_with(&body[..8]))
            })
            .unwrap_or_else(|| panic!("{id} received"));
        assert_eq!(sent.message.body().map(str::as_bytes), Some(body.as_bytes()), "{id}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_bad_input_class_is_refused_by_name_and_leaves_nothing_behind() {
    let mut s = setup(&["orders", "billing.fifo"], &[("WAITER_DIRECT_MAX_DELAY", "10")]).await;
    let eleven: serde_json::Map<String, Value> = (0..11)
        .map(|i| (format!("a{i}"), json!({"data_type": "String", "string_value": "v"})))
        .collect();
    let cases: Vec<(Value, &str)> = vec![
        (json!({"queue": "unknown", "message_body": "x"}), "queue"),
        (
            json!({"queue": "orders", "message_body": "x", "delay_seconds": 5, "perform_at": in_secs(60.0)}),
            "delay_seconds",
        ),
        (
            json!({"queue": "orders", "message_body": "x", "delay_seconds": -5}),
            "delay_seconds",
        ),
        (
            json!({"queue": "orders", "message_body": "x", "perform_at": "soon"}),
            "perform_at",
        ),
        (json!({"queue": "orders", "message_body": ""}), "message_body"),
        (
            json!({"queue": "orders", "message_body": "x".repeat(1024 * 1024 + 1)}),
            "message_body",
        ),
        (
            json!({"queue": "orders", "message_body": "x", "message_attributes": eleven}),
            "message_attributes",
        ),
        (
            json!({"queue": "orders", "message_body": "x", "message_attributes": {"a": {"data_type": "Float", "string_value": "1"}}}),
            "message_attributes.a.data_type",
        ),
        (
            json!({"queue": "orders", "message_body": "x", "job_id": "bad id!"}),
            "job_id",
        ),
        (
            json!({"queue": "billing.fifo", "message_body": "x", "delay_seconds": 60}),
            "message_group_id",
        ),
        (
            // Over 400 KB as stored: random text deflates by about a fifth only.
            json!({"queue": "orders", "message_body": e2e::bench::incompressible_text(900 * 1024), "delay_seconds": 3600}),
            "message_body",
        ),
        (json!({"queue": "orders", "message_body": 17}), "message_body"),
        (json!(["not", "an", "object"]), "request"),
    ];
    for (payload, field) in cases {
        let err = s
            .enqueue
            .invoke(&payload)
            .await
            .expect_err(&format!("accepted {field} case"));
        assert_eq!(err.error_type, "InvalidRequest", "{err:?}");
        assert!(
            err.error_message.starts_with(&format!("{field}:")),
            "{field}: {}",
            err.error_message
        );
    }
    // Malformed JSON and a nesting bomb never reach the handler's logic but get the same error.
    for raw in [
        b"{\"queue\": \"orders\", ".to_vec(),
        format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes(),
    ] {
        let err = s
            .enqueue
            .invoke_raw(raw, Duration::from_secs(30))
            .await
            .expect_err("malformed accepted");
        assert_eq!(err.error_type, "InvalidRequest");
        assert!(
            err.error_message.starts_with("request: is not valid JSON"),
            "{}",
            err.error_message
        );
    }
    assert_eq!(s.table_len("orders").await, 0);
    assert_eq!(s.table_len("billing.fifo").await, 0);
    for url in s.urls.clone() {
        assert_eq!(queue_depth(&s.emu, &url).await, 0);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn get_and_cancel_a_stored_job() {
    let mut s = setup(&["orders"], &[]).await;
    let r = s
        .enqueue_ok(
            json!({"queue": "orders", "message_body": "x", "delay_seconds": 3600, "job_id": "invoice-42",
                           "expires_at": in_secs(7200.0)}),
        )
        .await;
    assert_eq!(r["status"], "scheduled");
    let got = s
        .enqueue_ok(json!({"action": "get", "queue": "orders", "job_id": "invoice-42"}))
        .await;
    assert_eq!(got["status"], "scheduled");
    assert_eq!(got["perform_at"], r["perform_at"]);
    assert!(got["expires_at"].is_string());
    let c = s
        .enqueue_ok(json!({"action": "cancel", "queue": "orders", "job_id": "invoice-42"}))
        .await;
    assert_eq!(c["status"], "cancelled");
    assert_eq!(s.table_len("orders").await, 0);
    let again = s
        .enqueue_ok(json!({"action": "cancel", "queue": "orders", "job_id": "invoice-42"}))
        .await;
    assert_eq!(again["status"], "not_found");
    let got = s
        .enqueue_ok(json!({"action": "get", "queue": "orders", "job_id": "invoice-42"}))
        .await;
    assert_eq!(got["status"], "cancelled", "history: {got}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_variable_stops_the_function_at_start_naming_it() {
    let emu = Emulator::start().await;
    for (name, settings, variable) in [
        ("enqueue", vec![], "WAITER_QUEUES"),
        (
            "enqueue",
            vec![("WAITER_QUEUES", "orders"), ("WAITER_DIRECT_MAX_DELAY", "1000")],
            "WAITER_DIRECT_MAX_DELAY",
        ),
        (
            "poller",
            vec![("WAITER_QUEUES", "orders"), ("WAITER_SHARDS", "zero")],
            "WAITER_SHARDS",
        ),
        (
            "poller",
            vec![("WAITER_QUEUES", "orders"), ("WAITER_LOOKAHEAD", "901")],
            "WAITER_LOOKAHEAD",
        ),
    ] {
        e2e::rig::assert_stops_at_start_naming(&emu, name, &settings, variable).await;
    }
}

/// Issue 45, 3: the stacks' index projects only the keys, `priority` and `weight`; a table
/// whose index projects everything (the seed's GSI, adopted tables, an LSI) keeps working. Each
/// kind serves the poller, `list` with and without bodies, `stats` and `cancel_many` alike,
/// since every view beyond the keys is a consistent re-read from the table.
#[tokio::test(flavor = "multi_thread")]
async fn every_index_projection_serves_the_poller_list_stats_and_cancel_many() {
    use e2e::emulator::IndexKind;
    let emu = Emulator::start().await;
    for (queue, kind) in [
        ("narrow", IndexKind::Global),
        ("seed", IndexKind::GlobalAll),
        ("legacy", IndexKind::Local),
    ] {
        let url = emu.create_queue(queue).await;
        emu.create_table_with(queue, kind).await;
        let env = emu.function_env(&[
            ("WAITER_QUEUES", queue),
            ("WAITER_DIRECT_MAX_DELAY", "0"),
            ("WAITER_LOOKAHEAD", "2"),
        ]);
        let mut enqueue = Function::start("enqueue", &env).await;
        let mut poller = Function::start("poller", &env).await;
        let mut call =
            async |request: serde_json::Value| enqueue.invoke_as_client(&request).await.expect("enqueue answers");
        for (id, delay) in [("later-1", 3600), ("later-2", 7200)] {
            let r = call(
                json!({"queue": queue, "job_id": id, "message_body": format!("body of {id}"),
                "delay_seconds": delay, "priority": 7,
                "message_attributes": {"kind": {"data_type": "String", "string_value": "k"}}}),
            )
            .await;
            assert_eq!(r["status"], "scheduled", "{kind:?}: {r}");
        }
        let listed = call(json!({"action": "list", "queue": queue, "with_body": true})).await;
        let jobs = listed["jobs"].as_array().expect("jobs");
        assert_eq!(jobs.len(), 2, "{kind:?}: {listed}");
        assert_eq!(jobs[0]["job_id"], "later-1", "{kind:?}: in time order");
        assert_eq!(jobs[0]["message_body"], "body of later-1", "{kind:?}: {listed}");
        assert_eq!(jobs[1]["message_attributes"]["kind"]["string_value"], "k", "{kind:?}");
        assert_eq!(jobs[1]["priority"], 7, "{kind:?}: {listed}");
        let bare = call(json!({"action": "list", "queue": queue})).await;
        assert_eq!(bare["jobs"].as_array().map(Vec::len), Some(2), "{kind:?}: {bare}");
        assert!(bare["jobs"][0].get("message_body").is_none(), "{kind:?}: {bare}");
        assert_eq!(
            bare["jobs"][0]["version"], 1,
            "{kind:?}: read from the table, not the index"
        );
        let stats = call(json!({"action": "stats", "queue": queue})).await;
        assert_eq!(stats["scheduled"], 2, "{kind:?}: {stats}");
        assert!(stats["next_due"].is_string(), "{kind:?}: {stats}");
        let r = call(json!({"action": "cancel_many", "queue": queue, "prefix": "later-"})).await;
        assert_eq!(r["cancelled"], 2, "{kind:?}: {r}");

        let r = call(json!({"queue": queue, "message_body": "soon", "delay_seconds": 1, "priority": 3})).await;
        assert_eq!(r["status"], "scheduled", "{kind:?}: {r}");
        let mut got = Vec::new();
        for _ in 0..10 {
            poller.invoke_as_client(&json!({})).await.expect("poller answers");
            got.extend(emu.receive_for(&url, Duration::from_secs(1), 1).await);
            if !got.is_empty() {
                break;
            }
        }
        assert_eq!(got.len(), 1, "{kind:?}");
        assert_eq!(got[0].message.body(), Some("soon"), "{kind:?}");
        let priority = got[0]
            .message
            .message_attributes()
            .and_then(|a| a.get("waiter.priority"));
        assert_eq!(priority.and_then(|p| p.string_value()), Some("3"), "{kind:?}");
    }
}

/// Lambda filters JSON log lines by their `level` and counts a line without one (the EMF metrics
/// line) as INFO, so at WARN or ERROR it would drop the metrics. The deployment therefore sets
/// Lambda's application log level to TRACE (`AWS_LAMBDA_LOG_LEVEL`) and the chosen level in
/// `RUST_LOG`, which the runtime's subscriber prefers as its directives: the process filters its
/// own logs and the metrics line is printed whatever the level.
#[tokio::test(flavor = "multi_thread")]
async fn metrics_are_printed_whatever_the_log_level() {
    let mut s = setup(
        &["orders"],
        &[
            ("AWS_LAMBDA_LOG_LEVEL", "TRACE"),
            ("AWS_LAMBDA_LOG_FORMAT", "JSON"),
            ("RUST_LOG", "ERROR"),
        ],
    )
    .await;
    s.poll().await;
    let log = s.poller.log();
    assert!(
        log.lines()
            .any(|l| l.contains("\"_aws\"") && l.contains("\"Dispatched\"")),
        "the EMF line is printed: {log}"
    );
    assert!(
        !log.lines()
            .any(|l| l.contains("\"level\":\"INFO\"") || l.contains("\"level\":\"TRACE\"")),
        "RUST_LOG=ERROR, not Lambda's TRACE, filters the process's own logs: {log}"
    );
}

/// The dashboard's per-queue graphs (issue 24, 4): each poller run prints a line per queue, in
/// dimensions FunctionName and Queue, with what it dispatched there and how late.
#[tokio::test(flavor = "multi_thread")]
async fn the_poller_prints_per_queue_metrics_for_the_dashboard() {
    let s = two_jobs_polled(&[]).await;
    let lines: Vec<serde_json::Value> = e2e::json_lines(&s.poller.log())
        .into_iter()
        .filter(|l| l.get("Queue").is_some())
        .collect();
    let of = |q: &str| lines.iter().filter(|l| l["Queue"] == q).collect::<Vec<_>>();
    let orders = of("orders");
    assert_eq!(orders.len(), 1, "one line per queue per run: {lines:?}");
    assert_eq!(
        orders[0]["_aws"]["CloudWatchMetrics"][0]["Dimensions"],
        json!([["FunctionName", "Queue"]])
    );
    assert_eq!(orders[0]["Dispatched"], 2.0);
    assert_eq!(
        orders[0]["Lateness"].as_array().map(Vec::len),
        Some(2),
        "{:?}",
        orders[0]
    );
    assert_eq!(of("billing")[0]["Dispatched"], 0.0, "an idle queue reports zero");
}

/// Issue 45, item 7: `WAITER_QUEUE_METRICS=false` leaves out every per-queue line (each queue's
/// metrics are custom metrics billed by the month) and keeps the function's own, which the
/// alarms watch.
#[tokio::test(flavor = "multi_thread")]
async fn per_queue_metrics_can_be_turned_off() {
    let s = two_jobs_polled(&[("WAITER_QUEUE_METRICS", "false")]).await;
    let lines = e2e::json_lines(&s.poller.log());
    let metrics: Vec<&serde_json::Value> = lines.iter().filter(|l| l.get("_aws").is_some()).collect();
    assert!(
        metrics.iter().all(|l| l.get("Queue").is_none()),
        "no line per queue: {metrics:?}"
    );
    let run = metrics
        .iter()
        .find(|l| l["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == json!([["FunctionName"]]))
        .expect("the function's own line");
    assert_eq!(run["Dispatched"], 2.0, "{run}");
}

/// Queues `orders` and `billing`; two jobs of `orders` due in a second, then one poller run.
async fn two_jobs_polled(extra: &[(&str, &str)]) -> e2e::rig::Setup {
    let mut settings = vec![("WAITER_DIRECT_MAX_DELAY", "0"), ("WAITER_LOOKAHEAD", "5")];
    settings.extend_from_slice(extra);
    let mut s = setup(&["orders", "billing"], &settings).await;
    for id in ["a", "b"] {
        s.enqueue_ok(json!({"queue": "orders", "job_id": id, "message_body": "x", "delay_seconds": 1}))
            .await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    s.poll().await;
    s
}
