/**
 * A job's result in a batch: its reply, or why it failed (others are not affected).
 */
export type BatchResult = JobReply | {
    error: Failure;
    /**
     * Always `"error"`.
     */
    status: "error";
};
/**
 * What a series does with occurrences found more than 60 s after their instant.
 */
export type CatchUp = "skip" | "one" | "all";
/**
 * Which partition `list` and `cancel_many` read.
 */
export type ListStatus = "scheduled" | "parked";
/**
 * What `enqueue` does when a job with the same `job_id` is stored (debounce).
 */
export type OnDuplicate = "keep" | "replace" | "extend";
/**
 * The `errorType` of a failed invocation, and the `error.type` of a failed job in a batch.
 */
export type ErrorType = "InvalidRequest" | "Throttled" | "DependencyFailure" | "ResourceNotFound" | "Rejected" | "InternalError" | "AccessDenied";
/**
 * The `"status": "error"` of a failed batch entry.
 */
export type FailedStatus = "error";
/**
 * Where a job stands, as one reply tells it.
 */
export type JobStatus = "sent" | "scheduled" | "parked" | "dispatched" | "cancelled" | "expired" | "not_found" | "dispatching" | "rescheduled" | "finished" | "conflict" | "not_replayable" | "paused" | "resumed" | "unknown";
/**
 * Exponential backoff: attempt n+1 is due `min(max_s, base_s × factor^(n−1))` seconds after the
 * `retry` of attempt n; with `jitter`, a uniform draw from the upper half of that.
 */
export interface Backoff {
    /**
     * Seconds before the second attempt, 1 to 86400 (default 30).
     */
    base_s?: number | null;
    /**
     * Growth per attempt, 1 to 10 (default 2).
     */
    factor?: number | null;
    /**
     * Spread the delay over its upper half (default true), so that jobs that failed together
     * do not come back together.
     */
    jitter?: boolean | null;
    /**
     * The longest delay, `base_s` to 31536000 (default 86400).
     */
    max_s?: number | null;
}
/**
 * One result per job or id, in request order.
 */
export interface BatchReply {
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue?: string | null;
    /**
     * One result per job or id, in request order.
     */
    results: BatchResult[];
}
/**
 * The job's reply.
 */
export interface JobReply {
    /**
     * `retry`: the attempt scheduled (for `conflict` and `cancelled`, the job's latest). `get`,
     * `list`, history: the attempt of a retried job (its messages' `waiter.attempt`), when past 1.
     */
    attempt?: number | null;
    /**
     * Parked because its attempts ran out: how many were made.
     */
    attempts?: number | null;
    /**
     * History: when the job was cancelled.
     */
    cancelled_at?: string | null;
    /**
     * The `DelaySeconds` a direct send used.
     */
    delay_seconds?: number | null;
    /**
     * `true` when the job existed already and nothing was changed.
     */
    duplicate?: boolean | null;
    /**
     * When the job was stored.
     */
    enqueued_at?: string | null;
    /**
     * Why SQS rejected a parked job.
     */
    error?: ParkedError | null;
    /**
     * History: when the job was found expired and dropped.
     */
    expired_at?: string | null;
    /**
     * A job found after this instant is dropped, not sent.
     */
    expires_at?: string | null;
    /**
     * The job's id, its idempotency key.
     */
    job_id: string;
    /**
     * A poller run that crashed may have delivered this job at this instant already; the
     * stored job is its delivery at the next opening of its windows. `cancel` and
     * `reschedule` act on that later delivery only.
     */
    maybe_delivered_at?: string | null;
    /**
     * SQS message attributes, sent with the message unaltered.
     */
    message_attributes?: {
        [k: string]: MessageAttribute | undefined;
    } | null;
    /**
     * The message body, passed to SQS unaltered.
     */
    message_body?: string | null;
    /**
     * The FIFO deduplication id.
     */
    message_deduplication_id?: string | null;
    /**
     * The FIFO message group.
     */
    message_group_id?: string | null;
    /**
     * SQS's id of the message (`sent`, `dispatched`).
     */
    message_id?: string | null;
    /**
     * A series: the occurrences sent so far.
     */
    occurrences?: number | null;
    /**
     * When SQS rejected the job and it was parked.
     */
    parked_at?: string | null;
    /**
     * `true` on a paused job (get, list): nothing of it is sent until `resume`.
     */
    paused?: boolean | null;
    /**
     * Since when a paused job is paused.
     */
    paused_at?: string | null;
    /**
     * When the job is due.
     */
    perform_at?: string | null;
    /**
     * `perform_at` as epoch seconds.
     */
    perform_at_epoch?: number | null;
    /**
     * A stored or parked job's priority (0 to 1000, lower first).
     */
    priority?: number | null;
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue: string;
    /**
     * Why the job was parked without a send: `attempts_exhausted`.
     */
    reason?: string | null;
    /**
     * A series: how it repeats (get, list, enqueue).
     */
    repeat?: Repeat | null;
    /**
     * `enqueue` with `on_duplicate` `replace` or `extend`: `true` when a stored job took this
     * call's message or time, `false` when a new job was stored (none was, or its message had
     * left for SQS already).
     */
    replaced?: boolean | null;
    /**
     * `replay`: the job this one is a copy of.
     */
    replay_of?: string | null;
    /**
     * History: when a poller handed the job to SQS.
     */
    sent_at?: string | null;
    /**
     * Where the job stands.
     */
    status: "sent" | "scheduled" | "parked" | "dispatched" | "cancelled" | "expired" | "not_found" | "dispatching" | "rescheduled" | "finished" | "conflict" | "not_replayable" | "paused" | "resumed" | "unknown";
    /**
     * The IANA zone of `windows`; `UTC` when absent.
     */
    time_zone?: string | null;
    /**
     * The X-Ray trace header the job's messages carry as `AWSTraceHeader` (get, list).
     */
    trace_header?: string | null;
    /**
     * One more on every change; `if_version` of `reschedule` checks it.
     */
    version?: number | null;
    /**
     * A stored or parked job's weight against the rate budget (1 to 100).
     */
    weight?: number | null;
    /**
     * Local-time windows the job may arrive in.
     */
    windows?: Window[] | null;
}
/**
 * SQS's code and message for a parked job.
 */
