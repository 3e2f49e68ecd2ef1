//! Planning, without I/O: when each job is sent, and which jobs share a batch.

use std::collections::VecDeque;

use chrono::{DateTime, TimeDelta, Utc};

use super::call::{Call, Fate};
use super::*;
use crate::job::SEND_ALLOWANCE;
use crate::limits::{SQS_MAX_BATCH_ENTRIES, SQS_MAX_MESSAGE_BYTES};
use crate::ports::StoredJob;
use crate::routing::{aligned_send_instant, delay_for};
use crate::time::seconds_between;

pub(super) enum Plan {
    Send(Box<Planned>),
    Expired(Box<StoredJob>),
    /// Outside its windows when it would arrive: due again at the next opening.
    Move {
        current: Box<StoredJob>,
        next: Box<StoredJob>,
    },
    /// Not sendable in this run (it would have to wait past the stop margin).
    NotYet,
}

/// When to send a job. Standard queues: the instant at which the time left is a whole number of
/// seconds (within the next second), or now if overdue. FIFO: when it is due.
/// `inherited`: the horizon of a lease taken over from a run that left it unsettled.
pub(super) fn plan(
    job: StoredJob,
    fifo: bool,
    now: DateTime<Utc>,
    stop_at: DateTime<Utc>,
    inherited: Option<DateTime<Utc>>,
) -> Plan {
    let perform_at = job.job.perform_at;
    let send_at = if fifo {
        perform_at.max(now)
    } else {
        aligned_send_instant(perform_at, now)
    };
    let arrival = send_at.max(perform_at);
    if let Some(w) = job
        .job
        .windows
        .as_ref()
        .filter(|_| job.job.outside_windows_in_flight(arrival))
    {
        let mut next = job.clone();
        // Past the allowance: an arrival just before the close moves to the next opening.
        next.job.perform_at = w.next_open(arrival + SEND_ALLOWANCE);
        next.version += 1;
        // The run that left the lease may have sent it, to arrive when it was due. Re-sending
        // now would arrive outside the windows whenever that send had not reached SQS, so it
        // moves, and says it may have been delivered already.
        if inherited.is_some_and(|h| perform_at <= h) {
            next.maybe_delivered_at = job.maybe_delivered_at.or(Some(perform_at));
        }
        // A series' occurrence waits for the opening: the series holds where the pass started,
        // and the pass at the opening chooses again (late ones as `catch_up` says).
        if let (Some(o), Some(series)) = (next.job.occurrence.take(), next.job.repeat.as_mut()) {
            series.held = Some(o.from);
        }
        if next.job.arrives_expired(next.job.perform_at) {
            return Plan::Expired(Box::new(job));
        }
        return Plan::Move {
            current: Box::new(job),
            next: Box::new(next),
        };
    }
    if job.job.arrives_expired(arrival) {
        return Plan::Expired(Box::new(job));
    }
    if send_at >= stop_at {
        return Plan::NotYet;
    }
    let bytes = job.job.message_bytes();
    let overdue_s = seconds_between(job.job.perform_at, now).max(0.0);
    Plan::Send(Box::new(Planned {
        send_at,
        job,
        bytes,
        arrive_in: None,
        booked: None,
        overdue_s,
    }))
}

/// An entry's delay shortened by the whole seconds since `planned_at`, so it arrives no earlier
/// than planned and at most a second later, unless it would then arrive expired or outside its
/// windows (the one rule for every late send).
pub(super) fn fate_at(p: &Planned, delay: Option<u32>, planned_at: DateTime<Utc>, now: DateTime<Utc>) -> Fate {
    let job = &p.job;
    let late = u32::try_from((now - planned_at).num_seconds().max(0)).unwrap_or(u32::MAX);
    let delay = delay.map(|d| d.saturating_sub(late));
    let arrival = now + TimeDelta::seconds(i64::from(delay.unwrap_or(0)));
    if p.booked.is_some_and(|(second, _)| arrival.timestamp() > second) {
        Fate::Missed
    } else if job.job.expires_in_flight(arrival) {
        Fate::Expired
    } else if job.job.outside_windows_in_flight(arrival) {
        Fate::OutsideWindows
    } else {
        Fate::Send(delay)
    }
}

