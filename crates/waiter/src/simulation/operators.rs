//! Operators and other callers on the ids consumers retry (issue 35): `cancel`, `reschedule`
//! and `redrive` of a retried job by its id, and a caller enqueueing its own job under an id
//! shaped like an attempt of one (`r3:a2`), which the scheme before wave 4 stored attempts
//! under. Checks:
//! - at most one stored attempt per job id (a job is pending or parked, never both, never two);
//! - never a delivery after `cancelled` (a cancel answered for a retried job stops its chain;
//!   checked with the other retry invariants, `retries::check`);
//! - a caller's attempt-shaped id is a job of its own: delivered, and never taken for an attempt.

use super::retries::body_of;
use super::*;

impl World {
    /// One operator's (or caller's) action on the id of a retried job.
    pub(super) async fn operate(&mut self) {
        if self.retries.next_id == 0 {
            return;
        }
        let n = self.rng.random_range(0..self.retries.next_id);
        let id = format!("r{n}");
        self.retries.operations += 1;
        match self.rng.random_range(0..5) {
            0 => self.cancel_chain(&id).await,
            1 => self.reschedule_chain(&id).await,
            2 => self.redrive_chain(&id).await,
            3 => self.replay_chain(&id).await,
            _ => self.enqueue_lookalike(&id).await,
        }
        self.check_one_stored_attempt();
    }

    async fn cancel_chain(&mut self, id: &str) {
        let began = self.clock.now();
        let request = json!({"action": "cancel", "queue": "q", "job_id": id});
        let reply = self.call_may_crash(&request, true).await;
        self.chain_cancel_answered(id, began, reply);
    }

    fn chain_cancel_answered(&mut self, id: &str, began: DateTime<Utc>, reply: Option<Result<Value, HandlerError>>) {
        match reply {
            Some(Ok(reply)) if reply["status"] == "cancelled" => {
                self.retries.cancelled.entry(body_of(id)).or_insert(began);
            }
            Some(Ok(_)) => {}
            // The caller crashed, or the call failed: it may have cancelled before its reply was
            // lost, so the chain's pending attempt may never be delivered.
            _ => {
                self.retries.maybe_cancelled.insert(body_of(id));
            }
        }
    }

    /// A consumer's `retry` of a chain and an operator's `cancel` of it at once (the consumer
    /// may report a redelivered last attempt, with a larger `max_attempts`).
    pub(super) async fn retry_beside_cancel(&mut self) {
        if self.retries.next_id == 0 {
            return;
        }
        // A parked chain where there is one: its last attempt's message may be redelivered and
        // retried by a consumer that now allows more attempts.
        let parked: Vec<String> = {
            let state = self.mem.state.lock().unwrap();
            state
                .items
                .keys()
                .filter(|(_, p, id)| *p == Partition::Parked && id.starts_with('r') && !id.contains([':', '~']))
                .map(|(_, _, id)| id.clone())
                .collect()
        };
        let id = match parked.len() {
            0 => format!("r{}", self.rng.random_range(0..self.retries.next_id)),
            n => parked[self.rng.random_range(0..n)].clone(),
        };
        let Some(mut call) = self.retry_call(Some(id.clone())) else {
            return;
        };
        if !parked.is_empty() {
            call.request["max_attempts"] = json!(9);
        }
        self.retries.operations += 1;
        let began = self.clock.now();
        let cancel = json!({"action": "cancel", "queue": "q", "job_id": id});
        let lead = Duration::from_millis(self.rng.random_range(0..20));
        let (retried, cancelled) = tokio::join!(
            async {
                tokio::time::sleep(lead).await;
                self.waiter.handle(&call.request).await
            },
            self.waiter.handle(&cancel)
        );
        if let Ok(reply) = &retried {
            self.retry_answered(&call, reply);
        }
        self.chain_cancel_answered(&id, began, Some(cancelled));
        self.check_one_stored_attempt();
    }

    /// An operator cancels a caller's job that SQS accepted and that is still stored, then its
    /// consumer retries the delivery it holds. Mostly `cancel` answers `dispatching` (the lease
    /// item of the run that sent it covers it until it is removed); where the run that inherited
    /// a crashed one's lease moved it past its window's close (`maybe_delivered_at`), `cancel`
    /// answers `cancelled`, and then nothing more of it may be sent (defect 7: with history off,
    /// the cancel left no record, and the retry scheduled attempt 2).
    pub(super) async fn cancel_sent_then_retry(&mut self) {
        let sent = self.sink.sent();
        let stored: Vec<String> = {
            let state = self.mem.state.lock().unwrap();
            state
                .items
                .iter()
                .filter(|((_, p, id), job)| {
                    // Its first attempt: a retried one keeps its record whatever the settings.
                    *p != Partition::Parked && self.retries.enqueued.contains(&body_of(id)) && !job.job.keeps_record()
                })
                .map(|((_, _, id), _)| id.clone())
                .filter(|id| sent.iter().any(|s| s.message.body == body_of(id)))
                .collect()
        };
        if stored.is_empty() {
            return;
        }
        let id = stored[self.rng.random_range(0..stored.len())].clone();
        self.cancel_then_retry(&id).await;
    }