export interface ParkedError {
    /**
     * SQS's error code.
     */
    code: string;
    /**
     * The error message, naming the field and the rule for `InvalidRequest`.
     */
    message: string;
}
/**
 * An SQS message attribute, in the function's snake_case form.
 */
export interface MessageAttribute {
    /**
     * Standard base64.
     */
    binary_value?: string | null;
    /**
     * `String`, `Number` or `Binary`, optionally with a custom suffix (`String.json`).
     */
    data_type: string;
    /**
     * The value of a `String` or `Number` attribute.
     */
    string_value?: string | null;
}
/**
 * How a job repeats (the `repeat` of `enqueue` and `reschedule`, shown by `get` and `list`):
 * exactly one of `cron`, `every_s` and `expression`.
 */
export interface Repeat {
    /**
     * What to do with occurrences found more than 60 s late; `one` when absent.
     */
    catch_up?: CatchUp | null;
    /**
     * Occurrences in all (1 to 1000000).
     */
    count?: number | null;
    /**
     * Five fields (minute, hour, day of month, month, day of week) read in the job's
     * `time_zone`.
     */
    cron?: string | null;
    /**
     * Every so many seconds from the series' start (60 to 31536000).
     */
    every_s?: number | null;
    /**
     * EventBridge Scheduler's `cron(...)` (six fields, as AWS reads them) or `rate(...)`,
     * read in the job's `time_zone`; shown as given.
     */
    expression?: string | null;
    /**
     * No occurrence after this instant.
     */
    until?: string | null;
}
/**
 * A local-time span, `HH:MM` to `HH:MM` (exclusive; wraps past midnight when `to < from`).
 */
export interface Window {
    /**
     * Only jobs due at or after this instant.
     */
    from: string;
    /**
     * Only jobs due at or before this instant.
     */
    to: string;
}
/**
 * Why it failed.
 */
export interface Failure {
    /**
     * The error message, naming the field and the rule for `InvalidRequest`.
     */
    message: string;
    /**
     * Whether the same request may succeed if sent again.
     */
    retryable: boolean;
    /**
     * The error's `errorType`.
     */
    type: "InvalidRequest" | "Throttled" | "DependencyFailure" | "ResourceNotFound" | "Rejected" | "InternalError" | "AccessDenied";
}
/**
 * Jobs due in one span of a `stats` histogram.
 */
export interface Bucket {
    /**
     * How many items this page holds.
     */
    count: number;
    /**
     * Only jobs due at or after this instant.
     */
    from: string;
    /**
     * Only jobs due at or before this instant.
     */
    to?: string | null;
}
/**
 * Cancels a stored job: it never reaches SQS unless a poller is handing it over now.
 */
