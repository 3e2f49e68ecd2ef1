//! The types a partition run's calls share: one `SendMessageBatch` (`Call`), what becomes of an
//! entry that starts late (`Fate`), and a call answered (`Done`). A leaf of the poller's room:
//! the planning, the send and the run all use them.

use chrono::{DateTime, Utc};
use futures::stream::BoxStream;

use super::Planned;
use crate::error::PortError;
use crate::ports::{EntryOutcome, OutgoingMessage, Retired, StoredJob, Unreadable};

/// What becomes of an entry of a call planned at `planned_at` and sent at `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fate {
    /// Sent, with this delay.
    Send(Option<u32>),
    /// It would now arrive after its `expires_at`: dropped, recorded as expired.
    Expired,
    /// It would now arrive outside its windows: left stored; the next run moves it.
    OutsideWindows,
    /// It would now arrive after the second `WAITER_MAX_RATE` booked for it (a call that took
    /// long, an SDK retry's backoff): not sent, it books again.
    Missed,
    /// Its queue was paused before the send: left stored.
    Paused,
}

/// One `SendMessageBatch`: each entry with its `DelaySeconds`.
pub(super) type Call = Vec<(Planned, Option<u32>)>;

/// A call's messages as SQS is sent them: each job's, with its id where it leaves room
/// (`WAITER_JOB_ID_ATTRIBUTE`).
pub(super) fn messages_of(call: &Call, carry_id: bool) -> Vec<OutgoingMessage> {
    call.iter()
        .map(|(p, delay)| {
            OutgoingMessage::for_job(&p.job.job, p.job.edition(), *delay).carrying_id(&p.job.job, carry_id)
        })
        .collect()
}

/// A call of a partition run, answered.
pub(super) enum Done<'a> {
    /// The next index page, and the stream to read the one after from.
    Page(
        BoxStream<'a, Result<Vec<StoredJob>, PortError>>,
        Option<Result<Vec<StoredJob>, PortError>>,
    ),
    /// A page's jobs re-read from the table, and the items among them this release cannot read.
    Read(Result<(Vec<StoredJob>, Vec<Unreadable>), PortError>),
    Sent {
        call: Call,
        messages: Vec<OutgoingMessage>,
        sent_at: DateTime<Utc>,
        result: Result<Vec<EntryOutcome>, PortError>,
        /// Entries not sent: they started too late (`plan::start_late`).
        dropped: Vec<(Planned, Fate)>,
    },
    Removed {
        items: Vec<Retired>,
        result: Result<(), PortError>,
    },
}
