//! The pipelined dispatch and `WAITER_MAX_RATE`, over the fakes with AWS-like per-call latency
//! (paused tokio time: the figures are virtual and exact, not timed).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, TimeDelta, Utc};

use crate::error::PortError;
use crate::poller::groups::group_of;
use crate::poller::{Dispatcher, PollerGroup, MAX_UNDELETED_PER_PARTITION, SENDS_IN_FLIGHT};
use crate::ports::Partition;
use crate::ports::{Clock, EntryOutcome, MessageQueue, OutgoingMessage};
use crate::testing::{config, stored, FakeClock, FakeQueue, Faults, FaultyStore, MemStore, Sent};

const LATENCY: Duration = Duration::from_millis(15);

/// The fake queue behind a fixed latency, watching what is in flight and what SQS holds that
/// the table still holds too (what a crash would send twice).
#[derive(Clone)]
struct Metered {
    inner: FakeQueue,
    store: MemStore,
    loaded: usize,
    in_flight: Arc<AtomicUsize>,
    entries_in_flight: Arc<AtomicUsize>,
    max_in_flight: Arc<AtomicUsize>,
    max_undeleted: Arc<AtomicUsize>,
    latency: Duration,
}

#[async_trait]
impl MessageQueue for Metered {
    async fn send(&self, queue: &crate::QueueName, m: &OutgoingMessage) -> Result<String, PortError> {
        self.inner.send(queue, m).await
    }

    async fn send_batch(
        &self,
        queue: &crate::QueueName,
        messages: &[OutgoingMessage],
    ) -> Result<Vec<EntryOutcome>, PortError> {
        let accepted = self.inner.sent().len();
        let removed = self.loaded.saturating_sub(self.store.len());
        let entries = self.entries_in_flight.fetch_add(messages.len(), Ordering::SeqCst) + messages.len();
        self.max_undeleted
            .fetch_max(accepted.saturating_sub(removed) + entries, Ordering::SeqCst);
        let calls = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_in_flight.fetch_max(calls, Ordering::SeqCst);
        tokio::time::sleep(self.latency).await;
        let out = self.inner.send_batch(queue, messages).await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.entries_in_flight.fetch_sub(messages.len(), Ordering::SeqCst);
        out
    }
}

struct Bench {
    d: Dispatcher<FaultyStore<MemStore>, Metered, FakeClock>,
    store: MemStore,
    queue: Metered,
    clock: FakeClock,
}

/// `jobs` overdue jobs on `queue` (one shard), every store call taking up to 15 ms and every
/// send 15 ms.
fn bench(queue: &str, jobs: usize, extra: &[(&str, &str)]) -> Bench {
    bench_at(queue, jobs, extra, LATENCY)
}

/// `bench` with SQS answering each send after `send_latency`.
fn bench_at(queue: &str, jobs: usize, extra: &[(&str, &str)], send_latency: Duration) -> Bench {
    bench_in(queue, jobs, 1, extra, send_latency)
}

/// `bench_at` with the jobs spread over `shards` shards.
fn bench_in(queue: &str, jobs: usize, shards: u32, extra: &[(&str, &str)], send_latency: Duration) -> Bench {
    let clock = FakeClock::default();
    let store = MemStore {
        page_size: 1000,
        ..MemStore::default()
    };
    let now = clock.now();
    // Overdue by a millisecond less each: a FIFO group's order is by `perform_at`.
    for i in 0..jobs {
        let perform_at = now - TimeDelta::milliseconds((jobs - i) as i64);
        store.insert(stored(queue, &format!("j{i:05}"), perform_at, shards));
    }
    let metered = Metered {
        inner: FakeQueue::new(clock.clone()),
        store: store.clone(),
        loaded: jobs,
        in_flight: Arc::default(),
        entries_in_flight: Arc::default(),
        max_in_flight: Arc::default(),
        max_undeleted: Arc::default(),
        latency: send_latency,
    };
    let shards = shards.to_string();
    let mut settings = vec![("WAITER_SHARDS", shards.as_str()), ("WAITER_LOOKAHEAD", "0")];
    settings.extend_from_slice(extra);
    let d = Dispatcher::new(
        config(queue, &settings),
        FaultyStore {
            inner: store.clone(),
            faults: Faults::seeded(7, 0.0).with_latency(LATENCY.as_millis() as u64),
        },
        metered.clone(),
        clock.clone(),
    );
    Bench {
        d,
        store,
        queue: metered,
        clock,
    }
}

fn arrival(s: &Sent) -> DateTime<Utc> {
    s.at + TimeDelta::seconds(i64::from(s.message.delay_seconds.unwrap_or(0)))
}

