//! Issue 74, mixed versions: today's functions over items of a later release's format (an
//! `item_format` above `ITEM_FORMAT`, and an attribute they do not know), as an old poller
//! meets them during a stack update's minutes or after a rollback. Built from this code: the
//! "later release" is today's items with the format raised, not a second checkout.
//! Nothing of such an item is sent, removed or rewritten; the poller counts it, and a FIFO
//! group waits behind it. Once the format is one the functions read, everything goes, in order.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{TimeDelta, Utc};
use e2e::emulator::scan_all;
use e2e::rig::{assert_all_scheduled, make_all_due, setup};
use serde_json::json;
use waiter::aws::codec::{A_ITEM_FORMAT, A_JOB_ID, A_PERFORM_AT, ITEM_FORMAT};

type Item = HashMap<String, AttributeValue>;

async fn item_of(ddb: &aws_sdk_dynamodb::Client, table: &str, job_id: &str) -> Option<Item> {
    scan_all(ddb, table)
        .await
        .into_iter()
        .find(|i| i.get(A_JOB_ID) == Some(&AttributeValue::S(job_id.to_owned())))
}

async fn put(ddb: &aws_sdk_dynamodb::Client, table: &str, item: Item) {
    ddb.put_item()
        .table_name(table)
        .set_item(Some(item))
        .send()
        .await
        .expect("PutItem");
}

/// Marks each record in a lease's debts as of `format` (a later release's), or as this
/// release's (`None`).
fn set_debt_records_format(lease: &mut Item, format: Option<u64>) {
    let Some(AttributeValue::L(debts)) = lease.get_mut("lease_debts") else {
        return;
    };
    for debt in debts.iter_mut() {
        if let AttributeValue::M(d) = debt {
            if let Some(AttributeValue::M(record)) = d.get_mut("record") {
                match format {
                    Some(f) => record.insert(A_ITEM_FORMAT.into(), AttributeValue::N(f.to_string())),
                    None => record.remove(A_ITEM_FORMAT),
                };
            }
        }
    }
}

/// Rewrites a stored job as a later release would write a kind this one does not know.
async fn as_later_release(ddb: &aws_sdk_dynamodb::Client, table: &str, job_id: &str) -> Item {
    let mut item = item_of(ddb, table, job_id).await.expect("stored");
    item.insert(A_ITEM_FORMAT.into(), AttributeValue::N((ITEM_FORMAT + 1).to_string()));
    item.insert("a_later_field".into(), AttributeValue::S("meaning unknown here".into()));
    put(ddb, table, item.clone()).await;
    item
}

