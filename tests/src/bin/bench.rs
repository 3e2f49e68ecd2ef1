//! `make bench` / `make bench-quick`: prints figures and writes them as JSON (and the lateness
//! chart as SVG) under target/bench/. Every figure names its backend and machine.
//! `bench --help` lists the sections.

use e2e::bench::*;
use e2e::runtime_api::Profile;

/// Which figures to produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Section {
    /// Every section below except `dispatch-moto`.
    All,
    /// Lateness of stored, direct and FIFO jobs on moto, with its chart.
    Precision,
    /// Dispatch throughput on DynamoDB Local and the in-memory table (BENCH_LATENCY_MS,
    /// BENCH_THROUGHPUT_ROWS, BENCH_THROUGHPUT_ROUNDS, BENCH_HISTORY_DAYS).
    Throughput,
    /// `WAITER_MAX_RATE`'s spread of a herd of jobs due at one instant.
    MaxRate,
    /// Priority under `WAITER_MAX_RATE`: what one run reads, books and sends of a held-back
    /// backlog (20 000 jobs with --quick, else 100 000).
    Priority,
    /// Contention on the rate ledger: 1, 4, 8 and 16 writers booking one queue at once on
    /// DynamoDB Local.
    Ledger,
    /// A herd of overdue jobs drained by poller groups at once (BENCH_HERD_JOBS).
    Herd,
    /// One 1000-job enqueue request at the bench's per-call latency.
    EnqueueLatency,
    /// The dispatch comparison on moto alone (BENCH_THROUGHPUT_JOBS).
    DispatchMoto,
    /// Cold start and binary sizes.
    Coldstart,
    /// AWS calls per operation for a batch of long-delay jobs.
    Api,
    /// Enqueue throughput in batches of 100.
    Enqueue,
    /// Write units a stored trace header and tags add per job, on DynamoDB Local, and what a
    /// search by tag reads.
    TraceCost,
    /// Pure-Rust codecs on JSON bodies of 1–64 KB: write units saved and CPU per body.
    Compression,
    /// What one occurrence of a series costs: calls at the proxy, the move's units.
    Series,
    /// The CPU of catching a series up: a run's passes over a `* * * * *` series far behind.
    CatchUp,
    /// What a debounced enqueue (`on_duplicate: replace`) costs: calls, units and dollars.
    Debounce,
    /// The web console's start and its page time beside the function's, and a search by tag
    /// over 100 000 stored jobs.
    Console,
}

/// Prints sqs-waiter's figures and writes them as JSON (and the lateness chart as SVG) under
/// target/bench/. Every figure names its backend and machine.
#[derive(Debug, clap::Parser)]
#[command(name = "bench")]
struct Args {
    /// The section to run.
    #[arg(value_enum, default_value = "all")]
    section: Section,
    /// Short runs with fewer jobs (`make bench-quick`).
    #[arg(long)]
    quick: bool,
    /// Drive the release binaries (`cargo build --release` first) instead of the debug ones.
    #[arg(long)]
    release: bool,
}

