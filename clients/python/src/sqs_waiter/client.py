"""The client: one method per action of the `enqueue` function, over boto3's Lambda Invoke."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, cast

from . import contract as c
from .errors import DecodeError, InvokeError, SqsWaiterError, from_failure, from_payload
from .received import Message, replay_of, retry_of

#: The function a client calls when given none and `SQS_WAITER_FUNCTION` is unset (the CLI's).
DEFAULT_FUNCTION = "sqs-waiter-enqueue"

#: What one `enqueue_many` request may hold in bytes: Lambda's 6 MB payload limit, less a sixth
#: for the reply's own size and JSON escaping (the Rust client's budget).
ENQUEUE_REQUEST_BYTES = c.MAX_INVOKE_PAYLOAD_BYTES * 5 // 6


#: One result per job or id of a batch, in order: its reply, or that entry's error (not raised).
Results = list[c.JobReply | SqsWaiterError]


class LambdaInvoker(Protocol):
    """What the client needs of a Lambda client: boto3's `client("lambda")` is one."""

    def invoke(self, *, FunctionName: str, Payload: bytes) -> Any: ...


def split(jobs: Sequence[c.Job], budget: int = ENQUEUE_REQUEST_BYTES) -> list[Sequence[c.Job]]:
    """`jobs` in requests of at most `MAX_JOBS_PER_REQUEST` jobs and `budget` bytes, in order; a job
    larger than the budget goes alone (and the function refuses it, naming it)."""
    requests: list[Sequence[c.Job]] = []
    start, size = 0, 0
    for i, job in enumerate(jobs):
        length = len(json.dumps(job, separators=(",", ":")).encode()) + 1
        if i > start and (i - start == c.MAX_JOBS_PER_REQUEST or size + length > budget):
            requests.append(jobs[start:i])
            start, size = i, 0
        size += length
    if start < len(jobs):
        requests.append(jobs[start:])
    return requests


