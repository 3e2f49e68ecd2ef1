//! The e2e rig: an emulator, queues and their tables, and both functions started on them.

use std::time::Duration;

use crate::dynamo_local::DynamoLocal;
use crate::emulator::{create_waiter_table, sdk_config, IndexKind};
use crate::proxy::FaultProxy;
use crate::quirks::Quirk;
use crate::{Emulator, Env, Function};
use serde_json::{json, Value};

pub use crate::turn::{alone, shared};

/// One emulator with queues, a table per queue, an optional fault proxy in front of the
/// emulator, and the environment both functions run with. Every e2e setup starts here.
pub struct Rig {
    pub emu: Emulator,
    pub proxy: Option<FaultProxy>,
    pub urls: Vec<String>,
    pub env: Env,
    /// The tables' own DynamoDB Local and its fault proxy, when built `for_many_transactions`
    /// or `for_concurrent_writes` on a backend with the quirk that asks for it.
    pub tables: Option<(DynamoLocal, Option<FaultProxy>)>,
}

/// How to build a [`Rig`]: `Rig::builder(&["orders"]).proxy(7, 0.0).settings(&[...]).start()`.
pub struct RigBuilder<'a> {
    queues: &'a [&'a str],
    table_prefix: &'a str,
    proxy: Option<(u64, f64)>,
    settings: Vec<(&'a str, &'a str)>,
    /// Backends with any of these quirks get the tables on DynamoDB Local.
    local_tables_for: Vec<Quirk>,
}

impl Rig {
    /// Queues named `queues`, each with its table; no table prefix, no proxy, no settings.
    pub fn builder<'a>(queues: &'a [&'a str]) -> RigBuilder<'a> {
        RigBuilder {
            queues,
            table_prefix: "",
            proxy: None,
            settings: Vec::new(),
            local_tables_for: Vec::new(),
        }
    }

    /// A client of the tables' DynamoDB (DynamoDB Local when the rig put them there).
    pub async fn table_client(&self) -> aws_sdk_dynamodb::Client {
        match &self.tables {
            Some((local, _)) => aws_sdk_dynamodb::Client::new(&sdk_config(&local.endpoint).await),
            None => self.emu.dynamodb.clone(),
        }
    }

    /// Moves every stored job of `table` to `due`, by a conditional write of its `perform_at`.
    ///
    /// A herd is enqueued far ahead and then made due at once: on a loaded machine a loaded
    /// emulator took long enough to store a herd of 1000 (ten requests of 100) that its last jobs
    /// were due before they were stored, and went straight to SQS instead (`sent`, not
    /// `scheduled`). Returns how many jobs it moved.
    pub async fn make_all_due(&self, table: &str, due: chrono::DateTime<chrono::Utc>) -> usize {
        make_all_due(&self.table_client().await, table, due).await
    }

    /// The proxy in front of the tables: their own on DynamoDB Local (moto runs no PartiQL),
    /// else the emulator's. Panics if the rig was built without one.
    pub fn table_proxy(&self) -> &FaultProxy {
        self.tables
            .as_ref()
            .and_then(|(_, p)| p.as_ref())
            .or(self.proxy.as_ref())
            .expect("a proxy")
    }

    /// The fault proxy; panics if the rig was built without one.
    pub fn proxy(&self) -> &FaultProxy {
        self.proxy.as_ref().expect("the rig was built with a fault proxy")
    }
}

impl<'a> RigBuilder<'a> {
    /// Tables are named `{prefix}{queue}` (`WAITER_TABLE_PREFIX`).
    pub fn table_prefix(mut self, prefix: &'a str) -> Self {
        self.table_prefix = prefix;
        self
    }

    /// The functions reach the emulator through a fault proxy with this seed and fault rate.
    pub fn proxy(mut self, seed: u64, rate: f64) -> Self {
        self.proxy = Some((seed, rate));
        self
    }

    /// `WAITER_*` settings, after `WAITER_QUEUES` and `WAITER_TABLE_PREFIX`.
    pub fn settings(mut self, settings: &[(&'a str, &'a str)]) -> Self {
        self.settings.extend_from_slice(settings);
        self
    }

    /// For a test whose poller runs make many transactions (thousands of jobs removed 25 to a
    /// `TransactWriteItems`): on a backend with `Quirk::TransactionsCopyTables` (moto, whose every
    /// transaction item copies the whole table) the tables live on Amazon DynamoDB Local, behind
    /// a fault proxy of their own with the same seed and rate.
    pub fn for_many_transactions(mut self) -> Self {
        self.local_tables_for.push(Quirk::TransactionsCopyTables);
        self
    }

