//! Deterministic simulation: random interleavings of enqueue, dispatch, crash, cancel and
//! reschedule over the in-memory fakes. A crash is a run dropped at a random await point, as
//! when Lambda kills the process; whatever the store holds survives, everything else is lost.
//!
//! Store and queue calls fail on a seeded schedule: before they take effect, after (the reply
//! is lost), or, for store calls, after and then retried by the SDK up to a second later, with
//! whatever other callers did meanwhile (an attempt timed out after it was applied; a
//! transaction's retry is answered by its token, as DynamoDB does). Half the poller runs have a
//! caller beside them: enqueueing, cancelling or rescheduling, a consumer retrying what it
//! received (an attempt the run may have just sent and not yet removed), or an operator
//! cancelling, rescheduling, redriving or replaying a retried job. Some cancels race a
//! reschedule of the same id moved near (which hands it to SQS itself), and some race a
//! consumer's retry of the same chain, parked ones first (issue 46).
//!
//! The due index lags the table by a random delay per seed (a GSI is eventually consistent), and
//! ids are cancelled and enqueued again with a new body and time, so a stale index entry can
//! name an old version of a job. Half the seeds keep history (`WAITER_HISTORY_DAYS`), so such an
//! enqueue is a duplicate of the finished job there.
//!
//! Invariants, per seed (a job version is one body under one id):
//! - no loss: every version whose enqueue was acknowledged, that was not cancelled and has no
//!   expiry, is delivered at least once;
//! - never early: no delivery arrives before its `perform_at`;
//! - a version `cancel` answered `cancelled` for is never accepted by SQS, before or after;
//! - a version a `reschedule` answered `rescheduled` for replaced is never accepted by SQS, and
//!   the new version is delivered (no earlier than its new time);
//! - an expired job is never sent (no delivery arrives after `expires_at`);
//! - a job with windows never arrives outside them (a third of the seeds give half their jobs
//!   the window 09:00–09:01 UTC, which the simulation's clock starts inside of; jobs moved to
//!   the next opening fall due a day later, which the final drain reaches);
//! - FIFO order per group: of two jobs of a group stored well before the earlier one fell due,
//!   the earlier is delivered first;
//! - retries (consumers handing back what they received, `retries`): one scheduled attempt per
//!   (id, attempt), none lost, none early, `waiter.attempt` monotone as received, and never a
//!   `conflict` answered to the latest attempt delivered (the chain would be lost); with
//!   operators cancelling, rescheduling, redriving and replaying those ids (consumers retry
//!   the copies under the ids their messages name) and callers enqueueing
//!   attempt-shaped ids of their own (`operators`): one stored attempt per id, never a
//!   delivery after `cancelled`, and the callers' jobs delivered as any other.
//!
//! Series (recurring jobs) run in a world of their own, with the same faults, crashes and callers
//! beside the runs: `series.rs` has their invariants.
//!
//! `SIM_SEEDS=n` runs n seeds (default 3000; 300 for series); `SIM_SEED=s` replays one.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use crate::app::Waiter;
use crate::error::HandlerError;
use crate::poller::Dispatcher;
use crate::ports::{Clock, Partition};
use crate::testing::{config, FakeClock, FakeQueue, Faults, FaultyQueue, FaultyStore, MemStore};
use crate::time::format_rfc3339;
use crate::windows::Windows;

mod callers;
mod checks;
mod close_crash;
mod debounce;
mod denied;
mod deploys;
mod mixed;
mod operators;
mod priority;
mod retries;
mod series;
mod series_checks;
mod steering;
mod tags;

use callers::World;

/// The window of the seeds that use windows: the first minute of the simulation's clock (which
/// starts at 09:00:00.123 UTC), so that jobs fall inside it, after it, and at its close.
const WINDOW: (&str, &str) = ("09:00", "09:01");

fn window() -> Windows {
    let w = sqs_waiter_contract::Window {
        from: WINDOW.0.into(),
        to: WINDOW.1.into(),
    };
    Windows::parse(&[w], Some("UTC")).expect("a valid window")
}

