"""Errors by the function's `errorType`, each saying whether the same request may succeed later."""

from __future__ import annotations

from typing import Any, ClassVar

from .contract import RETRYABLE_ERROR_TYPES


class SqsWaiterError(Exception):
    """A request that did not succeed. `retryable`: sending the same request again may succeed
    (for `enqueue`, with the same `job_id`, so a job is never stored twice)."""

    #: The function's `errorType`; `None` when the call never reached the function's code.
    error_type: str | None = None
    retryable: bool = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class FunctionError(SqsWaiterError):
    """One of the function's documented `errorType`s (the subclasses below)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.retryable = cls.error_type in RETRYABLE_ERROR_TYPES


class InvalidRequest(FunctionError):
    """The request broke a rule of the contract; `field` names the field and `rule` the rule.
    Nothing was stored or sent."""

    error_type = "InvalidRequest"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        field, sep, rule = message.partition(": ")
        self.field = field if sep else "request"
        self.rule = rule if sep else message


class Throttled(FunctionError):
    """DynamoDB or SQS throttled the function: send the same request again, later."""

    error_type = "Throttled"


class DependencyFailure(FunctionError):
    """DynamoDB or SQS failed or timed out: send the same request again."""

    error_type = "DependencyFailure"


class ResourceNotFound(FunctionError):
    """The queue or its table does not exist (the deployment is incomplete)."""

    error_type = "ResourceNotFound"


class Rejected(FunctionError):
    """AWS refused the request for good (for example a message SQS will not take)."""

    error_type = "Rejected"


class InternalError(FunctionError):
    """A defect in the function; its log says more."""

    error_type = "InternalError"


class AccessDenied(FunctionError):
    """The alias invoked does not grant this action on this queue (docs/security.md)."""

    error_type = "AccessDenied"


class UnknownFunctionError(SqsWaiterError):
    """The invocation failed with an `errorType` the contract does not name, such as Lambda's own
    `Runtime.ExitError` or a timeout (`Sandbox.Timedout`)."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(f"the function failed with {error_type}: {message}")
        self.error_type = error_type


class InvokeError(SqsWaiterError):
    """The Lambda Invoke call itself failed (botocore's error is `__cause__`): throttled by Lambda,
    the function missing, no permission, or no connection."""

    #: Lambda's error codes after which the same call may succeed.
    RETRYABLE_CODES: ClassVar[frozenset[str]] = frozenset(
        {"TooManyRequestsException", "ServiceException", "ResourceNotReadyException", "ResourceConflictException"}
    )

    def __init__(self, function_name: str, message: str, *, code: str | None, retryable: bool) -> None:
        super().__init__(f"invoking {function_name}: {message}")
        self.code = code
        self.retryable = retryable


class DecodeError(SqsWaiterError):
    """The function's reply was not the JSON the contract gives."""


class NotAWaiterMessage(ValueError):
    """A consumer's helper was given a message it cannot hand back: it carries no `waiter.job_id`
    and no `job_id` was given, so it did not come through sqs-waiter or its job is unknown."""


BY_ERROR_TYPE: dict[str, type[FunctionError]] = {
    cls.error_type: cls
    for cls in (InvalidRequest, Throttled, DependencyFailure, ResourceNotFound, Rejected, InternalError, AccessDenied)
}


def from_payload(marked: str | None, payload: Any) -> SqsWaiterError | None:
    """The error a reply carries: `marked` is Lambda's `FunctionError` (set when the function
    failed), `payload` the reply's JSON. `None` for a successful reply."""
    error_type = payload.get("errorType") if isinstance(payload, dict) else None
    message = payload.get("errorMessage") if isinstance(payload, dict) else None
    if marked is None and not (isinstance(error_type, str) and isinstance(message, str)):
        return None
    text = message if isinstance(message, str) else str(payload)
    name = error_type if isinstance(error_type, str) else (marked or "Unhandled")
    cls = BY_ERROR_TYPE.get(name)
    return cls(text) if cls else UnknownFunctionError(name, text)


def from_failure(failure: Any) -> SqsWaiterError:
    """The error of one failed job in a batch: `{"type", "message", "retryable"}`; the entry's own
    `retryable` stands (it is the function's word, for a type this client may not know)."""
    if not isinstance(failure, dict):
        return DecodeError(f"a failed batch entry without its error: {failure!r}")
    name, message = str(failure.get("type")), str(failure.get("message", ""))
    cls = BY_ERROR_TYPE.get(name)
    error = cls(message) if cls else UnknownFunctionError(name, message)
    if isinstance(failure.get("retryable"), bool):
        error.retryable = failure["retryable"]
    return error
