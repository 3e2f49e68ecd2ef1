//! Priority and weight under a random `WAITER_MAX_RATE`: jobs with random priorities and
//! weights, stored through `enqueue`, fall due together and are drained by poller runs over a
//! store that pages at random sizes. Checks: never early, none lost, the budget per arrival
//! second (critical jobs aside), and the order: of two jobs held back together (due in the
//! same second with `time`, any two with `priority`), the lower priority number never arrives
//! in a later second once it was held back (later than the second it wants when sent at its
//! own instant). Each by the clock of the process that sent it.
//!
//! Over 1 to 4 shards, worked by one run or by two poller groups at once, with store calls
//! taking up to 30 ms: the order holds across partitions, not only within one.
//!
//! Half the seeds (issue 46) instead enqueue a herd due within one second, some seconds ahead,
//! and invoke the poller every second, as a deployment does: the runs read the herd ahead of
//! its time (`WAITER_LOOKAHEAD` 1 to 6 s), the second group's runs start up to 1.5 s after the
//! first's, and its process's clock differs by up to 100 ms. Critical jobs there arrive within
//! a second of their time.
//!
//! And (issue 46) a quarter of the seeds use a FIFO queue, whose jobs are spread over four
//! message groups: priority reorders nothing there, so each group arrives in the order it fell
//! due, a critical job included, under the same budget. Sends take 0 to 30 ms, as SQS calls
//! do (SQS starts a delay when it receives the request). A third of the seeds run under faults (store and queue calls fail before or after taking effect, up to 10 %
//! of them) and crash a quarter of their runs at a random instant; the budget, never early and
//! none lost hold there (a job may then arrive twice, each copy booked), and so does each FIFO
//! group's order, while the priority order is checked in the seeds without faults (a failed
//! send rightly moves its job later). The ledger item is the adapter's encoding, and the in-memory
//! ledger refuses a booking past DynamoDB's item limit as DynamoDB does; each seed's
//! largest ledger item is reported.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

use crate::app::Waiter;
use crate::poller::{Dispatcher, PollerGroup};
use crate::ports::Clock;
use crate::testing::{config, FakeClock, FakeQueue, Faults, FaultyQueue, FaultyStore, MemStore};
use crate::time::format_rfc3339;

#[derive(Debug, Clone)]
struct Job {
    perform_at: DateTime<Utc>,
    priority: u16,
    weight: u16,
    /// A FIFO job's message group.
    group: Option<String>,
}

/// One seed's shape: what it draws besides the jobs.
struct Shape {
    ahead: bool,
    rate: u16,
    order: &'static str,
    fifo: bool,
    /// Faults and crashes (the priority order is then not checked).
    chaos: bool,
}

/// What one seed found.
#[derive(Default)]
struct Found {
    violations: Vec<String>,
    jobs: usize,
    crashes: usize,
    /// Copies SQS accepted beyond one per job (faults and crashes).
    duplicates: usize,
    ledger_max_bytes: usize,
}

/// One run of a poller group (`None`: the only one), dropped at `crash_after` as Lambda drops
/// a process; whether it was.
async fn run_once(d: &Sim, deadline: DateTime<Utc>, group: Option<PollerGroup>, crash_after: Option<Duration>) -> bool {
    match crash_after {
        Some(after) => tokio::time::timeout(after, d.run_group(deadline, group)).await.is_err(),
        None => {
            d.run_group(deadline, group).await;
            false
        }
    }
}

type Sim = Dispatcher<FaultyStore<MemStore>, FaultyQueue<FakeQueue>, FakeClock>;