/// A call whose send started at `sent_at`, after `prepared_at` when its delays were taken (the
/// run prepared other batches first, with calls of their own): each entry as `fate_at` says,
/// an entry moved to a booked second (its delay pinned at the send) checked at that arrival.
/// Returns the entries still sent, their messages, and the others with their fates, each in
/// call order. On a FIFO queue an entry that stays behind (to book again, or outside its
/// windows) keeps its group's later entries of the call behind it: they book again too, so
/// that SQS never gets a group's later message before its earlier one.
pub(super) fn start_late(
    call: Call,
    messages: Vec<crate::ports::OutgoingMessage>,
    prepared_at: DateTime<Utc>,
    sent_at: DateTime<Utc>,
    fifo: bool,
) -> (Call, Vec<crate::ports::OutgoingMessage>, Vec<(Planned, Fate)>) {
    let (mut kept, mut kept_messages, mut dropped) = (Vec::new(), Vec::new(), Vec::new());
    let mut held_groups: Vec<String> = Vec::new();
    for ((p, delay), mut m) in call.into_iter().zip(messages) {
        let mut fate = match p.arrive_in {
            Some(_) => fate_at(&p, m.delay_seconds, sent_at, sent_at),
            None => fate_at(&p, delay, prepared_at, sent_at),
        };
        if let Some(group) = p.job.job.message_group_id.as_ref().filter(|_| fifo) {
            if matches!(fate, Fate::Send(_)) && held_groups.contains(group) {
                fate = Fate::Missed;
            }
            if matches!(fate, Fate::Missed | Fate::OutsideWindows) && !held_groups.contains(group) {
                held_groups.push(group.clone());
            }
        }
        match fate {
            Fate::Send(delay) => {
                m.delay_seconds = delay;
                kept.push((p, delay));
                kept_messages.push(m);
            }
            other => dropped.push((p, other)),
        }
    }
    (kept, kept_messages, dropped)
}

/// FIFO queues take no per-message delay.
pub(super) fn delay_at(job: &StoredJob, fifo: bool, sent_at: DateTime<Utc>) -> Option<u32> {
    (!fifo).then(|| delay_for(job.job.perform_at, sent_at))
}

/// The one batching rule: from the front of `pending` (sorted by send instant), the jobs whose
/// instants lie within `window` of the first, up to 10 entries and 1 MiB in all. Returns how
/// many the next batch takes.
pub fn batch_len(pending: &VecDeque<Planned>, window: TimeDelta) -> usize {
    let mut bytes = 0usize;
    let mut n = 0;
    for p in pending {
        let fits = n < SQS_MAX_BATCH_ENTRIES
            && bytes + p.bytes <= SQS_MAX_MESSAGE_BYTES
            && pending.front().is_none_or(|f| p.send_at - f.send_at <= window);
        if !fits && n > 0 {
            break;
        }
        bytes += p.bytes;
        n += 1;
    }
    n
}

