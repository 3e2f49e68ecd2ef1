//! Cold start and binary size.

use std::time::Instant;

use serde::Serialize;
use serde_json::json;

use crate::runtime_api::{binary_path, Profile};
use crate::{Emulator, Function};

use super::*;

#[derive(Debug, Clone, Serialize)]
pub struct ColdStart {
    pub function: String,
    pub runs: usize,
    /// Process start to first `GET /runtime/invocation/next`, median.
    pub init_ms: f64,
    /// Peak RSS after init and one invocation, median.
    pub peak_rss_mib: f64,
    /// The first invocation's duration, median.
    pub first_invoke_ms: f64,
}

/// Cold start of the release binaries and of the Python + boto3 peer, on the same Runtime API
/// stand-in and the same emulator. Each run is a fresh process doing one stored enqueue.
pub async fn cold_start(runs: usize, profile: Profile) -> Vec<ColdStart> {
    let emu = Emulator::start().await;
    emu.create_queue("orders").await;
    emu.create_table("orders").await;
    let env = emu.function_env(&[("WAITER_QUEUES", "orders"), ("RUST_LOG", "warn")]);
    // The allow-list the CDK construct ships in a layer past Lambda's 4 KB of environment: 100
    // names of 80 characters and `orders`, read from a file at start (WAITER_QUEUES_FILE).
    let list = output_dir().join("allow-list-101");
    let mut names = crate::longest_queue_names(100);
    names.push("orders".into());
    std::fs::write(&list, names.join("\n") + "\n").expect("write the list");
    let list = list.to_string_lossy().into_owned();
    let file_env = emu.function_env(&[("WAITER_QUEUES_FILE", list.as_str()), ("RUST_LOG", "warn")]);
    let python = crate::workspace_root().join(".venv/bin/python");
    let peer = crate::workspace_root().join("tests/peer/python_enqueue.py");
    let peer = peer.to_string_lossy().into_owned();
    let mut out = Vec::new();
    for name in [
        "enqueue",
        "enqueue, 101 queues from a file",
        "poller",
        "python-boto3 enqueue",
    ] {
        let (mut init, mut rss, mut first) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..runs {
            let mut f = match name {
                "python-boto3 enqueue" => {
                    Function::start_command(python.clone(), &[peer.as_str()], "python-peer", &env).await
                }
                "enqueue, 101 queues from a file" => {
                    Function::start_binary(binary_path("enqueue", profile), "enqueue", &file_env).await
                }
                bin => Function::start_binary(binary_path(bin, profile), bin, &env).await,
            };
            let payload = if name == "poller" {
                json!({})
            } else {
                json!({"queue": "orders", "message_body": "cold", "delay_seconds": 3600, "job_id": format!("cold-{name}-{i}").replace([' ', ','], "-")})
            };
            let t = Instant::now();
            let reply = f.invoke(&payload).await;
            first.push(t.elapsed().as_secs_f64() * 1e3);
            assert!(reply.is_ok(), "{name}: {reply:?}\n{}", f.log());
            init.push(f.init_duration().map_or(f64::NAN, |d| d.as_secs_f64() * 1e3));
            rss.push(peak_rss_mib(f.pid()));
        }
        out.push(ColdStart {
            function: name.into(),
            runs,
            init_ms: median(init),
            peak_rss_mib: median(rss),
            first_invoke_ms: median(first),
        });
    }
    out
}

#[derive(Debug, Clone, Serialize)]
pub struct BinarySize {
    pub binary: String,
    pub bytes: u64,
}

pub fn binary_sizes(profile: Profile) -> Vec<BinarySize> {
    ["enqueue", "poller"]
        .iter()
        .map(|b| BinarySize {
            binary: binary_path(b, profile).display().to_string(),
            bytes: std::fs::metadata(binary_path(b, profile)).map(|m| m.len()).unwrap_or(0),
        })
        .collect()
}
