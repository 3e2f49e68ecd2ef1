//! The wire side of the `enqueue` function: requests read into their domain form, field by field
//! with each field's rule, and the replies. Depends on the domain and the ports, never on `app`.

pub mod actions;
pub mod field_rules;
pub mod fields;
pub mod reply;
pub mod request;
pub mod sqs_rules;

pub use actions::{CancelMany, ListQuery, ListStatus, Reschedule, StatsQuery};
pub use request::{parse_job, parse_request, Payload, RedriveTarget, Request};
