//! A tiny run of the benchmark code, so `make bench` cannot rot unnoticed.

use e2e::bench::{precision, PrecisionOptions};
use e2e::runtime_api::Profile;

#[tokio::test(flavor = "multi_thread")]
async fn precision_bench_runs_and_nothing_is_early_or_lost() {
    let opts = PrecisionOptions {
        jobs: 20,
        direct_jobs: 5,
        fifo_jobs: 10,
        fifo_interval: 3,
        spread_s: 5.0,
        profile: Profile::Debug,
        seed: 1,
    };
    let report = precision(&opts).await;
    println!("{}", report.table());
    assert_eq!(report.distributions.len(), 4);
    for d in &report.distributions {
        assert_eq!(d.missing, 0, "{d:?}");
        assert_eq!(d.early, 0, "{d:?}");
        assert_eq!(d.duplicates, 0, "{d:?}");
    }
    // Loose bounds that cannot flake on a loaded machine, but catch a broken alignment.
    assert!(report.distributions[0].p50_ms < 1000.0, "{:?}", report.distributions[0]);
}
