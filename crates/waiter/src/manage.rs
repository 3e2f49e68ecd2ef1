//! Managing stored jobs: `reschedule` and `list` (README "Managing jobs").

use chrono::{DateTime, TimeDelta, Utc};
use futures::future::try_join_all;
use futures::StreamExt;
use serde_json::{json, Value};
use tracing::info;

use crate::config::{Config, QueueName};
use crate::cursor;
use crate::dispatch::Dispatcher;
use crate::error::{InvalidRequest, PortError};
use crate::fields::{
    check_expiry, check_message_size, kind, parse_job_id, parse_time_value, take_expires_at, take_job_id,
    take_message_attributes, take_message_body, take_page, take_queue, take_when, take_windows, Fields,
};
use crate::job::Attributes;
use crate::limits::DDB_MAX_ITEM_BYTES;
use crate::ports::{Clock, JobStore, MessageQueue, Partition, ReplaceOutcome, StoredJob};
use crate::reply::describe;
use crate::service::{HandlerError, Waiter};
use crate::time::{format_epoch, format_rfc3339, max_time, parse_epoch_decimal};
use crate::windows::Windows;

/// Read-modify-write attempts of one `reschedule` when the job changes under it.
const RESCHEDULE_ATTEMPTS: usize = 3;
/// The longest a `reschedule` spends handing a job it moved near over to SQS itself.
const HANDOVER_BUDGET: TimeDelta = TimeDelta::seconds(10);
/// Items one `list` call reads per partition beyond the page it returns (prefix filters skip
/// items), so a call does bounded work; a group of jobs sharing one `perform_at` in a shard is
/// always read whole, so that the cursor can point between groups.
const LIST_SCAN_BUDGET: usize = 2_000;
/// The reply of one `list` call stays below this many bytes (Lambda allows 6 MB).
const LIST_REPLY_BUDGET: usize = 4 * 1024 * 1024;
/// Above every character a job id may hold: a position after every id at one instant.
const AFTER_EVERY_ID: &str = "~";

/// `{"action": "reschedule", ...}`.
#[derive(Debug, PartialEq)]
pub struct Reschedule {
    pub queue: QueueName,
    pub job_id: String,
    pub perform_at: DateTime<Utc>,
    pub message_body: Option<String>,
    pub message_attributes: Option<Attributes>,
    /// `Some(None)`: remove the expiry.
    pub expires_at: Option<Option<DateTime<Utc>>>,
    /// `Some(None)`: remove the windows.
    pub windows: Option<Option<Windows>>,
    pub if_version: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListStatus {
    Scheduled,
    Parked,
}

impl ListStatus {
    fn as_str(self) -> &'static str {
        match self {
            Self::Scheduled => "scheduled",
            Self::Parked => "parked",
        }
    }
}

/// `{"action": "list", ...}`.
#[derive(Debug, PartialEq)]
pub struct ListQuery {
    /// The action the listing serves (`list`, `cancel_many`): a cursor continues only its own.
    pub action: &'static str,
    pub queue: QueueName,
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    pub prefix: Option<String>,
    pub status: ListStatus,
    pub limit: usize,
    pub cursor: Option<String>,
    pub with_body: bool,
}

pub(crate) fn parse_reschedule(
    mut f: Fields<'_>,
    config: &Config,
    now: DateTime<Utc>,
) -> Result<Reschedule, InvalidRequest> {
    f.take("action", None)?;
    let queue = take_queue(&mut f, config)?;
    let job_id = take_job_id(&mut f)?.ok_or_else(|| InvalidRequest::new("job_id", "is required"))?;
    let (_, perform_at) =
        take_when(&mut f, now)?.ok_or_else(|| InvalidRequest::new("perform_at", "is required (or delay_seconds)"))?;
    let message_body = take_message_body(&mut f)?;
    let message_attributes = take_message_attributes(&mut f)?;
    let windows = take_windows(&mut f)?;
    let expires_at = match take_expires_at(&mut f, now)? {
        Some((name, Some(t))) => {
            // Checked again against the windows the job ends up with.
            check_expiry(&name, t, perform_at)?;
            Some(Some(t))
        }
        Some((_, None)) => Some(None),
        None => None,
    };
    let if_version = match f.take("if_version", None)? {
        None | Some((_, Value::Null)) => None,
        Some((name, v)) => match v.as_u64() {
            Some(n) if n >= 1 => Some(n),
            _ => {
                return Err(InvalidRequest::new(
                    name,
                    format!("must be a version number (a whole number from 1), got {}", kind(&v)),
                ))
            }
        },
    };
    f.finish()?;
    Ok(Reschedule {
        queue,
        job_id,
        perform_at,
        message_body,
        message_attributes,
        expires_at,
        windows,
        if_version,
    })
}