export interface Cancel {
    /**
     * The job's id, its idempotency key.
     */
    job_id: string;
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue: string;
}
/**
 * Cancels the jobs named, or one page of a selection (`prefix`, `from`, `to`; at least one).
 */
export interface CancelMany {
    /**
     * Where the next page starts: pass it back as given; `None` means done.
     */
    cursor?: string | null;
    /**
     * Only jobs due at or after this instant.
     */
    from?: string | null;
    /**
     * The ids, 1 to `MAX_JOBS_PER_REQUEST` of them.
     */
    job_ids?: string[] | null;
    /**
     * The most items one page holds (1 to `MAX_PAGE_LIMIT`).
     */
    limit?: number | null;
    /**
     * Only jobs whose id starts with this.
     */
    prefix?: string | null;
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue: string;
    /**
     * Where the job stands.
     */
    status?: ListStatus | null;
    /**
     * Only jobs due at or before this instant.
     */
    to?: string | null;
}
/**
 * What one `cancel_many` request did.
 */
export interface CancelManyReply {
    /**
     * Jobs cancelled: none of them reaches SQS from now on.
     */
    cancelled: number;
    /**
     * Where the next page starts: pass it back as given; `None` means done.
     */
    cursor?: string | null;
    /**
     * A poller may be handing these to SQS: not cancelled, may be delivered.
     */
    dispatching: number;
    /**
     * Of the `cancelled`, those a crashed poller run may have delivered before
     * (`maybe_delivered_at`).
     */
    maybe_delivered?: number;
    /**
     * Ids not stored (never, or already handed to SQS).
     */
    not_found: number;
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue: string;
}
/**
 * Up to 1000 jobs in one request; each succeeds or fails on its own.
 */
export interface EnqueueMany {
    /**
     * The jobs of this page, in order.
     */
    jobs: Job[];
}
/**
 * One job to schedule: the `enqueue` request.
 */
export interface Job {
    /**
     * Whole seconds from now; give this or `perform_at`, or neither for now.
     */
    delay_seconds?: number | null;
    /**
     * A job found after this instant is dropped, not sent.
     */
    expires_at?: string | null;
    /**
     * The idempotency key; generated by the function when absent.
     */
    job_id?: string | null;
    /**
     * SQS message attributes, sent with the message unaltered.
     */
    message_attributes?: {
        [k: string]: MessageAttribute | undefined;
    };
    /**
     * Passed to SQS unaltered.
     */
    message_body: string;
    /**
     * FIFO only; derived from `job_id` when absent.
     */
    message_deduplication_id?: string | null;
    /**
     * Required on FIFO queues.
     */
    message_group_id?: string | null;
    /**
     * With a `job_id` that names a stored job: `keep` it (the default), `replace` its message
     * and time, or `extend` its time (debounce). Such a job is always stored, never sent
     * straight to SQS, so that a later call can still replace it.
     */
    on_duplicate?: OnDuplicate | null;
    /**
     * When the job is due.
     */
    perform_at?: string | null;
    /**
     * 0 to 1000, default 100; lower takes the rate budget first, 0 is critical (see DESIGN).
     */
    priority?: number | null;
    /**
     * A queue name from the deployment's `WAITER_QUEUES`.
     */
    queue: string;
    /**
     * Makes the job a series: its `perform_at` (or `delay_seconds`) is the series' start, and
     * each occurrence is one message (DESIGN "Recurring jobs").
     */
    repeat?: Repeat | null;
    /**
     * When the job is due as EventBridge Scheduler's one-off `at(yyyy-mm-ddThh:mm:ss)`, a
     * local time in `time_zone`; instead of `delay_seconds` and `perform_at`.
     */
    schedule?: string | null;
    /**
     * An IANA zone name for `windows`, `UTC` when absent.
     */
    time_zone?: string | null;
    /**
     * An X-Ray trace header (`Root=1-…;Parent=…;Sampled=1`) the job's messages carry as SQS's
     * `AWSTraceHeader`. When absent, the enqueue call's own trace is kept if it is sampled.
     */
    trace_header?: string | null;
    /**
     * 1 to 100, default 1: the messages this job counts as against `WAITER_MAX_RATE`.
     */
    weight?: number | null;
    /**
     * Local-time windows the job may arrive in (with `time_zone`).
     */
    windows?: Window[] | null;
}
/**
 * One job of a batch that failed: `{"status": "error", "error": {...}}` in `results`.
 */
