//! The one item codec: jobs, history records, leases and keys to DynamoDB items and back, and
//! item sizes as DynamoDB counts them. Attribute names are the table schema (docs/contract.md "Table
//! schema").

use std::collections::HashMap;

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{DateTime, Utc};

use crate::config::QueueName;
use crate::job::{AttributeData, Attributes, Job, MessageAttribute};
use crate::ports::{
    Edition, Found, History, HistoryStatus, JobKey, KeptMessage, Lease, ParkInfo, Partition, PreviousRun, Retired,
    StoredJob, View,
};
use crate::time::{format_epoch, parse_epoch_decimal};
use sqs_waiter_contract::{DEFAULT_PRIORITY, DEFAULT_WEIGHT, MAX_PRIORITY, MAX_WEIGHT};

pub type Item = HashMap<String, AttributeValue>;

#[path = "codec_body.rs"]
mod body;
#[path = "codec_chain.rs"]
mod chain;
#[path = "codec_debts.rs"]
mod debts;
#[path = "codec_format.rs"]
mod format;
#[path = "codec_ledger.rs"]
mod ledger;
#[path = "codec_pause.rs"]
mod pause;
#[path = "codec_repeat.rs"]
mod repeat;
#[path = "codec_tags.rs"]
mod tags;
pub use body::{body_of, A_MESSAGE_BODY_DEFLATE};
use body::{put_body, take_body};
use chain::{decode_chain, decode_windows, encode_chain, encode_windows};
pub use chain::{A_ATTEMPT, A_NAMES_ITSELF};
pub(crate) use debts::{debts_format, debts_newer_format, decode_debts, encode_debts};
pub use format::{group_as_given, newer_format, newer_reason, A_ITEM_FORMAT, ITEM_FORMAT};
pub(crate) use ledger::{decode_rate, encode_rate};
pub use pause::A_ENDED_PAUSES;
pub(crate) use pause::{decode_ended_pauses, decode_pause, encode_ended_pauses, pause_key};
use repeat::{decode_repeat, encode_repeat};
pub use repeat::{
    A_OCCURRENCES, A_REPEAT_CATCH_UP, A_REPEAT_COUNT, A_REPEAT_CRON, A_REPEAT_EVERY_S, A_REPEAT_EXPRESSION,
    A_REPEAT_EXTRA_LAST, A_REPEAT_EXTRA_RETURNS_TO, A_REPEAT_HELD, A_REPEAT_TIME_ZONE, A_REPEAT_UNTIL,
};
use tags::{decode_tags, encode_tags};
pub use tags::{A_TAGS, TAGS_FORMAT};

pub const INDEX_NAME: &str = "scheduler-perform_at-index";

