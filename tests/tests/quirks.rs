//! Probes the running backend for every entry of the quirk table (`e2e::quirks`) and fails when
//! a backend gains or loses one, so the table the tests and README rely on stays true.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
use e2e::quirks::Quirk;
use e2e::Emulator;

/// `Some(true)` when the backend shows the quirk, `None` when it cannot be probed on demand.
async fn probe(emu: &Emulator, quirk: Quirk) -> Option<bool> {
    match quirk {
        Quirk::DelayTick => {
            let mean = mean_delay_lateness(emu).await;
            println!(
                "{}: mean lateness of a 1 s delay {} ms",
                emu.backend.name(),
                mean.as_millis()
            );
            Some(mean > Duration::from_millis(200))
        }
        Quirk::FifoDedupForgetsDeleted => Some(fifo_redelivers_after_delete(emu).await),
        Quirk::AcceptsDelayOver900 => Some(send_accepted(emu, "quirk-delay", "x", 901).await),
        Quirk::AcceptsAnyMessageCharacters => Some(send_accepted(emu, "quirk-chars", "a\u{1}b", 0).await),
        Quirk::AcceptsShortTableNames => {
            let created = emu
                .dynamodb
                .create_table()
                .table_name("ab")
                .billing_mode(aws_sdk_dynamodb::types::BillingMode::PayPerRequest)
                .attribute_definitions(
                    aws_sdk_dynamodb::types::AttributeDefinition::builder()
                        .attribute_name("k")
                        .attribute_type(aws_sdk_dynamodb::types::ScalarAttributeType::S)
                        .build()
                        .expect("attr"),
                )
                .key_schema(
                    aws_sdk_dynamodb::types::KeySchemaElement::builder()
                        .attribute_name("k")
                        .key_type(aws_sdk_dynamodb::types::KeyType::Hash)
                        .build()
                        .expect("key"),
                )
                .send()
                .await;
            Some(created.is_ok())
        }
        Quirk::AcceptsBatchWriteOver25 => {
            emu.create_table("quirk-batch").await;
            let puts: Vec<WriteRequest> = (0..26)
                .map(|i| {
                    let item = HashMap::from([
                        ("scheduler".to_owned(), AttributeValue::S("s".into())),
                        ("job_id".to_owned(), AttributeValue::S(format!("j{i}"))),
                    ]);
                    WriteRequest::builder()
                        .put_request(PutRequest::builder().set_item(Some(item)).build().expect("put"))
                        .build()
                })
                .collect();
            let written = emu
                .dynamodb
                .batch_write_item()
                .request_items("quirk-batch", puts)
                .send()
                .await;
            Some(written.is_ok())
        }
        Quirk::UnlockedConditionalWrites | Quirk::TransactionsCopyTables | Quirk::SqsCallsScanQueue => None,
        Quirk::IgnoresClientRequestToken => Some(token_ignored(emu).await),
        Quirk::BatchDropsTraceHeader => Some(batch_drops_trace_header(emu).await),
        Quirk::NoPartiql => Some(!partiql_deletes_on_condition(emu).await),
        Quirk::ConsistentIndex => {
            emu.create_table("quirk-index").await;
            emu.dynamodb
                .put_item()
                .table_name("quirk-index")
                .item("scheduler", AttributeValue::S("s".into()))
                .item("job_id", AttributeValue::S("j".into()))
                .item("perform_at", AttributeValue::N("1".into()))
                .send()
                .await
                .expect("PutItem");
            let found = emu
                .dynamodb
                .query()
                .table_name("quirk-index")
                .index_name(waiter::aws::codec::INDEX_NAME)
                .key_condition_expression("scheduler = :s")
                .expression_attribute_values(":s", AttributeValue::S("s".into()))
                .send()
                .await
                .expect("Query");
            Some(found.count() == 1)
        }
    }
}

