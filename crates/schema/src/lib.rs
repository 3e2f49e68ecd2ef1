//! The JSON Schema of the `enqueue` function's contract, generated from `crates/contract`'s types.
//!
//! `schema/contract.schema.json` is what the Python and TypeScript clients' types come from
//! (clients/). It holds every request and reply under `$defs`, and in `x-sqs-waiter` what a
//! schema cannot say: which request each action takes and the reply it gets, which `errorType`s
//! may be retried, the limits a client splits batches by, and the message attributes a consumer
//! reads. `cargo run -p sqs-waiter-schema` writes it (`make schema`); the test below fails while
//! the committed file and the types differ.

use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::JsonSchema;
use serde_json::{json, Map, Value};
use sqs_waiter_contract as c;
use sqs_waiter_contract::Action;

/// Where the schema is committed, from the workspace's root.
pub const SCHEMA_PATH: &str = "schema/contract.schema.json";

/// One request form of an action: its `action`, its request type and its reply type, by name in
/// `$defs`.
fn form<A: Action + JsonSchema>(generator: &mut SchemaGenerator) -> Value
where
    A::Reply: JsonSchema,
{
    generator.subschema_for::<A>();
    generator.subschema_for::<A::Reply>();
    json!({"action": A::NAME, "request": A::schema_name(), "reply": A::Reply::schema_name()})
}

/// The schema as a JSON value.
pub fn schema() -> Value {
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    // Each request form the clients send, in the order docs/contract.md gives the actions.
    let forms = vec![
        form::<c::Job>(&mut generator),
        form::<c::EnqueueMany>(&mut generator),
        form::<c::Get>(&mut generator),
        form::<c::Cancel>(&mut generator),
        form::<c::Reschedule>(&mut generator),
        form::<c::List>(&mut generator),
        form::<c::CancelMany>(&mut generator),
        form::<c::ListParked>(&mut generator),
        form::<c::Redrive>(&mut generator),
        form::<c::RedriveMany>(&mut generator),
        form::<c::RedriveAll>(&mut generator),
        form::<c::Stats>(&mut generator),
        form::<c::Replay>(&mut generator),
        form::<c::Retry>(&mut generator),
        form::<c::Pause>(&mut generator),
        form::<c::Resume>(&mut generator),
        form::<c::Trigger>(&mut generator),
        form::<c::Preview>(&mut generator),
        form::<c::Queues>(&mut generator),
    ];
    // What the function decodes `redrive` into, and a failed call's error (the batch results').
    generator.subschema_for::<c::RedriveRequest>();
    generator.subschema_for::<c::Failure>();
    let error_types: Vec<Value> = c::ErrorType::ALL
        .into_iter()
        .map(|t| json!({"name": t.as_str(), "retryable": t.is_retryable(), "refusal": t.is_refusal()}))
        .collect();
    let mut defs = Value::Object(
        generator
            .take_definitions(true)
            .into_iter()
            .collect::<Map<String, Value>>(),
    );
    plain_descriptions(&mut defs);
    let requests = forms
        .iter()
        .filter_map(|f| f["request"].as_str())
        .chain(["RedriveRequest"]);
    for name in requests.map(str::to_owned).collect::<Vec<_>>() {
        never_null(&mut defs[name.as_str()]);
    }
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "sqs-waiter enqueue contract",
        "description": "Every request and reply of the sqs-waiter enqueue function (docs/contract.md). A request goes on the wire as its fields plus \"action\"; x-sqs-waiter.actions names each action's request and reply. Generated from crates/contract by `make schema`: do not edit.",
        "x-sqs-waiter": {
            "actions": forms,
            "error_types": error_types,
            "limits": {
                "max_jobs_per_request": c::MAX_JOBS_PER_REQUEST,
                "max_invoke_payload_bytes": c::MAX_INVOKE_PAYLOAD_BYTES,
                "default_page_limit": c::DEFAULT_PAGE_LIMIT,
                "max_page_limit": c::MAX_PAGE_LIMIT,
            },
            "attributes": {
                "job_id": c::JOB_ID_ATTRIBUTE,
                "attempt": c::ATTEMPT_ATTRIBUTE,
                "occurrence": c::OCCURRENCE_ATTRIBUTE,
            },
            "reserved_attribute_prefix": c::RESERVED_ATTRIBUTE_PREFIX,
        },
        "$defs": defs,
    })
}

