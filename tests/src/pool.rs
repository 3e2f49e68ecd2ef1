//! Emulators shared by the tests of a pass. Starting one is most of what a short test costs:
//! LocalStack takes about 8 s of CPU to its first answer and its DynamoDB Local JVM 2 s more,
//! moto 1 s (measured here, 2 cores), and a pass starts one per test. So `make test` starts a few
//! per backend for the whole pass (the `emulators` binary), and each test leases one region of
//! one of them: moto and LocalStack keep queues and tables apart by region, as AWS does, so two
//! tests in two regions of one emulator never see each other's queues, messages, tables or items.
//!
//! A lease is a lock file per emulator and region, held while the test's [`crate::Emulator`]
//! lives (the kernel drops it with the process, however the test ends). The test that takes a
//! region next first deletes whatever queues and tables an earlier test left there. Without
//! [`ENV`] (a test binary run alone), every test starts its own emulator, as before.

use std::fs::File;
use std::time::Duration;

/// Where a pass lists its shared emulators' endpoints, comma-separated (set by the `emulators`
/// binary for the command it runs).
pub const ENV: &str = "E2E_EMULATORS";

/// Regions that moto 5.2.5 and localstack-core 2026.3.0 both serve and keep apart (a region
/// either does not know is refused or falls back to another one's resources). Sixteen leases an
/// emulator: more than a pass runs tests at once.
pub const REGIONS: [&str; 16] = [
    "us-east-1",
    "us-east-2",
    "us-west-1",
    "us-west-2",
    "eu-west-1",
    "eu-west-2",
    "eu-west-3",
    "eu-central-1",
    "eu-north-1",
    "ap-southeast-1",
    "ap-southeast-2",
    "ap-northeast-1",
    "ap-northeast-2",
    "ap-south-1",
    "ca-central-1",
    "sa-east-1",
];

/// One region of one shared emulator, held until dropped.
#[derive(Debug)]
pub struct Lease {
    _lock: File,
    pub endpoint: String,
    pub region: &'static str,
}

/// The shared emulators' endpoints, if the pass started any.
pub fn endpoints() -> Vec<String> {
    std::env::var(ENV)
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A free region of a shared emulator, waiting while all are leased; `None` when the pass
/// shares none. Regions are taken in order, each across the emulators, so that the tests at
/// any moment spread over them.
pub async fn lease() -> Option<Lease> {
    let endpoints = endpoints();
    if endpoints.is_empty() {
        return None;
    }
    let dir = crate::workspace_root().join("target/e2e-leases");
    let lease = tokio::task::spawn_blocking(move || loop {
        for region in REGIONS {
            for endpoint in &endpoints {
                if let Some(lock) = try_lock(&dir, endpoint, region) {
                    return Lease {
                        _lock: lock,
                        endpoint: endpoint.clone(),
                        region,
                    };
                }
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    })
    .await
    .expect("the lease's thread");
    Some(lease)
}

/// The lock of `region` on `endpoint`, if no other test holds it.
fn try_lock(dir: &std::path::Path, endpoint: &str, region: &str) -> Option<File> {
    let name: String = endpoint
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let path = dir.join(format!("{name}-{region}.lock"));
    match crate::turn::flock(&path, libc::LOCK_EX | libc::LOCK_NB) {
        Ok(lock) => Some(lock),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => None,
        Err(e) => panic!("{}: {e}", path.display()),
    }
}