export interface Failure1 {
    /**
     * The error message, naming the field and the rule for `InvalidRequest`.
     */
    message: string;
    /**
     * Whether the same request may succeed if sent again.
     */
    retryable: boolean;
    /**
     * The error's `errorType`.
     */
    type: "InvalidRequest" | "Throttled" | "DependencyFailure" | "ResourceNotFound" | "Rejected" | "InternalError" | "AccessDenied";
}
/**
 * A job as stored, or what history knows of it.
 */
export interface Get {
    /**
     * The job's id, its idempotency key.
     */
    job_id: string;
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue: string;
}
/**
 * The reply about one job, for every action that names one (and each job of `list`).
 */
export interface JobReply1 {
    /**
     * `retry`: the attempt scheduled (for `conflict` and `cancelled`, the job's latest). `get`,
     * `list`, history: the attempt of a retried job (its messages' `waiter.attempt`), when past 1.
     */
    attempt?: number | null;
    /**
     * Parked because its attempts ran out: how many were made.
     */
    attempts?: number | null;
    /**
     * History: when the job was cancelled.
     */
    cancelled_at?: string | null;
    /**
     * The `DelaySeconds` a direct send used.
     */
    delay_seconds?: number | null;
    /**
     * `true` when the job existed already and nothing was changed.
     */
    duplicate?: boolean | null;
    /**
     * When the job was stored.
     */
    enqueued_at?: string | null;
    /**
     * Why SQS rejected a parked job.
     */
    error?: ParkedError | null;
    /**
     * History: when the job was found expired and dropped.
     */
    expired_at?: string | null;
    /**
     * A job found after this instant is dropped, not sent.
     */
    expires_at?: string | null;
    /**
     * The job's id, its idempotency key.
     */
    job_id: string;
    /**
     * A poller run that crashed may have delivered this job at this instant already; the
     * stored job is its delivery at the next opening of its windows. `cancel` and
     * `reschedule` act on that later delivery only.
     */
    maybe_delivered_at?: string | null;
    /**
     * SQS message attributes, sent with the message unaltered.
     */
    message_attributes?: {
        [k: string]: MessageAttribute | undefined;
    } | null;
    /**
     * The message body, passed to SQS unaltered.
     */
    message_body?: string | null;
    /**
     * The FIFO deduplication id.
     */
    message_deduplication_id?: string | null;
    /**
     * The FIFO message group.
     */
    message_group_id?: string | null;
    /**
     * SQS's id of the message (`sent`, `dispatched`).
     */
    message_id?: string | null;
    /**
     * A series: the occurrences sent so far.
     */
    occurrences?: number | null;
    /**
     * When SQS rejected the job and it was parked.
     */
    parked_at?: string | null;
    /**
     * `true` on a paused job (get, list): nothing of it is sent until `resume`.
     */
    paused?: boolean | null;
    /**
     * Since when a paused job is paused.
     */
    paused_at?: string | null;
    /**
     * When the job is due.
     */
    perform_at?: string | null;
    /**
     * `perform_at` as epoch seconds.
     */
    perform_at_epoch?: number | null;
    /**
     * A stored or parked job's priority (0 to 1000, lower first).
     */
    priority?: number | null;
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue: string;
    /**
     * Why the job was parked without a send: `attempts_exhausted`.
     */
    reason?: string | null;
    /**
     * A series: how it repeats (get, list, enqueue).
     */
    repeat?: Repeat | null;
    /**
     * `enqueue` with `on_duplicate` `replace` or `extend`: `true` when a stored job took this
     * call's message or time, `false` when a new job was stored (none was, or its message had
     * left for SQS already).
     */
    replaced?: boolean | null;
    /**
     * `replay`: the job this one is a copy of.
     */
    replay_of?: string | null;
    /**
     * History: when a poller handed the job to SQS.
     */
    sent_at?: string | null;
    /**
     * Where the job stands.
     */
    status: "sent" | "scheduled" | "parked" | "dispatched" | "cancelled" | "expired" | "not_found" | "dispatching" | "rescheduled" | "finished" | "conflict" | "not_replayable" | "paused" | "resumed" | "unknown";
    /**
     * The IANA zone of `windows`; `UTC` when absent.
     */
    time_zone?: string | null;
    /**
     * The X-Ray trace header the job's messages carry as `AWSTraceHeader` (get, list).
     */
    trace_header?: string | null;
    /**
     * One more on every change; `if_version` of `reschedule` checks it.
     */
    version?: number | null;
    /**
     * A stored or parked job's weight against the rate budget (1 to 100).
     */
    weight?: number | null;
    /**
     * Local-time windows the job may arrive in.
     */
    windows?: Window[] | null;
}
/**
 * One page of a queue's jobs in `perform_at` order. Every filter is optional.
 */
