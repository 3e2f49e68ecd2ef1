//! Priority and weighted throttling through Invoke (moto by default, LocalStack with
//! `E2E_BACKEND=localstack`): a backlog under `WAITER_MAX_RATE` arrives urgent first, a critical
//! job is not held back, and the fields are stored only when given, shown and kept.

use std::time::Duration;

use e2e::rig::{
    alone, assert_all_scheduled, in_secs, parse_time, receive_while, run_two_groups, setup, sleep_until_just_after,
    warm_two_groups, Rig,
};
use e2e::Function;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread")]
async fn a_backlog_at_4_a_second_arrives_urgent_first_and_a_critical_job_is_not_held_back() {
    let _machine = alone().await;
    // Four shards: the order holds across the queue's partitions.
    let mut s = setup(
        &["orders"],
        &[
            ("WAITER_DIRECT_MAX_DELAY", "0"),
            ("WAITER_SHARDS", "4"),
            ("WAITER_MAX_RATE", "4"),
        ],
    )
    .await;
    let due = in_secs(4.0);
    for chunk in backlog(&due).chunks(16) {
        let reply = s.enqueue_ok(json!({ "jobs": chunk })).await;
        assert_all_scheduled(&reply);
    }
    sleep_until_just_after(&due).await;
    let url = s.urls[0].clone();
    let event = json!({});
    let poll = s.poller.invoke_ok(&event);
    let (summary, got) = receive_while(&s.emu, &url, Duration::from_secs(12), 21, poll).await;
    assert_eq!(summary["dispatched"], 21, "{summary}");
    // The default jobs waited for the budget; the urgent and critical ones did not. (Four of
    // them may have wanted the next second anyway, when the run booked within `SEND_GUARD` of
    // a second's end.)
    let held = summary["held_back"].as_u64().unwrap_or(0);
    assert!((12..=16).contains(&held), "{summary}");
    urgent_first(got, parse_time(&due));
}

/// 16 jobs of the default priority first, then 4 urgent ones, then a critical one, all due at
/// `due`.
fn backlog(due: &str) -> Vec<Value> {
    let job = |body: String, priority: Option<u64>| {
        let mut j = json!({"queue": "orders", "message_body": body, "job_id": body, "perform_at": due});
        if let Some(p) = priority {
            j["priority"] = json!(p);
        }
        j
    };
    let mut jobs: Vec<Value> = (0..16).map(|i| job(format!("normal-{i}"), None)).collect();
    jobs.extend((0..4).map(|i| job(format!("urgent-{i}"), Some(1))));
    jobs.push(job("critical".into(), Some(0)));
    jobs
}

/// The 21 messages of `backlog` as two groups' runs started apart deliver them: never early,
/// and no urgent one a second or more behind a default one. (When a run waited for the other
/// group until its first second was nearly over, the urgent ones take the next second, and a
/// default one may share the last of them: SQS orders nothing within a second. A message is
/// received a little after its second begins: half a second of slack for that.)
fn urgent_by_second(got: Vec<e2e::emulator::Received>, due: chrono::DateTime<chrono::Utc>) {
    assert_eq!(got.len(), 21, "{got:?}");
    assert!(got.iter().all(|m| m.at >= due), "never early");
    let body = |m: &e2e::emulator::Received| m.message.body().unwrap_or_default().to_owned();
    let seen: Vec<(String, chrono::DateTime<chrono::Utc>)> = got.iter().map(|m| (body(m), m.at)).collect();
    let at = |prefix: &str| -> Vec<chrono::DateTime<chrono::Utc>> {
        got.iter()
            .filter(|m| body(m).starts_with(prefix))
            .map(|m| m.at)
            .collect()
    };
    let (urgent_last, normal_first) = (at("urgent").into_iter().max(), at("normal").into_iter().min());
    let (Some(urgent_last), Some(normal_first)) = (urgent_last, normal_first) else {
        panic!("{seen:?}");
    };
    assert!(
        urgent_last - normal_first < chrono::TimeDelta::milliseconds(1_500),
        "an urgent job a second behind a default one: {seen:?}"
    );
}

