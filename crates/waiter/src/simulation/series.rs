//! Series in the simulation (issue 47): random interleavings of series enqueued (every-n and
//! cron, starts in the past and ahead, each `catch_up`, a `count` so that each ends) beside
//! one-off jobs, poller runs that crash, seeded store and queue faults, callers cancelling and
//! rescheduling series beside the runs, and consumers retrying occurrences they received.
//!
//! Invariants, per seed:
//! - never early: no occurrence arrives before its instant, and its `waiter.job_id` names it;
//! - none after `cancelled`: SQS accepts no occurrence of a series after `cancel` answered
//!   `cancelled` for it;
//! - a reschedule holds: after `reschedule` answered, SQS accepts no occurrence before the new
//!   start;
//! - none skipped except as the policy says: of a series neither cancelled nor rescheduled,
//!   `all` delivers every occurrence up to its count, and `skip` and `one` leave out only
//!   occurrences that were more than 60 s late when the next one was sent;
//! - at most once: in a seed without faults or crashes, no occurrence is accepted twice;
//! - one-off jobs beside them: each acknowledged one is delivered, never early;
//! - a retried occurrence (`retry` under its `{id}@{epoch}`, answered `scheduled`): its attempt
//!   2 is delivered under that id, never before the time the answer named.

use super::*;
use crate::repeat::MISSED_AFTER;
use crate::testing::Sent;
use sqs_waiter_contract::{ATTEMPT_ATTRIBUTE, JOB_ID_ATTRIBUTE, OCCURRENCE_ATTRIBUTE};

type SimWaiter = Waiter<FaultyStore<MemStore>, FaultyQueue<FakeQueue>, FakeClock>;

#[derive(Debug)]
struct Tracked {
    every_s: i64,
    start: DateTime<Utc>,
    count: u64,
    catch_up: &'static str,
    acknowledged: bool,
    /// When `cancel` answered `cancelled`.
    cancelled_at: Option<DateTime<Utc>>,
    /// A cancel or reschedule whose reply was lost or refused: it may have taken effect.
    unknown: bool,
    /// When `reschedule` answered, and the new start.
    rescheduled: Option<(DateTime<Utc>, DateTime<Utc>)>,
}

#[derive(Debug, Default)]
pub(super) struct SeriesOutcome {
    pub(super) violations: Vec<String>,
    pub(super) series: usize,
    pub(super) occurrences: usize,
    pub(super) duplicates: usize,
    pub(super) crashes: usize,
    pub(super) cancelled: usize,
    pub(super) rescheduled: usize,
    /// Occurrences retried whose attempt 2 was scheduled.
    pub(super) retries: usize,
}

fn text<'a>(s: &'a Sent, name: &str) -> Option<&'a str> {
    match &s.message.attributes.get(name)?.data {
        crate::job::AttributeData::String(v) => Some(v),
        crate::job::AttributeData::Binary(_) => None,
    }
}

struct SeriesWorld {
    rng: StdRng,
    waiter: SimWaiter,
    mem: MemStore,
    clock: FakeClock,
    tracked: std::collections::BTreeMap<String, Tracked>,
    out: SeriesOutcome,
    sink: FakeQueue,
    /// One-off jobs: the `perform_at` an acknowledged enqueue answered.
    one_offs: std::collections::BTreeMap<String, Option<DateTime<Utc>>>,
    /// Occurrences retried: the `perform_at` of attempt 2, when `retry` answered `scheduled`.
    retried: std::collections::BTreeMap<String, Option<DateTime<Utc>>>,
}

impl SeriesWorld {
    async fn enqueue(&mut self) {
        let id = format!("s{}", self.tracked.len());
        let every_s = [60, 120, 300][self.rng.random_range(0..3)];
        // Whole minutes, so that `every_s` and the equivalent cron name the same instants.
        let now = self.clock.now();
        let minute = now.timestamp() - now.timestamp().rem_euclid(60);
        let start = DateTime::from_timestamp(minute + 60 * self.rng.random_range(-10..4), 0).expect("time");
        let catch_up = ["skip", "one", "all"][self.rng.random_range(0..3)];
        let count = self.rng.random_range(1..=5u64);
        let repeat = if every_s == 60 && self.rng.random_bool(0.5) {
            json!({"cron": "* * * * *", "catch_up": catch_up, "count": count})
        } else {
            json!({"every_s": every_s, "catch_up": catch_up, "count": count})
        };
        let request = json!({"queue": "q", "job_id": id, "message_body": format!("series-{id}"),
                             "perform_at": format_rfc3339(start), "repeat": repeat});
        let acknowledged = self.waiter.handle(&request).await.is_ok();
        self.tracked.insert(
            id,
            Tracked {
                every_s,
                start,
                count,
                catch_up,
                acknowledged,
                cancelled_at: None,
                unknown: false,
                rescheduled: None,
            },
        );
    }

