//! The callers of one seed: enqueue, cancel and reschedule as clients make them, and what the
//! simulation expects after each answer.

use super::*;

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
pub(super) struct World {
    pub(super) rng: StdRng,
    pub(super) waiter: SimWaiter,
    pub(super) mem: MemStore,
    pub(super) clock: FakeClock,
    pub(super) windows_on: bool,
    pub(super) window_close: DateTime<Utc>,
    pub(super) out: Outcome,
    pub(super) expected: HashMap<String, Expected>,
    pub(super) next_id: usize,
    pub(super) version: u64,
    pub(super) queue_of: HashMap<String, bool>,
    /// What SQS accepted, as consumers receive it.
    pub(super) sink: FakeQueue,
    pub(super) retries: super::retries::Retries,
    /// The callers' chains mode: callers enqueue jobs that consumers retry once delivered, and
    /// operators cancel them between a send and its removal (`caller_chains`).
    pub(super) caller_chains: bool,
    /// The whole system: steering beside everything else (`steering.rs`).
    pub(super) whole: bool,
    pub(super) steering: super::steering::Steering,
}

impl World {
    /// A caller's batch of 1–5 jobs, mostly new ids, sometimes one used before; the caller may
    /// crash mid-batch and retry it once.
    pub(super) async fn enqueue(&mut self) {
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
            // A third of the jobs rank and weigh otherwise (from the version, so that the
            // seeds' random draws stay as they were): never early, never lost, whatever they weigh.
            if self.version % 3 == 0 {
                job["priority"] = json!((self.version * 37) % 1001);
                job["weight"] = json!(1 + self.version % 5);
            }
            if windowed {
                job["windows"] = json!([{"from": WINDOW.0, "to": WINDOW.1}]);
                job["time_zone"] = json!("UTC");
            }
            // Three of every four versions carry a tag (from the version, as above), which
            // operators cancel by (`tags.rs`).
            if let Some(tag) = super::tag_of_version(self.version) {
                job["tags"] = json!({ super::TAG_KEY: tag });
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
            let Some(Ok(reply)) = self.call_may_crash(&request, attempt == 0).await else {
                continue;
            };
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

    /// One call; on a caller's first try, one time in five it crashes within 3 ms (`None`),
    /// leaving whatever the call had done by then.
    pub(super) async fn call_may_crash(
        &mut self,
        request: &Value,
        first_try: bool,
    ) -> Option<Result<Value, HandlerError>> {
        let crash_after = Duration::from_millis(self.rng.random_range(0..3));
        if first_try && self.rng.random_bool(0.2) {
            self.out.crashes += 1;
            tokio::time::timeout(crash_after, self.waiter.handle(request))
                .await
                .ok()
        } else {
            Some(self.waiter.handle(request).await)
        }
    }

    /// A caller cancels a random id.
    pub(super) async fn cancel(&mut self) {
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
        let id = call.request["job_id"].as_str().unwrap_or_default().to_owned();
        if matches!(&reply, Ok(r) if r["status"] == "dispatching") && self.paused_ids().contains(&id) {
            self.out
                .violations
                .push(format!("{id}: cancel of a paused job answered dispatching"));
        }
        // Gone, or maybe: a new life of the id is not paused.
        if !matches!(&reply, Ok(r) if r["status"] != "cancelled") {
            self.pause_ends(&id);
        }
        match reply {
            Ok(r) if r["status"] == "cancelled" => {
                if let Some(e) = call.stored_body.and_then(|b| self.expected.get_mut(&b)) {
                    e.cancelled = true;
                    e.maybe_delivered |= !r["maybe_delivered_at"].is_null();
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
    pub(super) async fn reschedule(&mut self) {
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
                    e.maybe_delivered |= !r["maybe_delivered_at"].is_null();
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
    pub(super) async fn cancel_beside_reschedule(&mut self) {
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

    /// One caller action, as it would arrive while a poller run is under way: a caller's, a
    /// consumer's `retry` (of an attempt the run may have just sent and not yet removed), or an
    /// operator's action on a retried job.
    pub(super) async fn call_beside(&mut self) {
        match self.rng.random_range(0..if self.whole { 6 } else { 5 }) {
            0 => self.enqueue().await,
            1 if self.next_id > 0 => self.cancel().await,
            2 if self.next_id > 0 => self.reschedule().await,
            3 => self.retry().await,
            4 => self.operate().await,
            5 => self.steer().await,
            _ => {}
        }
    }
}
