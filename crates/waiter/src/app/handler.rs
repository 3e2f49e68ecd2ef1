//! The entry point: one invocation, its request parsed and answered within the deadline.

use chrono::{DateTime, Utc};
use futures::future::join_all;
use serde_json::Value;
use tokio::sync::Semaphore;

use crate::job::Job;
use crate::ports::{Clock, JobStore, MessageQueue, PauseGate};
use crate::routing::{aligned_send_instant, route, Route};
use crate::wire::normalise::queue_as_given;
use crate::wire::reply::error_result;
use crate::wire::request::{parse_request, Request};

use super::*;
use crate::error::HandlerError;
use crate::rights::Rights;
use crate::wire::reply::Reply;
use sqs_waiter_contract::{BatchReply, BatchResult};

impl<S: JobStore + Clone, Q: MessageQueue + Clone, C: Clock + Clone> Waiter<S, Q, C> {
    /// Handles one invocation with a default budget (tests, local runs).
    pub async fn handle(&self, event: &Value) -> Result<Value, HandlerError> {
        self.handle_until(event, self.clock.now() + DEFAULT_BUDGET).await
    }

    /// Handles one invocation; the reply as JSON (see `respond`).
    pub async fn handle_until(&self, event: &Value, deadline: DateTime<Utc>) -> Result<Value, HandlerError> {
        self.respond(event, deadline).await.map(|r| r.to_value())
    }

    /// Handles one invocation of the `enqueue` function; work not finished `DEADLINE_MARGIN`
    /// before `deadline` is answered as a retryable error, so the reply always gets out.
    pub async fn respond(&self, event: &Value, deadline: DateTime<Utc>) -> Result<Reply, HandlerError> {
        self.respond_traced(event, deadline, None).await
    }

    /// `respond` for an invocation with this X-Ray trace header (Lambda's `_X_AMZN_TRACE_ID`):
    /// what the request creates keeps it when it is sampled (`Request::traced`).
    pub async fn respond_traced(
        &self,
        event: &Value,
        deadline: DateTime<Utc>,
        trace: Option<&str>,
    ) -> Result<Reply, HandlerError> {
        // Boxed: the handler's future is large, and callers' futures hold this one.
        Box::pin(self.respond_as(event, deadline, trace, &Rights::Full)).await
    }

