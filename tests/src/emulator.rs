//! The local AWS backend of a test: moto (the default) or LocalStack (`E2E_BACKEND=localstack`),
//! started on a free port, ready when its health endpoint answers, stopped on drop (exactly the
//! process it started: moto by SIGKILL, LocalStack by SIGTERM, then SIGKILL to any process it
//! started that outlived it, such as its DynamoDB Local JVM).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, LocalSecondaryIndex, Projection,
    ProjectionType, ScalarAttributeType,
};

pub use crate::receive::{delete_received, Received, Sends};
use crate::{free_port, workspace_root};

use waiter::aws::codec::INDEX_NAME as INDEX;

/// Which emulator the e2e suite runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Moto,
    LocalStack,
}

impl Backend {
    /// From `E2E_BACKEND` (`moto`, the default, or `localstack`).
    pub fn current() -> Self {
        match std::env::var("E2E_BACKEND").as_deref() {
            Ok("localstack") => Backend::LocalStack,
            Ok("moto") | Ok("") | Err(_) => Backend::Moto,
            Ok(other) => panic!("E2E_BACKEND={other:?}: expected moto or localstack"),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Backend::Moto => "moto",
            Backend::LocalStack => "localstack",
        }
    }
}

/// How a test table's `scheduler-perform_at-index` is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexKind {
    /// As the stacks create it: a GSI projecting the keys and `INDEX_INCLUDED_ATTRIBUTES`.
    Global,
    /// A GSI projecting every attribute: the seed's, and tables adopted from it.
    GlobalAll,
    /// An LSI under the index's name, projecting every attribute.
    Local,
}

/// For the DynamoDB Local JVM each LocalStack instance starts (one per test run alone, or a few
/// per pass, `crate::pool`) and for the tests' own ([`crate::DynamoLocal`]): the client compiler
/// only and the serial collector. Measured here, LocalStack's answered its first call after 2.6 s
/// of CPU instead of 5.1 s; an instance serves a test or a pass of short tests, too little for the
/// optimising compiler to pay back its own CPU. (Not under `make bench`, whose rows measure
/// throughput: [`crate::dynamo_local::measure_throughput`].)
pub(crate) const SHORT_LIVED_JVM: [&str; 2] = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"];

/// The region a test's clients and functions use on an emulator of their own.
pub const DEFAULT_REGION: &str = "us-east-1";

/// A running emulator, of the test's own or a region of one the pass shares
/// ([`crate::pool`]). Dropping it kills exactly the process it started, or gives the region back.
pub struct Emulator {
    child: Option<Child>,
    _lease: Option<crate::pool::Lease>,
    /// The test's turn on the machine ([`crate::turn`]), taken before the emulator starts (none
    /// for an emulator a pass shares, whose tests take their own).
    _turn: Option<Arc<crate::turn::Turn>>,
    pub backend: Backend,
    pub endpoint: String,
    /// The region its queues and tables live in (the clients' and the functions' region).
    pub region: String,
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
}

/// Environment for a function process: the emulator's endpoint plus `WAITER_*` settings.
pub type Env = Vec<(String, String)>;

fn moto_server() -> PathBuf {
    if let Ok(p) = std::env::var("MOTO_SERVER") {
        return PathBuf::from(p);
    }
    let p = workspace_root().join(".venv/bin/moto_server");
    assert!(
        p.exists(),
        "moto_server not found at {}: run `make venv` (make test does) or set MOTO_SERVER",
        p.display()
    );
    p
}

impl Emulator {
    /// A region of one of the pass's shared emulators, emptied of what an earlier test left in
    /// it, or else an emulator of the test's own (`E2E_BACKEND`).
    pub async fn start() -> Self {
        let backend = Backend::current();
        let turn = crate::turn::shared().await;
        match crate::pool::lease().await {
            Some(lease) => Self::leased(backend, lease, turn).await,
            None => Self::start_process(backend, Some(turn)).await,
        }
    }

