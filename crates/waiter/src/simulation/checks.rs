//! The invariant checker: what was delivered against what was expected.

use super::*;
use crate::testing::Sent;

/// Records every broken invariant in `out`; returns how many deliveries were duplicates.
pub(super) fn check(out: &mut Outcome, expected: &HashMap<String, Expected>, sent: &[Sent], mem: &MemStore) -> usize {
    let mut deliveries: HashMap<&str, usize> = HashMap::new();
    for s in sent {
        let id = s.message.body.as_str();
        *deliveries.entry(id).or_default() += 1;
        let Some(e) = expected.get(id) else {
            out.violations.push(format!("{id}: sent but never enqueued"));
            continue;
        };
        let arrival = s.at + TimeDelta::seconds(i64::from(s.message.delay_seconds.unwrap_or(0)));
        if let Some(due) = e.perform_at {
            if arrival < due {
                out.violations.push(format!("{id}: early by {:?}", due - arrival));
            }
        }
        let other_copy = e.two_copies && e.acted_on_at.is_some_and(|t| s.at < t);
        if e.cancelled && !other_copy {
            out.violations
                .push(format!("{id}: accepted by SQS although cancel said cancelled"));
        }
        if e.replaced && !other_copy {
            out.violations
                .push(format!("{id}: accepted by SQS although reschedule replaced it"));
        }
        if e.expires_at.is_some_and(|x| arrival > x) {
            out.violations.push(format!("{id}: sent to arrive after expires_at"));
        }
        if e.windows.as_ref().is_some_and(|w| !w.contains(arrival)) {
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
