//! Test harness for sqs-waiter's end-to-end tests: a moto server we start and stop, a minimal
//! Lambda Runtime API that drives the real `enqueue` and `poller` binaries, and SDK helpers.

pub mod baseline;
pub mod bench;
pub mod dynamo_local;
pub mod emulator;
pub mod fixtures;
pub mod herd;
pub mod iam_calls;
pub mod mem_table;
pub mod meter;
pub mod pool;
pub mod proxy;
pub mod quirks;
pub mod ranked;
pub mod receive;
pub mod rig;
pub mod runtime_api;
pub mod sqs_sink;
pub mod stages;
pub mod throughput;
pub mod tls_front;
pub mod turn;
pub mod watch;
pub mod webdriver;

use std::path::PathBuf;

pub use dynamo_local::DynamoLocal;
pub use emulator::{Emulator, Env};
pub use runtime_api::{Function, LambdaError};
pub use watch::Watch;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// A function log's JSON lines (tracing's JSON and EMF metrics), other lines skipped.
pub fn json_lines(log: &str) -> Vec<serde_json::Value> {
    log.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// A free TCP port on loopback (the OS picks; there is a small race until it is bound again).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("bind an ephemeral port")
}

/// Serves `app` on a free loopback port: its address and the server task (abort it to stop).
pub async fn serve_local(app: axum::Router) -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    let addr = listener.local_addr().expect("local address");
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, server)
}

/// Parses an RFC 3339 time as the functions reply with it.
pub fn parse_rfc3339(s: &str) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(s)
        .expect("rfc3339 time")
        .with_timezone(&chrono::Utc)
}

/// `n` distinct queue names of SQS's longest, 80 characters (`q…q000000`, `q…q000001`, …): the
/// size the stacks' limits are stated for.
pub fn longest_queue_names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{}{i:06}", "q".repeat(74))).collect()
}
