"""The client against the real `enqueue` function on the emulator (tests/tests/clients.rs serves it
and runs this with the installed wheel): every action, an InvalidRequest naming its field, a
consumer's retry that arrives as attempt 2, a replay, a FIFO consumer's retry that keeps its group,
and the READMEs' snippets.

Environment: SQS_WAITER_FUNCTION, SQS_WAITER_QUEUE_URL, SQS_WAITER_FIFO_QUEUE_URL, SQS_WAITER_REPO, AWS_ENDPOINT_URL (the function),
AWS_ENDPOINT_URL_SQS and the region and dummy credentials.
"""

from __future__ import annotations

import json
import os
import re
import time
import unittest
from pathlib import Path
from typing import Any

import boto3

import sqs_waiter
from sqs_waiter import Client, InvalidRequest, NotAWaiterMessage, contract

QUEUE = "orders"
FIFO_QUEUE = "orders.fifo"
REPO = Path(os.environ.get("SQS_WAITER_REPO", Path(__file__).resolve().parents[3]))


def receive(sqs: Any, url: str, want: int, timeout_s: float = 20.0) -> list[dict[str, Any]]:
    """Up to `want` messages, with every attribute, deleted once received."""
    got: list[dict[str, Any]] = []
    until = time.monotonic() + timeout_s
    while len(got) < want and time.monotonic() < until:
        out = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=1,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=["All"],
        )
        for m in out.get("Messages", []):
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
            got.append(m)
    return got


SECTION = "### From Rust, Python or TypeScript"


def snippets(path: Path) -> list[str]:
    """The ```python blocks of a README (of README.md, its section on the clients), calling the
    function this test is given where they name the stack's (cargo lambda watch serves a function
    under its binary's name)."""
    text = path.read_text()
    if SECTION in text:
        text = re.split(r"\n##+ ", text.split(SECTION, 1)[1], maxsplit=1)[0]
    served = os.environ["SQS_WAITER_FUNCTION"]
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    return [b.replace('"sqs-waiter-enqueue"', json.dumps(served)) for b in blocks]


