//! The in-memory store's leases and rate ledger (`Leases`, `RateLedger`), beside its jobs
//! (`mem_store`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::*;
use crate::config::QueueName;
use crate::error::PortError;
use crate::ports::*;

#[async_trait]
impl Leases for MemStore {
    async fn acquire_lease(
        &self,
        queue: &QueueName,
        shard: u32,
        lease: &Lease,
        now: DateTime<Utc>,
    ) -> Result<LeaseOutcome, PortError> {
        let mut s = self.state.lock().unwrap();
        let k = (queue.clone(), shard);
        match s.leases.get(&k).cloned() {
            Some(l) if l.until >= now && l.owner != lease.owner => Ok(LeaseOutcome::Held(Some(l))),
            previous => {
                let horizon = previous
                    .as_ref()
                    .map_or(lease.horizon, |p| p.horizon.max(lease.horizon));
                let (debts, handed_on_by) = match s.lease_debts.get(&k) {
                    Some((debts, by)) => (debts.clone(), Some(by.as_str())),
                    None => (Vec::new(), None),
                };
                let inherited = previous
                    .as_ref()
                    .filter(|p| p.left_unsettled(handed_on_by))
                    .map(|p| p.horizon);
                let earlier = s.previous_runs.get(&k).cloned();
                // As on the item: the take writes the start and leaves the rate's threshold,
                // which only a release sets or clears.
                let mine = PreviousRun {
                    started: now,
                    on_time_from: earlier.as_ref().and_then(|(_, p)| p.on_time_from),
                };
                s.previous_runs.insert(k.clone(), (lease.owner.clone(), mine));
                let previous = earlier.filter(|(owner, _)| *owner != lease.owner).map(|(_, p)| p);
                s.leases.insert(
                    k,
                    Lease {
                        horizon,
                        ..lease.clone()
                    },
                );
                Ok(LeaseOutcome::Acquired {
                    horizon,
                    inherited,
                    debts,
                    previous,
                })
            }
        }
    }

    async fn release_lease(
        &self,
        queue: &QueueName,
        shard: u32,
        owner: &str,
        held_back_from: Option<DateTime<Utc>>,
    ) -> Result<(), PortError> {
        let mut s = self.state.lock().unwrap();
        let k = (queue.clone(), shard);
        if s.leases.get(&k).is_some_and(|l| l.owner == owner) {
            s.leases.remove(&k);
            s.lease_debts.remove(&k);
            if let Some((_, p)) = s.previous_runs.get_mut(&k) {
                p.on_time_from = held_back_from;
            }
        }
        Ok(())
    }

    async fn lease_covers(
        &self,
        queue: &QueueName,
        shard: u32,
        perform_at: DateTime<Utc>,
        since: DateTime<Utc>,
    ) -> Result<bool, PortError> {
        let s = self.state.lock().unwrap();
        Ok(s.leases
            .get(&(queue.clone(), shard))
            .is_some_and(|l| l.horizon >= perform_at && l.until >= since))
    }