#[tokio::main]
async fn main() {
    let args = <Args as clap::Parser>::parse();
    // The rows measure DynamoDB Local's throughput: its JVM keeps the optimising compiler.
    e2e::dynamo_local::measure_throughput();
    let quick = args.quick;
    let profile = if args.release { Profile::Release } else { Profile::Debug };
    let what = match args.section {
        Section::All => "all",
        Section::Precision => "precision",
        Section::Throughput => "throughput",
        Section::MaxRate => "max-rate",
        Section::Priority => "priority",
        Section::Ledger => "ledger",
        Section::Herd => "herd",
        Section::EnqueueLatency => "enqueue-latency",
        Section::DispatchMoto => "dispatch-moto",
        Section::Coldstart => "coldstart",
        Section::Api => "api",
        Section::Enqueue => "enqueue",
        Section::TraceCost => "trace-cost",
        Section::Compression => "compression",
        Section::Series => "series",
        Section::CatchUp => "catch-up",
        Section::Debounce => "debounce",
        Section::Console => "console",
    };
    let all = what == "all";
    println!(
        "machine: {}; backend: moto (embedded emulator) unless said otherwise\n",
        machine()
    );

    if all || what == "precision" {
        let opts = if quick {
            PrecisionOptions {
                jobs: 150,
                direct_jobs: 30,
                fifo_jobs: 60,
                fifo_interval: 5,
                spread_s: 10.0,
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
        let svg = output_dir().join("lateness.svg");
        match lateness_chart(&report, &svg) {
            Ok(()) => println!("chart: {}", svg.display()),
            Err(e) => println!("chart failed: {e}"),
        }
        println!("written to {}\n", write_json("precision.json", &report).display());
    }
    if all || what == "throughput" {
        let latency_ms = match std::env::var("BENCH_LATENCY_MS") {
            Ok(n) => n
                .parse()
                .expect("BENCH_LATENCY_MS must be a whole number of milliseconds"),
            Err(_) => 15,
        };
        use e2e::throughput::TableBackend::{DynamodbLocal, InMemory};
        // The 16-shard rows of the full run are the 100 000-job overdue backlog; the in-memory
        // 16-shard rows at 20 000, 100 000 and 200 000 jobs show whether memory grows with the
        // backlog.
        let sizes: Vec<(e2e::throughput::TableBackend, u32, usize)> = if quick {
            vec![
                (DynamodbLocal, 1, 1000),
                (DynamodbLocal, 4, 2000),
                (DynamodbLocal, 16, 4000),
                (InMemory, 16, 4000),
            ]
        } else {
            vec![
                (DynamodbLocal, 1, 10_000),
                (DynamodbLocal, 4, 20_000),
                (DynamodbLocal, 16, 100_000),
                (InMemory, 1, 10_000),
                (InMemory, 4, 20_000),
                (InMemory, 16, 20_000),
                (InMemory, 16, 100_000),
                (InMemory, 16, 200_000),
            ]
        };
        // BENCH_THROUGHPUT_ROWS=table:shards:jobs,... runs only those rows (table: ddb-local or
        // in-memory).
        let sizes = match std::env::var("BENCH_THROUGHPUT_ROWS") {
            Ok(rows) => rows
                .split(',')
                .map(|row| {
                    let parts: Vec<&str> = row.trim().split(':').collect();
                    let bad = || panic!("BENCH_THROUGHPUT_ROWS: {row:?} is not table:shards:jobs");
                    let [table, shards, jobs] = parts.as_slice() else { bad() };
                    let table = match *table {
                        "ddb-local" => DynamodbLocal,
                        "in-memory" => InMemory,
                        _ => bad(),
                    };
                    (
                        table,
                        shards.parse().unwrap_or_else(|_| bad()),
                        jobs.parse().unwrap_or_else(|_| bad()),
                    )
                })
                .collect(),
            Err(_) => sizes,
        };
        println!(
            "dispatch throughput against a backend that is not the bottleneck: the table on DynamoDB Local or \
             in memory, a minimal SQS endpoint, {latency_ms} ms added to every call (by a proxy in front of \
             DynamoDB Local, by the bench's own endpoints themselves); one poller invocation ({profile:?}) \
             against the minimal baseline client with the same calls in flight"
        );
        let mut rows = Vec::new();
        for (table, shards, jobs) in sizes {
            let row = e2e::throughput::latency_bound_throughput(jobs, shards, latency_ms, table, profile).await;
            println!(
                "  {}, {shards:>2} shards, {jobs} jobs: poller {:.0} jobs/s ({:.1} s), baseline {:.0}, ideal {:.0}, peak RSS {:.0} MB",
                table.name(),
                row.jobs_per_s,
                jobs as f64 / row.jobs_per_s,
                row.baseline_jobs_per_s,
                row.ideal_jobs_per_s,
                row.rss_mb
            );
            rows.push(row);
        }
        print!("{}", e2e::throughput::table(&rows));
        for r in &rows {
            let calls: Vec<String> = r
                .poller_calls_per_1000
                .iter()
                .map(|(op, n)| format!("{op} {n:.1}"))
                .collect();
            println!(
                "  poller calls per 1000 jobs, {}, {} shards: {}",
                r.table.name(),
                r.shards,
                calls.join(", ")
            );
        }
        for r in &rows {
            let title = format!(
                "where the time went, {}, {} shards, {} jobs:",
                r.table.name(),
                r.shards,
                r.jobs
            );
            print!("{}", e2e::stages::table(&title, &r.poller_stages, &r.baseline_stages));
        }
        let svg = output_dir().join("throughput.svg");
        match e2e::throughput::chart(&rows, &svg) {
            Ok(()) => println!("chart: {}", svg.display()),
            Err(e) => println!("chart not drawn: {e}"),
        }
        println!("written to {}\n", write_json("throughput.json", &rows).display());
    }
    if all || what == "max-rate" {
        let (jobs, rate) = if quick { (600, 200) } else { (4000, 1000) };
        println!(
            "WAITER_MAX_RATE on a thundering herd: {jobs} jobs due at once, 4 shards, in-memory table, 15 ms a call"
        );
        let mut rows = Vec::new();
        for max_rate in [None, Some(rate)] {
            let r = e2e::throughput::rate_limited_herd(jobs, max_rate, 15, profile).await;
            println!(
                "  max rate {}: {} dispatched, arrivals over {} s, latest arrival {:.0} ms after perform_at, run {:.1} s",
                max_rate.map_or("unlimited".to_owned(), |r| format!("{r}/s")),
                r.dispatched,
                r.arrival_seconds,
                r.max_lateness_ms,
                r.run_s
            );
            rows.push(r);
        }
        println!("written to {}\n", write_json("max_rate.json", &rows).display());
    }
    if all || what == "priority" {
        // The reads per run at a held-back backlog (docs/performance.md, Priority).
        let jobs = if quick { 20_000 } else { 100_000 };
        println!("priority: {jobs} jobs overdue, every tenth priority 1, 16 shards, in-memory table, 15 ms a call, one poller run");
        let mut rows = Vec::new();
        for order in ["time", "priority"] {
            let r = e2e::ranked::ranked_backlog(jobs, 16, 100, order, profile).await;
            println!(
                "  {order} order, 100/s: {} dispatched ({} of {} urgent, all before the rest: {}), {} held back, run {:.1} s; calls {:?}",
                r.dispatched, r.urgent_dispatched, r.urgent, r.urgent_first, r.held_back, r.run_s, r.calls
            );
            rows.push(r);
        }
        // Without priorities, a backlog due over a minute at a rate the run can just book:
        // what the order across partitions costs a queue that never set a priority.
        let jobs = if quick { 4_000 } else { 20_000 };
        for spread in [1, 60] {
            let r = e2e::ranked::backlog(jobs, 16, 1000, "time", spread, 0, profile).await;
            println!(
                "  {jobs} jobs due over {spread} s, no priorities, 1000/s: {} dispatched, run {:.1} s; calls {:?}",
                r.dispatched, r.run_s, r.calls
            );
            rows.push(r);
        }
        println!("written to {}\n", write_json("priority.json", &rows).display());
    }
    if all || what == "ledger" {
        let each = if quick { 20 } else { 100 };
        println!("rate ledger: writers (separate stores, as separate poller processes) each booking {each} batches of 10 arrivals into one queue's ledger at once, DynamoDB Local");
        let mut rows = Vec::new();
        for writers in [1, 4, 8, 16] {
            let r = ledger_contention(writers, each).await;
            println!("  {}", r.line());
            rows.push(r);
        }
        println!("written to {}\n", write_json("ledger.json", &rows).display());
        // Its size under a ranked herd: every booking writes the item whole (issue 46, defect 5).
        let jobs = if quick { 800 } else { 4_000 };
        println!("rate ledger size: a ranked herd of {jobs} jobs (priorities 1-1000, weights 1-8 in a third) booked 100 per call, DynamoDB Local");
        let mut sizes = Vec::new();
        for (partitions, rate) in [(1, 10), (4, 10), (4, 100)] {
            let r = ledger_size(partitions, jobs, rate).await;
            println!("  {}", r.line());
            sizes.push(r);
        }
        println!("written to {}\n", write_json("ledger_size.json", &sizes).display());
    }
    if all || what == "herd" {
        // 1M jobs by default (about 1 GB in the in-memory table); BENCH_HERD_JOBS for another.
        let jobs = match std::env::var("BENCH_HERD_JOBS") {
            Ok(n) => n.parse().expect("BENCH_HERD_JOBS must be a whole number"),
            Err(_) if quick => 20_000,
            Err(_) => 1_000_000,
        };
        println!("herd: {jobs} jobs overdue at once, 16 shards, in-memory table, minimal SQS, 15 ms a call, each group its own poller process");
        let mut rows = Vec::new();
        for groups in [1, 8] {
            let r = e2e::herd::herd(jobs, 16, groups, 15, profile).await;
            println!("  {}", r.line());
            rows.push(r);
        }
        println!("written to {}\n", write_json("herd.json", &rows).display());
    }
    if all || what == "enqueue-latency" {
        let mut rows = Vec::new();
        for table in [
            e2e::throughput::TableBackend::DynamodbLocal,
            e2e::throughput::TableBackend::InMemory,
        ] {
            let r = e2e::throughput::enqueue_batch_at_latency(1000, 15, table, profile).await;
            let calls: Vec<String> = r.calls.iter().map(|(op, n)| format!("{op} {n}")).collect();
            println!(
                "enqueue: one request of {} stored jobs, {} ms a call, {}: {:.2} s ({})",
                r.jobs,
                r.latency_ms,
                table.name(),
                r.seconds,
                calls.join(", ")
            );
            rows.push(r);
        }
        println!("written to {}\n", write_json("enqueue_latency.json", &rows).display());
    }
    if what == "dispatch-moto" {
        let jobs = match std::env::var("BENCH_THROUGHPUT_JOBS") {
            Ok(n) => n.parse().expect("BENCH_THROUGHPUT_JOBS must be a whole number of jobs"),
            Err(_) if quick => 300,
            Err(_) => 20_000,
        };
        let r = dispatch_throughput(jobs, 4, 3, profile).await;
        println!(
            "dispatch throughput, {} due jobs, {} shards, on {} (median of {} runs per side):",
            r.jobs, r.shards, r.backend, r.runs
        );
        println!(
            "  one poller invocation: {:.1} s, {:.0} jobs/s",
            r.poller_s, r.poller_jobs_per_s
        );
        println!("  minimal baseline client (Query pages, SendMessageBatch of 10, BatchWriteItem of 25, same concurrency): {:.1} s, {:.0} jobs/s", r.baseline_s, r.baseline_jobs_per_s);
        let per_run: Vec<String> = r.run_ratios.iter().map(|x| format!("{x:.2}")).collect();
        println!("  poller / baseline: {:.2} (runs: {})", r.ratio, per_run.join(", "));
        println!("written to {}\n", write_json("dispatch_moto.json", &r).display());
    }
    if all || what == "coldstart" {
        let runs = if quick { 3 } else { 7 };
        let rows = cold_start(runs, profile).await;
        println!("cold start (release binaries vs Python 3 + boto3, same Runtime API stand-in; median of {runs} fresh processes)");
        println!(
            "{:<32} {:>9} {:>14} {:>16}",
            "function", "init ms", "peak RSS MiB", "1st invoke ms"
        );
        for r in &rows {
            println!(
                "{:<32} {:>9.1} {:>14.1} {:>16.1}",
                r.function, r.init_ms, r.peak_rss_mib, r.first_invoke_ms
            );
        }
        if let (Some(rust), Some(py)) = (
            rows.iter().find(|r| r.function == "enqueue"),
            rows.iter().find(|r| r.function.starts_with("python")),
        ) {
            println!(
                "python / rust enqueue: init {:.1}x, peak RSS {:.1}x",
                py.init_ms / rust.init_ms,
                py.peak_rss_mib / rust.peak_rss_mib
            );
        }
        for s in binary_sizes(profile) {
            println!(
                "binary size {}: {:.2} MiB ({} bytes)",
                s.binary,
                s.bytes as f64 / 1048576.0,
                s.bytes
            );
        }
        write_json("binary_size.json", &binary_sizes(profile));
        println!("written to {}\n", write_json("coldstart.json", &rows).display());
    }
    if all || what == "api" {
        let jobs = if quick { 200 } else { 1000 };
        let mut rows = Vec::new();
        for history_days in [7, 0] {
            // The bodies `{"order":N}`, up to 13 bytes.
            let r = api_efficiency(jobs, 4, history_days, 13, profile).await;
            println!(
                "API calls for {} long-delay jobs end to end (4 shards, {} poller runs, WAITER_HISTORY_DAYS={}), counted at a proxy:",
                r.jobs, r.poller_runs, r.history_days
            );
            for (op, n) in &r.calls {
                println!("  {op:<18} {n:>6}");
            }
            println!(
                "  data calls {} vs floor {} (1 PutItem/job, 1 SendMessageBatch/10, 1 BatchExecuteStatement of removals/25 jobs, 1 BatchGetItem/100, + Query pages): {:.3}x",
                r.data_calls, r.floor, r.ratio_to_floor
            );
            println!(
                "  plus {} lease takes and shard-count writes (UpdateItems per partition, take and release, and per queue, per run; not per job)",
                r.lease_calls
            );
            println!(
                "  logs at the default level (info, JSON, EMF included): {:.1} bytes per job; lines naming a job: {}",
                r.log_bytes_per_job, r.job_lines_at_info
            );
            println!("  cost per million jobs, USD, on-demand:");
            for (k, v) in &r.cost_per_million {
                println!("    {k:<40} {v:>8.3}");
            }
            rows.push(r);
        }
        println!("written to {}\n", write_json("api.json", &rows).display());
        // Issue 45: what a stored job costs, in billed units and dollars, by body size.
        let mut costs = vec![(
            job_cost(&rows[0]),
            rows[0].measured_put_delete_units,
            rows[0].modelled_put_delete_units,
        )];
        // An item of up to 1 KB (the floor of DESIGN's "Cost"), and one of 4 KB.
        for body_bytes in [900, 4000] {
            let r = api_efficiency(jobs, 4, 7, body_bytes, profile).await;
            costs.push((job_cost(&r), r.measured_put_delete_units, r.modelled_put_delete_units));
        }
        println!(
            "cost per stored job (history on, {jobs} jobs each, units by DynamoDB's billing rules from the calls counted and the codec's item sizes; the index as the stacks create it, projecting the keys, priority and weight):"
        );
        println!(
            "  {:>6} {:>6} {:>7} {:>7} {:>6} {:>6} {:>8} {:>9} {:>7} {:>10} {:>10} {:>14}",
            "body",
            "item",
            "tableWU",
            "indexWU",
            "RU",
            "SQS",
            "Lambda",
            "GB-s",
            "log B",
            "$/M od",
            "$/M prov",
            "put+del WU m/c"
        );
        for (c, measured, modelled) in &costs {
            println!(
                "  {:>6} {:>6} {:>7.3} {:>7.3} {:>6.3} {:>6.3} {:>8.4} {:>9.6} {:>7.1} {:>10.3} {:>10.3} {:>8} / {:<4}",
                c.body_bytes,
                c.item_bytes,
                c.table_write_units,
                c.index_write_units,
                c.read_units,
                c.sqs_requests,
                c.lambda_requests,
                c.lambda_gb_seconds,
                c.log_bytes,
                c.on_demand_per_million,
                c.provisioned_per_million,
                measured,
                modelled
            );
        }
        for (c, _, _) in &costs {
            println!(
                "  pause checks ({} B bodies): {:.2} strongly consistent reads a poller run, {:.4} read units a job, ${:.4} a million jobs on demand (in RU and $/M above)",
                c.body_bytes,
                c.pause_checks_per_run,
                c.pause_check_read_units,
                c.pause_check_read_units * prices::DDB_READ_REQUEST_UNIT * 1e6
            );
        }
        println!(
            "  ($/M od: on demand; prov: provisioned at 70 % use; m/c: DynamoDB's reported ConsumedCapacity against the model.) EventBridge Scheduler, all in (its invocations past 14 million free, and the SQS call each makes): 1 million a month ${:.2}, 100 million ${:.2}",
            scheduler_per_month(1e6),
            scheduler_per_month(100e6)
        );
        let costs: Vec<&JobCost> = costs.iter().map(|(c, _, _)| c).collect();
        println!("written to {}\n", write_json("cost.json", &costs).display());
    }
    if all || what == "enqueue" {
        let jobs = if quick { 500 } else { 2000 };
        let r = enqueue_throughput(jobs, profile).await;
        println!(
            "enqueue throughput: {} stored jobs in batches of {} through the release binary: {:.1} s, {:.0} jobs/s",
            r.jobs, r.batch, r.seconds, r.jobs_per_s
        );
        println!("written to {}\n", write_json("enqueue.json", &r).display());
    }
    if all || what == "trace-cost" {
        let ddb_local = e2e::DynamoLocal::start().await;
        let ddb = aws_sdk_dynamodb::Client::new(&e2e::emulator::sdk_config(&ddb_local.endpoint).await);
        let rows = trace_cost(&ddb, &[100, 600, 900, 950, 1000, 3000]).await;
        println!(
            "a stored trace header ({} characters, Lambda's with Lineage), per job: put and delete, table and index (as the stacks create it), write units as DynamoDB Local reports them:",
            LAMBDA_TRACE_HEADER.len()
        );
        println!("  body bytes  item bytes without/with  write units without/with");
        for r in &rows {
            println!(
                "  {:>10}  {:>12}/{:<10}  {:>10}/{}",
                r.body_bytes, r.item_bytes_without, r.item_bytes_with, r.write_units_without, r.write_units_with
            );
        }
        println!("written to {}\n", write_json("trace_cost.json", &rows).display());
        let rows = tags_cost(&ddb, &[100, 900, 1000, 3000]).await;
        print_tags_cost(&rows);
        println!("written to {}\n", write_json("tags_cost.json", &rows).display());
    }
    if all || what == "series" {
        let (series, count) = if quick { (20, 3) } else { (200, 5) };
        let r = series_cost(series, count, 4, profile).await;
        println!(
            "a series' occurrence (issue 47): {} series every 60 s over 4 shards, {} occurrences each, all missed, caught up in the rounds of a run ({} poller runs), history on, the table where PartiQL runs:",
            r.series, r.occurrences_each, r.poller_runs
        );
        println!(
            "  {} messages, {} SendMessageBatch, {} removal statements, {} transaction items: per occurrence {:.2} send entries, {:.3} SQS requests, {:.2} statements",
            r.messages,
            r.send_batches,
            r.statements,
            r.transaction_items,
            r.entries_per_occurrence,
            r.sqs_requests_per_occurrence,
            r.statements_per_occurrence
        );
        println!(
            "  the move of a {}-byte item: {} table + {} index write units modelled, {} reported by DynamoDB Local; ${:.3} per million occurrences on demand, ${:.3} provisioned at 70 %",
            r.item_bytes,
            r.modelled_table_write_units,
            r.modelled_index_write_units,
            r.measured_move_units,
            r.on_demand_per_million,
            r.provisioned_per_million
        );
        println!("written to {}\n", write_json("series.json", &r).display());
    }
    if all || what == "debounce" {
        let (ids, calls) = if quick { (20, 3) } else { (100, 5) };
        let r = debounce_cost(ids, calls, profile).await;
        println!("{}", r.report());
        println!("written to {}\n", write_json("debounce.json", &r).display());
    }
    if all || what == "console" {
        let r = console_bench(if quick { 3 } else { 7 }, profile).await;
        println!("{}", r.report());
        println!("written to {}\n", write_json("console.json", &r).display());
        let r = tag_search(if quick { 10_000 } else { 100_000 }, profile).await;
        println!(
            "{}\nwritten to {}\n",
            r.report(),
            write_json("tag_search.json", &r).display()
        );
    }
    if all || what == "catch-up" {
        let c = catch_up_cpu(if quick { 10_000 } else { 100_000 });
        println!(
            "catching a series up (issue 60; no emulator, one thread): a `{}` series {} minutes behind: `all` makes one run's {} passes in {:.1} ms; `one` leaves {} unsent in one pass of {:.1} ms",
            c.expression, c.behind, c.all_passes, c.all_ms, c.one_skipped, c.one_ms
        );
        println!("written to {}\n", write_json("catch_up.json", &c).display());
    }
    if all || what == "compression" {
        let bodies = if quick { 5 } else { 50 };
        let rows = compression(bodies);
        println!(
            "compressed bodies: {bodies} JSON order events per size (bodies::json_body), {} build; write units of the body alone, mean; CPU per body, median",
            if cfg!(debug_assertions) { "debug (the bench binary's)" } else { "release" }
        );
        println!("  codec          body B  compressed B  ratio  WU plain  WU comp  compress us  inflate us");
        for r in &rows {
            println!(
                "  {:<13} {:>7}  {:>12.0}  {:>5.3}  {:>8.0}  {:>7.2}  {:>11.1}  {:>10.1}",
                r.codec,
                r.body_bytes,
                r.compressed_bytes,
                r.ratio,
                r.write_units_plain,
                r.write_units_compressed,
                r.compress_us,
                r.decompress_us
            );
        }
        println!("written to {}\n", write_json("compression.json", &rows).display());
    }
}
