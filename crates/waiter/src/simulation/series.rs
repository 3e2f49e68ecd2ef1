//! Series in the simulation (issue 47): random interleavings of series enqueued (every-n and
//! cron, starts in the past and ahead, each `catch_up`, a `count` so that each ends, a random
//! priority, windows for a third) beside one-off jobs, poller runs that crash, seeded store and queue faults, callers
//! cancelling and rescheduling series beside the runs, and consumers retrying occurrences they
//! received, and retrying under the series' own id as a consumer without the message's
//! attributes would. A third of the seeds run on a FIFO queue at the default hold, a third
//! under `WAITER_MAX_RATE`, and in a third SQS refuses some occurrences once: they are parked
//! and redriven (issue 60).
//!
//! Invariants, per seed (`series_checks.rs`):
//! - never early: no occurrence arrives before its instant, and its `waiter.job_id` names it;
//! - none after `cancelled`: SQS accepts no occurrence of a series after `cancel` answered
//!   `cancelled` for it;
//! - a reschedule holds: after `reschedule` answered, SQS accepts no occurrence before the new
//!   start;
//! - none skipped except as the policy says: of a series neither cancelled nor rescheduled,
//!   `all` delivers every occurrence up to its count, and `skip` and `one` leave out only
//!   occurrences that were more than 60 s late when the next one was sent, and none that the
//!   first run after it found on time (that run whole, after a recent one; seeds without
//!   faults);
//! - what `catch_up` sends of the missed ones (seeds without the rate, which may hold an
//!   occurrence back for longer): `skip` none, `one` only the latest;
//! - a retry under a stored series' own id is refused (and the series then reaches its count);
//! - a parked occurrence, redriven, is delivered under its own id, and its series goes on;
//! - a windowed series arrives only inside its windows, and at each opening `skip` and `one`
//!   send the latest occurrence held for it;
//! - at most once: in a seed without faults or crashes, no occurrence is accepted twice;
//! - one-off jobs beside them: each acknowledged one is delivered, never early;
//! - a retried occurrence (`retry` under its `{id}@{epoch}`, answered `scheduled`): its attempt
//!   2 is delivered under that id, never before the time the answer named.

use super::series_checks::{check, check_beside, text, windows_field, RunRecord, Seed, SeriesOutcome, Tracked};
use super::*;
use crate::testing::Sent;
use sqs_waiter_contract::{ATTEMPT_ATTRIBUTE, JOB_ID_ATTRIBUTE};

type SimWaiter = Waiter<FaultyStore<MemStore>, FaultyQueue<FakeQueue>, FakeClock>;

#[path = "series_steering.rs"]
mod steering;

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
    /// `q`, or `q.fifo` in a third of the seeds (at the default `WAITER_FIFO_HOLD`, 0).
    queue: &'static str,
    runs: Vec<RunRecord>,
    /// Parked occurrences redriven, answered `scheduled`.
    redriven: std::collections::BTreeSet<String>,
    /// The whole system's seeds: series triggered, their queue paused and resumed
    /// (`series_steering.rs`).
    steer: bool,
    pauses: super::series_checks::QueuePauses,
    /// The draws of series pauses (`series_steering.rs`), a schedule of their own.
    series_pauses: StdRng,
}

impl SeriesWorld {
    /// A request to this seed's queue: with `message_group_id` on a FIFO queue.
    fn request(&self, mut fields: Value) -> Value {
        fields["queue"] = json!(self.queue);
        if self.queue.ends_with(".fifo") && fields.get("action").is_none_or(|a| a == "enqueue" || a == "retry") {
            fields["message_group_id"] = json!("g");
        }
        fields
    }

