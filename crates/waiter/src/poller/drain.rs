//! One partition run: the event loop that reads, sends and removes at once, and the settling of
//! each answer.

use std::collections::{HashMap, HashSet, VecDeque};

use chrono::{DateTime, TimeDelta, Utc};
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use futures::StreamExt;
use tracing::{debug, warn};

use super::call::{Call, Done, Fate};
use super::send::send_call;
use super::*;
use crate::config::QueueName;
use crate::error::{display_chain, PortError};
use crate::limits::SQS_MAX_BATCH_ENTRIES;
use crate::ports::{
    Clock, EntryOutcome, HistoryStatus, JobKey, JobStore, MessageQueue, OutgoingMessage, Partition, ReplaceOutcome,
    Retired, StoredJob,
};
use crate::time::seconds_between;

/// One run over one partition: what is planned, what is in flight, what SQS accepted and must
/// be removed, what the run has already handled.
pub(super) struct PartitionRun<'a, S, Q, C> {
    pub(super) d: &'a Dispatcher<S, Q, C>,
    /// What the run's partitions share: the pause checks every send waits for a fresh one of
    /// (`ports::PauseGate`), and the job `trigger` watches.
    pub(super) scope: &'a super::RunScope,
    pub(super) queue: &'a QueueName,
    pub(super) shard: u32,
    pub(super) horizon: DateTime<Utc>,
    /// Taken over from a run that left its lease unsettled: that lease's horizon. A job due by
    /// then may be in SQS already.
    pub(super) inherited: Option<DateTime<Utc>>,
    /// What the partition's previous run left: which occurrences are missed (`repeat::Pass`).
    pub(super) previous: Option<crate::ports::PreviousRun>,
    pub(super) stop_at: DateTime<Utc>,
    pub(super) pending: VecDeque<Planned>,
    /// Message bytes of the jobs in `pending`.
    pub(super) pending_bytes: usize,
    /// Jobs SQS accepted (or that expired), not yet in a delete call, with their history records.
    pub(super) deletes: Vec<Retired>,
    /// Entries of the send calls and of the delete calls not yet answered.
    pub(super) sending: usize,
    pub(super) deleting: usize,
    /// Job ids planned in this run and not yet removed: a re-read index shows them again until
    /// they are removed.
    pub(super) seen: HashSet<String>,
    /// A send failed in a way that leaves open whether SQS accepted it (timeout, reset, 5xx).
    pub(super) uncertain: bool,
    /// A due job had to be left for a later run.
    pub(super) left_behind: bool,
    /// The queue was found paused before a send: nothing more is started.
    pub(super) paused: bool,
    /// FIFO groups with a message that failed and stays stored (or that this release cannot
    /// read: `true`, which waits for an update and leaves the run drained): their later
    /// messages wait, so that SQS never holds a group's later message before its earlier one.
    pub(super) blocked_groups: HashMap<String, bool>,
    /// Under `WAITER_MAX_RATE`: where this run's better-ranked jobs were moved to.
    pub(super) floors: crate::rate::Floors,
    /// Ranked: a job found no room up to the horizon, so no later one will this run.
    pub(super) budget_full: bool,
    /// Ranked: whether this partition has said it is reading due jobs, whether it has put its
    /// best in the ledger after reading them, and until when it waits before booking (for the
    /// other partitions to put theirs, or to book first).
    pub(super) announced: bool,
    pub(super) gathered: bool,
    pub(super) rank_wait: Option<DateTime<Utc>>,
    /// Ranked: when this partition last wrote its head to the ledger (a head not written again
    /// within `HEAD_TTL` is forgotten, and worse-ranked jobs of other partitions book past it).
    pub(super) head_written: Option<DateTime<Utc>>,
    /// Ranked, with poller groups: the queue's partitions that other groups work, which this
    /// one waits for (up to `rank::CHECK_IN_WAIT` after `started`) to check in before booking.
    pub(super) others: std::sync::Arc<[u32]>,
    /// This partition in its run's roll call: the run's other partitions of the queue wait
    /// (in memory, up to the same `CHECK_IN_WAIT`) for it to check in before they book.
    pub(super) presence: super::roll_call::Presence,
    pub(super) started: DateTime<Utc>,
    pub(super) summary: RunSummary,
    /// Series moved to an occurrence due already: another round of the run sends them.
    pub(super) due_again: usize,
}

