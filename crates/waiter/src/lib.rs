//! sqs-waiter: schedule SQS messages beyond the 900-second `DelaySeconds` limit.
//!
//! Layers, from the top: `app` (the `enqueue` function's actions) and `poller` (the dispatch
//! loop); `wire` (requests read into the domain, and replies); `ports` (the store and queue
//! traits, and the clock) with `aws` implementing them on DynamoDB and SQS; the domain below
//! (`job`, `routing`, `windows`, `rate`, `backoff`, `cursor`, `time`, `config`, `limits`,
//! `error`).
//! Dependencies point down only.

pub mod app;
pub mod aws;
pub mod backoff;
pub mod config;
pub mod cursor;
pub mod error;
pub mod job;
pub mod limits;
pub mod logging;
pub mod metrics;
pub mod poller;
pub mod ports;
pub mod rate;
pub mod repeat;
pub mod rights;
pub mod routing;
pub mod time;
pub mod trace;
pub mod windows;
pub mod wire;

#[cfg(test)]
mod backlog_tests;
#[cfg(test)]
mod chain_tests;
#[cfg(test)]
mod contract_tests;
#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod history_tests;
#[cfg(test)]
mod meeting_debounce_fifo_tests;
#[cfg(test)]
mod meeting_expiry_tests;
#[cfg(test)]
mod meeting_preview_replay_tests;
#[cfg(test)]
mod meeting_retry_tests;
#[cfg(test)]
mod meeting_shards_tests;
#[cfg(test)]
mod meeting_steer_tests;
#[cfg(test)]
mod meeting_trigger_tests;
#[cfg(test)]
mod meeting_windows_rate_tests;
#[cfg(test)]
mod pipeline_tests;
#[cfg(test)]
mod priority_ahead_tests;
#[cfg(test)]
mod priority_tests;
#[cfg(test)]
mod replay_tests;
#[cfg(test)]
mod retry_tests;
#[cfg(test)]
mod simulation;
#[cfg(test)]
mod testing;
#[cfg(test)]
mod trace_tests;
#[cfg(test)]
mod windows_flow_tests;

/// This release's version (the workspace's, semver): the functions log it at start, the
/// poller's reply carries it, and both stacks output it (docs/upgrades.md).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

pub use app::Waiter;
pub use config::{Config, ConfigError, QueueName};
pub use error::HandlerError;
pub use poller::{Dispatcher, RunSummary};
