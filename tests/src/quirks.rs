//! Known ways the local backends differ from AWS, in one table. A test that has to allow for one
//! asks `backend.has(Quirk::…)` and names it, never loosening an assertion silently; the `quirks`
//! e2e test probes every probe-able entry on the running backend, so the table cannot go stale.
//! docs/emulators.md shows the same table.

use crate::emulator::Backend;

/// One known difference from AWS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quirk {
    /// A delayed SQS message becomes visible on a global tick of about 1 s, so up to 1 s after its
    /// delay ends (never before). AWS: visible when the delay ends.
    DelayTick,
    /// FIFO deduplication covers only messages still in the queue; a re-send after the first copy
    /// was deleted is delivered again. AWS: 5 minutes from the first send, deleted or not.
    FifoDedupForgetsDeleted,
    /// `DelaySeconds` above 900 is accepted. AWS: `InvalidParameterValue`.
    AcceptsDelayOver900,
    /// Bodies with characters outside SQS's allowed set (U+0001) are accepted. AWS:
    /// `InvalidMessageContents`.
    AcceptsAnyMessageCharacters,
    /// DynamoDB table names shorter than 3 characters are accepted. AWS: `ValidationException`.
    AcceptsShortTableNames,
    /// `BatchWriteItem` of more than 25 requests is accepted. AWS: `ValidationException`.
    AcceptsBatchWriteOver25,
    /// Simultaneous conditional writes to one item are not isolated: two pollers were seen to take
    /// one lease (commit 75eef8f). Not reproducible on demand, so not probed. AWS: isolated.
    UnlockedConditionalWrites,
    /// A GSI answers with an item as soon as it is written. AWS: GSIs are eventually consistent
    /// (the in-memory store's `index_lag` and the simulation cover what AWS does).
    ConsistentIndex,
    /// A `TransactWriteItems` sent again with an applied call's `ClientRequestToken` is applied
    /// again. AWS: answered as the first call was, without applying it, for 10 minutes.
    IgnoresClientRequestToken,
    /// A `TransactWriteItems` deep-copies its table once per item (moto 5.2.5,
    /// `transact_write_items`), so a transaction of 25 on a table of a few thousand items takes
    /// about a second. Read from the source, not probed (a timing). AWS: independent of size.
    TransactionsCopyTables,
    /// SQS calls scan the whole queue (moto 5.2.5: a `ReceiveMessage` recounts the queue's
    /// messages once per message it returns, in `is_message_valid_based_on_retention_period`,
    /// and a `SendMessageBatch` grows with the queue's depth too): a receive of 10 from a queue of
    /// 2000 takes about 1 s and a send batch 0.3 s on an idle machine, past the functions' 5 s
    /// attempt timeout on a busy one. Read from the source and timed, not probed. AWS:
    /// independent of the queue's depth.
    SqsCallsScanQueue,
    /// `SendMessageBatch` drops each entry's `MessageSystemAttributes` (moto 5.2.5,
    /// `send_message_batch`), and the call's `X-Amzn-Trace-Id` header too, so a message the
    /// poller sends carries no `AWSTraceHeader`; `SendMessage` keeps the attribute. AWS: kept on
    /// both, and a message without the attribute gets the call's header.
    BatchDropsTraceHeader,
    /// Parameterised PartiQL is not run (moto 5.2.5: its parser asserts a quoted literal after
    /// `=`, and `BatchExecuteStatement` answers with an HTML 500), so the functions remove sent
    /// jobs by `TransactWriteItems` there, at 2 write units each, as they do wherever the call
    /// is answered so. AWS: runs them, each statement answered on its own.
    NoPartiql,
}

impl Quirk {
    pub const ALL: [Quirk; 13] = [
        Quirk::DelayTick,
        Quirk::FifoDedupForgetsDeleted,
        Quirk::AcceptsDelayOver900,
        Quirk::AcceptsAnyMessageCharacters,
        Quirk::AcceptsShortTableNames,
        Quirk::AcceptsBatchWriteOver25,
        Quirk::UnlockedConditionalWrites,
        Quirk::ConsistentIndex,
        Quirk::IgnoresClientRequestToken,
        Quirk::TransactionsCopyTables,
        Quirk::SqsCallsScanQueue,
        Quirk::BatchDropsTraceHeader,
        Quirk::NoPartiql,
    ];

    /// The backends that have it, as measured with moto 5.2.5 and localstack-core 2026.3.0
    /// (whose DynamoDB is Amazon DynamoDB Local).
    pub fn backends(self) -> &'static [Backend] {
        use Backend::*;
        match self {
            Quirk::DelayTick => &[LocalStack],
            Quirk::FifoDedupForgetsDeleted => &[Moto],
            Quirk::AcceptsDelayOver900 => &[LocalStack],
            Quirk::AcceptsAnyMessageCharacters => &[Moto],
            Quirk::AcceptsShortTableNames => &[Moto],
            Quirk::AcceptsBatchWriteOver25 => &[Moto],
            Quirk::UnlockedConditionalWrites => &[Moto],
            Quirk::ConsistentIndex => &[Moto, LocalStack],
            Quirk::IgnoresClientRequestToken => &[Moto],
            Quirk::TransactionsCopyTables => &[Moto],
            Quirk::SqsCallsScanQueue => &[Moto],
            Quirk::BatchDropsTraceHeader => &[Moto],
            Quirk::NoPartiql => &[Moto],
        }
    }
}

impl Backend {
    /// Whether this backend differs from AWS in the way `quirk` describes.
    pub fn has(self, quirk: Quirk) -> bool {
        quirk.backends().contains(&self)
    }
}
