// The client: one method per action of the enqueue function, over @aws-sdk/client-lambda.
import { InvokeCommand, LambdaClient } from "@aws-sdk/client-lambda";
import {
  LIMITS,
  type Backoff,
  type BatchReply,
  type CancelMany,
  type CancelManyReply,
  type Failure,
  type Job,
  type JobReply,
  type List,
  type ListParked,
  type ListReply,
  type ParkedReply,
  type Pause,
  type PauseReply,
  type Preview,
  type PreviewReply,
  type QueuesReply,
  type RedriveAll,
  type RedriveAllReply,
  type Replay,
  type Reschedule,
  type Resume,
  type Retry,
  type Stats,
  type StatsReply,
} from "./contract.js";
import { DecodeError, InvokeError, SqsWaiterError, errorOf, fromPayload } from "./errors.js";
import { replayOf, retryOf, type MessageOrigin, type SqsMessage } from "./received.js";

/** The function a client calls when given none and SQS_WAITER_FUNCTION is unset (the CLI's). */
export const DEFAULT_FUNCTION = "sqs-waiter-enqueue";

/** What one enqueueMany request may hold in bytes: Lambda's 6 MB payload limit, less a sixth for
 * the reply's own size and JSON escaping (the Rust client's budget). */
export const ENQUEUE_REQUEST_BYTES = Math.floor((LIMITS.max_invoke_payload_bytes * 5) / 6);

/** One result per job or id of a batch, in order: its reply, or that entry's error (not thrown). */
export type Results = Array<JobReply | SqsWaiterError>;

/** What the client needs of a Lambda client: a `LambdaClient` is one. */
export interface LambdaInvoker {
  send(command: InvokeCommand): Promise<{ Payload?: Uint8Array | undefined; FunctionError?: string | undefined }>;
}

export interface ClientOptions {
  /** A name, `name:alias` or an ARN; SQS_WAITER_FUNCTION, then `sqs-waiter-enqueue`, when absent. */
  functionName?: string;
  /** `new LambdaClient({})` when absent. */
  lambdaClient?: LambdaInvoker;
}

/** `jobs` in requests of at most `max_jobs_per_request` jobs and `budget` bytes, in order; a job
 * larger than the budget goes alone (and the function refuses it, naming it). */
export function split<T>(jobs: readonly T[], budget: number = ENQUEUE_REQUEST_BYTES): T[][] {
  const requests: T[][] = [];
  const encoder = new TextEncoder();
  let start = 0;
  let size = 0;
  jobs.forEach((job, i) => {
    const length = encoder.encode(JSON.stringify(job)).length + 1;
    if (i > start && (i - start === LIMITS.max_jobs_per_request || size + length > budget)) {
      requests.push(jobs.slice(start, i));
      start = i;
      size = 0;
    }
    size += length;
  });
  if (start < jobs.length) requests.push(jobs.slice(start));
  return requests;
}

/** Calls the enqueue function. Every method resolves to the function's reply, typed as in
 * ./contract, or rejects with a SqsWaiterError: InvalidRequest (with `field` and `rule`) and the
 * other errorTypes, each with `retryable`. */
export class Client {
  readonly functionName: string;
  private readonly lambda: LambdaInvoker;

  constructor(options: ClientOptions = {}) {
    this.functionName = options.functionName || process.env["SQS_WAITER_FUNCTION"] || DEFAULT_FUNCTION;
    this.lambda = options.lambdaClient ?? new LambdaClient({});
  }