    async fn enqueue(&mut self) {
        let id = format!("s{}", self.tracked.len());
        let every_s = [60, 120, 300][self.rng.random_range(0..3)];
        // Whole minutes, so that `every_s` and the equivalent cron name the same instants.
        let now = self.clock.now();
        let minute = now.timestamp() - now.timestamp().rem_euclid(60);
        let start = DateTime::from_timestamp(minute + 60 * self.rng.random_range(-10..4), 0).expect("time");
        let catch_up = ["skip", "one", "all"][self.rng.random_range(0..3)];
        let count = self.rng.random_range(1..=5u64);
        let mut repeat = if every_s == 60 && self.rng.random_bool(0.5) {
            json!({"cron": "* * * * *", "catch_up": catch_up, "count": count})
        } else {
            json!({"every_s": every_s, "catch_up": catch_up, "count": count})
        };
        // The whole system's seeds spell every other series as an EventBridge expression naming
        // the same instants (no draw, so the seed's draws stay as they were).
        if self.steer && self.tracked.len() % 2 == 1 {
            repeat = json!({"expression": expression_for(&repeat), "catch_up": catch_up, "count": count});
        }
        let priority = [0, 50, 100, 150][self.rng.random_range(0..4)];
        let mut request = self.request(json!({"job_id": id, "message_body": format!("series-{id}"),
                             "perform_at": format_rfc3339(start), "repeat": repeat, "priority": priority}));
        let windowed = self.rng.random_bool(0.3);
        if windowed {
            request["windows"] = windows_field();
            request["time_zone"] = json!("UTC");
        }
        let acknowledged = self.waiter.handle(&request).await.is_ok();
        let enqueued_at = self.clock.now();
        self.tracked.insert(
            id,
            Tracked {
                every_s,
                start,
                count,
                catch_up,
                acknowledged,
                windowed,
                enqueued_at,
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
            .handle(&self.request(json!({"action": "cancel", "job_id": id})))
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
            .handle(&self.request(json!({"action": "reschedule", "job_id": id,
                            "perform_at": format_rfc3339(start)})))
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
        let mut request = json!({"job_id": id, "message_body": format!("oneoff-{id}"), "delay_seconds": delay});
        // The whole system's seeds give every other one-off job as `schedule: at(...)`, to the
        // second after the delay.
        if self.steer && self.one_offs.len() % 2 == 1 {
            let at = self.clock.now() + TimeDelta::seconds(delay + 1);
            request = json!({"job_id": id, "message_body": format!("oneoff-{id}"),
                             "schedule": format!("at({})", at.format("%Y-%m-%dT%H:%M:%S"))});
        }
        let r = self.waiter.handle(&self.request(request)).await;
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
        let base_s = self.rng.random_range(1..=4);
        let request = self.request(json!({"action": "retry", "job_id": id, "attempt": 1,
                             "message_body": format!("series-{series}"),
                             "message_attributes": {"waiter.job_id": {"data_type": "String", "string_value": id}},
                             "backoff": {"base_s": base_s, "jitter": false}}));
        let answered = match self.waiter.handle(&request).await {
            Ok(r) if r["status"] == "scheduled" => parse_time(&r["perform_at"]),
            // Unknown: it may have been scheduled; a later delivery is not required.
            _ => None,
        };
        self.retried.insert(id, answered);
    }

    /// A consumer that follows the fallback for a message without `waiter.job_id` retries
    /// under the id it enqueued, the series' own: refused, and the series goes on (issue 60,
    /// defect 1: it used to replace the series with a one-off attempt 2).
    async fn retry_under_series_id(&mut self, alone: bool) {
        let Some(id) = self.pick() else { return };
        let stored = {
            let state = self.mem.state.lock().unwrap();
            state
                .items
                .values()
                .any(|j| j.job.job_id == id && j.job.repeat.is_some())
        };
        let request = self.request(json!({"action": "retry", "job_id": id, "attempt": 1,
                             "message_body": format!("series-{id}"), "backoff": {"base_s": 1, "jitter": false}}));
        let answer = self.waiter.handle(&request).await;
        // Beside a run the series may finish meanwhile; with history off nothing then knows the
        // id was a series, and the retry schedules attempt 2 of a job under it, as for any id.
        if let (true, true, Ok(r)) = (alone, stored, &answer) {
            self.out
                .violations
                .push(format!("{id}: a retry under the stored series' own id answered {r}"));
        }
    }

    /// An operator redrives a parked occurrence (or, in the calm, every one): it goes under its
    /// own id, and the series is not touched (issue 60, defect 7).
    async fn redrive_parked(&mut self, all: bool) {
        let parked: Vec<String> = {
            let state = self.mem.state.lock().unwrap();
            state
                .items
                .keys()
                .filter(|(_, p, _)| *p == Partition::Parked)
                .map(|(_, _, id)| id.clone())
                .collect()
        };
        let picked: Vec<String> = match (all, parked.is_empty()) {
            (_, true) => return,
            (true, _) => parked,
            (false, _) => vec![parked[self.rng.random_range(0..parked.len())].clone()],
        };
        for id in picked {
            let r = self
                .waiter
                .handle(&self.request(json!({"action": "redrive", "job_id": id})))
                .await;
            if r.is_ok_and(|r| r["status"] == "scheduled") {
                self.redriven.insert(id);
            }
        }
    }

    async fn beside(&mut self) {
        match self.rng.random_range(0..if self.steer { 5 } else { 4 }) {
            4 => self.steer().await,
            0 => self.cancel().await,
            1 => self.retry_occurrence().await,
            2 => self.retry_under_series_id(false).await,
            _ => self.reschedule().await,
        }
    }
}

/// Jobs still stored, parked ones included.
fn all_jobs(mem: &MemStore) -> usize {
    mem.state.lock().unwrap().items.len()
}

/// EventBridge Scheduler's spelling of the simulation's `every_s` or `* * * * *` rule.
fn expression_for(repeat: &Value) -> String {
    match repeat["every_s"].as_i64() {
        Some(60) => "rate(1 minute)".to_owned(),
        Some(s) => format!("rate({} minutes)", s / 60),
        None => "cron(* * * * ? *)".to_owned(),
    }
}

async fn simulate_series(seed: u64, steer: bool) -> SeriesOutcome {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x005e_81e5);
    let clock = FakeClock::default();
    let faulty = rng.random_bool(0.5);
    let faults = Faults::seeded(seed.wrapping_mul(0x2545_f491), if faulty { 0.15 } else { 0.0 })
        .with_latency(rng.random_range(0..30));
    let mem = MemStore {
        moves_sent: std::sync::Arc::new(std::sync::Mutex::new(Some(Vec::new()))),
        ..super::lagging_store(&mut rng)
    };
    // Crashes in half the seeds, so that the seeds with neither crashes nor faults check that no
    // occurrence is sent twice.
    let crashy = rng.random_bool(0.5);
    let sink = FakeQueue::new(clock.clone());
    let (store, queue) = faults.around(&mem, &sink);
    // A third of the seeds on a FIFO queue, a third under `WAITER_MAX_RATE`.
    let kind = rng.random_range(0..3);
    let queue_name = if kind == 1 { "q.fifo" } else { "q" };
    let rate = (kind == 2).then(|| rng.random_range(1..=5u32));
    // In a third of the seeds SQS refuses a fourth of the occurrences the first time they come
    // (as a queue whose limits an operator then fixes): each is parked and redriven.
    if rng.random_bool(0.33) {
        let refused = std::sync::Arc::new(std::sync::Mutex::new(std::collections::BTreeSet::new()));
        *sink.entry_fault.lock().unwrap() = Some(Box::new(move |m: &crate::ports::OutgoingMessage| {
            let id = match m.attributes.get(JOB_ID_ATTRIBUTE).map(|a| &a.data) {
                Some(crate::job::AttributeData::String(id)) if id.contains('@') => id.clone(),
                _ => return None,
            };
            let bad = id.bytes().map(u32::from).sum::<u32>() % 4 == 0;
            (bad && !m.attributes.contains_key(ATTEMPT_ATTRIBUTE) && refused.lock().unwrap().insert(id)).then(|| {
                crate::ports::EntryOutcome::Failed {
                    code: "InvalidParameterValue".into(),
                    message: "refused once".into(),
                    sender_fault: true,
                }
            })
        }));
    }
    let mut settings = vec![
        ("WAITER_SHARDS", rng.random_range(1..=3).to_string()),
        ("WAITER_LOOKAHEAD", rng.random_range(0..=90).to_string()),
        (
            "WAITER_HISTORY_DAYS",
            if rng.random_bool(0.5) { "7" } else { "0" }.to_string(),
        ),
    ];
    if let Some(r) = rate {
        settings.push(("WAITER_MAX_RATE", r.to_string()));
    }
    let settings: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let cfg = config(queue_name, &settings);
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
        queue: queue_name,
        runs: Vec::new(),
        redriven: std::collections::BTreeSet::new(),
        steer,
        pauses: super::series_checks::QueuePauses::default(),
        series_pauses: StdRng::seed_from_u64(seed ^ 0x5e71_e5ba_05ed_0071),
    };
    for _ in 0..w.rng.random_range(20..50) {
        match w.rng.random_range(0..if w.steer { 15 } else { 12 }) {
            12..=14 => w.steer().await,
            0..=2 => w.enqueue().await,
            10 => w.enqueue_one_off().await,
            11 if w.rng.random_bool(0.7) => w.retry_occurrence().await,
            11 => w.retry_under_series_id(true).await,
            3..=6 => {
                let deadline = w.clock.now() + TimeDelta::seconds(w.rng.random_range(5..30));
                let crash_after =
                    (crashy && w.rng.random_bool(0.2)).then(|| Duration::from_millis(w.rng.random_range(0..3_000)));
                let started = w.clock.now();
                let run = async {
                    let summary = match crash_after {
                        Some(after) => tokio::time::timeout(after, dispatcher.run(deadline)).await.ok(),
                        None => Some(dispatcher.run(deadline).await),
                    };
                    summary.is_some_and(|s| s.busy_partitions == 0 && s.errors.is_empty())
                };
                let whole = if w.rng.random_bool(0.5) {
                    let at = Duration::from_millis(w.rng.random_range(0..200));
                    let beside = async {
                        tokio::time::sleep(at).await;
                        w.beside().await;
                    };
                    tokio::join!(run, beside).0
                } else {
                    run.await
                };
                // A run that may have found the queue paused did not find its series.
                let paused = w.pauses.may_hold(started) || w.pauses.may_hold(w.clock.now());
                w.runs.push(RunRecord {
                    started,
                    whole: whole && !paused,
                });
                w.out.crashes += usize::from(crash_after.is_some());
            }
            7 => w.cancel().await,
            8 if w.rng.random_bool(0.5) => w.reschedule().await,
            8 => w.stale_move_lands().await,
            9 if w.rng.random_bool(0.3) => w.redrive_parked(false).await,
            _ => tokio::time::sleep(Duration::from_millis(w.rng.random_range(0..90_000))).await,
        }
    }
    // Calm: every series reaches its count (one occurrence a run, `all` one missed a run).
    faults.off();
    if w.steer {
        w.resume_everything().await;
    }
    tokio::time::sleep(Duration::from_secs(70)).await;
    // Up to two hours: a series in windows may wait for the last one, at 10:10.
    for _ in 0..120 {
        w.redrive_parked(true).await;
        let started = clock.now();
        let s = dispatcher.run(started + TimeDelta::seconds(60)).await;
        w.runs.push(RunRecord {
            started,
            whole: s.busy_partitions == 0 && s.errors.is_empty(),
        });
        if all_jobs(&mem) == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_secs(60)).await;
    }
    let SeriesWorld {
        tracked,
        mut out,
        one_offs,
        retried,
        runs,
        redriven,
        pauses,
        ..
    } = w;
    let sent = sink.sent();
    let (attempts, others): (Vec<Sent>, Vec<Sent>) =
        sent.into_iter().partition(|s| text(s, ATTEMPT_ATTRIBUTE).is_some());
    if steer {
        steering::check(&mut out, &tracked, &pauses, &others, rate.is_some(), &redriven, &runs);
    }
    let seed = Seed {
        faulty,
        rate: rate.is_some(),
        runs: &runs,
        redriven: &redriven,
        paused: steer.then_some(&pauses),
    };
    check(&mut out, &tracked, &others, &seed);
    check_beside(&mut out, &one_offs, &retried, &others, &attempts);
    if all_jobs(&mem) != 0 {
        out.violations.push(format!(
            "{} series or parked occurrences never finished: {:?}",
            all_jobs(&mem),
            mem.state.lock().unwrap().items.keys().collect::<Vec<_>>()
        ));
    }
    out.series = tracked.len();
    out.triggered = pauses.triggered;
    out.series_paused = pauses.series_answered.len();
    out.series_replaced = pauses.replaced;
    out
}

/// Runs the series seeds (`SIM_SEEDS`, else `default`; `SIM_SEED=s` replays one).
pub(super) fn run_series_seeds(default: u64, steer: bool) -> (usize, SeriesOutcome) {
    let seeds = seed_list(default);
    let mut total = SeriesOutcome::default();
    for seed in &seeds {
        let o = super::in_own_runtime(simulate_series(*seed, steer));
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
        total.redriven += o.redriven;
        total.triggered += o.triggered;
        total.series_paused += o.series_paused;
        total.series_replaced += o.series_replaced;
    }
    (seeds.len(), total)
}