pub const A_SCHEDULER: &str = "scheduler";
pub const A_JOB_ID: &str = "job_id";
pub const A_PERFORM_AT: &str = "perform_at";
pub const A_MESSAGE_BODY: &str = "message_body";
pub const A_MESSAGE_ATTRIBUTES: &str = "message_attributes";
pub const A_EXPIRES_AT: &str = "expires_at";
pub const A_GROUP_ID: &str = "message_group_id";
pub const A_DEDUP_ID: &str = "message_deduplication_id";
pub const A_ENQUEUED_AT: &str = "enqueued_at";
pub const A_PARKED_AT: &str = "parked_at";
pub const A_PARK_CODE: &str = "park_code";
pub const A_PARK_MESSAGE: &str = "park_message";
pub const A_VERSION: &str = "version";
pub const A_WINDOWS: &str = "windows";
pub const A_TIME_ZONE: &str = "time_zone";
pub const A_MAYBE_DELIVERED_AT: &str = "maybe_delivered_at";
/// A paused job: since when (epoch seconds). Absent on every job never paused.
pub const A_PAUSED_AT: &str = "paused_at";
/// Written only when not the default, so that a job that sets neither costs nothing more.
pub const A_PRIORITY: &str = "priority";
pub const A_WEIGHT: &str = "weight";
/// The X-Ray trace header sent as `AWSTraceHeader` (absent when the job has none).
pub const A_TRACE_HEADER: &str = "trace_header";
/// History records (docs/contract.md "History"): no `perform_at`, so never in the due index.
pub const A_HISTORY: &str = "history";
pub const A_LEFT_AT: &str = "left_at";
pub const A_MESSAGE_ID: &str = "message_id";
pub const A_SCHEDULED_FOR: &str = "scheduled_for";
/// The table's TTL attribute (epoch seconds), set on history records only.
pub const A_PURGE_AT: &str = "purge_at";
pub(crate) const A_SHARD_COUNTS: &str = "shard_counts";
pub(crate) const META_SORT_KEY: &str = "shards";
/// The queue's `WAITER_MAX_RATE` ledger item: arrivals booked per second, and its version.
pub(crate) const A_RATE_BOOKED: &str = "rate_booked";
pub(crate) const A_RATE_VERSION: &str = "rate_version";
/// The partitions waiting to book in rank order: shard to `rank|second|until_ms`.
pub(crate) const A_RATE_HEADS: &str = "rate_heads";
/// Where better-ranked bookings were moved to: rank to the second.
pub(crate) const A_RATE_FLOORS: &str = "rate_floors";
pub(crate) const RATE_SORT_KEY: &str = "rate";
pub(crate) const PAUSE_SORT_KEY: &str = "pause";
pub(crate) const A_DATA_TYPE: &str = "data_type";
pub(crate) const A_STRING_VALUE: &str = "string_value";
pub(crate) const A_BINARY_VALUE: &str = "binary_value";
pub(crate) const A_LEASE_OWNER: &str = "lease_owner";
pub(crate) const A_LEASE_UNTIL: &str = "lease_until";
pub(crate) const A_LEASE_HORIZON: &str = "lease_horizon";
pub(crate) const LEASE_SORT_KEY: &str = "lease";
/// When the lease's last run took it; kept when the lease is released.
pub(crate) const A_LEASE_STARTED: &str = "lease_started";
/// Set by a release when `WAITER_MAX_RATE` held due jobs back (`PreviousRun::on_time_from`).
pub(crate) const A_LEASE_ON_TIME_FROM: &str = "lease_on_time_from";
/// On a lease item handed on: the jobs SQS accepted that its holder could not remove, and
/// who handed them on (debts left from an earlier holder do not say the last one settled).
pub(crate) const A_LEASE_DEBTS: &str = "lease_debts";
pub(crate) const A_LEASE_HANDED_ON_BY: &str = "lease_handed_on_by";

pub fn partition_key(queue: &QueueName, partition: &Partition) -> String {
    match partition {
        Partition::Shard(n) => format!("{queue}#{n}"),
        Partition::Parked => format!("{queue}#parked"),
    }
}

pub(crate) fn lease_key(queue: &QueueName, shard: u32) -> Item {
    HashMap::from([
        (
            A_SCHEDULER.to_owned(),
            AttributeValue::S(format!("{queue}#lease#{shard}")),
        ),
        (A_JOB_ID.to_owned(), AttributeValue::S(LEASE_SORT_KEY.to_owned())),
    ])
}

pub(crate) fn meta_key(queue: &QueueName) -> Item {
    HashMap::from([
        (A_SCHEDULER.to_owned(), AttributeValue::S(format!("{queue}#meta"))),
        (A_JOB_ID.to_owned(), AttributeValue::S(META_SORT_KEY.to_owned())),
    ])
}

/// The queue's pause item: present while the queue is paused.
pub(crate) fn rate_key(queue: &QueueName) -> Item {
    HashMap::from([
        (A_SCHEDULER.to_owned(), AttributeValue::S(format!("{queue}#rate"))),
        (A_JOB_ID.to_owned(), AttributeValue::S(RATE_SORT_KEY.to_owned())),
    ])
}

