//! Deterministic simulation: random interleavings of enqueue, dispatch, crash, cancel and
//! reschedule over the
//! in-memory fakes, with store and queue calls failing on a seeded schedule (before or after they
//! take effect). A crash is a run dropped at a random await point, as when Lambda kills the
//! process; whatever the store holds survives, everything else is lost.
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
//!   the next opening fall due a day later, which the final drain reaches).
//!
//! `SIM_SEEDS=n` runs n seeds (default 3000); `SIM_SEED=s` replays one.

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

fn parse_time(v: &Value) -> Option<DateTime<Utc>> {
    v.as_str()
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.with_timezone(&Utc))
}

type SimWaiter = Waiter<FaultyStore<MemStore>, FaultyQueue<FakeQueue>, FakeClock>;

struct CancelCall {
    request: Value,
    made_at: DateTime<Utc>,
    /// The body stored when the caller sent it: the version a `cancelled` answer is about.
    stored_body: Option<String>,
}

struct RescheduleCall {
    request: Value,
    made_at: DateTime<Utc>,
    /// The new version's body.
    body: String,
    /// The body stored when the caller sent it: the version `rescheduled` replaces.
    stored_body: Option<String>,
}

/// One seed's world: the functions over the fakes, and what the simulation expects of them.
struct World {
    rng: StdRng,
    waiter: SimWaiter,
    mem: MemStore,
    clock: FakeClock,
    windows_on: bool,
    window_close: DateTime<Utc>,
    out: Outcome,
    expected: HashMap<String, Expected>,
    next_id: usize,
    version: u64,
    queue_of: HashMap<String, bool>,
}

impl World {
    /// A caller's batch of 1–5 jobs, mostly new ids, sometimes one used before; the caller may
    /// crash mid-batch and retry it once.
    async fn enqueue(&mut self) {
        let mut jobs = Vec::new();
        for _ in 0..self.rng.random_range(1..=5) {
            // Mostly new ids; sometimes an id used before (cancelled, sent or stored).
            let id = if self.next_id > 0 && self.rng.random_bool(0.2) {
                format!("j{}", self.rng.random_range(0..self.next_id))
            } else {
                self.next_id += 1;
                format!("j{}", self.next_id - 1)
            };
            self.version += 1;
            let body = format!("{id}@{}", self.version);
            let windowed = self.windows_on && self.rng.random_bool(0.5);
            // Windowed jobs crowd the window's close, where a rate limit spreads them.
            let at = if windowed {
                self.window_close - TimeDelta::milliseconds(self.rng.random_range(0..15_000))
            } else {
                self.clock.now() + TimeDelta::milliseconds(self.rng.random_range(-2_000..30_000))
            };
            let mut job = json!({"job_id": id, "message_body": body, "perform_at": format_rfc3339(at)});
            let fifo = self
                .queue_of
                .get(&id)
                .copied()
                .unwrap_or_else(|| self.rng.random_bool(0.3));
            self.queue_of.insert(id.clone(), fifo);
            if fifo {
                job["queue"] = json!("f.fifo");
                job["message_group_id"] = json!(format!("g{}", self.rng.random_range(0..3)));
            } else {
                job["queue"] = json!("q");
            }
            if self.rng.random_bool(0.3) {
                let e = at.max(self.clock.now()) + TimeDelta::milliseconds(self.rng.random_range(1..8_000));
                job["expires_at"] = json!(format_rfc3339(e));
            }
            if windowed {
                job["windows"] = json!([{"from": WINDOW.0, "to": WINDOW.1}]);
                job["time_zone"] = json!("UTC");
            }
            let e = self.expected.entry(body).or_default();
            e.windows = windowed.then(window);
            e.group = job["message_group_id"].as_str().map(str::to_owned);
            e.enqueued_at = Some(self.clock.now());
            jobs.push(job);
        }
        let request = json!({"jobs": jobs});
        let attempts = if self.rng.random_bool(0.5) { 2 } else { 1 };
        if attempts > 1 {
            for j in request["jobs"].as_array().into_iter().flatten() {
                if let Some(e) = self.expected.get_mut(j["message_body"].as_str().unwrap_or_default()) {
                    e.two_copies = true;
                }
            }
        }
        for attempt in 0..attempts {
            // The caller may crash mid-batch (and retry the same batch once).
            let crash_after = Duration::from_millis(self.rng.random_range(0..3));
            let reply = if attempt == 0 && self.rng.random_bool(0.2) {
                self.out.crashes += 1;
                tokio::time::timeout(crash_after, self.waiter.handle(&request))
                    .await
                    .ok()
            } else {
                Some(self.waiter.handle(&request).await)
            };
            let Some(Ok(reply)) = reply else { continue };
            let results = reply["results"].as_array().cloned().unwrap_or_default();
            for (j, r) in request["jobs"].as_array().into_iter().flatten().zip(results) {
                let fresh = r["duplicate"] == false;
                if fresh && matches!(r["status"].as_str(), Some("scheduled" | "sent")) {
                    let e = self
                        .expected
                        .get_mut(j["message_body"].as_str().unwrap_or_default())
                        .expect("known body");
                    e.acknowledged = true;
                    // A past time means "now" at parse, so a retried request's reply
                    // names a later instant than the first attempt, which may have been
                    // sent: early is measured against the time asked for.
                    e.perform_at = match (parse_time(&r["perform_at"]), parse_time(&j["perform_at"])) {
                        (Some(replied), Some(asked)) => Some(replied.min(asked)),
                        (replied, _) => replied,
                    };
                }
            }
        }
        for j in request["jobs"].as_array().into_iter().flatten() {
            if let Some(e) = self.expected.get_mut(j["message_body"].as_str().unwrap_or_default()) {
                e.expires_at = e.expires_at.or_else(|| parse_time(&j["expires_at"]));
                // Unacknowledged jobs may still have been stored; they keep the time asked for.
                e.perform_at = e.perform_at.or_else(|| parse_time(&j["perform_at"]));
            }
        }
    }

