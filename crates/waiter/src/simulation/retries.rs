//! Consumers handing back what they received (`retry`), among the other callers, crashes and
//! faults of a seed, and the invariants of retries:
//! - one scheduled attempt per (id, attempt): every reply that schedules attempt k of an id
//!   (first or duplicate) names the same `perform_at`;
//! - no loss: an attempt a reply scheduled is delivered;
//! - never early: no delivery of attempt k arrives before that `perform_at`;
//! - `waiter.attempt` is monotone as received: the first delivery of attempt k+1 comes after
//!   the first delivery of attempt k;
//! - nothing of a chain is accepted by SQS after a cancel of it answered `cancelled`;
//! - a `retry` of the latest attempt delivered never answers `conflict` naming it or an
//!   earlier one (the consumer deletes the message, and the chain is lost), unless an operator
//!   moved or cancelled the chain.

use std::collections::BTreeMap;

use super::*;
use crate::testing::Sent;

/// The body of every message of retried job `id`.
pub(super) fn body_of(id: &str) -> String {
    format!("retry:{id}")
}

/// Whether a message is one of a retried job or a copy of one (the other checks leave these out).
pub(super) fn is_retried(s: &Sent) -> bool {
    s.message.body.starts_with("retry:")
}

/// A replayed copy's id, which its messages name (`waiter.job_id`; every message names its
/// job so, and a copy's id is `{job_id}~{version}`).
fn copy_of(s: &Sent) -> Option<&str> {
    match &s.message.attributes.get(sqs_waiter_contract::JOB_ID_ATTRIBUTE)?.data {
        crate::job::AttributeData::String(id) => Some(id.as_str()).filter(|id| id.contains('~')),
        crate::job::AttributeData::Binary(_) => None,
    }
}

/// The chain a message is of: a replayed copy's (its own id), else the original's (its body).
pub(super) fn chain_of(s: &Sent) -> String {
    copy_of(s).map_or_else(|| s.message.body.clone(), str::to_owned)
}

/// The chain of a job id: a copy (`~`) is its own, the original's is its body.
fn chain_of_id(id: &str) -> String {
    if id.contains('~') {
        id.to_owned()
    } else {
        body_of(id)
    }
}

/// The attempt a message is: its `waiter.attempt`; a copy's first delivery carries none, and
/// neither does a caller's job's (`Retries::attempt_seen`). (Other originals' first deliveries
/// are never sent here: consumers start at attempt 1 by themselves.)
fn attempt_of(s: &Sent) -> Option<u32> {
    crate::job::attempt_in(&s.message.attributes).or_else(|| copy_of(s).map(|_| 1))
}

fn arrival(s: &Sent) -> DateTime<Utc> {
    s.at + TimeDelta::seconds(i64::from(s.message.delay_seconds.unwrap_or(0)))
}

/// When an operator's call began, and the time it moved an attempt to: it holds for what SQS
/// accepted after the call began.
pub(super) type Move = (DateTime<Utc>, DateTime<Utc>);

#[derive(Debug, Default)]
pub(super) struct Retries {
    pub(super) next_id: usize,
    /// Per (body, attempt): the `perform_at` of every reply that scheduled it.
    pub(super) scheduled: BTreeMap<(String, u32), Vec<DateTime<Utc>>>,
    /// Per (body, attempt): when an operator's call began, and the time it moved the attempt to
    /// (`reschedule`, `redrive`); it holds for what SQS accepted after the call began.
    pub(super) moved: BTreeMap<(String, u32), Vec<Move>>,
    /// Per body: when the cancel began that answered `cancelled` for the job.
    pub(super) cancelled: BTreeMap<String, DateTime<Utc>>,
    /// Bodies whose cancel may have taken effect though no answer said so (the caller
    /// crashed, or the call failed after it was applied).
    pub(super) maybe_cancelled: std::collections::BTreeSet<String>,
    /// Bodies a `reschedule` may have moved though no answer said so: when it began, and the
    /// time asked.
    pub(super) maybe_moved: BTreeMap<String, Vec<Move>>,
    pub(super) calls: usize,
    /// Operators' and callers' actions on these ids (`operators`).
    pub(super) operations: usize,
    /// Replayed copies' ids, which consumers retry too, and those `retry` calls.
    pub(super) copies: Vec<String>,
    pub(super) copy_calls: usize,
    /// `retry` replies that lost a chain: `conflict` to its latest delivered attempt.
    pub(super) lost: Vec<String>,
    /// Bodies of the chains a caller enqueued (their first delivery carries no attempt).
    pub(super) enqueued: std::collections::BTreeSet<String>,
}

