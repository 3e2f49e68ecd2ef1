// A message a consumer received, read as sqs-waiter sent it: its queue, job id and attempt.
import { ATTRIBUTES, RESERVED_ATTRIBUTE_PREFIX } from "./contract.js";
import { NotAWaiterMessage } from "./errors.js";
function isRecord(message) {
    return "body" in message || "messageId" in message;
}
/** The message's attributes in the contract's form (binary values in base64). */
export function attributesOf(message) {
    const out = {};
    if (isRecord(message)) {
        for (const [name, v] of Object.entries(message.messageAttributes ?? {})) {
            const a = { data_type: v.dataType };
            if (v.stringValue !== undefined)
                a.string_value = v.stringValue;
            if (v.binaryValue !== undefined)
                a.binary_value = v.binaryValue;
            out[name] = a;
        }
    }
    else {
        for (const [name, v] of Object.entries(message.MessageAttributes ?? {})) {
            const a = { data_type: v.DataType ?? "String" };
            if (v.StringValue !== undefined)
                a.string_value = v.StringValue;
            if (v.BinaryValue !== undefined)
                a.binary_value = Buffer.from(v.BinaryValue).toString("base64");
            out[name] = a;
        }
    }
    return out;
}
/** `waiter.attempt`, or 1 for a message without one (a first delivery). */
export function attemptOf(attributes) {
    const value = attributes[ATTRIBUTES.attempt]?.string_value?.trim() ?? "";
    const attempt = /^\d+$/.test(value) ? Number(value) : 1;
    return attempt >= 1 ? attempt : 1;
}
function queueOf(message, queue) {
    const given = queue ?? (isRecord(message) ? message.eventSourceARN : undefined);
    if (!given) {
        throw new NotAWaiterMessage("queue: is required for a message from ReceiveMessage (a Lambda record names its queue in eventSourceARN)");
    }
    return given.replace(/\/+$/, "").split("/").pop().split(":").pop();
}
function jobIdOf(message, attributes, jobId) {
    const named = attributes[ATTRIBUTES.job_id]?.string_value;
    if (named)
        return named;
    if (jobId)
        return jobId;
    const id = isRecord(message) ? message.messageId : message.MessageId;
    throw new NotAWaiterMessage(`job_id: message ${id} carries no ${ATTRIBUTES.job_id} attribute and no jobId was given: pass the job_id ` +
        `you enqueued it under, or it did not come through sqs-waiter (receive with MessageAttributeNames: ["All"] ` +
        `so that the ${RESERVED_ATTRIBUTE_PREFIX}* attributes come along)`);
}
/** The `retry` request that hands `message` back: its body, attributes, group, attempt and id. */
export function retryOf(message, origin = {}) {
    const attributes = attributesOf(message);
    const body = isRecord(message) ? message.body : message.Body;
    if (typeof body !== "string") {
        throw new NotAWaiterMessage("message_body: the message has no body: give a Lambda SQS record or a received message");
    }
    const request = {
        queue: queueOf(message, origin.queue),
        job_id: jobIdOf(message, attributes, origin.jobId),
        attempt: attemptOf(attributes),
        message_body: body,
    };
    if (Object.keys(attributes).length > 0)
        request.message_attributes = attributes;
    const group = isRecord(message) ? message.attributes?.MessageGroupId : message.Attributes?.["MessageGroupId"];
    if (group)
        request.message_group_id = group;
    return request;
}
/** The `replay` request for the job that sent `message`. */
export function replayOf(message, origin = {}) {
    return { queue: queueOf(message, origin.queue), job_id: jobIdOf(message, attributesOf(message), origin.jobId) };
}
