//! Decoding a normalised request object into its contract type, and serde's refusals reworded
//! as ours: the field's path as the caller gave it, and the rule it broke.

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::normalise::{kind, normalise, Given, Segment};
use crate::config::Config;
use crate::error::InvalidRequest;

/// The longest field name a refusal repeats (an unknown field may be of any length).
const MAX_NAME_CHARS: usize = 64;

/// What a missing field's refusal adds, where there is another way to give it.
const OR_ELSE: &[(&str, &str)] = &[("queue", " (or queue_url)")];

/// A request decoded into its contract type, with what validating it needs: the deployment,
/// the time it arrived and the names its fields were given under.
pub(crate) struct Decoded<'a, T> {
    pub request: T,
    pub given: Given,
    pub config: &'a Config,
    pub now: DateTime<Utc>,
}

impl<'a, T: DeserializeOwned> Decoded<'a, T> {
    pub(crate) fn read(
        object: Map<String, Value>,
        config: &'a Config,
        now: DateTime<Utc>,
    ) -> Result<Self, InvalidRequest> {
        let (request, given) = decode(object)?;
        Ok(Self {
            request,
            given,
            config,
            now,
        })
    }
}

/// Normalises a request object and decodes it into `T`, the contract's type for its action.
pub(crate) fn decode<T: DeserializeOwned>(object: Map<String, Value>) -> Result<(T, Given), InvalidRequest> {
    let (object, given) = normalise(object)?;
    let value = Value::Object(object);
    // The contract's types that replies carry too (`repeat`, a message attribute, a window)
    // read unknown fields leniently, for older clients; a request is refused for one all the
    // same, named as serde's own refusal names one.
    let mut ignored: Vec<Vec<Owned>> = Vec::new();
    let mut track = |path: serde_ignored::Path<'_>| ignored.push(owned(&path));
    let tracked = serde_ignored::Deserializer::new(&value, &mut track);
    let request = serde_path_to_error::deserialize(tracked).map_err(|e| {
        let segments: Vec<Segment<'_>> = e
            .path()
            .iter()
            .filter_map(|s| match s {
                serde_path_to_error::Segment::Map { key } => Some(Segment::Key(key.as_str())),
                serde_path_to_error::Segment::Seq { index } => Some(Segment::Index(*index)),
                _ => None,
            })
            .collect();
        reword(&given, &segments, at(&value, &segments), &e.inner().to_string())
    })?;
    if let Some(path) = ignored.first() {
        let segments: Vec<Segment<'_>> = path
            .iter()
            .map(|s| match s {
                Owned::Key(k) => Segment::Key(k),
                Owned::Index(i) => Segment::Index(*i),
            })
            .collect();
        let name = match segments.last() {
            Some(Segment::Key(k)) => *k,
            _ => "",
        };
        return Err(reword(&given, &segments, None, &format!("unknown field `{name}`")));
    }
    Ok((request, given))
}

/// A step of the path to a field serde ignored, kept past the callback.
enum Owned {
    Key(String),
    Index(usize),
}

fn owned(path: &serde_ignored::Path<'_>) -> Vec<Owned> {
    use serde_ignored::Path;
    match path {
        Path::Root => Vec::new(),
        Path::Seq { parent, index } => {
            let mut p = owned(parent);
            p.push(Owned::Index(*index));
            p
        }
        Path::Map { parent, key } => {
            let mut p = owned(parent);
            p.push(Owned::Key(key.clone()));
            p
        }
        Path::Some { parent } | Path::NewtypeStruct { parent } | Path::NewtypeVariant { parent } => owned(parent),
    }
}

