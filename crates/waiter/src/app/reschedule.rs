//! `reschedule`: moving a stored job, and changing what it carries (docs/contract.md "Managing jobs").

use chrono::{DateTime, Utc};
use tracing::info;

use crate::app::Waiter;
use crate::error::HandlerError;
use crate::error::{InvalidRequest, PortError};
use crate::ports::{Clock, JobStore, MessageQueue, Partition, ReplaceOutcome, StoredJob};
use crate::windows::Windows;
use crate::wire::field_rules::{check_expiry, check_message, check_stored_size};
use crate::wire::normalise::Given;
use crate::wire::repeat_rules::start_in_windows;
use crate::wire::reply::status_only;
use crate::wire::Reschedule;
use sqs_waiter_contract::{JobReply, JobStatus};

/// Read-modify-write attempts of one `reschedule` when the job changes under it.
const RESCHEDULE_ATTEMPTS: usize = 3;

impl<S, Q, C> Waiter<S, Q, C>
where
    S: JobStore + Clone,
    Q: MessageQueue + Clone,
    C: Clock + Clone,
{
    /// Moves a stored job (and changes what it carries) in one conditional write, never while
    /// a poller may be handing it to SQS.
    pub(crate) async fn reschedule(&self, r: Reschedule, cut: DateTime<Utc>) -> Result<JobReply, HandlerError> {
        let queue = &r.queue;
        let partitions = self.candidate_partitions(queue, &r.job_id).await?;
        let status = |status: JobStatus| status_only(status, queue, &r.job_id);
        for _ in 0..RESCHEDULE_ATTEMPTS {
            let Some(current) = self.store.find(queue, &r.job_id, &partitions).await? else {
                if self.store.find(queue, &r.job_id, &[Partition::Parked]).await?.is_some() {
                    return Err(InvalidRequest::new(
                        "job_id",
                        "names a parked job: redrive it (it is then due now) before rescheduling it",
                    )
                    .into());
                }
                return Ok(status(JobStatus::NotFound));
            };
            if r.if_version.is_some_and(|v| v != current.version) {
                return Ok(JobReply {
                    version: Some(current.version),
                    ..status(JobStatus::Conflict)
                });
            }
            let next = self.next_version(&r, &current)?;
            match self.store.replace(&current, &next).await? {
                ReplaceOutcome::Replaced => {
                    info!(queue = %queue, job_id = %r.job_id, version = next.version, "rescheduled");
                    self.hand_over_if_near(&next, cut).await;
                    return Ok(JobReply {
                        perform_at: Some(next.job.perform_at),
                        version: Some(next.version),
                        maybe_delivered_at: next.maybe_delivered_at,
                        attempt: next.job.is_retried().then_some(next.job.attempt),
                        ..status(JobStatus::Rescheduled)
                    });
                }
                ReplaceOutcome::Dispatching => return Ok(status(JobStatus::Dispatching)),
                // Changed since it was read: read again (an `if_version` then answers conflict).
                ReplaceOutcome::Changed => {}
            }
        }
        Err(PortError::Throttled {
            operation: "reschedule",
            source: "the job changed under every attempt; retry".into(),
        }
        .into())
    }

    fn next_version(&self, r: &Reschedule, current: &StoredJob) -> Result<StoredJob, InvalidRequest> {
        let mut next = current.clone();
        let job = &mut next.job;
        // One zone for the windows and the cron: the one given, else the job's own, in which
        // a new `repeat` or new `windows` are read too.
        let own_zone = current.job.repeat.as_ref().and_then(|s| s.zone()).or(current
            .job
            .windows
            .as_ref()
            .map(|w| w.zone));
        let zone = r.time_zone.or(own_zone).unwrap_or(chrono_tz::UTC);
        if let Some(windows) = &r.windows {
            job.windows = windows.clone().map(|w| Windows { zone, ..w });
        }
        if let (Some(z), Some(w)) = (r.time_zone, job.windows.as_mut()) {
            w.zone = z;
        }
        if let Some(body) = &r.message_body {
            job.message_body = body.clone();
        }
        if let Some(attributes) = &r.message_attributes {
            job.message_attributes = attributes.clone();
        }
        if let Some(expires_at) = r.expires_at {
            job.expires_at = expires_at;
        }
        job.priority = r.priority.unwrap_or(job.priority);
        job.weight = r.weight.unwrap_or(job.weight);
        if let Some(tags) = &r.tags {
            job.tags = tags.clone();
        }
        let occurrences = job.repeat.as_ref().map_or(0, |s| s.occurrences);
        // A `trigger`'s extra occurrence, and the second of the last one, stay with the series
        // whatever its rule becomes.
        let extra = current.job.repeat.as_ref().map(|s| s.extra).unwrap_or_default();
        if let Some(series) = &r.repeat {
            let mut series = series.advanced(occurrences);
            series.extra = extra;
            if let Some(count) = series.count.filter(|c| *c <= occurrences) {
                // The poller would finish the series at once, without a send.
                return Err(InvalidRequest::new(
                    "repeat.count",
                    format!("must be more than the {occurrences} occurrences the series has sent, got {count}"),
                ));
            }
            job.repeat = Some(Box::new(series));
        }
        if let (Some(z), Some(series)) = (r.time_zone.or(r.repeat.as_ref().and(own_zone)), job.repeat.as_mut()) {
            series.set_zone(z);
        }
        if r.time_zone.is_some() && job.windows.is_none() && job.repeat.is_none() {
            return Err(InvalidRequest::new("time_zone", "goes with windows or repeat"));
        }
        let series_start = match job.repeat.as_mut() {
            None => {
                // A change of tags alone keeps the job where it is.
                let at = r
                    .perform_at
                    .or_else(|| r.changes_tags_only().then_some(current.job.perform_at))
                    .ok_or_else(|| InvalidRequest::new("perform_at", "is required (or delay_seconds)"))?;
                job.perform_at = job.windows.as_ref().map_or(at, |w| w.next_open(at));
                if let Some(e) = job.expires_at {
                    check_expiry("expires_at", e, job.perform_at)?;
                }
                None
            }
            Some(series) => {
                if job.expires_at.is_some() {
                    return Err(InvalidRequest::new(
                        "expires_at",
                        "does not go with a series: remove it (null) in the same request",
                    ));
                }
                // A time given restarts the series there (a past one stays in the past, its
                // occurrences since then missed, as on `enqueue`); without one it goes on from
                // its next occurrence (the one held for its windows, if any). Either way its
                // first occurrence from there waits for the next opening of its windows.
                let was_series = current.job.repeat.as_ref();
                let start = match (r.start, was_series) {
                    (Some(t), _) => t,
                    (None, Some(s)) => s.from(current.job.perform_at),
                    (None, None) => {
                        return Err(InvalidRequest::new(
                            "perform_at",
                            "is required (or delay_seconds) to make a job a series: its start",
                        ))
                    }
                };
                let first = series.first(start).ok_or_else(|| {
                    InvalidRequest::new(
                        "repeat.until",
                        "comes before the series' first occurrence from perform_at",
                    )
                })?;
                Some(start_in_windows(series, first, job.windows.as_ref()))
            }
        };
        // An extra occurrence still waiting is sent first, as asked; the series returns to its
        // new start after it.
        if let Some(at) = series_start {
            job.move_to(at);
        }
        check_message(&Given::default(), job)?;
        next.version = current.version + 1;
        check_stored_size(self.store.item_bytes(&next))?;
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::QueueName;
    use crate::ports::{Jobs, Lease, Parking};
    use crate::testing::*;
    use crate::time::format_rfc3339;
    use chrono::TimeDelta;
    use serde_json::{json, Value};

    fn waiter_with(store: MemStore, extra: &[(&str, &str)]) -> (TestWaiter, FakeQueue, FakeClock) {
        test_waiter_on(store, "orders,billing.fifo,other", extra)
    }

    async fn get(w: &TestWaiter, id: &str) -> Value {
        call(w, json!({"action": "get", "queue": "orders", "job_id": id})).await
    }

    #[tokio::test(start_paused = true)]
    async fn reschedule_moves_a_job_keeps_what_is_not_given_and_counts_versions() {
        let (w, queue, clock) = waiter_with(MemStore::default(), &[]);
        call(
            &w,
            json!({"queue": "orders", "job_id": "j", "message_body": "b1", "delay_seconds": 86_400,
                   "expires_at": format_rfc3339(clock.now() + TimeDelta::days(30))}),
        )
        .await;
        let week = clock.now() + TimeDelta::days(7);
        let r = call(
            &w,
            json!({"action": "reschedule", "queue": "orders", "job_id": "j", "perform_at": format_rfc3339(week)}),
        )
        .await;
        assert_eq!(r["status"], "rescheduled", "{r}");
        assert_eq!(r["version"], 2);
        assert_eq!(r["perform_at"], format_rfc3339(week));
        let g = get(&w, "j").await;
        assert_eq!(g["perform_at"], format_rfc3339(week));
        assert_eq!(g["message_body"], "b1", "kept");
        assert_eq!(g["version"], 2);
        assert!(g["expires_at"].is_string(), "kept: {g}");

        let r = call(
            &w,
            json!({"action": "reschedule", "queue": "orders", "job_id": "j", "delay_seconds": 7200,
                   "message_body": "b2", "message_attributes": {"k": {"data_type": "String", "string_value": "v"}},
                   "expires_at": null, "if_version": 2}),
        )
        .await;
        assert_eq!(r["status"], "rescheduled", "{r}");
        assert_eq!(r["version"], 3);
        let g = get(&w, "j").await;
        assert_eq!(g["message_body"], "b2");
        assert_eq!(g["message_attributes"]["k"]["string_value"], "v");
        assert!(g.get("expires_at").is_none(), "cleared: {g}");
        assert!(queue.sent().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn reschedule_answers_not_found_conflict_and_dispatching_and_then_changes_nothing() {
        let store = MemStore::default();
        let (w, _, clock) = waiter_with(store.clone(), &[("WAITER_SHARDS", "1")]);
        let r = call(
            &w,
            json!({"action": "reschedule", "queue": "orders", "job_id": "nope", "delay_seconds": 5000}),
        )
        .await;
        assert_eq!(r["status"], "not_found");

        schedule(&w, "j", 5000).await;
        let before = get(&w, "j").await;
        let r = call(
            &w,
            json!({"action": "reschedule", "queue": "orders", "job_id": "j", "delay_seconds": 9000, "if_version": 7}),
        )
        .await;
        assert_eq!(r["status"], "conflict");
        assert_eq!(r["version"], 1, "the current version");
        assert_eq!(get(&w, "j").await, before);

        // A poller's lease covers the job: it may be in SQS already.
        store.state.lock().unwrap().leases.insert(
            (QueueName::parse("orders").unwrap(), 0),
            Lease {
                owner: "poller".into(),
                until: clock.now() + TimeDelta::seconds(60),
                horizon: clock.now() + TimeDelta::seconds(6000),
            },
        );
        let r = call(
            &w,
            json!({"action": "reschedule", "queue": "orders", "job_id": "j", "delay_seconds": 9000}),
        )
        .await;
        assert_eq!(r["status"], "dispatching");
        assert_eq!(get(&w, "j").await, before);
    }

    #[tokio::test(start_paused = true)]
    async fn bad_reschedules_name_the_field_and_change_nothing() {
        let (w, _, clock) = waiter_with(MemStore::default(), &[]);
        call(
            &w,
            json!({"queue": "orders", "job_id": "j", "message_body": "b", "delay_seconds": 5000,
                   "expires_at": format_rfc3339(clock.now() + TimeDelta::hours(3))}),
        )
        .await;
        let before = get(&w, "j").await;
        let cases = [
            (
                json!({"action": "reschedule", "queue": "orders", "job_id": "j"}),
                "perform_at",
            ),
            (
                json!({"action": "reschedule", "queue": "orders", "job_id": "j", "delay_seconds": 1, "perform_at": 5}),
                "delay_seconds",
            ),
            (
                json!({"action": "reschedule", "queue": "orders", "delay_seconds": 1}),
                "job_id",
            ),
            (
                json!({"action": "reschedule", "queue": "orders", "job_id": "j", "delay_seconds": 1, "if_version": 0}),
                "if_version",
            ),
            (
                json!({"action": "reschedule", "queue": "orders", "job_id": "j", "delay_seconds": 1, "if_version": "2"}),
                "if_version",
            ),
            (
                json!({"action": "reschedule", "queue": "orders", "job_id": "j", "delay_seconds": 1, "message_body": ""}),
                "message_body",
            ),
            (
                json!({"action": "reschedule", "queue": "orders", "job_id": "j", "delay_seconds": 1, "colour": "red"}),
                "colour",
            ),
            // The kept expires_at (in 3 h) is before the new time.
            (
                json!({"action": "reschedule", "queue": "orders", "job_id": "j", "delay_seconds": 86_400}),
                "expires_at",
            ),
            (
                json!({"action": "reschedule", "queue": "nope", "job_id": "j", "delay_seconds": 1}),
                "queue",
            ),
        ];
        for (request, field) in cases {
            let e = refused(&w, request.clone()).await;
            assert_eq!(e.field, field, "{request}: {e}");
        }
        assert_eq!(get(&w, "j").await, before);
    }

    /// Schedules "near" a week out, then reschedules it to 30 s from now; when it is due.
    async fn move_near(w: &TestWaiter, clock: &FakeClock) -> DateTime<Utc> {
        schedule(w, "near", 7 * 86_400).await;
        let due = clock.now() + TimeDelta::seconds(30);
        let r = call(
            w,
            json!({"action": "reschedule", "queue": "orders", "job_id": "near", "perform_at": format_rfc3339(due)}),
        )
        .await;
        assert_eq!(r["status"], "rescheduled");
        due
    }

    #[tokio::test(start_paused = true)]
    async fn a_job_moved_near_is_handed_over_at_once_and_one_moved_far_waits() {
        let store = MemStore::default();
        let (w, queue, clock) = waiter_with(store.clone(), &[("WAITER_LOOKAHEAD", "120")]);
        let due = move_near(&w, &clock).await;
        let sent = queue.sent();
        assert_eq!(sent.len(), 1, "handed over without waiting for a poller run");
        let arrival = sent[0].at + TimeDelta::seconds(i64::from(sent[0].message.delay_seconds.unwrap()));
        assert!(
            arrival >= due && arrival - due < TimeDelta::seconds(1),
            "{arrival} vs {due}"
        );
        assert_eq!(store.len(), 0, "removed once SQS accepted it");

        // From "in 30 s" to next week: stored with the new time; a poller run at the old time
        // sends nothing, even while the index still shows the old item.
        let lagging = MemStore {
            index_lag: std::time::Duration::from_secs(5),
            ..MemStore::default()
        };
        let (w, queue, clock) = waiter_with(
            lagging.clone(),
            &[("WAITER_LOOKAHEAD", "0"), ("WAITER_DIRECT_MAX_DELAY", "0")],
        );
        schedule(&w, "far", 30).await;
        tokio::time::sleep(std::time::Duration::from_secs(6)).await;
        let r = call(
            &w,
            json!({"action": "reschedule", "queue": "orders", "job_id": "far", "delay_seconds": 7 * 86_400}),
        )
        .await;
        assert_eq!(r["status"], "rescheduled");
        tokio::time::sleep(std::time::Duration::from_secs(30)).await;
        let d = dispatcher_for(&w);
        let s = d.run(clock.now() + TimeDelta::seconds(30)).await;
        assert_eq!(s.dispatched, 0, "{s:?}");
        assert!(queue.sent().is_empty(), "the old version was sent");
        assert_eq!(get(&w, "far").await["version"], 2);
    }

    #[tokio::test(start_paused = true)]
    async fn with_a_max_rate_a_job_moved_near_is_left_to_the_poller_which_holds_the_budget() {
        let store = MemStore::default();
        let (w, queue, clock) = waiter_with(
            store.clone(),
            &[
                ("WAITER_LOOKAHEAD", "120"),
                ("WAITER_MAX_RATE", "1"),
                ("WAITER_SHARDS", "1"),
            ],
        );
        move_near(&w, &clock).await;
        assert!(
            queue.sent().is_empty(),
            "enqueue sends nothing beside the poller's budget"
        );
        assert_eq!(store.len(), 1, "the poller sends it");
    }

    #[tokio::test(start_paused = true)]
    async fn a_fifo_job_moved_near_stays_stored_for_the_poller() {
        let store = MemStore::default();
        let (w, queue, clock) = waiter_with(store.clone(), &[]);
        let r = call(
            &w,
            json!({"queue": "billing.fifo", "job_id": "f", "message_body": "b", "message_group_id": "g", "delay_seconds": 5000}),
        )
        .await;
        assert_eq!(r["status"], "scheduled");
        let r = call(
            &w,
            json!({"action": "reschedule", "queue": "billing.fifo", "job_id": "f", "delay_seconds": 30}),
        )
        .await;
        assert_eq!(r["status"], "rescheduled");
        assert!(queue.sent().is_empty(), "FIFO takes no delay: it waits to be due");
        assert_eq!(store.len(), 1);
        let _ = clock;
    }

    #[tokio::test(start_paused = true)]
    async fn a_parked_job_is_redriven_not_rescheduled() {
        let store = MemStore::default();
        let (w, _, clock) = waiter_with(store.clone(), &[]);
        schedule(&w, "p", 5000).await;
        let q = QueueName::parse("orders").unwrap();
        let stored = store
            .find(&q, "p", &[Partition::Shard(crate::routing::shard_for("p", 4))])
            .await
            .unwrap()
            .unwrap();
        store
            .park(
                &stored,
                &crate::ports::ParkInfo {
                    parked_at: clock.now(),
                    code: "InvalidParameterValue".into(),
                    message: "bad".into(),
                },
            )
            .await
            .unwrap();
        let e = refused(
            &w,
            json!({"action": "reschedule", "queue": "orders", "job_id": "p", "delay_seconds": 9000}),
        )
        .await;
        assert_eq!(e.field, "job_id");
        assert!(e.to_string().contains("redrive"), "{e}");
    }
}
