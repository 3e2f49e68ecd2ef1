use serde::{Deserialize, Serialize};

/// What a poller group's schedule sends the `poller` function: `{"group": i, "groups": n}`.
/// The poller accepts any other event too (an EventBridge scheduled event, `{}`) and then works
/// every partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PollerGroup {
    /// This run's group, from 0 to `groups - 1`.
    pub group: u32,
    /// How many groups share the partitions (`WAITER_POLLER_GROUPS`).
    pub groups: u32,
}

impl PollerGroup {
    /// The wire name of the group index.
    pub const GROUP: &'static str = "group";
    /// The wire name of the number of groups.
    pub const GROUPS: &'static str = "groups";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_form_names_both_fields() {
        let g = PollerGroup { group: 2, groups: 8 };
        let v = serde_json::to_value(g).expect("json");
        assert_eq!(v, serde_json::json!({ PollerGroup::GROUP: 2, PollerGroup::GROUPS: 8 }));
        assert_eq!(serde_json::from_value::<PollerGroup>(v).expect("back"), g);
    }
}
