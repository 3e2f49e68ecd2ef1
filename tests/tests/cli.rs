//! The `sqs-waiter` CLI as a process (assert_cmd), through `cargo lambda watch` and the real
//! `enqueue` function on the emulator. Human output is snapshot-tested (insta) on fixed jobs.

use assert_cmd::Command;
use e2e::rig::future;
use e2e::runtime_api::{binary_path, Profile};
use e2e::watch::serve_enqueue;
use e2e::Watch;
use serde_json::{json, Value};

/// The CLI pointed at `watch`, with nothing from the caller's environment.
fn cli(watch: &Watch) -> Command {
    let binary = binary_path("sqs-waiter", Profile::Debug);
    assert!(
        binary.exists(),
        "{} is missing: `cargo build -p sqs-waiter` (make test does)",
        binary.display()
    );
    let mut c = Command::new(binary);
    c.env_clear()
        .envs(watch.cli_env())
        .env("COLUMNS", "80")
        .env("NO_COLOR", "1")
        .timeout(std::time::Duration::from_secs(60));
    c
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(watch: &Watch, args: &[&str]) -> Ran {
    let out = cli(watch).args(args).output().expect("run sqs-waiter");
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn ok(watch: &Watch, args: &[&str]) -> String {
    let r = run(watch, args);
    assert_eq!(r.code, 0, "sqs-waiter {args:?}: {}\n{}", r.stderr, watch.log());
    r.stdout
}

/// One line on stderr, and the exit status.
fn refused(watch: &Watch, args: &[&str], code: i32) -> String {
    let r = run(watch, args);
    assert_eq!(
        r.code, code,
        "sqs-waiter {args:?}: stdout {} stderr {}",
        r.stdout, r.stderr
    );
    assert_eq!(r.stderr.lines().count(), 1, "one line: {:?}", r.stderr);
    r.stderr.trim_end().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn operators_schedule_list_and_manage_jobs_with_the_cli() {
    let (_emu, watch, _url) = serve_enqueue("orders").await;
    // Fixed ids and times, so that the human output is the same on every run and backend.
    for (id, at) in [
        ("cli-a", future("2031-01-01T09:00:00Z")),
        ("cli-b", future("2031-01-01T09:00:00Z")),
        ("cli-c", future("2031-01-02T18:30:00.250Z")),
    ] {
        let out = ok(
            &watch,
            &[
                "enqueue",
                "orders",
                "body",
                "--at",
                &at,
                "--id",
                id,
                "--attr",
                "kind=String:invoice",
            ],
        );
        assert_eq!(out.trim(), format!("scheduled {id} on orders for {at}"));
    }
    let dup = ok(&watch, &["enqueue", "orders", "body", "--delay", "2h", "--id", "cli-a"]);
    assert!(dup.starts_with("duplicate: cli-a is already scheduled"), "{dup}");

    // The snapshots hold 2031, whichever year `future` read it as.
    let year = e2e::rig::future_year().to_string();
    insta::with_settings!({filters => vec![(year.as_str(), "2031")]}, {
        insta::assert_snapshot!("list", ok(&watch, &["list", "orders"]));
        insta::assert_snapshot!("list_limited", ok(&watch, &["list", "orders", "--limit", "2"]));
    });

    let got: Value = serde_json::from_str(&ok(&watch, &["--json", "get", "orders", "cli-a"])).unwrap();
    assert_eq!(got["perform_at"], future("2031-01-01T09:00:00Z"));
    assert_eq!(got["message_attributes"]["kind"]["string_value"], "invoice");

    let moved = ok(
        &watch,
        &[
            "reschedule",
            "orders",
            "cli-b",
            "--at",
            &future("2031-02-01T00:00:00Z"),
            "--if-version",
            "1",
        ],
    );
    assert_eq!(
        moved.trim(),
        future("rescheduled cli-b on orders for 2031-02-01T00:00:00Z (version 2)")
    );
    let conflict = refused(
        &watch,
        &["reschedule", "orders", "cli-b", "--delay", "60", "--if-version", "1"],
        1,
    );
    assert_eq!(conflict, "sqs-waiter: if_version: cli-b is at version 2: not changed");

    let stats = ok(&watch, &["stats", "orders", "--buckets", "3"]);
    insta::with_settings!({filters => vec![
        (r"\d{4}-\d\d-\d\dT[\d:.]+Z", "[TIME]"),
        (r"\(in [^)]+\)", "(in [SPAN])"),
    ]}, {
        insta::assert_snapshot!("stats", stats);
    });

    // EventBridge's at(...) read in a zone, as on enqueue; and a series' new body without a
    // time, its schedule kept.
    let zoned = ok(
        &watch,
        &[
            "reschedule",
            "orders",
            "cli-b",
            "--schedule",
            &future("at(2031-03-01T09:00:00)"),
            "--tz",
            "Asia/Tokyo",
        ],
    );
    assert_eq!(
        zoned.trim(),
        future("rescheduled cli-b on orders for 2031-03-01T00:00:00Z (version 3)")
    );
    ok(
        &watch,
        &[
            "enqueue",
            "orders",
            "tick",
            "--at",
            &future("2031-01-01T00:00:00Z"),
            "--every",
            "1h",
            "--id",
            "cli-hourly",
        ],
    );
    let body = ok(&watch, &["reschedule", "orders", "cli-hourly", "--body", "tock"]);
    assert_eq!(
        body.trim(),
        future("rescheduled cli-hourly on orders for 2031-01-01T00:00:00Z (version 2)")
    );
    let got: Value = serde_json::from_str(&ok(&watch, &["--json", "get", "orders", "cli-hourly"])).unwrap();
    assert_eq!(
        (got["message_body"].as_str(), got["repeat"]["every_s"].as_u64()),
        (Some("tock"), Some(3600))
    );
    let nothing = run(&watch, &["reschedule", "orders", "cli-hourly"]);
    assert_eq!(nothing.code, 2, "a change is required: {}", nothing.stderr);
    assert_eq!(
        ok(&watch, &["cancel", "orders", "cli-hourly"]).trim(),
        "cancelled cli-hourly on orders"
    );
    assert_eq!(
        ok(&watch, &["cancel", "orders", "cli-c"]).trim(),
        "cancelled cli-c on orders"
    );
    let gone = refused(&watch, &["cancel", "orders", "cli-c"], 1);
    assert_eq!(gone, "sqs-waiter: job_id: no job cli-c on queue orders");
    let history = ok(&watch, &["get", "orders", "cli-c"]);
    assert!(history.contains("cancelled_at"), "{history}");
    // This deployment keeps no message in history (WAITER_HISTORY_BODY is off by default).
    assert_eq!(
        refused(&watch, &["replay", "orders", "cli-c"], 1),
        "sqs-waiter: job_id: history keeps no message of cli-c on orders (WAITER_HISTORY_BODY was off when it left the table, or history no longer knows it)"
    );
    assert_eq!(
        refused(&watch, &["replay", "orders", "cli-a", "--delay", "1h"], 1),
        "sqs-waiter: job_id: cli-a is still stored on orders: nothing to replay until it leaves the table"
    );

    assert_eq!(ok(&watch, &["parked", "orders"]).trim(), "no jobs");
    assert_eq!(ok(&watch, &["redrive", "orders", "--all"]).trim(), "orders: redriven 0");
    // Tags: given on enqueue, shown and selected by list, cancelled by.
    ok(
        &watch,
        &[
            "enqueue",
            "orders",
            "t",
            "--delay",
            "2h",
            "--id",
            "cli-t",
            "--tag",
            "customer=42",
            "--tag",
            "campaign=xmas",
        ],
    );
    let tagged: Value =
        serde_json::from_str(&ok(&watch, &["--json", "list", "orders", "--tag", "customer=42"])).unwrap();
    assert_eq!(tagged["jobs"][0]["job_id"], "cli-t", "{tagged}");
    assert_eq!(tagged["jobs"][0]["tags"], json!({"customer": "42", "campaign": "xmas"}));
    assert_eq!(tagged["jobs"].as_array().map(Vec::len), Some(1), "{tagged}");
    let by_tag = ok(
        &watch,
        &[
            "cancel-many",
            "orders",
            "--tag",
            "customer=42",
            "--tag",
            "campaign=xmas",
        ],
    );
    assert_eq!(by_tag.trim(), "orders: cancelled 1, not found 0");
    let bulk = ok(&watch, &["cancel-many", "orders", "--prefix", "cli-"]);
    assert_eq!(bulk.trim(), "orders: cancelled 2, not found 0");
    let left: Value = serde_json::from_str(&ok(&watch, &["--json", "stats", "orders"])).unwrap();
    assert_eq!(left["scheduled"], 0);

    // A series: weekdays at 09:00 Berlin from a Friday; `list` shows its repetition.
    let series = ok(
        &watch,
        &[
            "enqueue",
            "orders",
            "body",
            "--at",
            &future("2031-01-03T00:00:00Z"),
            "--id",
            "cli-s",
            "--cron",
            "0 9 * * MON-FRI",
            "--tz",
            "Europe/Berlin",
            "--catch-up",
            "skip",
            "--count",
            "10",
        ],
    );
    assert_eq!(
        series.trim(),
        future("scheduled cli-s on orders for 2031-01-03T08:00:00Z")
    );
    let listed = ok(&watch, &["list", "orders"]);
    assert!(
        listed.contains("cron 0 9 * * MON-FRI Europe/Berlin, count 10, catch-up skip"),
        "{listed}"
    );
    let got: Value = serde_json::from_str(&ok(&watch, &["--json", "get", "orders", "cli-s"])).unwrap();
    assert_eq!(
        (got["occurrences"].as_u64(), got["repeat"]["count"].as_u64()),
        (Some(0), Some(10))
    );
    // Preview: the stored series, asked of the function; a schedule, computed by the CLI alone.
    let previewed: Value =
        serde_json::from_str(&ok(&watch, &["--json", "preview", "orders", "cli-s", "-n", "2"])).unwrap();
    assert_eq!(
        previewed["occurrences"][0]["at"],
        future("2031-01-03T08:00:00Z"),
        "{previewed}"
    );
    let mut local = cli(&watch);
    local
        .env_remove("AWS_ENDPOINT_URL")
        .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9");
    let out = local
        .args([
            "preview",
            "--cron",
            "30 2 * * *",
            "--tz",
            "Europe/Berlin",
            "--from",
            "2027-03-27T00:00:00Z",
            "-n",
            "3",
        ])
        .output()
        .expect("run");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && shown.contains("2027-03-28T03:00:00+02:00  moved by a clock change"),
        "{shown}"
    );
    // Pause and resume: a series, then the queue (`queues` shows it).
    let paused = ok(&watch, &["pause", "orders", "cli-s"]);
    assert!(paused.starts_with("paused orders/cli-s (since "), "{paused}");
    let got: Value = serde_json::from_str(&ok(&watch, &["--json", "get", "orders", "cli-s"])).unwrap();
    assert_eq!(got["paused"], true, "{got}");
    let stats: Value = serde_json::from_str(&ok(&watch, &["--json", "stats", "orders"])).unwrap();
    assert_eq!(
        (stats["paused_jobs"].as_u64(), stats["paused"].as_bool()),
        (Some(1), Some(false)),
        "{stats}"
    );
    assert_eq!(
        ok(&watch, &["resume", "orders", "cli-s"]).trim(),
        "resumed orders/cli-s"
    );
    assert!(ok(&watch, &["pause", "orders"]).starts_with("paused queue orders (since "));
    let queues: Value = serde_json::from_str(&ok(&watch, &["--json", "queues"])).unwrap();
    assert_eq!(
        (
            queues["queues"][0]["queue"].as_str(),
            queues["queues"][0]["paused"].as_bool()
        ),
        (Some("orders"), Some(true)),
        "{queues}"
    );
    assert!(ok(&watch, &["stats", "orders"]).contains("PAUSED since "));
    assert_eq!(ok(&watch, &["resume", "orders"]).trim(), "resumed queue orders");
    assert!(ok(&watch, &["queues"])
        .lines()
        .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["orders", "no", "no"]));
    // Debounce: the second call replaces the first.
    let args = [
        "enqueue",
        "orders",
        "v1",
        "--delay",
        "2h",
        "--id",
        "cli-d",
        "--on-duplicate",
        "replace",
    ];
    assert_eq!(
        ok(&watch, &args).split(" for ").next(),
        Some("scheduled cli-d on orders")
    );
    let replaced = ok(
        &watch,
        &[
            "enqueue",
            "orders",
            "v2",
            "--at",
            &future("2031-01-05T00:00:00Z"),
            "--id",
            "cli-d",
            "--on-duplicate",
            "extend",
        ],
    );
    assert_eq!(
        replaced.trim(),
        future("replaced: cli-d on orders is now due 2031-01-05T00:00:00Z (version 2)")
    );
    let sent = ok(&watch, &["trigger", "orders", "cli-d"]);
    assert!(sent.starts_with("sent cli-d to orders (message "), "{sent}");
    assert_eq!(
        refused(&watch, &["trigger", "orders", "cli-d"], 1),
        "sqs-waiter: job_id: no job cli-d on queue orders"
    );
    assert_eq!(
        refused(&watch, &["pause", "orders", "nope"], 1),
        "sqs-waiter: job_id: no job nope stored on queue orders"
    );
    assert_eq!(
        ok(&watch, &["cancel", "orders", "cli-s"]).trim(),
        "cancelled cli-s on orders"
    );
    // EventBridge Scheduler's expressions: 2-6 is Monday to Friday, so from Saturday 4 January
    // 2031 the first is Monday at 09:00 Berlin; `list` shows the expression as given. `at(...)`
    // is a one-off job's local time.
    let eb = [
        "enqueue",
        "orders",
        "eb",
        "--at",
        &future("2031-01-04T00:00:00Z"),
        "--id",
        "cli-eb",
        "--schedule",
        "cron(0 9 ? * 2-6 *)",
        "--tz",
        "Europe/Berlin",
    ];
    assert_eq!(
        ok(&watch, &eb).trim(),
        future("scheduled cli-eb on orders for 2031-01-06T08:00:00Z")
    );
    assert!(
        ok(&watch, &["list", "orders"]).contains("cron(0 9 ? * 2-6 *) Europe/Berlin"),
        "the expression as given"
    );
    let at = [
        "enqueue",
        "orders",
        "at",
        "--schedule",
        &future("at(2031-01-01T09:00:00)"),
        "--tz",
        "Asia/Tokyo",
    ];
    assert!(
        ok(&watch, &at)
            .trim()
            .ends_with(&future(" on orders for 2031-01-01T00:00:00Z")),
        "09:00 in Tokyo"
    );
    assert!(refused(
        &watch,
        &["enqueue", "orders", "x", "--schedule", "cron(0 9 * * * *)"],
        1
    )
    .starts_with("sqs-waiter: repeat.expression: one of day-of-month and day-of-week must be ?"));
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_exits_with_its_code_and_one_line_naming_the_field() {
    let (_emu, watch, _url) = serve_enqueue("orders").await;
    let queue = refused(&watch, &["enqueue", "nope", "x", "--delay", "5"], 1);
    assert!(queue.starts_with("sqs-waiter: queue: "), "{queue}");
    let time = refused(&watch, &["enqueue", "orders", "x", "--at", "next tuesday"], 2);
    assert!(time.contains("'--at <TIME>'"), "{time}");
    let both = refused(&watch, &["enqueue", "orders", "x", "--at", "5", "--delay", "5"], 2);
    assert!(both.contains("--delay"), "{both}");
    let function = refused(&watch, &["--function", "nope", "get", "orders", "x"], 1);
    assert!(
        function.starts_with("sqs-waiter: --function: no Lambda function named \"nope\""),
        "{function}"
    );
    let limit = refused(&watch, &["list", "orders", "--limit", "0"], 2);
    assert!(limit.contains("--limit"), "{limit}");
    let attr = refused(&watch, &["enqueue", "orders", "x", "--delay", "5", "--attr", "kind"], 2);
    assert!(attr.contains("--attr"), "{attr}");
    let tag = refused(&watch, &["enqueue", "orders", "x", "--delay", "5", "--tag", "kind"], 2);
    assert!(tag.contains("--tag") && tag.contains("KEY=VALUE"), "{tag}");
    let id = refused(&watch, &["enqueue", "orders", "x", "--delay", "5", "--id", "a b"], 1);
    assert!(id.starts_with("sqs-waiter: job_id: "), "{id}");
    let every = refused(&watch, &["enqueue", "orders", "x", "--every", "30s"], 1);
    assert!(
        every.starts_with("sqs-waiter: repeat.every_s: must be 60 to"),
        "{every}"
    );
    let alone = refused(&watch, &["enqueue", "orders", "x", "--count", "3"], 2);
    assert!(alone.contains("--cron <EXPR>|--every <DURATION>"), "{alone}");
    let zone = refused(
        &watch,
        &["enqueue", "orders", "x", "--cron", "0 9 * * *", "--tz", "Mars/Base"],
        1,
    );
    assert!(zone.starts_with("sqs-waiter: time_zone: "), "{zone}");
    let selection = refused(&watch, &["cancel-many", "orders"], 1);
    assert!(selection.starts_with("sqs-waiter: job_ids: "), "{selection}");
    let missing = refused(&watch, &["get", "orders", "never"], 1);
    assert_eq!(missing, "sqs-waiter: job_id: no job never on queue orders");
    let not_found_json = run(&watch, &["--json", "get", "orders", "never"]);
    assert_eq!(not_found_json.code, 1);
    let reply: Value = serde_json::from_str(&not_found_json.stdout).unwrap();
    assert_eq!(reply["status"], "not_found", "--json still prints the reply");
}

#[tokio::test]
async fn help_shows_an_example_for_every_command_and_completions_generate() {
    let binary = binary_path("sqs-waiter", Profile::Debug);
    for command in [
        "enqueue",
        "get",
        "cancel",
        "reschedule",
        "list",
        "stats",
        "parked",
        "redrive",
        "cancel-many",
        "completions",
    ] {
        let out = Command::new(&binary).args([command, "--help"]).output().unwrap();
        assert!(out.status.success());
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(
            help.contains(&format!("sqs-waiter {command} ")),
            "{command} --help shows an example:\n{help}"
        );
    }
    for shell in ["bash", "zsh", "fish"] {
        let out = Command::new(&binary).args(["completions", shell]).output().unwrap();
        assert!(out.status.success());
        assert!(String::from_utf8_lossy(&out.stdout).contains("cancel-many"), "{shell}");
    }
}