/// An attribute of epoch seconds, when present and readable.
fn epoch_in(item: &Item, name: &str) -> Option<DateTime<Utc>> {
    match item.get(name) {
        Some(AttributeValue::N(v)) => parse_epoch_decimal(v),
        _ => None,
    }
}

pub(crate) fn decode_lease(item: &Item) -> Option<Lease> {
    Some(Lease {
        owner: match item.get(A_LEASE_OWNER) {
            Some(AttributeValue::S(o)) => o.clone(),
            _ => return None,
        },
        until: epoch_in(item, A_LEASE_UNTIL)?,
        horizon: epoch_in(item, A_LEASE_HORIZON)?,
    })
}

/// What the partition's previous run left on its lease item for the next.
pub(crate) fn decode_previous_run(item: &Item) -> Option<PreviousRun> {
    Some(PreviousRun {
        started: epoch_in(item, A_LEASE_STARTED)?,
        on_time_from: epoch_in(item, A_LEASE_ON_TIME_FROM),
    })
}

pub(crate) fn key(queue: &QueueName, k: &JobKey) -> Item {
    HashMap::from([
        (
            A_SCHEDULER.to_owned(),
            AttributeValue::S(partition_key(queue, &k.partition)),
        ),
        (A_JOB_ID.to_owned(), AttributeValue::S(k.job_id.clone())),
    ])
}

pub(crate) fn n(t: DateTime<Utc>) -> AttributeValue {
    AttributeValue::N(format_epoch(t))
}

/// The one item codec: job to item.
pub fn encode(s: &StoredJob) -> Item {
    let job = &s.job;
    let mut item = key(&job.queue, &s.key());
    item.insert(A_PERFORM_AT.into(), n(job.perform_at));
    item.insert(A_ENQUEUED_AT.into(), n(s.enqueued_at));
    item.insert(A_VERSION.into(), AttributeValue::N(s.version.to_string()));
    if let Some(attrs) = encode_attributes(&job.message_attributes) {
        item.insert(A_MESSAGE_ATTRIBUTES.into(), attrs);
    }
    if let Some(e) = job.expires_at {
        item.insert(A_EXPIRES_AT.into(), n(e));
    }
    if let Some(g) = &job.message_group_id {
        item.insert(A_GROUP_ID.into(), AttributeValue::S(g.clone()));
    }
    if let Some(d) = &job.message_deduplication_id {
        item.insert(A_DEDUP_ID.into(), AttributeValue::S(d.clone()));
    }
    encode_windows(&mut item, &job.windows);
    encode_chain(&mut item, job.attempt, job.names_itself);
    encode_repeat(&mut item, job.repeat.as_deref());
    encode_tags(&mut item, &job.tags);
    if let Some(t) = s.maybe_delivered_at {
        item.insert(A_MAYBE_DELIVERED_AT.into(), n(t));
    }
    if let Some(t) = s.paused_at {
        item.insert(A_PAUSED_AT.into(), n(t));
    }
    if job.priority != DEFAULT_PRIORITY {
        item.insert(A_PRIORITY.into(), AttributeValue::N(job.priority.to_string()));
    }
    if job.weight != DEFAULT_WEIGHT {
        item.insert(A_WEIGHT.into(), AttributeValue::N(job.weight.to_string()));
    }
    if let Some(t) = &job.trace_header {
        item.insert(A_TRACE_HEADER.into(), AttributeValue::S(t.clone()));
    }
    if let Some(p) = &s.parked {
        item.insert(A_PARKED_AT.into(), n(p.parked_at));
        item.insert(A_PARK_CODE.into(), AttributeValue::S(p.code.clone()));
        item.insert(A_PARK_MESSAGE.into(), AttributeValue::S(p.message.clone()));
    }
    // Last: whether it is deflated depends on the rest of the item's size.
    put_body(&mut item, &job.message_body);
    item
}

