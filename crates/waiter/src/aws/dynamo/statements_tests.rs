//! The removal statements: the edition condition on every one, and an update into a history
//! record that leaves none of the job's other attributes behind.

use chrono::{DateTime, TimeDelta};

use super::*;
use crate::job::{AttributeData, MessageAttribute};
use crate::ports::{History, HistoryStatus, ParkInfo};
use crate::testing::stored;

fn at(s: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(s, 250_000_000).expect("time")
}

/// A job with every optional attribute the codec writes.
fn every_attribute() -> StoredJob {
    let mut j = stored("jobs.fifo", "j", at(1_800_000_000), 4);
    j.job.message_attributes.insert(
        "kind".into(),
        MessageAttribute {
            data_type: "String".into(),
            data: AttributeData::String("x".into()),
        },
    );
    j.job.expires_at = Some(at(1_800_000_100));
    j.job.message_group_id = Some("g".into());
    j.job.message_deduplication_id = Some("d".into());
    let window = sqs_waiter_contract::Window {
        from: "08:00".into(),
        to: "09:00".into(),
    };
    j.job.windows = Some(crate::windows::Windows::parse(&[window], Some("Europe/Berlin")).expect("windows"));
    j.job.priority = 7;
    j.job.weight = 3;
    j.job.tags.insert("customer".into(), "42".into());
    j.job.attempt = 2;
    j.job.names_itself = true;
    j.job.trace_header = Some("Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1".into());
    j.job.repeat = Some(Box::new(crate::repeat::Series {
        every: crate::repeat::Every::Cron(
            crate::repeat::Cron::parse("0 9 * * *").expect("cron"),
            chrono_tz::Tz::UTC,
        ),
        until: Some(at(1_900_000_000)),
        count: Some(3),
        catch_up: crate::repeat::CatchUp::All,
        occurrences: 1,
        held: Some(at(1_799_999_000)),
        extra: Default::default(),
    }));
    j.maybe_delivered_at = Some(at(1_800_000_001));
    j.parked = Some(ParkInfo {
        parked_at: at(1_800_000_002),
        code: "c".into(),
        message: "m".into(),
    });
    j.version = 3;
    j
}

fn retired(job: &StoredJob, record: Option<History>) -> Retired {
    Retired {
        key: job.key(),
        edition: job.edition(),
        record,
        advance: None,
    }
}

#[test]
fn the_job_attributes_cover_everything_the_codec_writes() {
    let item = encode(&every_attribute());
    for name in item.keys().filter(|n| *n != A_SCHEDULER && *n != A_JOB_ID) {
        assert!(
            job_attributes().any(|a| a == name),
            "{name} is not removed by a record's update"
        );
    }
}

#[test]
fn a_removal_is_a_delete_on_the_keys_and_the_edition() {
    let mut job = stored("orders", "a", at(1_800_000_000), 4);
    let q = job.job.queue.clone();
    let s = removal_statement(&q, "t.orders", &retired(&job, None), None).expect("statement");
    assert_eq!(
        s.statement,
        "DELETE FROM \"t.orders\" WHERE \"scheduler\" = ? AND \"job_id\" = ? AND \"perform_at\" IS NOT MISSING \
         AND (\"enqueued_at\" IS MISSING OR \"enqueued_at\" = ?) AND (\"version\" IS MISSING OR \"version\" = ?) AND (\"item_format\" IS MISSING OR \"item_format\" <= 2)"
    );
    let keys = key(&q, &job.key());
    let p = s.parameters.expect("parameters");
    assert_eq!(p[0], keys[A_SCHEDULER]);
    assert_eq!(p[1], AttributeValue::S("a".into()));
    assert_eq!(p[2], n(job.enqueued_at));
    assert_eq!(p[3], AttributeValue::N("1".into()));
    // A later edition must carry its version: a missing one no longer matches.
    job.version = 2;
    let s = removal_statement(&q, "t.orders", &retired(&job, None), None).expect("statement");
    assert!(
        s.statement
            .ends_with("AND \"version\" = ? AND (\"item_format\" IS MISSING OR \"item_format\" <= 2)"),
        "{}",
        s.statement
    );
    assert_eq!(s.parameters.expect("parameters")[3], AttributeValue::N("2".into()));
}

