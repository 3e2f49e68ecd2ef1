//! `decide` and `current_of`: what a `retry` of attempt n does for each state of the job's id.

use chrono::{TimeDelta, Utc};

use super::*;
use crate::testing::stored;

/// `decide` with the stored attempt counted as sent when the item says it may be (the lease
/// read `sent_attempt` adds is the app tests' to cover).
fn decide_at(failed: u32, current: Option<&Current>, now: chrono::DateTime<Utc>) -> Decision {
    decide(failed, current, current.and_then(|c| c.sent_and_stored(now)).is_some())
}

fn stored_job(id: &str) -> StoredJob {
    stored("orders", id, Utc::now(), 1)
}

fn left(attempt: u32, status: HistoryStatus) -> Current {
    let mut j = stored_job("j");
    j.job.attempt = attempt;
    Current::Left(History::of(&j, status, Utc::now(), None, TimeDelta::days(14)))
}

/// An attempt stored, due in an hour: no message of it can have been sent yet.
fn pending(attempt: u32) -> Current {
    let mut j = stored("orders", "j", Utc::now() + TimeDelta::hours(1), 1);
    j.job.attempt = attempt;
    Current::Stored(j)
}

/// An attempt stored and due: the poller may have sent it and not removed it yet.
fn due(attempt: u32) -> Current {
    let mut j = stored_job("j");
    j.job.attempt = attempt;
    Current::Stored(j)
}

#[test]
fn nothing_known_or_the_failed_attempt_sent_makes_the_next() {
    assert_eq!(decide_at(1, None, Utc::now()), Decision::Next);
    assert_eq!(
        decide_at(1, Some(&left(1, HistoryStatus::Dispatched)), Utc::now()),
        Decision::Next
    );
    assert_eq!(
        decide_at(4, Some(&left(4, HistoryStatus::Dispatched)), Utc::now()),
        Decision::Next
    );
    // An earlier record (a chain stored under `{id}:a{n}` before the upgrade) does not block.
    assert_eq!(
        decide_at(3, Some(&left(1, HistoryStatus::Dispatched)), Utc::now()),
        Decision::Next
    );
}

#[test]
fn the_next_attempt_existing_is_a_duplicate_and_a_later_one_a_conflict() {
    assert_eq!(decide_at(1, Some(&pending(2)), Utc::now()), Decision::Duplicate);
    assert_eq!(
        decide_at(1, Some(&left(2, HistoryStatus::Dispatched)), Utc::now()),
        Decision::Duplicate
    );
    assert_eq!(decide_at(1, Some(&pending(3)), Utc::now()), Decision::Conflict(3));
    assert_eq!(
        decide_at(1, Some(&left(3, HistoryStatus::Dispatched)), Utc::now()),
        Decision::Conflict(3)
    );
    // A pending attempt the report cannot come from (never delivered yet): nothing is made.
    assert_eq!(decide_at(2, Some(&pending(2)), Utc::now()), Decision::Conflict(2));
    assert_eq!(decide_at(2, Some(&pending(1)), Utc::now()), Decision::Conflict(1));
}

#[test]
fn a_failed_attempt_still_stored_once_due_makes_the_next_over_it() {
    let now = Utc::now();
    // Sent, and not yet removed by the poller (a batch's removal, a FIFO hold, a debt).
    assert_eq!(decide_at(2, Some(&due(2)), now), Decision::Next);
    assert_eq!(decide_at(1, Some(&due(1)), now + TimeDelta::days(1)), Decision::Next);
    // Moved to a later window after a send that may have happened.
    let mut moved = stored("orders", "j", now + TimeDelta::hours(1), 1);
    moved.maybe_delivered_at = Some(now - TimeDelta::minutes(1));
    assert_eq!(decide_at(1, Some(&Current::Stored(moved)), now), Decision::Next);
    // Parked after SQS refused it: never delivered.
    let mut refused = stored_job("j");
    refused.parked = Some(ParkInfo {
        parked_at: now,
        code: "InvalidMessageContents".into(),
        message: String::new(),
    });
    assert_eq!(
        decide_at(1, Some(&Current::Stored(refused)), now),
        Decision::Conflict(1)
    );
    // The attempt after the failed one is a duplicate, a later one a conflict, due or not.
    assert_eq!(decide_at(1, Some(&due(2)), now), Decision::Duplicate);
    assert_eq!(decide_at(2, Some(&due(3)), now), Decision::Duplicate);
    assert_eq!(decide_at(1, Some(&due(3)), now), Decision::Conflict(3));
}

#[test]
fn a_cancelled_chain_schedules_nothing_for_any_attempt_up_to_the_cancelled_one() {
    for failed in 1..=3 {
        assert_eq!(
            decide_at(failed, Some(&left(3, HistoryStatus::Cancelled)), Utc::now()),
            Decision::Cancelled(3),
            "{failed}"
        );
    }
    assert_eq!(
        decide_at(4, Some(&left(3, HistoryStatus::Cancelled)), Utc::now()),
        Decision::Conflict(3)
    );
}

#[test]
fn the_latest_attempt_wins_and_a_stored_one_over_a_record_of_the_same() {
    let now = Utc::now();
    let record = |attempt: u32, keep: i64| {
        let mut j = stored_job("j");
        j.job.attempt = attempt;
        Found::History(History::of(
            &j,
            HistoryStatus::Dispatched,
            now,
            None,
            TimeDelta::seconds(keep),
        ))
    };
    let job = |attempt: u32| {
        let mut j = stored_job("j");
        j.job.attempt = attempt;
        Found::Job(j)
    };
    assert_eq!(current_of(&[record(2, 60), job(3)], now).map(|c| c.attempt()), Some(3));
    assert!(matches!(
        current_of(&[record(3, 60), job(3)], now),
        Some(Current::Stored(_))
    ));
    assert_eq!(
        current_of(&[record(5, -1)], now),
        None,
        "a record past its time is forgotten"
    );
}
