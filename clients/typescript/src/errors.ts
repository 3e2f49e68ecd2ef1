// Errors by the function's errorType, each saying whether the same request may succeed later.
import { ERROR_TYPES, type ErrorType } from "./contract.js";

/** A request that did not succeed. `retryable`: sending the same request again may succeed (for
 * `enqueue`, with the same `job_id`, so that a job is never stored twice). */
export class SqsWaiterError extends Error {
  /** The function's errorType; undefined when the call never reached the function's code. */
  readonly errorType: string | undefined;
  readonly retryable: boolean;

  constructor(message: string, errorType: string | undefined, retryable: boolean, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.errorType = errorType;
    this.retryable = retryable;
  }
}

/** One of the function's documented errorTypes (`errorType` says which). */
export class FunctionError extends SqsWaiterError {
  declare readonly errorType: ErrorType;

  constructor(errorType: ErrorType, message: string) {
    super(message, errorType, ERROR_TYPES[errorType]);
  }
}

/** The request broke a rule of the contract: `field` names the field and `rule` the rule.
 * Nothing was stored or sent. */
export class InvalidRequest extends FunctionError {
  readonly field: string;
  readonly rule: string;

  constructor(message: string) {
    super("InvalidRequest", message);
    const at = message.indexOf(": ");
    this.field = at >= 0 ? message.slice(0, at) : "request";
    this.rule = at >= 0 ? message.slice(at + 2) : message;
  }
}

/** DynamoDB or SQS throttled the function: send the same request again, later. */
export class Throttled extends FunctionError {
  constructor(message: string) {
    super("Throttled", message);
  }
}

/** DynamoDB or SQS failed or timed out: send the same request again. */
export class DependencyFailure extends FunctionError {
  constructor(message: string) {
    super("DependencyFailure", message);
  }
}

/** The queue or its table does not exist (the deployment is incomplete). */
export class ResourceNotFound extends FunctionError {
  constructor(message: string) {
    super("ResourceNotFound", message);
  }
}

/** AWS refused the request for good (for example a message SQS will not take). */
export class Rejected extends FunctionError {
  constructor(message: string) {
    super("Rejected", message);
  }
}

/** A defect in the function; its log says more. */
export class InternalError extends FunctionError {
  constructor(message: string) {
    super("InternalError", message);
  }
}

/** The alias invoked does not grant this action on this queue (docs/security.md). */
export class AccessDenied extends FunctionError {
  constructor(message: string) {
    super("AccessDenied", message);
  }
}

/** The invocation failed with an errorType the contract does not name, such as Lambda's own
 * `Runtime.ExitError` or `Sandbox.Timedout`. */
export class UnknownFunctionError extends SqsWaiterError {
  constructor(errorType: string, message: string) {
    super(`the function failed with ${errorType}: ${message}`, errorType, false);
  }
}

/** The Lambda Invoke call itself failed (the SDK's error is `cause`): throttled by Lambda, the
 * function missing, no permission, or no connection. */
export class InvokeError extends SqsWaiterError {
  /** Lambda's error codes after which the same call may succeed. */
  static readonly RETRYABLE_CODES: ReadonlySet<string> = new Set([
    "TooManyRequestsException",
    "ServiceException",
    "ResourceNotReadyException",
    "ResourceConflictException",
  ]);
  readonly code: string | undefined;

  constructor(functionName: string, message: string, code: string | undefined, retryable: boolean, cause: unknown) {
    super(`invoking ${functionName}: ${message}`, undefined, retryable, { cause });
    this.code = code;
  }
}

/** The function's reply was not the JSON the contract gives. */
export class DecodeError extends SqsWaiterError {
  constructor(message: string) {
    super(message, undefined, false);
  }
}

/** A consumer's helper was given a message it cannot hand back: it carries no `waiter.job_id` and
 * no `jobId` was given, so it did not come through sqs-waiter or its job is unknown. */
export class NotAWaiterMessage extends Error {
  constructor(message: string) {
    super(message);
    this.name = "NotAWaiterMessage";
  }
}

const BY_ERROR_TYPE: Record<ErrorType, new (message: string) => FunctionError> = {
  InvalidRequest,
  Throttled,
  DependencyFailure,
  ResourceNotFound,
  Rejected,
  InternalError,
  AccessDenied,
};

function isErrorType(name: string): name is ErrorType {
  return Object.hasOwn(BY_ERROR_TYPE, name);
}

/** The error of `errorType` with `message`; `retryable`, where the function said it (a batch
 * entry's), stands over the type's own, for a type this client may not know. */
export function errorOf(errorType: string, message: string, retryable?: boolean): SqsWaiterError {
  const error = isErrorType(errorType) ? new BY_ERROR_TYPE[errorType](message) : new UnknownFunctionError(errorType, message);
  if (retryable !== undefined) Object.defineProperty(error, "retryable", { value: retryable });
  return error;
}

/** The error a reply carries: `marked` is Lambda's FunctionError (set when the function failed),
 * `payload` the reply's JSON. Undefined for a successful reply. */
export function fromPayload(marked: string | undefined, payload: unknown): SqsWaiterError | undefined {
  const record = typeof payload === "object" && payload !== null ? (payload as Record<string, unknown>) : {};
  const errorType = record["errorType"];
  const message = record["errorMessage"];
  if (marked === undefined && !(typeof errorType === "string" && typeof message === "string")) {
    return undefined;
  }
  const text = typeof message === "string" ? message : JSON.stringify(payload);
  return errorOf(typeof errorType === "string" ? errorType : (marked ?? "Unhandled"), text);
}