#[tokio::test(flavor = "multi_thread")]
async fn items_of_a_later_format_are_left_untouched_counted_and_hold_their_fifo_group() {
    let mut s = setup(
        &["orders", "billing.fifo", "debts"],
        &[("WAITER_SHARDS", "1"), ("WAITER_DIRECT_MAX_DELAY", "0")],
    )
    .await;
    let job = |queue: &str, id: &str, group: Option<&str>| {
        let mut j = json!({"queue": queue, "job_id": id, "message_body": id, "delay_seconds": 3600});
        if let Some(g) = group {
            j["message_group_id"] = json!(g);
        }
        j
    };
    assert_all_scheduled(
        &s.enqueue_ok(json!({"jobs": [job("orders", "a", None), job("orders", "b", None)]}))
            .await,
    );
    // f1 before f2 in group g, h1 alone in group h.
    assert_all_scheduled(
        &s.enqueue_ok(
            json!({"jobs": [job("billing.fifo", "f1", Some("g")), job("billing.fifo", "f2", Some("g")),
                                      job("billing.fifo", "h1", Some("h"))]}),
        )
        .await,
    );
    let ddb = s.emu.dynamodb.clone();
    let due = Utc::now() - TimeDelta::seconds(3);
    make_all_due(&ddb, "waiter-orders", due).await;
    // A group's order is its jobs' times: one time for two would leave it to the index.
    for (i, id) in ["f1", "f2", "h1"].into_iter().enumerate() {
        let mut item = item_of(&ddb, "waiter-billing.fifo", id).await.expect("stored");
        let at = due + TimeDelta::seconds(i as i64);
        item.insert(A_PERFORM_AT.into(), AttributeValue::N(waiter::time::format_epoch(at)));
        put(&ddb, "waiter-billing.fifo", item).await;
    }
    let b = as_later_release(&ddb, "waiter-orders", "b").await;
    // f1's release also widened `weight` past what this one reads: the due index's entry
    // fails here, and must still reach the re-read that counts it and holds its group (issue 82).
    let mut f1 = as_later_release(&ddb, "waiter-billing.fifo", "f1").await;
    f1.insert("weight".into(), AttributeValue::N("70000".into()));
    put(&ddb, "waiter-billing.fifo", f1.clone()).await;

    // What an operator reads before a rollback (docs/upgrades.md step 2): every item by format,
    // the ones no run has met yet too.
    let stats = s
        .enqueue_ok(json!({"action": "stats", "queue": "orders", "formats": true}))
        .await;
    let later = (ITEM_FORMAT + 1).to_string();
    assert_eq!(stats["formats"], json!({"1": 1, later: 1}), "{stats}");
    let run = s.poll().await;
    assert_eq!(run["unreadable"], 2, "b and f1 met and counted: {run}");
    assert_eq!(run["dispatched"], 2, "a and h1 only: {run}");
    assert_eq!(run["drained"], true, "they wait for an update, not a run: {run}");
    let mut got = Vec::new();
    for i in 0..2 {
        let url = s.urls[i].clone();
        got.extend(s.emu.receive_for(&url, Duration::from_secs(3), usize::MAX).await);
    }
    let mut bodies: Vec<_> = got.iter().filter_map(|r| r.message.body().map(str::to_owned)).collect();
    bodies.sort();
    assert_eq!(bodies, ["a", "h1"], "f2 waits behind f1 in group g");
    // Untouched: byte for byte what the later release wrote.
    assert_eq!(item_of(&ddb, "waiter-orders", "b").await.as_ref(), Some(&b));
    assert_eq!(item_of(&ddb, "waiter-billing.fifo", "f1").await.as_ref(), Some(&f1));
    assert!(
        item_of(&ddb, "waiter-billing.fifo", "f2").await.is_some(),
        "f2 still stored"
    );

    // The enqueue function refuses, retryably, to act on what it cannot read, and names why.
    for request in [
        json!({"action": "get", "queue": "orders", "job_id": "b"}),
        json!({"action": "cancel", "queue": "orders", "job_id": "b"}),
        json!({"action": "reschedule", "queue": "orders", "job_id": "b", "delay_seconds": 60}),
        json!({"queue": "orders", "job_id": "b", "message_body": "again", "delay_seconds": 3600}),
        json!({"queue": "orders", "job_id": "b", "message_body": "again", "delay_seconds": 3600, "on_duplicate": "replace"}),
        json!({"action": "trigger", "queue": "orders", "job_id": "b"}),
        json!({"action": "pause", "queue": "orders", "job_id": "b"}),
        json!({"action": "preview", "queue": "orders", "job_id": "b"}),
        json!({"action": "replay", "queue": "orders", "job_id": "b"}),
        json!({"action": "retry", "queue": "orders", "job_id": "b", "attempt": 1, "message_body": "b"}),
    ] {
        let e = s.enqueue.invoke(&request).await.expect_err("refused");
        assert_eq!(e.error_type, "DependencyFailure", "{request}: {e:?}");
        assert!(e.error_message.contains("item_format"), "{request}: {e:?}");
    }
    assert_eq!(
        item_of(&ddb, "waiter-orders", "b").await.as_ref(),
        Some(&b),
        "still untouched"
    );

    // The functions read the format now (the update reached them): everything goes, f1 before f2.
    for (table, id) in [("waiter-orders", "b"), ("waiter-billing.fifo", "f1")] {
        let mut item = item_of(&ddb, table, id).await.expect("stored");
        item.remove(A_ITEM_FORMAT);
        // (and f1's weight is one they read: this code stands in for that release)
        item.remove("weight");
        put(&ddb, table, item).await;
    }
    let run = s.poll().await;
    assert_eq!(
        (run["dispatched"].clone(), run["unreadable"].clone()),
        (json!(3), json!(0)),
        "{run}"
    );
    let url = s.urls[1].clone();
    let fifo = s.emu.receive_for(&url, Duration::from_secs(3), usize::MAX).await;
    let order: Vec<_> = fifo.iter().filter_map(|r| r.message.body()).collect();
    assert_eq!(order, ["f1", "f2"]);

    // A lease a later release handed on, whose debts hold a record of its format: settling them
    // is that release's. The partition is left as it is (an error the alarm sees), nothing of it
    // is sent, and the debts stay; once readable, they are settled without a send.
    let set = e2e::fixtures::all_sets().pop().expect("this release's fixtures");
    let mut lease = None;
    for mut item in set.tables["debts"].iter().map(|i| set.aged(i)) {
        if item.contains_key("lease_debts") {
            // As a later release marks a lease whose debts hold a record of its format.
            set_debt_records_format(&mut item, Some(ITEM_FORMAT + 1));
            item.insert(A_ITEM_FORMAT.into(), AttributeValue::N((ITEM_FORMAT + 1).to_string()));
            lease = Some(item.clone());
        }
        put(&ddb, "waiter-debts", item).await;
    }
    let lease = lease.expect("the fixtures hold a lease with debts");
    let run = s.poll().await;
    assert!(run["errors"].to_string().contains("item_format"), "{run}");
    let url = s.urls[2].clone();
    assert!(
        s.emu
            .receive_for(&url, Duration::from_secs(2), usize::MAX)
            .await
            .is_empty(),
        "nothing of it sent"
    );
    let now = item_of(&ddb, "waiter-debts", "lease").await.expect("the lease");
    // Not written at all (issue 82): a takeover that moved its owner and times would lock
    // that release out until then, and have it read the lease as one left by a crash.
    assert_eq!(now, lease, "the lease untouched");
    let mut readable = now.clone();
    set_debt_records_format(&mut readable, None);
    readable.remove(A_ITEM_FORMAT);
    put(&ddb, "waiter-debts", readable).await;
    let run = s.poll().await;
    assert!(run.get("errors").is_none(), "{run}");
    assert!(
        s.emu
            .receive_for(&url, Duration::from_secs(2), usize::MAX)
            .await
            .is_empty(),
        "settled, not sent"
    );
    for id in ["owed-1", "owed-2"] {
        let owed = s
            .enqueue_ok(json!({"action": "get", "queue": "debts", "job_id": id}))
            .await;
        assert_eq!(owed["status"], "dispatched", "{owed}");
    }
}