export interface List {
    /**
     * From the previous page's reply.
     */
    cursor?: string | null;
    /**
     * Only jobs due at or after this instant.
     */
    from?: string | null;
    /**
     * 1 to 1000, 100 when absent.
     */
    limit?: number | null;
    /**
     * Of `job_id`.
     */
    prefix?: string | null;
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue: string;
    /**
     * Where the job stands.
     */
    status?: ListStatus | null;
    /**
     * Only jobs due at or before this instant.
     */
    to?: string | null;
    /**
     * Include each job's body and attributes.
     */
    with_body?: boolean | null;
}
/**
 * One page of the jobs SQS rejected permanently.
 */
export interface ListParked {
    /**
     * Where the next page starts: pass it back as given; `None` means done.
     */
    cursor?: string | null;
    /**
     * The most items one page holds (1 to `MAX_PAGE_LIMIT`).
     */
    limit?: number | null;
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue: string;
}
/**
 * One page of `list`.
 */
export interface ListReply {
    /**
     * Pass it back for the next page; `None` means done.
     */
    cursor?: string | null;
    /**
     * The jobs of this page, in order.
     */
    jobs: JobReply1[];
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue: string;
}
/**
 * One page of `list_parked`.
 */
export interface ParkedReply {
    /**
     * How many items this page holds.
     */
    count: number;
    /**
     * Where the next page starts: pass it back as given; `None` means done.
     */
    cursor?: string | null;
    /**
     * The jobs of this page, in order.
     */
    jobs: JobReply1[];
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue: string;
}
/**
 * Pauses a queue, or with `job_id` one stored job or series: nothing of it is handed to SQS
 * until `resume`. A paused job keeps its times.
 */
export interface Pause {
    /**
     * One stored job or series of the queue; the whole queue when absent.
     */
    job_id?: string | null;
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue: string;
}
/**
 * The reply of `pause` and `resume`: `paused`, `resumed`, `not_found` (no such stored job) or
 * `dispatching` (a poller is handing the job to SQS now; nothing was changed).
 */
export interface PauseReply {
    /**
     * The job, when the call named one.
     */
    job_id?: string | null;
    /**
     * `paused`: since when (a second `pause` keeps the first one's time).
     */
    paused_at?: string | null;
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue: string;
    /**
     * What the call did.
     */
    status: "sent" | "scheduled" | "parked" | "dispatched" | "cancelled" | "expired" | "not_found" | "dispatching" | "rescheduled" | "finished" | "conflict" | "not_replayable" | "paused" | "resumed" | "unknown";
    /**
     * A job's version after the change.
     */
    version?: number | null;
}
/**
 * The next occurrences of a schedule (`repeat`, read in `time_zone`, from `from`), or of a
 * stored series (`queue` and `job_id`, from its next occurrence), before windows.
 */
export interface Preview {
    /**
     * How many, 1 to 100; 10 when absent.
     */
    count?: number | null;
    /**
     * Occurrences at or after this; now when absent.
     */
    from?: string | null;
    /**
     * The stored series.
     */
    job_id?: string | null;
    /**
     * With `job_id`: a stored series of this queue instead of `repeat`.
     */
    queue?: string | null;
    /**
     * A schedule as `enqueue` takes it.
     */
    repeat?: Repeat | null;
    /**
     * The IANA zone of `repeat`; `UTC` when absent.
     */
    time_zone?: string | null;
}
/**
 * One occurrence of a preview.
 */
export interface PreviewOccurrence {
    /**
     * The instant, UTC.
     */
    at: string;
    /**
     * The same instant in the schedule's zone, with its offset.
     */
    local: string;
    /**
     * A clock change moved it off the local time its rule names.
     */
    shifted?: boolean;
}
/**
 * The reply of `preview`.
 */
export interface PreviewReply {
    /**
     * In time order.
     */
    occurrences: PreviewOccurrence[];
    /**
     * `not_found` when `job_id` names no stored job; absent otherwise.
     */
    status?: JobStatus | null;
}
/**
 * One queue the function serves.
 */
