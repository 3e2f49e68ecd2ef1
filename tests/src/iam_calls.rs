//! The IAM side of every call the functions make through the fault proxy: which function (the
//! access key id it signs with, `sqswaiterrole{function}`, set by the harness), which IAM action and on
//! which table, index or queue. Written as JSON lines under `target/iam-calls/`, one file per
//! proxy, headed by the deployment the rig built (queues and table prefix), for
//! `tests/iam/check_calls.py`, which checks each call against the SAM template's and the CDK
//! construct's statements (issue 24, item 3).
//!
//! The actions are IAM's, not the API's: `TransactWriteItems` needs the action of each of its
//! items (`dynamodb:PutItem`, `DeleteItem`, `UpdateItem`, `ConditionCheckItem`),
//! `BatchExecuteStatement` and `ExecuteStatement` need the PartiQL action of each statement
//! (`dynamodb:PartiQLDelete` for a `DELETE`, ...) on the table it names, `SendMessageBatch` needs
//! `sqs:SendMessage`, a `Query` on an index is on the index's ARN.

use std::io::Write;
use std::sync::Mutex;

use axum::http::HeaderMap;
use serde_json::{json, Value};

/// The access key id a function signs with: the proxy reads the function from it. Letters and
/// digits only: DynamoDB Local refuses any other access key id.
pub fn access_key_of(function: &str) -> String {
    let name: String = function.chars().filter(char::is_ascii_alphanumeric).collect();
    format!("{KEY_PREFIX}{name}")
}

/// What every function's access key id starts with (no other caller's does).
const KEY_PREFIX: &str = "sqswaiterrole";

/// Where one proxy's calls go, and the calls seen already (each distinct call once).
#[derive(Debug)]
pub struct Recorder {
    file: Mutex<Option<std::fs::File>>,
    seen: Mutex<std::collections::HashSet<String>>,
}

/// Numbers the recorders of one test process.
static RECORDERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Default for Recorder {
    /// A recorder writing its own file under `target/iam-calls/`.
    fn default() -> Self {
        let dir = crate::workspace_root().join("target/iam-calls");
        let n = RECORDERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let file = std::fs::create_dir_all(&dir).ok().and_then(|_| {
            let name = format!("{}-{n}.jsonl", std::process::id());
            std::fs::File::create(dir.join(name)).ok()
        });
        Self {
            file: Mutex::new(file),
            seen: Mutex::default(),
        }
    }
}

impl Recorder {
    /// The deployment the calls are made for: its queues and table prefix.
    pub fn deployment(&self, queues: &[&str], table_prefix: &str) {
        self.write(&json!({"deployment": {"queues": queues, "table_prefix": table_prefix}}));
    }

    /// Records the IAM side of one request, if a function made it.
    pub fn record(&self, headers: &HeaderMap, body: &[u8]) {
        let Some(principal) = principal(headers) else { return };
        let target = headers
            .get("x-amz-target")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        for (action, resource) in calls(target, &body) {
            let line = json!({"principal": principal, "action": action, "resource": resource});
            if self.seen.lock().expect("lock").insert(line.to_string()) {
                self.write(&line);
            }
        }
    }

    fn write(&self, line: &Value) {
        if let Some(f) = self.file.lock().expect("lock").as_mut() {
            let _ = writeln!(f, "{line}");
        }
    }
}

/// The function behind a request, from the access key id in its SigV4 credential scope.
fn principal(headers: &HeaderMap) -> Option<String> {
    let auth = headers.get("authorization")?.to_str().ok()?;
    let credential = auth.split("Credential=").nth(1)?;
    let key = credential.split('/').next()?;
    key.strip_prefix(KEY_PREFIX).map(str::to_owned)
}

