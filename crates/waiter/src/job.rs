//! The job model: what a stored or sent job carries. Requests are decoded into the contract's
//! `Job` and validated into it by `wire::request`.

use std::collections::BTreeMap;

use chrono::{DateTime, TimeDelta, Utc};

use crate::config::QueueName;
use crate::repeat::{Occurrence, Series};
use crate::windows::Windows;

pub use sqs_waiter_contract::OnDuplicate;
pub use sqs_waiter_contract::MAX_JOBS_PER_REQUEST;
use sqs_waiter_contract::{
    ATTEMPT_ATTRIBUTE, CRITICAL_PRIORITY, DEFAULT_PRIORITY, DEFAULT_WEIGHT, JOB_ID_ATTRIBUTE, OCCURRENCE_ATTRIBUTE,
    OCCURRENCE_SEPARATOR, PRIORITY_ATTRIBUTE, RESERVED_ATTRIBUTE_PREFIX, WEIGHT_ATTRIBUTE,
};

/// What a send may take to reach SQS (network, an SDK retry): at the moment of sending, a message
/// that would arrive within this of its `expires_at` counts as arriving expired.
pub const SEND_ALLOWANCE: TimeDelta = TimeDelta::milliseconds(200);
/// Longest `job_id`.
pub const MAX_JOB_ID_CHARS: usize = 128;

/// A message attribute value, kept exactly as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttributeData {
    String(String),
    Binary(Vec<u8>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageAttribute {
    pub data_type: String,
    pub data: AttributeData,
}

impl MessageAttribute {
    /// Bytes SQS counts toward the message size: name, type and value.
    pub fn size_with_name(&self, name: &str) -> usize {
        name.len()
            + self.data_type.len()
            + match &self.data {
                AttributeData::String(s) => s.len(),
                AttributeData::Binary(b) => b.len(),
            }
    }
}

pub type Attributes = BTreeMap<String, MessageAttribute>;

pub use sqs_waiter_contract::Tags;

/// A validated job.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub queue: QueueName,
    pub job_id: String,
    /// Whether the caller chose the id (only then can it already exist).
    pub job_id_given: bool,
    pub message_body: String,
    pub message_attributes: Attributes,
    pub perform_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub message_group_id: Option<String>,
    pub message_deduplication_id: Option<String>,
    /// Daily windows the job may be sent in; `perform_at` is always inside one.
    pub windows: Option<Windows>,
    /// Lower takes the rate budget first; `CRITICAL_PRIORITY` neither waits for it nor uses it.
    pub priority: u16,
    /// Messages this job counts as against the rate budget.
    pub weight: u16,
    /// Which attempt of the job this is: 1 until a consumer's `retry`, then one more each time.
    /// Its messages carry it as `waiter.attempt` from 2 on.
    pub attempt: u32,
    /// A replayed copy: its messages carry its `job_id` as `waiter.job_id`, the id its consumer
    /// retries it under (the body names the job it copies).
    pub names_itself: bool,
    /// The X-Ray trace header of the call that enqueued it (or the caller's `trace_header`),
    /// sent as SQS's `AWSTraceHeader` system attribute, which is outside the message's size and
    /// its 10 attributes.
    pub trace_header: Option<String>,
    /// A series (DESIGN "Recurring jobs"): `perform_at` is its next occurrence.
    pub repeat: Option<Box<Series>>,
    /// On a series' copy planned by the poller: the occurrence it sends. Never stored.
    pub occurrence: Option<Occurrence>,
    /// `enqueue` only, never stored: what to do with a stored job of the same id (debounce).
    pub on_duplicate: OnDuplicate,
    /// What `list` and `cancel_many` find the job by (`tags`); kept by its attempts,
    /// occurrences, replays and history records, never sent to SQS. Empty: none.
    pub tags: Tags,
}

impl Job {
    /// Whether this is an attempt after the first.
    pub fn is_retried(&self) -> bool {
        self.attempt > 1
    }

