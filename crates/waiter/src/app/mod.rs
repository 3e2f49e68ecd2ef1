//! The `enqueue` function's logic: `Waiter` and the shard cache here, the entry point in
//! `handler`, and one module per action family. Nothing below `app` imports it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::TimeDelta;
use tokio::sync::OnceCell;

use crate::config::{Config, QueueName};
use crate::error::PortError;
use crate::ports::{Clock, JobStore, MessageQueue, Partition};
use crate::routing::shard_for;

use crate::error::HandlerError;

mod cancel_many;
mod debounce;
#[cfg(test)]
mod debounce_tests;
mod enqueue;
mod get_cancel;
mod handler;
mod handover;
mod list;
#[cfg(test)]
mod missed_tests;
mod parked;
#[cfg(test)]
mod repeat_tests;
mod replay;
mod reschedule;
mod retry;
#[cfg(test)]
mod series_parked_tests;
#[cfg(test)]
mod series_reschedule_tests;
#[cfg(test)]
mod series_retry_tests;
mod stats;
mod steer;
#[cfg(test)]
mod steer_tests;
#[cfg(test)]
mod tags_tests;
#[cfg(test)]
mod tests;
mod trigger;
#[cfg(test)]
mod trigger_tests;

/// Jobs of one batch worked at once. A stored job is one conditional `PutItem` (no batch write
/// takes a condition), so 1000 jobs at 15 ms a call take 1000 / 16 × 15 ms ≈ 1 s of latency.
const BATCH_PARALLELISM: usize = 16;
/// Budget of `handle` when no deadline is given (Lambda's default `enqueue` timeout).
const DEFAULT_BUDGET: TimeDelta = TimeDelta::seconds(30);
/// Stop this long before the invocation's deadline, so the reply gets out in time.
pub const DEADLINE_MARGIN: TimeDelta = TimeDelta::milliseconds(1_500);

pub struct Waiter<S, Q, C> {
    pub config: Arc<Config>,
    pub store: S,
    pub queue: Q,
    pub clock: C,
    /// Per queue, every `WAITER_SHARDS` value its table was written with (read once per process:
    /// a change of the variable starts new processes).
    shard_counts: Mutex<HashMap<QueueName, Arc<OnceCell<Vec<u32>>>>>,
}

/// A managing action not finished before the invocation's deadline: what it changed stays
/// changed, and a retry answers from there.
fn action_timed_out(action: &'static str) -> HandlerError {
    HandlerError::Port(PortError::Transient {
        operation: action,
        source: "the invocation's deadline came first; retry".into(),
    })
}

/// A job that could not be finished before the invocation's deadline.
fn timed_out() -> HandlerError {
    HandlerError::Port(PortError::Transient {
        operation: "enqueue",
        source: "the invocation's deadline came first; retry with the same job_id".into(),
    })
}

impl<S: JobStore + Clone, Q: MessageQueue + Clone, C: Clock + Clone> Waiter<S, Q, C> {
    pub fn new(config: Arc<Config>, store: S, queue: Q, clock: C) -> Self {
        Self {
            config,
            store,
            queue,
            clock,
            shard_counts: Mutex::new(HashMap::new()),
        }
    }

    /// Every `WAITER_SHARDS` value the queue's table was written with.
    pub(crate) async fn shard_counts(&self, queue: &QueueName) -> Result<Vec<u32>, PortError> {
        let cell = match self.shard_counts.lock() {
            Ok(mut m) => m.entry(queue.clone()).or_default().clone(),
            Err(_) => Arc::new(OnceCell::new()),
        };
        cell.get_or_try_init(|| self.store.shard_counts(queue, self.config.shards_for(queue)))
            .await
            .cloned()
    }

    /// Every shard of the queue's table that holds jobs: all the shards of the largest shard
    /// count it was ever written with (and of the current one).
    pub(crate) async fn shards_in_use(&self, queue: &QueueName) -> Result<Vec<Partition>, PortError> {
        let largest = self.shard_counts(queue).await?.into_iter().max().unwrap_or(0);
        Ok((0..largest.max(self.config.shards_for(queue)))
            .map(Partition::Shard)
            .collect())
    }

    /// The partition a job id is written to now: its shard under the current `WAITER_SHARDS`.
    pub(crate) fn home_of(&self, queue: &QueueName, job_id: &str) -> Partition {
        Partition::Shard(shard_for(job_id, self.config.shards_for(queue)))
    }

    /// Every shard a job id may be stored in: its shard under each shard count ever used.
    pub(crate) async fn candidate_partitions(
        &self,
        queue: &QueueName,
        job_id: &str,
    ) -> Result<Vec<Partition>, PortError> {
        let mut shards: Vec<u32> = self
            .shard_counts(queue)
            .await?
            .into_iter()
            .chain([self.config.shards_for(queue)])
            .map(|n| shard_for(job_id, n))
            .collect();
        shards.sort_unstable();
        shards.dedup();
        Ok(shards.into_iter().map(Partition::Shard).collect())
    }
}
