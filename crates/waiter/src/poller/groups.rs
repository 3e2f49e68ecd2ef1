//! Poller groups: `WAITER_POLLER_GROUPS` schedules each invoke the poller with
//! `{"group": i, "groups": n}`, and a run takes only its group's partitions, so that a herd is
//! drained by n runs at once. A group is a subset of the partitions, nothing more: leases still
//! keep two runs off one partition, whatever groups they were started for.

use serde_json::Value;
pub use sqs_waiter_contract::PollerGroup;

use crate::config::{QueueName, MAX_POLLER_GROUPS};
use crate::error::InvalidRequest;

/// The group that works a partition: a queue's shards go round the groups from an offset of
/// the queue's own, so that one queue's shards spread over every group and queues with few
/// shards do not all land on group 0. Stable across processes and releases (FNV-1a, not
/// std's randomly seeded hasher).
pub fn group_of(queue: &QueueName, shard: u32, groups: u32) -> u32 {
    let groups = groups.max(1);
    let offset = fnv1a(queue.as_str().as_bytes()) % u64::from(groups);
    // Both terms are below `groups`, so the sum cannot overflow.
    ((offset as u32) + shard % groups) % groups
}

/// Whether a run for `group` works this partition; a run without a group works them all.
pub fn owns(group: Option<PollerGroup>, queue: &QueueName, shard: u32) -> bool {
    group.is_none_or(|g| group_of(queue, shard, g.groups) == g.group)
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The group a poller event names, if any. An event without `group` (EventBridge's scheduled
/// event, `{}`) works every partition. `groups` defaults to `WAITER_POLLER_GROUPS`, so that a
/// manual `{"group": 1}` works what the deployment's group 1 works.
pub fn group_in(event: &Value, configured: u32) -> Result<Option<PollerGroup>, InvalidRequest> {
    let field = |name: &str| event.as_object().and_then(|o| o.get(name)).filter(|v| !v.is_null());
    let number = |name: &'static str, v: &Value, min: u32, max: u32| -> Result<u32, InvalidRequest> {
        v.as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| InvalidRequest::new(name, format!("must be a whole number from {min} to {max}")))
    };
    let groups = match field(PollerGroup::GROUPS) {
        Some(v) => number(PollerGroup::GROUPS, v, 1, MAX_POLLER_GROUPS)?,
        None => configured,
    };
    let Some(group) = field(PollerGroup::GROUP) else {
        if field(PollerGroup::GROUPS).is_some() {
            return Err(InvalidRequest::new(PollerGroup::GROUP, "is required with groups"));
        }
        return Ok(None);
    };
    let group = number(PollerGroup::GROUP, group, 0, groups.saturating_sub(1)).map_err(|mut e| {
        e.rule.push_str(" (groups - 1)");
        e
    })?;
    Ok(Some(PollerGroup { group, groups }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(name: &str) -> QueueName {
        QueueName::parse(name).expect("name")
    }

    #[test]
    fn every_partition_belongs_to_exactly_one_group_and_shards_spread_evenly() {
        let queues = [q("orders"), q("billing"), q("a"), q("emails.fifo")];
        for groups in 1..=MAX_POLLER_GROUPS {
            for queue in &queues {
                let mut per_group = vec![0u32; groups as usize];
                for shard in 0..64 {
                    let owners: Vec<u32> = (0..groups)
                        .filter(|g| owns(Some(PollerGroup { group: *g, groups }), queue, shard))
                        .collect();
                    assert_eq!(owners.len(), 1, "{queue}#{shard} with {groups} groups: {owners:?}");
                    assert!(owns(None, queue, shard), "a run without a group works every partition");
                    per_group[owners[0] as usize] += 1;
                }
                // 64 consecutive shards go round the groups: no group has more than one over
                // another.
                let (lo, hi) = (per_group.iter().min(), per_group.iter().max());
                assert!(
                    hi.zip(lo).is_some_and(|(h, l)| h - l <= 1),
                    "{queue}, {groups}: {per_group:?}"
                );
            }
        }
    }

    #[test]
    fn the_assignment_is_stable() {
        // Pinned: a change would move partitions between groups in a rolling deploy, when
        // runs of the old and the new code are both running.
        let got: Vec<u32> = (0..8).map(|s| group_of(&q("orders"), s, 8)).collect();
        assert_eq!(got, vec![4, 5, 6, 7, 0, 1, 2, 3]);
        assert_eq!(group_of(&q("orders"), 0, 1), 0);
    }

    #[test]
    fn events_name_their_group_or_none() {
        let scheduled =
            json!({"version": "0", "detail-type": "Scheduled Event", "source": "aws.scheduler", "detail": {}});
        assert_eq!(group_in(&scheduled, 4), Ok(None));
        assert_eq!(group_in(&json!({}), 4), Ok(None));
        assert_eq!(group_in(&json!(null), 4), Ok(None));
        assert_eq!(group_in(&json!("tick"), 4), Ok(None));
        assert_eq!(
            group_in(&json!({"group": 3, "groups": 8}), 4),
            Ok(Some(PollerGroup { group: 3, groups: 8 }))
        );
        // `groups` left out: the deployment's number.
        assert_eq!(
            group_in(&json!({"group": 1}), 4),
            Ok(Some(PollerGroup { group: 1, groups: 4 }))
        );
    }

    #[test]
    fn bad_groups_are_refused_by_field_and_rule() {
        let cases = [
            (json!({"group": 2, "groups": 2}), "group", "from 0 to 1 (groups - 1)"),
            (json!({"group": -1, "groups": 2}), "group", "from 0 to 1 (groups - 1)"),
            (json!({"group": "1", "groups": 2}), "group", "from 0 to 1 (groups - 1)"),
            (json!({"group": 1.5, "groups": 2}), "group", "from 0 to 1 (groups - 1)"),
            (json!({"group": 0, "groups": 0}), "groups", "from 1 to 16"),
            (json!({"group": 0, "groups": 17}), "groups", "from 1 to 16"),
            (json!({"groups": 2}), "group", "is required with groups"),
            (json!({"group": 4}), "group", "from 0 to 3 (groups - 1)"),
        ];
        for (event, field, rule) in cases {
            let e = group_in(&event, 4).expect_err(&event.to_string());
            assert_eq!(e.field, field, "{event}");
            assert!(e.rule.contains(rule), "{event}: {e}");
        }
    }
}
