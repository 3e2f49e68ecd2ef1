//! Tags in the whole-system simulation (issue 83): three of every four versions carry a tag
//! (`callers.rs`), and an operator cancels by tag among every other action (`steering.rs`),
//! paging `cancel_many` with its cursor to the end. The invariants, checked around each such
//! call (never drawn beside a poller run, `Steering::beside_a_run`, so nothing else runs during
//! it): it removes only jobs that carry the tag, and every job carrying the tag that is still
//! stored after the last page (stored for longer than the index's lag) is one it answered
//! `dispatching` for. The main invariants then hold for what it cancelled (never delivered
//! after the call began, unless it carried `maybe_delivered_at`).

use std::collections::BTreeMap;

use serde_json::json;

use super::callers::World;
use super::{TAGS, TAG_KEY};
use crate::ports::{Clock, Partition};

/// A stored job as the check sees it: body, tag, settled in the index, maybe delivered.
type Stored = (String, Option<String>, bool, bool);

impl World {
    /// The stored (not parked) jobs of `queue`: id to (body, tag, stored long enough for the
    /// due index to show it: past its lag, `FIFO_SETTLE`; marked `maybe_delivered_at`).
    fn stored_tags(&self, queue: &str) -> BTreeMap<String, Stored> {
        let settled = self.clock.now() - super::FIFO_SETTLE;
        self.mem
            .state
            .lock()
            .unwrap()
            .items
            .iter()
            .filter(|((q, p, _), _)| q.as_str() == queue && *p != Partition::Parked)
            .map(|((_, _, id), j)| {
                (
                    id.clone(),
                    (
                        j.job.message_body.clone(),
                        j.job.tags.get(TAG_KEY).cloned(),
                        j.enqueued_at <= settled,
                        j.maybe_delivered_at.is_some(),
                    ),
                )
            })
            .collect()
    }

    /// `cancel_many` by one tag, every page (1 to 5 jobs a page), then the invariants above.
    pub(super) async fn cancel_by_tag(&mut self) {
        let calls = self.steering.calls;
        let tag = TAGS[calls % TAGS.len()];
        let queue = if calls % 3 == 0 { "f.fifo" } else { "q" };
        let before = self.stored_tags(queue);
        let made_at = self.clock.now();
        let mut request = json!({"action": "cancel_many", "queue": queue, "tags": {TAG_KEY: tag},
                                 "limit": 1 + calls % 5});
        let (mut dispatching, mut whole) = (0, true);
        for _ in 0..10_000 {
            match self.waiter.handle(&request).await {
                Ok(r) => {
                    dispatching += r["dispatching"].as_u64().unwrap_or(0);
                    match &r["cursor"] {
                        serde_json::Value::Null => break,
                        c => request["cursor"] = c.clone(),
                    }
                }
                // A fault: what it cancelled is gone from the store, and seen below.
                Err(_) => {
                    whole = false;
                    break;
                }
            }
        }
        let after = self.stored_tags(queue);
        for (id, (body, had, _, marked)) in &before {
            if after.get(id).is_some_and(|(b, ..)| b == body) {
                continue;
            }
            if had.as_deref() != Some(tag) {
                self.out.violations.push(format!(
                    "{id}: cancel_many by {TAG_KEY}={tag} removed a job tagged {had:?}"
                ));
                continue;
            }
            self.pause_ends(id);
            self.steering.tag_cancelled += 1;
            if let Some(e) = self.expected.get_mut(body) {
                e.cancelled = true;
                e.maybe_delivered |= *marked;
                e.acted_on_at.get_or_insert(made_at);
            }
        }
        // A job stored within the index's lag may not be listed yet (docs/contract.md: the
        // index is eventually consistent); every other one must have been answered for.
        let left = after
            .iter()
            .filter(|(id, (body, t, ..))| {
                t.as_deref() == Some(tag) && before.get(*id).is_some_and(|(b, _, settled, _)| b == body && *settled)
            })
            .count() as u64;
        if whole && left > dispatching {
            self.out.violations.push(format!(
                "cancel_many by {TAG_KEY}={tag} left {left} tagged jobs stored, answered dispatching for {dispatching}"
            ));
        }
    }
}
