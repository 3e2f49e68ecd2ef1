//! The whole system (issue 71): wave 6's steering among the callers, consumers and operators
//! of the main simulation, in the same seeds. Queues and jobs are paused and resumed, jobs are
//! triggered, debounced (`on_duplicate: replace` and `extend`) and cancelled through
//! `cancel_many`, and the functions run as a deployment does (`deploys.rs`: stack updates that
//! change `WAITER_SHARDS`, poller groups, `enqueue`'s clock off the poller's), beside everything
//! the focused simulation does (crashes, faults, the index lagging, retries, redrives, the rate,
//! windows, FIFO groups, history).
//!
//! Invariants, besides the main simulation's (`checks.rs`):
//! - nothing handed over after a `pause` answered: SQS accepts no message of a paused queue, and
//!   none of a paused job (any version of its id), from the answer until `resume` is called;
//! - a paused job is no run's: `cancel` of it never answers `dispatching`;
//! - `trigger` answering `sent` names a message SQS accepted for the job;
//! - after `replace` answers, the version it replaced is never sent and its own arrives at or
//!   after its time (the main invariants, with the replaced version as a reschedule's);
//! - after `extend` answers `replaced`, the stored version arrives at or after the new time,
//!   which lies within its `expires_at`;
//! - FIFO order within a group, except for jobs paused or triggered (the documented exception:
//!   a paused job lets its group's later jobs go ahead, and a triggered one goes now).

use super::*;

/// A pause from its answer until `resume` was called (open: not yet), of a queue or a job.
type Pause<K> = (K, DateTime<Utc>, Option<DateTime<Utc>>);

/// Pauses as the simulation saw them answered, for the checks.
#[derive(Debug, Default)]
pub(super) struct Steering {
    /// Each queue's pauses: from the `paused` answer until `resume` was called (open: not yet).
    pub(super) queues: Vec<Pause<&'static str>>,
    /// Each job's pauses, by id, likewise.
    pub(super) jobs: Vec<Pause<String>>,
    /// Ids paused or triggered at some point: outside the FIFO order check.
    pub(super) reordered: std::collections::HashSet<String>,
    pub(super) calls: usize,
    /// A call made beside a poller run (`call_beside`): `cancel_by_tag`'s check of what the
    /// call removed needs nothing else to run during it, so it is not drawn then.
    pub(super) beside_a_run: bool,
    /// Jobs cancelled by tag (`tags.rs`).
    pub(super) tag_cancelled: usize,
    pub(super) triggered: usize,
    pub(super) replaced: usize,
    pub(super) extended: usize,
    /// The schedule of calls through aliases outside their rights (`denied.rs`), and how many
    /// were made.
    pub(super) rights_draws: Option<rand::rngs::StdRng>,
    pub(super) refused: usize,
    /// The schedule of runs that meet items of a later release's format (`mixed.rs`), how many
    /// such items were met, and when the last run ended.
    pub(super) later_format_draws: Option<rand::rngs::StdRng>,
    pub(super) later_format: usize,
    pub(super) last_run_end: Option<DateTime<Utc>>,
}

fn close<K: PartialEq>(intervals: &mut [Pause<K>], key: &K, at: DateTime<Utc>) {
    for (k, _, until) in intervals.iter_mut() {
        if k == key && until.is_none() {
            *until = Some(at);
        }
    }
}

/// The id a version's body names (`{id}@{version}`).
fn id_of(body: &str) -> &str {
    body.rsplit_once('@').map_or(body, |(id, _)| id)
}

impl World {
    fn random_id(&mut self) -> String {
        format!("j{}", self.rng.random_range(0..self.next_id.max(1)))
    }