    /// A series to act on: mostly one still stored (one a run may be sending), else any.
    fn pick(&mut self) -> Option<String> {
        let stored: Vec<String> = {
            let state = self.mem.state.lock().unwrap();
            self.tracked
                .keys()
                .filter(|id| state.items.keys().any(|(_, _, j)| j == *id))
                .cloned()
                .collect()
        };
        if !stored.is_empty() && self.rng.random_bool(0.8) {
            return Some(stored[self.rng.random_range(0..stored.len())].clone());
        }
        let ids: Vec<&String> = self.tracked.keys().collect();
        (!ids.is_empty()).then(|| ids[self.rng.random_range(0..ids.len())].clone())
    }

    async fn cancel(&mut self) {
        let Some(id) = self.pick() else { return };
        let r = self
            .waiter
            .handle(&json!({"action": "cancel", "queue": "q", "job_id": id}))
            .await;
        let now = self.clock.now();
        let t = self.tracked.get_mut(&id).expect("tracked");
        match r.as_ref().map(|v| v["status"].as_str().unwrap_or_default()) {
            Ok("cancelled") => {
                t.cancelled_at.get_or_insert(now);
                self.out.cancelled += 1;
            }
            Ok(_) => {}
            Err(_) => t.unknown = true,
        }
    }

    async fn reschedule(&mut self) {
        let Some(id) = self.pick() else { return };
        let now = self.clock.now();
        let minute = now.timestamp() - now.timestamp().rem_euclid(60);
        let start = DateTime::from_timestamp(minute + 60 * self.rng.random_range(1..4), 0).expect("time");
        let r = self
            .waiter
            .handle(&json!({"action": "reschedule", "queue": "q", "job_id": id,
                            "perform_at": format_rfc3339(start)}))
            .await;
        let now = self.clock.now();
        let t = self.tracked.get_mut(&id).expect("tracked");
        match r.as_ref().map(|v| v["status"].as_str().unwrap_or_default()) {
            Ok("rescheduled") => {
                t.rescheduled = Some((now, start));
                self.out.rescheduled += 1;
            }
            Ok(_) => {}
            Err(_) => t.unknown = true,
        }
    }

    /// A move sent before lands again now (an SDK retry whose first attempt was applied, or a
    /// request DynamoDB applies after its caller gave up): conditioned on the edition, it finds
    /// the series moved on and changes nothing.
    async fn stale_move_lands(&mut self) {
        let stale = {
            let log = self.mem.moves_sent.lock().unwrap();
            let log = log.as_ref().expect("moves are kept");
            (!log.is_empty()).then(|| log[self.rng.random_range(0..log.len())].clone())
        };
        if let Some((queue, r)) = stale {
            let _ = crate::ports::Jobs::retire(&self.mem, &queue, &[r]).await;
        }
    }

    async fn enqueue_one_off(&mut self) {
        let id = format!("o{}", self.one_offs.len());
        let delay = self.rng.random_range(0..120);
        let r = self
            .waiter
            .handle(
                &json!({"queue": "q", "job_id": id, "message_body": format!("oneoff-{id}"),
                            "delay_seconds": delay}),
            )
            .await;
        let due = r.ok().and_then(|v| parse_time(&v["perform_at"]));
        self.one_offs.insert(id, due);
    }

