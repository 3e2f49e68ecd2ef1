// A message a consumer received, read as sqs-waiter sent it: its queue, job id and attempt.
import { ATTRIBUTES, RESERVED_ATTRIBUTE_PREFIX, type MessageAttribute, type Replay, type Retry } from "./contract.js";
import { NotAWaiterMessage } from "./errors.js";

/** A record of a Lambda SQS event (aws-lambda's `SQSRecord`). */
export interface LambdaSqsRecord {
  messageId: string;
  body: string;
  attributes?: { MessageGroupId?: string | undefined } | undefined;
  messageAttributes?:
    | Record<string, { dataType?: string | undefined; stringValue?: string | undefined; binaryValue?: string | undefined }>
    | undefined;
  eventSourceARN?: string | undefined;
}

/** A message of `ReceiveMessageCommand` (@aws-sdk/client-sqs's `Message`); receive with
 * `MessageAttributeNames: ["All"]` and `MessageSystemAttributeNames: ["MessageGroupId"]`. */
export interface ReceivedMessage {
  MessageId?: string | undefined;
  Body?: string | undefined;
  Attributes?: Partial<Record<string, string>> | undefined;
  MessageAttributes?:
    | Record<string, { DataType?: string | undefined; StringValue?: string | undefined; BinaryValue?: Uint8Array | undefined }>
    | undefined;
}

export type SqsMessage = LambdaSqsRecord | ReceivedMessage;

/** Where the message is from and which job sent it, when the message does not say. */
export interface MessageOrigin {
  /** The queue's name or URL; a Lambda record's `eventSourceARN` names it otherwise. */
  queue?: string;
  /** The `job_id` the message was enqueued under, for messages without `waiter.job_id`. */
  jobId?: string;
}

function isRecord(message: SqsMessage): message is LambdaSqsRecord {
  return "body" in message || "messageId" in message;
}

/** The message's attributes in the contract's form (binary values in base64). */
export function attributesOf(message: SqsMessage): Record<string, MessageAttribute> {
  const out: Record<string, MessageAttribute> = {};
  if (isRecord(message)) {
    for (const [name, v] of Object.entries(message.messageAttributes ?? {})) {
      // A missing data type reads as String, as in the Python client and for a received message.
      const a: MessageAttribute = { data_type: v.dataType ?? "String" };
      if (v.stringValue !== undefined) a.string_value = v.stringValue;
      if (v.binaryValue !== undefined) a.binary_value = v.binaryValue;
      out[name] = a;
    }
  } else {
    for (const [name, v] of Object.entries(message.MessageAttributes ?? {})) {
      const a: MessageAttribute = { data_type: v.DataType ?? "String" };
      if (v.StringValue !== undefined) a.string_value = v.StringValue;
      if (v.BinaryValue !== undefined) a.binary_value = Buffer.from(v.BinaryValue).toString("base64");
      out[name] = a;
    }
  }
  return out;
}

/** The largest attempt the Rust client reads (u32). */
const MAX_ATTEMPT = 2 ** 32 - 1;

/** `waiter.attempt`, or 1 for a message without a readable one (a first delivery): ASCII digits
 * with an optional `+`, as the Rust client reads it. */
export function attemptOf(attributes: Record<string, MessageAttribute>): number {
  const value = attributes[ATTRIBUTES.attempt]?.string_value?.trim() ?? "";
  const attempt = /^\+?[0-9]+$/.test(value) ? Number(value) : 1;
  return attempt >= 1 && attempt <= MAX_ATTEMPT ? attempt : 1;
}

function queueOf(message: SqsMessage, queue: string | undefined): string {
  const given = queue ?? (isRecord(message) ? message.eventSourceARN : undefined);
  if (!given) {
    throw new NotAWaiterMessage(
      "queue: is required for a message from ReceiveMessage (a Lambda record names its queue in eventSourceARN)",
    );
  }
  return given.replace(/\/+$/, "").split("/").pop()!.split(":").pop()!;
}

function jobIdOf(message: SqsMessage, attributes: Record<string, MessageAttribute>, jobId: string | undefined): string {
  const named = attributes[ATTRIBUTES.job_id]?.string_value;
  if (named) return named;
  if (jobId) return jobId;
  const id = isRecord(message) ? message.messageId : message.MessageId;
  throw new NotAWaiterMessage(
    `job_id: message ${id} carries no ${ATTRIBUTES.job_id} attribute and no jobId was given: pass the job_id ` +
      `you enqueued it under, or it did not come through sqs-waiter (receive with MessageAttributeNames: ["All"] ` +
      `so that the ${RESERVED_ATTRIBUTE_PREFIX}* attributes come along)`,
  );
}

/** The `retry` request that hands `message` back: its body, attributes, group, attempt and id. */
export function retryOf(message: SqsMessage, origin: MessageOrigin = {}): Retry {
  const attributes = attributesOf(message);
  const body = isRecord(message) ? message.body : message.Body;
  if (typeof body !== "string") {
    throw new NotAWaiterMessage("message_body: the message has no body: give a Lambda SQS record or a received message");
  }
  const request: Retry = {
    queue: queueOf(message, origin.queue),
    job_id: jobIdOf(message, attributes, origin.jobId),
    attempt: attemptOf(attributes),
    message_body: body,
  };
  if (Object.keys(attributes).length > 0) request.message_attributes = attributes;
  const group = isRecord(message) ? message.attributes?.MessageGroupId : message.Attributes?.["MessageGroupId"];
  if (group) request.message_group_id = group;
  return request;
}

/** The `replay` request for the job that sent `message`. */
export function replayOf(message: SqsMessage, origin: MessageOrigin = {}): Replay {
  return { queue: queueOf(message, origin.queue), job_id: jobIdOf(message, attributesOf(message), origin.jobId) };
}