    /// One steering action at random.
    pub(super) async fn steer(&mut self) {
        self.steering.calls += 1;
        if let Some(mut draws) = self.steering.rights_draws.take() {
            Box::pin(self.refused_call(&mut draws)).await;
            self.steering.rights_draws = Some(draws);
        }
        match self.rng.random_range(0..9) {
            0 => self.pause_queue().await,
            1 => self.resume_queue().await,
            2 | 3 if self.next_id > 0 => self.pause_job().await,
            4 if self.next_id > 0 => self.resume_job(None).await,
            5 if self.next_id > 0 => self.trigger().await,
            6 if self.next_id > 0 => self.debounce().await,
            // Every other time by tag (from the count, so that the seeds' draws stay as they were).
            7 if self.next_id > 0 && self.steering.calls % 2 == 0 && !self.steering.beside_a_run => {
                self.cancel_by_tag().await
            }
            7 if self.next_id > 0 => self.cancel_one_of_many().await,
            8 => self.retry_beside_debounce().await,
            _ => {}
        }
    }

    async fn pause_queue(&mut self) {
        let queue = if self.rng.random_bool(0.5) { "q" } else { "f.fifo" };
        let r = self.waiter.handle(&json!({"action": "pause", "queue": queue})).await;
        if matches!(&r, Ok(r) if r["status"] == "paused") {
            let open = self.steering.queues.iter().any(|(q, _, u)| *q == queue && u.is_none());
            if !open {
                self.steering.queues.push((queue, self.clock.now(), None));
            }
        }
    }

    async fn resume_queue(&mut self) {
        let queue = if self.rng.random_bool(0.5) { "q" } else { "f.fifo" };
        self.resume_queue_named(queue).await;
    }

    pub(super) async fn resume_queue_named(&mut self, queue: &'static str) {
        close(&mut self.steering.queues, &queue, self.clock.now());
        let _ = self.waiter.handle(&json!({"action": "resume", "queue": queue})).await;
    }

    async fn pause_job(&mut self) {
        let id = self.random_id();
        let queue = queue_for(&self.queue_of, &id);
        // Paused even when the answer is lost: out of its group's order from here on.
        self.steering.reordered.insert(id.clone());
        let r = self
            .waiter
            .handle(&json!({"action": "pause", "queue": queue, "job_id": id}))
            .await;
        if matches!(&r, Ok(r) if r["status"] == "paused") {
            let open = self.steering.jobs.iter().any(|(j, _, u)| *j == id && u.is_none());
            if !open {
                self.steering.jobs.push((id, self.clock.now(), None));
            }
        }
    }

    /// Resumes `id` (a random one if not given).
    pub(super) async fn resume_job(&mut self, id: Option<String>) {
        let id = id.unwrap_or_else(|| self.random_id());
        let queue = queue_for(&self.queue_of, &id);
        close(&mut self.steering.jobs, &id, self.clock.now());
        let _ = self
            .waiter
            .handle(&json!({"action": "resume", "queue": queue, "job_id": id}))
            .await;
    }