    /// A caller cancels a random id.
    async fn cancel(&mut self) {
        let call = self.cancel_call(None);
        let reply = self.waiter.handle(&call.request).await;
        self.cancel_answered(call, reply);
    }

    /// A cancel of `id` (a random one if not given), as the caller makes it.
    fn cancel_call(&mut self, id: Option<String>) -> CancelCall {
        let id = id.unwrap_or_else(|| format!("j{}", self.rng.random_range(0..self.next_id)));
        let queue = queue_for(&self.queue_of, &id);
        CancelCall {
            request: json!({"action": "cancel", "queue": queue, "job_id": id}),
            made_at: self.clock.now(),
            stored_body: stored_body(&self.mem, &id),
        }
    }

    fn cancel_answered(&mut self, call: CancelCall, reply: Result<Value, HandlerError>) {
        match reply {
            Ok(r) if r["status"] == "cancelled" => {
                if let Some(e) = call.stored_body.and_then(|b| self.expected.get_mut(&b)) {
                    e.cancelled = true;
                    e.acted_on_at.get_or_insert(call.made_at);
                }
            }
            Ok(_) => {}
            Err(_) => {
                if let Some(e) = call.stored_body.and_then(|b| self.expected.get_mut(&b)) {
                    e.cancel_unknown = true;
                }
            }
        }
    }

    /// A caller reschedules a random id with a new body and time (the caller may crash).
    async fn reschedule(&mut self) {
        let call = self.reschedule_call(None, 30_000);
        let reply = if self.rng.random_bool(0.2) {
            self.out.crashes += 1;
            let crash_after = Duration::from_millis(self.rng.random_range(0..3));
            tokio::time::timeout(crash_after, self.waiter.handle(&call.request))
                .await
                .ok()
        } else {
            Some(self.waiter.handle(&call.request).await)
        };
        self.reschedule_answered(call, reply);
    }

    /// A reschedule of `id` (a random one if not given) to a new body and a time up to
    /// `within_ms` from now, as the caller makes it; its new version is expected from here on.
    fn reschedule_call(&mut self, id: Option<String>, within_ms: i64) -> RescheduleCall {
        let id = id.unwrap_or_else(|| format!("j{}", self.rng.random_range(0..self.next_id)));
        let queue = queue_for(&self.queue_of, &id);
        let stored_body = stored_body(&self.mem, &id);
        self.version += 1;
        let body = format!("{id}@{}", self.version);
        let at = self.clock.now() + TimeDelta::milliseconds(self.rng.random_range(-2_000..within_ms));
        let mut request = json!({"action": "reschedule", "queue": queue, "job_id": id,
                                 "perform_at": format_rfc3339(at), "message_body": body});
        let clears_expiry = self.rng.random_bool(0.5);
        if clears_expiry {
            request["expires_at"] = Value::Null;
        }
        let inherited = stored_body.as_ref().and_then(|b| self.expected.get(b));
        let windows = inherited.and_then(|e| e.windows.clone());
        let inherited = inherited.and_then(|e| e.expires_at);
        self.expected.insert(
            body.clone(),
            Expected {
                perform_at: Some(at.max(self.clock.now())),
                expires_at: if clears_expiry { None } else { inherited },
                windows,
                ..Expected::default()
            },
        );
        RescheduleCall {
            request,
            made_at: self.clock.now(),
            body,
            stored_body,
        }
    }

