//! The invariant checker: what was delivered against what was expected.

use super::*;
use crate::testing::Sent;

/// Records every broken invariant in `out`; returns how many deliveries were duplicates.
/// `reordered`: ids paused or triggered, outside the FIFO order check (their documented
/// exception). `clock_error`: how far `enqueue`'s clock is off the true one; what it sends
/// itself is timed by it, so for its sends early, late for `expires_at` and outside a window
/// are measured beyond it (the poller's by the true clock).
pub(super) fn check(
    out: &mut Outcome,
    expected: &HashMap<String, Expected>,
    sent: &[Sent],
    mem: &MemStore,
    reordered: &std::collections::HashSet<String>,
    clock_error: TimeDelta,
) -> usize {
    let mut deliveries: HashMap<&str, usize> = HashMap::new();
    for s in sent {
        let id = s.message.body.as_str();
        *deliveries.entry(id).or_default() += 1;
        let Some(e) = expected.get(id) else {
            out.violations.push(format!("{id}: sent but never enqueued"));
            continue;
        };
        let arrival = s.at + TimeDelta::seconds(i64::from(s.message.delay_seconds.unwrap_or(0)));
        let clock_error = super::deploys::error_of(s, clock_error);
        if let Some(due) = e.perform_at {
            if arrival + clock_error < due {
                out.violations.push(format!("{id}: early by {:?}", due - arrival));
            }
        }
        let before_the_answer = e.acted_on_at.is_some_and(|t| s.at < t);
        let excused = (e.two_copies || e.maybe_delivered) && before_the_answer;
        if e.cancelled && !excused {
            out.violations
                .push(format!("{id}: accepted by SQS although cancel said cancelled"));
        }
        if e.replaced && !excused {
            out.violations
                .push(format!("{id}: accepted by SQS although reschedule replaced it"));
        }
        if e.expires_at.is_some_and(|x| arrival - clock_error > x) {
            out.violations.push(format!("{id}: sent to arrive after expires_at"));
        }
        let outside = |w: &Windows| {
            !w.contains(arrival) && !w.contains(arrival - clock_error) && !w.contains(arrival + clock_error)
        };
        if e.windows.as_ref().is_some_and(outside) {
            out.violations
                .push(format!("{id}: arrives at {arrival}, outside its window"));
        }
    }
    // FIFO order per group: of two jobs of a group stored well before the earlier one fell due
    // (so that the index shows both by then), the earlier is delivered first.
    let mut first: HashMap<&str, DateTime<Utc>> = HashMap::new();
    for s in sent {
        first.entry(s.message.body.as_str()).or_insert(s.at);
    }
    let ordered: Vec<(&String, &Expected, DateTime<Utc>, DateTime<Utc>)> = expected
        .iter()
        .filter(|(_, e)| {
            e.acknowledged
                && e.group.is_some()
                && !(e.cancelled || e.cancel_unknown || e.replaced || e.two_copies)
                && e.expires_at.is_none()
                && e.windows.is_none()
        })
        .filter(|(b, _)| !reordered.contains(b.rsplit_once('@').map_or(b.as_str(), |(id, _)| id)))
        .filter_map(|(b, e)| Some((b, e, e.perform_at?, *first.get(b.as_str())?)))
        .collect();
    for (b1, e1, due1, at1) in &ordered {
        for (b2, e2, due2, at2) in &ordered {
            let visible_in_time = e1
                .enqueued_at
                .max(e2.enqueued_at)
                .is_some_and(|t| t + FIFO_SETTLE <= *due1);
            if e1.group != e2.group || due1 >= due2 || !visible_in_time {
                continue;
            }
            out.fifo_pairs += 1;
            if at2 < at1 {
                out.violations.push(format!(
                    "{b2} (due {due2}) delivered at {at2}, before {b1} of its group (due {due1}) at {at1}"
                ));
            }
        }
    }
    for (id, e) in expected {
        let may_be_gone = e.cancelled || e.cancel_unknown || e.replaced || e.expires_at.is_some();
        if e.acknowledged && !may_be_gone && !deliveries.contains_key(id.as_str()) {
            out.violations
                .push(format!("{id}: acknowledged but never delivered (lost)"));
        }
    }
    let leftover = active_jobs(mem);
    if leftover > 0 {
        out.violations
            .push(format!("{leftover} jobs still stored after the drain"));
    }
    deliveries.values().map(|n| n - 1).sum()
}

/// Between runs of the calm phase: a job whose message SQS accepted and that is still stored
/// must not look cancellable. A lease item of its partition (`cancel` answers `dispatching`) or
/// its `maybe_delivered_at` (a `cancelled` answer says so) covers it; otherwise `cancel` would
/// answer a bare `cancelled` for a message SQS holds.
pub(super) fn check_sent_and_stored(
    out: &mut Outcome,
    expected: &HashMap<String, Expected>,
    sent: &[Sent],
    mem: &MemStore,
) {
    // A retried job's attempts share one body, so a body names a version only outside them; the
    // retry checks cover those.
    let accepted: std::collections::HashSet<&str> = sent
        .iter()
        .filter(|s| !super::retries::is_retried(s))
        .map(|s| s.message.body.as_str())
        .collect();
    let state = mem.state.lock().unwrap();
    for ((queue, partition, id), job) in &state.items {
        let Partition::Shard(shard) = partition else {
            continue;
        };
        let body = job.job.message_body.as_str();
        let covered = job.maybe_delivered_at.is_some()
            || state.leases.contains_key(&(queue.clone(), *shard))
            || expected.get(body).is_some_and(|e| e.two_copies);
        if accepted.contains(body) && !covered {
            let violation = format!("{id}: stored after SQS accepted {body}, and cancel would answer cancelled");
            if !out.violations.contains(&violation) {
                out.violations.push(violation);
            }
        }
    }
}
