//! Tags (docs/contract.md "Tags"): checked on the way in, stored with the job, kept by every
//! life of it, and selected by `list` and `cancel_many`, against the in-memory store and the
//! poller. The whole system's rule is the simulation's (`simulation::operators`).

use chrono::TimeDelta;
use serde_json::{json, Value};

use super::repeat_tests::{get, run};
use crate::ports::Clock;
use crate::testing::{call, refused, test_waiter, TestWaiter};

fn stored_job(id: &str, tags: Value) -> Value {
    json!({"queue": "orders", "job_id": id, "message_body": format!("body-{id}"), "delay_seconds": 3600, "tags": tags})
}

/// Every page of a listing (or of a `cancel_many`), following cursors until `null`.
async fn all_pages(w: &TestWaiter, mut request: Value) -> Vec<Value> {
    let mut pages = Vec::new();
    for _ in 0..1_000 {
        let r = call(w, request.clone()).await;
        let cursor = r["cursor"].clone();
        pages.push(r);
        if cursor.is_null() {
            return pages;
        }
        request["cursor"] = cursor;
    }
    panic!("the listing never ended");
}

fn ids(pages: &[Value]) -> Vec<String> {
    let mut ids: Vec<String> = pages
        .iter()
        .flat_map(|p| p["jobs"].as_array().cloned().unwrap_or_default())
        .map(|j| j["job_id"].as_str().unwrap_or_default().to_owned())
        .collect();
    ids.sort();
    ids
}