/// Whether a message sent by `SendMessageBatch` with an `AWSTraceHeader` arrives without it.
async fn batch_drops_trace_header(emu: &Emulator) -> bool {
    use aws_sdk_sqs::types::{MessageSystemAttributeName, MessageSystemAttributeNameForSends as Send};
    use aws_sdk_sqs::types::{MessageSystemAttributeValue, SendMessageBatchRequestEntry};
    let url = emu.create_queue("quirk-trace").await;
    let header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
    let value = MessageSystemAttributeValue::builder()
        .data_type("String")
        .string_value(header)
        .build()
        .expect("attribute");
    let entry = SendMessageBatchRequestEntry::builder()
        .id("0")
        .message_body("traced")
        .message_system_attributes(Send::AwsTraceHeader, value)
        .build()
        .expect("entry");
    emu.sqs
        .send_message_batch()
        .queue_url(&url)
        .entries(entry)
        .send()
        .await
        .expect("SendMessageBatch");
    let got = emu.receive_for(&url, Duration::from_secs(3), 1).await;
    assert_eq!(got.len(), 1, "the message arrives");
    let attributes = got[0].message.attributes.clone().unwrap_or_default();
    attributes
        .get(&MessageSystemAttributeName::AwsTraceHeader)
        .map(String::as_str)
        != Some(header)
}

/// Whether a transaction sent again with the token of an applied one is applied again: it puts
/// an item, the item is deleted, and the same transaction with the same token is sent again.
async fn token_ignored(emu: &Emulator) -> bool {
    use aws_sdk_dynamodb::types::{Put, TransactWriteItem};
    emu.create_table("quirk-token").await;
    let put = |id: &str| {
        let item = Put::builder()
            .table_name("quirk-token")
            .item("scheduler", AttributeValue::S("s".into()))
            .item("job_id", AttributeValue::S(id.into()))
            .build()
            .expect("put");
        TransactWriteItem::builder().put(item).build()
    };
    let send = || {
        emu.dynamodb
            .transact_write_items()
            .transact_items(put("a"))
            .transact_items(put("b"))
            .client_request_token("quirk-token-0001")
            .send()
    };
    send().await.expect("TransactWriteItems");
    emu.dynamodb
        .delete_item()
        .table_name("quirk-token")
        .key("scheduler", AttributeValue::S("s".into()))
        .key("job_id", AttributeValue::S("a".into()))
        .send()
        .await
        .expect("DeleteItem");
    send().await.expect("TransactWriteItems again");
    let found = emu
        .dynamodb
        .get_item()
        .table_name("quirk-token")
        .key("scheduler", AttributeValue::S("s".into()))
        .key("job_id", AttributeValue::S("a".into()))
        .consistent_read(true)
        .send()
        .await
        .expect("GetItem");
    found.item.is_some()
}