    /// Whether its record is kept whatever the history settings (`Config::history_keep_for`):
    /// an attempt after the first's tells a stale `retry` from a new one, and a replayed copy's
    /// makes a repeated `replay` a duplicate.
    pub fn keeps_record(&self) -> bool {
        self.is_retried() || self.names_itself
    }

    /// `keeps_record`, for a job whose message went to SQS: a tagged job's record is kept too,
    /// since it is where a retry of that message finds the tags (the message does not carry
    /// them). Its removal is then an update into the record, the same write units as the
    /// delete (docs/cost.md "Tags"). A tagged job cancelled or expired unsent keeps none: no
    /// retry can follow it, and its id is free again as before.
    pub fn keeps_record_when_sent(&self) -> bool {
        self.keeps_record() || !self.tags.is_empty()
    }

    /// Body plus attributes, as SQS counts a message's size; with `waiter.job_id` whenever
    /// the message would carry it by default (so a batch is sized for it, whatever the
    /// deployment's `WAITER_JOB_ID_ATTRIBUTE`).
    pub fn message_bytes(&self) -> usize {
        let without = self.bytes_without_id();
        without
            + self
                .id_attribute_beside(without)
                .map_or(0, |(n, a)| a.size_with_name(n))
    }

    /// Body plus the attributes it always carries (the caller's and ours), without the id
    /// carried where it leaves room: what a history record keeps (`KeptMessage`).
    pub fn bytes_without_id(&self) -> usize {
        message_bytes(&self.message_body, &self.message_attributes)
            + self.rank_attributes().map(|(n, a)| a.size_with_name(n)).sum::<usize>()
    }

    /// `waiter.job_id` with the job's own id, which every message carries by default (issue
    /// 82), so that a consumer holding only the message can `retry` it: only where the message
    /// leaves room under SQS's attribute count and size, and never in place of a copy's or an
    /// occurrence's own (`None` then: the message goes without it, never refused for it).
    pub fn id_attribute(&self) -> Option<(&'static str, MessageAttribute)> {
        self.id_attribute_beside(self.bytes_without_id())
    }

    /// `id_attribute` of a message of `bytes_without_id` (as `bytes_without_id` counts it).
    fn id_attribute_beside(&self, bytes_without_id: usize) -> Option<(&'static str, MessageAttribute)> {
        let (mut ours, mut named) = (0, false);
        for (name, _) in self.rank_attributes() {
            ours += 1;
            named |= name == JOB_ID_ATTRIBUTE;
        }
        if named
            || self.message_attributes.contains_key(JOB_ID_ATTRIBUTE)
            || self.message_attributes.len() + ours >= crate::limits::SQS_MAX_MESSAGE_ATTRIBUTES
        {
            return None;
        }
        let attribute = MessageAttribute {
            data_type: "String".to_owned(),
            data: AttributeData::String(self.job_id.clone()),
        };
        // Within the earlier default size, not SQS's 1 MiB: an older queue, or one set lower
        // than its messages plus the id need, would refuse the message for the id alone.
        (bytes_without_id + attribute.size_with_name(JOB_ID_ATTRIBUTE)
            <= crate::limits::SQS_EARLIER_DEFAULT_MAX_MESSAGE_BYTES)
            .then_some((JOB_ID_ATTRIBUTE, attribute))
    }

    /// The attributes the message carries: the caller's, and ours where they say something:
    /// `waiter.attempt` from the second attempt on, `waiter.job_id` on a replayed copy (and with
    /// `waiter.occurrence` on a series' occurrence), and
    /// `waiter.priority` and `waiter.weight` where they are not the defaults (so that a
    /// consumer's `retry` keeps them).
    pub fn sent_attributes(&self) -> Attributes {
        let mut attributes = self.message_attributes.clone();
        attributes.extend(self.rank_attributes().map(|(n, a)| (n.to_owned(), a)));
        attributes
    }