#[derive(Debug, Default)]
struct Expected {
    perform_at: Option<DateTime<Utc>>,
    expires_at: Option<DateTime<Utc>>,
    /// The job's windows: it must arrive inside one.
    windows: Option<Windows>,
    acknowledged: bool,
    /// `cancel` answered `cancelled` while this version was the stored one.
    cancelled: bool,
    /// A cancel or reschedule failed: it may have taken effect before its reply was lost.
    cancel_unknown: bool,
    /// `reschedule` answered `rescheduled` with a newer version in its place.
    replaced: bool,
    /// A caller sent its enqueue twice: the first attempt may have sent it straight to SQS and
    /// the retry stored it (no history to tell), so two copies of this version may exist.
    two_copies: bool,
    /// When the cancel or reschedule that answered for this version began: with two copies, a
    /// delivery before then was of the other copy.
    acted_on_at: Option<DateTime<Utc>>,
    /// That answer said `maybe_delivered_at`: a crashed run may have delivered this version
    /// before it, so only a delivery after it breaks the answer.
    maybe_delivered: bool,
    /// A FIFO job's message group, and when its enqueue began.
    group: Option<String>,
    enqueued_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Default)]
struct Outcome {
    violations: Vec<String>,
    jobs: usize,
    deliveries: usize,
    duplicates: usize,
    crashes: usize,
    rescheduled: usize,
    /// Pairs of one FIFO group the order check compared.
    fifo_pairs: usize,
    /// `retry` calls made by consumers.
    retries: usize,
    /// Operators' and callers' actions on the retried ids.
    operations: usize,
    /// Replayed copies of retried jobs, and `retry` calls of them.
    copies: usize,
    copy_retries: usize,
    /// Steering calls (the whole system's seeds).
    steering: usize,
    /// Stack updates (`deploys.rs`).
    updates: usize,
    /// Debounced `extend` calls (the whole system's seeds).
    extended: usize,
    /// Calls through aliases outside their rights, refused (`denied.rs`).
    refused: usize,
    /// Items of a later format met by a run and left alone (`mixed.rs`).
    later_format: usize,
    /// Jobs cancelled by tag (`tags.rs`).
    tag_cancelled: usize,
}

/// Jobs still waiting in a shard (parked ones excluded).
fn active_jobs(mem: &MemStore) -> usize {
    mem.state
        .lock()
        .unwrap()
        .items
        .keys()
        .filter(|(_, p, _)| *p != Partition::Parked)
        .count()
}

/// The body of the version of `id` stored now (the one a `cancelled` or `rescheduled` answer is
/// about).
fn stored_body(mem: &MemStore, id: &str) -> Option<String> {
    mem.state
        .lock()
        .unwrap()
        .items
        .iter()
        .find(|((_, p, j), _)| j == id && *p != Partition::Parked)
        .map(|(_, job)| job.job.message_body.clone())
}

/// The tag key the callers' jobs carry (`tags.rs`), and its values.
const TAG_KEY: &str = "team";
const TAGS: [&str; 3] = ["red", "green", "blue"];

/// The tag a caller's version carries: none for every fourth.
fn tag_of_version(version: u64) -> Option<&'static str> {
    (version % 4 != 0).then(|| TAGS[(version % 3) as usize])
}

/// The queue an id was first enqueued on.
fn queue_for(queue_of: &HashMap<String, bool>, id: &str) -> &'static str {
    if queue_of.get(id).copied().unwrap_or(false) {
        "f.fifo"
    } else {
        "q"
    }
}

/// How long before a FIFO job falls due it must have been stored for the order check: the
/// index's lag (up to 2 s), a FIFO run's re-read interval (1 s) and call latency.
const FIFO_SETTLE: TimeDelta = TimeDelta::seconds(4);

/// A store as the simulations run it: pages of 1 to 7 items and an index up to 2 s behind the
/// table, drawn from the seed's `rng` (page size first, then the lag).
fn lagging_store(rng: &mut StdRng) -> MemStore {
    MemStore {
        page_size: rng.random_range(1..8),
        index_lag: Duration::from_millis(rng.random_range(0..2_000)),
        ..MemStore::default()
    }
}