pub(crate) fn parse_list(mut f: Fields<'_>, config: &Config) -> Result<ListQuery, InvalidRequest> {
    f.take("action", None)?;
    let queue = take_queue(&mut f, config)?;
    let query = parse_selection(&mut f, queue, "list")?;
    f.finish()?;
    Ok(query)
}

/// The selection fields `list` and `cancel_many` share.
pub(crate) fn parse_selection(
    f: &mut Fields<'_>,
    queue: QueueName,
    action: &'static str,
) -> Result<ListQuery, InvalidRequest> {
    let mut time = |name: &'static str| -> Result<Option<DateTime<Utc>>, InvalidRequest> {
        match f.take(name, None)? {
            None | Some((_, Value::Null)) => Ok(None),
            Some((field, v)) => parse_time_value(&field, &v).map(Some),
        }
    };
    let from = time("from")?;
    let to = time("to")?;
    if let (Some(a), Some(b)) = (from, to) {
        if a > b {
            return Err(InvalidRequest::new("from", "is after to"));
        }
    }
    let prefix = match f.take("prefix", None)? {
        None | Some((_, Value::Null)) => None,
        Some((name, v)) => Some(parse_job_id(&name, &v)?),
    };
    let status = match f.take("status", None)? {
        None | Some((_, Value::Null)) => ListStatus::Scheduled,
        Some((_, Value::String(s))) if s == "scheduled" => ListStatus::Scheduled,
        Some((_, Value::String(s))) if s == "parked" => ListStatus::Parked,
        Some((name, _)) => return Err(InvalidRequest::new(name, "must be \"scheduled\" or \"parked\"")),
    };
    let with_body = match f.take("with_body", None)? {
        None | Some((_, Value::Null)) => false,
        Some((_, Value::Bool(b))) => b,
        Some((name, other)) => {
            return Err(InvalidRequest::new(
                name,
                format!("must be true or false, got {}", kind(&other)),
            ))
        }
    };
    let (limit, cursor) = take_page(f)?;
    Ok(ListQuery {
        action,
        queue,
        from,
        to,
        prefix,
        status,
        limit,
        cursor,
        with_body,
    })
}

/// A place in a listing: jobs are ordered by `perform_at`, then `job_id`.
pub(crate) type Position = (DateTime<Utc>, String);

pub(crate) fn position(j: &StoredJob) -> Position {
    (j.job.perform_at, j.job.job_id.clone())
}

impl ListQuery {
    /// The cursor's binding: a cursor continues only the listing it was made for.
    fn listing(&self) -> String {
        let t = |t: Option<DateTime<Utc>>| t.map(format_epoch).unwrap_or_default();
        format!(
            "{}/{}/{}/{}/{}",
            self.action,
            self.status.as_str(),
            t(self.from),
            t(self.to),
            self.prefix.as_deref().unwrap_or_default()
        )
    }

    fn after(&self) -> Result<Option<Position>, InvalidRequest> {
        let Some(c) = &self.cursor else { return Ok(None) };
        let after = cursor::decode(&self.queue, &self.listing(), c)?;
        let corrupted = || InvalidRequest::new("cursor", "is not a cursor this function returned (corrupted)");
        let (at, id) = after.split_once('|').ok_or_else(corrupted)?;
        let at = parse_epoch_decimal(at).ok_or_else(corrupted)?;
        Ok(Some((at, id.to_owned())))
    }

    pub(crate) fn cursor_at(&self, p: &Position) -> String {
        cursor::encode(&self.queue, &self.listing(), &format!("{}|{}", format_epoch(p.0), p.1))
    }
}

/// What one partition contributed to a `list` page.
struct PartitionRead {
    jobs: Vec<StoredJob>,
    /// Every job of the partition up to this position has been read; `None`: all of them.
    complete_through: Option<Position>,
}

