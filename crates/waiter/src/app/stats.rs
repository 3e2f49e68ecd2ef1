//! `stats`: what a queue holds, counted on the due index without reading message bodies.

use chrono::{DateTime, TimeDelta, Utc};
use futures::future::try_join_all;
use futures::stream::{self, StreamExt, TryStreamExt};

use crate::app::Waiter;
use crate::error::HandlerError;
use crate::error::PortError;
use crate::ports::{Clock, JobStore, MessageQueue, Partition};
use crate::time::{ceil_to_micros, max_time};
use crate::wire::StatsQuery;
use sqs_waiter_contract::{Bucket, StatsReply};

/// Shards counted at once (each with one `Query` per bucket in flight).
const SHARD_PARALLELISM: usize = 4;

/// One shard's share of the figures.
struct ShardStats {
    overdue: u64,
    paused: u64,
    overdue_by_priority: std::collections::BTreeMap<&'static str, u64>,
    histogram: Vec<u64>,
    oldest_overdue: Option<DateTime<Utc>>,
    next_due: Option<DateTime<Utc>>,
}

impl<S, Q, C> Waiter<S, Q, C>
where
    S: JobStore + Clone,
    Q: MessageQueue + Clone,
    C: Clock + Clone,
{
    pub(crate) async fn stats(&self, q: StatsQuery) -> Result<StatsReply, HandlerError> {
        let now = self.clock.now();
        let now = ceil_to_micros(now).unwrap_or(now);
        let shards = self.shards_in_use(&q.queue).await?;
        // With `formats`, the same shards' items are counted by format below.
        let numbers: Vec<u32> = shards
            .iter()
            .filter_map(|p| match p {
                Partition::Shard(n) => Some(*n),
                Partition::Parked => None,
            })
            .collect();
        // Bucket i is [edges[i], edges[i + 1]); stored times are whole microseconds, so an
        // inclusive end one microsecond earlier is exact. The last bucket is open-ended.
        let step = TimeDelta::seconds(i64::from(q.bucket_s));
        let edges: Vec<DateTime<Utc>> = (0..q.buckets).map(|i| now + step * i as i32).collect();
        let just_before = |t: DateTime<Utc>| t - TimeDelta::microseconds(1);
        let epoch = DateTime::<Utc>::UNIX_EPOCH;
        let per_shard: Vec<ShardStats> = stream::iter(shards)
            .map(|part| {
                let edges = &edges;
                let queue = &q.queue;
                async move {
                    let counts = try_join_all((0..edges.len()).map(|i| {
                        let to = edges.get(i + 1).map_or_else(max_time, |e| just_before(*e));
                        self.store.count(queue, part.clone(), edges[i], to)
                    }));
                    // The overdue jobs, by priority class: what waits for the rate budget.
                    let overdue = self
                        .store
                        .count_by_priority(queue, part.clone(), epoch, just_before(now));
                    let oldest = self.store.first(queue, part.clone(), epoch, just_before(now));
                    let next = self.store.first(queue, part.clone(), now, max_time());
                    let paused = self.store.count_paused(queue, part.clone());
                    let (histogram, overdue, oldest, next, paused) =
                        futures::try_join!(counts, overdue, oldest, next, paused)?;
                    Ok::<_, PortError>(ShardStats {
                        overdue: overdue.values().sum(),
                        paused,
                        overdue_by_priority: overdue,
                        histogram,
                        oldest_overdue: oldest.map(|j| j.job.perform_at),
                        next_due: next.map(|j| j.job.perform_at),
                    })
                }
            })
            .buffer_unordered(SHARD_PARALLELISM)
            .try_collect()
            .await?;
        let parked = self.store.count(&q.queue, Partition::Parked, epoch, max_time()).await?;
        // Asked for only: a read of every item of the queue (docs/cost.md).
        let formats = match q.formats {
            true => Some(self.store.count_formats(&q.queue, &numbers).await?),
            false => None,
        };
        let paused_at = self.store.queue_paused(&q.queue).await?;

        let mut histogram = vec![0u64; edges.len()];
        for s in &per_shard {
            for (total, n) in histogram.iter_mut().zip(&s.histogram) {
                *total += n;
            }
        }
        let overdue: u64 = per_shard.iter().map(|s| s.overdue).sum();
        let mut overdue_by_priority = std::collections::BTreeMap::new();
        for (class, n) in per_shard.iter().flat_map(|s| &s.overdue_by_priority) {
            *overdue_by_priority.entry((*class).to_owned()).or_default() += n;
        }
        let oldest = per_shard.iter().filter_map(|s| s.oldest_overdue).min();
        let next_due = per_shard.iter().filter_map(|s| s.next_due).min();
        let buckets: Vec<Bucket> = histogram
            .iter()
            .enumerate()
            .map(|(i, count)| Bucket {
                from: edges[i],
                to: edges.get(i + 1).copied(),
                count: *count,
            })
            .collect();
        Ok(StatsReply {
            paused: paused_at.is_some(),
            paused_at,
            paused_jobs: per_shard.iter().map(|s| s.paused).sum(),
            queue: q.queue.as_str().to_owned(),
            now,
            scheduled: overdue + histogram.iter().sum::<u64>(),
            parked,
            overdue,
            overdue_by_priority,
            oldest_overdue_s: oldest.map_or(0.0, |t| ((now - t).num_milliseconds() as f64) / 1e3),
            next_due,
            bucket_s: u64::from(q.bucket_s),
            histogram: buckets,
            formats,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;
    use crate::time::format_rfc3339;
    use serde_json::{json, Value};

    #[tokio::test(start_paused = true)]
    async fn buckets_are_exact_at_their_edges_and_overdue_is_counted_apart() {
        let clock = FakeClock::default();
        let store = MemStore::default();
        let queue = FakeQueue::new(clock.clone());
        let w = Waiter::new(
            config("orders", &[("WAITER_SHARDS", "3")]),
            store.clone(),
            queue,
            clock.clone(),
        );
        let now = ceil_to_micros(clock.now()).unwrap();
        let at = |s: i64, us: i64| now + TimeDelta::seconds(s) + TimeDelta::microseconds(us);
        // Bucket 0 is [now, now + 60 s): one job on each side of each edge.
        let cases = [
            ("edge-0", at(0, 0)),
            ("in-0", at(59, 999_999)),
            ("edge-1", at(60, 0)),
            ("in-1", at(119, 999_999)),
            ("open-2", at(120, 0)),
            ("far", at(86_400 * 30, 0)),
        ];
        let put = |id: &str, perform_at: DateTime<Utc>| store.insert(stored("orders", id, perform_at, 3));
        for (id, t) in cases {
            put(id, t);
        }
        // Two overdue jobs (due before now, not yet handed over), one of them urgent.
        put("late-1", now - TimeDelta::seconds(1));
        let mut urgent = stored("orders", "late-2", now - TimeDelta::seconds(3), 3);
        urgent.job.priority = 5;
        store.insert(urgent);
        let r = w
            .handle(&json!({"action": "stats", "queue": "orders", "buckets": 3, "bucket_s": 60}))
            .await
            .unwrap();
        let counts: Vec<u64> = r["histogram"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["count"].as_u64().unwrap())
            .collect();
        assert_eq!(counts, [2, 2, 2], "{r}");
        assert_eq!(r["histogram"][2]["to"], Value::Null, "the last bucket is open-ended");
        assert_eq!(r["overdue"], 2);
        assert_eq!(r["overdue_by_priority"], json!({"1-99": 1, "100": 1}));
        assert_eq!(r["scheduled"], 8);
        assert_eq!(r["parked"], 0);
        assert_eq!(r["oldest_overdue_s"], 3.0);
        assert_eq!(r["next_due"], format_rfc3339(at(0, 0)));
    }

    #[tokio::test(start_paused = true)]
    async fn bad_stats_requests_name_the_field() {
        let clock = FakeClock::default();
        let w = Waiter::new(
            config("orders", &[]),
            MemStore::default(),
            FakeQueue::new(clock.clone()),
            clock,
        );
        for (request, field) in [
            (json!({"action": "stats", "queue": "orders", "buckets": 0}), "buckets"),
            (json!({"action": "stats", "queue": "orders", "buckets": 101}), "buckets"),
            (
                json!({"action": "stats", "queue": "orders", "bucket_s": "1h"}),
                "bucket_s",
            ),
            (
                json!({"action": "stats", "queue": "orders", "bucket_s": 2_592_001}),
                "bucket_s",
            ),
            (json!({"action": "stats", "queue": "orders", "colour": 1}), "colour"),
            (json!({"action": "stats"}), "queue"),
        ] {
            match w.handle(&request).await {
                Err(HandlerError::Invalid(e)) => assert_eq!(e.field, field, "{request}: {e}"),
                other => panic!("{request}: {other:?}"),
            }
        }
    }
}
