//! `list` and `parked`: a listing paged through to `--limit`, as JSON or a table.

use serde::Serialize;
use sqs_waiter_client::{Client, Error, JobReply, List, ListParked, ListReply, ParkedReply, MAX_PAGE_LIMIT};

use super::{print_json, print_text, Ended};
use crate::args::{Cli, Selection};
use crate::render;

pub(super) async fn list(
    cli: &Cli,
    client: &Client,
    queue: &str,
    selection: &Selection,
    limit: u64,
) -> Result<Ended, Error> {
    let base = List {
        from: selection.from,
        to: selection.to,
        prefix: selection.prefix.clone(),
        tags: selection.tag_filter(),
        status: Some(selection.status.into()),
        ..List::queue(queue)
    };
    let (jobs, cursor) = collect(limit, |limit, cursor| {
        let request = List {
            limit: Some(limit),
            cursor,
            ..base.clone()
        };
        async move { client.list(&request).await.map(|p| (p.jobs, p.cursor)) }
    })
    .await?;
    print_jobs(
        cli,
        &ListReply {
            queue: queue.to_owned(),
            jobs,
            cursor,
            scanned: None,
        },
        |r| (&r.jobs, r.cursor.is_some()),
    );
    Ok(Ended::Done)
}

pub(super) async fn parked(cli: &Cli, client: &Client, queue: &str, limit: u64) -> Result<Ended, Error> {
    let (jobs, cursor) = collect(limit, |limit, cursor| {
        let request = ListParked {
            queue: queue.to_owned(),
            limit: Some(limit),
            cursor,
        };
        async move { client.parked(&request).await.map(|p| (p.jobs, p.cursor)) }
    })
    .await?;
    print_jobs(
        cli,
        &ParkedReply {
            queue: queue.to_owned(),
            count: jobs.len(),
            jobs,
            cursor,
        },
        |r| (&r.jobs, r.cursor.is_some()),
    );
    Ok(Ended::Done)
}

/// Pages through a listing until `limit` jobs or its end: the jobs, and the cursor to go on from
/// (`None` when the listing ended).
async fn collect<F, Fut>(limit: u64, mut page: F) -> Result<(Vec<JobReply>, Option<String>), Error>
where
    F: FnMut(usize, Option<String>) -> Fut,
    Fut: std::future::Future<Output = Result<(Vec<JobReply>, Option<String>), Error>>,
{
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let (mut jobs, mut cursor) = (Vec::new(), None);
    loop {
        let (more, next) = page((limit - jobs.len()).min(MAX_PAGE_LIMIT), cursor.take()).await?;
        jobs.extend(more);
        cursor = next;
        if cursor.is_none() || jobs.len() >= limit {
            return Ok((jobs, cursor));
        }
    }
}

/// A listing's reply as JSON, or its jobs as a table.
fn print_jobs<R: Serialize>(cli: &Cli, reply: &R, jobs: impl FnOnce(&R) -> (&[JobReply], bool)) {
    if cli.json {
        print_json(reply);
    } else {
        let (jobs, more) = jobs(reply);
        print_text(&render::jobs(jobs, more));
    }
}
