//! AWS-shaped failures that moto never produces, injected at the wire by the fault proxy, with
//! the real functions and the real SDK: a delete that keeps failing after SQS accepted, whole-call
//! SQS errors reported in `x-amzn-query-error`, DynamoDB transaction conflicts, and connections
//! that are accepted and never answered.

use std::time::{Duration, Instant};

use e2e::proxy::{FaultProxy, Forced};
use e2e::{Emulator, Function};
use serde_json::{json, Value};

struct Rig {
    emu: Emulator,
    proxy: FaultProxy,
    url: String,
    enqueue: Function,
    poller: Function,
}

async fn rig(settings: &[(&str, &str)]) -> Rig {
    let mut all = vec![("WAITER_SHARDS", "1"), ("WAITER_DIRECT_MAX_DELAY", "0")];
    all.extend_from_slice(settings);
    let e2e::rig::Proxied { emu, proxy, url, env } = e2e::rig::orders_via_proxy(7, 0.0, &all).await;
    let enqueue = Function::start("enqueue", &env).await;
    let poller = Function::start("poller", &env).await;
    Rig {
        emu,
        proxy,
        url,
        enqueue,
        poller,
    }
}

fn error(status: u16, code: &str, query_error: Option<&str>, extra: Option<Value>) -> Forced {
    Forced::Error {
        status,
        code: code.to_owned(),
        query_error: query_error.map(str::to_owned),
        extra,
    }
}

impl Rig {
    async fn call(&mut self, req: Value) -> Value {
        self.enqueue.invoke_ok(&req).await
    }