/// Takes the next batch off the front of `pending` (see `batch_len`).
pub fn next_batch(pending: &mut VecDeque<Planned>, window: TimeDelta) -> Vec<Planned> {
    let n = batch_len(pending, window);
    pending.drain(..n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::OutgoingMessage;
    use crate::testing::stored;

    #[test]
    fn a_send_that_starts_after_its_delays_were_taken_drops_what_would_arrive_expired() {
        let due = DateTime::parse_from_rfc3339("2026-12-01T09:00:07.25Z")
            .unwrap()
            .to_utc();
        let mut job = stored("orders", "j", due, 1);
        job.job.expires_at = Some(due + TimeDelta::milliseconds(450));
        let mut other = stored("orders", "k", due, 1);
        other.job.expires_at = None;
        // Prepared one second before it is due (delay 1), started 550 ms later: 1 s of delay
        // would land it 550 ms late, past `j`'s expiry; `k` has none and still goes.
        let prepared_at = due - TimeDelta::seconds(1);
        let sent_at = prepared_at + TimeDelta::milliseconds(550);
        let planned = |j: StoredJob| Planned {
            send_at: prepared_at,
            bytes: j.job.message_bytes(),
            job: j,
            arrive_in: None,
            booked: None,
            overdue_s: 0.0,
        };
        let call = vec![(planned(job.clone()), Some(1)), (planned(other.clone()), Some(1))];
        let messages = vec![
            OutgoingMessage::for_job(&job.job, job.edition(), Some(1)),
            OutgoingMessage::for_job(&other.job, other.edition(), Some(1)),
        ];
        let (kept, kept_messages, dropped) = start_late(call, messages, prepared_at, sent_at, false);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].0.job.job.job_id, "k");
        assert_eq!(
            kept_messages[0].delay_seconds,
            Some(1),
            "under a second late: the delay stays"
        );
        assert_eq!(dropped.len(), 1);
        assert_eq!(
            (dropped[0].0.job.job.job_id.as_str(), dropped[0].1),
            ("j", Fate::Expired)
        );
        // Started two seconds late, the delay is shortened by both: never early, at most 1 s late.
        assert_eq!(
            fate_at(
                &planned(other.clone()),
                Some(5),
                prepared_at,
                prepared_at + TimeDelta::milliseconds(2_300)
            ),
            Fate::Send(Some(3))
        );
        // Booked into its arrival second by `WAITER_MAX_RATE`: it may arrive up to a second
        // late only within that second; past it, it books again (an SDK retry took the time).
        let booked = Planned {
            booked: Some((due.timestamp(), due.timestamp())),
            ..planned(other)
        };
        assert_eq!(
            fate_at(
                &booked,
                Some(1),
                prepared_at,
                prepared_at + TimeDelta::milliseconds(500)
            ),
            Fate::Send(Some(1)),
            "still lands in its second"
        );
        assert_eq!(
            fate_at(
                &booked,
                Some(1),
                prepared_at,
                prepared_at + TimeDelta::milliseconds(800)
            ),
            Fate::Missed,
            "would land in the next second"
        );
    }

    /// On a FIFO queue, an entry that stays behind keeps its group's later entries of the call
    /// behind it (they book again); an expired one does not (it is never sent); other groups go.
    #[test]
    fn a_late_fifo_call_keeps_a_group_behind_its_entry_that_stays() {
        let due = DateTime::parse_from_rfc3339("2026-12-01T09:00:07.25Z")
            .unwrap()
            .to_utc();
        let job = |id: &str, group: &str| {
            let mut j = stored("billing.fifo", id, due, 1);
            j.job.message_group_id = Some(group.to_owned());
            j
        };
        // `a` may only arrive until 09:00; its send starts at 09:00:08.5.
        let mut a = job("a", "g");
        a.job.windows = Some(
            crate::windows::Windows::parse(
                &[sqs_waiter_contract::Window {
                    from: "08:00".into(),
                    to: "09:00".into(),
                }],
                Some("UTC"),
            )
            .expect("a window"),
        );
        let mut x = job("x", "h");
        x.job.expires_at = Some(due);
        let jobs = [a, job("b", "g"), x, job("y", "h"), job("c", "k")];
        let planned = |j: &StoredJob| Planned {
            send_at: due,
            bytes: j.job.message_bytes(),
            job: j.clone(),
            arrive_in: None,
            booked: None,
            overdue_s: 0.0,
        };
        let call: Call = jobs.iter().map(|j| (planned(j), None)).collect();
        let messages = jobs
            .iter()
            .map(|j| OutgoingMessage::for_job(&j.job, j.edition(), None))
            .collect();
        let sent_at = due + TimeDelta::milliseconds(1_250);
        let (kept, _, dropped) = start_late(call, messages, due, sent_at, true);
        let ids = |v: Vec<&StoredJob>| v.iter().map(|j| j.job.job_id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(kept.iter().map(|(p, _)| &p.job).collect()), ["y", "c"]);
        let fates: Vec<(String, Fate)> = dropped.into_iter().map(|(p, f)| (p.job.job.job_id, f)).collect();
        assert_eq!(
            fates,
            [
                ("a".to_owned(), Fate::OutsideWindows),
                ("b".to_owned(), Fate::Missed),
                ("x".to_owned(), Fate::Expired)
            ]
        );
    }
}