    fn rank_attributes(&self) -> impl Iterator<Item = (&'static str, MessageAttribute)> {
        let number = |n: String| MessageAttribute {
            data_type: "Number".to_owned(),
            data: AttributeData::String(n),
        };
        let text = |s: String| MessageAttribute {
            data_type: "String".to_owned(),
            data: AttributeData::String(s),
        };
        [
            self.is_retried()
                .then(|| (ATTEMPT_ATTRIBUTE, number(self.attempt.to_string()))),
            self.names_itself.then(|| (JOB_ID_ATTRIBUTE, text(self.job_id.clone()))),
            self.occurrence_id().map(|id| (JOB_ID_ATTRIBUTE, text(id))),
            self.occurrence_at().map(|at| {
                let rfc3339 = at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true);
                (OCCURRENCE_ATTRIBUTE, text(rfc3339))
            }),
            (self.priority != DEFAULT_PRIORITY).then(|| (PRIORITY_ATTRIBUTE, number(self.priority.to_string()))),
            (self.weight != DEFAULT_WEIGHT).then(|| (WEIGHT_ATTRIBUTE, number(self.weight.to_string()))),
        ]
        .into_iter()
        .flatten()
    }

    /// The instant of the occurrence a series' message is for: the planned one, or (for the
    /// size and attribute checks before any is planned) its next, which takes the same room.
    pub fn occurrence_at(&self) -> Option<DateTime<Utc>> {
        self.repeat
            .as_ref()
            .map(|_| self.occurrence.map_or(self.perform_at, |o| o.at))
    }

    /// A series' occurrence's id, `{job_id}@{epoch seconds}`: its messages' `waiter.job_id`,
    /// the id its retries go under.
    pub fn occurrence_id(&self) -> Option<String> {
        self.occurrence_at()
            .map(|at| format!("{}{OCCURRENCE_SEPARATOR}{}", self.job_id, at.timestamp()))
    }

    /// A series' planned occurrence as a one-off job of its own: under its occurrence id, which
    /// its messages carry as `waiter.job_id` (and its instant as `waiter.occurrence`), so that
    /// it can be parked and redriven while the series goes on.
    pub fn occurrence_as_job(&self) -> Option<Job> {
        let (id, at) = (self.occurrence_id()?, self.occurrence_at()?);
        let mut attributes = self.message_attributes.clone();
        attributes.insert(
            OCCURRENCE_ATTRIBUTE.to_owned(),
            MessageAttribute {
                data_type: "String".to_owned(),
                data: AttributeData::String(at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)),
            },
        );
        Some(Job {
            job_id: id,
            message_attributes: attributes,
            perform_at: self.perform_at,
            names_itself: true,
            repeat: None,
            occurrence: None,
            ..self.clone()
        })
    }

    /// A series' item with a `trigger`'s extra occurrence waiting (`Extra::returns_to`): the copy
    /// a pass plans to send it, at `perform_at` and outside the windows, whose move returns the
    /// item to where it stood.
    pub fn pending_extra(&self) -> Option<Job> {
        let returns_to = self.repeat.as_ref()?.extra.returns_to?;
        Some(Job {
            occurrence: Some(Occurrence {
                at: self.perform_at,
                next: Some(returns_to),
                from: returns_to,
                skipped: 0,
                extra: true,
            }),
            windows: None,
            ..self.clone()
        })
    }

    /// Moves the job to `at`: its `perform_at`, or for a series with a `trigger`'s extra
    /// occurrence waiting, where the item returns once that one is sent (it goes first, as
    /// asked).
    pub fn move_to(&mut self, at: DateTime<Utc>) {
        match self.repeat.as_deref_mut().and_then(|s| s.extra.returns_to.as_mut()) {
            Some(returns_to) => *returns_to = at,
            None => self.perform_at = at,
        }
    }

    /// Neither waits for the rate budget nor uses it.
    pub fn is_critical(&self) -> bool {
        self.priority == CRITICAL_PRIORITY
    }

    /// The one expiry rule: a job that would arrive after `expires_at` is not sent.
    pub fn arrives_expired(&self, arrival: DateTime<Utc>) -> bool {
        self.expires_at.is_some_and(|e| e < arrival)
    }

    /// The expiry rule at the moment of sending: the send itself takes time (`SEND_ALLOWANCE`).
    pub fn expires_in_flight(&self, arrival: DateTime<Utc>) -> bool {
        self.arrives_expired(arrival + SEND_ALLOWANCE)
    }

    /// The window rule at the moment of sending: a job planned to arrive at `arrival` may
    /// arrive up to `SEND_ALLOWANCE` later, and must still be inside a window then.
    pub fn outside_windows_in_flight(&self, arrival: DateTime<Utc>) -> bool {
        self.windows
            .as_ref()
            .is_some_and(|w| !w.contains(arrival) || !w.contains(arrival + SEND_ALLOWANCE))
    }
}