    async fn stored(&self) -> usize {
        self.emu.job_count("orders").await
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn after_a_failed_delete_cancel_never_answers_cancelled_for_an_accepted_message() {
    let mut r = rig(&[("WAITER_LOOKAHEAD", "60")]).await;
    r.call(json!({"queue": "orders", "message_body": "a", "delay_seconds": 4, "job_id": "a"}))
        .await;
    r.proxy.force("PutItem", error(500, "InternalServerError", None, None));
    // The only partition reports an error, so the invocation fails (PollerFailed).
    let budget = Duration::from_secs(6);
    let lease_would_lapse = Instant::now() + budget + Duration::from_secs(5);
    let reply = r.poller.invoke_raw(b"{}".to_vec(), budget).await;
    assert!(format!("{reply:?}").contains("PutItem"), "{reply:?}");
    // The removal (history is on: the PutItem of the job's record) failed. DynamoDB answers
    // again: the kept lease item is what makes cancel answer `dispatching`.
    r.proxy.clear_forced();
    let c = r
        .call(json!({"action": "cancel", "queue": "orders", "job_id": "a"}))
        .await;
    assert_eq!(c["status"], "dispatching", "SQS accepted the message: {c}");
    let got = r.emu.receive_for(&r.url, Duration::from_secs(8), 1).await;
    assert_eq!(got.len(), 1, "the message is delivered");
    let c = r
        .call(json!({"action": "cancel", "queue": "orders", "job_id": "a"}))
        .await;
    assert_eq!(c["status"], "dispatching", "still protected after delivery: {c}");

    // The run handed its lease on with the job to remove (issue 23, defect 12): the next run,
    // long before that lease would have lapsed (deadline + 5 s), removes the item without
    // sending it again and releases the lease item.
    assert!(
        Instant::now() < lease_would_lapse,
        "the test took too long to show this"
    );
    let summary = r.poller.invoke(&json!({})).await.expect("poller");
    assert_eq!(
        (
            summary["dispatched"].clone(),
            summary["drained"].clone(),
            summary["busy_partitions"].clone()
        ),
        (json!(0), json!(true), json!(0)),
        "{summary}"
    );
    assert_eq!(r.stored().await, 0);
    assert!(
        r.emu.receive_for(&r.url, Duration::from_secs(2), 1).await.is_empty(),
        "not sent again"
    );
    let c = r
        .call(json!({"action": "cancel", "queue": "orders", "job_id": "a"}))
        .await;
    assert_eq!(c["status"], "not_found");
}

#[tokio::test(flavor = "multi_thread")]
async fn whole_call_sqs_errors_in_x_amzn_query_error_park_nothing() {
    let mut r = rig(&[("WAITER_LOOKAHEAD", "60")]).await;
    // (JSON `__type`, `x-amzn-query-error`, how the poller must classify it).
    let cases = [
        (
            "com.amazonaws.sqs#KmsDisabled",
            "KMS.DisabledException;Sender",
            "was rejected: KMS.DisabledException",
        ),
        (
            "com.amazonaws.sqs#KmsAccessDenied",
            "KMS.AccessDeniedException;Sender",
            "was rejected: KMS.AccessDeniedException",
        ),
        (
            "com.amazonaws.sqs#KmsThrottled",
            "KMS.ThrottlingException;Sender",
            "was throttled",
        ),
        (
            "AccessDeniedException",
            "AccessDenied;Sender",
            "was rejected: AccessDenied",
        ),
        (
            "com.amazonaws.sqs#QueueDoesNotExist",
            "AWS.SimpleQueueService.NonExistentQueue;Sender",
            "does not exist",
        ),
    ];
    for (i, (code, query_error, classified)) in cases.iter().enumerate() {
        let jobs: Vec<Value> = (0..12)
            .map(|j| json!({"queue": "orders", "message_body": format!("m{i}-{j}"), "delay_seconds": 2, "job_id": format!("k{i}-{j}")}))
            .collect();
        r.call(json!({"jobs": jobs})).await;
        r.proxy
            .force("SendMessageBatch", error(400, code, Some(query_error), None));
        let s = r.poller.invoke_raw(b"{}".to_vec(), Duration::from_secs(15)).await;
        // With every partition failing, the poller fails the invocation (PollerFailed).
        let text = format!("{s:?}");
        assert!(text.contains(classified), "{code}: {text}");
        let parked = r.call(json!({"action": "list_parked", "queue": "orders"})).await;
        assert_eq!(parked["count"], 0, "{code}: parked {parked}");
        assert_eq!(r.stored().await, 12, "{code}: every job stays stored");
        r.proxy.clear_forced();
        let s = r.poller.invoke(&json!({})).await.expect("poller");
        assert_eq!(s["dispatched"], 12, "{code}: the next run sends them: {s}");
        r.emu.receive_for(&r.url, Duration::from_secs(4), 12).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn dynamodb_transaction_conflicts_are_retryable_not_rejections_for_cancel_and_reschedule() {
    let mut r = rig(&[]).await;
    r.call(json!({"queue": "orders", "message_body": "x", "delay_seconds": 5000, "job_id": "t"}))
        .await;
    let reasons = json!({"CancellationReasons": [{"Code": "None"}, {"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"}]});
    for forced in [
        error(
            400,
            "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
            None,
            Some(reasons),
        ),
        error(
            400,
            "com.amazonaws.dynamodb.v20120810#TransactionConflictException",
            None,
            None,
        ),
    ] {
        r.proxy.force("TransactWriteItems", forced);
        let e = r
            .enqueue
            .invoke(&json!({"action": "cancel", "queue": "orders", "job_id": "t"}))
            .await
            .expect_err("a conflict is not an answer");
        assert_eq!(e.error_type, "Throttled", "{e:?}");
        let e = r
            .enqueue
            .invoke(&json!({"action": "reschedule", "queue": "orders", "job_id": "t", "delay_seconds": 9000}))
            .await
            .expect_err("a conflict is not an answer");
        assert_eq!(e.error_type, "Throttled", "{e:?}");
        assert_eq!(r.stored().await, 1);
    }
    r.proxy.clear_forced();
    let g = r.call(json!({"action": "get", "queue": "orders", "job_id": "t"})).await;
    assert_eq!(g["version"], 1, "the refused reschedules changed nothing: {g}");
    let m = r
        .call(json!({"action": "reschedule", "queue": "orders", "job_id": "t", "delay_seconds": 9000}))
        .await;
    assert_eq!(m["status"], "rescheduled");
    let c = r
        .call(json!({"action": "cancel", "queue": "orders", "job_id": "t"}))
        .await;
    assert_eq!(c["status"], "cancelled");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_that_never_answers_cannot_hold_a_run_past_its_budget() {
    let mut r = rig(&[]).await;
    r.call(json!({"queue": "orders", "message_body": "x", "delay_seconds": 5000, "job_id": "h"}))
        .await;
    let budget = Duration::from_secs(10);

    r.proxy.force("Query", Forced::Hang);
    let t0 = Instant::now();
    let reply = r.poller.invoke_raw(b"{}".to_vec(), budget).await;
    let took = t0.elapsed();
    println!("poller with a hung Query answered in {took:?} of a {budget:?} budget: {reply:?}");
    assert!(took < budget, "the poller ran {took:?}, past its {budget:?} budget");

    r.proxy.force("PutItem", Forced::Hang);
    let t0 = Instant::now();
    let reply = r
        .enqueue
        .invoke_raw(
            json!({"queue": "orders", "message_body": "y", "delay_seconds": 5000, "job_id": "h2"})
                .to_string()
                .into_bytes(),
            Duration::from_secs(6),
        )
        .await;
    let took = t0.elapsed();
    println!("enqueue with a hung PutItem answered in {took:?} of 6 s: {reply:?}");
    assert!(took < Duration::from_secs(6), "enqueue ran {took:?}");
    let e = reply.expect_err("a hung store is an error");
    assert_eq!(e.error_type, "DependencyFailure", "{e:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_removal_retried_after_it_was_applied_never_takes_a_job_enqueued_meanwhile() {
    // History off: once the poller's removal is applied, the id is free. Its reply is lost, and
    // the SDK's retry is held at the proxy while a caller stores a new job under the same id.
    removal_retried_after_it_applied(&["a"], "DeleteItem", "a").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batched_removal_retried_after_it_was_applied_never_takes_a_job_enqueued_meanwhile() {
    // The same for removals batched in one BatchExecuteStatement (issue 45): three jobs sent
    // together, their statements applied and the reply lost, the SDK's retry held while a
    // caller stores a new job under one of the ids. Only the edition condition on each
    // statement keeps the new job. Where PartiQL does not run (moto, `Quirk::NoPartiql`) the
    // removals go in one TransactWriteItems (issue 36): DynamoDB answers a retry that carries
    // the applied call's ClientRequestToken without applying it again; moto
    // (`Quirk::IgnoresClientRequestToken`) applies it again, and again the condition decides.
    let op = if e2e::emulator::Backend::current().has(e2e::quirks::Quirk::NoPartiql) {
        "TransactWriteItems"
    } else {
        "BatchExecuteStatement"
    };
    let r = removal_retried_after_it_applied(&["a", "b", "c"], op, "b").await;
    // No DeleteItem (the lease's release is an UpdateItem): the three removals went together.
    assert_eq!(r.proxy.calls("DeleteItem"), 0, "removed together, not one call per job");
    assert_eq!(r.stored().await, 1, "a and c removed, the new b kept");
}

/// Jobs `ids` due at once (history off), the removal `op` applied and its reply lost, and the
/// SDK's retry held at the proxy while a caller stores a new job under `reused`: that job must
/// still be stored once the retry goes on.
async fn removal_retried_after_it_applied(ids: &[&str], op: &str, reused: &str) -> Rig {
    let mut r = rig(&[("WAITER_LOOKAHEAD", "60"), ("WAITER_HISTORY_DAYS", "0")]).await;
    for id in ids {
        r.call(json!({"queue": "orders", "message_body": "first", "delay_seconds": 1, "job_id": id}))
            .await;
    }
    r.proxy.lose_reply_then_hold(op);
    let Rig {
        emu,
        proxy,
        url,
        enqueue,
        poller,
    } = &mut r;
    let meanwhile = async {
        let until = Instant::now() + Duration::from_secs(20);
        while proxy.held() == 0 && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(proxy.held(), 1, "the SDK retried the removal whose reply was lost");
        let again = enqueue
            .invoke_ok(&json!({"queue": "orders", "message_body": "second", "delay_seconds": 3600, "job_id": reused}))
            .await;
        assert_eq!(
            again["status"], "scheduled",
            "the id is free once the removal applied: {again}"
        );
        proxy.release_held();
    };
    let run = json!({});
    let (summary, ()) = tokio::join!(poller.invoke(&run), meanwhile);
    let summary = summary.expect("poller");
    assert_eq!(summary["dispatched"], ids.len(), "{summary}");
    let got = emu.receive_for(url, Duration::from_secs(4), ids.len()).await;
    assert_eq!(got.len(), ids.len());
    let job = enqueue
        .invoke_ok(&json!({"action": "get", "queue": "orders", "job_id": reused}))
        .await;
    assert_eq!(
        job["status"], "scheduled",
        "the job enqueued meanwhile is still stored: {job}"
    );
    assert_eq!(job["message_body"], "second", "{job}");
    r
}

#[tokio::test(flavor = "multi_thread")]
async fn a_send_retried_by_the_sdk_is_retimed_and_never_arrives_after_expires_at() {
    // The first SendMessageBatch attempt is never answered: the SDK's attempt timeout (5 s) ends
    // it and the retry goes seconds later than the delay was planned for. Sent as first built,
    // the message would arrive 5 s late, after its expires_at.
    let mut r = rig(&[("WAITER_LOOKAHEAD", "60")]).await;
    let due = chrono::Utc::now() + chrono::TimeDelta::seconds(4);
    let expires = due + chrono::TimeDelta::milliseconds(500);
    let at = |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    r.call(json!({"queue": "orders", "message_body": "tight", "perform_at": at(due), "expires_at": at(expires), "job_id": "tight"}))
        .await;
    r.proxy.hang_next("SendMessageBatch");
    let first = r.poller.invoke(&json!({})).await.expect("poller");
    // The retry found the message would arrive expired and was never transmitted.
    assert_eq!(
        r.proxy.calls("SendMessageBatch"),
        1,
        "only the hung attempt reached the wire"
    );
    assert_eq!(
        (first["dispatched"].clone(), first["failed"].clone()),
        (json!(0), json!(1)),
        "{first}"
    );
    let got = r.emu.receive_for(&r.url, Duration::from_secs(8), 1).await;
    assert!(got.is_empty(), "nothing arrives after expires_at: {got:?}");
    let next = r.poller.invoke(&json!({})).await.expect("poller");
    assert_eq!(next["expired"], 1, "the next run drops it as expired: {next}");
    assert_eq!(r.stored().await, 0);
}

/// The lease taken over is read from the old item the `UpdateItem` returns. When that call is
/// applied and its reply lost, the SDK's retry returns our own lease instead: the jobs handed on
/// with the lease must still be read (they stay on the item until it is released), or the run
/// sends them a second time.
#[tokio::test(flavor = "multi_thread")]
async fn a_lease_taken_by_an_sdk_retry_still_settles_what_it_was_handed_on_with() {
    let mut r = rig(&[("WAITER_LOOKAHEAD", "60")]).await;
    r.call(json!({"queue": "orders", "message_body": "a", "delay_seconds": 2, "job_id": "a"}))
        .await;
    // The first run sends "a" and cannot remove it (history on: the record's PutItem fails):
    // it hands its lease on with "a".
    r.proxy.force("PutItem", error(500, "InternalServerError", None, None));
    let _ = r.poller.invoke_raw(b"{}".to_vec(), Duration::from_secs(6)).await;
    r.proxy.clear_forced();
    assert_eq!(r.emu.receive_for(&r.url, Duration::from_secs(6), 1).await.len(), 1);
    assert_eq!(r.stored().await, 1, "sent, not removed");

    r.proxy.lose_reply_then_hold("UpdateItem");
    let Rig { proxy, poller, .. } = &mut r;
    let release = async {
        let until = Instant::now() + Duration::from_secs(20);
        while proxy.held() == 0 && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(proxy.held(), 1, "the SDK retried the lease's UpdateItem");
        proxy.release_held();
    };
    let run = json!({});
    let (summary, ()) = tokio::join!(poller.invoke(&run), release);
    let summary = summary.expect("poller");
    assert_eq!(summary["dispatched"], 0, "removed, not sent again: {summary}");
    assert_eq!(r.stored().await, 0);
    assert!(
        r.emu.receive_for(&r.url, Duration::from_secs(3), 1).await.is_empty(),
        "not sent again"
    );
}

/// Statements of a removal batch answered one by one with an error (issue 45): DynamoDB
/// reports a statement it did not apply in a 200 reply, beside the ones it did. The proxy
/// answers the next `times` batches with `code` on every statement, applying none. Two jobs
/// due in a second, history off; returns the rig, the poller and its first run.
async fn removals_answered(code: &str, times: usize) -> (e2e::rig::Rig, Function, Result<Value, e2e::LambdaError>) {
    let rig = e2e::rig::Rig::builder(&["orders"])
        .proxy(7, 0.0)
        .for_partiql()
        .settings(&[
            ("WAITER_SHARDS", "1"),
            ("WAITER_DIRECT_MAX_DELAY", "0"),
            ("WAITER_LOOKAHEAD", "60"),
            ("WAITER_HISTORY_DAYS", "0"),
        ])
        .start()
        .await;
    let mut enqueue = Function::start("enqueue", &rig.env).await;
    for id in ["a", "b"] {
        enqueue
            .invoke_ok(&json!({"queue": "orders", "message_body": id, "delay_seconds": 1, "job_id": id}))
            .await;
    }
    rig.table_proxy().force(
        "BatchExecuteStatement",
        Forced::StatementErrors {
            code: code.to_owned(),
            remaining: times,
        },
    );
    let mut poller = Function::start("poller", &rig.env).await;
    let run = poller.invoke(&json!({})).await;
    (rig, poller, run)
}

async fn stored_jobs(rig: &e2e::rig::Rig) -> usize {
    let left = rig
        .table_client()
        .await
        .scan()
        .table_name("orders")
        .send()
        .await
        .expect("Scan");
    left.items().iter().filter(|i| i.contains_key("perform_at")).count()
}

#[tokio::test(flavor = "multi_thread")]
async fn throttled_removal_statements_are_sent_again_in_the_same_run() {
    let (rig, _poller, run) = removals_answered("ThrottlingError", 1).await;
    let summary = run.expect("the run recovers within itself");
    assert_eq!(summary["dispatched"], 2, "{summary}");
    let proxy = rig.table_proxy();
    assert_eq!(
        proxy.calls("BatchExecuteStatement"),
        2,
        "the throttled batch, then again"
    );
    assert_eq!(proxy.calls("BatchExecuteStatement/statements"), 4);
    assert_eq!(stored_jobs(&rig).await, 0, "both removed in the run");
    let got = rig.emu.receive_for(&rig.urls[0], Duration::from_secs(3), 3).await;
    assert_eq!(got.len(), 2, "each sent once: {got:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn refused_removal_statements_hand_the_lease_on_and_the_next_run_removes_without_resending() {
    // Refused for what they are (`ValidationError`): not sent again in the run (two jobs are
    // removed by the run's closing flush, one call). The lease goes on with them as debts, and
    // the next run removes them before it sends anything: neither job is sent twice.
    let (rig, mut poller, run) = removals_answered("ValidationError", 1).await;
    let e = run.expect_err("its only partition failed");
    assert_eq!(e.error_type, "PollerFailed", "{e:?}");
    assert!(e.error_message.contains("BatchExecuteStatement"), "{e:?}");
    let proxy = rig.table_proxy();
    assert_eq!(proxy.calls("BatchExecuteStatement"), 1, "not sent again in the run");
    assert_eq!(stored_jobs(&rig).await, 2, "still stored after the refusal");
    let next = poller.invoke(&json!({})).await.expect("the next run");
    assert_eq!(next["dispatched"], 0, "{next}");
    assert_eq!(proxy.calls("BatchExecuteStatement"), 2, "the debts, removed");
    assert_eq!(stored_jobs(&rig).await, 0);
    let got = rig.emu.receive_for(&rig.urls[0], Duration::from_secs(3), 3).await;
    assert_eq!(got.len(), 2, "each sent once: {got:?}");
}
