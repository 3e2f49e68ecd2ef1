import { type MessageAttribute, type Replay, type Retry } from "./contract.js";
/** A record of a Lambda SQS event (aws-lambda's `SQSRecord`). */
export interface LambdaSqsRecord {
    messageId: string;
    body: string;
    attributes?: {
        MessageGroupId?: string | undefined;
    } | undefined;
    messageAttributes?: Record<string, {
        dataType: string;
        stringValue?: string | undefined;
        binaryValue?: string | undefined;
    }> | undefined;
    eventSourceARN?: string | undefined;
}
/** A message of `ReceiveMessageCommand` (@aws-sdk/client-sqs's `Message`); receive with
 * `MessageAttributeNames: ["All"]` and `MessageSystemAttributeNames: ["MessageGroupId"]`. */
export interface ReceivedMessage {
    MessageId?: string | undefined;
    Body?: string | undefined;
    Attributes?: Partial<Record<string, string>> | undefined;
    MessageAttributes?: Record<string, {
        DataType?: string | undefined;
        StringValue?: string | undefined;
        BinaryValue?: Uint8Array | undefined;
    }> | undefined;
}
export type SqsMessage = LambdaSqsRecord | ReceivedMessage;
/** Where the message is from and which job sent it, when the message does not say. */
export interface MessageOrigin {
    /** The queue's name or URL; a Lambda record's `eventSourceARN` names it otherwise. */
    queue?: string;
    /** The `job_id` the message was enqueued under, for messages without `waiter.job_id`. */
    jobId?: string;
}
/** The message's attributes in the contract's form (binary values in base64). */
export declare function attributesOf(message: SqsMessage): Record<string, MessageAttribute>;
/** `waiter.attempt`, or 1 for a message without one (a first delivery). */
export declare function attemptOf(attributes: Record<string, MessageAttribute>): number;
/** The `retry` request that hands `message` back: its body, attributes, group, attempt and id. */
export declare function retryOf(message: SqsMessage, origin?: MessageOrigin): Retry;
/** The `replay` request for the job that sent `message`. */
export declare function replayOf(message: SqsMessage, origin?: MessageOrigin): Replay;