#[test]
fn a_removal_with_a_record_turns_the_item_into_it_and_removes_every_other_attribute() {
    let job = every_attribute();
    let q = job.job.queue.clone();
    for keep_message in [false, true] {
        let record = History::of(
            &job,
            HistoryStatus::Dispatched,
            DateTime::from_timestamp(1_800_000_003, 0).expect("time"),
            Some("m-1".into()),
            TimeDelta::days(7),
        )
        .keeping_message(&job.job, keep_message);
        let item = encode_history(&record);
        let s = removal_statement(&q, "t", &retired(&job, Some(record)), Some(&item)).expect("statement");
        let text = &s.statement;
        let p = s.parameters.expect("parameters");
        assert!(text.starts_with("UPDATE \"t\" SET "), "{text}");
        // Every attribute of the record but its keys is set, in order, to its value.
        let mut set: Vec<&String> = item.keys().filter(|n| *n != A_SCHEDULER && *n != A_JOB_ID).collect();
        set.sort();
        for (i, name) in set.iter().enumerate() {
            assert!(text.contains(&format!("SET \"{name}\" = ?")), "{name}: {text}");
            assert_eq!(p[i], item[name.as_str()], "{name}");
        }
        // Every attribute of the job that the record lacks is removed; none it has.
        for name in encode(&job).keys().filter(|n| *n != A_SCHEDULER && *n != A_JOB_ID) {
            let removed = text.contains(&format!("REMOVE \"{name}\""));
            assert_eq!(removed, !item.contains_key(name), "{name}: {text}");
        }
        assert!(text.contains("REMOVE \"perform_at\""), "out of the due index: {text}");
        assert_eq!(text.contains("REMOVE \"message_body\""), !keep_message, "{text}");
        // The same condition as a delete: the update applied once finds no perform_at again.
        assert!(
            text.ends_with(
                "WHERE \"scheduler\" = ? AND \"job_id\" = ? AND \"perform_at\" IS NOT MISSING \
                 AND (\"enqueued_at\" IS MISSING OR \"enqueued_at\" = ?) AND \"version\" = ? AND (\"item_format\" IS MISSING OR \"item_format\" <= 2)"
            ),
            "{text}"
        );
        assert_eq!(p.len(), set.len() + 4);
        assert_eq!(p[set.len() + 3], AttributeValue::N("3".into()));
    }
}

#[test]
fn a_series_move_sets_its_next_occurrence_and_version_and_keeps_the_rest() {
    let job = every_attribute();
    let q = job.job.queue.clone();
    let advance = crate::ports::Advance {
        perform_at: at(1_800_000_060),
        occurrences: 5,
        arriving_at: None,
        extra_sent: None,
        tagged: false,
    };
    let r = Retired {
        advance: Some(advance),
        ..retired(&job, None)
    };
    let set = super::super::retire::advance_set(&r, &advance);
    let s = removal_statement(&q, "t", &r, Some(&set)).expect("statement");
    assert_eq!(
        s.statement,
        "UPDATE \"t\" SET \"occurrences\" = ? SET \"perform_at\" = ? SET \"version\" = ? REMOVE \"repeat_held\" \
         REMOVE \"maybe_delivered_at\" WHERE \"scheduler\" = ? \
         AND \"job_id\" = ? AND \"perform_at\" IS NOT MISSING AND (\"enqueued_at\" IS MISSING OR \"enqueued_at\" = ?) \
         AND \"version\" = ? AND (\"item_format\" IS MISSING OR \"item_format\" <= 2)"
    );
    let p = s.parameters.expect("parameters");
    assert_eq!(p[0], AttributeValue::N("5".into()));
    assert_eq!(p[1], n(at(1_800_000_060)));
    // One more than the edition sent (3): the same statement again finds its condition false.
    assert_eq!(p[2], AttributeValue::N("4".into()));
    assert_eq!(p[6], AttributeValue::N("3".into()));
}

#[test]
fn a_series_move_after_an_occurrence_sent_ahead_sets_its_arrival_as_the_mark() {
    let job = every_attribute();
    let q = job.job.queue.clone();
    let advance = crate::ports::Advance {
        perform_at: at(1_800_003_600),
        occurrences: 5,
        arriving_at: Some(at(1_800_000_090)),
        extra_sent: None,
        tagged: false,
    };
    let r = Retired {
        advance: Some(advance),
        ..retired(&job, None)
    };
    let set = super::super::retire::advance_set(&r, &advance);
    let s = removal_statement(&q, "t", &r, Some(&set)).expect("statement");
    assert!(
        s.statement.starts_with(
            "UPDATE \"t\" SET \"maybe_delivered_at\" = ? SET \"occurrences\" = ? SET \"perform_at\" = ? \
             SET \"version\" = ? REMOVE \"repeat_held\" WHERE"
        ),
        "{}",
        s.statement
    );
    assert_eq!(s.parameters.expect("parameters")[0], n(at(1_800_000_090)));
}

#[test]
fn identifiers_are_quoted_and_a_quote_in_one_is_doubled() {
    for (name, expected) in [
        ("a.b-c_d", "\"a.b-c_d\""),
        ("x\"y", "\"x\"\"y\""),
        ("\"", "\"\"\"\""),
        ("\"a\"\"", "\"\"\"a\"\"\"\"\""),
    ] {
        let mut text = String::from("<");
        push_quoted(&mut text, name);
        assert_eq!(text, format!("<{expected}"), "{name}");
    }
}

#[test]
fn only_throttles_and_faults_are_sent_again_and_a_failed_condition_is_done() {
    use BatchStatementErrorCodeEnum as C;
    assert_eq!(answer(None), Answer::Done);
    assert_eq!(answer(Some(&C::ConditionalCheckFailed)), Answer::Done);
    for again in [
        C::ProvisionedThroughputExceeded,
        C::RequestLimitExceeded,
        C::ThrottlingError,
        C::TransactionConflict,
        C::InternalServerError,
    ] {
        assert_eq!(answer(Some(&again)), Answer::Again, "{again:?}");
    }
    for refused in [
        C::ValidationError,
        C::AccessDenied,
        C::ResourceNotFound,
        C::ItemCollectionSizeLimitExceeded,
    ] {
        assert_eq!(answer(Some(&refused)), Answer::Refused(refused.as_str().to_owned()));
    }
}