#[tokio::test(start_paused = true)]
async fn a_standard_partition_keeps_several_batches_in_flight_within_the_undeleted_bound() {
    let b = bench("orders", 2000, &[]);
    let started = b.clock.now();
    let s = b.d.run(started + TimeDelta::seconds(60)).await;
    let elapsed = (b.clock.now() - started).as_seconds_f64();
    assert_eq!((s.dispatched, s.failed), (2000, 0), "{s:?}");
    assert!(s.drained && b.store.len() == 0, "{s:?}");
    assert_eq!(b.queue.max_in_flight.load(Ordering::SeqCst), SENDS_IN_FLIGHT);
    let undeleted = b.queue.max_undeleted.load(Ordering::SeqCst);
    assert!(
        undeleted <= MAX_UNDELETED_PER_PARTITION,
        "{undeleted} sent and not removed at once"
    );
    // One batch at a time, then a delete of 25, would take 200 × 15 ms + 80 × ~7.5 ms ≈ 3.6 s.
    // The latency-bound ideal with 4 batches in flight is 200 / 4 × 15 ms = 0.75 s.
    let ideal = 2000.0 / (SENDS_IN_FLIGHT as f64 * 10.0) * LATENCY.as_secs_f64();
    assert!(
        elapsed <= ideal / 0.9 + 0.1,
        "2000 jobs took {elapsed:.3} s (ideal {ideal:.3} s)"
    );
    // Never early, and every message once.
    let sent = b.queue.inner.sent();
    assert_eq!(sent.len(), 2000);
    assert!(sent.iter().all(|m| arrival(m) >= started));
}