export interface QueueInfo {
    /**
     * A FIFO queue (its name ends in `.fifo`).
     */
    fifo: boolean;
    /**
     * Whether the queue is paused.
     */
    paused: boolean;
    /**
     * Since when, when it is.
     */
    paused_at?: string | null;
    /**
     * The queue's name.
     */
    queue: string;
}
/**
 * The queues the function serves (its `WAITER_QUEUES`), with their pause state.
 */
export interface Queues {
}
/**
 * The reply of `queues`.
 */
export interface QueuesReply {
    /**
     * In the order of `WAITER_QUEUES`.
     */
    queues: QueueInfo[];
}
/**
 * Moves one parked job back, due now.
 */
export interface Redrive {
    /**
     * The job's id, its idempotency key.
     */
    job_id: string;
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue: string;
}
/**
 * Moves one page of the parked partition back; call again with the reply's cursor.
 */
export interface RedriveAll {
    /**
     * Always `true` on the wire.
     */
    all: boolean;
    /**
     * Where the next page starts: pass it back as given; `None` means done.
     */
    cursor?: string | null;
    /**
     * The most items one page holds (1 to `MAX_PAGE_LIMIT`).
     */
    limit?: number | null;
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue: string;
}
/**
 * One page of `redrive` with `all: true`.
 */
export interface RedriveAllReply {
    /**
     * Where the next page starts: pass it back as given; `None` means done.
     */
    cursor?: string | null;
    /**
     * Ids active again: nothing moved, the parked copy stays listed.
     */
    duplicates: number;
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue: string;
    /**
     * Parked jobs moved back, due now.
     */
    redriven: number;
}
/**
 * Moves the parked jobs named back, due now.
 */
export interface RedriveMany {
    /**
     * The ids, 1 to `MAX_JOBS_PER_REQUEST` of them.
     */
    job_ids: string[];
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue: string;
}
/**
 * The `redrive` request as the function reads it: exactly one of `job_id`, `job_ids` or
 * `all: true`, and `limit` and `cursor` only with `all`. `Redrive`, `RedriveMany` and
 * `RedriveAll` each write one form of it, with a typed reply.
 */
export interface RedriveRequest {
    /**
     * A page of the whole parked partition.
     */
    all?: boolean | null;
    /**
     * Where the next page starts, with `all`.
     */
    cursor?: string | null;
    /**
     * One job's id.
     */
    job_id?: string | null;
    /**
     * The ids, 1 to `MAX_JOBS_PER_REQUEST` of them.
     */
    job_ids?: string[] | null;
    /**
     * The most items one page holds (1 to `MAX_PAGE_LIMIT`), with `all`.
     */
    limit?: number | null;
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue: string;
}
/**
 * Schedules a copy of a job that has left the table (dispatched, cancelled or expired), from
 * what history kept of its message (`WAITER_HISTORY_BODY=true`), under a new id.
 */
export interface Replay {
    /**
     * Whole seconds from now; give this or `perform_at`, or neither for now.
     */
    delay_seconds?: number | null;
    /**
     * The id of the job to copy.
     */
    job_id: string;
    /**
     * The copy's id; `{job_id}~{version}` when absent, so that replaying twice is a duplicate.
     */
    new_job_id?: string | null;
    /**
     * When the copy is due.
     */
    perform_at?: string | null;
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue: string;
}
/**
 * Moves a stored job and may change what it carries. A field left `None` keeps its value.
 */
export interface Reschedule {
    /**
     * Whole seconds from now; give this or `perform_at`.
     */
    delay_seconds?: number | null;
    /**
     * `Some(None)` removes the expiry.
     */
    expires_at?: string | null;
    /**
     * Only if the stored version is this one (else the reply is `conflict`).
     */
    if_version?: number | null;
    /**
     * The job's id, its idempotency key.
     */
    job_id: string;
    /**
     * SQS message attributes, sent with the message unaltered.
     */
    message_attributes?: {
        [k: string]: MessageAttribute | undefined;
    } | null;
    /**
     * The message body, passed to SQS unaltered.
     */
    message_body?: string | null;
    /**
     * When the job is due.
     */
    perform_at?: string | null;
    /**
     * A new priority (0 to 1000); kept when absent.
     */
    priority?: number | null;
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue: string;
    /**
     * A new repetition (a cron read in `time_zone`), kept when absent; the series restarts at
     * `perform_at` either way, its `occurrences` kept.
     */
    repeat?: Repeat | null;
    /**
     * EventBridge Scheduler's `at(yyyy-mm-ddThh:mm:ss)`, read in `time_zone` (UTC when absent),
     * as on `enqueue`; instead of `delay_seconds` or `perform_at`.
     */
    schedule?: string | null;
    /**
     * The IANA zone of `windows`; `UTC` when absent.
     */
    time_zone?: string | null;
    /**
     * A new weight (1 to 100); kept when absent.
     */
    weight?: number | null;
    /**
     * `Some(None)` removes the windows.
     */
    windows?: Window[] | null;
}
/**
 * Ends a pause of a queue, or with `job_id` of one job or series: what fell due meanwhile is
 * sent as any overdue job is (series by their `catch_up`).
 */
