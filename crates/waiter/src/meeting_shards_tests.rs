//! Issue 71: every action on a job stored under an earlier `WAITER_SHARDS`, after a stack update
//! grew or shrank it, and the poller under the new count. Each id the tests act on is stored in
//! another shard than the one it hashes to now, so a lookup by the current count alone misses it.

use chrono::TimeDelta;
use serde_json::{json, Value};

use crate::app::Waiter;
use crate::poller::{Dispatcher, PollerGroup};
use crate::ports::{Clock, Jobs, Parking, Partition};
use crate::routing::shard_for;
use crate::testing::*;
use crate::QueueName;

/// The count the jobs are stored under, and the counts the functions run with after.
const BEFORE: u32 = 3;
const AFTER: [u32; 2] = [7, 2];

/// The functions of one deployment over a shared table, queue and clock.
struct Stack {
    store: MemStore,
    queue: FakeQueue,
    clock: FakeClock,
}

impl Stack {
    fn new() -> Self {
        let clock = FakeClock::default();
        Self {
            store: MemStore::default(),
            queue: FakeQueue::new(clock.clone()),
            clock,
        }
    }

    fn settings(shards: u32, extra: &[(&str, &str)]) -> std::sync::Arc<crate::config::Config> {
        let shards = shards.to_string();
        let mut all = vec![
            ("WAITER_SHARDS", shards.as_str()),
            ("WAITER_LOOKAHEAD", "0"),
            ("WAITER_DIRECT_MAX_DELAY", "0"),
            ("WAITER_HISTORY_DAYS", "7"),
            ("WAITER_HISTORY_BODY", "true"),
        ];
        all.extend_from_slice(extra);
        config("orders", &all)
    }

    fn enqueue_fn(&self, shards: u32) -> TestWaiter {
        Waiter::new(
            Self::settings(shards, &[]),
            self.store.clone(),
            self.queue.clone(),
            self.clock.clone(),
        )
    }

    fn poller(&self, shards: u32, extra: &[(&str, &str)]) -> Dispatcher<MemStore, FakeQueue, FakeClock> {
        Dispatcher::new(
            Self::settings(shards, extra),
            self.store.clone(),
            self.queue.clone(),
            self.clock.clone(),
        )
    }

    /// The shards `id` is stored in now (the parked partition aside).
    fn shards_of(&self, id: &str) -> Vec<u32> {
        let state = self.store.state.lock().expect("the store's lock");
        state
            .items
            .keys()
            .filter(|(_, _, j)| j == id)
            .filter_map(|(_, p, _)| match p {
                Partition::Shard(s) => Some(*s),
                _ => None,
            })
            .collect()
    }

    fn bodies_sent(&self) -> Vec<String> {
        self.queue.sent().iter().map(|s| s.message.body.clone()).collect()
    }
}

/// An id, `name` plus a number, whose shard under `BEFORE` is none of its shards under `AFTER`.
fn moved_id(name: &str) -> String {
    (0..)
        .map(|i| format!("{name}{i}"))
        .find(|id| AFTER.iter().all(|n| shard_for(id, *n) != shard_for(id, BEFORE)))
        .expect("some id moves")
}

async fn act(w: &TestWaiter, request: Value) -> Value {
    call(w, request).await
}

async fn enqueue(w: &TestWaiter, id: &str, delay_s: u64) -> Value {
    let r = act(
        w,
        json!({"queue": "orders", "job_id": id, "message_body": format!("{id}-1"), "delay_seconds": delay_s}),
    )
    .await;
    assert_eq!(r["status"], "scheduled", "{r}");
    r
}

