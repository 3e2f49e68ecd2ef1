//! Priority and weighted throttling: which due jobs take a queue's `WAITER_MAX_RATE` budget
//! first, and how much of it each one uses.

/// `priority` when none is given. Lower goes first.
pub const DEFAULT_PRIORITY: u16 = 100;
/// The largest (least urgent) `priority`.
pub const MAX_PRIORITY: u16 = 1000;
/// `priority` of a critical job: it neither waits for the rate budget nor uses it.
pub const CRITICAL_PRIORITY: u16 = 0;
/// `weight` when none is given: the job counts as one message against the rate budget.
pub const DEFAULT_WEIGHT: u16 = 1;
/// The largest `weight`.
pub const MAX_WEIGHT: u16 = 100;
/// The message attribute (`Number`) that carries a job's `priority` when it is not the default,
/// so that a consumer's `retry` keeps it.
pub const PRIORITY_ATTRIBUTE: &str = "waiter.priority";
/// The message attribute (`Number`) that carries a job's `weight` when it is not the default.
pub const WEIGHT_ATTRIBUTE: &str = "waiter.weight";
