//! Debounce beside poller runs, crashes and faults (issue 61; DESIGN "Debounce"). Callers send
//! `enqueue` with `on_duplicate` `replace` or `extend` for a few ids, often, with times from a
//! little in the past to half a minute ahead; poller runs (some dropped mid-way, as a crash)
//! and store and queue faults go on beside them; callers may give up on a call (dropped).
//!
//! The promise, checked for every call that answered: a message with that call's body
//! (`replace`, or `extend` that stored a new job) or with one of the id's bodies (`extend` of a
//! stored job keeps its body) arrives at or after that call's time, unless a later call of the
//! same id (answered or not) superseded it: then a message of that call or a later one arrives
//! at or after the earliest of their times. No message arrives before the earliest time any
//! call of its id asked for.

use super::*;

/// What an answered call promised.
struct Promise {
    id: String,
    /// The call's place among all calls, answered or not.
    seq: usize,
    /// `Some` when the message must carry this body; `None` for an `extend` of a stored job.
    body: Option<String>,
    at: DateTime<Utc>,
}

#[derive(Debug, Default)]
pub(super) struct DebounceOutcome {
    pub calls: usize,
    pub replaced: usize,
    pub crashes: usize,
    pub violations: Vec<String>,
}

async fn simulate_debounce(seed: u64) -> DebounceOutcome {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x00de_b0c3);
    let clock = FakeClock::default();
    let faults = Faults::seeded(
        seed.wrapping_mul(0x5851_f42d),
        if rng.random_bool(0.5) { 0.15 } else { 0.0 },
    )
    .with_latency(rng.random_range(0..30));
    let mem = super::lagging_store(&mut rng);
    let sink = FakeQueue::new(clock.clone());
    let (store, queue) = faults.around(&mem, &sink);
    let settings = [
        ("WAITER_SHARDS", rng.random_range(1..=3).to_string()),
        ("WAITER_LOOKAHEAD", rng.random_range(0..=20).to_string()),
        (
            "WAITER_HISTORY_DAYS",
            if rng.random_bool(0.5) { "7" } else { "0" }.to_string(),
        ),
    ];
    let settings: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let cfg = config("q", &settings);
    let waiter = Waiter::new(cfg.clone(), store.clone(), queue.clone(), clock.clone());
    let dispatcher = Dispatcher::new(cfg, store, queue, clock.clone());
    let mut out = DebounceOutcome::default();
    let mut promises: Vec<Promise> = Vec::new();
    // The time each body was asked for: no message of it may arrive earlier.
    let mut asked: HashMap<String, DateTime<Utc>> = HashMap::new();
    // Every call made, answered or not, in order: (id, body, time asked).
    let mut made: Vec<(String, String, DateTime<Utc>)> = Vec::new();
    for step in 0..rng.random_range(20..60) {
        match rng.random_range(0..10) {
            0..=4 => {
                let id = format!("d{}", rng.random_range(0..3));
                let body = format!("{id}#{step}");
                let extend = rng.random_bool(0.3);
                let at = clock.now() + TimeDelta::milliseconds(rng.random_range(-2_000..30_000));
                let request = json!({"queue": "q", "job_id": id, "message_body": body, "perform_at": format_rfc3339(at),
                                     "on_duplicate": if extend { "extend" } else { "replace" }});
                asked.insert(body.clone(), at);
                made.push((id.clone(), body.clone(), at));
                out.calls += 1;
                // A caller that gives up drops its call: no answer, no promise.
                let call = waiter.handle(&request);
                let answered = if rng.random_bool(0.1) {
                    tokio::time::timeout(Duration::from_millis(rng.random_range(0..50)), call)
                        .await
                        .ok()
                } else {
                    Some(call.await)
                };
                let Some(Ok(reply)) = answered else { continue };
                let replaced = reply["replaced"] == true;
                out.replaced += usize::from(replaced);
                // The time as stored (a past time reads as the call's now).
                let at = parse_time(&reply["perform_at"]).unwrap_or(at).max(at);
                promises.push(Promise {
                    id,
                    seq: made.len() - 1,
                    body: (!(extend && replaced)).then_some(body),
                    at,
                });
            }
            5..=7 => {
                let deadline = clock.now() + TimeDelta::seconds(rng.random_range(5..30));
                if rng.random_bool(0.2) {
                    out.crashes += 1;
                    let after = Duration::from_millis(rng.random_range(0..3_000));
                    let _ = tokio::time::timeout(after, dispatcher.run(deadline)).await;
                } else {
                    dispatcher.run(deadline).await;
                }
            }
            _ => tokio::time::sleep(Duration::from_millis(rng.random_range(0..5_000))).await,
        }
    }
    faults.off();
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_secs(30)).await;
        dispatcher.run(clock.now() + TimeDelta::seconds(60)).await;
    }
    let delivered: Vec<(String, DateTime<Utc>)> = sink
        .sent()
        .iter()
        .map(|s| {
            let arrival = s.at + TimeDelta::seconds(i64::from(s.message.delay_seconds.unwrap_or(0)));
            (s.message.body.clone(), arrival)
        })
        .collect();
    for p in &promises {
        let later: Vec<&(String, String, DateTime<Utc>)> =
            made[p.seq + 1..].iter().filter(|(id, _, _)| *id == p.id).collect();
        let kept = if later.is_empty() {
            delivered.iter().any(|(body, arrival)| {
                *arrival >= p.at
                    && match &p.body {
                        Some(b) => body == b,
                        None => body.starts_with(&format!("{}#", p.id)),
                    }
            })
        } else {
            let from = later.iter().map(|(_, _, t)| *t).fold(p.at, DateTime::min);
            delivered.iter().any(|(body, arrival)| {
                *arrival >= from
                    && (p.body.as_ref().is_none_or(|b| body == b)
                        || later.iter().any(|(_, b, _)| b == body)
                        || (p.body.is_none() && body.starts_with(&format!("{}#", p.id))))
            })
        };
        if !kept {
            out.violations.push(format!(
                "{}: no message with {:?} at or after {} (delivered: {delivered:?})",
                p.id, p.body, p.at
            ));
        }
    }
    for (body, arrival) in &delivered {
        // Extend may move a body earlier than its own call asked; never before the earliest
        // time any call of its id asked after it was stored.
        let id = body.split('#').next().unwrap_or_default();
        let earliest = asked
            .iter()
            .filter(|(b, _)| b.starts_with(&format!("{id}#")))
            .map(|(_, t)| *t)
            .min();
        if earliest.is_some_and(|t| *arrival < t) {
            out.violations
                .push(format!("{body}: arrived at {arrival}, before any call asked"));
        }
    }
    if active_jobs(&mem) != 0 {
        out.violations.push(format!("{} jobs never sent", active_jobs(&mem)));
    }
    out
}

/// Runs the debounce seeds (`SIM_SEEDS`, else `default`; `SIM_SEED=s` replays one).
pub(super) fn run_debounce_seeds(default: u64) -> (usize, DebounceOutcome) {
    let seeds = seed_list(default);
    let mut total = DebounceOutcome::default();
    for seed in &seeds {
        let o = super::in_own_runtime(simulate_debounce(*seed));
        assert!(
            o.violations.is_empty(),
            "debounce seed {seed} broke the promise (replay with SIM_SEED={seed}):\n{}",
            o.violations.join("\n")
        );
        total.calls += o.calls;
        total.replaced += o.replaced;
        total.crashes += o.crashes;
    }
    (seeds.len(), total)
}
