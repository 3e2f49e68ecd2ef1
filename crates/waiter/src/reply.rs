//! The replies of `enqueue`'s actions: one shape per job state, shared by every action.

use serde_json::{json, Map, Value};

use crate::job::{AttributeData, Job};
use crate::ports::{Found, History, HistoryStatus, StoredJob};
use crate::service::HandlerError;
use crate::time::{format_epoch, format_rfc3339};

pub(crate) fn error_result(e: &HandlerError) -> Value {
    json!({"status": "error", "error": {"type": e.error_type(), "message": e.message(), "retryable": e.is_retryable()}})
}

/// The reply to a request naming a job that exists already: nothing was changed.
pub(crate) fn duplicate(existing: &Found) -> Value {
    match existing {
        Found::Job(j) => reply(j, "scheduled", true),
        Found::History(h) => {
            let mut v = describe_history(h);
            v["duplicate"] = json!(true);
            v
        }
    }
}

/// What `get` shows of a job that left the table.
pub(crate) fn describe_history(h: &History) -> Value {
    let mut v = json!({
        "job_id": h.job_id,
        "queue": h.queue.as_str(),
        "status": h.status.as_str(),
        "perform_at": format_rfc3339(h.perform_at),
        "version": h.version,
    });
    let at = format_rfc3339(h.at);
    match h.status {
        HistoryStatus::Dispatched => {
            v["sent_at"] = json!(at);
            v["message_id"] = json!(h.message_id);
        }
        HistoryStatus::Cancelled => v["cancelled_at"] = json!(at),
        HistoryStatus::Expired => v["expired_at"] = json!(at),
    }
    v
}

pub(crate) fn reply(stored: &StoredJob, status: &str, duplicate: bool) -> Value {
    reply_for_job(&stored.job, status, duplicate)
}

pub(crate) fn reply_for_job(job: &Job, status: &str, duplicate: bool) -> Value {
    json!({
        "job_id": job.job_id,
        "queue": job.queue.as_str(),
        "status": status,
        "duplicate": duplicate,
        "perform_at": format_rfc3339(job.perform_at),
    })
}

/// The full view of a stored job, for `get`, `list` and `list_parked`.
pub(crate) fn describe(stored: &StoredJob) -> Value {
    let job = &stored.job;
    let mut v = reply(
        stored,
        if stored.parked.is_some() { "parked" } else { "scheduled" },
        false,
    );
    let o = v.as_object_mut().expect("reply is an object");
    o.remove("duplicate");
    o.insert(
        "perform_at_epoch".into(),
        json!(format_epoch(job.perform_at).parse::<f64>().unwrap_or_default()),
    );
    o.insert("enqueued_at".into(), json!(format_rfc3339(stored.enqueued_at)));
    o.insert("message_body".into(), json!(job.message_body));
    if !job.message_attributes.is_empty() {
        let attrs: Map<String, Value> = job
            .message_attributes
            .iter()
            .map(|(name, a)| {
                let value = match &a.data {
                    AttributeData::String(s) => json!({"data_type": a.data_type, "string_value": s}),
                    AttributeData::Binary(b) => {
                        use base64::Engine as _;
                        json!({"data_type": a.data_type, "binary_value": base64::engine::general_purpose::STANDARD.encode(b)})
                    }
                };
                (name.clone(), value)
            })
            .collect();
        o.insert("message_attributes".into(), Value::Object(attrs));
    }
    if let Some(e) = job.expires_at {
        o.insert("expires_at".into(), json!(format_rfc3339(e)));
    }
    if let Some(g) = &job.message_group_id {
        o.insert("message_group_id".into(), json!(g));
    }
    if let Some(d) = &job.message_deduplication_id {
        o.insert("message_deduplication_id".into(), json!(d));
    }
    if let Some(w) = &job.windows {
        let (spans, zone) = w.to_json();
        o.insert("windows".into(), spans);
        o.insert("time_zone".into(), zone);
    }
    o.insert("version".into(), json!(stored.version));
    if let Some(p) = &stored.parked {
        o.insert("parked_at".into(), json!(format_rfc3339(p.parked_at)));
        o.insert("error".into(), json!({"code": p.code, "message": p.message}));
    }
    v
}
