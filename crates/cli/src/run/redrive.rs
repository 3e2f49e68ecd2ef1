//! `redrive`: the parked jobs named, or every one page by page.

use sqs_waiter_client::{
    BatchReply, BatchResult, Client, Error, RedriveAll, RedriveAllReply, RedriveMany, Stats, MAX_JOBS_PER_REQUEST,
    MAX_PAGE_LIMIT,
};

use super::{print_json, print_text, progress, Ended};
use crate::args::Cli;
use crate::render;

/// The parked jobs named, in requests of at most `MAX_JOBS_PER_REQUEST`.
pub(super) async fn many(cli: &Cli, client: &Client, queue: &str, ids: &[String]) -> Result<Ended, Error> {
    let mut all = BatchReply {
        queue: Some(queue.to_owned()),
        results: Vec::with_capacity(ids.len()),
    };
    for chunk in ids.chunks(MAX_JOBS_PER_REQUEST) {
        let request = RedriveMany {
            queue: queue.to_owned(),
            job_ids: chunk.to_vec(),
        };
        all.results.extend(client.call(&request).await?.results);
    }
    let mut not_done = Vec::new();
    let mut lines = Vec::new();
    for r in &all.results {
        match r {
            BatchResult::Done(reply) => match render::not_done(reply) {
                Some(why) => not_done.push(why),
                None => lines.push(render::outcome(reply)),
            },
            BatchResult::Failed { error, .. } => not_done.push(error.message.clone()),
        }
    }
    if cli.json {
        print_json(&all);
    } else {
        print_text(&lines.join("\n"));
    }
    Ok(match not_done.len() {
        0 => Ended::Done,
        n => Ended::NotDone(format!(
            "{n} of {} not redriven; first: {}",
            all.results.len(),
            not_done[0]
        )),
    })
}

/// Every parked job back, page by page, with a bar sized by `stats`' parked count.
pub(super) async fn all(cli: &Cli, client: &Client, queue: &str) -> Result<Ended, Error> {
    let parked = client
        .stats(&Stats {
            queue: queue.into(),
            buckets: Some(1),
            bucket_s: None,
            formats: None,
        })
        .await?
        .parked;
    let bar = progress(Some(parked), "redriving");
    let mut total = RedriveAllReply {
        queue: queue.into(),
        redriven: 0,
        duplicates: 0,
        cursor: None,
    };
    let mut cursor = None;
    loop {
        let page = client
            .redrive_all(&RedriveAll {
                limit: Some(MAX_PAGE_LIMIT),
                ..RedriveAll::page(queue, cursor)
            })
            .await?;
        bar.inc(page.redriven + page.duplicates);
        total.redriven += page.redriven;
        total.duplicates += page.duplicates;
        cursor = page.cursor;
        if cursor.is_none() {
            break;
        }
    }
    bar.finish_and_clear();
    if cli.json {
        print_json(&total);
    } else {
        print_text(&render::redrive_all(&total));
    }
    Ok(Ended::Done)
}
