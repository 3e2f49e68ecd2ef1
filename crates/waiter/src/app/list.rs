//! `list`: a queue's jobs in `perform_at` order across every shard, paged with a cursor; its
//! selection also serves `cancel_many`.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use futures::future::try_join_all;
use futures::StreamExt;
use serde::{Deserialize, Serialize};

use crate::app::Waiter;
use crate::cursor;
use crate::error::HandlerError;
use crate::error::{InvalidRequest, PortError};
use crate::ports::{Clock, IndexPosition, JobStore, MessageQueue, Partition, StoredJob, View};
use crate::time::{format_epoch, max_time, parse_epoch_decimal};
use crate::wire::reply::list_view;
use crate::wire::{ListQuery, ListStatus};
use sqs_waiter_contract::ListReply;

/// Items one `list` or `cancel_many` call reads per partition beyond the page it returns (the
/// prefix and tag filters skip items), so a call does bounded work, however many jobs share one
/// `perform_at` and however few carry the tags asked for (docs/contract.md "Tags").
const LIST_SCAN_BUDGET: usize = 2_000;
/// The reply of one `list` call stays below this many bytes (Lambda allows 6 MB).
const LIST_REPLY_BUDGET: usize = 4 * 1024 * 1024;
/// The cursor's mark of a partition read to the end.
const DONE: &str = "done";

fn position(j: &StoredJob) -> IndexPosition {
    (j.job.perform_at, j.job.job_id.clone())
}

/// Where one partition of a listing stands.
#[derive(Debug, Clone, PartialEq)]
enum Place {
    Start,
    /// Just past this job, in the index's order.
    After(IndexPosition),
    Done,
}

/// Where each partition of a listing stands between calls: past a job (resumed just after it
/// in the index's order, inside a group of equal `perform_at` too), or done. A partition not
/// named starts from the beginning.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Standing(BTreeMap<String, String>);

impl Standing {
    fn label(p: &Partition) -> String {
        match p {
            Partition::Shard(n) => n.to_string(),
            Partition::Parked => "parked".to_owned(),
        }
    }

    fn of(&self, p: &Partition) -> Result<Place, InvalidRequest> {
        let corrupted = || InvalidRequest::new("cursor", "is not a cursor this function returned (corrupted)");
        match self.0.get(&Self::label(p)).map(String::as_str) {
            None => Ok(Place::Start),
            Some(DONE) => Ok(Place::Done),
            Some(place) => {
                let (at, id) = place.split_once('|').ok_or_else(corrupted)?;
                let at = parse_epoch_decimal(at).ok_or_else(corrupted)?;
                Ok(Place::After((at, id.to_owned())))
            }
        }
    }

    fn set(&mut self, p: &Partition, place: Place) {
        let label = Self::label(p);
        match place {
            Place::Start => self.0.remove(&label),
            Place::After((at, id)) => self.0.insert(label, format!("{}|{id}", format_epoch(at))),
            Place::Done => self.0.insert(label, DONE.to_owned()),
        };
    }
}

impl ListQuery {
    /// The cursor's binding: a cursor continues only the listing it was made for.
    fn listing(&self) -> String {
        let t = |t: Option<DateTime<Utc>>| t.map(format_epoch).unwrap_or_default();
        // Tags as JSON (sorted by key), so that no key or value reads as another pair; added
        // only with tags, so that a listing without them keeps the binding (and the cursors)
        // of releases before tags.
        let tags = self
            .tags
            .as_ref()
            .map(|t| format!("/{}", serde_json::to_string(t).unwrap_or_default()))
            .unwrap_or_default();
        format!(
            "{}/{}/{}/{}/{}{tags}",
            self.action,
            self.status.as_str(),
            t(self.from),
            t(self.to),
            self.prefix.as_deref().unwrap_or_default()
        )
    }