    /// A consumer hands back an occurrence it received, under the id its message names.
    async fn retry_occurrence(&mut self) {
        let now = self.clock.now();
        let received: Vec<String> = self
            .sink
            .sent()
            .iter()
            .filter(|s| s.message.body.starts_with("series-") && text(s, ATTEMPT_ATTRIBUTE).is_none())
            .filter(|s| s.at + TimeDelta::seconds(i64::from(s.message.delay_seconds.unwrap_or(0))) <= now)
            .filter_map(|s| text(s, JOB_ID_ATTRIBUTE).map(str::to_owned))
            .filter(|id| !self.retried.contains_key(id))
            .collect();
        if received.is_empty() {
            return;
        }
        let id = received[self.rng.random_range(0..received.len())].clone();
        let series = id.split('@').next().unwrap_or_default().to_owned();
        let request = json!({"action": "retry", "queue": "q", "job_id": id, "attempt": 1,
                             "message_body": format!("series-{series}"),
                             "message_attributes": {"waiter.job_id": {"data_type": "String", "string_value": id}},
                             "backoff": {"base_s": self.rng.random_range(1..=4), "jitter": false}});
        let answered = match self.waiter.handle(&request).await {
            Ok(r) if r["status"] == "scheduled" => parse_time(&r["perform_at"]),
            // Unknown: it may have been scheduled; a later delivery is not required.
            _ => None,
        };
        self.retried.insert(id, answered);
    }

    async fn beside(&mut self) {
        match self.rng.random_range(0..3) {
            0 => self.cancel().await,
            1 => self.retry_occurrence().await,
            _ => self.reschedule().await,
        }
    }
}

async fn simulate_series(seed: u64) -> SeriesOutcome {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x005e_81e5);
    let clock = FakeClock::default();
    let faulty = rng.random_bool(0.5);
    let faults = Faults::seeded(seed.wrapping_mul(0x2545_f491), if faulty { 0.15 } else { 0.0 })
        .with_latency(rng.random_range(0..30));
    let mem = MemStore {
        page_size: rng.random_range(1..8),
        index_lag: Duration::from_millis(rng.random_range(0..2_000)),
        moves_sent: std::sync::Arc::new(std::sync::Mutex::new(Some(Vec::new()))),
        ..MemStore::default()
    };
    // Crashes in half the seeds, so that the seeds with neither crashes nor faults check that no
    // occurrence is sent twice.
    let crashy = rng.random_bool(0.5);
    let sink = FakeQueue::new(clock.clone());
    let store = FaultyStore {
        inner: mem.clone(),
        faults: faults.clone(),
    };
    let queue = FaultyQueue {
        inner: sink.clone(),
        faults: faults.clone(),
    };
    let settings = [
        ("WAITER_SHARDS", rng.random_range(1..=3).to_string()),
        ("WAITER_LOOKAHEAD", rng.random_range(0..=90).to_string()),
        (
            "WAITER_HISTORY_DAYS",
            if rng.random_bool(0.5) { "7" } else { "0" }.to_string(),
        ),
    ];
    let settings: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let cfg = config("q", &settings);
    let waiter = Waiter::new(cfg.clone(), store.clone(), queue.clone(), clock.clone());
    let dispatcher = Dispatcher::new(cfg, store, queue, clock.clone());
    let mut w = SeriesWorld {
        sink: sink.clone(),
        one_offs: std::collections::BTreeMap::new(),
        retried: std::collections::BTreeMap::new(),
        rng,
        waiter,
        mem: mem.clone(),
        clock: clock.clone(),
        tracked: std::collections::BTreeMap::new(),
        out: SeriesOutcome::default(),
    };
    for _ in 0..w.rng.random_range(20..50) {
        match w.rng.random_range(0..12) {
            0..=2 => w.enqueue().await,
            10 => w.enqueue_one_off().await,
            11 => w.retry_occurrence().await,
            3..=6 => {
                let deadline = w.clock.now() + TimeDelta::seconds(w.rng.random_range(5..30));
                let crash_after =
                    (crashy && w.rng.random_bool(0.2)).then(|| Duration::from_millis(w.rng.random_range(0..3_000)));
                let run = async {
                    match crash_after {
                        Some(after) => drop(tokio::time::timeout(after, dispatcher.run(deadline)).await),
                        None => drop(dispatcher.run(deadline).await),
                    }
                };
                if w.rng.random_bool(0.5) {
                    let at = Duration::from_millis(w.rng.random_range(0..200));
                    let beside = async {
                        tokio::time::sleep(at).await;
                        w.beside().await;
                    };
                    tokio::join!(run, beside);
                } else {
                    run.await;
                }
                w.out.crashes += usize::from(crash_after.is_some());
            }
            7 => w.cancel().await,
            8 if w.rng.random_bool(0.5) => w.reschedule().await,
            8 => w.stale_move_lands().await,
            _ => tokio::time::sleep(Duration::from_millis(w.rng.random_range(0..90_000))).await,
        }
    }
    // Calm: every series reaches its count (one occurrence a run, `all` one missed a run).
    faults.off();
    tokio::time::sleep(Duration::from_secs(70)).await;
    for _ in 0..40 {
        dispatcher.run(clock.now() + TimeDelta::seconds(60)).await;
        if active_jobs(&mem) == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_secs(60)).await;
    }
    let SeriesWorld {
        tracked,
        mut out,
        one_offs,
        retried,
        ..
    } = w;
    let sent = sink.sent();
    let (attempts, others): (Vec<Sent>, Vec<Sent>) =
        sent.into_iter().partition(|s| text(s, ATTEMPT_ATTRIBUTE).is_some());
    check(&mut out, &tracked, &others, faulty);
    check_beside(&mut out, &one_offs, &retried, &others, &attempts);
    if active_jobs(&mem) != 0 {
        out.violations
            .push(format!("{} series never finished", active_jobs(&mem)));
    }
    out.series = tracked.len();
    out
}