/// Whether a `BatchExecuteStatement` of parameterised, conditional `DELETE`s (the poller's
/// removals) runs: the one whose condition holds deletes its item, the other answers
/// `ConditionalCheckFailed` and leaves its item.
async fn partiql_deletes_on_condition(emu: &Emulator) -> bool {
    use aws_sdk_dynamodb::types::{BatchStatementErrorCodeEnum, BatchStatementRequest};
    emu.create_table("quirk-partiql").await;
    for id in ["a", "b"] {
        emu.dynamodb
            .put_item()
            .table_name("quirk-partiql")
            .item("scheduler", AttributeValue::S("s".into()))
            .item("job_id", AttributeValue::S(id.into()))
            .item("version", AttributeValue::N("1".into()))
            .send()
            .await
            .expect("PutItem");
    }
    let delete = |id: &str, version: &str| {
        BatchStatementRequest::builder()
            .statement(r#"DELETE FROM "quirk-partiql" WHERE "scheduler" = ? AND "job_id" = ? AND "version" = ?"#)
            .parameters(AttributeValue::S("s".into()))
            .parameters(AttributeValue::S(id.into()))
            .parameters(AttributeValue::N(version.into()))
            .build()
            .expect("statement")
    };
    let sent = emu
        .dynamodb
        .batch_execute_statement()
        .statements(delete("a", "1"))
        .statements(delete("b", "2"))
        .send()
        .await;
    let Ok(out) = sent else {
        println!("{}: BatchExecuteStatement failed: {sent:?}", emu.backend.name());
        return false;
    };
    let codes: Vec<_> = out
        .responses()
        .iter()
        .map(|r| r.error().and_then(|e| e.code()).cloned())
        .collect();
    let left = emu.scan("quirk-partiql").await.len();
    println!("{}: statement answers {codes:?}, {left} item left", emu.backend.name());
    codes == [None, Some(BatchStatementErrorCodeEnum::ConditionalCheckFailed)] && left == 1
}

/// Whether SQS accepts `body` with `delay_seconds` on a fresh standard queue named `queue`.
async fn send_accepted(emu: &Emulator, queue: &str, body: &str, delay_seconds: i32) -> bool {
    let url = emu.create_queue(queue).await;
    emu.sqs
        .send_message()
        .queue_url(&url)
        .message_body(body)
        .delay_seconds(delay_seconds)
        .send()
        .await
        .is_ok()
}

/// Eight messages with a 1 s delay sent 125 ms apart, so their sends spread over a whole second
/// whatever the phase of a tick: on a 1 s tick the mean lateness is about 400 ms (measured),
/// without one about the consumer's 20 ms poll interval.
async fn mean_delay_lateness(emu: &Emulator) -> Duration {
    let url = emu.create_queue("quirk-tick").await;
    let (sqs, sender_url) = (emu.sqs.clone(), url.clone());
    let sender = tokio::spawn(async move {
        let mut due = HashMap::new();
        for k in 0..8 {
            sqs.send_message()
                .queue_url(&sender_url)
                .message_body(k.to_string())
                .delay_seconds(1)
                .send()
                .await
                .expect("SendMessage");
            due.insert(k.to_string(), chrono::Utc::now() + chrono::TimeDelta::seconds(1));
            tokio::time::sleep(Duration::from_millis(125)).await;
        }
        due
    });
    let arrived = emu.receive_for(&url, Duration::from_secs(10), 8).await;
    let due = sender.await.expect("sender");
    assert_eq!(arrived.len(), 8, "every delayed message arrives");
    let total_ms: i64 = arrived
        .iter()
        .map(|r| {
            (r.at - due[r.message.body().unwrap_or_default()])
                .num_milliseconds()
                .max(0)
        })
        .sum();
    Duration::from_millis((total_ms / 8) as u64)
}

async fn fifo_redelivers_after_delete(emu: &Emulator) -> bool {
    let url = emu.create_queue("quirk-dedup.fifo").await;
    let send = || {
        emu.sqs
            .send_message()
            .queue_url(&url)
            .message_body("a")
            .message_group_id("g")
            .message_deduplication_id("d1")
            .send()
    };
    send().await.expect("SendMessage");
    let first = emu.receive_for(&url, Duration::from_secs(3), 1).await;
    assert_eq!(first.len(), 1, "the first copy arrives (and receive_for deletes it)");
    send().await.expect("SendMessage again");
    !emu.receive_for(&url, Duration::from_millis(1500), 1).await.is_empty()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_quirk_table_matches_the_backend() {
    let emu = Emulator::start().await;
    let mut wrong = Vec::new();
    for quirk in Quirk::ALL {
        let Some(seen) = probe(&emu, quirk).await else {
            continue;
        };
        let listed = emu.backend.has(quirk);
        println!("{}: {quirk:?} listed {listed}, seen {seen}", emu.backend.name());
        if seen != listed {
            wrong.push(format!(
                "{quirk:?}: table says {listed}, {} shows {seen}",
                emu.backend.name()
            ));
        }
    }
    assert!(wrong.is_empty(), "update e2e::quirks and README: {wrong:#?}");
}