export interface Resume {
    /**
     * One stored job or series of the queue; the whole queue when absent.
     */
    job_id?: string | null;
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue: string;
}
/**
 * Hands back a message the consumer failed on: the next attempt is due after the backoff, or,
 * when `attempt` reached `max_attempts`, the job is parked. Idempotent per (`job_id`,
 * `attempt`).
 */
export interface Retry {
    /**
     * The attempt that just failed, from 1 (the first delivery). The next is `attempt + 1`.
     */
    attempt: number;
    /**
     * The schedule of attempts; every field has a default.
     */
    backoff?: Backoff | null;
    /**
     * Why the attempt failed, kept when the job is parked (up to 1024 characters).
     */
    error?: string | null;
    /**
     * The job's id, the same for every attempt: the one its message names in `waiter.job_id`
     * (a replayed copy), else the one it was enqueued under.
     */
    job_id: string;
    /**
     * The attempt after which the job is parked instead of retried (default 10).
     */
    max_attempts?: number | null;
    /**
     * SQS message attributes, sent again; `waiter.*` ones are replaced by ours.
     */
    message_attributes?: {
        [k: string]: MessageAttribute | undefined;
    };
    /**
     * The message body, sent again unaltered.
     */
    message_body: string;
    /**
     * The FIFO message group, kept (required on `.fifo` queues).
     */
    message_group_id?: string | null;
    /**
     * The next attempt's priority (0 to 1000); when absent, the job's (`waiter.priority` in
     * `message_attributes`, else 100).
     */
    priority?: number | null;
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue: string;
    /**
     * The next attempt's weight (1 to 100); when absent, the job's (`waiter.weight`, else 1).
     */
    weight?: number | null;
}
/**
 * Counts of what a queue holds, with a due-time histogram.
 */
export interface Stats {
    /**
     * 1 to 2,592,000, 3600 when absent.
     */
    bucket_s?: number | null;
    /**
     * 1 to 100, 24 when absent.
     */
    buckets?: number | null;
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue: string;
}
/**
 * What a queue holds.
 */
export interface StatsReply {
    /**
     * The width of each histogram bucket, in seconds.
     */
    bucket_s: number;
    /**
     * Jobs due in `[from, to)`; the last bucket is open-ended.
     */
    histogram: Bucket[];
    /**
     * When the next job not yet overdue is due; `None` when there is none.
     */
    next_due?: string | null;
    /**
     * The function's clock when it counted.
     */
    now: string;
    /**
     * Age of the oldest overdue job, `0` when none.
     */
    oldest_overdue_s: number;
    /**
     * Due before `now`, not yet handed to SQS.
     */
    overdue: number;
    /**
     * `overdue` by priority class (`0`, `1-99`, `100`, `101+`): what waits for the rate budget.
     * Only classes with jobs.
     */
    overdue_by_priority?: {
        [k: string]: number | undefined;
    };
    /**
     * Jobs SQS rejected permanently, waiting for `redrive`.
     */
    parked: number;
    /**
     * Whether the queue is paused (`pause` without `job_id`).
     */
    paused?: boolean;
    /**
     * Since when the queue is paused.
     */
    paused_at?: string | null;
    /**
     * Stored jobs paused one by one (`pause` with `job_id`), counted in `scheduled` too.
     */
    paused_jobs?: number;
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue: string;
    /**
     * Every stored job that is not parked, overdue and paused ones included.
     */
    scheduled: number;
}
/**
 * Runs a stored job now: a one-off job is handed to SQS at once (and leaves as any sent job
 * does); a series sends one extra occurrence now, as `{job_id}@{epoch of now}`, its schedule
 * and `count` untouched. Replies `sent` with `message_id`, `not_found`, `dispatching` (a poller
 * holds the job or its shard: it sends it), or `paused` (resume first).
 */
