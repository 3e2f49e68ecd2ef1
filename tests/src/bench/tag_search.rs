//! A search by tag over a large queue (issue 83): what the console's jobs page waits for. The
//! jobs are written straight into the table with the product's codec (a hundred thousand
//! through `enqueue` would time the enqueueing, not the search), over 4 shards and 30 days, on
//! DynamoDB Local (`Rig::for_partiql`); the `list` calls go through the real `enqueue` binary,
//! as the console's do. A rare tag (1 % of the jobs) and a common one (1 in 7) are searched for
//! a page of 50 (the console's), the rare one to the end of its cursor.

use std::time::Instant;

use aws_sdk_dynamodb::types::{PutRequest, WriteRequest};
use chrono::{TimeDelta, Utc};
use futures::stream::{self, StreamExt};
use serde::Serialize;
use serde_json::json;

use waiter::aws::codec::encode;
use waiter::ports::Partition;

use crate::runtime_api::{binary_path, Function, Profile};

const SHARDS: u32 = 4;

#[derive(Debug, Clone, Serialize)]
pub struct TagSearch {
    pub stored: usize,
    pub shards: u32,
    /// The first page of 50 for the rare tag: time, jobs, stored jobs read.
    pub rare_first_page_ms: f64,
    pub rare_first_page_jobs: usize,
    pub rare_first_page_scanned: u64,
    /// Every page of the rare tag, to the end of its cursor.
    pub rare_pages: usize,
    pub rare_all_pages_ms: f64,
    pub rare_found: usize,
    /// The first page of 50 for the common tag.
    pub common_first_page_ms: f64,
    pub common_first_page_scanned: u64,
}

fn tag_of(i: usize) -> String {
    if i % 100 == 0 {
        "rare".to_owned()
    } else {
        format!("c{}", i % 7)
    }
}

pub async fn tag_search(stored: usize, profile: Profile) -> TagSearch {
    let shards = SHARDS.to_string();
    let rig = crate::rig::Rig::builder(&["orders"])
        .for_partiql()
        .settings(&[("WAITER_SHARDS", &shards), ("RUST_LOG", "warn")])
        .start()
        .await;
    let ddb = rig.table_client().await;
    let start = Utc::now() + TimeDelta::days(1);
    let items: Vec<_> = (0..stored)
        .map(|i| {
            let mut job = super::bench_job(200);
            job.job.queue = waiter::QueueName::parse("orders").expect("queue");
            job.job.job_id = format!("j{i:06}");
            job.partition = Partition::Shard(waiter::routing::shard_for(&job.job.job_id, SHARDS));
            job.job.perform_at = start + TimeDelta::seconds((i as i64 * 26) % (30 * 86_400));
            job.job.tags = waiter::job::Tags::from([("customer".to_owned(), tag_of(i))]);
            encode(&job)
        })
        .collect();
    stream::iter(items.chunks(25))
        .for_each_concurrent(8, |chunk| {
            let ddb = ddb.clone();
            async move {
                let mut requests: Vec<WriteRequest> = chunk
                    .iter()
                    .map(|item| {
                        WriteRequest::builder()
                            .put_request(PutRequest::builder().set_item(Some(item.clone())).build().expect("put"))
                            .build()
                    })
                    .collect();
                while !requests.is_empty() {
                    let out = ddb
                        .batch_write_item()
                        .request_items("orders", requests)
                        .send()
                        .await
                        .expect("BatchWriteItem");
                    requests = out
                        .unprocessed_items
                        .and_then(|mut u| u.remove("orders"))
                        .unwrap_or_default();
                }
            }
        })
        .await;
    let mut enqueue = Function::start_binary(binary_path("enqueue", profile), "enqueue", &rig.env).await;
    let list = |tag: &str| json!({"action": "list", "queue": "orders", "tags": {"customer": tag}, "limit": 50});
    // Warm: the first call builds the clients.
    enqueue.invoke(&json!({"action": "queues"})).await.expect("queues");
    let t0 = Instant::now();
    let common = enqueue.invoke(&list("c1")).await.expect("list");
    let common_first_page_ms = t0.elapsed().as_secs_f64() * 1000.0;
    let (mut rare_pages, mut rare_found, mut request) = (0, 0, list("rare"));
    let (mut first_ms, mut first_jobs, mut first_scanned) = (0.0, 0, 0);
    let all = Instant::now();
    loop {
        let t0 = Instant::now();
        let page = enqueue.invoke(&request).await.expect("list");
        let jobs = page["jobs"].as_array().map_or(0, Vec::len);
        if rare_pages == 0 {
            (first_ms, first_jobs) = (t0.elapsed().as_secs_f64() * 1000.0, jobs);
            first_scanned = page["scanned"].as_u64().unwrap_or(0);
        }
        rare_pages += 1;
        rare_found += jobs;
        match &page["cursor"] {
            serde_json::Value::Null => break,
            c => request["cursor"] = c.clone(),
        }
    }
    TagSearch {
        stored,
        shards: SHARDS,
        rare_first_page_ms: first_ms,
        rare_first_page_jobs: first_jobs,
        rare_first_page_scanned: first_scanned,
        rare_pages,
        rare_all_pages_ms: all.elapsed().as_secs_f64() * 1000.0,
        rare_found,
        common_first_page_ms,
        common_first_page_scanned: common["scanned"].as_u64().unwrap_or(0),
    }
}

impl TagSearch {
    /// What `make bench` prints.
    pub fn report(&self) -> String {
        format!(
            "a search by tag (issue 83) over {} stored jobs on {} shards, DynamoDB Local, through the enqueue binary: a tag on 1 %: first page of 50 in {:.0} ms ({} jobs, {} stored jobs read), every page to the end {} calls in {:.1} s ({} found); a tag on 1 in 7: first page in {:.0} ms ({} read)",
            self.stored,
            self.shards,
            self.rare_first_page_ms,
            self.rare_first_page_jobs,
            self.rare_first_page_scanned,
            self.rare_pages,
            self.rare_all_pages_ms / 1000.0,
            self.rare_found,
            self.common_first_page_ms,
            self.common_first_page_scanned
        )
    }
}