impl<'a, S: JobStore, Q: MessageQueue, C: Clock> PartitionRun<'a, S, Q, C> {
    /// Reads, sends and removes at once: the next index page is read while batches are in
    /// flight, up to `SENDS_IN_FLIGHT` batches are sent at once (one on FIFO queues, whose
    /// groups SQS orders by arrival of the calls), and what SQS accepted is removed by up to
    /// `DELETES_IN_FLIGHT` calls at once. A job is removed only after SQS accepted it, and a
    /// batch is never sent before its instant. Returns whether every due job this run was
    /// responsible for was handed over.
    pub(super) async fn drain(&mut self) -> Result<bool, PortError> {
        let d = self.d;
        let queue = self.queue;
        let fifo = queue.is_fifo();
        let max_sends = if fifo { 1 } else { SENDS_IN_FLIGHT };
        // Batches allowed in flight now: one more after each quick answer, back to one after a
        // slow one or an error, so that a struggling queue endpoint gets one call at a time
        // per partition (and the SDK's retries of timed-out attempts, which SQS may have
        // taken, stay few).
        let mut send_limit = 1;
        // A FIFO run holding for jobs that fall due re-reads the index, so jobs enqueued during
        // the hold are found by this run, on time.
        let requery = fifo && d.config.fifo_hold > 0;
        let hold_until = self.horizon.min(self.stop_at);
        let mut pages = Some(d.store.due(queue, self.shard, self.horizon));
        // `trigger`'s job, by its key: the index may not show it yet.
        if let Some(key) = self
            .scope
            .watch
            .as_ref()
            .filter(|k| k.partition == Partition::Shard(self.shard))
        {
            let jobs = d.store.read(queue, std::slice::from_ref(key)).await?;
            self.plan_jobs(jobs).await?;
        }
        let mut exhausted = false;
        let mut next_query: Option<DateTime<Utc>> = None;
        let mut failure: Option<PortError> = None;
        // Removals that failed in a way a retry can clear (a throttle, a timeout), sent again.
        let mut removal_retries = 0;
        // Entries of a refused batch, each with the instant its batch was sent.
        let mut singly: VecDeque<(Call, DateTime<Utc>)> = VecDeque::new();
        let mut in_flight: FuturesUnordered<BoxFuture<'a, Done<'a>>> = FuturesUnordered::new();
        let (mut reading, mut sends, mut removals) = (false, 0usize, 0usize);
        loop {
            let mut now = d.clock.now();
            let starting = failure.is_none() && now < self.stop_at && !self.paused;
            let mut wake_at: Option<DateTime<Utc>> = None;
            if starting {
                if let Some(t) = next_query.filter(|_| !reading) {
                    if now >= t {
                        pages = Some(d.store.due(queue, self.shard, self.horizon));
                        exhausted = false;
                        next_query = None;
                    } else {
                        wake_at = Some(t);
                    }
                }
                if !reading && !exhausted && self.pending.len() < READ_AHEAD && self.pending_bytes < MAX_PENDING_BYTES {
                    if let Some(mut p) = pages.take() {
                        reading = true;
                        in_flight.push(Box::pin(async move {
                            let next = p.next().await;
                            Done::Page(p, next)
                        }));
                    }
                }
                while removals < DELETES_IN_FLIGHT && self.deletes.len() >= REMOVALS_PER_CALL {
                    let items: Vec<Retired> = self.deletes.drain(..REMOVALS_PER_CALL).collect();
                    removals += 1;
                    self.deleting += items.len();
                    in_flight.push(Box::pin(async move {
                        let result = d.store.retire(queue, &items).await;
                        Done::Removed { items, result }
                    }));
                }
                while sends < send_limit && self.undeleted() + SQS_MAX_BATCH_ENTRIES <= MAX_UNDELETED_PER_PARTITION {
                    let (call, hold) = match singly.pop_front() {
                        Some((call, planned_at)) => (self.retime(call, planned_at, now), None),
                        None => {
                            // Ranked jobs wait for the reads that may still find better-ranked
                            // ones: the due index to its end, or as far as the run holds.
                            let more_to_read =
                                !exhausted && self.pending.len() < READ_AHEAD && self.pending_bytes < MAX_PENDING_BYTES;
                            if more_to_read && self.ranks() {
                                break;
                            }
                            if self.ranks() && self.announced && !self.gathered {
                                if let Err(e) = self.gather(now).await {
                                    failure = Some(e);
                                    break;
                                }
                            }
                            // Ranked: book what was read, in rank order, ahead of the sends,
                            // unless waiting for the other partitions' heads or for a
                            // better-ranked partition to book first. What is booked (and
                            // critical jobs) is sent at its time meanwhile.
                            //
                            // Only once what is booked has gone (or is not to be sent soon),
                            // with no send in flight: the ledger call is awaited here, and
                            // neither the sends in flight (their pause checks, their booked
                            // seconds) nor the booked jobs waiting to be sent move until it
                            // answers. Under a herd the partitions of a process take turns at
                            // the ledger, so one call can take hundreds of milliseconds: booked
                            // jobs missed the seconds they had booked, and each miss booked
                            // again (issue 72). Except when the partition's head is about to
                            // be forgotten: the call writes it again.
                            if self.ranks() && sends == 0 && (!self.booked_soon(now) || self.head_due(now)) {
                                match self.rank_wait.filter(|t| *t > now) {
                                    Some(t) => wake_at = Some(wake_at.map_or(t, |w| w.min(t))),
                                    None => {
                                        if let Err(e) = self.book_ahead(now).await {
                                            failure = Some(e);
                                            break;
                                        }
                                        // The ledger may have kept it waiting: what is ready,
                                        // and each delay, is reckoned from when it answered.
                                        now = d.clock.now();
                                        // Booked up to the horizon, with nothing booked left to
                                        // send (no batch will find it so): reading stops here.
                                        if self.budget_full {
                                            exhausted = true;
                                            next_query = None;
                                            self.leave_unbooked();
                                        }
                                        if let Some(t) = self.rank_wait.filter(|t| *t > now) {
                                            wake_at = Some(wake_at.map_or(t, |w| w.min(t)));
                                        }
                                    }
                                }
                            }
                            let n = match self.rank_ready(now) {
                                // Ranked: every ready job may share a batch.
                                Some(ready) => batch_len(&self.pending, TimeDelta::MAX).min(ready),
                                None => batch_len(&self.pending, BATCH_WINDOW),
                            };
                            let Some(ready_at) = n.checked_sub(1).and_then(|i| self.pending.get(i)).map(|p| p.send_at)
                            else {
                                // Ranked, nothing that may go yet: the next send instant, or
                                // the booking retry set above.
                                let next = self.pending.iter().map(|p| p.send_at).filter(|t| *t > now).min();
                                if let Some(t) = next.filter(|_| self.ranks()) {
                                    wake_at = Some(wake_at.map_or(t, |w| w.min(t)));
                                }
                                break;
                            };
                            if ready_at > now {
                                wake_at = Some(wake_at.map_or(ready_at, |w| w.min(ready_at)));
                                break;
                            }
                            let batch: Vec<Planned> = self.pending.drain(..n).collect();
                            self.pending_bytes -= batch.iter().map(|p| p.bytes).sum::<usize>();
                            let prepared = match self.prepare(batch, now).await {
                                Ok(prepared) => prepared,
                                Err(e) => {
                                    // The batch stays stored: a later run sends it.
                                    failure = Some(e);
                                    break;
                                }
                            };
                            if self.budget_full {
                                exhausted = true;
                                next_query = None;
                                self.leave_unbooked();
                            }
                            prepared
                        }
                    };
                    if call.is_empty() {
                        continue;
                    }
                    sends += 1;
                    self.sending += call.len();
                    let messages = super::call::messages_of(&call, d.config.job_id_attribute);
                    in_flight.push(Box::pin(send_call(
                        d,
                        &self.scope.gate,
                        queue,
                        call,
                        messages,
                        hold,
                        now,
                    )));
                }
            }
            if in_flight.is_empty() {
                if let Some(e) = failure {
                    return Err(e);
                }
                if !starting {
                    return Ok(false);
                }
                if exhausted && next_query.is_none() && self.pending.is_empty() && singly.is_empty() {
                    return Ok(!self.left_behind);
                }
                if let Some(t) = wake_at {
                    d.clock.sleep_until(t.min(self.stop_at)).await;
                }
                continue;
            }
            let done = match wake_at.filter(|_| starting) {
                Some(t) => {
                    tokio::select! {
                        done = in_flight.next() => done,
                        () = d.clock.sleep_until(t.min(self.stop_at)) => None,
                    }
                }
                None => in_flight.next().await,
            };
            let Some(done) = done else { continue };
            let error = match done {
                Done::Page(_, _) | Done::Read(_) if self.budget_full => {
                    reading = false;
                    None
                }
                Done::Page(p, next) => {
                    pages = Some(p);
                    match next {
                        None => {
                            reading = false;
                            exhausted = true;
                            let now = d.clock.now();
                            if requery && now + FIFO_REQUERY < hold_until {
                                next_query = Some(now + FIFO_REQUERY);
                            }
                            // Nothing due here: the other partitions need not wait for this one.
                            self.presence.check_in();
                            self.check_in_idle(now).await.err()
                        }
                        Some(Err(e)) => {
                            reading = false;
                            Some(e)
                        }
                        Some(Ok(page)) => {
                            let keys: Vec<JobKey> = page
                                .iter()
                                .filter(|j| !self.seen.contains(&j.job.job_id))
                                .map(StoredJob::key)
                                .collect();
                            if keys.is_empty() {
                                reading = false;
                                None
                            } else {
                                in_flight.push(Box::pin(async move {
                                    Done::Read(d.store.read_to_send(queue, &keys).await)
                                }));
                                // Due jobs here: the other partitions wait until this one has
                                // read them and ranked its best.
                                self.announce(d.clock.now()).await.err()
                            }
                        }
                    }
                }
                Done::Read(result) => {
                    reading = false;
                    match result {
                        Ok((jobs, unreadable)) => {
                            self.leave_untouched(unreadable);
                            self.plan_jobs(jobs).await.err()
                        }
                        Err(e) => Some(e),
                    }
                }
                Done::Sent {
                    call,
                    messages,
                    sent_at,
                    result,
                    dropped,
                } => {
                    sends -= 1;
                    self.sending -= call.len() + dropped.len();
                    // Last first: each entry to book again goes to the front of `pending`, so
                    // they keep their order there (a FIFO group's above all).
                    for (p, fate) in dropped.into_iter().rev() {
                        self.settle_unsent(&p, fate);
                    }
                    let quick = result.is_ok() && d.clock.now() - sent_at <= QUICK_SEND;
                    send_limit = if quick { (send_limit + 1).min(max_sends) } else { 1 };
                    match result {
                        Ok(outcomes) => {
                            self.settle(&call, &messages, sent_at, outcomes).await;
                            None
                        }
                        Err(e) if e.blames_message() && call.len() > 1 => {
                            // Refused for its content as a whole (too long in total, a message
                            // over the queue's own limit): sent again entry by entry to find the
                            // bad one.
                            warn!(queue = %queue, entries = call.len(), error = %display_chain(&e), "batch refused for its content; sending its entries singly");
                            singly.extend(call.into_iter().map(|c| (vec![c], sent_at)));
                            None
                        }
                        Err(e) if e.blames_message() => {
                            // A single entry refused for its content: the whole-call form of a
                            // `SenderFault` entry failure (moto, and SQS for some size checks).
                            if let (Some((p, _)), PortError::Rejected { code, .. }) = (call.first(), &e) {
                                self.park(&p.job, code.clone(), display_chain(&e)).await;
                            }
                            None
                        }
                        Err(e) => {
                            self.uncertain |= e.may_have_taken_effect();
                            self.summary.failed += call.len() as u64;
                            Some(e)
                        }
                    }
                }
                Done::Removed { items, result } => {
                    removals -= 1;
                    self.deleting -= items.len();
                    match result {
                        Ok(()) => {
                            // Gone from the table: a lagging index may list them, but the
                            // strongly consistent re-read does not.
                            for r in &items {
                                self.seen.remove(&r.key.job_id);
                            }
                            None
                        }
                        // Conditioned on the edition sent, a removal is safe to send again:
                        // a slow or throttled call is no reason to stop the partition.
                        Err(e) if e.is_retryable() && removal_retries < REMOVAL_RETRIES => {
                            removal_retries += 1;
                            warn!(queue = %queue, shard = self.shard, error = %display_chain(&e), "removal failed; sent again");
                            self.deletes.splice(0..0, items);
                            None
                        }
                        Err(e) => {
                            self.deletes.extend(items);
                            Some(e)
                        }
                    }
                }
            };
            if let Some(e) = error {
                // Start nothing more; what is in flight is still answered and recorded.
                match &failure {
                    None => failure = Some(e),
                    Some(_) => {
                        warn!(queue = %queue, shard = self.shard, error = %display_chain(&e), "another call failed")
                    }
                }
            }
        }
    }

