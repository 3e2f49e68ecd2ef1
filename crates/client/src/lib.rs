//! A typed client for sqs-waiter's `enqueue` function, over [`aws_sdk_lambda::Client::invoke`].
//!
//! sqs-waiter schedules an SQS message for any time in the future (SQS alone delays by at most
//! 900 s). Every action of the function has a request type here (re-exported from
//! [`sqs_waiter_contract`], the types the function itself is tested against) and a method that
//! returns its typed reply. A refused request is an [`Error`] keyed by the function's `errorType`,
//! and says whether sending it again may succeed.
//!
//! ```no_run
//! use chrono::{TimeZone, Utc};
//! use sqs_waiter_client::{Client, Error, Job, JobStatus, MessageAttribute};
//!
//! # async fn run() -> Result<(), Error> {
//! let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
//! let client = Client::new(aws_sdk_lambda::Client::new(&config), "sqs-waiter-enqueue");
//!
//! let job = Job::new("orders", r#"{"order":42}"#)
//!     .at(Utc.with_ymd_and_hms(2026, 12, 1, 9, 0, 0).unwrap())
//!     .id("invoice-42")
//!     .attribute("kind", MessageAttribute::string("invoice"));
//! match client.enqueue(&job).await {
//!     Ok(reply) if reply.duplicate == Some(true) => println!("already scheduled"),
//!     Ok(reply) => assert!(matches!(reply.status, JobStatus::Scheduled | JobStatus::Sent)),
//!     Err(Error::InvalidRequest { field, message }) => eprintln!("fix {field}: {message}"),
//!     Err(e) if e.is_retryable() => { /* send the same job (same id) again later */ }
//!     Err(e) => return Err(e),
//! }
//! # Ok(()) }
//! ```
//!
//! Paging: `list`, `list_parked`, `cancel_many` and `redrive` (all) answer one page and a
//! cursor; send the request again with that cursor until it is `None`.
//!
//! ```no_run
//! # use sqs_waiter_client::{Client, List};
//! # async fn run(client: &Client) -> Result<(), sqs_waiter_client::Error> {
//! let mut request = List { prefix: Some("invoice-".into()), ..List::queue("orders") };
//! loop {
//!     let page = client.list(&request).await?;
//!     for job in &page.jobs {
//!         println!("{} due {:?}", job.job_id, job.perform_at);
//!     }
//!     match page.cursor {
//!         Some(cursor) => request.cursor = Some(cursor),
//!         None => break,
//!     }
//! }
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod error;
#[cfg(feature = "sqs")]
mod received;

use aws_sdk_lambda::primitives::Blob;
use serde_json::Value;

pub use error::Error;
#[cfg(feature = "sqs")]
pub use received::retry_of;
pub use sqs_waiter_contract::*;

/// The jobs of one `enqueue_many` invocation stay below this many bytes of JSON: Lambda's
/// 6 MB, less room for the request envelope and some headroom.
const ENQUEUE_REQUEST_BYTES: usize = MAX_INVOKE_PAYLOAD_BYTES * 5 / 6;