/// The attempt a message's attributes carry in `waiter.attempt`, if any.
pub fn attempt_in(attributes: &Attributes) -> Option<u32> {
    number_in(attributes, ATTEMPT_ATTRIBUTE)
}

/// A caller's attributes without `waiter.*` ones: every path that sends a message replaces
/// them with ours (`Job::sent_attributes`), so a caller can neither forge nor drop them.
pub fn without_reserved<V>(mut attributes: BTreeMap<String, V>) -> BTreeMap<String, V> {
    attributes.retain(|name, _| !name.starts_with(RESERVED_ATTRIBUTE_PREFIX));
    attributes
}

/// A whole number a message's attributes carry under `name` (a `waiter.*` one), if any.
pub fn number_in<T: std::str::FromStr>(attributes: &Attributes, name: &str) -> Option<T> {
    match &attributes.get(name)?.data {
        AttributeData::String(s) => s.parse().ok(),
        AttributeData::Binary(_) => None,
    }
}

pub fn message_bytes(body: &str, attributes: &Attributes) -> usize {
    body.len() + attributes.iter().map(|(n, a)| a.size_with_name(n)).sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::{SQS_EARLIER_DEFAULT_MAX_MESSAGE_BYTES, SQS_MAX_MESSAGE_ATTRIBUTES, SQS_MAX_MESSAGE_BYTES};

    fn text(s: &str) -> MessageAttribute {
        MessageAttribute {
            data_type: "String".to_owned(),
            data: AttributeData::String(s.to_owned()),
        }
    }

    /// Issue 82 (13): every message carries its job's id where it leaves room, counted in its
    /// size; never in place of a copy's or an occurrence's, never past SQS's limits.
    #[test]
    fn a_message_carries_its_jobs_id_where_it_leaves_room() {
        let mut job = crate::testing::stored("orders", "j-1", Utc::now(), 1).job;
        let id = |j: &Job| j.id_attribute().map(|(n, a)| (n, a.data));
        assert_eq!(id(&job), Some((JOB_ID_ATTRIBUTE, AttributeData::String("j-1".into()))));
        assert_eq!(
            job.message_bytes(),
            job.message_body.len() + "waiter.job_id".len() + 6 + 3
        );
        for i in 0..SQS_MAX_MESSAGE_ATTRIBUTES - 1 {
            job.message_attributes.insert(format!("a{i}"), text("v"));
        }
        assert!(id(&job).is_some(), "nine of the caller's: room for the tenth");
        job.attempt = 2;
        assert_eq!(id(&job), None, "nine and waiter.attempt: no room");
        job.attempt = 1;
        job.message_attributes.clear();
        job.message_body = "x".repeat(SQS_EARLIER_DEFAULT_MAX_MESSAGE_BYTES - 5);
        assert_eq!(id(&job), None, "no room within an older queue's 256 KiB");
        assert_eq!(job.message_bytes(), SQS_EARLIER_DEFAULT_MAX_MESSAGE_BYTES - 5);
        job.message_body = "x".repeat(SQS_MAX_MESSAGE_BYTES - 5);
        assert_eq!(id(&job), None, "past 256 KiB, whatever the queue allows");
        job.message_body = "b".into();
        job.names_itself = true;
        assert_eq!(id(&job), None, "a copy carries its own already");
        assert_eq!(job.sent_attributes().len(), 1);
    }
}