/// The 21 messages of `backlog`, received: never early; the default ones held back from the
/// due second; and neither an urgent one nor the critical one in a later second than a default
/// one (the contract's "never arrives in an earlier second than a better-ranked job held back
/// with it"). SQS orders nothing within a second, and a run's partitions that book near a
/// second's end (within `SEND_GUARD`) move their urgent jobs to the next second, where a default
/// one may share it: in this fifth cold run `urgent-0` took the due second and
/// `urgent-1` to `urgent-3` the next, with `normal-0`, all four in one receipt. The second a
/// message arrived in is the second of its receipt: a message the poller delays becomes visible
/// just after its second begins, and one it sends without a delay in the second it is sent.
fn urgent_first(mut got: Vec<e2e::emulator::Received>, due: chrono::DateTime<chrono::Utc>) {
    assert_eq!(got.len(), 21, "{got:?}");
    assert!(got.iter().all(|m| m.at >= due), "never early");
    got.sort_by_key(|m| m.at);
    let body = |m: &e2e::emulator::Received| m.message.body().unwrap_or_default().to_owned();
    let seen: Vec<(String, chrono::DateTime<chrono::Utc>)> = got.iter().map(|m| (body(m), m.at)).collect();
    let second = |prefix: &str, latest: bool| {
        let seconds = got
            .iter()
            .filter(|m| body(m).starts_with(prefix))
            .map(|m| m.at.timestamp());
        if latest { seconds.max() } else { seconds.min() }.unwrap_or_else(|| panic!("no {prefix} job: {seen:?}"))
    };
    let first_normal = second("normal", false);
    assert!(
        first_normal > due.timestamp(),
        "a default job in the due second: {seen:?}"
    );
    for ranked in ["urgent", "critical"] {
        assert!(
            second(ranked, true) <= first_normal,
            "the {ranked} job in a later second than a default one: {seen:?}"
        );
    }
    // The message says its priority, so that a consumer's retry keeps it.
    let urgent = got.iter().find(|m| body(m) == "urgent-0").expect("urgent-0");
    let carried = urgent
        .message
        .message_attributes()
        .and_then(|a| a.get("waiter.priority"))
        .and_then(|v| v.string_value());
    assert_eq!(carried, Some("1"));
    let normal = got.iter().find(|m| body(m) == "normal-0").expect("normal-0");
    let names: Vec<_> = normal
        .message
        .message_attributes()
        .map(|a| a.keys().cloned().collect())
        .unwrap_or_default();
    assert_eq!(names, ["waiter.job_id"], "nothing more than its id");
}

/// Two poller groups started at once, as two schedules fire: on a loaded machine their runs
/// start apart. A partition waits (up to `CHECK_IN_WAIT`) for the other group's partitions to
/// check in before it books, so the order holds whatever the skew (issue 46 item 8; it failed
/// in cold runs before: `normal-15` and `normal-8` beside `urgent-2` in the first second).
#[tokio::test(flavor = "multi_thread")]
async fn two_poller_groups_keep_the_order_across_their_partitions() {
    let _machine = alone().await;
    // Both groups book into the queue's ledger at once: on DynamoDB Local where moto does not
    // isolate conditional writes.
    let rig = Rig::builder(&["orders"])
        .settings(&[
            ("WAITER_DIRECT_MAX_DELAY", "0"),
            ("WAITER_SHARDS", "4"),
            ("WAITER_MAX_RATE", "4"),
            ("WAITER_POLLER_GROUPS", "2"),
        ])
        .for_concurrent_writes()
        .start()
        .await;
    let mut enqueue = Function::start("enqueue", &rig.env).await;
    let mut first = Function::start("poller", &rig.env).await;
    let mut second = Function::start("poller", &rig.env).await;
    warm_two_groups(&mut first, &mut second).await;
    let due = in_secs(4.0);
    for chunk in backlog(&due).chunks(16) {
        assert_all_scheduled(&enqueue.invoke_ok(&json!({ "jobs": chunk })).await);
    }
    sleep_until_just_after(&due).await;
    let runs = run_two_groups(&mut first, &mut second, 21);
    let (_, got) = receive_while(&rig.emu, &rig.urls[0], Duration::from_secs(12), 21, runs).await;
    urgent_by_second(got, parse_time(&due));
}