/// Message attributes as one map attribute; `None` when there are none.
fn encode_attributes(attributes: &Attributes) -> Option<AttributeValue> {
    (!attributes.is_empty()).then(|| {
        AttributeValue::M(
            attributes
                .iter()
                .map(|(name, a)| {
                    let mut m = HashMap::from([(A_DATA_TYPE.to_owned(), AttributeValue::S(a.data_type.clone()))]);
                    match &a.data {
                        AttributeData::String(v) => m.insert(A_STRING_VALUE.into(), AttributeValue::S(v.clone())),
                        AttributeData::Binary(v) => {
                            m.insert(A_BINARY_VALUE.into(), AttributeValue::B(Blob::new(v.clone())))
                        }
                    };
                    (name.clone(), AttributeValue::M(m))
                })
                .collect(),
        )
    })
}

/// The item's message attributes (none when it has none). Errors name the attribute.
fn decode_attributes(item: &Item) -> Result<Attributes, String> {
    let mut message_attributes = Attributes::new();
    match item.get(A_MESSAGE_ATTRIBUTES) {
        None => {}
        Some(AttributeValue::M(m)) => {
            for (name, v) in m {
                let AttributeValue::M(a) = v else {
                    return Err(format!("message_attributes.{name} is not a map"));
                };
                let data_type = match a.get(A_DATA_TYPE) {
                    Some(AttributeValue::S(d)) => d.clone(),
                    _ => return Err(format!("message_attributes.{name}.data_type is missing")),
                };
                let data = match (a.get(A_STRING_VALUE), a.get(A_BINARY_VALUE)) {
                    (Some(AttributeValue::S(v)), None) => AttributeData::String(v.clone()),
                    (None, Some(AttributeValue::B(b))) => AttributeData::Binary(b.clone().into_inner()),
                    _ => return Err(format!("message_attributes.{name} holds no single value")),
                };
                message_attributes.insert(name.clone(), MessageAttribute { data_type, data });
            }
        }
        Some(_) => return Err("message_attributes is not a map".into()),
    }
    Ok(message_attributes)
}

/// What `View::Keys` reads: the table's and the index's keys, and what orders due jobs under
/// a rate budget (`INDEX_INCLUDED_ATTRIBUTES`).
/// The keys come first (`decode_index_entry` reads them alone).
pub const ATTRIBUTES_OF_KEYS: &[&str] = &[A_SCHEDULER, A_JOB_ID, A_PERFORM_AT, A_PRIORITY, A_WEIGHT];

/// The non-key attributes the due index of a table the stacks create projects (`INCLUDE`):
/// what the poller ranks a page by before its consistent re-read. An index entry then bills
/// 1 write unit whatever the message's size (docs/cost.md). template.yaml and infra/ name them.
pub const INDEX_INCLUDED_ATTRIBUTES: &[&str] = &[A_PRIORITY, A_WEIGHT];

/// Every attribute of a job's item but its message: what `View::WithoutMessage` reads.
pub const ATTRIBUTES_WITHOUT_MESSAGE: &[&str] = &[
    A_SCHEDULER,
    A_JOB_ID,
    A_PERFORM_AT,
    A_EXPIRES_AT,
    A_GROUP_ID,
    A_DEDUP_ID,
    A_ENQUEUED_AT,
    A_PARKED_AT,
    A_PARK_CODE,
    A_PARK_MESSAGE,
    A_VERSION,
    A_WINDOWS,
    A_TIME_ZONE,
    A_MAYBE_DELIVERED_AT,
    A_PRIORITY,
    A_WEIGHT,
    A_ATTEMPT,
    A_NAMES_ITSELF,
    A_TRACE_HEADER,
    A_REPEAT_CRON,
    A_REPEAT_EVERY_S,
    A_REPEAT_EXPRESSION,
    A_REPEAT_TIME_ZONE,
    A_REPEAT_UNTIL,
    A_REPEAT_COUNT,
    A_REPEAT_CATCH_UP,
    A_OCCURRENCES,
    A_REPEAT_HELD,
    A_REPEAT_EXTRA_RETURNS_TO,
    A_REPEAT_EXTRA_LAST,
    A_PAUSED_AT,
    A_TAGS,
    // Read so that an item of a later format is never taken for one this release reads.
    A_ITEM_FORMAT,
];