    fn standing(&self) -> Result<Standing, InvalidRequest> {
        let Some(c) = &self.cursor else {
            return Ok(Standing::default());
        };
        let payload = cursor::decode(&self.queue, &self.listing(), c)?;
        serde_json::from_str(&payload).map_err(|_| {
            InvalidRequest::new(
                "cursor",
                "was made by an earlier version of this function, or corrupted; start the listing again without it",
            )
        })
    }

    /// Whether a job, as it is now, is in the selection (its time, id and tags; the cursor
    /// aside). `j` must be read with its tags (any view but `View::Keys`).
    pub(crate) fn selects(&self, j: &StoredJob) -> bool {
        let at = j.job.perform_at;
        self.from.is_none_or(|f| at >= f)
            && self.to.is_none_or(|t| at <= t)
            && self.prefix.as_deref().is_none_or(|p| j.job.job_id.starts_with(p))
            && self.tags.as_ref().is_none_or(|want| {
                want.iter()
                    .all(|(k, v)| j.job.tags.get(k).is_some_and(|have| have == v))
            })
    }
}

/// What one call read of one partition.
struct PartitionRead {
    partition: Partition,
    /// Where the read started (never `Done`).
    from: Place,
    /// Every item read, in the index's order, and whether the query's prefix selects it.
    read: Vec<(IndexPosition, bool)>,
    /// The selected jobs among them, in the same order.
    jobs: Vec<StoredJob>,
    /// Read to the end of the range.
    finished: bool,
}

/// One call's selection: the jobs, in `perform_at` order, up to what every partition has read
/// through, and where each partition stands.
pub(crate) struct Selection {
    pub(crate) jobs: Vec<StoredJob>,
    /// For each of `jobs`, the index of its partition in `reads`.
    from_read: Vec<usize>,
    reads: Vec<PartitionRead>,
    /// No job after this `perform_at` is in `jobs`: a partition not read to the end may hold
    /// more up to it. `None`: every partition was read to the end.
    bound: Option<DateTime<Utc>>,
    standing: Standing,
}

impl Selection {
    /// How many items this call read to find its jobs, in every partition.
    pub(crate) fn scanned(&self) -> u64 {
        self.reads.iter().map(|r| r.read.len() as u64).sum()
    }

    /// The cursor after the first `taken` of `jobs`; `None` when nothing is left. Each
    /// partition resumes after the last item it read that is settled: neither past the bound
    /// nor a selected job not yet taken.
    pub(crate) fn cursor_after(&self, q: &ListQuery, taken: usize) -> Option<String> {
        let mut standing = self.standing.clone();
        // Partitions not read in this call were done already.
        let mut every_partition_done = true;
        for (i, r) in self.reads.iter().enumerate() {
            let mut left = self.from_read[..taken].iter().filter(|&&from| from == i).count();
            let mut place = r.from.clone();
            let mut whole = true;
            for (pos, selected) in &r.read {
                if self.bound.is_some_and(|b| pos.0 > b) || (*selected && left == 0) {
                    whole = false;
                    break;
                }
                if *selected {
                    left -= 1;
                }
                place = Place::After(pos.clone());
            }
            if whole && r.finished {
                place = Place::Done;
            } else {
                every_partition_done = false;
            }
            standing.set(&r.partition, place);
        }
        (!every_partition_done).then(|| {
            cursor::encode(
                &q.queue,
                &q.listing(),
                &serde_json::to_string(&standing).unwrap_or_default(),
            )
        })
    }
}