    /// For a test that measures the removals as AWS runs them (conditional PartiQL statements,
    /// issue 45): on a backend with `Quirk::NoPartiql` (moto, where the functions fall back to
    /// transactions) the tables live on Amazon DynamoDB Local.
    pub fn for_partiql(mut self) -> Self {
        self.local_tables_for.push(Quirk::NoPartiql);
        self
    }

    /// For a test whose guarantee rests on DynamoDB isolating simultaneous conditional writes
    /// to one item (leases, the rate ledger): on a backend with
    /// `Quirk::UnlockedConditionalWrites` (moto) the tables live on Amazon DynamoDB Local.
    pub fn for_concurrent_writes(mut self) -> Self {
        self.local_tables_for.push(Quirk::UnlockedConditionalWrites);
        self
    }

    /// A fault proxy in front of `upstream`, recording the calls for this deployment.
    async fn proxy_to(&self, upstream: &str, (seed, rate): (u64, f64)) -> FaultProxy {
        let proxy = FaultProxy::start(upstream, seed, rate).await;
        proxy.describe_deployment(self.queues, self.table_prefix);
        proxy
    }

    /// Starts the emulator (and the proxy) and creates the queues and tables.
    pub async fn start(self) -> Rig {
        let emu = Emulator::start().await;
        let local = match self.local_tables_for.iter().any(|q| emu.backend.has(*q)) {
            true => Some(DynamoLocal::start().await),
            false => None,
        };
        let local_ddb = match &local {
            Some(l) => Some(aws_sdk_dynamodb::Client::new(&sdk_config(&l.endpoint).await)),
            None => None,
        };
        let mut urls = Vec::new();
        for q in self.queues {
            urls.push(emu.create_queue(q).await);
            let table = format!("{}{q}", self.table_prefix);
            match &local_ddb {
                Some(ddb) => create_waiter_table(ddb, &table, IndexKind::Global).await,
                None => emu.create_table(&table).await,
            }
        }
        let joined = self.queues.join(",");
        let mut all: Vec<(&str, &str)> = vec![("WAITER_QUEUES", &joined)];
        if !self.table_prefix.is_empty() {
            all.push(("WAITER_TABLE_PREFIX", self.table_prefix));
        }
        all.extend_from_slice(&self.settings);
        let proxy = match self.proxy {
            Some(faults) => Some(self.proxy_to(&emu.endpoint, faults).await),
            None => None,
        };
        let mut env = match &proxy {
            Some(p) => emu.function_env_via(&p.endpoint, &all),
            None => emu.function_env(&all),
        };
        let tables = match local {
            Some(local) => {
                let table_proxy = match self.proxy {
                    Some(faults) => Some(self.proxy_to(&local.endpoint, faults).await),
                    None => None,
                };
                let endpoint = table_proxy.as_ref().map_or(&local.endpoint, |p| &p.endpoint).clone();
                env.push(("AWS_ENDPOINT_URL_DYNAMODB".into(), endpoint));
                Some((local, table_proxy))
            }
            None => None,
        };
        Rig {
            emu,
            proxy,
            urls,
            env,
            tables,
        }
    }
}

/// One queue, `orders`, with its table `orders`, behind a fault proxy: what the fault and crash
/// tests drive.
pub struct Proxied {
    pub emu: Emulator,
    pub proxy: FaultProxy,
    pub url: String,
    pub env: Env,
}

/// Starts a [`Proxied`] rig with the proxy's `seed` and fault `rate`, and `settings`.
pub async fn orders_via_proxy(seed: u64, rate: f64, settings: &[(&str, &str)]) -> Proxied {
    let Rig {
        emu,
        proxy,
        mut urls,
        env,
        ..
    } = Rig::builder(&["orders"])
        .proxy(seed, rate)
        .settings(settings)
        .start()
        .await;
    Proxied {
        emu,
        proxy: proxy.expect("built with a proxy"),
        url: urls.remove(0),
        env,
    }
}

pub struct Setup {
    pub emu: Emulator,
    pub enqueue: Function,
    pub poller: Function,
    pub urls: Vec<String>,
    pub env: crate::Env,
    /// Kept running while the functions use it.
    _proxy: Option<FaultProxy>,
}

/// Starts moto, creates the queues and their tables (`waiter-{queue}`), starts both functions
/// with `settings`. The functions reach the emulator through a fault proxy that injects
/// nothing: it records their calls for the IAM check (tests/iam/check_calls.py).
pub async fn setup(queues: &[&str], settings: &[(&str, &str)]) -> Setup {
    let Rig {
        emu, urls, env, proxy, ..
    } = Rig::builder(queues)
        .table_prefix("waiter-")
        .proxy(0, 0.0)
        .settings(settings)
        .start()
        .await;
    let enqueue = Function::start("enqueue", &env).await;
    let poller = Function::start("poller", &env).await;
    Setup {
        emu,
        enqueue,
        poller,
        urls,
        env,
        _proxy: proxy,
    }
}

impl Setup {
    pub async fn enqueue_ok(&mut self, req: Value) -> Value {
        self.enqueue.invoke_ok(&req).await
    }

