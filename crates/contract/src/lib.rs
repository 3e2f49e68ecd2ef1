//! The request and reply types of the sqs-waiter `enqueue` function.
//!
//! One definition of every field name, shared by the function (which decodes every request into
//! these types and builds every reply from them), the
//! [`sqs-waiter-client`](https://docs.rs/sqs-waiter-client) crate and the `sqs-waiter` CLI.
//! serde and chrono are the only dependencies, so a caller's build never pulls in an AWS SDK.
//!
//! Every request type implements [`Action`], which names the action on the wire and the reply
//! it gets:
//!
//! ```
//! use sqs_waiter_contract::{Action, Job};
//! use std::time::Duration;
//!
//! let job = Job::new("orders", r#"{"order":42}"#)
//!     .delay(Duration::from_secs(3 * 3600))
//!     .id("invoice-42");
//! let payload = serde_json::to_value(job.tagged()).unwrap();
//! assert_eq!(payload["action"], "enqueue");
//! assert_eq!(payload["delay_seconds"], 10_800);
//! # fn assert_reply<A: Action<Reply = sqs_waiter_contract::JobReply>>(_: &A) {}
//! # assert_reply(&job);
//! ```

#![warn(missing_docs)]

mod actions;
mod error;
mod job;
mod poller;
mod priority;
mod repeat;
mod reply;
mod retry;
pub mod rights;
mod steer;

pub use actions::{
    Action, Cancel, CancelMany, EnqueueMany, Get, List, ListParked, ListStatus, Redrive, RedriveAll, RedriveMany,
    RedriveRequest, Replay, Reschedule, Stats, Tagged,
};
pub use error::{ErrorType, Failure};
pub use job::{Job, MessageAttribute, Window};
pub use poller::PollerGroup;
pub use priority::{
    CRITICAL_PRIORITY, DEFAULT_PRIORITY, DEFAULT_WEIGHT, MAX_PRIORITY, MAX_WEIGHT, PRIORITY_ATTRIBUTE, WEIGHT_ATTRIBUTE,
};
pub use repeat::{
    occurrence_of, CatchUp, Repeat, MAX_COUNT, MAX_EVERY_S, MIN_EVERY_S, OCCURRENCE_ATTRIBUTE, OCCURRENCE_SEPARATOR,
};
pub use reply::{
    BatchReply, BatchResult, Bucket, CancelManyReply, FailedStatus, JobReply, JobStatus, ListReply, ParkedError,
    ParkedReply, RedriveAllReply, StatsReply,
};
pub use retry::{
    attempt_of, job_id_of, Backoff, Retry, RetryPolicy, ATTEMPTS_EXHAUSTED, ATTEMPT_ATTRIBUTE, DEFAULT_BASE_S,
    DEFAULT_FACTOR, DEFAULT_MAX_ATTEMPTS, DEFAULT_MAX_S, JOB_ID_ATTRIBUTE, MAX_ATTEMPT, MAX_ATTEMPT_NUMBER, MAX_BASE_S,
    MAX_ERROR_CHARS, MAX_FACTOR, MAX_MAX_S, RESERVED_ATTRIBUTE_PREFIX,
};
pub use steer::{
    OnDuplicate, Pause, PauseReply, Preview, PreviewOccurrence, PreviewReply, QueueInfo, Queues, QueuesReply, Resume,
    Trigger,
};

/// The most jobs one `enqueue` request (or one `job_ids` list) may hold.
pub const MAX_JOBS_PER_REQUEST: usize = 1000;

/// Lambda refuses a synchronous invocation whose request payload is over 6 MB
/// (<https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html>).
pub const MAX_INVOKE_PAYLOAD_BYTES: usize = 6 * 1024 * 1024;

/// The `limit` of one page of `list`, `list_parked`, `cancel_many` or `redrive` (`all`) when the
/// request gives none.
pub const DEFAULT_PAGE_LIMIT: usize = 100;

/// The largest `limit` of one page of `list`, `list_parked`, `cancel_many` or `redrive` (`all`).
pub const MAX_PAGE_LIMIT: usize = 1000;

/// The most tags a job carries (`tags`, docs/contract.md "Tags").
pub const MAX_TAGS: usize = 10;
/// The longest tag key, in characters (a key is at least 1).
pub const MAX_TAG_KEY_CHARS: usize = 128;
/// The longest tag value, in characters.
pub const MAX_TAG_VALUE_CHARS: usize = 256;

/// A job's tags: what `list` and `cancel_many` select it by (`tags`), never sent to SQS.
pub type Tags = std::collections::BTreeMap<String, String>;

/// The request fields for which `null` is refused (`InvalidRequest`) rather than read as absent,
/// with what they must be: a `null` `perform_at` would silently mean "now".
pub const NEVER_NULL: [(&str, &str); 4] = [
    ("delay_seconds", "an integer"),
    ("perform_at", "an RFC 3339 string or epoch seconds"),
    ("job_ids", "an array"),
    ("all", "true or false"),
];