    /// Booked up to the horizon: what is left unbooked waits for the next run, unread (a run
    /// never reads the whole backlog); what was booked ahead is still sent.
    fn leave_unbooked(&mut self) {
        let before = self.pending.len();
        self.pending.retain(|p| p.booked.is_some() || p.job.job.is_critical());
        if self.pending.len() < before {
            self.pending_bytes = self.pending.iter().map(|p| p.bytes).sum();
            self.left_behind = true;
        }
    }

    /// Jobs accepted by SQS but not yet removed (in a send call, waiting for a delete call, or
    /// in one): what a crash now would send twice.
    pub(super) fn undeleted(&self) -> usize {
        self.sending + self.deletes.len() + self.deleting
    }

    /// Plans jobs re-read from the table. The index is eventually consistent: each job is
    /// re-read (strongly consistent) under the lease, and only that version is sent.
    pub(super) async fn plan_jobs(&mut self, current: Vec<StoredJob>) -> Result<(), PortError> {
        let d = self.d;
        let now = d.clock.now();
        for job in current {
            // Rescheduled or re-enqueued past the horizon since the index was written.
            if job.job.perform_at > self.horizon || !self.seen.insert(job.job.job_id.clone()) {
                continue;
            }
            // Paused by `pause`: not sent, moved or dropped, and not counted as a backlog (its
            // wait is the operator's). Kept in `seen`, so the run does not read it again.
            if job.paused_at.is_some() {
                continue;
            }
            // A series sends one occurrence a pass, or moves on without one (`catch_up`).
            let Some(job) = self.occurrence_of(job, now) else {
                continue;
            };
            match plan(job, self.queue.is_fifo(), now, self.stop_at, self.inherited) {
                Plan::Send(p) => {
                    self.summary.backlog_age_s = self.summary.backlog_age_s.max(p.overdue_s);
                    if self.d.config.max_rate.is_none() {
                        self.summary.overdue_beyond_rate_s = self.summary.overdue_beyond_rate_s.max(p.overdue_s);
                    }
                    self.pending_bytes += p.bytes;
                    self.pending.push_back(*p);
                }
                Plan::Expired(job) => {
                    debug!(queue = %self.queue, job_id = %job.job.job_id, "expired: dropped, not sent");
                    self.summary.expired += 1;
                    self.retire(&job, HistoryStatus::Expired, None);
                }
                Plan::NotYet => self.left_behind = true,
                Plan::Move { current, next } => {
                    // Under this run's lease: no one else may change the job meanwhile.
                    if d.store.rewrite(&current, &next).await? == ReplaceOutcome::Replaced {
                        debug!(queue = %self.queue, job_id = %next.job.job_id, perform_at = %next.job.perform_at, maybe_delivered = next.maybe_delivered_at.is_some(), "outside its windows: moved to the next opening");
                        self.summary.moved += 1;
                    }
                }
            }
        }
        self.pending
            .make_contiguous()
            .sort_by(|a, b| a.send_order().cmp(&b.send_order()));
        Ok(())
    }