    /// `respond_traced` for an invocation with `rights`, those of the alias it came through
    /// (`Rights::of_invoked_arn`): an action or a queue outside them is refused, in each job of
    /// a batch, before anything is read, stored or sent.
    pub async fn respond_as(
        &self,
        event: &Value,
        deadline: DateTime<Utc>,
        trace: Option<&str>,
        rights: &Rights,
    ) -> Result<Reply, HandlerError> {
        let now = self.clock.now();
        let cut = deadline - DEADLINE_MARGIN;
        // This request's pause checks, shared by its jobs (ports::pause).
        let gate = &PauseGate::new();
        // The class first, by the action as given (no action is an enqueue), then the queue as
        // given, and again as parsed; a batch's jobs each on their own.
        let action = event.get("action").and_then(Value::as_str).unwrap_or("enqueue");
        rights.check_action(action)?;
        let named = |at: &Value| rights.check_named_queue(action, queue_as_given(at));
        let given_jobs = event.get("jobs").and_then(Value::as_array);
        if given_jobs.is_none() {
            named(event)?;
        }
        let request = parse_request(event, &self.config, now)?.traced(trace);
        rights.check(request.action(), request.queue())?;
        match request {
            Request::Enqueue(job) => {
                let job = (*job)?;
                let precise_at = self.precise_instant(&job);
                self.within(cut, self.enqueue(job, precise_at, gate))
                    .await
                    .unwrap_or_else(|| Err(timed_out()))
                    .map(Reply::from)
            }
            Request::Batch(jobs) => {
                // I/O is bounded by the permits; a precise direct job waits for its phase
                // holding none, so the whole batch waits at most once (under a second).
                let permits = Semaphore::new(BATCH_PARALLELISM);
                let results = join_all(jobs.into_iter().enumerate().map(|(i, job)| {
                    let permits = &permits;
                    // The job as given, refused outside the alias before its parse is answered.
                    let as_given = given_jobs.and_then(|g| g.get(i)).map_or(Ok(()), named);
                    async move {
                        let outcome = match as_given.map_err(HandlerError::from).and_then(|()| {
                            let job = job?;
                            rights.check("enqueue", Some(&job.queue))?;
                            Ok(job)
                        }) {
                            Ok(job) => {
                                let precise_at = self.precise_instant(&job);
                                self.within(cut, async {
                                    if let Some(at) = precise_at {
                                        self.clock.sleep_until(at).await;
                                    }
                                    let _permit = permits.acquire().await;
                                    self.enqueue(job, None, gate).await
                                })
                                .await
                                .unwrap_or_else(|| Err(timed_out()))
                            }
                            Err(e) => Err(e),
                        };
                        outcome
                            .map(|r| BatchResult::Done(Box::new(r)))
                            .unwrap_or_else(|e| error_result(&e))
                    }
                }))
                .await;
                Ok(Reply::Batch(BatchReply { queue: None, results }))
            }
            // Every other action is bounded by the deadline too: a slow or hung backend is
            // answered as a retryable error, not a Lambda timeout.
            Request::Get { queue, job_id } => self
                .bounded(cut, "get", self.get(&queue, &job_id))
                .await
                .map(Reply::from),
            Request::Cancel { queue, job_id } => self
                .bounded(cut, "cancel", self.cancel(&queue, &job_id))
                .await
                .map(Reply::from),
            Request::ListParked { queue, limit, cursor } => self
                .bounded(cut, "list_parked", self.list_parked(&queue, limit, cursor.as_deref()))
                .await
                .map(Reply::Parked),
            Request::Redrive { queue, target } => self.bounded(cut, "redrive", self.redrive(&queue, target)).await,
            Request::Reschedule(r) => self
                .bounded(cut, "reschedule", self.reschedule(*r, cut))
                .await
                .map(Reply::from),
            Request::List(q) => self.bounded(cut, "list", self.list(*q)).await.map(Reply::List),
            Request::CancelMany(r) => self
                .bounded(cut, "cancel_many", self.cancel_many(*r))
                .await
                .map(Reply::CancelMany),
            Request::Stats(q) => self
                .bounded(cut, "stats", self.stats(q))
                .await
                .map(|s| Reply::Stats(Box::new(s))),
            Request::Replay(r) => self.bounded(cut, "replay", self.replay(*r, cut)).await.map(Reply::from),
            Request::Retry(r) => self
                .bounded(cut, "retry", Box::pin(self.retry(*r, cut)))
                .await
                .map(Reply::from),
            Request::Pause(t) => self.bounded(cut, "pause", self.pause(t)).await.map(Reply::Pause),
            Request::Resume(t) => self.bounded(cut, "resume", self.resume(t)).await.map(Reply::Pause),
            // A queue's alias sees, and reads, its own queue only.
            Request::Queues => self
                .bounded(cut, "queues", self.queues(rights.only_queue()))
                .await
                .map(Reply::Queues),
            Request::Preview(q) => self.bounded(cut, "preview", self.preview(q)).await.map(Reply::Preview),
            Request::Trigger { queue, job_id } => self
                .bounded(cut, "trigger", self.trigger(&queue, &job_id, cut))
                .await
                .map(Reply::from),
        }
    }

    /// `f`, or a retryable error if it is not done by `cut`.
    async fn bounded<T>(
        &self,
        cut: DateTime<Utc>,
        action: &'static str,
        f: impl std::future::Future<Output = Result<T, HandlerError>>,
    ) -> Result<T, HandlerError> {
        self.within(cut, f)
            .await
            .unwrap_or_else(|| Err(action_timed_out(action)))
    }

    async fn within<T>(&self, until: DateTime<Utc>, f: impl std::future::Future<Output = T>) -> Option<T> {
        crate::ports::within(&self.clock, until, f).await
    }

    /// With `WAITER_DIRECT_PRECISE`, the instant a direct job should be sent at so that its
    /// `DelaySeconds` is exact.
    pub(super) fn precise_instant(&self, job: &Job) -> Option<DateTime<Utc>> {
        let now = self.clock.now();
        match route(job, now, self.config.direct_max_delay) {
            Route::Direct { delay_seconds: Some(_) } if self.config.direct_precise => {
                Some(aligned_send_instant(job.perform_at, now))
            }
            _ => None,
        }
    }
}