    pub async fn poll(&mut self) -> Value {
        self.poller.invoke_ok(&json!({})).await
    }

    /// Runs the poller every `every` while collecting messages from queue `i`, until `expect`
    /// messages arrived or `within` passed.
    pub async fn poll_and_receive(
        &mut self,
        i: usize,
        expect: usize,
        every: Duration,
        within: Duration,
    ) -> Vec<crate::emulator::Received> {
        let until = std::time::Instant::now() + within;
        let mut got = Vec::new();
        while got.len() < expect && std::time::Instant::now() < until {
            self.poll().await;
            let url = self.urls[i].clone();
            got.extend(self.emu.receive_for(&url, every, expect - got.len()).await);
        }
        // Anything else that arrives shortly after is a duplicate worth seeing.
        let url = self.urls[i].clone();
        got.extend(
            self.emu
                .receive_for(&url, Duration::from_millis(1500), usize::MAX)
                .await,
        );
        got
    }

    pub async fn table_len(&self, queue: &str) -> usize {
        self.emu.job_count(&format!("waiter-{queue}")).await
    }
}

/// `Rig::make_all_due` through a given client (a `Setup`'s emulator).
pub async fn make_all_due(ddb: &aws_sdk_dynamodb::Client, table: &str, due: chrono::DateTime<chrono::Utc>) -> usize {
    use aws_sdk_dynamodb::types::AttributeValue;
    use futures::StreamExt;
    use waiter::aws::codec::{A_JOB_ID, A_PERFORM_AT, A_SCHEDULER};
    let mut items = crate::emulator::scan_all(ddb, table).await;
    items.retain(|i| i.contains_key(A_PERFORM_AT));
    let at = AttributeValue::N(waiter::time::format_epoch(due));
    futures::stream::iter(items.iter().map(|item| {
        let ddb = ddb.clone();
        let at = at.clone();
        async move {
            ddb.update_item()
                .table_name(table)
                .key(A_SCHEDULER, item[A_SCHEDULER].clone())
                .key(A_JOB_ID, item[A_JOB_ID].clone())
                .update_expression("SET #at = :at")
                .condition_expression("attribute_exists(#at)")
                .expression_attribute_names("#at", A_PERFORM_AT)
                .expression_attribute_values(":at", at)
                .send()
                .await
                .expect("UpdateItem perform_at")
        }
    }))
    .buffer_unordered(8)
    .count()
    .await
}

pub fn in_secs(s: f64) -> String {
    (chrono::Utc::now() + chrono::TimeDelta::milliseconds((s * 1000.0) as i64))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Asserts that every job of an `enqueue` batch's reply was stored (`scheduled`).
pub fn assert_all_scheduled(reply: &Value) {
    assert!(
        reply["results"]
            .as_array()
            .is_some_and(|r| r.iter().all(|j| j["status"] == "scheduled")),
        "{reply}"
    );
}

/// Sleeps until 100 ms after `due` (an `in_secs` time): a poller run started then finds the
/// herd due, however long enqueueing it took.
pub async fn sleep_until_just_after(due: &str) {
    let start = parse_time(due) + chrono::TimeDelta::milliseconds(100) - chrono::Utc::now();
    tokio::time::sleep(start.to_std().unwrap_or_default()).await;
}

/// Runs both poller groups once with nothing due, as a deployment's schedules do every minute:
/// the runs' first calls (queue URLs, the shard-count record, the leases, new connections) are
/// then behind them, so that in the run measured next the two groups start within `GATHER` of
/// each other even on a cold, loaded machine (a cold CI run once saw the second group's
/// partitions announce too late, and a default job took an urgent one's second).
pub async fn warm_two_groups(first: &mut Function, second: &mut Function) {
    let (g0, g1) = (json!({"group": 0, "groups": 2}), json!({"group": 1, "groups": 2}));
    let (a, b) = tokio::join!(first.invoke_ok(&g0), second.invoke_ok(&g1));
    assert_eq!(
        (a["dispatched"].as_u64(), b["dispatched"].as_u64()),
        (Some(0), Some(0)),
        "{a} {b}"
    );
}

/// Runs poller group 0 of 2 on `first` and group 1 on `second` at once, and asserts that they
/// dispatched `jobs` together and that each group had some. Returns both replies.
pub async fn run_two_groups(first: &mut Function, second: &mut Function, jobs: u64) -> (Value, Value) {
    let (g0, g1) = (json!({"group": 0, "groups": 2}), json!({"group": 1, "groups": 2}));
    let (a, b) = tokio::join!(first.invoke_ok(&g0), second.invoke_ok(&g1));
    assert_eq!(
        a["dispatched"].as_u64().unwrap_or(0) + b["dispatched"].as_u64().unwrap_or(0),
        jobs,
        "{a} {b}"
    );
    assert!(
        a["dispatched"].as_u64() > Some(0) && b["dispatched"].as_u64() > Some(0),
        "both groups had jobs: {a} {b}"
    );
    (a, b)
}

/// Runs `run` (poller invocations) while receiving up to `expect` messages from `url` for at most
/// `wait`, so that a message's receipt is when it became visible. Received after the run
/// instead, every message that became visible while the run was still removing what it sent
/// comes in one receipt: a run that outlasted a second of delays on a loaded machine made
/// messages of two booked seconds look like one, and a default job look as early as an urgent
/// one.
pub async fn receive_while<T>(
    emu: &Emulator,
    url: &str,
    wait: Duration,
    expect: usize,
    run: impl std::future::Future<Output = T>,
) -> (T, Vec<crate::emulator::Received>) {
    tokio::join!(run, emu.receive_for(url, wait, expect))
}

pub fn parse_time(s: &str) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(s)
        .expect("rfc3339")
        .with_timezone(&chrono::Utc)
}

/// The counts of a `stats` reply's histogram, bucket by bucket.
pub fn histogram_counts(stats: &Value) -> Vec<u64> {
    stats["histogram"]
        .as_array()
        .expect("histogram")
        .iter()
        .map(|b| b["count"].as_u64().expect("count"))
        .collect()
}

/// Starts function `name` with `settings` and asserts that it stops at start, its log naming
/// `variable` (the contract: a missing or invalid variable stops the function, naming it).
pub async fn assert_stops_at_start_naming(emu: &Emulator, name: &str, settings: &[(&str, &str)], variable: &str) {
    let mut f = Function::start(name, &emu.function_env(settings)).await;
    let status = f.wait_exit(Duration::from_secs(20)).await.expect("exits at start");
    assert!(!status.success(), "{name} exited successfully");
    assert!(
        f.log().contains(variable),
        "{name} log does not name {variable}:\n{}",
        f.log()
    );
}

/// A year with 2031's calendar (1 January a Wednesday, no 29 February), at least two years
/// ahead: tests written with dates in 2031 (weekdays, `2#1`, Berlin's winter offset) read
/// `future("2031-…")` and stay in the future whenever they run (issue 82).
pub fn future_year() -> i32 {
    use chrono::{Datelike, NaiveDate};
    let calendar =
        |y: i32| NaiveDate::from_ymd_opt(y, 1, 1).map(|d| (d.weekday(), NaiveDate::from_ymd_opt(y, 2, 29).is_some()));
    let from = chrono::Utc::now().year() + 2;
    (from..from + 40)
        .find(|y| calendar(*y) == calendar(2031))
        .unwrap_or(2031)
}

/// `text` with each `2031` read as `future_year()`.
pub fn future(text: &str) -> String {
    text.replace("2031", &future_year().to_string())
}

#[cfg(test)]
mod future_tests {
    use chrono::{Datelike, NaiveDate, Utc};

    #[test]
    fn the_future_year_has_2031s_calendar_and_is_two_years_ahead_at_least() {
        let y = super::future_year();
        assert!(y >= Utc::now().year() + 2, "{y}");
        let d = |y: i32, m: u32, day: u32| NaiveDate::from_ymd_opt(y, m, day).map(|d| d.weekday());
        assert_eq!(d(y, 1, 6), d(2031, 1, 6), "a Monday, as 6 January 2031");
        assert_eq!(d(y, 12, 31), d(2031, 12, 31));
        assert_eq!(
            super::future("at(2031-01-01T09:00:00)"),
            format!("at({y}-01-01T09:00:00)")
        );
    }
}