    /// Records each entry's fate. Only an entry SQS refused with `SenderFault: true` is parked;
    /// one that failed otherwise stays stored for the next run.
    pub(super) async fn settle(
        &mut self,
        call: &Call,
        messages: &[OutgoingMessage],
        sent_at: DateTime<Utc>,
        outcomes: Vec<EntryOutcome>,
    ) {
        let queue = self.queue;
        for (((p, _), m), outcome) in call.iter().zip(messages).zip(outcomes) {
            match outcome {
                EntryOutcome::Sent { message_id } => {
                    let arrival = sent_at + TimeDelta::seconds(i64::from(m.delay_seconds.unwrap_or(0)));
                    let lateness_ms = seconds_between(p.job.job.perform_at, arrival) * 1e3;
                    let sum = &mut self.summary;
                    sum.max_lateness_ms = sum.max_lateness_ms.max(lateness_ms);
                    if sum.lateness_sample_ms.len() < LATENESS_SAMPLE {
                        sum.lateness_sample_ms.push(lateness_ms);
                    }
                    let by_class = sum
                        .lateness_by_class
                        .entry(crate::rate::priority_class(p.job.job.priority))
                        .or_default();
                    if by_class.len() < LATENESS_SAMPLE {
                        by_class.push(lateness_ms);
                    }
                    sum.dispatched += 1;
                    debug!(queue = %queue, job_id = %p.job.job.job_id, delay_s = m.delay_seconds, lateness_ms, "dispatched");
                    self.scope.saw(&p.job.job, &message_id);
                    self.retire(&p.job, HistoryStatus::Dispatched, Some(message_id));
                }
                EntryOutcome::Failed {
                    code,
                    message,
                    sender_fault: true,
                } => self.park(&p.job, code, message).await,
                EntryOutcome::Failed {
                    code,
                    message,
                    sender_fault: false,
                } => {
                    warn!(queue = %queue, job_id = %p.job.job.job_id, code, message, "entry failed; stays stored for the next run");
                    self.summary.failed += 1;
                    self.left_behind = true;
                    if let (true, Some(group)) = (queue.is_fifo(), &p.job.job.message_group_id) {
                        self.blocked_groups.insert(group.clone(), false);
                    }
                }
            }
        }
    }