    /// `reply` is `None` when the caller crashed before it.
    fn reschedule_answered(&mut self, call: RescheduleCall, reply: Option<Result<Value, HandlerError>>) {
        match reply {
            Some(Ok(r)) if r["status"] == "rescheduled" => {
                let e = self.expected.get_mut(&call.body).expect("expected since the call");
                e.acknowledged = true;
                e.perform_at = parse_time(&r["perform_at"]);
                self.out.rescheduled += 1;
                if let Some(e) = call.stored_body.and_then(|b| self.expected.get_mut(&b)) {
                    e.replaced = true;
                    e.acted_on_at.get_or_insert(call.made_at);
                }
            }
            // A definite refusal: the new version was never stored.
            Some(Ok(_)) | Some(Err(HandlerError::Invalid(_))) => {
                self.expected.remove(&call.body);
            }
            // Unknown: the old version may have been replaced.
            _ => {
                if let Some(e) = call.stored_body.and_then(|b| self.expected.get_mut(&b)) {
                    e.cancel_unknown = true;
                }
            }
        }
    }

    /// Two callers at once: one cancels an id while another reschedules it.
    async fn cancel_beside_reschedule(&mut self) {
        let id = format!("j{}", self.rng.random_range(0..self.next_id));
        let cancel = self.cancel_call(Some(id.clone()));
        // Moved near, so that `reschedule` hands it to SQS itself while the cancel is under way.
        let reschedule = self.reschedule_call(Some(id), 2_000);
        let lag = Duration::from_millis(self.rng.random_range(0..40));
        let (cancelled, rescheduled) = tokio::join!(
            async {
                tokio::time::sleep(lag).await;
                self.waiter.handle(&cancel.request).await
            },
            self.waiter.handle(&reschedule.request)
        );
        let new_stored = matches!(&rescheduled, Ok(r) if r["status"] == "rescheduled");
        let removed = matches!(&cancelled, Ok(r) if r["status"] == "cancelled");
        let unknown = cancelled.is_err();
        let new_body = reschedule.body.clone();
        self.reschedule_answered(reschedule, Some(rescheduled));
        self.cancel_answered(cancel, cancelled);
        // Both succeeded: the reschedule came first (else it found nothing), so the cancel
        // removed the new version; a failed cancel may have.
        if let Some(e) = self.expected.get_mut(&new_body).filter(|_| new_stored) {
            e.cancelled |= removed;
            e.cancel_unknown |= unknown;
        }
    }

    /// One caller action, as it would arrive while a poller run is under way.
    async fn call_beside(&mut self) {
        match self.rng.random_range(0..3) {
            0 => self.enqueue().await,
            1 if self.next_id > 0 => self.cancel().await,
            2 if self.next_id > 0 => self.reschedule().await,
            _ => {}
        }
    }
}