fn parse_time(v: &Value) -> Option<DateTime<Utc>> {
    v.as_str()
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
}
async fn simulate(seed: u64, caller_chains: bool, whole: bool) -> Outcome {
    let mut rng = StdRng::seed_from_u64(seed);
    let clock = FakeClock::default();
    // Calls take up to 30 ms, so a partition's sends and deletes in flight finish in any order.
    let faults = Faults::seeded(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15), rng.random_range(0.0..0.2))
        .with_latency(rng.random_range(0..30));
    let mem = lagging_store(&mut rng);
    let sink = FakeQueue::new(clock.clone());
    let (store, queue) = faults.around(&mem, &sink);
    let settings = vec![
        ("WAITER_SHARDS", rng.random_range(1..=4).to_string()),
        ("WAITER_LOOKAHEAD", rng.random_range(0..=20).to_string()),
        ("WAITER_DIRECT_MAX_DELAY", rng.random_range(0..=3).to_string()),
        ("WAITER_FIFO_HOLD", rng.random_range(0..=5).to_string()),
        // Without history, ids are enqueued again after they left, so stale index entries name
        // old versions; with it, those enqueues are duplicates of the finished job.
        (
            "WAITER_HISTORY_DAYS",
            if rng.random_bool(0.5) { "7" } else { "0" }.to_string(),
        ),
        // Half keep messages in history, so that operators can replay retried jobs.
        (
            "WAITER_HISTORY_BODY",
            if rng.random_bool(0.5) { "true" } else { "false" }.to_string(),
        ),
        // A third of the seeds limit arrivals, moving jobs to later seconds (and a third give
        // some jobs a window, so that the two meet in a ninth).
        (
            "WAITER_MAX_RATE",
            if rng.random_bool(0.33) {
                rng.random_range(1..=5).to_string()
            } else {
                String::new()
            },
        ),
    ];
    let windows_on = rng.random_bool(0.33);
    let window_close = clock.now().date_naive().and_hms_opt(9, 1, 0).expect("a time").and_utc();
    // `enqueue`'s client of the queue: the same queue and faults, its sends marked as its own.
    let (_, enqueue_queue) = faults.around(&mem, &sink.as_sender(deploys::ENQUEUE));
    let mut deploy = deploys::Deployment::new(seed, whole, settings, (store, queue, enqueue_queue), clock.clone());
    let waiter = deploy.waiter();

    let mut w = World {
        rng,
        waiter,
        mem: mem.clone(),
        clock: clock.clone(),
        windows_on,
        window_close,
        out: Outcome::default(),
        expected: HashMap::new(),
        next_id: 0,
        version: 0,
        queue_of: HashMap::new(),
        sink: sink.clone(),
        retries: retries::Retries::default(),
        caller_chains,
        whole,
        steering: steering::Steering {
            rights_draws: whole.then(|| StdRng::seed_from_u64(seed ^ 0x0073_a11a_5e5d_0073)),
            later_format_draws: whole.then(|| StdRng::seed_from_u64(seed ^ 0x0074_f0a7_0074_f0a7)),
            ..steering::Steering::default()
        },
    };
    for _ in 0..w.rng.random_range(20..60) {
        if let Some(waiter) = deploy.maybe_update() {
            w.waiter = waiter;
        }
        match w.rng.random_range(0..if w.whole { 18 } else { 14 }) {
            0..=2 => w.enqueue().await,
            3..=5 => {
                let deadline = w.clock.now() + TimeDelta::seconds(w.rng.random_range(5..30));
                let crash_after = w
                    .rng
                    .random_bool(0.25)
                    .then(|| Duration::from_millis(w.rng.random_range(0..3_000)));
                // Half the runs have a caller acting at one of their await points.
                let beside_at = w
                    .rng
                    .random_bool(0.5)
                    .then(|| Duration::from_millis(w.rng.random_range(0..200)));
                // A run alone may meet items of a later format: a caller beside it could act on
                // them by selection (`cancel_many`), which `DynamoStore` leaves out and this
                // store does not.
                let marked = match beside_at {
                    None => w.mark_later_format(),
                    Some(_) => Vec::new(),
                };
                let sent_before = w.sink.sent().len();
                let run = async {
                    match crash_after {
                        Some(after) => {
                            let _ = tokio::time::timeout(after, deploy.run(deadline)).await;
                        }
                        None => {
                            deploy.run(deadline).await;
                        }
                    }
                };
                if let Some(at) = beside_at {
                    let beside = async {
                        tokio::time::sleep(at).await;
                        w.steering.beside_a_run = true;
                        w.call_beside().await;
                        w.steering.beside_a_run = false;
                    };
                    tokio::join!(run, beside);
                } else {
                    run.await;
                }
                w.check_later_format(marked, sent_before);
                if crash_after.is_some() {
                    w.out.crashes += 1;
                }
            }
            6 | 7 if w.next_id > 0 => w.cancel().await,
            8 if w.next_id > 0 => w.reschedule().await,
            9 if w.next_id > 0 => w.cancel_beside_reschedule().await,
            10 => w.retry().await,
            11 => w.operate().await,
            12 => w.retry_beside_cancel().await,
            13 if w.caller_chains => w.crash_at_close(&deploy).await,
            14..=17 => w.steer().await,
            _ => tokio::time::sleep(Duration::from_millis(w.rng.random_range(0..2_000))).await,
        }
    }

    // Calm: no more faults; let leases lapse and everything fall due, then drain. Jobs moved to
    // the next opening of their window fall due a day later.
    faults.off();
    if w.whole {
        w.resume_everything().await;
    }
    tokio::time::sleep(Duration::from_secs(70)).await;
    for day in 0..6 {
        if day > 0 {
            if active_jobs(&mem) == 0 {
                break;
            }
            // To the window's next opening, where the moved jobs fall due.
            let opening = window().next_open(clock.now());
            clock.advance(opening - clock.now());
        }
        for _ in 0..10 {
            deploy.run(clock.now() + TimeDelta::seconds(60)).await;
            checks::check_sent_and_stored(&mut w.out, &w.expected, &sink.sent(), &mem);
            w.check_one_stored_attempt();
            let left = active_jobs(&mem);
            if left == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    let World {
        mut out,
        expected,
        retries,
        steering,
        ..
    } = w;
    let sent = sink.sent();
    steering::check(&mut out, &steering, &sent);
    out.steering = steering.calls;
    out.extended = steering.extended;
    out.refused = steering.refused;
    out.later_format = steering.later_format;
    out.tag_cancelled = steering.tag_cancelled;
    retries::check(&mut out, &retries, &sent, deploy.enqueue_clock_error.abs());
    out.retries = retries.calls;
    out.operations = retries.operations;
    out.copies = retries.copies.len();
    out.copy_retries = retries.copy_calls;
    let sent: Vec<_> = sent.into_iter().filter(|s| !retries::is_retried(s)).collect();
    let duplicates = checks::check(
        &mut out,
        &expected,
        &sent,
        &mem,
        &steering.reordered,
        deploy.enqueue_clock_error.abs(),
    );
    if !out.violations.is_empty() {
        out.violations.push(format!("deployment: {}", deploy.describe()));
    }
    out.updates = deploy.updates_made;
    out.jobs = expected.len();
    out.deliveries = sent.len();
    out.duplicates = duplicates;
    out
}

/// The seeds to run: `SIM_SEED=s` alone, else the first `SIM_SEEDS` (or `default`).
fn seed_list(default: u64) -> Vec<u64> {
    match std::env::var("SIM_SEED") {
        Ok(s) => vec![s.parse().expect("SIM_SEED is a number")],
        Err(_) => (0..std::env::var("SIM_SEEDS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(default))
            .collect(),
    }
}

/// `f` in a runtime of its own, with its clock paused from its start. What a seed does then
/// depends on the seed alone: in one runtime shared by every seed, a seed's timers were
/// rounded to milliseconds counted from the first seed's start, so a seed that broke an
/// invariant after the seeds before it could pass when replayed alone.
pub(super) fn in_own_runtime<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a runtime")
        .block_on(f)
}

/// Runs the seeds (`SIM_SEEDS`, else `default`; `SIM_SEED=s` replays one) in one mode, each in
/// a runtime of its own, failing at the first broken invariant; the totals.
fn run_seeds(caller_chains: bool, whole: bool, default: u64) -> (usize, Outcome) {
    let seeds = seed_list(default);
    let mut total = Outcome::default();
    for seed in &seeds {
        let o = in_own_runtime(simulate(*seed, caller_chains, whole));
        assert!(
            o.violations.is_empty(),
            "seed {seed} broke an invariant (replay with SIM_SEED={seed}):\n{}",
            o.violations.join("\n")
        );
        total.jobs += o.jobs;
        total.deliveries += o.deliveries;
        total.duplicates += o.duplicates;
        total.crashes += o.crashes;
        total.rescheduled += o.rescheduled;
        total.fifo_pairs += o.fifo_pairs;
        total.retries += o.retries;
        total.operations += o.operations;
        total.copies += o.copies;
        total.copy_retries += o.copy_retries;
        total.steering += o.steering;
        total.updates += o.updates;
        total.extended += o.extended;
        total.refused += o.refused;
        total.later_format += o.later_format;
        total.tag_cancelled += o.tag_cancelled;
    }
    (seeds.len(), total)
}

fn summary(seeds: usize, total: &Outcome) -> String {
    format!(
        "{} seeds, {} jobs, {} deliveries, {} duplicates, {} crashes, {} reschedules, {} retries, {} operations on retried ids ({} replayed copies, retried {} times), {} FIFO pairs in order, 0 violations",
        seeds,
        total.jobs,
        total.deliveries,
        total.duplicates,
        total.crashes,
        total.rescheduled,
        total.retries,
        total.operations,
        total.copies,
        total.copy_retries,
        total.fifo_pairs
    )
}

#[test]
fn random_interleavings_of_enqueue_dispatch_crash_cancel_reschedule_and_retry_keep_the_invariants() {
    let (seeds, total) = run_seeds(false, false, 3000);
    println!("simulation: {}", summary(seeds, &total));
    assert!(
        total.crashes > 0 && total.jobs > 0 && total.rescheduled > 0 && total.retries > 0 && total.copy_retries > 0,
        "the simulation exercised nothing"
    );
}

/// The same world, where callers also enqueue the jobs consumers retry (consumers hand back
/// only what they received), and operators cancel such a job that SQS accepted before the
/// poller removed it, after which its consumer retries that delivery (issue 46, defect 7).
#[test]
fn callers_jobs_retried_once_delivered_and_cancelled_after_their_send_keep_the_invariants() {
    let (seeds, total) = run_seeds(true, false, 1000);
    println!("simulation with callers' chains: {}", summary(seeds, &total));
    assert!(
        total.retries > 0 && total.operations > 0,
        "the simulation exercised nothing"
    );
}

/// Series beside crashes, faults, cancels and reschedules (issue 47; `series.rs`).
#[test]
fn series_across_crashes_faults_cancels_and_reschedules_keep_their_invariants() {
    let (seeds, t) = series::run_series_seeds(300, false);
    println!(
        "simulation of series: {seeds} seeds, {} series, {} occurrences, {} duplicates, {} crashes, {} cancelled, {} rescheduled, {} occurrences retried, {} parked occurrences redriven, 0 violations",
        t.series, t.occurrences, t.duplicates, t.crashes, t.cancelled, t.rescheduled, t.retries, t.redriven
    );
    assert!(
        t.occurrences > 0 && t.crashes > 0 && t.cancelled > 0 && t.rescheduled > 0 && t.retries > 0,
        "the simulation exercised nothing"
    );
}

/// Debounce (`on_duplicate`) beside runs, crashes and faults (issue 61; `debounce.rs`).
#[test]
fn debounced_calls_beside_runs_crashes_and_faults_keep_their_promise() {
    let (seeds, t) = debounce::run_debounce_seeds(500);
    println!(
        "simulation of debounce: {seeds} seeds, {} calls, {} replaced, {} crashes, 0 broken promises",
        t.calls, t.replaced, t.crashes
    );
    assert!(t.replaced > 0 && t.crashes > 0, "the simulation exercised nothing");
}

/// The whole system (issue 71; `steering.rs`): pause and resume of queues and jobs, trigger,
/// debounce and `cancel_many` among every caller, consumer and operator action of the main
/// simulation, in the same seeds, with callers' chains in half of them.
#[test]
fn the_whole_system_keeps_every_invariant_where_features_meet() {
    let (a, ta) = run_seeds(false, true, 600);
    let (b, tb) = run_seeds(true, true, 300);
    println!("simulation of the whole system: {}", summary(a, &ta));
    println!(
        "simulation of the whole system with callers' chains: {}",
        summary(b, &tb)
    );
    println!(
        "steering calls: {} ({} extends), {} refused through aliases, stack updates: {}, items of a later format met: {}, jobs cancelled by tag: {}",
        ta.steering + tb.steering,
        ta.extended + tb.extended,
        ta.refused + tb.refused,
        ta.updates + tb.updates,
        ta.later_format + tb.later_format,
        ta.tag_cancelled + tb.tag_cancelled
    );
    assert!(
        a < 50
            || ta.steering > 0
                && ta.crashes > 0
                && ta.retries > 0
                && tb.operations > 0
                && ta.updates > 0
                && ta.refused > 0
                && ta.later_format > 0
                && ta.tag_cancelled > 0,
        "the simulation exercised nothing"
    );
}

/// Series in the whole system (issue 71; `series_steering.rs`): triggered, their queue and
/// themselves paused and resumed, every other one spelled as an EventBridge expression (and
/// every other one-off job beside them as `at(...)`), beside the series simulation's runs,
/// crashes, faults, cancels, reschedules, retries and redrives.
#[test]
fn series_triggered_and_paused_with_their_queue_keep_their_invariants() {
    let (seeds, t) = series::run_series_seeds(300, true);
    println!(
        "simulation of series in the whole system: {seeds} seeds, {} series, {} occurrences, {} duplicates, {} crashes, {} cancelled, {} rescheduled, {} occurrences retried, {} extra occurrences, {} series pauses, {} debounced, 0 violations",
        t.series, t.occurrences, t.duplicates, t.crashes, t.cancelled, t.rescheduled, t.retries, t.triggered, t.series_paused, t.series_replaced
    );
    assert!(
        seeds < 50
            || t.occurrences > 0 && t.crashes > 0 && t.triggered > 0 && t.series_paused > 0 && t.series_replaced > 0,
        "the simulation exercised nothing"
    );
}