impl Retries {
    /// The attempt a message is, as a consumer reads it.
    fn attempt_seen(&self, s: &Sent) -> Option<u32> {
        attempt_of(s).or_else(|| self.enqueued.contains(&chain_of(s)).then_some(1))
    }
}

/// A consumer's `retry` as it makes it: the id, the attempt it reports, the latest attempt of
/// the chain delivered when it chose, and the request.
pub(super) struct RetryCall {
    id: String,
    attempt: u32,
    latest_delivered: u32,
    pub(super) request: Value,
}

impl World {
    /// A consumer hands back a message: a first delivery of a new job (attempt 1), or the latest
    /// attempt it received of one retried before, or now and then an older one (a duplicate or
    /// a stale report). It may crash mid-call and call again.
    pub(super) async fn retry(&mut self) {
        if self.caller_chains && self.rng.random_bool(0.5) {
            return self.enqueue_chain().await;
        }
        let Some(call) = self.retry_call(None) else {
            return;
        };
        for n in 0..2 {
            let got = self.call_may_crash(&call.request, n == 0).await;
            let Some(Ok(reply)) = got else {
                continue;
            };
            self.retry_answered(&call, &reply);
            if n == 0 && self.rng.random_bool(0.5) {
                // The consumer's own retry of a call that succeeded: a duplicate.
                continue;
            }
            break;
        }
    }

    /// A caller enqueues a job due within 3 s (stored, or sent straight to SQS) that consumers
    /// then retry once it is delivered, as a consumer of any job would (issue 46: with history
    /// off, a cancel of it after its send must still stop a retry of that delivery).
    pub(super) async fn enqueue_chain(&mut self) {
        // Half in windows (where the seed has them), due just before the window's close.
        let windowed = self.windows_on && self.rng.random_bool(0.5);
        let at = if windowed {
            self.window_close - TimeDelta::milliseconds(self.rng.random_range(0..15_000))
        } else {
            self.clock.now() + TimeDelta::milliseconds(self.rng.random_range(0..3_000))
        };
        self.enqueue_chain_at(at, windowed).await;
    }

    /// A caller's job for consumers to retry, due at `at` (in the seed's window if `windowed`);
    /// its id.
    pub(super) async fn enqueue_chain_at(&mut self, at: DateTime<Utc>, windowed: bool) -> String {
        self.retries.next_id += 1;
        let id = format!("r{}", self.retries.next_id - 1);
        let body = body_of(&id);
        self.retries.enqueued.insert(body.clone());
        let mut request = json!({"queue": "q", "job_id": id, "message_body": body, "perform_at": format_rfc3339(at)});
        if windowed {
            request["windows"] = json!([{"from": super::WINDOW.0, "to": super::WINDOW.1}]);
            request["time_zone"] = json!("UTC");
        }
        for n in 0..2 {
            if let Some(Ok(reply)) = self.call_may_crash(&request, n == 0).await {
                let due = parse_time(&reply["perform_at"]).unwrap_or(at);
                self.retries.scheduled.entry((body, 1)).or_default().push(due);
                break;
            }
        }
        id
    }