/// Splits `jobs` into requests of at most `MAX_JOBS_PER_REQUEST` jobs and `budget` bytes of
/// JSON each, in order. A job over the budget on its own goes alone (and the function refuses
/// it by its size).
fn requests(jobs: &[Job], budget: usize) -> Result<Vec<&[Job]>, Error> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, job) in jobs.iter().enumerate() {
        let size = serde_json::to_vec(job)
            .map_err(|source| Error::Encode {
                action: EnqueueMany::NAME,
                source,
            })?
            .len()
            + 1;
        if i > start && (i - start == MAX_JOBS_PER_REQUEST || bytes + size > budget) {
            out.push(&jobs[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += size;
    }
    if start < jobs.len() {
        out.push(&jobs[start..]);
    }
    Ok(out)
}

/// Calls one deployment's `enqueue` function.
#[derive(Debug, Clone)]
pub struct Client {
    lambda: aws_sdk_lambda::Client,
    function_name: String,
}

impl Client {
    /// `function_name` is a name, ARN or partial ARN (with a `:alias` if you use one).
    pub fn new(lambda: aws_sdk_lambda::Client, function_name: impl Into<String>) -> Self {
        Self {
            lambda,
            function_name: function_name.into(),
        }
    }

    /// The name (or ARN) of the `enqueue` function it invokes.
    pub fn function_name(&self) -> &str {
        &self.function_name
    }

    /// Sends any request and reads its reply: what every other method does.
    pub async fn call<A: Action>(&self, request: &A) -> Result<A::Reply, Error> {
        let payload = serde_json::to_vec(&request.tagged()).map_err(|source| Error::Encode {
            action: A::NAME,
            source,
        })?;
        let out = self
            .lambda
            .invoke()
            .function_name(&self.function_name)
            .payload(Blob::new(payload))
            .send()
            .await
            .map_err(|source| Error::from_invoke(&self.function_name, source))?;
        let body = out.payload().map(|b| b.as_ref()).unwrap_or_default();
        let value: Value = serde_json::from_slice(body).map_err(|source| Error::Decode {
            action: A::NAME,
            source,
        })?;
        if let Some(e) = Error::from_function_error(out.function_error(), &value) {
            return Err(e);
        }
        serde_json::from_value(value).map_err(|source| Error::Decode {
            action: A::NAME,
            source,
        })
    }

    /// Schedules one job (or sends it at once when it is due within the function's direct
    /// limit).
    pub async fn enqueue(&self, job: &Job) -> Result<JobReply, Error> {
        self.call(job).await
    }

    /// Schedules many jobs, at most 1000 and about 5 MB of them per invocation (Lambda refuses
    /// a request over 6 MB), and gives one result per job in input order: a bad job fails
    /// alone. An `Err` of the whole call means an invocation failed; the jobs of earlier
    /// invocations were then scheduled (send them again with the same ids).
    pub async fn enqueue_many(&self, jobs: &[Job]) -> Result<Vec<Result<JobReply, Failure>>, Error> {
        let mut results = Vec::with_capacity(jobs.len());
        for chunk in requests(jobs, ENQUEUE_REQUEST_BYTES)? {
            let reply = self.call(&EnqueueMany { jobs: chunk.to_vec() }).await?;
            results.extend(reply.into_results());
        }
        Ok(results)
    }

    /// The job as stored, or what history knows of it (`dispatched`, `cancelled`, `expired`),
    /// or `not_found`.
    pub async fn get(&self, queue: &str, job_id: &str) -> Result<JobReply, Error> {
        self.call(&Get {
            queue: queue.into(),
            job_id: job_id.into(),
        })
        .await
    }

    /// `cancelled`, `not_found`, or `dispatching` (a poller may be handing it to SQS).
    pub async fn cancel(&self, queue: &str, job_id: &str) -> Result<JobReply, Error> {
        self.call(&Cancel {
            queue: queue.into(),
            job_id: job_id.into(),
        })
        .await
    }

    /// `rescheduled` (with the new `version`), `not_found`, `conflict` or `dispatching`.
    pub async fn reschedule(&self, request: &Reschedule) -> Result<JobReply, Error> {
        self.call(request).await
    }

    /// A copy of a job that left the table, from what history kept of its message
    /// (`WAITER_HISTORY_BODY=true`): the copy's reply with `replay_of`, or `not_replayable`, or
    /// `conflict` while the job is still stored.
    pub async fn replay(&self, request: &Replay) -> Result<JobReply, Error> {
        self.call(request).await
    }

    /// Hands back a message the consumer failed on: the next attempt at the request's backoff
    /// (`scheduled`, with `attempt`), `duplicate: true` for an attempt handed back already,
    /// `conflict` for an older one (with the current `attempt`), `cancelled` when an operator
    /// cancelled the job, `expired` when the next attempt would arrive after its `expires_at`, or
    /// `parked` when `max_attempts` is reached. Every one of them means: delete the message.
    pub async fn retry_request(&self, request: &Retry) -> Result<JobReply, Error> {
        self.call(request).await
    }

    /// `retry_request` for a message received with the AWS SDK for SQS: its body, attributes,
    /// attempt (`waiter.attempt`) and FIFO group (see [`retry_of`]).
    #[cfg(feature = "sqs")]
    pub async fn retry(
        &self,
        queue: &str,
        job_id: &str,
        message: &aws_sdk_sqs::types::Message,
        policy: &RetryPolicy,
    ) -> Result<JobReply, Error> {
        self.retry_request(&retry_of(queue, job_id, message, policy)).await
    }

    /// One page of jobs in `perform_at` order.
    pub async fn list(&self, request: &List) -> Result<ListReply, Error> {
        self.call(request).await
    }

    /// Cancels the jobs named, or one page of a selection.
    pub async fn cancel_many(&self, request: &CancelMany) -> Result<CancelManyReply, Error> {
        self.call(request).await
    }

    /// One page of the jobs SQS rejected permanently, each with its error.
    pub async fn parked(&self, request: &ListParked) -> Result<ParkedReply, Error> {
        self.call(request).await
    }

    /// Moves one parked job back, due now.
    pub async fn redrive(&self, queue: &str, job_id: &str) -> Result<JobReply, Error> {
        self.call(&Redrive {
            queue: queue.into(),
            job_id: job_id.into(),
        })
        .await
    }

    /// Moves the parked jobs named back, one result per id.
    pub async fn redrive_many(&self, queue: &str, job_ids: &[String]) -> Result<Vec<Result<JobReply, Failure>>, Error> {
        let reply = self
            .call(&RedriveMany {
                queue: queue.into(),
                job_ids: job_ids.to_vec(),
            })
            .await?;
        Ok(reply.into_results())
    }

    /// Moves one page of the parked partition back.
    pub async fn redrive_all(&self, request: &RedriveAll) -> Result<RedriveAllReply, Error> {
        self.call(request).await
    }

    /// Counts and a due-time histogram.
    pub async fn stats(&self, request: &Stats) -> Result<StatsReply, Error> {
        self.call(request).await
    }

    /// Pauses a queue ([`Pause::queue`]) or one job or series ([`Pause::job`]). A queue's
    /// pause answers once no send admitted before it can start any more.
    pub async fn pause(&self, request: &Pause) -> Result<PauseReply, Error> {
        self.call(request).await
    }

    /// Ends a pause: what fell due meanwhile goes out as overdue jobs do.
    pub async fn resume(&self, request: &Resume) -> Result<PauseReply, Error> {
        self.call(request).await
    }

    /// Runs a stored job now, or sends one extra occurrence of a series now.
    pub async fn trigger(&self, queue: &str, job_id: &str) -> Result<JobReply, Error> {
        self.call(&Trigger {
            queue: queue.into(),
            job_id: job_id.into(),
        })
        .await
    }

    /// The next occurrences of a schedule, or of a stored series.
    pub async fn preview(&self, request: &Preview) -> Result<PreviewReply, Error> {
        self.call(request).await
    }

    /// The queues the function serves, with their pause state.
    pub async fn queues(&self) -> Result<QueuesReply, Error> {
        self.call(&Queues {}).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jobs(n: usize, body_bytes: usize) -> Vec<Job> {
        (0..n)
            .map(|i| Job::new("orders", "x".repeat(body_bytes)).id(format!("job-{i}")))
            .collect()
    }

    #[test]
    fn requests_split_by_count_and_by_bytes_and_keep_order() {
        // Small jobs: 1000 a request.
        let small = jobs(2_500, 10);
        let sizes: Vec<usize> = requests(&small, ENQUEUE_REQUEST_BYTES)
            .unwrap()
            .iter()
            .map(|r| r.len())
            .collect();
        assert_eq!(sizes, [1000, 1000, 500]);
        // 7 KB bodies: 1000 of them (about 7 MB) would be refused by Lambda.
        let big = jobs(1_000, 7 * 1024);
        let chunks = requests(&big, ENQUEUE_REQUEST_BYTES).unwrap();
        assert!(chunks.len() >= 2, "{} requests", chunks.len());
        for c in &chunks {
            let payload = serde_json::to_vec(&EnqueueMany { jobs: c.to_vec() }.tagged()).unwrap();
            assert!(
                payload.len() < MAX_INVOKE_PAYLOAD_BYTES,
                "a request of {} bytes",
                payload.len()
            );
        }
        let ids: Vec<&str> = chunks
            .iter()
            .flat_map(|c| c.iter())
            .map(|j| j.job_id.as_deref().unwrap())
            .collect();
        let want: Vec<String> = (0..1_000).map(|i| format!("job-{i}")).collect();
        assert_eq!(ids, want, "every job once, in order");
    }

    /// README.md's Rust snippet is this crate's first example (without its hidden lines), which
    /// the doc tests compile.
    #[test]
    fn the_readme_shows_the_compiled_example() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
        let lib = read("crates/client/src/lib.rs");
        let example: String = lib
            .split("//! ```no_run\n")
            .nth(1)
            .and_then(|rest| rest.split("//! ```\n").next())
            .expect("the crate's first example")
            .lines()
            .map(|l| l.strip_prefix("//! ").unwrap_or(l.trim_start_matches("//!")))
            .filter(|l| !(l.starts_with("# ") || *l == "#"))
            .map(|l| format!("{l}\n"))
            .collect();
        let readme = read("README.md");
        let section = readme
            .split("### From Rust, Python or TypeScript")
            .nth(1)
            .expect("README's section on the clients");
        let snippet = section
            .split("```rust\n")
            .nth(1)
            .and_then(|rest| rest.split("```\n").next())
            .expect("its Rust snippet");
        assert_eq!(
            snippet, example,
            "README.md's Rust snippet differs from crates/client's first example"
        );
    }

    #[test]
    fn a_job_over_the_budget_goes_alone() {
        let mut list = jobs(3, 10);
        list.insert(1, Job::new("orders", "y".repeat(300)));
        let sizes: Vec<usize> = requests(&list, 200).unwrap().iter().map(|r| r.len()).collect();
        assert_eq!(sizes, [1, 1, 2]);
        assert!(requests(&[], ENQUEUE_REQUEST_BYTES).unwrap().is_empty());
    }
}