/// `replace`, `extend`, `reschedule`, `pause`, `resume`, `trigger` and `preview` find a job in
/// its old shard and act on that item: no second item of the id appears in its new shard.
#[tokio::test(start_paused = true)]
async fn steering_a_job_stored_under_another_shard_count_acts_on_its_item() {
    for after in AFTER {
        let stack = Stack::new();
        let old = stack.enqueue_fn(BEFORE);
        let ids: Vec<String> = ["replace", "extend", "move", "pause", "trigger"]
            .iter()
            .map(|n| moved_id(n))
            .collect();
        for id in &ids {
            enqueue(&old, id, 3600).await;
        }
        let series = moved_id("series");
        let r = act(
            &old,
            json!({"queue": "orders", "job_id": series, "message_body": "tick", "delay_seconds": 3600,
                   "repeat": {"every_s": 3600}}),
        )
        .await;
        assert_eq!(r["status"], "scheduled", "{r}");
        let new = stack.enqueue_fn(after);
        let home = |id: &str| vec![shard_for(id, BEFORE)];

        let r = act(
            &new,
            json!({"queue": "orders", "job_id": ids[0], "message_body": "replaced", "delay_seconds": 7200,
                   "on_duplicate": "replace"}),
        )
        .await;
        assert_eq!(
            (r["status"].as_str(), r["replaced"].as_bool()),
            (Some("scheduled"), Some(true)),
            "{r}"
        );
        let r = act(
            &new,
            json!({"queue": "orders", "job_id": ids[1], "message_body": "ignored", "delay_seconds": 7200,
                   "on_duplicate": "extend"}),
        )
        .await;
        assert_eq!(r["replaced"], true, "{r}");
        let r = act(
            &new,
            json!({"action": "reschedule", "queue": "orders", "job_id": ids[2], "delay_seconds": 60}),
        )
        .await;
        assert_eq!(r["status"], "rescheduled", "{r}");
        let r = act(&new, json!({"action": "pause", "queue": "orders", "job_id": ids[3]})).await;
        assert_eq!(r["status"], "paused", "{r}");
        let r = act(&new, json!({"action": "resume", "queue": "orders", "job_id": ids[3]})).await;
        assert_eq!(r["status"], "resumed", "{r}");
        let r = act(
            &new,
            json!({"action": "preview", "queue": "orders", "job_id": series, "count": 2}),
        )
        .await;
        assert_eq!(r["occurrences"].as_array().map(Vec::len), Some(2), "{r}");
        for id in &ids[..4] {
            assert_eq!(
                stack.shards_of(id),
                home(id),
                "{id} with {after} shards: one item, where it was"
            );
        }
        let r = act(&new, json!({"action": "trigger", "queue": "orders", "job_id": ids[4]})).await;
        assert_eq!(r["status"], "sent", "{r}");
        assert_eq!(stack.bodies_sent(), [format!("{}-1", ids[4])], "{after} shards");
        assert!(
            stack.shards_of(&ids[4]).is_empty(),
            "the triggered job left its old shard"
        );
        // The poller under the new count sends what is left, each once, from the old shards:
        // the moved, the resumed job and the first occurrence at the hour, and the replaced and
        // the extended job (which keeps its message) and the second occurrence at two.
        let poller = stack.poller(after, &[]);
        for _ in 0..2 {
            stack.clock.advance(TimeDelta::seconds(3600));
            poller.run(stack.clock.now() + TimeDelta::seconds(30)).await;
        }
        let mut sent = stack.bodies_sent();
        sent.sort();
        let mut want = vec![
            format!("{}-1", ids[4]),
            "replaced".to_owned(),
            format!("{}-1", ids[1]),
            format!("{}-1", ids[2]),
            format!("{}-1", ids[3]),
            "tick".to_owned(),
            "tick".to_owned(),
        ];
        want.sort();
        assert_eq!(sent, want, "{after} shards: every job once, the hourly series twice");
    }
}

/// A consumer's `retry`, an operator's `replay` and a caller's enqueue again after the job left,
/// each under the new count: the history record in the old shard answers them.
#[tokio::test(start_paused = true)]
async fn retry_replay_and_history_of_a_job_sent_under_another_shard_count() {
    for after in AFTER {
        let stack = Stack::new();
        let old = stack.enqueue_fn(BEFORE);
        let (retried, replayed, again) = (moved_id("retried"), moved_id("replayed"), moved_id("again"));
        for id in [&retried, &replayed, &again] {
            enqueue(&old, id, 60).await;
        }
        stack.clock.advance(TimeDelta::seconds(61));
        stack
            .poller(BEFORE, &[])
            .run(stack.clock.now() + TimeDelta::seconds(30))
            .await;
        assert_eq!(stack.queue.sent().len(), 3, "sent under {BEFORE} shards");
        let new = stack.enqueue_fn(after);

        let again_reply = act(
            &new,
            json!({"queue": "orders", "job_id": again, "message_body": "again", "delay_seconds": 3600}),
        )
        .await;
        assert_eq!(
            again_reply["duplicate"], true,
            "{after} shards: the record in the old shard: {again_reply}"
        );
        let got = act(&new, json!({"action": "get", "queue": "orders", "job_id": again})).await;
        assert_eq!(got["status"], "dispatched", "{got}");

        let retry = json!({"action": "retry", "queue": "orders", "job_id": retried, "attempt": 1,
                           "message_body": format!("{retried}-1"), "backoff": {"base_s": 30, "jitter": false}});
        let first = act(&new, retry.clone()).await;
        assert_eq!(
            (first["status"].as_str(), first["duplicate"].as_bool()),
            (Some("scheduled"), Some(false)),
            "{first}"
        );
        assert_eq!(
            act(&new, retry).await["duplicate"],
            true,
            "one attempt 2 across the counts"
        );

        let copy = act(&new, json!({"action": "replay", "queue": "orders", "job_id": replayed})).await;
        assert_eq!(copy["status"], "scheduled", "{copy}");
        let copy_id = copy["job_id"].as_str().expect("the copy's id").to_owned();

        stack.clock.advance(TimeDelta::seconds(31));
        stack
            .poller(after, &[])
            .run(stack.clock.now() + TimeDelta::seconds(30))
            .await;
        let sent = stack.queue.sent();
        let attempt_2 = sent
            .iter()
            .filter(|s| crate::job::attempt_in(&s.message.attributes) == Some(2))
            .count();
        assert_eq!(attempt_2, 1, "{after} shards: attempt 2 delivered once");
        let copies = sent
            .iter()
            .filter(|s| s.message.body == format!("{replayed}-1"))
            .count();
        assert_eq!(copies, 2, "{after} shards: the original and its copy ({copy_id})");
        assert!(
            !stack.bodies_sent().contains(&"again".to_owned()),
            "the duplicate was not stored"
        );
    }
}