impl<S, Q, C> Waiter<S, Q, C>
where
    S: JobStore + Clone,
    Q: MessageQueue + Clone,
    C: Clock + Clone,
{
    /// The selected jobs past the query's cursor, in `perform_at` order (equal `perform_at` in
    /// no promised order), up to what every partition has been read through.
    pub(crate) async fn select(&self, q: &ListQuery, view: View) -> Result<Selection, HandlerError> {
        let standing = q.standing()?;
        let partitions: Vec<Partition> = match q.status {
            ListStatus::Parked => vec![Partition::Parked],
            ListStatus::Scheduled => self.shards_in_use(&q.queue).await?,
        };
        let mut todo = Vec::new();
        for p in partitions {
            match standing.of(&p)? {
                Place::Done => {}
                from => todo.push((p, from)),
            }
        }
        let reads = try_join_all(todo.into_iter().map(|(p, from)| self.read_partition(q, p, from, view))).await?;
        // Only what every partition has read through is certain to be in order.
        let bound = reads
            .iter()
            .filter(|r| !r.finished)
            .map(|r| r.read.last().map_or(DateTime::<Utc>::UNIX_EPOCH, |(pos, _)| pos.0))
            .min();
        let mut tagged: Vec<(usize, StoredJob)> = reads
            .iter()
            .enumerate()
            .flat_map(|(i, r)| r.jobs.iter().map(move |j| (i, j.clone())))
            .filter(|(_, j)| bound.is_none_or(|b| j.job.perform_at <= b))
            .collect();
        // Stable: equal `perform_at` keep each partition's index order.
        tagged.sort_by_key(|(_, j)| j.job.perform_at);
        let (from_read, jobs) = tagged.into_iter().unzip();
        Ok(Selection {
            jobs,
            from_read,
            reads,
            bound,
            standing,
        })
    }

    /// One page of the queue's jobs in `perform_at` order across every shard.
    pub(crate) async fn list(&self, q: ListQuery) -> Result<ListReply, HandlerError> {
        let view = if q.with_body { View::Whole } else { View::WithoutMessage };
        let selection = self.select(&q, view).await?;
        let mut page = Vec::new();
        let mut bytes = 0;
        for j in &selection.jobs {
            let view = list_view(j, q.with_body);
            let size = serde_json::to_string(&view).map_or(0, |t| t.len()) + 1;
            if page.len() == q.limit || (bytes + size > LIST_REPLY_BUDGET && !page.is_empty()) {
                break;
            }
            bytes += size;
            page.push(view);
        }
        Ok(ListReply {
            queue: q.queue.as_str().to_owned(),
            cursor: selection.cursor_after(&q, page.len()),
            jobs: page,
            scanned: q.tags.is_some().then(|| selection.scanned()),
        })
    }

    /// A partition's items from `from` on: until the page is full or the scan budget is spent.
    async fn read_partition(
        &self,
        q: &ListQuery,
        partition: Partition,
        from: Place,
        view: View,
    ) -> Result<PartitionRead, PortError> {
        let after = match &from {
            Place::After(after) => Some(after.clone()),
            Place::Start | Place::Done => None,
        };
        let mut pages = self.store.by_time_after(
            &q.queue,
            partition.clone(),
            q.from.unwrap_or(DateTime::<Utc>::UNIX_EPOCH),
            q.to.unwrap_or_else(max_time),
            after,
            view,
        );
        let mut r = PartitionRead {
            partition,
            from,
            read: Vec::new(),
            jobs: Vec::new(),
            finished: false,
        };
        while let Some(page) = pages.next().await {
            for j in page? {
                if r.jobs.len() >= q.limit || r.read.len() >= LIST_SCAN_BUDGET {
                    return Ok(r);
                }
                // The index read keeps to `from`..`to`: this is the prefix and tag rule.
                let selected = q.selects(&j);
                r.read.push((position(&j), selected));
                if selected {
                    r.jobs.push(j);
                }
            }
        }
        r.finished = true;
        Ok(r)
    }
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

    /// `got` lists exactly the `(perform_at, id)` of `want`, each once, in `perform_at` order
    /// (equal `perform_at` in no promised order).
    fn assert_listed(got: &[Value], want: &[(chrono::DateTime<Utc>, String)], context: &str) {
        let times: Vec<f64> = got.iter().map(|j| j["perform_at_epoch"].as_f64().unwrap()).collect();
        assert!(
            times.windows(2).all(|w| w[0] <= w[1]),
            "{context}: not in perform_at order"
        );
        let mut got: Vec<(f64, String)> = times.into_iter().zip(ids(got)).collect();
        let mut want: Vec<(f64, String)> = want
            .iter()
            .map(|(at, id)| (crate::time::format_epoch(*at).parse::<f64>().unwrap(), id.clone()))
            .collect();
        got.sort_by(|a, b| a.partial_cmp(b).unwrap());
        want.sort_by(|a, b| a.partial_cmp(b).unwrap());
        assert_eq!(got, want, "{context}");
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
        for limit in [1, 7, 10, 1000] {
            let got = list_all(&w, json!({"action": "list", "queue": "orders", "limit": limit})).await;
            assert_listed(&got, &expected, &format!("limit {limit}"));
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
        let want_a: Vec<_> = expected
            .iter()
            .filter(|(_, id)| id.starts_with("a-"))
            .cloned()
            .collect();
        assert_listed(&a, &want_a, "prefix a-");

        let from = base + TimeDelta::minutes(2);
        let to = base + TimeDelta::minutes(3);
        let window = list_all(
            &w,
            json!({"action": "list", "queue": "orders", "from": format_rfc3339(from), "to": format_rfc3339(to), "limit": 6}),
        )
        .await;
        let want_w: Vec<_> = expected
            .iter()
            .filter(|(at, _)| (from..=to).contains(at))
            .cloned()
            .collect();
        assert_listed(&window, &want_w, "from..to");
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

    /// Defect 4 of issue 23: a cursor used to resume at the start of a group of jobs sharing one
    /// `perform_at`, so a group larger than the scan budget was read whole on every call, and
    /// behind a prefix that skips it the same cursor came back forever.
    #[tokio::test(start_paused = true)]
    async fn cursors_get_through_a_tie_group_larger_than_the_scan_budget_with_bounded_reads() {
        let store = MemStore {
            page_size: 500,
            ..MemStore::default()
        };
        // One shard holds the whole group.
        let (w, _, clock) = waiter_with(store.clone(), &[("WAITER_SHARDS", "1")]);
        let at = clock.now() + TimeDelta::hours(2);
        let group = LIST_SCAN_BUDGET * 2 + 500;
        let mut expected = Vec::new();
        for i in 0..group {
            let id = format!("tie-{i:05}");
            call(
                &w,
                json!({"queue": "orders", "job_id": id, "message_body": "x", "perform_at": format_rfc3339(at)}),
            )
            .await;
            expected.push((at, id));
        }
        let later = at + TimeDelta::seconds(1);
        call(
            &w,
            json!({"queue": "orders", "job_id": "needle", "message_body": "x", "perform_at": format_rfc3339(later)}),
        )
        .await;
        let read = || store.index_items_read.load(std::sync::atomic::Ordering::SeqCst);

        // Behind a prefix that skips the whole group: a few calls, each within its budget.
        let mut request = json!({"action": "list", "queue": "orders", "prefix": "needle"});
        let mut found = Vec::new();
        let mut calls = 0;
        loop {
            calls += 1;
            assert!(calls <= 10, "the cursor does not get past the group");
            let before = read();
            let r = call(&w, request.clone()).await;
            assert!(
                read() - before <= LIST_SCAN_BUDGET + 500,
                "one call read {}",
                read() - before
            );
            found.extend(ids(r["jobs"].as_array().unwrap()));
            match &r["cursor"] {
                Value::Null => break,
                c => request["cursor"] = c.clone(),
            }
        }
        assert_eq!(found, ["needle"]);

        // Paged through whole: every job once, and the reads stay about one pass.
        let before = read();
        let all = list_all(&w, json!({"action": "list", "queue": "orders", "limit": 1000})).await;
        expected.push((later, "needle".to_owned()));
        assert_listed(&all, &expected, "the whole group");
        let total = read() - before;
        assert!(
            total <= 2 * (group + 1),
            "{total} items read to list {} jobs",
            group + 1
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