fn check(out: &mut SeriesOutcome, tracked: &std::collections::BTreeMap<String, Tracked>, sent: &[Sent], faulty: bool) {
    let crashes = out.crashes;
    let mut by_series: HashMap<&str, Vec<(DateTime<Utc>, &Sent)>> = HashMap::new();
    for s in sent {
        let Some(id) = s.message.body.strip_prefix("series-") else {
            continue;
        };
        let Some(at) = text(s, OCCURRENCE_ATTRIBUTE).and_then(|t| parse_time(&json!(t))) else {
            out.violations
                .push(format!("{id}: a message without {OCCURRENCE_ATTRIBUTE}"));
            continue;
        };
        out.occurrences += 1;
        let arrival = s.at + TimeDelta::seconds(i64::from(s.message.delay_seconds.unwrap_or(0)));
        if arrival < at {
            out.violations
                .push(format!("{id}: occurrence {at} arrived early, at {arrival}"));
        }
        if text(s, JOB_ID_ATTRIBUTE) != Some(format!("{id}@{}", at.timestamp()).as_str()) {
            out.violations
                .push(format!("{id}: occurrence {at} named {:?}", text(s, JOB_ID_ATTRIBUTE)));
        }
        by_series.entry(id).or_default().push((at, s));
    }
    for (id, t) in tracked {
        let mut got = by_series.remove(id.as_str()).unwrap_or_default();
        got.sort_by_key(|(at, s)| (*at, s.at));
        if let Some(cancelled) = t.cancelled_at {
            for (at, s) in got.iter().filter(|(_, s)| s.at > cancelled) {
                out.violations.push(format!(
                    "{id}: occurrence {at} sent at {} after cancelled at {cancelled}",
                    s.at
                ));
            }
        }
        // (A cancel or reschedule without an answer may have restarted it later.)
        if let Some((answered, start)) = t.rescheduled.filter(|_| !t.unknown) {
            for (at, s) in got.iter().filter(|(at, s)| s.at > answered && *at < start) {
                out.violations.push(format!(
                    "{id}: occurrence {at} sent at {} before the restart {start} answered at {answered} ({t:?})",
                    s.at
                ));
            }
        }
        let mut distinct: Vec<(DateTime<Utc>, DateTime<Utc>)> = Vec::new();
        for (at, s) in &got {
            match distinct.last() {
                Some((last, _)) if last == at => {
                    out.duplicates += 1;
                    // A restart at an instant already handed over sends it again, as asked.
                    if !faulty && crashes == 0 && t.rescheduled.is_none() && !t.unknown {
                        out.violations
                            .push(format!("{id}: occurrence {at} sent twice without a fault or crash"));
                    }
                }
                _ => distinct.push((*at, s.at)),
            }
        }
        if !t.acknowledged || t.cancelled_at.is_some() || t.unknown || t.rescheduled.is_some() {
            continue;
        }
        let step = TimeDelta::seconds(t.every_s);
        let on_grid = |at: &DateTime<Utc>| *at >= t.start && (*at - t.start).num_seconds() % t.every_s == 0;
        for (at, _) in distinct.iter().filter(|(at, _)| !on_grid(at)) {
            out.violations
                .push(format!("{id}: {at} is not one of its occurrences ({t:?})"));
        }
        // Each series ends at its count: the calm drain gives every policy the runs it needs. A
        // crash or a lost reply between a send and the move may add one (the same occurrence
        // again, or for `skip` and `one` a later one, decided anew), as it may deliver a one-off
        // job twice; `occurrences` counts what was moved past.
        let exact = !faulty && crashes == 0;
        let n = distinct.len() as u64;
        if n < t.count || (exact && n != t.count) {
            out.violations.push(format!(
                "{id}: {} occurrences delivered of {} ({t:?})",
                distinct.len(),
                t.count
            ));
        }
        let Some((last, _)) = distinct.last().copied() else {
            continue;
        };
        // Left out only if missed: more than 60 s late when the next one sent was sent; `all`
        // leaves out none.
        let mut i = t.start;
        while i < last {
            if !distinct.iter().any(|(at, _)| *at == i) {
                let (next, sent_at) = distinct.iter().find(|(at, _)| *at > i).copied().unwrap_or((last, last));
                if t.catch_up == "all" || i >= sent_at - MISSED_AFTER {
                    out.violations.push(format!(
                        "{id}: {i} left out ({}) though {next} was sent at {sent_at}",
                        t.catch_up
                    ));
                }
            }
            i += step;
        }
    }
}

