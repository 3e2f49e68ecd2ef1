//! `sqs-waiter console` in a real browser (issue 62): the CLI's console process against the real
//! `enqueue` function under `cargo lambda watch` on the emulator, driven in headless Chromium.
//! An operator pages through 250 jobs, filters, opens a job whose body is hostile HTML, cancels
//! it, previews a series, runs a job now, reschedules, pauses and resumes a job and the queue,
//! redrives a parked job and cancels a filtered hundred; each page is checked by what it shows,
//! and a screenshot of each is saved under target/console-screenshots/ (docs/console.md shows
//! them).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use chrono::{TimeDelta, Utc};
use e2e::rig::future;
use e2e::runtime_api::{binary_path, Profile};
use e2e::watch::serve_enqueue;
use e2e::webdriver::Browser;
use e2e::{Function, Watch};
use serde_json::json;
use sqs_waiter_client::{Client, Job, JobStatus, List, ListParked, Repeat};
use tokio::io::{AsyncBufReadExt, BufReader};

/// A body a careless page would run: a script, an event handler, markup.
const HOSTILE: &str =
    r#"<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"><b>bold</b> & "quotes""#;

/// The console as the CLI serves it, stopped with the test.
struct Served {
    _child: tokio::process::Child,
    url: String,
}

async fn console(watch: &Watch, extra: &[&str]) -> Served {
    let binary = binary_path("sqs-waiter", Profile::Debug);
    let mut child = tokio::process::Command::new(binary)
        .env_clear()
        .envs(watch.cli_env())
        .args(["console", "--no-open"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("start sqs-waiter console");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .expect("the console printed its address within 10 s")
        .expect("read stdout")
        .expect("a line");
    let url = line
        .strip_prefix("console: ")
        .unwrap_or_else(|| panic!("the first line names the console: {line}"))
        .to_owned();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.contains("/?token="),
        "{url}"
    );
    Served { _child: child, url }
}

fn shots() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/console-screenshots")
}