/// The queues and settings the fixtures are written and read with: the rate ledger
/// (`WAITER_MAX_RATE`), history with bodies, two shards (the shard-count meta item).
const FIXTURE_QUEUES: &[&str] = &["orders", "billing.fifo", "held", "debts"];
const FIXTURE_SETTINGS: &[(&str, &str)] = &[
    ("WAITER_SHARDS", "2"),
    ("WAITER_DIRECT_MAX_DELAY", "0"),
    ("WAITER_MAX_RATE", "50"),
    ("WAITER_HISTORY_BODY", "true"),
];
/// Far enough that a set stays ahead of every run of the check.
const FAR: &str = "2099-01-01T00:00:00Z";

/// Writes this release's items of every kind (tests/fixtures/{version}/items.json) through the
/// real functions: `make fixtures`. Job ids say what the check expects of each: `due-*` are due
/// by the time any check runs (eleven minutes after writing: `expired` must have passed its
/// `expires_at`) and arrive once; `future-*` wait; the
/// rest are named for their kind.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "writes tests/fixtures/{version}: run by `make fixtures`"]
async fn write_this_releases_fixtures() {
    let mut s = setup(FIXTURE_QUEUES, FIXTURE_SETTINGS).await;
    let now = Utc::now();
    let at = |s: i64| (now + TimeDelta::seconds(s)).to_rfc3339();
    let attrs = json!({"kind": {"data_type": "String", "string_value": "invoice"}});
    let big = "fixture ".repeat(20_000);
    let jobs = json!({"jobs": [
        {"queue": "orders", "job_id": "future-plain", "message_body": "future-plain", "perform_at": FAR},
        {"queue": "orders", "job_id": "future-attrs", "message_body": "future-attrs", "perform_at": FAR,
         "message_attributes": attrs, "priority": 10, "weight": 3, "expires_at": "2099-06-01T00:00:00Z"},
        {"queue": "orders", "job_id": "future-deflated", "message_body": big, "perform_at": FAR},
        {"queue": "orders", "job_id": "future-windows", "message_body": "future-windows", "perform_at": FAR,
         "windows": [{"from": "09:00", "to": "17:00"}], "time_zone": "Europe/Berlin"},
        {"queue": "orders", "job_id": "series-every", "message_body": "series-every", "delay_seconds": 600,
         "repeat": {"every_s": 3600}},
        {"queue": "orders", "job_id": "series-cron", "message_body": "series-cron", "time_zone": "Europe/Berlin",
         "repeat": {"cron": "*/10 * * * *"}},
        {"queue": "orders", "job_id": "series-expression", "message_body": "series-expression",
         "repeat": {"expression": "rate(5 minutes)", "catch_up": "skip"}},
        {"queue": "orders", "job_id": "due-plain", "message_body": "due-plain", "delay_seconds": 600},
        {"queue": "orders", "job_id": "due-attrs", "message_body": "due-attrs", "delay_seconds": 600,
         "message_attributes": attrs, "priority": 5},
        {"queue": "orders", "job_id": "due-deflated", "message_body": big, "delay_seconds": 600},
        {"queue": "orders", "job_id": "expired", "message_body": "expired", "delay_seconds": 600,
         "expires_at": at(660)},
        {"queue": "orders", "job_id": "paused-job", "message_body": "paused-job", "delay_seconds": 600},
        {"queue": "orders", "job_id": "cancelled", "message_body": "cancelled", "delay_seconds": 600},
        {"queue": "orders", "job_id": "sent", "message_body": "sent", "delay_seconds": 1},
        {"queue": "orders", "job_id": "expired-record", "message_body": "expired-record", "delay_seconds": 1,
         "expires_at": at(2)},
        {"queue": "orders", "job_id": "retry-chain", "message_body": "retry-chain", "delay_seconds": 1},
        {"queue": "orders", "job_id": "parked-chain", "message_body": "parked-chain", "delay_seconds": 1},
        {"queue": "billing.fifo", "job_id": "due-fifo-1", "message_body": "due-fifo-1", "delay_seconds": 600,
         "message_group_id": "g"},
        {"queue": "billing.fifo", "job_id": "due-fifo-2", "message_body": "due-fifo-2", "delay_seconds": 601,
         "message_group_id": "g"},
        {"queue": "held", "job_id": "held-job", "message_body": "held-job", "delay_seconds": 600},
        // Issue 82: the attributes no earlier set held.
        {"queue": "billing.fifo", "job_id": "future-fifo-dedup", "message_body": "future-fifo-dedup",
         "perform_at": FAR, "message_group_id": "g2", "message_deduplication_id": "d-1"},
        {"queue": "orders", "job_id": "future-traced", "message_body": "future-traced", "perform_at": FAR,
         "trace_header": "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1",
         "message_attributes": {"blob": {"data_type": "Binary", "binary_value": "AAEC/w=="}}},
        {"queue": "orders", "job_id": "series-bounded", "message_body": "series-bounded", "perform_at": FAR,
         "repeat": {"every_s": 3600, "until": "2099-12-31T00:00:00Z", "count": 5}},
        {"queue": "orders", "job_id": "series-once", "message_body": "series-once", "delay_seconds": 1,
         "repeat": {"every_s": 3600, "count": 1}},
    ]});
    assert_all_scheduled(&s.enqueue_ok(jobs).await);
    for (request, status) in [
        (
            json!({"action": "pause", "queue": "orders", "job_id": "paused-job"}),
            "paused",
        ),
        (
            json!({"action": "cancel", "queue": "orders", "job_id": "cancelled"}),
            "cancelled",
        ),
        (json!({"action": "pause", "queue": "held"}), "paused"),
        // A pause that ended: its record stays on the queue's pause item.
        (json!({"action": "pause", "queue": "billing.fifo"}), "paused"),
        (json!({"action": "resume", "queue": "billing.fifo"}), "resumed"),
    ] {
        assert_eq!(s.enqueue_ok(request.clone()).await["status"], status, "{request}");
    }
    // sent, retry-chain and parked-chain go out, expired-record expires (history records of
    // both kinds, leases, the rate ledger); then a consumer retries one and exhausts the other's
    // attempts.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let run = s.poll().await;
    assert_eq!(run["expired"], 1, "{run}");
    // The three, and the occurrence of the series that started now.
    assert_eq!(
        run["dispatched"]
            .as_u64()
            .zip(run["occurrences"].as_u64())
            .map(|(d, o)| d - o),
        Some(3),
        "{run}"
    );
    let retry = |id: &str, max_attempts: u32| {
        json!({"action": "retry", "queue": "orders", "job_id": id, "attempt": 1, "message_body": id,
               "backoff": {"base_s": 600, "jitter": false}, "max_attempts": max_attempts, "error": "fixture"})
    };
    assert_eq!(s.enqueue_ok(retry("retry-chain", 10)).await["status"], "scheduled");
    assert_eq!(s.enqueue_ok(retry("parked-chain", 1)).await["status"], "parked");
    // A replayed copy (`names_itself`), far ahead; a series' extra occurrence
    // (`repeat_extra_last`).
    let copy = s
        .enqueue_ok(json!({"action": "replay", "queue": "orders", "job_id": "sent", "perform_at": FAR}))
        .await;
    assert_eq!(copy["status"], "scheduled", "{copy}");
    let extra = s
        .enqueue_ok(json!({"action": "trigger", "queue": "orders", "job_id": "series-every"}))
        .await;
    assert_eq!(extra["status"], "sent", "{extra}");
    let ddb = s.emu.dynamodb.clone();
    let mut tables = std::collections::BTreeMap::new();
    for queue in FIXTURE_QUEUES.iter().filter(|q| **q != "debts") {
        tables.insert(queue.to_string(), scan_all(&ddb, &format!("waiter-{queue}")).await);
    }
    tables.insert("debts".to_owned(), lease_debts().await);
    let path = e2e::fixtures::write_set(&e2e::fixtures::FixtureSet {
        release: waiter::VERSION.to_owned(),
        item_format: ITEM_FORMAT,
        written_at: now.timestamp(),
        read_at: now.timestamp(),
        tables,
    });
    println!("wrote {}", path.display());
}

