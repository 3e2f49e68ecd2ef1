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
    assert_eq!(report.distributions.len(), 5);
    for d in &report.distributions {
        assert_eq!(d.missing, 0, "{d:?}");
        assert_eq!(d.early, 0, "{d:?}");
        assert_eq!(d.duplicates, 0, "{d:?}");
    }
    // Loose bounds that cannot flake on a loaded machine, but catch a broken alignment.
    assert!(report.distributions[0].p50_ms < 1000.0, "{:?}", report.distributions[0]);
}

#[tokio::test(flavor = "multi_thread")]
async fn cold_start_api_and_enqueue_benches_run() {
    let rows = e2e::bench::cold_start(1, Profile::Debug).await;
    assert_eq!(rows.len(), 4);
    for r in &rows {
        assert!(r.init_ms.is_finite() && r.init_ms > 0.0, "{r:?}");
        assert!(r.peak_rss_mib.is_finite() && r.peak_rss_mib > 0.0, "{r:?}");
    }
    let api = e2e::bench::api_efficiency(30, 2, 7, 1000, Profile::Debug).await;
    // One batch of up to 10 per shard's share of the jobs, as they fall by the shard rule.
    let mut per_shard = [0usize; 2];
    for i in 0..30 {
        per_shard[waiter::routing::shard_for(&format!("j{i}"), 2) as usize] += 1;
    }
    let batches: usize = per_shard.iter().map(|n| n.div_ceil(10)).sum();
    assert_eq!(api.calls["SendMessageBatch"], batches, "{api:?}");
    // 30 enqueues; (history on) each removal is the conditional update of the job into its
    // record, a shard's together in one BatchExecuteStatement at 1 write unit each (issue 45;
    // a lone one is a PutItem of its own), and no transaction at 2.
    let lone = per_shard.iter().filter(|n| **n == 1).count();
    assert_eq!(api.calls["PutItem"], 30 + lone, "{api:?}");
    assert_eq!(api.calls["BatchExecuteStatement/statements"], 30 - lone, "{api:?}");
    assert_eq!(
        api.calls["BatchExecuteStatement"],
        per_shard.iter().filter(|n| **n > 1).count(),
        "{api:?}"
    );
    assert_eq!(api.calls["TransactWriteItems"], 0, "{api:?}");
    assert!(api.ratio_to_floor >= 1.0 && api.ratio_to_floor < 1.5, "{api:?}");
    // Issue 45, items 1, 3 and 4: the unit model agrees with what DynamoDB reports for the
    // job's item. A job with a JSON body of 1000 bytes (an item over 1 KB as given) is stored
    // deflated in 1 KB, so it bills 1 unit a write: 2 table units (put and removal, each a
    // single write), and 2 on the index, which holds only the keys, priority and weight.
    assert_eq!(api.measured_put_delete_units, api.modelled_put_delete_units, "{api:?}");
    let cost = e2e::bench::job_cost(&api);
    assert_eq!(cost.body_bytes, 1000, "{cost:?}");
    assert!(cost.item_bytes <= 1024, "deflated: {cost:?}");
    let lone_share = lone as f64 / 30.0;
    assert!(
        (cost.table_write_units - 2.0).abs() < 1e-9,
        "lone removals bill as one write too: {lone_share} {cost:?}"
    );
    assert_eq!(cost.index_write_units, 2.0, "{cost:?}");
    // Issue 61: the pause check reads once a run and queue, and again only every 800 ms of
    // sending: a never-paused queue pays far less than a read unit a job for it.
    assert!(cost.pause_checks_per_run >= 1.0, "{cost:?}");
    assert!(cost.pause_check_read_units < 0.5, "{cost:?}");
    assert!(
        cost.on_demand_per_million > 0.0 && cost.provisioned_per_million < cost.on_demand_per_million,
        "{cost:?}"
    );
    // Issue 45, item 5: nothing per job at the default level; counts are in the summaries.
    assert!(api.log_bytes_per_job > 0.0, "the functions' logs were read: {api:?}");
    assert_eq!(api.job_lines_at_info, 0, "a log line per job at info: {api:?}");
    let t = e2e::bench::enqueue_throughput(100, Profile::Debug).await;
    assert!(t.jobs_per_s > 0.0);
    assert!(e2e::bench::binary_sizes(Profile::Debug).iter().all(|b| b.bytes > 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn throughput_bench_runs_on_dynamodb_local() {
    let r = e2e::bench::dispatch_throughput(200, 2, 2, Profile::Debug).await;
    assert!(r.poller_jobs_per_s > 0.0 && r.baseline_jobs_per_s > 0.0, "{r:?}");
    assert_eq!(r.run_ratios.len(), 2, "{r:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn latency_bound_throughput_bench_runs() {
    let row =
        e2e::throughput::latency_bound_throughput(300, 2, 5, e2e::throughput::TableBackend::InMemory, Profile::Debug)
            .await;
    println!("{}", e2e::throughput::table(std::slice::from_ref(&row)));
    assert_eq!((row.shards, row.jobs, row.latency_ms), (2, 300, 5));
    for figure in [
        row.jobs_per_s,
        row.baseline_jobs_per_s,
        row.ideal_jobs_per_s,
        row.rss_mb,
    ] {
        assert!(figure.is_finite() && figure > 0.0, "{row:?}");
    }
    assert!(row.cpu_ms_per_1000.is_finite() && row.cpu_ms_per_1000 >= 0.0, "{row:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn latency_bound_throughput_bench_runs_on_dynamodb_local() {
    let row = e2e::throughput::latency_bound_throughput(
        300,
        2,
        5,
        e2e::throughput::TableBackend::DynamodbLocal,
        Profile::Debug,
    )
    .await;
    assert_eq!(row.table, e2e::throughput::TableBackend::DynamodbLocal);
    assert!(row.jobs_per_s > 0.0 && row.baseline_jobs_per_s > 0.0, "{row:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn max_rate_bench_spreads_arrivals_and_reports_the_lateness() {
    let unlimited = e2e::throughput::rate_limited_herd(200, None, 5, Profile::Debug).await;
    let limited = e2e::throughput::rate_limited_herd(200, Some(50), 5, Profile::Debug).await;
    assert_eq!((unlimited.dispatched, limited.dispatched), (200, 200));
    // 200 at 50 a second: four arrival seconds at least, and the last about 3 s late.
    assert!(limited.arrival_seconds >= 4, "{limited:?}");
    assert!(limited.max_lateness_ms >= 2_000.0, "{limited:?}");
    assert!(
        unlimited.max_lateness_ms < limited.max_lateness_ms,
        "{unlimited:?} {limited:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn enqueue_batch_bench_runs() {
    let r =
        e2e::throughput::enqueue_batch_at_latency(200, 5, e2e::throughput::TableBackend::DynamodbLocal, Profile::Debug)
            .await;
    assert_eq!(r.jobs, 200);
    assert!(r.calls.get("PutItem").copied().unwrap_or(0) >= 200, "{r:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn herd_bench_drains_with_groups_none_early_or_twice() {
    let row = e2e::herd::herd(400, 4, 2, 5, Profile::Debug).await;
    println!("{}", row.line());
    assert_eq!(row.dispatched, 400, "{row:?}");
    assert_eq!((row.early, row.sent_twice), (0, 0), "{row:?}");
    assert!(row.lateness_p99_ms.is_finite() && row.cpu_ms_per_1000 >= 0.0, "{row:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn priority_bench_runs_and_counts_the_calls() {
    // A poller run of 1000 jobs: not beside the other suite's herds of pollers, which a
    // starved machine makes send twice (the SDK retries what timed out).
    let _machine = e2e::rig::alone().await;
    // 1000 jobs over 4 shards: every partition reads all of its own before it books.
    let row = e2e::ranked::backlog(1000, 4, 100, "priority", 30, 10, Profile::Debug).await;
    println!("{row:?}");
    assert!(row.dispatched > 0 && row.held_back > 0, "{row:?}");
    assert_eq!(
        row.urgent_dispatched, row.urgent,
        "every urgent one fits the run's horizon: {row:?}"
    );
    assert!(
        row.calls.get("PutItem").copied().unwrap_or(0) > 0,
        "the ledger: {row:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ledger_bench_runs_and_no_booking_fails_with_time_left() {
    let row = e2e::bench::ledger_contention(4, 5).await;
    println!("{}", row.line());
    assert_eq!((row.writers, row.bookings), (4, 20), "{row:?}");
    assert_eq!(row.failed, 0, "{row:?}");
    assert!(row.rounds_per_booking >= 1.0, "{row:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn trace_cost_bench_runs_and_the_header_adds_its_bytes_to_each_item() {
    let emu = e2e::Emulator::start().await;
    let rows = e2e::bench::trace_cost(&emu.dynamodb, &[100, 900]).await;
    assert_eq!(rows.len(), 2);
    for r in &rows {
        // The attribute's name and value, and item_size's byte of margin on a string.
        let added = "trace_header".len() + e2e::bench::LAMBDA_TRACE_HEADER.len() + 1;
        assert_eq!(r.item_bytes_with - r.item_bytes_without, added, "{r:?}");
    }
}

/// Issue 83: a tag's bytes (and `item_format`) go into the item, and a search by tag over a
/// few hundred stored jobs finds exactly the rare ones, page by page.
#[tokio::test(flavor = "multi_thread")]
async fn tags_benches_run_and_the_search_finds_every_rare_job() {
    let emu = e2e::Emulator::start().await;
    let rows = e2e::bench::tags_cost(&emu.dynamodb, &[100]).await;
    assert!(rows[0].item_bytes_tagged > rows[0].item_bytes_untagged, "{rows:?}");
    assert!(rows[0].search_read_units_per_1000 >= 1000.0, "{rows:?}");
    let r = e2e::bench::tag_search(400, Profile::Debug).await;
    assert_eq!(r.rare_found, 4, "every hundredth: {r:?}");
    assert!(r.common_first_page_scanned > 0, "{r:?}");
}

/// Issue 45, item 4: every codec measured gives each body back byte for byte (asserted inside),
/// and deflate, the one chosen, saves write units from 2 KB on.
#[test]
fn compression_bench_runs_and_deflate_saves_write_units() {
    let rows = e2e::bench::compression(2);
    assert_eq!(
        rows.len(),
        e2e::bench::COMPRESSION_SIZES.len() * e2e::bench::CODECS.len()
    );
    for r in rows.iter().filter(|r| r.codec == "deflate-6" && r.body_bytes >= 2048) {
        assert!(r.write_units_compressed < r.write_units_plain, "{r:?}");
    }
}

/// Issue 47: every occurrence is one send entry and one removal statement (the move), and the
/// move bills what the model says.
#[tokio::test(flavor = "multi_thread")]
async fn series_bench_counts_one_entry_and_one_statement_per_occurrence() {
    // One shard: the moves of a run go as one batch of statements, not lone writes.
    let r = e2e::bench::series_cost(4, 2, 1, Profile::Debug).await;
    assert_eq!(r.messages, 8, "{r:?}");
    assert_eq!(
        r.statements + r.transaction_items,
        8,
        "one conditional write per occurrence: {r:?}"
    );
    assert_eq!(
        r.measured_move_units,
        r.modelled_table_write_units + r.modelled_index_write_units,
        "{r:?}"
    );
}

/// Issue 60, defect 9: the catch-up bench walks a run's passes as the poller makes them (`all`
/// sends each missed occurrence and then the one on time; `one` leaves all but the latest).
#[test]
fn catch_up_bench_sends_each_missed_occurrence_in_order() {
    let c = e2e::bench::catch_up_cpu(200);
    assert_eq!((c.all_passes, c.one_skipped), (200, 198), "{c:?}");
}

/// Issue 61: the debounce bench drives replacing calls through the real function; each id's
/// last call is the one message that goes out, and a replacing call is one read and one
/// transaction of two items (the job's put and the lease item's check).
#[tokio::test(flavor = "multi_thread")]
async fn debounce_bench_counts_one_read_and_one_transaction_per_replacing_call() {
    let r = e2e::bench::debounce_cost(3, 2, Profile::Debug).await;
    assert_eq!((r.messages, r.messages_with_last_body), (3, 3), "{r:?}");
    let c = |op: &str| r.calls_per_replacing_call.get(op).copied().unwrap_or(0.0);
    assert_eq!(
        (
            c("BatchGetItem"),
            c("TransactWriteItems"),
            c("TransactWriteItems/items"),
            c("PutItem")
        ),
        (1.0, 1.0, 2.0, 0.0),
        "{r:?}"
    );
    assert!(r.on_demand_per_million_calls > 0.0, "{r:?}");
}

/// Issue 62: the console bench starts the CLI's console and times its pages.
#[tokio::test(flavor = "multi_thread")]
async fn console_bench_starts_the_console_and_times_a_page() {
    let r = e2e::bench::console_bench(1, Profile::Debug).await;
    assert!(
        r.start_ms > 0.0 && r.queues_page_ms > 0.0 && r.own_page_ms > 0.0,
        "{r:?}"
    );
}

/// Issue 72 through the real poller binary, on the in-memory table at 15 ms a call: 4 000 jobs
/// of one priority due in one second, at 1 000 a second over 16 shards, all go in one run, with
/// at most one ledger write per batch of ten beside two per partition. (Before the fix: 1 565
/// of 4 000 in 415 s, with 15 180 `PutItem`s and 8 801 `GetItem`s.) Counts, not timings: they hold on a loaded
/// machine.
#[tokio::test(flavor = "multi_thread")]
async fn a_herd_under_the_rate_goes_in_one_run_with_a_ledger_write_per_batch_at_most() {
    let _machine = e2e::rig::alone().await;
    let (jobs, shards) = (4_000, 16);
    let row = e2e::ranked::backlog(jobs, shards, 1_000, "time", 1, 0, Profile::Debug).await;
    println!("{row:?}");
    assert_eq!(row.dispatched, jobs as u64, "{row:?}");
    let calls = |op: &str| row.calls.get(op).copied().unwrap_or(0);
    let (batches, partitions) = (jobs / 10, shards as usize);
    // The ledger's writes; the rest of the run writes with other calls.
    assert!(calls("PutItem") <= batches + 2 * partitions, "{row:?}");
    // The ledger's reads (a partition that has read its jobs waits, 100 ms a round, for the
    // ones still reading) and the pause checks (one per 800 ms of sending).
    assert!(calls("GetItem") <= 4 * partitions, "{row:?}");
}