class Client:
    """Calls the `enqueue` function. `function_name` may be a name, `name:alias` or an ARN (an
    alias grants a class of rights, docs/security.md); it defaults to `SQS_WAITER_FUNCTION`, then
    `sqs-waiter-enqueue`. `lambda_client` defaults to `boto3.client("lambda")`.

    Every method returns the function's reply as a dict typed by `sqs_waiter.contract`, or raises a
    `SqsWaiterError`: `InvalidRequest` (with `.field` and `.rule`) and the other `errorType`s, each
    with `.retryable`."""

    def __init__(self, function_name: str | None = None, lambda_client: LambdaInvoker | None = None) -> None:
        self.function_name = function_name or os.environ.get("SQS_WAITER_FUNCTION") or DEFAULT_FUNCTION
        if lambda_client is None:
            import boto3

            lambda_client = cast(LambdaInvoker, boto3.client("lambda"))
        self._lambda = lambda_client
        events = getattr(getattr(lambda_client, "meta", None), "events", None)
        if events is not None:
            # `cargo lambda watch` answers a function's error with HTTP 500 and the error as the
            # body (Lambda answers 200 with X-Amz-Function-Error); botocore keeps no body of a
            # failed call, so the body is kept where _invoke_error finds it.
            events.register("after-call.lambda.Invoke", _keep_error_body, unique_id="sqs-waiter-error-body")

    def call(self, action: str, request: Mapping[str, object]) -> Any:
        """Sends `request` as `action` and returns the reply's JSON: the methods below are this
        with their types."""
        payload = json.dumps({**request, "action": action}, separators=(",", ":")).encode()
        try:
            out = self._lambda.invoke(FunctionName=self.function_name, Payload=payload)
        except Exception as e:  # botocore's errors, without importing botocore for them
            raise _invoke_error(self.function_name, e) from e
        body = out["Payload"].read()
        try:
            value = json.loads(body) if body else None
        except ValueError as e:
            raise DecodeError(f"reading the {action} reply: {e}") from e
        error = from_payload(out.get("FunctionError"), value)
        if error is not None:
            raise error
        if not isinstance(value, dict):
            raise DecodeError(f"reading the {action} reply: not a JSON object: {body[:200]!r}")
        return value

    def enqueue(self, job: c.Job) -> c.JobReply:
        """Schedules one job (stored, or straight to SQS when due within 15 minutes)."""
        return cast(c.JobReply, self.call("enqueue", job))

    def enqueue_many(self, jobs: Sequence[c.Job]) -> Results:
        """Schedules `jobs`, in as many requests as the contract's limits need; one result per job,
        in order: its reply, or its error (not raised). A request that fails whole (the invoke,
        or an error of the function) is the error of each of its jobs, and the later requests
        are still sent, so the results of the jobs stored before it are never lost: resend
        exactly the jobs whose result is a retryable error, with their `job_id`s."""
        results: Results = []
        for chunk in split(jobs):
            try:
                reply = cast(c.BatchReply, self.call("enqueue", {"jobs": list(chunk)}))
            except SqsWaiterError as e:
                results.extend([e] * len(chunk))
                continue
            results.extend(_results(reply))
        return results

    def get(self, queue: str, job_id: str) -> c.JobReply:
        return cast(c.JobReply, self.call("get", {"queue": queue, "job_id": job_id}))

    def cancel(self, queue: str, job_id: str) -> c.JobReply:
        return cast(c.JobReply, self.call("cancel", {"queue": queue, "job_id": job_id}))

    def reschedule(self, request: c.Reschedule) -> c.JobReply:
        return cast(c.JobReply, self.call("reschedule", request))

    def replay(self, request: c.Replay) -> c.JobReply:
        return cast(c.JobReply, self.call("replay", request))

    def retry(self, request: c.Retry) -> c.JobReply:
        return cast(c.JobReply, self.call("retry", request))

    def list(self, request: c.List) -> c.ListReply:
        return cast(c.ListReply, self.call("list", request))

    def cancel_many(self, request: c.CancelMany) -> c.CancelManyReply:
        return cast(c.CancelManyReply, self.call("cancel_many", request))

    def parked(self, request: c.ListParked) -> c.ParkedReply:
        return cast(c.ParkedReply, self.call("list_parked", request))

    def redrive(self, queue: str, job_id: str) -> c.JobReply:
        return cast(c.JobReply, self.call("redrive", {"queue": queue, "job_id": job_id}))

    def redrive_many(self, queue: str, job_ids: Sequence[str]) -> Results:
        reply = cast(c.BatchReply, self.call("redrive", {"queue": queue, "job_ids": list(job_ids)}))
        return _results(reply)

    def redrive_all(self, queue: str, *, limit: int | None = None, cursor: str | None = None) -> c.RedriveAllReply:
        request: c.RedriveAll = {"queue": queue, "all": True}
        if limit is not None:
            request["limit"] = limit
        if cursor is not None:
            request["cursor"] = cursor
        return cast(c.RedriveAllReply, self.call("redrive", request))

    def stats(self, request: c.Stats) -> c.StatsReply:
        return cast(c.StatsReply, self.call("stats", request))

    def pause(self, request: c.Pause) -> c.PauseReply:
        return cast(c.PauseReply, self.call("pause", request))

    def resume(self, request: c.Resume) -> c.PauseReply:
        return cast(c.PauseReply, self.call("resume", request))

    def trigger(self, queue: str, job_id: str) -> c.JobReply:
        return cast(c.JobReply, self.call("trigger", {"queue": queue, "job_id": job_id}))

    def preview(self, request: c.Preview) -> c.PreviewReply:
        return cast(c.PreviewReply, self.call("preview", request))

    def queues(self) -> c.QueuesReply:
        return cast(c.QueuesReply, self.call("queues", {}))

    def retry_message(
        self,
        message: Message,
        *,
        queue: str | None = None,
        job_id: str | None = None,
        backoff: c.Backoff | None = None,
        max_attempts: int | None = None,
        error: str | None = None,
    ) -> c.JobReply:
        """Hands back a message the consumer failed on: its next attempt is scheduled at `backoff`
        (docs/retries.md). `message` is a record of a Lambda SQS event or a message of boto3's
        `receive_message` (with `MessageAttributeNames=["All"]`). The job id and attempt are the
        message's `waiter.job_id` and `waiter.attempt`; `job_id` is the id you enqueued it under,
        for messages that carry none. `queue` is read from a Lambda record's `eventSourceARN`."""
        request = retry_of(message, queue=queue, job_id=job_id)
        if backoff is not None:
            request["backoff"] = backoff
        if max_attempts is not None:
            request["max_attempts"] = max_attempts
        if error is not None:
            request["error"] = error
        return self.retry(request)

    def replay_message(
        self,
        message: Message,
        *,
        queue: str | None = None,
        job_id: str | None = None,
        new_job_id: str | None = None,
        delay_seconds: int | None = None,
        perform_at: str | None = None,
    ) -> c.JobReply:
        """Schedules a copy of the job that sent `message` (`replay`; the deployment must keep
        history bodies), found as `retry_message` finds it."""
        request = replay_of(message, queue=queue, job_id=job_id)
        if new_job_id is not None:
            request["new_job_id"] = new_job_id
        if delay_seconds is not None:
            request["delay_seconds"] = delay_seconds
        if perform_at is not None:
            request["perform_at"] = perform_at
        return self.replay(request)


def _results(reply: c.BatchReply) -> Results:
    out: Results = []
    for result in reply["results"]:
        if result.get("status") == "error":
            out.append(from_failure(result.get("error")))
        else:
            out.append(cast(c.JobReply, result))
    return out


_ERROR_BODY = "SqsWaiterErrorBody"


def _keep_error_body(http_response: Any, parsed: Any, **_: Any) -> None:
    if getattr(http_response, "status_code", 200) >= 500 and isinstance(parsed, dict):
        parsed[_ERROR_BODY] = getattr(http_response, "content", b"")


def _invoke_error(function_name: str, e: Exception) -> SqsWaiterError:
    response = getattr(e, "response", None)
    if isinstance(response, dict):
        # A ClientError: Lambda answered.
        error = response.get("Error", {})
        code = error.get("Code") or None
        try:
            parsed = from_payload(None, json.loads(response.get(_ERROR_BODY) or b"null"))
        except ValueError:
            parsed = None
        if parsed is not None:
            return parsed
        return InvokeError(function_name, str(e), code=code, retryable=code in InvokeError.RETRYABLE_CODES)
    # No answer: a timeout or a dropped connection may go on the next try (botocore's
    # ConnectionError and HTTPClientError, and Python's own); a bad parameter, no region or no
    # credentials will not.
    transient = any(k.__name__ in _TRANSIENT for k in type(e).__mro__)
    return InvokeError(function_name, str(e), code=None, retryable=transient)


_TRANSIENT = frozenset({"ConnectionError", "HTTPClientError", "TimeoutError"})
