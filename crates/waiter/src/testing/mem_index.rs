//! The in-memory store's due index (a lagging copy of its items, as a GSI) and its parked
//! partition.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures::stream::{self, BoxStream, StreamExt};

use super::mem_store::MemStore;
use crate::config::QueueName;
use crate::error::PortError;
use crate::ports::*;

#[async_trait]
impl DueIndex for MemStore {
    fn by_time_after<'a>(
        &'a self,
        queue: &'a QueueName,
        partition: Partition,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        after: Option<IndexPosition>,
        view: View,
    ) -> BoxStream<'a, Result<Vec<StoredJob>, PortError>> {
        if self.hang_reads.load(std::sync::atomic::Ordering::SeqCst) {
            return stream::pending().boxed();
        }
        // A GSI promises no order among equal sort keys: this one keeps ties in reverse id
        // order, so that code relying on id order fails here.
        let order = |t: DateTime<Utc>, id: &str| (t, std::cmp::Reverse(id.to_owned()));
        let start = after.map(|(t, id)| order(t, &id));
        let mut due: Vec<StoredJob> = {
            let mut s = self.state.lock().unwrap();
            s.catch_up_index();
            s.index
                .values()
                .filter(|j| {
                    &j.job.queue == queue
                        && j.partition == partition
                        && (from..=to).contains(&j.job.perform_at)
                        && start
                            .as_ref()
                            .is_none_or(|st| order(j.job.perform_at, &j.job.job_id) > *st)
                })
                .cloned()
                .collect()
        };
        due.sort_by_key(|j| order(j.job.perform_at, &j.job.job_id));
        match view {
            View::Whole => {}
            View::WithoutMessage => {
                for j in &mut due {
                    j.job.message_body.clear();
                    j.job.message_attributes.clear();
                }
            }
            // What a projection of the keys returns, decoded (see `aws::codec::decode_view`).
            View::Keys => {
                for j in &mut due {
                    *j = StoredJob {
                        paused_at: None,
                        partition: j.partition.clone(),
                        job: crate::job::Job {
                            on_duplicate: Default::default(),
                            queue: j.job.queue.clone(),
                            job_id: std::mem::take(&mut j.job.job_id),
                            job_id_given: true,
                            message_body: String::new(),
                            message_attributes: Default::default(),
                            perform_at: j.job.perform_at,
                            expires_at: None,
                            message_group_id: None,
                            message_deduplication_id: None,
                            windows: None,
                            priority: j.job.priority,
                            weight: j.job.weight,
                            attempt: 1,
                            names_itself: false,
                            trace_header: None,
                            repeat: None,
                            occurrence: None,
                            tags: Default::default(),
                        },
                        enqueued_at: j.job.perform_at,
                        parked: None,
                        version: 1,
                        maybe_delivered_at: None,
                    };
                }
            }
        }
        let pages: Vec<_> = due.chunks(self.page_size.max(1)).map(|c| Ok(c.to_vec())).collect();
        let read = self.index_items_read.clone();
        stream::iter(pages)
            .inspect(move |page: &Result<Vec<StoredJob>, PortError>| {
                read.fetch_add(page.as_ref().map_or(0, Vec::len), std::sync::atomic::Ordering::SeqCst);
            })
            .boxed()
    }

    async fn count(
        &self,
        queue: &QueueName,
        partition: Partition,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<u64, PortError> {
        self.maybe_hang().await;
        let mut s = self.state.lock().unwrap();
        s.catch_up_index();
        Ok(s.index
            .values()
            .filter(|j| &j.job.queue == queue && j.partition == partition && (from..=to).contains(&j.job.perform_at))
            .count() as u64)
    }

    async fn shard_counts(&self, queue: &QueueName, current: u32) -> Result<Vec<u32>, PortError> {
        self.maybe_hang().await;
        let mut s = self.state.lock().unwrap();
        let counts = s.shard_counts.entry(queue.clone()).or_default();
        if !counts.contains(&current) {
            counts.push(current);
            counts.sort_unstable();
        }
        Ok(counts.clone())
    }
}

#[async_trait]
impl Parking for MemStore {
    async fn parked(&self, queue: &QueueName, limit: usize, after: Option<&str>) -> Result<Page<StoredJob>, PortError> {
        self.maybe_hang().await;
        let s = self.state.lock().unwrap();
        let mut items: Vec<StoredJob> = s
            .items
            .values()
            .filter(|j| {
                &j.job.queue == queue
                    && j.partition == Partition::Parked
                    && after.is_none_or(|a| j.job.job_id.as_str() > a)
            })
            .take(limit.saturating_add(1))
            .cloned()
            .collect();
        let next = (items.len() > limit).then(|| {
            items.truncate(limit);
            items.last().map(|j| j.job.job_id.clone())
        });
        Ok(Page {
            items,
            next: next.flatten(),
        })
    }
}
