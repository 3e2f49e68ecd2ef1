//! Series in the whole system (issue 71): `trigger` of a series, the pause and resume of its
//! queue and of the series itself, a debounced `replace` of it, among the series simulation's runs, crashes, faults, cancels, reschedules, retries and
//! redrives (the seeds of `series_steered_*`).
//!
//! Invariants, besides the series simulation's:
//! - nothing accepted by SQS while the queue was paused (from the `paused` answer until
//!   `resume` was called), extra occurrences included; nothing of a series while the series
//!   was paused (a parked occurrence redriven aside: it is a job of its own);
//! - one instant per id: no two messages of a series carry one `waiter.job_id` for two
//!   instants (an extra occurrence never takes an occurrence's id, nor another extra one's);
//! - an extra occurrence arrives at or after its instant, under its id, and never after a
//!   `cancel` of its series answered `cancelled`;
//! - the occurrences that fell due while the queue was paused are missed: after the resume a
//!   `skip` series sends none of them, a `one` series at most one (seeds without the rate,
//!   series without windows).
//!
//! Regular occurrences are at whole minutes (starts are, and steps are whole minutes); an extra
//! one never is, so the checks tell them apart by their instant.

use super::*;
use crate::simulation::series_checks::{regular, QueuePauses};

fn close(intervals: &mut [(DateTime<Utc>, Option<DateTime<Utc>>)], at: DateTime<Utc>) {
    for (_, until) in intervals.iter_mut().filter(|(_, u)| u.is_none()) {
        *until = Some(at);
    }
}

type SeriesPause = (String, DateTime<Utc>, Option<DateTime<Utc>>);

fn close_series(intervals: &mut [SeriesPause], series: &str, at: DateTime<Utc>) {
    for (_, _, until) in intervals.iter_mut().filter(|(id, _, u)| id == series && u.is_none()) {
        *until = Some(at);
    }
}

fn open_ids(intervals: &[SeriesPause]) -> Vec<String> {
    let mut ids: Vec<String> = intervals
        .iter()
        .filter(|(_, _, u)| u.is_none())
        .map(|(id, _, _)| id.clone())
        .collect();
    ids.dedup();
    ids
}

impl SeriesWorld {
    /// One steering action: a trigger (most often), or the queue paused or resumed; and, drawn
    /// from a schedule of their own (the seed's other draws stay as they were), a series
    /// paused or resumed.
    pub(super) async fn steer(&mut self) {
        if self.series_pauses.random_bool(0.3) {
            return match self.series_pauses.random_range(0..3) {
                0 => self.pause_series().await,
                1 => self.resume_series(None).await,
                _ => self.replace_series().await,
            };
        }
        match self.rng.random_range(0..4) {
            0 => self.pause_queue().await,
            1 => self.resume_queue().await,
            _ => self.trigger().await,
        }
    }

    async fn trigger(&mut self) {
        let Some(id) = self.pick() else { return };
        let r = self
            .waiter
            .handle(&self.request(json!({"action": "trigger", "job_id": id})))
            .await;
        if matches!(&r, Ok(r) if r["status"] == "sent") {
            self.pauses.triggered += 1;
        }
    }

    async fn pause_queue(&mut self) {
        let called = self.clock.now();
        let r = self.waiter.handle(&self.request(json!({"action": "pause"}))).await;
        let open = |v: &Vec<(DateTime<Utc>, Option<DateTime<Utc>>)>| v.iter().any(|(_, u)| u.is_none());
        if !open(&self.pauses.maybe) {
            self.pauses.maybe.push((called, None));
        }
        if matches!(&r, Ok(r) if r["status"] == "paused") && !open(&self.pauses.answered) {
            self.pauses.answered.push((self.clock.now(), None));
        }
    }

    async fn pause_series(&mut self) {
        let Some(id) = self.pick() else { return };
        let called = self.clock.now();
        let r = self
            .waiter
            .handle(&self.request(json!({"action": "pause", "job_id": id})))
            .await;
        if !open_ids(&self.pauses.series_maybe).contains(&id) {
            self.pauses.series_maybe.push((id.clone(), called, None));
        }
        if matches!(&r, Ok(r) if r["status"] == "paused") && !open_ids(&self.pauses.series_answered).contains(&id) {
            self.pauses.series_answered.push((id, self.clock.now(), None));
        }
    }