/// The value at a path into the request, if there is one.
fn at<'v>(value: &'v Value, segments: &[Segment<'_>]) -> Option<&'v Value> {
    segments.iter().try_fold(value, |v, s| match s {
        Segment::Key(k) => v.get(*k),
        Segment::Index(i) => v.get(*i),
    })
}

/// serde_json's refusal at `segments`, where the request holds `found`, as ours.
fn reword(given: &Given, segments: &[Segment<'_>], found: Option<&Value>, message: &str) -> InvalidRequest {
    let path = given.path(segments);
    // A field serde does not know, or one it misses, is named under the object it is in.
    let named = |name: &str, within: &[Segment<'_>]| {
        let name = truncate(name, MAX_NAME_CHARS);
        let parent = given.path(within);
        if parent.is_empty() {
            name
        } else {
            format!("{parent}.{name}")
        }
    };
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let name = rest.split('`').next().unwrap_or_default();
        let within = match segments.last() {
            Some(Segment::Key(k)) if *k == name => &segments[..segments.len() - 1],
            _ => segments,
        };
        return InvalidRequest::new(named(name, within), "is not a known field");
    }
    if let Some(rest) = message.strip_prefix("missing field `") {
        let name = rest.split('`').next().unwrap_or_default();
        let hint = OR_ELSE.iter().find(|(n, _)| *n == name).map_or("", |(_, h)| *h);
        return InvalidRequest::new(named(name, segments), format!("is required{hint}"));
    }
    let field = if path.is_empty() { "request".to_owned() } else { path };
    if message == "invalid number" {
        // A JSON number no integer field can hold (serde_json's `arbitrary_precision` says no
        // more): say which rule it broke.
        let literal = found.map(Value::to_string).unwrap_or_default();
        let rule = if literal.starts_with('-') {
            "must not be negative"
        } else if literal.contains(['.', 'e', 'E']) {
            "must be a whole number"
        } else {
            "is too large"
        };
        return InvalidRequest::new(field, rule);
    }
    if let Some(rest) = message.strip_prefix("invalid type: ") {
        let (got, expected) = rest.split_once(", expected ").unwrap_or((rest, ""));
        // Named as `kind` names it, from the value itself.
        let got = match found {
            Some(v) => kind(v),
            None => got,
        };
        return InvalidRequest::new(field, format!("must be {}, got {got}", expectation(expected)));
    }
    if let Some(rest) = message.strip_prefix("invalid value: ") {
        let (_, expected) = rest.split_once(", expected ").unwrap_or((rest, ""));
        return InvalidRequest::new(field, format!("must be {}", expectation(expected)));
    }
    if let Some(rest) = message.strip_prefix("unknown variant `") {
        let expected = rest.split_once("expected ").map_or("", |(_, e)| e);
        return InvalidRequest::new(field, format!("must be {}", expected.replace('`', "\"")));
    }
    InvalidRequest::new(field, message.to_owned())
}

/// serde's name for what a field takes, as ours.
fn expectation(expected: &str) -> String {
    match expected {
        "u8" | "u16" | "u32" | "u64" | "usize" | "i64" => "an integer".to_owned(),
        "a boolean" => "true or false".to_owned(),
        "a sequence" => "an array".to_owned(),
        "a map" => "an object".to_owned(),
        e if e.starts_with("struct ") => "an object".to_owned(),
        e => e.replace('`', "\""),
    }
}

pub(crate) fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(max).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use sqs_waiter_contract::{Job, List, Stats};

    fn refusal<T: DeserializeOwned + std::fmt::Debug>(v: Value) -> InvalidRequest {
        let Value::Object(o) = v else {
            unreachable!("a test object")
        };
        decode::<T>(o).unwrap_err()
    }

    #[test]
    fn serde_refusals_name_the_field_and_the_rule() {
        for (request, field, rule) in [
            (
                json!({"queue": 5, "message_body": "x"}),
                "queue",
                "must be a string, got a number",
            ),
            (json!({"message_body": "x"}), "queue", "is required (or queue_url)"),
            (json!({"queue": "q"}), "message_body", "is required"),
            (
                json!({"queue": "q", "message_body": "x", "delay": 5}),
                "delay",
                "is not a known field",
            ),
            (
                json!({"queue": "q", "message_body": "x", "delay_seconds": -5}),
                "delay_seconds",
                "must not be negative",
            ),
            (
                json!({"queue": "q", "message_body": "x", "DelaySeconds": 1.5}),
                "DelaySeconds",
                "must be a whole number",
            ),
            (
                json!({"queue": "q", "message_body": "x", "delay_seconds": "10"}),
                "delay_seconds",
                "must be an integer, got a string",
            ),
            (
                json!({"queue": "q", "message_body": "x", "message_attributes": [1]}),
                "message_attributes",
                "must be an object, got an array",
            ),
            (
                json!({"queue": "q", "message_body": "x", "MessageAttributes": {"a": {"DataType": 1}}}),
                "MessageAttributes.a.DataType",
                "must be a string, got a number",
            ),
            (
                json!({"queue": "q", "message_body": "x", "message_attributes": {"a": {"string_value": "v"}}}),
                "message_attributes.a.data_type",
                "is required",
            ),
            (
                json!({"queue": "q", "message_body": "x", "message_attributes": {"a": {"data_type": "String", "extra": 1}}}),
                "message_attributes.a.extra",
                "is not a known field",
            ),
            (
                json!({"queue": "q", "message_body": "x", "windows": [{"from": "05:00", "to": "06:00", "weekday": 1}]}),
                "windows[0].weekday",
                "is not a known field",
            ),
            (
                json!({"queue": "q", "message_body": "x", "repeat": {"every_s": 60, "jitter_s": 5}}),
                "repeat.jitter_s",
                "is not a known field",
            ),
        ] {
            let e = refusal::<Job>(request.clone());
            assert_eq!((e.field.as_str(), e.rule.as_str()), (field, rule), "{request}");
        }
        let e = refusal::<List>(json!({"queue": "q", "status": "sent"}));
        assert_eq!(
            (e.field.as_str(), e.rule.as_str()),
            ("status", "must be \"scheduled\" or \"parked\"")
        );
        let e = refusal::<List>(json!({"queue": "q", "with_body": "yes"}));
        assert_eq!(
            (e.field.as_str(), e.rule.as_str()),
            ("with_body", "must be true or false, got a string")
        );
        let e = refusal::<Stats>(json!({"queue": "q", "buckets": 5_000_000_000u64}));
        assert_eq!(e.field, "buckets");
    }

    /// The types replies share read unknown fields for older clients; requests are refused
    /// for them all the same, inside a batch too.
    #[test]
    fn a_request_is_refused_for_a_field_that_the_lenient_reply_types_would_ignore() {
        let Value::Object(o) = json!({"jobs": [
            {"queue": "q", "message_body": "x"},
            {"queue": "q", "message_body": "x", "repeat": {"cron": "* * * * *", "later": true}},
        ]}) else {
            unreachable!("a test object")
        };
        let e = decode::<sqs_waiter_contract::EnqueueMany>(o).unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.rule.as_str()),
            ("jobs[1].repeat.later", "is not a known field")
        );
        // A `catch_up` this contract does not know reads as `Unknown` (for replies), and a
        // request naming one is refused by the repeat rules (wire::repeat_rules).
        let (job, _) = decode::<Job>(
            json!({"queue": "q", "message_body": "x", "repeat": {"every_s": 60, "catch_up": "later"}})
                .as_object()
                .cloned()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            job.repeat.and_then(|r| r.catch_up),
            Some(sqs_waiter_contract::CatchUp::Unknown)
        );
    }

    #[test]
    fn a_long_unknown_field_is_named_shortened() {
        let e = refusal::<Job>(json!({"queue": "q", "message_body": "x", "a".repeat(100): 1}));
        assert_eq!(e.field, format!("{}…", "a".repeat(64)));
    }
}
