//! What serde cannot say about a request object, settled before it is decoded into the
//! contract's types: the SQS `SendMessage` names accepted for ours (and a field given under
//! both), a queue named by its URL, times given as RFC 3339 or as epoch seconds (read exactly,
//! from the JSON literal), and the fields for which `null` is not "absent".

use std::collections::HashMap;

use chrono::SecondsFormat;
use serde_json::{Map, Value};

use crate::error::InvalidRequest;
use crate::time;

/// The SQS `SendMessage` (and our own PascalCase) names accepted for ours, at the top of a
/// request: (ours, alias).
const ALIASES: &[(&str, &str)] = &[
    ("queue", "Queue"),
    ("queue_url", "QueueUrl"),
    ("message_body", "MessageBody"),
    ("message_attributes", "MessageAttributes"),
    ("delay_seconds", "DelaySeconds"),
    ("perform_at", "PerformAt"),
    ("expires_at", "ExpiresAt"),
    ("job_id", "JobId"),
    ("message_group_id", "MessageGroupId"),
    ("message_deduplication_id", "MessageDeduplicationId"),
];

/// Inside each message attribute.
const ATTRIBUTE_ALIASES: &[(&str, &str)] = &[
    ("data_type", "DataType"),
    ("string_value", "StringValue"),
    ("binary_value", "BinaryValue"),
];

const QUEUE: &str = "queue";
const QUEUE_URL: &str = "queue_url";
const ATTRIBUTES: &str = "message_attributes";

/// Times: RFC 3339 or epoch seconds, passed on as RFC 3339. `null` is refused for `perform_at`
/// (it would silently mean "now") and means "none" for the others.
const TIMES: &[&str] = &["perform_at", "expires_at", "from", "to"];

/// Fields for which `null` is refused rather than read as absent, with what they must be (the
/// contract's list, which its schema follows).
const NOT_NULL: [(&str, &str); 4] = sqs_waiter_contract::NEVER_NULL;

/// The names fields were given under, so that a refusal names the field as the caller wrote it.
#[derive(Debug, Default)]
pub(crate) struct Given {
    /// Ours → as given, at the top of the request.
    fields: HashMap<&'static str, String>,
    /// (attribute, ours) → as given, inside a message attribute.
    attribute_fields: HashMap<(String, String), String>,
}

impl Given {
    /// A top-level field's name as the caller gave it.
    pub(crate) fn name(&self, field: &str) -> String {
        self.fields.get(field).cloned().unwrap_or_else(|| field.to_owned())
    }