    /// An operator cancels chain `id`; then its consumer retries the latest delivery it holds.
    pub(super) async fn cancel_then_retry(&mut self, id: &str) {
        self.retries.operations += 1;
        self.cancel_chain(id).await;
        if let Some(call) = self.retry_call(Some(id.to_owned())) {
            if let Ok(reply) = self.waiter.handle(&call.request).await {
                self.retry_answered(&call, &reply);
            }
        }
        self.check_one_stored_attempt();
    }

    async fn reschedule_chain(&mut self, id: &str) {
        let began = self.clock.now();
        let delay_ms = self.rng.random_range(0..10_000);
        let at = self.clock.now() + TimeDelta::milliseconds(delay_ms);
        let request = json!({"action": "reschedule", "queue": "q", "job_id": id, "perform_at": format_rfc3339(at)});
        let got = self.call_may_crash(&request, true).await;
        match got {
            Some(Ok(reply)) if reply["status"] == "rescheduled" => {
                self.moved_to(id, began, &reply);
            }
            Some(Ok(_)) => {}
            // It may have moved the pending attempt, to the time asked, before its reply was
            // lost.
            _ => {
                self.retries
                    .maybe_moved
                    .entry(body_of(id))
                    .or_default()
                    .push((began, at));
            }
        }
    }

    async fn redrive_chain(&mut self, id: &str) {
        let began = self.clock.now();
        let request = json!({"action": "redrive", "queue": "q", "job_id": id});
        if let Some(Ok(reply)) = self.call_may_crash(&request, true).await {
            if reply["status"] == "scheduled" && reply["duplicate"] == false {
                // Redriven: an attempt that must be delivered, due at the time it names.
                if let Some(attempt) = self.moved_to(id, began, &reply) {
                    self.retries.scheduled.entry((body_of(id), attempt)).or_default();
                }
            }
        }
    }

    /// A copy of a job that left the table (with `WAITER_HISTORY_BODY`): a job of its own,
    /// which must be delivered and which consumers retry under its id.
    async fn replay_chain(&mut self, id: &str) {
        let request = json!({"action": "replay", "queue": "q", "job_id": id});
        if let Some(Ok(reply)) = self.call_may_crash(&request, true).await {
            let copy = reply["job_id"].as_str().unwrap_or_default().to_owned();
            if reply["status"] != "scheduled" || copy.is_empty() {
                return;
            }
            if reply["duplicate"] == false {
                if let Some(at) = parse_time(&reply["perform_at"]) {
                    self.retries.scheduled.entry((copy.clone(), 1)).or_default().push(at);
                }
            }
            if !self.retries.copies.contains(&copy) {
                self.retries.copies.push(copy);
            }
        }
    }

    /// Records the attempt and time a reply says an operator's call (begun at `began`) moved
    /// `id`'s pending attempt to.
    fn moved_to(&mut self, id: &str, began: DateTime<Utc>, reply: &Value) -> Option<u32> {
        let attempt = reply["attempt"]
            .as_u64()
            .and_then(|a| u32::try_from(a).ok())
            .unwrap_or(1);
        let at = parse_time(&reply["perform_at"])?;
        self.retries
            .moved
            .entry((body_of(id), attempt))
            .or_default()
            .push((began, at));
        Some(attempt)
    }

    /// A caller's own job under `{id}:a{k}`: a job like any other, expected to be delivered.
    async fn enqueue_lookalike(&mut self, id: &str) {
        let lookalike = format!("{id}:a{}", self.rng.random_range(2..5));
        self.version += 1;
        let body = format!("{lookalike}@{}", self.version);
        let at = self.clock.now() + TimeDelta::milliseconds(self.rng.random_range(1_000..20_000));
        let request =
            json!({"queue": "q", "job_id": lookalike, "message_body": body, "perform_at": format_rfc3339(at)});
        self.queue_of.insert(lookalike, false);
        let enqueued_at = self.clock.now();
        let reply = self.waiter.handle(&request).await;
        let e = self.expected.entry(body).or_default();
        e.perform_at = Some(at);
        e.enqueued_at = Some(enqueued_at);
        // A duplicate when the caller used this id before; else a job that must be delivered.
        e.acknowledged =
            reply.is_ok_and(|r| r["duplicate"] == false && matches!(r["status"].as_str(), Some("scheduled" | "sent")));
    }

    /// At most one stored attempt per retried job's id, across its shards and the parked
    /// partition.
    pub(super) fn check_one_stored_attempt(&mut self) {
        let state = self.mem.state.lock().unwrap();
        let mut per_id: HashMap<&str, usize> = HashMap::new();
        for (_, _, id) in state.items.keys() {
            if id.starts_with('r') && !id.contains(':') {
                *per_id.entry(id.as_str()).or_default() += 1;
            }
        }
        for (id, n) in per_id.into_iter().filter(|(_, n)| *n > 1) {
            let violation = format!("{id}: {n} attempts stored at once");
            if !self.out.violations.contains(&violation) {
                self.out.violations.push(violation);
            }
        }
    }
}