    async fn hand_on(
        &self,
        queue: &QueueName,
        shard: u32,
        owner: &str,
        debts: &[Retired],
        until: DateTime<Utc>,
    ) -> Result<bool, PortError> {
        let mut s = self.state.lock().unwrap();
        let k = (queue.clone(), shard);
        match s.leases.get_mut(&k) {
            Some(l) if l.owner == owner => {
                l.until = until;
                s.lease_debts.insert(k, (debts.to_vec(), owner.to_owned()));
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

impl MemStore {
    /// Waits for this process's turn at the ledger and for the change's own time
    /// (`ledger_turn`); the turn is held until the guard drops.
    async fn ledger_turn(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        if self.ledger_turn.is_zero() {
            return None;
        }
        let turn = self.ledger_turns.lock().await;
        tokio::time::sleep(self.ledger_turn).await;
        Some(turn)
    }

    /// Applies `change` to the queue's ledger as `DynamoStore::change_ledger` does: past
    /// seconds forgotten first, a change that leaves the item as it was counted as a read, any
    /// other as a write of the whole item, refused past DynamoDB's item limit (nothing kept).
    async fn change_ledger<T>(
        &self,
        queue: &QueueName,
        now: DateTime<Utc>,
        change: impl FnOnce(&mut crate::rate::Bookings) -> T,
    ) -> Result<T, PortError> {
        let _turn = self.ledger_turn().await;
        let mut st = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let before = st.bookings.get(queue).cloned().unwrap_or_default();
        let mut after = before.clone();
        after.forget_before(now);
        let out = change(&mut after);
        if after == before {
            st.ledger_gets += 1;
            return Ok(out);
        }
        st.ledger_puts += 1;
        let bytes = crate::aws::codec::item_size(&crate::aws::codec::encode_rate(queue, 1, &after));
        super::mem_store::too_large(bytes)?;
        st.ledger_max_bytes = st.ledger_max_bytes.max(bytes);
        st.bookings.insert(queue.clone(), after);
        Ok(out)
    }
}

#[async_trait]
impl RateLedger for MemStore {
    async fn book(
        &self,
        queue: &QueueName,
        rate: u32,
        wants: &[crate::rate::ArrivalWant],
        claim: Option<&crate::rate::Claim>,
        now: DateTime<Utc>,
        _until: DateTime<Utc>,
    ) -> Result<Vec<crate::rate::Booked>, PortError> {
        self.change_ledger(queue, now, |b| b.book_claimed(rate, wants, claim, now))
            .await
    }

    async fn release(
        &self,
        queue: &QueueName,
        bookings: &[crate::rate::Booking],
        now: DateTime<Utc>,
        _until: DateTime<Utc>,
    ) -> Result<(), PortError> {
        self.change_ledger(queue, now, |b| {
            for booking in bookings {
                b.release(*booking);
            }
        })
        .await
    }
}

#[async_trait]
impl Pauses for MemStore {
    async fn queue_pause(&self, queue: &QueueName) -> Result<QueuePause, PortError> {
        let takes = self.pause_reads.lock().unwrap().pop_front();
        if let Some(d) = takes {
            tokio::time::sleep(d).await;
        }
        let s = self.state.lock().unwrap();
        if s.missing_tables.contains(queue) {
            return Err(PortError::NotFound {
                resource: format!("table sqs-waiter-{queue}"),
                source: None,
            });
        }
        Ok(QueuePause {
            paused_at: s.paused_queues.get(queue).copied(),
            ended: s.resumed_queues.get(queue).cloned().unwrap_or_default(),
        })
    }

    async fn pause_queue(&self, queue: &QueueName, at: DateTime<Utc>) -> Result<DateTime<Utc>, PortError> {
        Ok(*self
            .state
            .lock()
            .unwrap()
            .paused_queues
            .entry(queue.clone())
            .or_insert(at))
    }

    async fn resume_queue(&self, queue: &QueueName, at: DateTime<Utc>) -> Result<bool, PortError> {
        let mut s = self.state.lock().unwrap();
        let paused = s.paused_queues.remove(queue);
        if let Some(from) = paused {
            let ended = s.resumed_queues.remove(queue).unwrap_or_default();
            s.resumed_queues.insert(queue.clone(), with_ended(ended, (from, at)));
        }
        Ok(paused.is_some())
    }

    async fn count_paused(&self, queue: &QueueName, partition: Partition) -> Result<u64, PortError> {
        let s = self.state.lock().unwrap();
        Ok(s.items
            .values()
            .filter(|j| j.job.queue == *queue && j.partition == partition && j.paused_at.is_some())
            .count() as u64)
    }
}

/// Items of a later format are the `unreadable` ones; everything else this release wrote.
#[async_trait]
impl crate::ports::Census for MemStore {
    async fn count_formats(
        &self,
        queue: &QueueName,
        shards: &[u32],
    ) -> Result<std::collections::BTreeMap<String, u64>, PortError> {
        let s = self.state.lock().unwrap();
        let held = |p: &Partition| match p {
            Partition::Shard(n) => shards.contains(n),
            Partition::Parked => true,
        };
        let mut formats = std::collections::BTreeMap::new();
        let later = (crate::aws::codec::ITEM_FORMAT + 1).to_string();
        for key in s
            .items
            .keys()
            .chain(s.history.keys())
            .filter(|k| &k.0 == queue && held(&k.1))
        {
            let format = if s.unreadable.contains(key) {
                later.clone()
            } else {
                "1".to_owned()
            };
            *formats.entry(format).or_default() += 1;
        }
        let leases = s
            .leases
            .keys()
            .chain(s.lease_debts.keys())
            .chain(s.previous_runs.keys())
            .filter(|(q, n)| q == queue && shards.contains(n))
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        if leases > 0 {
            *formats.entry("1".to_owned()).or_default() += leases as u64;
        }
        Ok(formats)
    }
}