fn origin(url: &str) -> String {
    url.split("/?").next().unwrap_or(url).to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_operator_manages_jobs_in_the_browser() {
    let (emu, watch, url) = serve_enqueue("orders").await;
    let client = Client::new(watch.lambda_client().await, "enqueue");
    let day = Utc::now() + TimeDelta::days(1);
    let jobs: Vec<Job> = (0..250)
        .map(|i| {
            let job = Job::new("orders", format!("job p{i:03}"))
                .id(format!("p{i:03}"))
                .at(day);
            // Every tenth is team red: the tag filter and the cancel by tag below.
            if i % 10 == 0 {
                job.tag("team", "red")
            } else {
                job
            }
        })
        .collect();
    for chunk in jobs.chunks(100) {
        let replies = client.enqueue_many(chunk).await.expect("enqueue");
        assert!(replies.iter().all(Result::is_ok));
    }
    client
        .enqueue(&Job::new("orders", HOSTILE).id("html-1").at(day))
        .await
        .expect("enqueue");
    client
        .enqueue(
            &Job::new("orders", "weekly")
                .id("weekly")
                .at(day)
                .repeat(Repeat::cron("0 9 * * MON"), "Europe/Berlin"),
        )
        .await
        .expect("enqueue");
    // A parked job: the queue refuses bodies over 1 KiB, and a poller run meets one (stored,
    // as `replace` always stores, due in 2 s, within the poller's lookahead).
    emu.sqs
        .set_queue_attributes()
        .queue_url(&url)
        .attributes(aws_sdk_sqs::types::QueueAttributeName::MaximumMessageSize, "1024")
        .send()
        .await
        .expect("SetQueueAttributes");
    let big = Job::new("orders", "x".repeat(2000))
        .id("big")
        .at(Utc::now() + TimeDelta::seconds(2))
        .on_duplicate(sqs_waiter_client::OnDuplicate::Replace);
    client.enqueue(&big).await.expect("enqueue");
    let env = emu.function_env(&[("WAITER_QUEUES", "orders"), ("WAITER_TABLE_PREFIX", "waiter-")]);
    let mut poller = Function::start_binary(binary_path("poller", Profile::Debug), "poller", &env).await;
    let run = poller.invoke_as_client(&json!({})).await.expect("poller");
    assert_eq!(run["parked"], 1, "{run}");

    let served = console(&watch, &[]).await;
    let home = origin(&served.url);
    let b = Browser::start().await;
    b.goto(&served.url).await;
    assert_eq!(
        b.current_url().await,
        format!("{home}/"),
        "the token left the address bar"
    );

    // Queues: the queue with its counts and histogram.
    let text = b.page_text().await;
    assert!(text.contains("orders"), "{text}");
    assert_eq!(b.text("#q-orders + table td.num a").await, "1", "one parked");
    assert_eq!(b.find_all("svg.histogram").await.len(), 1);
    b.screenshot(&shots().join("queues.png")).await;

    // Jobs: 50 a page, through every page by "Next page".
    b.click("a[href='/queues/orders/jobs']").await;
    assert_eq!(b.find_all("tbody tr").await.len(), 50);
    b.screenshot(&shots().join("jobs.png")).await;
    let mut seen = BTreeSet::new();
    let mut pages = 0;
    loop {
        pages += 1;
        let ids = b
            .eval("return [...document.querySelectorAll('tbody td:first-child a')].map(a => a.textContent)")
            .await;
        for id in ids.as_array().expect("ids") {
            assert!(seen.insert(id.as_str().expect("id").to_owned()), "{id} twice");
        }
        if b.find_all("a[rel=next]").await.is_empty() {
            break;
        }
        b.click("a[rel=next]").await;
    }
    assert_eq!(
        (pages, seen.len()),
        (6, 252),
        "250 jobs, the hostile one and the series"
    );
    assert!((0..250).all(|i| seen.contains(&format!("p{i:03}"))));

    // A filter, then the job: its body shown as text, nothing of it run.
    b.goto(&format!("{home}/queues/orders/jobs")).await;
    b.fill("input[name=prefix]", "html").await;
    b.click("form.filters button").await;
    assert_eq!(b.find_all("tbody tr").await.len(), 1);
    b.click("tbody td:first-child a").await;
    assert_eq!(b.text("#body").await, HOSTILE);
    assert_eq!(b.eval("return document.querySelectorAll('#body *').length").await, 0);
    assert_eq!(b.eval("return window.__pwned === undefined").await, true);
    b.screenshot(&shots().join("job.png")).await;
    b.click("form[action$='/cancel'] button").await;
    assert_eq!(b.text(".flash").await, "cancel: cancelled");
    assert_ne!(
        client.get("orders", "html-1").await.expect("get").status,
        JobStatus::Scheduled
    );

    // A tag filter: the 25 red jobs, each showing its tags, and a job's page shows them.
    b.goto(&format!("{home}/queues/orders/jobs")).await;
    b.fill("input[name=tags]", "team=red").await;
    b.click("form.filters button").await;
    assert_eq!(b.find_all("tbody tr").await.len(), 25);
    assert_eq!(b.text("tbody td:nth-child(5)").await, "team=red");
    assert!(b.page_text().await.contains("stored jobs read to find them"));
    b.goto(&format!("{home}/queues/orders/jobs/p010")).await;
    assert!(b.page_text().await.contains("team=red"), "{}", b.page_text().await);

    // A series: its next 10 occurrences, 09:00 in Berlin.
    b.goto(&format!("{home}/queues/orders/jobs/weekly")).await;
    let occurrences = b.find_all("#occurrences li").await;
    assert_eq!(occurrences.len(), 10);
    assert!(b.text("#occurrences li").await.contains("T09:00:00+0"));
    b.screenshot(&shots().join("series.png")).await;

    // Run now: the job's message is in SQS.
    b.goto(&format!("{home}/queues/orders/jobs/p000")).await;
    b.click("form[action$='/trigger'] button").await;
    assert_eq!(b.text(".flash").await, "trigger: sent");
    let got = emu.receive_for(&url, Duration::from_secs(10), 1).await;
    assert_eq!(got.first().and_then(|r| r.message.body()), Some("job p000"));

    // Reschedule a job, then pause and resume it.
    b.goto(&format!("{home}/queues/orders/jobs/p001")).await;
    b.fill("input[name=at]", &future("2031-01-01T09:00:00Z")).await;
    b.click("form[action$='/reschedule'] button").await;
    assert_eq!(b.text(".flash").await, "reschedule: rescheduled");
    let moved = client.get("orders", "p001").await.expect("get");
    assert_eq!(
        moved.perform_at.map(|t| t.to_rfc3339()).as_deref(),
        Some(future("2031-01-01T09:00:00+00:00").as_str())
    );
    b.click("form[action$='/p001/pause'] button").await;
    assert_eq!(b.text(".flash").await, "pause: paused");
    assert_eq!(client.get("orders", "p001").await.expect("get").paused, Some(true));
    b.click("form[action$='/p001/resume'] button").await;
    assert_eq!(b.text(".flash").await, "resume: resumed");

    // Pause and resume the queue.
    b.goto(&home).await;
    b.click("form[action='/queues/orders/pause'] button").await;
    assert_eq!(b.text(".flash").await, "Paused queue orders.");
    assert!(b.text("#q-orders").await.contains("PAUSED since"));
    assert!(client.queues().await.expect("queues").queues[0].paused);
    b.click("form[action='/queues/orders/resume'] button").await;
    assert!(!client.queues().await.expect("queues").queues[0].paused);

    // Parked: redrive the one selected.
    b.goto(&format!("{home}/queues/orders/parked")).await;
    assert_eq!(b.text("#parked-count").await, "1");
    b.screenshot(&shots().join("parked.png")).await;
    b.tick("input[name=job_id]").await;
    b.click("form[action$='/parked/redrive'] button").await;
    assert_eq!(b.text(".flash").await, "Redrove 1 of 1 jobs.");
    let parked = client
        .parked(&ListParked {
            queue: "orders".into(),
            limit: None,
            cursor: None,
        })
        .await;
    assert_eq!(parked.expect("parked").count, 0);

    // Cancel what a filter selects, after being told how many.
    b.goto(&format!("{home}/queues/orders/jobs?prefix=p1")).await;
    b.click("a[href^='/queues/orders/cancel']").await;
    assert_eq!(b.text("#match-count").await, "100");
    b.screenshot(&shots().join("cancel.png")).await;
    b.click("form[action='/queues/orders/cancel'] button").await;
    assert!(
        b.text(".flash").await.starts_with("Cancelled 100 jobs"),
        "{}",
        b.page_text().await
    );
    let left = client
        .list(&List {
            queue: "orders".into(),
            prefix: Some("p1".into()),
            ..List::default()
        })
        .await
        .expect("list");
    assert!(left.jobs.is_empty(), "{left:?}");
    // Cancel by tag: the red jobs left (p000 was sent, p100 to p190 cancelled above).
    b.goto(&format!("{home}/queues/orders/jobs?tags=team%3Dred")).await;
    b.click("a[href^='/queues/orders/cancel']").await;
    assert_eq!(b.text("#match-count").await, "14");
    b.click("form[action='/queues/orders/cancel'] button").await;
    assert!(
        b.text(".flash").await.starts_with("Cancelled 14 jobs"),
        "{}",
        b.page_text().await
    );
    let red = client
        .list(&List {
            tags: Some([("team".to_owned(), "red".to_owned())].into()),
            ..List::queue("orders")
        })
        .await
        .expect("list");
    assert!(red.jobs.is_empty(), "{red:?}");
    let untagged = client.get("orders", "p011").await.expect("get");
    assert_eq!(untagged.status, JobStatus::Scheduled, "an untagged job stays");

    // A hostile process: no token, or a foreign Host.
    let http = reqwest::Client::new();
    let bare = http.get(format!("{home}/")).send().await.expect("get");
    assert_eq!(bare.status(), 403);
    let token = served.url.split("token=").nth(1).expect("token");
    let rebound = http
        .get(format!("{home}/?token={token}"))
        .header("host", "evil.example")
        .send()
        .await
        .expect("get");
    assert_eq!(rebound.status(), 403);

    // Read-only: the same pages, no control that changes anything.
    let read_only = console(&watch, &["--read-only"]).await;
    b.goto(&read_only.url).await;
    assert!(b.page_text().await.contains("read-only"));
    b.goto(&format!("{}/queues/orders/jobs/p001", origin(&read_only.url)))
        .await;
    assert!(b.find_all("form[method=post]").await.is_empty());
}
