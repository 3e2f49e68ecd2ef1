//! `list`: a queue's jobs in `perform_at` order across every shard, paged with a cursor; its
//! selection also serves `cancel_many`.

use chrono::{DateTime, Utc};
use futures::future::try_join_all;
use futures::StreamExt;

use crate::app::Waiter;
use crate::cursor;
use crate::error::HandlerError;
use crate::error::{InvalidRequest, PortError};
use crate::ports::{Clock, JobStore, MessageQueue, Partition, StoredJob};
use crate::time::{format_epoch, max_time, parse_epoch_decimal};
use crate::wire::reply::describe;
use crate::wire::{ListQuery, ListStatus};
use sqs_waiter_contract::{JobReply, ListReply};

/// Items one `list` call reads per partition beyond the page it returns (prefix filters skip
/// items), so a call does bounded work; a group of jobs sharing one `perform_at` in a shard is
/// always read whole, so that the cursor can point between groups.
const LIST_SCAN_BUDGET: usize = 2_000;
/// The reply of one `list` call stays below this many bytes (Lambda allows 6 MB).
const LIST_REPLY_BUDGET: usize = 4 * 1024 * 1024;
/// Above every character a job id may hold: a position after every id at one instant.
const AFTER_EVERY_ID: &str = "~";

/// A place in a listing: jobs are ordered by `perform_at`, then `job_id`.
pub(crate) type Position = (DateTime<Utc>, String);

pub(crate) fn position(j: &StoredJob) -> Position {
    (j.job.perform_at, j.job.job_id.clone())
}

impl ListQuery {
    /// The cursor's binding: a cursor continues only the listing it was made for.
    fn listing(&self) -> String {
        let t = |t: Option<DateTime<Utc>>| t.map(format_epoch).unwrap_or_default();
        format!(
            "{}/{}/{}/{}/{}",
            self.action,
            self.status.as_str(),
            t(self.from),
            t(self.to),
            self.prefix.as_deref().unwrap_or_default()
        )
    }

    fn after(&self) -> Result<Option<Position>, InvalidRequest> {
        let Some(c) = &self.cursor else { return Ok(None) };
        let after = cursor::decode(&self.queue, &self.listing(), c)?;
        let corrupted = || InvalidRequest::new("cursor", "is not a cursor this function returned (corrupted)");
        let (at, id) = after.split_once('|').ok_or_else(corrupted)?;
        let at = parse_epoch_decimal(at).ok_or_else(corrupted)?;
        Ok(Some((at, id.to_owned())))
    }

    /// Whether a job, as it is now, is in the selection (its time and id; the cursor aside).
    pub(crate) fn selects(&self, j: &StoredJob) -> bool {
        let at = j.job.perform_at;
        self.from.is_none_or(|f| at >= f)
            && self.to.is_none_or(|t| at <= t)
            && self.prefix.as_deref().is_none_or(|p| j.job.job_id.starts_with(p))
    }

    pub(crate) fn cursor_at(&self, p: &Position) -> String {
        cursor::encode(&self.queue, &self.listing(), &format!("{}|{}", format_epoch(p.0), p.1))
    }
}

/// What one partition contributed to a `list` page.
struct PartitionRead {
    jobs: Vec<StoredJob>,
    /// Every job of the partition up to this position has been read; `None`: all of them.
    complete_through: Option<Position>,
}