/// The one item codec: item to job. Errors name the attribute. The item's strings (the body
/// above all) are moved into the job, not copied.
pub fn decode(queue: &QueueName, item: Item) -> Result<StoredJob, String> {
    decode_view(queue, item, View::Whole)
}

fn take_s(item: &mut Item, name: &str) -> Result<Option<String>, String> {
    match item.remove(name) {
        None => Ok(None),
        Some(AttributeValue::S(v)) => Ok(Some(v)),
        Some(_) => Err(format!("{name} is not a string")),
    }
}

/// A whole number from `min` to `max`, `default` when absent.
fn take_u16(item: &mut Item, name: &str, default: u16, min: u16, max: u16) -> Result<u16, String> {
    match item.remove(name) {
        None => Ok(default),
        Some(AttributeValue::N(v)) => v
            .parse::<u16>()
            .ok()
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| format!("{name} is not a whole number from {min} to {max}: {v}")),
        Some(_) => Err(format!("{name} is not a number")),
    }
}

fn take_t(item: &mut Item, name: &str) -> Result<Option<DateTime<Utc>>, String> {
    match item.remove(name) {
        None => Ok(None),
        Some(AttributeValue::N(v)) => parse_epoch_decimal(&v)
            .map(Some)
            .ok_or_else(|| format!("{name} is not epoch seconds: {v}")),
        Some(_) => Err(format!("{name} is not a number")),
    }
}

/// `decode` of an item read in `view`: without its message, the body reads as empty (and, in
/// `View::Keys`, everything but the keys as absent).
pub fn decode_view(queue: &QueueName, mut item: Item, view: View) -> Result<StoredJob, String> {
    if let Some(format) = newer_format(&item) {
        return Err(newer_reason(format));
    }
    let partition = decode_partition(queue, &item)?;
    let mut message_attributes = decode_attributes(&item)?;
    let (attempt, names_itself) = decode_chain(&item, &mut message_attributes)?;
    let windows = decode_windows(&item)?;
    let repeat = decode_repeat(&item)?.map(Box::new);
    let tags = decode_tags(&item)?;
    let version = match item.get(A_VERSION) {
        None => 1,
        Some(AttributeValue::N(v)) => v.parse().map_err(|_| format!("version is not a whole number: {v}"))?,
        Some(_) => return Err("version is not a number".into()),
    };
    let item = &mut item;
    let parked = match take_t(item, A_PARKED_AT)? {
        Some(parked_at) => Some(ParkInfo {
            parked_at,
            code: take_s(item, A_PARK_CODE)?.unwrap_or_default(),
            message: take_s(item, A_PARK_MESSAGE)?.unwrap_or_default(),
        }),
        None => None,
    };
    let perform_at = take_t(item, A_PERFORM_AT)?.ok_or("perform_at is missing")?;
    Ok(StoredJob {
        job: Job {
            on_duplicate: Default::default(),
            queue: queue.clone(),
            job_id: take_s(item, A_JOB_ID)?.ok_or("job_id is missing")?,
            job_id_given: true,
            message_body: match (take_body(item)?, view) {
                (Some(body), _) => body,
                (None, View::WithoutMessage | View::Keys) => String::new(),
                (None, View::Whole) => return Err("message_body is missing".into()),
            },
            message_attributes,
            perform_at,
            expires_at: take_t(item, A_EXPIRES_AT)?,
            message_group_id: take_s(item, A_GROUP_ID)?,
            message_deduplication_id: take_s(item, A_DEDUP_ID)?,
            windows,
            priority: take_u16(item, A_PRIORITY, DEFAULT_PRIORITY, 0, MAX_PRIORITY)?,
            weight: take_u16(item, A_WEIGHT, DEFAULT_WEIGHT, 1, MAX_WEIGHT)?,
            attempt,
            names_itself,
            trace_header: take_s(item, A_TRACE_HEADER)?,
            repeat,
            occurrence: None,
            tags,
        },
        partition,
        enqueued_at: take_t(item, A_ENQUEUED_AT)?.unwrap_or(perform_at),
        parked,
        version,
        maybe_delivered_at: take_t(item, A_MAYBE_DELIVERED_AT)?,
        paused_at: take_t(item, A_PAUSED_AT)?,
    })
}