    async fn leased(backend: Backend, lease: crate::pool::Lease, turn: Arc<crate::turn::Turn>) -> Self {
        let (endpoint, region) = (lease.endpoint.clone(), lease.region.to_owned());
        let emulator = Emulator {
            child: None,
            _lease: Some(lease),
            _turn: Some(turn),
            backend,
            dynamodb: aws_sdk_dynamodb::Client::new(&sdk_config_in(&endpoint, &region).await),
            sqs: aws_sdk_sqs::Client::new(&sdk_config_in(&endpoint, &region).await),
            endpoint,
            region,
        };
        emulator.empty_region().await;
        emulator
    }

    /// Deletes every queue and table of this emulator's region: what an earlier lease left.
    async fn empty_region(&self) {
        let queues = self.sqs.list_queues().send().await.expect("ListQueues");
        for url in queues.queue_urls() {
            self.sqs
                .delete_queue()
                .queue_url(url)
                .send()
                .await
                .expect("DeleteQueue");
        }
        let tables: Vec<String> = self
            .dynamodb
            .list_tables()
            .into_paginator()
            .items()
            .send()
            .collect::<Result<_, _>>()
            .await
            .expect("ListTables");
        for table in tables {
            self.dynamodb
                .delete_table()
                .table_name(table)
                .send()
                .await
                .expect("DeleteTable");
        }
    }

    /// An emulator for a pass's tests to share (the `emulators` binary): it takes no turn of its
    /// own, the tests that lease it do.
    pub async fn start_for_pass(backend: Backend) -> Self {
        Self::start_process(backend, None).await
    }

    /// An emulator process of the test's own (or the pass's), on a free port.
    async fn start_process(backend: Backend, turn: Option<Arc<crate::turn::Turn>>) -> Self {
        let port = free_port();
        let log_dir = workspace_root().join("target/e2e-logs");
        std::fs::create_dir_all(&log_dir).expect("create log dir");
        let log_path = log_dir.join(format!("{}-{port}.log", backend.name()));
        let log = std::fs::File::create(&log_path).expect("create emulator log");
        let (mut command, health) = match backend {
            Backend::Moto => {
                let mut c = Command::new(moto_server());
                c.args(["-H", "127.0.0.1", "-p", &port.to_string()]);
                (c, "/moto-api/")
            }
            Backend::LocalStack => {
                // Its own filesystem root per instance (sharing the installed lib), so that
                // instances of parallel tests never share state.
                let fs = workspace_root().join(format!("target/e2e-localstack/{port}"));
                let _ = std::fs::remove_dir_all(&fs);
                let mut c = Command::new("bash");
                c.arg(workspace_root().join("scripts/localstack.sh"))
                    .arg("run")
                    .env("LOCALSTACK_PORT", port.to_string())
                    .env("LOCALSTACK_FILESYSTEM_ROOT", &fs)
                    .env("JAVA_TOOL_OPTIONS", SHORT_LIVED_JVM.join(" "));
                (c, "/_localstack/health")
            }
        };
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone().expect("clone log handle")))
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", backend.name()));
        let endpoint = format!("http://127.0.0.1:{port}");
        let mut emulator = Emulator {
            child: Some(child),
            _lease: None,
            _turn: turn,
            backend,
            endpoint: endpoint.clone(),
            region: DEFAULT_REGION.to_owned(),
            dynamodb: aws_sdk_dynamodb::Client::new(&sdk_config(&endpoint).await),
            sqs: aws_sdk_sqs::Client::new(&sdk_config(&endpoint).await),
        };
        let http = reqwest::Client::new();
        let started = Instant::now();
        loop {
            if let Some(Ok(Some(status))) = emulator.child.as_mut().map(Child::try_wait) {
                let tail = std::fs::read_to_string(&log_path).unwrap_or_default();
                let tail: String = tail
                    .lines()
                    .rev()
                    .take(15)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect::<Vec<_>>()
                    .join("\n");
                panic!(
                    "{} exited before it was ready ({status}); log {}:\n{tail}",
                    backend.name(),
                    log_path.display()
                );
            }
            if http
                .get(format!("{endpoint}{health}"))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success())
            {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "{} not ready on port {port} after 120 s; log {}",
                backend.name(),
                log_path.display()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        emulator
    }

    /// The environment every function process gets: endpoint, region, dummy credentials.
    pub fn function_env(&self, waiter: &[(&str, &str)]) -> Env {
        function_env_at(&self.endpoint, &self.region, waiter)
    }

    /// The same environment, but reaching AWS through `endpoint` (the fault proxy).
    pub fn function_env_via(&self, endpoint: &str, waiter: &[(&str, &str)]) -> Env {
        let mut env = self.function_env(waiter);
        for (k, v) in env.iter_mut() {
            if k == "AWS_ENDPOINT_URL" {
                endpoint.clone_into(v);
            }
        }
        env
    }

    /// Visible, delayed and in-flight message counts of a queue, by attribute name.
    pub async fn queue_counts(&self, url: &str) -> std::collections::HashMap<String, usize> {
        use aws_sdk_sqs::types::QueueAttributeName as A;
        self.sqs
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(A::ApproximateNumberOfMessages)
            .attribute_names(A::ApproximateNumberOfMessagesDelayed)
            .attribute_names(A::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await
            .expect("GetQueueAttributes")
            .attributes
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k.as_str().to_owned(), v.parse().unwrap_or(0)))
            .collect()
    }

    /// Creates a queue; returns its URL.
    pub async fn create_queue(&self, name: &str) -> String {
        let mut req = self.sqs.create_queue().queue_name(name);
        if name.ends_with(".fifo") {
            req = req.attributes(aws_sdk_sqs::types::QueueAttributeName::FifoQueue, "true");
        }
        req.send().await.expect("CreateQueue").queue_url.expect("queue url")
    }

    /// Creates a table with the contract's schema: keys `scheduler`/`job_id`, GSI
    /// `scheduler-perform_at-index` on `scheduler`/`perform_at` projecting all attributes.
    pub async fn create_table(&self, name: &str) {
        self.create_table_with(name, IndexKind::Global).await
    }

    /// The same schema with the index as a GSI or, as older deployments have it, an LSI.
    pub async fn create_table_with(&self, name: &str, kind: IndexKind) {
        create_waiter_table(&self.dynamodb, name, kind).await
    }
}