impl<S, Q, C> Waiter<S, Q, C>
where
    S: JobStore + Clone,
    Q: MessageQueue + Clone,
    C: Clock + Clone,
{
    /// Moves a stored job (and changes what it carries) in one conditional write, never while
    /// a poller may be handing it to SQS.
    pub(crate) async fn reschedule(&self, r: Reschedule, cut: DateTime<Utc>) -> Result<Value, HandlerError> {
        let queue = &r.queue;
        let partitions = self.candidate_partitions(queue, &r.job_id).await?;
        let status = |status: &str| json!({"status": status, "queue": queue.as_str(), "job_id": r.job_id});
        for _ in 0..RESCHEDULE_ATTEMPTS {
            let Some(current) = self.store.find(queue, &r.job_id, &partitions).await? else {
                if self.store.find(queue, &r.job_id, &[Partition::Parked]).await?.is_some() {
                    return Err(InvalidRequest::new(
                        "job_id",
                        "names a parked job: redrive it (it is then due now) before rescheduling it",
                    )
                    .into());
                }
                return Ok(status("not_found"));
            };
            if r.if_version.is_some_and(|v| v != current.version) {
                let mut reply = status("conflict");
                reply["version"] = json!(current.version);
                return Ok(reply);
            }
            let next = self.next_version(&r, &current)?;
            match self.store.replace(&current, &next).await? {
                ReplaceOutcome::Replaced => {
                    info!(queue = %queue, job_id = %r.job_id, version = next.version, "rescheduled");
                    self.hand_over_if_near(&next, cut).await;
                    let mut reply = status("rescheduled");
                    reply["perform_at"] = json!(format_rfc3339(next.job.perform_at));
                    reply["version"] = json!(next.version);
                    return Ok(reply);
                }
                ReplaceOutcome::Dispatching => return Ok(status("dispatching")),
                // Changed since it was read: read again (an `if_version` then answers conflict).
                ReplaceOutcome::Changed => {}
            }
        }
        Err(PortError::Throttled {
            operation: "reschedule",
            source: "the job changed under every attempt; retry".into(),
        }
        .into())
    }

    fn next_version(&self, r: &Reschedule, current: &StoredJob) -> Result<StoredJob, InvalidRequest> {
        let mut next = current.clone();
        let job = &mut next.job;
        if let Some(windows) = &r.windows {
            job.windows = windows.clone();
        }
        job.perform_at = job.windows.as_ref().map_or(r.perform_at, |w| w.next_open(r.perform_at));
        if let Some(body) = &r.message_body {
            job.message_body = body.clone();
        }
        if let Some(attributes) = &r.message_attributes {
            job.message_attributes = attributes.clone();
        }
        if let Some(expires_at) = r.expires_at {
            job.expires_at = expires_at;
        }
        if let Some(e) = job.expires_at {
            check_expiry("expires_at", e, job.perform_at)?;
        }
        check_message_size(&job.message_body, &job.message_attributes)?;
        next.version = current.version + 1;
        let bytes = self.store.item_bytes(&next);
        if bytes > DDB_MAX_ITEM_BYTES {
            return Err(InvalidRequest::new(
                "message_body",
                format!("the stored item would be {bytes} bytes; DynamoDB allows at most {DDB_MAX_ITEM_BYTES}"),
            ));
        }
        Ok(next)
    }

    /// A job moved to within the lookahead may fall between two poller runs: work its shard
    /// now, as a poller run would (same lease, same order), so it is sent on time. If a poller
    /// holds the shard, that run or the next one sends it.
    async fn hand_over_if_near(&self, job: &StoredJob, cut: DateTime<Utc>) {
        let now = self.clock.now();
        let (Partition::Shard(shard), false) = (&job.partition, job.job.queue.is_fifo()) else {
            return;
        };
        if self.config.lookahead == 0 || job.job.perform_at > now + TimeDelta::seconds(i64::from(self.config.lookahead))
        {
            return;
        }
        let dispatcher = Dispatcher::new(
            self.config.clone(),
            self.store.clone(),
            self.queue.clone(),
            self.clock.clone(),
        );
        let summary = dispatcher
            .run_shard(&job.job.queue, *shard, cut.min(now + HANDOVER_BUDGET))
            .await;
        info!(
            queue = %job.job.queue,
            shard,
            dispatched = summary.dispatched,
            busy = summary.busy_partitions > 0,
            errors = summary.errors.len(),
            "handed over the shard of a job moved near"
        );
    }

    /// The selected jobs after the query's cursor that every shard has been read through, in
    /// `perform_at` (then `job_id`) order, and that position (`None`: the end).
    pub(crate) async fn select(&self, q: &ListQuery) -> Result<(Vec<StoredJob>, Option<Position>), HandlerError> {
        let after = q.after()?;
        let partitions: Vec<Partition> = match q.status {
            ListStatus::Parked => vec![Partition::Parked],
            ListStatus::Scheduled => {
                let shards = self
                    .shard_counts(&q.queue)
                    .await?
                    .into_iter()
                    .max()
                    .unwrap_or(0)
                    .max(self.config.shards);
                (0..shards).map(Partition::Shard).collect()
            }
        };
        let from = q
            .from
            .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
            .max(after.as_ref().map_or(DateTime::<Utc>::UNIX_EPOCH, |a| a.0));
        let to = q.to.unwrap_or_else(max_time);
        let reads = try_join_all(
            partitions
                .into_iter()
                .map(|p| self.read_partition(q, p, from, to, after.as_ref())),
        )
        .await?;
        // Only what every partition has read through is certain to be in order.
        let bound = reads.iter().filter_map(|r| r.complete_through.clone()).min();
        let mut jobs: Vec<StoredJob> = reads
            .into_iter()
            .flat_map(|r| r.jobs)
            .filter(|j| bound.as_ref().is_none_or(|b| position(j) <= *b))
            .collect();
        jobs.sort_by_key(position);
        Ok((jobs, bound))
    }

    /// One page of the queue's jobs in `perform_at` order across every shard.
    pub(crate) async fn list(&self, q: ListQuery) -> Result<Value, HandlerError> {
        let (jobs, bound) = self.select(&q).await?;
        let mut page = Vec::new();
        let mut bytes = 0;
        let mut last = None;
        for j in &jobs {
            let view = list_view(j, q.with_body);
            let size = view.to_string().len() + 1;
            if page.len() == q.limit || (bytes + size > LIST_REPLY_BUDGET && !page.is_empty()) {
                break;
            }
            bytes += size;
            page.push(view);
            last = Some(position(j));
        }
        // Nothing left among what was read: continue after what every partition read.
        let next = if page.len() < jobs.len() { last } else { bound };
        Ok(json!({
            "queue": q.queue.as_str(),
            "jobs": page,
            "cursor": next.map(|p| q.cursor_at(&p)),
        }))
    }

    /// A partition's jobs after `after`, enough for a page, stopping only between groups of
    /// jobs that share a `perform_at`.
    async fn read_partition(
        &self,
        q: &ListQuery,
        partition: Partition,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        after: Option<&Position>,
    ) -> Result<PartitionRead, PortError> {
        let mut pages = self.store.by_time(&q.queue, partition, from, to);
        let mut jobs = Vec::new();
        let mut read = 0usize;
        let mut last_at: Option<DateTime<Utc>> = None;
        while let Some(page) = pages.next().await {
            for j in page? {
                if last_at.is_some_and(|t| j.job.perform_at != t) && (jobs.len() >= q.limit || read >= LIST_SCAN_BUDGET)
                {
                    let through = last_at.map(|t| (t, AFTER_EVERY_ID.to_owned()));
                    return Ok(PartitionRead {
                        jobs,
                        complete_through: through,
                    });
                }
                read += 1;
                last_at = Some(j.job.perform_at);
                let keep = after.is_none_or(|a| position(&j) > *a)
                    && q.prefix.as_deref().is_none_or(|p| j.job.job_id.starts_with(p));
                if keep {
                    jobs.push(j);
                }
            }
        }
        Ok(PartitionRead {
            jobs,
            complete_through: None,
        })
    }
}