/// An entry of a due-index page (`View::Keys`). One whose ranking attributes this release
/// cannot read (a later release widened `weight` or `priority`, say) is still answered by its
/// keys, ranked by the defaults: the consistent re-read then checks its format and leaves it
/// untouched, counted, its FIFO group held (issue 82). Only damaged keys skip it.
pub fn decode_index_entry(queue: &QueueName, item: Item) -> Result<StoredJob, String> {
    let keys: Item = ATTRIBUTES_OF_KEYS[..3]
        .iter()
        .filter_map(|name| item.get(*name).map(|v| ((*name).to_owned(), v.clone())))
        .collect();
    decode_view(queue, item, View::Keys).or_else(|_| decode_view(queue, keys, View::Keys))
}

/// History record to item: the job's key, `purge_at` for DynamoDB's TTL, and the message only
/// when it was kept (`WAITER_HISTORY_BODY`).
pub fn encode_history(h: &History) -> Item {
    let mut item = key(
        &h.queue,
        &JobKey {
            partition: h.partition.clone(),
            job_id: h.job_id.clone(),
        },
    );
    item.insert(A_HISTORY.into(), AttributeValue::S(h.status.as_str().to_owned()));
    item.insert(A_LEFT_AT.into(), n(h.at));
    item.insert(A_SCHEDULED_FOR.into(), n(h.perform_at));
    item.insert(A_VERSION.into(), AttributeValue::N(h.version.to_string()));
    // TTL reads whole epoch seconds.
    item.insert(A_PURGE_AT.into(), AttributeValue::N(h.purge_at.timestamp().to_string()));
    if let Some(m) = &h.message_id {
        item.insert(A_MESSAGE_ID.into(), AttributeValue::S(m.clone()));
    }
    if let Some(t) = h.maybe_delivered_at {
        item.insert(A_MAYBE_DELIVERED_AT.into(), n(t));
    }
    if let Some(e) = h.expires_at {
        item.insert(A_EXPIRES_AT.into(), n(e));
    }
    encode_windows(&mut item, &h.windows);
    encode_chain(&mut item, h.attempt, h.names_itself);
    encode_tags(&mut item, &h.tags);
    if let Some(o) = h.occurrences {
        item.insert(A_OCCURRENCES.into(), AttributeValue::N(o.to_string()));
    }
    if let Some(kept) = &h.message {
        if let Some(attrs) = encode_attributes(&kept.attributes) {
            item.insert(A_MESSAGE_ATTRIBUTES.into(), attrs);
        }
        if let Some(g) = &kept.group_id {
            item.insert(A_GROUP_ID.into(), AttributeValue::S(g.clone()));
        }
        put_body(&mut item, &kept.body);
    }
    item
}

