import { InvokeCommand } from "@aws-sdk/client-lambda";
import { type Backoff, type CancelMany, type CancelManyReply, type Job, type JobReply, type List, type ListParked, type ListReply, type ParkedReply, type Pause, type PauseReply, type Preview, type PreviewReply, type QueuesReply, type RedriveAllReply, type Replay, type Reschedule, type Resume, type Retry, type Stats, type StatsReply } from "./contract.js";
import { SqsWaiterError } from "./errors.js";
import { type MessageOrigin, type SqsMessage } from "./received.js";
/** The function a client calls when given none and SQS_WAITER_FUNCTION is unset (the CLI's). */
export declare const DEFAULT_FUNCTION = "sqs-waiter-enqueue";
/** What one enqueueMany request may hold in bytes: Lambda's 6 MB payload limit, less a sixth for
 * the reply's own size and JSON escaping (the Rust client's budget). */
export declare const ENQUEUE_REQUEST_BYTES: number;
/** One result per job or id of a batch, in order: its reply, or that entry's error (not thrown). */
export type Results = Array<JobReply | SqsWaiterError>;
/** What the client needs of a Lambda client: a `LambdaClient` is one. */
export interface LambdaInvoker {
    send(command: InvokeCommand): Promise<{
        Payload?: Uint8Array | undefined;
        FunctionError?: string | undefined;
    }>;
}
export interface ClientOptions {
    /** A name, `name:alias` or an ARN; SQS_WAITER_FUNCTION, then `sqs-waiter-enqueue`, when absent. */
    functionName?: string;
    /** `new LambdaClient({})` when absent. */
    lambdaClient?: LambdaInvoker;
}
/** `jobs` in requests of at most `max_jobs_per_request` jobs and `budget` bytes, in order; a job
 * larger than the budget goes alone (and the function refuses it, naming it). */
export declare function split<T>(jobs: readonly T[], budget?: number): T[][];
/** Calls the enqueue function. Every method resolves to the function's reply, typed as in
 * ./contract, or rejects with a SqsWaiterError: InvalidRequest (with `field` and `rule`) and the
 * other errorTypes, each with `retryable`. */
export declare class Client {
    readonly functionName: string;
    private readonly lambda;
    constructor(options?: ClientOptions);
    /** Sends `request` as `action` and resolves to the reply's JSON: the methods below are this
     * with their types. */
    call(action: string, request: object): Promise<unknown>;
    /** Schedules one job (stored, or straight to SQS when due within 15 minutes). */
    enqueue(job: Job): Promise<JobReply>;
    /** Schedules `jobs`, in as many requests as the contract's limits need: one result per job, in
     * order, its reply or the error of that job alone. */
    enqueueMany(jobs: readonly Job[]): Promise<Results>;
    get(queue: string, jobId: string): Promise<JobReply>;
    cancel(queue: string, jobId: string): Promise<JobReply>;
    reschedule(request: Reschedule): Promise<JobReply>;
    replay(request: Replay): Promise<JobReply>;
    retry(request: Retry): Promise<JobReply>;
    list(request: List): Promise<ListReply>;
    cancelMany(request: CancelMany): Promise<CancelManyReply>;
    parked(request: ListParked): Promise<ParkedReply>;
    redrive(queue: string, jobId: string): Promise<JobReply>;
    redriveMany(queue: string, jobIds: readonly string[]): Promise<Results>;
    redriveAll(queue: string, page?: {
        limit?: number;
        cursor?: string;
    }): Promise<RedriveAllReply>;
    stats(request: Stats): Promise<StatsReply>;
    pause(request: Pause): Promise<PauseReply>;
    resume(request: Resume): Promise<PauseReply>;
    trigger(queue: string, jobId: string): Promise<JobReply>;
    preview(request: Preview): Promise<PreviewReply>;
    queues(): Promise<QueuesReply>;
    /** Hands back a message the consumer failed on: its next attempt is scheduled at `backoff`
     * (docs/retries.md). `message` is a Lambda SQS event's record or a received message; its
     * `waiter.job_id` and `waiter.attempt` say which job and attempt it is. */
    retryMessage(message: SqsMessage, options?: MessageOrigin & {
        backoff?: Backoff;
        maxAttempts?: number;
        error?: string;
    }): Promise<JobReply>;
    /** Schedules a copy of the job that sent `message` (`replay`; the deployment must keep history
     * bodies), found as retryMessage finds it. */
    replayMessage(message: SqsMessage, options?: MessageOrigin & {
        newJobId?: string;
        delaySeconds?: number;
        performAt?: string;
    }): Promise<JobReply>;
}