#[tokio::test(flavor = "multi_thread")]
async fn priority_and_weight_are_stored_only_when_given_shown_and_kept_by_reschedule() {
    let rig = Rig::builder(&["orders"])
        .proxy(0, 0.0)
        .settings(&[("WAITER_SHARDS", "1")])
        .start()
        .await;
    let proxy = rig.proxy.as_ref().expect("built with a proxy");
    let mut enqueue = Function::start("enqueue", &rig.env).await;
    let calls = || proxy.calls("PutItem") + proxy.calls("GetItem") + proxy.calls("Query");
    // The first request also reads the queue's shard counts: measured after it.
    enqueue
        .invoke_ok(&json!({"queue": "orders", "message_body": "warm", "delay_seconds": 3600}))
        .await;
    let before = calls();
    enqueue
        .invoke_ok(&json!({"queue": "orders", "message_body": "plain", "job_id": "plain", "delay_seconds": 3600}))
        .await;
    let plain_calls = calls() - before;
    let before = calls();
    enqueue
        .invoke_ok(
            &json!({"queue": "orders", "message_body": "ranked", "job_id": "ranked", "delay_seconds": 3600,
                           "priority": 7, "weight": 3}),
        )
        .await;
    assert_eq!(calls() - before, plain_calls, "the fields cost no call");
    // A job that sets neither field stores no attribute for them.
    let table = rig.table_client().await;
    let item = |id: &'static str| {
        let table = table.clone();
        async move {
            table
                .get_item()
                .table_name("orders")
                .key(
                    "scheduler",
                    aws_sdk_dynamodb::types::AttributeValue::S("orders#0".into()),
                )
                .key("job_id", aws_sdk_dynamodb::types::AttributeValue::S(id.into()))
                .consistent_read(true)
                .send()
                .await
                .expect("GetItem")
                .item
                .unwrap_or_default()
        }
    };
    let plain = item("plain").await;
    assert!(!plain.is_empty(), "stored");
    assert!(
        !plain.contains_key("priority") && !plain.contains_key("weight"),
        "{plain:?}"
    );
    let ranked = item("ranked").await;
    assert_eq!(
        ranked.get("priority").and_then(|v| v.as_n().ok()).map(String::as_str),
        Some("7")
    );
    assert_eq!(
        ranked.get("weight").and_then(|v| v.as_n().ok()).map(String::as_str),
        Some("3")
    );

    let get = |id: &str| json!({"action": "get", "queue": "orders", "job_id": id});
    let g = enqueue.invoke_ok(&get("plain")).await;
    assert_eq!(
        (g["priority"].as_u64(), g["weight"].as_u64()),
        (Some(100), Some(1)),
        "{g}"
    );
    let g = enqueue.invoke_ok(&get("ranked")).await;
    assert_eq!(
        (g["priority"].as_u64(), g["weight"].as_u64()),
        (Some(7), Some(3)),
        "{g}"
    );
    let listed = enqueue.invoke_ok(&json!({"action": "list", "queue": "orders"})).await;
    let ranked_row = listed["jobs"]
        .as_array()
        .and_then(|j| j.iter().find(|j| j["job_id"] == "ranked").cloned())
        .unwrap_or_default();
    assert_eq!(ranked_row["priority"], 7, "{listed}");
    // reschedule changes what it is given and keeps the rest.
    let r = enqueue
        .invoke_ok(&json!({"action": "reschedule", "queue": "orders", "job_id": "ranked", "delay_seconds": 7200, "priority": 50}))
        .await;
    assert_eq!(r["status"], "rescheduled", "{r}");
    let g = enqueue.invoke_ok(&get("ranked")).await;
    assert_eq!(
        (g["priority"].as_u64(), g["weight"].as_u64()),
        (Some(50), Some(3)),
        "{g}"
    );
    // Refused by field, and nothing changes.
    let err = enqueue
        .invoke(
            &json!({"action": "reschedule", "queue": "orders", "job_id": "ranked", "delay_seconds": 60, "weight": 101}),
        )
        .await
        .expect_err("weight 101 accepted");
    assert_eq!(err.error_type, "InvalidRequest");
    assert!(
        err.error_message
            .starts_with("weight: must be a whole number from 1 to 100"),
        "{err:?}"
    );
    let g = enqueue.invoke_ok(&get("ranked")).await;
    assert_eq!(g["weight"].as_u64(), Some(3), "{g}");
}
