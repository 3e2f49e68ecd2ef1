//! `make bench`: prints figures and writes them as JSON under target/bench/.
//!
//! Usage: bench precision [--quick] [--release]

use e2e::bench::{precision, write_json, PrecisionOptions};
use e2e::runtime_api::Profile;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let profile = if args.iter().any(|a| a == "--release") {
        Profile::Release
    } else {
        Profile::Debug
    };
    let what = args
        .iter()
        .find(|a| !a.starts_with("--"))
        .map(String::as_str)
        .unwrap_or("precision");
    match what {
        "precision" => {
            let opts = if quick {
                PrecisionOptions {
                    jobs: 200,
                    direct_jobs: 50,
                    fifo_jobs: 100,
                    fifo_interval: 10,
                    spread_s: 20.0,
                    profile,
                    seed: 7,
                }
            } else {
                PrecisionOptions {
                    jobs: 600,
                    direct_jobs: 200,
                    fifo_jobs: 300,
                    fifo_interval: 60,
                    spread_s: 40.0,
                    profile,
                    seed: 7,
                }
            };
            let report = precision(&opts).await;
            print!("{}", report.table());
            println!("written to {}", write_json("precision.json", &report).display());
        }
        other => {
            eprintln!("unknown benchmark {other:?}; known: precision");
            std::process::exit(2);
        }
    }
}