impl<S, Q, C> Waiter<S, Q, C>
where
    S: JobStore + Clone,
    Q: MessageQueue + Clone,
    C: Clock + Clone,
{
    /// The selected jobs after the query's cursor that every shard has been read through, in
    /// `perform_at` (then `job_id`) order, and that position (`None`: the end).
    pub(crate) async fn select(&self, q: &ListQuery) -> Result<(Vec<StoredJob>, Option<Position>), HandlerError> {
        let after = q.after()?;
        let partitions: Vec<Partition> = match q.status {
            ListStatus::Parked => vec![Partition::Parked],
            ListStatus::Scheduled => self.shards_in_use(&q.queue).await?,
        };
        let from = q
            .from
            .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
            .max(after.as_ref().map_or(DateTime::<Utc>::UNIX_EPOCH, |a| a.0));
        let to = q.to.unwrap_or_else(max_time);
        let reads = try_join_all(
            partitions
                .into_iter()
                .map(|p| self.read_partition(q, p, from, to, after.as_ref())),
        )
        .await?;
        // Only what every partition has read through is certain to be in order.
        let bound = reads.iter().filter_map(|r| r.complete_through.clone()).min();
        let mut jobs: Vec<StoredJob> = reads
            .into_iter()
            .flat_map(|r| r.jobs)
            .filter(|j| bound.as_ref().is_none_or(|b| position(j) <= *b))
            .collect();
        jobs.sort_by_key(position);
        Ok((jobs, bound))
    }

    /// One page of the queue's jobs in `perform_at` order across every shard.
    pub(crate) async fn list(&self, q: ListQuery) -> Result<ListReply, HandlerError> {
        let (jobs, bound) = self.select(&q).await?;
        let mut page = Vec::new();
        let mut bytes = 0;
        let mut last = None;
        for j in &jobs {
            let view = list_view(j, q.with_body);
            let size = serde_json::to_string(&view).map_or(0, |t| t.len()) + 1;
            if page.len() == q.limit || (bytes + size > LIST_REPLY_BUDGET && !page.is_empty()) {
                break;
            }
            bytes += size;
            page.push(view);
            last = Some(position(j));
        }
        // Nothing left among what was read: continue after what every partition read.
        let next = if page.len() < jobs.len() { last } else { bound };
        Ok(ListReply {
            queue: q.queue.as_str().to_owned(),
            jobs: page,
            cursor: next.map(|p| q.cursor_at(&p)),
        })
    }

    /// A partition's jobs after `after`, enough for a page, stopping only between groups of
    /// jobs that share a `perform_at`.
    async fn read_partition(
        &self,
        q: &ListQuery,
        partition: Partition,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        after: Option<&Position>,
    ) -> Result<PartitionRead, PortError> {
        let mut pages = self.store.by_time(&q.queue, partition, from, to);
        let mut jobs = Vec::new();
        let mut read = 0usize;
        let mut last_at: Option<DateTime<Utc>> = None;
        while let Some(page) = pages.next().await {
            for j in page? {
                if last_at.is_some_and(|t| j.job.perform_at != t) && (jobs.len() >= q.limit || read >= LIST_SCAN_BUDGET)
                {
                    let through = last_at.map(|t| (t, AFTER_EVERY_ID.to_owned()));
                    return Ok(PartitionRead {
                        jobs,
                        complete_through: through,
                    });
                }
                read += 1;
                last_at = Some(j.job.perform_at);
                let keep = after.is_none_or(|a| position(&j) > *a)
                    && q.prefix.as_deref().is_none_or(|p| j.job.job_id.starts_with(p));
                if keep {
                    jobs.push(j);
                }
            }
        }
        Ok(PartitionRead {
            jobs,
            complete_through: None,
        })
    }
}

