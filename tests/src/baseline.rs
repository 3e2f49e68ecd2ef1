//! The minimal baseline the throughput bench holds the poller against (issue 63): a loop of SDK
//! calls that does what the guarantee needs and nothing else.

use waiter::poller::{DELETES_IN_FLIGHT, SENDS_IN_FLIGHT};

use crate::bench::{due_pages, item_key, remove_sent, send_items, Item};

/// The floor a dispatcher can reach with the poller's calls in flight: per shard, Query pages,
/// `SENDS_IN_FLIGHT` SendMessageBatch calls of 10 at once, and each 25 sent removed by a
/// `BatchExecuteStatement` of conditional deletes (`remove_sent`), `DELETES_IN_FLIGHT` at once; no lease, no planning, and with `re_read` the
/// poller's consistent re-read of each page (BatchGetItem of 100, 4 at once) before sending.
pub async fn pipelined_baseline(
    ddb: &aws_sdk_dynamodb::Client,
    sqs: &aws_sdk_sqs::Client,
    table: &str,
    url: &str,
    shards: u32,
    re_read: bool,
) -> usize {
    use futures::stream::{FuturesUnordered, StreamExt};
    let per_shard = (0..shards).map(|shard| async move {
        let mut pages = due_pages(ddb, table, shard).send();
        let mut sent = 0;
        let mut deletes = Vec::new();
        let mut removing = FuturesUnordered::new();
        while let Some(page) = pages.next().await {
            let mut items = page.expect("Query").items.unwrap_or_default();
            if re_read {
                items = consistent_re_read(ddb, table, &items).await;
            }
            let sends = items.chunks(10).map(|chunk| async move {
                send_items(sqs, url, chunk).await;
                chunk
            });
            let mut sends = futures::stream::iter(sends).buffer_unordered(SENDS_IN_FLIGHT);
            while let Some(chunk) = sends.next().await {
                sent += chunk.len();
                deletes.extend(chunk.iter().cloned());
                while deletes.len() >= 25 {
                    if removing.len() >= DELETES_IN_FLIGHT {
                        removing.next().await;
                    }
                    removing.push(remove_sent(ddb, table, deletes.drain(..25).collect()));
                }
            }
        }
        removing.push(remove_sent(ddb, table, deletes));
        while removing.next().await.is_some() {}
        sent
    });
    futures::future::join_all(per_shard).await.into_iter().sum()
}

/// The items again from the table, strongly consistent, 100 keys a call and 4 calls at once.
async fn consistent_re_read(ddb: &aws_sdk_dynamodb::Client, table: &str, items: &[Item]) -> Vec<Item> {
    use aws_sdk_dynamodb::types::KeysAndAttributes;
    use futures::StreamExt;
    let reads: Vec<_> = items
        .chunks(100)
        .map(|chunk| async move {
            let request = KeysAndAttributes::builder()
                .set_keys(Some(chunk.iter().map(item_key).collect()))
                .consistent_read(true)
                .build()
                .expect("keys");
            let out = ddb
                .batch_get_item()
                .request_items(table, request)
                .send()
                .await
                .expect("BatchGetItem");
            out.responses.unwrap_or_default().remove(table).unwrap_or_default()
        })
        .collect();
    futures::stream::iter(reads).buffered(4).concat().await
}