/// The one-off jobs and the retried occurrences beside the series: delivered, never early.
fn check_beside(
    out: &mut SeriesOutcome,
    one_offs: &std::collections::BTreeMap<String, Option<DateTime<Utc>>>,
    retried: &std::collections::BTreeMap<String, Option<DateTime<Utc>>>,
    sent: &[Sent],
    attempts: &[Sent],
) {
    let arrival = |s: &Sent| s.at + TimeDelta::seconds(i64::from(s.message.delay_seconds.unwrap_or(0)));
    for (id, due) in one_offs {
        let body = format!("oneoff-{id}");
        let got: Vec<&Sent> = sent.iter().filter(|s| s.message.body == body).collect();
        if let Some(due) = due {
            if got.is_empty() {
                out.violations.push(format!("{id}: acknowledged, never delivered"));
            }
            for s in got.iter().filter(|s| arrival(s) < *due) {
                out.violations
                    .push(format!("{id}: arrived {} before {due}", arrival(s)));
            }
        }
    }
    for (id, due) in retried {
        let got: Vec<&Sent> = attempts
            .iter()
            .filter(|s| text(s, JOB_ID_ATTRIBUTE) == Some(id.as_str()))
            .collect();
        if got.iter().any(|s| text(s, ATTEMPT_ATTRIBUTE) != Some("2")) {
            out.violations.push(format!("{id}: an attempt other than 2 was sent"));
        }
        if let Some(due) = due {
            if got.is_empty() {
                out.violations
                    .push(format!("{id}: retry answered scheduled, attempt 2 never delivered"));
            }
            for s in got.iter().filter(|s| arrival(s) < *due) {
                out.violations
                    .push(format!("{id}: attempt 2 arrived {} before {due}", arrival(s)));
            }
            out.retries += 1;
        }
    }
}

/// Runs the series seeds (`SIM_SEEDS`, else `default`; `SIM_SEED=s` replays one).
pub(super) async fn run_series_seeds(default: u64) -> (usize, SeriesOutcome) {
    let seeds = seed_list(default);
    let mut total = SeriesOutcome::default();
    for seed in &seeds {
        let o = simulate_series(*seed).await;
        assert!(
            o.violations.is_empty(),
            "series seed {seed} broke an invariant (replay with SIM_SEED={seed}):\n{}",
            o.violations.join("\n")
        );
        total.series += o.series;
        total.occurrences += o.occurrences;
        total.duplicates += o.duplicates;
        total.crashes += o.crashes;
        total.cancelled += o.cancelled;
        total.rescheduled += o.rescheduled;
        total.retries += o.retries;
    }
    (seeds.len(), total)
}
