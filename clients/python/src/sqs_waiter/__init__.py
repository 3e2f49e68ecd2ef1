"""sqs-waiter's Python client: schedule an SQS message for any time, manage the schedule, and hand
failed messages back for a retry at exponential backoff. docs/contract.md has every field."""

from . import contract
from .client import DEFAULT_FUNCTION, Client, LambdaInvoker, split
from .errors import (
    AccessDenied,
    DecodeError,
    DependencyFailure,
    FunctionError,
    InternalError,
    InvalidRequest,
    InvokeError,
    NotAWaiterMessage,
    Rejected,
    ResourceNotFound,
    SqsWaiterError,
    Throttled,
    UnknownFunctionError,
)
from .received import Message, attempt_of, attributes_of, replay_of, retry_of

__all__ = [
    "AccessDenied",
    "Client",
    "DEFAULT_FUNCTION",
    "DecodeError",
    "DependencyFailure",
    "FunctionError",
    "InternalError",
    "InvalidRequest",
    "InvokeError",
    "LambdaInvoker",
    "Message",
    "NotAWaiterMessage",
    "Rejected",
    "ResourceNotFound",
    "SqsWaiterError",
    "Throttled",
    "UnknownFunctionError",
    "attempt_of",
    "attributes_of",
    "contract",
    "replay_of",
    "retry_of",
    "split",
]
