// sqs-waiter's TypeScript client: schedule an SQS message for any time, manage the schedule, and
// hand failed messages back for a retry at exponential backoff. docs/contract.md has every field.
export * from "./contract.js";
export * from "./errors.js";
export * from "./received.js";
export * from "./client.js";
