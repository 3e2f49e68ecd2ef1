// The client: one method per action of the enqueue function, over @aws-sdk/client-lambda.
import { InvokeCommand, LambdaClient } from "@aws-sdk/client-lambda";
import { LIMITS, } from "./contract.js";
import { DecodeError, InvokeError, errorOf, fromPayload } from "./errors.js";
import { replayOf, retryOf } from "./received.js";
/** The function a client calls when given none and SQS_WAITER_FUNCTION is unset (the CLI's). */
export const DEFAULT_FUNCTION = "sqs-waiter-enqueue";
/** What one enqueueMany request may hold in bytes: Lambda's 6 MB payload limit, less a sixth for
 * the reply's own size and JSON escaping (the Rust client's budget). */
export const ENQUEUE_REQUEST_BYTES = Math.floor((LIMITS.max_invoke_payload_bytes * 5) / 6);
/** `jobs` in requests of at most `max_jobs_per_request` jobs and `budget` bytes, in order; a job
 * larger than the budget goes alone (and the function refuses it, naming it). */
export function split(jobs, budget = ENQUEUE_REQUEST_BYTES) {
    const requests = [];
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
    if (start < jobs.length)
        requests.push(jobs.slice(start));
    return requests;
}
/** Calls the enqueue function. Every method resolves to the function's reply, typed as in
 * ./contract, or rejects with a SqsWaiterError: InvalidRequest (with `field` and `rule`) and the
 * other errorTypes, each with `retryable`. */
export class Client {
    functionName;
    lambda;
    constructor(options = {}) {
        this.functionName = options.functionName || process.env["SQS_WAITER_FUNCTION"] || DEFAULT_FUNCTION;
        this.lambda = options.lambdaClient ?? new LambdaClient({});
    }
    /** Sends `request` as `action` and resolves to the reply's JSON: the methods below are this
     * with their types. */
    async call(action, request) {
        const payload = new TextEncoder().encode(JSON.stringify({ action, ...request }));
        let out;
        try {
            out = await this.lambda.send(new InvokeCommand({ FunctionName: this.functionName, Payload: payload }));
        }
        catch (e) {
            throw invokeError(this.functionName, e);
        }
        const body = new TextDecoder().decode(out.Payload ?? new Uint8Array());
        let value;
        try {
            value = body ? JSON.parse(body) : null;
        }
        catch (e) {
            throw new DecodeError(`reading the ${action} reply: ${String(e)}`);
        }
        const error = fromPayload(out.FunctionError, value);
        if (error)
            throw error;
        if (typeof value !== "object" || value === null || Array.isArray(value)) {
            throw new DecodeError(`reading the ${action} reply: not a JSON object: ${body.slice(0, 200)}`);
        }
        return value;
    }
    /** Schedules one job (stored, or straight to SQS when due within 15 minutes). */
    async enqueue(job) {
        return (await this.call("enqueue", job));
    }
    /** Schedules `jobs`, in as many requests as the contract's limits need: one result per job, in
     * order, its reply or the error of that job alone. */
    async enqueueMany(jobs) {
        const results = [];
        for (const chunk of split(jobs)) {
            results.push(...resultsOf((await this.call("enqueue", { jobs: chunk }))));
        }
        return results;
    }
    async get(queue, jobId) {
        return (await this.call("get", { queue, job_id: jobId }));
    }
    async cancel(queue, jobId) {
        return (await this.call("cancel", { queue, job_id: jobId }));
    }
    async reschedule(request) {
        return (await this.call("reschedule", request));
    }
    async replay(request) {
        return (await this.call("replay", request));
    }
    async retry(request) {
        return (await this.call("retry", request));
    }
    async list(request) {
        return (await this.call("list", request));
    }
    async cancelMany(request) {
        return (await this.call("cancel_many", request));
    }
    async parked(request) {
        return (await this.call("list_parked", request));
    }
    async redrive(queue, jobId) {
        return (await this.call("redrive", { queue, job_id: jobId }));
    }
    async redriveMany(queue, jobIds) {
        return resultsOf((await this.call("redrive", { queue, job_ids: jobIds })));
    }
    async redriveAll(queue, page = {}) {
        const request = { queue, all: true, ...page };
        return (await this.call("redrive", request));
    }
    async stats(request) {
        return (await this.call("stats", request));
    }
    async pause(request) {
        return (await this.call("pause", request));
    }
    async resume(request) {
        return (await this.call("resume", request));
    }
    async trigger(queue, jobId) {
        return (await this.call("trigger", { queue, job_id: jobId }));
    }
    async preview(request) {
        return (await this.call("preview", request));
    }
    async queues() {
        return (await this.call("queues", {}));
    }
    /** Hands back a message the consumer failed on: its next attempt is scheduled at `backoff`
     * (docs/retries.md). `message` is a Lambda SQS event's record or a received message; its
     * `waiter.job_id` and `waiter.attempt` say which job and attempt it is. */
    async retryMessage(message, options = {}) {
        const request = retryOf(message, options);
        if (options.backoff !== undefined)
            request.backoff = options.backoff;
        if (options.maxAttempts !== undefined)
            request.max_attempts = options.maxAttempts;
        if (options.error !== undefined)
            request.error = options.error;
        return this.retry(request);
    }
    /** Schedules a copy of the job that sent `message` (`replay`; the deployment must keep history
     * bodies), found as retryMessage finds it. */
    async replayMessage(message, options = {}) {
        const request = replayOf(message, options);
        if (options.newJobId !== undefined)
            request.new_job_id = options.newJobId;
        if (options.delaySeconds !== undefined)
            request.delay_seconds = options.delaySeconds;
        if (options.performAt !== undefined)
            request.perform_at = options.performAt;
        return this.replay(request);
    }
}
function resultsOf(reply) {
    return reply.results.map((r) => r.status === "error" && "error" in r ? errorOf(r.error.type, r.error.message) : r);
}
function invokeError(functionName, e) {
    const error = (typeof e === "object" && e !== null ? e : {});
    // `cargo lambda watch` answers a function's error with HTTP 500 and the error as the body
    // (Lambda answers 200 with X-Amz-Function-Error); the SDK copies the body's fields onto its
    // error.
    const carried = fromPayload(undefined, error);
    if (carried)
        return carried;
    const status = error.$metadata?.httpStatusCode;
    const code = status === undefined ? undefined : error.name;
    const retryable = code === undefined ? isTransient(error.name) : InvokeError.RETRYABLE_CODES.has(code);
    return new InvokeError(functionName, error.message ?? String(e), code, retryable, e);
}
/** No answer came: a timeout or a dropped connection may go on the next try; a bad parameter or
 * missing credentials will not. */
function isTransient(name) {
    return !["CredentialsProviderError", "TypeError", "ValidationException"].includes(name ?? "");
}