    /// The `retry` a consumer makes now: of chain `id` if given (the latest attempt it
    /// received, with a larger `max_attempts` now and then, as a new release of the consumer
    /// would), else as `retry` picks. `None` when there is nothing to hand back.
    pub(super) fn retry_call(&mut self, of: Option<String>) -> Option<RetryCall> {
        let new_chain = of.is_none() && (self.retries.next_id == 0 || self.rng.random_bool(0.3));
        let (id, attempt, latest_delivered) = if new_chain {
            self.retries.next_id += 1;
            (format!("r{}", self.retries.next_id - 1), 1, 0)
        } else {
            let id = of.unwrap_or_else(|| match self.retries.copies.len() {
                n if n > 0 && self.rng.random_bool(0.25) => self.retries.copies[self.rng.random_range(0..n)].clone(),
                _ => format!("r{}", self.rng.random_range(0..self.retries.next_id)),
            });
            let now = self.clock.now();
            let latest = self
                .sink
                .sent()
                .iter()
                .filter(|s| chain_of(s) == chain_of_id(&id) && arrival(s) <= now)
                .filter_map(|s| self.retries.attempt_seen(s))
                .max();
            // A consumer can hand back only what it received: a copy or a caller's job before
            // its first delivery is not retried. (Otherwise an original's attempt 1 stands for a
            // delivery of its own.)
            let own = !id.contains('~') && !self.retries.enqueued.contains(&body_of(&id));
            let latest = latest.or(own.then_some(1))?;
            let attempt = if latest > 1 && self.rng.random_bool(0.2) {
                latest - 1
            } else {
                latest
            };
            (id, attempt, latest)
        };
        let body = id.split('~').next().map(body_of).unwrap_or_default();
        // Chains run out of attempts often enough that operators meet parked ones.
        let max_attempts = if self.rng.random_bool(0.1) {
            9
        } else {
            self.rng.random_range(2..=4)
        };
        let mut request = json!({
            "action": "retry", "queue": "q", "job_id": id, "attempt": attempt, "message_body": body,
            "backoff": {"base_s": self.rng.random_range(1..=4), "factor": 2, "max_s": 20,
                        "jitter": self.rng.random_bool(0.5)},
            "max_attempts": max_attempts
        });
        if id.contains('~') {
            self.retries.copy_calls += 1;
            // Handed back as received: a copy's message names it.
            request["message_attributes"] = json!({"waiter.job_id": {"data_type": "String", "string_value": id}});
        }
        self.retries.calls += 1;
        Some(RetryCall {
            id,
            attempt,
            latest_delivered,
            request,
        })
    }

    /// Records what a `retry` answered.
    pub(super) fn retry_answered(&mut self, call: &RetryCall, reply: &Value) {
        let RetryCall {
            id,
            attempt,
            latest_delivered,
            ..
        } = call;
        // The attempt a consumer holds the latest delivery of moves the chain on (or answers a
        // duplicate, or cancelled): `conflict` naming it or an earlier one means the chain was
        // lost, unless an operator moved or cancelled it meanwhile.
        let stuck = reply["status"] == "conflict"
            && reply["attempt"].as_u64().is_some_and(|a| a <= u64::from(*attempt))
            && attempt == latest_delivered;
        let body = chain_of_id(id);
        let operated = self.retries.moved.keys().any(|(b, _)| *b == body)
            || self.retries.maybe_moved.contains_key(&body)
            || self.retries.cancelled.contains_key(&body)
            || self.retries.maybe_cancelled.contains(&body);
        if stuck && !operated {
            self.retries.lost.push(format!(
                "{id} attempt {attempt}: the latest delivered, answered {reply} (the chain is lost)"
            ));
        }
        if reply["status"] == "scheduled" {
            let next = reply["attempt"].as_u64().and_then(|n| u32::try_from(n).ok());
            if let (Some(next), Some(at)) = (next, parse_time(&reply["perform_at"])) {
                self.retries.scheduled.entry((body, next)).or_default().push(at);
            }
        }
    }
}