    /// A debounced `enqueue` (`on_duplicate: replace`) of a stored series, with the same rule
    /// and message from a new start 1–3 minutes ahead: a reschedule's move by the debounce path
    /// (its occurrences count on). Only a series still stored and never cancelled: over its
    /// record, a replace starts a new life, which the checks do not follow.
    async fn replace_series(&mut self) {
        let Some(id) = self.pick() else { return };
        let stored = self.mem.state.lock().unwrap().items.keys().any(|(_, _, j)| *j == id);
        let Some(t) = self.tracked.get(&id).filter(|t| stored && t.cancelled_at.is_none()) else {
            return;
        };
        let now = self.clock.now();
        let minute = now.timestamp() - now.timestamp().rem_euclid(60);
        let start = DateTime::from_timestamp(minute + 60 * self.series_pauses.random_range(1..4), 0).expect("time");
        let mut request = self.request(json!({"job_id": id, "message_body": format!("series-{id}"),
            "perform_at": format_rfc3339(start), "on_duplicate": "replace",
            "repeat": {"every_s": t.every_s, "catch_up": t.catch_up, "count": t.count}}));
        if t.windowed {
            request["windows"] = super::series_checks::windows_field();
            request["time_zone"] = json!("UTC");
        }
        let r = self.waiter.handle(&request).await;
        let answered = self.clock.now();
        let t = self.tracked.get_mut(&id).expect("tracked");
        match r {
            Ok(r) if r["replaced"] == true => {
                t.rescheduled = Some((answered, start));
                self.pauses.replaced += 1;
            }
            // Refused (its count reached), or stored anew over a record a run just left.
            Ok(r) if r["replaced"] == false => t.unknown = true,
            Ok(_) | Err(HandlerError::Invalid(_)) => {}
            Err(_) => t.unknown = true,
        }
    }

    /// Resumes `id`, else a series that may be paused.
    async fn resume_series(&mut self, id: Option<String>) {
        let open = open_ids(&self.pauses.series_maybe);
        let Some(id) =
            id.or_else(|| (!open.is_empty()).then(|| open[self.series_pauses.random_range(0..open.len())].clone()))
        else {
            return;
        };
        close_series(&mut self.pauses.series_answered, &id, self.clock.now());
        let r = self
            .waiter
            .handle(&self.request(json!({"action": "resume", "job_id": id})))
            .await;
        if r.is_ok() {
            close_series(&mut self.pauses.series_maybe, &id, self.clock.now());
        }
    }

    /// The calm phase: the queue and every series that may be paused go on.
    pub(super) async fn resume_everything(&mut self) {
        self.resume_queue().await;
        for id in open_ids(&self.pauses.series_maybe) {
            self.resume_series(Some(id)).await;
        }
    }

    pub(super) async fn resume_queue(&mut self) {
        close(&mut self.pauses.answered, self.clock.now());
        let r = self.waiter.handle(&self.request(json!({"action": "resume"}))).await;
        if r.is_ok() {
            close(&mut self.pauses.maybe, self.clock.now());
        }
    }
}

impl QueuePauses {
    /// The answered pauses whose end a whole run saw as the queue's last pause, able to find a
    /// series stored at `stored` (the index lags up to 2 s): one started after the resume and
    /// before the next pause began. (The pause item keeps the last pause only; a run that did
    /// not find the series leaves the next one judging by that run's start.)
    fn judged(&self, runs: &[super::series_checks::RunRecord], stored: DateTime<Utc>) -> Vec<crate::ports::EndedPause> {
        self.answered
            .iter()
            .filter_map(|(from, until)| until.map(|u| (*from, u)))
            .filter(|(_, until)| {
                let next = self.maybe.iter().map(|(f, _)| *f).filter(|f| f > until).min();
                runs.iter().any(|r| {
                    r.whole
                        && r.started > *until
                        && r.started >= stored + TimeDelta::seconds(3)
                        && next.is_none_or(|n| r.started < n)
                })
            })
            .collect()
    }
}

