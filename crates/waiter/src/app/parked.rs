//! Parked jobs (those SQS rejected permanently): `list_parked` and `redrive`.

use std::collections::HashMap;

use tracing::info;

use crate::app::Waiter;
use crate::config::QueueName;
use crate::cursor;
use crate::error::HandlerError;
use crate::ports::{
    Clock, Found, HistoryStatus, JobKey, JobStore, MessageQueue, Over, Partition, PutOutcome, StoredJob,
};
use crate::wire::reply::{describe, duplicate, error_result, reply, status_only, Reply};
use crate::wire::request::RedriveTarget;
use sqs_waiter_contract::{
    BatchReply, BatchResult, JobReply, JobStatus, ParkedReply, RedriveAllReply, OCCURRENCE_SEPARATOR,
};

const PARKED_LISTING: &str = "parked";

impl<S: JobStore + Clone, Q: MessageQueue + Clone, C: Clock + Clone> Waiter<S, Q, C> {
    async fn parked_page(
        &self,
        queue: &QueueName,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<(Vec<StoredJob>, Option<String>), HandlerError> {
        let after = cursor.map(|c| cursor::decode(queue, PARKED_LISTING, c)).transpose()?;
        let page = self.store.parked(queue, limit, after.as_deref()).await?;
        let next = page.next.map(|after| cursor::encode(queue, PARKED_LISTING, &after));
        Ok((page.items, next))
    }

    pub(crate) async fn list_parked(
        &self,
        queue: &QueueName,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<ParkedReply, HandlerError> {
        let (jobs, next) = self.parked_page(queue, limit, cursor).await?;
        let jobs: Vec<JobReply> = jobs.iter().map(describe).collect();
        Ok(ParkedReply {
            queue: queue.as_str().to_owned(),
            count: jobs.len(),
            jobs,
            cursor: next,
        })
    }

    pub(crate) async fn redrive(&self, queue: &QueueName, target: RedriveTarget) -> Result<Reply, HandlerError> {
        match target {
            RedriveTarget::One(job_id) => {
                let parked = self.store.find(queue, &job_id, &[Partition::Parked]).await?;
                self.redrive_one(queue, &job_id, parked).await.map(Reply::from)
            }
            RedriveTarget::Many(ids) => {
                let keys: Vec<JobKey> = ids
                    .iter()
                    .map(|id| JobKey {
                        partition: Partition::Parked,
                        job_id: id.clone(),
                    })
                    .collect();
                let mut found: HashMap<String, StoredJob> = self
                    .store
                    .read(queue, &keys)
                    .await?
                    .into_iter()
                    .map(|j| (j.job.job_id.clone(), j))
                    .collect();
                let mut results = Vec::with_capacity(ids.len());
                for id in ids {
                    let parked = found.remove(&id);
                    results.push(
                        self.redrive_one(queue, &id, parked)
                            .await
                            .map(|r| BatchResult::Done(Box::new(r)))
                            .unwrap_or_else(|e| error_result(&e)),
                    );
                }
                Ok(Reply::Batch(BatchReply {
                    queue: Some(queue.as_str().to_owned()),
                    results,
                }))
            }
            RedriveTarget::All { limit, cursor } => {
                let (jobs, next) = self.parked_page(queue, limit, cursor.as_deref()).await?;
                let (mut redriven, mut duplicates) = (0, 0);
                for parked in jobs {
                    let id = parked.job.job_id.clone();
                    let r = self.redrive_one(queue, &id, Some(parked)).await?;
                    if r.duplicate == Some(true) {
                        duplicates += 1;
                    } else {
                        redriven += 1;
                    }
                }
                Ok(Reply::RedriveAll(RedriveAllReply {
                    queue: queue.as_str().to_owned(),
                    redriven,
                    duplicates,
                    cursor: next,
                }))
            }
        }
    }

    /// Moves a parked job back into its shard, due now, or at its own time if that is still to
    /// come (a job parked when a run handed it over ahead of its time is never sent early: a
    /// series' occurrence redriven before its instant arrived early). If the id is active again (enqueued
    /// after it was parked), nothing moves: the reply shows the active job and `duplicate: true`,
    /// and the parked copy stays visible in `list_parked`.
    async fn redrive_one(
        &self,
        queue: &QueueName,
        job_id: &str,
        parked: Option<StoredJob>,
    ) -> Result<JobReply, HandlerError> {
        let Some(parked) = parked else {
            return Ok(status_only(JobStatus::NotFound, queue, job_id));
        };
        let now = self.clock.now();
        let mut job = parked.job.clone();
        // A series (parked whole before issue 60 parked occurrences alone) goes back to its
        // schedule: its next occurrence stays, and `catch_up` decides what fell due meanwhile.
        if job.repeat.is_none() {
            // Inside its windows, as `retry` and `reschedule` place a job: the reply and `get`
            // show when it can be sent.
            let due = job.perform_at.max(now);
            job.perform_at = job.windows.as_ref().map_or(due, |w| w.next_open(due));
        }
        // Its `expires_at` stays: a job redriven after it is dropped as expired by the next
        // run, as any job found late is, never sent (the caller said so when it enqueued it).
        let candidates = self.candidate_partitions(queue, job_id).await?;
        if let Some(active) = self.store.find(queue, job_id, &candidates).await? {
            if parked.job.is_retried() && active.job.attempt >= parked.job.attempt {
                // A copy an earlier redrive left behind (moved, then not removed): the
                // attempt it holds is home already.
                self.store.remove(&parked).await?;
            }
            return Ok(reply(&active, JobStatus::Scheduled, true));
        }
        let into = StoredJob {
            paused_at: None,
            partition: self.home_of(queue, job_id),
            job,
            enqueued_at: now,
            parked: None,
            version: parked.version + 1,
            maybe_delivered_at: parked.maybe_delivered_at,
        };
        if parked.job.is_retried() {
            return self.redrive_attempt(&parked, into).await;
        }
        match self.store.unpark(&parked, &into).await? {
            PutOutcome::Created { version } => {
                info!(queue = %queue, job_id, version, "re-driven");
                Ok(reply(&StoredJob { version, ..into }, JobStatus::Scheduled, false))
            }
            PutOutcome::Duplicate(active) => Ok(reply(&active, JobStatus::Scheduled, true)),
            PutOutcome::Done(history) => {
                // An occurrence's id is never a caller's: history that it was dispatched means
                // this very occurrence reached SQS (a run re-sent it after a crash, and SQS
                // refused the copy). The parked copy is that refused duplicate: it goes.
                if history.status == HistoryStatus::Dispatched && job_id.contains(OCCURRENCE_SEPARATOR) {
                    self.store.remove(&parked).await?;
                }
                Ok(duplicate(&Found::History(*history)))
            }
        }
    }
}

impl<S: JobStore + Clone, Q: MessageQueue + Clone, C: Clock + Clone> Waiter<S, Q, C> {
    /// Redrives a parked attempt of a retried job: one transaction moves it home, over the
    /// record that fences the key (the attempt before it), so the parked copy never outlives
    /// the move and a `retry` of the redriven attempt finds only it.
    async fn redrive_attempt(&self, parked: &StoredJob, into: StoredJob) -> Result<JobReply, HandlerError> {
        let queue = &parked.job.queue;
        let job_id = &parked.job.job_id;
        let now = self.clock.now();
        let at_home = self.store.read_any(queue, &[into.key()]).await?.pop();
        let over = match &at_home {
            Some(Found::Job(active)) => return Ok(reply(active, JobStatus::Scheduled, true)),
            Some(Found::History(h)) if h.is_live(now) && h.attempt >= into.job.attempt => {
                return Ok(duplicate(&Found::History(h.clone())))
            }
            Some(Found::History(h)) => Over::Record(h),
            None => Over::Free,
        };
        let into = StoredJob {
            version: into.version.max(over.version() + 1),
            ..into
        };
        if !self.store.unpark_over(parked, &into, over).await? {
            // A concurrent redrive, retry or cancel changed the id since it was read.
            return Ok(
                match self
                    .existing(queue, job_id, std::slice::from_ref(&into.partition), now)
                    .await?
                {
                    Some(found) => duplicate(&found),
                    None => status_only(JobStatus::NotFound, queue, job_id),
                },
            );
        }
        info!(queue = %queue, job_id, attempt = into.job.attempt, "re-driven");
        Ok(reply(&into, JobStatus::Scheduled, false))
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeDelta;
    use serde_json::json;

    use super::*;
    use crate::ports::{Jobs, Parking};
    use crate::testing::{test_waiter, FakeClock, FakeQueue, MemStore};
    use serde_json::Value;

    fn waiter(extra: &[(&str, &str)]) -> (Waiter<MemStore, FakeQueue, FakeClock>, MemStore, FakeQueue, FakeClock) {
        test_waiter("orders,billing.fifo", extra)
    }

    #[tokio::test(start_paused = true)]
    async fn parked_jobs_are_listed_and_redriven() {
        let (w, store, _, _) = waiter(&[]);
        w.handle(&json!({"queue": "orders", "message_body": "x", "delay_seconds": 5000, "job_id": "p"}))
            .await
            .unwrap();
        let q = QueueName::parse("orders").unwrap();
        let job = w.store.find(&q, "p", &w.shard_partitions()).await.unwrap().unwrap();
        let info = crate::ports::ParkInfo {
            parked_at: w.clock.now(),
            code: "InvalidParameterValue".into(),
            message: "bad".into(),
        };
        store.park(&job, &info).await.unwrap();
        let list = w
            .handle(&json!({"action": "list_parked", "queue": "orders"}))
            .await
            .unwrap();
        assert_eq!(list["count"], 1);
        assert_eq!(list["cursor"], Value::Null);
        assert_eq!(list["jobs"][0]["error"]["code"], "InvalidParameterValue");
        let got = w
            .handle(&json!({"action": "get", "queue": "orders", "job_id": "p"}))
            .await
            .unwrap();
        assert_eq!(got["status"], "parked");
        let r = w
            .handle(&json!({"action": "redrive", "queue": "orders", "job_id": "p"}))
            .await
            .unwrap();
        assert_eq!(r["status"], "scheduled");
        let got = w
            .handle(&json!({"action": "get", "queue": "orders", "job_id": "p"}))
            .await
            .unwrap();
        assert_eq!(got["status"], "scheduled");
        assert_eq!(
            w.handle(&json!({"action": "list_parked", "queue": "orders"}))
                .await
                .unwrap()["count"],
            0
        );
    }

    #[tokio::test(start_paused = true)]
    async fn parked_jobs_page_with_a_cursor_and_redrive_in_bulk() {
        let (w, store, _, clock) = waiter(&[]);
        let q = QueueName::parse("orders").unwrap();
        let info = crate::ports::ParkInfo {
            parked_at: clock.now(),
            code: "InvalidParameterValue".into(),
            message: "bad".into(),
        };
        for i in 0..25 {
            w.handle(
                &json!({"queue": "orders", "message_body": "x", "delay_seconds": 5000, "job_id": format!("p{i:02}")}),
            )
            .await
            .unwrap();
            let job = w
                .store
                .find(&q, &format!("p{i:02}"), &w.shard_partitions())
                .await
                .unwrap()
                .unwrap();
            store.park(&job, &info).await.unwrap();
        }
        let mut seen = Vec::new();
        let mut cursor = Value::Null;
        loop {
            let page = w
                .handle(&json!({"action": "list_parked", "queue": "orders", "limit": 10, "cursor": cursor}))
                .await
                .unwrap();
            assert!(page["count"].as_u64().unwrap() <= 10);
            seen.extend(
                page["jobs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|j| j["job_id"].as_str().unwrap().to_owned()),
            );
            cursor = page["cursor"].clone();
            if cursor.is_null() {
                break;
            }
        }
        assert_eq!(seen.len(), 25);
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "in job_id order, no repeats");

        // A cursor is bound to its queue; garbage is refused by name.
        let c = crate::cursor::encode(&QueueName::parse("billing.fifo").unwrap(), "parked", "p01");
        for bad in [json!(c), json!("garbage!"), json!(5)] {
            let e = w
                .handle(&json!({"action": "list_parked", "queue": "orders", "cursor": bad}))
                .await
                .unwrap_err();
            assert!(e.message().starts_with("cursor: "), "{}", e.message());
        }

        // p03 is active again under the same id: its redrive moves nothing and reports the
        // active job's time, not one it did not store.
        w.handle(&json!({"queue": "orders", "message_body": "new", "delay_seconds": 7000, "job_id": "p03"}))
            .await
            .unwrap();
        let r = w
            .handle(&json!({"action": "redrive", "queue": "orders", "job_ids": ["p01", "p03", "nope"]}))
            .await
            .unwrap();
        let results = r["results"].as_array().unwrap();
        assert_eq!(results[0]["duplicate"], false);
        assert_eq!(results[1]["duplicate"], true);
        assert_eq!(
            results[1]["perform_at"],
            crate::time::format_rfc3339(clock.now() + TimeDelta::seconds(7000))
        );
        assert_eq!(results[2]["status"], "not_found");

        let mut redriven = 0;
        let mut cursor = Value::Null;
        loop {
            let r = w
                .handle(&json!({"action": "redrive", "queue": "orders", "all": true, "limit": 7, "cursor": cursor}))
                .await
                .unwrap();
            redriven += r["redriven"].as_u64().unwrap();
            cursor = r["cursor"].clone();
            if cursor.is_null() {
                break;
            }
        }
        assert_eq!(redriven, 23, "all but p01 (done) and p03 (active again)");
        let left = w
            .handle(&json!({"action": "list_parked", "queue": "orders"}))
            .await
            .unwrap();
        assert_eq!(left["count"], 1, "the parked copy of p03 stays visible");
    }
}