/// A request's fields that the function refuses as `null` ([`c::NEVER_NULL`]) lose the `null`
/// that schemars gives every `Option` (serde reads `null` there as absent; the function does not).
fn never_null(request: &mut Value) {
    let Some(properties) = request.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    for (field, _) in c::NEVER_NULL {
        let Some(Value::Array(types)) = properties.get_mut(field).and_then(|p| p.get_mut("type")) else {
            continue;
        };
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            properties[field]["type"] = only;
        }
    }
}

/// Rust's doc syntax out of every `description`: code examples (Rust, not the wire) and the
/// targets of intra-doc links.
fn plain_descriptions(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                match v {
                    Value::String(text) if key == "description" => *text = plain(text),
                    other => plain_descriptions(other),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(plain_descriptions),
        _ => {}
    }
}

fn plain(text: &str) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if !in_code {
            out.push_str(line);
            out.push('\n');
        }
    }
    // [`NAME`](crate::NAME) and [`NAME`] -> `NAME`
    let mut text = out.trim().to_owned();
    while let Some(start) = text.find("`](") {
        let Some(len) = text[start..].find(')') else { break };
        text.replace_range(start + 2..start + len + 1, "");
    }
    text.replace("[`", "`").replace("`]", "`")
}

/// The schema as committed: pretty JSON, keys in order, one newline at the end.
pub fn rendered() -> String {
    let mut text = serde_json::to_string_pretty(&schema()).expect("a JSON value always renders");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_keep_prose_and_lose_rust_syntax() {
        assert_eq!(
            plain("One job.\n\n```\nlet x = 1;\n```\nUp to [`MAX`](crate::MAX) of [`Job`]s."),
            "One job.\n\nUp to `MAX` of `Job`s."
        );
    }

    fn committed() -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(SCHEMA_PATH);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn the_committed_schema_is_the_contracts_types() {
        assert!(
            committed() == rendered(),
            "{SCHEMA_PATH} differs from crates/contract's types: run `make schema`, then regenerate \
             the clients' types (make clients-types) and commit all three"
        );
    }

    #[test]
    fn every_action_form_names_types_the_schema_defines() {
        let s = schema();
        let defs = s["$defs"].as_object().expect("$defs");
        let forms = s["x-sqs-waiter"]["actions"].as_array().expect("actions");
        assert_eq!(forms.len(), 19);
        for f in forms {
            for key in ["request", "reply"] {
                let name = f[key].as_str().expect("a name");
                assert!(defs.contains_key(name), "{name} of {f} is not under $defs");
            }
        }
        // A job's fields and what the function requires of it, as the function reads them.
        let job = &defs["Job"];
        assert_eq!(job["required"], json!(["queue", "message_body"]));
        assert_eq!(job["additionalProperties"], json!(false));
        // `null` where the function refuses it is not in the schema; where it means "remove", it is.
        assert_eq!(job["properties"]["delay_seconds"]["type"], json!("integer"));
        assert_eq!(job["properties"]["perform_at"]["type"], json!("string"));
        assert_eq!(job["properties"]["job_id"]["type"], json!(["string", "null"]));
        assert_eq!(defs["RedriveRequest"]["properties"]["all"]["type"], json!("boolean"));
        assert_eq!(defs["CancelMany"]["properties"]["job_ids"]["type"], json!("array"));
        assert_eq!(
            defs["Reschedule"]["properties"]["expires_at"]["type"],
            json!(["string", "null"])
        );
        // Replies keep theirs: a last page's cursor is `null`.
        assert_eq!(
            defs["ListReply"]["properties"]["cursor"]["type"],
            json!(["string", "null"])
        );
        let statuses: Vec<&Value> = defs["JobStatus"]["oneOf"]
            .as_array()
            .expect("statuses")
            .iter()
            .collect();
        assert!(
            statuses.iter().all(|s| s["const"] != "unknown"),
            "unknown is never on the wire"
        );
        let retryable: Vec<&str> = s["x-sqs-waiter"]["error_types"]
            .as_array()
            .expect("error types")
            .iter()
            .filter(|t| t["retryable"] == json!(true))
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(retryable, ["Throttled", "DependencyFailure"]);
    }
}