  /** Sends `request` as `action` and resolves to the reply's JSON: the methods below are this
   * with their types. */
  async call(action: string, request: object): Promise<unknown> {
    const payload = new TextEncoder().encode(JSON.stringify({ ...request, action }));
    let out;
    try {
      out = await this.lambda.send(new InvokeCommand({ FunctionName: this.functionName, Payload: payload }));
    } catch (e) {
      throw invokeError(this.functionName, e);
    }
    const body = new TextDecoder().decode(out.Payload ?? new Uint8Array());
    let value: unknown;
    try {
      value = body ? JSON.parse(body) : null;
    } catch (e) {
      throw new DecodeError(`reading the ${action} reply: ${String(e)}`);
    }
    const error = fromPayload(out.FunctionError, value);
    if (error) throw error;
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new DecodeError(`reading the ${action} reply: not a JSON object: ${body.slice(0, 200)}`);
    }
    return value;
  }

  /** Schedules one job (stored, or straight to SQS when due within 15 minutes). */
  async enqueue(job: Job): Promise<JobReply> {
    return (await this.call("enqueue", job)) as JobReply;
  }

  /** Schedules `jobs`, in as many requests as the contract's limits need: one result per job, in
   * order, its reply or its error. */
  async enqueueMany(jobs: readonly Job[]): Promise<Results> {
    // A request that fails whole is the error of each of its jobs, and the later requests are
    // still sent: the results of the jobs stored before it are never lost (resend exactly the
    // jobs whose result is a retryable error, with their job ids).
    const results: Results = [];
    for (const chunk of split(jobs)) {
      let reply: BatchReply;
      try {
        reply = (await this.call("enqueue", { jobs: chunk })) as BatchReply;
      } catch (e) {
        if (!(e instanceof SqsWaiterError)) throw e;
        results.push(...chunk.map(() => e));
        continue;
      }
      results.push(...resultsOf(reply));
    }
    return results;
  }

  async get(queue: string, jobId: string): Promise<JobReply> {
    return (await this.call("get", { queue, job_id: jobId })) as JobReply;
  }

  async cancel(queue: string, jobId: string): Promise<JobReply> {
    return (await this.call("cancel", { queue, job_id: jobId })) as JobReply;
  }

  async reschedule(request: Reschedule): Promise<JobReply> {
    return (await this.call("reschedule", request)) as JobReply;
  }

  async replay(request: Replay): Promise<JobReply> {
    return (await this.call("replay", request)) as JobReply;
  }

  async retry(request: Retry): Promise<JobReply> {
    return (await this.call("retry", request)) as JobReply;
  }

  async list(request: List): Promise<ListReply> {
    return (await this.call("list", request)) as ListReply;
  }

  async cancelMany(request: CancelMany): Promise<CancelManyReply> {
    return (await this.call("cancel_many", request)) as CancelManyReply;
  }

  async parked(request: ListParked): Promise<ParkedReply> {
    return (await this.call("list_parked", request)) as ParkedReply;
  }

  async redrive(queue: string, jobId: string): Promise<JobReply> {
    return (await this.call("redrive", { queue, job_id: jobId })) as JobReply;
  }

  async redriveMany(queue: string, jobIds: readonly string[]): Promise<Results> {
    return resultsOf((await this.call("redrive", { queue, job_ids: jobIds })) as BatchReply);
  }

  /** One page of the queue's parked jobs redriven; pass the reply's `cursor` back as it came
   * (a reply whose `cursor` is `null` was the last page). */
  async redriveAll(queue: string, page: { limit?: number; cursor?: string | null } = {}): Promise<RedriveAllReply> {
    const request: RedriveAll = { queue, all: true };
    if (page.limit !== undefined) request.limit = page.limit;
    if (typeof page.cursor === "string") request.cursor = page.cursor;
    return (await this.call("redrive", request)) as RedriveAllReply;
  }

  async stats(request: Stats): Promise<StatsReply> {
    return (await this.call("stats", request)) as StatsReply;
  }

  async pause(request: Pause): Promise<PauseReply> {
    return (await this.call("pause", request)) as PauseReply;
  }

  async resume(request: Resume): Promise<PauseReply> {
    return (await this.call("resume", request)) as PauseReply;
  }

  async trigger(queue: string, jobId: string): Promise<JobReply> {
    return (await this.call("trigger", { queue, job_id: jobId })) as JobReply;
  }

  async preview(request: Preview): Promise<PreviewReply> {
    return (await this.call("preview", request)) as PreviewReply;
  }

  async queues(): Promise<QueuesReply> {
    return (await this.call("queues", {})) as QueuesReply;
  }

  /** Hands back a message the consumer failed on: its next attempt is scheduled at `backoff`
   * (docs/retries.md). `message` is a Lambda SQS event's record or a received message; its
   * `waiter.job_id` and `waiter.attempt` say which job and attempt it is. */
  async retryMessage(
    message: SqsMessage,
    options: MessageOrigin & { backoff?: Backoff; maxAttempts?: number; error?: string } = {},
  ): Promise<JobReply> {
    const request = retryOf(message, options);
    if (options.backoff !== undefined) request.backoff = options.backoff;
    if (options.maxAttempts !== undefined) request.max_attempts = options.maxAttempts;
    if (options.error !== undefined) request.error = options.error;
    return this.retry(request);
  }

  /** Schedules a copy of the job that sent `message` (`replay`; the deployment must keep history
   * bodies), found as retryMessage finds it. */
  async replayMessage(
    message: SqsMessage,
    options: MessageOrigin & { newJobId?: string; delaySeconds?: number; performAt?: string } = {},
  ): Promise<JobReply> {
    const request = replayOf(message, options);
    if (options.newJobId !== undefined) request.new_job_id = options.newJobId;
    if (options.delaySeconds !== undefined) request.delay_seconds = options.delaySeconds;
    if (options.performAt !== undefined) request.perform_at = options.performAt;
    return this.replay(request);
  }
}

/** A failed batch entry. `status` alone cannot narrow it: a reply's status stays open to
 * what a newer function answers. */
function isFailure(r: BatchReply["results"][number]): r is { status: "error"; error: Failure } {
  const error = (r as { error?: unknown }).error;
  return r.status === "error" && typeof error === "object" && error !== null && "retryable" in error;
}

function resultsOf(reply: BatchReply): Results {
  return reply.results.map((r) =>
    isFailure(r) ? errorOf(r.error.type, r.error.message, r.error.retryable) : (r as JobReply),
  );
}

function invokeError(functionName: string, e: unknown): SqsWaiterError {
  const error = (typeof e === "object" && e !== null ? e : {}) as Record<string, unknown> & {
    name?: string;
    message?: string;
    $metadata?: { httpStatusCode?: number };
  };
  // `cargo lambda watch` answers a function's error with HTTP 500 and the error as the body
  // (Lambda answers 200 with X-Amz-Function-Error); the SDK copies the body's fields onto its
  // error.
  const carried = fromPayload(undefined, error);
  if (carried) return carried;
  const status = error.$metadata?.httpStatusCode;
  const code = status === undefined ? undefined : error.name;
  const retryable = code === undefined ? isTransient(error) : InvokeError.RETRYABLE_CODES.has(code);
  return new InvokeError(functionName, error.message ?? String(e), code, retryable, e);
}

/** Node's network errors, after which the same call may succeed. */
const TRANSIENT_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EAI_AGAIN", "ENOTFOUND"]);

/** No answer came: a timeout or a dropped connection may go on the next try; a bad parameter,
 * no region or no credentials will not. */
function isTransient(error: { name?: string; code?: unknown }): boolean {
  return (
    ["TimeoutError", "RequestTimeout", "AbortError"].includes(error.name ?? "") ||
    (typeof error.code === "string" && TRANSIENT_CODES.has(error.code))
  );
}
