//! EventBridge Scheduler's expressions end to end (issue 61, item 4), through the real
//! functions: `rate(...)` and a six-field `cron(...)` series send their occurrences from the
//! table, `get` and `list` show the expression as given, AWS's day-of-week numbering and `#`
//! place the first occurrence, `preview` reads them, and a one-off `at(...)` is its zone's
//! local time.

use e2e::rig::future;
use std::time::Duration;

use chrono::{TimeDelta, Timelike, Utc};
use e2e::rig::parse_time;
use serde_json::json;

use super::series::series_rig;

#[tokio::test(flavor = "multi_thread")]
async fn eventbridge_expressions_send_from_the_table_and_show_as_given() {
    let mut s = series_rig().await;
    // Started 150 s ago: a rate of a minute has occurrences at start, +60 and +120 (`all` sends
    // each); an every-minute cron has two or three minutes since, and `count` stops it at two.
    let start = (Utc::now() - TimeDelta::seconds(150)).with_nanosecond(0).expect("time");
    let r = s
        .enqueue_ok(
            json!({"queue": "orders", "job_id": "rate", "message_body": "r", "perform_at": start,
                           "repeat": {"expression": "rate(1 minute)", "catch_up": "all"}}),
        )
        .await;
    assert_eq!(r["repeat"]["expression"], "rate(1 minute)", "{r}");
    s.enqueue_ok(
        json!({"queue": "orders", "job_id": "cron", "message_body": "c", "perform_at": start,
                        "time_zone": "Asia/Kolkata",
                        "repeat": {"expression": "cron(* * * * ? *)", "catch_up": "all", "count": 2}}),
    )
    .await;
    let got = s
        .poll_and_receive(0, 5, Duration::from_secs(1), Duration::from_secs(20))
        .await;
    let mut ids: Vec<String> = got
        .iter()
        .map(|m| m.attribute("waiter.job_id").expect("waiter.job_id").to_owned())
        .collect();
    ids.sort();
    let minute = |k: i64| {
        let t = start + TimeDelta::seconds(60 * k);
        t.timestamp() - i64::from(t.second())
    };
    let first_cron = if start.second() == 0 { minute(0) } else { minute(1) };
    let mut want = vec![
        format!("cron@{first_cron}"),
        format!("cron@{}", first_cron + 60),
        format!("rate@{}", start.timestamp()),
        format!("rate@{}", start.timestamp() + 60),
        format!("rate@{}", start.timestamp() + 120),
    ];
    want.sort();
    assert_eq!(ids, want);

    // `get` shows each as given, with its zone; the cron finished at its count.
    let rate = s
        .enqueue_ok(json!({"action": "get", "queue": "orders", "job_id": "rate"}))
        .await;
    assert_eq!(
        (rate["repeat"]["expression"].as_str(), rate["occurrences"].as_u64()),
        (Some("rate(1 minute)"), Some(3)),
        "{rate}"
    );
    assert_eq!(
        parse_time(rate["perform_at"].as_str().expect("perform_at")),
        start + TimeDelta::seconds(180),
        "{rate}"
    );
    let cron = s
        .enqueue_ok(json!({"action": "get", "queue": "orders", "job_id": "cron"}))
        .await;
    assert_eq!(
        (cron["status"].as_str(), cron["occurrences"].as_u64()),
        (Some("finished"), Some(2)),
        "{cron}"
    );

    // AWS's numbering: 2#1 is the first Monday, 09:00 in Berlin (CET) from New Year's Day 2031.
    let r = s
        .enqueue_ok(json!({"queue": "orders", "job_id": "monthly", "message_body": "m",
                           "perform_at": future("2031-01-01T00:00:00Z"), "time_zone": "Europe/Berlin",
                           "repeat": {"expression": "cron(0 9 ? * 2#1 *)", "until": future("2031-12-31T00:00:00Z")}}))
        .await;
    assert_eq!(
        parse_time(r["perform_at"].as_str().expect("perform_at")),
        parse_time(&future("2031-01-06T08:00:00Z"))
    );
    let listed = s
        .enqueue_ok(json!({"action": "list", "queue": "orders", "prefix": "monthly"}))
        .await;
    assert_eq!(
        (
            listed["jobs"][0]["repeat"]["expression"].as_str(),
            listed["jobs"][0]["repeat"]["cron"].as_str(),
            listed["jobs"][0]["time_zone"].as_str()
        ),
        (Some("cron(0 9 ? * 2#1 *)"), None, Some("Europe/Berlin")),
        "{listed}"
    );
    let preview = s
        .enqueue_ok(json!({"action": "preview", "queue": "orders", "job_id": "monthly", "count": 3}))
        .await;
    let local: Vec<&str> = preview["occurrences"]
        .as_array()
        .expect("occurrences")
        .iter()
        .filter_map(|o| o["local"].as_str())
        .collect();
    assert_eq!(
        local,
        [
            future("2031-01-06T09:00:00+01:00"),
            future("2031-02-03T09:00:00+01:00"),
            future("2031-03-03T09:00:00+01:00")
        ],
        "{preview}"
    );

    // A one-off `at(...)`: 09:00 in Tokyo is midnight UTC.
    let r = s
        .enqueue_ok(json!({"queue": "orders", "job_id": "at", "message_body": "a",
                           "schedule": future("at(2031-01-01T09:00:00)"), "time_zone": "Asia/Tokyo"}))
        .await;
    assert_eq!(
        (r["status"].as_str(), r["perform_at"].as_str().map(parse_time)),
        (Some("scheduled"), Some(parse_time(&future("2031-01-01T00:00:00Z")))),
        "{r}"
    );
    let at = s
        .enqueue_ok(json!({"action": "get", "queue": "orders", "job_id": "at"}))
        .await;
    assert_eq!(at["repeat"], serde_json::Value::Null, "a one-off job: {at}");
}
