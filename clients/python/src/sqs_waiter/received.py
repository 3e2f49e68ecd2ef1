"""A message a consumer received, read as sqs-waiter sent it: its queue, job id and attempt.

Two shapes come in: a record of a Lambda SQS event (`body`, `messageAttributes` with
`stringValue`, `eventSourceARN`) and a message of boto3's `receive_message` (`Body`,
`MessageAttributes` with `StringValue`). Receive with `MessageAttributeNames=["All"]` and
`MessageSystemAttributeNames=["MessageGroupId"]`, or the attempt and group stay behind.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any

from . import contract as c
from .errors import NotAWaiterMessage

#: A Lambda event's record or a `receive_message` message, as boto3 and Lambda give them.
Message = Mapping[str, Any]


def _pick(m: Mapping[str, Any], *names: str) -> Any:
    for name in names:
        if name in m:
            return m[name]
    return None


def attributes_of(message: Message) -> dict[str, c.MessageAttribute]:
    """The message's attributes in the contract's form (binary values in base64)."""
    raw = _pick(message, "messageAttributes", "MessageAttributes") or {}
    out: dict[str, c.MessageAttribute] = {}
    for name, value in raw.items():
        attribute: c.MessageAttribute = {"data_type": str(_pick(value, "dataType", "DataType") or "String")}
        string = _pick(value, "stringValue", "StringValue")
        binary = _pick(value, "binaryValue", "BinaryValue")
        if string is not None:
            attribute["string_value"] = str(string)
        if isinstance(binary, (bytes, bytearray)):
            attribute["binary_value"] = base64.b64encode(binary).decode()
        elif binary is not None:
            attribute["binary_value"] = str(binary)  # a Lambda record's, base64 already
        out[name] = attribute
    return out


def _string(attributes: Mapping[str, c.MessageAttribute], name: str) -> str | None:
    attribute = attributes.get(name)
    return attribute.get("string_value") if attribute else None


#: An attempt as the Rust client reads one: ASCII digits with an optional `+`, at most u32's.
_ATTEMPT = re.compile(r"\+?[0-9]+")
_MAX_ATTEMPT = 2**32 - 1


def attempt_of(attributes: Mapping[str, c.MessageAttribute]) -> int:
    """`waiter.attempt`, or 1 for a message without a readable one (a first delivery)."""
    value = (_string(attributes, c.ATTEMPT_ATTRIBUTE) or "").strip()
    if not _ATTEMPT.fullmatch(value):
        return 1
    attempt = int(value)
    return attempt if 1 <= attempt <= _MAX_ATTEMPT else 1


def queue_of(message: Message, queue: str | None) -> str:
    """The queue's name: `queue` (a name or a queue URL), else the Lambda record's event source."""
    given = queue or _pick(message, "eventSourceARN", "EventSourceARN")
    if not given:
        raise NotAWaiterMessage(
            "queue: is required for a message from receive_message (a Lambda record names its queue in eventSourceARN)"
        )
    return str(given).rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]


def job_id_of(message: Message, attributes: Mapping[str, c.MessageAttribute], job_id: str | None) -> str:
    """`waiter.job_id` where the message carries it (a replayed copy, a series' occurrence), else
    the id the caller enqueued it under."""
    named = _string(attributes, c.JOB_ID_ATTRIBUTE)
    if named:
        return named
    if job_id:
        return job_id
    message_id = _pick(message, "messageId", "MessageId")
    raise NotAWaiterMessage(
        f"job_id: message {message_id} carries no {c.JOB_ID_ATTRIBUTE} attribute and no job_id was given: "
        f"pass the job_id you enqueued it under, or it did not come through sqs-waiter "
        f"(receive with MessageAttributeNames=['All'] so that the {c.RESERVED_ATTRIBUTE_PREFIX}* attributes come along)"
    )


def retry_of(message: Message, *, queue: str | None = None, job_id: str | None = None) -> c.Retry:
    """The `retry` request that hands `message` back: its body, attributes, group, attempt and id."""
    attributes = attributes_of(message)
    body = _pick(message, "body", "Body")
    if not isinstance(body, str):
        raise NotAWaiterMessage("message_body: the message has no body: give a Lambda SQS record or a receive_message message")
    request: c.Retry = {
        "queue": queue_of(message, queue),
        "job_id": job_id_of(message, attributes, job_id),
        "attempt": attempt_of(attributes),
        "message_body": body,
    }
    if attributes:
        request["message_attributes"] = attributes
    group = (_pick(message, "attributes", "Attributes") or {}).get("MessageGroupId")
    if group:
        request["message_group_id"] = str(group)
    return request


def replay_of(message: Message, *, queue: str | None = None, job_id: str | None = None) -> c.Replay:
    """The `replay` request for the job that sent `message`."""
    return {"queue": queue_of(message, queue), "job_id": job_id_of(message, attributes_of(message), job_id)}
