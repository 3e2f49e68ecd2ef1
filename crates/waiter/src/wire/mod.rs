//! The wire side of the `enqueue` function: requests decoded into the contract's types and
//! validated into their domain form, and the replies. Depends on the domain and the ports, never
//! on `app`.

pub mod actions;
mod decode;
pub mod field_rules;
pub(crate) mod normalise;
pub(crate) mod repeat_rules;
pub mod reply;
pub mod request;
mod request_scope;
pub mod retry;
pub mod sqs_rules;
pub mod steer;

pub use actions::{CancelMany, ListQuery, ListStatus, Reschedule, StatsQuery};
pub use request::{parse_job, parse_request, Payload, RedriveTarget, Request};
pub use steer::PauseTarget;
