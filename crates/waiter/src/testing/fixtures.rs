//! Test setups: a config, a `Waiter` over fresh fakes, stored jobs, and calls that must succeed
//! or be refused.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::*;
use crate::config::{Config, QueueName};
use crate::ports::*;

pub fn config(queues: &str, extra: &[(&str, &str)]) -> Arc<Config> {
    let mut map: HashMap<String, String> = extra.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    map.insert("WAITER_QUEUES".into(), queues.into());
    Arc::new(Config::from_lookup(|k| map.get(k).cloned()).unwrap())
}

pub type TestWaiter = crate::app::Waiter<MemStore, FakeQueue, FakeClock>;

/// A `Waiter` over fresh fakes for `queues`, with `extra` settings.
pub fn test_waiter(queues: &str, extra: &[(&str, &str)]) -> (TestWaiter, MemStore, FakeQueue, FakeClock) {
    let store = MemStore::default();
    let (w, queue, clock) = test_waiter_on(store.clone(), queues, extra);
    (w, store, queue, clock)
}

/// A `Waiter` over `store` and a fresh queue and clock.
pub fn test_waiter_on(store: MemStore, queues: &str, extra: &[(&str, &str)]) -> (TestWaiter, FakeQueue, FakeClock) {
    let clock = FakeClock::default();
    let queue = FakeQueue::new(clock.clone());
    let w = crate::app::Waiter::new(config(queues, extra), store, queue.clone(), clock.clone());
    (w, queue, clock)
}

/// The dispatcher (a poller) over what `w` works with.
pub fn dispatcher_for(w: &TestWaiter) -> crate::poller::Dispatcher<MemStore, FakeQueue, FakeClock> {
    crate::poller::Dispatcher::new(w.config.clone(), w.store.clone(), w.queue.clone(), w.clock.clone())
}

/// A stored job with body `body-{id}` in its shard under `shards`, as `enqueue` would store it.
pub fn stored(queue: &str, id: &str, perform_at: DateTime<Utc>, shards: u32) -> StoredJob {
    let q = QueueName::parse(queue).unwrap();
    StoredJob {
        paused_at: None,
        partition: Partition::Shard(crate::routing::shard_for(id, shards)),
        job: crate::job::Job {
            on_duplicate: Default::default(),
            job_id: id.into(),
            job_id_given: true,
            message_body: format!("body-{id}"),
            message_attributes: Default::default(),
            perform_at,
            expires_at: None,
            message_group_id: q.is_fifo().then(|| "g".to_owned()),
            message_deduplication_id: q.is_fifo().then(|| id.to_owned()),
            windows: None,
            priority: sqs_waiter_contract::DEFAULT_PRIORITY,
            weight: sqs_waiter_contract::DEFAULT_WEIGHT,
            attempt: 1,
            names_itself: false,
            trace_header: None,
            repeat: None,
            occurrence: None,
            tags: Default::default(),
            queue: q,
        },
        enqueued_at: perform_at,
        parked: None,
        version: 1,
        maybe_delivered_at: None,
    }
}

/// The reply of a request `w` must accept.
pub async fn call(w: &TestWaiter, v: serde_json::Value) -> serde_json::Value {
    w.handle(&v).await.unwrap()
}

/// The refusal of a request `w` must refuse as `InvalidRequest`.
pub async fn refused(w: &TestWaiter, v: serde_json::Value) -> crate::error::InvalidRequest {
    match w.handle(&v).await {
        Err(crate::error::HandlerError::Invalid(e)) => e,
        other => panic!("expected InvalidRequest for {v}, got {other:?}"),
    }
}

/// Stores job `id` on queue `orders`, `delay_s` from now, with body `body-{id}`.
pub async fn schedule(w: &TestWaiter, id: &str, delay_s: u64) {
    let r = call(
        w,
        serde_json::json!({"queue": "orders", "job_id": id, "message_body": format!("body-{id}"), "delay_seconds": delay_s}),
    )
    .await;
    assert_eq!(r["status"], "scheduled", "{r}");
}

/// A poller run (owner `run`) holds shard 0 of queue `orders` for five minutes, its lease
/// covering jobs due within `covers` of now: what `dispatching` answers are about.
pub async fn poller_holds_orders(store: &MemStore, clock: &FakeClock, covers: chrono::TimeDelta) {
    let lease = Lease {
        owner: "run".into(),
        until: clock.now() + chrono::TimeDelta::minutes(5),
        horizon: clock.now() + covers,
    };
    let q = QueueName::parse("orders").expect("queue");
    store.acquire_lease(&q, 0, &lease, clock.now()).await.expect("lease");
}

/// That run (`poller_holds_orders`) releases its lease.
pub async fn poller_releases_orders(store: &MemStore) {
    let q = QueueName::parse("orders").expect("queue");
    store.release_lease(&q, 0, "run", None).await.expect("release");
}

/// A message's attribute `name`, when it is a string.
pub fn attribute_text(m: &OutgoingMessage, name: &str) -> Option<String> {
    match m.attributes.get(name).map(|a| &a.data) {
        Some(crate::job::AttributeData::String(s)) => Some(s.clone()),
        _ => None,
    }
}

/// A waiter whose store calls each take a seeded random time (up to 20 ms), so that calls in
/// flight at once interleave differently for each seed; with the store, queue and clock under it.
pub fn racing_waiter(
    seed: u64,
    settings: &[(&str, &str)],
) -> (
    crate::app::Waiter<FaultyStore<MemStore>, FakeQueue, FakeClock>,
    MemStore,
    FakeQueue,
    FakeClock,
) {
    let mem = MemStore::default();
    let store = FaultyStore {
        inner: mem.clone(),
        faults: Faults::seeded(seed, 0.0).with_latency(20),
    };
    let clock = FakeClock::default();
    let queue = FakeQueue::new(clock.clone());
    let w = crate::app::Waiter::new(config("orders", settings), store, queue.clone(), clock.clone());
    (w, mem, queue, clock)
}