/// A lease handed on with debts: a run whose removals were refused (`ValidationError`) after
/// SQS took `owed-1` and `owed-2`. Written on DynamoDB Local, whose PartiQL the removals use.
async fn lease_debts() -> Vec<std::collections::HashMap<String, AttributeValue>> {
    let rig = e2e::rig::Rig::builder(&["debts"])
        .table_prefix("waiter-")
        .proxy(7, 0.0)
        .for_partiql()
        .settings(&[
            ("WAITER_SHARDS", "1"),
            ("WAITER_DIRECT_MAX_DELAY", "0"),
            ("WAITER_LOOKAHEAD", "60"),
        ])
        .start()
        .await;
    let mut enqueue = e2e::Function::start("enqueue", &rig.env).await;
    for id in ["owed-1", "owed-2"] {
        enqueue
            .invoke_ok(&json!({"queue": "debts", "message_body": id, "delay_seconds": 1, "job_id": id}))
            .await;
    }
    rig.table_proxy().force(
        "BatchExecuteStatement",
        e2e::proxy::Forced::StatementErrors {
            code: "ValidationError".into(),
            remaining: 1,
        },
    );
    let mut poller = e2e::Function::start("poller", &rig.env).await;
    let refused = poller.invoke(&json!({})).await;
    assert!(refused.is_err(), "the run's removals were refused: {refused:?}");
    let items = scan_all(&rig.table_client().await, "waiter-debts").await;
    assert!(
        items.iter().any(|i| i.contains_key("lease_debts")),
        "a lease with debts: {items:?}"
    );
    items
}