async fn simulate(seed: u64) -> Outcome {
    let mut rng = StdRng::seed_from_u64(seed);
    let clock = FakeClock::default();
    // Calls take up to 30 ms, so a partition's sends and deletes in flight finish in any order.
    let faults = Faults::seeded(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15), rng.random_range(0.0..0.2))
        .with_latency(rng.random_range(0..30));
    let mem = MemStore {
        page_size: rng.random_range(1..8),
        index_lag: Duration::from_millis(rng.random_range(0..2_000)),
        ..MemStore::default()
    };
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
    let settings: Vec<(&str, &str)> = settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let cfg = config("q,f.fifo", &settings);
    let waiter = Waiter::new(cfg.clone(), store.clone(), queue.clone(), clock.clone());
    let dispatcher = Dispatcher::new(cfg, store.clone(), queue.clone(), clock.clone());

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
    };
    for _ in 0..w.rng.random_range(20..60) {
        match w.rng.random_range(0..12) {
            0..=2 => w.enqueue().await,
            3..=5 => {
                let deadline = w.clock.now() + TimeDelta::seconds(w.rng.random_range(5..30));
                let crash_after = w
                    .rng
                    .random_bool(0.25)
                    .then(|| Duration::from_millis(w.rng.random_range(0..3_000)));
                let run = async {
                    match crash_after {
                        Some(after) => {
                            let _ = tokio::time::timeout(after, dispatcher.run(deadline)).await;
                        }
                        None => {
                            dispatcher.run(deadline).await;
                        }
                    }
                };
                // Half the runs have a caller acting at one of their await points.
                if w.rng.random_bool(0.5) {
                    let at = Duration::from_millis(w.rng.random_range(0..200));
                    let beside = async {
                        tokio::time::sleep(at).await;
                        w.call_beside().await;
                    };
                    tokio::join!(run, beside);
                } else {
                    run.await;
                }
                if crash_after.is_some() {
                    w.out.crashes += 1;
                }
            }
            6 | 7 if w.next_id > 0 => w.cancel().await,
            8 if w.next_id > 0 => w.reschedule().await,
            9 if w.next_id > 0 => w.cancel_beside_reschedule().await,
            _ => tokio::time::sleep(Duration::from_millis(w.rng.random_range(0..2_000))).await,
        }
    }

    // Calm: no more faults; let leases lapse and everything fall due, then drain. Jobs moved to
    // the next opening of their window fall due a day later.
    faults.off();
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
            dispatcher.run(clock.now() + TimeDelta::seconds(60)).await;
            let left = active_jobs(&mem);
            if left == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    let World { mut out, expected, .. } = w;
    let sent = sink.sent();
    let mut deliveries: HashMap<&str, usize> = HashMap::new();
    for s in &sent {
        let id = s.message.body.as_str();
        *deliveries.entry(id).or_default() += 1;
        let Some(e) = expected.get(id) else {
            out.violations.push(format!("{id}: sent but never enqueued"));
            continue;
        };
        let arrival = s.at + TimeDelta::seconds(i64::from(s.message.delay_seconds.unwrap_or(0)));
        if let Some(due) = e.perform_at {
            if arrival < due {
                out.violations.push(format!("{id}: early by {:?}", due - arrival));
            }
        }
        let other_copy = e.two_copies && e.acted_on_at.is_some_and(|t| s.at < t);
        if e.cancelled && !other_copy {
            out.violations
                .push(format!("{id}: accepted by SQS although cancel said cancelled"));
        }
        if e.replaced && !other_copy {
            out.violations
                .push(format!("{id}: accepted by SQS although reschedule replaced it"));
        }
        if e.expires_at.is_some_and(|x| arrival > x) {
            out.violations.push(format!("{id}: sent to arrive after expires_at"));
        }
        if e.windows.as_ref().is_some_and(|w| !w.contains(arrival)) {
            out.violations
                .push(format!("{id}: arrives at {arrival}, outside its window"));
        }
    }
    // FIFO order per group: of two jobs of a group stored well before the earlier one fell due
    // (so that the index shows both by then), the earlier is delivered first.
    let mut first: HashMap<&str, DateTime<Utc>> = HashMap::new();
    for s in &sent {
        first.entry(s.message.body.as_str()).or_insert(s.at);
    }
    let ordered: Vec<(&String, &Expected, DateTime<Utc>, DateTime<Utc>)> = expected
        .iter()
        .filter(|(_, e)| {
            e.acknowledged
                && e.group.is_some()
                && !(e.cancelled || e.cancel_unknown || e.replaced || e.two_copies)
                && e.expires_at.is_none()
                && e.windows.is_none()
        })
        .filter_map(|(b, e)| Some((b, e, e.perform_at?, *first.get(b.as_str())?)))
        .collect();
    for (b1, e1, due1, at1) in &ordered {
        for (b2, e2, due2, at2) in &ordered {
            let visible_in_time = e1
                .enqueued_at
                .max(e2.enqueued_at)
                .is_some_and(|t| t + FIFO_SETTLE <= *due1);
            if e1.group != e2.group || due1 >= due2 || !visible_in_time {
                continue;
            }
            out.fifo_pairs += 1;
            if at2 < at1 {
                out.violations.push(format!(
                    "{b2} (due {due2}) delivered at {at2}, before {b1} of its group (due {due1}) at {at1}"
                ));
            }
        }
    }
    for (id, e) in &expected {
        let may_be_gone = e.cancelled || e.cancel_unknown || e.replaced || e.expires_at.is_some();
        if e.acknowledged && !may_be_gone && !deliveries.contains_key(id.as_str()) {
            out.violations
                .push(format!("{id}: acknowledged but never delivered (lost)"));
        }
    }
    let leftover = active_jobs(&mem);
    if leftover > 0 {
        out.violations
            .push(format!("{leftover} jobs still stored after the drain"));
    }
    out.jobs = expected.len();
    out.deliveries = sent.len();
    out.duplicates = deliveries.values().map(|n| n - 1).sum();
    out
}

#[tokio::test(start_paused = true)]
async fn random_interleavings_of_enqueue_dispatch_crash_cancel_and_reschedule_keep_the_invariants() {
    let seeds: Vec<u64> = match std::env::var("SIM_SEED") {
        Ok(s) => vec![s.parse().expect("SIM_SEED is a number")],
        Err(_) => (0..std::env::var("SIM_SEEDS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(3000))
            .collect(),
    };
    let mut total = Outcome::default();
    for seed in &seeds {
        let o = simulate(*seed).await;
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
    }
    println!(
        "simulation: {} seeds, {} jobs, {} deliveries, {} duplicates, {} crashes, {} reschedules, {} FIFO pairs in order, 0 violations",
        seeds.len(),
        total.jobs,
        total.deliveries,
        total.duplicates,
        total.crashes,
        total.rescheduled,
        total.fifo_pairs
    );
    assert!(
        total.crashes > 0 && total.jobs > 0 && total.rescheduled > 0,
        "the simulation exercised nothing"
    );
}
