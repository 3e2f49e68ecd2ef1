//! `cancel_many`: cancelling many jobs at once, by id or by the selection `list` uses.

use futures::stream::{self, StreamExt};
use tracing::info;

use crate::app::Waiter;
use crate::error::HandlerError;
use crate::ports::{CancelOutcome, Clock, JobStore, MessageQueue, View};
use crate::wire::CancelMany;
use sqs_waiter_contract::CancelManyReply;

/// Cancels of one request worked at once.
const CANCEL_PARALLELISM: usize = 16;

#[derive(Default)]
struct Counts {
    cancelled: usize,
    maybe_delivered: usize,
    dispatching: usize,
    not_found: usize,
}

impl Counts {
    fn add(&mut self, outcome: CancelOutcome) {
        match outcome {
            CancelOutcome::Cancelled { maybe_delivered_at } => {
                self.cancelled += 1;
                self.maybe_delivered += usize::from(maybe_delivered_at.is_some());
            }
            CancelOutcome::Dispatching => self.dispatching += 1,
            CancelOutcome::NotFound => self.not_found += 1,
        }
    }
}

impl<S, Q, C> Waiter<S, Q, C>
where
    S: JobStore + Clone,
    Q: MessageQueue + Clone,
    C: Clock + Clone,
{
    /// Cancels the jobs named or one page of the jobs selected; each as `cancel` would.
    pub(crate) async fn cancel_many(&self, request: CancelMany) -> Result<CancelManyReply, HandlerError> {
        let mut counts = Counts::default();
        let (queue, next) = match request {
            CancelMany::Ids { queue, mut job_ids } => {
                // An id named twice is cancelled once: two transactions on one item at once
                // conflict in DynamoDB, and the counts are of jobs, not of names.
                let mut named = std::collections::HashSet::new();
                job_ids.retain(|id| named.insert(id.clone()));
                let outcomes: Vec<_> = stream::iter(job_ids.iter())
                    .map(|id| self.cancel_outcome(&queue, id))
                    .buffered(CANCEL_PARALLELISM)
                    .collect()
                    .await;
                for o in outcomes {
                    counts.add(o?);
                }
                (queue, None)
            }
            CancelMany::Selected(q) => {
                let selection = self.select(&q, View::Whole).await?;
                let page = &selection.jobs[..selection.jobs.len().min(q.limit)];
                let outcomes: Vec<_> = stream::iter(page.iter())
                    // A job moved out of the selection since the index listed it is spared.
                    .map(|j| self.cancel_copy(j, |now| q.selects(now)))
                    .buffered(CANCEL_PARALLELISM)
                    .collect()
                    .await;
                for o in outcomes {
                    counts.add(o?);
                }
                (q.queue.clone(), selection.cursor_after(&q, page.len()))
            }
        };
        info!(queue = %queue, cancelled = counts.cancelled, dispatching = counts.dispatching, not_found = counts.not_found, "cancel_many");
        Ok(CancelManyReply {
            queue: queue.as_str().to_owned(),
            cancelled: counts.cancelled as u64,
            maybe_delivered: counts.maybe_delivered as u64,
            dispatching: counts.dispatching as u64,
            not_found: counts.not_found as u64,
            cursor: next,
        })
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeDelta;

    use super::*;
    use crate::config::QueueName;
    use crate::ports::Lease;
    use crate::testing::*;
    use serde_json::{json, Value};

    fn waiter() -> (TestWaiter, MemStore, FakeClock) {
        let (w, store, _, clock) = test_waiter("orders", &[("WAITER_SHARDS", "4"), ("WAITER_DIRECT_MAX_DELAY", "0")]);
        (w, store, clock)
    }

    #[tokio::test(start_paused = true)]
    async fn cancel_many_by_ids_counts_each_outcome() {
        let (w, store, clock) = waiter();
        for (id, delay) in [("d", 3600), ("a", 3700), ("b", 3701), ("c", 3702)] {
            call(
                &w,
                json!({"queue": "orders", "job_id": id, "message_body": "x", "delay_seconds": delay}),
            )
            .await;
        }
        // A poller holds d's shard with a horizon past d only.
        let shard = crate::routing::shard_for("d", 4);
        store.state.lock().unwrap().leases.insert(
            (QueueName::parse("orders").unwrap(), shard),
            Lease {
                owner: "p".into(),
                until: clock.now() + TimeDelta::seconds(60),
                horizon: clock.now() + TimeDelta::seconds(3650),
            },
        );
        let r = call(
            &w,
            json!({"action": "cancel_many", "queue": "orders", "job_ids": ["a", "b", "d", "nope"]}),
        )
        .await;
        assert_eq!(
            (
                r["cancelled"].as_u64(),
                r["dispatching"].as_u64(),
                r["not_found"].as_u64()
            ),
            (Some(2), Some(1), Some(1)),
            "{r}"
        );
        assert_eq!(r["cursor"], Value::Null);
        assert_eq!(store.len(), 2, "c (not named) and d (dispatching) stay");
    }

    #[tokio::test(start_paused = true)]
    async fn an_id_named_twice_is_cancelled_once_and_counted_once() {
        let (w, store, _) = waiter();
        call(
            &w,
            json!({"queue": "orders", "job_id": "a", "message_body": "x", "delay_seconds": 3600}),
        )
        .await;
        let r = call(
            &w,
            json!({"action": "cancel_many", "queue": "orders", "job_ids": ["a", "a", "nope", "nope"]}),
        )
        .await;
        assert_eq!(
            (r["cancelled"].as_u64(), r["not_found"].as_u64()),
            (Some(1), Some(1)),
            "{r}"
        );
        assert_eq!(store.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_job_moved_out_of_the_selection_after_the_index_read_is_spared() {
        // The index lags the table: it still lists the job at its old time after a reschedule.
        let store = MemStore {
            index_lag: std::time::Duration::from_secs(3),
            ..MemStore::default()
        };
        let (w, _, clock) = test_waiter_on(store.clone(), "orders", &[("WAITER_SHARDS", "1")]);
        let two_hours = clock.now() + TimeDelta::hours(2);
        let at = crate::time::format_rfc3339(two_hours);
        call(
            &w,
            json!({"queue": "orders", "job_id": "m", "message_body": "x", "perform_at": at}),
        )
        .await;
        tokio::time::sleep(std::time::Duration::from_secs(4)).await;
        let r = call(
            &w,
            json!({"action": "reschedule", "queue": "orders", "job_id": "m", "delay_seconds": 5 * 3600}),
        )
        .await;
        assert_eq!(r["status"], "rescheduled", "{r}");
        let to = crate::time::format_rfc3339(two_hours + TimeDelta::minutes(1));
        let r = call(&w, json!({"action": "cancel_many", "queue": "orders", "to": to})).await;
        assert_eq!(r["cancelled"], 0, "the job is no longer in the selection: {r}");
        assert_eq!(store.len(), 1);
        assert_eq!(
            call(&w, json!({"action": "get", "queue": "orders", "job_id": "m"})).await["version"],
            2
        );
    }

    #[tokio::test(start_paused = true)]
    async fn cancel_many_by_selection_pages_to_the_end_and_spares_the_rest() {
        let (w, store, clock) = waiter();
        let base = clock.now() + TimeDelta::hours(2);
        for i in 0..30 {
            let id = format!("{}-{i:02}", if i % 3 == 0 { "promo" } else { "keep" });
            let at = crate::time::format_rfc3339(base + TimeDelta::minutes(i % 5));
            call(
                &w,
                json!({"queue": "orders", "job_id": id, "message_body": "x", "perform_at": at}),
            )
            .await;
        }
        let mut request = json!({"action": "cancel_many", "queue": "orders", "prefix": "promo-", "limit": 3});
        let mut cancelled = 0;
        for _ in 0..100 {
            let r = call(&w, request.clone()).await;
            cancelled += r["cancelled"].as_u64().unwrap();
            match &r["cursor"] {
                Value::Null => break,
                c => request["cursor"] = c.clone(),
            }
        }
        assert_eq!(cancelled, 10);
        assert_eq!(store.len(), 20, "only the selected jobs went");
        let left = call(&w, json!({"action": "list", "queue": "orders", "prefix": "promo-"})).await;
        assert_eq!(left["jobs"], json!([]));
    }

    #[tokio::test(start_paused = true)]
    async fn cancel_many_never_means_everything_by_omission() {
        let (w, store, _) = waiter();
        call(
            &w,
            json!({"queue": "orders", "job_id": "a", "message_body": "x", "delay_seconds": 3600}),
        )
        .await;
        for (request, field) in [
            (json!({"action": "cancel_many", "queue": "orders"}), "job_ids"),
            (
                json!({"action": "cancel_many", "queue": "orders", "limit": 5}),
                "job_ids",
            ),
            (
                json!({"action": "cancel_many", "queue": "orders", "job_ids": ["a"], "prefix": "a"}),
                "job_ids",
            ),
            (
                json!({"action": "cancel_many", "queue": "orders", "job_ids": []}),
                "job_ids",
            ),
            (
                json!({"action": "cancel_many", "queue": "orders", "job_ids": "a"}),
                "job_ids",
            ),
            (
                json!({"action": "cancel_many", "queue": "orders", "job_ids": ["a", "b c"]}),
                "job_ids[1]",
            ),
        ] {
            match w.handle(&request).await {
                Err(HandlerError::Invalid(e)) => assert_eq!(e.field, field, "{request}: {e}"),
                other => panic!("{request}: {other:?}"),
            }
        }
        assert_eq!(store.len(), 1);
        let all = call(&w, json!({"action": "cancel_many", "queue": "orders", "from": 0})).await;
        assert_eq!(all["cancelled"], 1);
    }
}