    /// Ids with a pause the simulation saw answered and not yet resumed.
    pub(super) fn paused_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .steering
            .jobs
            .iter()
            .filter(|(_, _, u)| u.is_none())
            .map(|(id, _, _)| id.clone())
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }

    /// A job leaves or starts a life outside its pause: the pause interval ends (a cancel that
    /// answered, or a new life after it).
    pub(super) fn pause_ends(&mut self, id: &str) {
        close(&mut self.steering.jobs, &id.to_owned(), self.clock.now());
    }

    async fn trigger(&mut self) {
        let id = self.random_id();
        let queue = queue_for(&self.queue_of, &id);
        let stored = stored_body(&self.mem, &id);
        // Asked for now: the version may go now, out of its windows.
        if let Some(e) = stored.as_ref().and_then(|b| self.expected.get_mut(b)) {
            e.perform_at = e.perform_at.map(|t| t.min(self.clock.now()));
            e.windows = None;
        }
        self.steering.reordered.insert(id.clone());
        let r = self
            .waiter
            .handle(&json!({"action": "trigger", "queue": queue, "job_id": id}))
            .await;
        if matches!(&r, Ok(r) if r["status"] == "sent") {
            self.steering.triggered += 1;
            let accepted = self
                .sink
                .sent()
                .iter()
                .any(|s| Some(&s.message.body) == stored.as_ref());
            if !accepted {
                self.out
                    .violations
                    .push(format!("{id}: trigger answered sent, and SQS has no message of it"));
            }
        }
    }

    /// `enqueue` with `on_duplicate: replace`: a new body and time for a random id, as a
    /// reschedule's, by the debounce path.
    async fn debounce(&mut self) {
        let id = self.random_id();
        let at = self.clock.now() + TimeDelta::milliseconds(self.rng.random_range(-2_000..30_000));
        if self.rng.random_bool(0.3) {
            self.extend(&id, at).await;
        } else {
            self.replace(&id, at).await;
        }
    }

    /// A debounced call for `id` due at `at` with a new version's body: whether the id is on
    /// the FIFO queue, the body stored before the call, the call's body, and the request.
    fn debounce_call(
        &mut self,
        id: &str,
        at: DateTime<Utc>,
        on_duplicate: &str,
    ) -> (bool, Option<String>, String, Value) {
        let fifo = self.queue_of.get(id).copied().unwrap_or(false);
        let stored = stored_body(&self.mem, id);
        self.version += 1;
        let body = format!("{id}@{}", self.version);
        let mut job = json!({"job_id": id, "message_body": body, "perform_at": format_rfc3339(at),
                             "on_duplicate": on_duplicate, "queue": if fifo { "f.fifo" } else { "q" }});
        if fifo {
            job["message_group_id"] = json!("g0");
        }
        (fifo, stored, body, job)
    }

    /// A debounced `extend` of `id` to `at`: the stored version keeps its message and takes the
    /// new time (inside its windows, within its `expires_at`), or, with none stored, the call's
    /// version is stored as a new job.
    async fn extend(&mut self, id: &str, at: DateTime<Utc>) {
        let (fifo, stored, body, job) = self.debounce_call(id, at, "extend");
        let made_at = self.clock.now();
        let asked = at.max(made_at);
        self.expected.insert(
            body.clone(),
            Expected {
                perform_at: Some(asked),
                group: fifo.then(|| "g0".to_owned()),
                enqueued_at: Some(made_at),
                ..Expected::default()
            },
        );
        self.steering.extended += 1;
        match self.waiter.handle(&job).await {
            Ok(r) if r["status"] == "scheduled" && r["replaced"] == true => {
                // The stored version moved, keeping its message. That may be the call's own: a
                // write of it applied, its reply lost and the SDK's retry refused as a
                // duplicate, the call extends what it just stored. Its message is then sent,
                // at or after the answer's time, but not promised.
                let moved_to = parse_time(&r["perform_at"]);
                if let Some(e) = self.expected.get_mut(&body) {
                    e.perform_at = moved_to.or(e.perform_at);
                    // Nothing was stored before the call: what it moved is its own version.
                    // (With a stored version, an extend that took the call's message would
                    // lose that version, which the loss check finds.)
                    e.acknowledged = stored.is_none();
                }
                let sent_before = stored
                    .as_ref()
                    .is_some_and(|b| self.sink.sent().iter().any(|s| s.message.body == *b));
                if let Some(e) = stored.as_ref().and_then(|b| self.expected.get_mut(b)) {
                    // The call's promise: the job arrives at or after that time. Past the job's
                    // `expires_at` the poller would drop it (issue 71, defect 1).
                    if let (Some(x), Some(to)) = (e.expires_at, moved_to) {
                        if to > x {
                            self.out.violations.push(format!(
                                "{id}: extend answered replaced, moving {} to {to}, past its expires_at {x}",
                                stored.as_deref().unwrap_or_default()
                            ));
                        }
                    }
                    let maybe_delivered = !r["maybe_delivered_at"].is_null() || sent_before;
                    e.maybe_delivered |= maybe_delivered;
                    // A delivery before the move may have come at the old time.
                    e.perform_at = match maybe_delivered {
                        true => e.perform_at.min(moved_to).or(moved_to),
                        false => moved_to.or(e.perform_at),
                    };
                    e.enqueued_at = Some(made_at);
                }
            }
            Ok(r) if r["status"] == "scheduled" => {
                let e = self.expected.get_mut(&body).expect("expected since the call");
                e.acknowledged = true;
                e.perform_at = parse_time(&r["perform_at"]).or(e.perform_at);
            }
            Ok(_) | Err(HandlerError::Invalid(_)) => {
                self.expected.remove(&body);
            }
            // Unknown: the stored version may have moved, to `at` at the earliest; the call's
            // version may have been stored (nothing is promised of it).
            Err(_) => {
                if let Some(e) = stored.and_then(|b| self.expected.get_mut(&b)) {
                    e.perform_at = e.perform_at.map(|t| t.min(asked));
                    e.enqueued_at = Some(made_at);
                }
            }
        }
    }

    /// A debounced `replace` of `id` to a new body due at `at`, and what the simulation expects
    /// of its answer; whether it was answered stored.
    async fn replace(&mut self, id: &str, at: DateTime<Utc>) -> bool {
        let (fifo, stored, body, mut job) = self.debounce_call(id, at, "replace");
        if fifo {
            // A caller's own deduplication id, the same for every life: refused (issue 71,
            // defect 9; SQS would drop a new life sent within 5 minutes of the last).
            if self.rng.random_bool(0.3) {
                job["message_deduplication_id"] = json!(format!("dedup-{id}"));
            }
        }
        let made_at = self.clock.now();
        self.expected.insert(
            body.clone(),
            Expected {
                perform_at: Some(at.max(made_at)),
                group: fifo.then(|| "g0".to_owned()),
                enqueued_at: Some(made_at),
                ..Expected::default()
            },
        );
        match self.waiter.handle(&job).await {
            Ok(r) if r["status"] == "scheduled" => {
                let e = self.expected.get_mut(&body).expect("expected since the call");
                e.acknowledged = true;
                e.perform_at = parse_time(&r["perform_at"]).or(e.perform_at);
                if r["replaced"] == true {
                    self.steering.replaced += 1;
                    // A version stored again as a consumer's attempt may have been sent before.
                    let sent_before = stored
                        .as_ref()
                        .is_some_and(|b| self.sink.sent().iter().any(|s| s.message.body == *b));
                    if let Some(e) = stored.and_then(|b| self.expected.get_mut(&b)) {
                        e.replaced = true;
                        e.maybe_delivered |= !r["maybe_delivered_at"].is_null() || sent_before;
                        e.acted_on_at.get_or_insert(made_at);
                    }
                }
                true
            }
            Ok(_) | Err(HandlerError::Invalid(_)) => {
                self.expected.remove(&body);
                false
            }
            // Unknown: stored or not, and the old version may have been replaced.
            Err(_) => {
                if let Some(e) = stored.and_then(|b| self.expected.get_mut(&b)) {
                    e.cancel_unknown = true;
                }
                false
            }
        }
    }

    /// A consumer fails on a message of an id just as a debounced `replace` stores the id's new
    /// life, due within the second: its `retry` of attempt 1 must not take the new life for the
    /// attempt it failed (issue 71, defect 5). The consumer hands back an edited body, a version
    /// of its own: expected once the retry answers `scheduled`.
    async fn retry_beside_debounce(&mut self) {
        let delivered: Vec<(String, bool)> = self
            .sink
            .sent()
            .iter()
            .filter(|s| !retries::is_retried(s) && crate::job::attempt_in(&s.message.attributes).is_none())
            .map(|s| (s.message.body.clone(), s.queue.is_fifo()))
            .collect();
        if delivered.is_empty() {
            return;
        }
        let (old, fifo) = delivered[self.rng.random_range(0..delivered.len())].clone();
        let id = id_of(&old).to_owned();
        let at = self.clock.now() + TimeDelta::milliseconds(self.rng.random_range(0..900));
        if !self.replace(&id, at).await {
            return;
        }
        let queue = if fifo { "f.fifo" } else { "q" };
        self.version += 1;
        let edited = format!("{id}@{}", self.version);
        let mut retry = json!({"action": "retry", "queue": queue, "job_id": id, "attempt": 1,
                               "message_body": edited, "backoff": {"base_s": 5, "jitter": false}});
        if fifo {
            retry["message_group_id"] = json!("g0");
        }
        self.steering.reordered.insert(id);
        self.expected.insert(edited.clone(), Expected::default());
        match self.waiter.handle(&retry).await {
            Ok(r) if r["status"] == "scheduled" && r["duplicate"] == false => {
                let e = self.expected.get_mut(&edited).expect("expected since the call");
                e.acknowledged = true;
                e.perform_at = parse_time(&r["perform_at"]);
            }
            Ok(_) | Err(HandlerError::Invalid(_)) => {
                self.expected.remove(&edited);
            }
            // Unknown: the attempt may be stored, and sent; nothing is promised of it.
            Err(_) => {}
        }
    }

    /// `cancel_many` of one id: its counts say what happened to it.
    async fn cancel_one_of_many(&mut self) {
        let id = self.random_id();
        let queue = queue_for(&self.queue_of, &id);
        let stored = stored_body(&self.mem, &id);
        // `cancel_many` counts; the mark a single `cancel` answers with is on the item.
        let marked = self
            .mem
            .state
            .lock()
            .unwrap()
            .items
            .values()
            .any(|j| j.job.job_id == id && j.maybe_delivered_at.is_some());
        let made_at = self.clock.now();
        let paused = self.paused_ids().contains(&id);
        let r = self
            .waiter
            .handle(&json!({"action": "cancel_many", "queue": queue, "job_ids": [id]}))
            .await;
        match r {
            Ok(r) if r["cancelled"] == 1 => {
                self.pause_ends(&id);
                if let Some(e) = stored.and_then(|b| self.expected.get_mut(&b)) {
                    e.cancelled = true;
                    e.maybe_delivered |= marked;
                    e.acted_on_at.get_or_insert(made_at);
                }
            }
            Ok(r) if r["dispatching"] == 1 && paused => self
                .out
                .violations
                .push(format!("{id}: cancel_many of a paused job answered dispatching")),
            Ok(_) => {}
            Err(_) => {
                if let Some(e) = stored.and_then(|b| self.expected.get_mut(&b)) {
                    e.cancel_unknown = true;
                }
            }
        }
    }

    /// The calm phase: every pause ends, so that what they held is delivered.
    pub(super) async fn resume_everything(&mut self) {
        for queue in ["q", "f.fifo"] {
            self.resume_queue_named(queue).await;
        }
        // Every paused job, as an operator would list them: a pause whose answer was lost holds
        // its job too.
        let mut ids: Vec<String> = self.steering.jobs.iter().map(|(id, _, _)| id.clone()).collect();
        ids.extend(
            self.mem
                .state
                .lock()
                .unwrap()
                .items
                .values()
                .filter(|j| j.paused_at.is_some())
                .map(|j| j.job.job_id.clone()),
        );
        ids.sort();
        ids.dedup();
        for id in ids {
            self.resume_job(Some(id)).await;
        }
    }
}

/// The pause invariants over what SQS accepted.
pub(super) fn check(out: &mut Outcome, steering: &Steering, sent: &[crate::testing::Sent]) {
    let within = |at: DateTime<Utc>, from: DateTime<Utc>, until: Option<DateTime<Utc>>| {
        at > from && until.is_none_or(|u| at < u)
    };
    for s in sent {
        let queue = s.queue.as_str();
        if steering
            .queues
            .iter()
            .any(|(q, from, until)| *q == queue && within(s.at, *from, *until))
        {
            out.violations.push(format!(
                "{}: accepted at {} while its queue {queue} was paused",
                s.message.body, s.at
            ));
        }
        let id = id_of(&s.message.body);
        if steering
            .jobs
            .iter()
            .any(|(j, from, until)| j == id && within(s.at, *from, *until))
        {
            out.violations.push(format!(
                "{}: accepted at {} while its job was paused",
                s.message.body, s.at
            ));
        }
    }
}