/// A job as `list` shows it: `get`'s view, without the message unless asked for.
fn list_view(j: &StoredJob, with_body: bool) -> JobReply {
    let mut v = describe(j);
    if !with_body {
        v.message_body = None;
        v.message_attributes = None;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::QueueName;
    use crate::testing::*;
    use crate::time::format_rfc3339;
    use chrono::TimeDelta;
    use serde_json::{json, Value};

    fn waiter_with(store: MemStore, extra: &[(&str, &str)]) -> (TestWaiter, FakeQueue, FakeClock) {
        test_waiter_on(store, "orders,billing.fifo,other", extra)
    }

    /// Every page of a listing, following cursors until `null`.
    async fn list_all(w: &TestWaiter, mut request: Value) -> Vec<Value> {
        let mut all = Vec::new();
        for _ in 0..10_000 {
            let r = call(w, request.clone()).await;
            all.extend(r["jobs"].as_array().unwrap().iter().cloned());
            match &r["cursor"] {
                Value::Null => return all,
                c => request["cursor"] = c.clone(),
            }
        }
        panic!("the listing never ended");
    }

    fn ids(jobs: &[Value]) -> Vec<String> {
        jobs.iter().map(|j| j["job_id"].as_str().unwrap().to_owned()).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn list_pages_every_shard_in_time_order_with_ties_and_filters() {
        let (w, _, clock) = waiter_with(MemStore::default(), &[("WAITER_SHARDS", "4")]);
        // 60 jobs over 6 instants (ties of 10, spread over the shards), ids not in time order.
        let base = clock.now() + TimeDelta::hours(2);
        let mut expected = Vec::new();
        for i in 0..60u32 {
            let id = format!("{}-{:02}", if i % 3 == 0 { "a" } else { "b" }, (i * 37) % 60);
            let at = base + TimeDelta::minutes(i64::from(i % 6));
            call(
                &w,
                json!({"queue": "orders", "job_id": id, "message_body": "x", "perform_at": format_rfc3339(at)}),
            )
            .await;
            expected.push((at, id));
        }
        expected.sort();
        let want: Vec<String> = expected.iter().map(|(_, id)| id.clone()).collect();
        for limit in [1, 7, 10, 1000] {
            let got = list_all(&w, json!({"action": "list", "queue": "orders", "limit": limit})).await;
            assert_eq!(ids(&got), want, "limit {limit}");
        }
        let first = call(&w, json!({"action": "list", "queue": "orders", "limit": 3})).await;
        let j = &first["jobs"][0];
        assert_eq!(j["status"], "scheduled");
        assert_eq!(j["version"], 1);
        assert!(j.get("message_body").is_none(), "no body unless asked: {j}");
        let with = call(
            &w,
            json!({"action": "list", "queue": "orders", "limit": 3, "with_body": true}),
        )
        .await;
        assert_eq!(with["jobs"][0]["message_body"], "x");

        let a = list_all(
            &w,
            json!({"action": "list", "queue": "orders", "prefix": "a-", "limit": 4}),
        )
        .await;
        let want_a: Vec<String> = want.iter().filter(|id| id.starts_with("a-")).cloned().collect();
        assert_eq!(ids(&a), want_a);

        let from = base + TimeDelta::minutes(2);
        let to = base + TimeDelta::minutes(3);
        let window = list_all(
            &w,
            json!({"action": "list", "queue": "orders", "from": format_rfc3339(from), "to": format_rfc3339(to), "limit": 6}),
        )
        .await;
        let want_w: Vec<String> = expected
            .iter()
            .filter(|(at, _)| (from..=to).contains(at))
            .map(|(_, id)| id.clone())
            .collect();
        assert_eq!(ids(&window), want_w);
        assert_eq!(want_w.len(), 20);

        let parked = call(&w, json!({"action": "list", "queue": "orders", "status": "parked"})).await;
        assert_eq!(parked["jobs"], json!([]));
        assert_eq!(parked["cursor"], Value::Null);
    }

    #[tokio::test(start_paused = true)]
    async fn a_sparse_prefix_makes_progress_with_bounded_reads_and_misses_nothing() {
        let (w, _, clock) = waiter_with(MemStore::default(), &[("WAITER_SHARDS", "2")]);
        let base = clock.now() + TimeDelta::hours(2);
        let in_shard = |stem: &str, shard: u32| {
            (0..)
                .map(|i| format!("{stem}{i}"))
                .find(|id| crate::routing::shard_for(id, 2) == shard)
                .unwrap()
        };
        let put = |id: String, second: i64| {
            let at = base + TimeDelta::seconds(second);
            let w = &w;
            async move {
                let r = call(
                    w,
                    json!({"queue": "orders", "job_id": id, "message_body": "x", "perform_at": format_rfc3339(at)}),
                )
                .await;
                assert_eq!(r["status"], "scheduled");
            }
        };
        // Shard 0 is deep (more than a call reads), shard 1 holds only a few jobs: a call must
        // not answer past what it read of shard 0.
        let deep = (LIST_SCAN_BUDGET * 2 + 10) as i64;
        let mut hay = 0;
        for i in 0.. {
            if hay == deep {
                break;
            }
            let id = format!("hay-{i:05}");
            if crate::routing::shard_for(&id, 2) == 0 {
                put(id, hay).await;
                hay += 1;
            }
        }
        let needles = [
            (in_shard("needle-early-", 1), 5),
            (in_shard("needle-deep-", 0), deep - 5),
            (in_shard("needle-late-", 1), deep + 100),
        ];
        for (id, at) in &needles {
            put(id.clone(), *at).await;
        }
        let mut request = json!({"action": "list", "queue": "orders", "prefix": "needle"});
        let mut calls = 0;
        let mut found = Vec::new();
        loop {
            calls += 1;
            let r = call(&w, request.clone()).await;
            found.extend(ids(r["jobs"].as_array().unwrap()));
            match &r["cursor"] {
                Value::Null => break,
                c => request["cursor"] = c.clone(),
            }
        }
        let want: Vec<String> = needles.iter().map(|(id, _)| id.clone()).collect();
        assert_eq!(found, want);
        assert!(
            calls >= 3,
            "each call reads at most about {LIST_SCAN_BUDGET} items a shard: {calls} calls"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_forged_or_foreign_cursor_is_refused_by_name() {
        let (w, _, _) = waiter_with(MemStore::default(), &[]);
        for i in 0..5 {
            schedule(&w, &format!("j{i}"), 5000 + i).await;
        }
        let r = call(&w, json!({"action": "list", "queue": "orders", "limit": 2})).await;
        let cursor = r["cursor"].as_str().unwrap().to_owned();
        let mut flipped = cursor.clone().into_bytes();
        flipped[3] ^= 1;
        let bad = [
            json!({"action": "list", "queue": "other", "cursor": cursor}),
            json!({"action": "list", "queue": "orders", "prefix": "j", "cursor": cursor}),
            json!({"action": "list", "queue": "orders", "status": "parked", "cursor": cursor}),
            json!({"action": "list", "queue": "orders", "cursor": String::from_utf8_lossy(&flipped)}),
            json!({"action": "list", "queue": "orders", "cursor": "%%%"}),
            json!({"action": "list", "queue": "orders", "cursor": cursor::encode(&QueueName::parse("orders").unwrap(), "list/scheduled///", "no-bar")}),
            json!({"action": "cancel_many", "queue": "orders", "cursor": cursor}),
        ];
        for request in bad {
            let e = refused(&w, request.clone()).await;
            assert_eq!(e.field, "cursor", "{request}: {e}");
        }
        for (request, field) in [
            (json!({"action": "list", "queue": "orders", "status": "sent"}), "status"),
            (json!({"action": "list", "queue": "orders", "limit": 0}), "limit"),
            (json!({"action": "list", "queue": "orders", "limit": 1001}), "limit"),
            (
                json!({"action": "list", "queue": "orders", "from": "2027-01-02T00:00:00Z", "to": "2027-01-01T00:00:00Z"}),
                "from",
            ),
            (json!({"action": "list", "queue": "orders", "prefix": "a b"}), "prefix"),
            (
                json!({"action": "list", "queue": "orders", "with_body": "yes"}),
                "with_body",
            ),
            (json!({"action": "list", "queue": "orders", "from": "tomorrow"}), "from"),
        ] {
            let e = refused(&w, request.clone()).await;
            assert_eq!(e.field, field, "{request}: {e}");
        }
    }
}