/// One seed; the violations found.
async fn simulate(seed: u64) -> Found {
    let mut rng = StdRng::seed_from_u64(seed);
    // The shapes issue 46 added draw from a second schedule, so that the seeds without them
    // replay as before.
    let mut more = StdRng::seed_from_u64(seed ^ 0x5eed_f1f0);
    let clock = FakeClock::default();
    // Issue 72: in half the seeds a process's partitions take turns at the ledger, 0-15 ms a
    // change, as `DynamoStore`'s do (a third schedule, so that the other draws stay as they were).
    let mut turns = StdRng::seed_from_u64(seed ^ 0x7a72_7475);
    let ledger_turn = match turns.random_bool(0.5) {
        true => Duration::from_millis(turns.random_range(0..=15)),
        false => Duration::ZERO,
    };
    let mem = MemStore {
        page_size: rng.random_range(1..8),
        ledger_turn,
        ..MemStore::default()
    };
    let latency = rng.random_range(0..30);
    let fifo = more.random_bool(0.25);
    // A third of the seeds: faults and crashes.
    let chaos = more.random_bool(0.33);
    let fault_rate = if chaos { more.random_range(0.0..0.1) } else { 0.0 };
    let faults = Faults::seeded(seed, fault_rate).with_latency(latency);
    let store = FaultyStore {
        inner: mem.clone(),
        faults: faults.clone(),
    };
    let shards = rng.random_range(1..=4u32).to_string();
    let grouped = rng.random_bool(0.5);
    let ahead = rng.random_bool(0.5);
    let lookahead = if ahead { rng.random_range(1..=6) } else { 0 }.to_string();
    let skew_ms = if grouped && ahead {
        rng.random_range(0..1_500)
    } else {
        0
    };
    let clock_skew = TimeDelta::milliseconds(rng.random_range(-100..=100));
    let sink = FakeQueue::new(clock.clone());
    let rate: u16 = rng.random_range(1..=6);
    let order = if rng.random_bool(0.5) { "time" } else { "priority" };
    let shape = Shape {
        ahead,
        rate,
        order,
        fifo,
        chaos,
    };
    let queue = if fifo { "p.fifo" } else { "q" };
    let rate_s = rate.to_string();
    let cfg = config(
        queue,
        &[
            ("WAITER_SHARDS", &shards),
            ("WAITER_DIRECT_MAX_DELAY", "0"),
            ("WAITER_LOOKAHEAD", &lookahead),
            ("WAITER_MAX_RATE", &rate_s),
            ("WAITER_PRIORITY_ORDER", order),
            ("WAITER_POLLER_GROUPS", if grouped { "2" } else { "1" }),
        ],
    );
    if std::env::var("SIM_SEED").is_ok() {
        println!(
            "seed {seed}: shards {shards}, grouped {grouped}, rate {rate}, order {order}, ahead {ahead} \
             (lookahead {lookahead}, second group {skew_ms} ms later, clock {clock_skew}), fifo {fifo}, \
             faults {fault_rate:.3}"
        );
    }
    let waiter = Waiter::new(cfg.clone(), mem.clone(), sink.clone(), clock.clone());
    // Sends take 0-30 ms, as SQS calls do: SQS starts a delay when it receives the request.
    let queue_faults = if chaos {
        faults.clone()
    } else {
        Faults::seeded(seed, 0.0).with_latency(latency)
    };
    let faulty = |sink: &FakeQueue| FaultyQueue {
        inner: sink.clone(),
        faults: queue_faults.clone(),
    };
    let dispatcher = Dispatcher::new(cfg.clone(), store.clone(), faulty(&sink), clock.clone());
    // The other group's process: its own clock, by which its sends are recorded (the budget
    // and "never early" hold by the clock of the process that sends), into the same queue.
    let other_clock = clock.skewed(clock_skew);
    let other_sink = FakeQueue {
        clock: other_clock.clone(),
        ..sink.clone()
    };
    let other = Dispatcher::new(cfg, store, faulty(&other_sink), other_clock);
    let mut jobs: HashMap<String, Job> = HashMap::new();
    let start = clock.now();
    for i in 0..rng.random_range(10..80) {
        let priority: u16 = match rng.random_range(0..10) {
            0 => 0,
            1..=3 => rng.random_range(1..100),
            4..=6 => 100,
            _ => rng.random_range(101..=1000),
        };
        let weight: u16 = if rng.random_bool(0.3) {
            rng.random_range(1..=8)
        } else {
            1
        };
        let perform_at = if ahead {
            // One second, some seconds ahead: every job wants it.
            let second = DateTime::from_timestamp(start.timestamp() + 8, 0).unwrap_or(start);
            second + TimeDelta::milliseconds(rng.random_range(0..1_000))
        } else {
            start + TimeDelta::milliseconds(rng.random_range(1_000..5_000))
        };
        let body = format!("p{i}");
        let group = fifo.then(|| format!("g{}", more.random_range(0..4)));
        let mut request = json!({"queue": queue, "message_body": body, "job_id": body, "perform_at": format_rfc3339(perform_at),
                             "priority": priority, "weight": weight});
        if let Some(g) = &group {
            request["message_group_id"] = json!(g);
        }
        let reply = waiter.handle(&request).await.expect("enqueue");
        assert_eq!(reply["status"], "scheduled", "{reply}");
        let stored_at = crate::time::parse_time_str(reply["perform_at"].as_str().unwrap_or_default()).ok();
        jobs.insert(
            body,
            Job {
                perform_at: stored_at.unwrap_or(perform_at),
                priority,
                weight,
                group,
            },
        );
    }
    let crashes = std::sync::atomic::AtomicUsize::new(0);
    let crash_plan = std::sync::Mutex::new(more);
    // A quarter of a chaotic seed's runs are dropped within their first 3 s.
    let crash_after = || {
        let mut rng = crash_plan.lock().unwrap();
        (chaos && rng.random_bool(0.25)).then(|| Duration::from_millis(rng.random_range(0..3_000)))
    };
    let group_of = |g: u32| grouped.then_some(PollerGroup { group: g, groups: 2 });
    if ahead {
        // An invocation every second for each group, each lasting until it drained what it
        // read; the second group's a little later, on a clock of its own.
        let dispatchers = [&dispatcher, &other];
        let invocation = |group: u32, tick: u64| {
            let d = dispatchers[group as usize];
            let at = tick * 1_000 + if group == 1 { skew_ms } else { 0 };
            let (clock, crash, crashes) = (clock.clone(), crash_after(), &crashes);
            async move {
                tokio::time::sleep(Duration::from_millis(at)).await;
                if run_once(d, clock.now() + TimeDelta::seconds(30), group_of(group), crash).await {
                    crashes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
        };
        let mut runs = Vec::new();
        for tick in 0..30 {
            runs.push(invocation(0, tick));
            if grouped {
                runs.push(invocation(1, tick));
            }
        }
        futures::future::join_all(runs).await;
    }
    // Everything is due (and held back together) when the first run starts.
    tokio::time::sleep(Duration::from_secs(6)).await;
    for round in 0..40 {
        if round == 20 {
            // Calm: no more faults; crashed runs' leases lapse.
            faults.off();
            tokio::time::sleep(Duration::from_secs(70)).await;
        }
        let deadline = clock.now() + TimeDelta::seconds(60);
        let crash = if round < 20 { crash_after() } else { None };
        let crashed = if grouped {
            let (a, b) = tokio::join!(
                run_once(&dispatcher, deadline, group_of(0), crash),
                run_once(&other, deadline, group_of(1), crash),
            );
            a || b
        } else {
            run_once(&dispatcher, deadline, None, crash).await
        };
        crashes.fetch_add(usize::from(crashed), std::sync::atomic::Ordering::Relaxed);
        if mem.len() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let split_groups = faults.split_groups.lock().unwrap().clone();
    let mut found = check(&shape, &jobs, &sink.sent(), &split_groups);
    found.crashes = crashes.into_inner();
    found.ledger_max_bytes = mem.state.lock().unwrap().ledger_max_bytes;
    found
}

/// The invariants over what SQS accepted (`sent`, each stamped by its sender's clock).
fn check(
    shape: &Shape,
    jobs: &HashMap<String, Job>,
    sent: &[crate::testing::Sent],
    split_groups: &[(String, String)],
) -> Found {
    let Shape { rate, order, chaos, .. } = *shape;
    let mut found = Found {
        jobs: jobs.len(),
        ..Found::default()
    };
    let violations = &mut found.violations;
    let mut arrived: HashMap<&str, i64> = HashMap::new();
    let mut units: HashMap<i64, u16> = HashMap::new();
    // Each FIFO group's jobs in the order SQS accepted their first copies (the order of
    // `sent`: the two processes' clocks differ).
    let mut group_order: HashMap<&str, Vec<&str>> = HashMap::new();
    for m in sent {
        let at = m.at + TimeDelta::seconds(i64::from(m.message.delay_seconds.unwrap_or(0)));
        let Some((body, job)) = jobs.get_key_value(&m.message.body) else {
            violations.push(format!("an unknown message {:?}", m.message.body));
            continue;
        };
        if at < job.perform_at {
            violations.push(format!("{body} early: {at} < {}", job.perform_at));
        }
        let first = !arrived.contains_key(body.as_str());
        if first {
            arrived.insert(body, at.timestamp());
            if let Some(g) = &job.group {
                group_order.entry(g).or_default().push(body);
            }
        } else if chaos {
            // A lost reply or a crash after the send: at least once, each copy booked.
            found.duplicates += 1;
        } else {
            violations.push(format!("{body} sent twice"));
        }
        if job.priority != 0 {
            *units.entry(at.timestamp()).or_default() += job.weight.min(rate);
        } else if shape.ahead && !chaos && !shape.fifo && at - job.perform_at >= TimeDelta::seconds(1) {
            // Read ahead, a critical job is sent at its instant: not held back by the budget.
            violations.push(format!("{body} (critical) late: {at} for {}", job.perform_at));
        }
    }
    for body in jobs.keys() {
        if !arrived.contains_key(body.as_str()) {
            violations.push(format!("{body} lost"));
        }
    }
    for (second, n) in &units {
        if *n > rate {
            violations.push(format!(
                "{n} units arrived in second {second}, over the budget of {rate}"
            ));
        }
    }
    // FIFO: priority reorders nothing; each group in the order its jobs fell due, but for the
    // documented limit: a later entry accepted in the batch where an earlier one failed.
    for (group, bodies) in &group_order {
        for (i, first) in bodies.iter().enumerate() {
            for then in &bodies[i + 1..] {
                let (a, b) = (&jobs[*first], &jobs[*then]);
                let split = split_groups.contains(&(then.to_string(), first.to_string()));
                if b.perform_at < a.perform_at && !split {
                    violations.push(format!(
                        "group {group}: {first} (due {}, priority {}) arrived before {then} (due {}, priority {})",
                        a.perform_at, a.priority, b.perform_at, b.priority
                    ));
                }
            }
        }
    }
    if shape.fifo || chaos {
        return found;
    }
    for (a, ja) in jobs {
        for (b, jb) in jobs {
            // A critical job books nothing and waits for no one: it arrives at its own time
            // (checked above), in whichever second that is.
            let together = order == "priority" || ja.perform_at.timestamp() == jb.perform_at.timestamp();
            if together && ja.priority < jb.priority && ja.priority != 0 {
                if let (Some(sa), Some(sb)) = (arrived.get(a.as_str()), arrived.get(b.as_str())) {
                    // Held back (later than the second it wants when sent at its own instant)
                    // while the other took that second or a later one. (A job due at a
                    // second's end wants the next: one due earlier may take the second before
                    // it, which it never wanted.)
                    let own = (ja.perform_at + crate::poller::SEND_GUARD).timestamp();
                    if sa > sb && *sa > own && *sb >= own {
                        violations.push(format!(
                            "{order} order: {a} (priority {}) arrived in {sa}, after {b} (priority {}) in {sb}",
                            ja.priority, jb.priority
                        ));
                    }
                }
            }
        }
    }
    found
}

#[test]
fn random_priorities_and_weights_under_a_random_rate_keep_the_budget_and_the_order() {
    let seeds = super::seed_list(1000);
    let mut total = Found::default();
    let mut chaotic = 0;
    let mut failing = 0;
    for seed in &seeds {
        let found = super::in_own_runtime(simulate(*seed));
        if std::env::var("SIM_ALL").is_ok() && !found.violations.is_empty() {
            // Every failing seed, not only the first (for a survey of a new check).
            println!("seed {seed}: {}", found.violations.join(" | "));
            failing += 1;
            continue;
        }
        assert!(
            found.violations.is_empty(),
            "seed {seed} broke an invariant (replay with SIM_SEED={seed}):\n{}",
            found.violations.join("\n")
        );
        total.jobs += found.jobs;
        total.crashes += found.crashes;
        total.duplicates += found.duplicates;
        total.ledger_max_bytes = total.ledger_max_bytes.max(found.ledger_max_bytes);
        chaotic += usize::from(found.crashes > 0 || found.duplicates > 0);
    }
    println!(
        "priority simulation: {} seeds, {} jobs, {} crashed runs, {} duplicates, largest ledger item {} bytes, 0 violations",
        seeds.len(),
        total.jobs,
        total.crashes,
        total.duplicates,
        total.ledger_max_bytes
    );
    assert_eq!(failing, 0, "{failing} seeds broke an invariant (listed above)");
    if seeds.len() > 100 {
        assert!(total.crashes > 0 && chaotic > 0, "the chaos was never exercised");
    }
}
