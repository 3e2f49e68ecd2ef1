//! `cancel`-many: the jobs named, in requests of at most `MAX_JOBS_PER_REQUEST`, or a
//! selection page by page, with the counts added up.

use sqs_waiter_client::{CancelMany, CancelManyReply, Client, Error, MAX_JOBS_PER_REQUEST, MAX_PAGE_LIMIT};

use super::{print_json, print_text, progress, Ended};
use crate::args::{Cli, Selection};
use crate::render;

pub(super) async fn run(
    cli: &Cli,
    client: &Client,
    queue: &str,
    ids: &[String],
    selection: &Selection,
) -> Result<Ended, Error> {
    let mut total = CancelManyReply {
        queue: queue.to_owned(),
        cancelled: 0,
        maybe_delivered: 0,
        dispatching: 0,
        not_found: 0,
        cursor: None,
    };
    let add = |total: &mut CancelManyReply, r: CancelManyReply| {
        total.cancelled += r.cancelled;
        total.maybe_delivered += r.maybe_delivered;
        total.dispatching += r.dispatching;
        total.not_found += r.not_found;
    };
    if ids.is_empty() {
        let bar = progress(None, "cancelling");
        let mut request = CancelMany {
            queue: queue.to_owned(),
            from: selection.from,
            to: selection.to,
            prefix: selection.prefix.clone(),
            tags: selection.tag_filter(),
            status: Some(selection.status.into()),
            limit: Some(MAX_PAGE_LIMIT),
            ..CancelMany::default()
        };
        loop {
            let page = client.cancel_many(&request).await?;
            bar.inc(page.cancelled + page.dispatching + page.not_found);
            request.cursor = page.cursor.clone();
            add(&mut total, page);
            if request.cursor.is_none() {
                break;
            }
        }
        bar.finish_and_clear();
    } else {
        let bar = progress(Some(ids.len() as u64), "cancelling");
        for chunk in ids.chunks(MAX_JOBS_PER_REQUEST) {
            let page = client
                .cancel_many(&CancelMany {
                    queue: queue.to_owned(),
                    job_ids: Some(chunk.to_vec()),
                    ..CancelMany::default()
                })
                .await?;
            bar.inc(chunk.len() as u64);
            add(&mut total, page);
        }
        bar.finish_and_clear();
    }
    if cli.json {
        print_json(&total);
    } else {
        print_text(&render::cancel_many(&total));
    }
    Ok(Ended::Done)
}