#[tokio::test(start_paused = true)]
async fn a_slow_queue_endpoint_gets_one_batch_at_a_time() {
    // Above QUICK_SEND: an overloaded endpoint (or emulator) is not sent more calls at once,
    // which would only make its answers slower and the SDK's retries of timed-out attempts
    // (which SQS may have taken) more likely.
    let b = bench_at("orders", 200, &[], Duration::from_millis(400));
    let s = b.d.run(b.clock.now() + TimeDelta::seconds(60)).await;
    assert_eq!(s.dispatched, 200, "{s:?}");
    assert_eq!(b.queue.max_in_flight.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_fifo_partition_sends_one_batch_at_a_time_in_order() {
    let b = bench("billing.fifo", 200, &[]);
    let s = b.d.run(b.clock.now() + TimeDelta::seconds(60)).await;
    assert_eq!(s.dispatched, 200, "{s:?}");
    assert_eq!(b.queue.max_in_flight.load(Ordering::SeqCst), 1);
    assert_in_due_order(&b.queue.inner.sent());
}

/// One FIFO group was sent in the order its jobs are due (their ids sort that way here).
fn assert_in_due_order(sent: &[Sent]) {
    let ids: Vec<String> = sent.iter().filter_map(|m| m.message.deduplication_id.clone()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted, "one group, sent in the order it is due");
}

/// The seconds from the first to the last key, both counted (0 when empty).
fn span<V>(by_second: &BTreeMap<i64, V>) -> i64 {
    match (by_second.keys().next(), by_second.keys().last()) {
        (Some(first), Some(last)) => last - first + 1,
        _ => 0,
    }
}

/// Messages per arrival second.
fn per_second(sent: &[Sent]) -> BTreeMap<i64, usize> {
    let mut seconds = BTreeMap::new();
    for m in sent {
        *seconds.entry(arrival(m).timestamp()).or_default() += 1;
    }
    seconds
}

#[tokio::test(start_paused = true)]
async fn max_rate_spreads_a_thundering_herd_over_seconds_by_delay() {
    let b = bench("orders", 100, &[("WAITER_MAX_RATE", "20")]);
    let started = b.clock.now();
    let s = b.d.run(started + TimeDelta::seconds(60)).await;
    assert_eq!(s.dispatched, 100, "{s:?}");
    let sent = b.queue.inner.sent();
    let seconds = per_second(&sent);
    assert!(seconds.values().all(|n| *n <= 20), "{seconds:?}");
    assert_eq!(seconds.len(), 5, "{seconds:?}");
    assert!(sent.iter().all(|m| arrival(m) >= started), "never early");
    // Standard queue: moved by DelaySeconds, all sent at once rather than held.
    assert!((b.clock.now() - started).as_seconds_f64() < 1.0);
    // The lateness it adds is reported: the last second starts 4 s after the first.
    assert!((3_000.0..5_000.0).contains(&s.max_lateness_ms), "{s:?}");
}

/// Below a batch (3 a second), each batch's first entries land in their own second and the rest
/// are moved to booked ones (separate calls since issue 46): the herd still takes every second
/// in turn, three in each.
#[tokio::test(start_paused = true)]
async fn max_rate_below_a_batch_takes_every_second_in_turn() {
    let b = bench("orders", 30, &[("WAITER_MAX_RATE", "3")]);
    let started = b.clock.now();
    let s = b.d.run(started + TimeDelta::seconds(60)).await;
    assert_eq!(s.dispatched, 30, "{s:?}");
    let seconds = per_second(&b.queue.inner.sent());
    assert!(seconds.values().all(|n| *n == 3), "three in each second: {seconds:?}");
    assert_eq!(seconds.len(), 10, "{seconds:?}");
    assert_eq!(span(&seconds), 10, "none skipped: {seconds:?}");
}

#[tokio::test(start_paused = true)]
async fn max_rate_holds_fifo_sends_for_their_second() {
    let b = bench("billing.fifo", 30, &[("WAITER_MAX_RATE", "10")]);
    let started = b.clock.now();
    let s = b.d.run(started + TimeDelta::seconds(60)).await;
    assert_eq!(s.dispatched, 30, "{s:?}");
    let sent = b.queue.inner.sent();
    let seconds = per_second(&sent);
    assert!(seconds.values().all(|n| *n <= 10), "{seconds:?}");
    assert_eq!(seconds.len(), 3, "{seconds:?}");
    assert_in_due_order(&sent);
}

/// A batch of 10 at 3 units a second spans several seconds, and a FIFO call is sent at one
/// instant: the entries booked past the first second wait with their seconds for the next calls.
/// (Released, the run's floors kept the next batch past them: one call every 6 or 7 s, 12 of the
/// 30 sent in a 60 s run.)
#[tokio::test(start_paused = true)]
async fn max_rate_below_a_batch_still_drains_a_fifo_group_at_the_rate() {
    const WEIGHTS: [u16; 4] = [1, 2, 1, 3];
    let b = bench("billing.fifo", 0, &[("WAITER_MAX_RATE", "3")]);
    let started = b.clock.now();
    // Overdue, some heavier than one unit.
    for i in 0..30 {
        let mut job = stored(
            "billing.fifo",
            &format!("j{i:05}"),
            started - TimeDelta::milliseconds(100 - i),
            1,
        );
        job.job.weight = WEIGHTS[i as usize % 4];
        b.store.insert(job);
    }
    let s = b.d.run(started + TimeDelta::seconds(60)).await;
    assert_eq!(s.dispatched, 30, "{s:?}");
    let sent = b.queue.inner.sent();
    let mut units: BTreeMap<i64, u16> = BTreeMap::new();
    for m in &sent {
        let i: usize = m.message.body.trim_start_matches("body-j").parse().expect("an index");
        *units.entry(arrival(m).timestamp()).or_default() += WEIGHTS[i % 4];
    }
    assert!(units.values().all(|n| *n <= 3), "{units:?}");
    // Every second from the first arrival to the last takes some: none is skipped.
    assert_eq!(span(&units), units.len() as i64, "{units:?}");
    assert_in_due_order(&sent);
}

#[tokio::test(start_paused = true)]
async fn max_rate_leaves_what_would_need_more_than_900_s_of_delay_for_a_later_run() {
    let b = bench("orders", 0, &[("WAITER_MAX_RATE", "1"), ("WAITER_LOOKAHEAD", "900")]);
    let due = b.clock.now() + TimeDelta::milliseconds(898_500);
    for i in 0..4 {
        b.store.insert(stored("orders", &format!("k{i}"), due, 1));
    }
    let s = b.d.run(b.clock.now() + TimeDelta::seconds(60)).await;
    // Its own second and the next two are within 900 s of delay; the fourth is not.
    assert_eq!(s.dispatched, 3, "{s:?}");
    assert!(!s.drained, "{s:?}");
    assert_eq!(b.store.len(), 1, "left stored, not lost");
    assert!(b
        .queue
        .inner
        .sent()
        .iter()
        .all(|m| m.message.delay_seconds <= Some(900)));
}

/// Another dispatcher over the bench's store and queue: another poller process.
fn another_poller(b: &Bench) -> Dispatcher<FaultyStore<MemStore>, Metered, FakeClock> {
    Dispatcher::new(b.d.config.clone(), b.d.store.clone(), b.queue.clone(), b.clock.clone())
}

#[tokio::test(start_paused = true)]
async fn two_poller_groups_split_the_partitions_and_share_one_rate_budget() {
    let b = bench_in("orders", 400, 8, &[("WAITER_MAX_RATE", "50")], LATENCY);
    let other = another_poller(&b);
    let started = b.clock.now();
    let deadline = started + TimeDelta::seconds(60);
    let (s0, s1) = tokio::join!(
        b.d.run_group(deadline, Some(PollerGroup { group: 0, groups: 2 })),
        other.run_group(deadline, Some(PollerGroup { group: 1, groups: 2 })),
    );
    assert_eq!((s0.partitions, s1.partitions), (4, 4), "{s0:?} {s1:?}");
    assert_eq!(
        (s0.busy_partitions, s1.busy_partitions),
        (0, 0),
        "disjoint: no lease met"
    );
    assert_eq!(s0.dispatched + s1.dispatched, 400, "{s0:?} {s1:?}");
    assert!(s0.dispatched > 0 && s1.dispatched > 0, "{s0:?} {s1:?}");
    let sent = b.queue.inner.sent();
    let mut ids: Vec<&str> = sent.iter().map(|m| m.message.body.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 400, "each job once");
    assert_eq!(b.store.len(), 0);
    // One budget for the queue: two runs with a budget each would let 100 arrive a second.
    let seconds = per_second(&sent);
    assert!(seconds.values().all(|n| *n <= 50), "{seconds:?}");
    assert_eq!(seconds.len(), 8, "{seconds:?}");
    assert!(sent.iter().all(|m| arrival(m) >= started), "never early");
}

#[tokio::test(start_paused = true)]
async fn a_group_leaves_the_other_groups_partitions_alone() {
    let b = bench_in("orders", 200, 8, &[], LATENCY);
    let group = PollerGroup { group: 1, groups: 4 };
    let s = b.d.run_group(b.clock.now() + TimeDelta::seconds(60), Some(group)).await;
    assert_eq!(s.partitions, 2, "{s:?}");
    assert_eq!(s.group, Some(group));
    let left = b
        .store
        .state
        .lock()
        .unwrap()
        .items
        .values()
        .cloned()
        .collect::<Vec<_>>();
    assert_eq!(s.dispatched as usize + left.len(), 200);
    assert!(s.dispatched > 0 && !left.is_empty(), "{s:?}");
    let q = crate::QueueName::parse("orders").unwrap();
    for j in &left {
        let Partition::Shard(shard) = j.partition else {
            panic!("{j:?}")
        };
        assert_ne!(
            group_of(&q, shard, 4),
            1,
            "{} left in the group's own shard",
            j.job.job_id
        );
    }
    // A run without a group takes the rest.
    let rest = another_poller(&b).run(b.clock.now() + TimeDelta::seconds(60)).await;
    assert_eq!(rest.dispatched as usize, left.len(), "{rest:?}");
    assert_eq!(b.store.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_herd_of_10000_due_in_one_second_arrives_within_a_second_at_p99() {
    let b = bench_in("orders", 0, 16, &[("WAITER_LOOKAHEAD", "60")], LATENCY);
    let other = another_poller(&b);
    // Due 2 s from now, spread over one second.
    let due_at = |i: usize| b.clock.now() + TimeDelta::seconds(2) + TimeDelta::microseconds((i * 100) as i64);
    for i in 0..10_000 {
        b.store.insert(stored("orders", &format!("h{i:05}"), due_at(i), 16));
    }
    let due: Vec<DateTime<Utc>> = (0..10_000).map(due_at).collect();
    let deadline = b.clock.now() + TimeDelta::seconds(60);
    let (s0, s1) = tokio::join!(
        b.d.run_group(deadline, Some(PollerGroup { group: 0, groups: 2 })),
        other.run_group(deadline, Some(PollerGroup { group: 1, groups: 2 })),
    );
    assert_eq!(s0.dispatched + s1.dispatched, 10_000, "{s0:?} {s1:?}");
    let mut lateness_ms: Vec<i64> = b
        .queue
        .inner
        .sent()
        .iter()
        .map(|m| {
            let i: usize = m.message.body.trim_start_matches("body-h").parse().expect("id");
            (arrival(m) - due[i]).num_milliseconds()
        })
        .collect();
    lateness_ms.sort_unstable();
    assert_eq!(lateness_ms.len(), 10_000, "each job once");
    assert!(lateness_ms[0] >= 0, "never early: {}", lateness_ms[0]);
    let p99 = lateness_ms[9_899];
    assert!(p99 <= 1_000, "p99 {p99} ms");
    println!("10 000-job herd, 2 groups, 16 shards, 15 ms a call (virtual time): lateness p50 {} ms, p99 {p99} ms, max {} ms", lateness_ms[4_999], lateness_ms[9_999]);
}