/// Records every broken retry invariant in `out`.
/// `clock_error`: how far `enqueue`'s clock is off; what it hands to SQS itself (a chain moved
/// near) is timed by it.
pub(super) fn check(out: &mut Outcome, retries: &Retries, sent: &[Sent], clock_error: TimeDelta) {
    out.violations.extend(retries.lost.iter().cloned());
    let sent: Vec<Sent> = sent.iter().filter(|s| is_retried(s)).cloned().collect();
    check_cancelled_chains(out, &retries.cancelled, &sent);
    let mut first: BTreeMap<(String, u32), DateTime<Utc>> = BTreeMap::new();
    for s in &sent {
        let Some(attempt) = retries.attempt_seen(s) else {
            out.violations
                .push(format!("{}: a retried message without waiter.attempt", s.message.body));
            continue;
        };
        let key = (chain_of(s), attempt);
        let at = arrival(s);
        // The times that hold for a delivery SQS accepted at `s.at`: every reply's, and those of
        // operators' calls that began before it. An attempt no reply named (its `retry` crashed)
        // has no known time: an unanswered `reschedule` may then not be about it either.
        let after = |times: Option<&Vec<Move>>| {
            times
                .into_iter()
                .flatten()
                .filter(|(began, _)| *began <= s.at)
                .map(|(_, to)| *to)
                .collect::<Vec<_>>()
        };
        let known: Vec<DateTime<Utc>> = retries
            .scheduled
            .get(&key)
            .into_iter()
            .flatten()
            .copied()
            .chain(after(retries.moved.get(&key)))
            .collect();
        let dues = (!known.is_empty())
            .then(|| known.into_iter().chain(after(retries.maybe_moved.get(&key.0))))
            .into_iter()
            .flatten();
        if let Some(due) = dues.min() {
            let clock_error = super::deploys::error_of(s, clock_error);
            if at + clock_error < due {
                out.violations
                    .push(format!("{} attempt {attempt}: early by {:?}", key.0, due - at));
            }
        }
        first.entry(key).and_modify(|t| *t = (*t).min(at)).or_insert(at);
    }
    for ((body, attempt), dues) in &retries.scheduled {
        // Moved by an operator: a later reply names the time it was moved to.
        let moved = retries.moved.get(&(body.clone(), *attempt));
        let differ = !retries.maybe_moved.contains_key(body)
            && dues
                .iter()
                .any(|d| *d != dues[0] && !moved.is_some_and(|m| m.iter().any(|(_, to)| to == d)));
        let cancelled = retries.cancelled.contains_key(body) || retries.maybe_cancelled.contains(body);
        if differ {
            out.violations.push(format!(
                "{body} attempt {attempt}: scheduled at different times {dues:?}"
            ));
        }
        if !cancelled && !first.contains_key(&(body.clone(), *attempt)) {
            out.violations.push(format!(
                "{body} attempt {attempt}: scheduled but never delivered (lost)"
            ));
        }
    }
    for ((body, attempt), at) in &first {
        if let Some(before) = first.get(&(body.clone(), attempt.saturating_sub(1))) {
            if at <= before {
                out.violations.push(format!(
                    "{body}: attempt {attempt} first arrived at {at}, not after attempt {} at {before}",
                    attempt - 1
                ));
            }
        }
    }
}

/// Records every delivery of a retried job accepted by SQS after a cancel of it answered
/// `cancelled` (that cancel began before the acceptance); a replayed copy is a job of its own.
fn check_cancelled_chains(
    out: &mut Outcome,
    cancelled: &std::collections::BTreeMap<String, DateTime<Utc>>,
    sent: &[Sent],
) {
    for s in sent {
        if let Some(began) = cancelled.get(&chain_of(s)) {
            if s.at > *began {
                out.violations.push(format!(
                    "{}: accepted by SQS at {} after a cancel that began at {began} answered cancelled",
                    s.message.body, s.at
                ));
            }
        }
    }
}