/// (IAM action, resource) for one request: `{"table": t}`, `{"table": t, "index": i}` or
/// `{"queue": q}`.
pub fn calls(target: &str, body: &Value) -> Vec<(String, Value)> {
    let (service, operation) = target.split_once('.').unwrap_or(("", target));
    let table = |t: &str| json!({"table": t});
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    if service.starts_with("DynamoDB") {
        let dynamo = |a: &str| format!("dynamodb:{a}");
        match operation {
            "BatchGetItem" | "BatchWriteItem" => body["RequestItems"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(t, _)| (dynamo(operation), table(t)))
                .collect(),
            "TransactWriteItems" | "TransactGetItems" => body["TransactItems"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|item| {
                    let (kind, inner) = item.as_object()?.iter().next()?;
                    let action = match kind.as_str() {
                        "Put" => "PutItem",
                        "Delete" => "DeleteItem",
                        "Update" => "UpdateItem",
                        "ConditionCheck" => "ConditionCheckItem",
                        "Get" => "GetItem",
                        _ => return None,
                    };
                    Some((dynamo(action), table(&s(&inner["TableName"]))))
                })
                .collect(),
            "BatchExecuteStatement" => body["Statements"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|st| partiql(&s(&st["Statement"])))
                .collect(),
            "ExecuteStatement" => vec![partiql(&s(&body["Statement"]))],
            _ => {
                let name = s(&body["TableName"]);
                let resource = match body["IndexName"].as_str() {
                    Some(index) => json!({"table": name, "index": index}),
                    None => table(&name),
                };
                vec![(dynamo(operation), resource)]
            }
        }
    } else if service == "AmazonSQS" {
        let action = match operation {
            "SendMessageBatch" => "SendMessage",
            "DeleteMessageBatch" => "DeleteMessage",
            "ChangeMessageVisibilityBatch" => "ChangeMessageVisibility",
            other => other,
        };
        let queue = match body["QueueUrl"].as_str() {
            Some(url) => url
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .to_owned(),
            None => s(&body["QueueName"]),
        };
        vec![(format!("sqs:{action}"), json!({"queue": queue}))]
    } else {
        vec![(format!("unknown:{target}"), Value::Null)]
    }
}

/// The IAM action and table of one PartiQL statement: its verb, and the first quoted name
/// (the statements the functions send name their table first, in double quotes).
fn partiql(statement: &str) -> (String, Value) {
    let verb = statement
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let action = match verb.as_str() {
        "delete" => "PartiQLDelete",
        "update" => "PartiQLUpdate",
        "insert" => "PartiQLInsert",
        "select" => "PartiQLSelect",
        _ => return (format!("unknown:PartiQL {verb}"), Value::Null),
    };
    let table = statement
        .split_once('"')
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(t, _)| t)
        .unwrap_or_default();
    (format!("dynamodb:{action}"), json!({"table": table}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transactions_need_each_items_action_and_batches_their_own() {
        let tx = json!({"TransactItems": [
            {"ConditionCheck": {"TableName": "t"}}, {"Delete": {"TableName": "t"}}, {"Put": {"TableName": "u"}}
        ]});
        let got: Vec<String> = calls("DynamoDB_20120810.TransactWriteItems", &tx)
            .into_iter()
            .map(|(a, r)| format!("{a} {r}"))
            .collect();
        assert_eq!(
            got,
            [
                r#"dynamodb:ConditionCheckItem {"table":"t"}"#,
                r#"dynamodb:DeleteItem {"table":"t"}"#,
                r#"dynamodb:PutItem {"table":"u"}"#
            ]
        );
        let q = json!({"TableName": "t", "IndexName": "scheduler-perform_at-index"});
        assert_eq!(
            calls("DynamoDB_20120810.Query", &q),
            [(
                "dynamodb:Query".to_owned(),
                json!({"table": "t", "index": "scheduler-perform_at-index"})
            )]
        );
        let batch = json!({"Statements": [
            {"Statement": r#"DELETE FROM "p.orders" WHERE "scheduler" = ?"#},
            {"Statement": r#"UPDATE "p.orders" SET "history" = ? WHERE "scheduler" = ?"#}
        ]});
        assert_eq!(
            calls("DynamoDB_20120810.BatchExecuteStatement", &batch),
            [
                ("dynamodb:PartiQLDelete".to_owned(), json!({"table": "p.orders"})),
                ("dynamodb:PartiQLUpdate".to_owned(), json!({"table": "p.orders"}))
            ]
        );
        let send = json!({"QueueUrl": "http://localhost:4566/000000000000/jobs.fifo"});
        assert_eq!(
            calls("AmazonSQS.SendMessageBatch", &send),
            [("sqs:SendMessage".to_owned(), json!({"queue": "jobs.fifo"}))]
        );
    }
}
