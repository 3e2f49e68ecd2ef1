//! What tags cost (issue 83): a tagged job's put and delete, table and index, as DynamoDB Local
//! reports them (`ReturnConsumedCapacity` INDEXES) on a table with the stacks' index
//! (`INCLUDE`: tags are not in the index, so its entry stays 1 unit), beside the same job
//! untagged; and what a `list` or `cancel_many` by tag reads per 1000 stored jobs, from the
//! sizes the product's codec gives the items and the reads the selection makes (an index
//! page, eventually consistent, ½ unit per 4 KB summed; then each job re-read consistently by
//! `BatchGetItem`, 1 unit per 4 KB of each item).

use serde::Serialize;

use waiter::aws::codec::{encode, item_size};
use waiter::ports::StoredJob;
use waiter::QueueName;

use super::cost::{index_entry_bytes, prices, strong_read_units};
use crate::emulator::{create_waiter_table, IndexKind};

#[derive(Debug, Clone, Serialize)]
pub struct TagsCostRow {
    pub body_bytes: usize,
    pub item_bytes_untagged: usize,
    pub item_bytes_tagged: usize,
    /// Put and delete, table and index, as DynamoDB Local reported them.
    pub write_units_untagged: f64,
    pub write_units_tagged: f64,
    /// A search by tag, per 1000 stored jobs of this size: read units and dollars on demand.
    pub search_read_units_per_1000: f64,
    pub search_dollars_per_1000: f64,
}

/// Two tags as a service would give them: a customer and a campaign.
pub fn bench_tags() -> waiter::job::Tags {
    waiter::job::Tags::from([
        ("customer".to_owned(), "4242".to_owned()),
        ("campaign".to_owned(), "xmas-2026".to_owned()),
    ])
}

pub async fn tags_cost(dynamodb: &aws_sdk_dynamodb::Client, body_sizes: &[usize]) -> Vec<TagsCostRow> {
    let table = "tags-cost";
    create_waiter_table(dynamodb, table, IndexKind::Global).await;
    let queue = QueueName::parse(table).expect("queue name");
    let mut rows = Vec::new();
    for &body_bytes in body_sizes {
        let mut job = super::bench_job(body_bytes);
        job.job.queue = queue.clone();
        let plain = encode(&job);
        let untagged = super::put_delete_units(dynamodb, table, &plain).await;
        job.job.tags = bench_tags();
        let tagged_item = encode(&job);
        let tagged = super::put_delete_units(dynamodb, table, &tagged_item).await;
        let search = search_read_units_per_1000(&job);
        rows.push(TagsCostRow {
            body_bytes,
            item_bytes_untagged: item_size(&plain),
            item_bytes_tagged: item_size(&tagged_item),
            write_units_untagged: untagged,
            write_units_tagged: tagged,
            search_read_units_per_1000: search,
            search_dollars_per_1000: search * prices::DDB_READ_REQUEST_UNIT,
        });
    }
    rows
}

/// The read units one pass of a tag selection over 1000 stored jobs like `job` costs: the
/// index pages (their entries summed, ½ unit per 4 KB) and each job's consistent re-read.
pub fn search_read_units_per_1000(job: &StoredJob) -> f64 {
    let entries = 1000 * index_entry_bytes(job);
    let index = entries.div_ceil(4096) as f64 * 0.5;
    index + 1000.0 * strong_read_units(item_size(&encode(job)))
}

/// The rows as `make bench` prints them.
pub fn print_tags_cost(rows: &[TagsCostRow]) {
    println!(
        "tags ({:?}), per job: put and delete, table and index (INCLUDE, as the stacks create it), write units as DynamoDB Local reports them; a search by tag per 1000 stored jobs (modelled from the codec's sizes):",
        bench_tags()
    );
    println!("  body bytes  item bytes untagged/tagged  write units untagged/tagged  search RRU/1000  $/1000");
    for r in rows {
        println!(
            "  {:>10}  {:>14}/{:<10}  {:>16}/{:<10}  {:>15.1}  {:.7}",
            r.body_bytes,
            r.item_bytes_untagged,
            r.item_bytes_tagged,
            r.write_units_untagged,
            r.write_units_tagged,
            r.search_read_units_per_1000,
            r.search_dollars_per_1000
        );
    }
}
