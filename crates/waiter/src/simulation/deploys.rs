//! The whole system's deployments (issue 71): how the two functions run in a seed. In the
//! whole system's seeds, and only there, a stack update now and then changes `WAITER_SHARDS`
//! (growing or shrinking it), `WAITER_LOOKAHEAD` and `WAITER_FIFO_HOLD` between steps; a third
//! of them run the poller as two poller groups at once (`WAITER_POLLER_GROUPS`, each group its
//! own process), and half give `enqueue` a clock up to 100 ms off the poller's (which is the
//! true one: SQS stamps arrivals by it).
//!
//! Its draws come from a schedule of its own, so a seed's other draws are the same with or
//! without it, and the focused seeds run exactly as before.

use std::sync::Arc;

use super::*;
use crate::config::Config;
use crate::poller::PollerGroup;

pub(super) type SimStore = FaultyStore<MemStore>;
/// The sender name of `enqueue`'s sends (its direct path, `trigger`'s and `reschedule`'s
/// hand-overs): those are timed by its clock.
pub(super) const ENQUEUE: &str = "enqueue";

/// How far off the clock that timed `s` may read: `clock_error` for what `enqueue` sent,
/// nothing for the poller's sends (timed by the true clock).
pub(super) fn error_of(s: &crate::testing::Sent, clock_error: TimeDelta) -> TimeDelta {
    if s.by == ENQUEUE {
        clock_error
    } else {
        TimeDelta::zero()
    }
}
pub(super) type SimQueue = FaultyQueue<FakeQueue>;

pub(super) struct Deployment {
    draws: StdRng,
    settings: Vec<(&'static str, String)>,
    store: SimStore,
    queue: SimQueue,
    /// The queue as `enqueue` sends to it: its sends are recorded as `ENQUEUE`'s.
    enqueue_queue: SimQueue,
    clock: FakeClock,
    /// Stack updates happen in this seed.
    updates: bool,
    /// Poller groups; 1 is the ungrouped poller.
    groups: u32,
    /// How far `enqueue`'s clock reads ahead of the poller's (behind if negative).
    pub(super) enqueue_clock_error: TimeDelta,
    dispatchers: Vec<Dispatcher<SimStore, SimQueue, FakeClock>>,
    /// Stack updates made, and the `WAITER_SHARDS` values the seed ran with.
    pub(super) updates_made: usize,
    pub(super) shard_counts: Vec<String>,
}

impl Deployment {
    /// The first deployment, with `settings`; `whole` turns on updates, groups and clock error
    /// as this seed's own schedule draws them.
    pub(super) fn new(
        seed: u64,
        whole: bool,
        settings: Vec<(&'static str, String)>,
        (store, queue, enqueue_queue): (SimStore, SimQueue, SimQueue),
        clock: FakeClock,
    ) -> Self {
        let mut draws = StdRng::seed_from_u64(seed ^ 0xde91_0e5e_ed00_0071);
        let updates = whole && draws.random_bool(0.5);
        let groups = if whole && draws.random_bool(0.33) { 2 } else { 1 };
        let enqueue_clock_error = match whole && draws.random_bool(0.5) {
            true => TimeDelta::milliseconds(draws.random_range(-100..=100)),
            false => TimeDelta::zero(),
        };
        let mut d = Self {
            draws,
            shard_counts: Vec::new(),
            settings,
            store,
            queue,
            enqueue_queue,
            clock,
            updates,
            groups,
            enqueue_clock_error,
            dispatchers: Vec::new(),
            updates_made: 0,
        };
        d.deploy();
        d
    }

    fn config(&self) -> Arc<Config> {
        let mut settings: Vec<(&str, &str)> = self.settings.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let groups = self.groups.to_string();
        if self.groups > 1 {
            settings.push(("WAITER_POLLER_GROUPS", groups.as_str()));
        }
        config("q,f.fifo", &settings)
    }

    /// The poller's processes, one per group, under the current settings.
    fn deploy(&mut self) {
        let cfg = self.config();
        self.dispatchers = (0..self.groups)
            .map(|_| Dispatcher::new(cfg.clone(), self.store.clone(), self.queue.clone(), self.clock.clone()))
            .collect();
        let shards = self.setting("WAITER_SHARDS");
        if self.shard_counts.last() != Some(&shards) {
            self.shard_counts.push(shards);
        }
    }

    fn setting(&self, name: &str) -> String {
        self.settings
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    }

    fn set(&mut self, name: &'static str, value: String) {
        self.settings.retain(|(k, _)| *k != name);
        self.settings.push((name, value));
    }

    /// The `enqueue` function of this deployment, on its own clock.
    pub(super) fn waiter(&self) -> Waiter<SimStore, SimQueue, FakeClock> {
        Waiter::new(
            self.config(),
            self.store.clone(),
            self.enqueue_queue.clone(),
            self.clock.off_by(self.enqueue_clock_error),
        )
    }

    /// Between two steps, now and then (in seeds with updates): a stack update with other
    /// settings. Both functions are replaced: the new `enqueue` if there was one.
    pub(super) fn maybe_update(&mut self) -> Option<Waiter<SimStore, SimQueue, FakeClock>> {
        if !self.updates || !self.draws.random_bool(0.06) {
            return None;
        }
        let shards = self.draws.random_range(1..=4).to_string();
        let lookahead = self.draws.random_range(0..=20).to_string();
        let hold = self.draws.random_range(0..=5).to_string();
        self.set("WAITER_SHARDS", shards);
        self.set("WAITER_LOOKAHEAD", lookahead);
        self.set("WAITER_FIFO_HOLD", hold);
        self.updates_made += 1;
        self.deploy();
        Some(self.waiter())
    }

    /// One poller invocation: every group's run at once, as EventBridge starts them.
    pub(super) async fn run(&self, deadline: DateTime<Utc>) {
        let groups = self.groups;
        let runs = self.dispatchers.iter().enumerate().map(|(group, d)| async move {
            match groups {
                1 => d.run(deadline).await,
                _ => {
                    let group = u32::try_from(group).expect("a few groups");
                    d.run_group(deadline, Some(PollerGroup { group, groups })).await
                }
            }
        });
        futures::future::join_all(runs).await;
    }

    /// What the seed ran with, for a failing seed's report.
    pub(super) fn describe(&self) -> String {
        format!(
            "groups {}, enqueue's clock {} ms off, WAITER_SHARDS {} ({} stack updates)",
            self.groups,
            self.enqueue_clock_error.num_milliseconds(),
            self.shard_counts.join(" → "),
            self.updates_made
        )
    }
}
