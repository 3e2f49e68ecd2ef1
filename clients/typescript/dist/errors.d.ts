import { type ErrorType } from "./contract.js";
/** A request that did not succeed. `retryable`: sending the same request again may succeed (for
 * `enqueue`, with the same `job_id`, so that a job is never stored twice). */
export declare class SqsWaiterError extends Error {
    /** The function's errorType; undefined when the call never reached the function's code. */
    readonly errorType: string | undefined;
    readonly retryable: boolean;
    constructor(message: string, errorType: string | undefined, retryable: boolean, options?: {
        cause?: unknown;
    });
}
/** One of the function's documented errorTypes (`errorType` says which). */
export declare class FunctionError extends SqsWaiterError {
    readonly errorType: ErrorType;
    constructor(errorType: ErrorType, message: string);
}
/** The request broke a rule of the contract: `field` names the field and `rule` the rule.
 * Nothing was stored or sent. */
export declare class InvalidRequest extends FunctionError {
    readonly field: string;
    readonly rule: string;
    constructor(message: string);
}
/** DynamoDB or SQS throttled the function: send the same request again, later. */
export declare class Throttled extends FunctionError {
    constructor(message: string);
}
/** DynamoDB or SQS failed or timed out: send the same request again. */
export declare class DependencyFailure extends FunctionError {
    constructor(message: string);
}
/** The queue or its table does not exist (the deployment is incomplete). */
export declare class ResourceNotFound extends FunctionError {
    constructor(message: string);
}
/** AWS refused the request for good (for example a message SQS will not take). */
export declare class Rejected extends FunctionError {
    constructor(message: string);
}
/** A defect in the function; its log says more. */
export declare class InternalError extends FunctionError {
    constructor(message: string);
}
/** The alias invoked does not grant this action on this queue (docs/security.md). */
export declare class AccessDenied extends FunctionError {
    constructor(message: string);
}
/** The invocation failed with an errorType the contract does not name, such as Lambda's own
 * `Runtime.ExitError` or `Sandbox.Timedout`. */
export declare class UnknownFunctionError extends SqsWaiterError {
    constructor(errorType: string, message: string);
}
/** The Lambda Invoke call itself failed (the SDK's error is `cause`): throttled by Lambda, the
 * function missing, no permission, or no connection. */
export declare class InvokeError extends SqsWaiterError {
    /** Lambda's error codes after which the same call may succeed. */
    static readonly RETRYABLE_CODES: ReadonlySet<string>;
    readonly code: string | undefined;
    constructor(functionName: string, message: string, code: string | undefined, retryable: boolean, cause: unknown);
}
/** The function's reply was not the JSON the contract gives. */
export declare class DecodeError extends SqsWaiterError {
    constructor(message: string);
}
/** A consumer's helper was given a message it cannot hand back: it carries no `waiter.job_id` and
 * no `jobId` was given, so it did not come through sqs-waiter or its job is unknown. */
export declare class NotAWaiterMessage extends Error {
    constructor(message: string);
}
/** The error of `errorType` with `message`. */
export declare function errorOf(errorType: string, message: string): SqsWaiterError;
/** The error a reply carries: `marked` is Lambda's FunctionError (set when the function failed),
 * `payload` the reply's JSON. Undefined for a successful reply. */
export declare function fromPayload(marked: string | undefined, payload: unknown): SqsWaiterError | undefined;