    /// A path into the request (`message_attributes`, an attribute's name, its field; or a
    /// field, indexes and nested fields) as the caller gave it.
    pub(crate) fn path(&self, segments: &[Segment<'_>]) -> String {
        let mut out = String::new();
        for (depth, segment) in segments.iter().enumerate() {
            let shown = match (depth, *segment, segments) {
                (_, Segment::Index(i), _) => {
                    out.push_str(&format!("[{i}]"));
                    continue;
                }
                (0, Segment::Key(field), _) => self.name(field),
                (2, Segment::Key(field), [Segment::Key(ATTRIBUTES), Segment::Key(attribute), ..]) => self
                    .attribute_fields
                    .get(&((*attribute).to_owned(), field.to_owned()))
                    .cloned()
                    .unwrap_or_else(|| field.to_owned()),
                (_, Segment::Key(key), _) => key.to_owned(),
            };
            if depth > 0 {
                out.push('.');
            }
            out.push_str(&shown);
        }
        out
    }
}

/// One step of a path into a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Segment<'a> {
    Key(&'a str),
    Index(usize),
}

/// Settles aliases, the queue URL, times and `null`s, returning the object the contract's type
/// decodes and the names fields were given under.
pub(crate) fn normalise(mut object: Map<String, Value>) -> Result<(Map<String, Value>, Given), InvalidRequest> {
    let mut given = Given::default();
    for (ours, alias) in ALIASES {
        rename(&mut object, ours, alias, |name| {
            given.fields.insert(ours, name);
        })?;
    }
    queue_by_url(&mut object, &mut given)?;
    for (field, what) in &NOT_NULL {
        if object.get(*field).is_some_and(Value::is_null) {
            return Err(InvalidRequest::new(
                given.name(field),
                format!("must be {what}, got null"),
            ));
        }
    }
    for field in TIMES {
        if let Some(v) = object.get_mut(*field).filter(|v| !v.is_null()) {
            let t = parse_time_value(&given.name(field), v)?;
            *v = Value::String(t.to_rfc3339_opts(SecondsFormat::Nanos, true));
        }
    }
    match object.get_mut(ATTRIBUTES) {
        // No attributes (and, in a reschedule, "replace them with none").
        Some(v @ Value::Null) => *v = Value::Object(Map::new()),
        Some(Value::Object(attributes)) => {
            for (name, attribute) in attributes.iter_mut() {
                let Value::Object(fields) = attribute else { continue };
                for (ours, alias) in ATTRIBUTE_ALIASES {
                    rename(fields, ours, alias, |as_given| {
                        given
                            .attribute_fields
                            .insert((name.clone(), (*ours).to_owned()), as_given);
                    })
                    .map_err(|e| {
                        InvalidRequest::new(format!("{}.{name}.{}", given.name(ATTRIBUTES), e.field), e.rule)
                    })?;
                }
            }
        }
        _ => {}
    }
    Ok((object, given))
}

/// Moves a field given under its alias to our name, refusing it given under both.
fn rename(
    object: &mut Map<String, Value>,
    ours: &str,
    alias: &str,
    mut record: impl FnMut(String),
) -> Result<(), InvalidRequest> {
    if !object.contains_key(alias) {
        return Ok(());
    }
    if object.contains_key(ours) {
        return Err(InvalidRequest::new(ours, format!("given twice, as {ours} and {alias}")));
    }
    if let Some(v) = object.remove(alias) {
        object.insert(ours.to_owned(), v);
        record(alias.to_owned());
    }
    Ok(())
}

/// `queue_url` names the queue by its URL: the queue is its last path segment.
fn queue_by_url(object: &mut Map<String, Value>, given: &mut Given) -> Result<(), InvalidRequest> {
    let Some(url) = object.remove(QUEUE_URL) else {
        return Ok(());
    };
    let field = given.name(QUEUE_URL);
    if object.contains_key(QUEUE) {
        return Err(InvalidRequest::new(QUEUE, "give either queue or queue_url, not both"));
    }
    let Value::String(url) = url else {
        return Err(InvalidRequest::new(
            field,
            format!("must be a string, got {}", kind(&url)),
        ));
    };
    let Some(name) = queue_of_url(&url) else {
        return Err(InvalidRequest::new(field, "must be an SQS queue URL (https://...)"));
    };
    object.insert(QUEUE.to_owned(), Value::String(name.to_owned()));
    given.fields.insert(QUEUE, field);
    Ok(())
}

/// The queue an SQS queue URL names: its last path segment.
fn queue_of_url(url: &str) -> Option<&str> {
    (url.starts_with("https://") || url.starts_with("http://"))
        .then(|| url.trim_end_matches('/').rsplit('/').next().unwrap_or_default())
}

/// The queue a request (or a batch's job) names, read as `normalise` reads it, before anything
/// else of it is: under `queue`, `queue_url` or their aliases. `None` when it names none;
/// `Some(Err(()))` when it names one unreadably (twice, not a string, not a URL), which the
/// parse refuses.
pub(crate) fn queue_as_given(request: &Value) -> Option<Result<String, ()>> {
    let object = request.as_object()?;
    let names = ALIASES
        .iter()
        .filter(|(ours, _)| *ours == QUEUE || *ours == QUEUE_URL)
        .flat_map(|(ours, alias)| [(*ours, *ours), (*ours, *alias)]);
    let mut given = names.filter_map(|(ours, name)| object.get(name).map(|v| (ours, v)));
    let (ours, value) = given.next()?;
    if given.next().is_some() {
        return Some(Err(()));
    }
    match value {
        Value::String(q) if ours == QUEUE => Some(Ok(q.clone())),
        Value::String(url) => Some(queue_of_url(url).map(str::to_owned).ok_or(())),
        _ => Some(Err(())),
    }
}

/// RFC 3339 (or epoch seconds in a string), or epoch seconds as a JSON number read from its
/// literal (serde_json's `arbitrary_precision`), so that no float rounding can move it earlier.
pub(crate) fn parse_time_value(field: &str, v: &Value) -> Result<chrono::DateTime<chrono::Utc>, InvalidRequest> {
    let parsed = match v {
        Value::String(s) => time::parse_time_str(s),
        Value::Number(n) => time::parse_json_epoch(&n.to_string()),
        other => Err(format!(
            "must be an RFC 3339 string or epoch seconds, got {}",
            kind(other)
        )),
    };
    parsed.map_err(|rule| InvalidRequest::new(field, rule))
}

/// A JSON value's kind, as refusals name it.
pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!("a test object"),
        }
    }

    #[test]
    fn aliases_become_our_names_and_remember_how_they_were_given() {
        let (o, given) = normalise(object(json!({
            "QueueUrl": "https://sqs.eu-west-1.amazonaws.com/1/orders/",
            "MessageBody": "b",
            "DelaySeconds": 5,
            "MessageAttributes": {"k": {"DataType": "String", "StringValue": "v"}}
        })))
        .unwrap();
        assert_eq!(
            Value::Object(o),
            json!({"queue": "orders", "message_body": "b", "delay_seconds": 5,
                   "message_attributes": {"k": {"data_type": "String", "string_value": "v"}}})
        );
        assert_eq!(given.name("queue"), "QueueUrl");
        assert_eq!(given.name("delay_seconds"), "DelaySeconds");
        let path = [
            Segment::Key("message_attributes"),
            Segment::Key("k"),
            Segment::Key("string_value"),
        ];
        assert_eq!(given.path(&path), "MessageAttributes.k.StringValue");
        let path = [Segment::Key("windows"), Segment::Index(2), Segment::Key("to")];
        assert_eq!(given.path(&path), "windows[2].to");
    }

    #[test]
    fn times_are_passed_on_exactly_as_rfc_3339() {
        let (o, _) = normalise(object(json!({"perform_at": 1796000000.25, "expires_at": null,
                                             "from": "1796000000.5", "to": "2026-12-01T09:00:00+01:00"})))
        .unwrap();
        assert_eq!(o["perform_at"], "2026-11-30T00:53:20.250000000Z");
        assert_eq!(o["expires_at"], Value::Null);
        assert_eq!(o["from"], "2026-11-30T00:53:20.500000000Z");
        assert_eq!(o["to"], "2026-12-01T08:00:00.000000000Z");
    }

    #[test]
    fn refusals_name_the_field_as_given() {
        for (request, field) in [
            (json!({"message_body": "x", "MessageBody": "y"}), "message_body"),
            (json!({"queue": "a", "queue_url": "https://x/a"}), "queue"),
            (json!({"QueueUrl": "orders"}), "QueueUrl"),
            (json!({"queue_url": 5}), "queue_url"),
            (json!({"DelaySeconds": null}), "DelaySeconds"),
            (json!({"perform_at": null}), "perform_at"),
            (json!({"PerformAt": "soon"}), "PerformAt"),
            (json!({"to": true}), "to"),
            (
                json!({"message_attributes": {"a": {"data_type": "String", "DataType": "String"}}}),
                "message_attributes.a.data_type",
            ),
        ] {
            let e = normalise(object(request.clone())).unwrap_err();
            assert_eq!(e.field, field, "{request}: {e}");
        }
    }
}
