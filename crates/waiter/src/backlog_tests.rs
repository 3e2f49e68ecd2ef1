//! Issue 48 defect 6: `BacklogAge` (the poller's alarm metric, the run's
//! `overdue_beyond_rate_s`) leaves out the time `WAITER_MAX_RATE` holds a herd back by design,
//! and keeps the time the poller itself owes. `backlog_age_s` still says how overdue the oldest
//! job found was.

use chrono::TimeDelta;

use crate::poller::Dispatcher;
use crate::ports::Clock;
use crate::testing::{config, stored, FakeClock, FakeQueue, MemStore};

/// 150 jobs due at once at 1 a second: the first run books the 120 s it reads ahead, and the
/// second run, a minute later, finds the other 30 a minute overdue, every one of them held
/// back by the rate. Neither run's backlog age counts that.
#[tokio::test(start_paused = true)]
async fn backlog_age_leaves_out_what_the_rate_holds_back() {
    let clock = FakeClock::default();
    let store = MemStore::default();
    let queue = FakeQueue::new(clock.clone());
    let cfg = config("orders", &[("WAITER_MAX_RATE", "1"), ("WAITER_SHARDS", "1")]);
    let due = clock.now();
    for i in 0..150 {
        store.insert(stored("orders", &format!("j{i:03}"), due, 1));
    }
    let d = Dispatcher::new(cfg, store.clone(), queue.clone(), clock.clone());
    let first = d.run_group(clock.now() + TimeDelta::seconds(30), None).await;
    assert!(first.held_back >= 100, "{first:?}");
    assert!(first.overdue_beyond_rate_s < 2.0, "{first:?}");
    assert!(store.len() > 0, "the rest is left for a later run");
    tokio::time::sleep(std::time::Duration::from_secs(60)).await;
    let second = d.run_group(clock.now() + TimeDelta::seconds(30), None).await;
    assert!(second.held_back > 0, "{second:?}");
    assert!(
        second.overdue_beyond_rate_s < 2.0,
        "held back by the rate, not late: {second:?}"
    );
    assert!(second.backlog_age_s >= 60.0, "found a minute overdue: {second:?}");
    assert_eq!(store.len(), 0, "all sent");
}

/// Jobs overdue because no poller ran (the schedule was throttled, say): the first of them
/// gets the second it wants, and is counted however the rest wait for the budget.
#[tokio::test(start_paused = true)]
async fn backlog_age_keeps_what_the_poller_owes_under_a_rate() {
    let clock = FakeClock::default();
    let store = MemStore::default();
    let queue = FakeQueue::new(clock.clone());
    let cfg = config("orders", &[("WAITER_MAX_RATE", "1"), ("WAITER_SHARDS", "1")]);
    let due = clock.now() - TimeDelta::seconds(100);
    for i in 0..5 {
        store.insert(stored("orders", &format!("j{i}"), due, 1));
    }
    let d = Dispatcher::new(cfg, store.clone(), queue.clone(), clock.clone());
    let run = d.run_group(clock.now() + TimeDelta::seconds(30), None).await;
    assert!(run.held_back >= 3, "{run:?}");
    assert!((100.0..102.0).contains(&run.overdue_beyond_rate_s), "{run:?}");
    assert_eq!(run.overdue_beyond_rate_s, run.backlog_age_s, "{run:?}");
}