class AgainstTheFunction(unittest.TestCase):
    client: Client
    sqs: Any
    url: str

    @classmethod
    def setUpClass(cls) -> None:
        cls.client = Client()
        cls.sqs = boto3.client("sqs")
        cls.url = os.environ["SQS_WAITER_QUEUE_URL"]

    def test_0_the_installed_wheel_is_what_runs(self) -> None:
        self.assertNotIn(str(REPO / "clients" / "python" / "src"), str(Path(sqs_waiter.__file__).resolve()))
        self.assertIn("site-packages", sqs_waiter.__file__)

    def test_1_jobs_are_stored_sent_and_managed(self) -> None:
        c = self.client
        first = c.enqueue({"queue": QUEUE, "message_body": "later", "delay_seconds": 86_400, "job_id": "py-1",
                           "message_attributes": {"kind": {"data_type": "String", "string_value": "invoice"}}})
        self.assertEqual((first["status"], first.get("duplicate")), ("scheduled", False))
        self.assertIs(c.enqueue({"queue": QUEUE, "message_body": "later", "delay_seconds": 86_400, "job_id": "py-1"})
                      .get("duplicate"), True)

        job = c.get(QUEUE, "py-1")
        self.assertEqual((job["status"], job.get("version"), job.get("message_body")), ("scheduled", 1, "later"))
        self.assertEqual((job.get("message_attributes") or {})["kind"].get("string_value"), "invoice")

        moved = c.reschedule({"queue": QUEUE, "job_id": "py-1", "delay_seconds": 7 * 86_400, "if_version": 1})
        self.assertEqual((moved["status"], moved.get("version")), ("rescheduled", 2))
        stale = c.reschedule({"queue": QUEUE, "job_id": "py-1", "delay_seconds": 60, "if_version": 1})
        self.assertEqual(stale["status"], "conflict")

        results = c.enqueue_many([
            {"queue": QUEUE, "message_body": "a", "delay_seconds": 2 * 86_400, "job_id": "py-2"},
            {"queue": "nope", "message_body": "b", "delay_seconds": 3600},
            {"queue": QUEUE, "message_body": "c", "delay_seconds": 3 * 86_400, "job_id": "py-3"},
        ])
        self.assertEqual(len(results), 3)
        failed = results[1]
        assert isinstance(failed, InvalidRequest), failed
        self.assertEqual((failed.field, failed.retryable), ("queue", False))
        self.assertFalse(isinstance(results[0], Exception) or isinstance(results[2], Exception))

        page = c.list({"queue": QUEUE, "prefix": "py-", "limit": 2})
        self.assertEqual([j["job_id"] for j in page["jobs"]], ["py-2", "py-3"])
        assert page["cursor"] is not None
        rest = c.list({"queue": QUEUE, "prefix": "py-", "cursor": page["cursor"]})
        self.assertEqual([j["job_id"] for j in rest["jobs"]], ["py-1"])

        stats = c.stats({"queue": QUEUE, "buckets": 4, "bucket_s": 86_400})
        self.assertEqual((stats["scheduled"], len(stats["histogram"])), (3, 4))

        paused = c.pause({"queue": QUEUE, "job_id": "py-2"})
        self.assertEqual(paused["status"], "paused")
        self.assertEqual(c.resume({"queue": QUEUE, "job_id": "py-2"})["status"], "resumed")

        preview = c.preview({"repeat": {"cron": "0 9 * * *"}, "time_zone": "Europe/Paris", "count": 3})
        self.assertEqual(len(preview["occurrences"]), 3)
        self.assertTrue(all(o["local"].endswith(("+01:00", "+02:00")) for o in preview["occurrences"]))

        queues = c.queues()["queues"]
        self.assertEqual([(q["queue"], q["fifo"], q["paused"]) for q in queues],
                         [(QUEUE, False, False), (FIFO_QUEUE, True, False)])

        self.assertEqual(c.parked({"queue": QUEUE})["jobs"], [])
        self.assertEqual(c.redrive(QUEUE, "py-404")["status"], "not_found")
        self.assertEqual(c.redrive_all(QUEUE)["redriven"], 0)

        self.assertEqual(c.cancel(QUEUE, "py-3")["status"], "cancelled")
        bulk = c.cancel_many({"queue": QUEUE, "job_ids": ["py-1", "py-404"]})
        self.assertEqual((bulk["cancelled"], bulk["not_found"]), (1, 1))

        sent = c.trigger(QUEUE, "py-2")
        self.assertEqual(sent["status"], "sent")
        got = receive(self.sqs, self.url, 1)
        self.assertEqual([m["Body"] for m in got], ["a"])
        self.assertEqual(got[0]["MessageId"], sent.get("message_id"))

    def test_2_a_bad_request_names_its_field_and_stores_nothing(self) -> None:
        with self.assertRaises(InvalidRequest) as raised:
            self.client.enqueue({"queue": QUEUE, "message_body": "x", "delay_seconds": 60, "perform_at": "2030-01-01T00:00:00Z",
                                 "job_id": "py-bad"})
        e = raised.exception
        self.assertEqual(e.error_type, "InvalidRequest")
        self.assertFalse(e.retryable)
        self.assertIn(e.field, {"delay_seconds", "perform_at"})
        self.assertEqual(self.client.get(QUEUE, "py-bad")["status"], "not_found")
        with self.assertRaises(InvalidRequest) as unknown:
            self.client.call("enqueue", {"queue": QUEUE, "message_body": "x", "delay": 60})
        self.assertEqual(unknown.exception.field, "delay")

    def test_3_a_consumer_retries_a_message_that_arrives_as_attempt_2_then_replays_it(self) -> None:
        c = self.client
        self.assertEqual(c.enqueue({"queue": QUEUE, "message_body": "work", "job_id": "py-r"})["status"], "sent")
        (first,) = receive(self.sqs, self.url, 1)
        self.assertEqual(sqs_waiter.attempt_of(sqs_waiter.attributes_of(first)), 1)
        # Every message names its job where it leaves room (issue 82): the message alone is
        # enough. One without the attribute needs the id it was enqueued under.
        self.assertEqual(sqs_waiter.attributes_of(first)[contract.JOB_ID_ATTRIBUTE].get("string_value"), "py-r")
        anonymous = {**first, "MessageAttributes": {k: v for k, v in first["MessageAttributes"].items()
                                                    if k != contract.JOB_ID_ATTRIBUTE}}
        with self.assertRaises(NotAWaiterMessage) as refused:
            c.retry_message(anonymous, queue=QUEUE)
        self.assertIn("job_id", str(refused.exception))
        reply = c.retry_message(first, queue=self.url,
                                backoff={"base_s": 1, "jitter": False}, max_attempts=5, error="timeout")
        self.assertEqual((reply["status"], reply.get("attempt")), ("scheduled", 2))
        (second,) = receive(self.sqs, self.url, 1)
        self.assertEqual(second["Body"], "work")
        attributes = sqs_waiter.attributes_of(second)
        self.assertEqual(attributes[contract.ATTEMPT_ATTRIBUTE].get("string_value"), "2")
        # The same message as a Lambda event's record names its queue and its attempt.
        record = {"messageId": second["MessageId"], "body": second["Body"], "attributes": {},
                  "messageAttributes": {k: {"dataType": v["DataType"], "stringValue": v.get("StringValue")}
                                        for k, v in second["MessageAttributes"].items()},
                  "eventSourceARN": f"arn:aws:sqs:{os.environ['AWS_REGION']}:000000000000:{QUEUE}"}
        request = sqs_waiter.retry_of(record, job_id="py-r")
        self.assertEqual((request["queue"], request["attempt"]), (QUEUE, 2))

        # Attempt 2 was delivered: the job has left the table and history kept its body.
        deadline = time.monotonic() + 20
        while c.get(QUEUE, "py-r")["status"] != "dispatched" and time.monotonic() < deadline:
            time.sleep(0.2)
        copy = c.replay_message(second, queue=QUEUE, job_id="py-r", new_job_id="py-r-copy")
        self.assertEqual((copy["status"], copy["job_id"], copy.get("replay_of")), ("scheduled", "py-r-copy", "py-r"))
        (replayed,) = receive(self.sqs, self.url, 1)
        self.assertEqual(replayed["Body"], "work")
        self.assertEqual(sqs_waiter.attributes_of(replayed)[contract.JOB_ID_ATTRIBUTE].get("string_value"), "py-r-copy")

    def test_5_a_fifo_consumer_received_as_the_readme_says_retries_in_its_group(self) -> None:
        """Issue 82, defect 11: the README's receive (`MessageSystemAttributeNames=["MessageGroupId"]`)
        hands `retry_message` the group; a receive without it is refused by the function, by name."""
        c, fifo_url = self.client, os.environ["SQS_WAITER_FIFO_QUEUE_URL"]
        sent = c.enqueue({"queue": FIFO_QUEUE, "message_body": "fifo work", "job_id": "py-f",
                          "message_group_id": "customer-7"})
        self.assertEqual(sent["status"], "sent")
        out = self.sqs.receive_message(QueueUrl=fifo_url, WaitTimeSeconds=5, MessageAttributeNames=["All"],
                                       MessageSystemAttributeNames=["MessageGroupId"])
        (message,) = out["Messages"]
        self.assertEqual(message.get("Attributes", {}).get("MessageGroupId"), "customer-7")
        without_group = {k: v for k, v in message.items() if k != "Attributes"}
        with self.assertRaises(InvalidRequest) as refused:
            c.retry_message(without_group, queue=fifo_url, backoff={"base_s": 60, "jitter": False})
        self.assertEqual(refused.exception.field, "message_group_id")
        reply = c.retry_message(message, queue=fifo_url, backoff={"base_s": 60, "jitter": False}, error="timeout")
        self.assertEqual((reply["status"], reply.get("attempt")), ("scheduled", 2))
        self.sqs.delete_message(QueueUrl=fifo_url, ReceiptHandle=message["ReceiptHandle"])
        job = c.get(FIFO_QUEUE, "py-f")
        self.assertEqual((job["status"], job.get("attempt"), job.get("message_group_id"), job.get("message_body")),
                         ("scheduled", 2, "customer-7", "fifo work"))
        self.assertEqual(c.cancel(FIFO_QUEUE, "py-f")["status"], "cancelled")

    def test_4_the_readmes_snippets_run(self) -> None:
        blocks = snippets(REPO / "README.md") + snippets(REPO / "clients" / "python" / "README.md")
        self.assertEqual(len(blocks), 3)
        for i, code in enumerate(blocks):
            with self.subTest(snippet=i):
                exec(compile(code, f"<README snippet {i}>", "exec"), {"__name__": f"snippet{i}"})
        # The consumer's snippet handed its message back: attempt 2 of charge-7 is scheduled.
        self.assertEqual(self.client.get(QUEUE, "charge-7").get("attempt"), 2)
        receive(self.sqs, self.url, 10, timeout_s=2)


if __name__ == "__main__":
    unittest.main()
