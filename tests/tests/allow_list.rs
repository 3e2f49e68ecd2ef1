//! The allow-list from a file (`WAITER_QUEUES_FILE`, issue 48): what the CDK construct ships in a
//! layer once the list passes Lambda's 4 KB of environment. Read once at start, it works as
//! `WAITER_QUEUES` does; a missing file stops the function at start naming the variable.

use std::time::Duration;

use e2e::{Emulator, Function};
use serde_json::json;

/// 100 queue names of 80 characters, then `orders`, one per line as the construct writes them.
fn list_file(dir: &std::path::Path) -> std::path::PathBuf {
    let mut names = e2e::longest_queue_names(100);
    names.push("orders".into());
    let path = dir.join("queues");
    std::fs::write(&path, names.join("\n") + "\n").expect("write the list");
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn a_list_from_a_file_is_the_allow_list_of_both_functions_101_queues_long() {
    let emu = Emulator::start().await;
    let url = emu.create_queue("orders").await;
    emu.create_table("orders").await;
    let dir = std::env::temp_dir().join(format!("sqs-waiter-allow-list-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = list_file(&dir);
    let path = file.to_str().expect("utf-8 path");
    let settings = |list: &str| {
        emu.function_env(&[
            ("WAITER_QUEUES_FILE", list),
            ("WAITER_DIRECT_MAX_DELAY", "0"),
            ("WAITER_LOOKAHEAD", "2"),
        ])
    };
    let mut enqueue = Function::start("enqueue", &settings(path)).await;
    // The poller works every listed queue's table: this one is given a list of `orders` alone
    // (the other 100 have no tables here), in the same form.
    let short = dir.join("orders-only");
    std::fs::write(&short, "orders\n").expect("write");
    let mut poller = Function::start("poller", &settings(short.to_str().expect("utf-8"))).await;
    let r = enqueue
        .invoke_ok(&json!({"queue": "orders", "message_body": "listed", "delay_seconds": 1}))
        .await;
    assert_eq!(r["status"], "scheduled", "{r}");
    let refused = enqueue
        .invoke(&json!({"queue": "unlisted", "message_body": "x", "delay_seconds": 1}))
        .await
        .expect_err("a queue outside the list is refused");
    assert_eq!(refused.error_type, "InvalidRequest");
    assert!(refused.error_message.starts_with("queue:"), "{}", refused.error_message);
    let mut got = Vec::new();
    for _ in 0..10 {
        if !got.is_empty() {
            break;
        }
        poller.invoke_ok(&json!({})).await;
        got.extend(emu.receive_for(&url, Duration::from_secs(1), 1).await);
    }
    assert_eq!(got.len(), 1, "the stored job delivered through the poller");
    assert_eq!(got[0].message.body(), Some("listed"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_list_file_or_both_sources_stop_the_function_at_start_naming_the_variable() {
    let emu = Emulator::start().await;
    for (name, settings, variable) in [
        (
            "enqueue",
            vec![("WAITER_QUEUES_FILE", "/nonexistent/queues")],
            "WAITER_QUEUES_FILE",
        ),
        (
            "poller",
            vec![
                ("WAITER_QUEUES_FILE", "/nonexistent/queues"),
                ("WAITER_QUEUES", "orders"),
            ],
            "WAITER_QUEUES",
        ),
    ] {
        e2e::rig::assert_stops_at_start_naming(&emu, name, &settings, variable).await;
    }
}