/// A function process's environment reaching AWS at `endpoint` in `region`: dummy credentials,
/// then `waiter` (later entries win).
pub fn function_env_at(endpoint: &str, region: &str, waiter: &[(&str, &str)]) -> Env {
    let mut env: Env = [
        ("AWS_ENDPOINT_URL", endpoint),
        ("AWS_REGION", region),
        // Lambda sets both; botocore reads only the second.
        ("AWS_DEFAULT_REGION", region),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("RUST_LOG", "info"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    env.extend(waiter.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    env
}

/// Creates a table with the contract's schema on any DynamoDB endpoint.
pub async fn create_waiter_table(dynamodb: &aws_sdk_dynamodb::Client, name: &str, kind: IndexKind) {
    {
        let attr = |n: &str, t| {
            AttributeDefinition::builder()
                .attribute_name(n)
                .attribute_type(t)
                .build()
                .expect("attr")
        };
        let key = |n: &str, t| {
            KeySchemaElement::builder()
                .attribute_name(n)
                .key_type(t)
                .build()
                .expect("key")
        };
        let req = dynamodb
            .create_table()
            .table_name(name)
            .billing_mode(BillingMode::PayPerRequest)
            .attribute_definitions(attr("scheduler", ScalarAttributeType::S))
            .attribute_definitions(attr("job_id", ScalarAttributeType::S))
            .attribute_definitions(attr("perform_at", ScalarAttributeType::N))
            .key_schema(key("scheduler", KeyType::Hash))
            .key_schema(key("job_id", KeyType::Range));
        let index_keys = Some(vec![key("scheduler", KeyType::Hash), key("perform_at", KeyType::Range)]);
        let all = Projection::builder().projection_type(ProjectionType::All).build();
        let narrow = Projection::builder()
            .projection_type(ProjectionType::Include)
            .set_non_key_attributes(Some(
                waiter::aws::codec::INDEX_INCLUDED_ATTRIBUTES
                    .iter()
                    .map(|a| a.to_string())
                    .collect(),
            ))
            .build();
        let gsi = |projection| {
            GlobalSecondaryIndex::builder()
                .index_name(INDEX)
                .set_key_schema(index_keys.clone())
                .projection(projection)
                .build()
                .expect("gsi")
        };
        let req = match kind {
            IndexKind::Global => req.global_secondary_indexes(gsi(narrow)),
            IndexKind::GlobalAll => req.global_secondary_indexes(gsi(all)),
            IndexKind::Local => req.local_secondary_indexes(
                LocalSecondaryIndex::builder()
                    .index_name(INDEX)
                    .set_key_schema(index_keys)
                    .projection(all)
                    .build()
                    .expect("lsi"),
            ),
        };
        req.send().await.expect("CreateTable");
    }
}

impl Emulator {
    /// All items in a table (scan), for assertions.
    /// The table's job items: stored and parked jobs (lease, meta and history items have no
    /// `perform_at`).
    pub async fn stored_jobs(
        &self,
        table: &str,
    ) -> Vec<std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>> {
        let mut items = self.scan(table).await;
        items.retain(|i| i.contains_key(waiter::aws::codec::A_PERFORM_AT));
        items
    }

    /// How many job items the table holds (see `stored_jobs`).
    pub async fn job_count(&self, table: &str) -> usize {
        self.stored_jobs(table).await.len()
    }

    pub async fn scan(
        &self,
        table: &str,
    ) -> Vec<std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>> {
        scan_all(&self.dynamodb, table).await
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        // A leased region goes back with the lease; the emulator is the pass's.
        let Some(child) = self.child.as_mut() else { return };
        if self.backend == Backend::LocalStack {
            // SIGKILL, not SIGTERM: an instance's state lives in its own filesystem root and
            // nothing of it is kept, and a graceful stop took 1–6 s per test (about 40 of them in
            // a row on 2 test threads). Its DynamoDB Local JVM runs in a session of its own, so
            // the processes below it are noted first and killed with it.
            let children = descendants(child.id());
            let _ = child.kill();
            for (pid, cmdline) in children {
                if std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|now| now == cmdline) {
                    let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
                }
            }
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Every item of `table`, all pages (for assertions and test setups).
pub async fn scan_all(
    dynamodb: &aws_sdk_dynamodb::Client,
    table: &str,
) -> Vec<std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>> {
    dynamodb
        .scan()
        .table_name(table)
        .into_paginator()
        .items()
        .send()
        .collect::<Result<Vec<_>, _>>()
        .await
        .expect("Scan")
}

/// Every process below `pid`, with its command line, from /proc.
fn descendants(pid: u32) -> Vec<(u32, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![pid];
    while let Some(p) = stack.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for child in children.split_whitespace().filter_map(|c| c.parse::<u32>().ok()) {
                if let Ok(cmdline) = std::fs::read(format!("/proc/{child}/cmdline")) {
                    out.push((child, cmdline));
                    stack.push(child);
                }
            }
        }
    }
    out
}

/// An SDK config for `endpoint` in [`DEFAULT_REGION`] (an emulator of the test's own, DynamoDB
/// Local, watch).
pub async fn sdk_config(endpoint: &str) -> aws_config::SdkConfig {
    sdk_config_in(endpoint, DEFAULT_REGION).await
}

/// An SDK config for `endpoint` in `region`, with dummy credentials.
pub async fn sdk_config_in(endpoint: &str, region: &str) -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(waiter::aws::http_client())
        .endpoint_url(endpoint)
        .region(aws_config::Region::new(region.to_owned()))
        .credentials_provider(aws_sdk_sqs::config::Credentials::new("test", "test", None, None, "e2e"))
        .load()
        .await
}