/// Item to job or history record.
pub fn decode_any(queue: &QueueName, item: Item) -> Result<Found, String> {
    if let Some(format) = newer_format(&item) {
        return Err(newer_reason(format));
    }
    let Some(status) = item.get(A_HISTORY) else {
        return decode(queue, item).map(Found::Job);
    };
    let status = status.clone();
    let mut attempt_carrier = decode_attributes(&item)?;
    let (attempt, names_itself) = decode_chain(&item, &mut attempt_carrier)?;
    let item = &item;
    let status = match &status {
        AttributeValue::S(s) if s == "dispatched" => HistoryStatus::Dispatched,
        AttributeValue::S(s) if s == "cancelled" => HistoryStatus::Cancelled,
        AttributeValue::S(s) if s == "expired" => HistoryStatus::Expired,
        AttributeValue::S(s) if s == "finished" => HistoryStatus::Finished,
        other => return Err(format!("history is not a known status: {other:?}")),
    };
    let t = |name: &str| match item.get(name) {
        Some(AttributeValue::N(v)) => parse_epoch_decimal(v).ok_or_else(|| format!("{name} is not epoch seconds: {v}")),
        _ => Err(format!("{name} is missing or not a number")),
    };
    Ok(Found::History(History {
        queue: queue.clone(),
        partition: decode_partition(queue, item)?,
        job_id: match item.get(A_JOB_ID) {
            Some(AttributeValue::S(id)) => id.clone(),
            _ => return Err("job_id is missing".into()),
        },
        status,
        at: t(A_LEFT_AT)?,
        message_id: match item.get(A_MESSAGE_ID) {
            Some(AttributeValue::S(m)) => Some(m.clone()),
            _ => None,
        },
        perform_at: t(A_SCHEDULED_FOR)?,
        version: match item.get(A_VERSION) {
            Some(AttributeValue::N(v)) => v.parse().map_err(|_| format!("version is not a whole number: {v}"))?,
            _ => 1,
        },
        purge_at: t(A_PURGE_AT)?,
        maybe_delivered_at: match item.get(A_MAYBE_DELIVERED_AT) {
            None => None,
            Some(_) => Some(t(A_MAYBE_DELIVERED_AT)?),
        },
        attempt,
        names_itself,
        expires_at: match item.get(A_EXPIRES_AT) {
            None => None,
            Some(_) => Some(t(A_EXPIRES_AT)?),
        },
        windows: decode_windows(item)?,
        tags: decode_tags(item)?,
        occurrences: match item.get(A_OCCURRENCES) {
            None => None,
            Some(AttributeValue::N(v)) => Some(
                v.parse()
                    .map_err(|_| format!("occurrences is not a whole number: {v}"))?,
            ),
            Some(_) => return Err("occurrences is not a number".into()),
        },
        message: match body_of(item)? {
            None => None,
            Some(body) => Some(Box::new(KeptMessage {
                body,
                attributes: decode_attributes(item)?,
                group_id: match item.get(A_GROUP_ID) {
                    Some(AttributeValue::S(g)) => Some(g.clone()),
                    None => None,
                    Some(_) => return Err("message_group_id is not a string".into()),
                },
            })),
        },
    }))
}

pub(crate) fn decode_partition(queue: &QueueName, item: &Item) -> Result<Partition, String> {
    let scheduler = match item.get(A_SCHEDULER) {
        Some(AttributeValue::S(v)) => v,
        _ => return Err("scheduler is missing or not a string".into()),
    };
    let rest = scheduler
        .strip_prefix(queue.as_str())
        .and_then(|r| r.strip_prefix('#'))
        .ok_or_else(|| format!("scheduler {scheduler:?} does not belong to queue {queue}"))?;
    Ok(match rest {
        "parked" => Partition::Parked,
        n => Partition::Shard(
            n.parse()
                .map_err(|_| format!("scheduler {scheduler:?} names no shard"))?,
        ),
    })
}

/// Item size as DynamoDB counts it (names plus values), rounded up where DynamoDB's own rule is
/// finer, so an item we accept is never refused.
pub fn item_size(item: &Item) -> usize {
    item.iter().map(|(k, v)| k.len() + value_size(v)).sum()
}

pub(crate) fn value_size(v: &AttributeValue) -> usize {
    match v {
        AttributeValue::S(s) | AttributeValue::N(s) => s.len() + 1,
        AttributeValue::B(b) => b.as_ref().len(),
        AttributeValue::M(m) => 3 + m.iter().map(|(k, v)| k.len() + value_size(v) + 1).sum::<usize>(),
        AttributeValue::L(l) => 3 + l.iter().map(|v| value_size(v) + 1).sum::<usize>(),
        _ => 1,
    }
}

#[cfg(test)]
#[path = "codec_tests.rs"]
mod tests;