/// The steered seeds' invariants over what SQS accepted (attempts aside).
pub(super) fn check(
    out: &mut SeriesOutcome,
    tracked: &std::collections::BTreeMap<String, Tracked>,
    pauses: &QueuePauses,
    sent: &[crate::testing::Sent],
    rate: bool,
    redriven: &std::collections::BTreeSet<String>,
    runs: &[super::series_checks::RunRecord],
) {
    use super::series_checks::text;
    use sqs_waiter_contract::{JOB_ID_ATTRIBUTE, OCCURRENCE_ATTRIBUTE};
    // The series whose catch-up after a pause is checked (outside the rate and windows, never
    // cancelled, moved or unknown), with the pauses judged for each, read once.
    let judged: HashMap<&str, Vec<crate::ports::EndedPause>> = tracked
        .iter()
        .filter(|(_, t)| !rate && !t.windowed && t.cancelled_at.is_none() && !t.unknown && t.rescheduled.is_none())
        .map(|(id, t)| (id.as_str(), pauses.judged(runs, t.enqueued_at)))
        .collect();
    let mut instants: HashMap<&str, DateTime<Utc>> = HashMap::new();
    for s in sent {
        if let Some((from, until)) = pauses
            .answered
            .iter()
            .find(|(from, until)| s.at > *from && until.is_none_or(|u| s.at < u))
        {
            out.violations.push(format!(
                "{}: accepted at {} while the queue was paused ({from} to {until:?})",
                s.message.body, s.at
            ));
        }
        let series_paused = s.message.body.strip_prefix("series-").and_then(|series| {
            pauses
                .series_answered
                .iter()
                .find(|(id, from, until)| id == series && s.at > *from && until.is_none_or(|u| s.at < u))
        });
        // (A parked occurrence is a job of its own: redriven, it goes whatever its series does.)
        let redriven_id = text(s, JOB_ID_ATTRIBUTE).is_some_and(|id| redriven.contains(id));
        if let (Some((id, from, until)), false) = (series_paused, redriven_id) {
            out.violations.push(format!(
                "{}: accepted at {} while its series {id} was paused ({from} to {until:?})",
                s.message.body, s.at
            ));
        }
        let (Some(id), Some(at)) = (
            text(s, JOB_ID_ATTRIBUTE),
            text(s, OCCURRENCE_ATTRIBUTE).and_then(|t| parse_time(&json!(t))),
        ) else {
            continue;
        };
        match instants.get(id) {
            Some(other) if *other != at => out
                .violations
                .push(format!("{id}: names two instants, {other} and {at}")),
            _ => {
                instants.insert(id, at);
            }
        }
        let Some(series) = s.message.body.strip_prefix("series-") else {
            continue;
        };
        let arrival = s.at + TimeDelta::seconds(i64::from(s.message.delay_seconds.unwrap_or(0)));
        if !regular(at) {
            if arrival < at {
                out.violations
                    .push(format!("{id}: extra occurrence arrived at {arrival}, before {at}"));
            }
            // (A parked one is the operator's to redrive when it chooses, as any parked occurrence.)
            if let Some(cancelled) = tracked.get(series).and_then(|t| t.cancelled_at) {
                if s.at > cancelled && !redriven.contains(id) {
                    out.violations.push(format!(
                        "{id}: extra occurrence accepted at {} after its series was cancelled at {cancelled}",
                        s.at
                    ));
                }
            }
            continue;
        }
        // Missed during the queue's pause: `skip` sends none after the resume, `one` one.
        let (Some(t), Some(judged)) = (tracked.get(series).filter(|t| t.acknowledged), judged.get(series)) else {
            continue;
        };
        let paused_over = judged
            .iter()
            .copied()
            .find(|(from, until)| at > *from && at < *until && s.at >= *until);
        if let (Some((from, until)), "skip") = (paused_over, t.catch_up) {
            out.violations.push(format!(
                "{id}: due at {at} while the queue was paused ({from} to {until}), sent at {} under skip",
                s.at
            ));
        }
    }
    // `one`: at most one of each pause's occurrences after its resume.
    for (series, _) in tracked.iter().filter(|(_, t)| t.catch_up == "one") {
        let Some(judged) = judged.get(series.as_str()) else {
            continue;
        };
        let body = format!("series-{series}");
        for (from, until) in judged.iter().copied() {
            let mut late: Vec<DateTime<Utc>> = sent
                .iter()
                .filter(|s| s.message.body == body && s.at >= until)
                .filter_map(|s| text(s, OCCURRENCE_ATTRIBUTE).and_then(|t| parse_time(&json!(t))))
                .filter(|at| regular(*at) && *at > from && *at < until)
                .collect();
            late.sort();
            late.dedup();
            if late.len() > 1 {
                out.violations.push(format!(
                    "{series}: {} occurrences due while the queue was paused sent after it under one: {late:?}",
                    late.len()
                ));
            }
        }
    }
}