#[tokio::test(start_paused = true)]
async fn tags_that_break_a_rule_are_refused_by_name_and_leave_nothing_behind() {
    let (w, store, _, _) = test_waiter("orders", &[("WAITER_DIRECT_MAX_DELAY", "0")]);
    let eleven: serde_json::Map<String, Value> = (0..11).map(|i| (format!("k{i}"), json!("v"))).collect();
    let cases = [
        (json!(eleven), "tags", "at most 10 tags, got 11"),
        (json!({"": "v"}), "tags", "a key must be 1 to 128 characters, got 0"),
        (
            json!({"k".repeat(129): "v"}),
            "tags",
            "a key must be 1 to 128 characters, got 129",
        ),
        (
            json!({"k": "é".repeat(257)}),
            "tags.k",
            "a value must be at most 256 characters, got 257",
        ),
        (json!({"k": 42}), "tags.k", "must be a string, got a number"),
        (json!(["k", "v"]), "tags", "got an array"),
    ];
    for (tags, field, rule) in cases {
        let e = refused(&w, stored_job("bad", tags.clone())).await;
        assert!(e.field == field && e.rule.contains(rule), "{tags}: {e}");
        // The same rules on a selection, which must also name at least one tag.
        let e = refused(&w, json!({"action": "list", "queue": "orders", "tags": tags})).await;
        assert!(e.field == field && e.rule.contains(rule), "list {tags}: {e}");
    }
    // Ten pairs at the longest are a job's; a value may be empty.
    let mut ten: serde_json::Map<String, Value> = (0..9)
        .map(|i| (format!("{i}{}", "k".repeat(127)), json!("é".repeat(256))))
        .collect();
    ten.insert("empty".into(), json!(""));
    assert_eq!(call(&w, stored_job("ok", json!(ten))).await["status"], "scheduled");
    assert_eq!(store.len(), 1, "only the job within the rules is stored");
    let e = refused(&w, json!({"action": "cancel_many", "queue": "orders", "tags": {}})).await;
    assert!(e.field == "tags" && e.rule.contains("at least one tag"), "{e}");
    // In a batch, a job with bad tags fails alone.
    let r = call(
        &w,
        json!({"jobs": [stored_job("b1", json!({"": "x"})), stored_job("b2", json!({"customer": "42"}))]}),
    )
    .await;
    assert_eq!(r["results"][0]["error"]["type"], "InvalidRequest", "{r}");
    assert_eq!(r["results"][1]["status"], "scheduled", "{r}");
    assert_eq!(store.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn tags_are_shown_replaced_and_removed_by_reschedule_and_kept_by_a_debounce_that_gives_none() {
    let (w, _, _, clock) = test_waiter("orders", &[("WAITER_DIRECT_MAX_DELAY", "0")]);
    call(&w, stored_job("t", json!({"customer": "42", "campaign": "xmas"}))).await;
    call(&w, stored_job("plain", json!({}))).await;
    let g = get(&w, "t").await;
    assert_eq!(g["tags"], json!({"customer": "42", "campaign": "xmas"}), "{g}");
    assert!(
        get(&w, "plain").await.get("tags").is_none(),
        "absent when there are none"
    );
    let listed = call(&w, json!({"action": "list", "queue": "orders"})).await;
    let shown: Vec<&Value> = listed["jobs"].as_array().unwrap().iter().map(|j| &j["tags"]).collect();
    assert!(
        shown.contains(&&json!({"customer": "42", "campaign": "xmas"})),
        "{listed}"
    );
    assert!(listed.get("scanned").is_none(), "counted only for a tag selection");

    // Tags alone: the job stays where it is.
    let at = g["perform_at"].clone();
    let r = call(
        &w,
        json!({"action": "reschedule", "queue": "orders", "job_id": "t", "tags": {"customer": "43"}}),
    )
    .await;
    assert_eq!(r["status"], "rescheduled", "{r}");
    let g = get(&w, "t").await;
    assert_eq!((&g["tags"], &g["perform_at"]), (&json!({"customer": "43"}), &at), "{g}");
    // A debounced replace that gives none keeps them; one that gives some replaces them.
    let replace = |tags: Value| {
        json!({"queue": "orders", "job_id": "t", "message_body": "v2", "delay_seconds": 7200,
               "on_duplicate": "replace", "tags": tags})
    };
    assert_eq!(call(&w, replace(json!({}))).await["replaced"], true);
    assert_eq!(get(&w, "t").await["tags"], json!({"customer": "43"}));
    call(&w, replace(json!({"customer": "44"}))).await;
    assert_eq!(get(&w, "t").await["tags"], json!({"customer": "44"}));
    // `null` removes them (and needs a time for a one-off job, as any other change does).
    let e = refused(
        &w,
        json!({"action": "reschedule", "queue": "orders", "job_id": "t", "tags": null, "message_body": "v3"}),
    )
    .await;
    assert_eq!(e.field, "perform_at", "{e}");
    let r = call(
        &w,
        json!({"action": "reschedule", "queue": "orders", "job_id": "t", "tags": null}),
    )
    .await;
    assert_eq!(r["status"], "rescheduled", "{r}");
    assert!(get(&w, "t").await.get("tags").is_none());
    clock.advance(TimeDelta::seconds(1));
}

#[tokio::test(start_paused = true)]
async fn list_and_cancel_many_by_tags_take_exactly_the_jobs_carrying_every_pair() {
    let (w, store, queue, clock) = test_waiter("orders", &[("WAITER_DIRECT_MAX_DELAY", "0"), ("WAITER_SHARDS", "4")]);
    let mut want_42 = Vec::new();
    let mut want_both = Vec::new();
    for i in 0..40 {
        let id = format!("j{i:02}");
        let customer = if i % 3 == 0 { "42" } else { "7" };
        let mut tags = json!({"customer": customer});
        if i % 2 == 0 {
            tags["campaign"] = json!("xmas");
        }
        if i % 5 == 4 {
            tags = json!({});
        }
        let job = json!({"queue": "orders", "job_id": id, "message_body": "x",
                         "delay_seconds": 3600 + (i * 7) % 13, "tags": tags});
        call(&w, job).await;
        if tags["customer"] == "42" {
            want_42.push(id.clone());
            if tags["campaign"] == "xmas" {
                want_both.push(id.clone());
            }
        }
    }
    let list = |tags: Value, limit: u64| json!({"action": "list", "queue": "orders", "tags": tags, "limit": limit});
    for limit in [1, 3, 100] {
        let pages = all_pages(&w, list(json!({"customer": "42"}), limit)).await;
        assert_eq!(ids(&pages), want_42, "limit {limit}");
        assert!(
            pages.iter().all(|p| p["scanned"].is_u64()),
            "each page says what it read"
        );
    }
    let pages = all_pages(&w, list(json!({"customer": "42", "campaign": "xmas"}), 2)).await;
    assert_eq!(ids(&pages), want_both, "every pair given must match");
    assert!(ids(&all_pages(&w, list(json!({"customer": "nobody"}), 10)).await).is_empty());
    // With the other filters.
    let pages = all_pages(
        &w,
        json!({"action": "list", "queue": "orders", "tags": {"customer": "42"}, "prefix": "j1"}),
    )
    .await;
    let want: Vec<String> = want_42.iter().filter(|id| id.starts_with("j1")).cloned().collect();
    assert_eq!(ids(&pages), want);
    // A cursor continues only its own selection.
    let first = call(&w, list(json!({"customer": "42"}), 1)).await;
    let e = refused(
        &w,
        json!({"action": "list", "queue": "orders", "tags": {"customer": "7"}, "cursor": first["cursor"]}),
    )
    .await;
    assert_eq!(e.field, "cursor", "{e}");

    let pages = all_pages(
        &w,
        json!({"action": "cancel_many", "queue": "orders", "tags": {"customer": "42"}, "limit": 3}),
    )
    .await;
    let cancelled: u64 = pages.iter().map(|p| p["cancelled"].as_u64().unwrap_or(0)).sum();
    assert_eq!(cancelled as usize, want_42.len());
    assert_eq!(store.len(), 40 - want_42.len(), "only the tagged jobs left");
    clock.advance(TimeDelta::hours(2));
    run(&w, &clock).await;
    let mut sent: Vec<String> = queue.sent().iter().map(|s| s.message.body.clone()).collect();
    sent.sort();
    assert_eq!(sent.len(), 40 - want_42.len(), "the rest are delivered");
}

#[tokio::test(start_paused = true)]
async fn an_attempt_an_occurrence_and_a_replayed_copy_keep_the_tags() {
    let (w, _, queue, clock) = test_waiter(
        "orders",
        &[
            ("WAITER_DIRECT_MAX_DELAY", "0"),
            ("WAITER_HISTORY_DAYS", "1"),
            ("WAITER_HISTORY_BODY", "true"),
        ],
    );
    let tags = json!({"customer": "42"});
    call(
        &w,
        json!({"queue": "orders", "job_id": "one", "message_body": "b", "delay_seconds": 60, "tags": tags}),
    )
    .await;
    let start = crate::time::format_rfc3339(clock.now() + TimeDelta::seconds(60));
    call(
        &w,
        json!({"queue": "orders", "job_id": "daily", "message_body": "tick", "perform_at": start,
               "repeat": {"every_s": 3600}, "tags": {"customer": "42", "kind": "series"}}),
    )
    .await;
    clock.advance(TimeDelta::seconds(61));
    run(&w, &clock).await;
    assert_eq!(queue.sent().len(), 2, "both sent");
    assert!(
        queue
            .sent()
            .iter()
            .all(|s| !s.message.attributes.keys().any(|k| k.contains("customer"))),
        "tags are never message attributes"
    );
    assert_eq!(get(&w, "one").await["tags"], tags, "the history record keeps them");
    let retry = |job_id: &str| {
        json!({"action": "retry", "queue": "orders", "job_id": job_id, "attempt": 1, "message_body": "b",
               "backoff": {"base_s": 3600, "factor": 2, "jitter": false}})
    };
    assert_eq!(call(&w, retry("one")).await["status"], "scheduled");
    let g = get(&w, "one").await;
    assert_eq!((g["attempt"].as_u64(), &g["tags"]), (Some(2), &tags), "{g}");
    // An occurrence's first retry keeps its series' tags.
    let occurrence = format!("daily@{}", (clock.now() - TimeDelta::seconds(1)).timestamp());
    let r = call(&w, retry(&occurrence)).await;
    assert_eq!(r["status"], "scheduled", "{r}");
    assert_eq!(
        get(&w, &occurrence).await["tags"],
        json!({"customer": "42", "kind": "series"})
    );
    let by_tag = all_pages(
        &w,
        json!({"action": "list", "queue": "orders", "tags": {"customer": "42"}}),
    )
    .await;
    assert_eq!(
        ids(&by_tag),
        vec!["daily".to_owned(), occurrence.clone(), "one".to_owned()]
    );
    // A replayed copy keeps them: sent, the attempt leaves a record to copy.
    clock.advance(TimeDelta::hours(2));
    run(&w, &clock).await;
    let copy = call(&w, json!({"action": "replay", "queue": "orders", "job_id": "one"})).await;
    assert_eq!(copy["status"], "scheduled", "{copy}");
    let copy_id = copy["job_id"].as_str().unwrap_or_default().to_owned();
    assert_eq!(get(&w, &copy_id).await["tags"], tags);
}

#[tokio::test(start_paused = true)]
async fn with_history_off_a_tagged_job_still_leaves_the_record_its_retry_takes_the_tags_from() {
    let (w, store, queue, clock) = test_waiter("orders", &[("WAITER_HISTORY_DAYS", "0")]);
    let tags = json!({"customer": "42"});
    let far = json!({"queue": "orders", "job_id": "far", "message_body": "b", "delay_seconds": 3600, "tags": tags});
    let near = json!({"queue": "orders", "message_body": "b", "delay_seconds": 5, "tags": tags});
    assert_eq!(call(&w, far).await["status"], "scheduled");
    let near = call(&w, near).await;
    assert_eq!(near["status"], "sent", "due soon: straight to SQS: {near}");
    call(
        &w,
        json!({"queue": "orders", "job_id": "plain", "message_body": "b", "delay_seconds": 3600}),
    )
    .await;
    clock.advance(TimeDelta::hours(2));
    run(&w, &clock).await;
    assert_eq!(queue.sent().len(), 3);
    assert_eq!(
        store.state.lock().unwrap().history.len(),
        2,
        "the tagged jobs' records only: history is off"
    );
    // A tagged job cancelled unsent keeps no record: its id is free again at once.
    let again = json!({"queue": "orders", "job_id": "cut", "message_body": "b", "delay_seconds": 3600, "tags": tags});
    call(&w, again.clone()).await;
    let cancelled = call(&w, json!({"action": "cancel", "queue": "orders", "job_id": "cut"})).await;
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(
        store.state.lock().unwrap().history.len(),
        2,
        "no record of a job never sent"
    );
    assert_eq!(call(&w, again).await["duplicate"], false);
    for id in ["far", near["job_id"].as_str().unwrap_or_default()] {
        let r = call(
            &w,
            json!({"action": "retry", "queue": "orders", "job_id": id, "attempt": 1, "message_body": "b",
                   "backoff": {"base_s": 3600, "factor": 2, "jitter": false}}),
        )
        .await;
        assert_eq!(r["status"], "scheduled", "{r}");
        assert_eq!(get(&w, id).await["tags"], tags, "{id}");
    }
}