export interface Trigger {
    /**
     * The stored job or series.
     */
    job_id: string;
    /**
     * The queue, one of the deployment's `WAITER_QUEUES`.
     */
    queue: string;
}
/** The contract's limits (docs/contract.md). */
export declare const LIMITS: {
    readonly default_page_limit: 100;
    readonly max_invoke_payload_bytes: 6291456;
    readonly max_jobs_per_request: 1000;
    readonly max_page_limit: 1000;
};
/** The message attributes sqs-waiter sets on what it sends. */
export declare const ATTRIBUTES: {
    readonly attempt: "waiter.attempt";
    readonly job_id: "waiter.job_id";
    readonly occurrence: "waiter.occurrence";
};
/** Attribute names a caller cannot set: sqs-waiter replaces them. */
export declare const RESERVED_ATTRIBUTE_PREFIX = "waiter.";
/** Every errorType the function answers with, and whether the same request may succeed later. */
export declare const ERROR_TYPES: {
    readonly InvalidRequest: false;
    readonly Throttled: true;
    readonly DependencyFailure: true;
    readonly ResourceNotFound: false;
    readonly Rejected: false;
    readonly InternalError: false;
    readonly AccessDenied: false;
};
/** Every request form the function reads: its action, request type and reply type. */
export declare const ACTIONS: readonly [{
    readonly action: "enqueue";
    readonly request: "Job";
    readonly reply: "JobReply";
}, {
    readonly action: "enqueue";
    readonly request: "EnqueueMany";
    readonly reply: "BatchReply";
}, {
    readonly action: "get";
    readonly request: "Get";
    readonly reply: "JobReply";
}, {
    readonly action: "cancel";
    readonly request: "Cancel";
    readonly reply: "JobReply";
}, {
    readonly action: "reschedule";
    readonly request: "Reschedule";
    readonly reply: "JobReply";
}, {
    readonly action: "list";
    readonly request: "List";
    readonly reply: "ListReply";
}, {
    readonly action: "cancel_many";
    readonly request: "CancelMany";
    readonly reply: "CancelManyReply";
}, {
    readonly action: "list_parked";
    readonly request: "ListParked";
    readonly reply: "ParkedReply";
}, {
    readonly action: "redrive";
    readonly request: "Redrive";
    readonly reply: "JobReply";
}, {
    readonly action: "redrive";
    readonly request: "RedriveMany";
    readonly reply: "BatchReply";
}, {
    readonly action: "redrive";
    readonly request: "RedriveAll";
    readonly reply: "RedriveAllReply";
}, {
    readonly action: "stats";
    readonly request: "Stats";
    readonly reply: "StatsReply";
}, {
    readonly action: "replay";
    readonly request: "Replay";
    readonly reply: "JobReply";
}, {
    readonly action: "retry";
    readonly request: "Retry";
    readonly reply: "JobReply";
}, {
    readonly action: "pause";
    readonly request: "Pause";
    readonly reply: "PauseReply";
}, {
    readonly action: "resume";
    readonly request: "Resume";
    readonly reply: "PauseReply";
}, {
    readonly action: "trigger";
    readonly request: "Trigger";
    readonly reply: "JobReply";
}, {
    readonly action: "preview";
    readonly request: "Preview";
    readonly reply: "PreviewReply";
}, {
    readonly action: "queues";
    readonly request: "Queues";
    readonly reply: "QueuesReply";
}];
/** The name of every type above. */
export type ContractTypeName = "Backoff" | "BatchReply" | "BatchResult" | "Bucket" | "Cancel" | "CancelMany" | "CancelManyReply" | "CatchUp" | "EnqueueMany" | "ErrorType" | "FailedStatus" | "Failure" | "Get" | "Job" | "JobReply" | "JobStatus" | "List" | "ListParked" | "ListReply" | "ListStatus" | "MessageAttribute" | "OnDuplicate" | "ParkedError" | "ParkedReply" | "Pause" | "PauseReply" | "Preview" | "PreviewOccurrence" | "PreviewReply" | "QueueInfo" | "Queues" | "QueuesReply" | "Redrive" | "RedriveAll" | "RedriveAllReply" | "RedriveMany" | "RedriveRequest" | "Repeat" | "Replay" | "Reschedule" | "Resume" | "Retry" | "Stats" | "StatsReply" | "Trigger" | "Window";