/// `redrive` of a job parked under the earlier count sends it home under the current one, and
/// the poller there sends it.
#[tokio::test(start_paused = true)]
async fn a_job_parked_under_another_shard_count_is_redriven_home_and_sent() {
    for after in AFTER {
        let stack = Stack::new();
        let old = stack.enqueue_fn(BEFORE);
        let id = moved_id("parked");
        enqueue(&old, &id, 3600).await;
        let q = QueueName::parse("orders").expect("a queue name");
        let job = stack
            .store
            .find(&q, &id, &[Partition::Shard(shard_for(&id, BEFORE))])
            .await
            .expect("the store answers")
            .expect("stored");
        let info = crate::ports::ParkInfo {
            parked_at: stack.clock.now(),
            code: "InvalidParameterValue".into(),
            message: "refused".into(),
        };
        stack.store.park(&job, &info).await.expect("parked");
        let new = stack.enqueue_fn(after);
        let r = act(&new, json!({"action": "redrive", "queue": "orders", "job_id": id})).await;
        assert_eq!(r["status"], "scheduled", "{r}");
        assert_eq!(
            stack.shards_of(&id),
            vec![shard_for(&id, after)],
            "home under {after} shards"
        );
        stack.clock.advance(TimeDelta::seconds(3601));
        stack
            .poller(after, &[])
            .run(stack.clock.now() + TimeDelta::seconds(30))
            .await;
        assert_eq!(stack.bodies_sent(), [format!("{id}-1")], "{after} shards");
    }
}

/// The poller after the count shrank sends the jobs still stored in shards beyond it.
#[tokio::test(start_paused = true)]
async fn a_poller_under_fewer_shards_sends_what_the_shards_beyond_its_count_hold() {
    let stack = Stack::new();
    let old = stack.enqueue_fn(7);
    let ids: Vec<String> = (0..30).map(|i| format!("j{i}")).collect();
    for id in &ids {
        enqueue(&old, id, 60).await;
    }
    assert!(
        ids.iter().any(|id| shard_for(id, 7) >= 2),
        "some jobs lie beyond shard 1"
    );
    stack.clock.advance(TimeDelta::seconds(61));
    stack
        .poller(2, &[])
        .run(stack.clock.now() + TimeDelta::seconds(30))
        .await;
    let mut sent = stack.bodies_sent();
    sent.sort();
    let mut want: Vec<String> = ids.iter().map(|id| format!("{id}-1")).collect();
    want.sort();
    assert_eq!(sent, want, "every job once");
}

/// `trigger` with two poller groups, beside both groups' runs: the job goes once.
#[tokio::test(start_paused = true)]
async fn a_trigger_beside_two_poller_groups_runs_sends_the_job_once() {
    let stack = Stack::new();
    let groups = [("WAITER_POLLER_GROUPS", "2")];
    let w = Waiter::new(
        Stack::settings(4, &groups),
        stack.store.clone(),
        stack.queue.clone(),
        stack.clock.clone(),
    );
    let ids: Vec<String> = (0..8).map(|i| format!("t{i}")).collect();
    for id in &ids {
        enqueue(&w, id, 2).await;
    }
    stack.clock.advance(TimeDelta::seconds(1));
    let deadline = stack.clock.now() + TimeDelta::seconds(30);
    let runs = (0..2).map(|group| {
        let d = stack.poller(4, &groups);
        async move { d.run_group(deadline, Some(PollerGroup { group, groups: 2 })).await }
    });
    let triggers = ids
        .iter()
        .map(|id| act(&w, json!({"action": "trigger", "queue": "orders", "job_id": id})));
    let (_, replies) = tokio::join!(futures::future::join_all(runs), futures::future::join_all(triggers));
    for r in &replies {
        assert!(
            matches!(r["status"].as_str(), Some("sent" | "dispatching" | "dispatched")),
            "{r}"
        );
    }
    let mut sent = stack.bodies_sent();
    sent.sort();
    let mut want: Vec<String> = ids.iter().map(|id| format!("{id}-1")).collect();
    want.sort();
    assert_eq!(sent, want, "each job once, by its trigger or its group's run");
}
