//! sqs-waiter: schedule SQS messages beyond the 900-second `DelaySeconds` limit.
//!
//! The domain (`job`, `request`, `routing`, `service`, `manage`, `list`, `dispatch`) talks to storage and queues only through
//! the traits in `ports`; `aws` implements them with DynamoDB and SQS.

pub mod attributes;
pub mod aws;
pub mod bulk;
pub mod config;
pub mod cursor;
pub mod dispatch;
pub mod error;
pub mod fields;
pub mod job;
pub mod limits;
pub mod list;
pub mod manage;
pub mod metrics;
pub mod parked;
pub mod ports;
pub mod rate;
pub mod reply;
pub mod request;
pub mod routing;
pub mod service;
pub mod stats;
pub mod time;
pub mod windows;

#[cfg(test)]
mod contract_tests;
#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod history_tests;
#[cfg(test)]
mod pipeline_tests;
#[cfg(test)]
mod simulation;
#[cfg(test)]
mod testing;

pub use config::{Config, ConfigError, QueueName};
pub use dispatch::{Dispatcher, RunSummary};
pub use service::{HandlerError, Waiter};