/// Every release's fixtures (tests/fixtures/*/items.json), loaded into the emulator and run over
/// by today's functions: `get` reads every job and record, `list` every stored job; the jobs
/// due arrive once, never before their time, a FIFO group in order, a retried job as its
/// attempt; the series go on; nothing waiting, paused, parked or expired is sent.
#[tokio::test(flavor = "multi_thread")]
async fn todays_functions_read_and_run_every_releases_items() {
    let sets = e2e::fixtures::all_sets();
    assert!(
        sets.iter().any(|s| s.release == waiter::VERSION),
        "tests/fixtures has no set of {}: make fixtures",
        waiter::VERSION
    );
    for set in sets {
        assert!(
            set.item_format <= ITEM_FORMAT,
            "{}: item_format {} is newer than this code's",
            set.release,
            set.item_format
        );
        check_fixture_set(&set).await;
    }
}

async fn check_fixture_set(set: &e2e::fixtures::FixtureSet) {
    let release = &set.release;
    let mut s = setup(FIXTURE_QUEUES, FIXTURE_SETTINGS).await;
    let ddb = s.emu.dynamodb.clone();
    let mut jobs = Vec::new();
    for (queue, items) in &set.tables {
        for item in items.iter().map(|i| set.aged(i)) {
            put(&ddb, &format!("waiter-{queue}"), item.clone()).await;
            let (Some(AttributeValue::S(scheduler)), Some(AttributeValue::S(id))) =
                (item.get("scheduler"), item.get(A_JOB_ID))
            else {
                panic!("{release}: an item without keys");
            };
            // Jobs and records live in the shards and the parked partition; the rest are the
            // queue's own items (leases, meta, pause, rate ledger).
            let tail = scheduler.rsplit('#').next().unwrap_or_default();
            if scheduler.matches('#').count() == 1 && (tail == "parked" || tail.parse::<u32>().is_ok()) {
                jobs.push((queue.clone(), id.clone(), tail == "parked"));
            }
        }
    }
    let before = Utc::now();
    for (queue, id, _) in &jobs {
        let got = s
            .enqueue_ok(json!({"action": "get", "queue": queue, "job_id": id}))
            .await;
        assert_ne!(got["status"], "not_found", "{release}: get {queue}/{id}: {got}");
    }
    let listed = s
        .enqueue_ok(json!({"action": "list", "queue": "orders", "limit": 100}))
        .await;
    let listed: Vec<_> = listed["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .filter_map(|j| j["job_id"].as_str())
        .collect();
    for id in [
        "future-plain",
        "future-attrs",
        "future-deflated",
        "future-windows",
        "series-every",
        "retry-chain",
        "paused-job",
    ] {
        assert!(listed.contains(&id), "{release}: list shows {id}: {listed:?}");
    }
    let parked = s.enqueue_ok(json!({"action": "list_parked", "queue": "orders"})).await;
    assert!(parked.to_string().contains("parked-chain"), "{release}: {parked}");

    let run = s.poll().await;
    assert_eq!(
        (run["unreadable"].clone(), run.get("errors")),
        (json!(0), None),
        "{release}: {run}"
    );
    let mut got = Vec::new();
    for (i, _) in FIXTURE_QUEUES.iter().enumerate() {
        let url = s.urls[i].clone();
        got.extend(
            s.emu
                .receive_for(&url, Duration::from_secs(3), usize::MAX)
                .await
                .into_iter()
                .map(|r| (i, r)),
        );
    }
    let bodies: Vec<(usize, String)> = got
        .iter()
        .map(|(i, r)| (*i, r.message.body().unwrap_or_default().chars().take(40).collect()))
        .collect();
    let sent = |name: &str| bodies.iter().filter(|(_, b)| b.starts_with(name)).count();
    for once in ["due-plain", "due-attrs", "retry-chain", "due-fifo-1", "due-fifo-2"] {
        assert_eq!(sent(once), 1, "{release}: {once} arrives once: {bodies:?}");
    }
    assert_eq!(
        sent("fixture "),
        1,
        "{release}: due-deflated arrives once, inflated: {bodies:?}"
    );
    for never in [
        "future-",
        "expired",
        "paused-job",
        "held-job",
        "parked-chain",
        "cancelled",
        "sent",
        "owed-",
        "series-once",
    ] {
        assert_eq!(sent(never), 0, "{release}: {never} is not sent: {bodies:?}");
    }
    let fifo: Vec<_> = bodies
        .iter()
        .filter(|(i, _)| *i == 1)
        .map(|(_, b)| b.as_str())
        .collect();
    assert_eq!(fifo, ["due-fifo-1", "due-fifo-2"], "{release}: group g in order");
    let retried = got
        .iter()
        .find(|(_, r)| r.message.body() == Some("retry-chain"))
        .expect("retry-chain");
    let attempt = retried
        .1
        .message
        .message_attributes()
        .and_then(|a| a.get("waiter.attempt"))
        .and_then(|a| a.string_value());
    assert_eq!(
        attempt,
        Some("2"),
        "{release}: the retried job arrives as its attempt 2"
    );
    // Series go on: each is still stored, its next occurrence after this run.
    for id in ["series-every", "series-cron", "series-expression"] {
        let got = s
            .enqueue_ok(json!({"action": "get", "queue": "orders", "job_id": id}))
            .await;
        assert_eq!(got["status"], "scheduled", "{release}: {id}: {got}");
        let next = e2e::rig::parse_time(got["perform_at"].as_str().expect("perform_at"));
        assert!(next > before, "{release}: {id} moves on: {got}");
    }
    // What each left behind: the lease's debts settled (removed and recorded, not sent again),
    // the deflated body that arrived due-deflated's (the future one still stored), the expired
    // dropped and recorded.
    for (queue, id, status) in [
        ("debts", "owed-1", "dispatched"),
        ("debts", "owed-2", "dispatched"),
        ("orders", "future-deflated", "scheduled"),
        ("orders", "due-deflated", "dispatched"),
        ("orders", "expired", "expired"),
        ("orders", "expired-record", "expired"),
    ] {
        let got = s
            .enqueue_ok(json!({"action": "get", "queue": queue, "job_id": id}))
            .await;
        assert_eq!(got["status"], status, "{release}: {queue}/{id}: {got}");
    }
    // From 0.2.0 on (issue 82): a finished series' record.
    if jobs.iter().any(|(_, id, _)| id == "series-once") {
        let got = s
            .enqueue_ok(json!({"action": "get", "queue": "orders", "job_id": "series-once"}))
            .await;
        assert_eq!(got["status"], "finished", "{release}: {got}");
    }
    let preview = s
        .enqueue_ok(json!({"action": "preview", "queue": "orders", "job_id": "series-cron", "count": 2}))
        .await;
    assert_eq!(
        preview["occurrences"].as_array().map(Vec::len),
        Some(2),
        "{release}: {preview}"
    );
}
