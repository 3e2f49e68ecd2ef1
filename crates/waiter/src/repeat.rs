//! Recurring jobs' schedules (cron in a zone, every n seconds, clock changes, catch-up,
//! preview): the `sqs-waiter-schedule` crate, which the CLI shares so that its `preview`
//! computes without AWS.

pub use sqs_waiter_schedule::*;
