//! Classes of rights, an alias of the `enqueue` function each (docs/security.md): which actions
//! a call through a class alias may make. The function enforces it; the console shows only
//! the controls it allows.

/// A class of rights.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// A producer's, and its consumers': schedule jobs and manage them one by one.
    Send,
    /// A viewer's: read, change nothing.
    View,
    /// An operator's: everything.
    Operate,
}

impl Class {
    /// Every class.
    pub const ALL: [Class; 3] = [Class::Send, Class::View, Class::Operate];

    /// The alias name of the class for every queue, and the suffix of its per-queue aliases.
    pub const fn as_str(self) -> &'static str {
        match self {
            Class::Send => "send",
            Class::View => "view",
            Class::Operate => "operate",
        }
    }

    /// The class named `name`.
    pub fn parse(name: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// Whether the class may call `action` (a contract action's wire name).
    pub fn allows(self, action: &str) -> bool {
        RIGHTS
            .iter()
            .find(|(name, _)| *name == action)
            .is_some_and(|(_, classes)| classes.contains(&self))
    }

    /// The actions the class may call, in the table's order.
    pub fn actions(self) -> impl Iterator<Item = &'static str> {
        RIGHTS
            .iter()
            .filter(move |(_, classes)| classes.contains(&self))
            .map(|(name, _)| *name)
    }
}

/// The one table of rights: each action of the contract and the classes that may call it.
/// A new action is refused to every alias until it has its row here.
pub const RIGHTS: &[(&str, &[Class])] = &[
    ("enqueue", &[Class::Send, Class::Operate]),
    ("get", &[Class::Send, Class::View, Class::Operate]),
    ("cancel", &[Class::Send, Class::Operate]),
    ("reschedule", &[Class::Send, Class::Operate]),
    ("preview", &[Class::Send, Class::View, Class::Operate]),
    ("retry", &[Class::Send, Class::Operate]),
    ("replay", &[Class::Send, Class::Operate]),
    ("list", &[Class::View, Class::Operate]),
    ("stats", &[Class::View, Class::Operate]),
    ("queues", &[Class::View, Class::Operate]),
    ("list_parked", &[Class::View, Class::Operate]),
    ("cancel_many", &[Class::Operate]),
    ("redrive", &[Class::Operate]),
    ("trigger", &[Class::Operate]),
    ("pause", &[Class::Operate]),
    ("resume", &[Class::Operate]),
];

/// Joins a queue's key and a class in a per-queue alias: `orders--send`.
pub const QUEUE_CLASS_SEPARATOR: &str = "--";

/// A queue's part of its aliases' names: an alias name is `[A-Za-z0-9_-]`, and a queue name is
/// that and a FIFO queue's `.fifo`, which becomes `-fifo`.
pub fn alias_key(queue: &str) -> String {
    queue.replace('.', "-")
}

/// The alias of `class` for `queue` (`None`: for every queue).
pub fn alias_name(class: Class, queue: Option<&str>) -> String {
    match queue {
        Some(q) => format!("{}{QUEUE_CLASS_SEPARATOR}{}", alias_key(q), class.as_str()),
        None => class.as_str().to_owned(),
    }
}

/// An alias name read as a class alias: its class, and the key of its queue for a per-queue
/// one (`None` when the name is no class alias).
pub fn class_alias(alias: &str) -> Option<(Class, Option<&str>)> {
    match alias.rsplit_once(QUEUE_CLASS_SEPARATOR) {
        Some(("", _)) => None,
        // A queue's own aliases are its producer's and its viewer's; an operator's is the
        // stack's `operate` alone.
        Some((key, class)) => Class::parse(class)
            .filter(|c| *c != Class::Operate)
            .map(|c| (c, Some(key))),
        None => Class::parse(alias).map(|c| (c, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_aliases_read_as_their_class_and_queue_key() {
        assert_eq!(class_alias("send"), Some((Class::Send, None)));
        assert_eq!(
            class_alias("billing-fifo--view"),
            Some((Class::View, Some("billing-fifo")))
        );
        assert_eq!(
            class_alias(&alias_name(Class::Send, Some("a.fifo"))),
            Some((Class::Send, Some("a-fifo")))
        );
        for other in [
            "live",
            "7",
            "$LATEST",
            "--send",
            "orders--write",
            "orders-send",
            "orders--operate",
        ] {
            assert_eq!(class_alias(other), None, "{other}");
        }
        assert!(
            Class::View.actions().all(|a| Class::Operate.allows(a)),
            "an operator may do what a viewer may"
        );
    }
}
