//! AWS service limits, in one place. Every other module refers to these names.
//!
//! Emulators are more lenient than AWS (moto accepts a 26-item BatchWriteItem, for one), so we
//! enforce the real limits ourselves.

/// Longest `DelaySeconds` SQS accepts on a message.
/// <https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html>
pub const SQS_MAX_DELAY_SECONDS: u32 = 900;

/// Longest timeout of a Lambda function, and so of a poller run.
/// <https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html>
pub const LAMBDA_MAX_TIMEOUT_SECONDS: u32 = 900;

/// Entries per `SendMessageBatch` request.
/// <https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessageBatch.html>
pub const SQS_MAX_BATCH_ENTRIES: usize = 10;

/// Largest message, and largest sum of a `SendMessageBatch`'s messages (body plus attributes).
/// <https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html>
pub const SQS_MAX_MESSAGE_BYTES: usize = 1024 * 1024;

/// A queue's `MaximumMessageSize` default before SQS raised it to 1 MiB (2025): queues made
/// earlier keep it. `waiter.job_id` is carried only by a message that stays within it, so that
/// the id never pushes a message past an older queue's limit.
/// <https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SetQueueAttributes.html>
pub const SQS_EARLIER_DEFAULT_MAX_MESSAGE_BYTES: usize = 256 * 1024;

/// Message attributes per message.
/// <https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-message-metadata.html>
pub const SQS_MAX_MESSAGE_ATTRIBUTES: usize = 10;

/// Longest message attribute name, and longest attribute data type.
/// <https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_MessageAttributeValue.html>
pub const SQS_MAX_ATTRIBUTE_NAME_CHARS: usize = 256;

/// Longest `MessageGroupId` / `MessageDeduplicationId`.
/// <https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html>
pub const SQS_MAX_FIFO_ID_CHARS: usize = 128;

/// Longest queue name.
/// <https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_CreateQueue.html>
pub const SQS_MAX_QUEUE_NAME_CHARS: usize = 80;

/// Keys per `BatchGetItem`.
/// <https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html>
pub const DDB_MAX_BATCH_GET_KEYS: usize = 100;

/// Items per `TransactWriteItems` request, and their aggregate size.
/// <https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html>
pub const DDB_MAX_TRANSACT_ITEMS: usize = 100;
pub const DDB_MAX_TRANSACT_BYTES: usize = 4 * 1024 * 1024;

/// Statements per `BatchExecuteStatement` request.
/// <https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ql-reference.multiplestatements.batching.html>
pub const DDB_MAX_BATCH_STATEMENTS: usize = 25;

/// Longest `ClientRequestToken` of a `TransactWriteItems` request.
/// <https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html>
pub const DDB_MAX_CLIENT_TOKEN_CHARS: usize = 36;

/// Largest DynamoDB item, attribute names included.
/// <https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html#limits-items>
pub const DDB_MAX_ITEM_BYTES: usize = 400 * 1024;

/// What one write unit covers: a write bills 1 unit per KB of the item (twice in a transaction).
/// <https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/read-write-operations.html#write-operation-consumption>
pub const DDB_WRITE_UNIT_BYTES: usize = 1024;

/// Room a stored job leaves below `DDB_MAX_ITEM_BYTES` for what parking adds (the longer
/// partition key, `parked_at`, `park_code` and some of `park_message`), so that every job SQS
/// rejects can be parked. Not an AWS limit: ours, derived from the item codec.
pub const PARK_RESERVE_BYTES: usize = 256;

/// The largest item a job may be stored as.
pub const MAX_STORED_ITEM_BYTES: usize = DDB_MAX_ITEM_BYTES - PARK_RESERVE_BYTES;

/// The largest message (body, attributes and group id, as `Job::message_bytes` counts) a history
/// record keeps for `replay` with `WAITER_HISTORY_BODY`: room is left for the record's key and
/// own attributes and the attribute map's names. A larger one (only the direct path sends
/// messages up to `SQS_MAX_MESSAGE_BYTES`) is recorded without it. Ours, from the item codec.
pub const MAX_HISTORY_MESSAGE_BYTES: usize = MAX_STORED_ITEM_BYTES - 2048;

/// Longest DynamoDB table name.
/// <https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html#limits-naming-rules>
pub const DDB_MAX_TABLE_NAME_CHARS: usize = 255;

/// Significant digits of an SQS `Number` attribute, and its magnitude range: zero, or
/// 10^MIN_EXPONENT ≤ |v| < 10^MAX_EXPONENT.
/// <https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-message-metadata.html>
pub const SQS_NUMBER_MAX_DIGITS: usize = 38;
pub const SQS_NUMBER_MIN_EXPONENT: i64 = -128;
pub const SQS_NUMBER_MAX_EXPONENT: i64 = 126;