    /// A call planned to be sent at `planned_at`, sent at `now` instead (an entry of a refused
    /// batch, sent again on its own): each delay is shortened by the whole seconds since, so it
    /// arrives no earlier than planned and at most a second later; a job that would now arrive
    /// after its `expires_at` is dropped as expired, and one outside its windows left stored.
    fn retime(&mut self, call: Call, planned_at: DateTime<Utc>, now: DateTime<Utc>) -> Call {
        let mut kept = Vec::with_capacity(call.len());
        for (p, delay) in call {
            match fate_at(&p, delay, planned_at, now) {
                Fate::Send(delay) => kept.push((p, delay)),
                fate => self.settle_unsent(&p, fate),
            }
        }
        kept
    }

    /// An entry not sent because it started late (`Fate`): an expired one is recorded as such;
    /// one outside its windows stays stored, and the next run moves it to the next opening; one
    /// past its booked second books again in this run.
    fn settle_unsent(&mut self, p: &Planned, fate: Fate) {
        match fate {
            Fate::Expired => {
                debug!(queue = %self.queue, job_id = %p.job.job.job_id, "expired before its late send: dropped, not sent");
                self.summary.expired += 1;
                self.retire(&p.job, HistoryStatus::Expired, None);
            }
            // Its booked second has passed: back to the front of `pending`, to book again.
            Fate::Missed => {
                self.pending_bytes += p.bytes;
                self.pending.push_front(Planned {
                    arrive_in: None,
                    booked: None,
                    ..p.clone()
                });
            }
            // Stays stored for the next run, which moves it; its FIFO group waits behind it.
            Fate::OutsideWindows => {
                self.left_behind = true;
                self.hold_group_of(p);
            }
            Fate::Send(_) => self.left_behind = true,
            // The queue was paused (or its pause could not be read): stays stored, and the
            // run starts nothing more.
            Fate::Paused => {
                self.left_behind = true;
                self.paused = true;
            }
        }
    }
}