/// A job as `list` shows it: `get`'s view, without the message unless asked for.
fn list_view(j: &StoredJob, with_body: bool) -> Value {
    let mut v = describe(j);
    if !with_body {
        if let Some(o) = v.as_object_mut() {
            o.remove("message_body");
            o.remove("message_attributes");
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::Dispatcher;
    use crate::ports::Lease;
    use crate::testing::*;
    use crate::time::format_rfc3339;

    type TestWaiter = Waiter<MemStore, FakeQueue, FakeClock>;

    fn waiter_with(store: MemStore, extra: &[(&str, &str)]) -> (TestWaiter, FakeQueue, FakeClock) {
        let clock = FakeClock::default();
        let queue = FakeQueue::new(clock.clone());
        let w = Waiter::new(
            config("orders,billing.fifo,other", extra),
            store,
            queue.clone(),
            clock.clone(),
        );
        (w, queue, clock)
    }

    async fn call(w: &TestWaiter, v: Value) -> Value {
        w.handle(&v).await.unwrap()
    }

    async fn refused(w: &TestWaiter, v: Value) -> InvalidRequest {
        match w.handle(&v).await {
            Err(HandlerError::Invalid(e)) => e,
            other => panic!("expected InvalidRequest for {v}, got {other:?}"),
        }
    }

    async fn schedule(w: &TestWaiter, id: &str, delay_s: u64) {
        let r = call(
            w,
            json!({"queue": "orders", "job_id": id, "message_body": format!("body-{id}"), "delay_seconds": delay_s}),
        )
        .await;
        assert_eq!(r["status"], "scheduled", "{r}");
    }

    async fn get(w: &TestWaiter, id: &str) -> Value {
        call(w, json!({"action": "get", "queue": "orders", "job_id": id})).await
    }

    #[tokio::test(start_paused = true)]
    async fn reschedule_moves_a_job_keeps_what_is_not_given_and_counts_versions() {
        let (w, queue, clock) = waiter_with(MemStore::default(), &[]);
        call(
            &w,
            json!({"queue": "orders", "job_id": "j", "message_body": "b1", "delay_seconds": 86_400,
                   "expires_at": format_rfc3339(clock.now() + TimeDelta::days(30))}),
        )
        .await;
        let week = clock.now() + TimeDelta::days(7);
        let r = call(
            &w,
            json!({"action": "reschedule", "queue": "orders", "job_id": "j", "perform_at": format_rfc3339(week)}),
        )
        .await;
        assert_eq!(r["status"], "rescheduled", "{r}");
        assert_eq!(r["version"], 2);
        assert_eq!(r["perform_at"], format_rfc3339(week));
        let g = get(&w, "j").await;
        assert_eq!(g["perform_at"], format_rfc3339(week));
        assert_eq!(g["message_body"], "b1", "kept");
        assert_eq!(g["version"], 2);
        assert!(g["expires_at"].is_string(), "kept: {g}");

        let r = call(
            &w,
            json!({"action": "reschedule", "queue": "orders", "job_id": "j", "delay_seconds": 7200,
                   "message_body": "b2", "message_attributes": {"k": {"data_type": "String", "string_value": "v"}},
                   "expires_at": null, "if_version": 2}),
        )
        .await;
        assert_eq!(r["status"], "rescheduled", "{r}");
        assert_eq!(r["version"], 3);
        let g = get(&w, "j").await;
        assert_eq!(g["message_body"], "b2");
        assert_eq!(g["message_attributes"]["k"]["string_value"], "v");
        assert!(g.get("expires_at").is_none(), "cleared: {g}");
        assert!(queue.sent().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn reschedule_answers_not_found_conflict_and_dispatching_and_then_changes_nothing() {
        let store = MemStore::default();
        let (w, _, clock) = waiter_with(store.clone(), &[("WAITER_SHARDS", "1")]);
        let r = call(
            &w,
            json!({"action": "reschedule", "queue": "orders", "job_id": "nope", "delay_seconds": 5000}),
        )
        .await;
        assert_eq!(r["status"], "not_found");

        schedule(&w, "j", 5000).await;
        let before = get(&w, "j").await;
        let r = call(
            &w,
            json!({"action": "reschedule", "queue": "orders", "job_id": "j", "delay_seconds": 9000, "if_version": 7}),
        )
        .await;
        assert_eq!(r["status"], "conflict");
        assert_eq!(r["version"], 1, "the current version");
        assert_eq!(get(&w, "j").await, before);

        // A poller's lease covers the job: it may be in SQS already.
        store.state.lock().unwrap().leases.insert(
            (QueueName::parse("orders").unwrap(), 0),
            Lease {
                owner: "poller".into(),
                until: clock.now() + TimeDelta::seconds(60),
                horizon: clock.now() + TimeDelta::seconds(6000),
            },
        );
        let r = call(
            &w,
            json!({"action": "reschedule", "queue": "orders", "job_id": "j", "delay_seconds": 9000}),
        )
        .await;
        assert_eq!(r["status"], "dispatching");
        assert_eq!(get(&w, "j").await, before);
    }

    #[tokio::test(start_paused = true)]
    async fn bad_reschedules_name_the_field_and_change_nothing() {
        let (w, _, clock) = waiter_with(MemStore::default(), &[]);
        call(
            &w,
            json!({"queue": "orders", "job_id": "j", "message_body": "b", "delay_seconds": 5000,
                   "expires_at": format_rfc3339(clock.now() + TimeDelta::hours(3))}),
        )
        .await;
        let before = get(&w, "j").await;
        let cases = [
            (
                json!({"action": "reschedule", "queue": "orders", "job_id": "j"}),
                "perform_at",
            ),
            (
                json!({"action": "reschedule", "queue": "orders", "job_id": "j", "delay_seconds": 1, "perform_at": 5}),
                "delay_seconds",
            ),
            (
                json!({"action": "reschedule", "queue": "orders", "delay_seconds": 1}),
                "job_id",
            ),
            (
                json!({"action": "reschedule", "queue": "orders", "job_id": "j", "delay_seconds": 1, "if_version": 0}),
                "if_version",
            ),
            (
                json!({"action": "reschedule", "queue": "orders", "job_id": "j", "delay_seconds": 1, "if_version": "2"}),
                "if_version",
            ),
            (
                json!({"action": "reschedule", "queue": "orders", "job_id": "j", "delay_seconds": 1, "message_body": ""}),
                "message_body",
            ),
            (
                json!({"action": "reschedule", "queue": "orders", "job_id": "j", "delay_seconds": 1, "colour": "red"}),
                "colour",
            ),
            // The kept expires_at (in 3 h) is before the new time.
            (
                json!({"action": "reschedule", "queue": "orders", "job_id": "j", "delay_seconds": 86_400}),
                "expires_at",
            ),
            (
                json!({"action": "reschedule", "queue": "nope", "job_id": "j", "delay_seconds": 1}),
                "queue",
            ),
        ];
        for (request, field) in cases {
            let e = refused(&w, request.clone()).await;
            assert_eq!(e.field, field, "{request}: {e}");
        }
        assert_eq!(get(&w, "j").await, before);
    }

    #[tokio::test(start_paused = true)]
    async fn a_job_moved_near_is_handed_over_at_once_and_one_moved_far_waits() {
        let store = MemStore::default();
        let (w, queue, clock) = waiter_with(store.clone(), &[("WAITER_LOOKAHEAD", "120")]);
        schedule(&w, "near", 7 * 86_400).await;
        let due = clock.now() + TimeDelta::seconds(30);
        let r = call(
            &w,
            json!({"action": "reschedule", "queue": "orders", "job_id": "near", "perform_at": format_rfc3339(due)}),
        )
        .await;
        assert_eq!(r["status"], "rescheduled");
        let sent = queue.sent();
        assert_eq!(sent.len(), 1, "handed over without waiting for a poller run");
        let arrival = sent[0].at + TimeDelta::seconds(i64::from(sent[0].message.delay_seconds.unwrap()));
        assert!(
            arrival >= due && arrival - due < TimeDelta::seconds(1),
            "{arrival} vs {due}"
        );
        assert_eq!(store.len(), 0, "removed once SQS accepted it");

        // From "in 30 s" to next week: stored with the new time; a poller run at the old time
        // sends nothing, even while the index still shows the old item.
        let lagging = MemStore {
            index_lag: std::time::Duration::from_secs(5),
            ..MemStore::default()
        };
        let (w, queue, clock) = waiter_with(
            lagging.clone(),
            &[("WAITER_LOOKAHEAD", "0"), ("WAITER_DIRECT_MAX_DELAY", "0")],
        );
        schedule(&w, "far", 30).await;
        tokio::time::sleep(std::time::Duration::from_secs(6)).await;
        let r = call(
            &w,
            json!({"action": "reschedule", "queue": "orders", "job_id": "far", "delay_seconds": 7 * 86_400}),
        )
        .await;
        assert_eq!(r["status"], "rescheduled");
        tokio::time::sleep(std::time::Duration::from_secs(30)).await;
        let d = Dispatcher::new(w.config.clone(), lagging.clone(), queue.clone(), clock.clone());
        let s = d.run(clock.now() + TimeDelta::seconds(30)).await;
        assert_eq!(s.dispatched, 0, "{s:?}");
        assert!(queue.sent().is_empty(), "the old version was sent");
        assert_eq!(get(&w, "far").await["version"], 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_fifo_job_moved_near_stays_stored_for_the_poller() {
        let store = MemStore::default();
        let (w, queue, clock) = waiter_with(store.clone(), &[]);
        let r = call(
            &w,
            json!({"queue": "billing.fifo", "job_id": "f", "message_body": "b", "message_group_id": "g", "delay_seconds": 5000}),
        )
        .await;
        assert_eq!(r["status"], "scheduled");
        let r = call(
            &w,
            json!({"action": "reschedule", "queue": "billing.fifo", "job_id": "f", "delay_seconds": 30}),
        )
        .await;
        assert_eq!(r["status"], "rescheduled");
        assert!(queue.sent().is_empty(), "FIFO takes no delay: it waits to be due");
        assert_eq!(store.len(), 1);
        let _ = clock;
    }

    #[tokio::test(start_paused = true)]
    async fn a_parked_job_is_redriven_not_rescheduled() {
        let store = MemStore::default();
        let (w, _, clock) = waiter_with(store.clone(), &[]);
        schedule(&w, "p", 5000).await;
        let q = QueueName::parse("orders").unwrap();
        let stored = store
            .find(&q, "p", &[Partition::Shard(crate::routing::shard_for("p", 4))])
            .await
            .unwrap()
            .unwrap();
        store
            .park(
                &stored,
                &crate::ports::ParkInfo {
                    parked_at: clock.now(),
                    code: "InvalidParameterValue".into(),
                    message: "bad".into(),
                },
            )
            .await
            .unwrap();
        let e = refused(
            &w,
            json!({"action": "reschedule", "queue": "orders", "job_id": "p", "delay_seconds": 9000}),
        )
        .await;
        assert_eq!(e.field, "job_id");
        assert!(e.to_string().contains("redrive"), "{e}");
    }

    /// Every page of a listing, following cursors until `null`.
    async fn list_all(w: &TestWaiter, mut request: Value) -> Vec<Value> {
        let mut all = Vec::new();
        for _ in 0..10_000 {
            let r = call(w, request.clone()).await;
            all.extend(r["jobs"].as_array().unwrap().iter().cloned());
            match &r["cursor"] {
                Value::Null => return all,
                c => request["cursor"] = c.clone(),
            }
        }
        panic!("the listing never ended");
    }

    fn ids(jobs: &[Value]) -> Vec<String> {
        jobs.iter().map(|j| j["job_id"].as_str().unwrap().to_owned()).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn list_pages_every_shard_in_time_order_with_ties_and_filters() {
        let (w, _, clock) = waiter_with(MemStore::default(), &[("WAITER_SHARDS", "4")]);
        // 60 jobs over 6 instants (ties of 10, spread over the shards), ids not in time order.
        let base = clock.now() + TimeDelta::hours(2);
        let mut expected = Vec::new();
        for i in 0..60u32 {
            let id = format!("{}-{:02}", if i % 3 == 0 { "a" } else { "b" }, (i * 37) % 60);
            let at = base + TimeDelta::minutes(i64::from(i % 6));
            call(
                &w,
                json!({"queue": "orders", "job_id": id, "message_body": "x", "perform_at": format_rfc3339(at)}),
            )
            .await;
            expected.push((at, id));
        }
        expected.sort();
        let want: Vec<String> = expected.iter().map(|(_, id)| id.clone()).collect();
        for limit in [1, 7, 10, 1000] {
            let got = list_all(&w, json!({"action": "list", "queue": "orders", "limit": limit})).await;
            assert_eq!(ids(&got), want, "limit {limit}");
        }
        let first = call(&w, json!({"action": "list", "queue": "orders", "limit": 3})).await;
        let j = &first["jobs"][0];
        assert_eq!(j["status"], "scheduled");
        assert_eq!(j["version"], 1);
        assert!(j.get("message_body").is_none(), "no body unless asked: {j}");
        let with = call(
            &w,
            json!({"action": "list", "queue": "orders", "limit": 3, "with_body": true}),
        )
        .await;
        assert_eq!(with["jobs"][0]["message_body"], "x");

        let a = list_all(
            &w,
            json!({"action": "list", "queue": "orders", "prefix": "a-", "limit": 4}),
        )
        .await;
        let want_a: Vec<String> = want.iter().filter(|id| id.starts_with("a-")).cloned().collect();
        assert_eq!(ids(&a), want_a);

        let from = base + TimeDelta::minutes(2);
        let to = base + TimeDelta::minutes(3);
        let window = list_all(
            &w,
            json!({"action": "list", "queue": "orders", "from": format_rfc3339(from), "to": format_rfc3339(to), "limit": 6}),
        )
        .await;
        let want_w: Vec<String> = expected
            .iter()
            .filter(|(at, _)| (from..=to).contains(at))
            .map(|(_, id)| id.clone())
            .collect();
        assert_eq!(ids(&window), want_w);
        assert_eq!(want_w.len(), 20);

        let parked = call(&w, json!({"action": "list", "queue": "orders", "status": "parked"})).await;
        assert_eq!(parked["jobs"], json!([]));
        assert_eq!(parked["cursor"], Value::Null);
    }

    #[tokio::test(start_paused = true)]
    async fn a_sparse_prefix_makes_progress_with_bounded_reads_and_misses_nothing() {
        let (w, _, clock) = waiter_with(MemStore::default(), &[("WAITER_SHARDS", "2")]);
        let base = clock.now() + TimeDelta::hours(2);
        let in_shard = |stem: &str, shard: u32| {
            (0..)
                .map(|i| format!("{stem}{i}"))
                .find(|id| crate::routing::shard_for(id, 2) == shard)
                .unwrap()
        };
        let put = |id: String, second: i64| {
            let at = base + TimeDelta::seconds(second);
            let w = &w;
            async move {
                let r = call(
                    w,
                    json!({"queue": "orders", "job_id": id, "message_body": "x", "perform_at": format_rfc3339(at)}),
                )
                .await;
                assert_eq!(r["status"], "scheduled");
            }
        };
        // Shard 0 is deep (more than a call reads), shard 1 holds only a few jobs: a call must
        // not answer past what it read of shard 0.
        let deep = (LIST_SCAN_BUDGET * 2 + 10) as i64;
        let mut hay = 0;
        for i in 0.. {
            if hay == deep {
                break;
            }
            let id = format!("hay-{i:05}");
            if crate::routing::shard_for(&id, 2) == 0 {
                put(id, hay).await;
                hay += 1;
            }
        }
        let needles = [
            (in_shard("needle-early-", 1), 5),
            (in_shard("needle-deep-", 0), deep - 5),
            (in_shard("needle-late-", 1), deep + 100),
        ];
        for (id, at) in &needles {
            put(id.clone(), *at).await;
        }
        let mut request = json!({"action": "list", "queue": "orders", "prefix": "needle"});
        let mut calls = 0;
        let mut found = Vec::new();
        loop {
            calls += 1;
            let r = call(&w, request.clone()).await;
            found.extend(ids(r["jobs"].as_array().unwrap()));
            match &r["cursor"] {
                Value::Null => break,
                c => request["cursor"] = c.clone(),
            }
        }
        let want: Vec<String> = needles.iter().map(|(id, _)| id.clone()).collect();
        assert_eq!(found, want);
        assert!(
            calls >= 3,
            "each call reads at most about {LIST_SCAN_BUDGET} items a shard: {calls} calls"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_forged_or_foreign_cursor_is_refused_by_name() {
        let (w, _, _) = waiter_with(MemStore::default(), &[]);
        for i in 0..5 {
            schedule(&w, &format!("j{i}"), 5000 + i).await;
        }
        let r = call(&w, json!({"action": "list", "queue": "orders", "limit": 2})).await;
        let cursor = r["cursor"].as_str().unwrap().to_owned();
        let mut flipped = cursor.clone().into_bytes();
        flipped[3] ^= 1;
        let bad = [
            json!({"action": "list", "queue": "other", "cursor": cursor}),
            json!({"action": "list", "queue": "orders", "prefix": "j", "cursor": cursor}),
            json!({"action": "list", "queue": "orders", "status": "parked", "cursor": cursor}),
            json!({"action": "list", "queue": "orders", "cursor": String::from_utf8_lossy(&flipped)}),
            json!({"action": "list", "queue": "orders", "cursor": "%%%"}),
            json!({"action": "list", "queue": "orders", "cursor": cursor::encode(&QueueName::parse("orders").unwrap(), "list/scheduled///", "no-bar")}),
            json!({"action": "cancel_many", "queue": "orders", "cursor": cursor}),
        ];
        for request in bad {
            let e = refused(&w, request.clone()).await;
            assert_eq!(e.field, "cursor", "{request}: {e}");
        }
        for (request, field) in [
            (json!({"action": "list", "queue": "orders", "status": "sent"}), "status"),
            (json!({"action": "list", "queue": "orders", "limit": 0}), "limit"),
            (json!({"action": "list", "queue": "orders", "limit": 1001}), "limit"),
            (
                json!({"action": "list", "queue": "orders", "from": "2027-01-02T00:00:00Z", "to": "2027-01-01T00:00:00Z"}),
                "from",
            ),
            (json!({"action": "list", "queue": "orders", "prefix": "a b"}), "prefix"),
            (
                json!({"action": "list", "queue": "orders", "with_body": "yes"}),
                "with_body",
            ),
            (json!({"action": "list", "queue": "orders", "from": "tomorrow"}), "from"),
        ] {
            let e = refused(&w, request.clone()).await;
            assert_eq!(e.field, field, "{request}: {e}");
        }
    }
}
